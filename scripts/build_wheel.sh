#!/usr/bin/env bash
# Build the sepconv1d wheel into dist/ with the CURRENT environment's python (which must already have
# torch >= 2.10, setuptools >= 77, wheel and ninja: there is no build isolation, the extension is
# compiled against the torch that is installed).
#
#   bash scripts/build_wheel.sh
#
# Environment:
#   PYTHON                   interpreter to build with (default: python3, or python)
#   TORCH_CUDA_ARCH_LIST     GPU targets (setup.py's default: 8.0;9.0;10.0;12.0+PTX)
#   MAX_JOBS                 parallel compile jobs (default: the number of cores)
#   SEPCONV1D_CPU_ONLY=1     build the CPU operators only, even where a CUDA toolkit exists
#   SEPCONV1D_CUDA_SUFFIX=1  release builds: add the CUDA major as a local version (0.1.0+cu13;
#                            0.1.0+cpu for a CPU-only build). Local versions cannot go to PyPI.
#   DIST_DIR                 output folder (default: dist/)
#
# The wheel must come out tagged cp310-abi3-<platform>; anything else fails the build.
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

PY="${PYTHON:-$(command -v python3 || command -v python)}"
[ -n "$PY" ] || die "no python found (set PYTHON)"
# Put the interpreter's scripts folder (a venv's bin/) first on PATH: torch's extension builder
# runs the `ninja` executable that the ninja package installs there.
PATH="$("$PY" -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
export PATH
export MAX_JOBS="${MAX_JOBS:-$(nproc 2>/dev/null || echo 2)}"

"$PY" - <<'EOF' >&2 || die "the build environment is incomplete (see above)"
import sys

import torch

missing = []
for mod in ("setuptools", "ninja"):
    try:
        __import__(mod)
    except ImportError:
        missing.append(mod)
if missing:
    sys.exit(f"missing build requirements: {' '.join(missing)}")
if tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 10):
    sys.exit(f"torch {torch.__version__} is too old to build against; need >= 2.10")
print(f"building with python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda})")
EOF

if [ "${SEPCONV1D_CUDA_SUFFIX:-0}" = "1" ]; then
  major=""
  if [ "${SEPCONV1D_CPU_ONLY:-0}" != "1" ]; then major=$(cuda_major); fi
  if [ -n "$major" ]; then
    export SEPCONV1D_LOCAL_VERSION="cu$major"
  else
    export SEPCONV1D_LOCAL_VERSION="cpu"
  fi
fi

log "building the wheel (TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-<setup.py default>}, MAX_JOBS=$MAX_JOBS, SEPCONV1D_CPU_ONLY=${SEPCONV1D_CPU_ONLY:-0}${SEPCONV1D_LOCAL_VERSION:+, local version +$SEPCONV1D_LOCAL_VERSION})"
mkdir -p "$DIST_DIR"
# Old sepconv1d wheels would make dist/*.whl ambiguous for the scripts that install it.
rm -f "$DIST_DIR"/sepconv1d-*.whl
cd "$REPO_ROOT"
# -v shows the compiler lines (and which toolkit setup.py picked); pip builds in-tree, so build/ keeps
# ninja's objects and a rebuild only recompiles what changed. Only the wheel's path goes to stdout.
"$PY" -m pip wheel --no-build-isolation --no-deps -v -w "$DIST_DIR" . >&2

shopt -s nullglob
wheels=("$DIST_DIR"/sepconv1d-*.whl)
[ "${#wheels[@]}" -eq 1 ] || die "expected one sepconv1d wheel in $DIST_DIR, found ${#wheels[@]}"
wheel=${wheels[0]}
case "$(basename "$wheel")" in
  *-cp310-abi3-*.whl) ;;
  *) die "$(basename "$wheel") is not tagged cp310-abi3" ;;
esac
log "built $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"
echo "$wheel"
