"""The reduction chain's Python side: inputs, truth, tolerance, launch geometry, CUB, copy.

Everything the harness needs to run the ten kernels of this folder, written against ncuh's
public project API (ncuh.toml names these functions). CuPy is imported inside the functions
that need a GPU, so the project file loads, and its CPU tests run, on a machine without one.

Buffers (`make_inputs`):
  x          float32[n]  the data, uniform in [0, 1) from a seeded generator
  out        float32[1]  the sum: the one checked output
  partials   float32[m]  per-block partial sums (pass 1, 3, ... of the multi-pass variants)
  partials2  float32[m]  the other ping-pong buffer (pass 2, 4, ...)
  counter    uint32[1]   the single-pass variant's ticket counter; zero between launches
  copy_dst   float32[n]  destination of the device-copy limit
"""

from __future__ import annotations

import functools
import math
from typing import Any

from harness.project import Launch, Size

# Smallest block of the multi-pass variants: a pass leaves at most ceil(count / 64) partials.
MIN_BLOCK = 64
MAX_BLOCK = 1024
# Grid-stride variants: at most this many blocks, so their partials always fit.
MAX_GRID = 8192
# The harness passes these to the callables.
Inputs = dict[str, Any]
Params = dict[str, int]
# float32 unit roundoff.
UNIT_ROUNDOFF = 2.0**-24
# Confidence factor of the probabilistic rounding-error bound (see `tolerance`).
LAMBDA = 8.0


def _cupy() -> Any:
    import cupy

    return cupy


