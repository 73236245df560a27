// CPU kernels of depthwise_conv1d and depthwise_conv1d_backward.
//
// Two layouts, picked from x (see as_kernel_layout / is_channels_last):
//   * channel-first: one (batch, channel) row at a time, tiled along L. A row tile is copied into a
//     zero-padded float buffer split into `stride` phases, so every tap reads a contiguous run and
//     the inner loop is branch-free and vectorised along L (CorrOp). Interior float32/float64 tiles
//     with stride 1 read x in place.
//   * channel-last: tiles of kTileCL positions x kChanBlockCL channels, vectorised over channels.
//
// Weight/bias gradients are deterministic: the reduction over (batch, L) is cut into chunks fixed
// by the shapes alone; each chunk writes its own partial sums (double), which are then added in
// chunk order. The input gradient is gathered (no atomics): each output tile owns a fixed range of
// input positions and reads grad_out with a small halo.
#include "cpu/cpu_kernels.h"

#include <torch/csrc/stable/library.h>

#include <optional>
#include <tuple>

namespace sepconv1d {
namespace cpu {
namespace {

constexpr int64_t kTileCF = 2048;      // outputs per row tile (channel-first, forward)
constexpr int64_t kTileCFBwd = 1024;   // outputs per row tile (channel-first, backward)
constexpr int64_t kTileCL = 64;        // output positions per tile (channel-last)
constexpr int64_t kChanBlockCL = 64;   // channels per tile (channel-last)
constexpr int64_t kChanAlign = 16;     // channel padding of channel-last buffers
constexpr int64_t kMaxChunks = 256;    // cap on the number of reduction chunks
constexpr int64_t kPartialBudget = int64_t(1) << 22;  // doubles of partial sums, at most (soft)

// Fixed partition of `units` reduction units into chunks of `per_chunk` consecutive units, from
// the shapes only (never from the thread count).
struct Chunking {
  int64_t per_chunk = 1;
  int64_t count = 0;
};

inline Chunking make_chunking(int64_t units, int64_t unit_work, int64_t target_work,
                              int64_t partial_size) {
  Chunking ch;
  if (units <= 0) return ch;
  ch.per_chunk = std::max<int64_t>(1, target_work / std::max<int64_t>(1, unit_work));
  int64_t cap = std::min<int64_t>(kMaxChunks,
                                  std::max<int64_t>(1, kPartialBudget / std::max<int64_t>(1, partial_size)));
  ch.per_chunk = std::max(ch.per_chunk, ceil_div(units, cap));
  ch.count = ceil_div(units, ch.per_chunk);
  return ch;
}

// ------------------------------------------------------------------------------------------------
// Forward.
// ------------------------------------------------------------------------------------------------
template <typename S, typename T, int KT>
void forward_cf(const Tensor& x, const std::vector<T>& w, const std::vector<T>& bias,
                const ConvGeometry& g, Tensor& y) {
  const S* xp = static_cast<const S*>(x.const_data_ptr());
  S* yp = static_cast<S*>(y.mutable_data_ptr());
  const Strides3 sx = strides_of(x);
  const Strides3 sy = strides_of(y);
  const int64_t C = g.channels, L = g.length, Lo = g.out_length, K = g.kernel_size;
  const int64_t s = g.stride, d = g.dilation, pl = g.pad_left;
  const int64_t ntiles = ceil_div(Lo, kTileCF);
  const int64_t items = g.batch * C * ntiles;
  const int64_t grain = std::max<int64_t>(1, 16384 / (std::min(Lo, kTileCF) * std::max<int64_t>(K, 4)));

  torch::stable::parallel_for(0, items, grain, [&](int64_t begin, int64_t end) {
    std::vector<T> xbuf, obuf;
    std::vector<int64_t> offs(static_cast<size_t>(K));
    for (int64_t it = begin; it < end; ++it) {
      const int64_t row = it / ntiles, jt = it % ntiles;
      const int64_t b = row / C, c = row % C;
      const int64_t j0 = jt * kTileCF, n = std::min(kTileCF, Lo - j0);
      const int64_t p0 = j0 * s - pl, W = (n - 1) * s + (K - 1) * d + 1;
      const T* in = row_window(xp + b * sx.b + c * sx.c, sx.l, L, p0, W, K, s, d, xbuf, offs.data());
      S* yrow = yp + b * sy.b + c * sy.c + j0 * sy.l;
      const int64_t* offp = offs.data();
      const T* wc = w.data() + c * K;
      if constexpr (std::is_same_v<S, T>) {
        if (sy.l == 1) {
          isa_call<CorrOp<T, KT>>(in, offp, wc, K, bias[c], reinterpret_cast<T*>(yrow), n);
          continue;
        }
      }
      ensure_size(obuf, n);
      isa_call<CorrOp<T, KT>>(in, offp, wc, K, bias[c], obuf.data(), n);
      store_row(static_cast<const T*>(obuf.data()), yrow, sy.l, n);
    }
  });
}

// wT: (K, Cp) transposed weights, bias: (Cp), Cp = round_up(C, kChanAlign), zero padded.
template <typename S, typename T, int KT>
void forward_cl(const Tensor& x, const std::vector<T>& wT, const std::vector<T>& bias,
                const ConvGeometry& g, Tensor& y) {
  const S* xp = static_cast<const S*>(x.const_data_ptr());
  S* yp = static_cast<S*>(y.mutable_data_ptr());
  const Strides3 sx = strides_of(x);
  const Strides3 sy = strides_of(y);
  const int64_t C = g.channels, L = g.length, Lo = g.out_length, K = g.kernel_size;
  const int64_t s = g.stride, d = g.dilation, pl = g.pad_left;
  const int64_t Cp = round_up(C, kChanAlign);
  const int64_t ncb = ceil_div(C, kChanBlockCL);
  const int64_t ntiles = ceil_div(Lo, kTileCL);
  const int64_t items = g.batch * ntiles * ncb;

  torch::stable::parallel_for(0, items, 4, [&](int64_t begin, int64_t end) {
    std::vector<T> win, obuf;
    for (int64_t it = begin; it < end; ++it) {
      const int64_t cbi = it % ncb, rest = it / ncb;
      const int64_t jt = rest % ntiles, b = rest / ntiles;
      const int64_t c0 = cbi * kChanBlockCL, cb = std::min(kChanBlockCL, C - c0);
      const int64_t cw = round_up(cb, kChanAlign);
      const int64_t j0 = jt * kTileCL, n = std::min(kTileCL, Lo - j0);
      const int64_t p0 = j0 * s - pl, W = (n - 1) * s + (K - 1) * d + 1;
      const T* wp = nullptr;
      int64_t ldw = cw;
      if constexpr (std::is_same_v<S, T>) {
        if (cb == cw && sx.c == 1 && p0 >= 0 && p0 + W <= L) {
          wp = reinterpret_cast<const T*>(xp + b * sx.b + p0 * sx.l + c0);
          ldw = sx.l;
        }
      }
      if (!wp) {
        ensure_size(win, W * cw);
        load_window_cl(xp + b * sx.b + c0 * sx.c, sx.l, sx.c, L, p0, W, cb, win.data(), cw);
        wp = win.data();
      }
      T* out = nullptr;
      int64_t ldo = cw;
      if constexpr (std::is_same_v<S, T>) {
        if (cb == cw && sy.c == 1) {
          out = reinterpret_cast<T*>(yp + b * sy.b + j0 * sy.l + c0);
          ldo = sy.l;
        }
      }
      const bool buffered = out == nullptr;
      if (buffered) {
        ensure_size(obuf, n * cw);
        out = obuf.data();
      }
      isa_call<DwClFwdOp<T, KT>>(wp, ldw, wT.data() + c0, Cp, bias.data() + c0, out, ldo, n, cw,
                                 s, d, K);
      if (buffered) {
        for (int64_t j = 0; j < n; ++j) {
          store_row(static_cast<const T*>(obuf.data() + j * cw),
                    yp + b * sy.b + (j0 + j) * sy.l + c0 * sy.c, sy.c, cb);
        }
      }
    }
  });
}

// ------------------------------------------------------------------------------------------------
// Backward.
// ------------------------------------------------------------------------------------------------
struct BwdNeeds {
  bool x, w, b;
};

// Partial sums: dwp[(chunk*C + c)*K + k], dbp[chunk*C + c].
template <typename S, typename T, int KT>
void backward_cf(const Tensor& dy, const Tensor& x, const std::vector<T>& w, const ConvGeometry& g,
                 Tensor* dx, BwdNeeds need, const Chunking& chunks, int64_t ntiles, int64_t tile,
                 double* dwp, double* dbp) {
  const S* xp = static_cast<const S*>(x.const_data_ptr());
  const S* gp = static_cast<const S*>(dy.const_data_ptr());
  S* dxp = dx ? static_cast<S*>(dx->mutable_data_ptr()) : nullptr;
  const Strides3 sx = strides_of(x);
  const Strides3 sg = strides_of(dy);
  const Strides3 sd = dx ? strides_of(*dx) : Strides3{0, 0, 0};
  const int64_t C = g.channels, L = g.length, Lo = g.out_length, K = g.kernel_size;
  const int64_t s = g.stride, d = g.dilation, pl = g.pad_left;
  const int64_t units = g.batch * ntiles;
  const int64_t items = C * chunks.count;

  torch::stable::parallel_for(0, items, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> xbuf, gbuf, dxbuf;
    std::vector<int64_t> offs(static_cast<size_t>(K));
    RowGradScratch<T> scratch;
    for (int64_t it = begin; it < end; ++it) {
      const int64_t c = it / chunks.count, ch = it % chunks.count;
      double* accw = need.w ? dwp + (ch * C + c) * K : nullptr;
      double* accb = need.b ? dbp + ch * C + c : nullptr;
      const T* wc = w.data() + c * K;
      const int64_t u_end = std::min(units, (ch + 1) * chunks.per_chunk);
      for (int64_t u = ch * chunks.per_chunk; u < u_end; ++u) {
        const int64_t b = u / ntiles, jt = u % ntiles;
        const int64_t j0 = jt * tile, n = std::min(tile, Lo - j0), j1 = j0 + n;
        const TileSpan sp = tile_span(jt, ntiles, j0, j1, g, need.x);
        const int64_t nd = sp.jb1 - sp.jb0;
        // grad_out rows [jb0, jb1), zero outside [0, Lo)
        const S* grow = gp + b * sg.b + c * sg.c;
        const T* gv = nullptr;
        if constexpr (std::is_same_v<S, T>) {
          if (sg.l == 1 && sp.jb0 >= 0 && sp.jb1 <= Lo) gv = reinterpret_cast<const T*>(grow + sp.jb0);
        }
        if (!gv) {
          ensure_size(gbuf, nd);
          load_row_phases(grow, sg.l, Lo, sp.jb0, 1, nd, gbuf.data());
          gv = gbuf.data();
        }
        const T* gown = gv + (j0 - sp.jb0);
        if (need.w) {
          const int64_t p0 = j0 * s - pl, W = (n - 1) * s + (K - 1) * d + 1;
          const S* xrow = xp + b * sx.b + c * sx.c;
          const T* in = nullptr;
          if constexpr (std::is_same_v<S, T>) {
            if (s == 1 && sx.l == 1 && p0 >= 0 && p0 + W <= L) {
              in = reinterpret_cast<const T*>(xrow + p0);
              for (int64_t k = 0; k < K; ++k) offs[k] = k * d;
            }
          }
          if (!in) {
            const int64_t PL = ceil_div(W, s);
            ensure_size(xbuf, s * PL);
            load_row_phases(xrow, sx.l, L, p0, s, PL, xbuf.data());
            phase_offsets(K, s, d, PL, offs.data());
            in = xbuf.data();
          }
          isa_call<DotTapsOp<T, KT>>(gown, n, in, static_cast<const int64_t*>(offs.data()), K, accw);
        }
        if (need.b) isa_call<SumOp<T>>(gown, n, accb);
        if (need.x && sp.T1 > sp.T0) {
          const int64_t nt = sp.T1 - sp.T0;
          S* drow = dxp + b * sd.b + c * sd.c + sp.i0 * sd.l;
          T* out = nullptr;
          if constexpr (std::is_same_v<S, T>) {
            if (sd.l == 1) out = reinterpret_cast<T*>(drow);
          }
          const bool buffered = out == nullptr;
          if (buffered) {
            ensure_size(dxbuf, nt);
            out = dxbuf.data();
          }
          row_input_grad<T, KT>(gv, sp.jb0, wc, K, s, d, sp.T0, sp.T1, out, scratch);
          if (buffered) store_row(static_cast<const T*>(dxbuf.data()), drow, sd.l, nt);
        }
      }
    }
  });
}

// wT: (K, Cp) transposed weights. Partial sums as in backward_cf.
template <typename S, typename T, int KT>
void backward_cl(const Tensor& dy, const Tensor& x, const std::vector<T>& wT, const ConvGeometry& g,
                 Tensor* dx, BwdNeeds need, const Chunking& chunks, int64_t ntiles, double* dwp,
                 double* dbp) {
  const S* xp = static_cast<const S*>(x.const_data_ptr());
  const S* gp = static_cast<const S*>(dy.const_data_ptr());
  S* dxp = dx ? static_cast<S*>(dx->mutable_data_ptr()) : nullptr;
  const Strides3 sx = strides_of(x);
  const Strides3 sg = strides_of(dy);
  const Strides3 sd = dx ? strides_of(*dx) : Strides3{0, 0, 0};
  const int64_t C = g.channels, L = g.length, Lo = g.out_length, K = g.kernel_size;
  const int64_t s = g.stride, d = g.dilation, pl = g.pad_left;
  const int64_t Cp = round_up(C, kChanAlign);
  const int64_t ncb = ceil_div(C, kChanBlockCL);
  const int64_t units = g.batch * ntiles;
  const int64_t items = ncb * chunks.count;
  const std::vector<T> zeros(static_cast<size_t>(kChanBlockCL), T(0));

  torch::stable::parallel_for(0, items, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> win, gwin, dxbuf, tp, gs;
    std::vector<int64_t> rows(static_cast<size_t>(K)), ks(static_cast<size_t>(K));
    for (int64_t it = begin; it < end; ++it) {
      const int64_t cbi = it / chunks.count, ch = it % chunks.count;
      const int64_t c0 = cbi * kChanBlockCL, cb = std::min(kChanBlockCL, C - c0);
      const int64_t cw = round_up(cb, kChanAlign);
      ensure_size(tp, K * cw);
      ensure_size(gs, cw);
      const int64_t u_end = std::min(units, (ch + 1) * chunks.per_chunk);
      for (int64_t u = ch * chunks.per_chunk; u < u_end; ++u) {
        const int64_t b = u / ntiles, jt = u % ntiles;
        const int64_t j0 = jt * kTileCL, n = std::min(kTileCL, Lo - j0), j1 = j0 + n;
        const TileSpan sp = tile_span(jt, ntiles, j0, j1, g, need.x);
        const int64_t nd = sp.jb1 - sp.jb0;
        const T* gv = nullptr;
        int64_t ldd = cw;
        if constexpr (std::is_same_v<S, T>) {
          if (cb == cw && sg.c == 1 && sp.jb0 >= 0 && sp.jb1 <= Lo) {
            gv = reinterpret_cast<const T*>(gp + b * sg.b + sp.jb0 * sg.l + c0);
            ldd = sg.l;
          }
        }
        if (!gv) {
          ensure_size(gwin, nd * cw);
          load_window_cl(gp + b * sg.b + c0 * sg.c, sg.l, sg.c, Lo, sp.jb0, nd, cb, gwin.data(), cw);
          gv = gwin.data();
        }
        const T* gown = gv + (j0 - sp.jb0) * ldd;
        if (need.w) {
          const T* wp = nullptr;
          int64_t ldw = cw;
          {
            const int64_t p0 = j0 * s - pl, W = (n - 1) * s + (K - 1) * d + 1;
            if constexpr (std::is_same_v<S, T>) {
              if (cb == cw && sx.c == 1 && p0 >= 0 && p0 + W <= L) {
                wp = reinterpret_cast<const T*>(xp + b * sx.b + p0 * sx.l + c0);
                ldw = sx.l;
              }
            }
            if (!wp) {
              ensure_size(win, W * cw);
              load_window_cl(xp + b * sx.b + c0 * sx.c, sx.l, sx.c, L, p0, W, cb, win.data(), cw);
              wp = win.data();
            }
          }
          isa_call<DwClBwdWOp<T, KT>>(gown, ldd, wp, ldw, n, cw, s, d, K, tp.data());
          for (int64_t c = 0; c < cb; ++c) {
            double* acc = dwp + (ch * C + c0 + c) * K;
            for (int64_t k = 0; k < K; ++k) acc[k] += static_cast<double>(tp[k * cw + c]);
          }
        }
        if (need.b) {
          isa_call<ColSumOp<T>>(gown, ldd, n, cw, gs.data());
          for (int64_t c = 0; c < cb; ++c) dbp[ch * C + c0 + c] += static_cast<double>(gs[c]);
        }
        if (need.x && sp.T1 > sp.T0) {
          const int64_t nt = sp.T1 - sp.T0;
          S* dbase = dxp + b * sd.b + sp.i0 * sd.l + c0 * sd.c;
          T* out = nullptr;
          int64_t ldo = cw;
          if constexpr (std::is_same_v<S, T>) {
            if (cb == cw && sd.c == 1) {
              out = reinterpret_cast<T*>(dbase);
              ldo = sd.l;
            }
          }
          const bool buffered = out == nullptr;
          if (buffered) {
            ensure_size(dxbuf, nt * cw);
            out = dxbuf.data();
          }
          if (s == 1) {
            // dx[t] = sum_k w[k] dy[t - k*d]: the forward tile with dilation -d, no bias.
            isa_call<DwClFwdOp<T, KT>>(gv + (sp.T0 - sp.jb0) * ldd, ldd, wT.data() + c0, Cp,
                                       zeros.data(), out, ldo, nt, cw, int64_t(1), -d, K);
          } else {
            isa_call<DwClBwdXOp<T, KT>>(gv, ldd, sp.jb0, wT.data() + c0, Cp, out, ldo, sp.T0, nt,
                                        cw, s, d, K, rows.data(), ks.data());
          }
          if (buffered) {
            for (int64_t r = 0; r < nt; ++r) {
              store_row(static_cast<const T*>(dxbuf.data() + r * cw), dbase + r * sd.l, sd.c, cb);
            }
          }
        }
      }
    }
  });
}

// Sums partials[(chunk*C + c)*per + k] over chunks in order into out (C x per, dtype WT).
template <typename WT>
void reduce_partials(const std::vector<double>& partials, int64_t nchunks, int64_t C, int64_t per,
                     Tensor& out) {
  WT* op = static_cast<WT*>(out.mutable_data_ptr());
  const int64_t n = C * per;
  if (n == 0) return;
  torch::stable::parallel_for(0, n, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      double acc = 0.0;
      for (int64_t ch = 0; ch < nchunks; ++ch) acc += partials[ch * n + i];
      op[i] = from_double<WT>(acc);
    }
  });
}

