"""The Python side of the saxpy project: inputs, the truth, the reference, launch geometry.

ncuh calls these by the names in ncuh.toml. CuPy is imported inside the functions, so
`ncuh list` reads the project on a machine without a GPU.
"""

from __future__ import annotations

import functools
from typing import Any

from harness.project import Launch, Size

A = 2.5


def make_inputs(size: Size, seed: int | None) -> dict[str, Any]:
    """Fresh random x and y (normal: no exact zeros), and the output array."""
    import cupy

    rng = cupy.random.default_rng(seed)
    return {
        "a": A,
        "x": rng.standard_normal(size.n, dtype=cupy.float32),
        "y": rng.standard_normal(size.n, dtype=cupy.float32),
        "out": cupy.empty(size.n, dtype=cupy.float32),
    }


def expected(inputs: dict[str, Any], size: Size) -> dict[str, Any]:
    """The truth in float64, from the inputs before any launch."""
    import cupy

    x, y = inputs["x"].astype(cupy.float64), inputs["y"].astype(cupy.float64)
    return {"out": inputs["a"] * x + y}


@functools.cache
def _elementwise() -> Any:
    import cupy

    return cupy.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 out",
                                  "out = a * x + y", "reference_saxpy")


def cupy_saxpy(inputs: dict[str, Any], size: Size) -> None:
    """The reference: CuPy's element-wise kernel, writing into the same output."""
    import numpy

    _elementwise()(numpy.float32(inputs["a"]), inputs["x"], inputs["y"], inputs["out"])


def device_copy(inputs: dict[str, Any], size: Size) -> None:
    """The practical limit: a device-to-device copy of n floats (cudaMemcpyAsync on the
    current stream, so it is timed like the kernels)."""
    import cupy

    inputs["out"].data.copy_from_device_async(inputs["x"].data, inputs["x"].nbytes,
                                              cupy.cuda.get_current_stream())


def check_block(size: Size | None, params: dict[str, int]) -> list[str]:
    """Problems with a configuration ([] when it runs); size is None for the params alone."""
    problems = []
    block = params["BLOCK"]
    if block % 32 or not 32 <= block <= 1024:
        problems.append(f"BLOCK={block} must be a multiple of 32 between 32 and 1024")
    if params.get("BLOCKS_PER_SM", 1) < 1:
        problems.append("BLOCKS_PER_SM must be at least 1")
    if size is not None and size.n >= 2**31:
        problems.append(f"n={size.n} must be below 2^31 (32-bit indices)")
    return problems


def _args(inputs: dict[str, Any]) -> tuple:
    import numpy

    n = inputs["x"].size
    return (numpy.int32(n), numpy.float32(inputs["a"]), inputs["x"], inputs["y"], inputs["out"])


def launch_naive(size: Size, params: dict[str, int], inputs: dict[str, Any]) -> Launch:
    block = params["BLOCK"]
    return Launch(grid=(-(-size.n // block),), block=(block,), args=_args(inputs))


@functools.cache
def _sm_count(device: int) -> int:
    import cupy

    return cupy.cuda.runtime.getDeviceProperties(device)["multiProcessorCount"]


def launch_vec4(size: Size, params: dict[str, int], inputs: dict[str, Any]) -> Launch:
    import cupy

    block = params["BLOCK"]
    sms = _sm_count(cupy.cuda.Device().id)
    needed = max(-(-(size.n // 4) // block), 1)
    return Launch(grid=(min(needed, sms * params["BLOCKS_PER_SM"]),), block=(block,),
                  args=_args(inputs))
