// CPU kernels of separable_conv1d and separable_conv1d_backward: depthwise conv then a pointwise
// (1x1) conv, fused so that the Cin x L_out intermediate never exists as a whole.
//
//   forward : chunks of (batch, position) columns: H = depthwise(x) + dw_bias (Cin x columns, x's
//             dtype, a reused chunk buffer), then y = pw @ H + pw_bias over the whole chunk (see
//             "Forward" below: oneDNN for half types, our own GEMM for float32).
//   backward: tiled over (batch, TL output positions). Per tile: DY = grad_out tile (+ a halo of
//             (K-1)*dilation/stride positions on the left when the input gradient is needed),
//             dPW += DY * H^T (H recomputed incl. dw_bias),
//             DH = pw^T * DY, then the depthwise backward of DH: d dw_weight (tap dot products with
//             the x window) and dx (gathered transposed convolution of DH rows).
//             The two products: for bfloat16, bf16 operands and float32 sums (as the CUDA kernels'
//             MMA) on AMX or AVX512-BF16 where the CPU has one (bf16_gemm.h), else our float32 /
//             float64 GEMM.
//   d pw_bias = sum DY and d dw_bias = pw^T (sum DY) are formed from per-chunk sums of DY.
// Weight gradients go through per-chunk partial sums over a partition fixed by the shapes, added
// in chunk order: bitwise reproducible whatever the thread count. allow_tf32 is ignored on CPU.
#include "cpu/bf16_gemm.h"
#include "cpu/cpu_kernels.h"

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>

#include <array>
#include <cstring>
#include <optional>
#include <tuple>

namespace sepconv1d {
namespace cpu {
namespace {

constexpr int64_t kMaxChunksSep = 64;
constexpr int64_t kPartialBytes = int64_t(64) << 20;  // bound on d pw_weight partials

// Output positions per backward tile: 256K / max(Cin, Cout), 64-1024. The tile is the shared
// dimension of each d pw_weight product into its chunk's Cout x Cin partial, so short tiles re-read
// that partial for few products: 8x the old L2-sized tiles (32K / channels) took the CI runner's
// backward at B4 C512 L500 K31 from 30.4 to 12.4 ms, at B4 C256 L4096 K9 from 39.5 to 24.7 and at
// B4 C1024 L250 K11 from 50 to 32 (csrc/NOTES.md, forty-fourth session). The backward also
// recomputes a left halo of grad_out columns for the input gradient; the tile grows with it so that
// the halo stays a small fraction of the work.
int64_t separable_tile(int64_t cin, int64_t cout, int64_t halo = 0) {
  const int64_t cmax = std::max<int64_t>({cin, cout, int64_t(1)});
  const int64_t tl = clamp64((262144 / cmax) / kNPad * kNPad, kNPad, 1024);
  return std::max(tl, std::min<int64_t>(1024, round_up(2 * halo, kNPad)));
}

// Loads a window of all channels of batch b in phase layout: buf[c*ld + ph*PL + i] holds position
// p0 + ph + s*i (ld >= s*PL), zero outside [0, L). Used for x windows (ld = s*PL) and, with s = 1,
// for grad_out tiles.
template <typename S, typename T>
void load_window(const S* xb, int64_t xsc, int64_t xsl, bool cl, int64_t C, int64_t L, int64_t p0,
                 int64_t s, int64_t PL, T* buf, int64_t ld, std::vector<T>& rowt) {
  const int64_t rowlen = s * PL;
  if (!cl) {
    for (int64_t c = 0; c < C; ++c) load_row_phases(xb + c * xsc, xsl, L, p0, s, PL, buf + c * ld);
    return;
  }
  ensure_size(rowt, C);
  for (int64_t r = 0; r < rowlen; ++r) {
    const int64_t pos = p0 + r;
    const int64_t idx = (r % s) * PL + r / s;
    if (pos < 0 || pos >= L) {
      for (int64_t c = 0; c < C; ++c) buf[c * ld + idx] = T(0);
    } else {
      load_row(xb + pos * xsl, xsc, rowt.data(), C);
      for (int64_t c = 0; c < C; ++c) buf[c * ld + idx] = rowt[c];
    }
  }
}

// Stores tile[r*ld + j] (r < rows, j < n) to dst + r*sc + j*sl in the activation's layout.
template <typename S, typename T>
void store_tile(const T* tile, int64_t ld, int64_t rows, int64_t n, S* dst, int64_t sc, int64_t sl,
                bool cl, std::vector<T>& rowt) {
  if (!cl) {
    for (int64_t r = 0; r < rows; ++r) store_row(tile + r * ld, dst + r * sc, sl, n);
    return;
  }
  ensure_size(rowt, rows);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t r = 0; r < rows; ++r) rowt[r] = tile[r * ld + j];
    store_row(static_cast<const T*>(rowt.data()), dst + j * sl, sc, rows);
  }
}

// ------------------------------------------------------------------------------------------------
// Forward: chunks of (batch, position) columns. Per chunk, H = depthwise(x) + dw_bias for every
// input channel, in x's dtype (what the CUDA kernels round h to before their products), on all
// threads; then y = pw @ H + pw_bias:
//   - bfloat16 / float16 / float64: torch's mm straight into y (oneDNN for half types: AMX or
//     AVX512-BF16 where the CPU has them, bf16 ~8x the float32 rate on the CI runner; BLAS for
//     float64), all threads. Half types carry pw_bias in the product as one more input channel (a
//     row of ones in H), so y is rounded once, as on the GPU.
//   - float32: GemmRowsOp (cpu_kernels.h) on column x row blocks, all threads: torch's mm would
//     follow torch.set_float32_matmul_precision (bf16 products under 'medium'), where nn.Conv1d
//     stays exact.
// H is a chunk buffer of a few MB: the Cin x L_out intermediate never exists as a whole. The
// backward keeps its own GEMMs (register-blocked float32 / float64, bf16_gemm.h for bfloat16): its weight
// gradients are bitwise reproducible whatever the thread count, which a library GEMM does not
// promise. Measurements: csrc/NOTES.md, "Forty-fourth session" and "Forty-fifth session".
// ------------------------------------------------------------------------------------------------
// H of one chunk: torch's mm (half types, float64) pays a call and a repack of pw per chunk, so
// its chunks are large; float32's own GEMM runs best with H near L2 size (CI runner, B1 model
// shapes: 256 KB against 4 MB, SNAC 22.0 -> 20.8 ms, Vocos 6.0 -> 5.6, bf16 SNAC 4.5 -> 6.8 the
// other way).
constexpr int64_t kChunkBytes = int64_t(4) << 20;
constexpr int64_t kChunkBytesF32 = int64_t(256) << 10;
constexpr int64_t kRowSpan = 2048;  // positions per depthwise task of channel-first x

// Buffers reused by the calling thread across calls (slot 0: a chunk's H; slot 1: pw's operand
// copy; slot 2: the backward's d pw_weight partials): fresh multi-megabyte allocations go back to
// the system on free and page-fault again on every call (~14% of a Citrinet-sized forward on the
// CI runner, ~20% of a Vocos-sized float32 backward). Up to kKeepBytes per slot stay allocated
// between calls (release_large_scratch).
constexpr int64_t kKeepBytes = int64_t(64) << 20;

constexpr int kScratchSlots = 3;

inline std::vector<unsigned char>& scratch_slot(int slot) {
  thread_local std::vector<unsigned char> bufs[kScratchSlots];
  return bufs[slot];
}

inline unsigned char* reusable_scratch(int slot, int64_t bytes) {
  std::vector<unsigned char>& buf = scratch_slot(slot);
  if (static_cast<int64_t>(buf.size()) < bytes) {
    buf.clear();
    buf.shrink_to_fit();
    buf.resize(static_cast<size_t>(bytes));
  }
  return buf.data();
}

inline void release_large_scratch() {
  for (int slot = 0; slot < kScratchSlots; ++slot) {
    std::vector<unsigned char>& buf = scratch_slot(slot);
    if (static_cast<int64_t>(buf.size()) > kKeepBytes) {
      buf.clear();
      buf.shrink_to_fit();
    }
  }
}

// out = a @ b through the dispatcher (aten::mm.out; strided matrices, BLAS-style leading dims).
void mm_into(const Tensor& a, const Tensor& b, const Tensor& out) {
  std::array<StableIValue, 3> stack{torch::stable::detail::from(a), torch::stable::detail::from(b),
                                    torch::stable::detail::from(out)};
  STABLE_TORCH_ERROR_CODE_CHECK(torch_call_dispatcher("aten::mm", "out", stack.data(), TORCH_ABI_VERSION));
  (void)torch::stable::detail::to<Tensor>(stack[0]);  // the returned alias of out: released
}

Tensor matrix(const void* data, int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride,
              const Tensor& like) {
  return torch::stable::from_blob(const_cast<void*>(data), {rows, cols}, {row_stride, col_stride},
                                  like.device(), like.scalar_type());
}

// row[i] += bias[i] and row[i] += v, i < n (float64's pw_bias after the product; vectorised by the
// compiler).
template <typename T>
void add_bias_row(T* __restrict row, const T* __restrict bias, int64_t n) {
  for (int64_t i = 0; i < n; ++i) row[i] += bias[i];
}
template <typename T>
void add_scalar_row(T* __restrict row, T v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) row[i] += v;
}

