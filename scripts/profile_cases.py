"""Run named benchmark cases a few times each, for a profiler (Nsight Compute) to capture.

    ncu --clock-control none -k regex:'dw_|sep_' python3 -P scripts/profile_cases.py dw_fwd_bf16_k3

Each case builds its inputs once and calls the operator `--reps` times (default 2), so
`ncu --launch-skip` can skip the first (cold) launch. `--list` prints the case names.
"""

from __future__ import annotations

import argparse

import torch

import sepconv1d.functional as F


def _dw(dtype, k, cl=False, bwd=False, b=32, c=512, length=8192, padding="same", wdtype=None, sliced=False):
    def make():
        if cl:
            x = torch.randn(b, length, c, device="cuda", dtype=dtype).transpose(1, 2)
        elif sliced:  # x[..., 1:]: rows at a shift other than y's
            x = torch.randn(b, c, length + 1, device="cuda", dtype=dtype)[..., 1:]
        else:
            x = torch.randn(b, c, length, device="cuda", dtype=dtype)
        w = torch.randn(c, k, device="cuda", dtype=wdtype or dtype)
        bias = torch.randn(c, device="cuda", dtype=wdtype or dtype)
        if not bwd:
            return lambda: F.depthwise_conv1d(x, w, bias, padding=padding)
        x.requires_grad_(True)
        w.requires_grad_(True)
        bias.requires_grad_(True)
        y = F.depthwise_conv1d(x, w, bias, padding=padding)
        dy = torch.randn_like(y)
        return lambda: torch.autograd.grad(y, (x, w, bias), dy, retain_graph=True)

    return make


def _sep(dtype, tf32=True, bwd=False, b=32, cin=256, cout=512, length=4096, k=9, stride=1, dilation=1):
    pad = dilation * (k // 2)  # 'same' for odd K (and the usual padding under stride 2)

    def make():
        torch.backends.cudnn.allow_tf32 = tf32
        x = torch.randn(b, cin, length, device="cuda", dtype=dtype, requires_grad=bwd)
        dw = torch.randn(cin, k, device="cuda", dtype=dtype, requires_grad=bwd)
        pw = torch.randn(cout, cin, device="cuda", dtype=dtype, requires_grad=bwd) / cin**0.5
        kw = dict(stride=stride, padding=pad, dilation=dilation)
        if not bwd:
            return lambda: F.separable_conv1d(x, dw, pw, **kw)
        y = F.separable_conv1d(x, dw, pw, **kw)
        dy = torch.randn_like(y)
        return lambda: torch.autograd.grad(y, (x, dw, pw), dy, retain_graph=True)

    return make


CASES = {
    "dw_fwd_f32_k3": _dw(torch.float32, 3),
    "dw_fwd_bf16_k3": _dw(torch.bfloat16, 3),
    "dw_fwd_bf16_k9": _dw(torch.bfloat16, 9),
    "dw_bwd_bf16_k9": _dw(torch.bfloat16, 9, bwd=True),
    "dw_fwd_bf16_cl_k3": _dw(torch.bfloat16, 3, cl=True),
    "dw_bwd_f32_cl_k9": _dw(torch.float32, 9, cl=True, bwd=True),
    # float32 backward on odd rows (4-byte aligned: the tile backward) against aligned rows.
    "dw_bwd_f32_k9_l4097": _dw(torch.float32, 9, bwd=True, length=4097),
    "dw_bwd_f32_k9_l4096": _dw(torch.float32, 9, bwd=True, length=4096),
    # 16-bit backward on odd rows (the register-direct kernel at a shift) against aligned rows
    # (L 4104: the same five items per row).
    "dw_bwd_bf16_k9_l4097": _dw(torch.bfloat16, 9, bwd=True, length=4097),
    "dw_bwd_bf16_k9_l4104": _dw(torch.bfloat16, 9, bwd=True, length=4104),
    # 16-bit forward on a slice (x and y rows at different shifts: the tensor-core kernel).
    "dw_fwd_bf16_k9_slice": _dw(torch.bfloat16, 9, length=4097, sliced=True),
    "dw_fwd_bf16_k9_l4096": _dw(torch.bfloat16, 9, length=4096),
    "dw_fwd_f32_k63": _dw(torch.float32, 63),
    "dw_fwd_bf16_k63": _dw(torch.bfloat16, 63),
    "dw_bwd_bf16_k63": _dw(torch.bfloat16, 63, bwd=True),
    # Mamba-2.8B's conv1d: short rows (2048), bf16 x with fp32 weights
    "dw_fwd_mamba": _dw(torch.bfloat16, 4, b=8, c=5120, length=2048, padding="causal", wdtype=torch.float32),
    "dw_bwd_mamba": _dw(torch.bfloat16, 4, b=8, c=5120, length=2048, padding="causal", wdtype=torch.float32, bwd=True),
    # The same in Mamba's own layout, (B, L, D) transposed: the channel-last register-direct
    # kernels, ~12% behind the channel-first ones in v62 (forward 98 against 86 us, backward 151
    # against 137 on the H200).
    "dw_fwd_mamba_cl": _dw(
        torch.bfloat16, 4, cl=True, b=8, c=5120, length=2048, padding="causal", wdtype=torch.float32
    ),
    "dw_bwd_mamba_cl": _dw(
        torch.bfloat16, 4, cl=True, b=8, c=5120, length=2048, padding="causal", wdtype=torch.float32, bwd=True
    ),
    # Speech models' short rows on the rows kernels (depthwise_rows.cuh): FastConformer, Conformer.
    "dw_fwd_fastconf_bf16": _dw(torch.bfloat16, 9, b=128, c=512, length=210, padding="causal"),
    "dw_bwd_fastconf_bf16": _dw(torch.bfloat16, 9, b=128, c=512, length=210, padding="causal", bwd=True),
    "dw_fwd_conformer_bf16": _dw(torch.bfloat16, 31, b=32, c=512, length=500),
    "dw_fwd_citrinet_f32": _dw(torch.float32, 11, b=32, c=1024, length=250),
    "sep_fwd_bf16": _sep(torch.bfloat16),
    "sep_fwd_conformer_bf16": _sep(torch.bfloat16, cin=512, cout=512, length=500, k=31),
    "sep_fwd_fastconf_bf16": _sep(torch.bfloat16, b=128, cin=512, cout=512, length=210),
    "sep_fwd_tf32": _sep(torch.float32),
    "sep_fwd_citrinet_tf32": _sep(torch.float32, cin=1024, cout=1024, length=250, k=11),
    "sep_fwd_qnfirst_tf32": _sep(torch.float32, cin=64, cout=256, length=1670, k=33, stride=2),
    "sep_fwd_qnlast_tf32": _sep(torch.float32, cin=512, cout=512, length=835, k=87, dilation=2),
    "sep_bwd_bf16": _sep(torch.bfloat16, bwd=True),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list or not args.cases:
        print("\n".join(CASES))
        return
    for name in args.cases:
        fn = CASES[name]()
        for _ in range(args.reps):
            fn()
        torch.cuda.synchronize()
        print(name, "done", flush=True)


if __name__ == "__main__":
    main()
