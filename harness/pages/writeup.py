"""Collect writeup sources into page models: one page per iteration (or per kernel of a plain
report), plus the chain's index.

A SOURCE is a run directory (`ncuh profile` output: manifest, reports, maybe bench.json), a
plain `.ncu-rep`, or bench results (`ncuh bench` output: a bench.json or its directory), whose
timings serve the pages of runs that were profiled without `--bench`. Run entries of bundled
variants become "Iteration N: Title" pages with the variant's strategy, its benchmark results
and speedups; a variant that runs several launches (a main kernel, then passes over its
partial results) gets one page about its longest launch, which lists the others. A plain
report's kernels become one page each, without strategy and speedups.
Titles, strategies and the reference's name come from what the run's manifest records of its
project (`Chain`); a project's code runs only when the user names it (--project). A report
that does not hold the kernel its manifest names gets pages under its own kernel's name.
Everything here is data; `harness.pages.render` turns it into Markdown and HTML.
"""

from __future__ import annotations

import hashlib
import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import NcuhError, ReportError
from harness.findings import (
    PROGRESS_RULE,
    STALL_PROBLEMS,
    Finding,
    SetAside,
    busiest_pipes,
    describe_bound,
    duration_change,
    ncu_set_aside,
    run_rules,
)
from harness.pages.gpu_comparison import GpuComparison, compare_gpus
from harness.pages.program_share import ProgramShare
from harness.pages.side_by_side import Change, KeyValue, key_values, since_previous
from harness.pages.tldr import Measured, tldr
from harness.project import Project, Size, size_text
from harness.report import (
    Hotspot,
    KernelReport,
    MathRate,
    PipeUse,
    Roofline,
    hotspots,
    load_kernel_reports,
    math_rates,
    render_text,
    sites_by_reason,
    stall_label,
)
from harness.rundir import (
    BENCH,
    MANIFEST,
    BenchRecord,
    ProjectRecord,
    Run,
    RunEntry,
    load_bench,
    load_run,
)

if TYPE_CHECKING:
    from harness.project import Project

MAX_SUMMARY = 5  # items under What's Good? / What's Bad?
STALL_CARRIES = 50.0  # percent of a stall's samples at one class: the index names it
# the stalls whose carrying instructions the index names: the problems, and the WGMMA wait
# (GMMA), whose instructions say what the warps wait on
NAMED_STALLS = (*STALL_PROBLEMS, "gmma")
HOTSPOTS = 5
PIPES_SHOWN = 6


@dataclass(frozen=True)
class BenchRow:
    """One size of a variant's benchmark (bench.json)."""

    size: str  # "4096x4096x4096"
    median_ms: float | None
    q1_ms: float | None
    q3_ms: float | None
    gflops: float | None
    status: str
    gbps: float | None = None  # from the project's bytes model (memory-bound kernels)


@dataclass(frozen=True)
class Speedups:
    """How many times faster than the project's reference, its first variant and the previous
    iteration (named as the project names them)."""

    reference: float | None
    baseline: float | None
    previous: float | None
    size: str
    reference_name: str = "reference"
    baseline_name: str = "first"
    size_heading: str = ""  # "n = 2^26", "M = 1024, N = 1024, K = 512", "size 4096"

    @property
    def label_width(self) -> int:
        """Width of the labels column ("CUB:", "First:", "Prev:") so the factors line up."""
        return max(len(self.reference_name) + 1, len("First:"), len("Prev:")) + 1


@dataclass(frozen=True)
class FixIdea:
    title: str
    text: str | None
    what_if: str
    finding_number: int  # 1-based number of the finding it answers
    because: str = ""  # when it fits, as the report shows it (`findings.FixIdea.because`)


@dataclass(frozen=True)
class WidthRow:
    space: str
    kind: str
    width_bits: int
    executed: float
    share_pct: float  # of this space and kind


@dataclass(frozen=True)
class Bonus:
    widths: tuple[WidthRow, ...]
    registers_per_thread: float | None
    shared_static_bytes: float | None
    shared_dynamic_bytes: float | None
    spills: float | None
    hotspots: tuple[Hotspot, ...]
    has_line_info: bool


@dataclass(frozen=True)
class LaunchRow:
    """One launch of an iteration: the main kernel or one of the passes beside it."""

    kernel: str
    grid: str  # "262144x1x1"
    duration_us: float | None
    share_pct: float | None  # of the iteration's profiled time (all its launches)
    main: bool


