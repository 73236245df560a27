"""Reading the JSON written by ``python -m sepconv1d.bench`` (shared by make_table.py and plot.py).

Only the standard library: these scripts run where sepconv1d is not built.
"""

from __future__ import annotations

import json
import math
from typing import Any

SCHEMA_PREFIX = "sepconv1d-bench/"
PEER = "causal_conv1d"
IMPL_NAMES = {"ours": "sepconv1d", "eager": "PyTorch eager", "compile": "torch.compile",
              PEER: "causal-conv1d"}
PASS_NAMES = {"fwd": "fwd", "bwd": "bwd", "fwdbwd": "fwd+bwd"}
PRECISION_NAMES = {"fp32": "fp32 (strict)", "tf32": "fp32 (TF32)", "bf16": "bf16", "fp16": "fp16"}


def load(path: str) -> dict[str, Any]:
    with open(path) as f:
        result = json.load(f)
    schema = str(result.get("schema", ""))
    if not schema.startswith(SCHEMA_PREFIX):
        raise ValueError(f"{path}: not a sepconv1d benchmark result (schema {schema!r})")
    return result


def sig(v: float | None, dash: str = "–") -> str:
    """About three significant figures, never in scientific notation."""
    if v is None or not isinstance(v, int | float) or not math.isfinite(v):
        return dash
    a = abs(v)
    spec = ".0f" if a >= 100 else ".1f" if a >= 10 else ".2f" if a >= 1 else ".3f"
    return format(v, spec)


def times(v: float | None, dash: str = "–") -> str:
    return dash if v is None else f"{sig(v)}×"


def pct(v: float | None, dash: str = "–") -> str:
    return dash if v is None else f"{100 * v:.0f}%"


def is_harness_run(result: dict) -> bool:
    opts = result.get("options", {})
    return bool(opts.get("tiny") or opts.get("stand_in") or result.get("env", {}).get("ours_impl") == "stand-in")


def device_line(result: dict) -> str:
    """One line naming the device and the versions, for captions and plot titles."""
    env = result.get("env", {})
    parts = [str(env.get("device", "?"))]
    if env.get("sm_count"):
        parts[0] += f" ({env['sm_count']} SMs)"
    versions = [f"torch {env.get('torch')}"]
    if env.get("cuda"):
        versions.append(f"CUDA {env['cuda']}")
    if env.get("cudnn"):
        versions.append(f"cuDNN {env['cudnn']}")
    if env.get("driver"):
        versions.append(f"driver {env['driver']}")
    if env.get("triton"):
        versions.append(f"triton {env['triton']}")
    versions.append(f"sepconv1d {env.get('sepconv1d')}")
    if env.get(PEER):
        versions.append(f"causal-conv1d {env[PEER]}")
    return parts[0] + " · " + ", ".join(versions)


def ceilings_line(result: dict) -> str:
    ceil = result.get("ceilings", {})
    parts = []
    if ceil.get("copy_2gib_gbps"):
        moved = ceil.get("copy_2gib_bytes_moved")
        size = f"{moved / 2 / (1 << 30):g} GiB" if moved else "large"
        parts.append(f"copy of a {size} buffer {sig(ceil['copy_2gib_gbps'])} GB/s (read + write)")
    gemm = {k: v for k, v in (ceil.get("gemm_tflops") or {}).items() if v}
    if gemm:
        n = ceil.get("gemm_n")
        names = {"tf32": "TF32", "fp32": "strict fp32"}
        parts.append(f"GEMM {n}³ " + ", ".join(f"{names.get(k, k)} {sig(v)}" for k, v in gemm.items()) + " TFLOP/s")
    return "; ".join(parts)


def case_name(rec: dict, with_model: bool = True) -> str:
    """A readable case name: shape, padding, dtype, layout."""
    s = rec["shape"]
    ch = f"C{s['C']}" if rec["kind"] == "depthwise" else f"C{s['C']}→{s['Cout']}"
    extra = (f" stride {s['stride']}" if s["stride"] != 1 else "") + (f" dil {s['dilation']}" if s["dilation"] != 1 else "")
    prec = rec["precision"]
    if rec["kind"] == "separable":  # TF32 matters only for the pointwise GEMM
        prec = PRECISION_NAMES.get(prec, prec)
    if rec.get("w_dtype") and rec["w_dtype"] != rec.get("x_dtype"):
        prec += f" x, {rec['w_dtype'].replace('float', 'fp')} w"
    layout = ", channel-last" if rec.get("layout") == "cl" else ""
    name = f"B{s['B']} {ch} L{s['L']} K{s['K']}{extra} {s['padding']}, {prec}{layout}"
    if with_model and rec.get("model"):
        name = f"{rec['model']}: {name}"
    return name


def short_name(rec: dict) -> str:
    """A compact name for plot axes."""
    s = rec["shape"]
    head = rec.get("model") or (f"K{s['K']} {s['padding']}" if rec["kind"] == "depthwise" else "seed")
    if rec.get("model") or rec["kind"] == "separable":
        head += f" K{s['K']}"
    layout = " CL" if rec.get("layout") == "cl" else ""
    prec = rec["precision"] + ("/w32" if rec.get("w_dtype") != rec.get("x_dtype") else "")
    if rec["kind"] == "depthwise" and not rec.get("model") and rec.get("group") != "causal":
        return f"{head} {prec}{layout}"
    if rec["kind"] == "depthwise" and rec.get("group") == "causal":
        return f"causal K{s['K']} {prec}{layout}"
    return f"{head} {prec}{layout}"


def get(rec: dict, pass_name: str, key: str, impl: str = "ours") -> float | None:
    p = rec.get("passes", {}).get(pass_name)
    if not p:
        return None
    v = p.get(key)
    if isinstance(v, dict):
        return v.get(impl)
    return v


def check_mark(rec: dict) -> str:
    """'' when ours passed its check, else a short flag."""
    if rec.get("error"):
        return "error"
    if rec.get("ok") is False:
        return "check failed"
    return ""
