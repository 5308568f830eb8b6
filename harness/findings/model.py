"""The record every rule returns: one `Finding`, with its numbers and where they come from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from harness.findings.evidence import Evidence, because
from harness.report import KernelReport

Kind = Literal["good", "bad", "info"]


@dataclass(frozen=True)
class FixIdea:
    """One fix idea for a finding, with when it fits: the bound unit, the instruction classes
    present, the launch shape, the access widths and the headroom it needs, each read from the
    report (`evidence`). The registry offers it only where all of that holds, and the page
    shows it ("fits because ...")."""

    rule: str  # the fix rule that proposes it (`harness.findings.fixes`)
    title: str  # e.g. "Stop the register spills."
    text: str
    what_if: str  # "What if ...?"
    evidence: tuple[Evidence, ...] = ()

    @property
    def because(self) -> str:
        return because(self.evidence)


@dataclass(frozen=True)
class Finding:
    """One observation about a kernel.

    `title` is the one-line form used under "What's Good?" / "What's Bad?"; `text` is the
    in-depth sentence with the numbers; `section` is the ncu section the numbers come from.
    `fixes` are the fix ideas that fit this kernel (the fix rules', each with its evidence).
    `weight` orders findings (bigger first): roughly the share of time at stake, in percent.
    `speedup_pct` is ncu's own estimate of the gain from fixing it, when ncu has one (the
    registry fills it in from the ncu rule that flags the same problem).
    `evidence` is what the claim rests on: each measure, its threshold and the value read; the
    registry keeps a verdict only when all of it holds, and the page shows it ("because ...").
    """

    rule: str
    kind: Kind
    title: str
    text: str
    section: str
    fixes: tuple[FixIdea, ...] = ()
    weight: float = 0.0
    metrics: dict[str, float | str] = field(default_factory=dict)
    speedup_pct: float | None = None
    evidence: tuple[Evidence, ...] = ()

    @property
    def has_fix(self) -> bool:
        return bool(self.fixes)

    @property
    def what_if(self) -> str | None:
        """The first fix idea's question, None without one."""
        return self.fixes[0].what_if if self.fixes else None

    @property
    def because(self) -> str:
        """The evidence as one line ("" when the finding declares none)."""
        return because(self.evidence)


# A rule: the profile of this iteration, the previous iteration's profile (or None).
RuleCheck = Callable[[KernelReport, "KernelReport | None"], list[Finding]]


def fmt(value: float, digits: int = 1) -> str:
    """A number the way the pages show it: thousands separators for counts, fixed decimals."""
    if abs(value) >= 1000 and float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def pct(value: float) -> str:
    return f"{value:.1f}%"