def partials_length(n: int) -> int:
    """Floats in each partials buffer: enough for any pass of any variant on n elements."""
    return max(-(-n // MIN_BLOCK), MAX_GRID)


def make_inputs(size: Size, seed: int | None) -> Inputs:
    """Fresh device buffers for a sum of n = size.n floats (see the module docstring)."""
    cupy = _cupy()
    n = size.n
    rng = cupy.random.default_rng(seed)
    # Uniform in [0, 1): never all zeros, and non-negative, so |sum| = sum |x| and a relative
    # error is the error relative to sum |x| (what the rounding-error bound is stated in).
    x = rng.random(n, dtype=cupy.float32)
    m = partials_length(n)
    return {
        "x": x,
        "out": cupy.zeros(1, dtype=cupy.float32),
        "partials": cupy.zeros(m, dtype=cupy.float32),
        "partials2": cupy.zeros(m, dtype=cupy.float32),
        "counter": cupy.zeros(1, dtype=cupy.uint32),
        "copy_dst": cupy.empty(n, dtype=cupy.float32),
    }


def expected(inputs: Inputs, size: Size) -> Inputs:
    """The float64 sum of x, accumulated in float64 on the device."""
    cupy = _cupy()
    return {"out": cupy.sum(inputs["x"], dtype=cupy.float64).reshape(1)}


def tolerance(size: Size) -> float:
    """Relative error allowed for a float32 sum of n non-negative floats.

    Higham & Mary's probabilistic bound (SIAM J. Sci. Comput. 41(5), 2019): for ANY order of
    summation in which each value passes through at most n - 1 roundings,
    |computed - exact| <= lambda * sqrt(n) * u * sum|x_i| with probability at least
    1 - 2n exp(-lambda^2 (1-u)^2 / 2); lambda = 8 keeps that failure probability below 1e-5
    up to n = 2^28. One more u covers rounding the result to float32 (n = 1 is exact). As x
    is non-negative, sum|x_i| = |sum|, so this is the relative error `relative_frobenius`
    measures. The tree and blocked orders of the kernels stay far below it in practice (their
    chains are log2(n) or n / threads long); the GPU tests also check exact sums on
    integer-valued data, which no summation order may get wrong.
    """
    return UNIT_ROUNDOFF * (LAMBDA * math.sqrt(size.n) + 1.0)


def check_params(size: Size, params: Params) -> list[str]:
    """Problems with a configuration ([] when it runs)."""
    problems = []
    block = params.get("BLOCK", 256)
    if block < MIN_BLOCK or block > MAX_BLOCK or block & (block - 1):
        problems.append(f"BLOCK={block} must be a power of two in [{MIN_BLOCK}, {MAX_BLOCK}]")
    unroll = params.get("UNROLL", 1)
    if not 1 <= unroll <= 16:
        problems.append(f"UNROLL={unroll} must be in [1, 16]")
    per_sm = params.get("BLOCKS_PER_SM", 1)
    if not 1 <= per_sm <= 32:
        problems.append(f"BLOCKS_PER_SM={per_sm} must be in [1, 32]")
    stream = params.get("STREAM", 0)
    if stream not in (0, 1, 2):
        problems.append(f"STREAM={stream} must be 0 (plain), 1 (ld.global.cs) or 2 (policy)")
    tiles = params.get("TILES", 0)
    if tiles not in (0, 1):
        problems.append(f"TILES={tiles} must be 0 (grid-stride) or 1 (block tiles)")
    return problems


@functools.cache
def _sm_count(device_id: int) -> int:
    cupy = _cupy()
    return int(cupy.cuda.Device(device_id).attributes["MultiProcessorCount"])


def sm_count() -> int:
    """Streaming multiprocessors of the current device."""
    return _sm_count(_cupy().cuda.Device().id)


def _count(n: int) -> Any:
    import numpy

    return numpy.uint64(n)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _tree_passes(
    inputs: Inputs, n: int, block: int, per_block: int, dynamic_smem: bool
) -> list[Launch]:
    """Passes of a data-sized grid (one partial per block) until one value is left.

    Pass k reads what pass k-1 wrote (x first) and writes the other partials buffer; the pass
    with a single block writes `out`.
    """
    shared_mem = 4 * block if dynamic_smem else 0
    buffers = (inputs["partials"], inputs["partials2"])
    launches = []
    source, count = inputs["x"], n
    while True:
        blocks = _ceil_div(count, per_block)
        target = inputs["out"] if blocks == 1 else buffers[len(launches) % 2]
        launches.append(
            Launch(grid=(blocks,), block=(block,), args=(source, target, _count(count)),
                   shared_mem=shared_mem)
        )
        if blocks == 1:
            return launches
        source, count = target, blocks


def launch_one_per_thread(size: Size, params: Params, inputs: Inputs) -> list[Launch]:
    """Iterations 1-3: one element per thread, block size at run time (dynamic shared memory)."""
    block = params["BLOCK"]
    return _tree_passes(inputs, size.n, block, block, dynamic_smem=True)


def launch_two_per_thread(size: Size, params: Params, inputs: Inputs) -> list[Launch]:
    """Iterations 4-5: two elements per thread, block size at run time."""
    block = params["BLOCK"]
    return _tree_passes(inputs, size.n, block, 2 * block, dynamic_smem=True)


def launch_two_per_thread_static(size: Size, params: Params, inputs: Inputs) -> list[Launch]:
    """Iteration 6: two elements per thread, BLOCK compiled in (static shared memory)."""
    block = params["BLOCK"]
    return _tree_passes(inputs, size.n, block, 2 * block, dynamic_smem=False)


def _grid_stride_grid(n: int, params: Params, per_block: int) -> int:
    """A few blocks per SM, fewer when n is too small to give each thread a full step."""
    limit = min(sm_count() * params["BLOCKS_PER_SM"], MAX_GRID)
    return max(1, min(_ceil_div(n, per_block), limit))


def _two_passes(inputs: Inputs, n: int, block: int, grid: int) -> list[Launch]:
    """A grid-stride pass into `partials`, then one block over them into `out`."""
    if grid == 1:
        return [Launch(grid=(1,), block=(block,), args=(inputs["x"], inputs["out"], _count(n)))]
    partials = inputs["partials"]
    return [
        Launch(grid=(grid,), block=(block,), args=(inputs["x"], partials, _count(n))),
        Launch(grid=(1,), block=(block,), args=(partials, inputs["out"], _count(grid))),
    ]


def launch_grid_stride(size: Size, params: Params, inputs: Inputs) -> list[Launch]:
    """Iterations 7-8: two floats per thread per step, a fixed grid, then a one-block pass."""
    block = params["BLOCK"]
    grid = _grid_stride_grid(size.n, params, 2 * block)
    return _two_passes(inputs, size.n, block, grid)


def launch_vectorized(size: Size, params: Params, inputs: Inputs) -> list[Launch]:
    """Iteration 9: UNROLL float4s per thread per step, then a one-block pass."""
    block = params["BLOCK"]
    grid = _grid_stride_grid(size.n, params, 4 * params["UNROLL"] * block)
    return _two_passes(inputs, size.n, block, grid)


def launch_single_pass(size: Size, params: Params, inputs: Inputs) -> Launch:
    """Iteration 10: one launch; the last block to finish writes `out`."""
    block = params["BLOCK"]
    grid = _grid_stride_grid(size.n, params, 4 * params["UNROLL"] * block)
    args = (inputs["x"], inputs["out"], inputs["partials"], inputs["counter"], _count(size.n))
    return Launch(grid=(grid,), block=(block,), args=args)


def cub_sum(inputs: Inputs, size: Size) -> None:
    """cub::DeviceReduce::Sum on x, through CuPy's CUB binding.

    `cupy.cuda.cub.cub_reduction` is what `cupy.sum` calls when CuPy's routine accelerator
    `cub` is on (CUPY_ACCELERATORS=cub): for a full reduction of a contiguous float32 array it
    goes to `device_reduce`, a call of cub::DeviceReduce::Sum (workspace query, then the
    reduction: one or two kernels). It returns a new 0-d array. Passing `out=` would copy it
    into inputs["out"] with one more kernel, timed with the rest; instead the new array takes
    the name "out" in the inputs, where the check reads it (the poisoned buffer is left alone).
    """
    from cupy.cuda import cub

    result = cub.cub_reduction(inputs["x"], cub.CUPY_CUB_SUM)
    if result is None:  # CuPy declined (dtype, layout or size it cannot pass to CUB)
        raise RuntimeError("CuPy's CUB path refused this array")
    inputs["out"] = result.reshape(1)


def copy_same_bytes(inputs: Inputs, size: Size) -> None:
    """cudaMemcpyAsync device-to-device of x (4n bytes read, 4n bytes written)."""
    cupy = _cupy()
    runtime = cupy.cuda.runtime
    x, dst = inputs["x"], inputs["copy_dst"]
    runtime.memcpyAsync(
        dst.data.ptr, x.data.ptr, x.nbytes, runtime.memcpyDeviceToDevice,
        cupy.cuda.get_current_stream().ptr,
    )
