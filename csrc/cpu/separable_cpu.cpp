// CPU kernels of separable_conv1d and separable_conv1d_backward: depthwise conv then a pointwise
// (1x1) conv, fused so that the Cin x L_out intermediate never exists as a whole.
//
// Work is tiled over (batch, TL output positions). Per tile:
//   forward : H = depthwise(x window) (Cin x TL, float, dw_bias folded into the pointwise bias),
//             Y = pw_packed * H + (pw_bias + pw_weight @ dw_bias) with the register-blocked GEMM,
//             stored in x's layout.
//   backward: DY = grad_out tile (+ a halo of (K-1)*dilation/stride positions on the left when the
//             input gradient is needed), dPW += DY * H^T (H recomputed incl. dw_bias),
//             DH = pw^T * DY, then the depthwise backward of DH: d dw_weight (tap dot products with
//             the x window) and dx (gathered transposed convolution of DH rows).
//   d pw_bias = sum DY and d dw_bias = pw^T (sum DY) are formed from per-chunk sums of DY.
// Weight gradients go through per-chunk partial sums over a partition fixed by the shapes, added
// in chunk order: bitwise reproducible whatever the thread count. allow_tf32 is ignored on CPU.
#include "cpu/cpu_kernels.h"

#include <torch/csrc/stable/library.h>

#include <memory>
#include <optional>
#include <tuple>

