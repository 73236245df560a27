"""depthwise_conv1d forward and backward against float64 F.conv1d references, on every device."""

from __future__ import annotations

import pytest
import torch
from reference import (
    LAYOUTS,
    assert_close_to_reference,
    dtype_pair_id,
    kernel_template_args,
    make_activation,
    poison_allocator,
    reference_depthwise,
    reference_grads,
    tolerance_for,
    unfolded_depthwise,
)

import sepconv1d
from sepconv1d._shapes import resolve_padding

KERNEL_SIZES = [1, 2, 3, 4, 5, 7, 9, 31, 63]
PADDINGS = ["same", "valid", "causal", (2, 5)]
STRIDE_DILATION = [(1, 1), (2, 1), (3, 1), (1, 2), (1, 4), (2, 2), (3, 4)]
LENGTHS = [1, 2, 7, 129, 1024, 1031]
# (x dtype, weight dtype)
DTYPES = [
    (torch.float32, torch.float32),
    (torch.float64, torch.float64),
    (torch.bfloat16, torch.bfloat16),
    (torch.float16, torch.float32),
    (torch.bfloat16, torch.float32),
]


def _cases(kernel_size, padding, lengths):
    """Valid (stride, dilation, length, pad_left, pad_right) combinations for this K and padding."""
    for stride, dilation in STRIDE_DILATION:
        if padding == "same" and stride != 1:
            continue
        left, right = resolve_padding(padding, kernel_size, stride, dilation)
        for length in lengths:
            if length + left + right < dilation * (kernel_size - 1) + 1:
                continue
            yield stride, dilation, length, left, right


def _params(channels, kernel_size, wdtype, device, with_bias):
    weight = torch.randn(channels, kernel_size, dtype=torch.float64).to(device, wdtype)
    bias = torch.randn(channels, dtype=torch.float64).to(device, wdtype) if with_bias else None
    return weight, bias


@pytest.mark.parametrize("dtypes", DTYPES, ids=dtype_pair_id)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("padding", PADDINGS, ids=str)
@pytest.mark.parametrize("kernel_size", KERNEL_SIZES)
def test_forward_matches_reference(device, kernel_size, padding, layout, dtypes):
    xdtype, wdtype = dtypes
    checked = 0
    for i, (stride, dilation, length, _, _) in enumerate(_cases(kernel_size, padding, LENGTHS)):
        channels = (5, 13, 1, 24)[i % 4]
        x = make_activation(2, channels, length, xdtype, device, layout)
        weight, bias = _params(channels, kernel_size, wdtype, device, with_bias=i % 2 == 0)
        arg_padding = padding if isinstance(padding, str) else tuple(padding)
        ref = unfolded_depthwise(x, weight, bias, stride, *resolve_padding(padding, kernel_size, stride, dilation),
                                 dilation)
        poison_allocator(device, ref.numel() * x.element_size())
        out = sepconv1d.depthwise_conv1d(x, weight, bias, stride=stride, padding=arg_padding, dilation=dilation)
        assert out.dtype == xdtype and out.device.type == device
        assert_close_to_reference(out, ref, tolerance_for(xdtype),
                                  f"K={kernel_size} pad={padding} s={stride} d={dilation} L={length} C={channels}")
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("dtypes", [DTYPES[0], DTYPES[1], DTYPES[4]], ids=dtype_pair_id)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("padding", PADDINGS, ids=str)
@pytest.mark.parametrize("kernel_size", KERNEL_SIZES)
def test_backward_matches_reference(device, kernel_size, padding, layout, dtypes):
    xdtype, wdtype = dtypes
    checked = 0
    for i, (stride, dilation, length, left, right) in enumerate(_cases(kernel_size, padding, [1, 7, 129, 1031])):
        channels = (5, 13, 24)[i % 3]
        with_bias = i % 2 == 0
        x = make_activation(3, channels, length, xdtype, device, layout).requires_grad_(True)
        weight, bias = _params(channels, kernel_size, wdtype, device, with_bias)
        weight.requires_grad_(True)
        if bias is not None:
            bias.requires_grad_(True)
        out = sepconv1d.depthwise_conv1d(x, weight, bias, stride=stride, padding=(left, right), dilation=dilation)
        grad_out = torch.randn(out.shape, dtype=torch.float64).to(device, xdtype)
        inputs = [x, weight] + ([bias] if with_bias else [])
        poison_allocator(device, x.numel() * x.element_size())
        grads = torch.autograd.grad(out, inputs, grad_out)
        refs = reference_grads(
            lambda a, w, b: unfolded_depthwise(a, w, b, stride, left, right, dilation),
            [x, weight, bias], grad_out)
        what = f"K={kernel_size} pad={padding} s={stride} d={dilation} L={length}"
        assert grads[0].dtype == xdtype and grads[1].dtype == wdtype
        assert_close_to_reference(grads[0], refs[0], tolerance_for(xdtype), "grad x " + what)
        assert_close_to_reference(grads[1], refs[1], tolerance_for(wdtype), "grad weight " + what)
        if with_bias:
            assert_close_to_reference(grads[2], refs[2], tolerance_for(wdtype), "grad bias " + what)
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("batch,channels,length", [(1, 1, 1), (3, 3, 50), (2, 8, 64), (1, 33, 300), (4, 130, 77)])
def test_odd_channel_counts(device, batch, channels, length):
    x = make_activation(batch, channels, length, torch.float32, device)
    weight, bias = _params(channels, 5, torch.float32, device, True)
    out = sepconv1d.depthwise_conv1d(x, weight, bias, padding="same")
    assert_close_to_reference(out, reference_depthwise(x, weight, bias, 1, 2, 2, 1), 2e-5)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("kernel_size", [3, 4, 9, 33])
def test_larger_shapes(device, kernel_size, dtype, layout):
    """Sizes that span many tiles/blocks on the GPU, including a ragged last tile."""
    x = make_activation(3, 70, 5003, dtype, device, layout)
    weight, bias = _params(70, kernel_size, dtype, device, True)
    for padding in ("same", "causal"):
        left, right = resolve_padding(padding, kernel_size, 1, 1)
        poison_allocator(device, x.numel() * x.element_size())
        out = sepconv1d.depthwise_conv1d(x, weight, bias, padding=padding)
        if layout == "channels_last":
            assert out.stride(1) == 1, "output should keep x's channel-last layout"
        assert_close_to_reference(out, reference_depthwise(x, weight, bias, 1, left, right, 1), tolerance_for(dtype))


