"""The typed per-kernel profile: the vocabulary every later stage speaks.

A `KernelProfile` holds what ncu measured for one kernel launch, grouped the way ncu's own
sections group it. Values are in ncu's base units (nanoseconds, cycles, bytes, cycles per
second, percent). Metrics differ across architectures and ncu versions, so every number is
`float | None`: `None` means "not collected", never zero.

Building a profile from a report lives in `harness.report.profile_builder`; this module only defines
the records and the small derived quantities that follow from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Number = float | None  # None: the metric was not collected in this report

RuleType = Literal["OPT", "WARN", "INF", "ERROR", "OK", "NONE"]
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
        known = {name: v for name, v in self.block_limits.items() if v is not None}
        if not known:
            return ()
        least = min(known.values())
        return tuple(name for name, v in known.items() if v == least)


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


@dataclass(frozen=True)
class Coalescing:
    """Global-memory access efficiency (Source Counters / Memory Workload Analysis)."""

    global_sectors: Number = None  # memory_l2_theoretical_sectors_global
    # derived__memory_l2_theoretical_sectors_global_excessive (sectors, whatever its unit says)
    global_excessive_sectors: Number = None
    shared_wavefronts: Number = None  # memory_l1_wavefronts_shared
    shared_excessive_wavefronts: Number = None  # derived__memory_l1_wavefronts_shared_excessive

    @property
    def global_excess_pct(self) -> Number:
        if not self.global_sectors or self.global_excessive_sectors is None:
            return None
        return 100.0 * self.global_excessive_sectors / self.global_sectors


@dataclass(frozen=True)
class KernelProfile:
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