@dataclass
class KernelPage:
    """Everything one iteration page shows."""

    slug: str
    heading: str
    kernel_name: str
    demangled_name: str
    source: str  # the report the page was built from
    device: str | None
    variant: str | None = None
    iteration: int | None = None
    size: str | None = None
    strategy: str | None = None
    bench_rows: list[BenchRow] = field(default_factory=list)
    speedups: Speedups | None = None
    good: list[Finding] = field(default_factory=list)
    bad: list[Finding] = field(default_factory=list)
    tldr: str = ""
    findings: list[Finding] = field(default_factory=list)
    # ncu's results that do not matter for this kernel, with the reason ("ncu also says")
    ncu_also: list[SetAside] = field(default_factory=list)
    fix_ideas: list[FixIdea] = field(default_factory=list)
    profiling_results: str = ""
    bonus: Bonus | None = None
    profile: KernelReport | None = None
    roofline: Roofline = field(default_factory=Roofline)
    pipes: list[PipeUse] = field(default_factory=list)  # busiest first (Instruction Mix)
    previous_slug: str | None = None
    previous_launches: int = 1  # the previous iteration's launches (its main kernel is set beside)
    params: dict[str, Any] = field(default_factory=dict)  # the run's parameters of the variant
    # the key counters of this kernel, and beside the previous iteration's ("side by side")
    key_values: list[KeyValue] = field(default_factory=list)
    since_previous: list[Change] = field(default_factory=list)
    # every launch of the iteration when it has several (main kernel first), else empty
    launches: list[LaunchRow] = field(default_factory=list)
    # index columns
    time_ms: float | None = None
    time_source: str = "ncu"  # "bench" (median of timed runs) or "ncu" (profiled duration)
    gflops: float | None = None
    gbps: float | None = None  # from the project's bytes model, where it has one
    # where gflops comes from: "bench" (timed runs), "model" (the project's work model over the
    # profiled duration) or "ncu" (the FP32 operations ncu counted)
    work_source: str = "ncu"
    pct_of_limit: float | None = None  # of the project's first benched limit
    # the kernel's math by precision (tensor cores, FP64, FP32), most per second first
    math_rates: list[MathRate] = field(default_factory=list)
    pct_of_reference: float | None = None
    limiter: str = ""
    label: str = ""  # short name on plot axes, e.g. "4. register_tiled"
    # a program's ranked kernel (`ncuh profile --top`): its share of the program's GPU time
    program: ProgramShare | None = None


@dataclass
class Writeup:
    """The pages of all sources, in chain order, and what the index shows."""

    title: str
    pages: list[KernelPage]
    sources: list[str]
    environment: dict[str, Any] = field(default_factory=dict)
    reference_gflops: float | None = None
    index_size: str | None = None
    reference_name: str | None = None  # the project's reference, e.g. the library's name
    reference_gbps: float | None = None
    limit_gbps: float | None = None  # the project's first benched limit at index_size
    limit_name: str | None = None
    bytes_model: bool = False  # the project counts bytes: the index shows GB/s, not GFLOP/s
    # the same kernels profiled on several GPU models (their own page), else None
    gpus: GpuComparison | None = None


# ---------------------------------------------------------------------------------------------
# one kernel


@dataclass
class _Item:
    """A kernel waiting for its page: where it came from and what the run said about it."""

    report_path: Path
    profile: KernelReport
    entry: RunEntry | None = None
    run: Run | None = None
    variant: ChainVariant | None = None  # when the entry names a variant of its project
    project: Chain | None = None  # the run's project (strategies, sources, keys)
    previous: _Item | None = None
    # the entry's report holds several kernels and none is the variant's own: name each page
    # after its kernel as well
    shared_entry: bool = False
    # the other launches of the same iteration (a variant that runs several kernels, e.g. a
    # main kernel and passes over its partial results): listed on the main kernel's page
    others: list[KernelReport] = field(default_factory=list)
    bench: list[BenchRecord] = field(default_factory=list)  # bench results for this page
    # the kernel the manifest names for the entry, when the report does not hold it
    foreign: str | None = None


def _size_text(size: Sequence[int] | None) -> str | None:
    return size_text(size) if size else None


MAX_SLUG = 120  # page file names stay far below NAME_MAX (255 bytes) for any kernel name


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.") or "kernel"
    if len(slug) > MAX_SLUG:  # a long C++ name: cut it, and keep it unique with a hash
        slug = f"{slug[:MAX_SLUG - 9]}_{hashlib.sha1(text.encode()).hexdigest()[:8]}"
    return slug


