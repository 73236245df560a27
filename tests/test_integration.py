"""Operator registration (opcheck), gradcheck, torch.compile, autocast and CUDA graphs."""

from __future__ import annotations

import pytest
import torch
from reference import (
    assert_close_to_reference,
    make_activation,
    reference_depthwise,
    reference_grads,
    reference_separable,
    tolerance_for,
)

import sepconv1d
from sepconv1d._shapes import resolve_padding

ops = torch.ops.sepconv1d


def _depthwise_samples(device):
    for layout, (k, s, pl, pr, d), dtype in [
        ("contiguous", (3, 1, 1, 1, 1), torch.float32),
        ("channels_last", (4, 2, 3, 0, 1), torch.float32),
        ("strided", (5, 1, 0, 6, 2), torch.float64),
        ("contiguous", (9, 1, 4, 4, 1), torch.bfloat16),
    ]:
        x = make_activation(2, 6, 37, dtype, device, layout).requires_grad_(True)
        wdtype = torch.float32 if dtype == torch.bfloat16 else dtype
        # nn.Conv1d's (C, 1, K) weight shape in the strided case; the ops take it as it is.
        wshape = (6, 1, k) if layout == "strided" else (6, k)
        w = torch.randn(*wshape, device=device, dtype=wdtype, requires_grad=True)
        b = torch.randn(6, device=device, dtype=wdtype, requires_grad=True)
        yield x, w, b, s, pl, pr, d


@pytest.mark.parametrize("layout_case", range(4))
def test_opcheck_depthwise(device, layout_case):
    x, w, b, s, pl, pr, d = list(_depthwise_samples(device))[layout_case]
    torch.library.opcheck(ops.depthwise_conv1d.default, (x, w, b, s, pl, pr, d))
    torch.library.opcheck(ops.depthwise_conv1d.default, (x, w, None, s, pl, pr, d))
    y = ops.depthwise_conv1d(x, w, b, s, pl, pr, d)
    g = torch.randn_like(y)
    for mask in [(True, True, True), (True, False, False), (False, True, False)]:
        torch.library.opcheck(ops.depthwise_conv1d_backward.default,
                              (g, x.detach(), w.detach(), s, pl, pr, d, *mask))


@pytest.mark.parametrize("layout,conv1d_shapes", [("contiguous", False), ("channels_last", False),
                                                  ("contiguous", True)])
def test_opcheck_separable(device, layout, conv1d_shapes):
    x = make_activation(2, 5, 29, torch.float32, device, layout).requires_grad_(True)
    dw = torch.randn(*((5, 1, 3) if conv1d_shapes else (5, 3)), device=device, requires_grad=True)
    dwb = torch.randn(5, device=device, requires_grad=True)
    pw = torch.randn(*((7, 5, 1) if conv1d_shapes else (7, 5)), device=device, requires_grad=True)
    pwb = torch.randn(7, device=device, requires_grad=True)
    torch.library.opcheck(ops.separable_conv1d.default, (x, dw, dwb, pw, pwb, 1, 1, 1, 1, False))
    torch.library.opcheck(ops.separable_conv1d.default, (x, dw, None, pw, None, 2, 2, 0, 2, False))
    y = ops.separable_conv1d(x, dw, dwb, pw, pwb, 1, 1, 1, 1, False)
    g = torch.randn_like(y)
    for mask in [(True,) * 5, (False, False, False, True, True), (True, True, False, False, False)]:
        torch.library.opcheck(ops.separable_conv1d_backward.default,
                              (g, x.detach(), dw.detach(), dwb.detach(), pw.detach(), 1, 1, 1, 1, False, *mask))


@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "strided"])
def test_gradcheck_depthwise(device, layout):
    x = make_activation(2, 3, 11, torch.float64, device, layout).requires_grad_(True)
    w = torch.randn(3, 4, dtype=torch.float64, device=device, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, device=device, requires_grad=True)
    for stride, padding, dilation in [(1, "same", 1), (2, (3, 1), 1), (1, "causal", 2), (3, 0, 1)]:
        assert torch.autograd.gradcheck(
            lambda x_, w_, b_: sepconv1d.depthwise_conv1d(x_, w_, b_, stride, padding, dilation), (x, w, b))


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_gradcheck_separable(device, layout):
    x = make_activation(2, 3, 10, torch.float64, device, layout).requires_grad_(True)
    params = [torch.randn(*s, dtype=torch.float64, device=device, requires_grad=True)
              for s in ((3, 3), (3,), (4, 3), (4,))]
    for stride, padding, dilation in [(1, "same", 1), (2, (2, 1), 2)]:
        assert torch.autograd.gradcheck(
            lambda x_, dw, dwb, pw, pwb: sepconv1d.separable_conv1d(x_, dw, pw, dwb, pwb, stride, padding, dilation),
            (x, *params))


