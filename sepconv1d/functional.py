"""Functional API: argument checks and padding resolution, then one call of a compiled operator."""

from __future__ import annotations

import torch

from . import _ops, _shapes
from ._shapes import PaddingArg


def depthwise_conv1d(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    stride: int = 1,
    padding: PaddingArg = 0,
    dilation: int = 1,
) -> torch.Tensor:
    """Depthwise 1-D convolution, ``F.conv1d(x, weight, bias, stride, padding, dilation, groups=C)``.

    Args:
        x: input of shape (B, C, L): contiguous, channel-last (a ``(B, L, C).transpose(1, 2)`` view,
            read without a copy) or any other strides. float32, float64, float16 or bfloat16.
        weight: (C, K) or nn.Conv1d's (C, 1, K). x's dtype, or float32 when x is half precision.
        bias: optional (C,), weight's dtype.
        stride: output step, >= 1.
        padding: an int (both sides), a (left, right) pair, ``'same'`` (stride 1; PyTorch's rule
            for even K), ``'valid'`` or ``'causal'`` (all padding on the left).
        dilation: spacing between kernel taps, >= 1.

    Returns:
        (B, C, L_out) in x's dtype, channel-last when x is. Accumulation is in float32 (float64 for
        float64 inputs).
    """
    _shapes.check_activation(x)
    stride, dilation = _shapes.check_hyper(stride, dilation)
    kernel_size = _shapes.check_depthwise_weight(weight, x.shape[1])
    _shapes.check_weight("weight", weight, x)
    bias = _shapes.check_bias("bias", bias, x.shape[1], weight, x)
    pad_left, pad_right = _shapes.resolve_padding(padding, kernel_size, stride, dilation)
    _shapes.check_length(x, kernel_size, pad_left, pad_right, dilation)
    return _ops.depthwise_conv1d(x, weight, bias, stride, pad_left, pad_right, dilation)


def separable_conv1d(
    x: torch.Tensor,
    dw_weight: torch.Tensor,
    pw_weight: torch.Tensor,
    dw_bias: torch.Tensor | None = None,
    pw_bias: torch.Tensor | None = None,
    stride: int = 1,
    padding: PaddingArg = 0,
    dilation: int = 1,
) -> torch.Tensor:
    """Depthwise-separable 1-D convolution: a depthwise conv, then a pointwise (1x1) conv.

    Equal to ``F.conv1d(F.conv1d(x, dw_weight, dw_bias, stride, padding, dilation, groups=Cin),
    pw_weight, pw_bias)``, computed without writing the (B, Cin, L_out) intermediate to memory.

    Args:
        x: (B, Cin, L), any strides (channel-last views read without a copy).
        dw_weight: (Cin, K) or (Cin, 1, K). x's dtype, or float32 when x is half precision.
        pw_weight: (Cout, Cin) or (Cout, Cin, 1), dw_weight's dtype.
        dw_bias: optional (Cin,). pw_bias: optional (Cout,).
        stride, padding, dilation: as for :func:`depthwise_conv1d`, applied by the depthwise conv.

    On CUDA, float32 inputs use TF32 tensor cores when ``torch.backends.cudnn.allow_tf32`` is True
    (PyTorch's default for convolutions, which nn.Conv1d obeys); otherwise float32 is exact.

    Returns:
        (B, Cout, L_out) in x's dtype, channel-last when x is.
    """
    _shapes.check_activation(x)
    stride, dilation = _shapes.check_hyper(stride, dilation)
    cin = x.shape[1]
    kernel_size = _shapes.check_depthwise_weight(dw_weight, cin, "dw_weight")
    _shapes.check_weight("dw_weight", dw_weight, x)
    _shapes.check_pointwise_weight(pw_weight, cin, "pw_weight")
    _shapes.check_weight("pw_weight", pw_weight, x)
    if pw_weight.dtype != dw_weight.dtype:
        raise TypeError(f"pw_weight has dtype {pw_weight.dtype} but dw_weight has {dw_weight.dtype}")
    dw_bias = _shapes.check_bias("dw_bias", dw_bias, cin, dw_weight, x)
    pw_bias = _shapes.check_bias("pw_bias", pw_bias, pw_weight.shape[0], pw_weight, x)
    pad_left, pad_right = _shapes.resolve_padding(padding, kernel_size, stride, dilation)
    _shapes.check_length(x, kernel_size, pad_left, pad_right, dilation)
    allow_tf32 = bool(torch.backends.cudnn.allow_tf32)
    return _ops.separable_conv1d(x, dw_weight, dw_bias, pw_weight, pw_bias, stride, pad_left, pad_right,
                                dilation, allow_tf32)
