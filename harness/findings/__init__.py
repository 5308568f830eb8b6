"""Small named rules that turn a typed profile into findings (one module per rule).

`run_rules(profile, previous)` runs them all, in the order `registry.RULES` lists. Each rule
module has `NAME` and `check(profile, previous) -> list[Finding]`.
"""

from harness.findings.bound import (
    busiest_memory_unit,
    classify_bound,
    describe_bound,
    near_dram_peak,
    pipe_headroom_pct,
)
from harness.findings.model import Finding
from harness.findings.ncu_rules import SetAside, ncu_set_aside
from harness.findings.pipes import busiest_pipes
from harness.findings.progress import PROGRESS_RULE, duration_change
from harness.findings.registry import run_rules, tldr_finding
from harness.findings.stalls import STALL_PROBLEMS
