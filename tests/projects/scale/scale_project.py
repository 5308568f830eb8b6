"""out = s*x: the test project's callables (CuPy imported inside, so loading needs no GPU)."""

from __future__ import annotations

import functools
from typing import Any

from harness.project import Launch, Size

S = 3.0


def make_inputs(size: Size, seed: int | None) -> dict[str, Any]:
    import cupy

    rng = cupy.random.default_rng(seed)
    return {"s": S, "x": rng.standard_normal(size.n, dtype=cupy.float32),
            "out": cupy.empty(size.n, dtype=cupy.float32)}


def expected(inputs: dict[str, Any], size: Size) -> dict[str, Any]:
    import cupy

    return {"out": inputs["s"] * inputs["x"].astype(cupy.float64)}


def tolerance_for(size: Size) -> float:
    return 1e-5


def cupy_scale(inputs: dict[str, Any], size: Size) -> None:
    import cupy

    cupy.multiply(inputs["x"], cupy.float32(inputs["s"]), out=inputs["out"])


def device_copy(inputs: dict[str, Any], size: Size) -> None:
    import cupy

    inputs["out"].data.copy_from_device_async(inputs["x"].data, inputs["x"].nbytes,
                                              cupy.cuda.get_current_stream())


def unroll_define(size: Size, params: dict[str, int]) -> dict[str, int]:
    return {"UNROLL": 1}


def check_block(size: Size | None, params: dict[str, int]) -> list[str]:
    block = params["BLOCK"]
    if block % 32 or not 32 <= block <= 1024:
        return [f"BLOCK={block} must be a multiple of 32 between 32 and 1024"]
    return []


def launch_scale(size: Size, params: dict[str, int], inputs: dict[str, Any]) -> Launch:
    import numpy

    block = params["BLOCK"]
    return Launch(grid=(-(-size.n // block),), block=(block,),
                  args=(numpy.int32(size.n), numpy.float32(inputs["s"]), inputs["x"],
                        inputs["out"]))


_RAW = r"""
extern "C" __global__ void scale_raw(int n, float s, const float *x, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = s * x[i];
}
"""


@functools.cache
def _raw_kernel(cupy: Any) -> Any:
    return cupy.RawKernel(_RAW, "scale_raw")


def launch_rawkernel(inputs: dict[str, Any], size: Size, params: dict[str, int]) -> None:
    import cupy
    import numpy

    kernel = _raw_kernel(cupy)
    block = params["BLOCK"]
    kernel((-(-size.n // block),), (block,),
           (numpy.int32(size.n), numpy.float32(inputs["s"]), inputs["x"], inputs["out"]))
