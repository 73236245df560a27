#!/usr/bin/env bash
# Build the warp-specialised forward's standalone harness (scripts/ws_forward_harness.cu: what it
# checks and times, and its environment switches) for sm_90a, in seconds:
#
#   bash scripts/ws_forward_harness.sh OUTPUT [NVCC_FLAGS...]
#
# e.g. `bash scripts/ws_forward_harness.sh .scratch/h_ffma -DHARNESS_FFMA` (`-DHARNESS_TF32`: the
# float32 x on TF32 kernel), or a kernel experiment's
# -D switch. Then, on the GPU machine, `OUTPUT [B Cin Cout L K [reps]]`. Needs nvcc (CUDA_HOME or
# PATH) and a python with torch (PYTHON, default python3): the kernel headers use torch's
# header-only types. Nothing from torch is linked.
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
[ $# -ge 1 ] || die "usage: $0 OUTPUT [NVCC_FLAGS...]"
out=$1
shift
if [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
  nvcc="$CUDA_HOME/bin/nvcc"
else
  nvcc=$(command -v nvcc) || die "nvcc not found (set CUDA_HOME or PATH)"
fi
PY=${PYTHON:-python3}
torch_include=$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))') ||
  die "$PY cannot import torch"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The extension's own flags (setup.py): its stable-ABI target, the sm_90a kernels, CUDA's half types.
"$nvcc" -std=c++20 -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
  -DUSE_CUDA -DSEPCONV1D_SM90A -DTORCH_TARGET_VERSION=0x020a000000000000 \
  -I "$root/csrc" -I "$torch_include" -Xptxas -warn-spills "$@" \
  "$root/scripts/ws_forward_harness.cu" -o "$out"
