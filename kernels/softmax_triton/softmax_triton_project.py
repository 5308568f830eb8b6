"""The Triton softmax chain's Python side: inputs, truth, tolerance, geometry, launchers.

Everything the harness needs to run the four iterations of this folder, written against
ncuh's public project API (ncuh.toml names these functions). The buffers are CuPy arrays, as
in the other bundled projects (the harness poisons and checks them with CuPy); a launcher
hands them to Triton and PyTorch as torch tensors over the same memory (zero-copy, through
`__cuda_array_interface__`). CuPy, torch and Triton are imported inside the functions that
need a GPU, so the project file loads, lists and passes `ncuh check` without any of them.

Buffers (`make_inputs`):
  x          float32[rows, cols]  the data, 4 * standard normal from a seeded generator
  out        float32[rows, cols]  softmax of each row of x: the one checked output
  row_max    float32[rows]        `naive`: each row's maximum (its first kernel's output)
  row_sum    float32[rows]        `naive`: each row's sum of exponentials (its second kernel's)
  numerator  float32[rows, cols]  `naive`: exp(x - row_max), written and read back
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Any

from harness.project import Size

# The harness passes these to the callables.
Inputs = dict[str, Any]
Params = dict[str, int]
# float32 unit roundoff.
UNIT_ROUNDOFF = 2.0**-24
# Confidence factor of the probabilistic bound on a row's sum (see `tolerance`).
LAMBDA = 8.0
# Roundings outside the sum: exp (ex2.approx after scaling by log2 e), the shift by the row's
# maximum and the final scale, with a wide margin (see `tolerance`).
ELEMENT_ULPS = 32.0
# Spread of the inputs: rows span about e^-35 ... 1 after the shift, no subnormal results.
INPUT_SCALE = 4.0
# Narrowest block a kernel is compiled for (one warp's worth of lanes).
MIN_BLOCK = 32
# Longest row `fused` and `multi_row` hold in registers: 64 floats per thread at 16 warps.
MAX_ROW = 32768
MAX_WARPS = 16
# `multi_row`: what one program's pipelined tiles may take of an H100's 227 KiB of shared
# memory per block (with STAGES > 1 Triton stages STAGES - 1 tiles of x there, cp.async).
MAX_STAGED_BYTES = 192 * 1024
MAX_PROGRAMS_PER_SM = 32
MAX_STAGES = 4


def _cupy() -> Any:
    import cupy

    return cupy


def _torch() -> Any:
    import torch

    return torch


def _kernels() -> Any:
    import softmax_triton_kernels

    return softmax_triton_kernels


# --- inputs and truth -------------------------------------------------------------------------


def make_inputs(size: Size, seed: int | None) -> Inputs:
    """Fresh device buffers for a rows x cols softmax (see the module docstring)."""
    cupy = _cupy()
    rows, cols = size.rows, size.cols
    rng = cupy.random.default_rng(seed)
    x = rng.standard_normal((rows, cols), dtype=cupy.float32)
    x *= INPUT_SCALE
    return {
        "x": x,
        "out": cupy.empty_like(x),
        "row_max": cupy.empty(rows, dtype=cupy.float32),
        "row_sum": cupy.empty(rows, dtype=cupy.float32),
        "numerator": cupy.empty_like(x),
    }


def expected(inputs: Inputs, size: Size) -> Inputs:
    """Softmax of each row of x in float64 on the device."""
    cupy = _cupy()
    shifted = inputs["x"].astype(cupy.float64)
    shifted -= shifted.max(axis=1, keepdims=True)
    cupy.exp(shifted, out=shifted)
    shifted /= shifted.sum(axis=1, keepdims=True)
    return {"out": shifted}


def tolerance(size: Size) -> float:
    """Relative (Frobenius) error allowed for a float32 softmax of rows of `cols` values.

    Each output is exp(x_i - m) / S. The sum S of `cols` positive terms, added in any order,
    is within lambda * sqrt(cols) * u of the exact sum with probability at least
    1 - 2 cols exp(-lambda^2 (1-u)^2 / 2) (Higham & Mary, SIAM J. Sci. Comput. 41(5), 2019);
    lambda = 8 keeps that below 1e-9 for every size here. Every output carries that error of S
    as one common relative error. On top, each output has a few roundings of its own: the shift
    x_i - m, the scaling by log2 e and ex2.approx (2 ulp) inside Triton's exp, the division;
    the terms that dominate the norm are those near the maximum, where the shift is small, and
    32 u covers them with a wide margin. No variant's order of summation enters the bound.
    """
    return UNIT_ROUNDOFF * (LAMBDA * math.sqrt(size.cols) + ELEMENT_ULPS)


# --- geometry (pure Python: tested without a GPU) ---------------------------------------------


def next_power_of_two(value: int) -> int:
    return 1 << max(value - 1, 0).bit_length()


def row_block(cols: int) -> int:
    """Columns of the register block that holds a whole row: a power of two >= cols."""
    return max(MIN_BLOCK, next_power_of_two(cols))


def chunk(cols: int, block: int) -> int:
    """Columns per step of a chunked loop: BLOCK, or less when the row is shorter."""
    return min(block, row_block(cols))


def warps_for(elements: int, per_thread: int) -> int:
    """Warps that give each thread about `per_thread` of `elements` values (1 to 16)."""
    return max(1, min(MAX_WARPS, elements // (32 * per_thread)))


def tile_rows(cols: int, tile: int) -> int:
    """Rows per `multi_row` tile: as many whole rows as fit in `tile` values, at least one."""
    return max(1, tile // row_block(cols))


def tile_elements(cols: int, tile: int) -> int:
    return tile_rows(cols, tile) * row_block(cols)


def staged_bytes(cols: int, tile: int, stages: int) -> int:
    """Shared memory of `multi_row`'s pipelined loads: STAGES - 1 tiles of float32."""
    return 4 * tile_elements(cols, tile) * (stages - 1)


