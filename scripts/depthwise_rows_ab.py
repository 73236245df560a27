"""A/B of the short-row depthwise kernels (SEPCONV1D_DW_ROWS=1) against the kernels the same
problems take without them ("0"), in one process, by device time; then the separable training steps
of the short-row model shapes with the library's own choice against SEPCONV1D_DW_ROWS=0.

Each time is the median of three batches of calls on three rotating input sets, queued behind a
long `torch.cuda._sleep`, so host overhead does not enter. Before timing, each depthwise case is
checked against a float64 reference with both settings (a quick guard; the test suite's
test_short_rows_kernel is the real check).

    python3 -P scripts/depthwise_rows_ab.py [depthwise] [steps] [db] [words] [words16] [words_bwd] [span]
                                            [specialized] [rule] [rule_mma] [rule_mma_ab] [mma_odd]
                                            [mma] [mma_bwd] [mma_dw] [steps_mma_dw] [mma_bwd_odd]
    # default: the first two
    # db: the rows forward double-buffered (SEPCONV1D_DW_ROWS_DB=1) against single-buffered (=0)
    # words: the rows forward by word copies where rows are word-aligned (SEPCONV1D_DW_ROWS_WORDS=1)
    #   against the library's other rows forwards (=0)
    # words16: the words forward copying and storing 16 bytes at a time between the row ends where a
    #   unit's rows allow (SEPCONV1D_DW_ROWS_WORDS16=1) against 4-byte words only (=0)
    # mma: the words forward's arithmetic on the tensor cores (SEPCONV1D_DW_ROWS_MMA=1, where compiled:
    #   K >= 11) against the CUDA cores (=0), bf16 and fp16, at the cases below and more tap counts
    #   on word-aligned rows (MMA_EXTRA)
    # mma_bwd: the words backward's dx on the tensor cores (SEPCONV1D_DW_ROWS_MMA_BWD=1) against the
    #   CUDA cores (=0), all three gradients, the same cases as mma
    # words_bwd: the rows backward by word copies (SEPCONV1D_DW_ROWS_WORDS_BWD=1) against the
    #   rows backward by 16-byte staging (=0), all three gradients
    # span: the rows forward and backward (rows forced on) at the library's outputs per warp pass
    #   against SEPCONV1D_DW_ROWS_SPAN = 256, 1024 and 2048
    # rule: as depthwise, at ten more lengths of 257-1024 (RULE; with depthwise, the rows rules' table)
    # rule_mma: as depthwise, half types only, at RULE_MMA (rows of 257-2048 at K 12-31)
    # rule_mma_ab: the backward with the library's routing at SEPCONV1D_DW_ROWS_MMA_BWD=1 (the rows
    #   rule that the tensor-core dx widens) against =0 (the rule without it), at RULE_MMA
    # mma_odd: at MMA_ODD (odd lengths: the rows forward that is not the words kernel), the rows
    #   forward at SEPCONV1D_DW_ROWS_MMA=1 against =0, then as depthwise (rows against the others)
    # mma_bwd_odd: at MMA_ODD and MMA_ODD_BWD, the other rows backward (rows forced, the tensor cores
    #   at every length: SEPCONV1D_DW_ROWS_MMA=1) at SEPCONV1D_DW_ROWS_MMA_BWD=1 against =0 and at
    #   SEPCONV1D_DW_ROWS_MMA_DW=1 against =0, then as depthwise (rows against the others)
    # mma_dw: the words backward's dw / db beside the tensor-core dx on the tensor cores too
    #   (SEPCONV1D_DW_ROWS_MMA_DW unset) against the CUDA cores (=0), rows forced, bf16 and fp16
    # steps_mma_dw: the separable training steps at SEPCONV1D_DW_ROWS_MMA_DW unset against =0
    # steps_mma_bwd: the separable training steps at SEPCONV1D_DW_ROWS_MMA_BWD unset against =0
    # specialized: the rows forward and backward (rows forced on) with K 3, 5, 7, 9, 11 and 31
    #   compiled exactly (SEPCONV1D_DW_SPECIALIZED=1) against padded to 4, 8, 12 and 32 (=0); K 15
    #   is a control
    # JSON to $OUT/depthwise_rows_ab.json (default /tmp)
"""

from __future__ import annotations

import json
import os
import sys

import torch
import torch.nn.functional as F

import sepconv1d

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _device_timing import with_env  # noqa: E402

ops = torch.ops.sepconv1d


