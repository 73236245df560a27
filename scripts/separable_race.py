"""One fused separable forward per operand type (bf16, fp16, TF32) and x layout, at a shape that takes
the warp-specialised wgmma kernel on H100/H200, its tensor-core depthwise with biases and a ragged
last channel chunk (K 7, 17, 31: one to three blocks of 16 taps), five shapes on its chunk-major
form (two with the tensor-core depthwise), and the backward in batch chunks, for compute-sanitizer:

    compute-sanitizer --tool racecheck python3 -P scripts/separable_race.py

sepconv1d's kernels report no hazards. The backward's GEMMs run on cuBLAS, and racecheck reports
shared-memory hazards inside cuBLAS's own nvjet kernels (H200, CUDA 13.0: 4 or 5, by which GEMM
kernels cuBLAS picks: split-K, TNT, NTN); they are NVIDIA's library code, the same kernels
torch.matmul runs. Excluding them (--kernel-name-exclude kns=nvjet) makes their launches fail
under the tool. The dilated K 87 forward runs on the dilated kernel and over phase rows.
"""

from __future__ import annotations

import os

import torch

import sepconv1d


def main() -> None:
    torch.backends.cudnn.allow_tf32 = True
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for channels_last in (False, True):
            # 32 x 200 x 1000, 300 output channels: enough position tiles for one group of Cout tiles.
            # Channel-first rows of 1000 are 16-byte aligned: the producers' x comes by tensor map.
            if channels_last:
                x = torch.randn(32, 1000, 200, device="cuda", dtype=dtype).transpose(1, 2)
            else:
                x = torch.randn(32, 200, 1000, device="cuda", dtype=dtype)
            dw = torch.randn(200, 1, 9, device="cuda", dtype=dtype)
            pw = torch.randn(300, 200, 1, device="cuda", dtype=dtype)
            y = sepconv1d.separable_conv1d(x, dw, pw, padding="same")
            torch.cuda.synchronize()
            print(dtype, "channels_last" if channels_last else "contiguous", tuple(y.shape))
    # The tensor-core depthwise reading the weights as they are, with both biases and a last chunk
    # of channels partly past Cin (136 = 64 + 64 + 8, 520 = 8 x 64 + 8); K 7 in one block of 16
    # taps, K 17, 31 and 63 in 2, 3 and 5. Pass-major (Cin 136), and chunk-major (Cin 520; x by
    # tensor map, W as boxes of the raw weights refilled by the consumers); rows of 1001 and 210
    # (not 16-byte aligned: staged in 16-byte units, each row at its own shift, the cells before
    # a row's start cleared; "pairs": in 4-byte pairs, alternating parity) on both forms. y rows of
    # 1004, 1002 and 1001 take the epilogue's lane-pair, pair and shifted-pair stores of full tiles.
    # float32 rows of 1001 are staged element by element, rows of 1002 (and the chunk-major Cin
    # 1024 / 520 rows of 250 below) in 8-byte pairs.
    for dtype, batch, cin, k, length, cm, rows in (
            (torch.bfloat16, 32, 136, 7, 1000, "0", ""), (torch.float16, 32, 136, 7, 1000, "0", ""),
            (torch.float16, 32, 136, 17, 1000, "0", ""), (torch.bfloat16, 32, 136, 31, 1000, "0", ""),
            (torch.bfloat16, 4, 520, 31, 1000, "1", ""), (torch.float16, 4, 520, 63, 1000, "1", ""),
            (torch.bfloat16, 32, 136, 31, 1001, "0", ""), (torch.float16, 4, 520, 63, 1001, "1", ""),
            (torch.bfloat16, 32, 136, 31, 1001, "0", "pairs"), (torch.float16, 4, 520, 63, 1001, "1", "pairs"),
            (torch.bfloat16, 64, 136, 9, 210, "0", ""),
            (torch.bfloat16, 32, 136, 7, 1004, "0", ""), (torch.float16, 32, 136, 7, 1002, "0", ""),
            (torch.float32, 32, 136, 7, 1001, "0", ""), (torch.float32, 32, 136, 7, 1002, "0", "")):
        os.environ["SEPCONV1D_WS_CM"] = cm
        os.environ["SEPCONV1D_WS_ROWS16"] = "0" if rows == "pairs" else "1"
        x = torch.randn(batch, cin, length, device="cuda", dtype=dtype)
        dw, dwb = torch.randn(cin, 1, k, device="cuda", dtype=dtype), torch.randn(cin, device="cuda", dtype=dtype)
        pw, pwb = torch.randn(300, cin, 1, device="cuda", dtype=dtype), torch.randn(300, device="cuda", dtype=dtype)
        y = sepconv1d.separable_conv1d(x, dw, pw, dwb, pwb, padding="same")
        torch.cuda.synchronize()
        print(dtype, f"Cin {cin} K {k} L {length} with biases", "chunk-major" if cm == "1" else "pass-major",
              rows, tuple(y.shape))
    del os.environ["SEPCONV1D_WS_CM"], os.environ["SEPCONV1D_WS_ROWS16"]
    # The chunk-major form (the h ring of an item does not fit): Cin 1024, and Cin 520 with a long
    # dilated window (the dilated kernel: SEPCONV1D_SEP_PHASES=0); 3 Cout tiles, so one block has 2
    # passes side by side and another 1. Then K 87 dilation 2 over phase rows (the default there).
    for dtype, cin, k, dilation, phases in ((torch.float32, 1024, 11, 1, "0"), (torch.float32, 520, 87, 2, "0"),
                                            (torch.bfloat16, 1024, 11, 1, "0"), (torch.float32, 520, 87, 2, ""),
                                            (torch.bfloat16, 520, 87, 2, "")):
        os.environ["SEPCONV1D_SEP_PHASES"] = phases
        x = torch.randn(4, cin, 250, device="cuda", dtype=dtype)
        dw = torch.randn(cin, 1, k, device="cuda", dtype=dtype)
        pw = torch.randn(300, cin, 1, device="cuda", dtype=dtype)
        y = sepconv1d.separable_conv1d(x, dw, pw, padding="same", dilation=dilation)
        torch.cuda.synchronize()
        print(dtype, f"Cin {cin} K {k} dilation {dilation}", "phase rows" if phases == "" else "", tuple(y.shape))
    del os.environ["SEPCONV1D_SEP_PHASES"]

    # The backward in batch chunks (forced by a 4 MiB threshold), channel-first and channel-last: the
    # depthwise backward per chunk and the one ordered reduction of the chunks' weight-gradient
    # partial sums (dw_reduce_kernel over several runs).
    os.environ["SEPCONV1D_BWD_CHUNK_MIB"] = "4"
    for channels_last in (False, True):
        shape = (9, 2048, 256) if channels_last else (9, 256, 2048)
        x = torch.randn(*shape, device="cuda", dtype=torch.bfloat16)
        x = (x.transpose(1, 2) if channels_last else x).requires_grad_()
        params = [torch.randn(*s, device="cuda", dtype=torch.bfloat16).requires_grad_()
                  for s in ((256, 1, 3), (48, 256, 1), (256,), (48,))]
        y = sepconv1d.separable_conv1d(x, params[0], params[1], params[2], params[3], padding="same")
        grads = torch.autograd.grad(y, (x, *params), torch.randn_like(y))
        torch.cuda.synchronize()
        print("backward", "channels_last" if channels_last else "contiguous", [tuple(g.shape) for g in grads])
    del os.environ["SEPCONV1D_BWD_CHUNK_MIB"]


if __name__ == "__main__":
    main()
