"""The typed per-kernel profile: the vocabulary every later stage speaks.

A `KernelReport` holds what ncu measured for one kernel launch, grouped the way ncu's own
sections group it. Values are in ncu's base units (nanoseconds, cycles, bytes, cycles per
second, percent). Metrics differ across architectures and ncu versions, so every number is
`float | None`: `None` means "not collected", never zero.

Building a profile from a report lives in `harness.report.builder`; this module only defines
the records and the small derived quantities that follow from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from harness.report.roofline import Roofline
from harness.rundir import RULES_LEFT_OUT

Number = float | None  # None: the metric was not collected in this report

# ncu_report's MsgType names (NONE, OK, OPTIMIZATION, WARNING, ERR), shortened; ncu's text
# output prints OK as "INF" and WARN as "WRN" (see `RuleResult.tag`).
RuleType = Literal["NONE", "OK", "OPT", "WARN", "ERROR"]
MemorySpace = Literal["global", "shared", "local", "constant", "generic"]  # generic: LD/ST/ATOM
AccessKind = Literal["load", "store", "atomic"]


@dataclass(frozen=True)
class SpeedOfLight:
    """GPU Speed Of Light Throughput."""

    duration_ns: Number = None  # gpu__time_duration.sum
    elapsed_cycles: Number = None  # gpc__cycles_elapsed.max
    sm_active_cycles: Number = None  # sm__cycles_active.avg
    sm_frequency_hz: Number = None  # gpc__cycles_elapsed.avg.per_second
    dram_frequency_hz: Number = None  # dram__cycles_elapsed.avg.per_second
    compute_throughput_pct: Number = None  # sm__throughput.avg.pct_of_peak_sustained_elapsed
    memory_throughput_pct: Number = None  # gpu__compute_memory_throughput.avg.pct_of_peak_...
    dram_throughput_pct: Number = None  # gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed
    l1_throughput_pct: Number = None  # l1tex__throughput.avg.pct_of_peak_sustained_active
    l2_throughput_pct: Number = None  # lts__throughput.avg.pct_of_peak_sustained_elapsed


@dataclass(frozen=True)
class LaunchConfig:
    """Launch Statistics."""

    grid: tuple[int, int, int] | None = None  # launch__grid_dim_{x,y,z}
    block: tuple[int, int, int] | None = None  # launch__block_dim_{x,y,z}
    grid_size: Number = None  # launch__grid_size (blocks)
    block_size: Number = None  # launch__block_size (threads per block)
    threads: Number = None  # launch__thread_count
    registers_per_thread: Number = None  # launch__registers_per_thread
    shared_mem_static_bytes: Number = None  # launch__shared_mem_per_block_static
    shared_mem_dynamic_bytes: Number = None  # launch__shared_mem_per_block_dynamic
    shared_mem_config_bytes: Number = None  # launch__shared_mem_config_size
    waves_per_sm: Number = None  # launch__waves_per_multiprocessor

    @property
    def shared_mem_per_block_bytes(self) -> Number:
        """Static plus dynamic shared memory per block, when both were collected."""
        if self.shared_mem_static_bytes is None or self.shared_mem_dynamic_bytes is None:
            return None
        return self.shared_mem_static_bytes + self.shared_mem_dynamic_bytes


OccupancyLimiter = Literal["registers", "shared_mem", "warps", "blocks", "barriers"]
# launch__occupancy_limit_<name>, in the order ncu lists them
OCCUPANCY_LIMITERS: tuple[OccupancyLimiter, ...] = (
    "registers", "shared_mem", "warps", "blocks", "barriers")


def limiters_of(block_limits: Mapping[str, Number]) -> tuple[str, ...]:
    """The resources whose block limit is the smallest (ties bind together)."""
    known = {name: v for name, v in block_limits.items() if v is not None}
    if not known:
        return ()
    least = min(known.values())
    return tuple(name for name, v in known.items() if v == least)


@dataclass(frozen=True)
class Occupancy:
    """Occupancy: theoretical against achieved, and which resource limits blocks per SM."""

    theoretical_pct: Number = None  # sm__maximum_warps_per_active_cycle_pct
    achieved_pct: Number = None  # sm__warps_active.avg.pct_of_peak_sustained_active
    theoretical_active_warps: Number = None  # sm__maximum_warps_avg_per_active_cycle
    achieved_active_warps: Number = None  # sm__warps_active.avg.per_cycle_active
    # launch__occupancy_limit_<name>: blocks per SM each resource alone would allow.
    block_limits: dict[str, Number] = field(default_factory=dict)

    @property
    def limiters(self) -> tuple[str, ...]:
        """The resources whose block limit is the smallest (ties bind together)."""
        return limiters_of(self.block_limits)


# Stall reasons (metric stems) in the words the pages and diffs use.
STALL_LABELS: dict[str, str] = {
    "mio_throttle": "MIO throttle", "long_scoreboard": "long scoreboard",
    "short_scoreboard": "short scoreboard", "barrier": "barrier", "not_selected": "not selected",
    "math_pipe_throttle": "math pipe throttle", "wait": "wait", "lg_throttle": "LG throttle",
    "tex_throttle": "TEX throttle", "membar": "memory barrier", "branch_resolving":
    "branch resolving", "dispatch_stall": "dispatch stall", "drain": "drain", "gmma": "GMMA",
    "imc_miss": "IMC miss", "misc": "misc", "no_instruction": "no instruction",
    "selected": "selected", "sleeping": "sleeping",
}


def stall_label(reason: str) -> str:
    return STALL_LABELS.get(reason, reason.replace("_", " "))


@dataclass(frozen=True)
class StallReason:
    """One warp stall reason: average cycles a warp spends in it per issued instruction."""

    reason: str  # metric stem, e.g. "mio_throttle", "long_scoreboard"
    label: str  # ncu's wording, e.g. "MIO Throttle"
    cycles_per_issue: float  # smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio


@dataclass(frozen=True)
class WarpState:
    """Warp State Statistics; `stalls` is sorted, largest first."""

    cycles_per_issued_instruction: Number = None  # smsp__average_warp_latency_per_inst_issued.ratio
    # smsp__average_warps_active_per_inst_executed.ratio
    cycles_per_executed_instruction: Number = None
    avg_active_threads_per_warp: Number = None  # smsp__thread_inst_executed_per_inst_executed.ratio
    stalls: tuple[StallReason, ...] = ()

    def stall(self, reason: str) -> Number:
        """Cycles per issued instruction stalled for `reason`, or None if not collected."""
        for stall in self.stalls:
            if stall.reason == reason:
                return stall.cycles_per_issue
        return None


@dataclass(frozen=True)
class Scheduler:
    """Scheduler Statistics (per scheduler averages)."""

    active_warps: Number = None  # smsp__warps_active.avg.per_cycle_active
    eligible_warps: Number = None  # smsp__warps_eligible.avg.per_cycle_active
    issued_warps: Number = None  # smsp__issue_active.avg.per_cycle_active
    no_eligible_pct: Number = None  # smsp__issue_inst0.avg.pct_of_peak_sustained_active
    one_or_more_eligible_pct: Number = None  # smsp__issue_active.avg.pct_of_peak_sustained_active


@dataclass(frozen=True)
class BankConflictStats:
    """Shared-memory bank conflicts for one direction (loads or stores)."""

    requests: Number = None  # smsp__sass_inst_executed_op_shared_{ld,st}.sum
    wavefronts: Number = None  # l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum
    conflicts: Number = None  # l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum

    @property
    def ways(self) -> Number:
        """Average N-way conflict: wavefronts per request, as ncu's rule reports it."""
        if not self.requests or self.wavefronts is None:
            return None
        return self.wavefronts / self.requests

    @property
    def conflict_share_pct(self) -> Number:
        """Conflicts as a share of all wavefronts, in percent."""
        if not self.wavefronts or self.conflicts is None:
            return None
        return 100.0 * self.conflicts / self.wavefronts