def with_rows(value: str | None, fn, timed: bool = True):
    return with_env("SEPCONV1D_DW_ROWS", value, fn, timed)


# (name, B, C, L, K, pad_left, pad_right)
DEPTHWISE = [
    ("FastConformer", 128, 512, 210, 9, 8, 0),
    ("Citrinet", 32, 1024, 250, 11, 5, 5),
    ("Conformer", 32, 512, 500, 31, 15, 15),
    ("QuartzNet-len K9", 32, 512, 835, 9, 4, 4),
    ("Vocos K7", 16, 512, 1024, 7, 3, 3),
    ("L64 K3", 512, 512, 64, 3, 1, 1),
    ("L256 K5", 128, 512, 256, 5, 2, 2),
    ("L1023 K9", 16, 512, 1023, 9, 4, 4),
    ("L2048 K9", 8, 512, 2048, 9, 4, 4),
    ("L2047 K15", 8, 512, 2047, 15, 7, 7),
]

# Word-aligned rows at tap counts around and above the tensor-core rule's K 11 (the mma part).
MMA_EXTRA = [
    ("L256 K11", 128, 512, 256, 11, 5, 5),
    ("L500 K13", 32, 512, 500, 13, 6, 6),
    ("L500 K15", 32, 512, 500, 15, 7, 7),
    ("L250 K21", 64, 512, 250, 21, 10, 10),
    ("L1000 K15", 16, 512, 1000, 15, 7, 7),
    ("L512 K31", 32, 512, 512, 31, 15, 15),
    ("L1024 K31", 16, 512, 1024, 31, 15, 15),
]

# Lengths of 257-1024 at compiled and run-time K, aligned and not: with DEPTHWISE, the table the rows
# backward rule was set from (csrc/NOTES.md, fifty-first session).
RULE = [
    ("L512 K9", 32, 512, 512, 9, 4, 4),
    ("L1024 K9", 16, 512, 1024, 9, 4, 4),
    ("L512 K3", 32, 512, 512, 3, 1, 1),
    ("L1024 K5", 16, 512, 1024, 5, 2, 2),
    ("L500 K9", 32, 512, 500, 9, 4, 4),
    ("L500 K11", 32, 512, 500, 11, 5, 5),
    ("L500 K15", 32, 512, 500, 15, 7, 7),
    ("L835 K15", 32, 512, 835, 15, 7, 7),
    ("L300 K7", 64, 512, 300, 7, 3, 3),
    ("L1000 K3", 16, 512, 1000, 3, 1, 1),
]

# Half-type rows of 257-2048 at K 12-31, aligned and not, where the rows backward's dx runs on the
# tensor cores (rule_mma: rows against the library's other kernels, bf16 and fp16; fifty-seventh session).
RULE_MMA = [
    ("Conformer", 32, 512, 500, 31, 15, 15),
    ("L512 K31", 32, 512, 512, 31, 15, 15),
    ("L1000 K31", 16, 512, 1000, 31, 15, 15),
    ("L1024 K31", 16, 512, 1024, 31, 15, 15),
    ("L835 K31", 16, 512, 835, 31, 15, 15),
    ("L300 K21", 64, 512, 300, 21, 10, 10),
    ("L500 K21", 32, 512, 500, 21, 10, 10),
    ("L768 K21", 16, 512, 768, 21, 10, 10),
    ("L300 K13", 64, 512, 300, 13, 6, 6),
    ("L500 K13", 32, 512, 500, 13, 6, 6),
    ("L500 K15", 32, 512, 500, 15, 7, 7),
    ("L512 K15", 32, 512, 512, 15, 7, 7),
    ("L835 K15", 32, 512, 835, 15, 7, 7),
    ("L1000 K15", 16, 512, 1000, 15, 7, 7),
    ("L1500 K21", 8, 512, 1500, 21, 10, 10),
    ("L2047 K15", 8, 512, 2047, 15, 7, 7),
    ("L2048 K15", 8, 512, 2048, 15, 7, 7),
    ("L2048 K31", 8, 512, 2048, 31, 15, 15),
]

# Half-type rows the words kernels do not take (odd lengths), K 11-31: the other rows forward on the
# tensor cores (mma_odd; fifty-seventh session).
MMA_ODD = [
    ("L251 K11", 32, 1024, 251, 11, 5, 5),
    ("L211 K13", 128, 512, 211, 13, 6, 6),
    ("L501 K31", 32, 512, 501, 31, 15, 15),
    ("L499 K21", 32, 512, 499, 21, 10, 10),
    ("L835 K15", 32, 512, 835, 15, 7, 7),
    ("L1023 K15", 16, 512, 1023, 15, 7, 7),
    ("L1023 K31", 16, 512, 1023, 31, 15, 15),
    ("L2047 K15", 8, 512, 2047, 15, 7, 7),
]