def _profiling_results(profile: KernelReport) -> str:
    """ncu's details page for this kernel, as `ncu --print-details` prints it."""
    if profile.details is None:
        return ""
    return textwrap.dedent(render_text([profile.details]))


@dataclass(frozen=True)
class ChainVariant:
    """One variant as its page names it: the chain's order, title and strategy."""

    name: str
    iteration: int
    title: str
    previous: str | None
    strategy: str
    kernel_name: str | None
    capture: str | None = None  # ncu's -k filter: NAME or regex:EXPR


@dataclass(frozen=True)
class Named:
    """A reference or a limit: its display name and its key in bench.json."""

    name: str
    key: str


@dataclass(frozen=True)
class Chain:
    """What the pages take from a project: read from a run's manifest (data), or from a
    project the user named with --project (then loaded, which runs its module)."""

    name: str | None
    variants: tuple[ChainVariant, ...] = ()
    reference: Named | None = None
    baseline: str | None = None  # the first variant's name (its key in speedups)
    baseline_title: str | None = None
    limits: tuple[Named, ...] = ()
    # the index judges by GB/s (`_judged_by_bytes`); unknown (an older run): what bench.json
    # holds decides
    counts_bytes: bool = True
    dims: tuple[str, ...] = ()  # the size's dimension names, where known
    folder: Path | None = None  # kernel sources beside the SASS: a loaded project's only
    # (FLOPs, bytes) at a size: the manifest's recorded counts, or a loaded project's model
    work: Callable[[tuple[int, ...]], tuple[float | None, float | None]] | None = None

    def variant(self, name: str | None) -> ChainVariant | None:
        return next((v for v in self.variants if v.name == name), None) if name else None

    @classmethod
    def from_project(cls, project: Project) -> Chain:
        return cls(
            name=project.name,
            variants=tuple(ChainVariant(v.name, v.iteration, v.title, v.previous, v.strategy,
                                        v.kernel_name, v.capture_filter)
                           for v in project.variants),
            reference=Named(project.reference.name, project.reference.key)
            if project.reference is not None else None,
            baseline=project.baseline.name if project.variants else None,
            baseline_title=project.baseline.title if project.variants else None,
            limits=tuple(Named(limit.name, limit.key) for limit in project.limits),
            counts_bytes=_judged_by_bytes(project.bytes is not None, project.flops is not None,
                                          bool(project.limits)),
            dims=tuple(project.dims),
            folder=project.folder,
            work=lambda size: _project_work(project, size),
        )

    @classmethod
    def from_record(cls, record: ProjectRecord) -> Chain:
        return cls(
            name=record.name,
            variants=tuple(ChainVariant(v.name, v.iteration, v.title, v.previous, v.strategy,
                                        v.kernel_name, v.capture) for v in record.chain or ()),
            reference=Named(record.reference_name or record.reference, record.reference)
            if record.reference else None,
            baseline=record.baseline,
            baseline_title=record.baseline_title,
            limits=tuple(Named(limit.name, limit.key) for limit in record.limits),
            counts_bytes=_judged_by_bytes(record.work_model.bytes, record.work_model.flops,
                                          bool(record.limits))
            if record.work_model is not None else True,
            dims=tuple(record.dims or ()),
            work=_recorded_work(record),
        )



def _judged_by_bytes(counts_bytes: bool, counts_flops: bool, has_limits: bool) -> bool:
    """Whether the index shows GB/s: the project counts bytes, and either no FLOPs or a
    bandwidth limit to stand beside (a device copy); a GEMM that counts both shows GFLOP/s."""
    return counts_bytes and (not counts_flops or has_limits)


def _loaded_chain(project: Path) -> Chain | None:
    """The project the user named (--project): loaded, so its module runs."""
    # imported here: the project file's schema costs a writeup of runs alone its start-up
    from harness.project import open_project

    try:
        return Chain.from_project(open_project(project))
    except NcuhError as error:
        # A project this machine cannot load: pages without Strategy, and the user told why.
        print(f"ncuh: warning: {error} (the pages have no Strategy texts)", file=sys.stderr)
        return None