@dataclass(frozen=True)
class SharedBankConflicts:
    loads: BankConflictStats = field(default_factory=BankConflictStats)
    stores: BankConflictStats = field(default_factory=BankConflictStats)


@dataclass(frozen=True)
class OpcodeCount:
    """Executed warp-level instructions of one opcode (sass__inst_executed_per_opcode)."""

    opcode: str
    executed: float
    share_pct: float


@dataclass(frozen=True)
class MemoryAccessWidth:
    """Executed memory instructions of one space, direction and width, read from the SASS
    opcode-with-modifier counts (for example LDG.E.128 -> global, load, 128 bits)."""

    space: MemorySpace
    kind: AccessKind
    width_bits: int
    executed: float


@dataclass(frozen=True)
class MemoryWidths:
    accesses: tuple[MemoryAccessWidth, ...] = ()

    def executed(
        self, space: MemorySpace, kind: AccessKind, width_bits: int | None = None
    ) -> float:
        """Executed instructions of one space and direction, of one width or of all widths."""
        return sum(
            a.executed
            for a in self.accesses
            if a.space == space
            and a.kind == kind
            and (width_bits is None or a.width_bits == width_bits)
        )

    def vectorized_share_pct(self, space: MemorySpace, kind: AccessKind) -> Number:
        """Share (percent) of executed instructions wider than 32 bits; None if there are none."""
        total = self.executed(space, kind)
        if not total:
            return None
        wide = sum(
            a.executed
            for a in self.accesses
            if a.space == space and a.kind == kind and a.width_bits > 32
        )
        return 100.0 * wide / total


