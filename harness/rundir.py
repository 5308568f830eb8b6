"""The run directory: what `ncuh profile` leaves behind, and how later stages read it.

Layout of `runs/<id>/` (written by `harness.profile.run`, or joined from shards by
`harness.profile.merge`; read by writeup and diff):

    manifest.json              schema "ncuh.run/1" (below)
    <label>.ncu-rep            one report per entry, e.g. register_tiled_4096.ncu-rep
    metrics.csv                tidy export of every report (kernel_id,kernel,metric,...)
    bench.json                 schema "ncuh.bench/1", only with --bench

manifest.json:
    {
      "schema": "ncuh.run/1",
      "ncuh_version": "0.1.0", "git_commit": "abc123" | null,
      "environment": {"gpu": ..., "compute_capability": "9.0", "driver": ..., "cuda": ...,
                      "ncu_version": ..., "clocks": {...}, ...},
      "ncu": {"set": "full", "clock_control": "base", "cache_control": "all",
              "replay_mode": "kernel", "command_lines": [[...argv...], ...]},
      "started_at": ISO-8601, "finished_at": ISO-8601,
      "entries": [
        {"label": "register_tiled_4096", "variant": "register_tiled" | null,
         "size": [one value per dim] | null, "params": {...},
         "report": "register_tiled_4096.ncu-rep",
         "status": "ok" | "failed", "error": null | "one line",
         "passes": int | null,                     # ncu's replay passes, as it printed them
         "gpu": {"index", "name", "uuid", "pci_bus_id", ...} | null,  # which GPU profiled it
         "shard": "..."}                           # merged runs only: the shard it came from
      ],
      "gpus": [{"index", "name", "uuid", "pci_bus_id", ...}],  # every GPU that profiled
      "timings": {"ncu_s": float,     # the entries' ncu runs, summed
                  "ncu_wall_s": float,  # from the start to the last ncu's end (GPUs at once)
                  "post_s": float,    # what was left after the last ncu: its export, the join
                  "post_environment_s": float,  # the probe (beside the first ncu)
                  "post_metrics_s": float,      # the exports, summed (each beside an ncu)
                  "total_s": float},  # the whole `ncuh profile`, up to writing the manifest
      "project": {"name": ..., "path": ..., ...} | null,  # optional: the project of the run
      "merged_from": [...], "mismatches": [...]  # merged runs only (`ncuh merge`)
    }

A directory whose name ends in `.incomplete` was interrupted and is never read as a run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import ReportError

MANIFEST = "manifest.json"
BENCH = "bench.json"
METRICS = "metrics.csv"
RUN_SCHEMA = "ncuh.run/1"
BENCH_SCHEMA = "ncuh.bench/1"


@dataclass(frozen=True)
class RunEntry:
    """One profiled variant and size (or one user-program capture) of a run."""

    label: str
    variant: str | None
    size: tuple[int, ...] | None  # one value per dimension of the project
    params: dict[str, Any]
    report: Path | None  # absolute path of the .ncu-rep, None when the entry failed
    status: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.report is not None


@dataclass(frozen=True)
class Run:
    """A finished run directory."""

    path: Path
    manifest: dict[str, Any]
    entries: tuple[RunEntry, ...] = field(default_factory=tuple)

    @property
    def environment(self) -> dict[str, Any]:
        return self.manifest.get("environment", {})

    @property
    def bench_path(self) -> Path | None:
        path = self.path / BENCH
        return path if path.is_file() else None

    def bench(self) -> dict[str, Any] | None:
        """The bench results (schema ncuh.bench/1), or None when the run had no --bench."""
        path = self.bench_path
        return None if path is None else load_bench(path)


def load_bench(path: Path) -> dict[str, Any]:
    """A bench.json (a run's, or `ncuh bench --out`'s); `ReportError` unless it is one."""
    data = _read_json(path, "bench results")
    if not isinstance(data, dict) or data.get("schema") != BENCH_SCHEMA:
        raise ReportError(f"{path}: not ncuh bench results (schema {BENCH_SCHEMA})")
    return data


def is_run_directory(path: Path) -> bool:
    return path.is_dir() and (path / MANIFEST).is_file()


def load_run(path: Path | str) -> Run:
    """Read a run directory; raise `ReportError` (exit 2) when it is not a complete run."""
    path = Path(path)
    if not path.exists():
        raise ReportError(f"{path}: no such run directory")
    if path.name.endswith(".incomplete"):
        raise ReportError(f"{path}: an interrupted run (its name ends in .incomplete)")
    if not is_run_directory(path):
        raise ReportError(f"{path}: not a run directory (no {MANIFEST})")
    manifest = _read_json(path / MANIFEST, "manifest")
    if manifest.get("schema") != RUN_SCHEMA:
        raise ReportError(f"{path / MANIFEST}: unknown schema {manifest.get('schema')!r}")
    entries = tuple(_entry(path, raw) for raw in manifest.get("entries", []))
    return Run(path=path, manifest=manifest, entries=entries)


def _entry(run_path: Path, raw: dict[str, Any]) -> RunEntry:
    size = raw.get("size")
    report = raw.get("report")
    return RunEntry(
        label=raw["label"],
        variant=raw.get("variant"),
        size=tuple(size) if size else None,  # type: ignore[arg-type]
        params=dict(raw.get("params") or {}),
        report=(run_path / report) if report and raw.get("status") == "ok" else None,
        status=raw.get("status", "unknown"),
        error=raw.get("error"),
    )


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ReportError(f"{path}: unreadable {what} ({error})") from None