def programs_per_sm(device: dict[str, int], *, registers: int, warps: int,
                    shared_bytes: int) -> int:
    """How many programs of a compiled kernel fit on one SM at once (at least one).

    The CUDA occupancy rules: threads, registers (allocated per warp in units of 256) and
    shared memory (each block also takes 1 KiB reserved by the system), and at most 32 blocks.
    `device` holds torch's names: max_threads_per_multi_processor, regs_per_multiprocessor,
    shared_memory_per_multiprocessor.
    """
    threads = 32 * warps
    by_threads = device["max_threads_per_multi_processor"] // threads
    registers_per_warp = -(-max(registers, 1) * 32 // 256) * 256
    by_registers = device["regs_per_multiprocessor"] // registers_per_warp // warps
    by_shared = (device["shared_memory_per_multiprocessor"] // (shared_bytes + 1024)
                 if shared_bytes else MAX_PROGRAMS_PER_SM)
    return max(1, min(by_threads, by_registers, by_shared, MAX_PROGRAMS_PER_SM))


def persistent_grid(rows: int, rows_per_tile: int, sms: int, per_sm: int) -> int:
    """Programs of the persistent grid: one per resident slot, never more than tiles."""
    tiles = -(-rows // rows_per_tile)
    return max(1, min(tiles, sms * per_sm))


# --- constraints ------------------------------------------------------------------------------


def _power_of_two(params: Params, key: str, low: int, high: int) -> list[str]:
    value = params.get(key)
    if value is None or value < low or value > high or value & (value - 1):
        return [f"{key}={value} must be a power of two in [{low}, {high}]"]
    return []


def _row_fits(size: Size | None) -> list[str]:
    if size is not None and size.cols > MAX_ROW:
        return [f"cols={size.cols} is longer than the {MAX_ROW} floats a row may hold in "
                "registers (online takes rows of any length)"]
    return []


def check_chunked(size: Size | None, params: Params) -> list[str]:
    """`naive` and `online`: a BLOCK-wide step and WARPS warps per row."""
    return (_power_of_two(params, "BLOCK", MIN_BLOCK, 16384)
            + _power_of_two(params, "WARPS", 1, MAX_WARPS))


def check_fused(size: Size | None, params: Params) -> list[str]:
    return _power_of_two(params, "PER_THREAD", 1, 128) + _row_fits(size)


def check_multi_row(size: Size | None, params: Params) -> list[str]:
    problems = (_power_of_two(params, "TILE", MIN_BLOCK, MAX_ROW)
                + _power_of_two(params, "PER_THREAD", 1, 128))
    per_sm = params.get("PROGRAMS_PER_SM", 0)
    if not 0 <= per_sm <= MAX_PROGRAMS_PER_SM:
        problems.append(f"PROGRAMS_PER_SM={per_sm} must be in [0, {MAX_PROGRAMS_PER_SM}] "
                        "(0: as many as fit)")
    stages = params.get("STAGES", 1)
    if not 1 <= stages <= MAX_STAGES:
        problems.append(f"STAGES={stages} must be in [1, {MAX_STAGES}]")
    problems += _row_fits(size)
    if size is not None and not problems:
        staged = staged_bytes(size.cols, params["TILE"], stages)
        if staged > MAX_STAGED_BYTES:
            problems.append(f"STAGES={stages} stages {stages - 1} tiles of "
                            f"{staged // (stages - 1) // 1024} KiB in {staged // 1024} KiB of "
                            f"shared memory (at most {MAX_STAGED_BYTES // 1024} KiB)")
    return problems


# --- the GPU side: torch views, streams, device facts -----------------------------------------


def as_torch(array: Any) -> Any:
    """A torch tensor over the same memory as a CuPy array (a torch tensor is passed through)."""
    torch = _torch()
    return array if isinstance(array, torch.Tensor) else torch.as_tensor(array)


def on_cupy_stream() -> contextlib.AbstractContextManager[Any]:
    """Torch's (and so Triton's) current stream made CuPy's, where the harness times.

    Both default to the legacy default stream, so this is normally a no-op.
    """
    torch = _torch()
    pointer = _cupy().cuda.get_current_stream().ptr
    if pointer == torch.cuda.current_stream().cuda_stream:
        return contextlib.nullcontext()
    return torch.cuda.stream(torch.cuda.ExternalStream(pointer))


@functools.cache
def device_facts(index: int) -> dict[str, int]:
    """The numbers `programs_per_sm` and the persistent grid need, from torch."""
    props = _torch().cuda.get_device_properties(index)
    return {
        "multi_processor_count": props.multi_processor_count,
        "max_threads_per_multi_processor": props.max_threads_per_multi_processor,
        "regs_per_multiprocessor": props.regs_per_multiprocessor,
        "shared_memory_per_multiprocessor": props.shared_memory_per_multiprocessor,
    }


# --- the launches (torch tensors in, Triton kernels queued; nothing waits) -------------------


def run_naive(x: Any, out: Any, row_max: Any, row_sum: Any, numerator: Any,
              params: Params) -> None:
    """Three kernels, one program per row each: max, exp and sum, divide."""
    kernels = _kernels()
    rows, cols = x.shape
    block, warps = chunk(cols, params["BLOCK"]), params["WARPS"]
    kernels.softmax_naive_max[(rows,)](x, row_max, cols, BLOCK=block, num_warps=warps)
    kernels.softmax_naive_exp_sum[(rows,)](x, row_max, numerator, row_sum, cols, BLOCK=block,
                                           num_warps=warps)
    kernels.softmax_naive_divide[(rows,)](numerator, row_sum, out, cols, BLOCK=block,
                                          num_warps=warps)


def run_online(x: Any, out: Any, params: Params) -> None:
    rows, cols = x.shape
    _kernels().softmax_online[(rows,)](x, out, cols, BLOCK=chunk(cols, params["BLOCK"]),
                                       num_warps=params["WARPS"])


def run_fused(x: Any, out: Any, params: Params) -> None:
    rows, cols = x.shape
    block = row_block(cols)
    _kernels().softmax_fused[(rows,)](x, out, cols, BLOCK=block,
                                      num_warps=warps_for(block, params["PER_THREAD"]))


# Programs per SM of each compiled multi_row configuration (its registers and shared memory
# are known only once Triton has compiled it).
_RESIDENT: dict[tuple[Any, ...], int] = {}


def _resident(x: Any, out: Any, constants: dict[str, int], warps: int) -> int:
    rows, cols = x.shape
    index = x.device.index if x.device.index is not None else 0
    key = (index, cols % 16 == 0, rows % 16 == 0, tuple(sorted(constants.items())), warps)
    if key not in _RESIDENT:
        compiled = _kernels().softmax_multi_row.warmup(x, out, rows, cols, **constants,
                                                        num_warps=warps, grid=(1,))
        compiled = compiled.result() if hasattr(compiled, "result") else compiled
        compiled._init_handles()  # loads the binary: n_regs is known from then on
        _RESIDENT[key] = programs_per_sm(device_facts(index), registers=compiled.n_regs,
                                         warps=warps, shared_bytes=compiled.metadata.shared)
    return _RESIDENT[key]


def run_multi_row(x: Any, out: Any, params: Params, sms: int | None = None,
                  per_sm: int | None = None) -> None:
    """Tiles of several rows, a persistent grid of `sms` x `per_sm` programs (by default the
    device's SM count times the programs that fit, or PROGRAMS_PER_SM when that is set)."""
    rows, cols = x.shape
    rows_per_tile = tile_rows(cols, params["TILE"])
    constants = {"ROWS": rows_per_tile, "BLOCK": row_block(cols), "STAGES": params["STAGES"]}
    warps = warps_for(rows_per_tile * constants["BLOCK"], params["PER_THREAD"])
    if sms is None:
        sms = device_facts(x.device.index or 0)["multi_processor_count"]
    if per_sm is None:
        per_sm = params["PROGRAMS_PER_SM"] or _resident(x, out, constants, warps)
    grid = persistent_grid(rows, rows_per_tile, sms, per_sm)
    _kernels().softmax_multi_row[(grid,)](x, out, rows, cols, **constants, num_warps=warps)


# --- what ncuh.toml names: launchers (inputs, size, params), the reference, the limit -------


def launch_naive(inputs: Inputs, size: Size, params: Params) -> None:
    names = ("x", "out", "row_max", "row_sum", "numerator")
    tensors = [as_torch(inputs[name]) for name in names]
    with on_cupy_stream():
        run_naive(*tensors, params)


def launch_online(inputs: Inputs, size: Size, params: Params) -> None:
    x, out = as_torch(inputs["x"]), as_torch(inputs["out"])
    with on_cupy_stream():
        run_online(x, out, params)


def launch_fused(inputs: Inputs, size: Size, params: Params) -> None:
    x, out = as_torch(inputs["x"]), as_torch(inputs["out"])
    with on_cupy_stream():
        run_fused(x, out, params)


def launch_multi_row(inputs: Inputs, size: Size, params: Params) -> None:
    x, out = as_torch(inputs["x"]), as_torch(inputs["out"])
    with on_cupy_stream():
        run_multi_row(x, out, params)


def torch_softmax(inputs: Inputs, size: Size) -> None:
    """`torch.softmax(x, dim=-1)` written into `out` (its `out=` form: the same kernel, no
    copy; a contiguous `out` is written in place)."""
    torch = _torch()
    x, out = as_torch(inputs["x"]), as_torch(inputs["out"])
    with on_cupy_stream():
        torch.softmax(x, -1, out=out)


def device_copy(inputs: Inputs, size: Size) -> None:
    """cudaMemcpyAsync device-to-device of x into out: 4 rows cols bytes read, as many written."""
    cupy = _cupy()
    x = inputs["x"]
    inputs["out"].data.copy_from_device_async(x.data, x.nbytes, cupy.cuda.get_current_stream())
