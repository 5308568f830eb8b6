"""Which resource binds a kernel's theoretical occupancy, and the number that would lift it.

ncu gives each resource's limit in blocks per SM (`launch__occupancy_limit_*`). Limits on
resources the kernel does not use (shared memory when it has none, barriers when it has none)
only repeat the SM's block limit, so they are not causes. Of the real causes, the one the
user changes most directly is named first: registers, shared memory, then the block size.

The numbers that lift a limit are computed as the hardware allocates: registers per warp in
units of 256 within each of the SM's four sub-partitions (a warp's registers never span two),
and shared memory within the carve-out the launch ran with (`launch__shared_mem_config_size`),
which a kernel may raise up to the SM's maximum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.findings import evidence
from harness.findings.model import fmt
from harness.report import KernelReport

MAX_WARPS = "device__attribute_max_warps_per_multiprocessor"
MAX_BLOCKS = "device__attribute_max_blocks_per_multiprocessor"
REGISTERS_PER_SM = "device__attribute_max_registers_per_multiprocessor"
SHARED_PER_SM = "device__attribute_max_shared_memory_per_multiprocessor"
RESERVED_SHARED = "device__attribute_reserved_shared_memory_per_block"
BARRIERS = "launch__barrier_count"
REGISTERS_PER_BLOCK = "device__attribute_max_registers_per_block"
WARP = 32
REGISTER_STEP = 8  # registers are allocated per thread in steps of 8 (256 per warp)
REGISTER_UNIT = 256  # registers per warp are allocated in units of this many
MAX_REGISTERS = 255  # per thread
SUBPARTITIONS = 4  # an SM's register file is split between its four schedulers

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


def blocks_by_registers(registers: int, warps_per_block: int, per_sm: int,
                        per_block: int | None = None) -> int:
    """Blocks per SM that `registers` per thread allow: each warp's registers, rounded up to
    `REGISTER_UNIT`, must fit in one sub-partition's share of the SM's register file."""
    per_warp = math.ceil(registers * WARP / REGISTER_UNIT) * REGISTER_UNIT
    if not per_warp or (per_block is not None and per_warp * warps_per_block > per_block):
        return 0
    warps = (per_sm // SUBPARTITIONS) // per_warp * SUBPARTITIONS
    return warps // warps_per_block


def register_cap(profile: KernelReport, blocks: int) -> int | None:
    """The most registers per thread (a multiple of `REGISTER_STEP`) at which `blocks` blocks
    fit an SM; None when not even `REGISTER_STEP` fit or the counters are missing."""
    threads, per_sm = profile.launch.block_size, profile.metric(REGISTERS_PER_SM)
    if not threads or per_sm is None:
        return None
    per_block = profile.metric(REGISTERS_PER_BLOCK)
    warps = math.ceil(threads / WARP)
    fitting = [r for r in range(REGISTER_STEP, MAX_REGISTERS + 1, REGISTER_STEP)
               if blocks_by_registers(r, warps, int(per_sm),
                                      int(per_block) if per_block else None) >= blocks]
    return max(fitting) if fitting else None


def next_block_register_cap(profile: KernelReport) -> float | None:
    """The register cap that fits one more block than the registers allow now."""
    blocks = profile.occupancy.block_limits.get("registers")
    if blocks is None:
        return None
    cap = register_cap(profile, int(blocks) + 1)
    return float(cap) if cap is not None else None


def blocks_per_sm(profile: KernelReport) -> int | None:
    """The most blocks an SM holds at once (the smallest block limit), or None."""
    known = [v for v in profile.occupancy.block_limits.values() if v]
    return int(min(known)) if known else None


def second_buffer_room(profile: KernelReport) -> float | None:
    """How many times over the SM's shared memory holds what its resident blocks stage, with
    each block's shared memory doubled (a second buffer), as the blocks the launch allows per
    SM need it; 1 or more: a second buffer fits without costing a block."""
    smem = profile.launch.shared_mem_per_block_bytes
    most = profile.metric(SHARED_PER_SM)
    blocks = blocks_per_sm(profile)
    if not smem or most is None or not blocks:
        return None
    reserved = profile.metric(RESERVED_SHARED) or 0.0
    return most / (blocks * (2 * smem + reserved))


evidence.MEASURES["blocks_per_sm"] = ("blocks an SM can hold at once", blocks_per_sm)
evidence.MEASURES["second_buffer_room"] = (
    "SM shared memory / what its blocks need with a second buffer each", second_buffer_room)
evidence.MEASURES["next_block_register_cap"] = (
    "registers per thread that fit one more block per SM", next_block_register_cap)
evidence.MEASURES["occupancy_causes"] = (
    "resources that bind occupancy together", lambda p: float(len(causes(p)))
    if p.occupancy.limiters else None)


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
    if resource in ("registers", "shared_mem") and warps + warps_per_block > max_warps:
        return None  # one more block would not fit the SM's warps whatever this resource
    per = f"{fmt(blocks, 0)} block{'' if blocks == 1 else 's'} of {warps_per_block} warps per SM"
    if resource == "registers":
        regs = profile.launch.registers_per_thread
        fit = register_cap(profile, blocks + 1)
        if regs is None or fit is None or fit >= regs:
            return None  # the counters disagree: fewer registers would not fit another block
        return Limit(resource, blocks, f"{fmt(regs, 0)} registers per thread allow {per}",
                     f"at most {fit} registers per thread (__launch_bounds__({fmt(threads, 0)}, "
                     f"{blocks + 1}) in CUDA C++, maxnreg={fit} in Triton) would fit "
                     f"{blocks + 1} blocks, "
                     f"{(blocks + 1) * warps_per_block} warps")
    if resource == "shared_mem":
        return _shared_limit(profile, blocks, per, warps_per_block)
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


def _shared_limit(profile: KernelReport, blocks: int, per: str,
                  warps_per_block: int) -> Limit | None:
    """Shared memory's limit: within the carve-out the launch ran with, or the SM's whole
    shared memory; the lift says what fits one more block under each."""
    smem = profile.launch.shared_mem_per_block_bytes or 0.0
    most = profile.metric(SHARED_PER_SM)
    carveout = profile.launch.shared_mem_config_bytes or most
    reserved = profile.metric(RESERVED_SHARED) or 0.0
    if most is None or carveout is None:
        return None
    more = blocks + 1
    needed = more * (smem + reserved)
    fit = carveout / more - reserved
    cause = f"{fmt(smem / 1024)} KiB of shared memory per block allow {per}"
    into = f"{more} blocks, {more * warps_per_block} warps"
    if carveout < most:
        cause += f" within the {fmt(carveout / 1024)} KiB carve-out the launch ran with"
        if needed <= most:
            return Limit("shared_mem", blocks, cause,
                         f"a carve-out of {fmt(needed / 1024)} KiB (of the SM's "
                         f"{fmt(most / 1024)} KiB) would fit {into} as they are, or at most "
                         f"{fmt(fit / 1024)} KiB per block within {fmt(carveout / 1024)} KiB")
    return Limit("shared_mem", blocks, cause,
                 f"at most {fmt(fit / 1024)} KiB per block would fit {into}")
