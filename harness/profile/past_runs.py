"""How long each target took in earlier runs under `--out`: what `--gpus` plans its shares by.

`ncuh profile --gpus` shares the targets out between the GPUs before any starts
(`schedule.plan_slots`) where every target was timed before with the same section set; each
target's newest time of the last 50 runs counts, a run on as many GPUs at once counting first
(beside another, an ncu takes longer). Manifests are plain JSON read leniently: a damaged one
only costs its hint, never the run.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from harness.profile.ncu_command import NcuSettings


class _Labelled(Protocol):
    """A target as the history needs it (`run.Target`)."""

    @property
    def label(self) -> str: ...


@dataclass(frozen=True)
class PastEntry:
    """How long a target's ncu took in an earlier run (`previous_entries`)."""

    seconds: float
    start_s: float | None = None  # of which its own start, where it paid one

    @property
    def work_s(self) -> float:
        """Its time without its own start: what it costs a slot that is already running."""
        return self.seconds - min(self.start_s or 0.0, self.seconds)


def previous_entries(out: Path, targets: Sequence[_Labelled], settings: NcuSettings,
                     gpus: int = 1, newest: int = 50) -> list[PastEntry | None]:
    """How long each target's ncu took in the newest of the last `newest` runs under `out`
    that profiled it with the same section set (None where none did): `--gpus` hands the
    longest out first and shares the targets out between its GPUs by it. A run on as many
    GPUs at once as this one (`gpus`) counts first: beside each other, ncu runs take longer
    (fast variants most). Plain JSON, read leniently: a damaged manifest only costs its hint.
    """
    wanted = {target.label for target in targets}
    runs = _past_runs(out, settings, newest)  # newest first
    found: dict[str, PastEntry] = {}
    for entries in [entries for used, entries in runs if used == gpus] + \
            [entries for used, entries in runs if used != gpus]:
        for label, past in entries.items():
            if label in wanted:
                found.setdefault(label, past)
        if len(found) == len(wanted):
            break
    return [found.get(target.label) for target in targets]


def _past_runs(out: Path, settings: NcuSettings, newest: int
               ) -> list[tuple[int, dict[str, PastEntry]]]:
    """(GPUs used at once, {label: its time}) of the newest runs under `out` with this set.
    A merged run (`ncuh merge`) counts the GPUs of each shard, which ran apart."""
    try:  # run ids start with their time, so names sort oldest to newest
        manifests = sorted(out.glob("*/manifest.json"), reverse=True)[:newest]
    except OSError:
        manifests = []
    runs = []
    for path in manifests:
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(manifest, dict) or not isinstance(manifest.get("ncu"), dict) \
                or manifest["ncu"].get("set") != settings.set \
                or not isinstance(manifest.get("entries"), list):
            continue
        entries: dict[str, PastEntry] = {}
        gpus: dict[str, set[str]] = {}  # per shard of a merged run; one for a plain run
        for entry in manifest["entries"]:
            if not isinstance(entry, dict) or entry.get("status") != "ok":
                continue
            label, seconds, start = entry.get("label"), entry.get("seconds"), entry.get("start_s")
            if isinstance(label, str) and label not in entries and _is_seconds(seconds):
                entries[label] = PastEntry(float(seconds),
                                           float(start) if _is_seconds(start) else None)
            where = entry.get("gpu")
            if isinstance(where, dict):
                shard = gpus.setdefault(str(entry.get("shard")), set())
                shard.add(str(where.get("uuid") or where.get("index")))
        runs.append((max([1, *map(len, gpus.values())]), entries))
    return runs


def typical_start(before: Sequence[PastEntry | None]) -> float:
    """The median of the starts the targets paid themselves (0 where none did)."""
    starts = [past.start_s for past in before if past and past.start_s is not None]
    return statistics.median_high(starts) if starts else 0.0


def with_own_starts(before: Sequence[PastEntry | None]) -> list[float | None]:
    """What each target costs where none starts early (no head starts): its work and a start
    of its own, the typical one (`typical_start`)."""
    start = typical_start(before)
    return [past.work_s + start if past else None for past in before]


def _is_seconds(value: object) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value) and value >= 0
    except OverflowError:  # an int too large for a float
        return False
