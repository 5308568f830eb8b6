"""Why a kernel changed: the profiler's evidence, ranked, in a sentence and in detail.

For a pair of kernels with profiles on both sides, `explain` collects
  * the counters that moved most (relative change, from a curated list of counters that say
    something about the cause: bank conflicts, wavefronts, bytes moved, instructions, spills),
  * the warp stall reasons whose cycles per issued instruction moved most,
  * occupancy (theoretical, achieved) and which resource limits blocks per SM,
  * ncu's own rules that appeared, disappeared or changed their estimated speedup,
and folds the strongest of each into one summary line such as
"duration +94%: shared-store bank conflicts 0 -> 16.3M; MIO throttle stall per instruction
+3.1; ncu now estimates a speedup of 52% from 'Shared Store Bank Conflicts'".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from harness.diff.formatting import count, percent, quantity
from harness.diff.inputs import KernelData
from harness.diff.thresholds import NCU_DURATION
from harness.diff.verdicts import MetricVerdict
from harness.report import OCCUPANCY_LIMITERS, RuleResult, limiters_of, stall_label

# Counters that point at a cause, with the words used for them.
EXPLANATORY_COUNTERS: dict[str, str] = {
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "shared-store bank conflicts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared-load bank conflicts",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "shared-store wavefronts",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "shared-load wavefronts",
    "smsp__sass_inst_executed_op_shared_st.sum": "shared-store instructions",
    "smsp__sass_inst_executed_op_shared_ld.sum": "shared-load instructions",
    "smsp__sass_inst_executed_op_global_ld.sum": "global-load instructions",
    "smsp__sass_inst_executed_op_global_st.sum": "global-store instructions",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global-load L1 sectors",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "global-store L1 sectors",
    "smsp__inst_executed.sum": "instructions executed",
    "dram__bytes_read.sum": "DRAM bytes read",
    "dram__bytes_write.sum": "DRAM bytes written",
    "lts__t_sectors.sum": "L2 sectors",
    "sass__inst_executed_register_spilling": "register spill instructions",
    "smsp__sass_inst_executed_op_local_ld.sum": "local-memory loads",
    "smsp__sass_inst_executed_op_local_st.sum": "local-memory stores",
    "launch__registers_per_thread": "registers per thread",
    "launch__shared_mem_per_block_static": "static shared memory per block",
    "launch__shared_mem_per_block_dynamic": "dynamic shared memory per block",
    "launch__grid_size": "blocks in the grid",
    "launch__block_size": "threads per block",
    "smsp__average_warp_latency_per_inst_issued.ratio": "warp cycles per issued instruction",
}
# Units of those counters that have one (the rest are plain counts).
COUNTER_UNITS: dict[str, str] = {
    "dram__bytes_read.sum": "B", "dram__bytes_write.sum": "B",
    "smsp__inst_executed.sum": "inst", "launch__registers_per_thread": "reg",
    "launch__shared_mem_per_block_static": "B", "launch__shared_mem_per_block_dynamic": "B",
}
MIN_COUNTER_CHANGE_PCT = 1.0
MAX_COUNTERS = 6

STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"
MIN_STALL_DELTA = 0.1  # cycles per issued instruction
MAX_STALLS = 3

MIN_OCCUPANCY_DELTA = 2.0  # percentage points
MIN_RULE_DELTA = 5.0  # percentage points of ncu's estimated speedup


@dataclass(frozen=True)
class Move:
    """One quantity that changed between baseline and current."""

    name: str  # metric name or rule key
    label: str
    baseline: float | None
    current: float | None
    text: str  # the phrase used in summaries

    def to_json(self) -> dict[str, Any]:
        def finite(v: float | None) -> float | None:
            return v if v is None or math.isfinite(v) else None
        return {"name": self.name, "label": self.label, "baseline": finite(self.baseline),
                "current": finite(self.current), "text": self.text}


@dataclass(frozen=True)
class Explanation:
    summary: str
    counters: tuple[Move, ...] = ()
    stalls: tuple[Move, ...] = ()
    occupancy: tuple[Move, ...] = ()
    rules: tuple[Move, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def lines(self) -> list[str]:
        groups = (("counters", self.counters), ("warp stalls", self.stalls),
                  ("occupancy", self.occupancy), ("ncu rules", self.rules))
        out = [f"{title}: {move.text}" for title, moves in groups for move in moves]
        return out + list(self.notes)

    def to_json(self) -> dict[str, Any]:
        return {"summary": self.summary,
                "counters": [m.to_json() for m in self.counters],
                "stalls": [m.to_json() for m in self.stalls],
                "occupancy": [m.to_json() for m in self.occupancy],
                "rules": [m.to_json() for m in self.rules],
                "notes": list(self.notes)}


def explain_counters(base: KernelData, cur: KernelData,
                     verdicts: list[MetricVerdict]) -> Explanation:
    """Explain the change of one kernel pair from its two profiles."""
    headline = _headline(verdicts)
    if base.function is None or cur.function is None:
        side, timed = ("baseline", base) if base.function is None else ("current", cur)
        note = f"timing only: the {side} has no profile for this kernel ({timed.source} alone)"
        return Explanation(summary=f"{headline}: {note}" if headline else note, notes=(note,))
    # For a slowdown, what grew is the likelier cause, so it is named first (and the reverse
    # for a speedup); everything that moved is still listed.
    worse = _got_worse(verdicts)
    counters = tuple(_counter_moves(base.metrics, cur.metrics, worse))
    stalls = tuple(_stall_moves(base.metrics, cur.metrics, worse))
    occupancy = tuple(_occupancy_moves(base.metrics, cur.metrics))
    rules = tuple(_rule_moves(base.rules, cur.rules, worse))
    evidence = [m.text for m in counters[:2]] + [m.text for m in stalls[:1]] \
        + [m.text for m in occupancy if m.name == "limiter"][:1] + [m.text for m in rules[:1]]
    notes: tuple[str, ...] = ()
    if not evidence:
        note = (f"no profiler counter moved by {MIN_COUNTER_CHANGE_PCT:g}% or more: the same "
                "work ran; suspect clocks, the machine or noise")
        evidence, notes = [note], (note,)
    profiled = _profiled_duration(base.metrics, cur.metrics, verdicts)
    if profiled:
        notes += (profiled,)
    summary = "; ".join(evidence)
    return Explanation(summary=f"{headline}: {summary}" if headline else summary,
                       counters=counters, stalls=stalls, occupancy=occupancy, rules=rules,
                       notes=notes)


def _headline(verdicts: list[MetricVerdict]) -> str:
    for v in verdicts:
        if v.kind == "timing" and v.change_pct is not None:
            return f"{v.label} {percent(v.change_pct, 0)}"
    return ""


def _profiled_duration(base: dict[str, float], cur: dict[str, float],
                       verdicts: list[MetricVerdict]) -> str | None:
    """When timing came from samples (bench's, or a program's launches), ncu's own duration
    of the profiled launch is a second opinion: a slowdown it does not share points at
    clocks."""
    if not any(v.kind == "timing" and v.source in ("bench", "launches") for v in verdicts):
        return None
    b, c = base.get(NCU_DURATION), cur.get(NCU_DURATION)
    if b is None or c is None or b <= 0:
        return None
    return (f"ncu's duration under its clock control: {quantity(b, 'ns')} -> "
            f"{quantity(c, 'ns')} ({percent(100.0 * (c / b - 1.0))})")


def _got_worse(verdicts: list[MetricVerdict]) -> bool:
    timing = next((v for v in verdicts if v.kind == "timing" and v.change_pct is not None), None)
    if timing is not None:
        return (timing.change_pct or 0) > 0
    return any(v.verdict == "SLOWER" for v in verdicts)


def _counter_moves(base: dict[str, float], cur: dict[str, float], worse: bool) -> list[Move]:
    scored = []
    for name, label in EXPLANATORY_COUNTERS.items():
        b, c = base.get(name), cur.get(name)
        if b is None or c is None or b == c:
            continue
        relative = abs(c - b) / max(abs(b), abs(c))
        if 100.0 * relative < MIN_COUNTER_CHANGE_PCT:
            continue
        # log-ratio ranks a 0 -> 16M move above a 10% move; the floor keeps it finite
        floor = max(1.0, 1e-3 * max(abs(b), abs(c)))
        score = abs(math.log((abs(c) + floor) / (abs(b) + floor)))
        grew = c > b
        scored.append((grew != worse, -score,
                       Move(name, label, b, c,
                            f"{label} {_amount(b, name)} -> {_amount(c, name)}")))
    scored.sort(key=lambda item: item[:2])
    return [move for *_, move in scored[:MAX_COUNTERS]]


def _amount(value: float, name: str) -> str:
    unit = COUNTER_UNITS.get(name, "")
    return quantity(value, unit) if unit else count(value)


def _stall_moves(base: dict[str, float], cur: dict[str, float], worse: bool) -> list[Move]:
    moves = []
    for name in sorted(set(base) | set(cur)):
        if not (name.startswith(STALL_PREFIX) and name.endswith(STALL_SUFFIX)):
            continue
        b, c = base.get(name), cur.get(name)
        if b is None or c is None or abs(c - b) < MIN_STALL_DELTA:
            continue
        reason = name[len(STALL_PREFIX):-len(STALL_SUFFIX)]
        label = stall_label(reason)
        text = f"{label} stall per instruction {c - b:+.1f} cycles ({b:.1f} -> {c:.1f})"
        moves.append(Move(name, f"{label} stall", b, c, text))
    moves.sort(key=lambda m: (((m.current or 0) > (m.baseline or 0)) != worse,
                              -abs((m.current or 0) - (m.baseline or 0))))
    return moves[:MAX_STALLS]


def _limiters(metrics: dict[str, float]) -> tuple[str, ...]:
    return limiters_of({n: metrics.get(f"launch__occupancy_limit_{n}")
                        for n in OCCUPANCY_LIMITERS})


def _occupancy_moves(base: dict[str, float], cur: dict[str, float]) -> list[Move]:
    moves = []
    for name, label in (("sm__maximum_warps_per_active_cycle_pct", "theoretical occupancy"),
                        ("sm__warps_active.avg.pct_of_peak_sustained_active",
                         "achieved occupancy")):
        b, c = base.get(name), cur.get(name)
        if b is not None and c is not None and abs(c - b) >= MIN_OCCUPANCY_DELTA:
            moves.append(Move(name, label, b, c, f"{label} {b:.1f}% -> {c:.1f}%"))
    before, after = _limiters(base), _limiters(cur)
    if before and after and before != after:
        b_blocks = base.get(f"launch__occupancy_limit_{before[0]}")
        c_blocks = cur.get(f"launch__occupancy_limit_{after[0]}")
        text = (f"occupancy limited by {', '.join(before)} ({count(b_blocks)} blocks/SM) -> "
                f"{', '.join(after)} ({count(c_blocks)} blocks/SM)")
        moves.append(Move("limiter", "occupancy limiter", b_blocks, c_blocks, text))
    return moves


def _rule_table(rules: tuple[RuleResult, ...]) -> dict[tuple[str, str], RuleResult]:
    """Rules that advise something (OPT/WARN/ERROR), one per (rule, title): the largest
    estimate wins where ncu repeats a rule."""
    table: dict[tuple[str, str], RuleResult] = {}
    for rule in rules:
        if rule.type not in ("OPT", "WARN", "ERROR"):
            continue
        key = (rule.name, rule.title or rule.name)
        held = table.get(key)
        if held is None or (rule.speedup_pct or 0) > (held.speedup_pct or 0):
            table[key] = rule
    return table


def _rule_moves(base: tuple[RuleResult, ...], cur: tuple[RuleResult, ...],
                worse: bool) -> list[Move]:
    before, after = _rule_table(base), _rule_table(cur)
    scored: list[tuple[float, Move]] = []
    for key in sorted(set(before) | set(after)):
        b, c = before.get(key), after.get(key)
        title = key[1]
        b_pct = b.speedup_pct if b else None
        c_pct = c.speedup_pct if c else None
        if b is None and c is not None:
            text = (f"ncu now estimates a speedup of {c_pct:.0f}% from '{title}'"
                    if c_pct is not None else f"ncu now flags '{title}'")
            scored.append((c_pct or 0.0, Move(f"{key[0]}:{title}", title, None, c_pct, text)))
        elif c is None and b is not None:
            was = f" (its estimated speedup was {b_pct:.0f}%)" if b_pct is not None else ""
            text = f"ncu no longer flags '{title}'{was}"
            scored.append((b_pct or 0.0, Move(f"{key[0]}:{title}", title, b_pct, None, text)))
        elif b_pct is not None and c_pct is not None and abs(c_pct - b_pct) >= MIN_RULE_DELTA:
            text = f"ncu's estimated speedup from '{title}' {b_pct:.0f}% -> {c_pct:.0f}%"
            scored.append((abs(c_pct - b_pct), Move(f"{key[0]}:{title}", title, b_pct, c_pct,
                                                    text)))
    # a rule that appeared or whose estimate grew tells of a slowdown, and the reverse
    scored.sort(key=lambda item: (((item[1].current or 0) > (item[1].baseline or 0)) != worse,
                                  -item[0]))
    return [move for _, move in scored]