# More odd half-type lengths for the other rows backward on the tensor cores (mma_bwd_odd; with
# MMA_ODD; fifty-eighth session).
MMA_ODD_BWD = [
    ("L301 K13", 64, 512, 301, 13, 6, 6),
    ("L1501 K21", 8, 512, 1501, 21, 10, 10),
    ("L1023 K13", 16, 512, 1023, 13, 6, 6),
    ("L2047 K31", 8, 512, 2047, 31, 15, 15),
]

# (name, B, Cin, Cout, L, K, pad_left, pad_right, dtype)
SEPARABLE = [
    ("FastConformer bf16", 128, 512, 512, 210, 9, 8, 0, torch.bfloat16),
    ("Conformer bf16", 32, 512, 512, 500, 31, 15, 15, torch.bfloat16),
    ("Conformer fp16", 32, 512, 512, 500, 31, 15, 15, torch.float16),
    ("Citrinet TF32", 32, 1024, 1024, 250, 11, 5, 5, torch.float32),
    ("Citrinet bf16", 32, 1024, 1024, 250, 11, 5, 5, torch.bfloat16),
]


def rel_err(got: torch.Tensor, ref: torch.Tensor) -> float:
    return float((got.double() - ref).norm() / ref.norm().clamp_min(1e-30))


def check_depthwise(b, c, length, k, pl, pr, dtype) -> dict:
    x = torch.randn(b, c, length, device="cuda", dtype=dtype)
    w = torch.randn(c, k, device="cuda", dtype=dtype) / k**0.5
    bias = torch.randn(c, device="cuda", dtype=dtype)
    x64, w64, b64 = (t.double().requires_grad_(True) for t in (x, w, bias))
    ref = F.conv1d(F.pad(x64, (pl, pr)), w64.unsqueeze(1), b64, groups=c)
    dy = torch.randn_like(ref, dtype=dtype)
    gx, gw, gb = torch.autograd.grad(ref, (x64, w64, b64), dy.double())
    errs = {}
    for value in ("1", "0"):
        y = with_rows(value, lambda i: ops.depthwise_conv1d(x, w, bias, 1, pl, pr, 1), timed=False)
        dx, dw, db = with_rows(
            value, lambda i: ops.depthwise_conv1d_backward(dy, x, w, 1, pl, pr, 1, True, True, True), timed=False)
        errs[value] = max(rel_err(y, ref.detach()), rel_err(dx, gx), rel_err(dw, gw), rel_err(db, gb))
    return {"err_rows": errs["1"], "err_other": errs["0"]}


def time_depthwise(name, b, c, length, k, pl, pr, dtype) -> dict:
    xs = [torch.randn(b, c, length, device="cuda", dtype=dtype) for _ in range(3)]
    w = torch.randn(c, k, device="cuda", dtype=dtype) / k**0.5
    bias = torch.randn(c, device="cuda", dtype=dtype)
    lo = length + pl + pr - k + 1
    dys = [torch.randn(b, c, lo, device="cuda", dtype=dtype) for _ in range(3)]
    row = {"case": name, "dtype": str(dtype).split(".")[-1], "B": b, "C": c, "L": length, "K": k,
           "pad": [pl, pr], **check_depthwise(b, c, length, k, pl, pr, dtype)}
    for label, value in (("rows", "1"), ("other", "0")):
        row[f"fwd_{label}"] = with_rows(value, lambda i: ops.depthwise_conv1d(xs[i], w, bias, 1, pl, pr, 1))
        row[f"bwd_{label}"] = with_rows(
            value, lambda i: ops.depthwise_conv1d_backward(dys[i], xs[i], w, 1, pl, pr, 1, True, True, True))
    e = xs[0].element_size()
    row["fwd_tbps_rows"] = b * c * (length + lo) * e / row["fwd_rows"] / 1e6
    row["bwd_tbps_rows"] = b * c * (2 * length + lo) * e / row["bwd_rows"] / 1e6
    row["fwd_gain"] = row["fwd_other"] / row["fwd_rows"]
    row["bwd_gain"] = row["bwd_other"] / row["bwd_rows"]
    print(f"{name:17s} {row['dtype']:9s} fwd rows {row['fwd_rows']:7.1f} other {row['fwd_other']:7.1f}"
          f" ({row['fwd_gain']:.2f}x, {row['fwd_tbps_rows']:.2f} TB/s)  bwd rows {row['bwd_rows']:7.1f}"
          f" other {row['bwd_other']:7.1f} ({row['bwd_gain']:.2f}x, {row['bwd_tbps_rows']:.2f} TB/s)"
          f"  err {row['err_rows']:.1e} / {row['err_other']:.1e}", flush=True)
    return row


