"""The Triton kernels of the softmax chain, one group per iteration.

Every kernel reads `x` and writes `out`, both float32 row-major `rows x cols`, through
pointers the launchers in `softmax_triton_project` pass as torch tensors. Row offsets are
computed in 64 bits (`row * cols` passes 2^31 elements on large matrices). Masked-off lanes
load -inf: it leaves a maximum unchanged and its exponential adds 0 to a sum.

Triton specializes an integer argument that is a multiple of 16 (`cols` here): every row then
starts 64-byte aligned and the loads and stores become 128-bit. Odd `cols` run the same code
with narrower accesses.

This module imports Triton at the top; the project module imports it only inside a launch, so
the project loads on a machine without Triton.
"""

from __future__ import annotations

import triton
import triton.language as tl

# A global a kernel reads must be a constexpr.
NEG_INF = tl.constexpr(float("-inf"))


# --- iteration 1: three kernels, intermediates in global memory ------------------------------


@triton.jit
def softmax_naive_max(x_ptr, max_ptr, cols, BLOCK: tl.constexpr):
    """row_max[r] = max(x[r, :]): one program per row, BLOCK columns per step."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    offsets = tl.arange(0, BLOCK)
    largest = tl.full([BLOCK], NEG_INF, tl.float32)
    for start in range(0, cols, BLOCK):
        columns = start + offsets
        values = tl.load(x_row + columns, mask=columns < cols, other=NEG_INF)
        largest = tl.maximum(largest, values)
    tl.store(max_ptr + row, tl.max(largest, axis=0))


@triton.jit
def softmax_naive_exp_sum(x_ptr, max_ptr, numerator_ptr, sum_ptr, cols, BLOCK: tl.constexpr):
    """numerator[r, :] = exp(x[r, :] - row_max[r]) and row_sum[r] = its sum."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    numerator_row = numerator_ptr + row * cols
    row_max = tl.load(max_ptr + row)
    offsets = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        columns = start + offsets
        mask = columns < cols
        values = tl.exp(tl.load(x_row + columns, mask=mask, other=NEG_INF) - row_max)
        tl.store(numerator_row + columns, values, mask=mask)
        total += values
    tl.store(sum_ptr + row, tl.sum(total, axis=0))


@triton.jit
def softmax_naive_divide(numerator_ptr, sum_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    """out[r, :] = numerator[r, :] / row_sum[r]."""
    row = tl.program_id(0).to(tl.int64)
    numerator_row = numerator_ptr + row * cols
    out_row = out_ptr + row * cols
    row_sum = tl.load(sum_ptr + row)
    offsets = tl.arange(0, BLOCK)
    for start in range(0, cols, BLOCK):
        columns = start + offsets
        mask = columns < cols
        values = tl.load(numerator_row + columns, mask=mask, other=0.0)
        tl.store(out_row + columns, values / row_sum, mask=mask)


# --- iteration 2: one kernel, the maximum and the sum in one pass ----------------------------


@triton.jit
def softmax_online(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    """One program per row: an online (max, sum) pass over BLOCK-wide chunks, then a pass that
    writes exp(x - max) / sum. Rows of any length; x is read twice, out written once."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    out_row = out_ptr + row * cols
    offsets = tl.arange(0, BLOCK)
    # Each lane keeps its own running maximum and the sum of exp(x - that maximum): no
    # cross-lane reduction inside the loop, one at the end.
    lane_max = tl.full([BLOCK], NEG_INF, tl.float32)
    lane_sum = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        columns = start + offsets
        values = tl.load(x_row + columns, mask=columns < cols, other=NEG_INF)
        new_max = tl.maximum(lane_max, values)
        # A lane that has seen only masked (-inf) columns would compute exp(-inf - -inf) = NaN;
        # shifting by 0 there keeps its sum at exp(-inf) = 0.
        shift = tl.where(new_max == NEG_INF, 0.0, new_max)
        lane_sum = lane_sum * tl.exp(lane_max - shift) + tl.exp(values - shift)
        lane_max = new_max
    row_max = tl.max(lane_max, axis=0)
    row_sum = tl.sum(lane_sum * tl.exp(lane_max - row_max), axis=0)
    scale = 1.0 / row_sum
    for start in range(0, cols, BLOCK):
        columns = start + offsets
        mask = columns < cols
        values = tl.load(x_row + columns, mask=mask, other=NEG_INF)
        tl.store(out_row + columns, tl.exp(values - row_max) * scale, mask=mask)


# --- iteration 3: the whole row in registers --------------------------------------------------


@triton.jit
def softmax_fused(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    """One program per row, BLOCK >= cols: one read of x, one write of out."""
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    values = tl.load(x_ptr + row * cols + offsets, mask=mask, other=NEG_INF)
    shifted = values - tl.max(values, axis=0)
    numerator = tl.exp(shifted)
    scale = 1.0 / tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * cols + offsets, numerator * scale, mask=mask)


# --- iteration 4: tiles of several rows, a persistent grid ------------------------------------


@triton.jit
def softmax_multi_row(x_ptr, out_ptr, rows, cols, ROWS: tl.constexpr, BLOCK: tl.constexpr,
                      STAGES: tl.constexpr):
    """Each program walks tiles of ROWS rows x BLOCK (>= cols) columns, tile = program id,
    then every num_programs-th; STAGES > 1 lets Triton load the next tile during this one."""
    row_offsets = tl.arange(0, ROWS)
    offsets = tl.arange(0, BLOCK)
    column_mask = offsets < cols
    tiles = tl.cdiv(rows, ROWS)
    for tile in tl.range(tl.program_id(0), tiles, tl.num_programs(0), num_stages=STAGES):
        row = (tile * ROWS + row_offsets).to(tl.int64)  # rows < 2^31: the product fits
        mask = (row < rows)[:, None] & column_mask[None, :]
        places = row[:, None] * cols + offsets[None, :]
        values = tl.load(x_ptr + places, mask=mask, other=NEG_INF)
        # Rows past the end are all -inf and compute NaN; their stores are masked off.
        shifted = values - tl.max(values, axis=1)[:, None]
        numerator = tl.exp(shifted)
        scale = 1.0 / tl.sum(numerator, axis=1)
        tl.store(out_ptr + places, numerator * scale[:, None], mask=mask)
