"""Loads the compiled operators and registers their fake kernels, autograd and autocast rules.

Schemas live in C++ (csrc/schemas.cpp); this module adds what torch.compile, autograd and autocast
need. The raw operators are ``torch.ops.sepconv1d.{depthwise_conv1d, separable_conv1d}`` and their
``*_backward`` counterparts.
"""

from __future__ import annotations

import glob
import os

import torch
from torch.autograd.function import once_differentiable

from . import _shapes


def _load_library() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = sorted(glob.glob(os.path.join(here, "_C*.so")) + glob.glob(os.path.join(here, "_C*.pyd")))
    if not candidates:
        raise ImportError(
            "sepconv1d: the compiled extension sepconv1d/_C*.so is missing; build it with "
            "`pip install --no-build-isolation .` (or `-e .` for development)"
        )
    try:
        torch.ops.load_library(candidates[0])
    except OSError as err:
        # torch wraps the loader's message ("libX.so: cannot open shared object file") in __cause__.
        detail = f"{err}: {err.__cause__}" if err.__cause__ is not None else str(err)
        if torch.version.cuda is None:
            raise ImportError(
                "sepconv1d: this build contains CUDA kernels but the installed torch "
                f"{torch.__version__} is a CPU-only build without the CUDA runtime ({detail}). Install a "
                "CUDA build of torch >= 2.10, or build sepconv1d from source with SEPCONV1D_CPU_ONLY=1."
            ) from err
        raise ImportError(f"sepconv1d: could not load {os.path.basename(candidates[0])}: {detail}") from err


_load_library()

ops = torch.ops.sepconv1d


# ---------------------------------------------------------------------------------------------
# Fake (meta) kernels: shapes, dtypes and layouts only, pure SymInt arithmetic.
# ---------------------------------------------------------------------------------------------


@torch.library.register_fake("sepconv1d::depthwise_conv1d")
def _depthwise_fake(x, weight, bias, stride, pad_left, pad_right, dilation):
    length = _shapes.conv_out_length(x.shape[2], weight.shape[-1], stride, pad_left, pad_right, dilation)
    torch._check(length >= 1, lambda: "sepconv1d: padded length is shorter than the dilated kernel")
    return _shapes.new_activation(x, x.shape[1], length, x.dtype)


@torch.library.register_fake("sepconv1d::depthwise_conv1d_backward")
def _depthwise_backward_fake(grad_out, x, weight, stride, pad_left, pad_right, dilation,
                             need_grad_x, need_grad_weight, need_grad_bias):
    grad_x = _shapes.new_activation(x, x.shape[1], x.shape[2], x.dtype) if need_grad_x else None
    grad_w = weight.new_empty(weight.shape) if need_grad_weight else None
    grad_b = weight.new_empty((weight.shape[0],)) if need_grad_bias else None
    return grad_x, grad_w, grad_b


@torch.library.register_fake("sepconv1d::separable_conv1d")
def _separable_fake(x, dw_weight, dw_bias, pw_weight, pw_bias, stride, pad_left, pad_right, dilation,
                    allow_tf32):
    length = _shapes.conv_out_length(x.shape[2], dw_weight.shape[-1], stride, pad_left, pad_right, dilation)
    torch._check(length >= 1, lambda: "sepconv1d: padded length is shorter than the dilated kernel")
    return _shapes.new_activation(x, pw_weight.shape[0], length, x.dtype)


@torch.library.register_fake("sepconv1d::separable_conv1d_backward")
def _separable_backward_fake(grad_out, x, dw_weight, dw_bias, pw_weight, stride, pad_left, pad_right,
                             dilation, allow_tf32, need_grad_x, need_grad_dw_weight, need_grad_dw_bias,
                             need_grad_pw_weight, need_grad_pw_bias):
    return (
        _shapes.new_activation(x, x.shape[1], x.shape[2], x.dtype) if need_grad_x else None,
        dw_weight.new_empty(dw_weight.shape) if need_grad_dw_weight else None,
        dw_weight.new_empty((dw_weight.shape[0],)) if need_grad_dw_bias else None,
        pw_weight.new_empty(pw_weight.shape) if need_grad_pw_weight else None,
        pw_weight.new_empty((pw_weight.shape[0],)) if need_grad_pw_bias else None,
    )


# ---------------------------------------------------------------------------------------------
# Autograd. Backward ops get x only when a gradient needs its values; otherwise a stand-in that
# has x's shape, dtype and layout but no data (an expanded one-row tensor), so the autograd graph
# does not keep the activation alive for nothing.
# ---------------------------------------------------------------------------------------------


