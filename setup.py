"""Build sepconv1d._C: one stable-ABI extension (CPU kernels, plus CUDA kernels when nvcc is found).

Environment knobs:
  SEPCONV1D_CPU_ONLY=1     build the CPU operators only, even where a CUDA toolkit exists
  CUDA_HOME / CUDA_PATH    the CUDA toolkit to use (otherwise found from nvcc on PATH)
  TORCH_CUDA_ARCH_LIST     GPU targets (default: 8.0;9.0;10.0;12.0+PTX); 9.0 is built as 9.0a
                           (sm_90a: the separable forward's wgmma kernels; runs on every cc 9.0 GPU)
  MAX_JOBS                 parallel compile jobs (read by torch's ninja build)
  SEPCONV1D_DEBUG=1        -O0 -g host code and -G device code, for cuda-gdb
  SEPCONV1D_LOCAL_VERSION  a PEP 440 local version label for the wheel, e.g. cu13 -> 0.1.0+cu13
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
DEFAULT_ARCH_LIST = "8.0;9.0;10.0;12.0+PTX"
# The oldest torch whose stable ABI the extension targets (TORCH_TARGET_VERSION): 2.10.
TORCH_TARGET_VERSION = "0x020a000000000000"


def _read_version() -> str:
    text = (ROOT / "sepconv1d" / "__init__.py").read_text()
    match = re.search(r'^__version__ = "([^"]+)"', text, re.M)
    if not match:
        raise RuntimeError("sepconv1d/__init__.py has no __version__ line")
    version = match.group(1)
    local = os.environ.get("SEPCONV1D_LOCAL_VERSION", "").strip()
    if local:
        if not re.fullmatch(r"[a-z0-9]+(\.[a-z0-9]+)*", local):
            raise RuntimeError(f"SEPCONV1D_LOCAL_VERSION={local!r} is not a PEP 440 local label like cu13")
        version += "+" + local
    return version


def _has_cudart(prefix: str) -> bool:
    patterns = ("lib64/libcudart.so*", "lib/libcudart.so*", "targets/*/lib/libcudart.so*")
    return any(glob.glob(os.path.join(prefix, p)) for p in patterns)


def _nvcc_top(nvcc: str) -> str | None:
    """The toolkit prefix nvcc itself uses (its TOP), which stays right behind wrapper scripts."""
    try:
        out = subprocess.run(
            [nvcc, "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull],
            capture_output=True, text=True, timeout=60, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    for line in (out.stdout + out.stderr).splitlines():
        m = re.match(r"#\$ TOP=(.+)$", line.strip())
        if m:
            return os.path.realpath(m.group(1).strip())
    return None


def find_cuda_home() -> str | None:
    """Return a CUDA toolkit prefix that has both bin/nvcc and libcudart, or None.

    torch's own guess (dirname(dirname(which nvcc))) lands on e.g. /usr/local when nvcc on PATH is
    a wrapper script, and that prefix has no libcudart; so ask nvcc where it really lives.
    """
    candidates: list[str] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(os.environ[var])
    nvcc = shutil.which("nvcc")
    for c in list(candidates):
        if os.path.exists(os.path.join(c, "bin", "nvcc")):
            nvcc = nvcc or os.path.join(c, "bin", "nvcc")
    if nvcc:
        top = _nvcc_top(nvcc)
        if top:
            candidates.append(top)
        candidates.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    candidates.append("/usr/local/cuda")
    for c in candidates:
        if os.path.exists(os.path.join(c, "bin", "nvcc")) and _has_cudart(c):
            return os.path.realpath(c)
    return None


def with_sm90a(arch_list: str) -> str:
    """TORCH_CUDA_ARCH_LIST with 9.0 built as 9.0a: wgmma needs the arch-specific target, whose
    code runs on every compute capability 9.0 GPU (H100, H200, GH200)."""
    entries = [e for e in re.split(r"[;\s]+", arch_list.strip()) if e]
    out = []
    for e in entries:
        base, plus, ptx = e.partition("+")
        out.append(("9.0a" if base == "9.0" else base) + plus + ptx)
    return ";".join(out)


def _want_cuda() -> tuple[bool, str | None]:
    if os.environ.get("SEPCONV1D_CPU_ONLY", "0") == "1":
        return False, None
    home = find_cuda_home()
    return home is not None, home


WITH_CUDA, CUDA_HOME = _want_cuda()
if WITH_CUDA:
    # Must be set before torch.utils.cpp_extension is imported: it reads CUDA_HOME at import.
    os.environ["CUDA_HOME"] = CUDA_HOME
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", DEFAULT_ARCH_LIST)
    os.environ["TORCH_CUDA_ARCH_LIST"] = with_sm90a(os.environ["TORCH_CUDA_ARCH_LIST"])

from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension  # noqa: E402


def _extension():
    debug = os.environ.get("SEPCONV1D_DEBUG", "0") == "1"
    # torch's BuildExtension adds -DPy_LIMITED_API itself for py_limited_api extensions.
    common = [f"-DTORCH_TARGET_VERSION={TORCH_TARGET_VERSION}"]
    cxx = common + (["-O0", "-g"] if debug else ["-O3"]) + ["-fvisibility=hidden"]
    sources = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc").rglob("*.cpp"))
    include_dirs = [str(ROOT / "csrc")]
    if not WITH_CUDA:
        print("sepconv1d: building the CPU operators only", file=sys.stderr)
        return CppExtension(
            "sepconv1d._C", sources, include_dirs=include_dirs,
            extra_compile_args={"cxx": cxx}, py_limited_api=True,
        )
    print(f"sepconv1d: building CPU and CUDA operators with the toolkit at {CUDA_HOME}, "
          f"arch list {os.environ['TORCH_CUDA_ARCH_LIST']}", file=sys.stderr)
    sources += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc").rglob("*.cu"))
    nvcc = common + ["-DUSE_CUDA", "--expt-relaxed-constexpr"]
    if any(e.split("+")[0] == "9.0a" for e in os.environ["TORCH_CUDA_ARCH_LIST"].split(";")):
        nvcc.append("-DSEPCONV1D_SM90A")  # the host may launch the sm_90a (wgmma) kernels
    # torch's extension builder passes -D__CUDA_NO_HALF_CONVERSIONS__ and friends (they keep cuda_fp16.h
    # from clashing with at::Half, which stable-ABI code never includes); undo them so kernels can use
    # __half / __nv_bfloat16 constructors and operators. These come after torch's flags, so they win.
    nvcc += [
        "-U__CUDA_NO_HALF_OPERATORS__",
        "-U__CUDA_NO_HALF_CONVERSIONS__",
        "-U__CUDA_NO_HALF2_OPERATORS__",
        "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
        "-U__CUDA_NO_BFLOAT16_OPERATORS__",
    ]
    nvcc += ["-O0", "-G", "-g"] if debug else ["-O3", "-lineinfo"]
    return CUDAExtension(
        "sepconv1d._C", sources, include_dirs=include_dirs,
        # libdl: cuBLAS is reached with dlopen (csrc/cuda/cublas_gemm.cu); glibc >= 2.34 has it in libc.
        libraries=["dl"],
        extra_compile_args={"cxx": cxx + ["-DUSE_CUDA"], "nvcc": nvcc}, py_limited_api=True,
    )


setup(
    version=_read_version(),
    ext_modules=[_extension()],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