def time_separable(name, b, cin, cout, length, k, pl, pr, dtype, switch="SEPCONV1D_DW_ROWS") -> dict:
    """A separable training step (forward and all five gradients) with the library's choices
    against the variable `switch` at "0" (default: no rows kernels)."""
    xs = [torch.randn(b, cin, length, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3)]
    dw = (torch.randn(cin, 1, k, device="cuda", dtype=dtype) / k**0.5).requires_grad_(True)
    dwb = torch.randn(cin, device="cuda", dtype=dtype, requires_grad=True)
    pw = (torch.randn(cout, cin, 1, device="cuda", dtype=dtype) / cin**0.5).requires_grad_(True)
    pwb = torch.randn(cout, device="cuda", dtype=dtype, requires_grad=True)
    dy = torch.randn(b, cout, length + pl + pr - k + 1, device="cuda", dtype=dtype)

    def step(i):
        y = sepconv1d.separable_conv1d(xs[i], dw, pw, dwb, pwb, padding=(pl, pr))
        return torch.autograd.grad(y, (xs[i], dw, dwb, pw, pwb), dy)

    row = {"case": name, "library": with_env(switch, None, step), "off": with_env(switch, "0", step),
           "switch": switch}
    row["gain"] = row["off"] / row["library"]
    print(f"{name:20s} training step: library {row['library']:8.1f} us, {switch}=0"
          f" {row['off']:8.1f} us ({row['gain']:.2f}x)", flush=True)
    return row


def time_forward_switch(name, b, c, length, k, pl, pr, dtype, switch, fixed) -> dict:
    """The rows forward (rows forced on, the variables in `fixed` set) with the variable `switch`
    at "1" against "0", each checked against float64 first."""
    xs = [torch.randn(b, c, length, device="cuda", dtype=dtype) for _ in range(3)]
    w = torch.randn(c, k, device="cuda", dtype=dtype) / k**0.5
    bias = torch.randn(c, device="cuda", dtype=dtype)
    ref = F.conv1d(F.pad(xs[0].double(), (pl, pr)), w.double().unsqueeze(1), bias.double(), groups=c)
    fixed = {"SEPCONV1D_DW_ROWS": "1", **fixed}
    os.environ.update(fixed)
    row = {"case": name, "dtype": str(dtype).split(".")[-1], "B": b, "C": c, "L": length, "K": k,
           "switch": switch, "fixed": fixed}
    try:
        for label, value in (("on", "1"), ("off", "0")):
            fwd = lambda i: ops.depthwise_conv1d(xs[i], w, bias, 1, pl, pr, 1)  # noqa: E731
            row[f"err_{label}"] = rel_err(with_env(switch, value, fwd, timed=False), ref)
            row[f"fwd_{label}"] = with_env(switch, value, fwd)
    finally:
        for key in fixed:
            os.environ.pop(key, None)
    row["gain"] = row["fwd_off"] / row["fwd_on"]
    print(f"{name:17s} {row['dtype']:9s} fwd {switch}=0 {row['fwd_off']:7.1f} =1 {row['fwd_on']:7.1f}"
          f" ({row['gain']:.2f}x)  err {row['err_off']:.1e} / {row['err_on']:.1e}", flush=True)
    return row


def backward_problem(b, c, length, k, pl, pr, dtype):
    """Three input sets x and dy, a weight, and float64 autograd's dx and dw for the first set."""
    xs = [torch.randn(b, c, length, device="cuda", dtype=dtype) for _ in range(3)]
    lo = length + pl + pr - k + 1
    gs = [torch.randn(b, c, lo, device="cuda", dtype=dtype) for _ in range(3)]
    w = torch.randn(c, k, device="cuda", dtype=dtype) / k**0.5
    x64 = xs[0].double().requires_grad_(True)
    w64 = w.double().requires_grad_(True)
    y64 = F.conv1d(F.pad(x64, (pl, pr)), w64.unsqueeze(1), groups=c)
    refs = torch.autograd.grad(y64, (x64, w64), gs[0].double())
    return xs, gs, w, refs


