#!/usr/bin/env bash
# Audit a built sepconv1d wheel:
#   1. abi3audit --strict --report: the extension keeps to CPython's limited API (abi3, 3.10 floor);
#   2. torch-abi-audit (scripts/torch_abi_gate.py): PyTorch stable ABI only, minimum torch <= 2.10;
#   3. its shared-library dependencies: libtorch/c10 (and CUDA runtime) from torch's wheel only,
#      never libtorch_python or libpython.
# With --installed, also gate the INSTALLED package (torch-abi-audit sepconv1d --check torch), as the
# import name resolves in the current python.
#
#   bash scripts/audit_wheel.sh [--installed] dist/sepconv1d-*.whl
#
# abi3audit and torch-abi-audit must be installed in $PYTHON's environment (scripts/setup_env.sh
# installs both into the venv); torch-abi-audit needs Python >= 3.11 and `nm` (binutils).
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

installed=0
if [ "${1:-}" = "--installed" ]; then
  installed=1
  shift
fi
[ $# -eq 1 ] || die "usage: $0 [--installed] WHEEL"
wheel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -f "$wheel" ] || die "no such wheel: $1"

PY="${PYTHON:-$(command -v python3 || command -v python)}"
PATH="$("$PY" -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
export PATH
command -v abi3audit >/dev/null || die "abi3audit is not installed (pip install abi3audit)"

work=$(mktemp -d "${TMPDIR:-/tmp}/sepconv1d-audit.XXXXXX")
trap 'rm -rf "$work"' EXIT

log "wheel: $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"
case "$(basename "$wheel")" in
  *-cp310-abi3-*.whl) ;;
  *) die "$(basename "$wheel") is not tagged cp310-abi3" ;;
esac

log "abi3audit --strict --report"
abi3audit --strict --report -s "$wheel"
echo

"$PY" -m zipfile -e "$wheel" "$work/unpacked"
shopt -s nullglob
libs=("$work"/unpacked/sepconv1d/_C*.so)
[ "${#libs[@]}" -eq 1 ] || die "expected one sepconv1d/_C*.so in the wheel, found ${#libs[@]}"

log "torch-abi-audit on the wheel's package"
"$PY" "$SEPCONV1D_SCRIPTS/torch_abi_gate.py" "$work/unpacked/sepconv1d" --min-torch "$SEPCONV1D_MIN_TORCH"

if command -v readelf >/dev/null; then
  log "shared-library dependencies of $(basename "${libs[0]}")"
  needed=$(readelf -d "${libs[0]}" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  while read -r lib; do echo "  $lib"; done <<<"$needed"
  if grep -Eq '^(libtorch_python\.so|libpython3)' <<<"$needed"; then
    die "the extension links libtorch_python or libpython: it would be tied to one torch/python build"
  fi
fi

if command -v nm >/dev/null && command -v c++filt >/dev/null; then
  # A kernel declared in one file and never defined (or a .cu left out of the build) links fine into
  # a shared library and only fails at load time: catch it here.
  own_undefined=$(nm -D --undefined-only "${libs[0]}" | c++filt | grep -F 'sepconv1d::' || true)
  if [ -n "$own_undefined" ]; then
    printf '%s\n' "$own_undefined" >&2
    die "$(basename "${libs[0]}") leaves sepconv1d's own symbols undefined: it will not load"
  fi
fi

if [ "$installed" = 1 ]; then
  log "torch-abi-audit sepconv1d --check torch (the installed package)"
  # From an empty folder, so the import name cannot resolve to a source tree in the working directory.
  (cd "$work" && "$PY" "$SEPCONV1D_SCRIPTS/torch_abi_gate.py" sepconv1d --min-torch "$SEPCONV1D_MIN_TORCH")
fi
log "audits passed"
