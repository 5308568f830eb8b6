"""`ncuh merge SHARD… --out RUN`: join run directories (shards) into one ordinary run directory.

A shard is a finished run directory, typically one task of a Slurm job array (`slurm.py`).
The merged run is what `ncuh profile` would have written had one machine profiled every entry:
each shard's reports and logs, one metrics.csv where the shards have theirs (their tables
joined, header once), and a
manifest whose entries are the shards' entries in the order given, each naming its shard and
the GPU that profiled it. `writeup` and `diff` read it like any run.

Refused (exit 2, nothing written): no shard, something that is not a finished run, an entry
label in two shards, an existing `--out`, and, unless `--allow-mismatch`, shards profiled on
different GPU models or compute capabilities, with different ncu versions, or with different
ncu settings (their numbers do not compare). Built under a temporary name and renamed into
place when complete, like every run directory.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.errors import IncompatibleInputsError, NcuhError
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
    differ = mismatches(runs)
    if differ and not allow_mismatch:
        raise IncompatibleInputsError(
            "the shards do not compare (" + " | ".join(differ) + "); pass --allow-mismatch "
            "to merge them anyway")
    benches = [run for run in runs if run.bench_path is not None]
    if len(benches) > 1:
        raise NcuhError("more than one shard has a bench.json: run `ncuh bench` once instead")
    out = Path(out)
    if out.exists():
        raise NcuhError(f"{out} already exists")
    with atomic_directory(out) as tmp:
        (tmp / "logs").mkdir()
        for run in runs:
            _copy_files(run, tmp)
        metrics = _join_metrics(runs, tmp)
        if benches:
            shutil.copyfile(benches[0].path / BENCH, tmp / BENCH)
        manifest = merged_manifest(runs, metrics=metrics, bench=bool(benches),
                                   mismatched=differ)
        atomic_write_text(tmp / MANIFEST, json.dumps(manifest, indent=2, default=str) + "\n")
    return out


def _link_or_copy(source: Path, destination: Path) -> None:
    try:
        os.link(source, destination)  # same file system: no second copy of a large report
    except OSError:
        shutil.copy2(source, destination)


def _copy_files(run: Run, tmp: Path) -> None:
    for raw in run.manifest.get("entries", []):
        if raw.get("report") and raw.get("status") == "ok":
            _link_or_copy(run.path / raw["report"], tmp / raw["report"])
        log = run.path / "logs" / f"{raw['label']}.log"
        if log.is_file():
            _link_or_copy(log, tmp / "logs" / log.name)


def _join_metrics(runs: Sequence[Run], tmp: Path) -> dict[str, Any]:
    """The shards' metrics.csv joined (header once); skipped where every shard skipped it
    (profiled without --metrics-csv), failed if a shard with reports has none otherwise."""
    tables, missing = [], []
    for run in runs:
        path = run.path / METRICS
        if path.is_file():
            tables.append(path)
        elif any(entry.ok for entry in run.entries):
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
    rows = 0
    with atomic_path(tmp / METRICS) as part, part.open("wb") as joined:
        for number, path in enumerate(tables):
            with path.open("rb") as stream:
                header = stream.readline()
                if number == 0:
                    joined.write(header)
                for line in stream:
                    joined.write(line)
                    rows += 1
    return {"status": "ok", "error": None, "rows": rows}


def merged_manifest(runs: Sequence[Run], *, metrics: dict[str, Any], bench: bool,
                    mismatched: Sequence[str] = ()) -> dict[str, Any]:
    """The first shard's manifest, with every shard's entries, GPUs and command lines."""
    first = dict(runs[0].manifest)
    entries, gpus, commands = [], [], []
    for run in runs:
        for raw in run.manifest.get("entries", []):
            entries.append({**raw, "shard": run.path.name})
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
