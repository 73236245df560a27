"""Independent references and test utilities.

Two float64 references, computed on the input's device, that share no code with sepconv1d: PyTorch's own F.conv1d with explicit
F.pad for the padding, and the same maths written as unfold + einsum, which is several times faster
(PyTorch's float64 grouped convolution takes a slow path on the CPU) and is what the large sweeps
and all gradient checks use. test_reference.py checks that the two agree.
"""

from __future__ import annotations

import re

import torch
import torch.nn.functional as F

# Relative error bounds, ||out - ref|| / ||ref|| and max|out - ref| / max|ref|, per output dtype.
TOLERANCE = {
    torch.float64: 1e-11,
    torch.float32: 2e-5,
    torch.float16: 3e-3,
    torch.bfloat16: 2e-2,
}
TF32_TOLERANCE = 3e-3

LAYOUTS = ("contiguous", "channels_last", "strided")


def devices() -> list[str]:
    return ["cpu", "cuda"]


def make_activation(batch: int, channels: int, length: int, dtype: torch.dtype, device: str,
                    layout: str = "contiguous", generator: torch.Generator | None = None) -> torch.Tensor:
    """A fresh random (B, C, L) tensor in the asked layout.

    contiguous: plain (B, C, L). channels_last: a (B, L, C) buffer viewed as (B, C, L).
    strided: every other element of a wider buffer along L, with an odd storage offset, so the
    data pointer is unaligned and no dimension has unit stride along L.
    channel_slice: channels 2..2+C of a wider tensor (a channel offset; rows of L apart).
    batch_stride: every other batch of a taller tensor.
    """
    def randn(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64).to(device=device, dtype=dtype)

    if layout == "contiguous":
        return randn(batch, channels, length)
    if layout == "channels_last":
        return randn(batch, length, channels).transpose(1, 2)
    if layout == "strided":
        wide = randn(batch, channels, 2 * length + 1)
        return wide[:, :, 1::2]
    if layout == "channel_slice":
        return randn(batch, channels + 3, length)[:, 2:2 + channels]
    if layout == "batch_stride":
        return randn(2 * batch + 1, channels, length)[1::2]
    raise ValueError(layout)


def reference_depthwise(x, weight, bias, stride, pad_left, pad_right, dilation):
    """float64 result on x's device; differentiable when its inputs require grad."""
    x64 = x.to(torch.float64)
    w64 = weight.to(torch.float64).reshape(x.shape[1], 1, -1)
    b64 = None if bias is None else bias.to(torch.float64)
    xp = F.pad(x64, (pad_left, pad_right))
    return F.conv1d(xp, w64, b64, stride=stride, dilation=dilation, groups=x.shape[1])


def reference_separable(x, dw_weight, dw_bias, pw_weight, pw_bias, stride, pad_left, pad_right, dilation):
    h = reference_depthwise(x, dw_weight, dw_bias, stride, pad_left, pad_right, dilation)
    pw64 = pw_weight.to(torch.float64).reshape(pw_weight.shape[0], -1, 1)
    pb64 = None if pw_bias is None else pw_bias.to(torch.float64)
    return F.conv1d(h, pw64, pb64)


def unfolded_depthwise(x, weight, bias, stride, pad_left, pad_right, dilation):
    """The depthwise conv as unfold + einsum, in float64; differentiable."""
    x64 = F.pad(x.to(torch.float64), (pad_left, pad_right))
    w64 = weight.to(torch.float64).reshape(x.shape[1], -1)
    span = dilation * (w64.shape[1] - 1) + 1
    taps = x64.unfold(2, span, stride)[..., ::dilation]  # (B, C, L_out, K)
    y = torch.einsum("bclk,ck->bcl", taps, w64)
    return y if bias is None else y + bias.to(torch.float64)[:, None]


