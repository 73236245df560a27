"""separable_conv1d forward and backward against float64 references (depthwise then 1x1 F.conv1d)."""

from __future__ import annotations

import pytest
import torch
from reference import (
    LAYOUTS,
    TF32_TOLERANCE,
    assert_close_to_reference,
    dtype_pair_id,
    kernel_template_args,
    make_activation,
    poison_allocator,
    reference_grad_magnitudes,
    reference_grads,
    reference_separable,
    tolerance_for,
    unfolded_separable,
)

import sepconv1d
from sepconv1d._shapes import resolve_padding

KERNEL_SIZES = [1, 2, 3, 4, 5, 7, 9, 31, 63]
# (Cin, Cout): odd sizes and the tile-unfriendly ones.
CHANNELS = [(3, 5), (1, 4), (16, 16), (100, 257), (64, 8)]
# (padding, stride, dilation)
GEOMETRY = [("same", 1, 1), ("valid", 1, 1), ("causal", 1, 2), ((2, 5), 2, 1), ((0, 3), 3, 4), ("same", 1, 4)]
DTYPES = [
    (torch.float32, torch.float32),
    (torch.float64, torch.float64),
    (torch.float16, torch.float16),
    (torch.bfloat16, torch.bfloat16),
    (torch.bfloat16, torch.float32),
]


def _weights(cin, cout, kernel_size, wdtype, device, dw_bias, pw_bias):
    def rnd(*shape, scale=1.0):
        return (torch.randn(*shape, dtype=torch.float64) * scale).to(device, wdtype)

    return (rnd(cin, kernel_size), rnd(cin) if dw_bias else None,
            rnd(cout, cin, scale=cin ** -0.5), rnd(cout) if pw_bias else None)


def _valid(length, kernel_size, padding, stride, dilation):
    if padding == "same" and stride != 1:
        return None
    left, right = resolve_padding(padding, kernel_size, stride, dilation)
    if length + left + right < dilation * (kernel_size - 1) + 1:
        return None
    return left, right


@pytest.mark.parametrize("dtypes", DTYPES, ids=dtype_pair_id)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kernel_size", KERNEL_SIZES)
def test_forward_matches_reference(device, kernel_size, layout, dtypes):
    xdtype, wdtype = dtypes
    checked = 0
    for i, (padding, stride, dilation) in enumerate(GEOMETRY):
        for j, length in enumerate((1, 7, 130, 1031)):
            pads = _valid(length, kernel_size, padding, stride, dilation)
            if pads is None:
                continue
            cin, cout = CHANNELS[(i + j) % len(CHANNELS)]
            x = make_activation(2, cin, length, xdtype, device, layout)
            dw, dwb, pw, pwb = _weights(cin, cout, kernel_size, wdtype, device, (i + j) % 2 == 0, j % 3 != 1)
            ref = unfolded_separable(x, dw, dwb, pw, pwb, stride, *pads, dilation)
            poison_allocator(device, ref.numel() * x.element_size())
            out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, stride=stride, padding=padding, dilation=dilation)
            assert out.dtype == xdtype
            assert_close_to_reference(out, ref, tolerance_for(xdtype),
                                      f"K={kernel_size} {padding} s={stride} d={dilation} L={length} {cin}->{cout}")
            checked += 1
    assert checked > 0


GRAD_NAMES = ("x", "dw_weight", "dw_bias", "pw_weight", "pw_bias")


def _check_grads(inputs, grads, grad_out, stride, pads, dilation, tolerance, what, asked=GRAD_NAMES):
    """grads (those of the tensors among inputs = x, dw, dwb, pw, pwb whose name is in `asked`, in
    order; None inputs are absent parameters) against float64. With half activations the GPU
    backward carries dh = pw^T dy in x's precision, as eager does, and the weight gradients sum
    dh * x over B*L: each error is judged against the sum of |terms|, not against a result that
    cancellation can make small. tolerance(t): tolerance for t's grad."""
    fn = lambda a, b, c, d, e: unfolded_separable(a, b, c, d, e, stride, *pads, dilation)  # noqa: E731
    refs = reference_grads(fn, inputs, grad_out)
    mags = reference_grad_magnitudes(fn, inputs, grad_out)
    got_grads = iter(grads)
    for name, t, ref, mag in zip(GRAD_NAMES, inputs, refs, mags, strict=True):
        if t is None or name not in asked:
            continue
        got = next(got_grads)
        assert got.dtype == t.dtype, name
        assert_close_to_reference(got, ref, tolerance(t), f"grad {name} {what}", scale=mag)