def _layout_stand_in(x: torch.Tensor) -> torch.Tensor:
    b, c, length = x.shape
    if _shapes.is_channels_last(x):
        return x.new_empty((1, c, 1)).expand(b, c, length)
    return x.new_empty((1, 1, length)).expand(b, c, length)


def _depthwise_setup_context(ctx, inputs, output):
    x, weight, bias, stride, pad_left, pad_right, dilation = inputs
    need_w = ctx.needs_input_grad[1]
    ctx.hyper = (stride, pad_left, pad_right, dilation)
    ctx.save_for_backward(x if need_w else _layout_stand_in(x), weight)


def _depthwise_backward(ctx, grad_out):
    x, weight = ctx.saved_tensors
    need_x, need_w, need_b = ctx.needs_input_grad[:3]
    grad_x, grad_w, grad_b = ops.depthwise_conv1d_backward(
        grad_out, x, weight, *ctx.hyper, need_x, need_w, need_b)
    return grad_x, grad_w, grad_b, None, None, None, None


torch.library.register_autograd(
    "sepconv1d::depthwise_conv1d", _depthwise_backward, setup_context=_depthwise_setup_context)


def _separable_setup_context(ctx, inputs, output):
    x, dw_weight, dw_bias, pw_weight, pw_bias, stride, pad_left, pad_right, dilation, allow_tf32 = inputs
    need = ctx.needs_input_grad[:5]
    # h = depthwise(x) is recomputed for the pw_weight gradient and the dw_weight gradient needs x.
    need_x_values = need[1] or need[3]
    ctx.hyper = (stride, pad_left, pad_right, dilation, allow_tf32)
    ctx.has_dw_bias = dw_bias is not None
    saved = [x if need_x_values else _layout_stand_in(x), dw_weight, pw_weight]
    if dw_bias is not None:
        saved.append(dw_bias)
    ctx.save_for_backward(*saved)


def _separable_backward(ctx, grad_out):
    saved = ctx.saved_tensors
    x, dw_weight, pw_weight = saved[:3]
    dw_bias = saved[3] if ctx.has_dw_bias else None
    need_x, need_dw, need_dwb, need_pw, need_pwb = ctx.needs_input_grad[:5]
    grads = ops.separable_conv1d_backward(
        grad_out, x, dw_weight, dw_bias, pw_weight, *ctx.hyper,
        need_x, need_dw, need_dwb, need_pw, need_pwb)
    return (*grads, None, None, None, None, None)


torch.library.register_autograd(
    "sepconv1d::separable_conv1d", _separable_backward, setup_context=_separable_setup_context)


# ---------------------------------------------------------------------------------------------
# Eager entry points of the functional API. The autograd registered above (register_autograd)
# serves anyone calling torch.ops.sepconv1d.* directly; its generic wrapper (argument defaults,
# pytrees) costs host time on every call. Small layers are host-bound, so the functional API takes
# a plain autograd.Function over the same setup_context / backward functions. It is written in
# the form whose forward takes ctx: a Function with a separate setup_context binds every call's
# arguments through inspect.signature first (on the CPU runner, B1 C8->16 L16: 58 -> 21 us per
# forward, 142 -> 89 us per forward + torch.autograd.grad; on the H200 host a minimal Function of
# this form took 492 us per training step where the functional API took 900 us). With autocast on
# it calls the operator itself, whose autocast rule casts before autograd records anything.
#
# Inside these Functions the operators are called below the Autograd dispatch key: the Function
# records the graph, so the operator's own autograd kernel (register_autograd's Python wrapper,
# which would only find grad mode off and redispatch) and the autograd handling of every aten call
# the operator makes on grad-requiring inputs are skipped (CPU runner, B1 C8->16 L16: 104 -> 98 us
# per forward + torch.autograd.grad; on the lent H200 hosts within their run-to-run spread, csrc/NOTES.md).
# The backward operators have no derivative: once_differentiable makes a second backward through
# them (create_graph=True) raise instead of returning wrong gradients. It is only needed where
# grad mode is on in the backward, which is create_graph=True; an ordinary backward (grad mode
# off) skips its wrapper and no_grad block (CPU runner, B1 C8 L16 depthwise: 5.5 of a 69 us step).
# ---------------------------------------------------------------------------------------------

_below_autograd = torch._C._AutoDispatchBelowAutograd
_grad_enabled = torch.is_grad_enabled


