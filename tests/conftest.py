import pytest
import torch

import sepconv1d  # noqa: F401  (registers torch.ops.sepconv1d)


def pytest_report_header(config):
    cuda = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device"
    return f"sepconv1d {sepconv1d.__version__} from {sepconv1d.__file__}; torch {torch.__version__}; {cuda}"


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("CUDA device not available")
    return request.param


@pytest.fixture(autouse=True)
def _strict_fp32():
    """Tests compare float32 against float64 with float32 tolerances: no TF32 unless a test asks."""
    saved = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
