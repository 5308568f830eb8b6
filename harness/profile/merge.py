"""`ncuh merge SHARD… --out RUN`: join run directories (shards) into one ordinary run directory.

The merged run is what one machine would have written: each shard's reports and logs, one
metrics.csv (the shards' tables, checked to join), and a manifest of the shards' entries in
order, each naming its shard and GPU. Shards are inputs and are never written: every file of
the merged run gets a fresh name, linked or copied without opening an existing file.
Refused (exit 2, nothing written): no shard, an unfinished run, a label in two shards or not a
file name, a missing report, metrics.csv tables that do not join, an existing `--out`, and,
unless `--allow-mismatch`, shards of other GPU models, ncu versions or ncu settings.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.errors import IncompatibleInputsError, NcuhError, ReportError
from harness.rundir import BENCH, MANIFEST, METRICS, Run, load_run
from harness.util import atomic_directory, atomic_path, atomic_write_text

# What must agree between shards, and where the manifest says it.
_MUST_MATCH: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("GPU model", ("environment", "gpu")),
    ("compute capability", ("environment", "compute_capability")),
    ("ncu version", ("environment", "ncu_version")),
    ("ncu section set", ("ncu", "set")),
    ("ncu sections", ("ncu", "sections")),
    ("ncu metrics", ("ncu", "metrics")),
    # `pages` on its section overlay or on ncu's stock sections (the folder's path may differ)
    ("slimmed sections", ("ncu", "slimmed_sections")),
    ("SourceCounters metrics left out", ("ncu", "thinned_metrics")),
    ("ncu rules left out", ("ncu", "rules_left_out")),
    ("clock control", ("ncu", "clock_control")),
    ("cache control", ("ncu", "cache_control")),
    ("replay mode", ("ncu", "replay_mode")),
)


# What the section overlay left out, which a manifest from before the overlay (or from before
# one of its thinnings) does not name: nothing, ncu's stock sections.
_EMPTY_WHEN_ABSENT = frozenset({("ncu", "slimmed_sections"), ("ncu", "thinned_metrics"),
                                ("ncu", "rules_left_out")})


def _field(manifest: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = manifest
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    if value is None and path in _EMPTY_WHEN_ABSENT:
        return []
    return value


def mismatches(runs: Sequence[Run]) -> list[str]:
    """One phrase per property the shards disagree on, naming each value and its shards."""
    found = []
    for what, path in _MUST_MATCH:
        values: dict[str, list[str]] = {}
        for run in runs:
            key = json.dumps(_field(run.manifest, path), sort_keys=True)
            values.setdefault(key, []).append(run.path.name)
        if len(values) > 1:
            listed = "; ".join(f"{json.loads(value)} ({', '.join(names)})"
                               for value, names in values.items())
            found.append(f"{what}: {listed}")
    return found


def merge_runs(shards: Sequence[Path], out: Path, *, allow_mismatch: bool = False) -> Path:
    """Join the run directories `shards` into the new run directory `out`; return its path."""
    if not shards:
        raise NcuhError("nothing to merge: give the shard run directories")
    runs = [load_run(path) for path in shards]  # ReportError (exit 2) for anything else
    if len({run.path.resolve() for run in runs}) != len(runs):
        raise NcuhError("a shard is given twice")
    owner: dict[str, str] = {}
    for run in runs:
        for entry in run.entries:
            if entry.label in owner:
                raise NcuhError(f"entry {entry.label} is in two shards: {owner[entry.label]} and "
                                f"{run.path.name}")
            owner[entry.label] = run.path.name
            if not _safe_label(entry.label):
                raise NcuhError(f"{run.path / MANIFEST}: entry label {entry.label!r} is not a "
                                "file name (it names its log)")
    differ = mismatches(runs)
    if differ and not allow_mismatch:
        raise IncompatibleInputsError(
            "the shards do not compare (" + " | ".join(differ) + "); pass --allow-mismatch "
            "to merge them anyway")
    benches = [run for run in runs if run.bench_path is not None]
    for run in benches:  # read only from inside the shard: a link out of it is not its data
        if not (run.path / BENCH).resolve().is_relative_to(run.path.resolve()):
            raise NcuhError(f"{run.path / BENCH} leads outside its shard")
    if len(benches) > 1:
        raise NcuhError("more than one shard has a bench.json: run `ncuh bench` once instead")
    placed = _placements(runs)  # checks every report before anything is written
    metric_tables = _metric_tables(runs)
    out = Path(out)
    if out.exists():
        raise NcuhError(f"{out} already exists")
    with atomic_directory(out) as tmp:
        (tmp / "logs").mkdir()
        for run in runs:
            _copy_logs(run, tmp)
        for source, name in placed.values():
            _copy_fresh(source, tmp / name)
        metrics = _join_metrics(runs, metric_tables, tmp)
        if benches:
            _copy_fresh(benches[0].path / BENCH, tmp / BENCH)
        manifest = merged_manifest(runs, metrics=metrics, bench=bool(benches),
                                   mismatched=differ,
                                   reports={key: name for key, (_, name) in placed.items()})
        atomic_write_text(tmp / MANIFEST, json.dumps(manifest, indent=2, default=str) + "\n")
    return out


def _copy_fresh(source: Path, destination: Path) -> None:
    """Link or copy `source` to the new name `destination`, never opening an existing file.

    Both ways refuse a name that exists (`os.link`, and open mode "x"), so no write can go
    through a link into a shard's file.
    """
    destination.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, destination)  # same file system: no second copy of a large report
        return
    except FileExistsError:
        raise
    except OSError:
        pass
    with source.open("rb") as reading, destination.open("xb") as writing:
        shutil.copyfileobj(reading, writing)
    shutil.copystat(source, destination)


def _placements(runs: Sequence[Run]) -> dict[tuple[int, int], tuple[Path, str]]:
    """(shard, entry) -> (the shard's report, its fresh name in the merged run).

    A report keeps its path inside its shard unless an earlier shard's report took it, then
    it goes under `shard<N>/`. A report the manifest names that is not there is the shard's
    fault, said before anything is written.
    """
    taken: set[str] = {MANIFEST, BENCH, METRICS, "logs"}
    placed: dict[tuple[int, int], tuple[Path, str]] = {}
    for number, run in enumerate(runs):
        for index, entry in enumerate(run.entries):
            if not entry.ok or entry.report is None:
                continue
            where = f"{run.path / MANIFEST}: entries[{index}].report"
            if not entry.report.is_file():
                raise ReportError(f"{where}: {entry.report} is not there (or not a file)")
            relative = entry.report.relative_to(run.path).as_posix()
            name = relative
            while name.casefold() in taken or name.split("/")[0].casefold() in taken:
                name = f"shard{number + 1}/{name}"
            taken.add(name.casefold())
            # the file itself: a link of a symbolic link would dangle in another folder
            placed[(number, index)] = (entry.report.resolve(), name)
    return placed


def _safe_label(label: str) -> bool:
    """Whether `label` names a file in a folder: no separator, not '.' or '..'."""
    return label not in (".", "..") and not any(c in label for c in "/\\\x00")


def _copy_logs(run: Run, tmp: Path) -> None:
    """Each entry's log, when it sits in the shard's own logs/ as a plain file."""
    logs = run.path / "logs"
    for entry in run.entries:
        log = logs / f"{entry.label}.log"  # the label is a file name (merge_runs checked)
        if log.is_file() and not log.is_symlink():
            _copy_fresh(log, tmp / "logs" / log.name)


def _metric_tables(runs: Sequence[Run]) -> list[tuple[Run, Path, int]]:
    """The shards' metrics.csv files with their row counts, each checked: one header for all,
    every row whole (as many fields as the header, the last line ended). `ReportError`
    naming the shard's table otherwise."""
    tables: list[tuple[Run, Path, int]] = []
    header: list[str] | None = None
    first: Path | None = None
    for run in runs:
        path = run.path / METRICS
        if not path.is_file():
            continue
        if not _ends_a_line(path):
            raise ReportError(f"{path}: cut short (its last row does not end)")
        rows = 0
        with path.open(encoding="utf-8", newline="") as stream:
            try:
                reader = csv.reader(stream)
                this_header = next(reader, None)
                if this_header is None:
                    raise ReportError(f"{path}: empty (no header)")
                if header is None:
                    header, first = this_header, path
                elif this_header != header:
                    raise ReportError(f"{path}: its header differs from {first}'s; these "
                                      "tables do not join")
                for row in reader:
                    rows += 1
                    if len(row) != len(header):
                        raise ReportError(f"{path}: row {rows + 1} has {len(row)} fields, "
                                          f"the header {len(header)}")
            except (csv.Error, UnicodeDecodeError) as error:
                raise ReportError(f"{path}: not a CSV table ({error})") from None
        tables.append((run, path, rows))
    return tables


def _ends_a_line(path: Path) -> bool:
    """Whether the file is empty or its last byte ends a line (a table cut mid-row does not)."""
    with path.open("rb") as stream:
        stream.seek(0, os.SEEK_END)
        if stream.tell() == 0:
            return True
        stream.seek(-1, os.SEEK_END)
        return stream.read(1) == b"\n"


def _join_metrics(runs: Sequence[Run], tables: Sequence[tuple[Run, Path, int]],
                  tmp: Path) -> dict[str, Any]:
    """The shards' metrics.csv joined (header once); skipped where every shard skipped it
    (profiled without --metrics-csv), failed if a shard with reports has none otherwise."""
    having = {id(run) for run, _, _ in tables}
    missing = []
    for run in runs:
        if id(run) not in having and any(entry.ok for entry in run.entries):
            metrics = run.manifest.get("metrics") or {}
            reason = metrics.get("error") or (
                "profiled without --metrics-csv" if metrics.get("status") == "skipped"
                else "no metrics.csv")
            missing.append((run, reason, metrics.get("status") == "skipped"))
    if missing and (tables or not all(skipped for _, _, skipped in missing)):
        run, reason, _ = next((m for m in missing if not m[2]), missing[0])
        return {"status": "failed", "error": f"shard {run.path.name}: {reason}"}
    if not tables:
        return {"status": "skipped", "error": None, "rows": None}
    with atomic_path(tmp / METRICS) as part, part.open("wb") as joined:
        for number, (_, path, _) in enumerate(tables):
            with path.open("rb") as stream:
                header = stream.readline()
                if number == 0:
                    joined.write(header)
                shutil.copyfileobj(stream, joined)
    return {"status": "ok", "error": None, "rows": sum(rows for _, _, rows in tables)}


def merged_manifest(runs: Sequence[Run], *, metrics: dict[str, Any], bench: bool,
                    mismatched: Sequence[str] = (),
                    reports: dict[tuple[int, int], str] | None = None) -> dict[str, Any]:
    """The first shard's manifest, with every shard's entries, GPUs and command lines;
    `reports` gives an entry's report its name in the merged run, (shard, entry) -> name."""
    first = dict(runs[0].manifest)
    entries, gpus, commands = [], [], []
    for number, run in enumerate(runs):
        for index, raw in enumerate(run.manifest.get("entries", [])):
            entry = {**raw, "shard": run.path.name}
            if reports and (number, index) in reports:
                entry["report"] = reports[(number, index)]
            entries.append(entry)
        for gpu in run.manifest.get("gpus") or []:
            if gpu not in gpus:
                gpus.append(gpu)
        commands += (run.manifest.get("ncu") or {}).get("command_lines") or []
    timings = [run.manifest.get("timings") or {} for run in runs]
    return {
        **first,
        "ncu": {**(first.get("ncu") or {}), "command_lines": commands},
        "variants": list(dict.fromkeys(v for run in runs for v in run.manifest.get("variants")
                                       or [])),
        "sizes": list({json.dumps(s): s for run in runs for s in run.manifest.get("sizes")
                       or []}.values()),
        "started_at": min(run.manifest.get("started_at") or "" for run in runs) or None,
        "finished_at": max(run.manifest.get("finished_at") or "" for run in runs) or None,
        "entries": entries,
        "gpus": gpus,
        "metrics": metrics,
        "bench": BENCH if bench else None,
        "timings": {"ncu_s": round(sum(t.get("ncu_s") or 0.0 for t in timings), 3),
                    "shards_total_s": round(sum(t.get("total_s") or 0.0 for t in timings), 3)},
        "merged_from": [{"shard": run.path.name, "run_path": str(run.path.resolve()),
                         "gpu": run.environment.get("gpu"),
                         "ncu_version": run.environment.get("ncu_version")} for run in runs],
        "mismatches": list(mismatched),
    }