def _lean_function(name, op, setup_context, backward):
    """The functional API's autograd.Function for one operator: setup_context and backward are the
    ones register_autograd takes, the operator and the backward run below the Autograd key."""

    def forward(ctx, *args):
        setup_context(ctx, args, None)
        with _below_autograd():
            return op(*args)

    @once_differentiable
    def backward_once(ctx, grad_out):
        with _below_autograd():
            return backward(ctx, grad_out)

    def backward_below(ctx, grad_out):
        if _grad_enabled():
            return backward_once(ctx, grad_out)
        with _below_autograd():
            return backward(ctx, grad_out)

    return type(name, (torch.autograd.Function,),
                {"forward": staticmethod(forward), "backward": staticmethod(backward_below)})


_DepthwiseFunction = _lean_function("_DepthwiseFunction", ops.depthwise_conv1d,
                                    _depthwise_setup_context, _depthwise_backward)
_SeparableFunction = _lean_function("_SeparableFunction", ops.separable_conv1d,
                                    _separable_setup_context, _separable_backward)


# How the functional API calls an operator (_call_mode):
_TRACED = 0  # traced or under autocast: the operator as registered (autocast rule, autograd)
_NOTHING_TO_RECORD = 1  # eager, no gradient wanted: below the Autograd key
_RECORD = 2  # eager, some input requires grad: the plain autograd.Function


# Whether autocast is on for any device: one C call, where reading x.device for the per-device
# test costs a device object per call (H200 host: host time is what bounds small layers).
_any_autocast = getattr(torch._C, "_is_any_autocast_enabled", lambda: True)


def _call_mode(x: torch.Tensor, *tensors: torch.Tensor | None) -> int:
    """_RECORD when eager (not traced), grad mode on, no autocast, and some input requires grad.
    With nothing to record the operator runs below the Autograd key: Function.apply costs host time
    even then (about 60 us per call on this project's CPU runner), and so does the autograd kernel
    that register_autograd installs, which only finds grad mode off or no input requiring grad and
    redispatches through Python (H200 host, B1 C8->16 L16 bf16 under no_grad, per call: separable
    32-49 -> 26-27 us, depthwise 31-34 -> 20-25 us). Traced graphs and autocast take the operator
    as registered."""
    if torch.compiler.is_compiling() or (_any_autocast() and torch.is_autocast_enabled(x.device.type)):
        return _TRACED
    if torch.is_grad_enabled() and (
            x.requires_grad or any(t is not None and t.requires_grad for t in tensors)):
        return _RECORD
    return _NOTHING_TO_RECORD


def _call(function, op, args, tensors):
    """Runs op(*args) in the _call_mode of its tensor arguments (function: its lean Function)."""
    mode = _call_mode(*tensors)
    if mode == _RECORD:
        return function.apply(*args)
    if mode == _NOTHING_TO_RECORD:
        with _below_autograd():
            return op(*args)
    return op(*args)


def depthwise_conv1d(x, weight, bias, stride, pad_left, pad_right, dilation):
    return _call(_DepthwiseFunction, ops.depthwise_conv1d,
                 (x, weight, bias, stride, pad_left, pad_right, dilation), (x, weight, bias))


def separable_conv1d(x, dw_weight, dw_bias, pw_weight, pw_bias, stride, pad_left, pad_right,
                     dilation, allow_tf32):
    return _call(_SeparableFunction, ops.separable_conv1d,
                 (x, dw_weight, dw_bias, pw_weight, pw_bias, stride, pad_left, pad_right, dilation,
                  allow_tf32),
                 (x, dw_weight, dw_bias, pw_weight, pw_bias))


# ---------------------------------------------------------------------------------------------
# Autocast: like nn.Conv1d, the op runs in the autocast dtype (float32 tensors are cast; float64
# tensors are left alone, as autocast does for built-in ops).
# ---------------------------------------------------------------------------------------------


def _register_autocast(op_name: str, device_type: str) -> None:
    key = "Autocast" + torch._C._dispatch_key_for_device(device_type)
    dispatch_key = getattr(torch._C.DispatchKey, key)
    op = getattr(ops, op_name).default

    def cast(value, dtype):
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != torch.float64:
            return value.to(dtype)
        return value

    @op.py_impl(dispatch_key)
    def _autocast_impl(*args):
        dtype = torch.get_autocast_dtype(device_type)
        with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(dispatch_key)):
            return op(*(cast(a, dtype) for a in args))

    def kernel(_keyset, *args):
        return _autocast_impl(*args)

    _AUTOCAST_LIB.impl(op_name, kernel, key, with_keyset=True)


_AUTOCAST_LIB = torch.library.Library("sepconv1d", "IMPL")
for _name in ("depthwise_conv1d", "separable_conv1d"):
    for _device in ("cpu", "cuda"):
        _register_autocast(_name, _device)
