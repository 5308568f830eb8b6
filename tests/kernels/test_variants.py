"""The SGEMM project's chain and the configuration checks that run before any compilation."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from harness.errors import NcuhError, UnknownVariantError, UnsupportedShapeError
from harness.gpu.backend import compile_options, macros, prepare
from harness.gpu.backend import source_text as inlined_source
from harness.project import load_project
from harness.project.locate import default_project_path

SGEMM = load_project(default_project_path())
import sgemm_project  # noqa: E402  (the project folder is on sys.path once it is loaded)


def all_variants():
    return list(SGEMM.variants)


def get_variant(name):
    return SGEMM.variant(name)


def kernels_dir():
    return SGEMM.folder


def source_text(variant):
    return inlined_source(SGEMM.folder, variant.source)


def size(shape):
    return SGEMM.size(shape)


def validate_params(name, params, shape=None):
    return SGEMM.problems(name, params, None if shape is None else size(shape))


def family(variant):
    return variant.source.removesuffix(".cu")


def effective_params(variant):
    return dict(variant.params)


def threads_per_block(variant, params):
    return sgemm_project.threads_per_block(family(variant), params)


def grid_for(variant, params, shape):
    return sgemm_project.grid_for(family(variant), params, size(shape))


def shared_mem_bytes(variant, params):
    return sgemm_project.shared_mem_bytes(family(variant), params)


def options(variant, params, shape):
    return compile_options(macros(variant, size(shape), params))


CHAIN = [
    "naive",
    "coalesced",
    "smem_tiled",
    "blocktile_1d",
    "register_tiled",
    "vectorized",
    "bank_conflict_free",
    "warptiled",
    "double_buffered",
    "async_copy",
    "autotuned",
]
SHAPES = [(1, 1, 1), (17, 33, 65), (1000, 1030, 999), (4096, 4096, 4096), (512, 256, 1024)]


def test_chain_order_iterations_and_previous_links() -> None:
    variants = all_variants()
    assert [v.name for v in variants] == CHAIN
    assert [v.iteration for v in variants] == list(range(len(CHAIN)))
    assert variants[0].previous is None
    assert [v.previous for v in variants[1:]] == CHAIN[:-1]
    assert SGEMM.reference.name == "cuBLAS" and SGEMM.reference.key not in CHAIN


@pytest.mark.parametrize("name", CHAIN)
def test_source_defines_the_named_kernel_and_uses_every_param(name: str) -> None:
    variant = get_variant(name)
    text = source_text(variant)
    assert re.search(
        # An attribute macro may sit before the launch bounds (multistage's CLUSTER_DIMS).
        rf'extern "C" __global__ void(?: [A-Z_]+)?(?: __launch_bounds__\([^)]*\))?\s+'
        rf"{variant.kernel_name}\(",
        text,
    )
    assert '#include "' not in text  # headers are inlined for NVRTC and the cache key
    for key in variant.params:
        assert re.search(rf"\b{key}\b", text), f"{name}: parameter {key} unused in the source"


def test_strategies_are_written_and_titles_unique() -> None:
    variants = all_variants()
    assert len({v.title for v in variants}) == len(variants)
    for variant in variants:
        assert len(variant.strategy) > 300, variant.name
        if variant.previous:
            assert variant.strategy.startswith("Last time"), variant.name
    assert len(SGEMM.reference.strategy) > 300


def test_unknown_variant_lists_the_names() -> None:
    with pytest.raises(UnknownVariantError) as error:
        get_variant("fastest")
    assert "fastest" in str(error.value)
    for name in CHAIN:
        assert name in str(error.value)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_every_variant_takes_every_shape_with_its_defaults(shape) -> None:
    for variant in all_variants():
        assert validate_params(variant, None, shape) == [], variant.name


def test_default_launch_geometry_at_4096() -> None:
    v = get_variant("double_buffered")
    p = effective_params(v)
    assert threads_per_block(v, p) == 256
    assert grid_for(v, p, (4096, 4096, 4096)) == (1024, 1, 1)
    assert shared_mem_bytes(v, p) == 2 * 8 * (128 + 4 + 128) * 4
    naive = get_variant("naive")
    assert grid_for(naive, naive.params, (1000, 1030, 999)) == (32, 33, 1)
    a = get_variant("async_copy")
    assert shared_mem_bytes(a, a.params) > 48 * 1024  # exercises the dynamic opt-in


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("warptiled", {"WM": 64, "WN": 64}, "needs 64 threads, not 32"),
        ("naive", {"BLOCK": 33}, "between 1 and 32"),
        ("bank_conflict_free", {"BK": 4}, "multiple of 8"),
        ("vectorized", {"TM": 6}, "multiple of"),
        ("register_tiled", {"BM": 512, "TM": 4, "TN": 4}, "threads per block"),
        ("async_copy", {"STAGES": 8, "BK": 32}, "shared memory"),
        ("async_copy", {"STAGES": 1}, "STAGES=1 must be at least 2"),
        ("double_buffered", {"BM": 256, "BN": 128, "WM": 64, "WN": 32}, "would spill"),
        # nvcc for sm_90: 128 registers and 88 bytes of spills per thread.
        ("double_buffered", {"BK": 16}, "would spill"),
        ("double_buffered", {"BN": 256, "BK": 16, "MIN_BLOCKS": 1}, "would spill"),
        ("autotuned", {"BK": 4}, "BK=4 must be a multiple of 8"),
        ("autotuned", {"STAGES": 1}, "STAGES=1 must be at least 2"),
        ("autotuned", {"STAGES": 8, "BK": 32}, "shared memory"),
        ("autotuned", {"SPLIT": 16}, "SPLIT=16 must be between 1 and 8"),
        ("autotuned", {"BM": 64, "WM": 32, "SPLIT": 3}, "BM=64 must be a multiple of SPLIT=3"),
        # 2 rows of 8 float4 per block: half a warp's lanes would sum once more than the rest
        ("autotuned", {"BM": 16, "BN": 32, "WM": 16, "TM": 4, "WN": 32, "TN": 4, "SPLIT": 8},
         "a 2x32 slice of the tile per block must be a multiple of 32 float4"),
        ("autotuned", {"TM": 16, "TN": 16, "WM": 64, "WN": 128}, "would spill"),
        ("double_buffered", {"BOGUS": 1}, "unknown parameter 'BOGUS'"),
        # THREADS follows from the tiles: it is not a parameter one can set.
        ("autotuned", {"THREADS": 128}, "unknown parameter 'THREADS' for autotuned"),
    ],
)
def test_invalid_configurations_are_named(name: str, params: dict, message: str) -> None:
    problems = validate_params(name, params)
    assert problems, f"{name} {params} should be invalid"
    assert any(message in problem for problem in problems), problems


# The multistage kernel's copies, each check on both sides: a configuration one step over
# the boundary is refused for that reason alone, its neighbour inside it is admitted.
WIDE = {"BM": 32, "BN": 512, "WM": 32, "WN": 32, "TM": 4, "TN": 8, "MIN_BLOCKS": 1}  # 16 warps
NARROW = {"BM": 128, "BN": 32, "WM": 32, "WN": 32, "TM": 4, "TN": 8}  # 4 warps, BN < threads


def assert_only_problem(name: str, params: dict, shape, message: str | None) -> None:
    """`message` is the one problem of `params` at `shape`, or there is none (message None)."""
    problems = validate_params(name, params, shape)
    if message is None:
        assert problems == []
    else:
        assert len(problems) == 1 and message in problems[0], problems


@pytest.mark.parametrize(
    ("params", "message"),
    [
        # 4-byte copies of A: 32x8 = 256 floats over 512 threads; 32x16 = 512 floats divide
        ({**WIDE, "BK": 8}, "the 32x8 A tile (256 floats) does not divide evenly over 512"),
        ({**WIDE, "BK": 16}, None),
        # 16-byte copies of B: 8x32 = 64 float4 over 128 threads; 16x32 = 128 float4 divide
        ({**NARROW, "BK": 8}, "the 8x32 B tile (64 float4) does not divide evenly over 128"),
        ({**NARROW, "BK": 16}, None),
        # 4-byte copies of B along a row: BN=64 against 96 threads (3 warps), then 128 threads
        ({"BM": 96, "BN": 64, "BK": 48, "WM": 32, "WN": 64, "TM": 4, "TN": 16,
          "MIN_BLOCKS": 1}, "BN=64 and 96 threads: one must be a multiple of the other"),
        ({"BM": 128, "BN": 64, "BK": 48, "WM": 32, "WN": 64, "TM": 4, "TN": 16,
          "MIN_BLOCKS": 1}, None),
        # The copy tables' addresses count: 8 warps at MIN_BLOCKS=2 leave 128 registers
        # (nvcc for sm_90: 68 bytes of spills); one block per SM leaves 255.
        ({"BN": 256, "BK": 16, "WM": 32, "TN": 8, "MIN_BLOCKS": 2},
         "about 136 registers per thread needed but 2 block(s) of 256 threads leave 128"),
        ({"BN": 256, "BK": 16, "WM": 32, "TN": 8, "MIN_BLOCKS": 1}, None),
        # The epilogue loads C min(TM, 32/TN) rows at a time: 12 rows do not split into 8s
        ({"BM": 48, "BN": 32, "BK": 8, "WM": 48, "WN": 32, "TM": 12, "TN": 4, "MIN_BLOCKS": 1,
          "STAGES": 3, "SPLIT": 1}, "TM=12 must be a multiple of min(TM, 32/TN)=8"),
        ({"BM": 64, "BN": 32, "BK": 8, "WM": 64, "WN": 32, "TM": 16, "TN": 4, "MIN_BLOCKS": 1,
          "STAGES": 3, "SPLIT": 1}, None),
    ],
)
def test_multistage_copy_checks_on_both_sides(params: dict, message: str | None) -> None:
    assert_only_problem("autotuned", params, (4096, 4096, 4096), message)


def test_the_tunable_space_holds_small_tiles_and_deep_splits() -> None:
    v = get_variant("autotuned")
    assert {32, 64, 128} <= set(v.tunable["BM"]) and 32 in v.tunable["BN"]
    # every split up to 14 (a serial split fills the slots of one wave), clusters up to 8
    assert set(range(1, 15)) <= set(v.tunable["SPLIT"]) and max(v.tunable["SPLIT"]) == 32
    assert v.tunable["SERIAL"] == [0, 1]
    one_warp = {**v.params, "BM": 32, "BN": 32, "WM": 32, "WN": 32, "TM": 4, "TN": 8,
                "SPLIT": 8}
    assert all(one_warp[key] in values for key, values in v.tunable.items())
    assert validate_params("autotuned", one_warp, (256, 256, 256)) == []
    assert threads_per_block(v, one_warp) == 32
    assert grid_for(v, one_warp, (256, 256, 256)) == (8 * 8 * 8, 1, 1)


# The serial split's checks, each on both sides: a configuration one step over the boundary is
# refused for that reason alone, its neighbour inside it is admitted.
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"SERIAL": 2, "SPLIT": 2}, "SERIAL=2 must be 0 (K split over a cluster) or 1"),
        ({"SERIAL": 1, "SPLIT": 2}, None),
        ({"SERIAL": 1, "SPLIT": 1}, "SERIAL=1 needs SPLIT of 2 or more, not 1"),
        ({"SERIAL": 0, "SPLIT": 1}, None),
        # a cluster stops at the portable 8 blocks; the workspace goes deeper
        ({"SERIAL": 0, "SPLIT": 9}, "SPLIT=9 must be between 1 and 8 (blocks in one cluster"),
        ({"SERIAL": 0, "SPLIT": 8}, None),
        ({"SERIAL": 1, "SPLIT": 9}, None),
        # each block of a cluster writes BM/SPLIT rows; through the workspace, any split goes
        ({"SERIAL": 0, "SPLIT": 3}, "BM=64 must be a multiple of SPLIT=3"),
        ({"SERIAL": 1, "SPLIT": 3}, None),
    ],
)
def test_serial_split_checks_on_both_sides(params: dict, message: str | None) -> None:
    assert_only_problem("autotuned", params, (333, 777, 4099), message)


WIDE_32_ROWS = {"BM": 32, "BK": 16, "WM": 32, "WN": 32, "TM": 4, "TN": 8, "MIN_BLOCKS": 1}


# The copy-layout switches, each on both sides. CONST_DST needs BM*8 to be a multiple of the
# threads (with BK = 8 the A tile's own check says as much): a 32x512 tile of 16 warps is one
# step over, of 8 warps (32x256) inside, and without CONST_DST the larger one is admitted.
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"CONST_DST": 2}, "CONST_DST=2 must be 0 or 1"),
        ({"CONST_DST": 1}, None),
        ({"COPY_AT_END": 2}, "COPY_AT_END=2 must be 0 or 1"),
        ({"COPY_AT_END": 1}, None),
        ({**WIDE_32_ROWS, "BN": 512, "CONST_DST": 1},
         "CONST_DST=1 needs BM*8=256 to be a multiple of the 512 threads"),
        ({**WIDE_32_ROWS, "BN": 256, "CONST_DST": 1}, None),
        ({**WIDE_32_ROWS, "BN": 512, "CONST_DST": 0}, None),
    ],
)
def test_copy_layout_checks_on_both_sides(params: dict, message: str | None) -> None:
    assert_only_problem("autotuned", params, (333, 777, 4099), message)


def test_the_serial_workspace_is_bounded() -> None:
    """2048 tiles of 64x128 at 4096^3: 4 blocks per tile park 8192 partial tiles of 32 KiB,
    256 MiB (admitted); 5 would park 320 MiB."""
    v = get_variant("autotuned")
    p = {**effective_params(v), "SERIAL": 1, "SPLIT": 4}
    assert sgemm_project.workspace_floats(p, size((4096, 4096, 4096))) * 4 == 256 * 2**20
    assert validate_params(v, p, (4096, 4096, 4096)) == []
    problems = validate_params(v, {**p, "SPLIT": 5}, (4096, 4096, 4096))
    assert problems == ["size 4096x4096x4096: the split-K workspace of 10240 partial 64x128 "
                        "tiles (320 MiB) is over 256 MiB"]
    # The cluster split parks its partials in shared memory: no workspace at any split.
    assert sgemm_project.workspace_floats({**p, "SERIAL": 0}, size((4096, 4096, 4096))) == 0


def test_bad_shape_is_refused() -> None:
    assert validate_params("naive", None, (2**31, 4, 4))
    with pytest.raises(UnsupportedShapeError):
        prepare(SGEMM, "naive", size((4, 2**31, 4)))


def test_build_checks_params_before_needing_a_gpu() -> None:
    # NcuhError about the configuration, not NoGpuError: nothing was compiled or imported.
    with pytest.raises(NcuhError, match="not 32"):
        prepare(SGEMM, "warptiled", size((256, 256, 256)), {"WM": 64, "WN": 64})


def test_autotuned_searches_the_multistage_kernel() -> None:
    tuned = get_variant("autotuned")
    assert tuned.source == "multistage.cu" and tuned.kernel_name == "sgemm_multistage"
    assert family(tuned) == "multistage"
    assert tuned.tunable and set(tuned.tunable) <= set(tuned.params)
    for key, values in tuned.tunable.items():
        assert tuned.params[key] in values, key


def test_vector_path_is_chosen_from_the_shape() -> None:
    v = get_variant("async_copy")
    aligned = options(v, v.params, (4096, 4096, 4096))
    odd = options(v, v.params, (1000, 1030, 999))
    assert "-DVEC=1" in aligned and "-DVEC=0" in odd
    assert "-lineinfo" in aligned
    assert "-DSTAGES=3" in aligned


def test_multistage_geometry_with_and_without_split() -> None:
    v = get_variant("autotuned")
    p = effective_params(v)  # 64x128 tiles of 2 warps
    assert threads_per_block(v, p) == 64
    assert grid_for(v, p, (4096, 4096, 4096)) == (64 * 32, 1, 1)
    assert shared_mem_bytes(v, p) == 3 * 8 * (64 + 4 + 128) * 4
    # The H100's 1024 winner: 8 warps on a 64x256 tile, K split over a cluster of two.
    split = {**p, "BN": 256, "BK": 16, "WM": 32, "TN": 8, "MIN_BLOCKS": 1, "STAGES": 4,
             "SPLIT": 2}
    assert validate_params(v, split, (1024, 1024, 1024)) == []
    # the same one-warp tile split four ways sums 32 float4 per block: every lane equally often
    one_warp = {**p, "BM": 16, "BN": 32, "WM": 16, "TM": 4, "WN": 32, "TN": 4, "SPLIT": 4}
    assert validate_params(v, one_warp, (1024, 1024, 1024)) == []
    assert threads_per_block(v, split) == 256
    # Two blocks (one cluster) per tile of C, partial edge tiles included.
    assert grid_for(v, split, (1024, 1024, 1024)) == (16 * 4 * 2, 1, 1)
    assert grid_for(v, split, (1000, 1030, 999)) == (16 * 5 * 2, 1, 1)
    assert shared_mem_bytes(v, split) == 4 * 16 * (64 + 4 + 256) * 4
    # With two shallow stages the parked 64x256 C tile is the larger.
    two = {**split, "BK": 8, "STAGES": 2}
    assert shared_mem_bytes(v, two) == 64 * 256 * 4
    # Through the workspace, nothing is parked in shared memory: the stages alone; the grid
    # is the same SPLIT blocks per tile, at any SPLIT.
    serial = {**two, "SERIAL": 1, "SPLIT": 10}
    assert shared_mem_bytes(v, serial) == 2 * 8 * (64 + 4 + 256) * 4
    assert grid_for(v, serial, (1000, 1030, 999)) == (16 * 5 * 10, 1, 1)
    assert sgemm_project.workspace_floats(serial, size((1000, 1030, 999))) == 16 * 5 * 10 * 64 * 256


@pytest.mark.parametrize(
    ("shape", "vec", "exact"),
    [
        ((4096, 4096, 4096), 1, 1),
        ((1024, 1000, 512), 1, 0),  # a partial column tile
        ((4096, 4096, 4100), 1, 0),  # K not a multiple of BK
        ((1000, 1030, 999), 0, 0),
    ],
)
def test_multistage_drops_bounds_checks_only_when_every_tile_is_whole(shape, vec, exact):
    v = get_variant("autotuned")
    compiled = options(v, v.params, shape)
    assert f"-DVEC={vec}" in compiled and f"-DEXACT={exact}" in compiled


# The H200's winner at 333x777x4099: K split 7 ways through the workspace, the scalar path,
# A's destinations at constant offsets and the copies issued after each tile's last k step.
SERIAL_WINNER = {"BM": 128, "BN": 32, "BK": 8, "WM": 64, "WN": 32, "TM": 8, "TN": 8,
                 "MIN_BLOCKS": 1, "STAGES": 4, "SPLIT": 7, "SERIAL": 1, "CONST_DST": 1,
                 "COPY_AT_END": 1}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize(
    ("name", "override", "shape"),
    [("double_buffered", {}, (4096, 4096, 4096)), ("async_copy", {}, (4096, 4096, 4096)),
     ("autotuned", {}, (4096, 4096, 4096)), ("autotuned", SERIAL_WINNER, (333, 777, 4099))],
    ids=["double_buffered", "async_copy", "autotuned", "autotuned-serial"],
)
def test_fast_kernels_compile_for_sm90_without_spills(name: str, override: dict, shape,
                                                      tmp_path) -> None:
    variant = get_variant(name)
    params = {**variant.params, **override}
    source = tmp_path / "k.cu"
    source.write_text(source_text(variant))
    defines = [o for o in options(variant, params, shape) if o[:2] == "-D"]
    result = subprocess.run(
        [
            "nvcc",
            "-arch=sm_90",
            "-cubin",
            "--resource-usage",
            "-o",
            str(tmp_path / "k.cubin"),
            *defines,
            str(source),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    usage = result.stdout + result.stderr
    assert "0 bytes spill stores" in usage, usage
    registers = int(re.search(r"Used (\d+) registers", usage).group(1))
    threads = threads_per_block(variant, params)
    assert registers <= min(255, 65536 // (threads * params["MIN_BLOCKS"]))


def test_kernels_dir_holds_every_source() -> None:
    for variant in all_variants():
        if variant.source:
            assert (kernels_dir() / variant.source).is_file()


def test_source_text_keeps_real_file_names_and_lines_for_line_info():
    """ncu's source view maps each instruction through -lineinfo: the inlined header must not
    shift the kernel's own line numbers, and the file must not be CuPy's hashed name."""
    variant = get_variant("register_tiled")
    lines = source_text(variant).splitlines()
    original = (kernels_dir() / variant.source).read_text().splitlines()
    assert lines[0] == f'#line 1 "{variant.source}"'
    assert '#line 1 "common.cuh"' in lines
    resumes = [i for i, line in enumerate(lines)
               if re.fullmatch(rf'#line \d+ "{variant.source}"', line) and i > 0]
    assert resumes
    for index in resumes:
        number = int(lines[index].split()[1])
        assert lines[index + 1 : index + 4] == original[number - 1 : number + 2]
