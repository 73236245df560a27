"""Depthwise forward and backward on the tensor-core kernels (dw_fwd_cf_tc_kernel,
dw_bwd_cf_tc_kernel) for compute-sanitizer: half types with the compiled kernel sizes (3, 4, 5,
9) on rows that are not 16-byte aligned, which take those kernels since the thirty-seventh session,
and a run-time K beside them; bf16 and float32 weights; 'same', causal and asymmetric pads; float32
at run-time K on long rows (the tile backward's dw partials in registers), and its run-time-K
forward with y staged (rows of y not 16-byte aligned). Then
dilated problems as phase rows (depthwise_phases.cuh: the gather, the dilation-1 kernels, the
scatter; SEPCONV1D_DW_PHASES=1 for every K), in half types and float32. Last, the short-row
kernels (depthwise_rows.cuh, SEPCONV1D_DW_ROWS=1): every padded tap count, rows of one element up
to 2048, unaligned and batch-strided views, every subset of the gradients, float32 and half types;
the word-aligned ones take the words forward and backward, and a few channels of many rows give
their warps runs of several units (the next unit's copies in flight while one computes), in bf16
from K 12 with the backward's dx, dw and db on the tensor cores, and odd lengths past 256 whose
backward takes the other rows kernel's tensor cores:

    compute-sanitizer --tool racecheck python3 -P scripts/depthwise_race.py
    compute-sanitizer --tool racecheck python3 -P scripts/depthwise_race.py staged_y   # that part alone
    compute-sanitizer --tool racecheck python3 -P scripts/depthwise_race.py tc         # and this one
    compute-sanitizer --tool memcheck python3 -P scripts/depthwise_race.py odd         # odd rows
"""

from __future__ import annotations

import os
import sys

import torch

import sepconv1d


def run_time_staged_y() -> None:
    """The run-time-K forward with y rows that are not 16-byte aligned staged through the quarter
    warps' shared areas (cf_rt_items_staged): row groups and one row per block, the padded form
    and the dense one (x rows aligned by a view, y not); dx runs as the same forward. Then the
    compiled-K tile forward's staged y (cf_fwd_fast)."""
    os.environ["SEPCONV1D_DW_ROWS"] = "0"
    for rows in ("1", "0"):
        os.environ["SEPCONV1D_DW_RT_ROWS"] = rows
        for length, k, padding, view in ((835, 33, "same", False), (418, 44, "same", False),
                                         (250, 41, (3, 40), True), (4097, 127, "same", False)):
            x = torch.randn(3, 16, 256 if view else length, device="cuda")[..., :length].requires_grad_(True)
            w = torch.randn(16, k, device="cuda", requires_grad=True)
            b = torch.randn(16, device="cuda", requires_grad=True)
            y = sepconv1d.depthwise_conv1d(x, w, b, padding=padding)
            torch.autograd.grad(y, (x, w, b), torch.randn_like(y))
    os.environ.pop("SEPCONV1D_DW_RT_ROWS")
    # The compiled-K tile forward with y through the warps' areas (cf_fwd_fast): rows past the
    # short-row kernels, y not 16-byte aligned.
    for length, k, padding in ((4099, 9, "same"), (3001, 4, "causal"), (2563, 3, (0, 4)), (2049, 5, "same")):
        x = torch.randn(3, 16, length + 1, device="cuda")[..., 1:].requires_grad_(True)
        w = torch.randn(16, k, device="cuda", requires_grad=True)
        y = sepconv1d.depthwise_conv1d(x, w, None, padding=padding)
        torch.autograd.grad(y, (x, w), torch.randn_like(y))