@dataclass(frozen=True)
class RuleResult:
    """One of ncu's own rule results (the OPT/INF/WARN messages of its sections)."""

    name: str  # rule identifier, e.g. "SOLBottleneck"
    title: str
    type: RuleType
    message: str  # plain text: ncu's @...@ link markup already resolved
    speedup_pct: Number = None  # ncu's estimated speedup, percent
    speedup_type: str | None = None  # "local" / "global" as ncu gives it
    section: str | None = None  # section identifier the rule belongs to

    @property
    def tag(self) -> str:
        """The tag ncu's details page prints before the message."""
        return {"OK": "INF", "WARN": "WRN", "ERROR": "ERR"}.get(self.type, self.type)

    @property
    def is_problem(self) -> bool:
        """ncu flags something to fix (an optimization or a warning), not an observation."""
        return self.type in ("OPT", "WARN", "ERROR")


def _sectors_beyond(sectors: Number, ideal: Number) -> Number:
    """The sectors moved beyond an ideal; None where either is unknown."""
    if sectors is None or ideal is None:
        return None
    return max(sectors - ideal, 0.0)


def _share_pct(sectors: Number, part: Number) -> Number:
    """`part` as a percentage of `sectors`; None where either is unknown or none moved."""
    if not sectors or part is None:
        return None
    return 100.0 * part / sectors


@dataclass(frozen=True)
class GlobalAccesses:
    """Global loads or stores of one direction, as L1TEX saw them (Memory Workload Analysis),
    with the width of each lane's access from the SASS opcodes (LDG or STG).

    ncu's Source Counters count the ideal instruction by instruction: a warp instruction's
    distinct bytes over 32, rounded up. Over the whole kernel only the bytes are known. Were
    every lane of every instruction to ask for bytes of its own, the ideal would be those bytes
    over 32; what falls short of that ("deficient" instructions: a broadcast, lanes idle or
    predicated off) may round up by under a sector each. `ideal_sectors` takes them for
    single-lane instructions, each a whole sector for one lane's bytes: it gives Source
    Counters' figure on every committed report (the naive product's broadcast load of B beside
    its scattered load of A: 84.85% excess both ways; the coalesced one's broadcast beside a
    coalesced load: none), but for warps of a few lanes it may be off either way (25 of 32
    lanes: 16.9% excess where there is none). `most_ideal_sectors` is the most the ideal can
    be, for a verdict of "uncoalesced" that no pattern of lanes could undo."""

    sectors: Number = None  # l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum
    # smsp__sass_average_data_bytes_per_sector_mem_global_op_{ld,st}.ratio: of each 32-byte
    # sector moved, the bytes some thread asked for (bytes two lanes share count once)
    bytes_per_sector: Number = None
    instructions: Number = None  # smsp__sass_inst_executed_op_global_{ld,st}.sum (warp-level)
    # bytes per lane over the executed LDG (STG) opcodes: their average and the narrowest;
    # None where their count does not match `instructions` or was not collected
    lane_bytes: Number = None
    narrowest_lane_bytes: Number = None

    def _judged(self) -> bool:
        return bool(self.sectors is not None and self.bytes_per_sector
                    and self.bytes_per_sector > 0 and self.instructions and self.lane_bytes
                    and self.narrowest_lane_bytes and self.lane_bytes <= 16)

    def _asked_and_deficit(self) -> tuple[float, float]:
        """(distinct bytes asked, in sectors; what full lanes would have asked beyond them)."""
        asked = (self.bytes_per_sector or 0.0) * (self.sectors or 0.0) / 32.0
        return asked, max((self.instructions or 0.0) * (self.lane_bytes or 0.0) - asked, 0.0)

    @property
    def ideal_sectors(self) -> Number:
        if not self._judged():
            return None
        asked, deficit = self._asked_and_deficit()
        width = self.lane_bytes or 0.0  # a full warp asks `width` sectors' worth
        narrow = min(self.instructions or 0.0, deficit / (width - width / 32.0))
        return asked + narrow * (1.0 - width / 32.0)

    @property
    def most_ideal_sectors(self) -> Number:
        """The asked bytes over 32, plus just under a sector for each instruction that can be
        deficient: each lacks at least one lane of the narrowest width."""
        if not self._judged():
            return None
        asked, deficit = self._asked_and_deficit()
        deficient = min(self.instructions or 0.0,
                        deficit * 32.0 / (self.narrowest_lane_bytes or 1.0))
        return asked + deficient * 31.0 / 32.0

    @property
    def excessive_sectors(self) -> Number:
        return _sectors_beyond(self.sectors, self.ideal_sectors)

    def _pct_beyond(self, ideal: Number) -> Number:
        return _share_pct(self.sectors, _sectors_beyond(self.sectors, ideal))

    @property
    def excess_pct(self) -> Number:
        return self._pct_beyond(self.ideal_sectors)

    @property
    def least_excess_pct(self) -> Number:
        """The excess no pattern of lanes could explain away (with `most_ideal_sectors`)."""
        return self._pct_beyond(self.most_ideal_sectors)