// One chunk: batches [b0, b0 + nb) x output positions [j0, j0 + n); H column (bi * n + j - j0).
struct FwdChunk {
  int64_t b0, nb, j0, n;
};

// float32's product, strict whatever torch's matmul precision (torch.mm would follow
// torch.set_float32_matmul_precision, which can make it bf16; nn.Conv1d's float32 stays exact):
// y = pw @ H + pw_bias by GemmRowsOp over blocks of kProductCols columns on all threads, each
// block's C tile then stored in y's layout. H rows hold ldh >= round_up(ncol, 64) finite columns.
constexpr int64_t kProductCols = 256;
constexpr int64_t kProductRows = 256;  // a multiple of kMR

void product_f32(const Tensor& pw, const std::vector<float>& bias, const float* H, int64_t ldh,
                 const FwdChunk& ck, int64_t Cin, int64_t Cout, bool cl, const Strides3& sy, float* yp) {
  const float* A = static_cast<const float*>(pw.const_data_ptr());
  const int64_t ncol = ck.nb * ck.n, ldc = kProductCols + 16;
  const float* bp = bias.empty() ? nullptr : bias.data();  // padded to whole kMR panels
  // Tasks: column blocks x equal row blocks of pw: at most kProductRows rows each, so that a task's C
  // tile (~0.3 MB) stays in L2 across the GEMM's passes over Cin, and two tasks per thread where
  // Cout allows.
  const int64_t threads = std::max<int64_t>(1, static_cast<int64_t>(torch::stable::get_num_threads()));
  const int64_t col_blocks = ceil_div(ncol, kProductCols);
  const int64_t row_blocks = clamp64(
      std::max(ceil_div(Cout, kProductRows), ceil_div(2 * threads, col_blocks)), 1, ceil_div(Cout, 4 * kMR));
  const int64_t mr = round_up(ceil_div(Cout, row_blocks), kMR);
  const int64_t tasks = col_blocks * ceil_div(Cout, mr);
  torch::stable::parallel_for(0, tasks, 1, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> ct, row;  // row: store_tile's channel-last scratch
    ensure_size(ct, mr * ldc);
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t blk = task % col_blocks, m0 = (task / col_blocks) * mr;
      const int64_t c0 = blk * kProductCols, nc = std::min(kProductCols, ncol - c0);
      const int64_t m = std::min(mr, Cout - m0);
      // Channel-first y, a whole block of one batch row and whole kMR panels: the GEMM writes y's
      // rows in place (it writes exactly m rows and nc columns then).
      const int64_t ci = c0 % ck.n;
      if (!cl && sy.l == 1 && nc % 64 == 0 && m % kMR == 0 && ci + nc <= ck.n) {
        float* yb = yp + (ck.b0 + c0 / ck.n) * sy.b + m0 * sy.c + (ck.j0 + ci);
        isa_call<GemmRowsOp<float>>(m, nc, Cin, A + m0 * Cin, Cin, int64_t(1), H + c0, ldh, yb, sy.c,
                                    bp ? bp + m0 : nullptr, false);
        continue;
      }
      isa_call<GemmRowsOp<float>>(m, nc, Cin, A + m0 * Cin, Cin, int64_t(1), H + c0, ldh, ct.data(), ldc,
                                  bp ? bp + m0 : nullptr, false);
      // Columns c0.. of the chunk are (batch, position) pairs, batch-major: store by batch runs.
      for (int64_t q = 0; q < nc;) {
        const int64_t col = c0 + q, bi = col / ck.n, j = ck.j0 + col % ck.n;
        const int64_t run = std::min(nc - q, ck.n - col % ck.n);
        store_tile(static_cast<const float*>(ct.data() + q), ldc, m, run,
                   yp + (ck.b0 + bi) * sy.b + j * sy.l + m0 * sy.c, sy.c, sy.l, cl, row);
        q += run;
      }
    }
  });
}

