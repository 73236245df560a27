// Operator schemas of torch.ops.sepconv1d, each defined once. Backends register kernels for them
// in csrc/cpu and csrc/cuda; sepconv1d/_ops.py adds fake kernels, autograd and autocast.
#include <torch/csrc/stable/library.h>

STABLE_TORCH_LIBRARY(sepconv1d, m) {
  // y[b, c, j] = bias[c] + sum_k weight[c, k] * x[b, c, j*stride - pad_left + k*dilation]
  m.def(
      "depthwise_conv1d(Tensor x, Tensor weight, Tensor? bias, int stride, int pad_left, "
      "int pad_right, int dilation) -> Tensor");
  // Gradients of depthwise_conv1d; only those asked for are computed, the others are None.
  m.def(
      "depthwise_conv1d_backward(Tensor grad_out, Tensor x, Tensor weight, int stride, "
      "int pad_left, int pad_right, int dilation, bool need_grad_x, bool need_grad_weight, "
      "bool need_grad_bias) -> (Tensor?, Tensor?, Tensor?)");
  // y = pw_weight @ depthwise_conv1d(x, dw_weight, dw_bias) + pw_bias, without the depthwise
  // intermediate in device memory. allow_tf32 lets float32 use TF32 tensor cores (CUDA only).
  m.def(
      "separable_conv1d(Tensor x, Tensor dw_weight, Tensor? dw_bias, Tensor pw_weight, "
      "Tensor? pw_bias, int stride, int pad_left, int pad_right, int dilation, "
      "bool allow_tf32) -> Tensor");
  // Gradients of separable_conv1d: (x, dw_weight, dw_bias, pw_weight, pw_bias).
  m.def(
      "separable_conv1d_backward(Tensor grad_out, Tensor x, Tensor dw_weight, Tensor? dw_bias, "
      "Tensor pw_weight, int stride, int pad_left, int pad_right, int dilation, bool allow_tf32, "
      "bool need_grad_x, bool need_grad_dw_weight, bool need_grad_dw_bias, "
      "bool need_grad_pw_weight, bool need_grad_pw_bias) "
      "-> (Tensor?, Tensor?, Tensor?, Tensor?, Tensor?)");
}