@dataclass(frozen=True)
class AsyncCopies:
    """cp.async loads (LDGSTS: global memory copied straight into shared memory), as L1TEX
    saw them.

    Their sectors are counted apart from LDG's, in the counters the memory tables' widget reads,
    and no counter says how many bytes of those sectors the lanes asked for. So the ideal is
    only bounded: a warp instruction whose 32 lanes each copy `lane_bytes` bytes of their own
    needs `lane_bytes` sectors (32 lanes x lane_bytes / 32 bytes), and none needs more. The
    excess stated is what lies beyond that bound: Source Counters' count where warps are full
    (the product's async-copy GEMM at 1024: 523,616 with `pages` and 523,664 with `full`
    against its 524,288 excessive sectors), less where lanes sit idle or share bytes, never
    more. So it can call copies uncoalesced, never coalesced."""

    # sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_{access,bypass}.sum, added
    sectors: Number = None
    instructions: Number = None  # executed LDGSTS warp instructions, from the opcodes
    lane_bytes: Number = None  # bytes per lane, averaged over those opcodes' widths

    @property
    def most_ideal_sectors(self) -> Number:
        """What full warps of lanes with bytes of their own need: the most the ideal can be."""
        if self.sectors is None or not self.instructions or not self.lane_bytes:
            return None
        return self.instructions * self.lane_bytes

    @property
    def excessive_sectors(self) -> Number:
        """The sectors beyond `most_ideal_sectors`: the least the excess can be."""
        return _sectors_beyond(self.sectors, self.most_ideal_sectors)

    @property
    def excess_pct(self) -> Number:
        return _share_pct(self.sectors, self.excessive_sectors)

    @property
    def least_excess_pct(self) -> Number:
        """The same as `excess_pct`: for cp.async the estimate is the bound."""
        return self.excess_pct


# The name of the cp.async direction, beside "loads" (LDG) and "stores" (STG).
ASYNC_LOADS = "cp.async loads"