@pytest.mark.parametrize("kernel_size", [13, 63])
def test_float32_long_kernels_aligned_rows(device, kernel_size):
    """float32, run-time K, rows 16-byte aligned (L a multiple of 4, so the CUDA forward stages
    whole 16-byte units): many tiles, a ragged last tile per row, window offsets 0-3 within a
    vector, padding wider than the kernel on either side."""
    channels, length = (300, 10000) if device == "cuda" else (6, 1000)
    x = make_activation(4, channels, length, torch.float32, device)
    weight, bias = _params(channels, kernel_size, torch.float32, device, True)
    for padding in ("same", (5, 40), (kernel_size - 1, 0), (3, kernel_size + 7)):
        left, right = resolve_padding(padding, kernel_size, 1, 1)
        poison_allocator(device, x.numel() * x.element_size())
        out = sepconv1d.depthwise_conv1d(x, weight, bias, padding=padding)
        assert_close_to_reference(out, reference_depthwise(x, weight, bias, 1, left, right, 1), 2e-5,
                                  f"K={kernel_size} padding={padding}")


@pytest.mark.parametrize("dtypes", [DTYPES[1], DTYPES[2], DTYPES[3]], ids=dtype_pair_id)
@pytest.mark.parametrize("kernel_size", [25, 57, 127])
def test_long_kernels_rows_of_several_tiles(device, kernel_size, dtypes):
    """Run-time K in float64 (on CUDA the dense form from K = 40 on aligned rows: rows split into
    even tiles with a partial last item; the padded form below that and on rows one element in,
    x[..., 1:]) and, past the tensor-core kernel's reach (K = 127), in half types; every window
    offset."""
    xdtype, wdtype = dtypes
    channels, length = (7, 12003) if device == "cuda" else (3, 700)
    weight, bias = _params(channels, kernel_size, wdtype, device, True)
    for i, padding in enumerate(("same", (5, 40), (kernel_size - 1, 0), (3, kernel_size + 7))):
        x = make_activation(2, channels, length + i % 2, xdtype, device)
        x = x[..., 1:] if i % 2 else x
        left, right = resolve_padding(padding, kernel_size, 1, 1)
        poison_allocator(device, x.numel() * x.element_size())
        out = sepconv1d.depthwise_conv1d(x, weight, bias, padding=padding)
        assert_close_to_reference(out, reference_depthwise(x, weight, bias, 1, left, right, 1),
                                  tolerance_for(xdtype), f"K={kernel_size} padding={padding}")


def _check_forward_and_grads(x, weight, bias, left, right, dilation, what):
    """Forward and every gradient of a CUDA depthwise call against float64, outputs poisoned first;
    then dx alone and the weight gradient alone (other kernel paths). x, weight and bias (if any)
    require grad."""
    xdtype, wdtype = x.dtype, weight.dtype
    ref_fn = lambda a, w, b: unfolded_depthwise(a, w, b, 1, left, right, dilation)  # noqa: E731
    poison_allocator("cuda", 4 * x.numel() * x.element_size())
    out = sepconv1d.depthwise_conv1d(x, weight, bias, padding=(left, right), dilation=dilation)
    assert_close_to_reference(out, ref_fn(x.detach(), weight.detach(), bias), tolerance_for(xdtype),
                              "forward " + what)
    grad_out = torch.randn(out.shape, dtype=torch.float64).to("cuda", xdtype)
    inputs = [x, weight] + ([bias] if bias is not None else [])
    poison_allocator("cuda", 4 * x.numel() * x.element_size())
    grads = torch.autograd.grad(out, inputs, grad_out)
    refs = reference_grads(ref_fn, [x, weight, bias], grad_out)
    assert_close_to_reference(grads[0], refs[0], tolerance_for(xdtype), "grad x " + what)
    assert_close_to_reference(grads[1], refs[1], tolerance_for(wdtype), "grad weight " + what)
    if bias is not None:
        assert_close_to_reference(grads[2], refs[2], tolerance_for(wdtype), "grad bias " + what)
    gx, = torch.autograd.grad(sepconv1d.depthwise_conv1d(x, weight.detach(), None, padding=(left, right),
                                                         dilation=dilation), [x], grad_out)
    assert_close_to_reference(gx, refs[0], tolerance_for(xdtype), "grad x alone " + what)
    gw, = torch.autograd.grad(sepconv1d.depthwise_conv1d(x.detach(), weight, None, padding=(left, right),
                                                         dilation=dilation), [weight], grad_out)
    assert_close_to_reference(gw, refs[1], tolerance_for(wdtype), "grad weight alone " + what)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="SEPCONV1D_DW_BWD_RT_REGS is read by the CUDA kernels")
@pytest.mark.parametrize("regs,dx_forward", [("1", "1"), ("0", "1"), ("1", "0"), ("0", "0")])
@pytest.mark.parametrize("kernel_size", [6, 15, 16, 17, 31, 33, 63, 64, 65, 87, 128, 129])
def test_run_time_kernel_backward_of_long_rows(monkeypatch, kernel_size, regs, dx_forward):
    """float32 rows longer than the short-row kernels take, run-time K: the tile backward, with its
    dw partials in registers (tiers of 16, 32, 64 and 128 padded taps; K 129 is past them) or per
    chunk of taps ("0"), and dx from K 10 (alone) or 33 to 128 (with dw and db) as the forward of
    dy with the flipped kernel, or in the fused kernel ("0"; pads past the kernel span always
    are). Window offsets 0-3 within a vector (the paddings), aligned and odd rows, rows one element
    into their storage, a ragged last tile."""
    monkeypatch.setenv("SEPCONV1D_DW_BWD_RT_REGS", regs)
    monkeypatch.setenv("SEPCONV1D_DW_DX_FORWARD", dx_forward)
    for i, padding in enumerate(("same", (kernel_size - 1, 0), (1, kernel_size + 4), (6, 2))):
        length = (4099, 2560, 4096 + 3, 2049)[i]
        x = make_activation(3, 6, length + i % 2, torch.float32, "cuda")
        x = (x[..., 1:] if i % 2 else x).requires_grad_(True)
        weight, bias = _params(6, kernel_size, torch.float32, "cuda", True)
        weight.requires_grad_(True)
        bias.requires_grad_(True)
        left, right = resolve_padding(padding, kernel_size, 1, 1)
        _check_forward_and_grads(x, weight, bias, left, right, 1, f"K={kernel_size} padding={padding} L={length}")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="SEPCONV1D_DW_RT_ROWS is read by the CUDA kernels")