def tensor_core_rows() -> None:
    """The tensor-core kernels on rows that are not 16-byte aligned: odd (2-byte rows, which the
    backward stages in 16-byte units and realigns), 4- and 8-byte aligned (the same with
    SEPCONV1D_DW_TC_UNITS=8), rows of several tiles (4097, 2049), a slice one element in, and a
    run-time K beside the compiled ones (contiguous odd rows at compiled K take the register-direct
    kernels unless SEPCONV1D_DW_REG_SHIFTED=0)."""
    os.environ["SEPCONV1D_DW_ROWS"] = "0"  # the short rows below would take the rows kernels
    for dtype, wdtype in ((torch.bfloat16, torch.bfloat16), (torch.float16, torch.float16),
                          (torch.bfloat16, torch.float32)):
        # Row lengths: odd (2-byte rows), 4-byte and 8-byte aligned, short and long.
        for length in (211, 834, 1670, 500, 4097):
            for k, padding in ((3, "same"), (4, "causal"), (5, (1, 3)), (9, "same"), (7, "same"), (31, (2, 40))):
                x = torch.randn(3, 40, length, device="cuda", dtype=dtype, requires_grad=True)
                w = torch.randn(40, k, device="cuda", dtype=wdtype, requires_grad=True)
                b = torch.randn(40, device="cuda", dtype=wdtype, requires_grad=True)
                y = sepconv1d.depthwise_conv1d(x, w, b, padding=padding)
                torch.autograd.grad(y, (x, w, b), torch.randn_like(y))
        x = torch.randn(2, 16, 2050, device="cuda", dtype=dtype)[..., 1:].requires_grad_(True)
        w = torch.randn(16, 9, device="cuda", dtype=wdtype, requires_grad=True)
        y = sepconv1d.depthwise_conv1d(x, w, None, padding="same")
        torch.autograd.grad(y, (x, w), torch.randn_like(y))
    os.environ.pop("SEPCONV1D_DW_ROWS")


def odd_rows() -> None:
    """Odd lengths of contiguous tensors (rows at shifts off the 16-byte grid): the register-direct
    kernels walking each row on its own grid (compiled K, 'same', causal and 'valid' pads, rows of
    one element up to several work items, short rows kept off the rows kernels), and slices
    x[..., 1:] (x and y rows at different shifts: the forward realigns x in registers, so does the
    backward where dy and dx share their shift), then the same with them off (the tile and
    tensor-core kernels), and a run-time K (33) beside them."""
    os.environ["SEPCONV1D_DW_ROWS"] = "0"
    for reg in ("1", "0"):
        os.environ["SEPCONV1D_DW_REG_SHIFTED"] = reg
        for dtype, wdtype in ((torch.float32, torch.float32), (torch.bfloat16, torch.bfloat16),
                              (torch.float16, torch.float32)):
            for length, view in ((1, 0), (7, 1), (13, 0), (1001, 1), (4097, 0), (4096, 1)):
                for k, padding in ((3, "same"), (4, "causal"), (5, "same"), (9, (8, 0)), (9, (0, 0)), (3, (0, 0)),
                                   (33, "same")):
                    if length + sum(padding if isinstance(padding, tuple) else (0,)) < k and padding == (0, 0):
                        continue
                    x = torch.randn(3, 6, length + view, device="cuda", dtype=dtype)[..., view:].requires_grad_()
                    w = torch.randn(6, k, device="cuda", dtype=wdtype, requires_grad=True)
                    b = torch.randn(6, device="cuda", dtype=wdtype, requires_grad=True)
                    y = sepconv1d.depthwise_conv1d(x, w, b, padding=padding)
                    torch.autograd.grad(y, (x, w, b), torch.randn_like(y))
    os.environ.pop("SEPCONV1D_DW_REG_SHIFTED")
    os.environ.pop("SEPCONV1D_DW_ROWS")


