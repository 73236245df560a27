"""Benchmark sepconv1d against PyTorch eager, torch.compile and Dao-AILab causal-conv1d.

Usage::

    python -m sepconv1d.bench                # CUDA: the full sweep (about 3 min on an H200)
                                             # no CUDA: a small CPU demo (well under a minute)
    python -m sepconv1d.bench --quick        # fewer cases, shorter timing windows
    python -m sepconv1d.bench --only depthwise|separable
    python -m sepconv1d.bench --no-compile --no-peers --out result.json

Everything is measured in one process run: the ceilings (a device-to-device copy of the same
number of bytes as each case, a 2 GiB copy, GEMM rates at each precision), then every case, each
checked against a float64 reference before it is timed. A table is printed last and the full
record is written as JSON (``benchmarks/results/<device>-<YYYYMMDD-HHMMSS>.json`` by default);
``benchmarks/plot.py`` and ``benchmarks/make_table.py`` turn that JSON into a PNG and README tables.

Timing: ``triton.testing.do_bench`` (median of per-call CUDA-event times, L2 flushed before every
call) when triton imports, else the same method with CUDA events here; a median of wall-clock
times on the CPU. Inputs are rotated over 3 sets when one set is under 200 MB, so a call never
finds its inputs in L2.

Harness checks without the compiled kernels: ``--stand-in`` times a pure-PyTorch stand-in in place
of sepconv1d and ``--tiny`` shrinks every case of the sweep; their numbers mean nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import gc
import itertools
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

if __package__ in (None, ""):
    # Run as a file (python sepconv1d/bench.py): import the package from the repository root,
    # not this folder (whose modules would otherwise shadow it).
    _here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0]) == _here:
        sys.path[0] = os.path.dirname(_here)

import torch
import torch.nn.functional as F

SCHEMA = "sepconv1d-bench/1"
ROTATE_BELOW_BYTES = 200e6  # rotate over ROTATE_SETS input sets when one set is smaller than this
ROTATE_SETS = 3
DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
          "fp64": torch.float64}
# Errors against a float64 reference: "l2" = ||a - ref|| / ||ref||, "max" = max|a - ref| / max|ref|
# (the second catches errors confined to a few elements, such as the edges). A result passes when
# each is under its floor here or within EAGER_ERR_FACTOR of eager PyTorch's own error.
TOLERANCE = {"fp64": {"l2": 1e-10, "max": 1e-9}, "fp32": {"l2": 5e-5, "max": 2e-4},
             "tf32": {"l2": 1e-2, "max": 3e-2}, "fp16": {"l2": 1e-2, "max": 2e-2},
             "bf16": {"l2": 3e-2, "max": 5e-2}}
EAGER_ERR_FACTOR = 4.0
PEER = "causal_conv1d"


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------


@dataclass
class Case:
    kind: str  # "depthwise" | "separable"
    group: str  # grid | causal | generic | model | seed | demo
    B: int
    C: int  # channels (Cin for separable)
    L: int
    K: int
    Cout: int = 0
    stride: int = 1
    dilation: int = 1
    padding: str = "same"  # "same" | "causal"
    precision: str = "fp32"  # fp32 (strict) | tf32 | bf16 | fp16: x's dtype and the math mode
    wdtype: str | None = None  # weights' dtype when it differs from x's ("fp32" under bf16 x)
    layout: str = "cf"  # cf: contiguous (B, C, L); cl: a (B, L, C).transpose(1, 2) view
    model: str | None = None
    compile: bool = False  # also time torch.compile of the eager forward
    compile_fwdbwd: bool = False  # also time torch.compile of the eager forward+backward
    bwd: bool = True  # time the backward alone too
    grad: bool = True  # check and time the backward at all (False: forward only)

    @property
    def x_dtype(self) -> torch.dtype:
        return DTYPES[self.precision]

    @property
    def w_dtype(self) -> torch.dtype:
        return DTYPES[self.wdtype] if self.wdtype else self.x_dtype

    @property
    def pads(self) -> tuple[int, int]:
        total = self.dilation * (self.K - 1)
        if self.padding == "causal":
            return total, 0
        if self.stride == 1:  # PyTorch's 'same': the odd element on the right
            return total // 2, total - total // 2
        return total // 2, total // 2  # stride > 1: symmetric (NeMo's rule for odd K)

    @property
    def pad_arg(self) -> Any:
        """The padding argument handed to sepconv1d's functional API."""
        if self.padding == "causal":
            return "causal"
        if self.stride == 1:
            return "same"
        return self.pads

    @property
    def L_out(self) -> int:
        pl, pr = self.pads
        return (self.L + pl + pr - self.dilation * (self.K - 1) - 1) // self.stride + 1

    @property
    def c_out(self) -> int:
        return self.Cout if self.kind == "separable" else self.C

    @property
    def peer_applies(self) -> bool:
        """Whether Dao-AILab causal-conv1d can compute this case."""
        return (self.kind == "depthwise" and self.padding == "causal" and 2 <= self.K <= 4
                and self.stride == 1 and self.dilation == 1 and self.precision != "tf32"
                and (self.layout == "cf" or self.C % 8 == 0))

    @property
    def dtype_label(self) -> str:
        return self.precision + (f"+w{self.wdtype.removeprefix('fp')}" if self.wdtype else "")

    @property
    def shape_label(self) -> str:
        ch = f"C{self.C}" if self.kind == "depthwise" else f"C{self.C}->{self.Cout}"
        extra = (f" s{self.stride}" if self.stride != 1 else "") + (f" d{self.dilation}" if self.dilation != 1 else "")
        return f"B{self.B} {ch} L{self.L} K{self.K}{extra}"

    @property
    def label(self) -> str:
        head = "dw" if self.kind == "depthwise" else "sep"
        model = f"{self.model} " if self.model else ""
        return f"{model}{head} {self.shape_label} {self.padding} {self.dtype_label} {self.layout}"

    @property
    def id(self) -> str:
        parts = [self.kind[:3], self.model or self.group, f"B{self.B}", f"C{self.C}"]
        if self.kind == "separable":
            parts.append(f"O{self.Cout}")
        parts += [f"L{self.L}", f"K{self.K}", f"s{self.stride}", f"d{self.dilation}", self.padding,
                  self.dtype_label, self.layout]
        return "/".join(parts)

    def passes(self) -> list[str]:
        if not self.grad:
            return ["fwd"]
        if self.bwd:
            return ["fwd", "bwd", "fwdbwd"]
        return ["fwd", "fwdbwd"]


def _grid_cases(quick: bool) -> list[Case]:
    cases = []
    ks = (3, 9) if quick else (3, 5, 9)
    layouts = ("cf",) if quick else ("cf", "cl")
    for layout in layouts:
        for prec in ("fp32", "bf16"):
            for k in ks:
                cases.append(Case("depthwise", "grid", 32, 512, 8192, k, precision=prec, layout=layout,
                                  compile=(k == 9 and layout == "cf" and (prec == "bf16" or not quick))))
    if quick:
        cases.append(Case("depthwise", "grid", 32, 512, 8192, 9, precision="bf16", layout="cl"))
    return cases


def depthwise_cases(quick: bool) -> list[Case]:
    cases = _grid_cases(quick)
    layouts = ("cf",) if quick else ("cf", "cl")
    for layout in layouts:
        for prec in ("bf16",) if quick else ("fp32", "bf16"):
            cases.append(Case("depthwise", "causal", 32, 512, 8192, 3, padding="causal", precision=prec,
                              layout=layout))
    for layout in ("cf", "cl"):
        cases.append(Case("depthwise", "model", 8, 5120, 2048, 4, padding="causal", precision="bf16",
                          wdtype="fp32", layout=layout, model="Mamba-2.8B",
                          compile=(layout == "cf" and not quick)))
    if not quick:
        for layout in ("cf", "cl"):
            cases.append(Case("depthwise", "model", 1, 12288, 16384, 3, padding="causal", precision="bf16",
                              layout=layout, model="StripedHyena-7B"))
    if not quick:
        # Speech models' short rows (the depthwise layer alone; the separable shapes are below).
        for model, b, c, length, k, pad, prec in (("FastConformer-stream", 128, 512, 210, 9, "causal", "bf16"),
                                                  ("Citrinet-1024", 32, 1024, 250, 11, "same", "fp32"),
                                                  ("Conformer", 32, 512, 500, 31, "same", "bf16")):
            cases.append(Case("depthwise", "model", b, c, length, k, padding=pad, precision=prec, model=model))
    for k in (31,) if quick else (31, 63):
        for prec in ("bf16",) if quick else ("fp32", "bf16"):
            cases.append(Case("depthwise", "generic", 32, 512, 8192, k, precision=prec))
    return cases


# (model, B, Cin, Cout, K, L, stride, dilation, padding, precisions); "tf32" is float32 tensors under
# PyTorch's default for convolutions (cuDNN may use TF32).
MODEL_SHAPES = [
    ("Conformer", 32, 512, 512, 31, 500, 1, 1, "same", ("bf16", "fp16")),
    ("FastConformer-stream", 128, 512, 512, 9, 210, 1, 1, "causal", ("bf16",)),
    ("QuartzNet-block", 32, 512, 512, 63, 835, 1, 1, "same", ("tf32", "fp16")),
    ("QuartzNet-first", 32, 64, 256, 33, 1670, 2, 1, "same", ("tf32", "fp16")),
    ("QuartzNet-last", 32, 512, 512, 87, 835, 1, 2, "same", ("tf32", "fp16")),
    ("Citrinet-1024", 32, 1024, 1024, 11, 250, 1, 1, "same", ("tf32", "bf16")),
    ("Vocos-ConvNeXt", 16, 512, 1536, 7, 1024, 1, 1, "same", ("tf32", "bf16")),
    ("SNAC-decoder", 4, 96, 96, 7, 88200, 1, 9, "same", ("tf32",)),
]
QUICK_MODELS = {("Conformer", "bf16"), ("QuartzNet-block", "fp16"), ("QuartzNet-first", "fp16"),
                ("Citrinet-1024", "bf16"), ("Vocos-ConvNeXt", "bf16")}


