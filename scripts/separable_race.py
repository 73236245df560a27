"""One fused separable forward per operand type (bf16, fp16, TF32) and x layout, at a shape that takes
the warp-specialised wgmma kernel on H100/H200, and three shapes on its chunk-major form, for
compute-sanitizer:

    compute-sanitizer --tool racecheck python3 -P scripts/separable_race.py
"""

from __future__ import annotations

import torch

import sepconv1d


def main() -> None:
    torch.backends.cudnn.allow_tf32 = True
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for channels_last in (False, True):
            # 32 x 200 x 1000, 300 output channels: enough position tiles for one group of Cout tiles.
            if channels_last:
                x = torch.randn(32, 1000, 200, device="cuda", dtype=dtype).transpose(1, 2)
            else:
                x = torch.randn(32, 200, 1000, device="cuda", dtype=dtype)
            dw = torch.randn(200, 1, 9, device="cuda", dtype=dtype)
            pw = torch.randn(300, 200, 1, device="cuda", dtype=dtype)
            y = sepconv1d.separable_conv1d(x, dw, pw, padding="same")
            torch.cuda.synchronize()
            print(dtype, "channels_last" if channels_last else "contiguous", tuple(y.shape))
    # The chunk-major form (the h ring of an item does not fit): Cin 1024, and Cin 520 with a long
    # dilated window; 3 Cout tiles, so one block has 2 passes side by side and another 1.
    for dtype, cin, k, dilation in ((torch.float32, 1024, 11, 1), (torch.float32, 520, 87, 2),
                                    (torch.bfloat16, 1024, 11, 1)):
        x = torch.randn(4, cin, 250, device="cuda", dtype=dtype)
        dw = torch.randn(cin, 1, k, device="cuda", dtype=dtype)
        pw = torch.randn(300, cin, 1, device="cuda", dtype=dtype)
        y = sepconv1d.separable_conv1d(x, dw, pw, padding="same", dilation=dilation)
        torch.cuda.synchronize()
        print(dtype, f"Cin {cin} K {k} dilation {dilation}", tuple(y.shape))


if __name__ == "__main__":
    main()
