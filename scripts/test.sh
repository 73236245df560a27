#!/usr/bin/env bash
# Run the tests, from scratch on a fresh machine (the README's test command, and CI's):
#
#   bash scripts/test.sh [PYTEST_ARGS...]
#
#   1. scripts/setup_env.sh: the venv (.venv), torch==2.14.1 and the test tools, the wheel built by
#      scripts/build_wheel.sh (CUDA kernels too when a CUDA toolkit is found; for the GPUs present,
#      or sm_90 on a machine without one, unless TORCH_CUDA_ARCH_LIST says otherwise), installed;
#   2. scripts/audit_wheel.sh --installed: abi3audit and torch-abi-audit (stable ABI only, min torch 2.10);
#   3. python -m pytest tests -q against the installed wheel (never the source tree);
#   4. scripts/check_cpu_torch.sh, unless SEPCONV1D_CHECK_CPU_TORCH=0: the same wheel under the
#      CPU-only torch 2.13.0 imports and runs, or fails with one clear message.
# Exits non-zero on any failure, including a pytest run that collects no test.
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

SEPCONV1D_TIMINGS=$(mktemp "${TMPDIR:-/tmp}/sepconv1d-timings.XXXXXX")
SEPCONV1D_TEST_SUMMARY=$(mktemp "${TMPDIR:-/tmp}/sepconv1d-summary.XXXXXX")
export SEPCONV1D_TIMINGS SEPCONV1D_TEST_SUMMARY
T_START=$SECONDS
finish() {
  local rc=$?
  phase_abort
  phase_report
  if [ "$rc" -eq 0 ]; then
    log "scripts/test.sh passed in $((SECONDS - T_START))s"
  else
    log "scripts/test.sh FAILED (exit $rc) after $((SECONDS - T_START))s"
  fi
  # The test counts close the output: "pytest: N passed, N failed, N skipped".
  if [ -s "$SEPCONV1D_TEST_SUMMARY" ]; then cat "$SEPCONV1D_TEST_SUMMARY"; fi
  rm -f "$SEPCONV1D_TIMINGS" "$SEPCONV1D_TEST_SUMMARY"
}
trap finish EXIT

wheel=$(bash "$SEPCONV1D_SCRIPTS/setup_env.sh")
VPY=$(venv_python)

phase_begin "audits"
PYTHON="$VPY" bash "$SEPCONV1D_SCRIPTS/audit_wheel.sh" --installed "$wheel"
phase_end

phase_begin "tests"
"$VPY" -c 'import sys, torch; print(f"python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
           f"GPU: {torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}")'
run_installed_tests "$VPY" "$@"
phase_end

if [ "${SEPCONV1D_CHECK_CPU_TORCH:-1}" != "0" ]; then
  phase_begin "wheel under CPU-only torch"
  bash "$SEPCONV1D_SCRIPTS/check_cpu_torch.sh" "$wheel"
  phase_end
fi