def separable_cases(quick: bool) -> list[Case]:
    cases = []
    for prec in ("bf16", "tf32", "fp32") if quick else ("bf16", "fp16", "tf32", "fp32"):
        cases.append(Case("separable", "seed", 32, 256, 4096, 9, Cout=512, precision=prec, bwd=True,
                          compile=(prec == "bf16" or not quick), compile_fwdbwd=(prec == "bf16" and not quick)))
    for model, b, cin, cout, k, length, stride, dil, pad, precs in MODEL_SHAPES:
        for prec in precs:
            if quick and (model, prec) not in QUICK_MODELS:
                continue
            cases.append(Case("separable", "model", b, cin, length, k, Cout=cout, stride=stride, dilation=dil,
                              padding=pad, precision=prec, model=model, bwd=False))
    return cases


def cpu_demo_cases() -> list[Case]:
    return [
        # PyTorch's CPU depthwise backward takes seconds at this size (far more for channel-last):
        # the demo times it once, through autograd, and leaves the channel-last cases forward only.
        Case("depthwise", "demo", 4, 256, 4096, 9, bwd=False),
        Case("depthwise", "demo", 4, 256, 4096, 9, layout="cl", grad=False),
        Case("depthwise", "demo", 4, 256, 4096, 4, padding="causal", bwd=False),
        Case("separable", "demo", 4, 256, 4096, 9, Cout=256, bwd=False),
        Case("separable", "demo", 4, 256, 4096, 9, Cout=256, layout="cl", grad=False),
        # bf16 at a Conformer block's shape: the forward's pointwise product on oneDNN (AMX where the
        # CPU has it), the backward's on our float32 GEMM.
        Case("separable", "demo", 4, 512, 500, 31, Cout=512, precision="bf16", bwd=False),
    ]


def shrink(case: Case) -> Case:
    """--tiny: the same case with a batch of 2 and a short sequence (harness tests only)."""
    c = Case(**asdict(case))
    c.B = min(c.B, 2)
    c.L = max(min(c.L, 256), c.dilation * (c.K - 1) + 2)
    c.C = min(c.C, 64)
    if c.kind == "separable":
        c.Cout = min(c.Cout, 64)
    return c


# ---------------------------------------------------------------------------------------------
# The implementations: ours (sepconv1d or a stand-in), eager PyTorch, causal-conv1d
# ---------------------------------------------------------------------------------------------


def _conv_pad(x, weight, bias, stride, pl, pr, dilation, groups):
    if pl == pr:
        return F.conv1d(x, weight, bias, stride, pl, dilation, groups)
    return F.conv1d(F.pad(x, (pl, pr)), weight, bias, stride, 0, dilation, groups)


def eager_depthwise(x, w, b, stride, pl, pr, dilation):
    """What a PyTorch user writes: F.conv1d(groups=C), with F.pad when padding is asymmetric."""
    dt = x.dtype
    b = b.to(dt) if b is not None else None
    return _conv_pad(x, w.to(dt).unsqueeze(1), b, stride, pl, pr, dilation, x.shape[1])


def eager_separable(x, dw, dwb, pw, pwb, stride, pl, pr, dilation):
    """The unfused pair: depthwise F.conv1d(groups=Cin), then a 1x1 F.conv1d."""
    dt = x.dtype
    dwb = dwb.to(dt) if dwb is not None else None
    pwb = pwb.to(dt) if pwb is not None else None
    h = _conv_pad(x, dw.to(dt).unsqueeze(1), dwb, stride, pl, pr, dilation, x.shape[1])
    return F.conv1d(h, pw.to(dt).unsqueeze(2), pwb)


class Ours:
    """sepconv1d's functional API and raw backward operators."""

    name = "sepconv1d"

    def __init__(self, module):
        self.mod = module
        self.version = getattr(module, "__version__", "?")
        self.ops = torch.ops.sepconv1d

    def depthwise(self, x, w, b, stride, padding, dilation):
        return self.mod.depthwise_conv1d(x, w, b, stride=stride, padding=padding, dilation=dilation)

    def separable(self, x, dw, dwb, pw, pwb, stride, padding, dilation):
        return self.mod.separable_conv1d(x, dw, pw, dwb, pwb, stride=stride, padding=padding, dilation=dilation)

    def depthwise_backward(self, dy, x, w, stride, pl, pr, dilation):
        return self.ops.depthwise_conv1d_backward(dy, x, w, stride, pl, pr, dilation, True, True, True)

    def separable_backward(self, dy, x, dw, dwb, pw, stride, pl, pr, dilation):
        allow_tf32 = bool(torch.backends.cudnn.allow_tf32)
        return self.ops.separable_conv1d_backward(dy, x, dw, dwb, pw, stride, pl, pr, dilation, allow_tf32,
                                                  True, True, dwb is not None, True, True)


class StandIn(Ours):
    """Pure-PyTorch stand-in with sepconv1d's signatures, for testing the harness (--stand-in)."""

    name = "stand-in"

    def __init__(self):  # no module behind it
        self.version = "stand-in"

    @staticmethod
    def _pads(padding, k, stride, dilation):
        total = dilation * (k - 1)
        if padding == "same":
            return total // 2, total - total // 2
        if padding == "causal":
            return total, 0
        if isinstance(padding, int):
            return padding, padding
        return tuple(padding)

    def depthwise(self, x, w, b, stride, padding, dilation):
        pl, pr = self._pads(padding, w.shape[-1], stride, dilation)
        return eager_depthwise(x, w, b, stride, pl, pr, dilation)

    def separable(self, x, dw, dwb, pw, pwb, stride, padding, dilation):
        pl, pr = self._pads(padding, dw.shape[-1], stride, dilation)
        return eager_separable(x, dw, dwb, pw, pwb, stride, pl, pr, dilation)

    def depthwise_backward(self, dy, x, w, stride, pl, pr, dilation):
        with torch.enable_grad():
            xs, ws = x.detach().requires_grad_(), w.detach().requires_grad_()
            bs = torch.zeros(w.shape[0], dtype=w.dtype, device=w.device, requires_grad=True)
            y = eager_depthwise(xs, ws, bs, stride, pl, pr, dilation)
            return torch.autograd.grad(y, (xs, ws, bs), dy)

    def separable_backward(self, dy, x, dw, dwb, pw, stride, pl, pr, dilation):
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_() for t in (x, dw, dwb, pw)]
            pwb = torch.zeros(pw.shape[0], dtype=pw.dtype, device=pw.device, requires_grad=True)
            y = eager_separable(leaves[0], leaves[1], leaves[2], leaves[3], pwb, stride, pl, pr, dilation)
            return torch.autograd.grad(y, (*leaves, pwb), dy)


def load_ours(stand_in: bool) -> tuple[Ours | None, str | None]:
    if stand_in:
        return StandIn(), None
    try:
        import sepconv1d
    except Exception as err:  # ImportError, OSError from a bad build, ...
        return None, f"sepconv1d is not importable ({type(err).__name__}: {_first_line(err)})"
    for name in ("depthwise_conv1d", "separable_conv1d"):
        if not hasattr(sepconv1d, name):
            return None, f"sepconv1d has no {name} yet"
    return Ours(sepconv1d), None


def probe_ours(ours: Ours, device: torch.device) -> dict[str, str]:
    """Try each op once on tiny inputs; returns {op: reason} for those that fail on this device."""
    failures = {}
    x = torch.randn(2, 8, 32, device=device)
    w = torch.randn(8, 3, device=device)
    pw = torch.randn(4, 8, device=device)
    tries = {
        "depthwise": lambda: ours.depthwise(x, w, None, 1, "same", 1),
        "depthwise_backward": lambda: ours.depthwise_backward(torch.ones_like(x), x, w, 1, 1, 1, 1),
        "separable": lambda: ours.separable(x, w, None, pw, None, 1, "same", 1),
    }
    for name, fn in tries.items():
        try:
            fn()
            _sync(device)
        except Exception as err:
            failures[name] = f"{type(err).__name__}: {_first_line(err)}"
    return failures


def load_peer(enabled: bool) -> tuple[Any, str | None, str | None]:
    """Dao-AILab causal-conv1d's causal_conv1d_fn, its version, or the reason it is missing."""
    if not enabled:
        return None, None, "disabled (--no-peers)"
    try:
        import causal_conv1d
        from causal_conv1d import causal_conv1d_fn
    except Exception as err:
        return None, None, f"not importable ({type(err).__name__}: {_first_line(err)})"
    return causal_conv1d_fn, getattr(causal_conv1d, "__version__", "?"), None


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def no_grad(fn):
    """fn wrapped to run under torch.no_grad() (forward-only timings)."""
    def call(*a):
        with torch.no_grad():
            return fn(*a)
    return call


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:300] if text else ""


