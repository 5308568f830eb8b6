"""The reduction chain's project file, read through the public project API (no GPU).

It loads; the ten variants come in chain order with their links; sizes, work and traffic
are what the README says; every Strategy is there in the seed pages' voice; the tolerance is
the documented bound; and each variant's launch geometry, run on a host model of its kernel,
sums every element exactly once into `out` for the lengths the GPU tests use.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy
import pytest

from harness.project import load_project

FOLDER = Path(__file__).resolve().parents[2] / "kernels" / "reduction"

CHAIN = [
    "interleaved_divergent",
    "interleaved_strided",
    "sequential",
    "first_add",
    "unroll_last_warp",
    "complete_unroll",
    "grid_stride",
    "warp_shuffle",
    "vectorized",
    "single_pass",
]
# the GPU tests also run 2**26; the host model stops at 2**20 + 7 (memory, two shared cores)
LENGTHS = [1, 31, 32, 33, 1000, 2**20 + 7]
SMS = 132  # an H100's SM count, for the grid-stride grids


@pytest.fixture(scope="module")
def project():
    return load_project(FOLDER / "ncuh.toml")


@pytest.fixture
def module(project, monkeypatch):
    """The project's own Python module, with the SM count fixed (no GPU to ask)."""
    loaded = sys.modules["reduction_project"]
    monkeypatch.setattr(loaded, "sm_count", lambda: SMS)
    return loaded


def test_project_loads_with_reference_and_copy_limit(project):
    assert project.name == "reduction"
    assert project.dims == ("n",)
    assert project.outputs == ("out",)
    assert project.poison == ("out",)
    assert project.compare == "relative_frobenius"
    assert project.reference is not None and project.reference.name == "CUB"
    assert "DeviceReduce::Sum" in project.reference.strategy
    assert [limit.name for limit in project.limits] == ["device copy"]


def test_ten_variants_in_chain_order(project):
    assert project.names == CHAIN
    assert [variant.iteration for variant in project.variants] == list(range(len(CHAIN)))


def test_each_variant_follows_the_one_above(project):
    previous = [variant.previous for variant in project.variants]
    assert previous == [None, *CHAIN[:-1]]


def test_sizes_parse_as_powers_of_two(project):
    assert [size.n for size in project.default_sizes] == [2**k for k in range(10, 29, 2)]
    assert project.profile_size.n == 2**26
    assert project.parse_size("1<<20").n == 2**20
    assert project.parse_size("33").n == 33


@pytest.mark.parametrize("n", [1, 33, 2**26])
def test_traffic_and_work(project, n):
    size = project.parse_size(str(n))
    assert project.bytes(size) == 4 * n  # x read once
    assert project.flops(size) == n - 1  # one add per element but the first
    assert project.limits[0].bytes(size) == 8 * n  # the copy reads and writes 4n


def test_every_strategy_is_written_in_the_seed_voice(project):
    for index, variant in enumerate(project.variants):
        text = variant.strategy
        assert len(text) > 400, variant.name
        if index > 0:
            assert text.startswith("Last time"), variant.name  # what was wrong last time
        assert "In this iteration" in text or index == 0, variant.name  # what changes
        assert re.search(r"What (should move|to expect)", text), variant.name  # the profile


def test_each_kernel_is_defined_in_its_source(project):
    for variant in project.variants:
        source = (FOLDER / variant.source).read_text()
        pattern = rf'extern "C" __global__ void(?: __launch_bounds__\(\w+\))?\s+{variant.kernel}\('
        assert re.search(pattern, source), variant.name


def test_block_size_is_compile_time_from_complete_unroll_on(project):
    """Iterations 1-5 read blockDim.x; from 6 on BLOCK is a macro (the chain's step 6)."""
    for index, variant in enumerate(project.variants):
        source = (FOLDER / variant.source).read_text()
        uses_macro = "#define BLOCK" in source
        assert uses_macro == (index >= CHAIN.index("complete_unroll")), variant.name


def test_tolerance_is_the_documented_bound(project):
    u = 2.0**-24
    for n in (1, 1000, 2**26):
        assert project.tolerance_at(project.parse_size(str(n))) == pytest.approx(
            u * (8 * math.sqrt(n) + 1), rel=1e-12
        )
    # grows like sqrt(n): 4x the elements, about 2x the tolerance
    small, large = (project.tolerance_at(project.parse_size(str(n))) for n in (2**20, 2**22))
    assert 1.99 < large / small < 2.0