// pw_a: (Cout, Ka) in x's dtype, contiguous; Ka = Cin, or more with pw_bias as column Cin and zeros
// after it (H's rows from Cin on: ones, then zeros). pwb_after: pw_bias added with the product
// instead (float32: the GEMM's initial value, padded to whole kMR rows; float64: afterwards), or empty.
template <typename S, typename T, int KT>
void forward_chunks(const Tensor& x, const std::vector<T>& dwc, const std::vector<T>& dwb,
                    const Tensor& pw_a, const std::vector<T>& pwb_after, const ConvGeometry& g, Tensor& y) {
  const S* xp = static_cast<const S*>(x.const_data_ptr());
  S* yp = static_cast<S*>(y.mutable_data_ptr());
  const Strides3 sx = strides_of(x);
  const Strides3 sy = strides_of(y);
  const int64_t B = g.batch, Cin = g.channels, Cout = g.out_channels, L = g.length, Lo = g.out_length;
  const int64_t K = g.kernel_size, s = g.stride, d = g.dilation, pl = g.pad_left;
  const int64_t Ka = pw_a.size(1);
  const bool cl = is_channels_last(x);
  const int64_t threads = std::max<int64_t>(1, static_cast<int64_t>(torch::stable::get_num_threads()));
  // Columns per chunk: whole rows of several batches where rows are short, else a position range.
  const int64_t chunk_bytes = std::is_same_v<S, float> ? kChunkBytesF32 : kChunkBytes;
  const int64_t cols = std::max<int64_t>(256, chunk_bytes / (Ka * static_cast<int64_t>(sizeof(S))));
  const int64_t nb = Lo <= cols ? std::max<int64_t>(1, std::min(B, cols / Lo)) : 1;
  const int64_t span = Lo <= cols ? Lo : round_up(cols, 64);
  // Depthwise tiles: a Cin-channel window of at most ~128 KB of T, and at least two per thread.
  const int64_t tl_cap = clamp64((32768 / std::max<int64_t>(Cin, 1)) / 16 * 16, 16, 512);
  const int64_t h_bytes = Ka * (round_up(nb * span, 64) + 16) * static_cast<int64_t>(sizeof(S));
  S* H = reinterpret_cast<S*>(reusable_scratch(0, h_bytes));
  // y rows are dense over (batch, position) in the channel-last layout (new_activation).
  STD_TORCH_CHECK(!cl || (sy.c == 1 && sy.l == Cout && sy.b == Lo * Cout),
                  "sepconv1d: internal: channel-last y is not dense");

  // h[0, n) = depthwise of one channel's window `in` + dw_bias, in x's dtype (through `hrow` when
  // that is not the accumulation type).
  auto depthwise_row = [&](const T* in, const int64_t* offs, int64_t c, S* h, int64_t n,
                           std::vector<T>& hrow) {
    if constexpr (std::is_same_v<S, T>) {
      isa_call<CorrOp<T, KT>>(in, offs, dwc.data() + c * K, K, dwb[c], h, n);
    } else {
      ensure_size(hrow, n);
      isa_call<CorrOp<T, KT>>(in, offs, dwc.data() + c * K, K, dwb[c], hrow.data(), n);
      store_row(static_cast<const T*>(hrow.data()), h, int64_t(1), n);
    }
  };

  auto run_chunk = [&](const FwdChunk& ck) {
    const int64_t ncol = ck.nb * ck.n;
    // H's row pitch: GemmRowsOp reads whole 64-column blocks; +16 so that rows a power of two
    // apart do not share L1 sets (the GEMM's B panel is 128 rows of one column block).
    const int64_t ldh = round_up(ncol, 64) + 16;
    // H: the depthwise of every (batch, channel) row of the chunk. Channel-first x: row segments
    // of at most kRowSpan positions as tasks (as the depthwise forward runs); channel-last x: tiles
    // of TL positions over all channels, whose windows are transposed from position rows.
    if (!cl) {
      const int64_t seg = std::min(ck.n, kRowSpan);
      const int64_t segs = ceil_div(ck.n, seg);
      const int64_t grain = std::max<int64_t>(1, 16384 / (seg * std::max<int64_t>(K, 4)));
      torch::stable::parallel_for(0, ck.nb * Cin * segs, grain, [&](int64_t begin, int64_t end) {
        std::vector<T> xbuf, hrow;
        std::vector<int64_t> offs(static_cast<size_t>(K));
        for (int64_t task = begin; task < end; ++task) {
          const int64_t row = task / segs, js = task % segs;
          const int64_t bi = row / Cin, c = row % Cin;
          const int64_t j0 = ck.j0 + js * seg, n = std::min(seg, ck.j0 + ck.n - j0);
          const int64_t p0 = j0 * s - pl, W = (n - 1) * s + (K - 1) * d + 1;
          const T* in = row_window(xp + (ck.b0 + bi) * sx.b + c * sx.c, sx.l, L, p0, W, K, s, d, xbuf,
                                   offs.data());
          depthwise_row(in, offs.data(), c, H + c * ldh + bi * ck.n + (j0 - ck.j0), n, hrow);
        }
      });
    } else {
      const int64_t TL = std::min(tl_cap, std::max<int64_t>(16, round_up(ceil_div(ncol, 2 * threads), 16)));
      const int64_t tiles_per_row = ceil_div(ck.n, TL);
      torch::stable::parallel_for(0, ck.nb * tiles_per_row, 1, [&](int64_t begin, int64_t end) {
        std::vector<T> xb, rowt, hrow;
        std::vector<int64_t> offs(static_cast<size_t>(K));
        for (int64_t task = begin; task < end; ++task) {
          const int64_t bi = task / tiles_per_row, jt = task % tiles_per_row;
          const int64_t j0 = ck.j0 + jt * TL, n = std::min(TL, ck.j0 + ck.n - j0);
          const int64_t p0 = j0 * s - pl, W = (n - 1) * s + (K - 1) * d + 1;
          const int64_t PL = ceil_div(W, s), rowlen = s * PL;
          phase_offsets(K, s, d, PL, offs.data());
          ensure_size(xb, Cin * rowlen);
          load_window(xp + (ck.b0 + bi) * sx.b, sx.c, sx.l, true, Cin, L, p0, s, PL, xb.data(), rowlen, rowt);
          for (int64_t c = 0; c < Cin; ++c) {
            depthwise_row(xb.data() + c * rowlen, offs.data(), c, H + c * ldh + bi * ck.n + (j0 - ck.j0), n,
                          hrow);
          }
        }
      });
    }
    // The rows after Cin: ones (pw_bias's column of pw_a), then zeros; the columns past ncol that
    // float32's GEMM reads: zeros.
    for (int64_t r = Cin; r < Ka; ++r) {
      std::fill(H + r * ldh, H + r * ldh + ncol, from_acc<S>(T(r == Cin ? 1 : 0)));
    }
    if constexpr (std::is_same_v<S, float>) {
      for (int64_t r = 0; r < Ka; ++r) std::fill(H + r * ldh + ncol, H + (r + 1) * ldh, 0.0f);
      product_f32(pw_a, pwb_after, H, ldh, ck, Cin, Cout, cl, sy, yp);
      return;
    }
    // y = pw_a @ H, written in place on every thread; then pwb_after.
    S* yc = yp + ck.b0 * sy.b + ck.j0 * sy.l;
    if (cl) {  // y^T rows (b, j) x Cout = H^T @ pw_a^T
      mm_into(matrix(H, ncol, Ka, 1, ldh, x), matrix(pw_a.const_data_ptr(), Ka, Cout, 1, Ka, x),
              matrix(yc, ncol, Cout, Cout, 1, x));
    } else {
      for (int64_t bi = 0; bi < ck.nb; ++bi) {
        mm_into(pw_a, matrix(H + bi * ck.n, Ka, ck.n, ldh, 1, x),
                matrix(yc + bi * sy.b, Cout, ck.n, sy.c, 1, x));
      }
    }
    if constexpr (std::is_same_v<S, T>) {
      if (pwb_after.empty()) return;
      if (cl) {
        torch::stable::parallel_for(0, ncol, 64, [&](int64_t c0, int64_t c1) {
          for (int64_t c = c0; c < c1; ++c) add_bias_row(yc + c * Cout, pwb_after.data(), Cout);
        });
      } else {
        torch::stable::parallel_for(0, ck.nb * Cout, 8, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            add_scalar_row(yc + (r / Cout) * sy.b + (r % Cout) * sy.c, pwb_after[r % Cout], ck.n);
          }
        });
      }
    }
  };

  if (span == Lo) {
    for (int64_t b0 = 0; b0 < B; b0 += nb) run_chunk({b0, std::min(nb, B - b0), 0, Lo});
  } else {
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j0 = 0; j0 < Lo; j0 += span) run_chunk({b, 1, j0, std::min(span, Lo - j0)});
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Backward.
// ------------------------------------------------------------------------------------------------
struct SepNeeds {
  bool x, dww, pw, dysum;
};

