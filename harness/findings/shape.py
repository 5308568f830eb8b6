"""The kernel's shape, for choosing advice: does it tile (stage data in shared memory that the
block re-reads, or feed tensor cores), or does it stream (each byte used about once)?

Tiling advice ("larger tiles", "load the next tile while computing this one") fits only the
first; a sum, a scan or an elementwise kernel gets advice about bytes in flight, widths and
fusion instead.
"""

from __future__ import annotations

from harness.findings import evidence
from harness.findings.evidence import Evidence
from harness.report import KernelReport

# shared loads per shared store from which the block re-reads what it staged (a tile)
SHARED_REUSE = 3.0
# percent of executed instructions: shared loads this common are the kernel's business
SHARED_LOAD_SHARE = 1.0
# opcodes that only tiled kernels execute: asynchronous copies into shared memory, TMA,
# matrix loads from shared memory and the MMAs they feed
TILE_OPCODES = ("LDGSTS", "UTMALDG", "UBLKCP", "LDSM", "HMMA", "HGMMA", "IMMA", "IGMMA",
                "QGMMA", "DMMA")


def _executed(profile: KernelReport, opcodes: tuple[str, ...]) -> float:
    return sum(o.executed for o in profile.instruction_mix if o.opcode in opcodes)


def tile_evidence(profile: KernelReport) -> tuple[Evidence, ...]:
    """What calling the kernel tiled rests on (all must hold, or the opcodes of tiling)."""
    if _executed(profile, TILE_OPCODES):
        return (Evidence("tile_opcodes_executed", ">", 0.0,
                         _executed(profile, TILE_OPCODES)),)
    widths = profile.memory_widths
    loads, stores = widths.executed("shared", "load"), widths.executed("shared", "store")
    total = sum(o.executed for o in profile.instruction_mix)
    reuse = loads / stores if stores else (float("inf") if loads else 0.0)
    share = 100.0 * loads / total if total else None
    return (Evidence("shared_loads_per_store", ">=", SHARED_REUSE, reuse),
            Evidence("shared_load_share_pct", ">=", SHARED_LOAD_SHARE, share))


def tiles(profile: KernelReport) -> bool:
    """Whether the kernel tiles (see the module's description). Without an instruction mix
    the shape is not judged and the rules keep their general (tiling) advice."""
    if not profile.instruction_mix:
        return True
    return all(e.holds() for e in tile_evidence(profile))



def _tiles_measure(profile: KernelReport) -> float | None:
    return (1.0 if tiles(profile) else 0.0) if profile.instruction_mix else None


evidence.MEASURES["tiles"] = (
    "the kernel tiles: re-reads what it stages in shared memory, or feeds tensor cores (1 yes, "
    "0 no)", _tiles_measure)
