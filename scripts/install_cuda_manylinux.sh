#!/usr/bin/env bash
# Install the parts of a CUDA toolkit that building sepconv1d needs (nvcc, the runtime's headers and
# library, CCCL) into a manylinux_2_28 (AlmaLinux 8) container from NVIDIA's rhel8 repository, and
# point /usr/local/cuda at it. cibuildwheel's before-all runs it (see pyproject.toml).
#
#   bash scripts/install_cuda_manylinux.sh [MAJOR.MINOR]     # default: $SEPCONV1D_CUDA, else 13.0
set -euo pipefail

ver="${1:-${SEPCONV1D_CUDA:-13.0}}"
case "$ver" in
  [0-9]*.[0-9]*) ;;
  *) echo "error: CUDA version must look like 13.0, not $ver" >&2; exit 2 ;;
esac
dash=${ver/./-}
case "$(uname -m)" in
  x86_64) repo_arch=x86_64 ;;
  aarch64) repo_arch=sbsa ;;
  *) echo "error: no CUDA repository for $(uname -m)" >&2; exit 2 ;;
esac

dnf install -y -q dnf-plugins-core
dnf config-manager --add-repo "https://developer.download.nvidia.com/compute/cuda/repos/rhel8/$repo_arch/cuda-rhel8.repo"
dnf install -y -q --setopt=install_weak_deps=False \
  "cuda-nvcc-$dash" "cuda-cudart-devel-$dash" "cuda-cccl-$dash" "cuda-cuobjdump-$dash"
dnf clean all
ln -sfn "/usr/local/cuda-$ver" /usr/local/cuda
rpm -qa 'cuda-*' | sort

# nvcc refuses host compilers newer than the ones its release supports: say so here, not mid-build.
host_config=$(ls /usr/local/cuda/targets/*/include/crt/host_config.h)
max_gcc=$(grep -oE '__GNUC__ > [0-9]+' "$host_config" | head -n 1 | awk '{print $3}')
gcc_major=$(gcc -dumpversion | cut -d. -f1)
echo "nvcc $(/usr/local/cuda/bin/nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'); gcc $gcc_major (nvcc accepts <= ${max_gcc:-?})"
if [ -n "$max_gcc" ] && [ "$gcc_major" -gt "$max_gcc" ]; then
  echo "error: gcc $gcc_major is newer than CUDA $ver supports ($max_gcc): pick an older gcc-toolset" >&2
  exit 1
fi
