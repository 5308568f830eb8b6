"""Improvement or regression against the previous iteration's profile.

Reports the duration change and the metrics that moved most (stall cycles per instruction,
throughputs, occupancy), as "MIO throttle stall per instruction 6.0 -> 2.1". A throughput or
occupancy that moved is judged by its direction for the same work: lower throughput in a
faster kernel that executes fewer instructions is the same work done with less, not a loss.
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


def _speed(profile: KernelReport, previous: KernelReport) -> float | None:
    """How many times faster this iteration ran under the profiler (None: not collected)."""
    old, new = previous.speed_of_light.duration_ns, profile.speed_of_light.duration_ns
    return old / new if old and new else None


def _work(profile: KernelReport, previous: KernelReport) -> str:
    """" with 131,465,216 -> 71,696,384 instructions"."""
    old, new = previous.executed_instructions, profile.executed_instructions
    return f" with {fmt(old, 0)} -> {fmt(new, 0)} instructions" if old and new else ""


def _delta(name: str, old: float | None, new: float | None, section: str,
           min_change: float, profile: KernelReport, previous: KernelReport,
           less: str = "less of the SM") -> list[Finding]:
    """A share that moved, judged by the time: higher and faster is good; lower while the
    kernel got faster is the same work done with less of the unit (information); lower and
    slower is bad; higher and slower does more work."""
    if old is None or new is None or abs(new - old) < min_change:
        return []
    speed = _speed(profile, previous)
    faster = speed is not None and speed >= FASTER
    slower = speed is not None and speed <= 1.0 / FASTER
    change = f"{name} {fmt(old)}% -> {fmt(new)}% against the previous iteration"
    kind = "info"
    why = ""
    if new > old and not slower:
        kind = "good"
    elif new < old and slower:
        kind = "bad"
    elif new < old and faster:
        why = (f": the kernel ran {fmt(speed or 0.0, 2)}x faster{_work(profile, previous)}, so "
               f"the same work needs {less}")
    elif new > old and slower:
        why = f": the kernel ran slower{_work(profile, previous)}, so it does more work"
    return [
        Finding(
            rule=NAME,
            kind=kind,  # type: ignore[arg-type]
            title=f"{change}{why}.",
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
                       profile.speed_of_light.compute_throughput_pct, SECTION, 10.0, profile,
                       previous)
    findings += _delta("Achieved occupancy", previous.occupancy.achieved_pct,
                       profile.occupancy.achieved_pct, "Occupancy", 10.0, profile, previous,
                       "fewer resident warps")
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
                section=SECTION, weight=1e9, metrics={"speedup": ratio}))
    return findings