// ------------------------------------------------------------------------------------------------
// Operators. Weights may be (C, K) or (C, 1, K) (see flat_weight() in conv_params.h); the kernels
// read them contiguous, which is the same memory for both, and gradients are allocated like them.
// ------------------------------------------------------------------------------------------------
Tensor depthwise_conv1d_cpu(const Tensor& x_in, const Tensor& weight, const std::optional<Tensor>& bias,
                            int64_t stride, int64_t pad_left, int64_t pad_right, int64_t dilation) {
  const ConvGeometry g = check_depthwise(x_in, weight, bias, stride, pad_left, pad_right, dilation);
  const Tensor x = as_kernel_layout(x_in);
  Tensor y = new_activation(x, g.channels, g.out_length, x.scalar_type());
  if (y.numel() == 0) return y;
  const Tensor w = torch::stable::contiguous(weight);
  std::optional<Tensor> bc;
  if (bias.has_value()) bc = torch::stable::contiguous(*bias);
  const bool cl = is_channels_last(x);
  const int64_t C = g.channels, K = g.kernel_size;

  dispatch_dtypes(x.scalar_type(), w.scalar_type(), "depthwise_conv1d", [&](auto xt, auto wt) {
    using S = typename decltype(xt)::type;
    using WT = typename decltype(wt)::type;
    using T = acc_t<S>;
    const std::vector<T> wv = to_acc_vector<WT, T>(w, C * K);
    const std::vector<T> bv = bc ? to_acc_vector<WT, T>(*bc, C) : std::vector<T>(C, T(0));
    if (!cl) {
      dispatch_kernel_size(K, [&](auto kt) {
        forward_cf<S, T, decltype(kt)::value>(x, wv, bv, g, y);
      });
      return;
    }
    const int64_t Cp = round_up(C, kChanAlign);
    std::vector<T> wT(static_cast<size_t>(K * Cp), T(0)), bp(static_cast<size_t>(Cp), T(0));
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t k = 0; k < K; ++k) wT[k * Cp + c] = wv[c * K + k];
      bp[c] = bv[c];
    }
    dispatch_kernel_size(K, [&](auto kt) {
      forward_cl<S, T, decltype(kt)::value>(x, wT, bp, g, y);
    });
  });
  return y;
}

