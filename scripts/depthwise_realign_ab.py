"""A/B of the depthwise kernels where x and y rows sit at different shifts off the 16-byte grid
(a slice x[..., s:], 'valid' outputs), in one process:

  default   the register-direct kernels, x realigned to y's grid in registers (the forward's
            kRealign; the backward's kRealignX where dy and dx share their shift, i.e. the slices),
            where they pay (reg_realign_fwd_pays / reg_realign_bwd_pays: the forward in half
            types, the backward in float32 and half types to K 5), else as off;
  off       SEPCONV1D_DW_REG_REALIGN=0: the tensor-core kernels (16-bit) or the tile kernels
            (float32), as before;
  bound     the same shapes with x and y co-aligned (a contiguous x of y's length, 'same'): the
            register-direct kernels without the realignment.

Forward (y), and for the slices the backward (dx, dw, db, columns bwd_*); device time
(_device_timing.with_env: calls queued behind a sleep, three rotating input sets), us; GB/s of the
forward's x and y.

    python3 -P scripts/depthwise_realign_ab.py     # JSON to $OUT/depthwise_realign_ab.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

import sepconv1d  # noqa: F401  (registers torch.ops.sepconv1d)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _device_timing import with_env  # noqa: E402

op = torch.ops.sepconv1d
# B, C, L (y's length), K, dtype, form: "slice" is x[..., 1:] of rows of L + 1 with 'same' padding;
# "valid" a contiguous x of L + K - 1 (y shorter by K - 1: rows at other shifts unless K - 1 is a
# multiple of the elements per 16 bytes), as a streaming step over cached left context writes it.
CASES = [(32, 512, 4096, 9, "bf16", "slice"), (32, 512, 4096, 3, "bf16", "slice"),
         (32, 512, 3001, 5, "fp16", "slice"), (32, 512, 4096, 9, "fp32", "slice"),
         (32, 512, 4096, 3, "fp32", "slice"), (32, 512, 4096, 3, "bf16", "valid"),
         (8, 5120, 2048, 4, "bf16", "valid"), (8, 512, 16384, 4, "fp32", "valid")]
SWITCH = "SEPCONV1D_DW_REG_REALIGN"
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def inputs(B, C, L, K, dtype, form):
    """Three rotating x sets and the padding (left, right) giving y rows of L."""
    if form == "slice":
        return [torch.randn(B, C, L + 1, device="cuda", dtype=dtype)[..., 1:] for _ in range(3)], \
            ((K - 1) // 2, K - 1 - (K - 1) // 2)
    if form == "valid":
        return [torch.randn(B, C, L + K - 1, device="cuda", dtype=dtype) for _ in range(3)], (0, 0)
    return [torch.randn(B, C, L, device="cuda", dtype=dtype) for _ in range(3)], \
        ((K - 1) // 2, K - 1 - (K - 1) // 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="", help="B,C,L,K,dtype,form;... instead of CASES")
    args = ap.parse_args()
    cases = [tuple(int(v) if i < 4 else v for i, v in enumerate(c.split(","))) for c in args.cases.split(";")] \
        if args.cases else CASES
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "unit": "us", "cases": [],
           "what": "depthwise forward (and the slices' backward: dx, dw, db), x and y rows at different shifts"}
    for B, C, L, K, dt, form in cases:
        dtype = DTYPES[dt]
        row = {"B": B, "C": C, "L": L, "K": K, "dtype": dt, "form": form}
        for name, shape_form, value in (("default", form, None), ("off", form, "0"), ("bound", "same", None)):
            xs, (pl, pr) = inputs(B, C, L, K, dtype, shape_form)
            w = torch.randn(C, K, device="cuda", dtype=dtype)
            bias = torch.randn(C, device="cuda", dtype=dtype)

            def fwd(i, xs=xs, w=w, bias=bias, pl=pl, pr=pr):
                return op.depthwise_conv1d(xs[i], w, bias, 1, pl, pr, 1)

            row[name] = round(with_env(SWITCH, value, fwd), 1)
            nbytes = (xs[0].shape[-1] + L) * B * C * xs[0].element_size()
            row[f"{name}_gbps"] = round(nbytes / row[name] / 1e3, 1)
            if form == "slice":
                gs = [torch.randn(B, C, L, device="cuda", dtype=dtype) for _ in range(3)]

                def bwd(i, xs=xs, gs=gs, w=w, pl=pl, pr=pr):
                    return op.depthwise_conv1d_backward(gs[i], xs[i], w, 1, pl, pr, 1, True, True, True)

                row[f"bwd_{name}"] = round(with_env(SWITCH, value, bwd), 1)
                del gs
            del xs
        print(json.dumps(row), flush=True)
        out["cases"].append(row)
    with open(os.path.join(os.environ.get("OUT", "."), "depthwise_realign_ab.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
