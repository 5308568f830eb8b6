"""Fix ideas for memory traffic: the busiest memory unit of a memory-bound kernel, global
loads waited on, uncoalesced or scalar accesses, and shared-memory bank conflicts. Each fits
the kernel's shape (tiles or streams), the widths it already uses and where its bytes go."""

from __future__ import annotations

from harness.findings.evidence import Evidence, ev
from harness.findings.fixes.base import FixRule, carried, carried_by
from harness.findings.model import Finding, FixIdea
from harness.report import KernelReport

CARRIES = 50.0  # percent of a stall's samples at global memory
BUSY = 60.0  # percent of peak: memory binds
SCALAR = 10.0  # percent of accesses wider than 32 bits: scalar
UNCOALESCED = 10.0  # percent of sectors beyond the ideal
WIDE_LANE = 8.0  # bytes per lane: loads already 64-bit or wider
RE_READ = 1.5  # L2 sectors read per DRAM sector: the data is re-read through L2
OWN_TRAFFIC = 50.0  # percent of memory instructions that are local: spills and arrays
# percent of DRAM's peak from which more bytes in flight find no bandwidth left to use
DRAM_SATURATED = 85.0


def _memory_bound(profile: KernelReport, finding: Finding, unit: str) -> bool:
    return (finding.rule == "bound" and finding.metrics.get("bound") == "memory"
            and finding.metrics.get("memory_unit") == unit)


def _bound(profile: KernelReport) -> tuple[Evidence, ...]:
    """Memory binds, compute idles, and the traffic is the kernel's data (not its spills)."""
    return (ev(profile, "memory_pct", ">=", BUSY), ev(profile, "compute_pct", "<", BUSY),
            ev(profile, "local_of_memory_pct", "<", OWN_TRAFFIC))