std::tuple<std::optional<Tensor>, std::optional<Tensor>, std::optional<Tensor>>
depthwise_conv1d_backward_cpu(const Tensor& grad_out, const Tensor& x_in, const Tensor& weight,
                              int64_t stride, int64_t pad_left, int64_t pad_right, int64_t dilation,
                              bool need_grad_x, bool need_grad_weight, bool need_grad_bias) {
  const ConvGeometry g =
      check_depthwise(x_in, weight, std::nullopt, stride, pad_left, pad_right, dilation);
  check_grad_out(grad_out, x_in, g);
  const Tensor x = as_kernel_layout(x_in);
  const bool cl = is_channels_last(x);
  const Tensor dy = to_layout(grad_out, cl);
  const Tensor w = torch::stable::contiguous(weight);
  const int64_t C = g.channels, K = g.kernel_size;

  std::optional<Tensor> dx, dw, db;
  if (need_grad_x) dx = new_activation(x, C, g.length, x.scalar_type());
  if (need_grad_weight) dw = new_param_grad(w, w.scalar_type());
  if (need_grad_bias) db = torch::stable::empty({C}, w.scalar_type(), std::nullopt, w.device());
  BwdNeeds need{need_grad_x && dx->numel() > 0, need_grad_weight, need_grad_bias};
  if (!need.x && !need.w && !need.b) return {dx, dw, db};

  const int64_t tile = cl ? kTileCL : kTileCFBwd;
  const int64_t ntiles = ceil_div(g.out_length, tile);
  const int64_t units = (C > 0) ? g.batch * ntiles : 0;
  const int64_t unit_work = std::min(g.out_length, tile) * (cl ? std::min(C, kChanBlockCL) : 1);
  const Chunking chunks =
      make_chunking(units, unit_work, cl ? 16384 : 32768, (need.w || need.b) ? C * (K + 1) : 1);
  std::vector<double> dwp(need.w ? static_cast<size_t>(chunks.count * C * K) : 0, 0.0);
  std::vector<double> dbp(need.b ? static_cast<size_t>(chunks.count * C) : 0, 0.0);

  dispatch_dtypes(x.scalar_type(), w.scalar_type(), "depthwise_conv1d_backward",
                  [&](auto xt, auto wt) {
    using S = typename decltype(xt)::type;
    using WT = typename decltype(wt)::type;
    using T = acc_t<S>;
    if (units > 0) {
      const std::vector<T> wv = to_acc_vector<WT, T>(w, C * K);
      Tensor* dxp = need.x ? &*dx : nullptr;
      if (!cl) {
        dispatch_kernel_size(K, [&](auto kt) {
          backward_cf<S, T, decltype(kt)::value>(dy, x, wv, g, dxp, need, chunks, ntiles, tile,
                                                 dwp.data(), dbp.data());
        });
      } else {
        const int64_t Cp = round_up(C, kChanAlign);
        std::vector<T> wT(static_cast<size_t>(K * Cp), T(0));
        for (int64_t c = 0; c < C; ++c) {
          for (int64_t k = 0; k < K; ++k) wT[k * Cp + c] = wv[c * K + k];
        }
        dispatch_kernel_size(K, [&](auto kt) {
          backward_cl<S, T, decltype(kt)::value>(dy, x, wT, g, dxp, need, chunks, ntiles,
                                                 dwp.data(), dbp.data());
        });
      }
    }
    if (need.w) reduce_partials<WT>(dwp, chunks.count, C, K, *dw);
    if (need.b) reduce_partials<WT>(dbp, chunks.count, C, 1, *db);
  });
  return {dx, dw, db};
}

}  // namespace
}  // namespace cpu
}  // namespace sepconv1d

STABLE_TORCH_LIBRARY_IMPL(sepconv1d, CPU, m) {
  m.impl("depthwise_conv1d", TORCH_BOX(&sepconv1d::cpu::depthwise_conv1d_cpu));
  m.impl("depthwise_conv1d_backward", TORCH_BOX(&sepconv1d::cpu::depthwise_conv1d_backward_cpu));
}
