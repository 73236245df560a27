"""The gradient references (unfold + einsum) compute the same function as the F.conv1d references."""

import pytest
import torch
from reference import (
    assert_close_to_reference,
    reference_depthwise,
    reference_grad_magnitudes,
    reference_grads,
    reference_separable,
    unfolded_depthwise,
    unfolded_separable,
)


@pytest.mark.parametrize("kernel_size,stride,pads,dilation", [(1, 1, (0, 0), 1), (3, 1, (1, 1), 1), (4, 2, (3, 0), 1),
                                                            (9, 3, (0, 7), 2), (31, 1, (15, 15), 4)])
def test_unfolded_equals_conv1d(kernel_size, stride, pads, dilation):
    x = torch.randn(2, 5, 200, dtype=torch.float64)
    w = torch.randn(5, kernel_size, dtype=torch.float64)
    b = torch.randn(5, dtype=torch.float64)
    pw = torch.randn(3, 5, dtype=torch.float64)
    pb = torch.randn(3, dtype=torch.float64)
    args = (stride, *pads, dilation)
    torch.testing.assert_close(unfolded_depthwise(x, w, b, *args), reference_depthwise(x, w, b, *args))
    torch.testing.assert_close(unfolded_separable(x, w, b, pw, pb, *args), reference_separable(x, w, b, pw, pb, *args))
    torch.testing.assert_close(unfolded_depthwise(x, w, None, *args), reference_depthwise(x, w, None, *args))


def test_grad_magnitudes_bound_gradients_and_still_catch_errors():
    x = torch.randn(2, 5, 300, dtype=torch.float64)
    params = [torch.randn(5, 7, dtype=torch.float64), torch.randn(5, dtype=torch.float64),
              torch.randn(4, 5, dtype=torch.float64), torch.randn(4, dtype=torch.float64)]
    gy = torch.randn(2, 4, 300, dtype=torch.float64)
    fn = lambda a, b, c, d, e: unfolded_separable(a, b, c, d, e, 1, 3, 3, 1)  # noqa: E731
    refs = reference_grads(fn, [x, *params], gy)
    mags = reference_grad_magnitudes(fn, [x, *params], gy)
    for ref, mag in zip(refs, mags, strict=True):
        assert (mag >= ref.abs() * (1 - 1e-12)).all()
    # A dw_weight gradient that misses one batch item is far outside a float32 tolerance of that scale.
    missing = reference_grads(fn, [x[:1], *params], gy[:1])[1]
    with pytest.raises(AssertionError):
        assert_close_to_reference(missing, refs[1], 1e-5, "dw_weight", scale=mags[1])
