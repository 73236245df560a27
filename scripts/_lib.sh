# Shared helpers for the scripts in this folder. Source it; it defines functions and variables only.
#
# Variables every script may override from the environment:
#   SEPCONV1D_VENV    the virtual environment the scripts create and reuse (default: <repo>/.venv)
#   PYTHON            the interpreter that creates that venv (default: python3), Python >= 3.10;
#                     torch-abi-audit (one of the two wheel audits) needs Python >= 3.11
#   DIST_DIR          where wheels are written (default: <repo>/dist)
# shellcheck shell=bash

SEPCONV1D_SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SEPCONV1D_SCRIPTS/.." && pwd)"
SEPCONV1D_VENV="${SEPCONV1D_VENV:-$REPO_ROOT/.venv}"
DIST_DIR="${DIST_DIR:-$REPO_ROOT/dist}"
# The oldest torch the stable-ABI extension targets (setup.py: TORCH_TARGET_VERSION).
# shellcheck disable=SC2034  # used by the scripts that source this file
SEPCONV1D_MIN_TORCH="2.10.0"

log() { printf '\n==> [%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Phase timing: phase_begin NAME ... phase_end; phase_report prints every finished phase.
# Timings are appended to $SEPCONV1D_TIMINGS (a file) so nested scripts add to the same report.
phase_begin() {
  _PHASE_NAME=$1
  _PHASE_T0=$SECONDS
  log "phase: $_PHASE_NAME"
}
phase_end() {
  local secs=$((SECONDS - _PHASE_T0))
  log "phase: $_PHASE_NAME done in ${secs}s"
  if [ -n "${SEPCONV1D_TIMINGS:-}" ]; then
    printf '%-32s %5ss\n' "$_PHASE_NAME" "$secs" >>"$SEPCONV1D_TIMINGS"
  fi
  _PHASE_NAME=""
}
# For an EXIT trap: record the phase that was running when the script stopped, as failed.
phase_abort() {
  if [ -n "${_PHASE_NAME:-}" ] && [ -n "${SEPCONV1D_TIMINGS:-}" ]; then
    printf '%-32s %5ss  FAILED\n' "$_PHASE_NAME" "$((SECONDS - _PHASE_T0))" >>"$SEPCONV1D_TIMINGS"
  fi
  _PHASE_NAME=""
}
phase_report() {
  if [ -n "${SEPCONV1D_TIMINGS:-}" ] && [ -s "$SEPCONV1D_TIMINGS" ]; then
    printf '\nphase timings:\n' >&2
    sed 's/^/  /' "$SEPCONV1D_TIMINGS" >&2
  fi
}

# The venv's python (after setup_env.sh has created it).
venv_python() { printf '%s/bin/python' "$SEPCONV1D_VENV"; }

# True when an NVIDIA GPU is visible through nvidia-smi.
have_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }

# The CUDA major version of the toolkit the build will use (empty when there is none).
cuda_major() {
  local nvcc=""
  if [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
    nvcc="$CUDA_HOME/bin/nvcc"
  elif command -v nvcc >/dev/null 2>&1; then
    nvcc=nvcc
  fi
  [ -n "$nvcc" ] || return 0
  "$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9]*\)\..*/\1/p' | head -n 1
}

# Default TORCH_CUDA_ARCH_LIST for a local build/test: the GPUs present, or 9.0 on a machine
# without a GPU (one architecture compiles in a fraction of the release list's time).
# Release builds leave TORCH_CUDA_ARCH_LIST unset in the environment of build_wheel.sh, and setup.py
# then uses its release default.
default_test_arch_list() {
  local caps=""
  if have_gpu; then
    caps=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | sort -u | paste -sd ';' -)
  fi
  printf '%s' "${caps:-9.0}"
}

# Run the test suite against the INSTALLED sepconv1d of interpreter $1, from an empty directory so
# that the source tree's sepconv1d/ cannot shadow it. Extra args go to pytest.
# Env: SEPCONV1D_JUNIT (a junit xml path, optional).
run_installed_tests() {
  local py=$1
  shift
  local workdir rc
  workdir=$(mktemp -d "${TMPDIR:-/tmp}/sepconv1d-tests.XXXXXX")
  # 1. Prove the import the tests will do resolves to the installed wheel, not the source tree.
  (cd "$workdir" && "$py" - "$REPO_ROOT" <<'EOF'
import os
import sys
import sysconfig

repo = os.path.realpath(sys.argv[1])
sys.path.insert(0, os.path.join(repo, "tests"))  # what pytest (prepend import mode) adds for conftest.py
import sepconv1d  # noqa: E402

where = os.path.realpath(os.path.dirname(sepconv1d.__file__))
installed = {os.path.realpath(os.path.join(sysconfig.get_path(k), "sepconv1d")) for k in ("purelib", "platlib")}
if where not in installed:
    sys.exit(f"error: the tests would import sepconv1d from {where}, not the installed wheel ({' or '.join(installed)})")
print(f"tests import sepconv1d {sepconv1d.__version__} from {where}")
EOF
  ) || { rm -rf "$workdir"; return 1; }
  # 2. The suite. pytest exits 5 when it collected no test: that is a failure here.
  local junit="${SEPCONV1D_JUNIT:-$workdir/junit.xml}"
  rc=0
  (cd "$workdir" && "$py" -m pytest "$REPO_ROOT/tests" -q -c "$REPO_ROOT/pyproject.toml" \
    --rootdir "$REPO_ROOT" -p no:cacheprovider --junitxml "$junit" "$@") || rc=$?
  # 3. One closing line with the counts, from the junit report: "pytest: N passed, N failed, N skipped".
  local summary
  summary=$(junit_summary "$py" "$junit") || summary="pytest: no junit report (exit $rc)"
  printf '%s\n' "$summary"
  if [ -n "${SEPCONV1D_TEST_SUMMARY:-}" ]; then printf '%s\n' "$summary" >"$SEPCONV1D_TEST_SUMMARY"; fi
  rm -rf "$workdir"
  if [ "$rc" -eq 5 ]; then
    printf 'error: pytest collected no tests\n' >&2
    return 5
  fi
  return "$rc"
}

# junit_summary PY JUNIT_XML: "pytest: N passed, N failed, N skipped" (failed counts errors too).
junit_summary() {
  "$1" - "$2" <<'EOF'
import sys
import xml.etree.ElementTree as ET

root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
count = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
failed = count["failures"] + count["errors"]
passed = count["tests"] - failed - count["skipped"]
print(f"pytest: {passed} passed, {failed} failed, {count['skipped']} skipped")
EOF
}
