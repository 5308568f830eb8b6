"""What a finding rests on: named measures of a profile and the thresholds a claim needs.

A rule declares each claim's evidence as `Evidence(measure, op, threshold, value)`. The
registry reads every measure again from the profile (`read`) and keeps a finding only when
each is present and agrees with its threshold; otherwise the page says "not judged" and why.
Measures are named, so a test can audit every claim of every report the same way.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from harness.report import MATH_CLASSES, KernelReport, site_words, sites_by_reason, stall_label

Op = Literal[">=", "<=", ">", "<"]
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
# how the pages write each comparison (no markup characters in Markdown)
OP_WORDS = {">=": "≥", "<=": "≤", ">": "over", "<": "under"}

# opcodes that do multiply-adds: a GEMM's inner product
FMA_OPCODES = ("FFMA", "DFMA", "HFMA2", "HMMA", "HGMMA", "DMMA", "IMMA", "IGMMA", "QGMMA")
# atomics by space (REDUX combines a warp's values in registers, no memory atomic)
SHARED_ATOMIC_OPCODES = ("ATOMS",)
GLOBAL_ATOMIC_OPCODES = ("ATOM", "ATOMG", "RED", "REDG")
# opcodes that do half-precision math (scalar pairs or tensor cores)
FP16_OPCODES = ("HFMA2", "HADD2", "HMUL2", "HMMA", "HGMMA")


WITH_MODIFIERS = "sass__inst_executed_per_opcode_with_modifier_all"
# ptxas loads 32-bit constants with `HFMA2.MMA Rd, -RZ, RZ, imm`: a register move on the MMA
# pipe, no half-precision math; counted as FP16 math only while the FP16 pipe shows work
REGISTER_MOVE = "HFMA2.MMA"


def register_moves(profile: KernelReport) -> float:
    """Executed HFMA2.MMA that are register moves: all of them while the FP16 pipe did no
    work (0 when the opcodes with their modifiers were not collected)."""
    if (profile.pipe("fma_type_fp16") or 0.0) > 0.0:
        return 0.0
    metric = profile.metrics.get(WITH_MODIFIERS)
    if metric is None:
        return 0.0
    return sum(n for op, n in metric.instances if op == REGISTER_MOVE)


def fp16_math(profile: KernelReport) -> float | None:
    """Executed half-precision math instructions (HFMA2, HADD2, HMUL2, HMMA, HGMMA), without
    the HFMA2.MMA register moves; None without an instruction mix."""
    found = executed(profile, FP16_OPCODES)
    return None if found is None else max(0.0, found - register_moves(profile))


def _sum_mix(profile: KernelReport) -> float:
    return sum(o.executed for o in profile.instruction_mix)


def executed(profile: KernelReport, opcodes: tuple[str, ...]) -> float | None:
    """Executed warp instructions of these opcodes; None without an instruction mix."""
    if not profile.instruction_mix:
        return None
    return sum(o.executed for o in profile.instruction_mix if o.opcode in opcodes)


def share_of_mix(profile: KernelReport, opcodes: tuple[str, ...]) -> float | None:
    """These opcodes' share of all executed instructions, in percent (one counter family)."""
    total = _sum_mix(profile)
    part = executed(profile, opcodes)
    return 100.0 * part / total if part is not None and total else None


def share_of_whole(part: float, whole: float | None) -> float | None:
    """A part's share of its whole in percent; None when the whole is unknown or smaller than
    the part (counters that disagree: a share of a whole never exceeds 100%)."""
    if not whole or part < 0 or part > whole:
        return None
    return 100.0 * part / whole


def opcode_share(profile: KernelReport, opcodes: tuple[str, ...]) -> float | None:
    """These opcodes' shares of executed instructions as the instruction mix states them, in
    percent; None without an instruction mix."""
    if not profile.instruction_mix:
        return None
    return sum(o.share_pct for o in profile.instruction_mix
               if o.opcode in opcodes and o.executed)


def share_of_executed(profile: KernelReport, opcodes: tuple[str, ...]) -> float | None:
    """These opcodes' executed warp instructions against the kernel's executed total, in
    percent (how the rules that name a dominant kind of work count it)."""
    part = executed(profile, opcodes)
    total = profile.executed_instructions
    return share_of_whole(part, total) if part is not None and total else None


