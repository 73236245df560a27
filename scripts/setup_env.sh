#!/usr/bin/env bash
# Set up the project's virtual environment and install sepconv1d into it, on a fresh machine or
# reusing what an earlier run left:
#   1. the venv (.venv in the repository; reused when present and working);
#   2. torch (SEPCONV1D_TORCH_SPEC, default torch==2.14.1) and scripts/requirements-test.txt;
#   3. the wheel, built by scripts/build_wheel.sh (CUDA kernels too when a CUDA toolkit is found);
#   4. that wheel, installed into the venv (pip install --no-deps --force-reinstall).
# The wheel's path is the one line this script prints on stdout; everything else goes to stderr.
# scripts/test.sh and scripts/run_demo.sh start with it.
#
# Environment:
#   SEPCONV1D_VENV          the venv (default: <repo>/.venv)
#   PYTHON                  the interpreter to create it with (default: the first Python >= 3.11 of
#                           python3, python3.13, python3.12, python3.11)
#   SEPCONV1D_TORCH_SPEC    the torch requirement (default: torch==2.14.1); with PIP_INDEX_URL or
#                           PIP_EXTRA_INDEX_URL pip may take it from another index
#   SEPCONV1D_DEPS          test (default): torch + build/test/audit tools; runtime: torch only
#   SEPCONV1D_WHEEL         install this wheel instead of building one
#   TORCH_CUDA_ARCH_LIST    GPU targets; default here: the GPUs present, or 9.0 without one (a release
#                           build sets the list it wants; setup.py's own default is 8.0;9.0;10.0;12.0+PTX)
#   MAX_JOBS, SEPCONV1D_CPU_ONLY, SEPCONV1D_CUDA_SUFFIX   passed on to scripts/build_wheel.sh
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

TORCH_SPEC="${SEPCONV1D_TORCH_SPEC:-torch==2.14.1}"
DEPS="${SEPCONV1D_DEPS:-test}"
case "$DEPS" in test | runtime) ;; *) die "SEPCONV1D_DEPS must be test or runtime, not $DEPS" ;; esac

# Is $1 a working Python >= 3.11 (torch-abi-audit needs 3.11; the scripts run python -P)?
python_ok() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; }

pick_python() {
  local candidates=() c
  if [ -n "${PYTHON:-}" ]; then candidates=("$PYTHON"); else candidates=(python3 python3.13 python3.12 python3.11); fi
  for c in "${candidates[@]}"; do
    if command -v "$c" >/dev/null 2>&1 && python_ok "$c"; then
      command -v "$c"
      return 0
    fi
  done
  die "no Python >= 3.11 found (tried: ${candidates[*]}); set PYTHON to one"
}

trap phase_abort EXIT
phase_begin "venv + torch + tools"
VPY=$(venv_python)
if [ -x "$VPY" ] && python_ok "$VPY" && "$VPY" -m pip --version >/dev/null 2>&1; then
  log "reusing the venv at $SEPCONV1D_VENV ($("$VPY" -V 2>&1))"
else
  if [ -e "$SEPCONV1D_VENV" ]; then
    [ -f "$SEPCONV1D_VENV/pyvenv.cfg" ] || die "$SEPCONV1D_VENV exists and is not a venv; move it away"
    log "the venv at $SEPCONV1D_VENV does not work; recreating it"
    rm -rf "$SEPCONV1D_VENV"
  fi
  BASE_PY=$(pick_python)
  log "creating the venv at $SEPCONV1D_VENV with $BASE_PY ($("$BASE_PY" -V 2>&1))"
  "$BASE_PY" -m venv "$SEPCONV1D_VENV" >&2 ||
    die "python -m venv failed (on Debian/Ubuntu: apt-get install python3-venv)"
fi
reqs=()
if [ "$DEPS" = test ]; then reqs=(-r "$SEPCONV1D_SCRIPTS/requirements-test.txt"); fi
"$VPY" -m pip install --progress-bar off "$TORCH_SPEC" "${reqs[@]}" >&2
"$VPY" -c 'import sys, torch; print(f"python {sys.version.split()[0]}, torch {torch.__version__}, CUDA {torch.version.cuda}")' >&2
phase_end

if [ -n "${SEPCONV1D_WHEEL:-}" ]; then
  [ -f "$SEPCONV1D_WHEEL" ] || die "SEPCONV1D_WHEEL=$SEPCONV1D_WHEEL does not exist"
  wheel=$SEPCONV1D_WHEEL
  log "using the given wheel $wheel"
else
  [ "$DEPS" = test ] || die "SEPCONV1D_DEPS=runtime installs no build tools: give SEPCONV1D_WHEEL"
  if [ "${SEPCONV1D_CPU_ONLY:-0}" != "1" ] && [ -z "${TORCH_CUDA_ARCH_LIST:-}" ]; then
    TORCH_CUDA_ARCH_LIST=$(default_test_arch_list)
    export TORCH_CUDA_ARCH_LIST
  fi
  phase_begin "build wheel"
  wheel=$(PYTHON="$VPY" bash "$SEPCONV1D_SCRIPTS/build_wheel.sh")
  phase_end
fi

phase_begin "install wheel"
"$VPY" -m pip install --progress-bar off --no-deps --force-reinstall "$wheel" >&2
phase_end
echo "$wheel"
