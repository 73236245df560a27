// CUDA kernels of torch.ops.sepconv1d.depthwise_conv1d and depthwise_conv1d_backward.
// Kernels: depthwise_kernels.cuh (tile and direct), depthwise_fwd_reg.cuh / depthwise_bwd_reg.cuh /
// depthwise_bwd_cl_reg.cuh (register-direct), depthwise_tc.cuh (tensor cores); launch planning:
// depthwise_launch.cuh; design notes and measurements: csrc/NOTES.md ("Depthwise CUDA v1" .. "v5").
#include "cuda/depthwise_cuda.h"

#include "common/conv_params.h"
#include "common/dispatch.h"
#include "cuda/cuda_utils.cuh"
#include "cuda/depthwise_phases.cuh"

#define DW_HOST_CHECK(cond, msg) STD_TORCH_CHECK((cond), msg)
#define DW_CHECK_LAUNCH(name) ::sepconv1d::cuda::check_launch(name)
#include "cuda/depthwise_launch.cuh"

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <tuple>

namespace sepconv1d {
namespace cuda {

static_assert(DepthwisePartials::kMaxCalls == dwk::kRedMaxRuns,
              "one deferred reduction run per depthwise backward call");

namespace {

dwk::Desc3 desc_of(const StridedView& v) { return {v.stride[0], v.stride[1], v.stride[2]}; }

dwk::Problem problem_of(const ConvGeometry& g) {
  return {g.batch, g.channels, g.length, g.out_length, g.kernel_size, g.stride, g.dilation,
          g.pad_left};
}

dwk::DevInfo device_info(int device) {
  static int optin[64] = {0};
  dwk::DevInfo info;
  info.device = device;
  info.sms = sm_count(device);
  int v = 0;
  if (device >= 0 && device < 64 && optin[device] > 0) {
    v = optin[device];
  } else {
    check_cuda(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
               "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
    if (device >= 0 && device < 64) optin[device] = v;
  }
  info.smem_optin = v;
  return info;
}

}  // namespace

namespace {

// Whether a problem runs as its phase rows (depthwise_phases.cuh): where phase_split_applies, every
// activation view with unit stride along L, and where it measured
// faster than the tile kernels' general path (H200, B32 x 512 x 835 and others, device time;
// csrc/NOTES.md, thirty-eighth session). The copies (x and y; or dy, x and dx) cost the same at
// any K, while the general path costs grow with K:
//   forward, half types from K 48 (K 87 1.49x, K 63 1.22x, K 31 0.87x); float32 from K 56 (with
//     the run-time-K forward's row groups over the phase rows, sixty-second session: d 2 L 835
//     K 87 1.29x, K 63 1.12x, K 56 1.03x, K 48 0.95x, K 33 0.87x; L 4096 K 63 1.32x, K 33 0.96x);
//   backward, half types at any K (K 3 1.06x ... K 87 4.8x); float32 from K 24 (K 31 1.24x,
//     K 87 1.67x) and at the compiled K 5 and 9 (1.15-1.42x), not at run-time K 7 and 15 or K 3
//     (0.81-1.02x).
// SEPCONV1D_DW_PHASES (read per call: comparisons, tests): "0" never, "1" wherever the first
// conditions hold.
bool use_phases(const ConvGeometry& g, ScalarType dtype, bool backward,
                std::initializer_list<const StridedView*> views) {
  if (!phase_split_applies(g)) return false;
  for (const StridedView* v : views) {
    if (v != nullptr && v->stride[2] != 1) return false;
  }
  const char* env = std::getenv("SEPCONV1D_DW_PHASES");
  if (env != nullptr && *env != '\0') return std::atoi(env) != 0;
  const int64_t k = g.kernel_size;
  if (is_half_type(dtype)) return backward || k >= 48;
  if (backward) return k >= 24 || k == 5 || k == 9;
  return dtype == ScalarType::Float && k >= 56;
}

// The kernels' tuning: the defaults, with the short-row kernels' routing overridden by
// SEPCONV1D_DW_ROWS (read per call: comparisons, tests): "0" never, "1" wherever they apply; their
// outputs per warp pass by SEPCONV1D_DW_ROWS_SPAN (A/B of rows_plan's rule); their forward's
// double buffering by SEPCONV1D_DW_ROWS_DB: "0" never, "1" wherever it fits in shared memory; and
// their word copies on word-aligned rows by SEPCONV1D_DW_ROWS_WORDS (forward) and
// SEPCONV1D_DW_ROWS_WORDS_BWD (backward), "0" / "1", and the rows forwards' arithmetic on the
// tensor cores (half types) by SEPCONV1D_DW_ROWS_MMA, "0" / "1" (the backward's dx alone by
// SEPCONV1D_DW_ROWS_MMA_BWD, dw / db beside it by SEPCONV1D_DW_ROWS_MMA_DW).
// SEPCONV1D_DW_BWD_RT_REGS=0 keeps the run-time-K tile backward's dw partials per chunk of taps;
// SEPCONV1D_DW_DX_FORWARD=0 keeps its dx in the fused kernel (dwk::dx_by_forward).
// SEPCONV1D_DW_RT_ROWS: the run-time-K forward's row groups (dwk::rt_row_group), "0" never, "1"
// wherever a row fits a group. SEPCONV1D_DW_YSTAGE=0 has the CF tile forwards store y rows that
// are not 16-byte aligned directly instead of through shared memory (cf_rt_items_staged,
// cf_fwd_fast); SEPCONV1D_DW_YSTAGE_CT=0 only the compiled-K forward's (cf_fwd_fast);
// SEPCONV1D_DW_YSTAGE=2 stages wherever the run-time-K forward can (one item per thread too).
// SEPCONV1D_DW_TC_UNITS: the tensor-core backward stages rows of at most that alignment in bytes
// (2, 4 or 8) in whole 16-byte units, "0" 2-byte rows element by element (A/B).
// SEPCONV1D_DW_REG_SHIFTED=0: the register-direct CF kernels on 16-byte-aligned rows only (not on
// co-aligned rows at a shift, A/B). SEPCONV1D_DW_REG_REALIGN=0: the register-direct CF forward not
// on x and y rows at different shifts, nor the backward on x at another shift than dy's (A/B).
// SEPCONV1D_DW_SPECIALIZED=0 turns the
// compiled kernel sizes off (every K then runs as a run-time or padded K: A/B runs).
dwk::Tuning tuning() {
  dwk::Tuning t;
  const char* spec = std::getenv("SEPCONV1D_DW_SPECIALIZED");
  if (spec != nullptr && *spec != '\0') t.allow_specialized = std::atoi(spec) != 0;
  const char* env = std::getenv("SEPCONV1D_DW_ROWS");
  if (env != nullptr && *env != '\0') t.rows = std::atoi(env) != 0 ? 1 : 0;
  const char* span = std::getenv("SEPCONV1D_DW_ROWS_SPAN");  // outputs per warp pass (A/B)
  if (span != nullptr && std::atoi(span) > 0) t.rows_span = std::atoi(span);
  const char* db = std::getenv("SEPCONV1D_DW_ROWS_DB");
  if (db != nullptr && *db != '\0') t.rows_db = std::atoi(db) != 0 ? 1 : 0;
  const char* words = std::getenv("SEPCONV1D_DW_ROWS_WORDS");
  if (words != nullptr && *words != '\0') t.rows_words = std::atoi(words) != 0 ? 1 : 0;
  const char* words16 = std::getenv("SEPCONV1D_DW_ROWS_WORDS16");
  if (words16 != nullptr && *words16 != '\0') t.rows_words16 = std::atoi(words16) != 0 ? 1 : 0;
  const char* mma = std::getenv("SEPCONV1D_DW_ROWS_MMA");
  if (mma != nullptr && *mma != '\0') t.rows_mma = std::atoi(mma) != 0 ? 1 : 0;
  const char* mma_bwd = std::getenv("SEPCONV1D_DW_ROWS_MMA_BWD");
  if (mma_bwd != nullptr && *mma_bwd != '\0') t.rows_mma_bwd = std::atoi(mma_bwd) != 0 ? 1 : 0;
  const char* mma_dw = std::getenv("SEPCONV1D_DW_ROWS_MMA_DW");
  if (mma_dw != nullptr && *mma_dw != '\0') t.rows_mma_dw = std::atoi(mma_dw) != 0 ? 1 : 0;
  const char* rt_regs = std::getenv("SEPCONV1D_DW_BWD_RT_REGS");  // A/B of the register taps
  if (rt_regs != nullptr && *rt_regs != '\0') t.allow_rt_regs = std::atoi(rt_regs) != 0;
  const char* dx_fwd = std::getenv("SEPCONV1D_DW_DX_FORWARD");  // A/B of dx as a forward
  if (dx_fwd != nullptr && *dx_fwd != '\0') t.allow_dx_forward = std::atoi(dx_fwd) != 0;
  const char* rt_rows = std::getenv("SEPCONV1D_DW_RT_ROWS");  // A/B of the row groups
  if (rt_rows != nullptr && *rt_rows != '\0') t.rt_rows = std::atoi(rt_rows) != 0 ? 1 : 0;
  const char* ystage = std::getenv("SEPCONV1D_DW_YSTAGE");  // A/B of the staged y stores
  if (ystage != nullptr && *ystage != '\0') {
    t.allow_ystage = std::atoi(ystage) != 0;
    t.force_ystage = std::atoi(ystage) == 2;
  }
  const char* ystage_ct = std::getenv("SEPCONV1D_DW_YSTAGE_CT");
  if (ystage_ct != nullptr && *ystage_ct != '\0') t.allow_ystage_ct = std::atoi(ystage_ct) != 0;
  const char* tc_units = std::getenv("SEPCONV1D_DW_TC_UNITS");  // A/B of the unit staging
  if (tc_units != nullptr && *tc_units != '\0') t.tc_units = std::atoi(tc_units);
  const char* reg_shifted = std::getenv("SEPCONV1D_DW_REG_SHIFTED");
  if (reg_shifted != nullptr && *reg_shifted != '\0') t.reg_shifted = std::atoi(reg_shifted) != 0;
  const char* reg_realign = std::getenv("SEPCONV1D_DW_REG_REALIGN");
  if (reg_realign != nullptr && *reg_realign != '\0') t.reg_realign = std::atoi(reg_realign) != 0;
  const char* words_bwd = std::getenv("SEPCONV1D_DW_ROWS_WORDS_BWD");
  if (words_bwd != nullptr && *words_bwd != '\0') t.rows_words_bwd = std::atoi(words_bwd) != 0 ? 1 : 0;
  return t;
}

// Phase-row buffers of one call: (d*B, C, len) views of `like`'s dtype in one allocation, rows at
// phase_row_pitch.
class PhaseRows {
 public:
  PhaseRows(const StridedView& like, const ConvGeometry& inner, std::initializer_list<int64_t> lens)
      : like_(like), inner_(inner) {
    const int64_t e = dtype_bytes(like.dtype);
    int64_t total = 0;
    for (int64_t len : lens) total += inner.batch * inner.channels * phase_row_pitch(len, e);
    buf_ = device_bytes(like.device, std::max<int64_t>(total, 1) * e);
  }
  // The next view, of length len (in the order of the constructor's lens).
  StridedView next(int64_t len) {
    const int64_t pitch = phase_row_pitch(len, dtype_bytes(like_.dtype));
    StridedView v = like_;
    v.ptr = static_cast<char*>(buf_.mutable_data_ptr()) + used_ * dtype_bytes(like_.dtype);
    v.size = {inner_.batch, inner_.channels, len};
    v.stride = {inner_.channels * pitch, pitch, 1};
    used_ += inner_.batch * inner_.channels * pitch;
    return v;
  }

