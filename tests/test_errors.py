"""Bad input raises a clear Python exception naming the argument, before any kernel runs."""

from __future__ import annotations

import pytest
import torch

import sepconv1d


def _dw(device="cpu", c=4, k=3):
    return torch.randn(2, c, 16, device=device), torch.randn(c, k, device=device)


@pytest.mark.parametrize(
    "call,error,match",
    [
        (lambda x, w: sepconv1d.depthwise_conv1d(x[0], w), ValueError, "x must be 3-D"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x[..., None], w), ValueError, "x must be 3-D"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w[:3]), ValueError, "weight has 3 channels but x has 4"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w[None]), ValueError, "weight must have shape"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w.view(4, 3, 1)), ValueError, "weight must have shape"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x.long(), w), TypeError, "x must be float32"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w.double()), TypeError, "weight has dtype"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x.half(), w.bfloat16()), TypeError, "weight has dtype"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w, torch.randn(5)), ValueError, "bias must have shape"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w, torch.randn(4).double()), TypeError, "bias has dtype"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w, stride=0), ValueError, "stride must be >= 1"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w, dilation=0), ValueError, "dilation must be >= 1"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w, stride=1.5), TypeError, "stride must be an int"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w, padding=-1), ValueError, "padding must be >= 0"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w, padding=(1, -2)), ValueError, "padding must be >= 0"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w, padding="full"), ValueError, "padding must be"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w, padding=(1, 2, 3)), TypeError, "padding must be"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w, stride=2, padding="same"), ValueError, "'same'"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x[:, :, :2], w), ValueError, "shorter than the dilated kernel"),
        (lambda x, w: sepconv1d.depthwise_conv1d(x, w, dilation=9), ValueError, "shorter than the dilated kernel"),
    ],
)
def test_depthwise_bad_input(call, error, match):
    x, w = _dw()
    with pytest.raises(error, match=match):
        call(x, w)


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"pw_weight": torch.randn(5, 3)}, ValueError, "pw_weight must have shape"),
        ({"pw_weight": torch.randn(5, 4, 3)}, ValueError, "pw_weight must have shape"),
        ({"pw_weight": torch.randn(5, 4).double()}, TypeError, "pw_weight has dtype"),
        ({"dw_weight": torch.randn(3, 3)}, ValueError, "dw_weight has 3 channels"),
        ({"dw_bias": torch.randn(5)}, ValueError, "dw_bias must have shape"),
        ({"pw_bias": torch.randn(4)}, ValueError, "pw_bias must have shape"),
        ({"padding": "same", "stride": 2}, ValueError, "'same'"),
        ({"dilation": -1}, ValueError, "dilation must be >= 1"),
    ],
)
def test_separable_bad_input(kwargs, error, match):
    args = {"x": torch.randn(2, 4, 16), "dw_weight": torch.randn(4, 3), "pw_weight": torch.randn(5, 4)}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        sepconv1d.separable_conv1d(**args)


def test_half_x_with_float32_pointwise_but_half_depthwise_is_rejected():
    x = torch.randn(2, 4, 16).bfloat16()
    with pytest.raises(TypeError, match="pw_weight has dtype"):
        sepconv1d.separable_conv1d(x, torch.randn(4, 3).bfloat16(), torch.randn(5, 4))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_mixed_devices():
    x, w = _dw()
    with pytest.raises(ValueError, match="weight is on cuda"):
        sepconv1d.depthwise_conv1d(x, w.cuda())
    with pytest.raises(ValueError, match="bias is on cpu"):
        sepconv1d.depthwise_conv1d(x.cuda(), w.cuda(), torch.randn(4))
    with pytest.raises(ValueError, match="pw_weight is on cpu"):
        sepconv1d.separable_conv1d(x.cuda(), w.cuda(), torch.randn(5, 4))


def test_raw_ops_check_their_arguments():
    """Direct torch.ops calls skip the Python checks; the C++ checks still stop bad calls."""
    x, w = _dw()
    with pytest.raises(RuntimeError, match="weight has 3 channels but x has 4"):
        torch.ops.sepconv1d.depthwise_conv1d(x, w[:3], None, 1, 0, 0, 1)
    with pytest.raises(RuntimeError, match="stride must be >= 1"):
        torch.ops.sepconv1d.depthwise_conv1d(x, w, None, 0, 0, 0, 1)
    with pytest.raises(RuntimeError, match="padding must be >= 0"):
        torch.ops.sepconv1d.depthwise_conv1d(x, w, None, 1, -1, 0, 1)
    with pytest.raises(RuntimeError, match="shorter than the dilated kernel"):
        torch.ops.sepconv1d.depthwise_conv1d(x[:, :, :1], w, None, 1, 0, 0, 1)
    with pytest.raises(RuntimeError, match="pw_weight must have shape"):
        torch.ops.sepconv1d.separable_conv1d(x, w, None, torch.randn(5, 3), None, 1, 1, 1, 1, False)
    with pytest.raises(RuntimeError, match="grad_out must have shape"):
        torch.ops.sepconv1d.depthwise_conv1d_backward(torch.randn(2, 4, 15), x, w, 1, 1, 1, 1, True, True, True)