@pytest.mark.parametrize("row_groups", ["1", "0", None])
@pytest.mark.parametrize("kernel_size", [33, 40, 63, 87, 129])
@pytest.mark.parametrize("dtypes", [DTYPES[0], DTYPES[1], DTYPES[4]], ids=dtype_pair_id)
def test_run_time_kernel_forward_of_short_rows(monkeypatch, dtypes, kernel_size, row_groups):
    """Rows too long for the short-row kernels' K but at most 64 items of the run-time-K tile
    forward: several rows per block, each group of threads its own row, wherever they fit ("1";
    the default, None, takes them where they measured faster), or one row per block ("0").
    Forward and gradients (dx runs as this forward of dy from K 33) against float64: row counts
    that leave the last block's groups partly empty, rows of 1 to 64 items (the group sizes),
    16-byte aligned rows of float32 (the dense form from K 40), odd and sliced rows, pads past the
    kernel span; bf16 x reaches this kernel past the tensor-core kernels' K (129)."""
    if row_groups is None:
        monkeypatch.delenv("SEPCONV1D_DW_RT_ROWS", raising=False)
    else:
        monkeypatch.setenv("SEPCONV1D_DW_RT_ROWS", row_groups)
    xdtype, wdtype = dtypes
    cases = [  # (L, padding, batch, channels, sliced)
        (835, "same", 3, 13, False), (418, (kernel_size - 1, 0), 2, 7, True), (1024, "same", 1, 9, False),
        (100, (3, kernel_size + 2), 5, 3, False), (1029, (kernel_size + 3, 1), 2, 5, True),
        (8, (kernel_size - 2, kernel_size - 3), 3, 11, False), (257, (6, 2 * kernel_size), 1, 17, True),
    ]
    for i, (length, padding, batch, channels, sliced) in enumerate(cases):
        x = make_activation(batch, channels, length + int(sliced), xdtype, "cuda")
        x = (x[..., 1:] if sliced else x).requires_grad_(True)
        weight, bias = _params(channels, kernel_size, wdtype, "cuda", i % 2 == 0)
        weight.requires_grad_(True)
        if bias is not None:
            bias.requires_grad_(True)
        left, right = resolve_padding(padding, kernel_size, 1, 1)
        _check_forward_and_grads(x, weight, bias, left, right, 1,
                                 f"K={kernel_size} padding={padding} L={length} B={batch} C={channels}")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="SEPCONV1D_DW_RT_ROWS is read by the CUDA kernels")
@pytest.mark.parametrize("y_staged", ["1", "0"])
@pytest.mark.parametrize("row_groups", ["1", "0"])
@pytest.mark.parametrize("kernel_size", [41, 701, 1500])
def test_run_time_kernel_forward_of_long_kernels_on_unaligned_rows(monkeypatch, kernel_size, row_groups, y_staged):
    """float32 rows without 16-byte units (odd lengths, rows one element into their storage): the
    run-time-K forward loads their x tiles through registers, units of 4 elements element by
    element, two per thread per pass (long kernels take several passes), into the padded tile, in
    one row per block ("0") or in row groups ("1", rows of at most 64 items); y rows that are not
    16-byte aligned go through the quarter warps' shared areas (SEPCONV1D_DW_YSTAGE "1", the
    default) or straight from the registers ("0"). One case has 16-byte-aligned x rows (a view of
    padded rows: the dense form) and an output length that is not a multiple of 4. Forward and
    gradients against float64 (dx runs as the same forward of dy)."""
    monkeypatch.setenv("SEPCONV1D_DW_RT_ROWS", row_groups)
    monkeypatch.setenv("SEPCONV1D_DW_YSTAGE", y_staged)
    for length, padding, sliced in ((3001, "same", True), (777, (kernel_size - 1, 0), False),
                                    (1023, (5, kernel_size + 9), True), (412, (3, kernel_size - 1), "view")):
        if sliced == "view":  # rows of 412 in a storage of 416 per row: 16-byte aligned, y of 415
            x = make_activation(2, 3, 416, torch.float32, "cuda")[..., :length].requires_grad_(True)
        else:
            x = make_activation(2, 3, length + int(sliced), torch.float32, "cuda")
            x = (x[..., 1:] if sliced else x).requires_grad_(True)
        weight, bias = _params(3, kernel_size, torch.float32, "cuda", True)
        weight.requires_grad_(True)
        bias.requires_grad_(True)
        left, right = resolve_padding(padding, kernel_size, 1, 1)
        _check_forward_and_grads(x, weight, bias, left, right, 1, f"K={kernel_size} padding={padding} L={length}")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="SEPCONV1D_DW_YSTAGE is read by the CUDA kernels")
@pytest.mark.parametrize("y_staged", ["1", "0"])
@pytest.mark.parametrize("kernel_size", [3, 4, 5, 9])
@pytest.mark.parametrize("dtypes", [DTYPES[0], DTYPES[1]], ids=dtype_pair_id)
def test_compiled_kernel_forward_on_unaligned_rows(monkeypatch, dtypes, kernel_size, y_staged):
    """Compiled kernel sizes on rows too long for the short-row kernels whose output rows are not
    16-byte aligned (odd lengths, rows one element into their storage, a view of padded rows: the
    tile forward: the register-direct one, which takes contiguous odd rows, is off here): y through
    the warps' shared areas (SEPCONV1D_DW_YSTAGE "1", the default) or stored directly ("0"). Rows of
    several tiles with a ragged end (warps partly past the row), 'same', causal and asymmetric pads.
    Forward and gradients against float64; float64 runs the run-time-K forward (its quarter warps'
    areas)."""
    monkeypatch.setenv("SEPCONV1D_DW_YSTAGE", y_staged)
    monkeypatch.setenv("SEPCONV1D_DW_REG_SHIFTED", "0")
    xdtype, wdtype = dtypes
    for length, padding, layout in ((4099, "same", "contiguous"), (3001, (kernel_size - 1, 0), "sliced"),
                                    (2562, (1, kernel_size + 1), "view"), (9001, (2, kernel_size - 3 + 2), "contiguous")):
        if layout == "view":  # 16-byte-aligned x rows (storage rows of 2568), y rows of 2565
            x = make_activation(2, 5, 2568, xdtype, "cuda")[..., :length].requires_grad_(True)
        else:
            x = make_activation(2, 5, length + (layout == "sliced"), xdtype, "cuda")
            x = (x[..., 1:] if layout == "sliced" else x).requires_grad_(True)
        weight, bias = _params(5, kernel_size, wdtype, "cuda", True)
        weight.requires_grad_(True)
        bias.requires_grad_(True)
        left, right = resolve_padding(padding, kernel_size, 1, 1)
        _check_forward_and_grads(x, weight, bias, left, right, 1, f"K={kernel_size} padding={padding} L={length}")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the routing switches are read by the CUDA kernels")
