"""Host time against device time of separable training steps (forward + all five gradients), ours and
eager, and where our step's host time goes.

    python3 -P scripts/host_time.py [--profile] [--cases QuartzNet-first/tf32 Vocos-ConvNeXt/bf16 ...]

Per case and implementation (us per step; rounds alternate ours / eager in one process):
  host    wall clock of a run of steps queued behind a long torch.cuda._sleep (the GPU never waits
          for the host, so this is the host's work alone);
  device  event time of the same steps behind a sleep (the GPU's work alone; the median of three
          runs, _device_timing.device_time_us);
  bench   triton's do_bench of one step with its L2 flush, as the benchmark times it.
A step whose host time exceeds its device time is host-bound: its benchmark time follows the host.
--profile adds torch.profiler's host-side table (self CPU time per op or CUDA runtime call, per
step) of our step and of eager's; --ab-env VAR=value adds ours with that switch set.

Other modes (one per run):
  --timeline  our step's segments on one clock: forward call, autograd's hand-off to its device
              thread, our backward function, the backward operator, the hand-back;
  --split     host time of pieces: raw operators, a Function with canned gradients, one launch,
              one allocation;
  --thread    the backward operator timed inside the engine's backward call against the calling
              thread;
  --op-ab     the backward operator alone with and without --ab-env VAR=value (p20 and median).
Cases are "name/precision": the benchmark's model names (bench.MODEL_SHAPES), "seed" or "tiny",
with tf32, bf16 or fp16.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as tF

import sepconv1d.functional as F
from sepconv1d.bench import MODEL_SHAPES, Case, host_launch_us

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -P leaves the script's folder out
from _device_timing import device_time_us  # noqa: E402

# The benchmark's model shapes (bench.MODEL_SHAPES), the seed shape and a tiny layer.
EXTRA_SHAPES = {"seed": (32, 256, 512, 9, 4096, 1, 1, "same"), "tiny": (2, 8, 16, 3, 64, 1, 1, "same")}
DTYPES = {"tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
DEFAULT = ["QuartzNet-first/tf32", "QuartzNet-first/fp16", "Vocos-ConvNeXt/bf16", "Conformer/fp16",
           "tiny/bf16"]


def shape(case):
    """(B, Cin, Cout, K, L, stride, dilation, (pad_left, pad_right), L_out) of "name/precision"."""
    name = case.split("/")[0]
    found = {m[0]: m[1:9] for m in MODEL_SHAPES} | EXTRA_SHAPES
    if name not in found:
        raise SystemExit(f"unknown case {name!r}; known: {', '.join(found)}")
    b, cin, cout, k, length, stride, dil, padding = found[name]
    c = Case("separable", "model", b, cin, length, k, Cout=cout, stride=stride, dilation=dil,
             padding=padding)
    return b, cin, cout, k, length, stride, dil, c.pads, c.L_out


def make_steps(case, ab_env=None):
    """Training steps of one case: ours, eager, and with ab_env ("VAR=value") ours with that
    environment variable set around each step (for switches the extension reads per call)."""
    b, cin, cout, k, length, stride, dil, (pl, pr), lo = shape(case)
    dt = DTYPES[case.split("/")[1]]
    dev = "cuda"
    dw = (torch.randn(cin, k, device=dev, dtype=dt) / k**0.5).requires_grad_()
    dwb = (0.1 * torch.randn(cin, device=dev, dtype=dt)).requires_grad_()
    pw = (torch.randn(cout, cin, device=dev, dtype=dt) / cin**0.5).requires_grad_()
    pwb = (0.1 * torch.randn(cout, device=dev, dtype=dt)).requires_grad_()
    params = (dw, dwb, pw, pwb)
    sets = [(torch.randn(b, cin, length, device=dev, dtype=dt).requires_grad_(),
             torch.randn(b, cout, lo, device=dev, dtype=dt)) for _ in range(3)]

    def ours(x):
        return F.separable_conv1d(x, dw, pw, dwb, pwb, stride=stride, padding=(pl, pr), dilation=dil)

    def eager(x):
        xp = tF.pad(x, (pl, pr)) if pl != pr else x
        h = tF.conv1d(xp, dw.unsqueeze(1), dwb, stride, pl if pl == pr else 0, dil, cin)
        return tF.conv1d(h, pw.unsqueeze(2), pwb)

    def stepper(fn):
        def step(i):
            x, dy = sets[i % 3]
            return torch.autograd.grad(fn(x), (x, *params), dy)
        return step

    def parts(fn):
        def grad(y, i):
            x, dy = sets[i % 3]
            return torch.autograd.grad(y, (x, *params), dy)
        return (lambda i: fn(sets[i % 3][0])), grad

    out = {"ours": stepper(ours), "eager": stepper(eager), "ours_parts": parts(ours),
           "eager_parts": parts(eager)}
    if ab_env:
        var, value = ab_env.split("=")

        def with_env(i):
            os.environ[var] = value
            try:
                return out["ours"](i)
            finally:
                os.environ.pop(var, None)

        out[f"ours {ab_env}"] = with_env
    return out


def split_steps(case):
    """Pieces of our step and eager's, for --split: each a call of one argument (the input set)."""
    from sepconv1d import _ops

    b, cin, cout, k, length, stride, dil, (pl, pr), lo = shape(case)
    dt = DTYPES[case.split("/")[1]]
    ops = torch.ops.sepconv1d
    dw = (torch.randn(cin, k, device="cuda", dtype=dt) / k**0.5).requires_grad_()
    dwb = (0.1 * torch.randn(cin, device="cuda", dtype=dt)).requires_grad_()
    pw = (torch.randn(cout, cin, device="cuda", dtype=dt) / cin**0.5).requires_grad_()
    pwb = (0.1 * torch.randn(cout, device="cuda", dtype=dt)).requires_grad_()
    params = (dw, dwb, pw, pwb)
    pd = [p.detach() for p in params]
    sets = [(torch.randn(b, cin, length, device="cuda", dtype=dt).requires_grad_(),
             torch.randn(b, cout, lo, device="cuda", dtype=dt)) for _ in range(3)]
    hyper = (stride, pl, pr, dil, True)
    canned = ops.separable_conv1d_backward(sets[0][1], sets[0][0].detach(), pd[0], pd[1], pd[2], *hyper,
                                           True, True, True, True, True)

    class Canned(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, dw_, dwb_, pw_, pwb_):
            with torch._C._AutoDispatchBelowAutograd():
                return ops.separable_conv1d(x, dw_, dwb_, pw_, pwb_, *hyper)

        @staticmethod
        def backward(ctx, g):
            return canned

    def eager_fwd(x):
        xp = tF.pad(x, (pl, pr)) if pl != pr else x
        h = tF.conv1d(xp, dw.unsqueeze(1), dwb, stride, pl if pl == pr else 0, dil, cin)
        return tF.conv1d(h, pw.unsqueeze(2), pwb)

    def s(i):
        return sets[i % 3]

    return {
        "eager step": lambda i: torch.autograd.grad(eager_fwd(s(i)[0]), (s(i)[0], *params), s(i)[1]),
        "eager fwd recorded": lambda i: eager_fwd(s(i)[0]),
        "ours step": lambda i: torch.autograd.grad(
            F.separable_conv1d(s(i)[0], dw, pw, dwb, pwb, stride=stride, padding=(pl, pr), dilation=dil),
            (s(i)[0], *params), s(i)[1]),
        "ours fwd recorded": lambda i: F.separable_conv1d(s(i)[0], dw, pw, dwb, pwb, stride=stride,
                                                          padding=(pl, pr), dilation=dil),
        "ours Function.apply step": lambda i: torch.autograd.grad(
            _ops._SeparableFunction.apply(s(i)[0], dw, dwb, pw, pwb, *hyper), (s(i)[0], *params), s(i)[1]),
        "canned-backward step": lambda i: torch.autograd.grad(
            Canned.apply(s(i)[0], dw, dwb, pw, pwb), (s(i)[0], *params), s(i)[1]),
        "raw fwd op": lambda i: ops.separable_conv1d(s(i)[0].detach(), pd[0], pd[1], pd[2], pd[3], *hyper),
        "raw bwd op": lambda i: ops.separable_conv1d_backward(
            s(i)[1], s(i)[0].detach(), pd[0], pd[1], pd[2], *hyper, True, True, True, True, True),
        "raw fwd + bwd ops": lambda i: (
            ops.separable_conv1d(s(i)[0].detach(), pd[0], pd[1], pd[2], pd[3], *hyper),
            ops.separable_conv1d_backward(s(i)[1], s(i)[0].detach(), pd[0], pd[1], pd[2], *hyper,
                                          True, True, True, True, True)),
        "torch.empty (1 MiB)": lambda i: torch.empty(1 << 20, device="cuda", dtype=torch.uint8),
        "one launch (x.add_(0))": lambda i: pd[0].add_(0),
    }


