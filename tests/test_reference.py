"""The gradient references (unfold + einsum) compute the same function as the F.conv1d references."""

import pytest
import torch
from reference import reference_depthwise, reference_separable, unfolded_depthwise, unfolded_separable


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