struct SepPartials {
  int64_t tile = 0;           // output positions per tile
  int64_t tiles_per_chunk = 1;
  int64_t count = 0;
  int64_t ldp = 0;            // row stride of the d pw_weight partials (columns = Cin)
  // d pw_weight partials, count x Coutp x ldp (float, or double for float64; scratch slot 2); not
  // zero-filled: the first tile of a chunk overwrites its block (the reduction reads only rows <
  // Cout, columns < Cin).
  void* pw = nullptr;
  std::vector<double> dww;    // count x Cin x K
  std::vector<double> dysum;  // count x Cout
};

template <typename T>
T* pw_partials(SepPartials& p) {
  return static_cast<T*>(p.pw);
}

// backward_tiles' per-thread buffers (thread_local there, so they persist between calls). A
// buffer over kKeepTileBytes is freed at the end of the call that grew it: tiles hold ~256K
// elements (separable_tile), 1-1.3 MB at the model shapes, but long kernels' halos grow them.
constexpr int64_t kKeepTileBytes = int64_t(2) << 20;

template <typename T>
struct BwdTileScratch {
  std::vector<T> xb, rowt, DY, DH, dxt, H, Ht;
  bf16::PackedBuffer hpack, dypack, astrip;  // operands of the bf16 products
  std::vector<int64_t> offs;
  RowGradScratch<T> rows;

  void trim() {
    for (std::vector<T>* v : {&xb, &rowt, &DY, &DH, &dxt, &H, &Ht}) {
      if (static_cast<int64_t>(v->capacity() * sizeof(T)) > kKeepTileBytes) std::vector<T>().swap(*v);
    }
    for (bf16::PackedBuffer* b : {&hpack, &dypack, &astrip}) {
      if (b->capacity * 2 > kKeepTileBytes) *b = bf16::PackedBuffer{};
    }
  }
};

