"""Row-wise softmax: inputs, the truth, the CuPy reference, the launches (CuPy is imported
inside the functions, so loading the project needs no GPU)."""

from __future__ import annotations

import functools
from typing import Any

from harness.project import Launch, Size


def make_inputs(size: Size, seed: int | None) -> dict[str, Any]:
    import cupy

    rng = cupy.random.default_rng(seed)
    return {"x": rng.standard_normal((size.rows, size.cols), dtype=cupy.float32) * 4,
            "out": cupy.empty((size.rows, size.cols), dtype=cupy.float32)}


def expected(inputs: dict[str, Any], size: Size) -> dict[str, Any]:
    import cupy

    x = inputs["x"].astype(cupy.float64)
    e = cupy.exp(x - x.max(axis=1, keepdims=True))
    return {"out": e / e.sum(axis=1, keepdims=True)}


def cupy_softmax(inputs: dict[str, Any], size: Size) -> None:
    import cupy

    x, out = inputs["x"], inputs["out"]
    cupy.exp(x - x.max(axis=1, keepdims=True), out=out)
    out /= out.sum(axis=1, keepdims=True)


def device_copy(inputs: dict[str, Any], size: Size) -> None:
    import cupy

    inputs["out"].data.copy_from_device_async(inputs["x"].data, inputs["x"].nbytes,
                                              cupy.cuda.get_current_stream())


def check_block(size: Size | None, params: dict[str, int]) -> list[str]:
    block = params["BLOCK"]
    if block & (block - 1) or not 32 <= block <= 1024:
        return [f"BLOCK={block} must be a power of two between 32 and 1024"]
    return []


def check_warps(size: Size | None, params: dict[str, int]) -> list[str]:
    warps = params["WARPS"]
    return [] if 1 <= warps <= 32 else [f"WARPS={warps} must be between 1 and 32"]


def _args(size: Size, inputs: dict[str, Any]) -> tuple:
    import numpy

    return (numpy.int32(size.rows), numpy.int32(size.cols), inputs["x"], inputs["out"])


def launch_block_per_row(size: Size, params: dict[str, int], inputs: dict[str, Any]) -> Launch:
    return Launch(grid=(size.rows,), block=(params["BLOCK"],), args=_args(size, inputs))


def launch_warp_per_row(size: Size, params: dict[str, int], inputs: dict[str, Any]) -> Launch:
    warps = params["WARPS"]
    return Launch(grid=(-(-size.rows // warps),), block=(32 * warps,), args=_args(size, inputs))


_RAW = r"""
extern "C" __global__ void softmax_raw(int rows, int cols, const float *x, float *out) {
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    float largest = -3.402823466e+38f, sum = 0.0f;
    for (int c = lane; c < cols; c += 32) largest = fmaxf(largest, x[(size_t)row * cols + c]);
    for (int offset = 16; offset > 0; offset /= 2)
        largest = fmaxf(largest, __shfl_xor_sync(0xffffffffu, largest, offset));
    for (int c = lane; c < cols; c += 32) sum += __expf(x[(size_t)row * cols + c] - largest);
    for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    for (int c = lane; c < cols; c += 32)
        out[(size_t)row * cols + c] = __expf(x[(size_t)row * cols + c] - largest) / sum;
}
"""


@functools.cache
def _raw_kernel() -> Any:
    import cupy

    return cupy.RawKernel(_RAW, "softmax_raw")


def launch_rawkernel(inputs: dict[str, Any], size: Size, params: dict[str, int]) -> None:
    warps = params["WARPS"]
    _raw_kernel()((-(-size.rows // warps),), (32 * warps,), _args(size, inputs))
