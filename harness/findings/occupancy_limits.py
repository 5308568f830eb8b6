"""Which resource binds a kernel's theoretical occupancy, and the number that would lift it.

ncu gives each resource's limit in blocks per SM (`launch__occupancy_limit_*`). Limits on
resources the kernel does not use (shared memory when it has none, barriers when it has none)
only repeat the SM's block limit, so they are not causes. Of the real causes, the one the
user changes most directly is named first: registers, shared memory, then the block size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.findings.model import fmt
from harness.report import KernelReport

MAX_WARPS = "device__attribute_max_warps_per_multiprocessor"
MAX_BLOCKS = "device__attribute_max_blocks_per_multiprocessor"
REGISTERS_PER_SM = "device__attribute_max_registers_per_multiprocessor"
SHARED_PER_SM = "device__attribute_max_shared_memory_per_multiprocessor"
RESERVED_SHARED = "device__attribute_reserved_shared_memory_per_block"
BARRIERS = "launch__barrier_count"
WARP = 32
REGISTER_STEP = 8  # registers are allocated per thread in steps of 8 (256 per warp)

# the order in which causes are named when several bind at once
PREFERENCE = ("registers", "shared_mem", "blocks", "warps", "barriers")


@dataclass(frozen=True)
class Limit:
    """The resource that binds, in words, with the change that would lift it."""

    resource: str  # a key of Occupancy.block_limits
    blocks: int  # blocks per SM it allows
    cause: str  # e.g. "168 registers per thread allow 1 block of 8 warps per SM"
    lift: str  # e.g. "at most 128 registers per thread would fit 2 blocks (16 warps)"


def causes(profile: KernelReport) -> tuple[str, ...]:
    """The binding limits that are real causes for this kernel, most changeable first."""
    occ = profile.occupancy
    limiters = set(occ.limiters)
    if (profile.launch.shared_mem_per_block_bytes or 0) <= 0:
        limiters.discard("shared_mem")  # no shared memory: its limit is the block limit
    if not profile.metric(BARRIERS):
        limiters.discard("barriers")
    if len(limiters) > 1:
        limiters.discard("barriers")  # never the one to change while another binds too
    return tuple(r for r in PREFERENCE if r in limiters) + tuple(
        sorted(limiters - set(PREFERENCE)))


def binding(profile: KernelReport) -> Limit | None:
    """The limit to name, or None when the counters needed are missing. Where several
    resources bind at once, its `lift` says what each must become: lifting one alone gains
    nothing."""
    limits = [_limit(profile, resource) for resource in causes(profile)]
    if not limits or any(limit is None for limit in limits):
        return None
    first = limits[0]
    assert first is not None
    if len(limits) == 1:
        return first
    lifts = " and ".join(limit.lift for limit in limits if limit is not None)
    return Limit(first.resource, first.blocks, first.cause, f"only together: {lifts}")


def _limit(profile: KernelReport, resource: str) -> Limit | None:
    threads = profile.launch.block_size
    if not threads:
        return None
    blocks = profile.occupancy.block_limits.get(resource)
    if blocks is None:
        return None
    blocks = int(blocks)
    warps_per_block = math.ceil(threads / WARP)
    warps = blocks * warps_per_block
    max_warps = int(profile.metric(MAX_WARPS) or 64)
    per = f"{fmt(blocks, 0)} block{'' if blocks == 1 else 's'} of {warps_per_block} warps per SM"
    if resource == "registers":
        regs = profile.launch.registers_per_thread
        per_sm = profile.metric(REGISTERS_PER_SM)
        if regs is None or per_sm is None:
            return None
        per_thread = int(per_sm // ((blocks + 1) * warps_per_block * WARP))
        fit = per_thread // REGISTER_STEP * REGISTER_STEP
        return Limit(resource, blocks, f"{fmt(regs, 0)} registers per thread allow {per}",
                     f"at most {fit} registers per thread (__launch_bounds__({fmt(threads, 0)}, "
                     f"{blocks + 1}) in CUDA C++, maxnreg={fit} in Triton) would fit "
                     f"{blocks + 1} blocks, "
                     f"{(blocks + 1) * warps_per_block} warps")
    if resource == "shared_mem":
        smem = profile.launch.shared_mem_per_block_bytes or 0.0
        per_sm = profile.metric(SHARED_PER_SM)
        reserved = profile.metric(RESERVED_SHARED) or 0.0
        if per_sm is None:
            return None
        fit = per_sm / (blocks + 1) - reserved
        return Limit(resource, blocks,
                     f"{fmt(smem / 1024)} KiB of shared memory per block allow {per}",
                     f"at most {fmt(fit / 1024)} KiB per block would fit {blocks + 1} blocks, "
                     f"{(blocks + 1) * warps_per_block} warps")
    if resource == "blocks":
        max_blocks = int(profile.metric(MAX_BLOCKS) or blocks)
        wanted = math.ceil(max_warps / max_blocks) * WARP
        return Limit(resource, blocks,
                     f"{fmt(threads, 0)}-thread blocks hit the SM's limit of {max_blocks} "
                     f"blocks at {warps} of {max_warps} warps",
                     f"{wanted}-thread blocks would allow {max_warps} warps")
    if resource == "warps":
        return Limit(resource, blocks,
                     f"{fmt(threads, 0)}-thread blocks ({warps_per_block} warps) fit {blocks} "
                     f"per SM: {warps} of {max_warps} warps",
                     f"a block of {_dividing(max_warps, warps_per_block)} threads would fill "
                     f"all {max_warps} warps")
    return Limit(resource, blocks, f"{resource} allow {per}",
                 f"fewer {resource} per block would fit {blocks + 1} blocks")


def _dividing(max_warps: int, warps_per_block: int) -> int:
    """The block size (threads) nearest the current one whose warps divide the SM's."""
    sizes = [w for w in range(1, max_warps + 1) if max_warps % w == 0]
    return min(sizes, key=lambda w: (abs(w - warps_per_block), -w)) * WARP