@dataclass(frozen=True)
class Coalescing:
    """Global access efficiency from Memory Workload Analysis metrics that `pages` and `full`
    both collect: the sectors moved beyond what the bytes asked for need, which ncu's Source
    Counters count per instruction."""

    loads: GlobalAccesses = field(default_factory=GlobalAccesses)
    stores: GlobalAccesses = field(default_factory=GlobalAccesses)
    async_copies: AsyncCopies = field(default_factory=AsyncCopies)

    def _moved(self) -> dict[str, GlobalAccesses | AsyncCopies]:
        """"loads"/"stores"/"cp.async loads" -> its accesses, for those that moved sectors
        (cp.async loads: that were executed, their sectors collected or not)."""
        moved: dict[str, GlobalAccesses | AsyncCopies] = {
            name: accesses for name, accesses in (("loads", self.loads),
                                                  ("stores", self.stores)) if accesses.sectors}
        if self.async_copies.instructions:
            moved[ASYNC_LOADS] = self.async_copies
        return moved

    def directions(self) -> dict[str, GlobalAccesses | AsyncCopies]:
        """Name -> accesses, for the directions that moved sectors and can be judged. LDG's
        loads cannot beside cp.async loads: L1TEX's global load sectors count some of theirs
        (the async-copy GEMM at 1024: 1,966,080 for 8,192 LDG of 16-byte lanes, which can move
        131,072 at most)."""
        return {name: accesses for name, accesses in self._moved().items()
                if accesses.excessive_sectors is not None
                and not (name == "loads" and self.async_copies.instructions)}

    def unjudged(self) -> dict[str, str]:
        """Name -> why, for the directions that moved sectors the counters cannot judge."""
        judged = self.directions()
        return {name: _why_not_judged(name, self) for name in self._moved()
                if name not in judged}

    def bounded_only(self) -> bool:
        """Whether a judged direction's excess is only a bound (cp.async loads): then no
        verdict of "coalesced"."""
        return ASYNC_LOADS in self.directions()

    @property
    def global_sectors(self) -> Number:
        moved = self.directions()
        return sum(a.sectors or 0.0 for a in moved.values()) if moved else None

    @property
    def global_excessive_sectors(self) -> Number:
        moved = self.directions()
        return sum(a.excessive_sectors or 0.0 for a in moved.values()) if moved else None

    @property
    def global_excess_pct(self) -> Number:
        return _share_pct(self.global_sectors, self.global_excessive_sectors)

    @property
    def global_least_excess_pct(self) -> Number:
        """The share of sectors excess whatever pattern of lanes the instructions had."""
        moved = self.directions().values()
        return _share_pct(self.global_sectors,
                          sum(_sectors_beyond(a.sectors, a.most_ideal_sectors) or 0.0
                              for a in moved))


def _why_not_judged(name: str, coalescing: Coalescing) -> str:
    if name == ASYNC_LOADS:
        return "their sectors were not collected"
    if coalescing.async_copies.instructions:
        return "L1TEX counts cp.async loads' sectors among theirs"
    return "their opcodes' count does not match the instructions counted, or was not collected"


@dataclass(frozen=True)
class Metric:
    """One metric of the report as ncu_report holds it, in base units.

    `value` is the number (or string) of a plain metric and None for an instanced one, whose
    values are in `instances` as (correlation id, value): ids are PCs for per-instruction
    metrics and names (opcodes, categories) for the others.
    """

    name: str
    label: str
    unit: str
    value: float | str | None = None
    instances: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class PipeUse:
    """Utilization of one SM pipe (Compute Workload Analysis), over the SM's active cycles."""

    pipe: str  # metric stem: "fma", "fp64", "xu", "lsu", "tensor_op_hmma", ...
    label: str  # ncu's wording: "FMA", "FP64", "Tensor (FP)", ...
    measure: Literal["instructions", "cycles"]  # % of peak issue rate, or % of cycles busy
    # sm__inst_executed_pipe_<p> or sm__pipe_<p>_cycles_active .avg.pct_of_peak_sustained_active
    pct: float


@dataclass(frozen=True)
class Divergence:
    """How many lanes of a warp do work, on average over executed warp instructions."""

    active_threads_per_warp: Number = None  # smsp__thread_inst_executed_per_inst_executed.ratio
    # smsp__thread_inst_executed_pred_on_per_inst_executed.ratio
    not_predicated_off_threads_per_warp: Number = None
    branch_efficiency_pct: Number = None  # smsp__sass_average_branch_targets_threads_uniform.pct
    divergent_branches: Number = None  # smsp__sass_branch_targets_threads_divergent.sum
    branch_instructions: Number = None  # smsp__inst_executed_op_branch.sum

    @property
    def working_lanes(self) -> Number:
        """Lanes that are active and not predicated off: the ones doing the work."""
        if self.not_predicated_off_threads_per_warp is not None:
            return self.not_predicated_off_threads_per_warp
        return self.active_threads_per_warp