def _per_request(profile: KernelReport, sectors: tuple[str, ...]) -> float | None:
    requests = profile.atomics.global_requests
    if not requests:
        return None
    return sum(profile.metric(m) or 0.0 for m in sectors) / requests


def _math_executed(profile: KernelReport) -> float:
    return sum(c.executed for c in profile.instruction_classes if c.name in MATH_CLASSES)


def fma_share_of_math(profile: KernelReport) -> float | None:
    """Multiply-adds (and MMAs) among all math instructions, in percent."""
    math = _math_executed(profile)
    fma = executed(profile, FMA_OPCODES)
    return 100.0 * fma / math if math and fma is not None else None


def math_share(profile: KernelReport) -> float | None:
    """Math instructions (FP32, FP64, FP16, tensor, XU) among all executed, in percent."""
    total = _sum_mix(profile)
    return 100.0 * _math_executed(profile) / total if total else None


def spill_share(profile: KernelReport) -> float | None:
    """Register spills among the local loads and stores, in percent (None: not collected)."""
    local = profile.local_memory
    if local.spill_instructions is None or not local.instructions:
        return None
    return 100.0 * min(local.spill_instructions, local.instructions) / local.instructions


def sm_busy_pct(profile: KernelReport) -> float | None:
    """The share of the kernel's elapsed cycles the average SM had a warp resident, in
    percent: what is left is the time SMs sat idle (a tail, a small grid, imbalance)."""
    sol = profile.speed_of_light
    if sol.sm_active_cycles is None or not sol.elapsed_cycles:
        return None
    return 100.0 * sol.sm_active_cycles / sol.elapsed_cycles


def local_of_memory_pct(profile: KernelReport) -> float | None:
    """Local loads and stores among the local and global ones, in percent: how much of the
    kernel's memory traffic is its own spills and per-thread arrays."""
    local = profile.local_memory
    loads, stores = profile.coalescing.loads.instructions, profile.coalescing.stores.instructions
    if local.load_instructions is None and local.store_instructions is None:
        return None
    whole = local.instructions + (loads or 0.0) + (stores or 0.0)
    return 100.0 * local.instructions / whole if whole else None


def l2_reads_per_dram_read(profile: KernelReport) -> float | None:
    """Sectors L1 read from L2 per sector L2 read from DRAM: about 1 when every byte comes
    from DRAM once (nothing re-read through L2), more when L2 serves re-reads."""
    l2 = profile.metric("lts__t_sectors_srcunit_tex_op_read.sum")
    dram = profile.metric("dram__sectors_read.sum")
    return l2 / dram if l2 is not None and dram else None


