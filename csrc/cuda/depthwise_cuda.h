// Entry points of the CUDA depthwise kernels that other CUDA code (the separable backward) reuses.
#pragma once

#include "common/conv_params.h"

#include <optional>
#include <tuple>

namespace sepconv1d {
namespace cuda {

// y = depthwise_conv1d(x, weight, bias); arguments already checked, y allocated by the caller with
// new_activation(x, ...). x may be channel-first or channel-last (see as_kernel_layout).
void depthwise_forward_into(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                            const ConvGeometry& g, Tensor& y);

// Gradients of depthwise_conv1d for grad_out in x's layout; the ones not asked for are nullopt.
// grad_weight/grad_bias come back in weight's dtype and are deterministic run to run.
std::tuple<std::optional<Tensor>, std::optional<Tensor>, std::optional<Tensor>> depthwise_backward(
    const Tensor& grad_out, const Tensor& x, const Tensor& weight, const ConvGeometry& g,
    bool need_grad_x, bool need_grad_weight, bool need_grad_bias);

// The same into caller-provided outputs (null: not wanted): dx in x's layout with unit stride along
// L or C as x has (a batch slice of a larger tensor is fine), dw (C, K) and db (C) contiguous in
// weight's dtype (float32 weights give float32 gradients, also under half x).
void depthwise_backward_into(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                             const ConvGeometry& g, Tensor* dx, Tensor* dw, Tensor* db);

}  // namespace cuda
}  // namespace sepconv1d