@dataclass(frozen=True)
class Atomics:
    """Atomic operations (ATOM, RED) and what they cost in L2."""

    global_atom_requests: Number = None  # l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum
    global_red_requests: Number = None  # l1tex__t_requests_pipe_lsu_mem_global_op_red.sum
    shared_atom_instructions: Number = None  # smsp__inst_executed_op_shared_atom.sum
    l2_atom_sectors: Number = None  # lts__t_sectors_srcunit_tex_op_atom.sum
    l2_red_sectors: Number = None  # lts__t_sectors_srcunit_tex_op_red.sum
    # lts__d_atomic_input_cycles_active.{avg,max}.pct_of_peak_sustained_elapsed: the L2 atomic
    # units' busy share on an average slice and on the busiest one (same address: one slice)
    l2_atomic_unit_avg_pct: Number = None
    l2_atomic_unit_max_pct: Number = None

    @property
    def global_requests(self) -> float:
        return (self.global_atom_requests or 0.0) + (self.global_red_requests or 0.0)


@dataclass(frozen=True)
class LocalMemory:
    """Per-thread local memory: register spills and arrays the compiler could not keep in
    registers (dynamically indexed ones) both live there."""

    load_instructions: Number = None  # sass__inst_executed_local_loads
    store_instructions: Number = None  # sass__inst_executed_local_stores
    spill_instructions: Number = None  # sass__inst_executed_register_spilling
    spill_requests: Number = None  # derived__local_spilling_requests
    spill_overhead_pct: Number = None  # derived__local_spilling_requests_pct

    @property
    def instructions(self) -> float:
        return (self.load_instructions or 0.0) + (self.store_instructions or 0.0)


@dataclass(frozen=True)
class SassInstruction:
    """One SASS instruction of the kernel and the per-instruction counters at its PC."""

    pc: int
    # e.g. "LDG.E R4, desc[UR4][R2.64]"; "" for an instruction never executed nor sampled
    sass: str
    executed: float  # warp-level executions (inst_executed)
    source: str | None = None  # "file.cu:42" with -lineinfo
    stall_samples: Mapping[str, int] = field(default_factory=dict)  # reason -> samples
    # shared-memory wavefronts at this PC and the fewest its accesses need (Source Counters'
    # memory_l1_wavefronts_shared and _ideal, in `--set full`); None where not collected
    shared_wavefronts: float | None = None
    shared_wavefronts_ideal: float | None = None

    @property
    def opcode(self) -> str:
        """The opcode with its modifiers, a guard predicate left out: "LDGSTS.E.BYPASS.128" of
        "@P0 LDGSTS.E.BYPASS.128 [R21], ..."; "" for an instruction without text."""
        words = self.sass.split(None, 2)
        if words and words[0].startswith("@"):
            words = words[1:]
        return words[0] if words else ""

    @property
    def shared_excess(self) -> float:
        """Shared wavefronts beyond the fewest this instruction's accesses need (0 where not
        collected)."""
        return max((self.shared_wavefronts or 0.0) - (self.shared_wavefronts_ideal or 0.0), 0.0)


@dataclass(frozen=True)
class InstructionClass:
    """Executed warp instructions of one class (FP32, FP64, tensor, global load, ...)."""

    name: str
    executed: float
    share_pct: float
    opcodes: tuple[str, ...]  # most executed first


@dataclass(frozen=True)
class MetricRow:
    """One row of a table of ncu's details page."""

    label: str  # ncu's wording, e.g. "Compute (SM) Throughput"
    unit: str  # display unit, e.g. "ms"
    value: str  # display value, e.g. "5.51"
    metric: str  # metric name
    raw_value: float | int | str | None  # base units, as ncu_report gives it
    raw_unit: str


@dataclass(frozen=True)
class BodyTable:
    """A table of a section's body: its titles as ncu prints them above it, and its rows."""

    titles: tuple[str, ...]  # e.g. ("GPU Throughput Chart", "Table Name : GPU Throughput")
    rows: tuple[MetricRow, ...]
    # a table of named columns instead (ncu's NUMA Affinity table): one cell tuple per row
    columns: tuple[str, ...] = ()
    cells: tuple[tuple[str, ...], ...] = ()
    align: str = ""  # per column "<" or ">"


@dataclass(frozen=True)
class SectionView:
    identifier: str
    name: str
    rows: tuple[MetricRow, ...]
    rules: tuple[RuleResult, ...]
    body: tuple[BodyTable, ...] = ()


