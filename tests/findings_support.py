"""Profiles for the findings tests: the real fixture's two kernels, and small synthetic ones."""

from __future__ import annotations

import functools

from packed_fixtures import NAIVE_SMEM_REPORT, cached_profiles

from harness.findings import Finding
from harness.report.model import KernelReport

REPORT = NAIVE_SMEM_REPORT


@functools.cache
def _profiles() -> tuple[KernelReport, ...]:
    return tuple(cached_profiles(REPORT))


def naive() -> KernelReport:
    """sgemm_naive: uncoalesced rows, LG throttle bound, 5.51 ms."""
    return _profiles()[0]


def smem() -> KernelReport:
    """sgemm_smem: 32x32 shared tiles, MIO throttle, 300.93 us."""
    return _profiles()[1]


def synthetic(**sections: object) -> KernelReport:
    return KernelReport(kernel_id=0, name="k", demangled_name="k", **sections)  # type: ignore[arg-type]


def kinds(findings: list[Finding]) -> list[str]:
    return [f.kind for f in findings]


def prose(findings: list[Finding]) -> str:
    """The words of each finding, as a golden file keeps them: what a reader of the page sees."""
    parts = []
    for finding in findings:
        lines = [f"[{finding.kind}] {finding.rule} ({finding.section}): {finding.title}",
                 finding.text]
        if finding.what_if:
            lines.append(f"what if: {finding.what_if}")
        if finding.fix_title or finding.fix_text:
            lines.append(f"fix: {finding.fix_title or ''}: {finding.fix_text or ''}")
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)
