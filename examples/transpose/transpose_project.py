"""The Python side of the transpose project: inputs, the truth, the reference, launch geometry.

CuPy is imported inside the functions, so `ncuh list` reads the project without a GPU.
"""

from __future__ import annotations

from typing import Any

from harness.project import Launch, Size


def make_inputs(size: Size, seed: int | None) -> dict[str, Any]:
    """A random matrix (normal: no exact zeros) and the output it is transposed into."""
    import cupy

    rng = cupy.random.default_rng(seed)
    return {
        "x": rng.standard_normal((size.rows, size.cols), dtype=cupy.float32),
        "out": cupy.empty((size.cols, size.rows), dtype=cupy.float32),
    }


def expected(inputs: dict[str, Any], size: Size) -> dict[str, Any]:
    """The truth: the transposed input, in float64."""
    return {"out": inputs["x"].T.astype("float64")}


def cupy_transpose(inputs: dict[str, Any], size: Size) -> None:
    """The reference: CuPy copies the transposed view into the output (it must write `out`)."""
    inputs["out"][...] = inputs["x"].T


def device_copy(inputs: dict[str, Any], size: Size) -> None:
    """The practical limit: a device-to-device copy of the same bytes."""
    import cupy

    inputs["out"].data.copy_from_device_async(inputs["x"].data, inputs["x"].nbytes,
                                              cupy.cuda.get_current_stream())


def _args(inputs: dict[str, Any], size: Size) -> tuple:
    import numpy

    return (inputs["x"], inputs["out"], numpy.int32(size.rows), numpy.int32(size.cols))


def launch_naive(size: Size, params: dict[str, int], inputs: dict[str, Any]) -> Launch:
    tile = params["TILE"]
    grid = (-(-size.cols // tile), -(-size.rows // tile))
    return Launch(grid=grid, block=(tile, tile), args=_args(inputs, size))


def launch_tiled(size: Size, params: dict[str, int], inputs: dict[str, Any]) -> Launch:
    tile, rows = params["TILE"], params["ROWS"]
    grid = (-(-size.cols // tile), -(-size.rows // tile))
    return Launch(grid=grid, block=(tile, rows), args=_args(inputs, size))