def _run_chain(run: Run | None, project: Path | None) -> Chain | None:
    """What the pages of `run` (None: plain reports) take from its project.

    A run is data: its manifest's record of the project, never a module it names. Only a
    project the user names (`project`, --project) is loaded, and only where the run does not
    name another project (another project's strategies would mislead).
    """
    record = run.record.project if run is not None and run.record is not None else None
    if project is not None:
        chain = _loaded_chain(project)
        if chain is not None and (record is None or record.name in (None, chain.name)):
            return chain
    if (record is None or record.chain is None) and run is not None and project is None \
            and any(entry.variant for entry in run.entries):
        print(f"ncuh: note: {run.path}: the manifest does not record the chain's titles and "
              "strategies (an older run); pass --project to show them", file=sys.stderr)
    return Chain.from_record(record) if record is not None else None


def _variant(chain: Chain | None, name: str | None) -> ChainVariant | None:
    return chain.variant(name) if chain is not None else None


def _bound_only(profile: KernelReport) -> str:
    return describe_bound(profile)


def _bound_text(profile: KernelReport) -> str:
    """The index's "main limiter": the binding unit and the largest stall reason, with the
    instructions that carry most of its samples where one class does."""
    text = _bound_only(profile)
    stalls = [s for s in profile.warp_state.stalls if s.reason != "selected"]
    if stalls:
        top = max(stalls, key=lambda s: s.cycles_per_issue)
        text += f"; {stall_label(top.reason)} stalls"
        sites = sites_by_reason(profile).get(top.reason)
        if top.reason in NAMED_STALLS and sites is not None and sites.enough \
                and sites.carriers and sites.carriers[0].share_pct >= STALL_CARRIES:
            text += f" at {sites.carriers[0].words}"
    return text


def _bench_results(run: Run | None) -> list[BenchRecord]:
    if run is None:
        return []
    bench = run.bench()
    return list(bench.results) if bench else []


def _bench_source(path: Path) -> Path | None:
    """The bench.json a SOURCE names: the file itself, or `ncuh bench --out`'s directory
    (bench.json and no manifest); None for runs and reports."""
    if path.is_file() and path.suffix == ".json":
        return path
    if path.is_dir() and (path / BENCH).is_file() and not (path / MANIFEST).is_file():
        return path / BENCH
    return None


def _bench_rows(results: list[BenchRecord], variant: str) -> list[BenchRow]:
    rows = [
        BenchRow(
            size=r.size_text,
            median_ms=r.median_ms,
            q1_ms=r.q1_ms,
            q3_ms=r.q3_ms,
            gflops=r.gflops,
            status=r.status,
            gbps=r.gbps,
        )
        for r in results
        if r.variant == variant
    ]
    return sorted(rows, key=lambda row: [int(n) for n in row.size.split("x") if n.isdigit()])


def _bench_at(results: list[BenchRecord], variant: str, size: str | None) -> BenchRecord | None:
    for r in results:
        if r.variant == variant and r.size_text == size:
            return r if r.ok else None
    return None


def _numbered(findings: list[Finding]) -> list[Finding]:
    """In-depth findings: problems first, then information; the wins stay in What's Good?."""
    return [f for f in findings if f.kind != "good"]


def _bonus(item: _Item) -> Bonus:
    profile = item.profile
    widths = []
    accesses = profile.memory_widths.accesses
    for access in sorted(accesses, key=lambda a: (a.space, a.kind, a.width_bits)):
        total = profile.memory_widths.executed(access.space, access.kind)
        widths.append(WidthRow(access.space, access.kind, access.width_bits, access.executed,
                               100.0 * access.executed / total if total else 0.0))
    # the project's kernel sources: their lines can be shown next to the SASS
    folders = [item.project.folder] if item.variant is not None and item.project \
        and item.project.folder is not None else []
    spots = tuple(hotspots(profile, HOTSPOTS, folders))
    return Bonus(
        widths=tuple(widths),
        registers_per_thread=profile.launch.registers_per_thread,
        shared_static_bytes=profile.launch.shared_mem_static_bytes,
        shared_dynamic_bytes=profile.launch.shared_mem_dynamic_bytes,
        spills=profile.local_memory_spill_requests,
        hotspots=spots,
        has_line_info=any(h.source for h in spots),
    )


def _label(item: _Item, profile: KernelReport) -> str:
    if item.variant is not None:
        text = f"{item.variant.iteration}. {item.variant.name}"
    elif item.entry is not None and item.entry.variant:
        text = item.entry.variant
    else:
        return profile.name
    return f"{text} ({profile.name})" if item.shared_entry or item.foreign else text


