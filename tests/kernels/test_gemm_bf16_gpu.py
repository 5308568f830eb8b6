"""The BF16 GEMM chain on a real GPU (skipped cleanly without one).

Every variant and cuBLAS, at 256, 1024 and 4096 cubed and two non-square whole-tile shapes
(whole tiles of the variant's own: the WGMMA kernels' are 128x256x64, a cluster's two of them
one under the other), starts from a NaN-filled
C and must match the float64 product of the same bf16 values within the project's tolerance,
with no NaN left; the persistent kernels also at sizes with fewer tiles than SMs and with
several tiles per block. The kernels compile without spills; the multistage and WGMMA kernels
opt into more than 48 KiB of shared memory, and the WGMMA kernel's tensor maps are made once
per array; the persistent kernels run a block per SM, in whole clusters. The fastest variant's
time at 4096 is printed beside cuBLAS's, not held to a window.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from harness.errors import UnsupportedShapeError
from harness.project import load_project

GEMM = load_project(Path(__file__).resolve().parents[2] / "kernels" / "gemm_bf16" / "ncuh.toml")
import gemm_bf16_project  # noqa: E402  (on sys.path once the project is loaded)

pytestmark = pytest.mark.gpu

CUBES = [(256, 256, 256), (1024, 1024, 1024), (4096, 4096, 4096)]
SHAPES = [*CUBES,
          (384, 640, 2048),  # non-square, long K
          (1024, 128, 32)]  # one column of tiles, one k tile
WGMMA_SHAPES = [*CUBES,
                (384, 768, 2048),  # non-square, long K: 3 x 3 tiles of 128x256
                (1024, 256, 64)]  # one column of tiles, one k tile (fewer than the stages)
CLUSTER_SHAPES = [*CUBES,
                  (512, 768, 2048),  # non-square, long K: 2 x 3 cluster tiles of 256x256
                  (256, 256, 64),  # one cluster, one k tile
                  (2048, 6144, 128)]  # 192 tiles of 128x256: more than one per SM for some
SHAPES_OF = {"wgmma_tma": WGMMA_SHAPES,
             "ws": [*WGMMA_SHAPES, (2048, 6144, 128)],
             "cluster": CLUSTER_SHAPES, "autotuned": CLUSTER_SHAPES}
CASES = [(name, shape) for name in [*GEMM.names, GEMM.reference.key]
         for shape in SHAPES_OF.get(name, SHAPES)]


def _runnable(name: str, shape):
    from harness.gpu.backend import prepare, prepare_call

    size = GEMM.size(shape)
    if name == GEMM.reference.key:
        return prepare_call(name, GEMM.reference.call, size)
    return prepare(GEMM, name, size, None)


def verify(name: str, shape, seed: int) -> tuple[float, int]:
    """(relative Frobenius error, NaN/inf count) of one launch on fresh inputs."""
    import cupy

    from harness.gpu.verify import check_outputs

    size = GEMM.size(shape)
    runnable = _runnable(name, shape)
    inputs = gemm_bf16_project.make_inputs(size, seed)
    inputs["C"].fill(cupy.nan)
    truth = gemm_bf16_project.expected(inputs, size)
    runnable(inputs)
    cupy.cuda.get_current_stream().synchronize()
    error, _, nonfinite, _ = check_outputs(GEMM, inputs, truth, size)
    return error, nonfinite


@pytest.mark.parametrize(("name", "shape"), CASES,
                         ids=[f"{name}-{'x'.join(map(str, shape))}" for name, shape in CASES])
def test_variant_matches_float64_product_of_the_bf16_inputs(name: str, shape) -> None:
    error, nonfinite = verify(name, shape, seed=zlib.crc32(f"{name}{shape}".encode()))
    print(f"{name} {'x'.join(map(str, shape))}: relative error {error:.3g}")
    assert nonfinite == 0, f"{name} left {nonfinite} NaN/inf elements"
    assert error < GEMM.tolerance_at(GEMM.size(shape)), f"{name} {shape}: {error:.3g}"
    assert error > 0.0  # float32 accumulation of 4096-term sums is not exact


@pytest.mark.parametrize("name", GEMM.names)
def test_kernels_compile_without_spills(name: str) -> None:
    kernel = _runnable(name, (4096, 4096, 4096))
    assert kernel.spill_bytes == 0, f"{name} spills {kernel.spill_bytes} bytes"
    assert kernel.registers is not None and 64 <= kernel.registers <= 255


def test_multistage_opts_into_more_than_48_kib() -> None:
    size = GEMM.parse_size("4096")
    params = dict(GEMM.variant("multistage").params)
    launch = GEMM.variant("multistage").launch(size, params,
                                               gemm_bf16_project.make_inputs(size, 1))
    assert launch.shared_mem == params["STAGES"] * 16 * 1024 > 48 * 1024
    error, nonfinite = verify("multistage", (4096, 4096, 4096), seed=5)
    assert nonfinite == 0 and error < 1e-4


def test_wgmma_opts_into_193_kib_and_encodes_each_tensor_map_once() -> None:
    size = GEMM.parse_size("4096")
    params = dict(GEMM.variant("wgmma_tma").params)
    inputs = gemm_bf16_project.make_inputs(size, 1)
    first = GEMM.variant("wgmma_tma").launch(size, params, inputs)
    again = GEMM.variant("wgmma_tma").launch(size, params, inputs)
    assert first.shared_mem == 4 * 48 * 1024 + 1024
    assert first.args[3] is again.args[3] and first.args[4] is again.args[4]
    assert first.args[3].nbytes == 128 and first.args[3].tobytes() != first.args[4].tobytes()
    error, nonfinite = verify("wgmma_tma", (4096, 4096, 4096), seed=6)
    assert nonfinite == 0 and error < 1e-4


def test_a_partial_tile_is_refused_before_compiling() -> None:
    with pytest.raises(UnsupportedShapeError, match="not a multiple of"):
        _runnable("multistage", (4096, 4096, 4096 + 16))
    with pytest.raises(UnsupportedShapeError, match="M=384 is not a multiple of BM=128 times "
                                                    "CLUSTER_M=2"):
        _runnable("cluster", (384, 768, 2048))


def test_the_persistent_kernels_run_a_block_per_sm_in_whole_clusters() -> None:
    size = GEMM.parse_size("4096")
    inputs = gemm_bf16_project.make_inputs(size, 1)
    sms = gemm_bf16_project.sm_count()
    for name, cluster in (("ws", 1), ("cluster", 2)):
        params = dict(GEMM.variant(name).params)
        launch = GEMM.variant(name).launch(size, params, inputs)
        assert launch.grid == (sms // cluster * cluster, 1, 1), name
        assert launch.block == (384, 1, 1) and launch.shared_mem == 4 * 48 * 1024 + 1024


def test_best_variant_against_cublas_at_4096() -> None:
    """Reported, not asserted as a window: the times of each variant and cuBLAS."""
    from harness.gpu.timing import time_launches

    size = GEMM.parse_size("4096")
    inputs = gemm_bf16_project.make_inputs(size, 2)
    flops = GEMM.flops(size)
    medians = {}
    for name in [*GEMM.names, GEMM.reference.key]:
        runnable = _runnable(name, (4096, 4096, 4096))
        measured = time_launches(lambda runnable=runnable: runnable(inputs), repeats=20,
                                 label=name)
        medians[name] = measured.median
    reference = medians.pop(GEMM.reference.key)
    best = min(medians, key=medians.get)
    for name, ms in [*medians.items(), ("cuBLAS", reference)]:
        print(f"4096^3 {name}: {ms:.3f} ms, {flops / ms / 1e9:.1f} TFLOP/s, "
              f"{reference / ms:.2f}x cuBLAS")
    print(f"best: {best} at {reference / medians[best]:.2f}x cuBLAS")
    assert all(ms > 0 for ms in medians.values()) and reference > 0