@pytest.mark.parametrize("kernel_size", [3, 4, 5, 9])
@pytest.mark.parametrize("dtypes", [DTYPES[0], DTYPES[2], DTYPES[4]], ids=dtype_pair_id)
def test_register_kernels_on_co_aligned_odd_rows(monkeypatch, dtypes, kernel_size):
    """The register-direct forward and backward on rows off the 16-byte grid whose x, y (dy, dx)
    rows share the shift (contiguous tensors of odd length: each row walked on its own grid from
    element -shift): rows of several work items, a row shorter than a vector and one of a vector
    and a bit (short rows kept off the rows kernels), 'same' and causal pads, and 'valid' where its
    shorter output keeps the shift (K - 1 a multiple of the elements per vector). The kernels are
    checked by name; forward and every gradient against float64, outputs poisoned."""
    monkeypatch.setenv("SEPCONV1D_DW_ROWS", "0")
    xdtype, wdtype = dtypes
    nv = 16 // torch.empty((), dtype=xdtype).element_size()
    cases = [(4097, "same"), (5121, (kernel_size - 1, 0)), (3, "same"), (nv + 3, (kernel_size - 1, 0))]
    if (kernel_size - 1) % nv == 0:
        cases.append((3001, (0, 0)))
    for length, padding in cases:
        x = make_activation(3, 5, length, xdtype, "cuda").requires_grad_(True)
        weight, bias = _params(5, kernel_size, wdtype, "cuda", True)
        weight.requires_grad_(True)
        bias.requires_grad_(True)
        left, right = resolve_padding(padding, kernel_size, 1, 1)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            _check_forward_and_grads(x, weight, bias, left, right, 1, f"K={kernel_size} padding={padding} L={length}")
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        for kernel in ("dw_fwd_cf_reg_kernel", "dw_bwd_cf_reg_kernel"):
            assert any(kernel in n for n in names), (kernel, length, padding, sorted(set(names)))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the routing switches are read by the CUDA kernels")
