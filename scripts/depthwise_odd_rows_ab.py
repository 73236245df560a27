"""A/B of the depthwise kernels on channel-first rows that are not 16-byte aligned (odd lengths of
contiguous tensors, whose rows sit at shifts off the 16-byte grid), in one process:

  default   the register-direct kernels on co-aligned rows (compiled K: x, y / dy, x, dx rows at
            the same shift), the tensor-core backward's 2-byte rows staged in whole 16-byte units;
  main      SEPCONV1D_DW_REG_SHIFTED=0 SEPCONV1D_DW_TC_UNITS=0: both off (the kernels before);
  no_reg    SEPCONV1D_DW_REG_SHIFTED=0: compiled K then takes the tensor-core kernels for 16-bit
            rows, the tile kernels for float32;
  units8    SEPCONV1D_DW_TC_UNITS=8: the tensor-core backward's 4- and 8-byte rows in units too;
  aligned   the default at L rounded up to a multiple of 8 (every row 16-byte aligned), per output
            as a bound.

Forward (y) and backward (dx, dw, db), 'same' padding; triton.testing.do_bench medians over three
rotating input sets, us.

    python3 -P scripts/depthwise_odd_rows_ab.py     # JSON to $OUT/depthwise_odd_rows_ab.json
"""

from __future__ import annotations

import argparse
import json
import os

import torch
import triton.testing

import sepconv1d  # noqa: F401  (registers torch.ops.sepconv1d)

op = torch.ops.sepconv1d
# B, C, L, K, dtype: odd rows at compiled K (register-direct, or tensor-core / tile kernels), at
# run-time K (QuartzNet's 835 at K 63: the tensor-core kernels for 16-bit, the run-time-K and tile
# kernels for float32), 8-byte (Conformer L 500) and 4-byte rows (Citrinet L 250, FastConformer
# L 210: the short-row kernels).
CASES = [(32, 512, 4097, 9, "bf16"), (32, 512, 4097, 3, "bf16"), (32, 512, 4097, 9, "fp32"),
         (32, 512, 4097, 3, "fp32"), (32, 512, 3001, 5, "fp16"), (8, 512, 16383, 4, "fp32"),
         (32, 512, 835, 63, "fp16"), (32, 512, 835, 63, "fp32"), (32, 512, 835, 9, "fp32"),
         (32, 512, 500, 31, "bf16"), (32, 1024, 250, 11, "bf16"), (128, 512, 210, 9, "bf16")]
SWITCHES = ("SEPCONV1D_DW_REG_SHIFTED", "SEPCONV1D_DW_TC_UNITS")
SETTINGS = {"default": {}, "main": dict.fromkeys(SWITCHES, "0"), "no_reg": {SWITCHES[0]: "0"},
            "units8": {"SEPCONV1D_DW_TC_UNITS": "8"}}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def bench(fn) -> float:
    return round(triton.testing.do_bench(fn, warmup=25, rep=150, return_mode="median") * 1e3, 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="", help="B,C,L,K,dtype;... instead of CASES")
    args = ap.parse_args()
    cases = [tuple(int(v) if i < 4 else v for i, v in enumerate(c.split(","))) for c in args.cases.split(";")] \
        if args.cases else CASES
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "unit": "us", "what": "depthwise forward and backward (dx, dw, db), 'same'", "cases": []}
    for B, C, L, K, dt in cases:
        dtype = DTYPES[dt]
        pl = (K - 1) // 2
        row = {"B": B, "C": C, "L": L, "K": K, "dtype": dt}
        for length, aligned in ((L, False), ((L + 7) // 8 * 8, True)):
            xs = [torch.randn(B, C, length, device="cuda", dtype=dtype) for _ in range(3)]
            gs = [torch.randn_like(x) for x in xs]
            w = torch.randn(C, K, device="cuda", dtype=dtype)
            bias = torch.randn(C, device="cuda", dtype=dtype)
            turn = [0]

            def fwd(xs=xs, w=w, bias=bias, turn=turn, pl=pl, K=K):
                turn[0] = (turn[0] + 1) % 3
                return op.depthwise_conv1d(xs[turn[0]], w, bias, 1, pl, K - 1 - pl, 1)

            def bwd(xs=xs, gs=gs, w=w, turn=turn, pl=pl, K=K):
                turn[0] = (turn[0] + 1) % 3
                return op.depthwise_conv1d_backward(gs[turn[0]], xs[turn[0]], w, 1, pl, K - 1 - pl, 1,
                                                    True, True, True)

            for name, env in (SETTINGS.items() if not aligned else (("aligned", {}),)):
                for key in SWITCHES:
                    os.environ.pop(key, None)
                os.environ.update(env)
                row[f"fwd_{name}"] = bench(fwd)
                row[f"bwd_{name}"] = bench(bwd)
            del xs, gs
        for key in SWITCHES:
            os.environ.pop(key, None)
        scale = ((L + 7) // 8 * 8) / L  # the aligned rows' time per output, at L
        row["fwd_aligned_per_L"] = round(row["fwd_aligned"] / scale, 1)
        row["bwd_aligned_per_L"] = round(row["bwd_aligned"] / scale, 1)
        print(json.dumps(row), flush=True)
        out["cases"].append(row)
    with open(os.path.join(os.environ.get("OUT", "."), "depthwise_odd_rows_ab.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
