"""The BF16 GEMM chain's project file, read through the public project API (no GPU).

It loads; the seven iterations come in chain order with cuBLAS as the reference; work and
traffic are the formulas of the README; every Strategy is there in the seed pages' voice; the
bf16 rounding is round-to-nearest-even and the truth is the float64 product of the rounded
values; the constraints refuse partial tiles and impossible configurations at their edges; the
launch geometry is one block per tile; and a host model of the `mma.sync` kernels' indexing
(the swizzle, `ldmatrix`, the PTX fragment layouts, the epilogue) computes A @ B exactly, with
the swizzle free of bank conflicts where padding-free rows would have them; and a host model
of the WGMMA kernel (TMA's 128-byte swizzle, the matrix descriptors as wgmma decodes them, the
accumulator layout, the epilogue) computes A @ B exactly too; the persistent kernels' walk
over the tiles writes every tile once, a cluster's producers multicast every block of B once,
and the shipped H200 winners hold for the source they were timed with.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy
import pytest

from harness.project import load_project

FOLDER = Path(__file__).resolve().parents[2] / "kernels" / "gemm_bf16"
CHAIN = ["wmma", "mma_ldmatrix", "multistage", "wgmma_tma", "ws", "cluster", "autotuned"]
MMA_SYNC = CHAIN[:3]  # the iterations built on mma.sync (wmma's included): 32-deep k tiles


@pytest.fixture(scope="module")
def project():
    return load_project(FOLDER / "ncuh.toml")


@pytest.fixture
def module(project, monkeypatch):
    """The project's Python module with NumPy standing in for CuPy."""
    monkeypatch.setitem(sys.modules, "cupy", numpy)
    return sys.modules["gemm_bf16_project"]


def test_project_loads_with_cublas_reference(project):
    assert project.name == "gemm_bf16"
    assert project.dims == ("M", "N", "K")
    assert project.outputs == ("C",) and project.poison == ("C",)
    assert project.compare == "relative_frobenius"
    assert project.reference is not None and project.reference.name == "cuBLAS"
    assert "cublasGemmEx" in project.reference.strategy


def test_seven_variants_in_chain_order(project):
    assert project.names == CHAIN
    assert [variant.previous for variant in project.variants] == [None, *CHAIN[:-1]]


def test_sizes_work_and_traffic(project):
    assert [size.M for size in project.default_sizes] == [256, 1024, 2048, 4096]
    size = project.parse_size("4096")
    assert tuple(size) == (4096, 4096, 4096)
    assert project.flops(size) == 2 * 4096**3
    assert project.bytes(size) == 2 * 2 * 4096**2 + 4 * 4096**2  # bf16 A, B read; f32 C written


def test_every_strategy_is_written_in_the_seed_voice(project):
    for index, variant in enumerate(project.variants):
        text = variant.strategy
        assert len(text) > 800, variant.name
        if index > 0:
            assert text.startswith("Last time"), variant.name
            assert "In this iteration" in text, variant.name
        assert re.search(r"What (should move|to expect)", text), variant.name


def test_each_kernel_is_defined_in_its_source(project):
    for variant in project.variants:
        source = (FOLDER / variant.source).read_text()
        pattern = (r'extern "C" __global__ void (__cluster_dims__\(CLUSTER_M, 1, 1\) )?'
                   rf'__launch_bounds__\(THREADS(, 1)?\)\s+{variant.kernel}\(')
        assert re.search(pattern, source), variant.name


def test_each_iteration_uses_the_instructions_its_strategy_names(project):
    sources = {v.name: (FOLDER / v.source).read_text() for v in project.variants}
    hopper = (FOLDER / "hopper.cuh").read_text()
    common = (FOLDER / "common.cuh").read_text()
    assert "wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32" in sources["wmma"]
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in common
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in common
    for name in ("mma_ldmatrix", "multistage"):
        assert "warp_tile_mma(" in sources[name]
    assert "cp.async" not in sources["mma_ldmatrix"]
    assert "cp.async.cg.shared.global" in sources["multistage"]
    wgmma = sources["wgmma_tma"] + hopper
    for instruction in ("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
                        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx"
                        "::bytes", "mbarrier.init.shared::cta.b64",
                        "mbarrier.arrive.expect_tx.shared::cta.b64",
                        "mbarrier.try_wait.parity.shared::cta.b64", "wgmma.fence.sync.aligned",
                        "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned",
                        "const __grid_constant__ TensorMap a_map"):
        assert instruction in wgmma, instruction
    for earlier in ("ldmatrix.sync", "mma.sync.aligned.m16n8k16", "cp.async.cg", "common.cuh"):
        assert earlier not in wgmma, earlier
    # warp specialization: the roles' registers, and no role both loads and computes
    for name in ("ws", "cluster"):
        assert '#include "hopper.cuh"\n#include "specialized.cuh"' in sources[name], name
        for instruction in ("setmaxnreg.dec.sync.aligned.u32", "setmaxnreg.inc.sync.aligned.u32",
                            "__launch_bounds__(THREADS, 1)"):
            assert instruction in sources[name], (name, instruction)
    # clusters: multicast copies, remote arrivals, the cluster barrier at both ends
    for instruction in (".multicast::cluster", "mapa.shared::cluster.u32",
                        "mbarrier.arrive.shared::cluster.b64",
                        "barrier.cluster.arrive.release", "barrier.cluster.wait.acquire",
                        "%%cluster_ctarank", "__cluster_dims__(CLUSTER_M, 1, 1)"):
        assert instruction in sources["cluster"], instruction
    assert sources["cluster"].count("cluster_sync();") == 1  # at the start; the tail, at the end
    assert ".release.cluster.shared::cluster" not in sources["cluster"]  # no fence per stage
    assert "multicast" not in sources["ws"] + hopper