def backward_args(case):
    """(dy, x, dw, dw_bias, pw, (stride, pad_left, pad_right, dilation, allow_tf32)) of a case
    "name/precision": the backward operator's tensor arguments and hyper-parameters."""
    b, cin, cout, k, length, stride, dil, (pl, pr), lo = shape(case)
    dt = DTYPES[case.split("/")[1]]
    return (torch.randn(b, cout, lo, device="cuda", dtype=dt), torch.randn(b, cin, length, device="cuda", dtype=dt),
            torch.randn(cin, k, device="cuda", dtype=dt), torch.randn(cin, device="cuda", dtype=dt),
            torch.randn(cout, cin, device="cuda", dtype=dt), (stride, pl, pr, dil, True))


def run_thread_probe(cases, rounds, n):
    """Host time of the backward operator timed inside the autograd engine's backward call (the
    engine's device thread) against the same call on the main thread, and of generic work (7
    launches, 11 allocations) in both places; the second of two back-to-back calls shows whether
    the first pays for a cold thread."""
    for case in cases:
        thread_probe_case(case, rounds, n)


def thread_probe_case(case, rounds, n):
    ops = torch.ops.sepconv1d
    dy, x, dw, dwb, pw, hyper = backward_args(case)
    small = torch.zeros(16, device="cuda")
    def bwd_op():
        return ops.separable_conv1d_backward(dy, x, dw, dwb, pw, *hyper, True, True, True, True, True)

    def generic():
        for _ in range(7):
            small.add_(0)
        return [torch.empty(1 << 16, device="cuda") for _ in range(11)]

    work = {"bwd op": bwd_op, "generic": generic, "nothing": lambda: None}
    log = {}

    class Probe(torch.autograd.Function):
        what = "bwd op"
        times = 1

        @staticmethod
        def forward(ctx, t):
            return t.clone()

        @staticmethod
        def backward(ctx, g):
            fn = work[Probe.what]
            for j in range(Probe.times):
                t0 = time.perf_counter()
                fn()
                log.setdefault((Probe.what, Probe.times, j), []).append((time.perf_counter() - t0) * 1e6)
            return g

    leaf = torch.zeros(4, device="cuda", requires_grad=True)
    g1 = torch.ones(4, device="cuda")
    res = {}
    for _ in range(rounds):
        for what, fn in work.items():
            for times in (1, 2):
                Probe.what, Probe.times = what, times
                host_and_device_us(lambda i: torch.autograd.grad(Probe.apply(leaf), leaf, g1), n)
            t = []
            fn()
            torch.cuda.synchronize()
            torch.cuda._sleep(int(4e8))
            for _ in range(n):
                t0 = time.perf_counter()
                fn()
                t.append((time.perf_counter() - t0) * 1e6)
            torch.cuda.synchronize()
            res.setdefault(what, []).append(statistics.median(t))
    print(f"{case}: host us per call (medians)")
    for what in work:
        print(f"    {what:<8} main thread {statistics.median(res[what]):7.1f}   engine thread, one call "
              f"{statistics.median(log[(what, 1, 0)]):7.1f}, two calls "
              f"{statistics.median(log[(what, 2, 0)]):7.1f} then {statistics.median(log[(what, 2, 1)]):7.1f}")