@pytest.mark.parametrize("dtypes", [DTYPES[0], DTYPES[1], DTYPES[4]], ids=dtype_pair_id)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kernel_size", [1, 3, 4, 9, 31])
def test_backward_matches_reference(device, kernel_size, layout, dtypes):
    xdtype, wdtype = dtypes
    checked = 0
    for i, (padding, stride, dilation) in enumerate(GEOMETRY):
        length = (7, 130, 1031)[i % 3]
        pads = _valid(length, kernel_size, padding, stride, dilation)
        if pads is None:
            continue
        cin, cout = CHANNELS[i % len(CHANNELS)]
        x = make_activation(2, cin, length, xdtype, device, layout).requires_grad_(True)
        params = list(_weights(cin, cout, kernel_size, wdtype, device, i % 2 == 0, True))
        for p in params:
            if p is not None:
                p.requires_grad_(True)
        dw, dwb, pw, pwb = params
        out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, stride=stride, padding=pads, dilation=dilation)
        grad_out = torch.randn(out.shape, dtype=torch.float64).to(device, xdtype)
        inputs = [t for t in (x, dw, dwb, pw, pwb) if t is not None]
        poison_allocator(device, x.numel() * x.element_size())
        grads = torch.autograd.grad(out, inputs, grad_out)
        _check_grads([x, dw, dwb, pw, pwb], grads, grad_out, stride, pads, dilation,
                     lambda t: max(tolerance_for(t.dtype), tolerance_for(xdtype)),
                     f"K={kernel_size} {padding} s={stride} d={dilation} L={length} {cin}->{cout}")
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("cin,cout", [(64, 256), (256, 512), (1024, 96)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_larger_shapes(device, cin, cout, dtype):
    x = make_activation(2, cin, 1000 if device == "cpu" else 3001, dtype, device)
    dw, dwb, pw, pwb = _weights(cin, cout, 9, dtype, device, True, True)
    ref = reference_separable(x, dw, dwb, pw, pwb, 1, 4, 4, 1)
    poison_allocator(device, ref.numel() * x.element_size())
    out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same")
    assert_close_to_reference(out, ref, tolerance_for(dtype))


@pytest.mark.parametrize("cin,cout,k,dilation,length", [
    (1024, 1024, 11, 1, 250),   # Citrinet: Cin-wide d pw_weight products, many 32-row strips
    (200, 1536, 7, 1, 300),     # Vocos-like expansion: a long reduction (Cout) into dh
    (520, 300, 87, 2, 835),     # QuartzNet-last: a long halo widens each backward tile
])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_larger_shapes_backward(device, cin, cout, k, dilation, length, dtype):
    """Every gradient at model widths against float64: the backward's tiled products (CPU: bf16 on
    AMX or AVX512-BF16 dot products where the CPU has them, else float32 GEMMs; their register
    blocks, strips and column groups) at sizes the small-channel tests never reach."""
    x = make_activation(1, cin, length, dtype, device).requires_grad_(True)
    params = list(_weights(cin, cout, k, dtype, device, True, True))
    for p in params:
        p.requires_grad_(True)
    dw, dwb, pw, pwb = params
    pads = resolve_padding("same", k, 1, dilation)
    out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same", dilation=dilation)
    grad_out = torch.randn(out.shape, dtype=torch.float64).to(device, dtype)
    poison_allocator(device, x.numel() * x.element_size())
    grads = torch.autograd.grad(out, [x, dw, dwb, pw, pwb], grad_out)
    tol = max(tolerance_for(dtype), TF32_TOLERANCE) if dtype == torch.float32 else tolerance_for(dtype)
    _check_grads([x, dw, dwb, pw, pwb], grads, grad_out, 1, pads, dilation, lambda t: tol,
                 f"K={k} d={dilation} L={length} {cin}->{cout} {dtype}")


# Tensors past 2^31 elements: (device, B, Cin, Cout, L, dtype, layout, TF32). The GPU cases run the
# production kernels with offsets past 2^31 in x and past 2^32 in y: the seed's pass-major BN 128
# tile on 16-byte-aligned rows (tensor maps) and on unaligned ones, a channel-last tile, TF32 and
# strict float32. The CPU case passes 2^31 in x and dx and keeps the test's peak near 13 GB of a
# CPU runner's memory.
HUGE_CASES = [
    pytest.param("cuda", 1, 256, 512, 2**23 + 4096, torch.bfloat16, "contiguous", False, id="cuda-bf16-256to512"),
    pytest.param("cuda", 1, 256, 512, 2**23 + 4099, torch.bfloat16, "contiguous", False,
                 id="cuda-bf16-256to512-unaligned"),
    pytest.param("cuda", 1, 64, 96, 2**25 + 4099, torch.bfloat16, "channels_last", False, id="cuda-bf16-cl-64to96"),
    pytest.param("cuda", 1, 64, 64, 2**25 + 4096, torch.float32, "contiguous", True, id="cuda-tf32-64to64"),
    pytest.param("cuda", 1, 64, 64, 2**25 + 4099, torch.float32, "channels_last", False, id="cuda-fp32-cl-64to64"),
    pytest.param("cpu", 1, 2, 1, 2**30 + 4099, torch.float16, "contiguous", False, id="cpu-fp16-2to1"),
]


@pytest.mark.parametrize("dev,batch,cin,cout,length,dtype,layout,tf32", HUGE_CASES)
def test_more_than_2_31_elements(dev, batch, cin, cout, length, dtype, layout, tf32):
    """Forward and every gradient where x and dx (and on the GPU y and grad_out) pass 2^31 elements: the output's
    first and last 3000 positions against float64 references of the matching slices of x, then a
    backward whose grad_out is zero but for those last positions, so that dx is the slice
    reference's there and exactly zero elsewhere, and the weight gradients are the slice's. A
    32-bit offset anywhere reads, writes or reduces the wrong elements."""
    if dev == "cuda":
        if not torch.cuda.is_available():
            pytest.skip("CUDA device not available")
        free, _ = torch.cuda.mem_get_info()
        if free < 64 * 2**30:
            pytest.skip("not enough GPU memory")
    torch.backends.cudnn.allow_tf32 = tf32  # restored by the autouse fixture in conftest.py
    tol = TF32_TOLERANCE if tf32 else tolerance_for(dtype)
    kernel_size, tail = 9, 3000
    left, right = resolve_padding("same", kernel_size, 1, 1)
    shape = (batch, length, cin) if layout == "channels_last" else (batch, cin, length)
    x = torch.empty(shape, dtype=dtype, device=dev)
    x.normal_()
    if layout == "channels_last":
        x = x.transpose(1, 2)
    params = [t.requires_grad_(True) for t in _weights(cin, cout, kernel_size, dtype, dev, True, True)]
    dw, dwb, pw, pwb = params
    x.requires_grad_(True)
    out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same")
    assert out.shape == (batch, cout, length) and max(x.numel(), out.numel()) > 2**31
    head = reference_separable(x[:, :, :tail + right], dw, dwb, pw, pwb, 1, left, 0, 1)
    assert_close_to_reference(out[:, :, :tail], head, tol, "first positions of a >2^31-element output")
    start = length - tail - left  # the slice of x that the last `tail` outputs read
    piece = x.detach()[:, :, start:]
    ref = reference_separable(piece, dw, dwb, pw, pwb, 1, 0, right, 1)
    assert_close_to_reference(out[:, :, -tail:], ref, tol, "last positions of a >2^31-element output")

    grad_out = torch.zeros_like(out)
    grad_out[:, :, -tail:] = make_activation(batch, cout, tail, dtype, dev)
    piece_grad = grad_out[:, :, -tail:].clone()
    del head, ref
    if dev == "cuda":  # glibc returns blocks this large to the system: no poison to leave on the CPU
        poison_allocator(dev, x.numel() * x.element_size())
    grads = torch.autograd.grad(out, [x, dw, dwb, pw, pwb], grad_out)
    del out, grad_out
    dx = grads[0]
    assert dx.shape == x.shape
    # aminmax: no full-size temporary; a NaN (an unwritten, poisoned element) makes both NaN.
    low, high = torch.aminmax(dx[:, :, :start])
    assert low.item() == 0 and high.item() == 0, "dx: nonzero or unwritten where no output's gradient reaches"
    _check_grads([piece, dw, dwb, pw, pwb], [dx[:, :, start:], *grads[1:]], piece_grad, 1, (0, right), 1,
                 lambda t: tol, f"last positions of a >2^31-element backward, {layout} {dtype}")


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_cout_passes_share_one_depthwise(device, layout, dtype):
    """Cout of several 256-channel tiles and enough (batch, position) tiles to fill the GPU: the CUDA
    forward then computes the depthwise once per position tile and reuses it, from shared memory,
    in every Cout pass (odd Cin and Cout, ragged last tiles, 3 Cin chunks of 32 plus a partial one).
    float32 runs on TF32 tensor cores (that path shares the depthwise; strict float32 does not)."""
    torch.backends.cudnn.allow_tf32 = True  # restored by the autouse fixture in conftest.py
    x = make_activation(8, 100, 4100 if device == "cuda" else 300, dtype, device, layout)
    dw, dwb, pw, pwb = _weights(100, 600, 9, dtype, device, True, True)
    ref = reference_separable(x, dw, dwb, pw, pwb, 1, 4, 4, 1)
    poison_allocator(device, ref.numel() * x.element_size())
    out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same")
    assert_close_to_reference(out, ref, TF32_TOLERANCE if dtype == torch.float32 else tolerance_for(dtype))


def _batch_for_one_group(out_length: int) -> int:
    """A batch with at least ~100 tiles of 128 output positions: enough work that the wgmma
    kernels' plan walks every Cout tile of a position tile in one block (shared depthwise), the
    only plan they run (with fewer tiles the mma.sync kernel takes the call)."""
    return min(64, max(2, -(-100 * 128 // max(out_length, 1))))


def _check_forward_cases(cases, dtype, device, tolerance):
    """The fused forward against float64 for (cin, cout, K, L, stride, dilation, layout) cases:
    'same'-style padding (given explicitly, so stride 2 works too), both biases, output poisoned."""
    for cin, cout, kernel_size, length, stride, dilation, layout in cases:
        x = make_activation(_batch_for_one_group(length // stride), cin, length, dtype, device, layout)
        dw, dwb, pw, pwb = _weights(cin, cout, kernel_size, dtype, device, True, True)
        pads = resolve_padding("same", kernel_size, 1, dilation)
        ref = reference_separable(x, dw, dwb, pw, pwb, stride, *pads, dilation)
        poison_allocator(device, ref.numel() * x.element_size())
        out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, stride=stride, padding=pads,
                                         dilation=dilation)
        assert_close_to_reference(out, ref, tolerance,
                                  f"{cin}->{cout} K={kernel_size} L={length} s={stride} "
                                  f"d={dilation} {layout}")


# Kernel choices of the CUDA forward tests, as environment settings read per call: the default
# selection; the warp-specialised kernel's chunk-major form first (BN 64 x 4 Cout passes); its
# pass-major form with one h chunk per consumer step (the default takes two on BN 64 / 32 tiles
# where the chunk count is even); its pass-major form only, on BN 32 tiles; x staged by cp.async
# where a tensor map would do; the depthwise on the CUDA cores where the tensor-core one would
# do; the uniform wgmma kernel; the mma.sync kernels.
KERNEL_CHOICES = {
    "1": {"SEPCONV1D_WGMMA": "1"},
    "cm": {"SEPCONV1D_WGMMA": "1", "SEPCONV1D_WS_CM": "1"},
    "sc1": {"SEPCONV1D_WGMMA": "1", "SEPCONV1D_WS_SC": "1"},
    "bn32": {"SEPCONV1D_WGMMA": "1", "SEPCONV1D_WS_CM": "0", "SEPCONV1D_WS_BN": "32"},
    "noxtma": {"SEPCONV1D_WGMMA": "1", "SEPCONV1D_WS_XTMA": "0"},
    "nodwmma": {"SEPCONV1D_WGMMA": "1", "SEPCONV1D_WS_DWMMA": "0"},
    "uniform": {"SEPCONV1D_WGMMA": "uniform"},
    "0": {"SEPCONV1D_WGMMA": "0"},
}


@pytest.mark.parametrize("kernel_choice", ["1", "cm", "sc1", "noxtma", "nodwmma", "uniform", "0"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_forward_kernels_match_reference(device, monkeypatch, dtype, kernel_choice):
    """Every CUDA forward kernel of 16-bit x: on compute capability 9.0 the warp-specialised wgmma
    kernel serves Cout > 128 (pass-major on BN 128 tiles where the h ring fits, with the W loader
    warpgroup, and two-chunk steps for channel-first x with an even chunk count, e.g. Cin 100 and
    256; else chunk-major or BN 64; where x comes by tensor map, the depthwise on the tensor
    cores in blocks of 16 taps); "sc1" keeps one chunk per step; "cm" puts every case on the
    chunk-major form; "noxtma" stages x by cp.async where a tensor map would do; "nodwmma" keeps
    the depthwise on the CUDA cores; SEPCONV1D_WGMMA=uniform selects the uniform wgmma kernel
    (stride 1) and SEPCONV1D_WGMMA=0 the mma.sync kernel. Odd Cin/Cout,
    ragged position tiles, K = 1 (no depthwise taps) to 31, stride 2, dilation 2, both layouts,
    batches of many items per block; rows of 1032 / 2048 positions (16-byte aligned: the
    warp-specialised producers stage x through a tensor map) and odd ones (cp.async); y rows of
    1028 and 1026 positions (8- and 4-byte aligned: the epilogue's lane-pair and pair stores of
    full tiles) and of odd length (pairs shifted by one element on every other row)."""
    if device != "cuda":
        pytest.skip("CUDA kernel selection")
    for name, value in KERNEL_CHOICES[kernel_choice].items():
        monkeypatch.setenv(name, value)
    cases = [(100, 257, 9, 1031, 1, 1, "contiguous"), (256, 512, 31, 700, 1, 1, "channels_last"),
             (64, 130, 1, 129, 1, 1, "contiguous"), (200, 300, 5, 4100, 1, 2, "channels_last"),
             (1030, 260, 11, 301, 1, 1, "contiguous"), (1024, 1024, 7, 250, 1, 1, "channels_last"),
             (256, 640, 5, 3001, 2, 1, "contiguous"), (2048, 384, 3, 517, 1, 1, "contiguous"),
             (100, 257, 9, 1032, 1, 1, "contiguous"), (200, 300, 5, 2048, 1, 2, "contiguous"),
             (136, 300, 9, 1028, 1, 1, "contiguous"), (72, 260, 5, 1026, 1, 1, "contiguous")]
    _check_forward_cases(cases, dtype, device, tolerance_for(dtype))


@pytest.mark.parametrize("kernel_choice", ["1", "cm", "sc1", "bn32", "noxtma", "0"])
def test_tf32_forward_kernels_match_reference(device, monkeypatch, kernel_choice):
    """float32 x with TF32 allowed: on compute capability 9.0 the warp-specialised wgmma kernel
    (tf32 operands) serves Cout > 128: pass-major where the h ring of BN 128 fits, else
    chunk-major or BN 64; "cm" puts every case on the chunk-major form, "bn32" on pass-major BN 32
    tiles; SEPCONV1D_WGMMA=0 selects the mma.sync TF32 kernel. Odd Cin/Cout, ragged tiles, stride
    2, dilation 2, both layouts, K = 3, 5, 7, 9 on channel-first rows (the producers' compile-time
    taps) and others, y rows of 2048 / 1000 and 1026 positions (full tiles stored by lane pairs
    in 16 bytes, or by pairs), TF32-level error against float64."""
    if device != "cuda":
        pytest.skip("CUDA kernel selection")
    torch.backends.cudnn.allow_tf32 = True  # restored by the autouse fixture in conftest.py
    for name, value in KERNEL_CHOICES[kernel_choice].items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SEPCONV1D_SEP_PHASES", "0")  # K 87 dilation 2 on the dilated kernels
    cases = [(100, 257, 9, 1031, 1, 1, "contiguous"), (256, 512, 31, 700, 1, 1, "channels_last"),
             (200, 300, 5, 4100, 1, 2, "channels_last"), (1030, 260, 11, 301, 1, 1, "contiguous"),
             (256, 640, 5, 3001, 2, 1, "contiguous"), (512, 1536, 7, 517, 1, 1, "contiguous"),
             (130, 260, 3, 2048, 1, 1, "contiguous"), (64, 300, 5, 1000, 1, 1, "contiguous"),
             (1024, 1024, 11, 250, 1, 1, "channels_last"), (520, 300, 87, 835, 1, 2, "contiguous"),
             (136, 300, 9, 1026, 1, 1, "contiguous")]
    _check_forward_cases(cases, torch.float32, device, TF32_TOLERANCE)


def _float32_rows(batch, cin, length, start, width, device):
    """x[:, :, start:start + length] of a fresh (batch, cin, width) float32 buffer: the rows'
    alignment is the buffer's (width % 4) and the slice's start's."""
    wide = make_activation(batch, cin, width, torch.float32, device)
    return wide[:, :, start:start + length]


@pytest.mark.parametrize("kernel_choice", ["1", "cm", "0"])
@pytest.mark.parametrize("tf32", [True, False], ids=["tf32", "strict"])
def test_float32_rows_in_pairs_match_reference(device, monkeypatch, tf32, kernel_choice):
    """float32 channel-first rows that are 8- but not 16-byte aligned (L % 4 == 2, e.g. Citrinet's
    250; or a slice starting 2 elements into a 16-byte-aligned buffer) are staged in 8-byte pairs
    from the even position at or below each window start, one element offset (0 or 1) for every
    row: every left padding 0-3 at K 4 and 11 and a Citrinet-like K 11 with padding 5; an odd L
    whose channel stride is even (a slice of a wider buffer: the last pair of each row half
    outside it); a slice from an odd element (4-byte aligned: element by element); on the
    warp-specialised kernel's pass-major and chunk-major forms and the mma.sync one, with TF32 and
    strict float32, forward against float64, and the backward (its h recompute stages x the same
    way) on the odd-length rows."""
    if device != "cuda":
        pytest.skip("CUDA staging of float32 rows")
    torch.backends.cudnn.allow_tf32 = tf32  # restored by the autouse fixture in conftest.py
    tolerance = TF32_TOLERANCE if tf32 else tolerance_for(torch.float32)
    for name, value in KERNEL_CHOICES[kernel_choice].items():
        monkeypatch.setenv(name, value)
    cin, cout = 72, 260
    views = {
        "L250": _float32_rows(52, cin, 250, 0, 250, device),
        "L250 from element 2": _float32_rows(52, cin, 250, 2, 254, device),
        "L251 of rows of 254": _float32_rows(52, cin, 251, 0, 254, device),
        "L250 from element 1": _float32_rows(52, cin, 250, 1, 252, device),
    }
    for label, x in views.items():
        for kernel_size, pad_lefts in ((4, range(4)), (11, (3, 5))):
            for pad_left in pad_lefts:
                pads = (pad_left, kernel_size - 1 - pad_left)
                _check_biased_case(x, cout, kernel_size, pads, tolerance, f"{label} K={kernel_size} pads={pads}")
    x = views["L251 of rows of 254"][:4].detach().requires_grad_(True)
    dw, dwb, pw, pwb = (t.requires_grad_(True) for t in _weights(cin, cout, 11, torch.float32, device, True, True))
    out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding=(5, 5))
    grad_out = torch.randn(out.shape, dtype=torch.float64).to(device, torch.float32)
    inputs = [x, dw, dwb, pw, pwb]
    grads = torch.autograd.grad(out, inputs, grad_out)
    _check_grads(inputs, grads, grad_out, 1, (5, 5), 1, lambda t: tolerance, "L251 of rows of 254")


def _check_biased_case(x, cout, kernel_size, pads, tolerance, label):
    """One stride-1 forward with fresh weights and both biases, poisoned output, against float64."""
    dw, dwb, pw, pwb = _weights(x.shape[1], cout, kernel_size, x.dtype, x.device, True, True)
    ref = reference_separable(x, dw, dwb, pw, pwb, 1, *pads, 1)
    poison_allocator(x.device.type, ref.numel() * x.element_size())
    out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding=pads)
    assert_close_to_reference(out, ref, tolerance, label)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_producer_window_offsets_match_reference(device, monkeypatch, dtype):
    """The warp-specialised forward on 16-byte-aligned channel-first rows fixes the kernel size (3,
    5, 7, 9) and the window's offset within the 16-byte vector (left padding mod 8 for 16-bit x,
    mod 4 for float32) once per kernel, not per chunk; with 16-bit weights its producers run the
    depthwise on the tensor cores, one block of 16 taps where K + (offset mod 2) <= 9 (by default
    not for K 3 and 5, whose compiled FFMA loops are faster; SEPCONV1D_WS_DWMMA=1 forces it; more
    taps: the next test). Every pair of kernel size (1 to 9) and offset here, with the x tensor
    map (tensor-core depthwise forced on, off) and with cp.async staging, on 64- and 128-position
    tiles, on the chunk-major form (which takes the tensor map only with the tensor-core
    depthwise), against float64 (float32 on TF32)."""
    if device != "cuda":
        pytest.skip("CUDA kernel selection")
    torch.backends.cudnn.allow_tf32 = True  # restored by the autouse fixture in conftest.py
    tolerance = TF32_TOLERANCE if dtype == torch.float32 else tolerance_for(dtype)
    length, cin, cout = 1024, 72, 200
    x = make_activation(_batch_for_one_group(length), cin, length, dtype, device, "contiguous")
    monkeypatch.setenv("SEPCONV1D_WGMMA", "1")
    for staging, dw_mma, max_bn, cm in (("1", "1", "128", "0"), ("1", "1", "64", "0"),
                                        ("1", "0", "128", "0"), ("0", "1", "128", "0"),
                                        ("1", "1", "128", "1")):
        monkeypatch.setenv("SEPCONV1D_WS_XTMA", staging)
        monkeypatch.setenv("SEPCONV1D_WS_DWMMA", dw_mma)
        monkeypatch.setenv("SEPCONV1D_WS_BN", max_bn)
        monkeypatch.setenv("SEPCONV1D_WS_CM", cm)
        for kernel_size in range(1, 10):
            for pad_left in range(8):
                pads = (pad_left, (pad_left * 3) % 5)
                _check_biased_case(x, cout, kernel_size, pads, tolerance,
                                   f"K={kernel_size} pads={pads} tensor map={staging} dw mma={dw_mma} "
                                   f"BN<={max_bn} chunk-major first={cm}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_producer_tensor_core_depthwise_long_kernels_match_reference(device, monkeypatch, dtype):
    """Past 9 taps the producers' tensor-core depthwise runs in blocks of 16 taps, one m16n8k16
    product each (K 10-25: 2, K 31: 3, K 63: 5), every (output, tap) pair in exactly one block:
    kernel sizes around the block edges, every window offset, pass-major 64- and 128-position
    tiles and the chunk-major form (2 Cout passes side by side, W as boxes of the raw weights
    refilled by the consumers), 72 channels (the second chunk has 8 live channels of 64), against
    float64."""
    if device != "cuda":
        pytest.skip("CUDA kernel selection")
    tolerance = tolerance_for(dtype)
    length, cin, cout = 1024, 72, 200
    x = make_activation(_batch_for_one_group(length), cin, length, dtype, device, "contiguous")
    monkeypatch.setenv("SEPCONV1D_WGMMA", "1")
    monkeypatch.setenv("SEPCONV1D_WS_XTMA", "1")
    monkeypatch.setenv("SEPCONV1D_WS_DWMMA", "1")
    for max_bn, cm in (("128", "0"), ("64", "0"), ("128", "1")):
        monkeypatch.setenv("SEPCONV1D_WS_BN", max_bn)
        monkeypatch.setenv("SEPCONV1D_WS_CM", cm)
        for kernel_size in (10, 11, 16, 17, 24, 25, 31, 33, 63):
            for pad_left in range(8):
                pads = (pad_left, kernel_size - 1 - pad_left)
                _check_biased_case(x, cout, kernel_size, pads, tolerance,
                                   f"K={kernel_size} pads={pads} BN<={max_bn} chunk-major first={cm}")


@pytest.mark.parametrize("staging", ["units", "pairs"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_producer_tensor_core_depthwise_word_rows_match_reference(device, monkeypatch, dtype, staging):
    """Channel-first rows that are not 16-byte aligned (L % 8 != 0 in 16-bit, as Conformer's 500
    and QuartzNet's 835) get no tensor map: the producers stage them in 16-byte units from each
    row's unit at or below its window, each row at its own element shift of 0-7 (the default), or
    with SEPCONV1D_WS_ROWS16=0 in 4-byte pairs, each row at its own parity; the tensor-core
    depthwise reads each channel from its shift. L % 8 of 4 (an aligned base, and an odd one:
    every row odd), 2 from an odd base, 5 and 7 (rows at every shift), 3 (L 1027: a last tile of
    3 columns, fewer than its first 16-byte unit of y holds on most rows), K 1 to 63, several left
    paddings (the cells before a row's start cleared), pass-major 128 / 64 and chunk-major, 72
    channels (a ragged second chunk), against float64."""
    if device != "cuda":
        pytest.skip("CUDA kernel selection")
    tolerance = tolerance_for(dtype)
    cin, cout = 72, 200
    monkeypatch.setenv("SEPCONV1D_WGMMA", "1")
    monkeypatch.setenv("SEPCONV1D_WS_DWMMA", "1")
    monkeypatch.setenv("SEPCONV1D_WS_ROWS16", "1" if staging == "units" else "0")
    for length, odd_base in ((1020, False), (1020, True), (1021, False), (1018, True), (1023, False),
                             (210, False), (1027, False)):
        batch = _batch_for_one_group(length)
        if odd_base:  # elements 1-1020 of rows of 1022: every row starts at an odd element
            x = make_activation(batch, cin, length + 2, dtype, device)[:, :, 1:length + 1]
        else:
            x = make_activation(batch, cin, length, dtype, device)
        for max_bn, cm in (("128", "0"), ("64", "0"), ("128", "1")):
            monkeypatch.setenv("SEPCONV1D_WS_BN", max_bn)
            monkeypatch.setenv("SEPCONV1D_WS_CM", cm)
            for kernel_size, pad_left in ((1, 0), (7, 3), (9, 4), (9, 5), (9, 8), (11, 5), (16, 8), (31, 15),
                                          (31, 2), (63, 31)):
                pads = (pad_left, kernel_size - 1 - pad_left)
                _check_biased_case(x, cout, kernel_size, pads, tolerance,
                                   f"L={length} odd base={odd_base} staging={staging} K={kernel_size} pads={pads} "
                                   f"BN<={max_bn} chunk-major first={cm}")


def test_tf32_backward_matches_reference(device):
    """float32 with TF32 allowed, Cout = 1536 (Vocos-like): all five gradients against float64 at
    TF32-level error (on CUDA both backward GEMMs run on cuBLAS with TF32 compute)."""
    torch.backends.cudnn.allow_tf32 = True  # restored by the autouse fixture in conftest.py
    x = make_activation(4, 200, 1000 if device == "cuda" else 100, torch.float32, device).requires_grad_(True)
    dw, dwb, pw, pwb = (t.requires_grad_(True) for t in _weights(200, 1536, 7, torch.float32, device, True, True))
    out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same")
    grad_out = torch.randn(out.shape, dtype=torch.float64).to(device, torch.float32)
    inputs = [x, dw, dwb, pw, pwb]
    grads = torch.autograd.grad(out, inputs, grad_out)
    _check_grads(inputs, grads, grad_out, 1, (3, 3), 1, lambda t: TF32_TOLERANCE, "TF32, 200->1536")


# (batch, Cin, Cout, K, L, stride, dilation, padding, dw bias, pw bias) for the TF32 backward. On
# channel-first x the d pw GEMM takes per-batch products when L is long against Cin, else one GEMM
# over a (Cout, B*L) copy of dy (L = 100 against Cin 300); batch 1 always takes the former.
TF32_BACKWARD_CASES = [
    (3, 3, 5, 3, 77, 1, 1, "same", True, True),
    (1, 100, 257, 9, 1031, 1, 1, "same", False, True),
    (4, 300, 130, 5, 100, 1, 1, "same", True, False),
    (2, 64, 96, 1, 513, 1, 1, "valid", False, False),
    (3, 48, 200, 31, 700, 2, 1, (7, 3), True, True),
    (2, 130, 70, 4, 300, 1, 2, "causal", True, True),
]


@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "strided"])
@pytest.mark.parametrize("case", TF32_BACKWARD_CASES, ids=lambda c: f"{c[1]}to{c[2]}-K{c[3]}-L{c[4]}")
def test_tf32_backward_cases_match_reference(device, layout, case):
    """TF32 backward over odd Cin / Cout, K = 1 to 31, stride, dilation, causal and asymmetric
    padding, with and without each bias, every layout (the strided one is copied to a kernel layout
    first), both channel-first d pw strategies; each gradient alone as well as all of them, since
    the pw bias gradient rides on the pw weight product only when both are asked for."""
    torch.backends.cudnn.allow_tf32 = True  # restored by the autouse fixture in conftest.py
    batch, cin, cout, kernel_size, length, stride, dilation, padding, has_dwb, has_pwb = case
    pads = resolve_padding(padding, kernel_size, stride, dilation)
    x = make_activation(batch, cin, length, torch.float32, device, layout).requires_grad_(True)
    params = [t.requires_grad_(True) if t is not None else None
              for t in _weights(cin, cout, kernel_size, torch.float32, device, has_dwb, has_pwb)]
    dw, dwb, pw, pwb = params
    out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, stride=stride, padding=pads, dilation=dilation)
    grad_out = make_activation(batch, cout, out.shape[2], torch.float32, device, layout)
    inputs = [x, dw, dwb, pw, pwb]
    names = [n for n, t in zip(GRAD_NAMES, inputs, strict=True) if t is not None]
    what = f"TF32 {cin}->{cout} K={kernel_size} L={length} {layout}"
    poison_allocator(device, x.numel() * 4)
    grads = torch.autograd.grad(out, [t for t in inputs if t is not None], grad_out)
    _check_grads(inputs, grads, grad_out, stride, pads, dilation, lambda t: TF32_TOLERANCE, what)
    for name in names:  # one gradient asked of the operator itself: the others must not be computed
        flags = [n == name for n in GRAD_NAMES]
        poison_allocator(device, x.numel() * 4)
        grads = torch.ops.sepconv1d.separable_conv1d_backward(
            grad_out, x.detach(), dw.detach(), None if dwb is None else dwb.detach(), pw.detach(),
            stride, *pads, dilation, True, *flags)
        assert all((g is not None) == f for g, f in zip(grads, flags, strict=True)), name
        _check_grads(inputs, [g for g in grads if g is not None], grad_out, stride, pads, dilation,
                     lambda t: TF32_TOLERANCE, f"{what} (only {name} asked)", asked=(name,))


def _check_half_backward_same(device, dtype, cin, cout, k, length):
    """A 'same' separable layer on half x (3 rows of `length`): every gradient against float64, the
    gradients' memory poisoned first."""
    x = make_activation(3, cin, length, dtype, device).requires_grad_(True)
    params = [t.requires_grad_(True) for t in _weights(cin, cout, k, dtype, device, True, True)]
    dw, dwb, pw, pwb = params
    out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same")
    grad_out = make_activation(3, cout, out.shape[2], dtype, device)
    inputs = [x, dw, dwb, pw, pwb]
    poison_allocator(device, x.numel() * x.element_size())
    grads = torch.autograd.grad(out, inputs, grad_out)
    _check_grads(inputs, grads, grad_out, 1, (k // 2, k // 2), 1, lambda t: tolerance_for(dtype),
                 f"{dtype} {cin}->{cout} K={k} L={length}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("k,length", [(31, 500), (13, 300), (15, 1000), (31, 501)])
def test_half_backward_long_kernel_rows(device, dtype, k, length):
    """Half x at Conformer-like kernels and lengths: on CUDA the depthwise backward over dh takes
    the short-row kernels with dx, dw and db on the tensor cores at even lengths (L 500, 300, 1000)
    and the other kernels at an odd one (501)."""
    _check_half_backward_same(device, dtype, 72, 40, k, length)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("length", [100, 98, 97])
def test_half_backward_short_rows(device, dtype, length):
    """Half x with rows shorter than Cin: on CUDA d pw is one GEMM over dy copied to (Cout, B, L)
    and h with ones channels for d pw_bias, both written by a row kernel in 8-, 4- or 2-byte units
    (200, 196 and 194-byte rows)."""
    _check_half_backward_same(device, dtype, 300, 130, 5, length)


def test_tf32_backward_runs_on_cublas(device):
    """With TF32 allowed, the backward's two GEMMs must be cuBLAS products, not the fused mma.sync
    fallbacks (sep_dpw_kernel for d pw, the forward kernel for dh): catches a process where cuBLAS
    could not be reached and the slow path was taken silently."""
    if device != "cuda":
        pytest.skip("CUDA kernel selection")
    x = make_activation(2, 128, 1000, torch.float32, device).requires_grad_(True)
    dw, dwb, pw, pwb = (t.requires_grad_(True) for t in _weights(128, 256, 9, torch.float32, device, True, True))

    torch.backends.cudnn.allow_tf32 = True  # restored by the autouse fixture in conftest.py
    out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        torch.autograd.grad(out, [x, dw, dwb, pw, pwb], torch.ones_like(out))
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    fused = ("sep_dpw_kernel", "sep_fwd_kernel", "sep_fwd_ws_kernel")
    assert names and not any(f in n for n in names for f in fused), names
    assert any("gemm" in n.lower() or "xmma" in n.lower() or "cutlass" in n.lower() for n in names), names


def test_tf32_backward_captured_on_a_new_thread(device):
    """The TF32 backward's first call on a thread creates that thread's cuBLAS handle; made during
    a CUDA graph capture it must not break the capture, and the replayed graph must give the
    gradients of fresh inputs."""
    if device != "cuda":
        pytest.skip("CUDA graphs")
    import threading

    cin, cout, length = 64, 96, 500
    x = make_activation(2, cin, length, torch.float32, device)
    dw, dwb, pw, _ = _weights(cin, cout, 5, torch.float32, device, True, False)
    dy = make_activation(2, cout, length, torch.float32, device)
    result = {}

    def capture():
        try:
            torch.cuda.set_device(x.device)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=torch.cuda.Stream()):
                grads = torch.ops.sepconv1d.separable_conv1d_backward(  # allow_tf32=True
                    dy, x, dw, dwb, pw, 1, 2, 2, 1, True, True, True, True, True, False)
            result["graph"], result["grads"] = graph, grads
        except Exception as e:  # noqa: BLE001 - reported below, on the test's thread
            result["error"] = e

    t = threading.Thread(target=capture)
    t.start()
    t.join()
    assert "error" not in result, result.get("error")
    for _ in range(2):
        x.copy_(make_activation(2, cin, length, torch.float32, device))
        dy.copy_(make_activation(2, cout, length, torch.float32, device))
        result["graph"].replay()
        torch.cuda.synchronize()
        inputs = [x.clone().requires_grad_(True), dw.clone().requires_grad_(True),
                  dwb.clone().requires_grad_(True), pw.clone().requires_grad_(True), None]
        assert result["grads"][4] is None
        _check_grads(inputs, result["grads"][:4], dy, 1, (2, 2), 1,
                     lambda t: TF32_TOLERANCE, "TF32 backward replayed")


# (batch, Cin, L, K, padding, grads asked) for the CUDA backward's batch chunks, forced by a 4 MiB
# threshold (SEPCONV1D_BWD_CHUNK_MIB; the default is 64 MiB): dh staged in the rows of dx that later
# chunks write (halving chunks 4, 2, 1, then 2 in a buffer of their own for B = 9), or, without dx
# or when the output is longer than x, in equal chunks of a separate buffer; h in two halves.
CHUNKED_BACKWARD_CASES = [
    (9, 256, 2048, 3, "same", "all"),
    (9, 256, 2048, 3, (5, 5), "all"),
    (9, 256, 2048, 5, "causal", "weights"),
    (4, 520, 2050, 3, "same", "x"),
]


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("case", CHUNKED_BACKWARD_CASES, ids=lambda c: f"B{c[0]}-L{c[2]}-K{c[3]}-{c[5]}")
def test_chunked_backward_matches_reference(device, monkeypatch, layout, dtype, case):
    """The chunked backward (float32 on TF32) against float64: every gradient, the depthwise weight
    gradients summed over chunks, dx written chunk by chunk with dh staged in it."""
    if device != "cuda":
        pytest.skip("the CUDA backward's batch chunks")
    monkeypatch.setenv("SEPCONV1D_BWD_CHUNK_MIB", "4")
    torch.backends.cudnn.allow_tf32 = True  # restored by the autouse fixture in conftest.py
    batch, cin, length, kernel_size, padding, asked = case
    cout = 48
    pads = resolve_padding(padding, kernel_size, 1, 1)
    x = make_activation(batch, cin, length, dtype, device, layout)
    dw, dwb, pw, pwb = _weights(cin, cout, kernel_size, dtype, device, True, True)
    x.requires_grad_(asked in ("all", "x"))
    for t in (dw, dwb, pw, pwb):
        t.requires_grad_(asked in ("all", "weights"))
    out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding=pads)
    grad_out = make_activation(batch, cout, out.shape[2], dtype, device, layout)
    inputs = [x, dw, dwb, pw, pwb]
    wanted = [t for t in inputs if t.requires_grad]
    poison_allocator(device, x.numel() * x.element_size())
    grads = torch.autograd.grad(out, wanted, grad_out)
    tol = TF32_TOLERANCE if dtype == torch.float32 else tolerance_for(dtype)
    _check_grads(inputs, grads, grad_out, 1, pads, 1, lambda t: tol, f"chunked {case} {layout} {dtype}",
                 asked=[n for n, t in zip(GRAD_NAMES, inputs, strict=True) if t.requires_grad])


@pytest.mark.parametrize("phases", ["1", "0"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_dilated_backward_as_phase_rows(device, monkeypatch, dtype, phases):
    """The backward of dilated separable convolutions, whose depthwise parts (h recomputed, dx and
    the depthwise weight gradients) the CUDA kernels run as phase rows (SEPCONV1D_DW_PHASES=1 for
    every K, =0 never), in batch chunks (SEPCONV1D_BWD_CHUNK_MIB=1) and not: QuartzNet's last
    block (K 87, dilation 2) at a smaller size, SNAC's dilation 9 with an unaligned row length,
    pad_left not a multiple of d."""
    if device != "cuda":
        pytest.skip("SEPCONV1D_DW_PHASES is read by the CUDA kernels")
    monkeypatch.setenv("SEPCONV1D_DW_PHASES", phases)
    torch.backends.cudnn.allow_tf32 = True  # restored by the autouse fixture in conftest.py
    tol = TF32_TOLERANCE if dtype == torch.float32 else tolerance_for(dtype)
    cases = [(3, 40, 33, 87, 835, 2, (86, 86), "64"), (2, 24, 24, 7, 3001, 9, (27, 27), "1"),
             (5, 96, 40, 31, 1000, 3, (50, 40), "1")]
    for batch, cin, cout, k, length, d, pads, chunk_mib in cases:
        monkeypatch.setenv("SEPCONV1D_BWD_CHUNK_MIB", chunk_mib)
        x = make_activation(batch, cin, length, dtype, device).requires_grad_(True)
        dw, dwb, pw, pwb = _weights(cin, cout, k, dtype, device, True, True)
        inputs = [x, dw, dwb, pw, pwb]
        for t in inputs[1:]:
            t.requires_grad_(True)
        out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding=pads, dilation=d)
        grad_out = make_activation(batch, cout, out.shape[2], dtype, device)
        poison_allocator(device, 4 * x.numel() * x.element_size())
        grads = torch.autograd.grad(out, inputs, grad_out)
        _check_grads(inputs, grads, grad_out, 1, pads, d, lambda t: tol,
                     f"K={k} d={d} L={length} pads={pads} chunks<{chunk_mib}MiB phases={phases} {dtype}")


@pytest.mark.parametrize("phases", ["1", "0"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_dilated_forward_as_phase_rows(device, monkeypatch, dtype, phases):
    """The fused forward of dilated problems over the phase rows of x (SEPCONV1D_SEP_PHASES=1: x
    gathered, the fused kernel at dilation 1, its output scattered; =0: the dilated kernels)
    against float64: pad_left below, at and above multiples of d, odd Cin / Cout, an unaligned x
    (sliced one element in), rows shorter than d."""
    if device != "cuda":
        pytest.skip("SEPCONV1D_SEP_PHASES is read by the CUDA kernels")
    monkeypatch.setenv("SEPCONV1D_SEP_PHASES", phases)
    torch.backends.cudnn.allow_tf32 = True  # restored by the autouse fixture in conftest.py
    tol = TF32_TOLERANCE if dtype == torch.float32 else tolerance_for(dtype)
    cases = [(3, 40, 33, 87, 835, 2, (86, 86), False), (2, 24, 24, 7, 3001, 9, (27, 27), True),
             (5, 100, 257, 31, 1000, 3, (50, 40), False), (2, 3, 5, 4, 3, 5, (8, 7), False),
             (4, 64, 128, 9, 4096, 4, (13, 19), True)]
    for batch, cin, cout, k, length, d, pads, sliced in cases:
        x = make_activation(batch, cin, length + sliced, dtype, device)
        x = x[..., 1:] if sliced else x
        dw, dwb, pw, pwb = _weights(cin, cout, k, dtype, device, True, True)
        ref = unfolded_separable(x, dw, dwb, pw, pwb, 1, *pads, d)
        poison_allocator(device, 4 * x.numel() * x.element_size())
        out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding=pads, dilation=d)
        assert_close_to_reference(out, ref, tol, f"K={k} d={d} L={length} pads={pads} sliced={sliced} {dtype}")


# (batch, Cin, Cout, L) whose d pw products are a few cuBLAS tiles against a long reduction over
# (batch, position), which the CUDA backward cuts into slices of its own (a shorter last slice in
# each): per-batch products (B 2, and B 1), and one product over h as (Ce, B, L) for short rows
# with more h channels than positions (B 81, L 67).
SLICED_DPW_CASES = [(2, 5, 3, 9001), (1, 17, 9, 20000), (81, 200, 40, 67)]


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("case", SLICED_DPW_CASES, ids=lambda c: f"B{c[0]}-{c[1]}to{c[2]}-L{c[3]}")
def test_sliced_pointwise_weight_grad_matches_reference(device, layout, dtype, case):
    """Every gradient against float64 where d pw's reduction is sliced (float32 on TF32)."""
    if device != "cuda":
        pytest.skip("the CUDA backward's sliced d pw products")
    torch.backends.cudnn.allow_tf32 = True  # restored by the autouse fixture in conftest.py
    batch, cin, cout, length = case
    x = make_activation(batch, cin, length, dtype, device, layout).requires_grad_(True)
    params = [t.requires_grad_(True) for t in _weights(cin, cout, 3, dtype, device, True, True)]
    dw, dwb, pw, pwb = params
    out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same")
    grad_out = make_activation(batch, cout, length, dtype, device, layout)
    inputs = [x, dw, dwb, pw, pwb]
    poison_allocator(device, x.numel() * x.element_size())
    grads = torch.autograd.grad(out, inputs, grad_out)
    tol = TF32_TOLERANCE if dtype == torch.float32 else tolerance_for(dtype)
    _check_grads(inputs, grads, grad_out, 1, (1, 1), 1, lambda t: tol, f"sliced d pw {case} {layout} {dtype}")


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_backward_peak_memory_holds_a_slice_of_the_intermediate(device, layout):
    """bf16 training-step backward at B32 Cin 256 L4096 (a 64 MiB intermediate): besides dx and the
    small gradients, the backward may hold at most a quarter of the intermediate at once (h and dh
    are made in batch chunks). A backward holding a whole h or dh next to dx fails this, and so does
    one keeping every chunk's depthwise weight-gradient partial sums: the channel-last kernels
    write ~15-20 MiB of them per chunk (they get one reused buffer, hence the larger allowance;
    H200: 72 MiB contiguous, 92 MiB channel-last; ~140 estimated if every chunk kept its own)."""
    if device != "cuda":
        pytest.skip("CUDA memory statistics")
    B, cin, cout, length = 32, 256, 128, 4096
    x = make_activation(B, cin, length, torch.bfloat16, device, layout).requires_grad_(True)
    params = [t.requires_grad_(True) for t in _weights(cin, cout, 9, torch.bfloat16, device, True, True)]
    dw, dwb, pw, pwb = params
    dy = make_activation(B, cout, length, torch.bfloat16, device, layout)
    for _ in range(2):  # the second step runs with every library workspace already allocated
        out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same")
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        grads = torch.autograd.grad(out, [x, dw, dwb, pw, pwb], dy)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
        del out, grads
    intermediate = B * cin * length * 2
    dx_bytes = intermediate
    # weight gradients, partial products, partial sums
    small = (4 if layout == "contiguous" else 20) << 20
    assert peak <= dx_bytes + intermediate // 4 + small, (peak / 2**20, intermediate / 2**20)


def test_wgmma_kernel_runs_on_sm90(device):
    """On compute capability 9.0 the seed-like bf16 forward must launch the warp-specialised wgmma
    kernel with BN 128 tiles: catches a build without sm_90a code or a plan that no longer fits."""
    if device != "cuda" or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs a compute capability 9.0 GPU")
    x = make_activation(4, 256, 4096, torch.bfloat16, device)
    dw, dwb, pw, pwb = _weights(256, 512, 9, torch.bfloat16, device, True, True)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same")
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if "sep_fwd_" in e.name]
    assert names, "no separable forward kernel was recorded"
    assert all("sep_fwd_ws_kernel<__nv_bfloat16, 128," in n for n in names), names


def _profiled_forward(x, dw, dwb, pw, pwb, pads, label):
    """The forward with 'same' padding (pads) against float64, into poisoned memory, under the
    profiler: the names of the CUDA kernels it launched."""
    ref = reference_separable(x, dw, dwb, pw, pwb, 1, *pads, 1)
    poison_allocator(x.device.type, ref.numel() * x.element_size())
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same")
        torch.cuda.synchronize()
    assert_close_to_reference(out, ref, tolerance_for(x.dtype), label)
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def _ws_kernel_args(names):
    """The template arguments (Tx, BN, kXcl, kG, kSC, kXTma, kDwMma, kPermRows) of each
    warp-specialised forward kernel among the recorded kernel names."""
    return kernel_template_args(names, "sep_fwd_ws_kernel")


def _ws_kernel_tails(names):
    """kXTma and kDwMma of each warp-specialised forward kernel among the recorded kernel names."""
    return [args[5:7] for args in _ws_kernel_args(names)]


@pytest.mark.parametrize("wdtype", [torch.bfloat16, torch.float32])
def test_tensor_core_depthwise_runs_with_16_bit_weights(device, wdtype):
    """On compute capability 9.0 the seed-like bf16 forward runs its depthwise on the tensor cores
    (the kernel's last template argument, kDwMma) when the depthwise weights are bf16, and on the
    CUDA cores when they are float32 (rounding them to bf16 would lose precision); both against
    float64."""
    if device != "cuda" or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs a compute capability 9.0 GPU")
    x = make_activation(4, 256, 4096, torch.bfloat16, device)
    dw, dwb, pw, pwb = _weights(256, 512, 9, wdtype, device, True, True)
    names = _profiled_forward(x, dw, dwb, pw, pwb, (4, 4), f"weights {wdtype}")
    # kXTma and kDwMma: both true, or the tensor map alone.
    tails = _ws_kernel_tails(names)
    assert tails, "no warp-specialised forward kernel was recorded"
    want = ["true", "true" if wdtype == torch.bfloat16 else "false"]
    assert all(t == want for t in tails), names


@pytest.mark.parametrize("case", ["aligned", "fp16-rows-8-byte", "three-tap-blocks"])
def test_run_epilogue_where_rows_are_16_byte_aligned(device, case):
    """On compute capability 9.0 the 16-bit forward with the tensor-core depthwise stores whole
    16-byte runs per lane (h in permuted order, the kernel's template argument kPermRows) where y's
    rows are 16-byte aligned and one block of 16 taps covers K; not where the rows are only 8-byte
    aligned (L 2044) or K needs three blocks (K 31). Each against float64, into poisoned memory,
    with ragged Cout (200)."""
    if device != "cuda" or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs a compute capability 9.0 GPU")
    dtype = torch.float16 if case.startswith("fp16") else torch.bfloat16
    length = 2044 if case == "fp16-rows-8-byte" else 2048
    k = 31 if case == "three-tap-blocks" else 9
    x = make_activation(_batch_for_one_group(length), 256, length, dtype, device)
    dw, dwb, pw, pwb = _weights(256, 200, k, dtype, device, True, True)
    names = _profiled_forward(x, dw, dwb, pw, pwb, ((k - 1) // 2, (k - 1) // 2), case)
    args = _ws_kernel_args(names)
    assert args, names
    if case == "aligned":  # kXTma, kDwMma, kPermRows
        assert all(a[5:] == ["true", "true", "true"] for a in args), names
    else:
        assert all(a[7] == "false" for a in args), names


def _offset_copy(t):
    """A contiguous copy of t that starts one element past a 16-byte boundary."""
    buf = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
    out = buf[1:].view(t.shape)
    out.copy_(t)
    assert out.data_ptr() % 16 != 0
    return out


@pytest.mark.parametrize("case", ["bf16", "fp16", "no-dw-bias", "ragged-cin", "unaligned-dw"])
def test_tensor_core_depthwise_reads_unprepared_weights(device, case):
    """The tensor-core depthwise kernel reads 16-bit weights as they are (W through a tensor map
    over pw, the taps and depthwise bias by bulk copy, the biases added inside the kernel): no
    preparation kernel runs, and ragged tiles (Cout 200; Cin 136, one 64-channel chunk partly past
    Cin) match float64. Where the weights cannot be read that way (pw rows not a multiple of 16
    bytes with Cin 100; depthwise weights and bias not 16-byte aligned) the FFMA kernel runs after
    the preparation kernel, and matches as well."""
    if device != "cuda" or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs a compute capability 9.0 GPU")
    dtype = torch.float16 if case == "fp16" else torch.bfloat16
    cin = {"ragged-cin": 100, "fp16": 136}.get(case, 256)
    x = make_activation(_batch_for_one_group(1000), cin, 1000, dtype, device)
    dw, dwb, pw, pwb = _weights(cin, 200, 7, dtype, device, case != "no-dw-bias", True)
    if case == "unaligned-dw":
        dw, dwb = _offset_copy(dw), _offset_copy(dwb)
    names = _profiled_forward(x, dw, dwb, pw, pwb, (3, 3), case)
    tails = _ws_kernel_tails(names)
    assert tails, names
    unprepared = case not in ("ragged-cin", "unaligned-dw")
    assert all(t == ["true", "true" if unprepared else "false"] for t in tails), names
    assert any("sep_prep_kernel" in n for n in names) != unprepared, names


def test_tf32_setting_is_obeyed(device):
    """TF32 results stay within TF32 error; with TF32 off, float32 is exact to float32 tolerance."""
    x = make_activation(2, 256, 2000, torch.float32, device)
    dw, dwb, pw, pwb = _weights(256, 384, 9, torch.float32, device, True, True)
    ref = reference_separable(x, dw, dwb, pw, pwb, 1, 4, 4, 1)
    torch.backends.cudnn.allow_tf32 = True
    assert_close_to_reference(sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same"), ref, TF32_TOLERANCE)
    torch.backends.cudnn.allow_tf32 = False
    assert_close_to_reference(sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same"), ref, 2e-5)


def test_empty_batch(device):
    x = torch.empty(0, 6, 10, device=device, requires_grad=True)
    dw, dwb, pw, pwb = (t.requires_grad_(True) for t in _weights(6, 7, 3, torch.float32, device, True, True))
    out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same")
    assert out.shape == (0, 7, 10)
    out.sum().backward()
    for p in (dw, dwb, pw, pwb):
        assert torch.equal(p.grad, torch.zeros_like(p))


def test_backward_op_returns_only_requested(device):
    x = make_activation(2, 5, 30, torch.float32, device)
    dw, dwb, pw, _ = _weights(5, 3, 3, torch.float32, device, True, False)
    g = torch.randn(2, 3, 30, device=device)
    op = torch.ops.sepconv1d.separable_conv1d_backward
    grads = op(g, x, dw, dwb, pw, 1, 1, 1, 1, False, False, False, False, True, True)
    assert grads[0] is None and grads[1] is None and grads[2] is None
    refs = reference_grads(lambda a, b, c, d, e: unfolded_separable(a, b, c, d, e, 1, 1, 1, 1),
                           [x, dw, dwb, pw, torch.zeros(3, device=device)], g)
    assert_close_to_reference(grads[3], refs[3], 2e-5)
    assert_close_to_reference(grads[4], refs[4], 2e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_weight_grads_are_deterministic(device, dtype):
    x = make_activation(3, 96, 2051, dtype, device)
    dw, dwb, pw, _ = _weights(96, 80, 7, dtype, device, True, False)
    g = torch.randn(3, 80, 2051, dtype=torch.float64).to(device, dtype)
    op = torch.ops.sepconv1d.separable_conv1d_backward
    first = op(g, x, dw, dwb, pw, 1, 3, 3, 1, False, True, True, True, True, True)
    for _ in range(4):
        again = op(g, x, dw, dwb, pw, 1, 3, 3, 1, False, True, True, True, True, True)
        for a, b in zip(first, again, strict=True):
            assert torch.equal(a, b), "gradients differ between identical runs"
