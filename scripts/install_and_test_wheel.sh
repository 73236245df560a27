#!/usr/bin/env bash
# Cross-version proof, repeatable on any machine (a GPU box included, with no network): install a
# built sepconv1d wheel into the CURRENT python (whatever torch >= 2.10 and Python >= 3.10 it has),
# print the versions, and run the test suite against the installed wheel (never the source tree).
#
#   bash scripts/install_and_test_wheel.sh WHEEL [OUT_DIR] [-- PYTEST_ARGS...]
#
# OUT_DIR (optional) receives junit.xml, pytest.log and summary.txt.
# Environment: PYTHON (default: python3). The interpreter needs pytest, numpy and expecttest; when
# abi3audit and torch-abi-audit are installed too, the wheel audits run first.
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

[ $# -ge 1 ] || die "usage: $0 WHEEL [OUT_DIR] [-- PYTEST_ARGS...]"
wheel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
[ -f "$wheel" ] || die "no such wheel: $wheel"
out=""
if [ $# -ge 1 ] && [ "$1" != "--" ]; then
  out=$1
  shift
fi
if [ $# -ge 1 ] && [ "$1" = "--" ]; then shift; fi
PY="${PYTHON:-python3}"
PY=$(command -v "$PY") || die "no python: $PY"
PATH="$("$PY" -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
export PATH

log "installing $(basename "$wheel") into $PY"
"$PY" -m pip install --no-deps --force-reinstall --no-index "$wheel"

versions=$(cd "${TMPDIR:-/tmp}" && "$PY" - <<'PYEOF'
import platform
import sys

import torch

import sepconv1d

cuda = torch.cuda.is_available()
print(f"python {platform.python_version()} ({sys.executable})")
print(f"torch {torch.__version__}, built with CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}")
if cuda:
    for i in range(torch.cuda.device_count()):
        print(f"GPU {i}: {torch.cuda.get_device_name(i)} (sm_{''.join(map(str, torch.cuda.get_device_capability(i)))})")
else:
    print("GPU: none visible (CUDA tests will be skipped)")
print(f"sepconv1d {sepconv1d.__version__} from {sepconv1d.__file__}")
PYEOF
)
printf '%s\n' "$versions"

if command -v abi3audit >/dev/null && command -v torch-abi-audit >/dev/null && command -v nm >/dev/null; then
  PYTHON="$PY" bash "$SEPCONV1D_SCRIPTS/audit_wheel.sh" --installed "$wheel"
else
  log "audits skipped: abi3audit, torch-abi-audit (Python >= 3.11) or nm is missing"
fi

rc=0
if [ -n "$out" ]; then
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  set +e
  SEPCONV1D_JUNIT="$out/junit.xml" run_installed_tests "$PY" "$@" 2>&1 | tee "$out/pytest.log"
  rc=${PIPESTATUS[0]}
  set -e
  {
    echo "wheel: $(basename "$wheel")"
    printf '%s\n' "$versions"
    grep -E '^pytest: ' "$out/pytest.log" | tail -n 1 || echo "pytest: no result"
    echo "exit: $rc"
  } >"$out/summary.txt"
  cat "$out/summary.txt"
else
  run_installed_tests "$PY" "$@" || rc=$?
fi
exit "$rc"
