"""`load(path)`: a report, a run directory or bench results as one object for notebooks and
scripts: its kernels, a tidy table of every metric, the findings, the pages.

Data is read, never run: loading a run directory never imports the project it names.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness.errors import ReportError

if TYPE_CHECKING:
    import pandas as pd

    from harness.findings import Finding
    from harness.pages import Writeup
    from harness.report import KernelReport

Kind = Literal["report", "run", "bench"]
BENCH_FILE = "bench.json"

# The findings table: one row per finding of one kernel, most important first per kernel.
FINDING_COLUMNS = ("kernel", "page", "rule", "kind", "title", "text", "speedup_pct", "weight",
                   "what_if")
# What a notebook shows of a result at most (`to_dataframe()` has every row).
HTML_ROWS = 40
# The summary (the index page's table), what `_repr_html_` shows.
SUMMARY_COLUMNS = ("page", "kernel", "size", "time_ms", "time_source", "gflops", "gbps",
                   "pct_of_reference", "limiter", "tldr")
# A program's ranking (`profile --top`): one row per kernel (name and launch shape) per process.
RANKING_COLUMNS = ("process", "rank", "kernel", "grid", "block", "launches", "total_ms",
                   "share_pct", "cumulative_pct", "mean_us", "stdev_us")


def _kind(path: Path) -> Kind:
    from harness.rundir import is_run_directory

    if is_run_directory(path):
        return "run"
    if path.is_dir() and (path / BENCH_FILE).is_file():
        return "bench"  # what `ncuh bench --out DIR` writes
    if not path.exists():
        raise ReportError(f"{path}: no such report, run directory or bench results")
    if path.suffix == ".json":
        return "bench"
    if path.is_file():
        return "report"
    raise ReportError(f"{path}: not a report, run directory or bench results")


@dataclass
class Result:
    """What ncuh read from one source: an .ncu-rep report, a run directory, or bench results.

    `kernels` are the typed profiles (none for bench results alone), `to_dataframe()` every
    metric as `ncuh export` writes it (for bench results: one row per variant and size),
    `findings()` what the pages say about each kernel, `page()` the pages themselves.
    """

    path: Path
    kind: Kind
    project: Path | None = None  # for runs whose manifest names no project

    # ------------------------------------------------------------------ reading

    @cached_property
    def writeup(self) -> Writeup:
        """The page model of this source (what `ncuh writeup` renders)."""
        from harness.pages import collect

        if self.kind == "bench":
            raise ReportError(f"{self.path}: bench results alone have no profiled kernel; "
                              "profile with --bench for pages with timings")
        if self.project is not None:
            # named here, a project that cannot load is an error (`ProjectError`, with its
            # cause), not pages without its strategies; loaded once, `collect` reuses it
            from harness.project import open_project

            open_project(self.project)
        return collect([self.path], self.project)

    @property
    def kernels(self) -> list[KernelReport]:
        """Every profiled kernel, in page order (empty for bench results)."""
        if self.kind == "bench":
            return []
        return [page.profile for page in self.writeup.pages if page.profile is not None]

    def to_dataframe(self, kernel: str | None = None) -> pd.DataFrame:
        """A tidy table with units: the rows `ncuh export` writes for this source.

        A report: kernel_id, kernel, metric, instance, value, unit. A run directory: the same
        with its entry's `label` first (the run's metrics.csv). Bench results: one row per
        variant and size with its times (ms), GFLOP/s, GB/s and speedups. `kernel` is a
        regular expression (searched) that keeps only the kernels it matches.
        """
        import pandas as pd

        from harness.report import export_metrics, open_report

        if self.kind == "bench":
            return self._bench_frame()
        if self.kind == "report":
            return export_metrics(self.path, kernel_regex=kernel)
        from harness.rundir import load_run

        frames = []
        for entry in load_run(self.path).entries:
            if not entry.ok or entry.report is None:
                continue
            report = open_report(entry.report)
            if kernel is not None and not _matches(report, kernel):
                continue  # another entry's kernel: a run is filtered as a whole
            frame = export_metrics(report, kernel_regex=kernel)
            frame.insert(0, "label", entry.label)
            frames.append(frame)
        if not frames:
            matching = f" with a kernel matching {kernel!r}" if kernel is not None else ""
            raise ReportError(f"{self.path}: the run holds no report{matching}")
        return pd.concat(frames, ignore_index=True)

    def _bench_frame(self) -> pd.DataFrame:
        import pandas as pd

        from harness.rundir import load_bench

        file = self.path / BENCH_FILE if self.path.is_dir() else self.path
        rows = []
        for record in load_bench(file).results:
            row = {"variant": record.variant, "kind": record.kind, "size": record.size_text,
                   "status": record.status, "median_ms": record.median_ms,
                   "q1_ms": record.q1_ms, "q3_ms": record.q3_ms, "min_ms": record.min_ms,
                   "gflops": record.gflops, "gbps": record.gbps,
                   "rel_error": record.rel_error}
            row.update({f"speedup_vs_{key}": value for key, value in record.speedup.items()})
            rows.append(row)
        return pd.DataFrame(rows)

    def findings(self) -> pd.DataFrame:
        """Every finding of every kernel as a table (columns `FINDING_COLUMNS`): what the
        pages list, in their order, with ncu's estimated speedup where it gives one."""
        import pandas as pd

        rows = []
        if self.kind != "bench":
            for page in self.writeup.pages:
                for finding in page.findings:
                    rows.append(_finding_row(page.kernel_name, page.slug, finding))
        return pd.DataFrame(rows, columns=list(FINDING_COLUMNS))

    def summary(self) -> pd.DataFrame:
        """The index page's table: one row per page (columns `SUMMARY_COLUMNS`)."""
        import pandas as pd

        rows = [{"page": p.heading, "kernel": p.kernel_name, "size": p.size,
                 "time_ms": p.time_ms, "time_source": p.time_source, "gflops": p.gflops,
                 "gbps": p.gbps, "pct_of_reference": p.pct_of_reference, "limiter": p.limiter,
                 "tldr": p.tldr}
                for p in self.writeup.pages]
        frame = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
        if self.writeup.reference_name is None:
            frame = frame.drop(columns=["pct_of_reference"])
        return frame

    def ranking(self) -> pd.DataFrame:
        """A program's ranking (`ncuh profile --top`): one row per kernel and process, most
        GPU time first (columns `RANKING_COLUMNS`); `ReportError` for any other source."""
        import pandas as pd

        from harness.rundir import load_run, shape_text

        record = load_run(self.path).record if self.kind == "run" else None
        if record is None or record.ranking is None:
            raise ReportError(f"{self.path}: not a program's run (profile --top): no ranking")
        rows = [{"process": process.key, "rank": k.rank, "kernel": k.name,
                 "grid": shape_text(k.grid), "block": shape_text(k.block),
                 "launches": k.launches, "total_ms": k.total_ns / 1e6,
                 "share_pct": k.share_pct, "cumulative_pct": k.cumulative_pct,
                 "mean_us": k.mean_ns / 1e3, "stdev_us": k.stdev_ns / 1e3}
                for process in record.ranking.processes for k in process.kernels]
        return pd.DataFrame(rows, columns=list(RANKING_COLUMNS))

    # ------------------------------------------------------------------ pages

    def page(self, out: Path | str | None = None,
             fmt: Literal["md", "html", "both"] = "md") -> str | Path:
        """The pages: with `out`, every page and the plots written there as `ncuh writeup`
        writes them (a program's run: its ranking and its kernels' pages), and the index's
        path returned; without, the index page's text (no plots) in `fmt` ("md" or
        "html"). `out` inside the run read is an `OutputError`, as in `ncuh writeup`: inputs
        are never written."""
        from harness.pages import collect_program, ranked_run, render_index, write, write_program
        from harness.util import refuse_input_folders

        if out is None:
            if fmt == "both":
                raise ValueError("fmt='both' needs out=: a folder for both")
            return render_index(self.writeup, [], fmt)
        refuse_input_folders(out, [self.path])  # as `ncuh writeup`: `OutputError`
        program = ranked_run([self.path]) if self.kind == "run" else None
        if program is not None:  # a program's ranking and its kernels' pages
            write_program(collect_program(program), Path(out), fmt)
            return Path(out) / ("index.html" if fmt == "html" else "index.md")
        rendered = write(self.writeup, Path(out), fmt)
        return next(path for path in rendered.files if path.name.startswith("index."))

    def _repr_html_(self) -> str:
        """Jupyter: the index page's summary table (bench results: their table, without the
        quartiles), at most `HTML_ROWS` rows of it; a missing value reads n/a."""
        title = html.escape(f"{self.kind}: {self.path.name}")
        table = (self._bench_frame().drop(columns=["q1_ms", "q3_ms", "min_ms"])
                 if self.kind == "bench" else self.summary())
        for column in table.columns:  # None is no NaN to pandas, nor to `na_rep`
            missing = table[column].map(lambda value: value is None)
            if missing.any():
                table[column] = table[column].where(~missing, "n/a")
        return f"<h4>ncuh {title}</h4>\n" + table.to_html(
            index=False, na_rep="n/a", float_format=_number, max_rows=HTML_ROWS, border=0)

    def __repr__(self) -> str:
        return f"Result(kind={self.kind!r}, path={str(self.path)!r})"


def _matches(report: Any, kernel: str) -> bool:
    from harness.report import select_kernels

    try:
        return bool(select_kernels(report, kernel))
    except ReportError:
        return False


def _number(value: float) -> str:
    return f"{value:,.4g}"


def _finding_row(kernel: str, page: str, finding: Finding) -> dict[str, Any]:
    return {"kernel": kernel, "page": page, "rule": finding.rule, "kind": finding.kind,
            "title": finding.title, "text": finding.text, "speedup_pct": finding.speedup_pct,
            "weight": finding.weight, "what_if": finding.what_if}


def load(path: Path | str, project: Path | str | None = None) -> Result:
    """A report (.ncu-rep), a run directory, or bench results (bench.json, or the folder
    `ncuh bench --out` wrote) as a `Result`. A source that does not exist is a `ReportError`
    at once; nothing is read until it is asked for, and a file that is not what it claims to
    be is a `ReportError` then."""
    path = Path(path)
    return Result(path=path, kind=_kind(path),
                  project=Path(project) if project is not None else None)
