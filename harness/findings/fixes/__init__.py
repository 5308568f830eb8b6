"""Fix ideas as rules with evidence, like findings: each declares when it fits (the bound unit,
the instruction classes present, the launch shape, the access widths, the headroom), and the
registry offers it for a problem only where all of that holds (`fixes_for`).

`FIX_RULES` lists them; each rule's `propose(profile, finding)` returns its idea with the
evidence it rests on for a finding it speaks to, else None.
"""

from __future__ import annotations

from harness.findings.evidence import failing
from harness.findings.fixes import launch, memory, pipes, waits
from harness.findings.fixes.base import FixRule
from harness.findings.model import Finding, FixIdea
from harness.report import KernelReport

FIX_RULES: tuple[FixRule, ...] = (*waits.RULES, *memory.RULES, *launch.RULES, *pipes.RULES)


def fixes_for(profile: KernelReport, finding: Finding) -> tuple[FixIdea, ...]:
    """The fix ideas that fit a problem of this kernel: proposed by the rules that answer it,
    kept where their evidence, read again from the report, holds."""
    if finding.kind != "bad":
        return ()
    found = []
    for rule in FIX_RULES:
        if finding.rule not in rule.answers:
            continue
        idea = rule.propose(profile, finding)
        if idea is not None and not failing(profile, idea.evidence):
            found.append(idea)
    return tuple(found)