def run_timeline(cases, rounds, n):
    """Segments of our step on one time line (time.perf_counter is one clock for every thread):
    forward call; autograd.grad's hand-off to the engine until our backward function starts; the
    function up to the operator call; the operator; the function after it; the engine's hand-back
    until autograd.grad returns. Eager's step is split into forward and autograd.grad only."""
    from sepconv1d import _ops

    marks = {}
    real_ops = _ops.ops
    real_backward = _ops._SeparableFunction.backward

    class TimedOps:
        def __getattr__(self, name):
            return getattr(real_ops, name)

        def separable_conv1d_backward(self, *a):
            marks["op0"] = time.perf_counter()
            out = real_ops.separable_conv1d_backward(*a)
            marks["op1"] = time.perf_counter()
            return out

    def timed_backward(ctx, g):
        marks["b0"] = time.perf_counter()
        out = real_backward(ctx, g)
        marks["b1"] = time.perf_counter()
        return out

    _ops.ops = TimedOps()
    _ops._SeparableFunction.backward = staticmethod(timed_backward)
    try:
        for case in cases:
            steps = make_steps(case)
            segs = {}
            for impl in ("ours", "eager"):
                fwd, grad = steps[impl + "_parts"]
                for i in range(3):
                    grad(fwd(i), i)
                torch.cuda.synchronize()
                for _ in range(rounds):
                    torch.cuda._sleep(int(4e8))
                    for i in range(n):
                        t0 = time.perf_counter()
                        y = fwd(i)
                        t1 = time.perf_counter()
                        grad(y, i)
                        t2 = time.perf_counter()
                        seg = segs.setdefault(impl, {})
                        seg.setdefault("forward", []).append(t1 - t0)
                        if impl == "ours":
                            seg.setdefault("hand-off", []).append(marks["b0"] - t1)
                            seg.setdefault("backward fn before op", []).append(marks["op0"] - marks["b0"])
                            seg.setdefault("backward op", []).append(marks["op1"] - marks["op0"])
                            seg.setdefault("backward fn after op", []).append(marks["b1"] - marks["op1"])
                            seg.setdefault("hand-back", []).append(t2 - marks["b1"])
                        else:
                            seg.setdefault("autograd.grad", []).append(t2 - t1)
                        seg.setdefault("step", []).append(t2 - t0)
                    torch.cuda.synchronize()
            print(f"{case}: us per step, median (p20-p80) of {rounds * n} steps")
            for impl, seg in segs.items():
                for k, v in seg.items():
                    v = sorted(x * 1e6 for x in v)
                    print(f"    {impl:<6} {k:<22} {statistics.median(v):7.1f}  "
                          f"({v[len(v) // 5]:.0f}-{v[4 * len(v) // 5]:.0f})")
            del steps
            torch.cuda.empty_cache()
    finally:
        _ops.ops = real_ops
        _ops._SeparableFunction.backward = real_backward


