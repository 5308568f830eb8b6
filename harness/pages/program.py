"""A program's pages (`ncuh profile --top`): per process, its ranking and a page per kernel.

The index lists each process's kernels by GPU time (the first pass's launches): each one's
share and cumulative share, launches, mean and spread per launch, and for the kernels the
second pass profiled, their bound and a link to their page. A kernel's page has every finding
a chain page has, and says where the kernel stands in its program. Where the program ran
several processes (a torchrun's ranks, one per GPU), each gets its own index and pages in a
folder named by its key (`gpu0/`), under an index of the processes.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import ReportError
from harness.pages.program_share import ProgramShare
from harness.pages.writeup import KernelPage, Writeup, kernel_page
from harness.report import KernelReport, load_kernel_reports
from harness.rundir import (
    ProcessRecord,
    RankedKernelRecord,
    RankingRecord,
    Run,
    RunEntry,
    is_run_directory,
    load_run,
    profiled_as_ranked,
    shape_text,
    short_name,
)

SHORT_NAME = 60  # characters of a kernel's name in tables and headings
AXIS_NAME = 22  # on plot axes


@dataclass(frozen=True)
class RankRow:
    """One ranked kernel of the index: its share, and its page where it was profiled."""

    share: ProgramShare
    name: str  # demangled
    page: KernelPage | None
    status: str  # "profiled", "failed: <why>", or why it has no page

    @property
    def short(self) -> str:
        return short_name(self.name, SHORT_NAME)

    @property
    def axis_label(self) -> str:
        return f"{self.share.rank}. {short_name(self.name, AXIS_NAME)}"


@dataclass(frozen=True)
class Remainder:
    """The kernels below the top N, taken together."""

    kernels: int
    launches: int
    total_ms: float
    share_pct: float


@dataclass
class ProcessPages:
    """One process's ranking and pages."""

    key: str  # "gpu0"
    title: str  # "GPU 0 (process 4242)"
    folder: str  # where its pages go: "" (the only process) or its key
    rows: list[RankRow]
    rest: Remainder | None
    launches: int
    kernels: int
    total_ms: float
    pages: Writeup  # the profiled kernels' pages: what the plots are drawn from

    @property
    def top_share_pct(self) -> float:
        return self.rows[-1].share.cumulative_pct if self.rows else 0.0

    @property
    def profiled(self) -> str:
        """Which of the top N were profiled again, in words (none, where the run holds only
        the first pass)."""
        pages = sum(1 for row in self.rows if row.page is not None)
        if pages == len(self.rows):
            return "each was profiled at its launch nearest the median duration"
        if pages == 0:
            return "none of them was profiled again"
        if pages == 1:
            return "1 of them was profiled at its launch nearest the median duration"
        return f"{pages} of them were profiled at their launch nearest the median duration"


@dataclass
class ProgramWriteup:
    """Everything the program's pages show."""

    title: str
    program: str  # the command line, as the manifest records it
    source: str  # the run directory's name
    environment: dict[str, Any]
    top: int
    first_pass_s: float | None
    launches_seen: int
    window: str  # which launches were ranked, in words
    clock_control: str | None
    processes: list[ProcessPages] = field(default_factory=list)

    @property
    def pages(self) -> list[KernelPage]:
        return [page for process in self.processes for page in process.pages.pages]


def ranked_run(sources: list[Path]) -> Run | None:
    """The run to write up as a program's, when a source is one (`ncuh profile --top`);
    `ReportError` when it is given beside other sources."""
    runs = [source for source in sources if is_run_directory(source)]
    for source in runs:
        run = load_run(source)
        if run.record is not None and run.record.ranking is not None:
            if len(sources) > 1:
                raise ReportError(f"{source}: a program's run (profile --top) is written up "
                                  "on its own: give it as the only source")
            return run
    return None


def _process_title(process: ProcessRecord) -> str:
    device = f"GPU {process.device}" if process.device is not None else process.key
    return f"{device} (process {process.process})" if process.process is not None else device


def _share(kernel: RankedKernelRecord, process: ProcessRecord, title: str | None,
           mismatch: str | None) -> ProgramShare:
    return ProgramShare(
        rank=kernel.rank, kernels=len(process.kernels), process=title,
        grid=shape_text(kernel.grid), block=shape_text(kernel.block), launches=kernel.launches,
        total_ms=kernel.total_ns / 1e6, share_pct=kernel.share_pct,
        cumulative_pct=kernel.cumulative_pct, mean_us=kernel.mean_ns / 1e3,
        stdev_us=kernel.stdev_ns / 1e3, min_us=kernel.min_ns / 1e3,
        median_us=kernel.median_ns / 1e3, max_us=kernel.max_ns / 1e3,
        process_total_ms=process.total_ns / 1e6,
        representative_us=kernel.representative.duration_ns / 1e3,
        representative_skip=kernel.representative.skip, mismatch=mismatch)


