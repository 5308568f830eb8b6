"""The run directory: what `ncuh profile` leaves behind, and how later stages read it.

Layout of `runs/<id>/` (written by `harness.profile.run`, or joined from shards by
`harness.profile.merge`; read by writeup and diff):

    manifest.json              schema "ncuh.run/1" (below)
    <label>.ncu-rep            one report per entry, e.g. register_tiled_4096.ncu-rep
    metrics.csv                tidy export of every report, only with --metrics-csv
                               (label,kernel_id,kernel,metric,...; `ncuh export RUN`)
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

`Manifest` and `BenchFile` (pydantic) are the one reader of both files: a wrong shape is one
line naming the file and the field. Fields a newer ncuh adds (say `project`) are kept, not
refused, so older and newer run directories stay readable. A report path must stay inside its
run directory: no absolute path, no `..`, no symbolic link that leads out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, PositiveInt, field_validator

from harness.errors import ReportError
from harness.rundir.names import BENCH as BENCH
from harness.rundir.names import BENCH_SCHEMA as BENCH_SCHEMA
from harness.rundir.names import MANIFEST as MANIFEST
from harness.rundir.names import METRICS as METRICS
from harness.rundir.names import RUN_SCHEMA as RUN_SCHEMA
from harness.rundir.schema import validate
from harness.util import read_text

Size = Annotated[tuple[PositiveInt, ...], Field(min_length=1)]
Milliseconds = Annotated[FiniteFloat, Field(ge=0)]


class _Record(BaseModel):
    """JSON records: strict types (a string is not a number), unknown fields kept."""

    model_config = ConfigDict(extra="allow", frozen=True, strict=True, populate_by_name=True)


# --- manifest.json ---------------------------------------------------------------------------


class ManifestEntry(_Record):
    label: Annotated[str, Field(min_length=1)]
    variant: str | None = None
    size: Size | None = None
    params: dict[str, Any] | None = None
    report: str | None = None
    status: Annotated[str, Field(min_length=1)]
    error: str | None = None
    kernel_name: str | None = None
    rel_error: float | None = None
    seconds: float | None = None

    @field_validator("report")
    @classmethod
    def _stays_inside(cls, report: str | None) -> str | None:
        if report is None:
            return None
        path = PurePosixPath(report)
        if not report.strip() or "\x00" in report or path.is_absolute() or ".." in path.parts \
                or "\\" in report:
            raise ValueError("must be a path inside the run directory (no absolute path, no '..')")
        return report


class Manifest(_Record):
    """manifest.json, schema ncuh.run/1 (see the module docstring)."""

    schema_: Literal["ncuh.run/1"] = Field(alias="schema")
    ncuh_version: str | None = None
    git_commit: str | None = None
    environment: dict[str, Any] = Field(default_factory=dict)
    ncu: dict[str, Any] = Field(default_factory=dict)
    started_at: str | None = None
    finished_at: str | None = None
    entries: tuple[ManifestEntry, ...]
    metrics: dict[str, Any] | None = None
    bench: str | None = None
    timings: dict[str, float] | None = None

    @classmethod
    def from_json(cls, text: str, source: str) -> Manifest:
        return validate(cls, text, source, ReportError, json_text=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


# --- bench.json ------------------------------------------------------------------------------


class BenchRecord(_Record):
    """One variant at one size of `ncuh bench` (harness.bench.BenchResult on disk)."""

    variant: Annotated[str, Field(min_length=1)]
    size: Size
    params: dict[str, Any] | None = None
    status: Literal["ok", "failed", "unsupported"]
    samples_ms: tuple[Annotated[FiniteFloat, Field(gt=0)], ...] = ()
    median_ms: Milliseconds | None = None
    q1_ms: Milliseconds | None = None
    q3_ms: Milliseconds | None = None
    min_ms: Milliseconds | None = None
    gflops: FiniteFloat | None = None
    gbps: FiniteFloat | None = None  # from the project's bytes model (memory-bound kernels)
    rel_error: FiniteFloat | None = None
    speedup: dict[str, FiniteFloat | None] = Field(default_factory=dict)
    error: str | None = None
    warning: str | None = None
    kind: Literal["variant", "reference", "limit"] = "variant"
    tuning: str | None = None  # where the parameters came from (harness.gpu.tuning)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def size_text(self) -> str:
        return "x".join(str(n) for n in self.size)


class BenchFile(_Record):
    """bench.json, schema ncuh.bench/1: a whole `ncuh bench` run."""

    schema_: Literal["ncuh.bench/1"] = Field(alias="schema")
    ncuh_version: str | None = None
    created_at: str | None = None
    environment: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    results: tuple[BenchRecord, ...] = ()
    project: dict[str, Any] | None = None  # the project's names and keys (harness.project)

    @classmethod
    def from_json(cls, text: str, source: str) -> BenchFile:
        return validate(cls, text, source, ReportError, json_text=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


# --- the run directory -----------------------------------------------------------------------


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
    manifest: dict[str, Any]  # manifest.json as written (validated by `record`)
    entries: tuple[RunEntry, ...] = field(default_factory=tuple)
    record: Manifest | None = None  # the typed manifest

    @property
    def environment(self) -> dict[str, Any]:
        return dict(self.record.environment) if self.record else {}

    @property
    def bench_path(self) -> Path | None:
        path = self.path / BENCH
        return path if path.is_file() else None

    def bench(self) -> BenchFile | None:
        """The bench results (schema ncuh.bench/1), or None when the run had no --bench."""
        path = self.bench_path
        return None if path is None else load_bench(path)


def load_bench(path: Path | str) -> BenchFile:
    """A bench.json (a run's, or `ncuh bench --out`'s); `ReportError` unless it is one."""
    path = Path(path)
    text = read_text(path, "bench results")
    schema = _parse_json(text, path).get("schema")
    if schema != BENCH_SCHEMA:
        raise ReportError(f"{path}: not ncuh bench results (schema {schema!r}, expected "
                          f"{BENCH_SCHEMA})")
    return BenchFile.from_json(text, str(path))


def _parse_json(text: str, path: Path) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ReportError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path}: not a JSON object")
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
    text = read_text(path / MANIFEST, "manifest")
    raw = _parse_json(text, path / MANIFEST)
    if raw.get("schema") != RUN_SCHEMA:
        raise ReportError(f"{path / MANIFEST}: unknown schema {raw.get('schema')!r} "
                          f"(expected {RUN_SCHEMA})")
    record = Manifest.from_json(text, str(path / MANIFEST))
    entries = tuple(_entry(path, item, index) for index, item in enumerate(record.entries))
    return Run(path=path, manifest=raw, entries=entries, record=record)


def _entry(run_path: Path, raw: ManifestEntry, index: int) -> RunEntry:
    report = None
    if raw.report and raw.status == "ok":
        report = run_path / raw.report
        _check_inside(run_path, report, f"{run_path / MANIFEST}: entries[{index}].report")
    return RunEntry(
        label=raw.label,
        variant=raw.variant,
        size=tuple(raw.size) if raw.size else None,
        params=dict(raw.params or {}),
        report=report,
        status=raw.status,
        error=raw.error,
    )


def _check_inside(run_path: Path, report: Path, where: str) -> None:
    """A symbolic link inside the run directory must not lead out of it either."""
    try:
        inside = report.resolve().is_relative_to(run_path.resolve())
    except (OSError, RuntimeError) as error:  # a link loop, a path too long
        raise ReportError(f"{where}: cannot resolve {report} ({error})") from None
    if not inside:
        raise ReportError(f"{where}: {report} leads outside the run directory")
