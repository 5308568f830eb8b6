"""The Triton softmax kernels compiled for sm_90 without a GPU: what the notes claim of them.

Triton compiles to PTX and a cubin with its own ptxas, no device needed. Checked: each kernel
keeps its Python name (what the capture filters and the pages see); with `cols` a multiple of
16 every access to a row is 128-bit; `multi_row` with STAGES > 1 stages its next tile in
shared memory with cp.async, in the bytes `staged_bytes` counts. Skipped without Triton.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from harness.project import load_project

triton = pytest.importorskip("triton")

FOLDER = Path(__file__).resolve().parents[2] / "kernels" / "softmax_triton"
PROJECT = load_project(FOLDER / "ncuh.toml")
import softmax_triton_kernels as kernels  # noqa: E402  (on sys.path once the project loads)

module = sys.modules["softmax_triton_project"]
SM_90 = ("cuda", 90, 32)


def _compile(function, constants: dict[str, int], integers: dict[str, int], warps: int):
    """Compile `function` as a launch with these constexprs and integer arguments would:
    pointers 16-byte aligned, integers that are multiples of 16 marked so (Triton's own
    specialization of a launch)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature, attributes = {}, {}
    for index, name in enumerate(function.arg_names):
        if name in constants:
            signature[name] = "constexpr"
            continue
        signature[name] = "i32" if name in integers else "*fp32"
        if name not in integers or integers[name] % 16 == 0:
            attributes[(index,)] = [["tt.divisibility", 16]]
    source = ASTSource(fn=function, signature=signature, constexprs=constants,
                       attrs=attributes)
    return triton.compile(source, target=GPUTarget(*SM_90), options={"num_warps": warps})


def _accesses(compiled, kind: str) -> set[str]:
    return set(re.findall(rf"\b{kind}\.global(?:\.\w+)*", compiled.asm["ptx"]))


ROWS, COLS = 8192, 8192  # the profile size


@pytest.mark.parametrize(
    ("function", "constants", "warps"),
    [
        (kernels.softmax_naive_max, {"BLOCK": 1024}, 4),
        (kernels.softmax_naive_exp_sum, {"BLOCK": 1024}, 4),
        (kernels.softmax_naive_divide, {"BLOCK": 1024}, 4),
        (kernels.softmax_online, {"BLOCK": 2048}, 8),
        (kernels.softmax_fused, {"BLOCK": 8192}, 16),
        (kernels.softmax_multi_row, {"ROWS": 1, "BLOCK": 8192, "STAGES": 1}, 16),
    ],
    ids=lambda value: getattr(value, "__name__", None) or "",
)
def test_rows_move_in_128_bit_accesses(function, constants, warps):
    compiled = _compile(function, constants, {"rows": ROWS, "cols": COLS}, warps)
    assert compiled.metadata.name == function.__name__
    loads, stores = _accesses(compiled, "ld"), _accesses(compiled, "st")
    row_loads = {"ld.global.v4.b32"}
    # naive's second and third kernels load one float per row: its maximum or its sum
    scalar_in = {"softmax_naive_exp_sum", "softmax_naive_divide"}
    assert loads == row_loads | ({"ld.global.b32"} if function.__name__ in scalar_in else set())
    # the first two naive kernels store one float per row
    scalar_out = {"softmax_naive_max", "softmax_naive_exp_sum"}
    wide = set() if function.__name__ == "softmax_naive_max" else {"st.global.v4.b32"}
    assert stores == wide | ({"st.global.b32"} if function.__name__ in scalar_out else set())


def test_odd_columns_compile_to_narrow_accesses():
    compiled = _compile(kernels.softmax_fused, {"BLOCK": 512}, {"cols": 333}, 1)
    assert _accesses(compiled, "ld") == {"ld.global.b32"}
    assert _accesses(compiled, "st") == {"st.global.b32"}


@pytest.mark.parametrize(("cols", "stages"), [(8192, 2), (8192, 3), (256, 2), (16384, 2)])
def test_multi_row_stages_its_next_tiles_in_shared_memory(cols, stages):
    tile = 8192
    constants = {"ROWS": module.tile_rows(cols, tile), "BLOCK": module.row_block(cols),
                 "STAGES": stages}
    warps = module.warps_for(constants["ROWS"] * constants["BLOCK"], 16)
    compiled = _compile(kernels.softmax_multi_row, constants, {"rows": 4096, "cols": cols},
                        warps)
    assert "cp.async" in compiled.asm["ptx"]
    staged = module.staged_bytes(cols, tile, stages)
    # the staged tiles, plus a few bytes of scratch for the reductions
    assert staged <= compiled.metadata.shared < staged + 4096
