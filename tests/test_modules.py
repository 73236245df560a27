"""nn.Module wrappers: nn.Conv1d's shapes, initialisation, state dicts and results."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import sepconv1d


@pytest.mark.parametrize("padding", [0, 3, "same", "valid"])
def test_depthwise_matches_nn_conv1d(device, padding):
    torch.manual_seed(1234)
    ref = nn.Conv1d(12, 12, 7, padding=padding, dilation=2 if padding != "valid" else 1, groups=12, device=device)
    torch.manual_seed(1234)
    ours = sepconv1d.DepthwiseConv1d(12, 7, padding=padding, dilation=ref.dilation[0], device=device)
    # Same initialisation scheme and RNG draws as nn.Conv1d.
    assert torch.equal(ours.weight, ref.weight) and torch.equal(ours.bias, ref.bias)
    assert ours.state_dict().keys() == ref.state_dict().keys()
    x = torch.randn(3, 12, 90, device=device)
    torch.testing.assert_close(ours(x), ref(x), rtol=1e-5, atol=1e-5)


def test_depthwise_loads_nn_conv1d_state_dict(device):
    ref = nn.Conv1d(10, 10, 5, stride=2, padding=2, groups=10, bias=True, device=device)
    ours = sepconv1d.DepthwiseConv1d(10, 5, stride=2, padding=2, device=device)
    ours.load_state_dict(ref.state_dict())
    x = torch.randn(2, 10, 51, device=device)
    torch.testing.assert_close(ours(x), ref(x), rtol=1e-5, atol=1e-5)
    back = nn.Conv1d(10, 10, 5, stride=2, padding=2, groups=10, device=device)
    back.load_state_dict(ours.state_dict())
    assert torch.equal(back.weight, ref.weight)


def test_depthwise_from_conv1d(device):
    ref = nn.Conv1d(6, 6, 4, stride=1, padding="same", dilation=3, groups=6, bias=False, device=device)
    ours = sepconv1d.DepthwiseConv1d.from_conv1d(ref)
    assert ours.bias is None and ours.padding == "same" and ours.dilation == 3
    x = torch.randn(2, 6, 33, device=device)
    torch.testing.assert_close(ours(x), ref(x), rtol=1e-5, atol=1e-5)
    ours.weight.data.zero_()
    assert ref.weight.abs().sum() > 0, "from_conv1d copies parameters, it does not alias them"


def test_depthwise_from_conv1d_rejects_non_depthwise():
    with pytest.raises(ValueError, match="must be depthwise"):
        sepconv1d.DepthwiseConv1d.from_conv1d(nn.Conv1d(4, 8, 3, groups=4))
    with pytest.raises(ValueError, match="padding_mode"):
        sepconv1d.DepthwiseConv1d.from_conv1d(nn.Conv1d(4, 4, 3, groups=4, padding=1, padding_mode="reflect"))


class _TwoConvs(nn.Module):
    def __init__(self, cin, cout, k, **kw):
        super().__init__()
        self.depthwise = nn.Conv1d(cin, cin, k, groups=cin, **kw)
        self.pointwise = nn.Conv1d(cin, cout, 1)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


def test_separable_matches_two_conv1d(device):
    torch.manual_seed(7)
    ref = _TwoConvs(16, 24, 9, padding=4).to(device)
    torch.manual_seed(7)
    ours = sepconv1d.SeparableConv1d(16, 24, 9, padding=4).to(device)  # same CPU RNG draws as ref
    assert ours.state_dict().keys() == ref.state_dict().keys()
    for key, value in ref.state_dict().items():
        assert torch.equal(ours.state_dict()[key], value), key
    x = torch.randn(2, 16, 100, device=device)
    torch.testing.assert_close(ours(x), ref(x), rtol=1e-4, atol=1e-5)
    ours2 = sepconv1d.SeparableConv1d(16, 24, 9, padding=4, device=device)
    ours2.load_state_dict(ref.state_dict())
    torch.testing.assert_close(ours2(x), ref(x), rtol=1e-4, atol=1e-5)


def test_separable_from_conv1d(device):
    ref = _TwoConvs(5, 3, 4, stride=2, padding=1, dilation=2, bias=False).to(device)
    ours = sepconv1d.SeparableConv1d.from_conv1d(ref.depthwise, ref.pointwise)
    assert ours.depthwise.bias is None and ours.pointwise.bias is not None
    x = torch.randn(3, 5, 41, device=device)
    torch.testing.assert_close(ours(x), ref(x), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="1x1"):
        sepconv1d.SeparableConv1d.from_conv1d(ref.depthwise, nn.Conv1d(5, 3, 3))


def test_modules_train(device):
    """A few optimiser steps reduce a regression loss: gradients flow into every parameter."""
    torch.manual_seed(0)
    model = nn.Sequential(sepconv1d.DepthwiseConv1d(8, 5, padding="causal"), nn.GELU(),
                          sepconv1d.SeparableConv1d(8, 4, 3, padding="same")).to(device)
    x = torch.randn(4, 8, 64, device=device)
    target = torch.randn(4, 4, 64, device=device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = (model(x) - target).square().mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    assert losses[-1] < 0.9 * losses[0]


def test_repr():
    assert "kernel_size=3" in repr(sepconv1d.DepthwiseConv1d(4, 3, padding="causal"))
    assert "4 -> 5" in repr(sepconv1d.SeparableConv1d(4, 5, 3))
