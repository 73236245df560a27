"""A/B of the run-time-K channel-first tile backward (float32 rows past the short-row kernels), in
one process: dx as the forward of dy with the flipped kernel (SEPCONV1D_DW_DX_FORWARD, default on
from K 33, or K 10 with dx alone) and the dw / db partials in registers (SEPCONV1D_DW_BWD_RT_REGS,
default on), each against its "0", with the forward beside them for scale.

Times are triton.testing.do_bench medians (25 warm-up, 200 ms of calls) over three rotating input
sets. Correctness is the test suite's job (test_run_time_kernel_backward_of_long_rows).

    python3 -P scripts/depthwise_rt_bwd_ab.py      # JSON to $OUT/depthwise_rt_bwd_ab.json (default .)
"""

from __future__ import annotations

import json
import os

import torch
import triton.testing

import sepconv1d  # noqa: F401  (registers torch.ops.sepconv1d)

op = torch.ops.sepconv1d
CASES = [  # B, C, L, K, dilation (float32, 'same' padding)
    (32, 512, 8192, 63, 1), (32, 512, 8192, 31, 1), (32, 512, 8192, 15, 1), (32, 512, 8192, 7, 1),
    (32, 512, 835, 87, 2), (32, 512, 835, 63, 1), (32, 512, 4096, 33, 1), (32, 512, 1670, 75, 1),
    (32, 512, 4096, 127, 1),
]
VAR = "SEPCONV1D_DW_BWD_RT_REGS"
VAR_DX = "SEPCONV1D_DW_DX_FORWARD"


def main() -> None:
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "unit": "us", "cases": []}
    for B, C, L, K, d in CASES:
        pl = d * (K - 1) // 2
        pr = d * (K - 1) - pl
        xs = [torch.randn(B, C, L, device="cuda") for _ in range(3)]
        w = torch.randn(C, K, device="cuda")
        gs = [torch.randn_like(op.depthwise_conv1d(xs[0], w, None, 1, pl, pr, d)) for _ in range(3)]
        turn = [0]

        def call(mask, xs=xs, gs=gs, w=w, pl=pl, pr=pr, d=d, turn=turn):
            turn[0] = (turn[0] + 1) % 3
            j = turn[0]
            if mask is None:
                return op.depthwise_conv1d(xs[j], w, None, 1, pl, pr, d)
            return op.depthwise_conv1d_backward(gs[j], xs[j], w, 1, pl, pr, d, *mask)

        row = {"B": B, "C": C, "L": L, "K": K, "dilation": d}
        dx, wb, both = (True, False, False), (False, True, True), (True, True, True)
        # (column, gradients, SEPCONV1D_DW_BWD_RT_REGS, SEPCONV1D_DW_DX_FORWARD)
        for name, mask, regs, fwd in (("fwd", None, "1", "1"), ("dx", dx, "1", "1"), ("dx_fused", dx, "1", "0"),
                                      ("dwdb", wb, "1", "1"), ("dwdb_per_chunk", wb, "0", "1"),
                                      ("all", both, "1", "1"), ("all_dx_fused", both, "1", "0"),
                                      ("all_per_chunk_dx_fused", both, "0", "0")):
            os.environ[VAR] = regs
            os.environ[VAR_DX] = fwd
            row[name] = round(triton.testing.do_bench(lambda mask=mask: call(mask), warmup=25, rep=200,
                                                      return_mode="median") * 1e3, 1)
        os.environ.pop(VAR, None)
        os.environ.pop(VAR_DX, None)
        print(json.dumps(row), flush=True)
        out["cases"].append(row)
        del xs, gs
    with open(os.path.join(os.environ.get("OUT", "."), "depthwise_rt_bwd_ab.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