def run_op_ab(cases, rounds, n, ab_env):
    """Host time of the backward operator alone on the main thread, per call (GPU kept busy), as is
    and with ab_env ("VAR=value") set, in alternating rounds: p20 and median of all calls."""
    ops = torch.ops.sepconv1d
    var, value = ab_env.split("=")
    for case in cases:
        dy, x, dw, dwb, pw, hyper = backward_args(case)
        times = {"as is": [], ab_env: []}
        for _ in range(rounds):
            for label in times:
                if label == ab_env:
                    os.environ[var] = value
                ops.separable_conv1d_backward(dy, x, dw, dwb, pw, *hyper, True, True, True, True, True)
                torch.cuda.synchronize()
                torch.cuda._sleep(int(4e8))
                for _ in range(n):
                    t0 = time.perf_counter()
                    ops.separable_conv1d_backward(dy, x, dw, dwb, pw, *hyper, True, True, True, True, True)
                    times[label].append((time.perf_counter() - t0) * 1e6)
                torch.cuda.synchronize()
                os.environ.pop(var, None)
        print(f"{case}: backward operator host us per call, p20 / median of {rounds * n} calls")
        for label, v in times.items():
            v = sorted(v)
            print(f"    {label:<24} {v[len(v) // 5]:7.1f} / {statistics.median(v):7.1f}")