namespace sepconv1d {
namespace cpu {
namespace {

constexpr int64_t kMaxChunksSep = 64;
constexpr int64_t kPartialBytes = int64_t(64) << 20;  // bound on d pw_weight partials

// Output positions per tile: keeps the Cin x TL and Cout x TL tiles in L2. The backward also
// recomputes a left halo of grad_out columns for the input gradient; the tile grows with it so that
// the halo stays a small fraction of the work.
int64_t separable_tile(int64_t cin, int64_t cout, int64_t halo = 0) {
  const int64_t cmax = std::max<int64_t>({cin, cout, int64_t(1)});
  const int64_t tl = clamp64((32768 / cmax) / kNPad * kNPad, kNPad, 512);
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
// Forward.
// ------------------------------------------------------------------------------------------------
template <typename S, typename T, int KT>
void forward_tiles(const Tensor& x, const std::vector<T>& dwc, const std::vector<T>& pwp,
                   const std::vector<T>& bias_o, const ConvGeometry& g, Tensor& y) {
  const S* xp = static_cast<const S*>(x.const_data_ptr());
  S* yp = static_cast<S*>(y.mutable_data_ptr());
  const Strides3 sx = strides_of(x);
  const Strides3 sy = strides_of(y);
  const int64_t Cin = g.channels, Cout = g.out_channels, L = g.length, Lo = g.out_length;
  const int64_t K = g.kernel_size, s = g.stride, d = g.dilation, pl = g.pad_left;
  const bool cl = is_channels_last(x);
  const int64_t TL = separable_tile(Cin, Cout);
  const int64_t TLp = gemm_ld(TL);
  const int64_t Coutp = round_up(Cout, kMR);
  const int64_t ntiles = ceil_div(Lo, TL);
  const int64_t items = g.batch * ntiles;

  torch::stable::parallel_for(0, items, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> xb, rowt;
    std::vector<T> H(static_cast<size_t>(std::max<int64_t>(Cin, 1) * TLp), T(0));
    std::vector<T> Y(static_cast<size_t>(Coutp * TLp), T(0));
    std::vector<int64_t> offs(static_cast<size_t>(K));
    for (int64_t it = begin; it < end; ++it) {
      const int64_t b = it / ntiles, jt = it % ntiles;
      const int64_t j0 = jt * TL, n = std::min(TL, Lo - j0);
      const int64_t p0 = j0 * s - pl, W = (n - 1) * s + (K - 1) * d + 1;
      const int64_t PL = ceil_div(W, s), rowlen = s * PL;
      bool direct = false;
      if constexpr (std::is_same_v<S, T>) direct = !cl && s == 1 && sx.l == 1 && p0 >= 0 && p0 + W <= L;
      if (direct) {
        for (int64_t k = 0; k < K; ++k) offs[k] = k * d;
      } else {
        phase_offsets(K, s, d, PL, offs.data());
        ensure_size(xb, Cin * rowlen);
        load_window(xp + b * sx.b, sx.c, sx.l, cl, Cin, L, p0, s, PL, xb.data(), rowlen, rowt);
      }
      for (int64_t c = 0; c < Cin; ++c) {
        const T* in = direct ? reinterpret_cast<const T*>(xp + b * sx.b + c * sx.c + p0)
                             : static_cast<const T*>(xb.data() + c * rowlen);
        isa_call<CorrOp<T, KT>>(in, static_cast<const int64_t*>(offs.data()), dwc.data() + c * K, K,
                                T(0), H.data() + c * TLp, n);
      }
      isa_call<GemmOp<T>>(Cout, n, Cin, pwp.data(), static_cast<const T*>(H.data()), TLp, Y.data(),
                          TLp, bias_o.data(), false);
      store_tile(static_cast<const T*>(Y.data()), TLp, Cout, n, yp + b * sy.b + j0 * sy.l, sy.c, sy.l, cl,
                 rowt);
    }
  });
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
  // d pw_weight partials, count x Coutp x ldp; not zero-filled: the first tile of a chunk
  // overwrites its block (the reduction reads only rows < Cout, columns < Cin).
  std::unique_ptr<float[]> pw_f;
  std::unique_ptr<double[]> pw_d;
  std::vector<double> dww;    // count x Cin x K
  std::vector<double> dysum;  // count x Cout
};

template <typename T>
T* pw_partials(SepPartials& p) {
  if constexpr (std::is_same_v<T, double>) {
    return p.pw_d.get();
  } else {
    return p.pw_f.get();
  }
}

template <typename S, typename T, int KT>
void backward_tiles(const Tensor& dy, const Tensor& x, const std::vector<T>& dwc,
                    const std::vector<T>& dwb, const std::vector<T>& pwTp, const ConvGeometry& g,
                    Tensor* dx, SepNeeds need, SepPartials& parts) {
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
    std::vector<T> xb, rowt, DY, DYp, DH, dxt;
    std::vector<T> H, Ht;
    if (need.pw) {
      H.assign(static_cast<size_t>(std::max<int64_t>(Cin, 1) * TLp), T(0));
      Ht.assign(static_cast<size_t>(TL * ldp), T(0));
      DYp.assign(static_cast<size_t>(Coutp * TL), T(0));
    }
    std::vector<int64_t> offs(static_cast<size_t>(K));
    RowGradScratch<T> scratch;
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
          // Ht[j][c] = H[c][j]
          constexpr int64_t kB = 16;
          for (int64_t c0 = 0; c0 < Cin; c0 += kB) {
            const int64_t c1 = std::min(Cin, c0 + kB);
            for (int64_t j = 0; j < n; ++j) {
              T* hr = Ht.data() + j * ldp;
              for (int64_t c = c0; c < c1; ++c) hr[c] = H[c * TLp + j];
            }
          }
          pack_a(Cout, n, static_cast<const T*>(DY.data() + own), ndp, int64_t(1), DYp.data());
          const bool first = tix == ch * parts.tiles_per_chunk;
          isa_call<GemmOp<T>>(Cout, Cin, n, static_cast<const T*>(DYp.data()),
                              static_cast<const T*>(Ht.data()), ldp, dpw, ldp,
                              static_cast<const T*>(nullptr), !first);
        }
        if (need.dww || need.x) {
          ensure_size(DH, std::max<int64_t>(Cinp, 1) * ndp);
          isa_call<GemmOp<T>>(Cin, nd, Cout, pwTp.data(), static_cast<const T*>(DY.data()), ndp,
                              DH.data(), ndp, static_cast<const T*>(nullptr), false);
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
    const std::vector<T> pwc = to_acc_vector<WT, T>(pw, Cout * Cin);
    // Folded bias: pw_bias + pw_weight @ dw_bias, summed in double.
    std::vector<T> bias_o(static_cast<size_t>(round_up(Cout, kMR)), T(0));
    const std::vector<double> dwb_d = dwb ? to_acc_vector<WT, double>(*dwb, Cin) : std::vector<double>();
    const std::vector<double> pwb_d = pwb ? to_acc_vector<WT, double>(*pwb, Cout) : std::vector<double>();
    for (int64_t o = 0; o < Cout; ++o) {
      double acc = pwb ? pwb_d[o] : 0.0;
      if (dwb) {
        for (int64_t c = 0; c < Cin; ++c) acc += static_cast<double>(pwc[o * Cin + c]) * dwb_d[c];
      }
      bias_o[o] = static_cast<T>(acc);
    }
    std::vector<T> pwp(static_cast<size_t>(round_up(Cout, kMR) * Cin));
    pack_a(Cout, Cin, pwc.data(), Cin, int64_t(1), pwp.data());
    dispatch_kernel_size(K, [&](auto kt) {
      forward_tiles<S, T, decltype(kt)::value>(x, dwc, pwp, bias_o, g, y);
    });
  });
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
    const std::vector<T> pwc = to_acc_vector<WT, T>(pw, Cout * Cin);
    if (parts.count > 0) {
      const std::vector<T> dwc = to_acc_vector<WT, T>(dw, Cin * K);
      const std::vector<T> dwbv = dwb ? to_acc_vector<WT, T>(*dwb, Cin) : std::vector<T>(Cin, T(0));
      std::vector<T> pwTp;
      if (need.x || need.dww) {
        pwTp.resize(static_cast<size_t>(round_up(Cin, kMR) * Cout));
        pack_a(Cin, Cout, pwc.data(), int64_t(1), Cin, pwTp.data());
      }
      if (need.pw) {
        const size_t n = nchunks * round_up(Cout, kMR) * parts.ldp;
        if constexpr (std::is_same_v<T, double>) {
          parts.pw_d.reset(new double[n]);
        } else {
          parts.pw_f.reset(new float[n]);
        }
      }
      Tensor* gxp = need.x ? &*gx : nullptr;
      dispatch_kernel_size(K, [&](auto kt) {
        backward_tiles<S, T, decltype(kt)::value>(dy, x, dwc, dwbv, pwTp, g, gxp, need, parts);
      });
    }
    // Fixed-order reductions of the per-chunk partial sums.
    const int64_t nch = parts.count;
    if (need_grad_pw_weight) {
      WT* out = static_cast<WT*>(gpw->mutable_data_ptr());
      const int64_t rows_stride = round_up(Cout, kMR) * parts.ldp;
      const T* part = need.pw ? pw_partials<T>(parts) : nullptr;
      const int64_t ldp = parts.ldp;
      torch::stable::parallel_for(0, Cout * Cin, 4096, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const int64_t o = i / Cin, c = i % Cin;
          double acc = 0.0;
          for (int64_t ch = 0; ch < nch; ++ch) acc += static_cast<double>(part[ch * rows_stride + o * ldp + c]);
          out[i] = from_double<WT>(acc);
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
        const std::vector<double> pwd = to_acc_vector<WT, double>(pw, Cout * Cin);
        WT* out = static_cast<WT*>(gdwb->mutable_data_ptr());
        for (int64_t c = 0; c < Cin; ++c) {
          double acc = 0.0;
          for (int64_t o = 0; o < Cout; ++o) acc += pwd[o * Cin + c] * dysum[o];
          out[c] = from_double<WT>(acc);
        }
      }
    }
  });
  return {gx, gdw, gdwb, gpw, gpwb};
}

}  // namespace
}  // namespace cpu
}  // namespace sepconv1d

STABLE_TORCH_LIBRARY_IMPL(sepconv1d, CPU, m) {
  m.impl("separable_conv1d", TORCH_BOX(&sepconv1d::cpu::separable_conv1d_cpu));
  m.impl("separable_conv1d_backward", TORCH_BOX(&sepconv1d::cpu::separable_conv1d_backward_cpu));
}