 private:
  StridedView like_;
  ConvGeometry inner_;
  Tensor buf_;
  int64_t used_ = 0;
};

void forward_plain(const StridedView& x, const Tensor& w, const std::optional<Tensor>& b,
                   const ConvGeometry& g, const StridedView& y) {
  const cudaStream_t stream = current_stream(x.device);
  const dwk::DevInfo dev = device_info(x.device);
  const dwk::Problem pr = problem_of(g);
  dispatch_dtypes(x.dtype, w.scalar_type(), "depthwise_conv1d", [&](auto xt, auto wt) {
    using T = native_t<typename decltype(xt)::type>;
    using W = native_t<typename decltype(wt)::type>;
    const W* wp = static_cast<const W*>(w.const_data_ptr());
    const W* bp = b.has_value() ? static_cast<const W*>(b->const_data_ptr()) : nullptr;
    dwk::forward<T, W>(pr, static_cast<const T*>(x.ptr), desc_of(x), wp, bp,
                       static_cast<T*>(y.ptr), desc_of(y), stream, dev, tuning());
  });
}

}  // namespace

void depthwise_forward_view(const StridedView& x, const Tensor& weight,
                            const std::optional<Tensor>& bias, const ConvGeometry& g,
                            const StridedView& y) {
  if (y.numel() == 0) return;
  const Tensor w = contiguous_if_needed(weight);
  std::optional<Tensor> b;
  if (bias.has_value()) b = contiguous_if_needed(*bias);
  if (use_phases(g, x.dtype, false, {&x, &y})) {
    const PhaseSplit ps = phase_split(g);
    PhaseRows rows(x, ps.inner, {ps.inner.length, ps.inner.out_length});
    const StridedView xp = rows.next(ps.inner.length), yp = rows.next(ps.inner.out_length);
    const cudaStream_t stream = current_stream(x.device);
    phase_copy(true, x, xp, ps.phases, ps.shift, stream);
    forward_plain(xp, w, b, ps.inner, yp);
    phase_copy(false, y, yp, ps.phases, 0, stream);
    return;
  }
  forward_plain(x, w, b, g, y);
}

void depthwise_forward_into(const Tensor& x, const Tensor& weight,
                            const std::optional<Tensor>& bias, const ConvGeometry& g, Tensor& y) {
  if (y.numel() == 0) return;
  torch::stable::accelerator::DeviceGuard guard(x.get_device_index());
  depthwise_forward_view(StridedView::of(x), weight, bias, g, StridedView::of(y));
}

// `bytes` from the current buffer, or from a new one of at least `want` bytes.
void* DepthwisePartials::carve(int device, size_t bytes, size_t want) {
  bytes = (bytes + 255) / 256 * 256;  // keep every run 256-byte aligned
  if (bytes > room_) {
    const size_t total = std::max(bytes, (want + 255) / 256 * 256);
    buffers_.push_back(device_bytes(device, static_cast<int64_t>(total)));
    next_ = static_cast<char*>(buffers_.back().mutable_data_ptr());
    room_ = total;
  }
  void* p = next_;
  next_ += bytes;
  room_ -= bytes;
  return p;
}

DepthwisePartials::Block DepthwisePartials::alloc(int device, size_t bytes, size_t sum_bytes) {
  const size_t left = static_cast<size_t>(std::max(calls_left_, 1));
  --calls_left_;
  // Kept: room for this call and, at the same size, every call still to come (the separable
  // backward's chunks shrink, so their partial sums do too): one allocation in the usual case.
  if (calls_ <= 1 || bytes * left <= kKeepBytes) return {carve(device, bytes, bytes * left), nullptr};
  // Summed right away: the scratch buffer (grown when needed: the smaller one is released first,
  // safe in stream order, so the two never count together), and a slot that is kept.
  if (!scratch_ || static_cast<size_t>(scratch_->numel()) < bytes) {
    scratch_.reset();
    scratch_ = device_bytes(device, static_cast<int64_t>(bytes));
  }
  return {scratch_->mutable_data_ptr(), carve(device, sum_bytes, ((sum_bytes + 255) / 256 * 256) * left)};
}

namespace {

// The runs recorded in `partials`, as the reduce kernel takes them.
template <typename A>
dwk::RedRuns<A> runs_of(const DepthwisePartials& partials) {
  dwk::RedRuns<A> runs{};
  for (int r = 0; r < partials.runs; ++r) {
    runs.part[r] = static_cast<const A*>(partials.part[r]);
    runs.split[r] = partials.split[r];
  }
  runs.n = partials.runs;
  return runs;
}

// The depthwise backward over views; defer: append the weight-gradient partial sums to `partials`
// instead of reducing them here (then `partials` also provides their memory).
void backward_plain(const StridedView& dy, const StridedView& x, const Tensor& weight,
                   const ConvGeometry& g, const StridedView* dx, Tensor* dw, Tensor* db,
                   DepthwisePartials* partials) {
  const Tensor w = contiguous_if_needed(weight);
  const ScalarType wdtype = w.scalar_type();
  STD_TORCH_CHECK((!dw || (dw->scalar_type() == wdtype && dw->is_contiguous())) &&
                      (!db || (db->scalar_type() == wdtype && db->is_contiguous())),
                  "sepconv1d: depthwise weight gradients must be contiguous in the weight dtype");
  const int device = x.device;
  const cudaStream_t stream = current_stream(device);
  const dwk::DevInfo dev = device_info(device);
  const dwk::Problem pr = problem_of(g);
  dispatch_dtypes(x.dtype, wdtype, "depthwise_conv1d_backward", [&](auto xt, auto wt) {
    using T = native_t<typename decltype(xt)::type>;
    using W = native_t<typename decltype(wt)::type>;
    using A = dwk::acc_of<T>;
    // With `partials`: the runs of the earlier calls, this call's appended by dwk::backward.
    dwk::RedRuns<A> runs = partials != nullptr ? runs_of<A>(*partials) : dwk::RedRuns<A>{};
    // Workspace for the deterministic dw/db partial sums: from `partials`, or for this call only
    // (it lives until the launches are queued; the caching allocator keeps it stream-ordered).
    std::optional<Tensor> workspace;
    auto alloc = [&](size_t bytes) -> void* {
      if (partials != nullptr) {
        const size_t sum_bytes = static_cast<size_t>((g.kernel_size + 1) * g.channels) * sizeof(A);
        const DepthwisePartials::Block blk = partials->alloc(device, bytes, sum_bytes);
        runs.fold = static_cast<A*>(blk.fold);
        return blk.partials;
      }
      workspace = device_bytes(device, static_cast<int64_t>(bytes));
      return workspace->mutable_data_ptr();
    };
    const W* wp = static_cast<const W*>(w.const_data_ptr());
    T* dxp = dx && dx->numel() > 0 ? static_cast<T*>(dx->ptr) : nullptr;
    W* dwp = dw && dw->numel() > 0 ? static_cast<W*>(dw->mutable_data_ptr()) : nullptr;
    W* dbp = db && db->numel() > 0 ? static_cast<W*>(db->mutable_data_ptr()) : nullptr;
    const dwk::Desc3 dxd = dx ? desc_of(*dx) : dwk::Desc3{0, 0, 0};
    dwk::RedRuns<A>* defer = partials != nullptr ? &runs : nullptr;
    const dwk::Tuning tune = tuning();
    // The flipped kernel where dx may run as a forward of dy (C * K elements: a few KB).
    std::optional<Tensor> flipped;
    const W* wflip = nullptr;
    if (dxp != nullptr && dwk::dx_by_forward<T>(pr, dwp != nullptr || dbp != nullptr, tune)) {
      flipped = device_bytes(device, g.channels * g.kernel_size * static_cast<int64_t>(sizeof(W)));
      W* wf = static_cast<W*>(flipped->mutable_data_ptr());
      dwk::flip_weights<W>(wp, wf, g.channels, g.kernel_size, stream, dev);
      wflip = wf;
    }
    dwk::backward<T, W>(pr, static_cast<const T*>(dy.ptr), desc_of(dy),
                        static_cast<const T*>(x.ptr), desc_of(x), wp, dxp, dxd, dwp, dbp, alloc,
                        stream, dev, tune, defer, wflip);
    if (partials != nullptr) {
      for (int r = partials->runs; r < runs.n; ++r) {
        partials->part[r] = runs.part[r];
        partials->split[r] = runs.split[r];
      }
      partials->runs = runs.n;
    }
  });
}

// backward_plain, or the same over the phase rows of a dilated problem (use_phases): dy (zero
// past each phase's outputs) and, where dw is wanted, x gathered; dx scattered back. The phase
// rows' d*B batches sum into dw and db as the batches do.
void backward_view(const StridedView& dy, const StridedView& x, const Tensor& weight,
                   const ConvGeometry& g, const StridedView* dx, Tensor* dw, Tensor* db,
                   DepthwisePartials* partials) {
  if (!use_phases(g, x.dtype, true, {&dy, &x, dx})) {
    backward_plain(dy, x, weight, g, dx, dw, db, partials);
    return;
  }
  const PhaseSplit ps = phase_split(g);
  const int64_t lx = ps.inner.length, ly = ps.inner.out_length;
  PhaseRows rows(x, ps.inner, {ly, lx, dx ? lx : 0});
  const StridedView dyp = rows.next(ly), xp = rows.next(lx);
  const cudaStream_t stream = current_stream(x.device);
  phase_copy(true, dy, dyp, ps.phases, 0, stream);
  if (dw != nullptr) phase_copy(true, x, xp, ps.phases, ps.shift, stream);
  std::optional<StridedView> dxp;
  if (dx != nullptr) dxp = rows.next(lx);
  backward_plain(dyp, xp, weight, ps.inner, dxp ? &*dxp : nullptr, dw, db, partials);
  if (dx != nullptr) phase_copy(false, *dx, *dxp, ps.phases, ps.shift, stream);
}

}  // namespace

void depthwise_backward_view(const StridedView& dy, const StridedView& x, const Tensor& weight,
                             const ConvGeometry& g, const StridedView* dx, Tensor* dw, Tensor* db,
                             DepthwisePartials& partials) {
  backward_view(dy, x, weight, g, dx, dw, db, &partials);
}

void depthwise_reduce_partials(const DepthwisePartials& partials, ScalarType x_dtype,
                               const ConvGeometry& g, Tensor* dw, Tensor* db) {
  if (!dw && !db) return;
  const ScalarType wdtype = dw ? dw->scalar_type() : db->scalar_type();
  const int device = dw ? dw->get_device_index() : db->get_device_index();
  const cudaStream_t stream = current_stream(device);
  const dwk::DevInfo dev = device_info(device);
  dispatch_dtypes(x_dtype, wdtype, "depthwise_conv1d_backward", [&](auto xt, auto wt) {
    using T = native_t<typename decltype(xt)::type>;
    using W = native_t<typename decltype(wt)::type>;
    using A = dwk::acc_of<T>;
    const dwk::RedRuns<A> runs = runs_of<A>(partials);
    W* dwp = dw && dw->numel() > 0 ? static_cast<W*>(dw->mutable_data_ptr()) : nullptr;
    W* dbp = db && db->numel() > 0 ? static_cast<W*>(db->mutable_data_ptr()) : nullptr;
    dwk::reduce_runs<A, W>(runs, g.kernel_size, g.channels, dwp, dbp, stream, dev);
  });
}

void depthwise_backward_into(const Tensor& grad_out, const Tensor& x_in, const Tensor& weight,
                             const ConvGeometry& g, Tensor* dx, Tensor* dw, Tensor* db) {
  if (!dx && !dw && !db) return;
  torch::stable::accelerator::DeviceGuard guard(x_in.get_device_index());
  const Tensor x = as_kernel_layout(x_in);
  const Tensor dy = to_layout(grad_out, is_channels_last(x));
  std::optional<StridedView> dxv;
  if (dx) dxv = StridedView::of(*dx);
  backward_view(StridedView::of(dy), StridedView::of(x), weight, g, dxv ? &*dxv : nullptr, dw, db,
                nullptr);
}

std::tuple<std::optional<Tensor>, std::optional<Tensor>, std::optional<Tensor>> depthwise_backward(
    const Tensor& grad_out, const Tensor& x_in, const Tensor& weight, const ConvGeometry& g,
    bool need_grad_x, bool need_grad_weight, bool need_grad_bias) {
  std::optional<Tensor> dx, dw, db;
  if (!need_grad_x && !need_grad_weight && !need_grad_bias) return {dx, dw, db};
  torch::stable::accelerator::DeviceGuard guard(x_in.get_device_index());
  const Tensor x = as_kernel_layout(x_in);
  const ScalarType wdtype = weight.scalar_type();
  if (need_grad_x) dx = new_activation(x, g.channels, g.length, x.scalar_type());
  if (need_grad_weight) dw = new_param_grad(contiguous_if_needed(weight), wdtype);
  if (need_grad_bias) db = torch::stable::empty({g.channels}, wdtype, std::nullopt, x.device());
  depthwise_backward_into(grad_out, x, weight, g, dx ? &*dx : nullptr, dw ? &*dw : nullptr,
                          db ? &*db : nullptr);
  return {dx, dw, db};
}

namespace {

Tensor depthwise_conv1d_cuda(Tensor x, Tensor weight, std::optional<Tensor> bias, int64_t stride,
                             int64_t pad_left, int64_t pad_right, int64_t dilation) {
  const ConvGeometry g = check_depthwise(x, weight, bias, stride, pad_left, pad_right, dilation);
  torch::stable::accelerator::DeviceGuard guard(x.get_device_index());
  weight = contiguous_if_needed(flat_depthwise_weight(weight));
  if (bias.has_value()) bias = contiguous_if_needed(*bias);
  x = as_kernel_layout(x);
  Tensor y = new_activation(x, g.channels, g.out_length, x.scalar_type());
  depthwise_forward_into(x, weight, bias, g, y);
  return y;
}

std::tuple<std::optional<Tensor>, std::optional<Tensor>, std::optional<Tensor>>
depthwise_conv1d_backward_cuda(Tensor grad_out, Tensor x, Tensor weight, int64_t stride,
                               int64_t pad_left, int64_t pad_right, int64_t dilation,
                               bool need_grad_x, bool need_grad_weight, bool need_grad_bias) {
  const ConvGeometry g =
      check_depthwise(x, weight, std::nullopt, stride, pad_left, pad_right, dilation);
  check_grad_out(grad_out, x, g);
  torch::stable::accelerator::DeviceGuard guard(x.get_device_index());
  const Tensor w = contiguous_if_needed(flat_depthwise_weight(weight));
  x = as_kernel_layout(x);
  grad_out = to_layout(grad_out, is_channels_last(x));
  auto grads = depthwise_backward(grad_out, x, w, g, need_grad_x, need_grad_weight, need_grad_bias);
  std::get<1>(grads) = shaped_like(std::get<1>(grads), weight, 1);
  return grads;
}

}  // namespace

}  // namespace cuda
}  // namespace sepconv1d

STABLE_TORCH_LIBRARY_IMPL(sepconv1d, CUDA, m) {
  m.impl("depthwise_conv1d", TORCH_BOX(&sepconv1d::cuda::depthwise_conv1d_cuda));
  m.impl("depthwise_conv1d_backward", TORCH_BOX(&sepconv1d::cuda::depthwise_conv1d_backward_cuda));
}