def test_only_the_wgmma_iteration_names_its_own_target(project):
    assert {v.name: v.arch for v in project.variants} == {
        "wmma": None, "mma_ldmatrix": None, "multistage": None, "wgmma_tma": "sm_90a",
        "ws": "sm_90a", "cluster": "sm_90a", "autotuned": "sm_90a"}


def test_tolerance_is_fixed(project):
    assert project.tolerance_at(project.parse_size("256")) == 1e-4
    assert project.tolerance_at(project.parse_size("4096")) == 1e-4


# ---- bf16 inputs and the truth ------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "bits"),
    [
        (1.0, 0x3F80),
        (-2.5, 0xC020),
        (1.0 + 2.0**-8, 0x3F80),  # halfway between 0x3F80 and 0x3F81: to the even one
        (1.0 + 2.0**-8 + 2.0**-20, 0x3F81),  # just past halfway: up
        (1.0 + 3 * 2.0**-8, 0x3F82),  # halfway between 0x3F81 and 0x3F82: to the even one
        (1.0 + 3 * 2.0**-8 - 2.0**-20, 0x3F81),  # just short of halfway: down
        (3.0e38, 0x7F62),
        (0.0, 0x0000),
    ],
)
def test_rounding_to_bf16_is_nearest_even(module, value, bits):
    got = module.to_bf16_bits(numpy.array([value], dtype=numpy.float32))
    assert got.dtype == numpy.uint16 and int(got[0]) == bits


def test_bf16_values_come_back_exactly(module):
    bits = numpy.arange(0, 2**16, dtype=numpy.uint16)
    finite = bits[(bits & 0x7F80) != 0x7F80]  # no inf, no NaN
    values = module.from_bf16_bits(finite)
    assert values.dtype == numpy.float64
    assert numpy.array_equal(module.to_bf16_bits(values.astype(numpy.float32)), finite)


def test_inputs_and_truth(project, module):
    size = project.parse_size("128x256x64")
    inputs = module.make_inputs(size, 7)
    assert inputs["A"].shape == (128, 64) and inputs["A"].dtype == numpy.uint16
    assert inputs["B"].shape == (64, 256) and inputs["B"].dtype == numpy.uint16
    assert inputs["C"].shape == (128, 256) and inputs["C"].dtype == numpy.float32
    again = module.make_inputs(size, 7)
    assert numpy.array_equal(inputs["A"], again["A"]) and numpy.array_equal(inputs["B"], again["B"])
    truth = module.expected(inputs, size)["C"]
    a = module.from_bf16_bits(inputs["A"])
    b = module.from_bf16_bits(inputs["B"])
    assert truth.dtype == numpy.float64
    assert numpy.array_equal(truth, a @ b)
    assert 0.5 < numpy.std(a) < 1.5 and numpy.count_nonzero(a) == a.size  # normal samples


# ---- constraints and launch geometry ------------------------------------------------------

@pytest.mark.parametrize("name", MMA_SYNC)
@pytest.mark.parametrize(
    ("shape", "problems"),
    [
        ("128", 0),
        ("4096", 0),
        ("128x128x32", 0),  # one k tile
        ("96x128x32", 1),  # M not a multiple of BM
        ("128x192x32", 1),  # N not a multiple of BN
        ("128x128x48", 1),  # K not a multiple of BK
        ("100x100x100", 3),
    ],
)
def test_sizes_must_be_whole_tiles(project, name, shape, problems):
    variant = project.variant(name)
    found = variant.constraints(project.parse_size(shape), dict(variant.params))
    assert len(found) == problems, found
    assert all("not a multiple of" in line and "no partial tiles" in line for line in found)


@pytest.mark.parametrize(
    ("shape", "problems"),
    [
        ("256", 0),
        ("4096", 0),
        ("128x256x64", 0),  # one tile, one k step
        ("64x256x64", 1),  # M not a multiple of BM=128
        ("128x128x64", 1),  # N not a multiple of BN=256
        ("128x256x32", 1),  # K not a multiple of BK=64
        ("100x100x100", 3),
    ],
)
def test_wgmma_sizes_must_be_whole_tiles(project, shape, problems):
    variant = project.variant("wgmma_tma")
    found = variant.constraints(project.parse_size(shape), dict(variant.params))
    assert len(found) == problems, found
    assert all("not a multiple of" in line and "no partial tiles" in line for line in found)


