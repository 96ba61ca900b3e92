"""xshard.compile(..., platform=...): cpu runs as before, an unknown name lists the valid ones, and
cuda where no GPU is usable (the build machines) raises at once with what CUDA said."""
import numpy as np
import pytest

import xshard
from xshard import _xshard

ADD_HLO = """
HloModule add, num_partitions=2
ENTRY main {
  x = f32[4,2] parameter(0), sharding={devices=[2,1]<=[2]}
  y = f32[4,2] parameter(1), sharding={devices=[2,1]<=[2]}
  ROOT s = f32[4,2] add(x, y), sharding={devices=[2,1]<=[2]}
}
"""


def test_cpu_platform_runs_on_host_devices():
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    y = np.full((4, 2), 0.5, dtype=np.float32)
    compiled = xshard.compile(ADD_HLO, platform="cpu")
    assert compiled.num_devices == 2
    np.testing.assert_array_equal(compiled(x, y), x + y)


def test_unknown_platform_lists_the_valid_ones():
    with pytest.raises(ValueError) as e:
        xshard.compile(ADD_HLO, platform="tpu")
    assert str(e.value) == "unknown platform 'tpu'; the platforms are cpu, cuda"


def test_cuda_without_a_gpu_raises_what_cuda_said():
    reason = _xshard._platform_check("cuda")
    if not reason:
        pytest.skip("a GPU is visible here")
    assert "\n" not in reason
    assert (reason.startswith("no usable GPU: cudaGetDeviceCount failed: ")
            or "built without CUDA" in reason), reason
    with pytest.raises((RuntimeError, NotImplementedError)) as e:
        xshard.compile(ADD_HLO, platform="cuda")
    assert str(e.value) == "platform='cuda': " + reason