@pytest.mark.parametrize("realign", ["1", "0"])
@pytest.mark.parametrize("kernel_size", [3, 4, 5, 9])
@pytest.mark.parametrize("dtypes", [DTYPES[0], DTYPES[2], DTYPES[3]], ids=dtype_pair_id)
def test_register_kernels_on_rows_at_different_shifts(monkeypatch, dtypes, kernel_size, realign):
    """The register-direct kernels where x's rows sit at another shift off the 16-byte grid than
    y's (dy's, dx's): x realigned to y's grid in registers (SEPCONV1D_DW_REG_REALIGN "1", the
    default; "0": the tensor-core or tile kernels). Slices x[..., 1:] to x[..., 3:] of longer rows
    with 'same', causal, 'valid' and asymmetric pads, rows of several work items and rows shorter
    than one vector (short rows kept off the rows kernels). With realign on, every forward call
    of a half type realigns (float32 keeps the tile kernel, as fast there), and so does every
    backward call that wants dw where y is as long as x (dy and dx then share their shift), in
    float32 and in half types to K 5 (K 9 keeps the tensor-core backward, faster there); checked by
    the kernels' template arguments. Forward and every gradient against float64, outputs
    poisoned."""
    monkeypatch.setenv("SEPCONV1D_DW_ROWS", "0")
    monkeypatch.setenv("SEPCONV1D_DW_REG_REALIGN", realign)
    xdtype, wdtype = dtypes
    # (length, padding, x's offset into its storage rows: 1-3, so x's rows never share y's shift)
    cases = [(4097, "same", 1), (2049, (kernel_size - 1, 0), 1), (4096, (0, 0), 2), (3001, (0, 1), 1),
             (5, "same", 2), (1031, (kernel_size // 2, kernel_size - 1 - kernel_size // 2), 3)]
    for length, padding, offset in cases:
        x = make_activation(3, 5, length + offset, xdtype, "cuda")[..., offset:].requires_grad_(True)
        weight, bias = _params(5, kernel_size, wdtype, "cuda", True)
        weight.requires_grad_(True)
        bias.requires_grad_(True)
        left, right = resolve_padding(padding, kernel_size, 1, 1)
        what = f"K={kernel_size} padding={padding} L={length} offset={offset}"
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            _check_forward_and_grads(x, weight, bias, left, right, 1, what)
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        # Template arguments (T, W, K, P, kShift, kRealign): kRealign on.
        fwd = [args for args in kernel_template_args(names, "dw_fwd_cf_reg_kernel") if args[5] == "true"]
        bwd = [args for args in kernel_template_args(names, "dw_bwd_cf_reg_kernel") if args[5] == "true"]
        half = xdtype != torch.float32
        if realign == "1":
            # Three forward calls per case (the check's, then those of dx alone and dw alone); two
            # backward calls want dw (all gradients, dw alone).
            assert (len(fwd) >= 3) if half else not fwd, (what, sorted(set(names)))
            if left + right == kernel_size - 1 and (not half or kernel_size <= 5):
                assert len(bwd) >= 2, (what, sorted(set(names)))
            if half and kernel_size == 9:
                assert not bwd, (what, sorted(set(names)))
        else:
            assert not fwd and not bwd, (what, sorted(set(names)))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="SEPCONV1D_DW_PHASES is read by the CUDA kernels")
@pytest.mark.parametrize("phases", ["1", "0"])
@pytest.mark.parametrize("dtypes", [DTYPES[0], DTYPES[1], DTYPES[2], DTYPES[3]], ids=dtype_pair_id)
def test_dilated_kernels_as_phase_rows(monkeypatch, dtypes, phases):
    """Dilated, stride-1 problems, which the CUDA kernels run as the dilation-1 problem of the d
    phase rows of each row (SEPCONV1D_DW_PHASES=1 for every K, =0 never): forward and all three
    gradients against float64 for pad_left below, at and above multiples of d (the phase shift
    r = pad_left mod d), more padding than the kernel covers, rows shorter than d, odd and
    16-byte-unaligned lengths, a channel-last input (which keeps the general path) and a
    non-contiguous one."""
    monkeypatch.setenv("SEPCONV1D_DW_PHASES", phases)
    xdtype, wdtype = dtypes
    cases = [  # (K, d, L, pad_left, pad_right, layout)
        (87, 2, 835, 86, 86, "contiguous"), (3, 2, 1031, 2, 2, "contiguous"), (9, 3, 700, 13, 11, "contiguous"),
        (7, 9, 2003, 27, 27, "contiguous"), (5, 4, 129, 0, 16, "contiguous"), (31, 2, 500, 60, 0, "contiguous"),
        (4, 5, 3, 8, 7, "contiguous"), (16, 17, 300, 5, 300, "contiguous"), (33, 2, 1670, 32, 32, "sliced"),
        (9, 2, 333, 8, 8, "channels_last"),
    ]
    for i, (k, d, length, left, right, layout) in enumerate(cases):
        channels = (5, 24, 13)[i % 3]
        with_bias = i % 2 == 0
        x = make_activation(3, channels, length + (layout == "sliced"), xdtype, "cuda",
                            "contiguous" if layout == "sliced" else layout)
        x = (x[..., 1:] if layout == "sliced" else x).requires_grad_(True)
        weight, bias = _params(channels, k, wdtype, "cuda", with_bias)
        weight.requires_grad_(True)
        if bias is not None:
            bias.requires_grad_(True)
        _check_forward_and_grads(x, weight, bias, left, right, d,
                                 f"K={k} d={d} L={length} pad=({left}, {right}) {layout} phases={phases}")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="SEPCONV1D_DW_ROWS is read by the CUDA kernels")
@pytest.mark.parametrize("rows,db,words,words16,mma", [
    ("1", "1", "0", "", ""), ("1", "0", "0", "", "1"), ("1", "0", "1", "1", ""), ("1", "0", "1", "1", "0"),
    ("1", "0", "1", "0", ""), ("0", "", "", "", "")],
    ids=["rows-db", "rows-single", "rows-words16", "rows-words16-cuda-cores", "rows-words4", "no-rows"])
@pytest.mark.parametrize("dtypes", [DTYPES[0], DTYPES[2], DTYPES[3], DTYPES[4]], ids=dtype_pair_id)
def test_short_rows_kernel(monkeypatch, dtypes, rows, db, words, words16, mma):
    """The short-row kernels (one warp per row; SEPCONV1D_DW_ROWS=1 wherever they apply, =0
    never; their forward double-buffered, SEPCONV1D_DW_ROWS_DB=1, or not, =0, wherever each
    fits; or on word-aligned rows by word copies, SEPCONV1D_DW_ROWS_WORDS=1 and
    SEPCONV1D_DW_ROWS_WORDS_BWD=1: float32, and half types at even lengths and offsets, the
    forward's copies 16 bytes wide between the row ends where a channel's rows share their offset
    within 16-byte chunks, 24 channels here, SEPCONV1D_DW_ROWS_WORDS16=1, or 4 bytes wide, =0;
    half types' arithmetic on the tensor cores from K 11 (the backward's from K 12), by default in
    the words kernels and in the other rows kernels (odd lengths, unaligned views) on rows longer
    than 256 (rows-db), at every length with SEPCONV1D_DW_ROWS_MMA=1 (rows-single), or on the CUDA
    cores, SEPCONV1D_DW_ROWS_MMA=0):
    forward and all three gradients against float64 for the exact sizes (3, 5, 7, 9, 11, 31) and
    every padded tap count (K up to 32, across 4, 8, 12, 16, 24 and 32), pad_left 0 / middle / K - 1
    with right pads that end the rows early or late, rows shorter than the kernel's window and
    than a warp's lanes, odd and 16-byte-unaligned lengths, rows up to the 2048 limit (and one
    past it), views one element in, batch-strided views, a channel-last input (other kernels), dx
    alone and dw alone."""
    monkeypatch.setenv("SEPCONV1D_DW_ROWS", rows)
    monkeypatch.setenv("SEPCONV1D_DW_ROWS_DB", db)
    monkeypatch.setenv("SEPCONV1D_DW_ROWS_WORDS", words)
    monkeypatch.setenv("SEPCONV1D_DW_ROWS_WORDS_BWD", words)
    monkeypatch.setenv("SEPCONV1D_DW_ROWS_WORDS16", words16)
    monkeypatch.setenv("SEPCONV1D_DW_ROWS_MMA", mma)
    xdtype, wdtype = dtypes
    if mma == "0" and xdtype == torch.float32:
        pytest.skip("float32 has no tensor-core path here: the same run as rows-words16")
    cases = [  # (K, L, pad_left, pad_right, layout)
        (9, 210, 8, 0, "contiguous"), (11, 250, 5, 5, "contiguous"), (31, 500, 15, 15, "sliced"),
        (3, 1, 1, 1, "contiguous"), (5, 3, 4, 2, "contiguous"), (1, 77, 0, 0, "contiguous"),
        (2, 13, 0, 1, "sliced"), (12, 40, 11, 3, "contiguous"), (13, 257, 6, 6, "batch_strided"),
        (16, 31, 0, 15, "contiguous"), (17, 129, 8, 8, "sliced"), (24, 64, 23, 0, "contiguous"),
        (32, 2048, 16, 15, "contiguous"), (25, 2047, 0, 30, "sliced"), (7, 2049, 3, 3, "contiguous"),
        (9, 333, 4, 4, "channels_last"), (7, 300, 3, 3, "contiguous"), (6, 100, 2, 3, "sliced"),
    ]
    for i, (k, length, left, right, layout) in enumerate(cases):
        channels = (5, 24, 13)[i % 3]
        batch = (9, 3, 1)[i % 3]
        with_bias = i % 2 == 0
        if layout == "batch_strided":
            x = make_activation(2 * batch, channels, length, xdtype, "cuda")[::2]
        else:
            x = make_activation(batch, channels, length + (layout == "sliced"), xdtype, "cuda",
                                "contiguous" if layout == "sliced" else layout)
            x = x[..., 1:] if layout == "sliced" else x
        x.requires_grad_(True)
        weight, bias = _params(channels, k, wdtype, "cuda", with_bias)
        weight.requires_grad_(True)
        if bias is not None:
            bias.requires_grad_(True)
        _check_forward_and_grads(x, weight, bias, left, right, 1,
                                 f"K={k} L={length} pad=({left}, {right}) {layout} rows={rows} db={db} "
                                 f"words={words} words16={words16} mma={mma}")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the kernels' names come from the CUDA profiler")
@pytest.mark.parametrize("dtype,length,offset,k,left,words", [
    (torch.bfloat16, 210, 0, 9, 8, True),    # FastConformer: word-aligned rows, even pad_left
    (torch.float16, 250, 0, 11, 5, True),    # Citrinet: odd pad_left (windows one element in)
    (torch.bfloat16, 250, 1, 11, 5, False),  # rows one element in: not word-aligned
    (torch.bfloat16, 211, 0, 11, 5, False),  # odd length: rows alternate parity
    (torch.float32, 211, 1, 11, 5, True),    # float32 rows are always whole words
    (torch.bfloat16, 501, 0, 31, 15, False),  # odd length past 256: the other rows forward's tensor cores
    (torch.float16, 300, 1, 13, 6, False),   # rows one element in, past 256
], ids=["bf16-L210", "fp16-L250-odd-pad", "bf16-offset", "bf16-odd-L", "fp32-odd-L", "bf16-odd-L501-K31",
        "fp16-offset-L300-K13"])
def test_short_rows_words_forward_routing(monkeypatch, dtype, length, offset, k, left, words):
    """With SEPCONV1D_DW_ROWS_WORDS=1 the short-row forward takes the word-copy kernel exactly where
    every row of x and y is word-aligned, half types from K 11 a tensor-core entry point (the
    other rows forward's on rows longer than 256), and the float64 reference's result (poisoned
    output memory)."""
    monkeypatch.setenv("SEPCONV1D_DW_ROWS", "1")
    monkeypatch.setenv("SEPCONV1D_DW_ROWS_WORDS", "1")
    channels, right = 6, k - 1 - left
    x = make_activation(5, channels, length + offset, dtype, "cuda")[..., offset:]
    weight, bias = _params(channels, k, dtype, "cuda", True)
    ref = unfolded_depthwise(x, weight, bias, 1, left, right, 1)
    poison_allocator("cuda", ref.numel() * x.element_size())
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        out = sepconv1d.depthwise_conv1d(x, weight, bias, padding=(left, right))
        torch.cuda.synchronize()
    assert_close_to_reference(out, ref, tolerance_for(dtype), f"L={length} offset={offset} {dtype}")
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    assert any("dw_fwd_cf_rows" in n for n in names), names
    assert any("dw_fwd_cf_rows_words_" in n for n in names) == words, names
    # Half types' arithmetic on the tensor cores from K 11: the words forward's MMA entry point, or
    # on rows that are not word-aligned the other rows forward's, there on rows longer than 256.
    mma = dtype != torch.float32 and k >= 11
    assert any("dw_fwd_cf_rows_words_mma_kernel" in n for n in names) == (words and mma), names
    other_mma = not words and mma and length > 256
    assert any("dw_fwd_cf_rows_mma_kernel" in n for n in names) == other_mma, names


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the kernels' names come from the CUDA profiler")
@pytest.mark.parametrize("dtype,length,offset,k,left,words,held", [
    (torch.bfloat16, 210, 0, 9, 8, True, False),    # FastConformer: dy staged one element into its vectors
    (torch.float16, 250, 0, 11, 5, True, False),    # Citrinet: odd pad_left (x windows one element in)
    (torch.bfloat16, 250, 1, 11, 5, None, False),   # x one element in: words only where x is not read
    (torch.bfloat16, 211, 0, 11, 5, False, False),  # odd length: rows alternate parity
    (torch.float32, 211, 1, 11, 5, True, False),    # float32 rows are always whole words; dx's on 4 bytes
    (torch.float32, 210, 0, 9, 8, True, True),      # dx's rows on 8 bytes: stored from registers
    (torch.float32, 256, 0, 12, 5, True, False),    # KP 12: the staged kernel at any alignment
    (torch.bfloat16, 500, 0, 31, 15, True, False),  # Conformer: half-type dx on the tensor cores
], ids=["bf16-L210", "fp16-L250-odd-pad", "bf16-offset", "bf16-odd-L", "fp32-odd-L", "fp32-L210", "fp32-K12",
        "bf16-L500-K31"])
@pytest.mark.parametrize("wanted", ["all", "x", "weight", "bias"])
@pytest.mark.parametrize("mma_dw", ["", "0"], ids=["dw-default", "dw-cuda-cores"])
def test_short_rows_words_backward_routing(monkeypatch, dtype, length, offset, k, left, words, held, wanted,
                                           mma_dw):
    """With SEPCONV1D_DW_ROWS_WORDS_BWD=1 the short-row backward takes the word-copy kernel exactly
    where every row it reads or writes is word-aligned, and each asked-for gradient equals the
    float64 reference's either way (poisoned output memory); its weight-gradient sums, one slot per
    unit of rows, are the same bits on a second call. Float32 dx comes from the entry point that
    stores it from registers (held at 64 registers) exactly where K <= 11 and dx's rows start on 8
    bytes; half types' dx runs on the tensor cores from K 12, and beside it dw and db by default
    (SEPCONV1D_DW_ROWS_MMA_DW=0: on the CUDA cores)."""
    monkeypatch.setenv("SEPCONV1D_DW_ROWS", "1")
    monkeypatch.setenv("SEPCONV1D_DW_ROWS_WORDS_BWD", "1")
    monkeypatch.setenv("SEPCONV1D_DW_ROWS_MMA_DW", mma_dw)
    channels, right = 6, k - 1 - left + 2
    x = make_activation(21, channels, length + offset, dtype, "cuda")[..., offset:]
    weight, bias = _params(channels, k, dtype, "cuda", True)
    x64, w64, b64 = (t.detach().double().requires_grad_(True) for t in (x, weight, bias))
    ref = unfolded_depthwise(x64, w64, b64, 1, left, right, 1)
    grad = torch.randn(ref.shape, dtype=torch.float64, device="cuda").to(dtype)
    ref_grads = torch.autograd.grad(ref, (x64, w64, b64), grad.double())
    want = {"all": (True, True, True), "x": (True, False, False), "weight": (False, True, False),
            "bias": (False, False, True)}[wanted]
    op = torch.ops.sepconv1d.depthwise_conv1d_backward
    poison_allocator("cuda", x.numel() * x.element_size())
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        got = op(grad, x, weight, 1, left, right, 1, *want)
        torch.cuda.synchronize()
    again = op(grad, x, weight, 1, left, right, 1, *want)
    for name, g, r, a, wanted_one in zip(("x", "weight", "bias"), got, ref_grads, again, want, strict=True):
        if not wanted_one:
            assert g is None, name
            continue
        assert_close_to_reference(g, r, tolerance_for(dtype), f"grad {name} L={length} offset={offset} {dtype}")
        if name != "x":
            assert torch.equal(g, a), f"grad {name} differs between two calls"
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    assert any("dw_bwd_cf_rows" in n for n in names), names
    if words is None:  # only the weight gradient reads x; dy and the new dx are word-aligned
        words = not want[1]
    assert any("dw_bwd_cf_rows_words_" in n for n in names) == words, names
    if words and want[0]:
        assert any("dw_bwd_cf_rows_words_kernel_held64" in n for n in names) == held, names
    # Half types' dx on the tensor cores from K 12 (the words backward's MMA entry point).
    mma = bool(words) and want[0] and dtype != torch.float32 and k >= 12
    assert any("dw_bwd_cf_rows_words_mma_kernel" in n for n in names) == mma, names


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the kernels' names come from the CUDA profiler")
@pytest.mark.parametrize("dtype,length,k,backward,dw_cuda_cores,kernel", [
    (torch.bfloat16, 500, 31, True, False, "dw_bwd_cf_rows_words_mma_kernel"),   # Conformer
    (torch.float16, 300, 13, True, False, "dw_bwd_cf_rows_words_mma_kernel"),
    (torch.bfloat16, 1000, 15, True, False, "dw_bwd_cf_rows_words_mma_kernel"),  # dw / db on the tensor cores
    (torch.bfloat16, 1000, 15, True, True, None),                              # ... or not: dx alone, to 512
    (torch.bfloat16, 2048, 15, True, False, None),                             # rows longer than 1536
    (torch.bfloat16, 501, 31, True, False, "dw_bwd_cf_rows_mma_kernel"),       # odd length: the other rows
    (torch.float16, 1501, 21, True, False, "dw_bwd_cf_rows_mma_kernel"),       # kernel's tensor cores, to 1536
    (torch.bfloat16, 1023, 31, True, True, None),                              # ... or 512 with dx alone
    (torch.bfloat16, 2047, 15, True, False, None),
    (torch.float16, 1500, 21, False, False, "dw_fwd_cf_rows_words_mma_kernel"),
    (torch.bfloat16, 1501, 21, False, False, None),                            # odd length past 1024
], ids=["bf16-bwd-L500-K31", "fp16-bwd-L300-K13", "bf16-bwd-L1000-K15", "bf16-bwd-L1000-K15-dw-cuda-cores",
        "bf16-bwd-L2048-K15", "bf16-bwd-L501-K31", "fp16-bwd-L1501-K21", "bf16-bwd-L1023-K31-dw-cuda-cores",
        "bf16-bwd-L2047-K15", "fp16-fwd-L1500-K21", "bf16-fwd-L1501-K21"])
def test_short_rows_rule_with_tensor_cores(monkeypatch, dtype, length, k, backward, dw_cuda_cores, kernel):
    """With no switches set, half-type rows that the rows kernels' tensor-core arithmetic takes go
    to the rows kernels further than others: the words backward from K 12 up to 1536 positions
    with dw and db on the tensor cores beside dx, 512 with dx alone there
    (SEPCONV1D_DW_ROWS_MMA_DW=0), and so the other rows backward (odd lengths); the words forward
    from K 13 up to the rows kernels' 2048 (`rows_preferred`). Results
    equal the float64 reference's (poisoned output memory)."""
    for name in ("SEPCONV1D_DW_ROWS", "SEPCONV1D_DW_ROWS_WORDS", "SEPCONV1D_DW_ROWS_WORDS_BWD",
                 "SEPCONV1D_DW_ROWS_MMA", "SEPCONV1D_DW_ROWS_MMA_BWD", "SEPCONV1D_DW_ROWS_MMA_DW"):
        monkeypatch.delenv(name, raising=False)
    if dw_cuda_cores:
        monkeypatch.setenv("SEPCONV1D_DW_ROWS_MMA_DW", "0")
    channels, left = 6, k // 2
    right = k - 1 - left
    x = make_activation(3, channels, length, dtype, "cuda")
    weight, bias = _params(channels, k, dtype, "cuda", True)
    x64, w64, b64 = (t.detach().double().requires_grad_(True) for t in (x, weight, bias))
    ref = unfolded_depthwise(x64, w64, b64, 1, left, right, 1)
    grad = torch.randn(ref.shape, dtype=torch.float64, device="cuda").to(dtype)
    ref_grads = torch.autograd.grad(ref, (x64, w64, b64), grad.double())
    poison_allocator("cuda", 2 * x.numel() * x.element_size())
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        if backward:
            got = torch.ops.sepconv1d.depthwise_conv1d_backward(grad, x, weight, 1, left, right, 1, True, True, True)
        else:
            got = (sepconv1d.depthwise_conv1d(x, weight, bias, padding=(left, right)),)
        torch.cuda.synchronize()
    # The forward checks its one output (strict=False: three names for one).
    for name, g, r in zip(("x", "weight", "bias"), got, ref_grads if backward else (ref.detach(),), strict=False):
        assert_close_to_reference(g, r, tolerance_for(dtype), f"{name} L={length} K={k} {dtype}")
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    prefix = "dw_bwd_cf_rows" if backward else "dw_fwd_cf_rows"
    if kernel is None:
        assert not any(prefix in n for n in names), names
    else:
        assert any(kernel in n for n in names), names


def _half_rows(batch, channels, length, dtype, device, view):
    """An activation for the unaligned-row test: "slice" is [..., 1:] of rows one element longer
    (every row starts one element in), any other view a make_activation layout."""
    if view == "slice":
        return make_activation(batch, channels, length + 1, dtype, device)[..., 1:]
    return make_activation(batch, channels, length, dtype, device, view)


# How the CUDA tensor-core backward stages 16-bit rows that are not 16-byte aligned
# (SEPCONV1D_DW_TC_UNITS): the default (2-byte rows staged in whole 16-byte units and realigned in
# shared memory), every narrow row in units, and element by element (the forward's way).
TC_STAGING = {"default": {}, "all_units": {"SEPCONV1D_DW_TC_UNITS": "8"},
              "elements": {"SEPCONV1D_DW_TC_UNITS": "0"}}


def _tc_staging(monkeypatch, device, staging):
    if device != "cuda" and staging != "default":
        pytest.skip("the tensor-core kernels' staging forms are CUDA-only")
    for name, value in TC_STAGING[staging].items():
        monkeypatch.setenv(name, value)


def _check_half_rows(device, xdtype, wdtype, kernel_size, channels, length, view, padding="same"):
    left, right = resolve_padding(padding, kernel_size, 1, 1)
    x = _half_rows(2, channels, length, xdtype, device, view)
    weight, bias = _params(channels, kernel_size, wdtype, device, True)
    what = f"K={kernel_size} L={length} {view}"
    poison_allocator(device, x.numel() * x.element_size())
    out = sepconv1d.depthwise_conv1d(x, weight, bias, padding=padding)
    assert_close_to_reference(out, unfolded_depthwise(x, weight, bias, 1, left, right, 1),
                              tolerance_for(xdtype), "forward " + what)
    grad_out = _half_rows(2, channels, out.shape[-1], xdtype, device, view)
    refs = reference_grads(lambda a, w, b: unfolded_depthwise(a, w, b, 1, left, right, 1),
                           [x, weight, bias], grad_out)
    tols = (tolerance_for(xdtype), tolerance_for(wdtype), tolerance_for(wdtype))
    op = torch.ops.sepconv1d.depthwise_conv1d_backward
    for need in ((True, True, True), (True, False, False), (False, True, False), (False, False, True)):
        poison_allocator(device, x.numel() * x.element_size())
        grads = op(grad_out, x, weight, 1, left, right, 1, *need)
        for name, wanted, got, ref, tol in zip(("x", "weight", "bias"), need, grads, refs, tols, strict=True):
            if wanted:
                assert_close_to_reference(got, ref, tol, f"grad {name} {what} need={need}")
            else:
                assert got is None


# Rows of 16-bit elements that are not 16-byte aligned (on CUDA the tensor-core kernels, staging
# forms above): Conformer's K = 31 'same' at L = 500 (8-byte rows), 1670 (4-byte) and odd 835
# (2-byte), a slice x[..., 1:] with dy sliced alike (every row one element in; dx is a new,
# contiguous tensor), and channel-last views of the same shapes (other kernels, unaffected).
@pytest.mark.parametrize("staging", list(TC_STAGING))
@pytest.mark.parametrize("dtypes", [(torch.float16, torch.float16), (torch.float16, torch.float32),
                                    (torch.bfloat16, torch.float32)], ids=dtype_pair_id)
@pytest.mark.parametrize("length,view", [(500, "contiguous"), (835, "contiguous"), (1670, "contiguous"),
                                         (500, "slice"), (500, "channels_last"), (835, "channels_last")])
def test_long_kernel_half_rows_not_16_byte_aligned(monkeypatch, device, length, view, dtypes, staging):
    _tc_staging(monkeypatch, device, staging)
    _check_half_rows(device, *dtypes, 31, 6, length, view)


# Compiled kernel sizes on 16-bit rows that are not 16-byte aligned, past the short-row kernels'
# 2048 (CUDA: the tensor-core kernels, where the register-direct ones do not take them: here off,
# SEPCONV1D_DW_REG_SHIFTED=0, for the contiguous rows, which they take by default; a slice's x and
# y rows are at different shifts): odd rows longer than a tile (4097: the forward's 4096-output
# and the backward's 2048-position tiles, a partial last one), causal and 'same' pads.
@pytest.mark.parametrize("staging", list(TC_STAGING))
@pytest.mark.parametrize("kernel_size,length,view,padding", [
    (3, 4097, "contiguous", "same"), (9, 4097, "contiguous", "causal"), (9, 2049, "slice", "same"),
    (5, 3001, "contiguous", "same")])
def test_compiled_kernel_half_rows_not_16_byte_aligned(monkeypatch, device, kernel_size, length, view,
                                                       padding, staging):
    _tc_staging(monkeypatch, device, staging)
    monkeypatch.setenv("SEPCONV1D_DW_REG_SHIFTED", "0")
    if device != "cuda":
        _check_half_rows(device, torch.bfloat16, torch.bfloat16, kernel_size, 5, length, view, padding)
        return
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        _check_half_rows(device, torch.bfloat16, torch.bfloat16, kernel_size, 5, length, view, padding)
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    for kernel in ("dw_fwd_cf_tc_kernel", "dw_bwd_cf_tc_kernel"):
        assert any(kernel in n for n in names), (kernel, sorted(set(names)))


def test_output_layout_follows_input(device):
    x_cf = make_activation(2, 6, 40, torch.float32, device)
    x_cl = make_activation(2, 6, 40, torch.float32, device, "channels_last")
    w, _ = _params(6, 3, torch.float32, device, False)
    assert sepconv1d.depthwise_conv1d(x_cf, w, padding=1).is_contiguous()
    out_cl = sepconv1d.depthwise_conv1d(x_cl, w, padding=1)
    assert out_cl.transpose(1, 2).is_contiguous()


def test_empty_batch(device):
    x = torch.empty(0, 4, 10, device=device)
    w, b = _params(4, 3, torch.float32, device, True)
    out = sepconv1d.depthwise_conv1d(x, w, b, padding="same")
    assert out.shape == (0, 4, 10)
    x.requires_grad_(True)
    w.requires_grad_(True)
    b.requires_grad_(True)
    sepconv1d.depthwise_conv1d(x, w, b, padding="same").sum().backward()
    assert x.grad.shape == x.shape
    assert torch.equal(w.grad, torch.zeros_like(w)) and torch.equal(b.grad, torch.zeros_like(b))


def test_backward_op_returns_only_requested(device):
    x = make_activation(2, 4, 30, torch.float32, device)
    w, _ = _params(4, 3, torch.float32, device, False)
    g = torch.randn(2, 4, 30, device=device)
    op = torch.ops.sepconv1d.depthwise_conv1d_backward
    dx, dw, db = op(g, x, w, 1, 1, 1, 1, True, False, False)
    assert dx is not None and dw is None and db is None
    dx, dw, db = op(g, x, w, 1, 1, 1, 1, False, True, True)
    assert dx is None and dw is not None and db is not None
    refs = reference_grads(lambda a, b, c: unfolded_depthwise(a, b, c, 1, 1, 1, 1),
                           [x, w, torch.zeros(4, device=device)], g)
    assert_close_to_reference(dw, refs[1], 2e-5)
    assert_close_to_reference(db, refs[2], 2e-5)


def test_frozen_weight_needs_no_saved_input(device):
    """With only dx needed, autograd gets the right dx (x itself is not kept for backward)."""
    x = make_activation(2, 5, 33, torch.float32, device, "channels_last").requires_grad_(True)
    w, b = _params(5, 9, torch.float32, device, True)
    out = sepconv1d.depthwise_conv1d(x, w, b, padding="causal")
    g = torch.randn_like(out)
    (dx,) = torch.autograd.grad(out, [x], g)
    ref = reference_grads(lambda a: unfolded_depthwise(a, w, b, 1, 8, 0, 1), [x], g)[0]
    assert_close_to_reference(dx, ref, 2e-5)
    assert dx.stride(1) == 1, "dx should keep x's channel-last layout"


# K = 9: the register-direct backwards (CUDA); K = 31: the tensor-core backward for bf16 (CUDA).
@pytest.mark.parametrize("kernel_size", [9, 31])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_weight_grads_are_deterministic(device, dtype, kernel_size):
    x = make_activation(4, 64, 4099, dtype, device)
    w, b = _params(64, kernel_size, torch.float32 if dtype == torch.bfloat16 else dtype, device, True)
    g = torch.randn(4, 64, 4099, dtype=torch.float64).to(device, dtype)
    op = torch.ops.sepconv1d.depthwise_conv1d_backward
    pad = kernel_size // 2
    first = op(g, x, w, 1, pad, pad, 1, True, True, True)
    for _ in range(5):
        again = op(g, x, w, 1, pad, pad, 1, True, True, True)
        for a, b_ in zip(first, again, strict=True):
            assert torch.equal(a, b_), "gradients differ between identical runs"


@pytest.mark.parametrize("kernel_size", [3, 64])
def test_more_than_2_31_elements(device, kernel_size):
    """Channel offsets past 2^31 elements: check the tail of the last channel against a slice reference."""
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        if free < 12 * 2**30:
            pytest.skip("not enough GPU memory")
    length = 2**30 + 4099
    x = torch.empty(1, 2, length, dtype=torch.float16, device=device)
    x.normal_()
    w, b = _params(2, kernel_size, torch.float32, device, True)
    out = sepconv1d.depthwise_conv1d(x, w, b, padding="same")
    assert out.numel() > 2**31
    tail = 5000
    left, right = resolve_padding("same", kernel_size, 1, 1)
    piece = x[:, :, length - tail - left:]
    ref = reference_depthwise(piece, w, b, 1, 0, right, 1)[:, :, -tail:]
    assert_close_to_reference(out[:, :, -tail:], ref, 3e-3, "tail of a >2^31-element tensor")
    del out, x


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_thousand_runs_are_bit_identical(layout):
    """A race shows up as a result that moves between identical runs."""
    x = make_activation(4, 96, 3001, torch.bfloat16, "cuda", layout)
    w, b = _params(96, 9, torch.float32, "cuda", True)
    g = torch.randn(4, 96, 3001, device="cuda").to(torch.bfloat16)
    op = torch.ops.sepconv1d
    y0 = op.depthwise_conv1d(x, w, b, 1, 4, 4, 1)
    grads0 = op.depthwise_conv1d_backward(g, x, w, 1, 4, 4, 1, True, True, True)
    mismatches = torch.zeros((), dtype=torch.int64, device="cuda")
    for _ in range(1000):
        mismatches += (op.depthwise_conv1d(x, w, b, 1, 4, 4, 1) != y0).sum()
        for a, ref in zip(op.depthwise_conv1d_backward(g, x, w, 1, 4, 4, 1, True, True, True), grads0, strict=True):
            mismatches += (a != ref).sum()
    assert mismatches.item() == 0
