"""The Triton softmax chain's project file, read through the public project API (no GPU).

It loads and lists without CuPy, torch or Triton; the four variants come in chain order, each
a Python launcher whose capture filter names its Triton kernels; sizes, work and traffic are
what the README says; every Strategy is there in the seed pages' voice; the tolerance is the
documented bound; and the launch geometry (blocks, warps, tiles, occupancy, the persistent
grid) is what the notes describe, on an H100's numbers.
"""

from __future__ import annotations

import ast
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.project import load_project

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "kernels" / "softmax_triton"
CHAIN = ["naive", "online", "fused", "multi_row"]
# An H100 SXM as torch.cuda.get_device_properties reports it.
H100 = {"multi_processor_count": 132, "max_threads_per_multi_processor": 2048,
        "regs_per_multiprocessor": 65536, "shared_memory_per_multiprocessor": 233472}


@pytest.fixture(scope="module")
def project():
    return load_project(FOLDER / "ncuh.toml")


@pytest.fixture(scope="module")
def module(project):
    return sys.modules["softmax_triton_project"]


def test_project_loads_with_pytorch_reference_and_copy_limit(project):
    assert project.name == "softmax_triton"
    assert project.dims == ("rows", "cols")
    assert project.outputs == ("out",)
    assert project.poison == ("out",)
    assert project.compare == "relative_frobenius"
    assert project.reference is not None and project.reference.name == "PyTorch"
    assert "torch.softmax" in project.reference.strategy
    assert [limit.name for limit in project.limits] == ["device copy"]


def test_four_launchers_in_chain_order(project):
    assert project.names == CHAIN
    assert [variant.previous for variant in project.variants] == [None, *CHAIN[:-1]]
    for variant in project.variants:
        assert variant.call is not None and variant.source is None, variant.name
        assert variant.capture_filter == f"regex:^softmax_{variant.name}" + (
            "_" if variant.name == "naive" else ""), variant.name


def _triton_kernels() -> list[str]:
    """The @triton.jit functions of the kernels module, read without importing Triton."""
    tree = ast.parse((FOLDER / "softmax_triton_kernels.py").read_text())
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef)
            and any(ast.unparse(d) == "triton.jit" for d in node.decorator_list)]


def test_each_capture_filter_takes_exactly_its_variants_kernels(project):
    names = _triton_kernels()
    assert len(names) == 6
    taken = {}
    for variant in project.variants:
        pattern = variant.capture_filter.removeprefix("regex:")
        taken[variant.name] = [name for name in names if re.search(pattern, name)]
    assert taken == {
        "naive": ["softmax_naive_max", "softmax_naive_exp_sum", "softmax_naive_divide"],
        "online": ["softmax_online"],
        "fused": ["softmax_fused"],
        "multi_row": ["softmax_multi_row"],
    }