@pytest.mark.parametrize(
    ("name", "shape", "problems"),
    [
        ("ws", "128x256x64", 0),
        ("ws", "384x768x2048", 0),
        ("ws", "64x256x64", 1),
        ("cluster", "256x256x64", 0),  # one cluster of two tiles
        ("cluster", "128x256x64", 1),  # one tile: half a cluster
        ("cluster", "384x768x2048", 1),
        ("cluster", "512x768x2048", 0),
        ("cluster", "100x100x100", 3),
    ],
)
def test_specialized_sizes_must_be_whole_cluster_tiles(project, name, shape, problems):
    variant = project.variant(name)
    found = variant.constraints(project.parse_size(shape), dict(variant.params))
    assert len(found) == problems, found
    assert all("not a multiple of" in line and "no partial tiles" in line for line in found)
    if name == "cluster" and problems:
        assert "BM=128 times CLUSTER_M=2" in found[0]


def test_a_partial_tile_is_an_unsupported_size_not_a_bad_parameter(project):
    """What bench and profile act on: the size is refused with its reason, before any GPU."""
    from harness.errors import UnsupportedShapeError

    size = project.parse_size("4096x4096x4112")
    with pytest.raises(UnsupportedShapeError,
                       match=r"multistage 4096x4096x4112: K=4112 is not a multiple of BK=32"):
        project.check_params("multistage", None, size)
    assert project.check_params("multistage", None, project.parse_size("4096x4096x4128"))

@pytest.mark.parametrize(
    ("name", "change", "problems"),
    [
        ("multistage", {}, 0),
        ("multistage", {"STAGES": 2}, 0),
        ("multistage", {"STAGES": 1}, 1),
        ("multistage", {"STAGES": 14}, 0),  # 14 stages of 16 KiB fit under 227 KiB
        ("multistage", {"STAGES": 15}, 1),
        ("mma_ldmatrix", {"BK": 64}, 1),  # the A swizzle is written for 64-byte rows
        ("mma_ldmatrix", {"BN": 96, "WN": 32}, 1),  # rows of B swizzle 8 chunks
        ("mma_ldmatrix", {"BN": 64, "WN": 32}, 0),
        ("wmma", {"BK": 64}, 0),
        ("wmma", {"WM": 24}, 2),  # not a multiple of 16, does not divide BM
        ("wmma", {"BM": 256, "BN": 256, "WM": 32, "WN": 32}, 1),  # 2048 threads
        ("wmma", {"BM": 128, "BN": 256, "BK": 64}, 1),  # 55 KiB of static shared memory
        ("wmma", {"BK": 48}, 0),  # 27 KiB
        ("wmma", {"BK": 96}, 1),  # 52 KiB
        ("mma_ldmatrix", {"WM": 32}, 0),  # 512 threads, one 16-byte piece of each tile
        ("mma_ldmatrix", {"WM": 32, "WN": 16}, 2),  # 1024 threads, 512 pieces of A and of B
        ("wgmma_tma", {}, 0),  # 4 stages of 48 KiB and 1 KiB of slack: 193 KiB
        ("wgmma_tma", {"BN": 128}, 0),
        ("wgmma_tma", {"BN": 384}, 1),  # 192 accumulators a thread
        ("wgmma_tma", {"BN": 192}, 1),  # not whole m64n128k16 steps
        ("wgmma_tma", {"BM": 64}, 0),  # one warpgroup
        ("wgmma_tma", {"BM": 256, "BN": 128, "STAGES": 3}, 0),  # four warpgroups, 145 KiB
        ("wgmma_tma", {"BM": 320}, 1),  # past a TMA box of 256 rows
        ("wgmma_tma", {"BM": 96}, 1),  # not a whole warpgroup
        ("wgmma_tma", {"BK": 32}, 1),  # a row of A must fill the 128-byte swizzle
        ("wgmma_tma", {"STAGES": 1}, 1),
        ("wgmma_tma", {"STAGES": 2, "BM": 256}, 0),  # 2 x 64 KiB + 1 KiB
        ("wgmma_tma", {"STAGES": 5}, 1),  # 241 KiB
        ("wgmma_tma", {"STAGES": 7, "BN": 128}, 0),  # 7 x 32 KiB + 1 KiB = 225 KiB
        ("wgmma_tma", {"STAGES": 8, "BN": 128}, 1),  # 257 KiB
        ("ws", {}, 0),  # a producer and two consumer warpgroups, 193 KiB
        ("ws", {"BM": 64}, 0),  # one consumer
        ("ws", {"BM": 192, "BN": 128}, 1),  # a third consumer: too few registers each
        ("ws", {"GROUP": 0}, 1),
        ("ws", {"GROUP": 1}, 0),
        ("ws", {"STAGES": 5}, 1),  # 241 KiB
        ("ws", {"STAGES": 7, "BN": 128}, 0),
        ("cluster", {}, 0),
        ("cluster", {"CLUSTER_M": 1}, 0),  # iteration 5's kernel: no multicast
        ("cluster", {"CLUSTER_M": 4}, 0),  # each block multicasts one 64-column block of B
        ("cluster", {"CLUSTER_M": 3}, 1),
        ("cluster", {"CLUSTER_M": 4, "BN": 128}, 1),  # two 64-column blocks for four blocks
        ("cluster", {"CLUSTER_M": 2, "BN": 128}, 0),
        ("cluster", {"BM": 256}, 1),
        ("autotuned", {"STAGES": 6, "BN": 128, "CLUSTER_M": 1, "GROUP": 16}, 0),
    ],
)
def test_constraints_at_their_edges(project, name, change, problems):
    variant = project.variant(name)
    found = variant.constraints(None, {**variant.params, **change})  # the tiles alone
    assert len(found) == problems, found