def _display_source(item: _Item) -> str:
    """The report as the page names it: no machine-specific absolute paths."""
    if item.run is not None:
        return f"{item.run.path.name}/{item.report_path.name}"
    return item.report_path.name


def _iteration_ns(item: _Item) -> float | None:
    """The profiled time of all the iteration's launches; None where one has none."""
    times = [p.speed_of_light.duration_ns for p in (item.profile, *item.others)]
    return sum(t for t in times if t) if all(times) else None


def _iteration_time(findings: list[Finding], item: _Item, previous: _Item) -> list[Finding]:
    """Where either iteration runs several kernels, the two are timed by all their launches:
    the main kernels alone would set one launch of one against the whole of the other."""
    kept = [f for f in findings if not (f.rule == PROGRESS_RULE and "speedup" in f.metrics)]
    launches = f" over all launches ({1 + len(previous.others)} before, {1 + len(item.others)} now)"
    return [*duration_change(_iteration_ns(previous), _iteration_ns(item), launches), *kept]


def _page(item: _Item, slugs: dict[int, str]) -> KernelPage:
    profile = item.profile
    previous = item.previous.profile if item.previous else None
    findings = run_rules(profile, previous)
    if item.previous is not None and (item.others or item.previous.others):
        findings = _iteration_time(findings, item, item.previous)
    variant = item.variant
    size = _size_text(item.entry.size) if item.entry else None
    heading = profile.demangled_name or profile.name
    iteration = None
    if variant is not None:
        iteration = variant.iteration
        heading = f"Iteration {variant.iteration}: {variant.title}"
    elif item.entry is not None and item.entry.variant:
        heading = item.entry.variant
    if item.shared_entry:
        heading += f" ({profile.name})"
    if item.foreign is not None:
        heading += f" ({profile.name}, not its kernel {item.foreign})"
    numbered = _numbered(findings)
    fixes = [FixIdea(idea.title, idea.text, idea.what_if, number, idea.because)
             for number, f in enumerate(numbered, start=1) for idea in f.fixes]
    roofline = profile.roofline
    page = KernelPage(
        slug=slugs[id(item)],
        heading=heading,
        kernel_name=profile.name,
        demangled_name=profile.demangled_name,
        source=_display_source(item),
        device=profile.device,
        variant=item.entry.variant if item.entry else None,
        iteration=iteration,
        size=size,
        strategy=variant.strategy if variant is not None else None,
        good=[f for f in findings if f.kind == "good"][:MAX_SUMMARY],
        bad=[f for f in findings if f.kind == "bad"][:MAX_SUMMARY],
        tldr=tldr(profile, findings),
        findings=numbered,
        ncu_also=ncu_set_aside(profile),
        fix_ideas=fixes,
        profiling_results=_profiling_results(profile),
        bonus=_bonus(item),
        profile=profile,
        roofline=roofline,
        pipes=busiest_pipes(profile)[:PIPES_SHOWN],
        previous_slug=slugs.get(id(item.previous)) if item.previous else None,
        previous_launches=1 + len(item.previous.others) if item.previous else 1,
        params=dict(item.entry.params) if item.entry is not None and item.entry.params else {},
        key_values=key_values(profile),
        since_previous=since_previous(previous, profile) if previous is not None else [],
        launches=_launch_rows(item),
        limiter=_bound_text(profile),
        label=_label(item, profile),
    )
    _add_throughput(page, item, size)
    return page


