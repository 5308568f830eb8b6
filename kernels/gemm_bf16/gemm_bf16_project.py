"""The BF16 GEMM chain's own Python: inputs, the float64 truth, cuBLAS, launch geometry, checks,
and the TMA tensor maps of the WGMMA iterations.

C = A @ B with A (MxK) and B (KxN) bfloat16, C (MxN) float32, all row-major, float32
accumulation. CuPy has no bfloat16 dtype: A and B travel as uint16 arrays holding the bf16
bits, rounded to nearest even from float32 samples, and the truth is computed in float64 from
those rounded values, so it measures the kernels' accumulation and nothing of the rounding.
CuPy is imported inside the functions, so `ncuh list` reads this project without a GPU.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

from harness.project import Launch, Size

# Hopper limits a configuration must fit.
MAX_STATIC_SMEM_BYTES = 48 * 1024
MAX_DYNAMIC_SMEM_BYTES = 227 * 1024  # per block, after opting in (sm_90)
MAX_GRID_Y = 65535
CHUNK = 8  # bf16 per 16-byte copy
MAX_TMA_BOX = 256  # elements per dimension of a TMA box
SWIZZLE_BYTES = 128  # a swizzled row of the WGMMA iterations: 64 bf16
SWIZZLE_SLACK = 1024  # the WGMMA kernels align their tiles to the swizzle's 1024-byte period

# cuda.h: CUtensorMapDataType, CUtensorMapSwizzle and CUtensorMapL2promotion values.
TENSOR_MAP_BFLOAT16 = 9
TENSOR_MAP_SWIZZLE_128B = 3
TENSOR_MAP_L2_PROMOTION_128B = 2

# cuBLAS enums (cublas_api.h, library_types.h): bf16 in, float32 out, float32 compute.
CUDA_R_32F = 0
CUDA_R_16BF = 14
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT = -1

REQUIRED: dict[str, tuple[str, ...]] = {
    "wmma": ("BM", "BN", "BK", "WM", "WN"),
    "mma": ("BM", "BN", "BK", "WM", "WN"),
    "multistage": ("BM", "BN", "BK", "WM", "WN", "STAGES"),
    "wgmma_tma": ("BM", "BN", "BK", "STAGES"),
    "ws": ("BM", "BN", "BK", "STAGES", "GROUP"),
    "cluster": ("BM", "BN", "BK", "STAGES", "GROUP", "CLUSTER_M"),
}
WGMMA = ("wgmma_tma", "ws", "cluster")  # the families built on wgmma and TMA
SPECIALIZED = ("ws", "cluster")  # a producer warpgroup beside the consumers; persistent grid
CLUSTER_SIZES = (1, 2, 4)


# ------------------------------------------------------------------------------ the problem


def to_bf16_bits(x: Any) -> Any:
    """float32 -> the uint16 bits of the nearest bfloat16 (ties to even); x holds no NaN."""
    import cupy

    bits = cupy.ascontiguousarray(x, dtype=cupy.float32).view(cupy.uint32)
    rounding = ((bits >> 16) & 1) + 0x7FFF
    return ((bits + rounding) >> 16).astype(cupy.uint16)


def from_bf16_bits(bits: Any) -> Any:
    """The uint16 bits of bfloat16 values -> the same values in float64 (exact)."""
    import cupy

    return (bits.astype(cupy.uint32) << 16).view(cupy.float32).astype(cupy.float64)


def make_inputs(size: Size, seed: int | None) -> dict[str, Any]:
    """Fresh A, B (normal samples rounded to bf16: mixed signs, no exact zeros) and C."""
    import cupy

    rng = cupy.random.default_rng(seed)
    m, n, k = size.M, size.N, size.K
    a = to_bf16_bits(rng.standard_normal((m, k), dtype=cupy.float32))
    b = to_bf16_bits(rng.standard_normal((k, n), dtype=cupy.float32))
    return {"A": a, "B": b, "C": cupy.zeros((m, n), dtype=cupy.float32)}


def expected(inputs: dict[str, Any], size: Size) -> dict[str, Any]:
    """A @ B in float64 from the bf16 values the kernels read."""
    return {"C": from_bf16_bits(inputs["A"]) @ from_bf16_bits(inputs["B"])}


def cublas_gemm(inputs: dict[str, Any], size: Size) -> None:
    """C = A @ B in one cublasGemmEx: bf16 inputs, float32 output, CUBLAS_COMPUTE_32F (cuBLAS
    picks its tensor-core kernel). cuBLAS is column-major: a row-major C (MxN) is a
    column-major C^T = B^T A^T, so B goes first with the dimensions swapped, no transposes."""
    import numpy
    from cupy.cuda import device
    from cupy_backends.cuda.libs import cublas

    a, b, c = inputs["A"], inputs["B"], inputs["C"]
    m, k = a.shape
    n = b.shape[1]
    one = numpy.array(1.0, dtype=numpy.float32)
    zero = numpy.array(0.0, dtype=numpy.float32)
    handle = device.get_cublas_handle()
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    cublas.gemmEx(
        handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, n, m, k,
        one.ctypes.data, b.data.ptr, CUDA_R_16BF, n, a.data.ptr, CUDA_R_16BF, k,
        zero.ctypes.data, c.data.ptr, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT,
    )


# ------------------------------------------------------------------------------ the families


def threads_per_block(family: str, p: dict[str, int]) -> int:
    """A warp per warp tile, or (WGMMA) a warpgroup of 128 threads per 64 rows, and (warp
    specialized) one more, the producer's."""
    if family in SPECIALIZED:
        return (p["BM"] // 64 + 1) * 128
    if family in WGMMA:
        return p["BM"] // 64 * 128
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def shared_mem_bytes(family: str, p: dict[str, int]) -> int:
    """Shared memory per block: padded tiles (wmma), swizzled tiles, or STAGES of them (and,
    for WGMMA, the slack that aligns them to 1024 bytes)."""
    if family == "wmma":  # rows padded by 8 bf16
        return (p["BM"] * (p["BK"] + 8) + p["BK"] * (p["BN"] + 8)) * 2
    stage = (p["BM"] * p["BK"] + p["BK"] * p["BN"]) * 2
    slack = SWIZZLE_SLACK if family in WGMMA else 0
    return stage * p.get("STAGES", 1) + slack


def _check_tiles(family: str, p: dict[str, int]) -> list[str]:
    problems: list[str] = []
    for big, small in (("BM", "WM"), ("BN", "WN")):
        if p[small] <= 0 or p[big] % p[small] != 0:
            problems.append(f"{big}={p[big]} must be a multiple of {small}={p[small]}")
    for key, step in (("WM", 16), ("WN", 16), ("BK", 16)):
        if p[key] <= 0 or p[key] % step != 0:
            problems.append(f"{key}={p[key]} must be a multiple of {step} (16x16 fragments)")
    if family != "wmma":
        if p["BK"] != 32:  # the swizzle of A is written for rows of 4 16-byte chunks
            problems.append(f"BK={p['BK']} must be 32 (rows of A are 4 swizzled 16-byte chunks)")
        if p["BN"] % 64 != 0:
            problems.append(f"BN={p['BN']} must be a multiple of 64 (rows of B swizzle 8 chunks)")
    if family == "multistage" and p["STAGES"] < 2:
        problems.append(f"STAGES={p['STAGES']} must be at least 2")
    if problems:
        return problems
    threads = threads_per_block(family, p)
    if not 32 <= threads <= 1024:
        return [f"{threads} threads per block; must be between 32 and 1024"]
    for tile, elements in (("A", p["BM"] * p["BK"]), ("B", p["BK"] * p["BN"])):
        if (elements // CHUNK) % threads != 0:
            problems.append(f"the {tile} tile ({elements // CHUNK} 16-byte pieces) does not "
                            f"divide evenly over {threads} threads")
    smem = shared_mem_bytes(family, p)
    limit = MAX_DYNAMIC_SMEM_BYTES if family == "multistage" else MAX_STATIC_SMEM_BYTES
    if smem > limit:
        problems.append(f"{smem} bytes of shared memory per block; the limit is {limit}")
    return problems


def _check_wgmma(family: str, p: dict[str, int]) -> list[str]:
    """wgmma_tma.cu: a warpgroup per 64 rows, m64n128k16 per 128 columns, 128-byte rows; ws.cu
    and cluster.cu: one or two consumer warpgroups, GROUP tile rows at a time, and (cluster.cu)
    CLUSTER_M blocks sharing each B tile."""
    problems: list[str] = []
    if family in SPECIALIZED:
        problems = _check_specialized(family, p)
    elif p["BM"] <= 0 or p["BM"] % 64 != 0 or p["BM"] > MAX_TMA_BOX:
        problems.append(f"BM={p['BM']} must be 64, 128, 192 or 256 (a warpgroup per 64 rows, "
                        f"one TMA box of at most {MAX_TMA_BOX} rows)")
    if p["BN"] not in (128, 256):
        problems.append(f"BN={p['BN']} must be 128 or 256 (one or two m64n128k16 per 16 of k; "
                        "more would not fit the accumulators in registers)")
    if p["BK"] != SWIZZLE_BYTES // 2:
        problems.append(f"BK={p['BK']} must be {SWIZZLE_BYTES // 2} (a row of A is one "
                        f"{SWIZZLE_BYTES}-byte swizzled line)")
    if p["STAGES"] < 2:
        problems.append(f"STAGES={p['STAGES']} must be at least 2")
    if problems:
        return problems
    smem = shared_mem_bytes(family, p)
    if smem > MAX_DYNAMIC_SMEM_BYTES:
        problems.append(f"{smem} bytes of shared memory per block; the limit is "
                        f"{MAX_DYNAMIC_SMEM_BYTES}")
    return problems


def _check_specialized(family: str, p: dict[str, int]) -> list[str]:
    problems = []
    if p["BM"] not in (64, 128):
        problems.append(f"BM={p['BM']} must be 64 or 128 (one or two consumer warpgroups of 64 "
                        "rows; with a third, setmaxnreg leaves each too few registers)")
    if p["GROUP"] < 1:
        problems.append(f"GROUP={p['GROUP']} must be at least 1 (tile rows walked together)")
    if family == "cluster":
        cluster = p["CLUSTER_M"]
        if cluster not in CLUSTER_SIZES:
            problems.append(f"CLUSTER_M={cluster} must be one of {CLUSTER_SIZES}")
        elif p["BN"] % 64 == 0 and p["BN"] // 64 % cluster != 0:
            problems.append(f"BN={p['BN']} must be a multiple of {64 * cluster}: each of the "
                            f"{cluster} blocks of a cluster multicasts whole 64-column blocks "
                            "of the B tile")
    return problems


def _check_size(p: dict[str, int], size: Size) -> list[str]:
    """No kernel checks bounds: every tile must be whole (for a cluster, CLUSTER_M tiles one
    under the other)."""
    cluster = p.get("CLUSTER_M", 1)
    rows = f"BM={p['BM']}" + (f" times CLUSTER_M={cluster}" if cluster > 1 else "")
    problems = [f"{dim}={value} is not a multiple of {tile} (no partial tiles yet)"
                for dim, value, tile, whole in (("M", size.M, rows, p["BM"] * cluster),
                                                ("N", size.N, f"BN={p['BN']}", p["BN"]),
                                                ("K", size.K, f"BK={p['BK']}", p["BK"]))
                if value % whole != 0]
    if not problems and size.M // p["BM"] > MAX_GRID_Y:
        problems.append(f"M={size.M} needs {size.M // p['BM']} block rows, over CUDA's "
                        f"{MAX_GRID_Y}")
    if not problems and max(size) >= 2**31:
        problems.append(f"size {size}: each dimension must be below 2^31 (32-bit indices)")
    return problems


def family_check(family: str):
    """The `constraints` callable of a family: problems of the parameters (and the size)."""

    def check(size: Size | None, params: dict[str, int]) -> list[str]:
        missing = [f"missing parameter {key!r}" for key in REQUIRED[family] if key not in params]
        if missing:
            return missing
        problems = (_check_wgmma(family, params) if family in WGMMA
                    else _check_tiles(family, params))
        if size is not None and not problems:
            problems = _check_size(params, size)
        return problems

    check.__name__ = f"check_{family}"
    return check


def _check_inputs(size: Size, inputs: dict[str, Any]) -> None:
    import numpy

    m, n, k = size
    for label, array, want, dtype in (("A", inputs["A"], (m, k), numpy.uint16),
                                      ("B", inputs["B"], (k, n), numpy.uint16),
                                      ("C", inputs["C"], (m, n), numpy.float32)):
        if tuple(array.shape) != want:
            raise ValueError(f"{label} has shape {tuple(array.shape)}, expected {want}")
        if array.dtype != dtype or not array.flags.c_contiguous:
            raise ValueError(f"{label} must be a C-contiguous {numpy.dtype(dtype)} CuPy array")


@functools.cache
def _sm_count(device_id: int) -> int:
    import cupy

    return int(cupy.cuda.Device(device_id).attributes["MultiProcessorCount"])


def sm_count() -> int:
    """Streaming multiprocessors of the current device (the launch is timed: asked once)."""
    import cupy

    return _sm_count(cupy.cuda.Device().id)


def grid(family: str, size: Size, params: dict[str, int]) -> tuple[int, int, int]:
    """A block per tile; for the persistent kernels one block per SM (whole clusters of
    CLUSTER_M), or fewer where there are fewer tiles."""
    tiles_n, tiles_m = size.N // params["BN"], size.M // params["BM"]
    if family not in SPECIALIZED:
        return (tiles_n, tiles_m, 1)
    cluster = params.get("CLUSTER_M", 1)
    clusters = min(tiles_n * tiles_m // cluster, sm_count() // cluster)
    return (clusters * cluster, 1, 1)


def family_launch(family: str):
    """The `launch` callable of a family: one launch over the whole C. The WGMMA kernels take
    A and B as TMA tensor maps, boxes of one stage's A tile and of 64 columns of its B tile."""

    def launch(size: Size, params: dict[str, int], inputs: dict[str, Any]) -> Launch:
        import numpy

        m, n, k = size
        _check_inputs(size, inputs)
        if family in WGMMA:
            a = tensor_map(inputs["A"], params["BM"], params["BK"])
            b = tensor_map(inputs["B"], params["BK"], SWIZZLE_BYTES // 2)
        else:
            a, b = inputs["A"], inputs["B"]
        return Launch(
            grid=grid(family, size, params),
            block=(threads_per_block(family, params), 1, 1),
            args=(numpy.int32(m), numpy.int32(n), numpy.int32(k), a, b, inputs["C"]),
            shared_mem=shared_mem_bytes(family, params) if "STAGES" in params else 0,
        )

    launch.__name__ = f"launch_{family}"
    return launch


# ------------------------------------------------------------------------------ TMA tensor maps

# Encoded maps by (address, shape, box): the launch is timed, and encoding is a driver call.
_TENSOR_MAPS: dict[tuple[int, ...], Any] = {}
_MAX_TENSOR_MAPS = 64


def tensor_map(array: Any, box_rows: int, box_cols: int) -> Any:
    """The CUtensorMap of a row-major bf16 matrix in device memory, read in boxes of
    box_rows x box_cols with the 128-byte swizzle, as the 128 bytes a kernel takes by value
    (a one-element NumPy array of a 128-byte structure, which CuPy passes as a struct).

    CuPy's driver module has no binding for cuTensorMapEncodeTiled in every version: it is
    called through ctypes on libcuda, which CuPy has loaded."""
    import numpy
    from cupy.cuda import driver

    if driver.get_build_version() < 12000:
        raise ValueError("TMA tensor maps need CUDA 12 or later; this CuPy is built for "
                         f"CUDA {driver.get_build_version()}")
    rows, cols = array.shape
    key = (array.data.ptr, rows, cols, box_rows, box_cols)
    if key in _TENSOR_MAPS:
        return _TENSOR_MAPS[key]
    words = numpy.zeros(24, dtype=numpy.uint64)  # 128 bytes at a 64-byte boundary inside
    start = (-words.ctypes.data % 64) // 8
    encoded = words[start:start + 16]
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    encode = ctypes.CDLL("libcuda.so.1").cuTensorMapEncodeTiled
    encode.restype = ctypes.c_int
    status = encode(
        ctypes.c_void_p(encoded.ctypes.data), TENSOR_MAP_BFLOAT16, u32(2),
        ctypes.c_void_p(array.data.ptr),
        (u64 * 2)(cols, rows),  # sizes, innermost first
        (u64 * 1)(cols * 2),  # the byte stride of a row
        (u32 * 2)(box_cols, box_rows), (u32 * 2)(1, 1),
        0, TENSOR_MAP_SWIZZLE_128B, TENSOR_MAP_L2_PROMOTION_128B, 0,  # no interleave, no fill
    )
    driver.check_status(status)  # CUDADriverError, named, where the driver refused
    value = encoded.copy().view(numpy.dtype([("opaque", numpy.uint64, (16,))]))
    if len(_TENSOR_MAPS) >= _MAX_TENSOR_MAPS:
        _TENSOR_MAPS.clear()
    _TENSOR_MAPS[key] = value
    return value


for _family in REQUIRED:
    globals()[f"check_{_family}"] = family_check(_family)
    globals()[f"launch_{_family}"] = family_launch(_family)
del _family
