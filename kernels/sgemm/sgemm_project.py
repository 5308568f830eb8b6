"""The SGEMM chain's own Python: inputs, the float64 truth, cuBLAS, launch geometry, checks.

C = alpha * A @ B + beta * C in float32, row-major. ncuh knows none of this: it calls the
functions that `ncuh.toml` names. Every kernel source has a *family* of rules (how its threads
cover its tiles); `check_<family>` returns the problems of a configuration as sentences,
`launch_<family>` its grid and block. CuPy is imported inside the functions, so `ncuh list`
reads this project on a machine without a GPU.
"""

from __future__ import annotations

import os
from typing import Any

from harness.project import Launch, Size

# cuBLAS must run true FP32 (CuPy reads CUPY_TF32 when it sets up matmul); the reference
# below also sets the math mode on its handle.
os.environ.setdefault("CUPY_TF32", "0")

ALPHA = 1.5
BETA = -0.75

# Hopper limits that decide whether a configuration can launch at all.
MAX_THREADS_PER_BLOCK = 1024
MAX_STATIC_SMEM_BYTES = 48 * 1024
MAX_DYNAMIC_SMEM_BYTES = 227 * 1024  # per block, after opting in (sm_90)
SMEM_PER_SM_BYTES = 228 * 1024
REGISTERS_PER_SM = 65536
MAX_REGISTERS_PER_THREAD = 255
MAX_GRID_Y = 65535
MAX_GRID_X = 2**31 - 1

SQUARE = ("naive", "coalesced", "smem_tiled")
TILED = ("register_tiled", "vectorized", "bank_conflict_free")
WARP = ("warptiled", "double_buffered", "async_copy", "multistage")
VECTOR = ("vectorized", "bank_conflict_free", *WARP)
DYNAMIC_SMEM = ("double_buffered", "async_copy", "multistage")
# Consecutive k of one row of A in a warp's copies (the multistage kernel's AK).
A_COPY_K = 8
# Largest cluster every sm_90 GPU can launch (more needs a non-portable opt-in).
MAX_PORTABLE_CLUSTER = 8
# The serial split-K's global workspace (a partial tile per block) stays below this: a deep
# split of a large C would park gigabytes that a shallower split or none does without.
MAX_WORKSPACE_BYTES = 256 * 2**20

REQUIRED: dict[str, tuple[str, ...]] = {
    "naive": ("BLOCK",),
    "coalesced": ("BLOCK",),
    "smem_tiled": ("BLOCK",),
    "blocktile_1d": ("BM", "BN", "BK", "TM"),
    "register_tiled": ("BM", "BN", "BK", "TM", "TN"),
    "vectorized": ("BM", "BN", "BK", "TM", "TN"),
    "bank_conflict_free": ("BM", "BN", "BK", "TM", "TN"),
    "warptiled": ("BM", "BN", "BK", "WM", "WN", "TM", "TN", "GROUP"),
    "double_buffered": ("BM", "BN", "BK", "WM", "WN", "TM", "TN", "GROUP", "MIN_BLOCKS"),
    "async_copy": ("BM", "BN", "BK", "WM", "WN", "TM", "TN", "GROUP", "MIN_BLOCKS", "STAGES"),
    "multistage": ("BM", "BN", "BK", "WM", "WN", "TM", "TN", "GROUP", "MIN_BLOCKS", "STAGES",
                   "SPLIT", "SERIAL", "CONST_DST", "COPY_AT_END"),
}


# ------------------------------------------------------------------------------ the problem


def make_inputs(size: Size, seed: int | None, *, alpha: float = ALPHA,
                beta: float = BETA) -> dict[str, Any]:
    """Fresh A, B, C: normal samples (no exact zeros, mixed signs). With beta == 0, C starts
    as NaN, so an element a kernel forgets to write (or reads when it must not) shows."""
    import cupy

    rng = cupy.random.default_rng(seed)
    m, n, k = size.M, size.N, size.K
    a = rng.standard_normal((m, k), dtype=cupy.float32)
    b = rng.standard_normal((k, n), dtype=cupy.float32)
    if beta == 0.0:
        c = cupy.full((m, n), cupy.nan, dtype=cupy.float32)
    else:
        c = rng.standard_normal((m, n), dtype=cupy.float32)
    return {"A": a, "B": b, "C": c, "alpha": float(alpha), "beta": float(beta)}


def expected(inputs: dict[str, Any], size: Size) -> dict[str, Any]:
    """alpha * A @ B + beta * C in float64, from the untouched inputs."""
    import cupy

    a, b, c = inputs["A"], inputs["B"], inputs["C"]
    truth = inputs["alpha"] * (a.astype(cupy.float64) @ b.astype(cupy.float64))
    if inputs["beta"] != 0.0:
        truth += inputs["beta"] * c.astype(cupy.float64)
    return {"C": truth}