def _add_throughput(page: KernelPage, item: _Item, size: str | None) -> None:
    """Time and throughput: ncu's duration and the work model, or bench's where it has them."""
    profile, roofline = item.profile, page.roofline
    if profile.speed_of_light.duration_ns is not None:
        page.time_ms = profile.speed_of_light.duration_ns / 1e6
    if roofline.achieved_flops is not None:
        page.gflops = roofline.achieved_flops / 1e9
    page.math_rates = math_rates(profile)
    flops = [r.per_second for r in page.math_rates if not r.precision.startswith("INT")]
    if flops:  # every precision's math, tensor cores included, as ncu counted it
        page.gflops = sum(flops) / 1e9
    modelled = _modelled(item.project, item.entry, page.time_ms)
    if modelled is not None:  # the project's own work model over the profiled duration
        flops, page.gbps = modelled
        if flops is not None:
            page.gflops, page.work_source = flops, "model"
    results = item.bench
    if item.entry is None or not item.entry.variant or not results or item.foreign is not None:
        return
    page.bench_rows = _bench_rows(results, item.entry.variant)
    at = _bench_at(results, item.entry.variant, size)
    if at is None:
        return
    page.time_ms, page.time_source = at.median_ms, "bench"
    page.gflops, page.gbps, page.work_source = at.gflops, at.gbps, "bench"
    speedup = dict(at.speedup)
    reference, baseline = _speedup_keys(item.project, speedup)
    page.speedups = Speedups(
        speedup.get(reference) if reference else None,
        speedup.get(baseline) if baseline else None,
        speedup.get("previous"), size or "?",
        reference_name=_reference_name(item.project, reference),
        baseline_name=_baseline_name(item.project, baseline),
        size_heading=size_heading(size, item.project.dims if item.project else ()))
    if page.speedups.reference is not None:
        page.pct_of_reference = 100.0 * page.speedups.reference


def _modelled(chain: Chain | None, entry: RunEntry | None,
              ms: float | None) -> tuple[float | None, float | None] | None:
    """(GFLOP/s, GB/s) by the project's work model at the entry's size over `ms`; None
    without a work model, a size or a time."""
    if chain is None or chain.work is None or entry is None or not entry.size or not ms:
        return None
    flops, nbytes = chain.work(tuple(entry.size))

    def rate(count: float | None) -> float | None:
        return count / (ms * 1e-3) / 1e9 if count is not None else None

    return rate(flops), rate(nbytes)


def _recorded_work(record: ProjectRecord) -> Callable[
        [tuple[int, ...]], tuple[float | None, float | None]] | None:
    """The counts the manifest recorded at each profiled size (data, no code)."""
    if record.work_model is None or not record.work_model.at:
        return None
    at = {tuple(work.size): (work.flops, work.bytes) for work in record.work_model.at}
    return lambda size: at.get(tuple(size), (None, None))


def _project_work(project: Project, size: tuple[int, ...]) -> tuple[float | None, float | None]:
    """A loaded project's model at `size` (the user named it: its code may run)."""
    if len(size) != len(project.dims):
        return None, None

    def count(model: Any) -> float | None:
        if model is None:
            return None
        try:
            return float(model(Size(project.dims, size)))
        except Exception:  # the user's model at a size it rejects: no figure, not a crash
            return None

    return count(project.flops), count(project.bytes)


# ---------------------------------------------------------------------------------------------
# sources


def _report_items(path: Path) -> list[_Item]:
    return [_Item(report_path=path, profile=profile) for profile in load_kernel_reports(path)]


def _kernel_regex(variant: ChainVariant | None) -> str | None:
    """The variant's own kernels: its kernel by name, else its capture filter (a launcher
    that runs several kernels, e.g. three Triton passes, is still one iteration)."""
    name = getattr(variant, "kernel_name", None)
    if name:
        return f"^{re.escape(name)}$"
    capture = getattr(variant, "capture", None)
    if not capture:
        return None
    return capture.removeprefix("regex:") if capture.startswith("regex:") \
        else f"^{re.escape(capture)}$"


def _speedup_keys(project: Chain | None,
                  speedup: dict[str, Any]) -> tuple[str | None, str | None]:
    """The reference's and the baseline's keys in a result's speedups: the project's names,
    else (files before projects) the first and second keys."""
    if project is not None and project.reference is not None:
        return project.reference.key, project.baseline
    keys = [key for key in speedup if key != "previous"]
    return (keys[0] if keys else None), (keys[1] if len(keys) > 1 else None)


def _reference_name(project: Chain | None, key: str | None) -> str:
    if project is not None and project.reference is not None:
        return project.reference.name
    return key or "reference"


def size_heading(size: str | None, dims: tuple[str, ...]) -> str:
    """A size as a heading says it: "n = 2^26" for one dim at a power of two, "M = 1024, N =
    2048, K = 512" with the dims' names, else "size 67108864"."""
    if not size:
        return "size ?"
    values = size.split("x")
    if len(dims) != len(values) or not all(v.isdigit() for v in values):
        return f"size {size}"
    if len(values) == 1:
        value = int(values[0])
        power = value.bit_length() - 1
        return f"{dims[0]} = 2^{power}" if value >= 2 and value == 1 << power \
            else f"{dims[0]} = {value}"
    return ", ".join(f"{d} = {v}" for d, v in zip(dims, values, strict=True))