def main() -> None:
    if sys.argv[1:] == ["odd"]:  # that section alone
        odd_rows()
        return
    if sys.argv[1:] == ["staged_y"]:  # that section alone
        run_time_staged_y()
        return
    if sys.argv[1:] == ["tc"]:  # that section alone
        tensor_core_rows()
        return
    tensor_core_rows()
    odd_rows()
    os.environ["SEPCONV1D_DW_ROWS"] = "0"
    # float32 at run-time K on rows past the short-row kernels: the tile backward with its dw
    # partials in registers (16, 32, 64 and 128 taps), many tiles per block.
    for length, k, padding in ((4099, 15, "same"), (2560, 33, (32, 0)), (6001, 63, (2, 70)),
                               (3001, 87, "same")):
        x = torch.randn(2, 8, length, device="cuda", requires_grad=True)
        w = torch.randn(8, k, device="cuda", requires_grad=True)
        b = torch.randn(8, device="cuda", requires_grad=True)
        y = sepconv1d.depthwise_conv1d(x, w, b, padding=padding)
        torch.autograd.grad(y, (x, w, b), torch.randn_like(y))
    run_time_staged_y()
    os.environ["SEPCONV1D_DW_PHASES"] = "1"
    for dtype in (torch.bfloat16, torch.float32):
        for length, k, d, padding in ((835, 87, 2, (86, 86)), (1001, 9, 3, (13, 11)), (3001, 7, 9, (27, 27)),
                                      (300, 16, 17, (5, 300))):
            x = torch.randn(2, 24, length, device="cuda", dtype=dtype, requires_grad=True)
            w = torch.randn(24, k, device="cuda", dtype=dtype, requires_grad=True)
            b = torch.randn(24, device="cuda", dtype=dtype, requires_grad=True)
            y = sepconv1d.depthwise_conv1d(x, w, b, padding=padding, dilation=d)
            torch.autograd.grad(y, (x, w, b), torch.randn_like(y))
    os.environ.pop("SEPCONV1D_DW_PHASES")
    os.environ["SEPCONV1D_DW_ROWS"] = "1"
    for dtype, wdtype in ((torch.float32, torch.float32), (torch.bfloat16, torch.float32),
                          (torch.float16, torch.float16)):
        for i, (length, k, padding) in enumerate(((210, 9, (8, 0)), (1, 3, (1, 1)), (13, 2, (0, 1)),
                                                  (250, 11, "same"), (500, 31, (15, 15)), (2048, 32, (0, 31)),
                                                  (77, 17, (16, 3)), (2047, 5, "same"))):
            x = torch.randn(10, 24, length + 1, device="cuda", dtype=dtype)
            x = (x[..., 1:] if i % 2 else x[::2, :, :length]).requires_grad_(True)
            w = torch.randn(24, k, device="cuda", dtype=wdtype, requires_grad=True)
            b = torch.randn(24, device="cuda", dtype=wdtype, requires_grad=True)
            y = sepconv1d.depthwise_conv1d(x, w, b, padding=padding)
            dy = torch.randn_like(y)
            torch.autograd.grad(y, (x, w, b), dy)
            torch.autograd.grad(sepconv1d.depthwise_conv1d(x, w.detach(), None, padding=padding), (x,), dy)
            torch.autograd.grad(sepconv1d.depthwise_conv1d(x.detach(), w, b, padding=padding), (w,), dy)
    for dtype in (torch.bfloat16, torch.float32):
        for batch, length, k, padding in ((300, 210, 9, (8, 0)), (1000, 64, 3, "same"), (200, 250, 11, "same"),
                                          (40, 500, 31, "same"), (60, 300, 13, (6, 8)), (40, 501, 21, (10, 10)),
                                          (20, 1023, 13, "same")):
            x = torch.randn(batch, 6, length, device="cuda", dtype=dtype, requires_grad=True)
            w = torch.randn(6, k, device="cuda", dtype=dtype, requires_grad=True)
            y = sepconv1d.depthwise_conv1d(x, w, None, padding=padding)
            torch.autograd.grad(y, (x, w), torch.randn_like(y))
    torch.cuda.synchronize()
    print("depthwise_race: done")


if __name__ == "__main__":
    main()