def cublas_sgemm(inputs: dict[str, Any], size: Size) -> None:
    """C = alpha*A@B + beta*C in ONE cublasSgemm call, so the reference pays for alpha and
    beta the way the hand-written kernels do (cupy.matmul plus element-wise passes would
    charge cuBLAS two extra trips through memory), with TF32 off (CUBLAS_DEFAULT_MATH).

    cuBLAS is column-major: a row-major C (MxN) is a column-major C^T, and C^T = B^T A^T,
    so B goes first with the dimensions swapped and no transposes.
    """
    import numpy
    from cupy.cuda import device
    from cupy_backends.cuda.libs import cublas

    a, b, c = inputs["A"], inputs["B"], inputs["C"]
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0:
        return
    alpha_host = numpy.array(inputs["alpha"], dtype=numpy.float32)
    beta_host = numpy.array(inputs["beta"], dtype=numpy.float32)
    handle = device.get_cublas_handle()
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    cublas.setMathMode(handle, cublas.CUBLAS_DEFAULT_MATH)  # full FP32: no TF32 tensor cores
    cublas.sgemm(
        handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, n, m, k,
        alpha_host.ctypes.data, b.data.ptr, n, a.data.ptr, k,
        beta_host.ctypes.data, c.data.ptr, n,
    )


def vector_path(size: Size) -> bool:
    """Whether 128-bit global accesses are legal: every row of A, B, C 16-byte aligned."""
    return size.K % 4 == 0 and size.N % 4 == 0


def vec_define(size: Size, params: dict[str, int]) -> dict[str, int]:
    """The one shape-dependent macro: VEC=1 when K and N are multiples of 4."""
    return {"VEC": int(vector_path(size))}


def exact_define(size: Size, params: dict[str, int]) -> dict[str, int]:
    """VEC, and EXACT=1 when every tile is whole (M, N, K multiples of BM, BN, BK) on the
    vector path: the multistage kernel then compiles copies without bounds checks."""
    vec = vector_path(size)
    whole = (size.M % params["BM"] == 0 and size.N % params["BN"] == 0
             and size.K % params["BK"] == 0)
    return {"VEC": int(vec), "EXACT": int(vec and whole)}


# ------------------------------------------------------------------------------ the families