def _baseline_name(project: Chain | None, key: str | None) -> str:
    if project is not None and project.baseline_title:
        return project.baseline_title
    return key or "first"


def _duration(profile: KernelReport) -> float:
    return profile.speed_of_light.duration_ns or 0.0


def _launch_rows(item: _Item) -> list[LaunchRow]:
    """The iteration's launches, main kernel first, each with its share of the profiled time
    of all of them; empty for a single launch."""
    if not item.others:
        return []
    launches = [item.profile, *item.others]
    known = [_duration(p) for p in launches if p.speed_of_light.duration_ns is not None]
    total = sum(known)
    rows = []
    for profile in launches:
        ns = profile.speed_of_light.duration_ns
        grid = "x".join(str(n) for n in profile.launch.grid) if profile.launch.grid else "?"
        rows.append(LaunchRow(
            kernel=profile.name, grid=grid, duration_us=ns / 1e3 if ns is not None else None,
            share_pct=100.0 * ns / total if ns is not None and total else None,
            main=profile is item.profile))
    return rows


def _run_items(run: Run, fallback: Path | None = None) -> list[_Item]:
    items: list[_Item] = []
    project = _run_chain(run, fallback)
    for entry in run.entries:
        if not entry.ok or entry.report is None:
            continue
        profiles = load_kernel_reports(entry.report)
        foreign = entry.foreign([p.name for p in profiles])
        if foreign is not None:
            # not the variant's kernel: no iteration, strategy or timings of the variant on it
            print(f"ncuh: warning: {foreign}", file=sys.stderr)
            items.extend(_Item(report_path=entry.report, profile=profile, entry=entry, run=run,
                               foreign=entry.kernel_name) for profile in profiles)
            continue
        variant = _variant(project, entry.variant)
        regex = _kernel_regex(variant)
        own = [p for p in profiles if regex and re.search(regex, p.name)]
        if own:
            # one page per iteration: the variant's launch that takes longest is its main
            # kernel; the other launches (e.g. passes over partial results) are listed on it
            main = max(own, key=_duration)
            items.append(_Item(report_path=entry.report, profile=main, entry=entry, run=run,
                               variant=variant, project=project,
                               others=[p for p in profiles if p is not main]))
            continue
        # the variant's kernel is not in the report: a page for every kernel
        shared = len(profiles) > 1
        for profile in profiles:
            items.append(_Item(report_path=entry.report, profile=profile, entry=entry,
                               run=run, variant=variant, shared_entry=shared, project=project))
    # each iteration's predecessor at the same size
    by_key = {(i.entry.variant, i.entry.size): i for i in items if i.entry}
    for item in items:
        previous = getattr(item.variant, "previous", None)
        if previous and item.entry is not None:
            item.previous = by_key.get((previous, item.entry.size))
    items.sort(key=lambda i: (
        i.variant.iteration if i.variant is not None else 1_000_000,
        i.entry.size or () if i.entry else (),
        i.profile.kernel_id,
    ))
    return items