def _chosen(profiles: list[KernelReport], kernel: RankedKernelRecord
            ) -> tuple[KernelReport, str | None]:
    """The report's kernel that the page is about, and why it is not the ranked launch."""
    for profile in profiles:
        if profiled_as_ranked(profile.mangled_name, profile.demangled_name,
                              profile.launch.grid, profile.launch.block, kernel):
            return profile, None
    profile = profiles[0]
    grid = shape_text(profile.launch.grid) if profile.launch.grid else "?"
    block = shape_text(profile.launch.block) if profile.launch.block else "?"
    return profile, (f"the report holds {profile.demangled_name or profile.name} launched "
                     f"<<<{grid}, {block}>>>: the second pass's launch count led to another "
                     "launch than the ranked one")


def _row(run: Run, process: ProcessRecord, kernel: RankedKernelRecord,
         entry: RunEntry | None, title: str | None) -> RankRow:
    if entry is None:
        return RankRow(_share(kernel, process, title, None), kernel.name, None,
                       "not profiled: no entry of the run holds it")
    if not entry.ok or entry.report is None:
        return RankRow(_share(kernel, process, title, None), kernel.name, None,
                       f"failed: {entry.error or entry.status}")
    profile, mismatch = _chosen(load_kernel_reports(entry.report), kernel)
    if mismatch is not None:
        print(f"ncuh: warning: {entry.report}: {mismatch}", file=sys.stderr)
    page = kernel_page(entry.report, profile, run, entry, entry.label)
    page.heading = f"{kernel.rank}. {short_name(kernel.name, SHORT_NAME)}"
    page.label = f"{kernel.rank}. {short_name(kernel.name, AXIS_NAME)}"
    page.program = _share(kernel, process, title, mismatch)
    return RankRow(page.program, kernel.name, page, "profiled")


def _process_pages(run: Run, ranking: RankingRecord, process: ProcessRecord) -> ProcessPages:
    entries = {(entry.ranked.process, entry.ranked.rank): entry
               for entry in run.entries if entry.ranked is not None}
    title = _process_title(process) if ranking.several else None
    top = process.kernels[:ranking.top]
    rows = [_row(run, process, kernel, entries.get((process.key, kernel.rank)), title)
            for kernel in top]
    rest = process.kernels[ranking.top:]
    remainder = (Remainder(len(rest), sum(k.launches for k in rest),
                           sum(k.total_ns for k in rest) / 1e6,
                           sum(k.share_pct for k in rest)) if rest else None)
    pages = [row.page for row in rows if row.page is not None]
    writeup = Writeup(title=_process_title(process), pages=pages, sources=[run.path.name],
                      environment=dict(run.environment))
    return ProcessPages(
        key=process.key, title=_process_title(process),
        folder=process.key if ranking.several else "", rows=rows, rest=remainder,
        launches=process.launches, kernels=len(process.kernels),
        total_ms=process.total_ns / 1e6, pages=writeup)


def _window(ranking: RankingRecord) -> str:
    skip, count = ranking.window.get("launch_skip") or 0, ranking.window.get("launch_count")
    after = f" after the first {skip}" if skip else ""
    launches = f"{count} launches{after}" if count is not None else f"every launch{after}"
    launches += " the filters let through"
    ranges = ranking.window.get("nvtx_include") or []
    if ranges:
        anywhere = " from any thread" if ranking.window.get("nvtx_over") == "every thread" else ""
        launches += f" inside the NVTX range {' or '.join(ranges)}{anywhere}"
    return launches


def collect_program(run: Run) -> ProgramWriteup:
    """The pages of a program's run: each process's ranking and its kernels' pages."""
    ranking = run.record.ranking if run.record is not None else None
    if ranking is None:
        raise ReportError(f"{run.path}: not a program's run (its manifest has no ranking)")
    program = run.manifest.get("program") or []
    words = [str(word) for word in program] if isinstance(program, list) else []
    return ProgramWriteup(
        title="Program", program=shlex.join(words), source=run.path.name,
        environment=dict(run.environment), top=ranking.top, first_pass_s=ranking.seconds,
        launches_seen=ranking.launches_seen, window=_window(ranking),
        clock_control=ranking.ncu.get("clock_control"),
        processes=[_process_pages(run, ranking, process) for process in ranking.processes])
