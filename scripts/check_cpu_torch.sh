#!/usr/bin/env bash
# Install a sepconv1d wheel next to a CPU-only torch and check that `import sepconv1d` either works
# (and the CPU operators give F.conv1d's answer) or fails with one clear sepconv1d ImportError:
# never an `undefined symbol` or other loader traceback. A wheel with CUDA kernels needs a CUDA build
# of torch, so the second is what such a wheel must do.
#
#   bash scripts/check_cpu_torch.sh dist/sepconv1d-*.whl
#
# Environment:
#   SEPCONV1D_CPU_VENV        the venv for it (default: <repo>/.venv-cpu-torch; reused when present)
#   SEPCONV1D_CPU_TORCH_SPEC  the CPU-only torch (default: torch==2.13.0+cpu)
#   SEPCONV1D_CPU_TORCH_INDEX an extra index that has it, e.g. PyTorch's CPU wheel index (default: none;
#                             pip's configured indexes and find-links only)
#   PYTHON                    the interpreter to create the venv with (default: python3)
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

[ $# -eq 1 ] || die "usage: $0 WHEEL"
wheel=$1
[ -f "$wheel" ] || die "no such wheel: $wheel"
CPU_VENV="${SEPCONV1D_CPU_VENV:-$REPO_ROOT/.venv-cpu-torch}"
SPEC="${SEPCONV1D_CPU_TORCH_SPEC:-torch==2.13.0+cpu}"

CPY="$CPU_VENV/bin/python"
if ! { [ -x "$CPY" ] && "$CPY" -m pip --version >/dev/null 2>&1; }; then
  if [ -e "$CPU_VENV" ]; then
    [ -f "$CPU_VENV/pyvenv.cfg" ] || die "$CPU_VENV exists and is not a venv; move it away"
    rm -rf "$CPU_VENV"
  fi
  "${PYTHON:-python3}" -m venv "$CPU_VENV" >&2
fi
index=()
if [ -n "${SEPCONV1D_CPU_TORCH_INDEX:-}" ]; then index=(--extra-index-url "$SEPCONV1D_CPU_TORCH_INDEX"); fi
log "installing $SPEC and $(basename "$wheel") into $CPU_VENV"
"$CPY" -m pip install --progress-bar off "${index[@]}" "$SPEC" numpy >&2
"$CPY" -m pip install --progress-bar off --no-deps --force-reinstall "$wheel" >&2

workdir=$(mktemp -d "${TMPDIR:-/tmp}/sepconv1d-cputorch.XXXXXX")
trap 'rm -rf "$workdir"' EXIT
cd "$workdir"
"$CPY" - <<'PYEOF'
import sys

import torch
import torch.nn.functional as F

print(f"torch {torch.__version__} (CUDA {torch.version.cuda})")
if torch.version.cuda is not None:
    sys.exit("error: this check wants a CPU-only torch build")
try:
    import sepconv1d
except ImportError as err:
    msg = str(err)
    # torch.ops.load_library keeps the loader's own words in the chained exception: ask the loader.
    import ctypes
    import glob
    import importlib.util
    import os

    pkg = importlib.util.find_spec("sepconv1d").submodule_search_locations[0]
    lib = glob.glob(os.path.join(pkg, "_C*.so"))[0]
    try:
        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
        cause = "the library itself loads"
    except OSError as load_err:
        cause = str(load_err)
    if "undefined symbol" in msg or "undefined symbol" in cause:
        sys.exit(f"FAIL: sepconv1d hits an ABI mismatch under torch {torch.__version__}: {cause}")
    if not msg.startswith("sepconv1d:"):
        sys.exit(f"FAIL: import sepconv1d failed without sepconv1d's own message: {msg}")
    print(f"OK: this wheel needs a CUDA build of torch; import fails with one clear message:\n  {msg}")
    print(f"  (the loader says: {cause})")
    sys.exit(0)
except Exception as err:  # anything but an ImportError is not a clear message
    sys.exit(f"FAIL: import sepconv1d raised {type(err).__name__}: {err}")

x = torch.randn(2, 8, 50, dtype=torch.float64)
w = torch.randn(8, 5, dtype=torch.float64)
b = torch.randn(8, dtype=torch.float64)
got = sepconv1d.depthwise_conv1d(x, w, b, padding=2)
want = F.conv1d(x, w.unsqueeze(1), b, padding=2, groups=8)
torch.testing.assert_close(got, want)
print(f"OK: sepconv1d {sepconv1d.__version__} imports under torch {torch.__version__} and its CPU "
      "depthwise_conv1d matches F.conv1d")
PYEOF
