"""The run directory: what `ncuh profile` leaves behind, and how later stages read it.

`runs/<id>/` holds `manifest.json` (schema "ncuh.run/2": environment, ncu settings and command
lines, one entry per report, timings, and a program's `ranking` with `--top`; "ncuh.run/1",
the same without a ranking, is still read), one `<label>.ncu-rep` per entry, and optionally
`metrics.csv` (`--metrics-csv`) and `bench.json` (`--bench`). A directory ending in
`.incomplete` was interrupted and is never read. `Manifest` and `BenchFile` (pydantic) are the
one reader of both files: a wrong shape is one line naming the file and the field; fields a newer
ncuh adds are kept. `project` records what the pages need, so they never import the project.
A report path must stay inside its run directory. The full layout is in docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import Field, FiniteFloat, PositiveInt, field_validator

from harness.errors import ReportError
from harness.rundir.names import BENCH as BENCH
from harness.rundir.names import BENCH_SCHEMA as BENCH_SCHEMA
from harness.rundir.names import MANIFEST as MANIFEST
from harness.rundir.names import METRICS as METRICS
from harness.rundir.names import RUN_SCHEMA as RUN_SCHEMA
from harness.rundir.names import RUN_SCHEMAS
from harness.rundir.names import is_run_directory as is_run_directory
from harness.rundir.ranking import RankedRef, RankingRecord
from harness.rundir.schema import Record as _Record
from harness.rundir.schema import validate
from harness.util import load_json, read_text

Size = Annotated[tuple[PositiveInt, ...], Field(min_length=1)]
Milliseconds = Annotated[FiniteFloat, Field(ge=0)]


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
    ranked: RankedRef | None = None  # the ranked kernel it profiled (--top)

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


class ChainRecord(_Record):
    """One variant of the run's project as its pages show it."""

    name: Annotated[str, Field(min_length=1)]
    iteration: Annotated[int, Field(ge=0)]
    title: str
    previous: str | None = None
    strategy: str = ""
    kernel_name: str | None = None
    # ncu's -k filter for the variant (its kernels when a launcher runs several, e.g. Triton)
    capture: str | None = None


class LimitRecord(_Record):
    name: Annotated[str, Field(min_length=1)]
    key: Annotated[str, Field(min_length=1)]


class WorkAt(_Record):
    size: Size
    flops: FiniteFloat | None = None
    bytes: FiniteFloat | None = None


class WorkModel(_Record):
    """Whether the project counts FLOPs and bytes, and how many at each profiled size."""

    flops: bool = False
    bytes: bool = False
    at: tuple[WorkAt, ...] = ()


class ProjectRecord(_Record):
    """The `project` block: the project's names and keys, and (newer runs) what its pages
    show, so that writing them up never loads the project's code."""

    name: str | None = None
    path: str | None = None
    description: str | None = None
    dims: tuple[str, ...] | None = None
    reference: str | None = None  # the reference's key in bench.json
    reference_name: str | None = None
    baseline: str | None = None
    baseline_title: str | None = None
    summary_min_size: int | None = None
    chain: tuple[ChainRecord, ...] | None = None  # None: a run from before it was recorded
    limits: tuple[LimitRecord, ...] = ()
    work_model: WorkModel | None = None


class Manifest(_Record):
    """manifest.json, schema ncuh.run/2 or /1 (see the module docstring)."""

    schema_: Literal["ncuh.run/1", "ncuh.run/2"] = Field(alias="schema")
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
    project: ProjectRecord | None = None
    ranking: RankingRecord | None = None  # a program's first pass (--top)

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
    # the kernel the entry's variant launches, as the manifest names it (the runner's record,
    # else the recorded chain's); None where it does not say
    kernel_name: str | None = None
    ranked: RankedRef | None = None  # the ranked kernel of a program it profiled (--top)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.report is not None

    def foreign(self, kernels: Sequence[str]) -> str | None:
        """Why a report holding `kernels` is not this entry's, in one line; None when it holds
        the kernel the manifest names (or the manifest names none)."""
        if self.kernel_name is None or self.kernel_name in kernels:
            return None
        held = ", ".join(dict.fromkeys(kernels)) or "no kernel"
        return (f"{self.report}: holds {held}, not {self.kernel_name} (the kernel of "
                f"{self.variant or self.label} that its manifest names)")


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
    data = load_json(text, str(path), ReportError)
    if not isinstance(data, dict):
        raise ReportError(f"{path}: not a JSON object")
    return data


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
    if raw.get("schema") not in RUN_SCHEMAS:
        raise ReportError(f"{path / MANIFEST}: unknown schema {raw.get('schema')!r} "
                          f"(expected {' or '.join(RUN_SCHEMAS)})")
    record = Manifest.from_json(text, str(path / MANIFEST))
    _check_ranked(record, path / MANIFEST)
    chain = record.project.chain if record.project is not None else None
    kernels = {variant.name: variant.kernel_name for variant in chain or ()}
    entries = tuple(_entry(path, item, index, kernels)
                    for index, item in enumerate(record.entries))
    return Run(path=path, manifest=raw, entries=entries, record=record)


def _check_ranked(record: Manifest, where: Path) -> None:
    """Every entry's ranked kernel is one the ranking holds."""
    for index, entry in enumerate(record.entries):
        ref = entry.ranked
        if ref is None:
            continue
        process = record.ranking.process(ref.process) if record.ranking is not None else None
        if process is None or process.kernel(ref.rank) is None:
            raise ReportError(f"{where}: entries[{index}].ranked: no kernel of rank {ref.rank} "
                              f"in process {ref.process!r} of the ranking")


def run_inputs(path: Path | str) -> list[Path]:
    """The files a reader of the run directory reads: its manifest, bench.json, reports."""
    run = load_run(path)
    reports = [entry.report for entry in run.entries if entry.report is not None]
    return [run.path / MANIFEST, run.path / BENCH, *reports]


def _entry(run_path: Path, raw: ManifestEntry, index: int,
           kernels: dict[str, str | None]) -> RunEntry:
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
        kernel_name=raw.kernel_name or kernels.get(raw.variant or ""),
        ranked=raw.ranked,
    )


def _check_inside(run_path: Path, report: Path, where: str) -> None:
    """A symbolic link inside the run directory must not lead out of it either."""
    try:
        inside = report.resolve().is_relative_to(run_path.resolve())
    except (OSError, RuntimeError) as error:  # a link loop, a path too long
        raise ReportError(f"{where}: cannot resolve {report} ({error})") from None
    if not inside:
        raise ReportError(f"{where}: {report} leads outside the run directory")
