"""Which side bounds the run-time-K forward on float32 rows that are not 16-byte aligned: x's
loads or y's stores. Times each case four ways in one process: x and y unaligned (contiguous rows
of odd length), x aligned (a view of rows padded to a 16-byte multiple), y aligned (padding that
makes the output length a multiple of 4), both; each with the default rule for row groups,
groups forced (SEPCONV1D_DW_RT_ROWS=1) and one row per block ("0").

Times are triton.testing.do_bench medians over three rotating input sets.

    python3 -P scripts/depthwise_align_probe.py     # JSON to $OUT/depthwise_align_probe.json (default .)
    python3 -P scripts/depthwise_align_probe.py --cases "32,512,4097,9;32,512,3001,5" --default-only

--backward times the backward instead (dx, dw and db of float32 and bf16, 'same'), at L and at L
rounded up to a multiple of 8 (every row 16-byte aligned), to size what rows that are not aligned
cost it; the JSON then goes to depthwise_align_probe_bwd.json.
"""

from __future__ import annotations

import argparse
import json
import os

import torch
import triton.testing

import sepconv1d  # noqa: F401  (registers torch.ops.sepconv1d)

op = torch.ops.sepconv1d
CASES = [(32, 512, 835, 33), (32, 512, 835, 63), (32, 1024, 250, 33), (128, 512, 210, 41), (32, 512, 418, 44)]
ROWS = (("", ""), ("1", "_groups"), ("0", "_one_row"))  # SEPCONV1D_DW_RT_ROWS, column suffix


def bench(fn) -> float:
    return round(triton.testing.do_bench(fn, warmup=25, rep=150, return_mode="median") * 1e3, 1)


def parse_cases(text: str) -> list[tuple[int, ...]]:
    return [tuple(int(v) for v in c.split(",")) for c in text.split(";")] if text else CASES


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="", help="B,C,L,K;B,C,L,K;... instead of CASES")
    ap.add_argument("--default-only", action="store_true", help="the default row-group rule only")
    ap.add_argument("--backward", action="store_true", help="time the backward at L and at L rounded up to 8")
    args = ap.parse_args()
    if args.backward:
        backward(args)
        return
    cases = parse_cases(args.cases)
    rows_settings = ROWS[:1] if args.default_only else ROWS
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "unit": "us", "cases": []}
    for B, C, L, K in cases:
        wide = (L + 3) // 4 * 4 + 4
        xs_aligned = [torch.randn(B, C, wide, device="cuda")[..., :L] for _ in range(3)]
        xs_odd = [torch.randn(B, C, L, device="cuda") for _ in range(3)]
        w = torch.randn(C, K, device="cuda")
        pl = (K - 1) // 2
        pr_odd = K - 1 - pl               # output length L
        pr_aligned = pr_odd + (-L) % 4    # output length L rounded up to 4
        row = {"B": B, "C": C, "L": L, "K": K}
        for rows, suffix in rows_settings:
            os.environ["SEPCONV1D_DW_RT_ROWS"] = rows
            for name, xs, pr in (("xun_yun", xs_odd, pr_odd), ("xal_yun", xs_aligned, pr_odd),
                                 ("xun_yal", xs_odd, pr_aligned), ("xal_yal", xs_aligned, pr_aligned)):
                turn = [0]

                def fwd(xs=xs, pr=pr, turn=turn, w=w, pl=pl):
                    turn[0] = (turn[0] + 1) % 3
                    return op.depthwise_conv1d(xs[turn[0]], w, None, 1, pl, pr, 1)

                row[name + suffix] = bench(fwd)
        os.environ.pop("SEPCONV1D_DW_RT_ROWS", None)
        print(json.dumps(row), flush=True)
        out["cases"].append(row)
    with open(os.path.join(os.environ.get("OUT", "."), "depthwise_align_probe.json"), "w") as f:
        json.dump(out, f, indent=1)


def backward(args) -> None:
    cases = parse_cases(args.cases)
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "unit": "us", "what": "depthwise_conv1d_backward (dx, dw, db), 'same'", "cases": []}
    for B, C, L, K in cases:
        row = {"B": B, "C": C, "L": L, "K": K}
        pl = (K - 1) // 2
        for dtype, tag in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
            for length, name in ((L, "L"), ((L + 7) // 8 * 8, "L8")):
                xs = [torch.randn(B, C, length, device="cuda", dtype=dtype) for _ in range(3)]
                gs = [torch.randn_like(x) for x in xs]
                w = torch.randn(C, K, device="cuda", dtype=dtype)
                turn = [0]

                def bwd(xs=xs, gs=gs, w=w, turn=turn, pl=pl, K=K):
                    turn[0] = (turn[0] + 1) % 3
                    return op.depthwise_conv1d_backward(gs[turn[0]], xs[turn[0]], w, 1, pl, K - 1 - pl, 1,
                                                        True, True, True)
                row[f"{tag}_{name}"] = bench(bwd)
            # time per output element, aligned against not
            row[f"{tag}_ratio"] = round(row[f"{tag}_L"] / row[f"{tag}_L8"] * ((L + 7) // 8 * 8) / L, 3)
        print(json.dumps(row), flush=True)
        out["cases"].append(row)
    with open(os.path.join(os.environ.get("OUT", "."), "depthwise_align_probe_bwd.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