template <typename S, typename T, int KT>
void backward_tiles(const Tensor& dy, const Tensor& x, const std::vector<T>& dwc,
                    const std::vector<T>& dwb, const std::vector<T>& pwTp, const uint16_t* pwT_bf16,
                    const ConvGeometry& g, Tensor* dx, SepNeeds need, SepPartials& parts) {
  const S* xp = static_cast<const S*>(x.const_data_ptr());
  const S* gp = static_cast<const S*>(dy.const_data_ptr());
  S* dxp = dx ? static_cast<S*>(dx->mutable_data_ptr()) : nullptr;
  const Strides3 sx = strides_of(x);
  const Strides3 sg = strides_of(dy);
  const Strides3 sd = dx ? strides_of(*dx) : Strides3{0, 0, 0};
  const int64_t Cin = g.channels, Cout = g.out_channels, L = g.length, Lo = g.out_length;
  const int64_t K = g.kernel_size, s = g.stride, d = g.dilation, pl = g.pad_left;
  const bool cl = is_channels_last(x);
  const int64_t TL = parts.tile;
  const int64_t TLp = gemm_ld(TL);
  const int64_t Coutp = round_up(Cout, kMR), Cinp = round_up(Cin, kMR);
  const int64_t ntiles = ceil_div(Lo, TL);
  const int64_t tiles = g.batch * ntiles;
  const int64_t ldp = parts.ldp;
  T* pw_part = need.pw ? pw_partials<T>(parts) : nullptr;

  torch::stable::parallel_for(0, parts.count, 1, [&](int64_t begin, int64_t end) {
    // Per-thread buffers that outlive the call: each is 1-2 MB at the model shapes, and fresh ones
    // page-faulted on every call (~6% of Citrinet's float32 backward in the kernel's page clearing).
    thread_local BwdTileScratch<T> ws;
    std::vector<T>& xb = ws.xb;
    std::vector<T>& rowt = ws.rowt;
    std::vector<T>& DY = ws.DY;
    std::vector<T>& DH = ws.DH;
    std::vector<T>& dxt = ws.dxt;
    std::vector<T>& H = ws.H;
    std::vector<T>& Ht = ws.Ht;
    bf16::PackedBuffer& hpack = ws.hpack;
    bf16::PackedBuffer& dypack = ws.dypack;
    bf16::PackedBuffer& astrip = ws.astrip;
    if (need.pw) {
      H.assign(static_cast<size_t>(std::max<int64_t>(Cin, 1) * TLp), T(0));
      if (pwT_bf16 == nullptr) Ht.assign(static_cast<size_t>(TL * ldp), T(0));
    }
    std::vector<int64_t>& offs = ws.offs;
    offs.assign(static_cast<size_t>(K), 0);
    RowGradScratch<T>& scratch = ws.rows;
    for (int64_t ch = begin; ch < end; ++ch) {
      double* dys = need.dysum ? parts.dysum.data() + ch * Cout : nullptr;
      double* dww = need.dww ? parts.dww.data() + ch * Cin * K : nullptr;
      T* dpw = need.pw ? pw_part + ch * Coutp * ldp : nullptr;
      const int64_t t_end = std::min(tiles, (ch + 1) * parts.tiles_per_chunk);
      for (int64_t tix = ch * parts.tiles_per_chunk; tix < t_end; ++tix) {
        const int64_t b = tix / ntiles, jt = tix % ntiles;
        const int64_t j0 = jt * TL, n = std::min(TL, Lo - j0), j1 = j0 + n;
        const TileSpan sp = tile_span(jt, ntiles, j0, j1, g, need.x);
        const int64_t nd = sp.jb1 - sp.jb0, ndp = gemm_ld(nd);
        const int64_t own = j0 - sp.jb0;
        ensure_size(DY, std::max<int64_t>(Cout, 1) * ndp);
        load_window(gp + b * sg.b, sg.c, sg.l, cl, Cout, Lo, sp.jb0, 1, nd, DY.data(), ndp, rowt);
        if (dys) {
          for (int64_t o = 0; o < Cout; ++o) {
            isa_call<SumOp<T>>(static_cast<const T*>(DY.data() + o * ndp + own), n, dys + o);
          }
        }
        // x window (phase layout), for H and for d dw_weight
        const int64_t p0 = j0 * s - pl, W = (n - 1) * s + (K - 1) * d + 1;
        const int64_t PL = ceil_div(W, s), rowlen = s * PL;
        bool direct = false;
        if (need.pw || need.dww) {
          if constexpr (std::is_same_v<S, T>) {
            direct = !cl && s == 1 && sx.l == 1 && p0 >= 0 && p0 + W <= L;
          }
          if (direct) {
            for (int64_t k = 0; k < K; ++k) offs[k] = k * d;
          } else {
            phase_offsets(K, s, d, PL, offs.data());
            ensure_size(xb, Cin * rowlen);
            load_window(xp + b * sx.b, sx.c, sx.l, cl, Cin, L, p0, s, PL, xb.data(), rowlen, rowt);
          }
        }
        auto x_in = [&](int64_t c) -> const T* {
          return direct ? reinterpret_cast<const T*>(xp + b * sx.b + c * sx.c + p0)
                        : static_cast<const T*>(xb.data() + c * rowlen);
        };
        if (need.pw) {
          for (int64_t c = 0; c < Cin; ++c) {
            isa_call<CorrOp<T, KT>>(x_in(c), static_cast<const int64_t*>(offs.data()),
                                    dwc.data() + c * K, K, dwb[c], H.data() + c * TLp, n);
          }
          const bool first = tix == ch * parts.tiles_per_chunk;
          if constexpr (std::is_same_v<S, BFloat16>) {
#if SEPCONV1D_BF16_GEMM
            if (pwT_bf16 != nullptr) {
              // dPW (+)= DY's tile * H^T in bf16: H rounded to bf16 (as the forward rounds it) and
              // packed; DY's rows (bf16 values) packed strip by strip.
              uint16_t* hb = hpack.get(bf16::packed_b_elems(Cin, n));
              bf16::pack_b_transposed(H.data(), TLp, Cin, n, hb);
              bf16::gemm_rows_a(DY.data() + own, ndp, hb, dpw, ldp, Cout, Cin, n, !first,
                                astrip.get(32 * round_up(n, 32)));
            }
#endif
          }
          if (pwT_bf16 == nullptr) {
            // Ht[j][c] = H[c][j]
            constexpr int64_t kB = 16;
            for (int64_t c0 = 0; c0 < Cin; c0 += kB) {
              const int64_t c1 = std::min(Cin, c0 + kB);
              for (int64_t j = 0; j < n; ++j) {
                T* hr = Ht.data() + j * ldp;
                for (int64_t c = c0; c < c1; ++c) hr[c] = H[c * TLp + j];
              }
            }
            // dPW (+)= DY's tile (rows read in place) * Ht
            isa_call<GemmRowsOp<T>>(Cout, Cin, n, static_cast<const T*>(DY.data() + own), ndp,
                                    int64_t(1), static_cast<const T*>(Ht.data()), ldp, dpw, ldp,
                                    static_cast<const T*>(nullptr), !first);
          }
        }
        if (need.dww || need.x) {
          ensure_size(DH, std::max<int64_t>(Cinp, 1) * ndp);
          if constexpr (std::is_same_v<S, BFloat16>) {
#if SEPCONV1D_BF16_GEMM
            if (pwT_bf16 != nullptr) {  // DH = pw^T (packed once per call) * DY in bf16
              uint16_t* db = dypack.get(bf16::packed_b_elems(nd, Cout));
              bf16::pack_b_rows(DY.data(), ndp, Cout, nd, db);
              bf16::gemm_packed(pwT_bf16, db, DH.data(), ndp, Cin, nd, Cout, false);
            }
#endif
          }
          if (pwT_bf16 == nullptr) {
            isa_call<GemmOp<T>>(Cin, nd, Cout, pwTp.data(), static_cast<const T*>(DY.data()), ndp,
                                DH.data(), ndp, static_cast<const T*>(nullptr), false);
          }
          const int64_t nt = sp.T1 - sp.T0;
          const bool do_x = need.x && nt > 0;
          const int64_t ntp = round_up(std::max<int64_t>(nt, 1), 16);
          bool dx_direct = false;
          if constexpr (std::is_same_v<S, T>) dx_direct = !cl && sd.l == 1;
          if (do_x && !dx_direct) ensure_size(dxt, Cin * ntp);
          for (int64_t c = 0; c < Cin; ++c) {
            const T* dh = DH.data() + c * ndp;
            if (need.dww) {
              isa_call<DotTapsOp<T, KT>>(dh + own, n, x_in(c), static_cast<const int64_t*>(offs.data()),
                                         K, dww + c * K);
            }
            if (do_x) {
              T* out = dx_direct ? reinterpret_cast<T*>(dxp + b * sd.b + c * sd.c + sp.i0 * sd.l)
                                 : dxt.data() + c * ntp;
              row_input_grad<T, KT>(dh, sp.jb0, dwc.data() + c * K, K, s, d, sp.T0, sp.T1, out,
                                    scratch);
            }
          }
          if (do_x && !dx_direct) {
            store_tile(static_cast<const T*>(dxt.data()), ntp, Cin, nt, dxp + b * sd.b + sp.i0 * sd.l,
                       sd.c, sd.l, cl, rowt);
          }
        }
      }
    }
    ws.trim();
  });
}

