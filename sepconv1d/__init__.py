"""sepconv1d: fast depthwise and fused depthwise-separable Conv1d for PyTorch.

Functional API: :func:`depthwise_conv1d`, :func:`separable_conv1d`.
Modules: :class:`DepthwiseConv1d`, :class:`SeparableConv1d`.
Raw operators: ``torch.ops.sepconv1d.*`` (registered on import).
"""

__version__ = "0.1.0"

from . import _ops  # noqa: F401  (loads the compiled operators and registers their Python parts)
from .functional import depthwise_conv1d, separable_conv1d
from .modules import DepthwiseConv1d, SeparableConv1d

__all__ = [
    "DepthwiseConv1d",
    "SeparableConv1d",
    "__version__",
    "depthwise_conv1d",
    "separable_conv1d",
]
