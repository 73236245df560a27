"""A/B of the CUDA separable forward kernels in one process, by device time.

For each shape: the warp-specialised wgmma kernel (SEPCONV1D_WGMMA unset / "1"), the uniform wgmma
kernel ("uniform", 16-bit x; float32 then takes mma.sync) and the mma.sync kernels ("0"), against
PyTorch eager (two F.conv1d calls) and the split path (our depthwise, then cuDNN's 1x1). Each time
is the median of three batches of calls queued behind a long `torch.cuda._sleep`, so host overhead
does not enter. Correctness is the test suite's job (tests/test_separable.py).

    python3 -P scripts/separable_ab.py            # JSON to $OUT/separable_ab.json (default /tmp)
"""

from __future__ import annotations

import json
import os
import sys

import torch
import torch.nn.functional as F

import sepconv1d

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _device_timing import device_time_us as _device_time_us  # noqa: E402

MODES = {"ws": "1", "uniform": "uniform", "mma": "0"}


def device_time_us(fn, calls: int = 30) -> float:
    """Device time of fn() in us (_device_timing.device_time_us, for calls without an input index)."""
    return _device_time_us(lambda _i: fn(), calls)


def bench(name, b, cin, cout, length, k, dtype, channels_last=False, stride=1, dilation=1):
    if channels_last:
        x = torch.randn(b, length, cin, device="cuda", dtype=dtype).transpose(1, 2)
    else:
        x = torch.randn(b, cin, length, device="cuda", dtype=dtype)
    dw = torch.randn(cin, 1, k, device="cuda", dtype=dtype) / k**0.5
    pw = torch.randn(cout, cin, 1, device="cuda", dtype=dtype) / cin**0.5
    pad = (k // 2) * dilation
    result = {}
    for label, mode in MODES.items():
        os.environ["SEPCONV1D_WGMMA"] = mode
        result[label] = device_time_us(
            lambda: sepconv1d.separable_conv1d(x, dw, pw, stride=stride, padding=pad, dilation=dilation))
    os.environ.pop("SEPCONV1D_WGMMA")
    result["eager"] = device_time_us(lambda: F.conv1d(F.conv1d(x, dw, None, stride, pad, dilation, cin), pw))
    result["split"] = device_time_us(
        lambda: F.conv1d(sepconv1d.depthwise_conv1d(x, dw, stride=stride, padding=pad, dilation=dilation), pw))
    print(f"{name:24s} " + " ".join(f"{key} {value:7.1f} us" for key, value in result.items())
          + f"  eager/ws {result['eager'] / result['ws']:.2f}x  uniform/ws {result['uniform'] / result['ws']:.2f}x",
          flush=True)
    return result


def main() -> None:
    torch.backends.cudnn.allow_tf32 = True
    bf16, fp16, fp32 = torch.bfloat16, torch.float16, torch.float32
    shapes = {
        "seed bf16": (32, 256, 512, 4096, 9, bf16),
        "seed fp16": (32, 256, 512, 4096, 9, fp16),
        "seed bf16 CL": (32, 256, 512, 4096, 9, bf16, True),
        "seed tf32": (32, 256, 512, 4096, 9, fp32),
        "seed tf32 CL": (32, 256, 512, 4096, 9, fp32, True),
        "conformer bf16": (32, 512, 512, 500, 31, bf16),
        "citrinet bf16": (32, 1024, 1024, 250, 11, bf16),
        "citrinet tf32": (32, 1024, 1024, 250, 11, fp32),
        "vocos bf16": (16, 512, 1536, 1024, 7, bf16),
        "vocos tf32": (16, 512, 1536, 1024, 7, fp32),
        "quartznet blk fp16": (32, 512, 512, 835, 63, fp16),
        "qn-first fp16 s2": (32, 64, 256, 1670, 33, fp16, False, 2),
        "qn-last fp16 d2": (32, 512, 512, 835, 87, fp16, False, 1, 2),
        "fastconf bf16": (128, 512, 512, 210, 9, bf16),
        "small cout64": (32, 256, 64, 4096, 9, bf16),
    }
    results = {name: bench(name, *args) for name, args in shapes.items()}
    path = os.path.join(os.environ.get("OUT", "/tmp"), "separable_ab.json")
    with open(path, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "cuda": torch.version.cuda, "times_us": results}, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