@pytest.mark.parametrize(
    ("params", "problems"),
    [
        ({"BLOCK": 64}, 0),
        ({"BLOCK": 1024}, 0),
        ({"BLOCK": 32}, 1),
        ({"BLOCK": 2048}, 1),
        ({"BLOCK": 96}, 1),
        ({"BLOCK": 256, "UNROLL": 1, "BLOCKS_PER_SM": 1}, 0),
        ({"BLOCK": 256, "UNROLL": 16, "BLOCKS_PER_SM": 32}, 0),
        ({"BLOCK": 256, "UNROLL": 0}, 1),
        ({"BLOCK": 256, "UNROLL": 17}, 1),
        ({"BLOCK": 256, "BLOCKS_PER_SM": 0}, 1),
        ({"BLOCK": 256, "BLOCKS_PER_SM": 33}, 1),
        ({"BLOCK": 256, "STREAM": 0}, 0),
        ({"BLOCK": 256, "STREAM": 2}, 0),
        ({"BLOCK": 256, "STREAM": 3}, 1),
        ({"BLOCK": 256, "STREAM": -1}, 1),
        ({"BLOCK": 256, "TILES": 1}, 0),
        ({"BLOCK": 256, "TILES": 2}, 1),
    ],
)
def test_constraints_at_their_edges(project, params, problems):
    variant = project.variant("single_pass")
    assert len(variant.constraints(project.parse_size("1000"), params)) == problems


# ---- launch geometry on a host model of the kernels ------------------------------------------

