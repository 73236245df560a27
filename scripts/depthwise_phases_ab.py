"""A/B of dilated depthwise problems run as phase rows (SEPCONV1D_DW_PHASES=1) or on the tile
kernels' general path ("0"), in one process, by device time; the fused separable forward over
phase rows (SEPCONV1D_SEP_PHASES=1) against the dilated fused kernel ("0"); then the separable
training steps of the dilated model shapes with the library's own choice against
SEPCONV1D_DW_PHASES=0.

Each time is the median of three batches of calls on three rotating input sets, queued behind a
long `torch.cuda._sleep`, so host overhead does not enter. Correctness is the test suite's job
(test_dilated_kernels_as_phase_rows, test_dilated_backward_as_phase_rows).

    python3 -P scripts/depthwise_phases_ab.py [depthwise] [fused] [steps]   # default: all three
    # JSON to $OUT/depthwise_phases_ab.json (default /tmp)
"""

from __future__ import annotations

import json
import os
import sys

import torch

import sepconv1d

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _device_timing import with_env  # noqa: E402

ops = torch.ops.sepconv1d


def with_phases(value: str | None, fn, var: str = "SEPCONV1D_DW_PHASES"):
    return with_env(var, value, fn)


# (name, B, C, L, K, dilation)
DEPTHWISE = [
    ("QuartzNet-last", 32, 512, 835, 87, 2),
    ("K63 d2", 32, 512, 835, 63, 2),
    ("K31 d2", 32, 512, 835, 31, 2),
    ("K15 d2", 32, 512, 835, 15, 2),
    ("K9 d2", 32, 512, 835, 9, 2),
    ("K5 d2", 32, 512, 835, 5, 2),
    ("K3 d2", 32, 512, 835, 3, 2),
    ("K15 d4 L4096", 8, 512, 4096, 15, 4),
    ("K9 d4 L4096", 8, 512, 4096, 9, 4),
    ("SNAC K7 d9", 4, 96, 88200, 7, 9),
    ("K7 d3 L88200", 4, 96, 88200, 7, 3),
    ("K15 d9 L88200", 4, 96, 88200, 15, 9),
]

# (name, B, Cin, Cout, L, K, dilation, dtype)
FUSED_FORWARD = [
    ("QuartzNet-last TF32", 32, 512, 512, 835, 87, 2, torch.float32),
    ("QuartzNet-last fp16", 32, 512, 512, 835, 87, 2, torch.float16),
    ("QuartzNet-last bf16", 32, 512, 512, 835, 87, 2, torch.bfloat16),
    ("K31 d2 TF32", 32, 512, 512, 835, 31, 2, torch.float32),
    ("K31 d2 bf16", 32, 512, 512, 835, 31, 2, torch.bfloat16),
    ("K9 d2 bf16", 32, 512, 512, 835, 9, 2, torch.bfloat16),
    ("K9 d2 TF32", 32, 512, 512, 835, 9, 2, torch.float32),
    ("SNAC TF32", 4, 96, 96, 88200, 7, 9, torch.float32),
    ("K15 d4 bf16 L4096", 8, 256, 512, 4096, 15, 4, torch.bfloat16),
]

SEPARABLE = [
    ("QuartzNet-last TF32", 32, 512, 512, 835, 87, 2, torch.float32),
    ("QuartzNet-last fp16", 32, 512, 512, 835, 87, 2, torch.float16),
    ("SNAC TF32", 4, 96, 96, 88200, 7, 9, torch.float32),
]