def reuse_from_registers(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """L1/TEX binds a tiled kernel: operands re-read from shared memory or L1."""
    if not _memory_bound(profile, finding, "L1/TEX"):
        return None
    return FixIdea(
        "reuse_from_registers", "Reuse data from registers.",
        "The L1/TEX unit (which also serves shared memory) is the busiest unit, so every load "
        "that can come from a register instead takes pressure off it.",
        "What if each thread computed several outputs and kept the operands it reuses in "
        "registers, so fewer loads go through L1/TEX and shared memory?",
        (*_bound(profile), ev(profile, "tiles", ">=", 1.0),
         ev(profile, "l2_reads_per_dram_read", ">=", RE_READ)))


def fewer_l1_accesses(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """L1/TEX binds a kernel that streams."""
    if not _memory_bound(profile, finding, "L1/TEX"):
        return None
    return FixIdea(
        "fewer_l1_accesses", "Issue fewer L1 accesses.",
        "The L1/TEX unit (which also serves shared memory) is the busiest unit: every load, "
        "store and shared-memory round trip passes through it.",
        "What if each loaded value fed more of a thread's work from registers, and each "
        "access moved more bytes (coalesced, 128-bit)?",
        (*_bound(profile), ev(profile, "tiles", "<", 1.0)))


def stage_in_shared_memory(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """L2 binds a tiled kernel that re-reads its tiles from L2."""
    if not _memory_bound(profile, finding, "L2"):
        return None
    return FixIdea(
        "stage_in_shared_memory", "Keep data closer to the SM.",
        "L2 is the busiest memory unit, so tiles that are re-read from L2 should be staged in "
        "shared memory once per block.",
        "What if we staged the tiles each block re-reads in shared memory, so L2 serves each "
        "byte once per block?",
        (*_bound(profile), ev(profile, "tiles", ">=", 1.0),
         ev(profile, "l2_reads_per_dram_read", ">=", RE_READ)))


def touch_l2_fewer_times(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """L2 binds a kernel that streams."""
    if not _memory_bound(profile, finding, "L2"):
        return None
    return FixIdea(
        "touch_l2_fewer_times", "Touch L2 fewer times.",
        "L2 is the busiest memory unit: the kernel's data passes through it more than once or "
        "in small pieces.",
        "What if the passes over the same data were fused into one, or the data re-read kept "
        "L2-resident (an access policy window) and read in full sectors?",
        (*_bound(profile), ev(profile, "tiles", "<", 1.0)))


def larger_tiles(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """DRAM binds a tiled kernel that reads its data more than once."""
    if not _memory_bound(profile, finding, "DRAM"):
        return None
    return FixIdea(
        "larger_tiles", "Move fewer bytes from DRAM.",
        "DRAM bandwidth binds and the data is read more than once: larger tiles re-read less, "
        "raising the arithmetic intensity.",
        "What if each loaded element were reused more often (larger tiles), raising the "
        "arithmetic intensity past the roofline's ridge point?",
        (*_bound(profile), ev(profile, "tiles", ">=", 1.0),
         ev(profile, "l2_reads_per_dram_read", ">=", RE_READ)))


def fewer_bytes(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """DRAM binds a kernel that streams its own data (not its spills) once."""
    if not _memory_bound(profile, finding, "DRAM"):
        return None
    return FixIdea(
        "fewer_bytes", "Move fewer bytes.",
        "DRAM bandwidth binds a kernel that uses each byte about once: only fewer bytes make "
        "it faster.",
        "What if the data were stored in a narrower type, or this kernel were fused with the "
        "one that writes its input, so the bytes cross DRAM once?",
        (*_bound(profile), ev(profile, "tiles", "<", 1.0)))


def hide_latency(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Neither compute nor memory is busy: too little independent work in flight."""
    if finding.rule != "bound" or finding.metrics.get("bound") != "latency":
        return None
    return FixIdea(
        "hide_latency", "Hide latency with more independent work.",
        "Neither unit is busy: the schedulers run out of ready warps. More warps per SM, or "
        "more independent instructions per warp, keep the units fed.",
        "What if each warp had more independent instructions in flight (more outputs per "
        "thread, loads issued ahead of their use)?",
        (ev(profile, "compute_pct", "<", BUSY), ev(profile, "memory_pct", "<", BUSY)))


def prefetch_next_tile(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Warps of a tiled kernel wait on global loads it does not yet overlap with work, and the
    SM's shared memory holds a second buffer for each resident block."""
    if not carried_by(finding, ("long_scoreboard",), "global"):
        return None
    return FixIdea(
        "prefetch_next_tile", "Hide global-memory latency.",
        "Warps wait for data from global memory; loading the next tile while computing on "
        "this one overlaps that wait with work.",
        "What if the next tile were loaded while the current one is being computed on "
        "(double buffering or cp.async)?",
        (carried(profile, finding, CARRIES), ev(profile, "tiles", ">=", 1.0),
         ev(profile, "async_copy_executed", "<=", 0.0),
         ev(profile, "dram_pct", "<", DRAM_SATURATED),
         ev(profile, "second_buffer_room", ">=", 1.0)))


def more_loads_in_flight(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Warps of a streaming kernel wait on their global loads."""
    if not carried_by(finding, ("long_scoreboard",), "global"):
        return None
    return FixIdea(
        "more_loads_in_flight", "Keep more bytes in flight.",
        "Warps wait for data from global memory; more independent loads per thread before "
        "the first use put more bytes in flight per warp.",
        "What if each thread issued more independent loads before using the first of them "
        "(an unrolled loop over several elements)?",
        (carried(profile, finding, CARRIES), ev(profile, "tiles", "<", 1.0),
         ev(profile, "dram_pct", "<", DRAM_SATURATED)))


def coalesce(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Global accesses move sectors beyond what their bytes need."""
    if finding.rule != "coalescing" or finding.kind != "bad":
        return None
    direction = str(finding.metrics.get("direction", "loads and stores"))
    verb = {"loads": "read", "stores": "wrote"}.get(direction, "walked")
    return FixIdea(
        "coalesce", "Coalesce global memory accesses.",
        f"Neighbouring threads of a warp access addresses far apart ({direction}), so each "
        "32-byte sector moves only a few useful bytes.",
        f"What if consecutive threads (threadIdx.x) {verb} consecutive addresses, so a warp's "
        "32 accesses share four sectors?",
        (ev(profile, "global_excess_pct", ">=", UNCOALESCED),))


def wider_global_accesses(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Coalesced global accesses that are 32-bit: float4 moves four times the bytes per
    instruction. Not for a gather (each lane its own sector) nor loads already 64-bit."""
    if finding.rule != "vectorization" or finding.kind != "bad" \
            or not finding.metrics.get("scalar_global_loads"):
        return None
    return FixIdea(
        "wider_global_accesses", "Use fewer but wider global loads.",
        "Each 32-bit load is one instruction for four bytes of a coalesced run; a 128-bit "
        "(float4) load moves four times as much per instruction and takes pressure off the "
        "LSU and the LG queue.",
        "What if global memory were read as float4 (128-bit) vectors, with 16-byte aligned "
        "data?",
        (ev(profile, "vector:global_load", "<=", SCALAR),
         ev(profile, "global_excess_pct", "<", UNCOALESCED),
         ev(profile, "global_load_lane_bytes", "<", WIDE_LANE)))


def wider_shared_stores(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Scalar shared accesses of a kernel that re-reads what it stages."""
    if finding.rule != "vectorization" or finding.kind != "bad" \
            or finding.metrics.get("scalar_global_loads"):
        return None
    return FixIdea(
        "wider_shared_stores", "Use fewer but wider shared-memory accesses.",
        "The block re-reads what it stages in shared memory with 32-bit accesses; 128-bit "
        "ones move four words per MIO slot.",
        "What if shared memory were read and written as 128-bit vectors, with 16-byte aligned "
        "tiles?",
        (ev(profile, "vector:shared_load", "<=", SCALAR), ev(profile, "tiles", ">=", 1.0)))


def pad_or_swizzle(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Shared loads or stores hit bank conflicts (plain LDS/STS: matrix loads take several
    wavefronts by design)."""
    if finding.rule != "bank_conflicts" or finding.kind != "bad":
        return None
    direction = str(finding.metrics.get("direction", "load"))
    if finding.metrics.get("by_instruction"):  # the instructions' own excess wavefronts
        because = (ev(profile, f"shared_{direction}_excess_pct", ">=", 5.0),)
    else:
        because = (ev(profile, f"shared_{direction}_conflict_pct", ">=", 5.0),
                   ev(profile, f"opcode:{'LDS' if direction == 'load' else 'STS'}", ">", 0.0))
    return FixIdea(
        "pad_or_swizzle", f"Eliminate bank conflicts on shared {direction}s.",
        f"Threads of a warp that touch the same bank serialize, so each conflicting {direction} "
        "costs extra wavefronts. Padding each row by one element, or a swizzled index, spreads "
        "a warp's addresses over all 32 banks.",
        f"What if the shared arrays were padded or swizzled so that the {direction}s of one "
        "warp fall into 32 different banks?", because)


RULES = tuple(FixRule(f.__name__, answers, f) for f, answers in (
    (reuse_from_registers, ("bound",)),
    (fewer_l1_accesses, ("bound",)),
    (stage_in_shared_memory, ("bound",)),
    (touch_l2_fewer_times, ("bound",)),
    (larger_tiles, ("bound",)),
    (fewer_bytes, ("bound",)),
    (hide_latency, ("bound",)),
    (prefetch_next_tile, ("stalls",)),
    (more_loads_in_flight, ("stalls",)),
    (coalesce, ("coalescing",)),
    (wider_global_accesses, ("vectorization",)),
    (wider_shared_stores, ("vectorization",)),
    (pad_or_swizzle, ("bank_conflicts",)),
))