def unfolded_separable(x, dw_weight, dw_bias, pw_weight, pw_bias, stride, pad_left, pad_right, dilation):
    h = unfolded_depthwise(x, dw_weight, dw_bias, stride, pad_left, pad_right, dilation)
    y = torch.einsum("oc,bcl->bol", pw_weight.to(torch.float64).reshape(pw_weight.shape[0], -1), h)
    return y if pw_bias is None else y + pw_bias.to(torch.float64)[:, None]


def reference_grads(fn, inputs: list, grad_out: torch.Tensor) -> list:
    """Gradients of fn(*inputs) (inputs: tensors or None) w.r.t. every tensor input, in float64."""
    leaves = [None if t is None else t.detach().to(torch.float64).requires_grad_(True) for t in inputs]
    out = fn(*leaves)
    out.backward(grad_out.detach().to(torch.float64))
    return [None if t is None else t.grad for t in leaves]


def reference_grad_magnitudes(fn, inputs: list, grad_out: torch.Tensor) -> list:
    """reference_grads of fn with every input and grad_out replaced by its absolute value.

    The convolutions here are multilinear, so each element bounds the sum of |terms| that the
    matching gradient element adds up: the scale a floating-point reduction's error is relative to.
    A gradient that is a small sum of large, cancelling terms is judged against that scale.
    """
    return reference_grads(fn, [None if t is None else t.detach().abs() for t in inputs], grad_out.abs())


def relative_errors(out: torch.Tensor, ref: torch.Tensor, scale: torch.Tensor | None = None) -> tuple[float, float]:
    out64 = out.detach().to("cpu", torch.float64)
    ref64 = ref.detach().to("cpu", torch.float64)
    diff = out64 - ref64
    s64 = ref64 if scale is None else scale.detach().to("cpu", torch.float64)
    scale_norm = max(s64.norm().item(), 1e-30)
    scale_max = max(s64.abs().max().item(), 1e-30) if s64.numel() else 1.0
    max_err = diff.abs().max().item() if diff.numel() else 0.0
    return diff.norm().item() / scale_norm, max_err / scale_max


def assert_close_to_reference(out: torch.Tensor, ref: torch.Tensor, tol: float, what: str = "output",
                              scale: torch.Tensor | None = None) -> None:
    """Error norm within tol of the reference's norm (or of `scale`'s, see reference_grad_magnitudes)."""
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    assert torch.isfinite(out).all(), f"{what}: non-finite values (unwritten or poisoned elements)"
    if ref.numel() == 0:
        return
    rel_norm, rel_max = relative_errors(out, ref, scale)
    assert rel_norm <= tol and rel_max <= 4 * tol, (
        f"{what}: relative error {rel_norm:.3e} (max-element {rel_max:.3e}) over tolerance {tol:.1e}")


def poison_allocator(device: str, nbytes: int) -> None:
    """Leave freed NaN-filled blocks in the allocator, so an unwritten output element shows up.

    The CUDA caching allocator hands the same block to the next allocation of that size class;
    on the CPU, glibc malloc often does for large blocks. Allocations of both the exact size and a
    little more are poisoned.
    """
    for n in (nbytes, nbytes + 512):
        t = torch.empty(max(n // 4, 1), dtype=torch.float32, device=device)
        t.fill_(float("nan"))
        del t


def kernel_template_args(names, kernel: str) -> list[list[str]]:
    """The template arguments, by position and without spaces, of each recorded CUDA kernel name
    (profiler events) that instantiates `kernel`."""
    return [re.search(kernel + r"<([^>]*)>", n).group(1).replace(" ", "").split(",")
            for n in names if kernel + "<" in n]


def dtype_pair_id(pair) -> str:
    """pytest id of an (x dtype, weight dtype) pair, e.g. 'xbfloat16-wfloat32'."""
    return f"x{str(pair[0])[6:]}-w{str(pair[1])[6:]}"


def tolerance_for(dtype: torch.dtype) -> float:
    return TOLERANCE[dtype]
