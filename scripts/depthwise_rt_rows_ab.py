"""A/B of the run-time-K channel-first forward's row groups wherever they fit
(SEPCONV1D_DW_RT_ROWS=1: rows of at most 64 items, several rows per block) against one row per
block ("0") and the default rule (dwk::rt_row_group, read off the first two), in one process. Timed:
the depthwise forward, dx (the forward of dy with the flipped kernel from K 33), and the separable
TF32 forward + backward, whose backward recomputes h with this forward; for dilated cases also the
forward over phase rows or not (SEPCONV1D_DW_PHASES=1 / 0, `fwd_phases` / `fwd_no_phases`; the
default, use_phases, is column `fwd_rule`). A device-to-device copy of the forward's bytes (x read,
y written) is the bandwidth floor.

With --ystage each setting is also timed with y stored straight from the registers
(SEPCONV1D_DW_YSTAGE=0, columns `_ydirect`) against the default, which stages y rows that are
not 16-byte aligned through shared memory, and with y staged wherever the kernel can ("2",
`_yforced`: one item per thread in one row per block too). --cases 0,2,5 times those rows only.

Times are triton.testing.do_bench medians (25 warm-up, 200 ms of calls) over three rotating input
sets. Correctness is the test suite's job (test_run_time_kernel_forward_of_short_rows).

    python3 -P scripts/depthwise_rt_rows_ab.py      # JSON to $OUT/depthwise_rt_rows_ab.json (default .)
"""

from __future__ import annotations

import argparse
import json
import os

import torch
import triton.testing

import sepconv1d

op = torch.ops.sepconv1d
CASES = [  # B, C, L, K, dilation (float32, 'same' padding)
    (32, 512, 835, 63, 1), (32, 512, 835, 87, 2), (32, 512, 835, 33, 1), (32, 512, 1024, 63, 1),
    (32, 512, 418, 44, 1), (32, 1024, 250, 33, 1), (128, 512, 210, 41, 1), (32, 512, 8192, 63, 1),
    (32, 512, 835, 63, 2), (32, 512, 4096, 63, 2), (32, 512, 835, 33, 2), (32, 512, 835, 48, 2),
    (32, 512, 4096, 33, 2), (32, 512, 501, 63, 1), (32, 512, 1500, 63, 1), (32, 512, 835, 56, 2),
    (32, 512, 835, 41, 1), (32, 512, 4097, 127, 1), (32, 512, 1501, 63, 1), (32, 512, 2047, 33, 1),
    (32, 512, 3001, 63, 1), (32, 512, 1029, 41, 1),
]
SETTINGS = (("1", ""), ("0", "_one_row"), ("", "_rule"))  # SEPCONV1D_DW_RT_ROWS, column suffix
VAR = "SEPCONV1D_DW_RT_ROWS"
PHASES = "SEPCONV1D_DW_PHASES"
YSTAGE = "SEPCONV1D_DW_YSTAGE"


def bench(fn) -> float:
    return round(triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3, 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ystage", action="store_true", help="also time y stored directly (_ydirect) and staged everywhere (_yforced)")
    ap.add_argument("--cases", default="", help="comma-separated indices into CASES (default all)")
    args = ap.parse_args()
    cases = [CASES[int(i)] for i in args.cases.split(",")] if args.cases else CASES
    stagings = (("", ""), ("0", "_ydirect"), ("2", "_yforced")) if args.ystage else (("", ""),)
    torch.backends.cudnn.allow_tf32 = True
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "unit": "us", "cases": []}
    for B, C, L, K, d in cases:
        pl = d * (K - 1) // 2
        pr = d * (K - 1) - pl
        xs = [torch.randn(B, C, L, device="cuda") for _ in range(3)]
        w = torch.randn(C, K, device="cuda")
        ys = [torch.empty_like(xs[0]) for _ in range(3)]
        gs = [torch.randn_like(op.depthwise_conv1d(xs[0], w, None, 1, pl, pr, d)) for _ in range(3)]
        pw = torch.randn(C, C, device="cuda") / C ** 0.5
        sx = [x.clone().requires_grad_(True) for x in xs]
        sw = w.clone().requires_grad_(True)
        spw = pw.clone().requires_grad_(True)
        turn = [0]

        def nxt(turn=turn) -> int:
            turn[0] = (turn[0] + 1) % 3
            return turn[0]

        def fwd(xs=xs, w=w, pl=pl, pr=pr, d=d, nxt=nxt):
            j = nxt()
            return op.depthwise_conv1d(xs[j], w, None, 1, pl, pr, d)

        def dx(xs=xs, gs=gs, w=w, pl=pl, pr=pr, d=d, nxt=nxt):
            j = nxt()
            return op.depthwise_conv1d_backward(gs[j], xs[j], w, 1, pl, pr, d, True, False, False)

        def sep(sx=sx, sw=sw, spw=spw, gs=gs, pl=pl, pr=pr, d=d, nxt=nxt):
            j = nxt()
            y = sepconv1d.separable_conv1d(sx[j], sw, spw, padding=(pl, pr), dilation=d)
            return torch.autograd.grad(y, (sx[j], sw, spw), gs[j])

        def copy(xs=xs, ys=ys, nxt=nxt):
            j = nxt()
            ys[j].copy_(xs[j])

        row = {"B": B, "C": C, "L": L, "K": K, "dilation": d, "copy": bench(copy)}
        for name, fn in (("fwd", fwd), ("dx", dx), ("sep_tf32_fwd_bwd", sep)):
            for groups, suffix in SETTINGS:  # "" is the default rule (dwk::rt_row_group)
                for staged, ysuffix in stagings:  # "" is the default (staged where unaligned)
                    os.environ[VAR] = groups
                    os.environ[YSTAGE] = staged
                    row[name + suffix + ysuffix] = bench(fn)
        os.environ.pop(VAR, None)
        os.environ.pop(YSTAGE, None)
        if d > 1:  # the forward over phase rows ("1") or not ("0"); the rule is column fwd_rule
            for phases in ("1", "0"):
                os.environ[PHASES] = phases
                row["fwd_phases" if phases == "1" else "fwd_no_phases"] = bench(fwd)
            os.environ.pop(PHASES, None)
        print(json.dumps(row), flush=True)
        out["cases"].append(row)
        del xs, ys, gs, sx
    with open(os.path.join(os.environ.get("OUT", "."), "depthwise_rt_rows_ab.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