// ------------------------------------------------------------------------------------------------
// Operators. Weights may be 2-D or nn.Conv1d's 3-D shapes (see flat_weight() in conv_params.h):
// contiguous, both are the same memory, and gradients are allocated like the weights.
// ------------------------------------------------------------------------------------------------
Tensor separable_conv1d_cpu(const Tensor& x_in, const Tensor& dw_weight,
                            const std::optional<Tensor>& dw_bias, const Tensor& pw_weight,
                            const std::optional<Tensor>& pw_bias, int64_t stride, int64_t pad_left,
                            int64_t pad_right, int64_t dilation, bool /*allow_tf32*/) {
  const ConvGeometry g = check_separable(x_in, dw_weight, dw_bias, pw_weight, pw_bias, stride,
                                         pad_left, pad_right, dilation);
  const Tensor x = as_kernel_layout(x_in);
  Tensor y = new_activation(x, g.out_channels, g.out_length, x.scalar_type());
  if (y.numel() == 0) return y;
  const Tensor dw = torch::stable::contiguous(dw_weight);
  const Tensor pw = torch::stable::contiguous(pw_weight);
  std::optional<Tensor> dwb, pwb;
  if (dw_bias.has_value()) dwb = torch::stable::contiguous(*dw_bias);
  if (pw_bias.has_value()) pwb = torch::stable::contiguous(*pw_bias);
  const int64_t Cin = g.channels, Cout = g.out_channels, K = g.kernel_size;

  dispatch_dtypes(x.scalar_type(), dw.scalar_type(), "separable_conv1d", [&](auto xt, auto wt) {
    using S = typename decltype(xt)::type;
    using WT = typename decltype(wt)::type;
    using T = acc_t<S>;
    const std::vector<T> dwc = to_acc_vector<WT, T>(dw, Cin * K);
    const std::vector<T> dwb_t = dwb ? to_acc_vector<WT, T>(*dwb, Cin) : std::vector<T>(Cin, T(0));
    // pw as the product's operand in x's dtype (float32 weights of half x rounded, as the CUDA
    // kernels' MMA operands are). Half types: pw_bias as one more column, so that y is rounded once
    // (acc + bias). float32 / float64 add pw_bias to the product's result: the same one rounding,
    // without a copy of pw.
    const bool bias_in_product = pwb.has_value() && is_half_type(x.scalar_type());
    Tensor pw_a = torch::stable::reshape(pw, {Cout, Cin});
    if (bias_in_product || pw.scalar_type() != x.scalar_type()) {
      // Ka: Cin, or Cin + 1 padded with zero columns to whole 64-byte rows (aligned operand rows).
      const int64_t Ka = bias_in_product ? round_up(Cin + 1, 16) : Cin;
      S* dst = reinterpret_cast<S*>(reusable_scratch(1, Cout * Ka * static_cast<int64_t>(sizeof(S))));
      pw_a = torch::stable::from_blob(dst, {Cout, Ka}, {Ka, 1}, x.device(), x.scalar_type());
      const WT* src = static_cast<const WT*>(pw.const_data_ptr());
      const WT* bsrc = bias_in_product ? static_cast<const WT*>(pwb->const_data_ptr()) : nullptr;
      torch::stable::parallel_for(0, Cout, 16, [&](int64_t o0, int64_t o1) {
        std::vector<T> row(static_cast<size_t>(Cin));
        for (int64_t o = o0; o < o1; ++o) {
          if constexpr (std::is_same_v<WT, S>) {
            std::memcpy(dst + o * Ka, src + o * Cin, static_cast<size_t>(Cin) * sizeof(S));
          } else {
            load_row(src + o * Cin, int64_t(1), row.data(), Cin);
            store_row(static_cast<const T*>(row.data()), dst + o * Ka, int64_t(1), Cin);
          }
          if (bsrc != nullptr) {
            dst[o * Ka + Cin] = from_acc<S>(to_acc<T>(bsrc[o]));
            std::fill(dst + o * Ka + Cin + 1, dst + (o + 1) * Ka, from_acc<S>(T(0)));
          }
        }
      });
    }
    std::vector<T> pwb_after;  // pw_bias added after the product (float32 / float64)
    if (pwb.has_value() && !bias_in_product) {
      pwb_after = to_acc_vector<WT, T>(*pwb, Cout);
      pwb_after.resize(static_cast<size_t>(round_up(Cout, kMR)), T(0));  // GemmRowsOp's padded rows
    }
    dispatch_kernel_size(K, [&](auto kt) {
      forward_chunks<S, T, decltype(kt)::value>(x, dwc, dwb_t, pw_a, pwb_after, g, y);
    });
  });
  release_large_scratch();
  return y;
}

