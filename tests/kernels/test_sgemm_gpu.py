"""Correctness of every SGEMM variant on every shape, on a real GPU (skipped cleanly without one).

Each case prepares the variant through `harness.gpu.backend.prepare`, runs it once on fresh
random inputs and compares with the project's float64 truth: relative Frobenius error below
1e-4, no NaN. beta != 0 starts from a random C; beta == 0 starts from a NaN-filled C, so
unwritten elements (or a kernel that reads C when beta == 0) fail.
"""

from __future__ import annotations

import zlib

import pytest

from harness.errors import NcuhError, UnsupportedShapeError
from harness.project import load_project
from harness.project.locate import default_project_path

SGEMM = load_project(default_project_path())
import sgemm_project  # noqa: E402  (on sys.path once the project is loaded)


def variant_names() -> list[str]:
    return [*SGEMM.names, SGEMM.reference.key]


def _runnable(name: str, shape, params=None):
    from harness.gpu.backend import prepare, prepare_call

    size = SGEMM.size(shape)
    if name == SGEMM.reference.key:
        return prepare_call(name, SGEMM.reference.call, size)
    return prepare(SGEMM, name, size, params)


def verify(name: str, shape, alpha: float, beta: float, seed: int, params=None):
    """One checked launch with the given alpha and beta (beta == 0: C starts as NaN)."""
    import cupy

    from harness.gpu.verify import check_outputs

    size = SGEMM.size(shape)
    runnable = _runnable(name, shape, params)
    inputs = sgemm_project.make_inputs(size, seed, alpha=alpha, beta=beta)
    truth = sgemm_project.expected(inputs, size)
    runnable(inputs)
    cupy.cuda.get_current_stream().synchronize()
    error, _, nonfinite, _ = check_outputs(SGEMM, inputs, truth, size)
    return error, nonfinite

SHAPES = [
    (1, 1, 1),
    (17, 33, 65),
    (128, 128, 128),
    (256, 256, 256),
    (1024, 1024, 1024),
    (512, 256, 1024),  # non-square, powers of two
    (384, 640, 96),  # non-square, multiples of 32 but not of every tile
    (1000, 1030, 999),  # multiples of no tile; K, N not multiples of 4 (scalar path)
    (1024, 1000, 512),  # vector path with a partial column tile
    (129, 67, 3),  # K smaller than any BK
    (96, 200, 4096),  # long K: accumulation error
]

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", variant_names())
@pytest.mark.parametrize("beta", [-0.75, 0.0], ids=["beta_random_c", "beta0_nan_c"])
def test_variant_matches_float64_reference(name: str, shape, beta: float) -> None:
    error, nonfinite = verify(name, shape, alpha=1.5, beta=beta,
                              seed=zlib.crc32(f"{name}{shape}".encode()))
    assert nonfinite == 0, f"{name} left {nonfinite} NaN/inf elements"
    assert error < 1e-4, f"{name} {shape}: relative error {error:.3g}"


# K split over a cluster: the H100's 1024 winner (2 blocks) and a deeper split (4 blocks), on
# whole tiles, partial tiles, the scalar path, a long K, and a K so short that ranks get none.
# Then small block tiles of the tunable space with deep splits, one per way the 4-byte copies
# of B lie on the scalar path: as many threads as columns, fewer (two copies across a row),
# more (four rows at once); on whole tiles, the scalar path with a partial last k tile, and a
# K shorter than one tile. Last, K split through the global workspace (SERIAL): 2 blocks of
# the 64x128 tile, 16 of a 128x64 one and 32 of a 32x128 one, where most ranks of a short K
# get no k tile at all.
SPLIT_SHAPES = [(1024, 1024, 1024), (1000, 1030, 999), (129, 260, 64), (96, 200, 4096),
                (129, 67, 3)]
SMALL_SHAPES = [(256, 256, 256), (333, 777, 4099), (1000, 1030, 999), (129, 67, 3),
                (17, 33, 65)]
# The copy-layout switches (CONST_DST, COPY_AT_END) on both paths of B, whole and partial
# tiles, a K shorter than one tile and a long one.
LAYOUT_SHAPES = [(1024, 1024, 1024), (1024, 1000, 512), (333, 777, 4099), (1000, 1030, 999),
                 (129, 67, 3), (96, 200, 4096)]
TUNED = {  # name: (BM, BN, BK, WM, WN, TM, TN, MIN_BLOCKS, STAGES, SPLIT, SERIAL,
           #        CONST_DST, COPY_AT_END), shapes
    "split2": ((64, 256, 16, 32, 64, 8, 8, 1, 4, 2, 0, 0, 0), SPLIT_SHAPES),
    "split4": ((64, 128, 8, 32, 64, 8, 8, 2, 3, 4, 0, 0, 0), SPLIT_SHAPES),
    "32x32": ((32, 32, 8, 32, 32, 4, 8, 1, 3, 8, 0, 0, 0), SMALL_SHAPES),
    "32x256": ((32, 256, 16, 32, 64, 8, 8, 1, 4, 4, 0, 0, 0), SMALL_SHAPES),
    "128x32": ((128, 32, 16, 32, 32, 4, 8, 2, 4, 2, 0, 0, 0), SMALL_SHAPES),
    "serial2": ((64, 128, 8, 64, 64, 8, 16, 2, 3, 2, 1, 0, 0), SPLIT_SHAPES),
    "serial16": ((128, 64, 8, 64, 32, 4, 16, 1, 3, 16, 1, 0, 0), SMALL_SHAPES),
    "serial32": ((32, 128, 8, 32, 64, 4, 16, 1, 4, 32, 1, 0, 0), SMALL_SHAPES),
    "const_dst": ((128, 32, 8, 64, 32, 8, 8, 2, 3, 7, 1, 1, 0), LAYOUT_SHAPES),
    "copy_at_end": ((64, 128, 8, 64, 64, 8, 16, 2, 3, 1, 0, 0, 1), LAYOUT_SHAPES),
    "both_split4": ((64, 128, 8, 32, 64, 8, 8, 2, 3, 4, 0, 1, 1), LAYOUT_SHAPES),
    "both_serial7": ((128, 32, 8, 64, 32, 8, 8, 2, 3, 7, 1, 1, 1), LAYOUT_SHAPES),
    # the shipped 333x777x4099 winner: both switches with four stages
    "both_serial7_4stages": ((128, 32, 8, 64, 32, 8, 8, 1, 4, 7, 1, 1, 1), LAYOUT_SHAPES),
}
KEYS = ("BM", "BN", "BK", "WM", "WN", "TM", "TN", "MIN_BLOCKS", "STAGES", "SPLIT", "SERIAL",
        "CONST_DST", "COPY_AT_END")
