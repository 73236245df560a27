"""nn.Modules with nn.Conv1d's parameter shapes, initialisation and state-dict keys."""

from __future__ import annotations

import math

import torch
from torch import nn

from . import functional as F
from ._shapes import PaddingArg, resolve_padding


def _conv1d_padding(conv: nn.Conv1d) -> PaddingArg:
    if conv.padding_mode != "zeros":
        raise ValueError(f"only padding_mode='zeros' is supported, got {conv.padding_mode!r}")
    if isinstance(conv.padding, str):
        return conv.padding
    return int(conv.padding[0])


def _check_depthwise_conv(conv: nn.Conv1d, name: str) -> None:
    if not isinstance(conv, nn.Conv1d):
        raise TypeError(f"{name} must be an nn.Conv1d, got {type(conv).__name__}")
    if not (conv.groups == conv.in_channels == conv.out_channels):
        raise ValueError(
            f"{name} must be depthwise (groups == in_channels == out_channels), got groups={conv.groups}, "
            f"in_channels={conv.in_channels}, out_channels={conv.out_channels}"
        )


class DepthwiseConv1d(nn.Module):
    """Depthwise Conv1d: a drop-in for ``nn.Conv1d(channels, channels, kernel_size, groups=channels)``.

    Parameters have nn.Conv1d's shapes (``weight`` (C, 1, K), ``bias`` (C,)) and initialisation, so
    state dicts load both ways. ``padding`` also takes ``'causal'`` and ``(left, right)`` pairs.
    """

    def __init__(
        self,
        channels: int,
        kernel_size: int,
        stride: int = 1,
        padding: PaddingArg = 0,
        dilation: int = 1,
        bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if channels < 1 or kernel_size < 1:
            raise ValueError(f"channels and kernel_size must be >= 1, got {channels} and {kernel_size}")
        resolve_padding(padding, kernel_size, stride, dilation)  # fail early on a bad padding
        self.channels = channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        factory = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty((channels, 1, kernel_size), **factory))
        self.bias = nn.Parameter(torch.empty(channels, **factory)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # nn.Conv1d's scheme: kaiming-uniform weight, bias in +-1/sqrt(fan_in), fan_in = K here.
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.kernel_size)
            nn.init.uniform_(self.bias, -bound, bound)

    @classmethod
    def from_conv1d(cls, conv: nn.Conv1d) -> DepthwiseConv1d:
        """A DepthwiseConv1d with a copy of a depthwise nn.Conv1d's parameters and settings."""
        _check_depthwise_conv(conv, "conv")
        mod = cls(conv.in_channels, conv.kernel_size[0], conv.stride[0], _conv1d_padding(conv),
                  conv.dilation[0], conv.bias is not None, conv.weight.device, conv.weight.dtype)
        with torch.no_grad():
            mod.weight.copy_(conv.weight)
            if conv.bias is not None:
                mod.bias.copy_(conv.bias)
        return mod

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.depthwise_conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation)

    def extra_repr(self) -> str:
        return (f"{self.channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding!r}, dilation={self.dilation}, bias={self.bias is not None}")


class SeparableConv1d(nn.Module):
    """Depthwise-separable Conv1d: ``depthwise`` (K taps per channel) then ``pointwise`` (1x1), fused.

    Holds ``depthwise`` (a :class:`DepthwiseConv1d`) and ``pointwise`` (an ``nn.Conv1d`` with
    kernel size 1, used only as the parameter holder), so the state-dict keys
    ``depthwise.weight``, ``depthwise.bias``, ``pointwise.weight``, ``pointwise.bias`` match a module
    built from two nn.Conv1d layers under those names.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        padding: PaddingArg = 0,
        dilation: int = 1,
        bias: bool = True,
        depthwise_bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if out_channels < 1:
            raise ValueError(f"out_channels must be >= 1, got {out_channels}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.depthwise = DepthwiseConv1d(in_channels, kernel_size, stride, padding, dilation, depthwise_bias,
                                         device, dtype)
        self.pointwise = nn.Conv1d(in_channels, out_channels, 1, bias=bias, device=device, dtype=dtype)

    @classmethod
    def from_conv1d(cls, depthwise: nn.Conv1d, pointwise: nn.Conv1d) -> SeparableConv1d:
        """A SeparableConv1d with copies of a depthwise nn.Conv1d and a 1x1 nn.Conv1d."""
        _check_depthwise_conv(depthwise, "depthwise")
        if not isinstance(pointwise, nn.Conv1d):
            raise TypeError(f"pointwise must be an nn.Conv1d, got {type(pointwise).__name__}")
        if (pointwise.kernel_size[0] != 1 or pointwise.groups != 1 or pointwise.stride[0] != 1
                or pointwise.in_channels != depthwise.out_channels):
            raise ValueError("pointwise must be a 1x1, groups=1, stride-1 nn.Conv1d reading depthwise's "
                             f"{depthwise.out_channels} channels")
        _conv1d_padding(pointwise)
        if pointwise.padding not in ((0,), "valid"):
            raise ValueError(f"pointwise must have no padding, got {pointwise.padding!r}")
        mod = cls(depthwise.in_channels, pointwise.out_channels, depthwise.kernel_size[0], depthwise.stride[0],
                  _conv1d_padding(depthwise), depthwise.dilation[0], pointwise.bias is not None,
                  depthwise.bias is not None, depthwise.weight.device, depthwise.weight.dtype)
        mod.load_state_dict({
            **{f"depthwise.{k}": v for k, v in depthwise.state_dict().items()},
            **{f"pointwise.{k}": v for k, v in pointwise.state_dict().items()},
        })
        return mod

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dw = self.depthwise
        return F.separable_conv1d(x, dw.weight, self.pointwise.weight, dw.bias, self.pointwise.bias,
                                  dw.stride, dw.padding, dw.dilation)

    def extra_repr(self) -> str:
        return f"{self.in_channels} -> {self.out_channels}"
