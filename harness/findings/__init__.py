"""Small named rules that turn a typed profile into findings (one module per rule).

`run_rules(profile, previous)` runs them all; `RULES` lists them in order. Each rule module
has `NAME` and `check(profile, previous) -> list[Finding]`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import lazy_face

if TYPE_CHECKING:
    from harness.findings.bound import describe as describe_bound
    from harness.findings.bound import near_dram_peak
    from harness.findings.model import Finding, Kind
    from harness.findings.oracle import contradictions, page_contradictions
    from harness.findings.pipes import busiest as busiest_pipes
    from harness.findings.progress import NAME as PROGRESS_RULE
    from harness.findings.progress import duration_change
    from harness.findings.registry import RULES, get_rule, rule_names, run_rules, tldr_finding
    from harness.findings.stalls import PROBLEMS as STALL_PROBLEMS

# public name -> (module, attribute), imported on first use so that importing the package does
# no work; not cached here, so a test that replaces the attribute in its module is seen.
_HOMES: dict[str, tuple[str, str]] = {
    "ncu_set_aside": ("harness.findings.ncu_rules", "set_aside"),
    "SetAside": ("harness.findings.ncu_rules", "SetAside"),
    "busiest_memory_unit": ("harness.findings.bound", "busiest_memory_unit"),
    "contradictions": ("harness.findings.oracle", "contradictions"),
    "page_contradictions": ("harness.findings.oracle", "page_contradictions"),
    "classify_bound": ("harness.findings.bound", "classify"),
    "Finding": ("harness.findings.model", "Finding"),
    "Kind": ("harness.findings.model", "Kind"),
    "RULES": ("harness.findings.registry", "RULES"),
    "busiest_pipes": ("harness.findings.pipes", "busiest"),
    "describe_bound": ("harness.findings.bound", "describe"),
    "duration_change": ("harness.findings.progress", "duration_change"),
    "PROGRESS_RULE": ("harness.findings.progress", "NAME"),
    "STALL_PROBLEMS": ("harness.findings.stalls", "PROBLEMS"),
    "get_rule": ("harness.findings.registry", "get_rule"),
    "near_dram_peak": ("harness.findings.bound", "near_dram_peak"),
    "rule_names": ("harness.findings.registry", "rule_names"),
    "run_rules": ("harness.findings.registry", "run_rules"),
    "tldr_finding": ("harness.findings.registry", "tldr_finding"),
}

__all__ = [
    "PROGRESS_RULE",
    "RULES",
    "STALL_PROBLEMS",
    "Finding",
    "Kind",
    "SetAside",
    "busiest_memory_unit",
    "busiest_pipes",
    "classify_bound",
    "contradictions",
    "describe_bound",
    "duration_change",
    "get_rule",
    "ncu_set_aside",
    "near_dram_peak",
    "page_contradictions",
    "rule_names",
    "run_rules",
    "tldr_finding",
]

__getattr__, __dir__ = lazy_face(__name__, _HOMES)