def threads_per_block(family: str, p: dict[str, int]) -> int:
    """Threads per block implied by the tile parameters (the kernels' THREADS macro)."""
    if family in SQUARE:
        return p["BLOCK"] * p["BLOCK"]
    if family == "blocktile_1d":
        return p["BM"] * p["BN"] // p["TM"]
    if family in TILED:
        return (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def shared_mem_bytes(family: str, p: dict[str, int]) -> int:
    """Shared memory per block in bytes (static, or dynamic for the pipelined kernels)."""
    if family in ("naive", "coalesced"):
        return 0
    if family == "smem_tiled":
        return 2 * p["BLOCK"] * p["BLOCK"] * 4
    if family in ("blocktile_1d", "register_tiled", "vectorized"):
        return (p["BM"] * p["BK"] + p["BK"] * p["BN"]) * 4
    if family in ("bank_conflict_free", "warptiled"):
        return p["BK"] * (p["BM"] + 4 + p["BN"]) * 4
    if family == "double_buffered":
        return 2 * p["BK"] * (p["BM"] + 4 + p["BN"]) * 4
    if family == "multistage":  # transposed A rows padded to BM + 4; a cluster parks a C tile
        stages = p["STAGES"] * p["BK"] * (p["BM"] + 4 + p["BN"]) * 4
        return max(stages, p["BM"] * p["BN"] * 4) if clustered(p) else stages
    # async_copy: row-major A tile, rows padded to BK + 4
    return p["STAGES"] * (p["BM"] * (p["BK"] + 4) + p["BK"] * p["BN"]) * 4


def clustered(p: dict[str, int]) -> bool:
    """Whether the multistage kernel splits K over a cluster (SPLIT > 1 with SERIAL = 0)."""
    return p["SPLIT"] > 1 and not p["SERIAL"]


def workspace_floats(p: dict[str, int], size: Size) -> int:
    """Floats of the serial split-K's workspace: a BM x BN partial tile per block (none
    without SERIAL)."""
    if not p["SERIAL"]:
        return 0
    return grid_for("multistage", p, size)[0] * p["BM"] * p["BN"]


def grid_for(family: str, p: dict[str, int], size: Size) -> tuple[int, int, int]:
    """The launch grid (the kernels' blockIdx conventions)."""
    m, n = size.M, size.N

    def cdiv(a: int, b: int) -> int:
        return -(-a // b)

    if family == "naive":
        return (cdiv(m, p["BLOCK"]), cdiv(n, p["BLOCK"]), 1)
    if family in ("coalesced", "smem_tiled"):
        return (cdiv(n, p["BLOCK"]), cdiv(m, p["BLOCK"]), 1)
    if family in ("blocktile_1d", *TILED):
        return (cdiv(n, p["BN"]), cdiv(m, p["BM"]), 1)
    if family == "multistage":  # SPLIT consecutive blocks (a cluster, or not) per output tile
        return (cdiv(m, p["BM"]) * cdiv(n, p["BN"]) * p["SPLIT"], 1, 1)
    return (cdiv(m, p["BM"]) * cdiv(n, p["BN"]), 1, 1)


def block_for(family: str, p: dict[str, int]) -> tuple[int, int, int]:
    if family in SQUARE:
        return (p["BLOCK"], p["BLOCK"], 1)
    return (threads_per_block(family, p), 1, 1)


def _divides(problems: list[str], a: str, b: str, p: dict[str, int]) -> None:
    if p[a] <= 0 or p[b] % p[a] != 0:
        problems.append(f"{b}={p[b]} must be a multiple of {a}={p[a]}")


def _estimated_registers(family: str, p: dict[str, int]) -> int:
    """A lower bound on registers per thread: accumulators, fragments and ~24 for addressing."""
    if family == "async_copy":  # four k of A per row, two k of B
        fragments = 4 * p["TM"] + 2 * p["TN"]
    elif family == "multistage":  # both fragments double-buffered, and a 64-bit address
        threads = (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32  # per copy of a tile
        copies = (p["BM"] * p["BK"] + p["BK"] * p["BN"] // 4) // threads
        fragments = 2 * (p["TM"] + p["TN"]) + 2 * copies
    elif family == "double_buffered":  # plus the next tile, held in float4 registers
        threads = (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32
        fragments = 2 * (p["TM"] + p["TN"]) + (p["BM"] + p["BN"]) * p["BK"] // threads
    else:
        fragments = p["TM"] + p["TN"]
    return p["TM"] * p["TN"] + fragments + 24


def _multistage_copy_problems(p: dict[str, int], threads: int) -> list[str]:
    """How the multistage kernel's copies divide over its threads: A in 4-byte copies, B in
    16-byte ones (or, where rows of B are not 16-byte aligned, 4-byte copies laid along a
    row: a whole row per some number of threads, or whole rows per thread block)."""
    problems: list[str] = []
    if (p["BM"] * p["BK"]) % threads != 0:
        problems.append(f"the {p['BM']}x{p['BK']} A tile ({p['BM'] * p['BK']} floats) does not "
                        f"divide evenly over {threads} threads")
    if (p["BK"] * p["BN"] // 4) % threads != 0:
        problems.append(f"the {p['BK']}x{p['BN']} B tile ({p['BK'] * p['BN'] // 4} float4) "
                        f"does not divide evenly over {threads} threads")
    if p["BN"] % threads != 0 and threads % p["BN"] != 0:
        problems.append(f"BN={p['BN']} and {threads} threads: one must be a multiple of the "
                        "other (4-byte copies of B along its rows)")
    if p["CONST_DST"] and (p["BM"] * A_COPY_K) % threads != 0:
        problems.append(f"CONST_DST=1 needs BM*{A_COPY_K}={p['BM'] * A_COPY_K} to be a multiple "
                        f"of the {threads} threads (every A copy at a constant offset)")
    return problems


def _check_tiles(family: str, p: dict[str, int]) -> list[str]:
    problems: list[str] = []
    if family in SQUARE:
        if not 1 <= p["BLOCK"] <= 32:
            problems.append(f"BLOCK={p['BLOCK']} must be between 1 and 32 (BLOCK^2 threads)")
        return problems
    _divides(problems, "TM", "BM", p)
    if family != "blocktile_1d":
        _divides(problems, "TN", "BN", p)
    if family in VECTOR:
        for key in ("TM", "TN"):
            if p[key] % 4 != 0:
                problems.append(f"{key}={p[key]} must be a multiple of 4 (128-bit fragments)")
        if p["BK"] % 4 != 0:
            problems.append(f"BK={p['BK']} must be a multiple of 4 (float4 loads)")
    if family in ("bank_conflict_free", "warptiled", "double_buffered") and p["BK"] % 8 != 0:
        problems.append(f"BK={p['BK']} must be a multiple of 8 (8-wide k chunks of the A tile)")
    if family in WARP:
        _divides(problems, "WM", "BM", p)
        _divides(problems, "WN", "BN", p)
        _divides(problems, "TM", "WM", p)
        _divides(problems, "TN", "WN", p)
        if not problems and (p["WM"] // p["TM"]) * (p["WN"] // p["TN"]) != 32:
            problems.append(
                f"a warp tile of {p['WM']}x{p['WN']} with {p['TM']}x{p['TN']} per thread needs "
                f"{(p['WM'] // p['TM']) * (p['WN'] // p['TN'])} threads, not 32"
            )
        if p["GROUP"] < 1:
            problems.append(f"GROUP={p['GROUP']} must be at least 1")
        if p.get("MIN_BLOCKS", 1) < 1:
            problems.append(f"MIN_BLOCKS={p['MIN_BLOCKS']} must be at least 1")
    if family in ("async_copy", "multistage") and p["STAGES"] < 2:
        problems.append(f"STAGES={p['STAGES']} must be at least 2")
    if family == "multistage":
        if p["BK"] % 8 != 0:
            problems.append(f"BK={p['BK']} must be a multiple of 8 (a warp copies 8 k of A)")
        rows = min(p["TM"], 32 // p["TN"])  # the epilogue's EPI_ROWS: rows of C loaded at once
        if rows < 1 or p["TM"] % rows != 0:
            problems.append(f"TM={p['TM']} must be a multiple of min(TM, 32/TN)={rows} (the "
                            "epilogue loads C that many rows at a time)")
        for key in ("CONST_DST", "COPY_AT_END"):
            if p[key] not in (0, 1):
                problems.append(f"{key}={p[key]} must be 0 or 1")
        if p["SERIAL"] not in (0, 1):
            problems.append(f"SERIAL={p['SERIAL']} must be 0 (K split over a cluster) or 1 "
                            "(through a global workspace)")
        elif p["SERIAL"]:
            if p["SPLIT"] < 2:
                problems.append(f"SERIAL=1 needs SPLIT of 2 or more, not {p['SPLIT']} "
                                "(SPLIT blocks share the K of a tile)")
        elif not 1 <= p["SPLIT"] <= MAX_PORTABLE_CLUSTER:
            problems.append(f"SPLIT={p['SPLIT']} must be between 1 and "
                            f"{MAX_PORTABLE_CLUSTER} (blocks in one cluster; SERIAL=1 "
                            "splits deeper)")
        elif p["BM"] % p["SPLIT"] != 0:
            problems.append(f"BM={p['BM']} must be a multiple of SPLIT={p['SPLIT']} "
                            "(each block of a cluster writes BM/SPLIT rows)")
        elif p["SPLIT"] > 1 and (p["BM"] // p["SPLIT"]) * (p["BN"] // 4) % 32 != 0:
            # Every lane of a warp must take the summing loop equally often: the cluster
            # barrier after it is `.aligned`, which a warp must reach converged.
            problems.append(f"a {p['BM'] // p['SPLIT']}x{p['BN']} slice of the tile per block "
                            "must be a multiple of 32 float4 (SPLIT > 1)")
    if problems:
        return problems

    threads = threads_per_block(family, p)
    if not 32 <= threads <= MAX_THREADS_PER_BLOCK:
        return [f"{threads} threads per block; must be between 32 and 1024"]
    if family == "blocktile_1d" and (p["BM"] * p["BN"]) % p["TM"] != 0:
        problems.append("BM*BN must be a multiple of TM")
    if family == "multistage":
        problems += _multistage_copy_problems(p, threads)
    elif family in VECTOR:
        if (p["BM"] * p["BK"] // 4) % threads != 0:
            problems.append(
                f"the {p['BM']}x{p['BK']} A tile ({p['BM'] * p['BK'] // 4} float4) does not "
                f"divide evenly over {threads} threads"
            )
        if (p["BK"] * p["BN"] // 4) % threads != 0:
            problems.append(
                f"the {p['BK']}x{p['BN']} B tile ({p['BK'] * p['BN'] // 4} float4) does not "
                f"divide evenly over {threads} threads"
            )
    smem = shared_mem_bytes(family, p)
    limit = MAX_DYNAMIC_SMEM_BYTES if family in DYNAMIC_SMEM else MAX_STATIC_SMEM_BYTES
    if smem > limit:
        problems.append(f"{smem} bytes of shared memory per block; the limit is {limit}")
    blocks = p.get("MIN_BLOCKS", 1)
    if smem * blocks > SMEM_PER_SM_BYTES:
        problems.append(
            f"MIN_BLOCKS={blocks} blocks of {smem} bytes of shared memory do not fit on one SM"
        )
    if family != "blocktile_1d":
        needed = _estimated_registers(family, p)
        budget = min(MAX_REGISTERS_PER_THREAD, REGISTERS_PER_SM // (threads * blocks))
        if needed > budget:
            problems.append(
                f"about {needed} registers per thread needed but {blocks} block(s) of "
                f"{threads} threads leave {budget}: it would spill"
            )
    return problems


def _check_size(family: str, p: dict[str, int], size: Size) -> list[str]:
    m, n, k = size
    if max(m, n, k) >= 2**31:
        return [f"size {size}: each dimension must be below 2^31 (32-bit indices)"]
    grid = grid_for(family, p, size)
    if grid[0] > MAX_GRID_X or grid[1] > MAX_GRID_Y:
        return [f"size {size} needs a grid of {grid[:2]}, over CUDA's limits"]
    workspace = workspace_floats(p, size) * 4 if family == "multistage" else 0
    if workspace > MAX_WORKSPACE_BYTES:
        mib = workspace / 2**20
        return [f"size {size}: the split-K workspace of {grid[0]} partial {p['BM']}x{p['BN']} "
                f"tiles ({mib:.0f} MiB) is over {MAX_WORKSPACE_BYTES // 2**20} MiB"]
    return []


def family_check(family: str):
    """The `constraints` callable of a family: problems of the parameters (and the size)."""

    def check(size: Size | None, params: dict[str, int]) -> list[str]:
        missing = [f"missing parameter {key!r}" for key in REQUIRED[family] if key not in params]
        if missing:
            return missing
        problems = _check_tiles(family, params)
        if size is not None and not problems:
            problems = _check_size(family, params, size)
        return problems

    check.__name__ = f"check_{family}"
    return check


# Per GPU: the serial split-K's partial tiles and its per-tile arrival counters. Zeroed once
# when made (each launch leaves its counters at zero again) and grown, never shrunk, when a
# launch needs more. Launches take turns with them in stream order: two launches running at
# once on different streams must not share them.
_WORKSPACES: dict[int, tuple[Any, Any]] = {}


def serial_workspace(floats: int, tiles: int) -> tuple[Any, Any]:
    """The current GPU's workspace (float32) and counters (uint32), at least this large."""
    import cupy

    device = cupy.cuda.Device().id
    partials, arrivals = _WORKSPACES.get(device, (None, None))
    if partials is None or partials.size < floats:
        partials = cupy.empty(floats, dtype=cupy.float32)
    if arrivals is None or arrivals.size < tiles:
        arrivals = cupy.zeros(tiles, dtype=cupy.uint32)
    _WORKSPACES[device] = (partials, arrivals)
    return partials, arrivals


def family_launch(family: str):
    """The `launch` callable of a family: one launch of the kernel over the whole C."""

    def launch(size: Size, params: dict[str, int], inputs: dict[str, Any]) -> Launch:
        import numpy

        a, b, c = inputs["A"], inputs["B"], inputs["C"]
        m, n, k = size
        for label, array, want in (("A", a, (m, k)), ("B", b, (k, n)), ("C", c, (m, n))):
            if tuple(array.shape) != want:
                raise ValueError(f"{label} has shape {tuple(array.shape)}, expected {want}")
            if array.dtype != numpy.float32 or not array.flags.c_contiguous:
                raise ValueError(f"{label} must be a C-contiguous float32 CuPy array")
            if vector_path(size) and array.data.ptr % 16 != 0:
                raise ValueError(f"{label} is not 16-byte aligned; the vector path needs it")
        args = (numpy.int32(m), numpy.int32(n), numpy.int32(k),
                numpy.float32(inputs["alpha"]), a, b, numpy.float32(inputs["beta"]), c)
        grid = grid_for(family, params, size)
        if family == "multistage":  # the workspace is read only with SERIAL: else it may be empty
            tiles = grid[0] // params["SPLIT"] if params["SERIAL"] else 0
            args += serial_workspace(workspace_floats(params, size), tiles)
        return Launch(
            grid=grid,
            block=block_for(family, params),
            args=args,
            shared_mem=shared_mem_bytes(family, params) if family in DYNAMIC_SMEM else 0,
        )

    launch.__name__ = f"launch_{family}"
    return launch


for _family in REQUIRED:
    globals()[f"check_{_family}"] = family_check(_family)
    globals()[f"launch_{_family}"] = family_launch(_family)
del _family