def collect(sources: Sequence[Path | str], project: Path | None = None) -> Writeup:
    """Read every source into pages; raise `ReportError` (exit 2) for a source that is neither
    a run directory nor a report. `project`: the project file the user names (--project), the
    only one loaded (its module runs); without it, what each run's manifest records."""
    if not sources:
        raise ReportError("no source given: name a run directory or an .ncu-rep file")
    items: list[_Item] = []
    environment: dict[str, Any] = {}
    standalone_bench: list[BenchRecord] = []
    for source in sources:
        path = Path(source)
        bench_file = _bench_source(path)
        if bench_file is not None:
            standalone_bench.extend(load_bench(bench_file).results)
        elif path.is_dir():
            run = load_run(path)  # names what is wrong: no manifest, interrupted, bad schema
            environment = environment or dict(run.environment)
            run_items = _run_items(run, project)
            run_bench = _bench_results(run)  # read once per run, shared by its pages
            for item in run_items:
                item.bench = run_bench
            items.extend(run_items)
        elif path.exists() or path.suffix == ".ncu-rep":  # the report check names what it is
            items.extend(_report_items(path))
        else:
            raise ReportError(f"{path}: no such run directory or report")
    if not items:
        raise ReportError("no profiled kernel in the given sources")
    for item in items:
        if item.run is not None and not item.bench:
            item.bench = standalone_bench
    chosen = next((item.project for item in items if item.project is not None), None)
    if chosen is None:
        chosen = _run_chain(None, project)
    reference = chosen.reference if chosen is not None else None
    limit = chosen.limits[0] if chosen is not None and chosen.limits else None
    reference_gflops: dict[str, float] = {}
    reference_gbps: dict[str, float] = {}
    limit_gbps: dict[str, float] = {}
    for r in (r for item in items for r in item.bench):
        if reference is not None and r.variant == reference.key and r.ok and r.gflops:
            reference_gflops[r.size_text] = r.gflops
        if reference is not None and r.variant == reference.key and r.ok and r.gbps:
            reference_gbps[r.size_text] = r.gbps
        if limit is not None and r.variant == limit.key and r.ok and r.gbps:
            limit_gbps[r.size_text] = r.gbps
    slugs = _slugs(items)
    pages = [_page(item, slugs) for item in items]
    for page in pages:  # the share of the practical limit reached, at the page's own size
        ceiling = limit_gbps.get(page.size or "")
        if ceiling and page.gbps is not None and page.time_source == "bench":
            page.pct_of_limit = 100.0 * page.gbps / ceiling
        _judge_against_bench(page, Measured(
            limit.name if limit is not None else None, page.pct_of_limit, page.gbps, ceiling,
            page.speedups.reference_name if page.speedups else None, page.pct_of_reference))
    if not environment:  # plain reports: the device each report recorded
        first = items[0].profile
        environment = {"gpu": first.device, "compute_capability": first.compute_capability}
    sizes = [p.size for p in pages if p.size]
    index_size = max(sizes, key=lambda s: [int(n) for n in s.split("x")]) if sizes else None
    title = "Kernel iterations" if any(p.iteration is not None for p in pages) else "Kernels"
    return Writeup(
        title=title,
        pages=pages,
        sources=[Path(s).name for s in sources],
        environment=environment,
        reference_gflops=reference_gflops.get(index_size) if index_size else None,
        index_size=index_size,
        reference_name=reference.name if reference is not None else None,
        reference_gbps=reference_gbps.get(index_size) if index_size else None,
        limit_gbps=limit_gbps.get(index_size) if index_size else None,
        limit_name=limit.name if limit is not None else None,
        bytes_model=chosen is not None and chosen.counts_bytes
        and any(p.gbps is not None for p in pages),
        gpus=compare_gpus(pages),
    )


def _judge_against_bench(page: KernelPage, measured: Measured) -> None:
    """The TLDR against what the run benched; a kernel at its practical limit gets no fix
    idea: there is nothing left for one to win."""
    if page.profile is None or (measured.limit_pct is None and measured.reference_pct is None):
        return
    page.tldr = tldr(page.profile, page.findings, measured)
    if measured.at_limit:
        page.fix_ideas = []


def _slugs(items: list[_Item]) -> dict[int, str]:
    slugs: dict[int, str] = {}
    seen: set[str] = set()
    for item in items:
        if item.variant is not None:
            base = f"{item.variant.iteration:02d}_{item.variant.name}"
        elif item.entry is not None:
            base = item.entry.label
        else:
            base = f"{item.report_path.stem}_{item.profile.kernel_id}_{item.profile.name}"
        if item.variant is not None and item.entry is not None and item.entry.size:
            base += f"_{_size_text(item.entry.size)}"
        if item.shared_entry or item.foreign:
            base += f"_{item.profile.kernel_id}_{item.profile.name}"
        slug = _slug(base)
        n = 2
        while slug in seen:
            slug = f"{_slug(base)}_{n}"
            n += 1
        seen.add(slug)
        slugs[id(item)] = slug
    return slugs


def kernel_page(report: Path, profile: KernelReport, run: Run, entry: RunEntry,
                name: str) -> KernelPage:
    """The page of one kernel of a run's entry with every finding a chain page has, written
    to `<name>.md` (made safe for a file name)."""
    item = _Item(report_path=report, profile=profile, entry=entry, run=run)
    return _page(item, {id(item): _slug(name)})


def index_pages(writeup: Writeup) -> list[KernelPage]:
    """The pages the index table and plots show: at the largest profiled size when a run
    profiled several sizes, every page otherwise."""
    if writeup.index_size is None:
        return writeup.pages
    chosen = [p for p in writeup.pages if p.size == writeup.index_size]
    return chosen or writeup.pages