@dataclass(frozen=True)
class KernelView:
    """ncu's details page of one kernel: the headline and its sections."""

    kernel_id: int
    name: str
    headline: str  # "my_kernel (32, 32, 1)x(32, 32, 1), Context 1, Stream 7, Device 0, CC 9.0"
    sections: tuple[SectionView, ...]


@dataclass(frozen=True)
class KernelReport:
    """Everything ncuh knows about one profiled kernel launch."""

    kernel_id: int  # 0-based, report order (ranges, then actions)
    name: str  # function name, e.g. "my_kernel"
    demangled_name: str
    device: str | None = None  # e.g. "NVIDIA H100 80GB HBM3"
    compute_capability: str | None = None  # e.g. "9.0"
    speed_of_light: SpeedOfLight = field(default_factory=SpeedOfLight)
    launch: LaunchConfig = field(default_factory=LaunchConfig)
    occupancy: Occupancy = field(default_factory=Occupancy)
    warp_state: WarpState = field(default_factory=WarpState)
    scheduler: Scheduler = field(default_factory=Scheduler)
    bank_conflicts: SharedBankConflicts = field(default_factory=SharedBankConflicts)
    coalescing: Coalescing = field(default_factory=Coalescing)
    instruction_mix: tuple[OpcodeCount, ...] = ()  # sorted, most executed first
    memory_widths: MemoryWidths = field(default_factory=MemoryWidths)
    executed_instructions: Number = None  # smsp__inst_executed.sum
    local_memory_spill_requests: Number = None  # derived__local_spilling_requests
    rules: tuple[RuleResult, ...] = ()
    nvtx_ranges: tuple[str, ...] = ()
    pipes: tuple[PipeUse, ...] = ()  # busiest first
    divergence: Divergence = field(default_factory=Divergence)
    atomics: Atomics = field(default_factory=Atomics)
    local_memory: LocalMemory = field(default_factory=LocalMemory)
    instruction_classes: tuple[InstructionClass, ...] = ()  # most executed first
    sass: tuple[SassInstruction, ...] = ()  # in PC order
    source_files: Mapping[str, str] = field(default_factory=dict)  # imported sources: path -> text
    roofline: Roofline = field(default_factory=Roofline)
    details: KernelView | None = None  # ncu's details page of this kernel
    # metrics by name: of a whole profile, those the pages read (`page_metrics.PAGE_METRICS`);
    # of a summary (`builder.summarize_kernel`), the aggregate of each metric its reader wants
    metrics: Mapping[str, Metric] = field(default_factory=dict, repr=False)
    mangled_name: str = ""  # the name `ncu --kernel-name-base mangled -k` matches exactly

    def metric(self, name: str) -> Number:
        """A plain numeric metric in base units; None when absent, instanced or a string (a
        whole profile holds only the metrics the pages read: `page_metrics.PAGE_METRICS`)."""
        metric = self.metrics.get(name)
        if metric is None or isinstance(metric.value, str):
            return None
        return metric.value

    def numbers(self) -> dict[str, float]:
        """Every plain numeric metric by name (what `ncuh diff` compares)."""
        return {name: m.value for name, m in self.metrics.items()
                if isinstance(m.value, float)}

    def pipe(self, pipe: str, measure: str | None = None) -> Number:
        """The highest utilization recorded for `pipe` (of either measure unless given)."""
        values = [p.pct for p in self.pipes
                  if p.pipe == pipe and (measure is None or p.measure == measure)]
        return max(values) if values else None

    def instruction_class(self, name: str) -> InstructionClass | None:
        for cls in self.instruction_classes:
            if cls.name == name:
                return cls
        return None

    def rules_of(self, section: str) -> tuple[RuleResult, ...]:
        """ncu's rule results of one section (by identifier)."""
        return tuple(r for r in self.rules if r.section == section)

    @property
    def rules_for_pages(self) -> tuple[RuleResult, ...]:
        """ncu's rule results that findings and diffs read: all but those of the rules `pages`
        does not run (`RULES_LEFT_OUT`) where the coalescing finding could judge the report's
        global accesses from the memory counters, so that a page says the same of a `pages`
        and a `full` report (the details page still prints every result)."""
        if not self.coalescing.directions():
            return self.rules  # nothing judged (another set, no opcodes): ncu's word stands
        return tuple(r for r in self.rules if r.name not in RULES_LEFT_OUT)
