"""Argument checks, padding resolution and output-shape maths: the one Python home of these rules.

The C++ backends repeat the memory-safety checks (csrc/common/conv_params.h); these give friendly
Python exceptions that name the offending argument, before any kernel runs. Under ``torch.compile``
the length-dependent check becomes a runtime assert (``torch._check``) instead of a guard.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

PaddingArg = int | Sequence[int] | str

ACTIVATION_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
HALF_DTYPES = (torch.float16, torch.bfloat16)


def conv_out_length(length, kernel_size, stride, pad_left, pad_right, dilation):
    """Output length of a strided, dilated, zero-padded 1-D convolution (works on SymInts)."""
    return (length + pad_left + pad_right - dilation * (kernel_size - 1) - 1) // stride + 1


def resolve_padding(padding: PaddingArg, kernel_size: int, stride: int, dilation: int) -> tuple[int, int]:
    """Turn a padding argument into explicit (left, right) zero padding.

    ``'same'`` follows PyTorch: total ``dilation * (K - 1)``, the odd element on the right.
    ``'causal'`` pads ``dilation * (K - 1)`` on the left only; ``'valid'`` pads nothing.
    """
    total = dilation * (kernel_size - 1)
    if isinstance(padding, str):
        if padding == "same":
            if stride != 1:
                raise ValueError(f"padding='same' is not supported with stride={stride} (needs stride=1)")
            return total // 2, total - total // 2
        if padding == "causal":
            return total, 0
        if padding == "valid":
            return 0, 0
        raise ValueError(f"padding must be an int, a (left, right) pair, 'same', 'valid' or 'causal', got {padding!r}")
    if isinstance(padding, bool):
        raise TypeError("padding must be an int, a (left, right) pair or a string, got a bool")
    if isinstance(padding, int):
        left = right = padding
    elif isinstance(padding, Sequence) and len(padding) == 2 and all(isinstance(p, int) for p in padding):
        left, right = int(padding[0]), int(padding[1])
    else:
        raise TypeError(f"padding must be an int, a (left, right) pair or a string, got {padding!r}")
    if left < 0 or right < 0:
        raise ValueError(f"padding must be >= 0, got ({left}, {right})")
    return left, right


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_hyper(stride, dilation) -> tuple[int, int]:
    return _check_int("stride", stride, 1), _check_int("dilation", dilation, 1)


def check_activation(x) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 3:
        raise ValueError(f"x must be 3-D (batch, channels, length), got shape {tuple(x.shape)}")
    if x.dtype not in ACTIVATION_DTYPES:
        raise TypeError(f"x must be float32, float64, float16 or bfloat16, got {x.dtype}")


def _check_same_device(name: str, t: torch.Tensor, x: torch.Tensor) -> None:
    if t.device != x.device:
        raise ValueError(f"{name} is on {t.device} but x is on {x.device}; move them to one device")


def _check_weight_dtype(name: str, w: torch.Tensor, x: torch.Tensor) -> None:
    if w.dtype == x.dtype or (w.dtype == torch.float32 and x.dtype in HALF_DTYPES):
        return
    raise TypeError(
        f"{name} has dtype {w.dtype} but x has {x.dtype}; weights must match x, "
        "or be float32 when x is float16/bfloat16"
    )


def _check_weight_rank(weight, name: str, unit_dim: int, shape_2d: str, shape_3d: str) -> None:
    """A 2-D weight, or nn.Conv1d's 3-D one with size 1 at unit_dim; both go to the ops as they are."""
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(weight).__name__}")
    if not (weight.dim() == 2 or (weight.dim() == 3 and weight.shape[unit_dim] == 1)):
        raise ValueError(f"{name} must have shape {shape_2d} or {shape_3d}, got {tuple(weight.shape)}")


def check_depthwise_weight(weight, channels, name: str = "weight") -> int:
    """Accept (C, K) or nn.Conv1d's (C, 1, K) as they are; return K.

    The ops take both shapes, so nn.Conv1d-style parameters go in as they are: no view op in a
    traced graph, and gradients come back in the parameter's shape.
    """
    _check_weight_rank(weight, name, 1, "(channels, kernel_size)", "(channels, 1, kernel_size)")
    if weight.shape[0] != channels:
        raise ValueError(f"{name} has {weight.shape[0]} channels but x has {channels}")
    if weight.shape[-1] < 1:
        raise ValueError(f"{name} must have kernel_size >= 1")
    return weight.shape[-1]


def check_pointwise_weight(weight, in_channels, name: str = "pw_weight") -> None:
    """Accept (Cout, Cin) or nn.Conv1d's (Cout, Cin, 1) as they are (see check_depthwise_weight)."""
    shape_2d = f"(out_channels, in_channels={in_channels})"
    _check_weight_rank(weight, name, 2, shape_2d, f"(out_channels, in_channels={in_channels}, 1)")
    if weight.shape[1] != in_channels or weight.shape[0] < 1:
        raise ValueError(f"{name} must have shape {shape_2d}, got {tuple(weight.shape)}")


def check_bias(name: str, bias, channels, weight: torch.Tensor, x: torch.Tensor):
    if bias is None:
        return None
    if not isinstance(bias, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or None, got {type(bias).__name__}")
    if bias.dim() != 1 or bias.shape[0] != channels:
        raise ValueError(f"{name} must have shape ({channels},), got {tuple(bias.shape)}")
    if bias.dtype != weight.dtype:
        raise TypeError(f"{name} has dtype {bias.dtype} but its weight has {weight.dtype}")
    _check_same_device(name, bias, x)
    return bias


def check_weight(name: str, weight: torch.Tensor, x: torch.Tensor) -> None:
    _check_weight_dtype(name, weight, x)
    _check_same_device(name, weight, x)


def check_length(x: torch.Tensor, kernel_size: int, pad_left: int, pad_right: int, dilation: int) -> None:
    """The padded input must cover the dilated kernel at least once."""
    span = dilation * (kernel_size - 1) + 1
    padded = x.shape[2] + pad_left + pad_right
    if torch.compiler.is_compiling():
        # Symbolic length: a deferred runtime assert, not a guard that would specialise it.
        torch._check(padded >= span, lambda: "x: padded length is shorter than the dilated kernel span")
    elif padded < span:
        raise ValueError(f"x: padded length {padded} (length {x.shape[2]} + padding ({pad_left}, {pad_right})) "
                         f"is shorter than the dilated kernel span {span}")


def is_channels_last(x: torch.Tensor) -> bool:
    """A (B, L, C) buffer viewed as (B, C, L). Mirrors is_channels_last() in conv_params.h."""
    return x.shape[1] > 1 and x.stride(1) == 1 and x.stride(2) != 1


def new_activation(x: torch.Tensor, channels, length, dtype: torch.dtype) -> torch.Tensor:
    """Empty (B, channels, length) tensor with x's layout, as the C++ backends allocate it."""
    batch = x.shape[0]
    if is_channels_last(x):
        return x.new_empty((batch, length, channels), dtype=dtype).transpose(1, 2)
    return x.new_empty((batch, channels, length), dtype=dtype)