def test_a_missing_parameter_is_named(project):
    variant = project.variant("multistage")
    params = {key: value for key, value in variant.params.items() if key != "STAGES"}
    assert variant.constraints(None, params) == ["missing parameter 'STAGES'"]


@pytest.mark.parametrize(("name", "shared"), [("wmma", 0), ("mma_ldmatrix", 0),
                                              ("multistage", 65536)])
def test_launch_is_one_block_per_tile(project, module, name, shared):
    variant = project.variant(name)
    size = project.parse_size("512x1024x256")
    inputs = module.make_inputs(size, 1)
    launch = variant.launch(size, dict(variant.params), inputs)
    assert launch.grid == (8, 4, 1) and launch.block == (256, 1, 1)
    assert launch.shared_mem == shared
    assert [int(x) for x in launch.args[:3]] == [512, 1024, 256]
    assert launch.args[3] is inputs["A"] and launch.args[5] is inputs["C"]


def test_wgmma_launch_passes_tensor_maps_of_one_stage_s_boxes(project, module, monkeypatch):
    """Two warpgroups per block, a block per 128x256 tile of C, 4 stages of 48 KiB and the
    1 KiB that aligns them; A and B go as tensor maps of a 128x64 box of A and a 64x64 box
    of B (64 bf16: one 128-byte swizzled row)."""
    boxes = []

    def fake_map(array, box_rows, box_cols):
        boxes.append((array, box_rows, box_cols))
        return f"map{len(boxes)}"

    monkeypatch.setattr(module, "tensor_map", fake_map)
    variant = project.variant("wgmma_tma")
    size = project.parse_size("512x1024x256")
    inputs = module.make_inputs(size, 1)
    launch = variant.launch(size, dict(variant.params), inputs)
    assert launch.grid == (4, 4, 1) and launch.block == (256, 1, 1)
    assert launch.shared_mem == 4 * (128 * 64 + 64 * 256) * 2 + 1024 == 197632
    assert [int(x) for x in launch.args[:3]] == [512, 1024, 256]
    assert launch.args[3:] == ("map1", "map2", inputs["C"])
    assert boxes == [(inputs["A"], 128, 64), (inputs["B"], 64, 64)]


@pytest.mark.parametrize(("name", "shape", "sms", "grid"), [
    ("ws", "4096", 132, 132),  # 512 tiles: a block per SM
    ("ws", "512x1024x256", 132, 16),  # 16 tiles: a block per tile
    ("cluster", "4096", 132, 132),  # 256 cluster tiles: 66 clusters of 2
    ("cluster", "4096", 131, 130),  # whole clusters only
    ("cluster", "512x1024x256", 132, 16),  # 8 cluster tiles
])
def test_the_persistent_grid_is_a_block_per_sm_in_whole_clusters(project, module, monkeypatch,
                                                                  name, shape, sms, grid):
    monkeypatch.setattr(module, "tensor_map", lambda array, rows, cols: (rows, cols))
    monkeypatch.setattr(module, "sm_count", lambda: sms)
    variant = project.variant(name)
    size = project.parse_size(shape)
    launch = variant.launch(size, dict(variant.params), module.make_inputs(size, 1))
    assert launch.grid == (grid, 1, 1) and launch.block == (384, 1, 1)
    assert launch.shared_mem == 197632
    assert launch.args[3:5] == ((128, 64), (64, 64))


def tile_origin(tile: int, tiles_m: int, tiles_n: int, rows: int, p: dict[str, int]):
    """specialized.cuh's tile_origin."""
    per_group = p["GROUP"] * tiles_n
    first = tile // per_group * p["GROUP"]
    group_rows = min(p["GROUP"], tiles_m - first)
    in_group = tile % per_group
    return (first + in_group % group_rows) * rows, in_group // group_rows * p["BN"]


@pytest.mark.parametrize("cluster", [1, 2, 4])
@pytest.mark.parametrize(("m", "n", "group", "blocks"), [
    (4096, 4096, 8, 132), (8192, 8192, 16, 132), (2048, 6144, 8, 132), (3072, 512, 8, 4),
    (1024, 256, 8, 132)])
