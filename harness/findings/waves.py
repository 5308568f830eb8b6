"""Too few waves, or a partial last wave (tail effect) (Launch Statistics, Occupancy).

A wave is as many blocks as all SMs hold at once. Fewer than one wave leaves SMs idle for
the whole kernel; with few waves, a partial last wave leaves warp slots empty at the end. The
launch's arithmetic says how empty the last wave is; what it costs is measured: the share of
the SMs' warp slots that stayed empty (achieved against theoretical occupancy) and the SMs'
active cycles. A tail is a problem only where the measured empty share bears it out.
"""

from __future__ import annotations

import math

from harness.findings import evidence
from harness.findings.evidence import Evidence, ev, sm_busy_pct
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "waves"
SECTION = "Launch Statistics"
BAD_IDLE = 5.0  # percent of SM time idle in the tail before we call it a problem
SM_COUNT = "device__attribute_multiprocessor_count"


def wave_share(waves: float) -> str:
    """A wave's share as a page says it: "24.2%", "under 0.1%"."""
    return f"{fmt(100 * waves)}%" if 100 * waves >= 0.05 else "under 0.1%"


def idle_share_pct(waves: float) -> float:
    """Share of SM-time slots left empty by the partial last wave, in percent."""
    if waves <= 0:
        return 0.0
    full = math.ceil(waves)
    return 100.0 * (full - waves) / full


def _last_wave_empty(profile: KernelReport) -> float | None:
    waves = profile.launch.waves_per_sm
    return idle_share_pct(waves) if waves is not None else None


evidence.MEASURES["last_wave_empty_pct"] = (
    "warp slots a partial last wave leaves empty, by the launch's arithmetic (%)",
    _last_wave_empty)


def empty_slots_pct(profile: KernelReport) -> float | None:
    """The measured share of warp slots the launch allows that stayed empty, in percent."""
    occ = profile.occupancy
    if occ.achieved_pct is None or not occ.theoretical_pct:
        return None
    return max(0.0, 100.0 - 100.0 * occ.achieved_pct / occ.theoretical_pct)


def _measured(profile: KernelReport) -> str:
    """"; warps filled 65.6% of the slots the launch allows, the SMs were active 99.0% of
    the time" (what the counters say of the idle share)."""
    parts = []
    occ = profile.occupancy
    if occ.achieved_pct is not None and occ.theoretical_pct:
        parts.append(f"warps filled {fmt(occ.achieved_pct)}% of the SM's warp slots against "
                     f"{fmt(occ.theoretical_pct)}% possible")
    busy = sm_busy_pct(profile)
    if busy is not None:
        parts.append(f"the average SM had work {fmt(busy)}% of the elapsed time")
    return "; " + ", ".join(parts) if parts else ""


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    waves = profile.launch.waves_per_sm
    if waves is None or waves <= 0:
        return []
    grid = profile.launch.grid_size
    metrics: dict[str, float | str] = {"waves": waves, "idle_pct": idle_share_pct(waves)}
    if waves < 1.0:
        sms = profile.metric(SM_COUNT)
        achieved = profile.occupancy.achieved_pct
        idle = ("SMs sit idle" if grid is None or sms is None or grid < sms else
                f"every SM has a block, but warps fill only {fmt(achieved)}% of its warp slots"
                if achieved is not None else "every SM has a block, but not its warp slots")
        blocks = (f" ({fmt(grid, 0)} block{'s' * (grid != 1)}"
                  + (f" for {fmt(sms, 0)} SMs)" if sms is not None else ")")
                  if grid is not None else "")
        return [
            Finding(
                rule=NAME,
                kind="bad",
                title=f"The grid fills only {wave_share(waves)} of one wave: {idle}.",
                text=f"{fmt(waves, 2)} waves per SM{blocks}: the launch gives the GPU less "
                f"work than it holds at once{_measured(profile)} ({SECTION}).",
                section=SECTION,
                weight=100.0 * (1.0 - waves),
                metrics=metrics,
                evidence=(ev(profile, "waves", "<", 1.0),),
            )
        ]
    idle = idle_share_pct(waves)
    if idle <= 0.0:
        return []
    empty = empty_slots_pct(profile)
    # the tail costs what the counters show empty, at most what its arithmetic allows
    cost = min(idle, empty) if empty is not None else 0.0
    kind = "bad" if cost >= BAD_IDLE else "info"
    metrics["cost_pct"] = cost
    last = fmt(100 * (waves - math.floor(waves)))
    return [
        Finding(
            rule=NAME,
            kind=kind,
            title=f"Tail effect: {fmt(waves, 2)} waves, the partial last wave ({last}% full) "
            f"leaves warp slots empty: {fmt(empty or 0.0)}% of them stayed empty."
            if kind == "bad" else f"A partial last wave ({fmt(waves, 2)} waves, the last "
            f"{last}% full) costs little: "
            + (f"it can leave at most {fmt(idle)}% of the warp slots empty." if idle < BAD_IDLE
               else f"only {fmt(empty)}% of the warp slots stayed empty." if empty is not None
               else "how many warp slots stayed empty was not collected."),
            text=f"The grid runs {fmt(waves, 2)} waves per SM; the last of "
            f"{math.ceil(waves)} waves is {last}% full, so up to {fmt(idle)}% of the warp slots "
            f"can stay empty{_measured(profile)} ({SECTION}).",
            section=SECTION,
            weight=cost,
            metrics=metrics,
            evidence=(ev(profile, "waves", ">=", 1.0), *_cost_evidence(profile, kind, idle)),
        )
    ]


def _cost_evidence(profile: KernelReport, kind: str, idle: float) -> tuple[Evidence, ...]:
    """A costly tail needs both the arithmetic and the measured empty slots; a cheap one
    either below `BAD_IDLE`."""
    if kind == "bad":
        return (ev(profile, "last_wave_empty_pct", ">=", BAD_IDLE),
                ev(profile, "achieved_of_theoretical_pct", "<=", 100.0 - BAD_IDLE))
    if idle < BAD_IDLE:
        return (ev(profile, "last_wave_empty_pct", "<", BAD_IDLE),)
    return (ev(profile, "achieved_of_theoretical_pct", ">", 100.0 - BAD_IDLE),)