TUNED_CASES = [
    pytest.param(dict(zip(KEYS, values, strict=True)), shape,
                 id=f"{name}-{'x'.join(map(str, shape))}")
    for name, (values, shapes) in TUNED.items() for shape in shapes
]


@pytest.mark.parametrize(("params", "shape"), TUNED_CASES)
@pytest.mark.parametrize("beta", [-0.75, 0.0], ids=["beta_random_c", "beta0_nan_c"])
def test_tuned_configurations_match_float64_reference(params, shape, beta: float) -> None:
    tile = f"{params['BM']}x{params['BN']} SPLIT={params['SPLIT']} SERIAL={params['SERIAL']}"
    error, nonfinite = verify("autotuned", shape, alpha=1.5, beta=beta, params=params,
                              seed=zlib.crc32(f"{params}{shape}".encode()))
    assert nonfinite == 0, f"{tile} left {nonfinite} NaN/inf elements"
    assert error < 1e-4, f"{tile} {shape}: relative error {error:.3g}"


@pytest.mark.parametrize("name", ["serial16", "serial2"])
def test_serial_split_is_deterministic_and_leaves_its_counters_at_zero(name: str) -> None:
    """Whichever block of a tile arrives last, the partials are added in rank order: two
    launches on the same inputs give the same bits, and every counter is back at zero."""
    import cupy

    params = dict(zip(KEYS, TUNED[name][0], strict=True))
    shape = (333, 777, 4099)
    size = SGEMM.size(shape)
    runnable = _runnable("autotuned", shape, params)
    inputs = sgemm_project.make_inputs(size, 5, alpha=1.5, beta=0.0)
    runs = []
    for _ in range(3):
        inputs["C"].fill(cupy.nan)
        runnable(inputs)
        runs.append(inputs["C"].copy())
    cupy.cuda.get_current_stream().synchronize()
    assert all(bool((run == runs[0]).all()) for run in runs[1:])
    _, arrivals = sgemm_project.serial_workspace(0, 0)  # this GPU's, as the launches left it
    assert int(arrivals.max()) == 0


@pytest.mark.parametrize("shape", [(17, 33, 65), (1000, 1030, 999), (129, 260, 64)])
@pytest.mark.parametrize("name", variant_names())
def test_edge_tiles_write_nothing_past_c(name: str, shape) -> None:
    """C sits at the start of a larger buffer: the sentinel after it must survive the launch."""
    import cupy

    m, n, _ = shape
    inputs = sgemm_project.make_inputs(SGEMM.size(shape), 11, alpha=1.0, beta=0.0)
    buffer = cupy.full(m * n + 64 * 1024, 7.0, dtype=cupy.float32)
    c = inputs["C"] = buffer[: m * n].reshape(m, n)
    _runnable(name, shape)(inputs)
    cupy.cuda.get_current_stream().synchronize()
    assert bool((buffer[m * n :] == 7.0).all()), f"{name} wrote past the end of C"
    assert bool(cupy.isfinite(c).all())


def test_kernel_attributes_describe_the_launch() -> None:
    size = SGEMM.parse_size("4096")
    kernel = _runnable("async_copy", size)
    assert kernel.kernel_name == "sgemm_async_copy"
    assert kernel.defines["VEC"] == 1
    launch = SGEMM.variant("async_copy").launch(size, kernel.params,
                                                sgemm_project.make_inputs(size, 1))
    assert launch.block[0] == sgemm_project.threads_per_block("async_copy", kernel.params)
    assert launch.grid[0] == (4096 // kernel.params["BM"]) * (4096 // kernel.params["BN"])
    assert launch.shared_mem > 48 * 1024  # the opt-in path is exercised
    assert kernel.spill_bytes == 0 and 128 < kernel.registers <= 255
    odd = _runnable("async_copy", SGEMM.parse_size("1000x1030x999"))
    assert odd.defines["VEC"] == 0


def test_build_refuses_bad_params_before_compiling() -> None:
    with pytest.raises(NcuhError, match="not 32"):
        _runnable("warptiled", (256, 256, 256), {"WM": 64, "WN": 64})
    with pytest.raises(UnsupportedShapeError):
        _runnable("naive", (2**31, 4, 4))


def test_misaligned_operand_is_refused_on_the_vector_path() -> None:
    import cupy

    kernel = _runnable("vectorized", (64, 64, 64))
    a = cupy.ones(64 * 64 + 1, dtype=cupy.float32)[1:].reshape(64, 64)
    b = cupy.ones((64, 64), dtype=cupy.float32)
    c = cupy.zeros((64, 64), dtype=cupy.float32)
    with pytest.raises(ValueError, match="16-byte"):
        kernel({"A": a, "B": b, "C": c, "alpha": 1.0, "beta": 0.0})