def run_split(cases, rounds, n):
    for case in cases:
        pieces = split_steps(case)
        host = {k: [] for k in pieces}
        for _ in range(rounds):
            for k, fn in pieces.items():
                host[k].append(host_and_device_us(fn, n)[0])
        print(f"{case}: host us per call, median (min-max) of {rounds} rounds")
        for k, v in host.items():
            print(f"    {k:<28} {statistics.median(v):7.1f}  ({min(v):.0f}-{max(v):.0f})")
        del pieces
        torch.cuda.empty_cache()


def host_and_device_us(step, n):
    step(0)
    torch.cuda.synchronize()
    torch.cuda._sleep(int(4e8))  # ~200 ms: the steps below only queue behind it
    t0 = time.perf_counter()
    for i in range(n):
        step(i)
    host = (time.perf_counter() - t0) / n * 1e6
    torch.cuda.synchronize()
    # Device time: the same steps queued behind a sleep, timed by events around them only
    # (_device_timing's median of three runs; the steps take inputs i % 3).
    return host, device_time_us(step, n)


def bench_us(step):
    from triton.testing import do_bench

    it = iter(range(1 << 30))
    return do_bench(lambda: step(next(it)), warmup=10, rep=50, return_mode="median") * 1e3


def profile_table(step, n=10, rows=25):
    from torch.profiler import ProfilerActivity, profile

    for i in range(3):
        step(i)
    torch.cuda.synchronize()
    torch.cuda._sleep(int(4e8))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(n):
            step(i)
        torch.cuda.synchronize()
    out = []
    for e in sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:rows]:
        out.append(f"    {e.key[:60]:<60} calls/step {e.count / n:5.1f}  self us/step "
                   f"{e.self_cpu_time_total / n:7.1f}")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="*", default=DEFAULT)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--split", action="store_true", help="host time of the pieces of a step")
    ap.add_argument("--thread", action="store_true", help="the backward operator on the engine's thread")
    ap.add_argument("--timeline", action="store_true", help="segments of our step on one time line")
    ap.add_argument("--op-ab", action="store_true", help="the backward operator alone, with and without --ab-env")
    ap.add_argument("--ab-env", default=None, help="also time ours with VAR=value set (e.g. SEPCONV1D_DW_ROWS=0)")
    args = ap.parse_args()
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = False
    # The host's speed, for comparing leases: the benchmark's measure (its JSON's env.host_add_us).
    print(f"host speed: torch.add {host_launch_us(torch.device('cuda')):.1f} us per call")
    if args.split:
        run_split(args.cases, args.rounds, args.steps)
        return
    if args.op_ab:
        run_op_ab(args.cases, args.rounds, args.steps, args.ab_env)
        return
    if args.timeline:
        run_timeline(args.cases, args.rounds, args.steps)
        return
    if args.thread:
        run_thread_probe(args.cases, args.rounds, args.steps)
        return
    print(f"{'case':<26} {'impl':<6} {'host':>7} {'device':>7} {'bench':>7}   (us per step, medians of rounds)")
    for case in args.cases:
        steps = make_steps(case, args.ab_env)
        steps = {k: v for k, v in steps.items() if not k.endswith("_parts")}
        res = {k: {"host": [], "device": [], "bench": []} for k in steps}
        for _ in range(args.rounds):
            for impl, step in steps.items():
                h, d = host_and_device_us(step, args.steps)
                res[impl]["host"].append(h)
                res[impl]["device"].append(d)
                res[impl]["bench"].append(bench_us(step))
        for impl, r in res.items():
            med = {k: statistics.median(v) for k, v in r.items()}
            print(f"{case:<26} {impl:<12} {med['host']:7.0f} {med['device']:7.0f} {med['bench']:7.0f}"
                  f"   host rounds {' '.join(f'{v:.0f}' for v in r['host'])}")
        if args.profile:
            for impl, step in steps.items():
                print(f"  profile, {impl}:")
                print(profile_table(step))
        del steps
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
