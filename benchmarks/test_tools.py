"""Tests of the benchmark harness and its report tools, on the CPU.

    pytest benchmarks/test_tools.py

The fixture benchmarks/fixtures/sample-result.json comes from a ``--tiny --stand-in`` run: real
structure, meaningless numbers.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURE = os.path.join(HERE, "fixtures", "sample-result.json")
sys.path.insert(0, HERE)

import make_table  # noqa: E402
from _results import load  # noqa: E402


def _bench_cmd(*args: str) -> list[str]:
    # Run the file, not -m: sepconv1d/__init__ needs the compiled extension, the harness does not.
    return [sys.executable, os.path.join(ROOT, "sepconv1d", "bench.py"), *args]


def test_fixture_loads():
    result = load(FIXTURE)
    assert result["schema"].startswith("sepconv1d-bench/")
    kinds = {r["kind"] for r in result["cases"]}
    assert kinds == {"depthwise", "separable"}


def test_markdown_states_the_host_speed_only_where_the_run_measured_it():
    result = load(FIXTURE)
    result["env"].pop("host_add_us", None)
    assert "Host speed" not in make_table.markdown(result, FIXTURE)
    result["env"]["host_add_us"] = {"start": 11.96, "end": 113.04}
    text = make_table.markdown(result, FIXTURE)
    assert "took 12.0 / 113.0 µs of host time" in text
    assert "training step" not in text.split("Host speed")[1].split("\n")[0]
    result["env"]["host_step_us"] = {"start": 512.3, "end": 530.9}
    text = make_table.markdown(result, FIXTURE)
    assert "a tiny eager training step (two conv1d and autograd.grad) 512 / 531 µs" in text


def test_load_rejects_other_json(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"schema": "something-else"}))
    with pytest.raises(ValueError):
        load(str(path))


def test_markdown_tables():
    result = load(FIXTURE)
    text = make_table.markdown(result, FIXTURE)
    assert "Harness test data" in text
    assert "**Depthwise Conv1d**" in text
    assert "× causal-conv1d" in text
    assert "**Depthwise-separable Conv1d at real-model shapes**" in text
    assert "Geometric-mean speedup" in text
    # every markdown table row has the header's column count
    for block in text.split("\n\n"):
        rows = [ln for ln in block.splitlines() if ln.startswith("|")]
        if rows:
            assert len({r.count(" | ") for r in rows}) == 1, block


def test_markdown_memory_and_failures():
    result = load(FIXTURE)
    result["memory"] = [{"label": "sep B32 C256->512 L4096 K9 same fp32 cf", "intermediate_bytes": 128 << 20,
                         "ours_peak_bytes": 300 << 20, "eager_peak_bytes": 560 << 20}]
    result["cases"][0]["ok"] = False
    result["summary"]["failed_checks"] = [result["cases"][0]["id"]]
    text = make_table.markdown(result)
    assert "Training-step peak memory" in text and "| 300 | 560 | 128 |" in text
    assert "(check failed)" in text and "failed the correctness check" in text


def test_markdown_peer_gpu_time():
    result = load(FIXTURE)
    text = make_table.markdown(result)
    assert "in GPU time alone" not in text  # no device_ms in the fixture: no table
    rec = next(r for r in result["cases"] if r["kind"] == "depthwise")
    rec["device_ms"] = {"fwd": {"ours": 0.0825, "causal_conv1d": 0.0834},
                        "bwd": {"ours": 0.1292, "causal_conv1d": 0.1402}}
    text = make_table.markdown(result)
    assert "in GPU time alone" in text
    row = next(ln for ln in text.splitlines() if ln.startswith("| ") and "| 129 | 140 |" in ln)
    assert row.endswith("| 82.5 | 83.4 | 1.01× | 129 | 140 | 1.09× |"), row


def test_update_between_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# t\n\n<!-- bench:begin -->\nold\n<!-- bench:end -->\n\nafter\n")
    assert make_table.main([FIXTURE, "--update", str(readme)]) == 0
    once = readme.read_text()
    assert "old" not in once and "after" in once and "**Depthwise Conv1d**" in once
    assert make_table.main([FIXTURE, "--update", str(readme)]) == 0
    assert readme.read_text() == once  # idempotent
    bare = tmp_path / "bare.md"
    bare.write_text("no markers\n")
    assert make_table.main([FIXTURE, "--update", str(bare)]) == 1
    assert bare.read_text() == "no markers\n"


def test_plot(tmp_path):
    pytest.importorskip("matplotlib")
    import plot

    out = tmp_path / "r.png"
    assert plot.main([FIXTURE, "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _run_bench(tmp_path, *args):
    out = tmp_path / "r.json"
    proc = subprocess.run(_bench_cmd("--tiny", "--rep", "2", "--warmup", "1", "--no-progress", "--no-compile",
                                     "--out", str(out), *args),
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text()), proc.stdout


def _bench_module():
    spec = importlib.util.spec_from_file_location("sepconv1d_bench_file", os.path.join(ROOT, "sepconv1d", "bench.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_budget_keeps_compile_despite_the_first_cases_set_up():
    """The first case's one-off set-up (seconds outside its timings) must not be charged to every
    case left: at the second case of a 45-case sweep with 200 s left, 8 s of set-up would have
    planned 45 x 8 s and dropped torch.compile; charged at most 1 s, compile stays."""
    bench = _bench_module()
    start = bench.time.perf_counter()
    budget = bench.Budget(260.0, start, 10.0, 50.0)
    budget.record_timing(1.0, 10.0, 50.0)
    budget.case_overhead.append(8.0)
    budget.plan(timings_left=120, cases_left=44, compiles_left=8, label="second case")
    assert budget.allow_compile, budget.notes
    # Later cases that really are that slow still drop it.
    budget.case_overhead += [8.0, 8.0]
    budget.plan(timings_left=120, cases_left=44, compiles_left=8, label="fourth case")
    assert not budget.allow_compile


def test_training_step_gpu_time_columns_and_geomean():
    """device_ms["fwdbwd"] (a separable step's kernels alone) becomes two columns of the separable
    tables and a geometric mean over eager, computed by the benchmark's summary; without it, the
    tables keep their columns."""
    bench = _bench_module()
    result = load(FIXTURE)
    assert "GPU ms" not in make_table.markdown(result)
    seps = [r for r in result["cases"] if r["kind"] == "separable"]
    for i, r in enumerate(seps):
        ours, eager = ((0.25, 0.5), (0.1, 0.8))[i % 2]
        r["device_ms"] = {"fwdbwd": {"ours": ours, "eager": eager}}
    summary = bench.summarize(result["cases"])
    g = summary["separable"]["fwdbwd_gpu_vs_eager"]
    ratios = [r["device_ms"]["fwdbwd"]["eager"] / r["device_ms"]["fwdbwd"]["ours"] for r in seps]
    assert g["n"] == len(seps) and abs(g["geomean"] - math.prod(ratios) ** (1 / len(ratios))) < 1e-9
    assert "fwdbwd_gpu_vs_eager" not in summary.get("depthwise", {})
    result["summary"] = summary
    text = make_table.markdown(result)
    assert "| fwd+bwd GPU ms | × eager (GPU) |" in text
    assert "| 0.250 | 2.00× |" in text and "| 0.100 | 8.00× |" in text
    assert "fwd+bwd in GPU time" in text


def test_bench_harness_with_stand_in(tmp_path):
    result, stdout = _run_bench(tmp_path, "--stand-in", "--filter", r"^dw .*K9 same fp32 cf|seed/.*/bf16|QuartzNet-first.*fp16")
    assert [r["kind"] for r in result["cases"]] == ["depthwise", "separable", "separable"]
    for rec in result["cases"]:
        assert rec["ok"] is True, rec["check"]
        assert rec["passes"]["fwd"]["ms"]["ours"] > 0 and rec["passes"]["fwd"]["ms"]["eager"] > 0
        assert rec["passes"]["fwdbwd"]["speedup"]["eager"] > 0
    assert result["cases"][0]["passes"]["bwd"]["frac_copy"]["ours"] > 0
    assert result["cases"][1]["passes"]["fwd"]["roofline_ms"] > 0
    assert result["ceilings"]["copy_by_bytes_gbps"]
    assert "geomean speedup" in stdout


def test_bench_real_kernels(tmp_path):
    """With sepconv1d built: its CPU kernels against float64 on a few shrunken cases."""
    if importlib.util.find_spec("sepconv1d") is None:
        pytest.skip("sepconv1d is not installed")
    try:
        import sepconv1d  # noqa: F401
    except ImportError as err:
        pytest.skip(f"sepconv1d is not built: {err}")
    result, _ = _run_bench(tmp_path, "--filter", r"K9 same|causal bf16 cl|Mamba.*cl|seed/.*/fp32|QuartzNet")
    assert result["env"]["ours_impl"] == "sepconv1d"
    bad = [(r["id"], r.get("error"), r["check"]) for r in result["cases"] if r["ok"] is not True]
    assert not bad, bad