std::tuple<std::optional<Tensor>, std::optional<Tensor>, std::optional<Tensor>,
           std::optional<Tensor>, std::optional<Tensor>>
separable_conv1d_backward_cpu(const Tensor& grad_out, const Tensor& x_in, const Tensor& dw_weight,
                              const std::optional<Tensor>& dw_bias, const Tensor& pw_weight,
                              int64_t stride, int64_t pad_left, int64_t pad_right, int64_t dilation,
                              bool /*allow_tf32*/, bool need_grad_x, bool need_grad_dw_weight,
                              bool need_grad_dw_bias, bool need_grad_pw_weight,
                              bool need_grad_pw_bias) {
  const ConvGeometry g = check_separable(x_in, dw_weight, dw_bias, pw_weight, std::nullopt, stride,
                                         pad_left, pad_right, dilation);
  check_grad_out(grad_out, x_in, g);
  const Tensor x = as_kernel_layout(x_in);
  const bool cl = is_channels_last(x);
  const Tensor dy = to_layout(grad_out, cl);
  const Tensor dw = torch::stable::contiguous(dw_weight);
  const Tensor pw = torch::stable::contiguous(pw_weight);
  std::optional<Tensor> dwb;
  if (dw_bias.has_value()) dwb = torch::stable::contiguous(*dw_bias);
  const int64_t Cin = g.channels, Cout = g.out_channels, K = g.kernel_size;
  const ScalarType wdt = dw.scalar_type();

  std::optional<Tensor> gx, gdw, gdwb, gpw, gpwb;
  if (need_grad_x) gx = new_activation(x, Cin, g.length, x.scalar_type());
  if (need_grad_dw_weight) gdw = new_param_grad(dw, wdt);
  if (need_grad_dw_bias) gdwb = torch::stable::empty({Cin}, wdt, std::nullopt, dw.device());
  if (need_grad_pw_weight) gpw = new_param_grad(pw, wdt);
  if (need_grad_pw_bias) gpwb = torch::stable::empty({Cout}, wdt, std::nullopt, dw.device());

  SepNeeds need{need_grad_x && gx->numel() > 0, need_grad_dw_weight && Cin > 0,
                need_grad_pw_weight && Cin > 0, need_grad_dw_bias || need_grad_pw_bias};
  // Tiles and chunks depend on the shapes only (not on which gradients are asked for), so every
  // weight gradient is bitwise the same whatever the other flags and the thread count.
  const int64_t halo = ceil_div((K - 1) * g.dilation, g.stride);
  const int64_t TL = separable_tile(Cin, Cout, halo);
  const int64_t tiles = g.batch * ceil_div(g.out_length, TL);

  SepPartials parts;
  parts.tile = TL;
  parts.ldp = gemm_ld(Cin);
  if (tiles > 0 && (need.x || need.dww || need.pw || need.dysum)) {
    if (need.dww || need.pw || need.dysum) {
      const int64_t esize = x.scalar_type() == ScalarType::Double ? 8 : 4;
      const int64_t bytes = round_up(Cout, kMR) * parts.ldp * esize;
      const int64_t cap = std::min(kMaxChunksSep, std::max<int64_t>(1, kPartialBytes / bytes));
      parts.tiles_per_chunk = ceil_div(tiles, std::min(tiles, cap));
    } else {
      parts.tiles_per_chunk = 1;  // input gradient only: no reduction, finest split
    }
    parts.count = ceil_div(tiles, parts.tiles_per_chunk);
  }
  const size_t nchunks = static_cast<size_t>(parts.count);
  if (need.dww) parts.dww.assign(nchunks * Cin * K, 0.0);
  if (need.dysum) parts.dysum.assign(nchunks * Cout, 0.0);

  dispatch_dtypes(x.scalar_type(), wdt, "separable_conv1d_backward", [&](auto xt, auto wt) {
    using S = typename decltype(xt)::type;
    using WT = typename decltype(wt)::type;
    using T = acc_t<S>;
    if (parts.count > 0) {
      const std::vector<T> dwc = to_acc_vector<WT, T>(dw, Cin * K);
      const std::vector<T> dwbv = dwb ? to_acc_vector<WT, T>(*dwb, Cin) : std::vector<T>(Cin, T(0));
      // bfloat16 activations take bf16 products (AMX or AVX512-BF16, bf16_gemm.h) where the CPU
      // has them: pw^T rounded to bf16 as the products' operand (as the CUDA kernels round it).
      // Other types, and CPUs without either, the float32 / float64 GEMM.
      const bool use_bf16 =
          std::is_same_v<S, BFloat16> && bf16::bf16_gemm_path() != bf16::kNone && Cout > 0;
      // pw^T as DH's packed operand, converted and packed on all threads (Cout x Cin elements: on
      // one thread this was ~5% of a 1024-channel backward on 2 cores, and more with more cores).
      std::vector<T> pwTp;
      bf16::PackedBuffer pwT_bf16;
      // Non-null selects the bf16 products; filled only where DH is needed.
      uint16_t* pwT_a = use_bf16 ? pwT_bf16.get(bf16::packed_a_elems(Cin, Cout)) : nullptr;
      if (need.x || need.dww) {
        std::vector<T> pwc(static_cast<size_t>(Cout * Cin));
        const WT* pwp = static_cast<const WT*>(pw.const_data_ptr());
        torch::stable::parallel_for(0, Cout * Cin, 65536, [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) pwc[i] = to_acc<T>(pwp[i]);
        });
        if (!use_bf16) {  // panels of kMR rows of pw^T
          pwTp.resize(static_cast<size_t>(round_up(Cin, kMR) * Cout));
          torch::stable::parallel_for(0, ceil_div(Cin, kMR), 16, [&](int64_t p0, int64_t p1) {
            const int64_t m0 = p0 * kMR, m1 = std::min(Cin, p1 * kMR);
            pack_a(m1 - m0, Cout, pwc.data() + m0, int64_t(1), Cin, pwTp.data() + m0 * Cout);
          });
        }
        if constexpr (std::is_same_v<T, float>) {
#if SEPCONV1D_BF16_GEMM
          if (use_bf16) {  // panels of 16 rows of pw^T
            const int64_t KB = round_up(Cout, 32) / 32;
            torch::stable::parallel_for(0, ceil_div(Cin, 16), 4, [&](int64_t p0, int64_t p1) {
              const int64_t m0 = p0 * 16, m1 = std::min(Cin, p1 * 16);
              bf16::pack_a_transposed(pwc.data() + m0, Cin, m1 - m0, Cout, pwT_a + p0 * KB * 512);
            });
          }
#endif
        }
      }
      if (need.pw) {
        const int64_t n = static_cast<int64_t>(nchunks) * round_up(Cout, kMR) * parts.ldp;
        parts.pw = reusable_scratch(2, n * static_cast<int64_t>(sizeof(T)));
      }
      Tensor* gxp = need.x ? &*gx : nullptr;
      dispatch_kernel_size(K, [&](auto kt) {
        backward_tiles<S, T, decltype(kt)::value>(dy, x, dwc, dwbv, pwTp, pwT_a, g, gxp, need, parts);
      });
    }
    // Fixed-order reductions of the per-chunk partial sums.
    const int64_t nch = parts.count;
    if (need_grad_pw_weight) {
      WT* out = static_cast<WT*>(gpw->mutable_data_ptr());
      const int64_t rows_stride = round_up(Cout, kMR) * parts.ldp;
      const T* part = need.pw ? pw_partials<T>(parts) : nullptr;
      const int64_t ldp = parts.ldp;
      // Per row, chunk by chunk over whole rows (vectorised over c; the same sums in chunk order
      // per element as an element-by-element loop, which was a fifth of Citrinet's backward).
      torch::stable::parallel_for(0, Cout, std::max<int64_t>(1, 4096 / std::max<int64_t>(Cin, 1)),
                                  [&](int64_t o0, int64_t o1) {
        std::vector<double> acc(static_cast<size_t>(Cin));
        for (int64_t o = o0; o < o1; ++o) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t ch = 0; ch < nch; ++ch) {
            const T* row = part + ch * rows_stride + o * ldp;
            for (int64_t c = 0; c < Cin; ++c) acc[c] += static_cast<double>(row[c]);
          }
          for (int64_t c = 0; c < Cin; ++c) out[o * Cin + c] = from_double<WT>(acc[c]);
        }
      });
    }
    if (need_grad_dw_weight) {
      WT* out = static_cast<WT*>(gdw->mutable_data_ptr());
      const int64_t n = Cin * K;
      torch::stable::parallel_for(0, n, 4096, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          double acc = 0.0;
          for (int64_t ch = 0; ch < nch; ++ch) acc += parts.dww[ch * n + i];
          out[i] = from_double<WT>(acc);
        }
      });
    }
    if (need.dysum) {
      std::vector<double> dysum(static_cast<size_t>(Cout), 0.0);
      for (int64_t o = 0; o < Cout; ++o) {
        double acc = 0.0;
        for (int64_t ch = 0; ch < nch; ++ch) acc += parts.dysum[ch * Cout + o];
        dysum[o] = acc;
      }
      if (need_grad_pw_bias) {
        WT* out = static_cast<WT*>(gpwb->mutable_data_ptr());
        for (int64_t o = 0; o < Cout; ++o) out[o] = from_double<WT>(dysum[o]);
      }
      if (need_grad_dw_bias) {
        // d dw_bias[c] = sum_{b,j} dh[c, j] = sum_o pw[o, c] * sum_{b,j} dy[o, j]
        // Per block of channels, o outside: pw's rows read in order, the same sums in the same
        // order per c as a c-outer loop (which read pw by columns: 7 ms at 1024 x 1024 on the CI
        // runner).
        const WT* pwp = static_cast<const WT*>(pw.const_data_ptr());
        WT* out = static_cast<WT*>(gdwb->mutable_data_ptr());
        torch::stable::parallel_for(0, Cin, 256, [&](int64_t c0, int64_t c1) {
          std::vector<double> acc(static_cast<size_t>(c1 - c0), 0.0);
          for (int64_t o = 0; o < Cout; ++o) {
            const WT* row = pwp + o * Cin;
            const double v = dysum[o];
            for (int64_t c = c0; c < c1; ++c) acc[c - c0] += to_acc<double>(row[c]) * v;
          }
          for (int64_t c = c0; c < c1; ++c) out[c] = from_double<WT>(acc[c - c0]);
        });
      }
    }
  });
  release_large_scratch();
  return {gx, gdw, gdwb, gpw, gpwb};
}

}  // namespace
}  // namespace cpu
}  // namespace sepconv1d

STABLE_TORCH_LIBRARY_IMPL(sepconv1d, CPU, m) {
  m.impl("separable_conv1d", TORCH_BOX(&sepconv1d::cpu::separable_conv1d_cpu));
  m.impl("separable_conv1d_backward", TORCH_BOX(&sepconv1d::cpu::separable_conv1d_backward_cpu));
}