def _owner_blocks(kernel: str, count: int, grid: int, block: int,
                  params: dict[str, int]) -> numpy.ndarray:
    """Which block adds each of `count` input elements, as the kernel's indexing says."""
    index = numpy.arange(count)
    if kernel in ("reduce_interleaved_divergent", "reduce_interleaved_strided",
                  "reduce_sequential"):
        owner = index // block
    elif kernel in ("reduce_first_add", "reduce_unroll_last_warp", "reduce_complete_unroll"):
        owner = index // (2 * block)
    elif kernel in ("reduce_grid_stride", "reduce_warp_shuffle"):
        owner = (index // (2 * block)) % grid
    elif kernel in ("reduce_vectorized", "reduce_single_pass"):
        whole = count // 4 * 4
        # float4 number j: grid-stride, thread j % (grid * block); block tiles of UNROLL * block
        per_block = params["UNROLL"] * block if params.get("TILES") else block
        owner = (index // 4 // per_block) % grid
        owner[whole:] = (index[whole:] - whole) // block  # the 0..3 tail: block 0's threads
    else:
        raise AssertionError(f"no model for {kernel}")
    # a data-sized grid must cover every element: an element owned by no block is lost
    assert owner.max() < grid, f"{kernel}: grid {grid} misses elements of {count}"
    return owner


def _run_on_host(launches, variant, params: dict[str, int]) -> None:
    for launch in launches if isinstance(launches, list) else [launches]:
        kernel = launch.kernel or variant.kernel
        source, target, count = launch.args[0], launch.args[1], int(launch.args[-1])
        grid, block = launch.grid[0], launch.block[0]
        assert launch.block[1:] in ((), (1,), (1, 1)) and launch.grid[1:] in ((), (1,), (1, 1))
        assert 64 <= block <= 1024
        sums = numpy.bincount(_owner_blocks(kernel, count, grid, block, params),
                              weights=source[:count], minlength=grid)
        if kernel == "reduce_single_pass":
            partials, counter = launch.args[2], launch.args[3]
            partials[:grid] = sums  # a shape error if the buffer is too small
            counter[0] = 0
            target[0] = partials[:grid].sum()
        else:
            if target.size == 1:
                assert grid == 1, f"{kernel}: {grid} blocks would all write out[0]"
            target[:grid] = sums  # a shape error if the buffer is too small


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize(
    ("name", "overrides"),
    [*((name, {}) for name in CHAIN), ("single_pass", {"TILES": 1, "BLOCK": 256, "UNROLL": 8})],
)
def test_launches_sum_every_element_once(project, module, name, overrides, n):
    variant = project.variant(name)
    params = {**variant.params, **overrides}
    size = project.parse_size(str(n))
    m = module.partials_length(n)
    inputs = {
        "x": numpy.arange(1, n + 1, dtype=numpy.float64),  # distinct values: exact sums
        "out": numpy.full(1, numpy.nan),
        "partials": numpy.full(m, numpy.nan),
        "partials2": numpy.full(m, numpy.nan),
        "counter": numpy.zeros(1),
    }
    launches = variant.launch(size, params, inputs)
    _run_on_host(launches, variant, params)
    assert inputs["out"][0] == n * (n + 1) // 2


@pytest.mark.parametrize(
    ("name", "n", "launches"),
    [
        ("interleaved_divergent", 2**26, 4),  # 262,144 -> 1,024 -> 4 -> 1
        ("interleaved_divergent", 256, 1),
        ("interleaved_divergent", 257, 2),
        ("first_add", 512, 1),
        ("first_add", 513, 2),
        ("grid_stride", 2**26, 2),
        ("grid_stride", 512, 1),  # one block: straight into out
        ("vectorized", 2**26, 2),
        ("vectorized", 16384, 1),  # 1024 threads x 4 steps x 4 floats
        ("vectorized", 16385, 2),
        ("single_pass", 2**28, 1),
    ],
)
def test_number_of_launches(project, module, name, n, launches):
    variant = project.variant(name)
    inputs = {key: object() for key in ("x", "out", "partials", "partials2", "counter")}
    got = variant.launch(project.parse_size(str(n)), dict(variant.params), inputs)
    assert len(got if isinstance(got, list) else [got]) == launches


def test_single_pass_grid_is_a_few_waves_of_sms(project, module):
    variant = project.variant("single_pass")
    params = dict(variant.params)
    inputs = {key: object() for key in ("x", "out", "partials", "partials2", "counter")}
    launch = variant.launch(project.parse_size("2^28"), params, inputs)
    assert launch.grid == (SMS * params["BLOCKS_PER_SM"],)
    small = variant.launch(project.parse_size("1000"), params, inputs)
    assert small.grid == (1,)


def test_shipped_h100_winners_match_the_current_source(project):
    """tuning.json's entries are for this single_pass.cu (an edit of the kernel makes them stale,
    and the bench would silently fall back to the defaults) and pass the constraints."""
    from harness.gpu.tuning import TuneCache, shipped_path, source_fingerprint

    variant = project.variant("single_pass")
    entries = TuneCache(shipped_path(project)).for_gpu("NVIDIA H100 80GB HBM3", "single_pass")
    assert sorted(int(entry["size"]) for entry in entries) == [2**k for k in (20, 22, 24, 26, 28)]
    for entry in entries:
        assert entry["source_sha256"] == source_fingerprint(project, variant)
        assert set(entry["params"]) == set(variant.params)
        assert project.problems(variant, entry["params"], project.parse_size(entry["size"])) == []


# ---- inputs and truth, with NumPy standing in for CuPy (the calls are the same) ---------------

@pytest.fixture
def host_module(module, monkeypatch):
    monkeypatch.setattr(module, "_cupy", lambda: numpy)
    return module


@pytest.mark.parametrize("n", [1, 33, 2**20 + 7])
def test_inputs_are_seeded_nonnegative_and_not_zero(project, host_module, n):
    size = project.parse_size(str(n))
    inputs = project.inputs(size, 7)
    x = inputs["x"]
    assert x.dtype == numpy.float32 and x.shape == (n,)
    assert (x >= 0).all() and (x < 1).all() and x.any()
    assert numpy.array_equal(x, project.inputs(size, 7)["x"])  # the seed decides
    assert not numpy.array_equal(x, project.inputs(size, 8)["x"]) or n == 1
    assert inputs["out"].shape == (1,) and inputs["counter"].tolist() == [0]
    assert inputs["copy_dst"].nbytes == x.nbytes
    for name in ("partials", "partials2"):
        assert inputs[name].size == host_module.partials_length(n) >= -(-n // 64)


def test_truth_is_the_float64_sum(project, host_module):
    size = project.parse_size("1000")
    inputs = project.inputs(size, 1)
    truth = project.expected(inputs, size)["out"]
    assert truth.dtype == numpy.float64 and truth.shape == (1,)
    assert truth[0] == pytest.approx(float(inputs["x"].astype(numpy.float64).sum()), rel=1e-15)
