"""Random configurations of both operators, forward and the gradients asked for, against the float64
unfold references: the combinations that the enumerated tests do not reach (layout x dtype pair x
stride x dilation x asymmetric padding x odd channel counts x biases x which gradients x grad_out's
layout, TF32 on and off). Each configuration draws its sizes from its own seed and fresh random
tensors; a failure names the configuration."""

from __future__ import annotations

import random

import pytest
import torch
from reference import (
    LAYOUTS,
    TF32_TOLERANCE,
    assert_close_to_reference,
    make_activation,
    poison_allocator,
    reference_grad_magnitudes,
    reference_grads,
    tolerance_for,
    unfolded_depthwise,
    unfolded_separable,
)

import sepconv1d
from sepconv1d._shapes import resolve_padding

GROUPS = 16  # test ids per device
PER_GROUP = 12  # configurations per id

# make_activation's layouts, with the two that only this sweep draws.
SWEEP_LAYOUTS = (*LAYOUTS, "channel_slice", "batch_stride")


def _draw(rng: random.Random, device: str) -> dict:
    separable = rng.random() < 0.6
    xdtype = rng.choice([torch.float32, torch.float32, torch.bfloat16, torch.float16, torch.float64])
    if xdtype == torch.float64:
        wdtype = torch.float64
    elif xdtype == torch.float32:
        wdtype = torch.float32
    else:
        wdtype = rng.choice([xdtype, torch.float32])
    while True:
        k = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 16, 17, 31, 33, 63])
        stride = rng.choice([1, 1, 1, 2, 3])
        dilation = rng.choice([1, 1, 1, 2, 3, 5])
        length = rng.choice([1, 2, 5, 8, 15, 16, 17, 64, 100, 129, 210, 250, 257, 500, 513, 1031])
        mode = rng.choice(["int", "pair", "same", "valid", "causal"])
        span = dilation * (k - 1) + 1
        if mode == "same" and stride != 1:
            mode = "valid"
        padding = {"int": rng.randint(0, span), "pair": (rng.randint(0, span), rng.randint(0, span))}.get(mode, mode)
        pads = resolve_padding(padding, k, stride, dilation)
        if length + sum(pads) >= span:
            break
    return {
        "separable": separable,
        "batch": rng.choice([1, 2, 3, 4]),
        "cin": rng.choice([1, 3, 8, 16, 17, 32, 63, 64, 100]),
        "cout": rng.choice([1, 5, 16, 31, 64, 96, 129]),
        "k": k, "stride": stride, "dilation": dilation, "length": length, "padding": padding, "pads": pads,
        "xdtype": xdtype, "wdtype": wdtype,
        "layout": rng.choice(SWEEP_LAYOUTS), "grad_layout": rng.choice(SWEEP_LAYOUTS),
        "dw_bias": rng.random() < 0.6, "pw_bias": rng.random() < 0.6,
        "needs": [rng.random() < 0.7 for _ in range(5)],
        "tf32": device == "cuda" and xdtype == torch.float32 and rng.random() < 0.5,
    }


def _run(cfg: dict, device: str) -> None:
    b, cin, k = cfg["batch"], cfg["cin"], cfg["k"]
    cout = cfg["cout"] if cfg["separable"] else cin
    xdtype, wdtype = cfg["xdtype"], cfg["wdtype"]
    torch.backends.cudnn.allow_tf32 = cfg["tf32"]  # restored by the autouse fixture in conftest.py

    def param(*shape, scale=1.0):
        return (torch.randn(*shape, dtype=torch.float64) * scale).to(device, wdtype)

    x = make_activation(b, cin, cfg["length"], xdtype, device, cfg["layout"])
    dw = param(cin, k, scale=k ** -0.5)
    dwb = param(cin) if cfg["dw_bias"] else None
    pw = param(cout, cin, scale=cin ** -0.5) if cfg["separable"] else None
    pwb = param(cout) if cfg["separable"] and cfg["pw_bias"] else None
    inputs = [x, dw, dwb, pw, pwb]
    for t, need in zip(inputs, cfg["needs"], strict=True):
        if t is not None:
            t.requires_grad_(need)
    s, d, (pl, pr) = cfg["stride"], cfg["dilation"], cfg["pads"]
    if cfg["separable"]:
        def ref_fn(a, b_, c, d_, e):
            return unfolded_separable(a, b_, c, d_, e, s, pl, pr, d)
    else:
        def ref_fn(a, b_, c, d_, e):
            return unfolded_depthwise(a, b_, c, s, pl, pr, d)
    ref = ref_fn(*[t.detach() if t is not None else None for t in inputs])
    poison_allocator(device, ref.numel() * x.element_size())
    if cfg["separable"]:
        out = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, stride=s, padding=cfg["padding"], dilation=d)
    else:
        out = sepconv1d.depthwise_conv1d(x, dw, dwb, stride=s, padding=cfg["padding"], dilation=d)
    assert out.dtype == xdtype and out.shape == ref.shape
    tol = TF32_TOLERANCE if cfg["tf32"] and cfg["separable"] else tolerance_for(xdtype)
    assert_close_to_reference(out, ref, tol, "forward")

    leaves = [t for t in inputs if t is not None and t.requires_grad]
    if not leaves or out.numel() == 0:
        return
    grad_out = make_activation(b, cout, out.shape[2], xdtype, device, cfg["grad_layout"])
    poison_allocator(device, x.numel() * x.element_size())
    grads = iter(torch.autograd.grad(out, leaves, grad_out))
    refs = reference_grads(ref_fn, inputs, grad_out)
    mags = reference_grad_magnitudes(ref_fn, inputs, grad_out)
    for name, t, want, mag in zip(("x", "dw_weight", "dw_bias", "pw_weight", "pw_bias"), inputs, refs, mags,
                                  strict=True):
        if t is None or not t.requires_grad:
            continue
        got = next(grads)
        assert got.dtype == t.dtype and got.shape == t.shape, name
        gtol = TF32_TOLERANCE if cfg["tf32"] and cfg["separable"] else max(tolerance_for(t.dtype), tol)
        assert_close_to_reference(got, want, gtol, f"grad {name}", scale=mag)


@pytest.mark.parametrize("group", range(GROUPS))
def test_random_configurations_match_reference(device, group):
    for i in range(PER_GROUP):
        seed = 7919 * group + i
        cfg = _draw(random.Random(seed), device)
        try:
            _run(cfg, device)
        except AssertionError as err:
            shown = {key: value for key, value in cfg.items() if key != "pads"}
            raise AssertionError(f"configuration seed {seed}: {shown}: {err}") from err