def time_backward_switch(name, b, c, length, k, pl, pr, dtype, switch, forced: bool = True,
                         fixed: dict | None = None) -> dict:
    """The rows backward (rows forced on, or with `forced` False the library's routing; dx, dw and
    db; the variables in `fixed` set) with the variable `switch` at "1" against "0", each checked
    against float64 autograd first."""
    xs, gs, w, refs = backward_problem(b, c, length, k, pl, pr, dtype)
    fixed = {**(fixed or {}), **({"SEPCONV1D_DW_ROWS": "1"} if forced else {})}
    os.environ.update(fixed)
    row = {"case": name, "dtype": str(dtype).split(".")[-1], "B": b, "C": c, "L": length, "K": k,
           "switch": switch, "fixed": fixed}
    try:
        for label, value in (("on", "1"), ("off", "0")):
            bwd = lambda i: ops.depthwise_conv1d_backward(gs[i], xs[i], w, 1, pl, pr, 1, True, True, True)  # noqa: E731
            got = with_env(switch, value, bwd, timed=False)
            row[f"err_{label}"] = max(rel_err(got[0], refs[0]), rel_err(got[1], refs[1]))
            row[f"bwd_{label}"] = with_env(switch, value, bwd)
    finally:
        for key in fixed:
            os.environ.pop(key, None)
    row["gain"] = row["bwd_off"] / row["bwd_on"]
    print(f"{name:17s} {row['dtype']:9s} bwd {switch}=0 {row['bwd_off']:7.1f} =1 {row['bwd_on']:7.1f}"
          f" ({row['gain']:.2f}x)  err {row['err_off']:.1e} / {row['err_on']:.1e}", flush=True)
    return row


SPANS = ("256", "1024", "2048")


def time_span(name, b, c, length, k, pl, pr, dtype) -> dict:
    """The rows kernels (rows forced on), forward and backward (dx, dw and db), at the library's
    outputs per warp pass (SEPCONV1D_DW_ROWS_SPAN unset) and at each of SPANS, each span's
    backward checked against float64 autograd first."""
    xs, gs, w, refs = backward_problem(b, c, length, k, pl, pr, dtype)
    fwd = lambda i: ops.depthwise_conv1d(xs[i], w, None, 1, pl, pr, 1)  # noqa: E731
    bwd = lambda i: ops.depthwise_conv1d_backward(gs[i], xs[i], w, 1, pl, pr, 1, True, True, True)  # noqa: E731
    row = {"case": name, "dtype": str(dtype).split(".")[-1], "B": b, "C": c, "L": length, "K": k}
    os.environ["SEPCONV1D_DW_ROWS"] = "1"
    try:
        for span in (None, *SPANS):
            label = span or "default"
            got = with_env("SEPCONV1D_DW_ROWS_SPAN", span, bwd, timed=False)
            row[f"err_{label}"] = max(rel_err(got[0], refs[0]), rel_err(got[1], refs[1]))
            row[f"fwd_{label}"] = with_env("SEPCONV1D_DW_ROWS_SPAN", span, fwd)
            row[f"bwd_{label}"] = with_env("SEPCONV1D_DW_ROWS_SPAN", span, bwd)
    finally:
        os.environ.pop("SEPCONV1D_DW_ROWS", None)
    cells = "  ".join(f"{lab} {row['fwd_' + lab]:6.1f}/{row['bwd_' + lab]:6.1f}" for lab in ("default", *SPANS))
    err = max(row[f"err_{lab}"] for lab in ("default", *SPANS))
    print(f"{name:17s} {row['dtype']:9s} fwd/bwd us by span: {cells}  err {err:.1e}", flush=True)
    return row


