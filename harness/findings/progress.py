"""Improvement or regression against the previous iteration's profile.

Reports the duration change and the metrics that moved most (stall cycles per instruction,
throughputs, occupancy), as "MIO throttle stall per instruction 6.0 -> 2.1".
"""

from __future__ import annotations

from harness.findings.model import Finding, fmt
from harness.findings.stalls import label
from harness.report import KernelReport

PROGRESS_RULE = "progress"
NAME = PROGRESS_RULE  # the name every rule module gives its findings
SECTION = "GPU Speed Of Light Throughput"
FASTER = 1.05  # a change under 5% is within run-to-run noise of a profiled launch
STALL_MIN_CYCLES = 1.0
STALL_CHANGE = 0.25  # a stall moved when it changed by 25% and by at least one cycle


def _stall_deltas(profile: KernelReport, previous: KernelReport) -> list[Finding]:
    before = {s.reason: s.cycles_per_issue for s in previous.warp_state.stalls}
    after = {s.reason: s.cycles_per_issue for s in profile.warp_state.stalls}
    findings = []
    for reason in sorted(set(before) & set(after), key=lambda r: -max(before[r], after[r])):
        if reason == "selected":
            continue
        old, new = before[reason], after[reason]
        if max(old, new) < STALL_MIN_CYCLES or abs(new - old) < STALL_MIN_CYCLES:
            continue
        if abs(new - old) < STALL_CHANGE * max(old, new):
            continue
        better = new < old
        kind = "good" if better else ("info" if reason == "not_selected" else "bad")
        change = f"{label(reason)} stall per instruction {fmt(old)} -> {fmt(new)}"
        findings.append(
            Finding(
                rule=NAME,
                kind=kind,  # type: ignore[arg-type]
                title=("Less" if better else "More") + f" {label(reason)} stalling than the "
                f"previous iteration: {change} cycles.",
                text=f"{change[0].upper()}{change[1:]} cycles (Warp State Statistics).",
                section="Warp State Statistics",
                weight=abs(new - old),
                metrics={"reason": reason, "before": old, "after": new},
            )
        )
    return findings[:3]


def _delta(name: str, old: float | None, new: float | None, section: str,
           higher_is_better: bool, min_change: float) -> list[Finding]:
    if old is None or new is None or abs(new - old) < min_change:
        return []
    better = (new > old) == higher_is_better
    return [
        Finding(
            rule=NAME,
            kind="good" if better else "bad",
            title=f"{name} {fmt(old)}% -> {fmt(new)}% against the previous iteration.",
            text=f"{name} changed from {fmt(old)}% to {fmt(new)}% ({section}).",
            section=section,
            weight=abs(new - old),
            metrics={"before": old, "after": new},
        )
    ]


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    if previous is None:
        return []
    findings: list[Finding] = []
    findings += duration_change(previous.speed_of_light.duration_ns,
                                profile.speed_of_light.duration_ns)
    findings += _stall_deltas(profile, previous)
    findings += _delta("Compute (SM) throughput", previous.speed_of_light.compute_throughput_pct,
                       profile.speed_of_light.compute_throughput_pct, SECTION, True, 10.0)
    findings += _delta("Achieved occupancy", previous.occupancy.achieved_pct,
                       profile.occupancy.achieved_pct, "Occupancy", True, 10.0)
    return findings


def duration_change(old_t: float | None, new_t: float | None,
                    launches: str = "") -> list[Finding]:
    """The time finding of two iterations: faster or slower under the profiler, in ns.
    `launches` says what was timed where an iteration runs several kernels."""
    findings: list[Finding] = []
    if old_t and new_t:
        ratio = old_t / new_t
        numbers = f"{fmt(old_t / 1e3, 2)} us -> {fmt(new_t / 1e3, 2)} us{launches}"
        if ratio >= FASTER:
            findings.append(Finding(
                rule=NAME, kind="good",
                title=f"{fmt(ratio, 2)}x faster than the previous iteration under the profiler "
                f"({numbers}).",
                text=f"Duration {numbers}, a {fmt(ratio, 2)}x speedup ({SECTION}).",
                section=SECTION, weight=1e9, metrics={"speedup": ratio}))
        elif ratio <= 1.0 / FASTER:
            findings.append(Finding(
                rule=NAME, kind="bad",
                title=f"Regression: {fmt(1.0 / ratio, 2)}x slower than the previous iteration "
                f"under the profiler ({numbers}).",
                text=f"Duration {numbers}, a {fmt(1.0 / ratio, 2)}x slowdown ({SECTION}).",
                section=SECTION, weight=1e9, metrics={"speedup": ratio},
                fix_title="Find what the change broke.",
                what_if="What if the change were split in two, to see which half costs the time?"))
    return findings