def time_depthwise(name, b, c, length, k, d, dtype) -> dict:
    pad = (k - 1) * d // 2
    xs = [torch.randn(b, c, length, device="cuda", dtype=dtype) for _ in range(3)]
    w = torch.randn(c, k, device="cuda", dtype=dtype) / k**0.5
    bias = torch.randn(c, device="cuda", dtype=dtype)
    lo = length + 2 * pad - d * (k - 1)
    dys = [torch.randn(b, c, lo, device="cuda", dtype=dtype) for _ in range(3)]
    row = {"case": name, "dtype": str(dtype).split(".")[-1], "B": b, "C": c, "L": length, "K": k, "d": d}
    for label, value in (("phases", "1"), ("general", "0")):
        row[f"fwd_{label}"] = with_phases(value, lambda i: ops.depthwise_conv1d(xs[i], w, bias, 1, pad, pad, d))
        row[f"bwd_{label}"] = with_phases(
            value, lambda i: ops.depthwise_conv1d_backward(dys[i], xs[i], w, 1, pad, pad, d, True, True, True))
    row["fwd_gain"] = row["fwd_general"] / row["fwd_phases"]
    row["bwd_gain"] = row["bwd_general"] / row["bwd_phases"]
    print(f"{name:16s} {row['dtype']:9s} fwd phases {row['fwd_phases']:8.1f} general {row['fwd_general']:8.1f}"
          f" ({row['fwd_gain']:.2f}x)  bwd phases {row['bwd_phases']:8.1f} general {row['bwd_general']:8.1f}"
          f" ({row['bwd_gain']:.2f}x)", flush=True)
    return row


def time_separable(name, b, cin, cout, length, k, d, dtype) -> dict:
    pad = (k - 1) * d // 2
    xs = [torch.randn(b, cin, length, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3)]
    dw = (torch.randn(cin, 1, k, device="cuda", dtype=dtype) / k**0.5).requires_grad_(True)
    dwb = torch.randn(cin, device="cuda", dtype=dtype, requires_grad=True)
    pw = (torch.randn(cout, cin, 1, device="cuda", dtype=dtype) / cin**0.5).requires_grad_(True)
    pwb = torch.randn(cout, device="cuda", dtype=dtype, requires_grad=True)
    dy = torch.randn(b, cout, length, device="cuda", dtype=dtype)

    def step(i):
        y = sepconv1d.separable_conv1d(xs[i], dw, pw, dwb, pwb, padding=pad, dilation=d)
        return torch.autograd.grad(y, (xs[i], dw, dwb, pw, pwb), dy)

    row = {"case": name, "library": with_phases(None, step), "general": with_phases("0", step)}
    row["gain"] = row["general"] / row["library"]
    print(f"{name:22s} training step: library {row['library']:8.1f} us, general path {row['general']:8.1f} us"
          f" ({row['gain']:.2f}x)", flush=True)
    return row


def time_fused_forward(name, b, cin, cout, length, k, d, dtype) -> dict:
    pad = (k - 1) * d // 2
    xs = [torch.randn(b, cin, length, device="cuda", dtype=dtype) for _ in range(3)]
    dw = torch.randn(cin, k, device="cuda", dtype=dtype) / k**0.5
    dwb = torch.randn(cin, device="cuda", dtype=dtype)
    pw = torch.randn(cout, cin, device="cuda", dtype=dtype) / cin**0.5
    pwb = torch.randn(cout, device="cuda", dtype=dtype)
    tf32 = dtype == torch.float32

    def fwd(i):
        return ops.separable_conv1d(xs[i], dw, dwb, pw, pwb, 1, pad, pad, d, tf32)

    row = {"case": name, "phases": with_phases("1", fwd, "SEPCONV1D_SEP_PHASES"),
           "dilated": with_phases("0", fwd, "SEPCONV1D_SEP_PHASES")}
    row["gain"] = row["dilated"] / row["phases"]
    print(f"{name:22s} fused forward: phases {row['phases']:8.1f} us, dilated kernel {row['dilated']:8.1f} us"
          f" ({row['gain']:.2f}x)", flush=True)
    return row


def main() -> None:
    torch.backends.cudnn.allow_tf32 = True
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
               "depthwise": [], "fused_forward": [], "separable": []}
    parts = set(sys.argv[1:]) or {"depthwise", "fused", "steps"}
    for dtype in (torch.float32, torch.bfloat16) if "depthwise" in parts else ():
        for case in DEPTHWISE:
            results["depthwise"].append(time_depthwise(*case, dtype))
    for case in FUSED_FORWARD if "fused" in parts else ():
        results["fused_forward"].append(time_fused_forward(*case))
    for case in SEPARABLE if "steps" in parts else ():
        results["separable"].append(time_separable(*case))
    out = os.path.join(os.environ.get("OUT", "/tmp"), "depthwise_phases_ab.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    print("wrote", out)


if __name__ == "__main__":
    main()