def warp_instructions_per_warp(profile: KernelReport) -> float | None:
    """Executed warp instructions per launched warp: how much work one warp does."""
    launch = profile.launch
    total = profile.executed_instructions
    if not total or not launch.grid_size or not launch.block_size:
        return None
    return total / (launch.grid_size * -(-launch.block_size // 32))


def _sol(attr: str) -> Callable[[KernelReport], float | None]:
    return lambda p: getattr(p.speed_of_light, attr)


def _ratio(hot: float | None, avg: float | None) -> float | None:
    if hot is None or avg is None:
        return None
    return hot / avg if avg else float("inf")


# measure -> (words for the page, reader); parametrized measures are in `read`
MEASURES: dict[str, tuple[str, Callable[[KernelReport], float | None]]] = {
    "compute_pct": ("SM throughput (% of peak)", _sol("compute_throughput_pct")),
    "memory_pct": ("memory throughput (% of peak)", _sol("memory_throughput_pct")),
    "dram_pct": ("DRAM throughput (% of peak)", _sol("dram_throughput_pct")),
    "l2_pct": ("L2 throughput (% of peak)", _sol("l2_throughput_pct")),
    "l1_pct": ("L1/TEX throughput (% of peak)", _sol("l1_throughput_pct")),
    "theoretical_occupancy_pct": ("theoretical occupancy (%)",
                                  lambda p: p.occupancy.theoretical_pct),
    "achieved_occupancy_pct": ("achieved occupancy (%)", lambda p: p.occupancy.achieved_pct),
    "achieved_of_theoretical_pct": (
        "achieved occupancy (% of theoretical)",
        lambda p: 100.0 * p.occupancy.achieved_pct / p.occupancy.theoretical_pct
        if p.occupancy.achieved_pct is not None and p.occupancy.theoretical_pct else None),
    "working_lanes": ("working lanes per warp instruction (of 32)",
                      lambda p: p.divergence.working_lanes),
    "fma_share_of_math_pct": ("multiply-adds and MMAs (% of math instructions)",
                              fma_share_of_math),
    "math_share_pct": ("math instructions (% of executed)", math_share),
    "fp16_executed": ("FP16 math instructions executed (register moves excluded)",
                      fp16_math),
    "hfma2_share_of_math_pct": (
        "HFMA2 (% of math instructions, register moves excluded)",
        lambda p: 100.0 * max(0.0, (executed(p, ("HFMA2",)) or 0.0) - register_moves(p))
        / _math_executed(p) if _math_executed(p) and p.instruction_mix else None),
    "shuffle_share_pct": ("SHFL (% of executed)", lambda p: share_of_mix(p, ("SHFL",))),
    "atomic_share_pct": ("atomics (% of executed)",
                         lambda p: share_of_mix(p, ("ATOM", "ATOMG", "ATOMS", "RED", "REDG",
                                                    "REDUX"))),
    "atomic_executed": ("atomic instructions executed",
                        lambda p: executed(p, ("ATOM", "ATOMG", "ATOMS", "RED", "REDG",
                                               "REDUX"))),
    "barrier_share_pct": ("BAR (% of executed)", lambda p: share_of_mix(p, ("BAR",))),
    "l2_atomic_busiest_pct": ("busiest L2 slice's atomic unit (% busy)",
                              lambda p: p.atomics.l2_atomic_unit_max_pct),
    "l2_atomic_concentration": (
        "busiest L2 atomic unit / average",
        lambda p: _ratio(p.atomics.l2_atomic_unit_max_pct, p.atomics.l2_atomic_unit_avg_pct)),
    "global_excess_pct": ("excess global sectors (%)",
                          lambda p: p.coalescing.global_excess_pct),
    "local_instructions": ("local loads and stores executed",
                           lambda p: p.local_memory.instructions
                           if p.local_memory.load_instructions is not None
                           or p.local_memory.store_instructions is not None else None),
    "spill_instructions": ("register-spill instructions executed",
                           lambda p: p.local_memory.spill_instructions),
    "spill_share_of_local_pct": ("register spills (% of local loads and stores)", spill_share),
    "waves": ("waves per SM", lambda p: p.launch.waves_per_sm),
    "grid_blocks": ("blocks in the grid", lambda p: p.launch.grid_size),
    "shared_load_conflict_pct": ("shared-load wavefronts that are conflicts (%)",
                                 lambda p: p.bank_conflicts.loads.conflict_share_pct),
    "shared_store_conflict_pct": ("shared-store wavefronts that are conflicts (%)",
                                  lambda p: p.bank_conflicts.stores.conflict_share_pct),
    "executed_instructions": ("warp instructions executed", lambda p: _sum_mix(p) or None),
    "shared_atomic_share_pct": ("ATOMS (% of executed)",
                                lambda p: share_of_executed(p, SHARED_ATOMIC_OPCODES)),
    "global_atomic_share_pct": ("global atomics ATOM/RED (% of executed)",
                                lambda p: share_of_executed(p, GLOBAL_ATOMIC_OPCODES)),
    "global_atomic_sectors_per_request": (
        "sectors per warp-level global atomic",
        lambda p: _per_request(p, ("l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
                                   "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum"))),
    "cluster_size": ("blocks per thread-block cluster",
                     lambda p: p.metric("launch__cluster_size")),
    "registers_per_thread": ("registers per thread",
                             lambda p: p.launch.registers_per_thread),
    "block_threads": ("threads per block", lambda p: p.launch.block_size),
    "sm_busy_pct": ("SM active cycles (% of elapsed)", sm_busy_pct),
    "local_of_memory_pct": ("local loads and stores (% of local and global ones)",
                            local_of_memory_pct),
    "l2_reads_per_dram_read": ("L2 sectors read by L1 per DRAM sector read",
                               l2_reads_per_dram_read),
    "warp_instructions_per_warp": ("warp instructions executed per launched warp",
                                   warp_instructions_per_warp),
    "global_load_lane_bytes": ("bytes per lane of the average global load",
                               lambda p: p.coalescing.loads.lane_bytes),
    "async_copy_executed": ("TMA and cp.async instructions executed",
                            lambda p: executed(p, ("LDGSTS", "UTMALDG", "UBLKCP"))),
    "mma_executed": ("MMA instructions (WGMMA or mma.sync) executed",
                     lambda p: executed(p, ("HGMMA", "QGMMA", "IGMMA", "BGMMA", "HMMA", "IMMA",
                                            "DMMA", "BMMA"))),
    "shared_executed": ("shared-memory instructions executed",
                        lambda p: executed(p, ("LDS", "STS", "LDSM", "STSM", "ATOMS"))),
}


# measure kinds other modules add, "kind:argument" -> (words for the page, reader)
PARAMETRIZED: dict[str, tuple[Callable[[str], str],
                              Callable[[KernelReport, str], float | None]]] = {}


def words(measure: str) -> str:
    """How the page names a measure."""
    kind, _, arg = measure.partition(":")
    if kind in PARAMETRIZED:
        return PARAMETRIZED[kind][0](arg)
    if kind == "pipe":
        return f"{arg.upper()} pipe (% of peak)"
    if kind == "stall":
        return f"{arg.replace('_', ' ').replace('+', ' and ')} stall (% of cycles per issue)"
    if kind == "opcode":
        return f"{arg} executed"
    if kind == "class":
        return f"{arg} instructions (% of executed)"
    if kind == "share":
        return f"{arg.replace('+', '/')} (% of executed)"
    if kind == "vector":
        return f"{arg.replace('_', ' ')}s wider than 32 bits (%)"
    if kind == "carried":
        reason, _, key = arg.partition(":")
        return f"{stall_label(reason)} samples at {site_words(key)} (%)"
    return MEASURES[measure][0] if measure in MEASURES else measure


def read(profile: KernelReport, measure: str) -> float | None:
    """The value of a named measure in this profile; None when not collected."""
    kind, _, arg = measure.partition(":")
    if kind in PARAMETRIZED:
        return PARAMETRIZED[kind][1](profile, arg)
    if kind == "pipe":
        return profile.pipe(arg)
    if kind == "opcode":
        return executed(profile, (arg,))
    if kind == "class":
        found = profile.instruction_class(arg)
        return found.share_pct if found is not None else None
    if kind == "share":
        return opcode_share(profile, tuple(arg.split("+")))
    if kind == "stall":
        # several reasons joined by "+" add up (a barrier and the fence that comes with it)
        total = profile.warp_state.cycles_per_issued_instruction
        values = [profile.warp_state.stall(r) for r in arg.split("+")]
        if all(v is None for v in values):
            return None
        return share_of_whole(sum(v or 0.0 for v in values), total)
    if kind == "vector":
        space, _, direction = arg.partition("_")
        return profile.memory_widths.vectorized_share_pct(space, direction)  # type: ignore[arg-type]
    if kind == "carried":
        reason, _, key = arg.partition(":")
        sites = sites_by_reason(profile).get(reason)
        return sites.share(key) if sites is not None and sites.enough else None
    if measure not in MEASURES:
        raise KeyError(f"unknown measure {measure!r}")
    return MEASURES[measure][1](profile)


@dataclass(frozen=True)
class Evidence:
    """One measure a claim rests on, the threshold it must pass, and the value read."""

    measure: str
    op: Op
    threshold: float
    value: float | None

    def holds(self) -> bool:
        return self.value is not None and _OPS[self.op](self.value, self.threshold)

    def text(self) -> str:
        shown = "not collected" if self.value is None else _num(self.value)
        return f"{words(self.measure)} {shown} {OP_WORDS[self.op]} {_num(self.threshold)}"


def _num(value: float) -> str:
    if value == float("inf"):
        return "inf"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.2f}".rstrip("0").rstrip(".") if not float(value).is_integer() \
        else f"{value:.0f}"


def ev(profile: KernelReport, measure: str, op: Op, threshold: float) -> Evidence:
    """Evidence read from the profile now (rules call this beside their claim)."""
    return Evidence(measure, op, threshold, read(profile, measure))


def because(evidence: tuple[Evidence, ...]) -> str:
    """The "because" line of a finding: its evidence, as the page shows it."""
    return "; ".join(e.text() for e in evidence)


def failing(profile: KernelReport, evidence: tuple[Evidence, ...]) -> list[Evidence]:
    """The declared evidence that the profile, read again, does not bear out."""
    out = []
    for e in evidence:
        again = Evidence(e.measure, e.op, e.threshold, read(profile, e.measure))
        if not again.holds():
            out.append(again)
    return out