def test_listing_imports_no_gpu_library():
    code = (
        "import sys\n"
        "from harness.cli import main\n"
        f"main(['--project', {str(FOLDER)!r}, 'list'], standalone_mode=False)\n"
        "print(sorted(m for m in ('cupy', 'torch', 'triton') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "[]"
    assert [line.split()[1] for line in lines if re.match(r"^\d+\s", line)] == CHAIN
    assert "reference: PyTorch" in lines and "limit: device copy" in lines


def test_sizes_hold_the_same_elements(project):
    assert [size.as_list() for size in project.default_sizes] == [
        [262144, 256], [65536, 1024], [16384, 4096], [8192, 8192], [4096, 16384],
        [1024, 65536]]
    assert {size.rows * size.cols for size in project.default_sizes} == {2**26}
    assert project.profile_size.as_list() == [8192, 8192]


@pytest.mark.parametrize("shape", ["8192x8192", "1x1", "37x333"])
def test_traffic_and_work(project, shape):
    size = project.parse_size(shape)
    elements = size.rows * size.cols
    assert project.bytes(size) == 8 * elements  # x read once, out written once
    assert project.flops(size) == 5 * elements
    assert project.limits[0].bytes(size) == 8 * elements  # the copy moves the same bytes


def test_tolerance_is_the_documented_bound(project):
    u = 2.0**-24
    for shape, cols in (("8192x8192", 8192), ("1x1", 1), ("1024x65536", 65536)):
        assert project.tolerance_at(project.parse_size(shape)) == pytest.approx(
            u * (8 * math.sqrt(cols) + 32), rel=1e-12)
    assert project.tolerance_at(project.parse_size("8192x8192")) == pytest.approx(
        4.5e-5, rel=0.01)


def test_every_strategy_is_written_in_the_seed_voice(project):
    for index, variant in enumerate(project.variants):
        text = variant.strategy
        assert (FOLDER / "notes" / f"{variant.name}.md").read_text().strip() == text.strip()
        assert len(text) > 400, variant.name
        if index > 0:
            assert text.startswith("Last time"), variant.name
            assert "In this iteration" in text, variant.name
        assert re.search(r"What (should move|to expect)", text), variant.name
        assert re.search(r"\d+-\d+% of the (device )?copy", text), variant.name  # a prediction


@pytest.mark.parametrize(
    ("cols", "block", "chunk", "warps_16"),
    [(1, 32, 32, 1), (5, 32, 32, 1), (256, 256, 256, 1), (333, 512, 512, 1),
     (1000, 1024, 1024, 2), (4097, 8192, 1024, 16), (8192, 8192, 1024, 16),
     (32768, 32768, 1024, 16)],
)
def test_row_blocks_and_warps(module, cols, block, chunk, warps_16):
    assert module.row_block(cols) == block
    assert module.chunk(cols, 1024) == chunk
    assert module.warps_for(block, 16) == warps_16


@pytest.mark.parametrize(
    ("cols", "tile", "rows_per_tile", "staged_2"),
    [(256, 8192, 32, 32768), (1024, 8192, 8, 32768), (8192, 8192, 1, 32768),
     (16384, 8192, 1, 65536), (333, 2048, 4, 8192), (1, 8192, 256, 32768)],
)
def test_multi_row_tiles(module, cols, tile, rows_per_tile, staged_2):
    assert module.tile_rows(cols, tile) == rows_per_tile
    assert module.staged_bytes(cols, tile, 2) == staged_2
    assert module.staged_bytes(cols, tile, 1) == 0


def test_programs_per_sm_follow_the_occupancy_rules(module):
    # fused at 8192 columns as Triton 3.6 compiles it for sm_90: 38 registers, 16 warps
    assert module.programs_per_sm(H100, registers=38, warps=16, shared_bytes=64) == 3
    # registers rounded up per warp: 40 x 32 = 1280 fits 51 warps, 3 programs of 16
    assert module.programs_per_sm(H100, registers=40, warps=16, shared_bytes=0) == 3
    assert module.programs_per_sm(H100, registers=32, warps=8, shared_bytes=32) == 8
    # a 32 KiB staged tile: six fit by shared memory, registers allow two
    assert module.programs_per_sm(H100, registers=48, warps=16, shared_bytes=32832) == 2
    assert module.programs_per_sm(H100, registers=16, warps=4, shared_bytes=32832) == 6
    # one warp of few registers: the 32-block limit
    assert module.programs_per_sm(H100, registers=16, warps=1, shared_bytes=0) == 32
    # never zero, even when nothing would fit by the numbers
    assert module.programs_per_sm(H100, registers=255, warps=16, shared_bytes=300000) == 1


def test_persistent_grid(module):
    assert module.persistent_grid(8192, 1, 132, 2) == 264
    assert module.persistent_grid(100, 1, 132, 2) == 100  # never more programs than tiles
    assert module.persistent_grid(4099, 8, 132, 1) == 132
    assert module.persistent_grid(1, 256, 132, 4) == 1


@pytest.mark.parametrize(
    ("variant", "params", "shape", "problems"),
    [
        ("naive", {"BLOCK": 1024, "WARPS": 4}, None, 0),
        ("naive", {"BLOCK": 16, "WARPS": 4}, None, 1),
        ("online", {"BLOCK": 3000, "WARPS": 4}, None, 1),
        ("online", {"BLOCK": 2048, "WARPS": 32}, None, 1),
        ("online", {"BLOCK": 2048, "WARPS": 8}, "16x1048576", 0),  # rows of any length
        ("fused", {"PER_THREAD": 16}, "4x32768", 0),
        ("fused", {"PER_THREAD": 16}, "4x32769", 1),
        ("fused", {"PER_THREAD": 12}, None, 1),
        ("multi_row", {"TILE": 8192, "PER_THREAD": 16, "PROGRAMS_PER_SM": 0, "STAGES": 2},
         "8192x8192", 0),
        ("multi_row", {"TILE": 8192, "PER_THREAD": 16, "PROGRAMS_PER_SM": 0, "STAGES": 2},
         "1024x65536", 1),
        # 128 KiB tiles: one staged tile fits, two do not
        ("multi_row", {"TILE": 8192, "PER_THREAD": 16, "PROGRAMS_PER_SM": 0, "STAGES": 2},
         "8x32768", 0),
        ("multi_row", {"TILE": 8192, "PER_THREAD": 16, "PROGRAMS_PER_SM": 0, "STAGES": 3},
         "8x32768", 1),
        ("multi_row", {"TILE": 8192, "PER_THREAD": 16, "PROGRAMS_PER_SM": 33, "STAGES": 5},
         None, 2),
    ],
)
def test_constraints_at_their_edges(project, variant, params, shape, problems):
    size = None if shape is None else project.parse_size(shape)
    assert len(project.variant(variant).constraints(size, params)) == problems