def test_the_persistent_blocks_write_every_tile_of_c_once(m, n, group, blocks, cluster):
    """The kernels' walk (cluster.cu's; ws.cu's is CLUSTER_M = 1): block b of the grid takes
    cluster tiles b / CLUSTER_M, + clusters, ... and its rank's BM rows of each, also where the
    tile rows are not a multiple of GROUP."""
    p = {"BM": 128, "BN": 256, "GROUP": group}
    rows = p["BM"] * cluster
    if m % rows:
        pytest.skip("not whole cluster tiles")
    tiles_m, tiles_n = m // rows, n // p["BN"]
    clusters = min(tiles_m * tiles_n, blocks // cluster)
    written = numpy.zeros((m // p["BM"], tiles_n), dtype=int)
    for block in range(clusters * cluster):
        for tile in range(block // cluster, tiles_m * tiles_n, clusters):
            row, col = tile_origin(tile, tiles_m, tiles_n, rows, p)
            written[(row + block % cluster * p["BM"]) // p["BM"], col // p["BN"]] += 1
    assert (written == 1).all()


@pytest.mark.parametrize(("bn", "cluster"), [(256, 1), (256, 2), (256, 4), (128, 2)])
def test_the_blocks_of_a_cluster_multicast_each_64_column_block_of_b_once(bn, cluster):
    """cluster.cu's load_cluster_stage: rank r copies the blocks r, r + CLUSTER_M, ... of the
    B tile into every block, so each block receives the whole stage: its expect_tx."""
    shares = [list(range(rank, bn // 64, cluster)) for rank in range(cluster)]
    assert sorted(block for share in shares for block in share) == list(range(bn // 64))
    assert len({len(share) for share in shares}) == 1  # an even share for every producer


def test_static_shared_memory_is_what_ptxas_reports(module):
    # ptxas -v on the default tiles: 18944 bytes (wmma, padded rows), 16384 (mma, swizzled)
    params = {"BM": 128, "BN": 128, "BK": 32, "WM": 64, "WN": 32}
    assert module.shared_mem_bytes("wmma", params) == 18944
    assert module.shared_mem_bytes("mma", params) == 16384


def test_launch_refuses_float32_inputs(project, module):
    variant = project.variant("mma_ldmatrix")
    size = project.parse_size("128")
    inputs = module.make_inputs(size, 1)
    inputs["A"] = inputs["A"].astype(numpy.float32)
    with pytest.raises(ValueError, match="A must be a C-contiguous uint16"):
        variant.launch(size, dict(variant.params), inputs)


# ---- a host model of the mma.sync kernels (common.cuh) ------------------------------------
# Shared memory is modelled in 16-byte chunks of 8 bf16; a 128-byte line holds 8 chunks, so
# chunk address % 8 is the group of 4 banks a 16-byte access lands in. The fragment layouts
# are those of the PTX manual (ldmatrix, mma.m16n8k16 with .bf16 operands).

CHUNK = 8
LANES = numpy.arange(32)


def swizzle(row_chunks: int, row, chunk):
    """common.cuh's swizzle<ROW_CHUNKS>(row, chunk)."""
    if row_chunks == 4:
        return row * 4 + (chunk ^ ((row >> 1) & 3))
    return row * row_chunks + (chunk ^ (row & 7))


def plain(row_chunks: int, row, chunk):
    """The same tile without a swizzle or padding: what the swizzle is measured against."""
    return row * row_chunks + chunk


def ldmatrix_x4(smem: numpy.ndarray, addresses: numpy.ndarray, trans: bool) -> numpy.ndarray:
    """Each lane's four registers as (32, 4, 2) bf16 pairs: lane i gives row i % 8 of matrix
    i // 8; lane t receives row t // 4, columns 2(t % 4) and 2(t % 4) + 1 of each matrix, or
    with .trans rows 2(t % 4) and 2(t % 4) + 1 of column t // 4."""
    matrices = smem[addresses].reshape(4, 8, 8)
    group, pair = LANES // 4, 2 * (LANES % 4)
    if trans:
        first, second = matrices[:, pair, group], matrices[:, pair + 1, group]
    else:
        first, second = matrices[:, group, pair], matrices[:, group, pair + 1]
    return numpy.stack([first.T, second.T], axis=-1)


def mma_16816(acc: numpy.ndarray, a: numpy.ndarray, b0: numpy.ndarray, b1: numpy.ndarray):
    """acc (32, 4) += the 16x8 product of the fragments a (32, 4, 2) and b0, b1 (32, 2)."""
    g, c = LANES // 4, 2 * (LANES % 4)
    a16 = numpy.zeros((16, 16))
    for register, (row, col) in enumerate(((g, c), (g + 8, c), (g, c + 8), (g + 8, c + 8))):
        a16[row, col], a16[row, col + 1] = a[:, register, 0], a[:, register, 1]
    b16 = numpy.zeros((16, 8))
    for register, k in ((b0, c), (b1, c + 8)):
        b16[k, g], b16[k + 1, g] = register[:, 0], register[:, 1]
    d = a16 @ b16
    acc += numpy.stack([d[g, c], d[g, c + 1], d[g + 8, c], d[g + 8, c + 1]], axis=1)


def run_block_model(a, b, c, p, block_row, block_col, layout=swizzle):
    """One block of gemm_bf16_mma (the multistage kernel computes each stage the same way)."""
    threads = (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32
    a_chunks, b_chunks = p["BK"] // CHUNK, p["BN"] // CHUNK
    warps_n = p["BN"] // p["WN"]
    acc = numpy.zeros((threads // 32, p["WM"] // 16, p["WN"] // 8, 32, 4))
    for k0 in range(0, a.shape[1], p["BK"]):
        a_tile = numpy.full((p["BM"] * a_chunks, CHUNK), numpy.nan)
        b_tile = numpy.full((p["BK"] * b_chunks, CHUNK), numpy.nan)
        for piece in range(p["BM"] * a_chunks):
            row, chunk = divmod(piece, a_chunks)
            a_tile[layout(a_chunks, row, chunk)] = a[block_row + row,
                                                     k0 + chunk * CHUNK:k0 + (chunk + 1) * CHUNK]
        for piece in range(p["BK"] * b_chunks):
            row, chunk = divmod(piece, b_chunks)
            b_tile[layout(b_chunks, row, chunk)] = b[k0 + row, block_col + chunk * CHUNK:
                                                     block_col + (chunk + 1) * CHUNK]
        for warp in range(threads // 32):
            warp_m, warp_n = divmod(warp, warps_n)
            for kk in range(p["BK"] // 16):
                frag_a = [ldmatrix_x4(a_tile, layout(a_chunks, warp_m * p["WM"] + i * 16
                                                     + (LANES & 15), kk * 2 + (LANES >> 4)),
                                      trans=False) for i in range(p["WM"] // 16)]
                frag_b = [ldmatrix_x4(b_tile, layout(b_chunks, kk * 16 + (LANES & 15),
                                                     (warp_n * p["WN"] + j * 16) // CHUNK
                                                     + (LANES >> 4)), trans=True)
                          for j in range(p["WN"] // 16)]
                for i in range(p["WM"] // 16):
                    for j in range(p["WN"] // 8):
                        pair = frag_b[j // 2]
                        mma_16816(acc[warp, i, j], frag_a[i], pair[:, (j % 2) * 2],
                                  pair[:, (j % 2) * 2 + 1])
    for warp in range(threads // 32):
        warp_m, warp_n = divmod(warp, warps_n)
        for i in range(p["WM"] // 16):
            for j in range(p["WN"] // 8):
                row = block_row + warp_m * p["WM"] + i * 16 + LANES // 4
                col = block_col + warp_n * p["WN"] + j * 8 + 2 * (LANES % 4)
                values = acc[warp, i, j]
                for dr, first in ((0, 0), (8, 2)):
                    for dc in (0, 1):
                        assert numpy.isnan(c[row + dr, col + dc]).all(), "written twice"
                        c[row + dr, col + dc] = values[:, first + dc]


@pytest.mark.parametrize(
    "change",
    [{}, {"WM": 32}, {"BN": 64}, {"BM": 64, "BN": 256, "WM": 32, "WN": 64}],
    ids=["default", "16_warps", "bn64", "64x256"],
)
def test_mma_kernel_model_computes_a_times_b(project, change):
    params = {**project.variant("mma_ldmatrix").params, **change}
    assert project.variant("mma_ldmatrix").constraints(None, params) == []
    c, truth = model_product(run_block_model, params, k_tiles=2, seed=3)
    assert numpy.array_equal(c, truth)


def model_product(run_model, params: dict[str, int], k_tiles: int, seed: int):
    """(C from every block of a 2x2-tile problem through `run_model`, A @ B); A and B are
    small integers, so every sum is exact."""
    rng = numpy.random.default_rng(seed)
    m, n, k = 2 * params["BM"], 2 * params["BN"], k_tiles * params["BK"]
    a = rng.integers(-4, 5, (m, k)).astype(numpy.float64)
    b = rng.integers(-4, 5, (k, n)).astype(numpy.float64)
    c = numpy.full((m, n), numpy.nan)
    for block_row in range(0, m, params["BM"]):
        for block_col in range(0, n, params["BN"]):
            run_model(a, b, c, params, block_row, block_col)
    return c, a @ b


def test_the_model_catches_a_wrong_fragment_layout(project):
    """The same model with B's chunks stored unswizzled but read swizzled gives a wrong C."""
    params = dict(project.variant("mma_ldmatrix").params)
    rng = numpy.random.default_rng(4)
    a = rng.integers(-4, 5, (128, 32)).astype(numpy.float64)
    b = rng.integers(-4, 5, (32, 128)).astype(numpy.float64)

    def mixed(row_chunks, row, chunk):
        return (plain if row_chunks == 16 and numpy.isscalar(row) else swizzle)(
            row_chunks, row, chunk)

    c = numpy.full((128, 128), numpy.nan)
    run_block_model(a, b, c, params, 0, 0, layout=mixed)
    assert not numpy.array_equal(c, a @ b)


def _most_per_bank_group(addresses: numpy.ndarray) -> int:
    """The worst count of distinct chunks sharing a 4-bank group in one 8-lane phase."""
    worst = 1
    for phase in addresses.reshape(-1, 8):
        groups = numpy.unique(phase) % 8
        worst = max(worst, int(numpy.bincount(groups, minlength=8).max()))
    return worst


@pytest.mark.parametrize(("row_chunks", "plain_ways"), [(4, 4), (16, 8)])
def test_swizzle_makes_ldmatrix_and_stores_conflict_free(row_chunks, plain_ways):
    """A (4 chunks a row) and B (16): every ldmatrix phase (8 rows of one chunk) and every
    phase of the 16-byte stores (8 consecutive pieces) hits 8 distinct bank groups; unswizzled
    rows put the same ldmatrix phase in 2 (A: 4-way) or 1 (B: 8-way) groups."""
    rows = 32
    for row0 in range(0, rows, 8):
        for chunk in range(row_chunks):
            reads = numpy.arange(row0, row0 + 8)
            assert _most_per_bank_group(swizzle(row_chunks, reads, chunk)) == 1
            assert _most_per_bank_group(plain(row_chunks, reads, chunk)) == plain_ways
    pieces = numpy.arange(rows * row_chunks)
    stores = swizzle(row_chunks, pieces // row_chunks, pieces % row_chunks)
    assert _most_per_bank_group(stores) == 1
    assert sorted(stores) == list(pieces)  # a permutation: every chunk has its own place


# ---- a host model of the WGMMA kernel (wgmma_tma.cu) -------------------------------------
# Shared memory is modelled in bytes from a 1024-byte boundary (the kernel aligns to one), one
# bf16 per even offset. TMA writes a box with CU_TENSOR_MAP_SWIZZLE_128B; wgmma decodes its
# descriptors as the PTX manual's matrix-descriptor format and canonical layouts say, and
# applies the same swizzle to the addresses it computes.

ROW = 128  # bytes in a swizzled row
GROUP = 8 * ROW  # the swizzle's period


def swizzle_128b(offset):
    """The 128-byte swizzle of a byte offset: 16-byte chunk bits 4-6 XOR row bits 7-9."""
    return offset ^ (((offset >> 7) & 7) << 4)


def tma_write(smem: numpy.ndarray, start: int, box: numpy.ndarray) -> None:
    """A box of rows of 64 bf16 (128 bytes) into shared memory at `start`."""
    rows, cols = numpy.indices(box.shape)
    assert box.shape[1] == ROW // 2 and start % GROUP == 0
    smem[swizzle_128b(start + rows * ROW + cols * 2) // 2] = box


def descriptor(address: int, leading: int, stride: int) -> int:
    """wgmma_tma.cu's descriptor(): what the kernel encodes."""
    return ((address & 0x3FFFF) >> 4) | (leading >> 4) << 16 | (stride >> 4) << 32 | 1 << 62


def decode(desc: int) -> tuple[int, int, int]:
    """(start address, leading byte offset, stride byte offset) of a 128-byte-swizzle
    descriptor, as the hardware reads its bit fields."""
    assert desc >> 62 == 1, "layout type 1: 128-byte swizzle"
    field = lambda low: ((desc >> low) & 0x3FFF) << 4  # noqa: E731
    return field(0), field(16), field(32)


def wgmma_read_a(smem: numpy.ndarray, desc: int) -> numpy.ndarray:
    """The 64x16 A operand, K-major: 8-row groups `stride` apart, rows 128 bytes apart, k
    contiguous (the leading offset is unused with a swizzle)."""
    start, _, stride = decode(desc)
    m, k = numpy.indices((64, 16))
    return smem[swizzle_128b(start + (m // 8) * stride + (m % 8) * ROW + k * 2) // 2]


def wgmma_read_b(smem: numpy.ndarray, desc: int) -> numpy.ndarray:
    """The 16x128 B operand, N-major (imm-trans-b = 1): n contiguous within 64-column blocks
    `leading` apart, k rows 128 bytes apart within 8-row groups `stride` apart."""
    start, leading, stride = decode(desc)
    k, n = numpy.indices((16, 128))
    return smem[swizzle_128b(start + (n // 64) * leading + (k // 8) * stride + (k % 8) * ROW
                             + (n % 64) * 2) // 2]


def accumulator_registers(d: numpy.ndarray) -> numpy.ndarray:
    """The 64x128 result of a warpgroup as its (4 warps, 32 lanes, 64) registers: the PTX
    manual's m64nNk16 accumulator layout (register i of lane l in warp w is row 16w + l / 4
    + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (l % 4) + i % 2)."""
    warp, lane, i = numpy.indices((4, 32, 64))
    return d[16 * warp + lane // 4 + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * (lane % 4) + i % 2]


def run_wgmma_block_model(a, b, c, p, block_row, block_col, leading_b=None):
    """One block of gemm_bf16_wgmma_tma: each k tile through its stage, the kernel's
    descriptors, the epilogue's stores."""
    stage_bytes = (p["BM"] * p["BK"] + p["BK"] * p["BN"]) * 2
    a_bytes, block_bytes = p["BM"] * p["BK"] * 2, p["BK"] * ROW
    smem = numpy.full(p["STAGES"] * stage_bytes // 2, numpy.nan)
    warpgroups, halves = p["BM"] // 64, p["BN"] // 128
    acc = numpy.zeros((warpgroups, halves, 4, 32, 64))
    for t, k0 in enumerate(range(0, a.shape[1], p["BK"])):
        stage = (t % p["STAGES"]) * stage_bytes
        tma_write(smem, stage, a[block_row:block_row + p["BM"], k0:k0 + p["BK"]])
        for j in range(p["BN"] // 64):
            tma_write(smem, stage + a_bytes + j * block_bytes,
                      b[k0:k0 + p["BK"], block_col + j * 64:block_col + (j + 1) * 64])
        for wg in range(warpgroups):
            a_start = stage + wg * 64 * ROW
            for kk in range(p["BK"] // 16):
                for h in range(halves):
                    desc_a = descriptor(a_start + kk * 32, 16, GROUP)
                    desc_b = descriptor(stage + a_bytes + h * 2 * block_bytes + kk * 16 * ROW,
                                        leading_b or block_bytes, GROUP)
                    acc[wg, h] += accumulator_registers(wgmma_read_a(smem, desc_a)
                                                        @ wgmma_read_b(smem, desc_b))
    lane = LANES
    for wg in range(warpgroups):
        for warp in range(4):
            row = block_row + wg * 64 + warp * 16 + lane // 4
            for h in range(halves):
                for j in range(16):
                    col = block_col + h * 128 + j * 8 + 2 * (lane % 4)
                    for dr, first in ((0, 0), (8, 2)):
                        for dc in (0, 1):
                            assert numpy.isnan(c[row + dr, col + dc]).all(), "written twice"
                            c[row + dr, col + dc] = acc[wg, h, warp, :, 4 * j + first + dc]


@pytest.mark.parametrize(
    "change",
    [{}, {"BN": 128}, {"BM": 64, "STAGES": 2}, {"BM": 256, "BN": 128, "STAGES": 3}],
    ids=["default", "bn128", "one_warpgroup", "four_warpgroups"],
)
def test_wgmma_kernel_model_computes_a_times_b(project, change):
    params = {**project.variant("wgmma_tma").params, **change}
    assert project.variant("wgmma_tma").constraints(None, params) == []
    # 5 k tiles: the stages wrap around
    c, truth = model_product(run_wgmma_block_model, params, k_tiles=5, seed=5)
    assert numpy.array_equal(c, truth)


def test_the_wgmma_model_catches_swapped_b_offsets(project):
    """B's leading offset (between 64-column blocks) given the stride's value: a wrong C."""
    params = dict(project.variant("wgmma_tma").params)
    rng = numpy.random.default_rng(6)
    a = rng.integers(-4, 5, (128, 64)).astype(numpy.float64)
    b = rng.integers(-4, 5, (64, 256)).astype(numpy.float64)
    c = numpy.full((128, 256), numpy.nan)
    run_wgmma_block_model(a, b, c, params, 0, 0, leading_b=GROUP)
    assert not numpy.array_equal(c, a @ b)


def test_the_descriptor_fields_hold_any_shared_address_of_a_block(module):
    """A start address is 14 bits of 16-byte units: 256 KiB, past the 227 KiB a block may
    have, so every address of a stage decodes to what was encoded; one past it would not."""
    for address in (0, 32, 96, GROUP, module.MAX_DYNAMIC_SMEM_BYTES - 16):
        assert decode(descriptor(address, 8192, GROUP)) == (address, 8192, GROUP)
    assert decode(descriptor(256 * 1024, 8192, GROUP))[0] == 0


def test_tma_128b_swizzle_keeps_every_8_rows_of_a_chunk_in_8_bank_groups():
    """What the swizzle buys wgmma: the 8 rows of one 16-byte column of a tile sit in the 8
    distinct 16-byte bank groups of a 128-byte line; unswizzled, all in one."""
    for chunk in range(8):
        rows = numpy.arange(8)
        groups = (swizzle_128b(rows * ROW + chunk * 16) % ROW) // 16
        assert sorted(groups) == list(range(8))
        assert len(set((rows * ROW + chunk * 16) % ROW // 16)) == 1


@pytest.mark.parametrize("size", ["4096", "8192"])
def test_the_shipped_h200_winners_are_for_this_source(project, size, monkeypatch, tmp_path):
    """tuning.json's winners for the H200 hold for the cluster.cu they were timed with: an edit
    of the kernel or its headers makes them stale, and this fails until they are tuned again."""
    from harness.gpu.tuning import CACHE_ENV, resolve_params

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))  # no user cache
    variant = project.variant("autotuned")
    resolved = resolve_params(project, variant, project.parse_size(size), "NVIDIA H200",
                              compute_capability="9.0")
    assert resolved.origin == "shipped"
    assert resolved.params == {"BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "GROUP": 8,
                               "CLUSTER_M": 2}
    assert variant.constraints(project.parse_size(size), resolved.params) == []