def main() -> None:
    torch.backends.cudnn.allow_tf32 = True
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
               "depthwise": [], "separable": [], "double_buffered": [], "words": [], "words16": [],
               "mma": [], "mma_bwd": [], "words_bwd": [], "span": [], "specialized": []}
    parts = set(sys.argv[1:]) or {"depthwise", "steps"}
    for dtype in (torch.bfloat16, torch.float32) if "db" in parts else ():
        for case in DEPTHWISE:
            results["double_buffered"].append(time_forward_switch(
                *case, dtype, "SEPCONV1D_DW_ROWS_DB", {"SEPCONV1D_DW_ROWS_WORDS": "0"}))
    for dtype in (torch.bfloat16, torch.float32) if "words" in parts else ():
        for case in DEPTHWISE:
            results["words"].append(time_forward_switch(*case, dtype, "SEPCONV1D_DW_ROWS_WORDS", {}))
    for dtype in (torch.bfloat16, torch.float32) if "words16" in parts else ():
        for case in DEPTHWISE:
            results["words16"].append(time_forward_switch(*case, dtype, "SEPCONV1D_DW_ROWS_WORDS16", {}))
    for dtype in (torch.bfloat16, torch.float16) if "mma" in parts else ():
        for case in [c for c in DEPTHWISE if c[4] >= 11] + MMA_EXTRA:
            results["mma"].append(time_forward_switch(*case, dtype, "SEPCONV1D_DW_ROWS_MMA", {}))
    for dtype in (torch.bfloat16, torch.float16) if "mma_bwd" in parts else ():
        for case in [c for c in DEPTHWISE if c[4] >= 11] + MMA_EXTRA:
            results["mma_bwd"].append(time_backward_switch(*case, dtype, "SEPCONV1D_DW_ROWS_MMA_BWD"))
    for dtype in (torch.bfloat16, torch.float32) if "words_bwd" in parts else ():
        for case in DEPTHWISE:
            results["words_bwd"].append(time_backward_switch(*case, dtype, "SEPCONV1D_DW_ROWS_WORDS_BWD"))
    for dtype in (torch.bfloat16, torch.float32) if "specialized" in parts else ():
        for case in DEPTHWISE:
            results["specialized"].append(time_forward_switch(*case, dtype, "SEPCONV1D_DW_SPECIALIZED", {}))
            results["specialized"].append(time_backward_switch(*case, dtype, "SEPCONV1D_DW_SPECIALIZED"))
    for dtype in (torch.bfloat16, torch.float32) if "span" in parts else ():
        for case in DEPTHWISE:
            results["span"].append(time_span(*case, dtype))
    for dtype in (torch.bfloat16, torch.float32) if "depthwise" in parts or "rule" in parts else ():
        for case in (DEPTHWISE if "depthwise" in parts else []) + (RULE if "rule" in parts else []):
            results["depthwise"].append(time_depthwise(*case, dtype))
    for dtype in (torch.bfloat16, torch.float16) if "rule_mma" in parts else ():
        for case in RULE_MMA:
            results["depthwise"].append(time_depthwise(*case, dtype))
    for dtype in (torch.bfloat16, torch.float16) if "mma_dw" in parts else ():
        for case in [c for c in DEPTHWISE if c[4] >= 12] + MMA_EXTRA + RULE_MMA[5:9]:
            results["mma_bwd"].append(time_backward_switch(*case, dtype, "SEPCONV1D_DW_ROWS_MMA_DW"))
    for case in SEPARABLE if "steps_mma_dw" in parts else ():
        results["separable"].append(time_separable(*case, switch="SEPCONV1D_DW_ROWS_MMA_DW"))
    for dtype in (torch.bfloat16, torch.float16) if "mma_odd" in parts else ():
        for case in MMA_ODD:
            results["mma"].append(time_forward_switch(*case, dtype, "SEPCONV1D_DW_ROWS_MMA", {}))
            results["depthwise"].append(time_depthwise(*case, dtype))
    for dtype in (torch.bfloat16, torch.float16) if "mma_bwd_odd" in parts else ():
        for case in MMA_ODD + MMA_ODD_BWD:
            every = {"SEPCONV1D_DW_ROWS_MMA": "1"}  # the tensor cores at every length
            for switch in ("SEPCONV1D_DW_ROWS_MMA_BWD", "SEPCONV1D_DW_ROWS_MMA_DW"):
                results["mma_bwd"].append(time_backward_switch(*case, dtype, switch, fixed=every))
            results["depthwise"].append(time_depthwise(*case, dtype))
    for dtype in (torch.bfloat16, torch.float16) if "rule_mma_ab" in parts else ():
        for case in RULE_MMA:
            results["mma_bwd"].append(time_backward_switch(*case, dtype, "SEPCONV1D_DW_ROWS_MMA_BWD", forced=False))
    for case in SEPARABLE if "steps" in parts else ():
        results["separable"].append(time_separable(*case))
    for case in SEPARABLE if "steps_mma_bwd" in parts else ():
        results["separable"].append(time_separable(*case, switch="SEPCONV1D_DW_ROWS_MMA_BWD"))
    out = os.path.join(os.environ.get("OUT", "/tmp"), "depthwise_rows_ab.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    print("wrote", out)


if __name__ == "__main__":
    main()
