"""Small named rules that turn a typed profile into findings (one module per rule).

`run_rules(profile, previous)` runs them all; `RULES` lists them in order. Each rule module
has `NAME` and `check(profile, previous) -> list[Finding]`.
"""

from __future__ import annotations

from harness.findings.bound import (
    busiest_memory_unit,
    classify_bound,
    describe_bound,
    near_dram_peak,
    pipe_headroom_pct,
)
from harness.findings.model import Finding, Kind
from harness.findings.ncu_rules import SetAside, ncu_set_aside
from harness.findings.pipes import busiest_pipes
from harness.findings.progress import PROGRESS_RULE, duration_change
from harness.findings.registry import RULES, run_rules, tldr_finding
from harness.findings.stalls import STALL_PROBLEMS

__all__ = [
    "PROGRESS_RULE", "RULES", "STALL_PROBLEMS", "Finding", "Kind", "SetAside",
    "busiest_memory_unit", "busiest_pipes", "classify_bound", "describe_bound", "duration_change",
    "ncu_set_aside", "near_dram_peak", "pipe_headroom_pct", "run_rules", "tldr_finding",
]
