"""CPU-only properties: every instruction-set path against the float64 references, and weight
gradients that do not depend on the thread count."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from reference import make_activation

TESTS = Path(__file__).resolve().parent

x86_only = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                              reason="SEPCONV1D_CPU_ISA selects x86 instruction sets")


@x86_only
@pytest.mark.parametrize("isa", ["avx512_bf16", "avx512", "avx2", "default"])
def test_instruction_set_paths_match_reference(isa):
    """The CPU kernels pick AMX or AVX512-BF16 (bf16 backward products), AVX-512, AVX2 or baseline
    code once per process; SEPCONV1D_CPU_ISA caps that choice, so the random-configuration tests
    are rerun in a fresh process per cap (avx512_bf16: AMX off; avx512: no bf16 products either).
    On a CPU without the capped set the run takes the best path below it, which the same
    references hold to."""
    env = dict(os.environ, SEPCONV1D_CPU_ISA=isa)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "cpu",
           str(TESTS / "test_random_configs.py")]
    run = subprocess.run(cmd, env=env, cwd=TESTS, capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, f"SEPCONV1D_CPU_ISA={isa}:\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}"
    assert " passed" in run.stdout and " failed" not in run.stdout, run.stdout[-2000:]


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_backward_does_not_depend_on_thread_count(dtype, layout):
    """The CPU backward sums its weight gradients over a partition fixed by the shapes (the bf16
    products too), so every output is bitwise the same on one thread or several."""
    gen = torch.Generator().manual_seed(7)
    batch, cin, cout, length, k = 3, 96, 200, 1501, 7
    x = make_activation(batch, cin, length, dtype, "cpu", layout, gen)
    dw = torch.randn(cin, k, generator=gen, dtype=torch.float64).to(dtype)
    dwb = torch.randn(cin, generator=gen, dtype=torch.float64).to(dtype)
    pw = (torch.randn(cout, cin, generator=gen, dtype=torch.float64) * cin ** -0.5).to(dtype)
    g = make_activation(batch, cout, length, dtype, "cpu", layout, gen)
    op = torch.ops.sepconv1d.separable_conv1d_backward
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = op(g, x, dw, dwb, pw, 1, 3, 3, 1, False, True, True, True, True, True)
        torch.set_num_threads(max(threads, 2))
        many = op(g, x, dw, dwb, pw, 1, 3, 3, 1, False, True, True, True, True, True)
    finally:
        torch.set_num_threads(threads)
    for name, a, b in zip(("x", "dw_weight", "dw_bias", "pw_weight", "pw_bias"), one, many, strict=True):
        assert torch.equal(a, b), f"grad {name} differs between 1 and {max(threads, 2)} threads"