def test_second_backward_raises(device):
    # The backward operators have no derivative: a second backward through the functional API's
    # gradients (create_graph=True) must raise, not warn and return wrong gradients.
    x = make_activation(2, 4, 16, torch.float32, device).requires_grad_(True)
    w = torch.randn(4, 3, device=device, requires_grad=True)
    pw = torch.randn(5, 4, device=device, requires_grad=True)
    for y in (sepconv1d.depthwise_conv1d(x, w, padding=1), sepconv1d.separable_conv1d(x, w, pw, padding=1)):
        (gx,) = torch.autograd.grad(y.square().sum(), (x,), create_graph=True)
        torch.testing.assert_close(gx, torch.autograd.grad(y.square().sum(), (x,), retain_graph=True)[0])
        with pytest.raises(RuntimeError, match="once_differentiable"):
            gx.sum().backward()


@pytest.mark.parametrize("context", ["no_grad", "inference_mode", "nothing_requires_grad"])
def test_calls_with_nothing_to_record(device, context):
    # The functional API calls the operators below the Autograd key when no gradient is wanted:
    # values must equal the reference and the outputs must carry no autograd history, also when
    # inputs require grad under no_grad / inference_mode.
    wants = context != "nothing_requires_grad"
    x = make_activation(2, 6, 37, torch.float32, device).requires_grad_(wants)
    w = torch.randn(6, 5, device=device, requires_grad=wants)
    b = torch.randn(6, device=device, requires_grad=wants)
    pw = torch.randn(7, 6, device=device, requires_grad=wants)
    ref_dw = reference_depthwise(x.detach(), w.detach(), b.detach(), 1, 2, 2, 1)
    ref_sep = reference_separable(x.detach(), w.detach(), b.detach(), pw.detach(), None, 1, 2, 2, 1)
    guard = {"no_grad": torch.no_grad, "inference_mode": torch.inference_mode,
             "nothing_requires_grad": torch.enable_grad}[context]
    with guard():
        outs = (sepconv1d.depthwise_conv1d(x, w, b, padding=2),
                sepconv1d.separable_conv1d(x, w, pw, b, padding=2))
    for out, ref in zip(outs, (ref_dw, ref_sep), strict=True):
        assert not out.requires_grad and out.grad_fn is None
        assert_close_to_reference(out, ref, tolerance_for(torch.float32), context)


def _compile_counters():
    from torch._dynamo.utils import counters
    return counters


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph_dynamic_no_recompile(device, backend):
    torch._dynamo.reset()
    dw_mod = sepconv1d.DepthwiseConv1d(8, 5, padding="same", device=device)
    sep_mod = sepconv1d.SeparableConv1d(8, 12, 3, padding="causal", device=device)

    def step(x):
        y = sep_mod(torch.nn.functional.gelu(dw_mod(x)))
        return y.square().mean()

    compiled = torch.compile(step, fullgraph=True, dynamic=True, backend=backend)
    counters = _compile_counters()
    counters.clear()
    # Lengths on one side of inductor's own size heuristics for the loss reduction (it guards on
    # B*C*L <= 4096), so any recompile would come from sepconv1d's ops.
    for length in (130, 301, 517, 1000):
        x = make_activation(3, 8, length, torch.float32, device).requires_grad_(True)
        loss = compiled(x)
        loss.backward()
        ref_x = x.detach().clone().requires_grad_(True)
        ref_loss = step(ref_x)
        ref_loss.backward()
        torch.testing.assert_close(loss, ref_loss, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(x.grad, ref_x.grad, rtol=1e-4, atol=1e-6)
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])
    assert not counters["graph_break"], dict(counters["graph_break"])


