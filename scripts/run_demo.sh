#!/usr/bin/env bash
# The main job, from scratch on a fresh machine: set up the venv and install the wheel exactly as
# scripts/test.sh does (scripts/setup_env.sh), then run the benchmark:
#
#   bash scripts/run_demo.sh [BENCH_ARGS...]      # e.g. --quick, --only separable, --out r.json
#
# python -m sepconv1d.bench runs the full sweep on a CUDA GPU and a small CPU demo elsewhere; its
# results land in benchmarks/results/ (relative paths in BENCH_ARGS are relative to the repository).
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

SEPCONV1D_TIMINGS=$(mktemp "${TMPDIR:-/tmp}/sepconv1d-timings.XXXXXX")
export SEPCONV1D_TIMINGS
trap 'phase_abort; phase_report; rm -f "$SEPCONV1D_TIMINGS"' EXIT

bash "$SEPCONV1D_SCRIPTS/setup_env.sh" >/dev/null
VPY=$(venv_python)

phase_begin "benchmark"
cd "$REPO_ROOT"
# -P: the repository folder is not put on sys.path, so the installed wheel (with its compiled
# extension) is imported, not the source tree's sepconv1d/.
"$VPY" -P -m sepconv1d.bench "$@"
phase_end
