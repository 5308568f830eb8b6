"""The registry of rules: which rules exist, in which order they run, and `run_rules`."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from harness.findings import (
    bank_conflicts,
    bound,
    coalescing,
    ncu_rules,
    occupancy,
    progress,
    spills,
    stalls,
    vectorization,
    waves,
)
from harness.findings.model import Finding, RuleCheck
from harness.report.kernel_profile import KernelProfile


@dataclass(frozen=True)
class Rule:
    name: str
    check: RuleCheck
    doc: str


def _rule(module: ModuleType) -> Rule:
    return Rule(name=module.NAME, check=module.check, doc=(module.__doc__ or "").strip())


# Our own rules first; ncu's rules last, so that ours win when both say the same thing.
RULES: tuple[Rule, ...] = tuple(
    _rule(m)
    for m in (
        bound,
        stalls,
        bank_conflicts,
        occupancy,
        coalescing,
        vectorization,
        spills,
        waves,
        progress,
        ncu_rules,
    )
)

_KIND_ORDER = {"bad": 0, "info": 1, "good": 2}

# ncu rule identifier -> our rule that explains the same thing; when ours fired, ncu's
# message would only repeat it.
COVERED_BY = {
    "SOLBottleneck": "bound",
    "CPIStall": "stalls",
    "SharedMemoryConflicts": "bank_conflicts",
    "UncoalescedGlobalAccess": "coalescing",
    "UncoalescedSharedAccess": "coalescing",
    "AchievedOccupancy": "occupancy",
    "TheoreticalOccupancy": "occupancy",
    "LaunchConfiguration": "waves",
}


def rule_names() -> tuple[str, ...]:
    return tuple(rule.name for rule in RULES)


def get_rule(name: str) -> Rule:
    for rule in RULES:
        if rule.name == name:
            return rule
    raise KeyError(name)


def run_rules(
    profile: KernelProfile,
    previous: KernelProfile | None = None,
    names: tuple[str, ...] | None = None,
) -> list[Finding]:
    """Every finding of the selected rules (all by default), most important first."""
    findings: list[Finding] = []
    for rule in RULES:
        if names is not None and rule.name not in names:
            continue
        findings.extend(rule.check(profile, previous))
    # only a verdict (good/bad) of ours replaces ncu's message; an aside (info) does not
    fired = {f.rule for f in findings if f.kind != "info"}
    findings = [
        f for f in findings
        if f.rule != ncu_rules.NAME or COVERED_BY.get(str(f.metrics.get("ncu_rule"))) not in fired
    ]
    # stable sort: within one kind, heavier findings first, rule order breaks ties
    return sorted(findings, key=lambda f: (_KIND_ORDER[f.kind], -f.weight))