def test_compile_channels_last_input(device):
    torch._dynamo.reset()
    w = torch.randn(6, 4, device=device)
    fn = torch.compile(lambda x: sepconv1d.depthwise_conv1d(x, w, padding="causal") * 2,
                       fullgraph=True, dynamic=True, backend="aot_eager")
    for length in (40, 90):
        x = make_activation(2, 6, length, torch.float32, device, "channels_last")
        assert_close_to_reference(fn(x), reference_depthwise(x, w, None, 1, 3, 0, 1) * 2, 2e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_runs_in_autocast_dtype(device, dtype):
    if device == "cpu" and dtype == torch.float16:
        pytest.skip("CPU autocast defaults to bfloat16 for convolutions")
    conv = torch.nn.Conv1d(8, 8, 5, padding=2, groups=8, device=device)
    ours = sepconv1d.DepthwiseConv1d.from_conv1d(conv)
    sep = sepconv1d.SeparableConv1d(8, 6, 5, padding="same", device=device)
    x = torch.randn(2, 8, 64, device=device)
    with torch.autocast(device_type=device, dtype=dtype):
        expected = conv(x)
        got = ours(x)
        got_sep = sep(x)
    assert got.dtype == expected.dtype == dtype
    assert got_sep.dtype == dtype
    torch.testing.assert_close(got.float(), expected.float(), rtol=3e-2, atol=3e-2)
    ref_sep = reference_separable(x.to(dtype), sep.depthwise.weight.to(dtype), sep.depthwise.bias.to(dtype),
                                  sep.pointwise.weight.to(dtype), sep.pointwise.bias.to(dtype), 1, 2, 2, 1)
    assert_close_to_reference(got_sep, ref_sep, 3e-2)


def test_autocast_backward(device):
    sep = sepconv1d.SeparableConv1d(8, 6, 3, padding="same", device=device)
    x = torch.randn(2, 8, 40, device=device, requires_grad=True)
    with torch.autocast(device_type=device, dtype=torch.bfloat16):
        y = sep(x)
    y.float().sum().backward()
    assert x.grad.dtype == torch.float32 and sep.pointwise.weight.grad.dtype == torch.float32
    assert torch.isfinite(x.grad).all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_graph_capture_and_replay():
    x = torch.randn(4, 64, 1000, device="cuda")
    w = torch.randn(64, 9, device="cuda")
    pw = torch.randn(32, 64, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):  # warm up outside the graph
            sepconv1d.depthwise_conv1d(x, w, padding="same")
            sepconv1d.separable_conv1d(x, w, pw, padding="same")
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = sepconv1d.depthwise_conv1d(x, w, padding="same")
        z = sepconv1d.separable_conv1d(x, w, pw, padding="same")
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        assert_close_to_reference(y, reference_depthwise(x, w, None, 1, 4, 4, 1), 2e-5)
        assert_close_to_reference(z, reference_separable(x, w, None, pw, None, 1, 4, 4, 1), 2e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_compile_reduce_overhead_training_step():
    """Training steps under CUDA graphs: outputs and every parameter gradient match eager."""
    torch._dynamo.reset()
    mod = torch.nn.Sequential(sepconv1d.DepthwiseConv1d(32, 9, padding="same"),
                              sepconv1d.SeparableConv1d(32, 16, 5, padding="causal")).cuda()
    compiled = torch.compile(mod, mode="reduce-overhead")
    for _ in range(4):
        # .grad tensors allocated inside a captured backward belong to the CUDA-graph pool; a
        # training loop frees them between steps (optimizer.zero_grad() does), as here.
        mod.zero_grad(set_to_none=True)
        torch.compiler.cudagraph_mark_step_begin()
        x = torch.randn(2, 32, 256, device="cuda", requires_grad=True)
        out = compiled(x)
        out.sum().backward()
        got = [out.detach().clone(), x.grad.clone()] + [p.grad.clone() for p in mod.parameters()]
        mod.zero_grad(set_to_none=True)
        xe = x.detach().requires_grad_(True)
        ref = mod(xe)
        ref.sum().backward()
        want = [ref.detach(), xe.grad] + [p.grad for p in mod.parameters()]
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
@pytest.mark.parametrize("kernel_size,dtype", [(5, torch.float32), (63, torch.float32), (31, torch.bfloat16)])
def test_second_device(kernel_size, dtype):
    """Tensors on cuda:1 while cuda:0 is current: the compiled-K, run-time-K (float32 K = 63: the
    dense form) and half-type tensor-core depthwise kernels and the fused separable run on x's
    device, forward and backward."""
    assert torch.cuda.current_device() == 0
    dev = "cuda:1"
    x = make_activation(2, 16, 1000, dtype, dev).requires_grad_(True)
    w = torch.randn(16, kernel_size, dtype=torch.float64).to(dev, dtype).requires_grad_(True)
    pw = torch.randn(24, 16, dtype=torch.float64).to(dev, dtype).requires_grad_(True)
    left, right = resolve_padding("same", kernel_size, 1, 1)
    tol = tolerance_for(dtype)
    for fn, ref_fn, inputs in (
        (lambda a, b: sepconv1d.depthwise_conv1d(a, b, padding="same"),
         lambda a, b: reference_depthwise(a, b, None, 1, left, right, 1), [x, w]),
        (lambda a, b, c: sepconv1d.separable_conv1d(a, b, c, padding="same"),
         lambda a, b, c: reference_separable(a, b, None, c, None, 1, left, right, 1), [x, w, pw]),
    ):
        out = fn(*inputs)
        assert out.device == x.device
        assert_close_to_reference(out, ref_fn(*inputs), tol)
        grad_out = torch.randn(out.shape, dtype=torch.float64).to(dev, dtype)
        grads = torch.autograd.grad(out, inputs, grad_out)
        for g, r in zip(grads, reference_grads(ref_fn, inputs, grad_out), strict=True):
            assert g.device == x.device
            assert_close_to_reference(g, r, tol)
