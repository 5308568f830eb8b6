"""The transpose project's Python: inputs, the truth, CuPy's transpose, launch geometry.

CuPy is imported inside the functions, so the project loads on a machine without a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy

from harness.project import Launch, Size


def make_inputs(size: Size, seed: int | None) -> dict[str, Any]:
    import cupy

    rng = cupy.random.default_rng(seed)
    return {"x": rng.standard_normal((size.rows, size.cols), dtype=cupy.float32),
            "out": cupy.empty((size.cols, size.rows), dtype=cupy.float32)}


def expected(inputs: dict[str, Any], size: Size) -> dict[str, Any]:
    import cupy

    return {"out": cupy.ascontiguousarray(inputs["x"].T)}


def cupy_transpose(inputs: dict[str, Any], size: Size) -> None:
    """The reference writes into the output, as every variant does (a new array would not
    be the output the check reads)."""
    import cupy

    cupy.copyto(inputs["out"], inputs["x"].T)


def device_copy(inputs: dict[str, Any], size: Size) -> None:
    """A device-to-device copy of the same bytes: the practical ceiling."""
    import cupy

    x = inputs["x"]
    inputs["out"].data.copy_from_device_async(x.data, x.nbytes, cupy.cuda.get_current_stream())


def _args(size: Size, inputs: dict[str, Any]) -> tuple[Any, ...]:
    return (inputs["x"], inputs["out"], numpy.int32(size.rows), numpy.int32(size.cols))


def _blocks(extent: int, step: int) -> int:
    return -(-extent // step)


def launch_naive(size: Size, params: dict[str, int], inputs: dict[str, Any]) -> Launch:
    bx, by = params["BLOCK_X"], params["BLOCK_Y"]
    return Launch(grid=(_blocks(size.cols, bx), _blocks(size.rows, by)), block=(bx, by),
                  args=_args(size, inputs))


def launch_tiled(size: Size, params: dict[str, int], inputs: dict[str, Any]) -> Launch:
    tile = params["TILE"]
    return Launch(grid=(_blocks(size.cols, tile), _blocks(size.rows, tile)),
                  block=(tile, params["BLOCK_ROWS"]), args=_args(size, inputs))


def _indexable(size: Size | None) -> list[str]:
    if size is not None and size.rows * size.cols >= 2**31:
        return [f"{size} has {size.rows * size.cols} elements: the kernels index them with "
                "32-bit ints"]
    return []


def check_naive(size: Size | None, params: dict[str, int]) -> list[str]:
    threads = params["BLOCK_X"] * params["BLOCK_Y"]
    problems = [] if 32 <= threads <= 1024 else [f"{threads} threads per block"]
    return problems + _indexable(size)


def check_tiled(size: Size | None, params: dict[str, int]) -> list[str]:
    tile, block_rows = params["TILE"], params["BLOCK_ROWS"]
    problems = []
    if tile % block_rows:
        problems.append(f"TILE={tile} must be a multiple of BLOCK_ROWS={block_rows}")
    if not 32 <= tile * block_rows <= 1024:
        problems.append(f"a block of {tile}x{block_rows} threads")
    return problems + _indexable(size)