class Timer:
    """Median time of one call in ms: triton's do_bench, CUDA events, or wall clock on the CPU."""

    def __init__(self, device: torch.device, warmup_ms: float, rep_ms: float, force_events: bool = False):
        self.device = device
        self.warmup_ms = warmup_ms
        self.rep_ms = rep_ms
        self.do_bench = None
        self.triton_version = None
        if device.type == "cuda" and not force_events:
            try:
                import triton
                from triton.testing import do_bench

                self.do_bench = do_bench
                self.triton_version = getattr(triton, "__version__", "?")
            except Exception:
                self.do_bench = None
        if device.type == "cpu":
            self.method = "wall clock (time.perf_counter), median"
        elif self.do_bench is not None:
            self.method = "triton.testing.do_bench, median"
        else:
            self.method = "CUDA events, L2 flushed before each call, median"
        self._flush = None

    def __call__(self, fn: Callable[[], Any], warmup_ms: float | None = None, rep_ms: float | None = None) -> dict:
        warmup = self.warmup_ms if warmup_ms is None else warmup_ms
        rep = self.rep_ms if rep_ms is None else rep_ms
        if self.device.type == "cpu":
            times = self._cpu(fn, warmup, rep)
        elif self.do_bench is not None:
            times = self._triton(fn, warmup, rep)
        else:
            times = self._events(fn, warmup, rep)
        if isinstance(times, float):
            return {"ms": times, "n": None}
        times = sorted(times)
        return {"ms": statistics.median(times), "p20": _quantile(times, 0.2), "p80": _quantile(times, 0.8),
                "n": len(times)}

    def _triton(self, fn, warmup, rep):
        try:
            return list(self.do_bench(fn, warmup=warmup, rep=rep, return_mode="all"))
        except (TypeError, ValueError, AssertionError):  # an older triton without return_mode="all"
            return float(self.do_bench(fn, warmup=warmup, rep=rep, return_mode="median"))

    def _events(self, fn, warmup, rep):
        if self._flush is None:
            self._flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=self.device)
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            self._flush.zero_()
            fn()
        end.record()
        torch.cuda.synchronize()
        estimate = max(start.elapsed_time(end) / 5, 1e-3)
        n_warm, n_rep = max(1, int(warmup / estimate)), max(1, int(rep / estimate))
        for _ in range(n_warm):
            fn()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
        for s, e in zip(starts, ends, strict=True):
            self._flush.zero_()
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]

    @staticmethod
    def _cpu(fn, warmup, rep):
        t0 = time.perf_counter()
        fn()
        first_ms = (time.perf_counter() - t0) * 1e3
        t_end = time.perf_counter() + warmup / 1e3
        while time.perf_counter() < t_end:
            fn()
        # At least 3 calls, but a single one when one call alone outlasts the window.
        min_calls = 1 if first_ms > rep else 3
        times: list[float] = []
        t_end = time.perf_counter() + rep / 1e3
        while len(times) < min_calls or (time.perf_counter() < t_end and len(times) < 1000):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return times


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    pos = q * (len(sorted_values) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def rotating(fn: Callable, arg_sets: Sequence[tuple]) -> Callable[[], Any]:
    """A no-argument call of fn that takes the next input set each time."""
    it = itertools.cycle(arg_sets)

    def call():
        return fn(*next(it))

    return call


def kernel_ms(fn: Callable[[], Any], calls: int = 20) -> float:
    """GPU time of one call in ms without its host time: the durations of the kernels (and
    memsets / copies) that `calls` calls launch, from torch.profiler, summed and divided by calls."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    total_us = sum(e.time_range.elapsed_us() for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA)
    if total_us <= 0:
        raise RuntimeError("the profiler recorded no GPU activity")
    return total_us / calls / 1000.0


def queued_gpu_ms(fn: Callable[[], Any], calls: int = 10) -> float:
    """GPU time of one call in ms without its host time: `calls` calls queued behind a GPU sleep,
    timed by events from the sleep's end to the last call's end, so the GPU never waits for the
    host (the median of three runs). The sleep doubles until the host has queued every call
    before it ends. Events rather than the profiler: nothing of CUPTI is set up between the
    sweep's timings."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    sleep_cycles, times = int(2e7), []  # ~10 ms at 2 GHz
    while len(times) < 3:
        torch.cuda._sleep(sleep_cycles)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        queued_in_time = not start.query()  # the GPU was still asleep when the host finished
        torch.cuda.synchronize()
        if not queued_in_time and sleep_cycles < int(2e9):
            sleep_cycles *= 2
            continue
        times.append(start.elapsed_time(end) / calls)
    return sorted(times)[1]


def n_sets(set_bytes: int) -> int:
    return ROTATE_SETS if set_bytes < ROTATE_BELOW_BYTES else 1


@contextlib.contextmanager
def precision_mode(precision: str):
    """tf32 lets cuDNN and cuBLAS use TF32 for float32; fp32 forbids it; others leave the flags alone."""
    old = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    try:
        if precision in ("tf32", "fp32"):
            flag = precision == "tf32"
            torch.backends.cudnn.allow_tf32 = flag
            torch.backends.cuda.matmul.allow_tf32 = flag
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = old


# ---------------------------------------------------------------------------------------------
# Ceilings
# ---------------------------------------------------------------------------------------------


class Ceilings:
    def __init__(self, device: torch.device, timer: Timer, gemm_n: int):
        self.device = device
        self.timer = timer
        self.gemm_n = gemm_n
        self.copy: dict[int, float] = {}  # bytes moved (read + write) -> GB/s
        self.gemm: dict[str, float | None] = {}
        self.copy_2gib_gbps: float | None = None
        self.errors: dict[str, str] = {}

    def copy_gbps(self, nbytes: int) -> float | None:
        """GB/s of dst.copy_(src) moving nbytes in all (nbytes / 2 read, nbytes / 2 written)."""
        nbytes = max(32, int(nbytes) // 32 * 32)
        if nbytes not in self.copy:
            try:
                src_bytes = nbytes // 2
                srcs = [torch.empty(src_bytes, dtype=torch.uint8, device=self.device).random_(0, 255)
                        for _ in range(n_sets(src_bytes))]
                dst = torch.empty(src_bytes, dtype=torch.uint8, device=self.device)
                # A copy's time is steady: a short window is enough.
                ms = self.timer(rotating(dst.copy_, [(s,) for s in srcs]), min(self.timer.warmup_ms, 5.0),
                                min(self.timer.rep_ms, 30.0))["ms"]
                self.copy[nbytes] = nbytes / ms / 1e6
                del srcs, dst
            except Exception as err:
                self.errors[f"copy {nbytes}"] = _first_line(err)
                return None
        return self.copy[nbytes]

    def measure_copy_2gib(self) -> None:
        size = 2 << 30 if self.device.type == "cuda" else 256 << 20
        self.copy_2gib_bytes = 2 * size
        try:
            src = torch.empty(size, dtype=torch.uint8, device=self.device).random_(0, 255)
            dst = torch.empty_like(src)
            ms = self.timer(rotating(dst.copy_, [(src,)]))["ms"]
            self.copy_2gib_gbps = 2 * size / ms / 1e6
            del src, dst
        except Exception as err:
            self.errors["copy 2GiB"] = _first_line(err)

    def measure_gemm(self, precisions: Sequence[str]) -> None:
        n = self.gemm_n
        for prec in precisions:
            try:
                with precision_mode(prec):
                    a = torch.randn(n, n, device=self.device, dtype=DTYPES[prec])
                    b = torch.randn(n, n, device=self.device, dtype=DTYPES[prec])
                    c = torch.empty(n, n, device=self.device, dtype=DTYPES[prec])
                    ms = self.timer(lambda a=a, b=b, c=c: torch.mm(a, b, out=c))["ms"]
                self.gemm[prec] = 2 * n**3 / ms / 1e9
                del a, b, c
            except Exception as err:
                self.gemm[prec] = None
                self.errors[f"gemm {prec}"] = _first_line(err)

    def gemm_tflops(self, precision: str) -> float | None:
        return self.gemm.get(precision)

    def to_json(self) -> dict:
        return {
            "copy_2gib_gbps": self.copy_2gib_gbps,
            "copy_2gib_bytes_moved": getattr(self, "copy_2gib_bytes", None),
            "copy_by_bytes_gbps": {str(k): v for k, v in sorted(self.copy.items())},
            "gemm_n": self.gemm_n,
            "gemm_tflops": self.gemm,
            "errors": self.errors,
        }


# ---------------------------------------------------------------------------------------------
# Budget: keeps the whole sweep inside --budget-s by shortening timing windows, then dropping compile
# ---------------------------------------------------------------------------------------------


class Budget:
    COMPILE_EST_S = 8.0

    def __init__(self, seconds: float, start: float, warmup_ms: float, rep_ms: float):
        self.deadline = start + seconds
        self.seconds = seconds
        self.full = (warmup_ms, rep_ms)
        self.warmup_ms, self.rep_ms = warmup_ms, rep_ms
        self.timing_wall = 0.0
        self.timing_nominal = 0.0
        self.case_overhead = []  # wall seconds a case spent outside timing calls
        self.allow_compile = True
        self.notes: list[str] = []

    def record_timing(self, wall_s: float, warmup_ms: float, rep_ms: float) -> None:
        self.timing_wall += wall_s
        self.timing_nominal += (warmup_ms + rep_ms) / 1e3

    def plan(self, timings_left: int, cases_left: int, compiles_left: int, label: str) -> None:
        left = self.deadline - time.perf_counter() - 5.0  # keep 5 s for the summary and memory
        ratio = self.timing_wall / self.timing_nominal if self.timing_nominal > 0 else 2.0
        # The median of the cases after the first: the first case's one-off set-up (CUDA context,
        # cuBLAS, the first references) must not make every later case look that slow (it once
        # dropped compile from a 50 s sweep, and, as the only sample at the second case, from a
        # 260 s one). Until a second case has run, the first counts as at most the default 1 s.
        later = self.case_overhead[1:]
        if later:
            overhead = statistics.median(later)
        else:
            overhead = min(self.case_overhead[0], 1.0) if self.case_overhead else 1.0
        fixed = cases_left * overhead
        w, r = self.full
        need = timings_left * (w + r) / 1e3 * ratio + fixed
        if self.allow_compile and compiles_left and need + compiles_left * self.COMPILE_EST_S > left:
            self.allow_compile = False
            self.notes.append(f"from {label}: torch.compile comparisons dropped to stay inside the budget")
        if need > left and timings_left:
            scale = max((left - fixed) / (need - fixed), 0.0) if need > fixed else 0.0
            new_r = max(10.0, r * scale)
            new_w = max(2.0, min(w, new_r / 4))
            if new_r < self.rep_ms - 1:
                self.notes.append(f"from {label}: timing windows cut to warmup {new_w:.0f} ms / rep {new_r:.0f} ms")
            self.warmup_ms, self.rep_ms = new_w, new_r


# ---------------------------------------------------------------------------------------------
# Running one case
# ---------------------------------------------------------------------------------------------


def rel_err(a: torch.Tensor | None, ref: torch.Tensor | None) -> dict[str, float] | None:
    """{"l2": ||a - ref|| / ||ref||, "max": max|a - ref| / max|ref|}; inf when the shapes differ."""
    if a is None or ref is None:
        return None
    if tuple(a.shape) != tuple(ref.shape):
        return {"l2": math.inf, "max": math.inf}
    diff = a.detach().to(torch.float64) - ref
    out = {}
    for key, order in (("l2", 2), ("max", math.inf)):
        num = torch.linalg.vector_norm(diff, order).item()
        den = torch.linalg.vector_norm(ref, order).item()
        out[key] = num / den if den > 0 else num
    return out


def judge(errs: dict[str, dict | None], eager_errs: dict[str, dict | None], precision: str) -> bool:
    """Whether every tensor's errors are under the floor or within EAGER_ERR_FACTOR of eager's."""
    floors = TOLERANCE[precision]
    for name, err in errs.items():
        if err is None:
            continue
        eager = eager_errs.get(name) or {}
        for key, floor in floors.items():
            allowed = max(floor, EAGER_ERR_FACTOR * (eager.get(key) or 0.0))
            if not (err[key] <= allowed):  # also catches NaN
                return False
    return True


def worst_error(chk: dict, who: str = "ours", key: str = "l2") -> float | None:
    """The largest error of one implementation over its output and gradients."""
    errs = [chk.get("fwd", {}).get(who), *chk.get("bwd", {}).get(who, {}).values()]
    vals = [e[key] for e in errs if isinstance(e, dict) and e.get(key) is not None]
    return max(vals) if vals else None


def _activation(b, c, length, layout, dtype, device, scale=1.0):
    if layout == "cl":
        t = torch.randn(b, length, c, device=device, dtype=torch.float32).mul_(scale).to(dtype).transpose(1, 2)
    else:
        t = torch.randn(b, c, length, device=device, dtype=torch.float32).mul_(scale).to(dtype)
    return t


def _param(shape, std, dtype, device):
    return (torch.randn(*shape, device=device, dtype=torch.float32) * std).to(dtype).requires_grad_()


class Runner:
    def __init__(self, args, device, timer: Timer, ceilings: Ceilings, ours: Ours | None, ours_missing: dict,
                 peer, budget: Budget):
        self.args = args
        self.device = device
        self.timer = timer
        self.ceilings = ceilings
        self.ours = ours
        self.ours_missing = ours_missing  # op -> reason
        self.peer = peer
        self.budget = budget
        self.compile_s_total = 0.0

    # -- helpers ------------------------------------------------------------------------------

    def time(self, fn: Callable[[], Any]) -> dict:
        w, r = self.budget.warmup_ms, self.budget.rep_ms
        t0 = time.perf_counter()
        res = self.timer(fn, w, r)
        self.budget.record_timing(time.perf_counter() - t0, w, r)
        return res

    def _try_time(self, rec: dict, pass_name: str, impl: str, make: Callable[[], Callable[[], Any]]) -> None:
        """Time one implementation of one pass into rec['passes'][pass]['ms'][impl]."""
        slot = rec["passes"][pass_name]
        try:
            fn = make()
            res = self.time(fn)
            slot["ms"][impl] = res["ms"]
            slot.setdefault("spread_ms", {})[impl] = [res.get("p20"), res.get("p80")]
        except Exception as err:
            slot["ms"][impl] = None
            slot.setdefault("errors", {})[impl] = f"{type(err).__name__}: {_first_line(err)}"
            self._after_error(err)
        finally:
            fn = None  # drop references to graphs and inputs

    def _after_error(self, err: BaseException) -> None:
        if isinstance(err, torch.cuda.OutOfMemoryError):
            gc.collect()
            torch.cuda.empty_cache()
        if self.device.type == "cuda":
            try:
                torch.cuda.synchronize()
            except Exception as fatal:  # the context is gone: nothing after this can run
                raise FatalDeviceError(f"{type(err).__name__}: {_first_line(err)}") from fatal
            if "illegal memory access" in str(err) or "unspecified launch failure" in str(err):
                raise FatalDeviceError(_first_line(err))

    def _compile(self, fn: Callable, warm: Callable[[Callable], Any]) -> tuple[Callable | None, float, str | None]:
        """torch.compile(fn, dynamic=False), warmed up by warm(compiled); (compiled, seconds, error)."""
        import torch._dynamo

        torch._dynamo.reset()
        t0 = time.perf_counter()
        try:
            compiled = torch.compile(fn, dynamic=False)
            warm(compiled)
            _sync(self.device)
        except Exception as err:
            self._after_error(err)
            return None, time.perf_counter() - t0, f"{type(err).__name__}: {_first_line(err)}"
        seconds = time.perf_counter() - t0
        self.compile_s_total += seconds
        return compiled, seconds, None

    def want_compile(self, case: Case, fwdbwd: bool = False) -> bool:
        if self.args.no_compile or not self.budget.allow_compile:
            return False
        if self.args.compile_all:
            return True
        return case.compile_fwdbwd if fwdbwd else case.compile

    def has(self, op: str) -> bool:
        return self.ours is not None and op not in self.ours_missing

    # -- bookkeeping ----------------------------------------------------------------------------

    def new_record(self, case: Case) -> dict:
        pl, pr = case.pads
        rec = {"id": case.id, "label": case.label, "kind": case.kind, "group": case.group, "model": case.model,
               "shape": {"B": case.B, "C": case.C, "Cout": case.c_out, "L": case.L, "L_out": case.L_out,
                         "K": case.K, "stride": case.stride, "dilation": case.dilation, "padding": case.padding,
                         "pad_left": pl, "pad_right": pr},
               "precision": case.precision, "x_dtype": str(case.x_dtype).removeprefix("torch."),
               "w_dtype": str(case.w_dtype).removeprefix("torch."), "layout": case.layout,
               "passes": {p: {"ms": {}} for p in case.passes()}, "check": {}, "ok": None, "error": None,
               "notes": []}
        return rec

    # -- depthwise -----------------------------------------------------------------------------

    def run_depthwise(self, case: Case) -> dict:
        rec = self.new_record(case)
        dev, xdt, wdt = self.device, case.x_dtype, case.w_dtype
        B, C, L, K = case.B, case.C, case.L, case.K
        pl, pr = case.pads
        s, d = case.stride, case.dilation
        xbytes = B * C * L * torch.finfo(xdt).bits // 8
        ybytes = B * C * case.L_out * torch.finfo(xdt).bits // 8
        rec["bytes"] = {"fwd": xbytes + ybytes, "bwd": 2 * xbytes + ybytes, "fwdbwd": 3 * xbytes + 2 * ybytes}
        rec["flops"] = {"fwd": 2 * B * C * case.L_out * K}
        rec["flops"]["bwd"] = 2 * rec["flops"]["fwd"]
        rec["flops"]["fwdbwd"] = 3 * rec["flops"]["fwd"]

        w = _param((C, K), 1 / math.sqrt(K), wdt, dev)
        b = _param((C,), 0.1, wdt, dev)
        sets = []
        for _ in range(n_sets(xbytes + ybytes)):
            x = _activation(B, C, L, case.layout, xdt, dev).requires_grad_()
            dy = _activation(B, C, case.L_out, case.layout, xdt, dev)
            sets.append((x, dy))
        ours = self.ours
        run_peer = self.peer is not None and case.peer_applies
        if case.peer_applies and self.peer is None:
            rec["notes"].append(f"{PEER}: {self.args.peer_missing}")

        def f_ours(x):
            return ours.depthwise(x, w, b, s, case.pad_arg, d)

        def f_eager(x):
            return eager_depthwise(x, w, b, s, pl, pr, d)

        def f_peer(x):
            return self.peer(x, w, b, activation=None)

        # Correctness against float64, forward and all three gradients.
        x0, dy0 = sets[0]
        with torch.no_grad():
            x64, w64, b64, dy64 = (t.detach().double() for t in (x0, w, b, dy0))
        with torch.enable_grad():
            x64.requires_grad_(), w64.requires_grad_(), b64.requires_grad_()
            y64 = eager_depthwise(x64, w64, b64, s, pl, pr, d)
            g64 = torch.autograd.grad(y64, (x64, w64, b64), dy64) if case.grad else None
        y64 = y64.detach()
        del x64, w64, b64, dy64
        impls: dict[str, Callable] = {"eager": f_eager}
        if self.has("depthwise"):
            impls["ours"] = f_ours
        if run_peer:
            impls[PEER] = f_peer

        def grads_of(name, fn):
            if name == "ours" and self.has("depthwise_backward"):
                return ours.depthwise_backward(dy0, x0.detach(), w.detach(), s, pl, pr, d)
            with torch.enable_grad():
                return torch.autograd.grad(fn(x0), (x0, w, b), dy0)

        self._check_accuracy(rec, case, impls, x0, y64, g64, ("dx", "dw", "db"), grads_of, ("ours", PEER))
        del y64, g64

        # Forward.
        fwd_sets = [(x.detach(),) for x, _ in sets]

        if self.has("depthwise"):
            self._try_time(rec, "fwd", "ours", lambda: rotating(no_grad(f_ours), fwd_sets))
        self._try_time(rec, "fwd", "eager", lambda: rotating(no_grad(f_eager), fwd_sets))
        if run_peer:
            self._try_time(rec, "fwd", PEER, lambda: rotating(no_grad(f_peer), fwd_sets))
        if self.want_compile(case):
            compiled, secs, err = self._compile(f_eager, lambda cf: no_grad(cf)(fwd_sets[0][0]))
            rec["compile_s"] = {"fwd": secs}
            if compiled is None:
                rec["passes"]["fwd"].setdefault("errors", {})["compile"] = err
            else:
                with torch.no_grad():
                    rec["check"]["fwd"]["compile"] = rel_err(compiled(fwd_sets[0][0]), eager_depthwise(
                        *(t.detach().double() for t in (fwd_sets[0][0], w, b)), s, pl, pr, d))
                self._try_time(rec, "fwd", "compile", lambda: rotating(no_grad(compiled), fwd_sets))
            compiled = None

        if not case.grad:
            return rec
        # Backward alone: our backward operator called directly; eager and the peer through autograd
        # on a held graph (retain_graph), which runs their backward kernels only.
        if "bwd" in rec["passes"]:
            if self.has("depthwise_backward"):
                bwd_sets = [(dy, x.detach()) for x, dy in sets]
                wd = w.detach()
                self._try_time(rec, "bwd", "ours", lambda: rotating(
                    lambda dy, x: ours.depthwise_backward(dy, x, wd, s, pl, pr, d), bwd_sets))
                rec["passes"]["bwd"]["method"] = {
                    "ours": "direct op (torch.ops.sepconv1d.depthwise_conv1d_backward)"}
            for name, fn in (("eager", f_eager), (PEER, f_peer)):
                if name == PEER and not run_peer:
                    continue
                self._try_time(rec, "bwd", name, lambda fn=fn: self._held_graph_backward(fn, sets, (w, b)))

        # Forward + backward through autograd.
        for name, fn, ok in (("ours", f_ours, self.has("depthwise")), ("eager", f_eager, True),
                             (PEER, f_peer, run_peer)):
            if ok:
                self._try_time(rec, "fwdbwd", name, lambda fn=fn: self._fwdbwd(fn, sets, (w, b)))

        # Against the peer, also the GPU time alone: the sum of the kernels one call launches
        # (profiler), both backwards through autograd on a held graph. The timings above include
        # host time wherever a call's launches take longer than its kernels, as causal-conv1d's
        # Python backward does on a slow host; this says which kernels are faster.
        if run_peer and self.has("depthwise") and self.device.type == "cuda":
            dev = rec["device_ms"] = {"fwd": {}, "bwd": {}, "method": "torch.profiler: kernel durations per call"}
            for name, fn in (("ours", f_ours), (PEER, f_peer)):
                for pname, make in (("fwd", lambda fn=fn: rotating(no_grad(fn), fwd_sets)),
                                    ("bwd", lambda fn=fn: self._held_graph_backward(fn, sets, (w, b)))):
                    if pname == "bwd" and not case.grad:
                        continue
                    try:
                        dev[pname][name] = kernel_ms(make())
                    except Exception as err:
                        dev.setdefault("errors", {})[f"{pname} {name}"] = f"{type(err).__name__}: {_first_line(err)}"
                        self._after_error(err)
        return rec

    @staticmethod
    def _held_graph_backward(fn, sets, params):
        with torch.enable_grad():
            held = [(fn(x), x, dy) for x, dy in sets]

        def call(y, x, dy):
            return torch.autograd.grad(y, (x, *params), dy, retain_graph=True)

        return rotating(call, held)

    @staticmethod
    def _fwdbwd(fn, sets, params):
        def call(x, dy):
            with torch.enable_grad():
                return torch.autograd.grad(fn(x), (x, *params), dy)

        return rotating(call, sets)

    def _check_accuracy(self, rec: dict, case: Case, impls: dict[str, Callable], x0: torch.Tensor,
                        y64: torch.Tensor, g64: Sequence[torch.Tensor] | None, grad_names: Sequence[str],
                        grads_of: Callable, subjects: Sequence[str]) -> None:
        """Relative errors of every implementation against the float64 reference: the forward
        output, and with case.grad the gradients grads_of(name, fn) returns (named grad_names);
        then the verdict for `subjects`. An implementation that raises is recorded, not fatal."""
        fwd_err, bwd_err = {}, {}
        for name, fn in impls.items():
            try:
                with torch.no_grad():
                    fwd_err[name] = rel_err(fn(x0), y64)
                if case.grad:
                    grads = grads_of(name, fn)
                    bwd_err[name] = {g: rel_err(t, r) for g, t, r in zip(grad_names, grads, g64, strict=True)}
                    del grads
            except Exception as err:
                rec["check"].setdefault("errors", {})[name] = f"{type(err).__name__}: {_first_line(err)}"
                self._after_error(err)
        rec["check"].update({"fwd": fwd_err, "bwd": bwd_err, "tolerance": TOLERANCE[case.precision]})
        self._verdict(rec, case, subjects)

    def _verdict(self, rec: dict, case: Case, subjects: Sequence[str]) -> None:
        chk = rec["check"]
        verdicts = {}
        for who in subjects:
            if who not in chk["fwd"]:
                continue
            ok = judge({"y": chk["fwd"][who]}, {"y": chk["fwd"].get("eager")}, case.precision)
            if who in chk["bwd"]:
                ok = ok and judge(chk["bwd"][who], chk["bwd"].get("eager", {}), case.precision)
            elif who == "ours" and case.grad:
                ok = False  # the forward worked but the backward raised
            verdicts[who] = ok
        if "ours" in chk.get("errors", {}):
            verdicts["ours"] = False
        chk["verdict"] = verdicts
        rec["ok"] = verdicts.get("ours")

    # -- separable -----------------------------------------------------------------------------

    def run_separable(self, case: Case) -> dict:
        rec = self.new_record(case)
        dev, xdt, wdt = self.device, case.x_dtype, case.w_dtype
        B, Cin, Cout, L, K, Lo = case.B, case.C, case.Cout, case.L, case.K, case.L_out
        pl, pr = case.pads
        s, d = case.stride, case.dilation
        isz, wsz = torch.finfo(xdt).bits // 8, torch.finfo(wdt).bits // 8
        xbytes, ybytes = B * Cin * L * isz, B * Cout * Lo * isz
        wbytes = (Cin * K + Cin + Cout * Cin + Cout) * wsz
        rec["bytes"] = {"fwd": xbytes + ybytes + wbytes, "bwd": 2 * xbytes + ybytes + 2 * wbytes}
        rec["bytes"]["fwdbwd"] = rec["bytes"]["fwd"] + rec["bytes"]["bwd"]
        fl = 2 * B * Lo * Cin * Cout + 2 * B * Lo * Cin * K
        rec["flops"] = {"fwd": fl, "bwd": 2 * fl, "fwdbwd": 3 * fl}
        rec["intermediate_bytes"] = B * Cin * Lo * isz

        dw = _param((Cin, K), 1 / math.sqrt(K), wdt, dev)
        dwb = _param((Cin,), 0.1, wdt, dev)
        pw = _param((Cout, Cin), 1 / math.sqrt(Cin), wdt, dev)
        pwb = _param((Cout,), 0.1, wdt, dev)
        params = (dw, dwb, pw, pwb)
        sets = []
        for _ in range(n_sets(xbytes + ybytes)):
            x = _activation(B, Cin, L, case.layout, xdt, dev).requires_grad_()
            dy = _activation(B, Cout, Lo, case.layout, xdt, dev)
            sets.append((x, dy))
        ours = self.ours

        def f_ours(x):
            return ours.separable(x, dw, dwb, pw, pwb, s, case.pad_arg, d)

        def f_eager(x):
            return eager_separable(x, dw, dwb, pw, pwb, s, pl, pr, d)

        with precision_mode(case.precision):
            self._separable_body(case, rec, sets, params, f_ours, f_eager)
        return rec

    def _separable_body(self, case, rec, sets, params, f_ours, f_eager):
        pl, pr = case.pads
        s, d = case.stride, case.dilation
        ours = self.ours
        x0, dy0 = sets[0]
        with torch.no_grad():
            x64, dy64 = x0.detach().double(), dy0.double()
            p64 = [p.detach().double() for p in params]
        with torch.enable_grad():
            x64.requires_grad_()
            for p in p64:
                p.requires_grad_()
            y64 = eager_separable(x64, *p64, s, pl, pr, d)
            g64 = torch.autograd.grad(y64, (x64, *p64), dy64) if case.grad else None
        y64 = y64.detach()
        del x64, dy64, p64
        impls = {"eager": f_eager}
        if self.has("separable"):
            impls["ours"] = f_ours

        def grads_of(name, fn):
            with torch.enable_grad():
                return torch.autograd.grad(fn(x0), (x0, *params), dy0)

        self._check_accuracy(rec, case, impls, x0, y64, g64, ("dx", "ddw", "ddw_b", "dpw", "dpw_b"),
                             grads_of, ("ours",))
        del y64, g64

        fwd_sets = [(x.detach(),) for x, _ in sets]

        if self.has("separable"):
            self._try_time(rec, "fwd", "ours", lambda: rotating(no_grad(f_ours), fwd_sets))
        self._try_time(rec, "fwd", "eager", lambda: rotating(no_grad(f_eager), fwd_sets))
        if self.want_compile(case):
            compiled, secs, err = self._compile(f_eager, lambda cf: no_grad(cf)(fwd_sets[0][0]))
            rec.setdefault("compile_s", {})["fwd"] = secs
            if compiled is None:
                rec["passes"]["fwd"].setdefault("errors", {})["compile"] = err
            else:
                self._try_time(rec, "fwd", "compile", lambda: rotating(no_grad(compiled), fwd_sets))
            compiled = None

        if "bwd" in rec["passes"]:
            if self.has("separable") and self.ours_missing.get("separable_backward") is None:
                pd = [p.detach() for p in params[:3]]
                bwd_sets = [(dy, x.detach()) for x, dy in sets]
                self._try_time(rec, "bwd", "ours", lambda: rotating(
                    lambda dy, x: ours.separable_backward(dy, x, pd[0], pd[1], pd[2], s, pl, pr, d), bwd_sets))
                rec["passes"]["bwd"]["method"] = {
                    "ours": "direct op (torch.ops.sepconv1d.separable_conv1d_backward)"}
            self._try_time(rec, "bwd", "eager", lambda: self._held_graph_backward(f_eager, sets, params))

        if not case.grad:
            return
        if self.has("separable"):
            self._try_time(rec, "fwdbwd", "ours", lambda: self._fwdbwd(f_ours, sets, params))
        self._try_time(rec, "fwdbwd", "eager", lambda: self._fwdbwd(f_eager, sets, params))
        # The training step's GPU time alone (queued behind a GPU sleep): a step whose host time
        # exceeds its GPU work is timed above at the host's speed, which differs up to 10x between
        # lent machines; this says whose kernels are faster.
        if self.device.type == "cuda":
            dev = rec["device_ms"] = {"fwdbwd": {}, "method": "queued behind a GPU sleep, CUDA events"}
            for name, fn, ok in (("ours", f_ours, self.has("separable")), ("eager", f_eager, True)):
                if not ok:
                    continue
                try:
                    dev["fwdbwd"][name] = queued_gpu_ms(self._fwdbwd(fn, sets, params))
                except Exception as err:
                    dev.setdefault("errors", {})[f"fwdbwd {name}"] = f"{type(err).__name__}: {_first_line(err)}"
                    self._after_error(err)
        if self.want_compile(case, fwdbwd=True):
            def warm(cf):
                x, dy = sets[0]
                with torch.enable_grad():
                    torch.autograd.grad(cf(x), (x, *params), dy)

            compiled, secs, err = self._compile(f_eager, warm)
            rec.setdefault("compile_s", {})["fwdbwd"] = secs
            if compiled is None:
                rec["passes"]["fwdbwd"].setdefault("errors", {})["compile"] = err
            else:
                self._try_time(rec, "fwdbwd", "compile", lambda: self._fwdbwd(compiled, sets, params))
            compiled = None

    # -- peak memory of a training step ---------------------------------------------------------

    def training_memory(self, case: Case) -> dict:
        """Peak bytes allocated by forward + backward of the linear loss <y, dy> (i.e. y.backward(dy))."""
        dev = self.device
        B, Cin, Cout, L, K, Lo = case.B, case.C, case.Cout, case.L, case.K, case.L_out
        xdt, isz = case.x_dtype, torch.finfo(case.x_dtype).bits // 8
        out = {"case": case.id, "label": case.label, "precision": case.precision,
               "intermediate_bytes": B * Cin * Lo * isz, "x_bytes": B * Cin * L * isz, "y_bytes": B * Cout * Lo * isz,
               "method": "peak of torch.cuda.max_memory_allocated during y = f(x); y.backward(dy), "
                         "minus the memory allocated before (inputs, weights, dy)"}
        pl, pr = case.pads
        dw = _param((Cin, K), 0.3, case.w_dtype, dev)
        dwb = _param((Cin,), 0.1, case.w_dtype, dev)
        pw = _param((Cout, Cin), 0.05, case.w_dtype, dev)
        pwb = _param((Cout,), 0.1, case.w_dtype, dev)
        x = _activation(B, Cin, L, case.layout, xdt, dev).requires_grad_()
        dy = _activation(B, Cout, Lo, case.layout, xdt, dev)
        impls = {"eager": lambda: eager_separable(x, dw, dwb, pw, pwb, case.stride, pl, pr, case.dilation)}
        if self.has("separable"):
            impls["ours"] = lambda: self.ours.separable(x, dw, dwb, pw, pwb, case.stride, case.pad_arg,
                                                        case.dilation)
        with precision_mode(case.precision):
            for fn in impls.values():  # first allocate the libraries' persistent workspaces
                try:
                    fn().backward(dy)
                except Exception:
                    pass
            for name, fn in impls.items():
                try:
                    for t in (x, dw, dwb, pw, pwb):
                        t.grad = None
                    gc.collect()
                    torch.cuda.synchronize()
                    torch.cuda.empty_cache()
                    torch.cuda.reset_peak_memory_stats()
                    base = torch.cuda.memory_allocated()
                    y = fn()
                    y.backward(dy)
                    del y
                    torch.cuda.synchronize()
                    out[f"{name}_peak_bytes"] = torch.cuda.max_memory_allocated() - base
                except Exception as err:
                    out[f"{name}_error"] = f"{type(err).__name__}: {_first_line(err)}"
                    self._after_error(err)
        for t in (x, dw, dwb, pw, pwb):
            t.grad = None
        return out


class FatalDeviceError(RuntimeError):
    pass


# ---------------------------------------------------------------------------------------------
# Derived figures, summary, table
# ---------------------------------------------------------------------------------------------


def derive(rec: dict, ceilings: Ceilings, kind: str) -> None:
    """Adds GB/s, TFLOP/s, fractions of the ceilings or roofline and speedups to each pass."""
    prec = rec["precision"]
    if "bytes" not in rec:  # the case raised before its sizes were worked out
        return
    for pname, p in rec["passes"].items():
        ms = p["ms"]
        nbytes, flops = rec["bytes"][pname], rec["flops"][pname]
        copy = ceilings.copy_gbps(nbytes) if any(v for v in ms.values()) else None
        p["bytes"], p["flops"] = nbytes, flops
        p["copy_ceiling_gbps"] = copy
        copy_ms = nbytes / copy / 1e6 if copy else None
        p["gbps"] = {k: nbytes / v / 1e6 for k, v in ms.items() if v}
        p["tflops"] = {k: flops / v / 1e9 for k, v in ms.items() if v}
        if copy_ms:
            p["frac_copy"] = {k: copy_ms / v for k, v in ms.items() if v}
        if ceilings.copy_2gib_gbps:
            p["frac_copy_2gib"] = {k: nbytes / v / 1e6 / ceilings.copy_2gib_gbps for k, v in ms.items() if v}
        if kind == "separable":
            gemm = ceilings.gemm_tflops(prec)
            compute_ms = flops / gemm / 1e9 if gemm else None
            parts = [t for t in (copy_ms, compute_ms) if t]
            if parts:
                floor = max(parts)
                p["roofline_ms"] = floor
                p["roofline_bound"] = "compute" if compute_ms and floor == compute_ms else "memory"
                p["frac_roofline"] = {k: floor / v for k, v in ms.items() if v}
        ours = ms.get("ours")
        p["speedup"] = {k: v / ours for k, v in ms.items() if k != "ours" and v and ours}


def _geomean(values: Sequence[float]) -> float | None:
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def summarize(records: list[dict]) -> dict:
    out: dict[str, Any] = {}

    def gm(filt, pname, peer):
        vals = [r["passes"][pname]["speedup"].get(peer) for r in records
                if filt(r) and pname in r["passes"] and "speedup" in r["passes"][pname]]
        vals = [v for v in vals if v]
        g = _geomean(vals)
        return {"geomean": g, "n": len(vals)} if g else None

    groups = {
        "depthwise": lambda r: r["kind"] == "depthwise",
        "separable_seed": lambda r: r["kind"] == "separable" and r["group"] == "seed",
        "separable_models": lambda r: r["kind"] == "separable" and r["group"] == "model",
        "separable": lambda r: r["kind"] == "separable",
    }
    def gm_gpu(filt, pname):
        # Speedups in GPU time alone (device_ms, the kernels' durations), over eager.
        vals = []
        for r in records:
            t = (r.get("device_ms") or {}).get(pname) or {}
            if filt(r) and t.get("ours") and t.get("eager"):
                vals.append(t["eager"] / t["ours"])
        g = _geomean(vals)
        return {"geomean": g, "n": len(vals)} if g else None

    for gname, filt in groups.items():
        entry = {}
        for pname in ("fwd", "bwd", "fwdbwd"):
            for peer in ("eager", "compile", PEER):
                v = gm(filt, pname, peer)
                if v:
                    entry[f"{pname}_vs_{peer}"] = v
        if gname != "depthwise":
            v = gm_gpu(filt, "fwdbwd")
            if v:
                entry["fwdbwd_gpu_vs_eager"] = v
        if entry:
            out[gname] = entry
    out["failed_checks"] = [r["id"] for r in records if r.get("ok") is False]
    out["errors"] = [r["id"] for r in records if r.get("error")]
    return out


def _fmt(v: float | None, spec: str, dash: str = "-") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return dash
    return format(v, spec)


def _sig(v: float | None, dash: str = "-") -> str:
    """About three significant figures, never in scientific notation."""
    if v is None or not math.isfinite(v):
        return dash
    a = abs(v)
    spec = ".0f" if a >= 100 else ".1f" if a >= 10 else ".2f" if a >= 1 else ".3f"
    return format(v, spec)


def _check_cell(rec: dict) -> str:
    if rec.get("error"):
        return "ERROR"
    ok = rec.get("ok")
    worst = worst_error(rec.get("check", {}))
    if ok is None:
        return "n/a"
    return ("ok " if ok else "FAIL ") + _fmt(worst, ".0e", "")


def format_table(result: dict) -> str:
    """The plain-text table printed at the end of a run."""
    env, ceil = result["env"], result["ceilings"]
    lines = []
    lines.append(f"sepconv1d {env.get('sepconv1d')} [{env.get('ours_impl')}] on {env.get('device')}"
                 + (f" ({env.get('sm_count')} SMs)" if env.get("sm_count") else "")
                 + f" | torch {env.get('torch')}, CUDA {env.get('cuda')}, triton {env.get('triton')}"
                 + f" | {env.get('timer')}")
    host = env.get("host_add_us") or {}
    if host.get("start") is not None:
        lines.append(f"host speed (torch.add per call, start / end of the run): {_sig(host.get('start'))} / "
                     f"{_sig(host.get('end'))} us")
    step = env.get("host_step_us") or {}
    if step.get("start") is not None:
        lines.append(f"host speed (a tiny eager training step, start / end of the run): "
                     f"{_sig(step.get('start'))} / {_sig(step.get('end'))} us")
    g = ceil.get("gemm_tflops", {})
    gemm = ", ".join(f"{k} {_sig(v)}" for k, v in g.items())
    moved = ceil.get("copy_2gib_bytes_moved")
    lines.append(f"ceilings: copy {_sig(ceil.get('copy_2gib_gbps'))} GB/s"
                 + (f" ({moved / 2 / (1 << 30):g} GiB buffer)" if moved else "")
                 + f" | GEMM {ceil.get('gemm_n')}^3 TFLOP/s: {gemm or '-'}")
    width = min(max([len(r["label"]) for r in result["cases"]] + [10]), 64)
    header = (f"{'case':<{width}} {'pass':<6} {'ours ms':>8} {'eager ms':>8} {'GB/s':>6} {'TFLOP/s':>7} "
              f"{'%peak':>5} {'x eager':>7} {'x compile':>9} {'x cc1d':>6}  check")
    lines += ["", header, "-" * len(header)]
    for rec in result["cases"]:
        first = True
        for pname, p in rec["passes"].items():
            ms = p.get("ms", {})
            sp = p.get("speedup", {})
            frac = (p.get("frac_roofline") if rec["kind"] == "separable" else p.get("frac_copy")) or {}
            peak = f"{100 * frac['ours']:.0f}%" if frac.get("ours") else "-"
            label = rec["label"] if first else ""
            lines.append(
                f"{label:<{width}} {pname:<6} {_sig(ms.get('ours')):>8} {_sig(ms.get('eager')):>8} "
                f"{_sig(p.get('gbps', {}).get('ours')):>6} {_sig(p.get('tflops', {}).get('ours')):>7} {peak:>5} "
                f"{_sig(sp.get('eager')):>7} {_sig(sp.get('compile')):>9} {_sig(sp.get(PEER)):>6}  "
                f"{_check_cell(rec) if first else ''}".rstrip())
            first = False
        if rec.get("error"):
            lines.append(f"{'':<{width}} error: {rec['error']}")
        errors = {f"{pn}/{impl}": e for pn, p in rec["passes"].items() for impl, e in p.get("errors", {}).items()}
        errors.update({f"check/{impl}": e for impl, e in rec.get("check", {}).get("errors", {}).items()})
        for where, e in errors.items():
            lines.append(f"{'':<{width}} {where}: {e}")
    lines.append("")
    lines.append("%peak: depthwise = share of the copy bandwidth measured for the same bytes; "
                 "separable = roofline floor / time. x N = their time / ours; cc1d = Dao-AILab causal-conv1d.")
    summ = result.get("summary", {})
    for gname, entry in summ.items():
        if not isinstance(entry, dict):
            continue
        parts = [f"{k} {v['geomean']:.2f}x (n={v['n']})" for k, v in entry.items()]
        lines.append(f"geomean speedup, {gname}: " + "; ".join(parts))
    for m in result.get("memory", []):
        mib = 1 << 20
        lines.append(f"training-step peak ({m['label']}): ours {_sig(_div(m.get('ours_peak_bytes'), mib))} MiB, "
                     f"eager {_sig(_div(m.get('eager_peak_bytes'), mib))} MiB; "
                     f"eager's intermediate {m['intermediate_bytes'] / mib:.0f} MiB")
    if summ.get("failed_checks"):
        lines.append("FAILED correctness checks: " + ", ".join(summ["failed_checks"]))
    if summ.get("errors"):
        lines.append("cases that raised: " + ", ".join(summ["errors"]))
    for note in result.get("notes", []):
        lines.append("note: " + note)
    return "\n".join(lines)


def _div(a, b):
    return a / b if a is not None else None


# ---------------------------------------------------------------------------------------------
# Environment and output
# ---------------------------------------------------------------------------------------------


def _driver_version() -> str | None:
    try:
        import pynvml  # type: ignore[import-not-found]

        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:
        pass
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=15, check=False)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except Exception:
        pass
    return None


def _host_us_behind_sleep(device: torch.device, fn: Callable[[], Any], calls: int, sleep_cycles: int) -> float:
    """Host time per call of fn, warmed up, then queued behind a GPU sleep of sleep_cycles so the
    host never waits for the device."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize(device)
    torch.cuda._sleep(sleep_cycles)
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    host_us = (time.perf_counter() - t0) * 1e6 / calls
    torch.cuda.synchronize(device)
    return host_us


def host_launch_us(device: torch.device, calls: int = 1000) -> float | None:
    """Host time of one small CUDA op (torch.add of 16 elements), queued behind a GPU sleep so the
    host never waits for the device. Lent hosts differ by up to 10x here, and a training step whose
    host time exceeds its device time is timed at the host's speed: record it beside the numbers."""
    if device.type != "cuda":
        return None
    a = torch.ones(16, device=device)
    return _host_us_behind_sleep(device, lambda: a.add_(1), calls, int(2e8))  # ~0.1 s of GPU time


def host_step_us(device: torch.device, steps: int = 100) -> float | None:
    """Host time of a tiny eager training step (depthwise then pointwise F.conv1d, B1 C8 -> 16 L16,
    and torch.autograd.grad of its five inputs), queued behind a GPU sleep: the Python, dispatcher
    and autograd-engine path, its hand-off to the device thread included, that bounds the host-bound
    steps of ours and eager alike. One torch.add (host_launch_us) did not tell apart hosts whose
    model steps differed by 15% (csrc/NOTES.md, forty-fifth and forty-seventh sessions)."""
    if device.type != "cuda":
        return None
    gen = torch.Generator(device="cpu").manual_seed(0)
    def param(*shape):
        return torch.randn(*shape, generator=gen).to(device).requires_grad_(True)
    x, dw, db, pw, pb = param(1, 8, 16), param(8, 1, 3), param(8), param(16, 8, 1), param(16)
    grad = torch.randn(1, 16, 16, generator=gen).to(device)
    inputs = (x, dw, db, pw, pb)

    def step():
        y = F.conv1d(F.conv1d(x, dw, db, padding=1, groups=8), pw, pb)
        torch.autograd.grad(y, inputs, grad)

    return _host_us_behind_sleep(device, step, steps, int(5e8))  # ~0.25 s of GPU time


def collect_env(device: torch.device, timer: Timer, ours: Ours | None, peer_version: str | None) -> dict:
    env: dict[str, Any] = {
        "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
        "triton": timer.triton_version, "timer": timer.method, "platform": platform.platform(),
        "sepconv1d": ours.version if ours else None, "ours_impl": ours.name if ours else "missing",
        PEER: peer_version, "cpu_threads": torch.get_num_threads(),
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env.update({
            "device": props.name, "sm_count": props.multi_processor_count,
            "capability": f"{props.major}.{props.minor}", "total_memory_bytes": props.total_memory,
            "l2_cache_bytes": getattr(props, "L2_cache_size", None),
            "cudnn": torch.backends.cudnn.version(), "driver": _driver_version(),
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "host_add_us": {"start": host_launch_us(device)},
            "host_step_us": {"start": host_step_us(device)},
        })
    else:
        env.update({"device": f"CPU ({platform.processor() or platform.machine()})", "sm_count": None,
                    "cudnn": None, "driver": None})
    if env["triton"] is None:
        try:
            import triton

            env["triton"] = getattr(triton, "__version__", "?")
        except Exception:
            env["triton"] = None
    return env


def device_slug(env: dict, device: torch.device) -> str:
    name = env.get("device", "cpu") if device.type == "cuda" else "cpu"
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "device"


def _json_default(o):
    if isinstance(o, float):
        return None
    if isinstance(o, torch.dtype | torch.device):
        return str(o)
    return str(o)


def _clean(o):
    """JSON cannot hold NaN or inf: write them as null."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_clean(v) for v in o]
    return o


def write_json(result: dict, path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(_clean(result), f, indent=1, default=_json_default)
        f.write("\n")
    os.replace(tmp, path)


class Progress:
    def __init__(self, total: int, enabled: bool):
        self.total, self.i, self.t0 = total, 0, time.perf_counter()
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, unit="case", dynamic_ncols=True, file=sys.stderr)
            except Exception:
                self.bar = None
        self.enabled = enabled

    def start(self, label: str) -> None:
        if self.bar is not None:
            self.bar.set_description_str(label[:60])
        elif self.enabled:
            print(f"[{self.i + 1:>3}/{self.total}] {time.perf_counter() - self.t0:6.1f}s  {label}",
                  file=sys.stderr, flush=True)

    def step(self) -> None:
        self.i += 1
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m sepconv1d.bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer cases and shorter timing windows")
    p.add_argument("--only", choices=("depthwise", "separable"), help="run one family of cases")
    p.add_argument("--out", metavar="PATH", help="JSON path (default benchmarks/results/<device>-<time>.json; "
                                                  "the CPU demo writes JSON only when this is given)")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile comparisons")
    p.add_argument("--compile-all", action="store_true", help="compare with torch.compile on every case "
                                                              "(the default does a subset, to bound compile time)")
    p.add_argument("--no-peers", action="store_true", help="skip Dao-AILab causal-conv1d")
    p.add_argument("--cpu-demo", action="store_true", help="run the small CPU demo even where CUDA exists")
    p.add_argument("--device", default=None, help="torch device for the sweep (default: cuda if available)")
    p.add_argument("--warmup", type=float, default=None, help="warm-up per timing, ms (default 25; quick 10)")
    p.add_argument("--rep", type=float, default=None, help="measuring window per timing, ms (default 100; quick 40)")
    p.add_argument("--gemm-n", type=int, default=8192, help="GEMM ceiling size n for n^3 (default 8192)")
    p.add_argument("--budget-s", type=float, default=210.0,
                   help="wall-time budget of the sweep; timing windows shrink, then compile is dropped, "
                        "to stay inside it (default 210)")
    p.add_argument("--filter", metavar="REGEX", help="run only cases whose label or id matches REGEX (see --list)")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--events", action="store_true", help="time with CUDA events even where triton imports")
    p.add_argument("--tiny", action="store_true", help="shrink every case (tests the harness; numbers mean nothing)")
    p.add_argument("--stand-in", action="store_true",
                   help="time a pure-PyTorch stand-in instead of sepconv1d (tests the harness)")
    return p.parse_args(argv)


def build_cases(args, demo: bool) -> list[Case]:
    if demo:
        cases = cpu_demo_cases()
    else:
        cases = []
        if args.only in (None, "depthwise"):
            cases += depthwise_cases(args.quick)
        if args.only in (None, "separable"):
            cases += separable_cases(args.quick)
    if demo and args.only:
        cases = [c for c in cases if c.kind == args.only]
    if args.tiny:
        cases = [shrink(c) for c in cases]
    if args.filter:
        rx = re.compile(args.filter)
        cases = [c for c in cases if rx.search(c.label) or rx.search(c.id)]
    return cases


def estimate_timings(case: Case, has_peer: bool, compile_on: bool) -> int:
    n = 2 * len(case.passes())  # ours and eager for each pass
    if case.kind == "depthwise" and case.peer_applies and has_peer:
        n += len(case.passes())
    if compile_on:
        n += int(case.compile) + int(case.compile_fwdbwd)
    return n


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    t_start = time.perf_counter()
    if args.device:
        device = torch.device(args.device)
    else:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    demo = args.cpu_demo or (device.type == "cpu" and not args.tiny and not args.list)
    if args.cpu_demo:
        device = torch.device("cpu")
    if device.type == "cuda" and not torch.cuda.is_available():
        _log("CUDA is not available")
        return 2
    cpu = device.type == "cpu"
    if cpu and not args.compile_all:
        args.no_compile = True  # inductor's C++ build alone would take most of a minute
    quick = args.quick or demo
    warmup = args.warmup if args.warmup is not None else (10.0 if quick else 25.0)
    rep = args.rep if args.rep is not None else (40.0 if quick else 100.0)
    if cpu and args.rep is None:
        warmup, rep = 20.0, 200.0
    if demo and args.budget_s == parse_args([]).budget_s:
        args.budget_s = 50.0

    cases = build_cases(args, demo)
    if args.list:
        for c in cases:
            print(f"{c.id:<70} {c.label}")
        return 0

    torch.manual_seed(0)
    if device.type == "cuda":
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(device)

    ours, why = load_ours(args.stand_in)
    ours_missing: dict[str, str] = {}
    if ours is None:
        _log(f"sepconv1d: {why}; timing the baselines only (ours is reported as missing)")
    else:
        ours_missing = probe_ours(ours, device)
        for op, reason in ours_missing.items():
            _log(f"sepconv1d: {op} does not run on {device.type} ({reason}); its cases report ours as missing")
    if ours is not None and "separable" in ours_missing:
        ours_missing.setdefault("separable_backward", "separable is missing")
    # causal-conv1d is CUDA only; on the CPU it is tried only in harness tests (--tiny).
    peer, peer_version, peer_missing = load_peer(not args.no_peers and (not cpu or args.tiny))
    if cpu and not args.tiny and not args.no_peers:
        peer_missing = "CUDA only"
    args.peer_missing = peer_missing
    if peer is None and not args.no_peers and (not cpu or args.tiny):
        _log(f"{PEER}: {peer_missing}; skipping that comparison")

    timer = Timer(device, warmup, rep, force_events=args.events)
    env = collect_env(device, timer, ours, peer_version)
    stamp = _dt.datetime.now()
    result: dict[str, Any] = {
        "schema": SCHEMA, "timestamp": stamp.isoformat(timespec="seconds"), "mode": "cpu-demo" if demo else "sweep",
        "device_type": device.type, "argv": list(sys.argv[1:] if argv is None else argv),
        "options": {"quick": args.quick, "only": args.only, "compile": not args.no_compile,
                    "compile_all": args.compile_all, "peers": not args.no_peers, "tiny": args.tiny,
                    "stand_in": args.stand_in, "warmup_ms": warmup, "rep_ms": rep, "budget_s": args.budget_s,
                    "rotate_sets": ROTATE_SETS, "rotate_below_bytes": ROTATE_BELOW_BYTES},
        "env": env, "ours_missing": ({"all": why} if ours is None else ours_missing),
        "peer_missing": peer_missing, "tolerance": TOLERANCE, "eager_err_factor": EAGER_ERR_FACTOR,
        "cases": [], "memory": [], "notes": [],
    }
    if args.tiny or args.stand_in:
        result["notes"].append("harness test run (--tiny/--stand-in): the numbers mean nothing")
    if args.out:
        out_path = args.out
    elif demo:
        out_path = None
    else:
        out_path = os.path.join("benchmarks", "results",
                                f"{device_slug(env, device)}-{stamp.strftime('%Y%m%d-%H%M%S')}.json")

    _log(f"device: {env['device']} | torch {env['torch']} | timer: {timer.method} | {len(cases)} cases")

    # Ceilings.
    ceilings = Ceilings(device, timer, args.gemm_n if not cpu else min(args.gemm_n, 1024))
    t0 = time.perf_counter()
    ceilings.measure_copy_2gib()
    # The CPU demo's precisions only (its bf16 case's floor needs the bf16 rate: AMX where present).
    ceilings.measure_gemm(("bf16", "fp16", "tf32", "fp32") if not cpu else ("fp32", "bf16"))
    _log(f"ceilings: copy {_fmt(ceilings.copy_2gib_gbps, '.0f')} GB/s; GEMM {ceilings.gemm_n}^3 "
         + ", ".join(f"{k} {_fmt(v, '.1f')}" for k, v in ceilings.gemm.items()) + f" TFLOP/s "
         f"({time.perf_counter() - t0:.1f} s)")

    budget = Budget(args.budget_s, t_start, warmup, rep)
    runner = Runner(args, device, timer, ceilings, ours, ours_missing, peer, budget)
    n_timings = [estimate_timings(c, peer is not None, not args.no_compile) for c in cases]
    n_compiles = [(int(c.compile) + int(c.compile_fwdbwd)) if not args.no_compile else 0 for c in cases]
    est = sum(n_timings) * (warmup + rep) / 1e3 * 2.0 + sum(n_compiles) * Budget.COMPILE_EST_S
    _log(f"about {sum(n_timings)} timings and {sum(n_compiles)} compiles, roughly {est:.0f} s")

    progress = Progress(len(cases), enabled=not args.no_progress)
    status = 0
    try:
        for i, case in enumerate(cases):
            budget.plan(sum(n_timings[i:]), len(cases) - i, sum(n_compiles[i:]), case.label)
            progress.start(case.label)
            t_case = time.perf_counter()
            wall_before = budget.timing_wall
            compile_before = runner.compile_s_total
            try:
                rec = runner.run_depthwise(case) if case.kind == "depthwise" else runner.run_separable(case)
            except FatalDeviceError:
                raise
            except Exception as err:
                rec = runner.new_record(case)
                rec["error"] = f"{type(err).__name__}: {_first_line(err)}"
                rec["traceback"] = traceback.format_exc(limit=6)
                runner._after_error(err)
            derive(rec, ceilings, case.kind)  # measures the copy ceilings for this case's byte counts
            rec["wall_s"] = time.perf_counter() - t_case
            # Outside timing and compiling (compiles are budgeted on their own).
            outside = rec["wall_s"] - (budget.timing_wall - wall_before) - (runner.compile_s_total - compile_before)
            budget.case_overhead.append(max(outside, 0.0))
            rec["timing_window_ms"] = [budget.warmup_ms, budget.rep_ms]
            result["cases"].append(rec)
            progress.step()
            gc.collect()
            if device.type == "cuda":
                torch.cuda.empty_cache()
        if device.type == "cuda" and args.only in (None, "separable"):
            seeds = [c for c in cases if c.kind == "separable" and c.group == "seed" and c.precision in ("fp32", "bf16")]
            for c in seeds:
                result["memory"].append(runner.training_memory(c))
    except FatalDeviceError as err:
        result["notes"].append(f"sweep stopped: the device failed ({err}); later cases did not run")
        status = 1
    except KeyboardInterrupt:
        result["notes"].append("sweep interrupted; later cases did not run")
        status = 130
    finally:
        progress.close()

    result["ceilings"] = ceilings.to_json()
    result["summary"] = summarize(result["cases"])
    result["notes"] += budget.notes
    result["compile_s_total"] = runner.compile_s_total
    if isinstance(env.get("host_add_us"), dict):
        env["host_add_us"]["end"] = host_launch_us(device)
    if isinstance(env.get("host_step_us"), dict):
        env["host_step_us"]["end"] = host_step_us(device)
    result["wall_s"] = time.perf_counter() - t_start
    if ours is None:
        result["notes"].append(f"ours missing: {why}")
    print(format_table(result))
    print(f"\nwall time {result['wall_s']:.1f} s (compile {runner.compile_s_total:.1f} s)")
    if out_path:
        write_json(result, out_path)
        print(f"results: {out_path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
