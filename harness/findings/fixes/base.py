"""The shape of a fix rule: the findings it answers and the idea it proposes, with the
evidence of when it fits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# the rules whose measures (`evidence.MEASURES`) the fix rules read: imported so that a fix
# rule is judged without the rule registry
from harness.findings import (  # noqa: F401
    bank_conflicts,
    clusters,
    divergence,
    imbalance,
    occupancy_limits,
    pipe_work,
    shape,
    synchronization,
    tensor_core,
    waves,
)
from harness.findings.evidence import Evidence, ev
from harness.findings.model import Finding, FixIdea
from harness.report import KernelReport

Propose = Callable[[KernelReport, Finding], "FixIdea | None"]


@dataclass(frozen=True)
class FixRule:
    """One fix idea: the rules whose problems it may answer, and `propose`, which returns the
    idea with its evidence for a finding it speaks to (None for one it does not)."""

    name: str
    answers: tuple[str, ...]  # finding rules
    propose: Propose

    @property
    def doc(self) -> str:
        return (self.propose.__doc__ or "").strip()


def carrier(finding: Finding) -> tuple[str, str] | None:
    """(stall reason, class that carries its samples) of a stall finding that names one."""
    if finding.rule != "stalls" or "carrier" not in finding.metrics:
        return None
    return str(finding.metrics["reason"]), str(finding.metrics["carrier"])


def carried_by(finding: Finding, reasons: tuple[str, ...], key: str) -> bool:
    """Whether a stall finding's samples are told by class `key`, for one of `reasons`."""
    found = carrier(finding)
    return found is not None and found[0] in reasons and found[1] == key


def carried(profile: KernelReport, finding: Finding, share: float) -> Evidence:
    """The evidence that the stall's carrier class holds at least `share` of its samples."""
    reason, key = carrier(finding) or ("", "")
    return ev(profile, f"carried:{reason}:{key}", ">=", share)
