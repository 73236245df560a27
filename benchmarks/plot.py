"""A PNG summary of a benchmark result.

    python benchmarks/plot.py RESULT.json [-o benchmarks/results/h200.png]

Top: depthwise cases, forward and backward, as a share of the copy bandwidth measured for the same
bytes (sepconv1d, PyTorch eager, torch.compile and causal-conv1d where measured). Bottom:
depthwise-separable cases, speedup over eager (forward and forward+backward) and share of the
roofline floor. Needs matplotlib.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _results import (
    IMPL_NAMES,
    PEER,
    ceilings_line,
    device_line,
    get,
    is_harness_run,
    load,
    short_name,
)

COLORS = {"ours": "#1f77b4", "eager": "#9a9a9a", "compile": "#c7c7c7", PEER: "#ff7f0e",
          "fwd": "#1f77b4", "fwdbwd": "#2ca02c"}


def _label(rec: dict) -> str:
    name = short_name(rec)
    if rec.get("error"):
        name += " [error]"
    elif rec.get("ok") is False:
        name += " [check failed]"
    return name


def _grouped_barh(ax, labels, series, title, xlabel, ref_line=None, log=False, cap=None):
    """series: list of (name, values, color); values may hold None. cap clips long bars (shown as ▸)."""
    import numpy as np
    from matplotlib.ticker import PercentFormatter

    series = [s for s in series if any(v is not None for v in s[1])]
    n = len(labels)
    k = max(len(series), 1)
    height = 0.8 / k
    y = np.arange(n)
    for i, (name, values, color) in enumerate(series):
        shown = [min(v, cap) if (v is not None and cap) else (v or 0.0) for v in values]
        pos = y - 0.4 + height * (i + 0.5)
        bars = ax.barh(pos, shown, height=height, color=color, label=name, edgecolor="none")
        for bar, v in zip(bars, values, strict=True):
            if v is None:
                continue
            text = f"{v:.2f}×" if log else f"{100 * v:.0f}%"
            if cap and v > cap:
                text = "▸ " + text
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, " " + text, va="center", ha="left",
                    fontsize=6, color="#333333")
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_title(title, fontsize=9, loc="left", pad=14)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    if log:
        from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

        ax.set_xscale("log")
        vals = [v for _, values, _ in series for v in values if v]
        lo, hi = min(vals + [1.0]), max(vals + [1.0])
        ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 3, 5, 10, 20, 50, 100) if lo / 1.5 <= t <= hi * 1.5]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _pos: f"{t:g}×"))
    else:
        ax.xaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))
    if ref_line is not None:
        ax.axvline(ref_line, color="#444444", lw=0.8, ls="--")
    ax.grid(axis="x", color="#e5e5e5", lw=0.6)
    ax.set_axisbelow(True)
    if series:
        ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=len(series), frameon=False,
                  handlelength=1.2, columnspacing=1.0, borderaxespad=0.1)
    if log:
        ax.set_xlim(lo / 1.3, hi * 1.8)  # room for the value labels
    else:
        vals = [v for _, values, _ in series for v in values if v]
        top = max(vals + [1.0])
        ax.set_xlim(0, (min(top, cap) if cap else top) * 1.18)


def plot(result: dict, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = result.get("cases", [])
    dw = [r for r in cases if r["kind"] == "depthwise"]
    sep = [r for r in cases if r["kind"] == "separable"]
    rows = [n for n in (len(dw), len(sep)) if n]
    if not rows:
        raise ValueError("the result holds no cases")
    top_in, bottom_in, gap_in = 1.25, 0.45, 1.05  # inches: header, x labels, between the rows
    fig_h = top_in + bottom_in + 0.26 * sum(rows) + 0.6 * len(rows) + gap_in * (len(rows) - 1)
    fig = plt.figure(figsize=(14, fig_h))
    axes_in = fig_h - top_in - bottom_in - gap_in * (len(rows) - 1)
    gs = fig.add_gridspec(len(rows), 2, height_ratios=[r + 3 for r in rows],
                          hspace=gap_in / (axes_in / len(rows)), wspace=0.42)
    row = 0
    impls = ("ours", "eager", "compile", PEER)
    if dw:
        labels = [_label(r) for r in dw]
        shapes = {(r["shape"]["B"], r["shape"]["C"], r["shape"]["L"]) for r in dw if not r.get("model")}
        common = ""
        if len(shapes) == 1:
            bb, cc, ll = shapes.pop()
            common = f", B{bb} C{cc} L{ll} unless a model is named"
        for col, (pname, title) in enumerate((("fwd", f"Depthwise forward{common}"),
                                              ("bwd", "Depthwise backward (dx, dw, db)"))):
            ax = fig.add_subplot(gs[row, col])
            series = [(IMPL_NAMES[i], [get(r, pname, "frac_copy", i) for r in dw], COLORS[i]) for i in impls]
            _grouped_barh(ax, labels, series, title, "share of the copy bandwidth for the same bytes", ref_line=1.0,
                          cap=1.25)
        row += 1
    if sep:
        labels = [_label(r) for r in sep]
        ax = fig.add_subplot(gs[row, 0])
        series = [("forward", [get(r, "fwd", "speedup", "eager") for r in sep], COLORS["fwd"]),
                  ("forward + backward", [get(r, "fwdbwd", "speedup", "eager") for r in sep], COLORS["fwdbwd"])]
        if any(get(r, "fwd", "speedup", "compile") for r in sep):
            series.append(("forward, over torch.compile", [get(r, "fwd", "speedup", "compile") for r in sep],
                           "#aec7e8"))
        _grouped_barh(ax, labels, series, "Depthwise-separable: sepconv1d speedup over PyTorch eager",
                      "speedup (×, log scale)", ref_line=1.0, log=True)
        ax = fig.add_subplot(gs[row, 1])
        series = [(IMPL_NAMES[i], [get(r, "fwd", "frac_roofline", i) for r in sep], COLORS[i])
                  for i in ("ours", "eager")]
        _grouped_barh(ax, labels, series, "Depthwise-separable forward: share of the roofline floor",
                      "roofline floor ÷ time", ref_line=1.0, cap=1.25)
    device, _, versions = device_line(result).partition(" · ")
    date = str(result.get("timestamp", ""))[:16].replace("T", " ")
    title = f"sepconv1d benchmark · {device} · {date}"
    if is_harness_run(result):
        title = "HARNESS TEST DATA, NUMBERS MEAN NOTHING · " + title
    fig.text(0.01, 1 - 0.12 / fig_h, title, fontsize=11, ha="left", va="top", weight="bold")
    sub = [versions, "ceilings in the same run: " + ceilings_line(result) if ceilings_line(result) else ""]
    fig.text(0.01, 1 - 0.42 / fig_h, "\n".join(t for t in sub if t), fontsize=8, ha="left", va="top",
             color="#444444", linespacing=1.5)
    fig.subplots_adjust(left=0.15, right=0.98, top=1 - top_in / fig_h, bottom=bottom_in / fig_h)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=130)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("result", help="JSON written by python -m sepconv1d.bench")
    p.add_argument("-o", "--out", help="PNG path (default: the JSON's path with .png)")
    args = p.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("plot.py needs matplotlib (pip install matplotlib)", file=sys.stderr)
        return 2
    out = args.out or os.path.splitext(args.result)[0] + ".png"
    plot(load(args.result), out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
