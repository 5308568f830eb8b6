"""Too few waves, or a partial last wave (tail effect) (Launch Statistics).

A wave is as many blocks as all SMs hold at once. Fewer than one wave leaves SMs idle for
the whole kernel; with few waves, a partial last wave idles part of the GPU at the end.
"""

from __future__ import annotations

import math

from harness.findings import shape
from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "waves"
SECTION = "Launch Statistics"
BAD_IDLE = 5.0  # percent of SM time idle in the tail before we call it a problem


def idle_share_pct(waves: float) -> float:
    """Share of SM-time slots left empty by the partial last wave, in percent."""
    if waves <= 0:
        return 0.0
    full = math.ceil(waves)
    return 100.0 * (full - waves) / full


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    waves = profile.launch.waves_per_sm
    if waves is None or waves <= 0:
        return []
    grid = profile.launch.grid_size
    metrics: dict[str, float | str] = {"waves": waves, "idle_pct": idle_share_pct(waves)}
    if waves < 1.0:
        return [
            Finding(
                rule=NAME,
                kind="bad",
                title=f"The grid fills only {fmt(100 * waves)}% of one wave: SMs sit idle.",
                text=f"{fmt(waves, 2)} waves per SM"
                + (f" ({fmt(grid, 0)} blocks)" if grid is not None else "")
                + f": part of the GPU has no block to run for the whole kernel ({SECTION}).",
                section=SECTION,
                fix_title="Launch enough blocks to fill the GPU.",
                fix_text="Smaller blocks or smaller per-block tiles give every SM work.",
                what_if="What if each block computed a smaller tile, so the grid has at least "
                "one block per SM slot?" if shape.tiles(profile) else "What if each block "
                "handled fewer elements, so the grid has at least one block per SM slot?",
                weight=100.0 * (1.0 - waves),
                metrics=metrics,
                evidence=(ev(profile, "waves", "<", 1.0),),
            )
        ]
    idle = idle_share_pct(waves)
    if idle <= 0.0:
        return []
    kind = "bad" if idle >= BAD_IDLE else "info"
    return [
        Finding(
            rule=NAME,
            kind=kind,
            title=f"Tail effect: {fmt(waves, 2)} waves, the partial last wave leaves "
            f"{fmt(idle)}% of SM time idle.",
            text=f"The grid runs {fmt(waves, 2)} waves per SM; the last of "
            f"{math.ceil(waves)} waves is {fmt(100 * (waves - math.floor(waves)))}% full, so "
            f"{fmt(idle)}% of SM-time slots are empty ({SECTION}).",
            section=SECTION,
            fix_title="Even out the last wave." if kind == "bad" else None,
            fix_text="A grid that is a whole multiple of the blocks one wave holds leaves no "
            "SM idle at the end." if kind == "bad" else None,
            what_if=("What if the tile size were chosen so the grid is a whole number of waves?"
                     if shape.tiles(profile) else "What if the grid were sized to a whole "
                     "number of waves (a grid-stride loop over as many blocks as fit at once)?")
            if kind == "bad" else None,
            weight=idle,
            metrics=metrics,
            evidence=(ev(profile, "waves", ">=", 1.0),),
        )
    ]
