"""Markdown tables for the README from a benchmark result.

    python benchmarks/make_table.py RESULT.json                 # print the tables
    python benchmarks/make_table.py RESULT.json --update README.md

With --update, the text between the ``<!-- bench:begin -->`` and ``<!-- bench:end -->`` lines of
the file is replaced (the markers stay); the file is left alone when it lacks them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _results import (
    PEER,
    case_name,
    ceilings_line,
    check_mark,
    device_line,
    get,
    is_harness_run,
    load,
    pct,
    sig,
    times,
)

BEGIN = "<!-- bench:begin -->"
END = "<!-- bench:end -->"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: list[str], rows: list[list[str]], align: list[str]) -> list[str]:
    sep = ["---:" if a == "r" else "---" for a in align]
    return [_row(header), _row(sep)] + [_row(r) for r in rows]


def _name(rec: dict) -> str:
    flag = check_mark(rec)
    return case_name(rec) + (f" **({flag})**" if flag else "")


def _has(cases: list[dict], pass_name: str, impl: str) -> bool:
    return any(get(r, pass_name, "ms", impl) for r in cases)


def depthwise_tables(cases: list[dict]) -> list[str]:
    out: list[str] = []
    peer = _has(cases, "fwd", PEER)
    comp = _has(cases, "fwd", "compile")
    header = ["case", "fwd ms", "GB/s", "% of copy", "× eager"]
    align = ["l", "r", "r", "r", "r"]
    if comp:
        header.append("× compile")
        align.append("r")
    if peer:
        header.append("× causal-conv1d")
        align.append("r")
    header += ["bwd ms", "× eager"]
    align += ["r", "r"]
    if peer:
        header.append("× causal-conv1d")
        align.append("r")
    header += ["fwd+bwd ms", "× eager"]
    align += ["r", "r"]
    rows = []
    for r in cases:
        row = [_name(r), sig(get(r, "fwd", "ms")), sig(get(r, "fwd", "gbps")), pct(get(r, "fwd", "frac_copy")),
               times(get(r, "fwd", "speedup", "eager"))]
        if comp:
            row.append(times(get(r, "fwd", "speedup", "compile")))
        if peer:
            row.append(times(get(r, "fwd", "speedup", PEER)))
        row += [sig(get(r, "bwd", "ms")), times(get(r, "bwd", "speedup", "eager"))]
        if peer:
            row.append(times(get(r, "bwd", "speedup", PEER)))
        row += [sig(get(r, "fwdbwd", "ms")), times(get(r, "fwdbwd", "speedup", "eager"))]
        rows.append(row)
    out += _table(header, rows, align)
    return out


def peer_gpu_table(cases: list[dict]) -> list[str]:
    """Causal cases against causal-conv1d in GPU time alone (kernel durations, no host time)."""
    rows = []
    for r in cases:
        dev = r.get("device_ms") or {}
        if not dev.get("fwd"):
            continue
        row = [_name(r)]
        for pname in ("fwd", "bwd"):
            times_ms = dev.get(pname) or {}
            ours, peer = times_ms.get("ours"), times_ms.get(PEER)
            row += [sig(ours * 1e3 if ours else None), sig(peer * 1e3 if peer else None),
                    times(peer / ours if ours and peer else None)]
        rows.append(row)
    if not rows:
        return []
    header = ["case", "fwd µs", "causal-conv1d µs", "×", "bwd µs", "causal-conv1d µs", "×"]
    return _table(header, rows, ["l", "r", "r", "r", "r", "r", "r"])


def separable_tables(cases: list[dict]) -> list[str]:
    comp = _has(cases, "fwd", "compile")
    header = ["case", "fwd ms", "TFLOP/s", "% of roofline", "× eager"]
    align = ["l", "r", "r", "r", "r"]
    if comp:
        header.append("× compile")
        align.append("r")
    bwd = _has(cases, "bwd", "ours") or _has(cases, "bwd", "eager")
    if bwd:
        header += ["bwd ms", "× eager"]
        align += ["r", "r"]
    header += ["fwd+bwd ms", "× eager"]
    align += ["r", "r"]
    gpu = any(_gpu_step(r, "ours") for r in cases)
    if gpu:
        header += ["fwd+bwd GPU ms", "× eager (GPU)"]
        align += ["r", "r"]
    rows = []
    for r in cases:
        row = [_name(r), sig(get(r, "fwd", "ms")), sig(get(r, "fwd", "tflops")),
               pct(get(r, "fwd", "frac_roofline")), times(get(r, "fwd", "speedup", "eager"))]
        if comp:
            row.append(times(get(r, "fwd", "speedup", "compile")))
        if bwd:
            row += [sig(get(r, "bwd", "ms")), times(get(r, "bwd", "speedup", "eager"))]
        row += [sig(get(r, "fwdbwd", "ms")), times(get(r, "fwdbwd", "speedup", "eager"))]
        if gpu:
            ours, eager = _gpu_step(r, "ours"), _gpu_step(r, "eager")
            row += [sig(ours), times(eager / ours if ours and eager else None)]
        rows.append(row)
    return _table(header, rows, align)


def _gpu_step(r: dict, impl: str) -> float | None:
    """A training step's GPU time alone (device_ms: the kernels' durations), ms."""
    return ((r.get("device_ms") or {}).get("fwdbwd") or {}).get(impl)


def _geomean_line(result: dict, group: str, title: str) -> str | None:
    entry = result.get("summary", {}).get(group) or {}
    parts = []
    for key, label in (("fwd_vs_eager", "fwd"), ("fwdbwd_vs_eager", "fwd+bwd"),
                       ("fwdbwd_gpu_vs_eager", "fwd+bwd in GPU time")):
        if key in entry:
            parts.append(f"{label} {entry[key]['geomean']:.2f}× (n = {entry[key]['n']})")
    return f"{title}: " + ", ".join(parts) + "." if parts else None


SECTIONS = ("depthwise", "separable", "models", "memory")


def markdown(result: dict, source: str | None = None, sections: tuple[str, ...] = SECTIONS) -> str:
    cases = result.get("cases", [])
    dw = [r for r in cases if r["kind"] == "depthwise"]
    sep_seed = [r for r in cases if r["kind"] == "separable" and r.get("group") != "model"]
    sep_model = [r for r in cases if r["kind"] == "separable" and r.get("group") == "model"]
    env = result.get("env", {})
    out: list[str] = []
    src = f" from `{os.path.basename(source)}`" if source else ""
    out.append(f"<!-- generated by benchmarks/make_table.py{src}; edit the benchmark, not this text -->")
    if is_harness_run(result):
        out.append("")
        out.append("> **Harness test data (--tiny/--stand-in): these numbers mean nothing.**")
    out.append("")
    date = str(result.get("timestamp", ""))[:10]
    out.append(f"Measured {date} on {device_line(result)}. {env.get('timer', '')}; inputs rotated so they are "
               "not L2-resident. Speedups are the other implementation's time over sepconv1d's.")
    host = env.get("host_add_us") or {}
    if host.get("start") is not None:
        span = f"{host['start']:.1f}" + (f" / {host['end']:.1f}" if host.get("end") is not None else "")
        out.append("")
        step = env.get("host_step_us") or {}
        step_span = ""
        if step.get("start") is not None:
            step_span = (f", and a tiny eager training step (two conv1d and autograd.grad) {step['start']:.0f}"
                         + (f" / {step['end']:.0f}" if step.get("end") is not None else "") + " µs")
        out.append(f"Host speed in the same run: one small CUDA op (torch.add) took {span} µs of host time "
                   f"(start / end){step_span}. Forward+backward steps of the smaller cases are host-bound, "
                   "so their times follow the host's speed, which differs by up to 10x between machines.")
    ceil = ceilings_line(result)
    if ceil:
        out.append("")
        out.append(f"Ceilings measured in the same run: {ceil}.")
    if dw and "depthwise" in sections:
        out += ["", "**Depthwise Conv1d** (GB/s counts x read + y written; backward: x and dy read, dx written; "
                "% of copy = share of a device-to-device copy of the same bytes; backward = "
                "dx, dweight, dbias).", ""]
        out += depthwise_tables(dw)
        peer = peer_gpu_table(dw)
        if peer:
            out += ["", "Against causal-conv1d in GPU time alone (the kernels' durations from the profiler, "
                    "both backwards through autograd): the table above includes host time wherever a call "
                    "launches slower than its kernels run, as causal-conv1d's Python backward does on a "
                    "slow host.", ""]
            out += peer
    if sep_seed and "separable" in sections:
        out += ["", "**Depthwise-separable Conv1d** (fused depthwise + pointwise; roofline floor = "
                "max(bytes ÷ copy bandwidth, FLOPs ÷ GEMM rate at that precision)" + (
                    "; fwd+bwd GPU ms: the step's GPU time alone, queued behind a GPU sleep, without its host time"
                    if any(_gpu_step(r, "ours") for r in sep_seed) else "") + ").", ""]
        out += separable_tables(sep_seed)
    if sep_model and "models" in sections:
        out += ["", "**Depthwise-separable Conv1d at real-model shapes**" + (
            " (fwd+bwd GPU ms: the step's GPU time alone, queued behind a GPU sleep, without its host time)"
            if any(_gpu_step(r, "ours") for r in sep_model) else ""), ""]
        out += separable_tables(sep_model)
        line = _geomean_line(result, "separable_models", "Geometric-mean speedup over eager at these shapes")
        if line:
            out += ["", line]
    mem = result.get("memory") or []
    if mem and "memory" in sections:
        out += ["", "**Training-step peak memory** (forward + backward, above inputs and weights):", ""]
        rows = []
        for m in mem:
            mib = 1 << 20
            ours, eager = m.get("ours_peak_bytes"), m.get("eager_peak_bytes")
            rows.append([m["label"].replace("->", "→"), sig(ours / mib if ours is not None else None),
                         sig(eager / mib if eager is not None else None), sig(m["intermediate_bytes"] / mib)])
        out += _table(["case", "sepconv1d MiB", "eager MiB", "eager's intermediate MiB"], rows,
                      ["l", "r", "r", "r"])
    failed = result.get("summary", {}).get("failed_checks") or []
    if failed:
        out += ["", f"**{len(failed)} case(s) failed the correctness check** against a float64 reference; "
                "their times are shown but do not count."]
    return "\n".join(out) + "\n"


def update_file(path: str, text: str) -> bool:
    with open(path) as f:
        content = f.read()
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(content):
        return False
    new = pattern.sub(lambda _m: f"{BEGIN}\n{text.rstrip()}\n{END}", content, count=1)
    if new != content:
        with open(path, "w") as f:
            f.write(new)
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("result", help="JSON written by python -m sepconv1d.bench")
    p.add_argument("--update", metavar="FILE", help=f"replace the text between {BEGIN} and {END} in FILE")
    p.add_argument("--sections", default=",".join(SECTIONS),
                   help=f"comma-separated subset of {','.join(SECTIONS)} (default: all)")
    args = p.parse_args(argv)
    sections = tuple(s.strip() for s in args.sections.split(",") if s.strip())
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        p.error(f"unknown sections: {', '.join(sorted(unknown))}")
    result = load(args.result)
    text = markdown(result, args.result, sections)
    if args.update:
        if not update_file(args.update, text):
            print(f"{args.update}: no {BEGIN} ... {END} markers; nothing changed", file=sys.stderr)
            return 1
        print(f"updated {args.update}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
