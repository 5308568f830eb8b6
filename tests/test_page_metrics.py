"""A page reads the metrics it declares (`harness.report.page_metrics`) and no others: every
finding and every page of every committed report is the same, byte for byte, when its
profiles hold only those metrics (what `ncuh writeup` reads) and when they hold every metric
of the report; and no metric is read by name that the list does not hold."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import pytest
from packed_fixtures import cached_profiles, reports

from harness.pages import writeup as pages_writeup
from harness.pages.render import plot_calls, render_index, render_page
from harness.report import builder
from harness.report.model import KernelReport
from harness.report.page_metrics import PAGE_METRICS
from harness.report.reportfile import open_report

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
RUNS = ROOT / "reports" / "runs"


def _sources() -> dict[str, list[Path]]:
    """Every committed report of the tests and samples once (the fixtures that copy a report
    of `reports/` are left out), by the writeup that shows it: runs as runs, so pages stand
    beside the previous iteration's. Left out: the reading benchmark's data, and a whole
    program's first passes (not committed as reports: `fixtures/program` holds what their
    launches were)."""
    # a run holding a program's ranking alone has no report to read
    runs = {run.name: [run] for run in sorted(RUNS.iterdir())
            if (run / "manifest.json").is_file() and any(run.glob("*.ncu-rep"))}
    shown = {path.read_bytes() for path in (ROOT / "reports").rglob("*.ncu-rep")}
    own = [path for path in reports(FIXTURES) if path.read_bytes() not in shown]
    return {
        **runs,
        "diff": sorted((ROOT / "reports" / "diff").glob("*.ncu-rep")),
        "fixtures": own,
        "async_copy_pair": reports(FIXTURES / "async_copy_pair"),
        "divergence_pair": reports(FIXTURES / "divergence_pair"),
        "zoo": reports(FIXTURES / "zoo"),
    }


SOURCES = _sources()


class _Asked(dict):  # type: ignore[type-arg]
    """A profile's metrics that note every name read from them."""

    names: ClassVar[set[str]] = set()

    def get(self, name: str, default: Any = None) -> Any:
        _Asked.names.add(name)
        return super().get(name, default)

    def __getitem__(self, name: str) -> Any:
        _Asked.names.add(name)
        return super().__getitem__(name)

    def __contains__(self, name: object) -> bool:
        _Asked.names.add(str(name))
        return super().__contains__(name)


def _with_every_metric(path: Path | str, kernel_regex: str | None = None) -> list[KernelReport]:
    """The profiles of `load_kernel_reports`, each holding every metric of its kernel (the
    instances of those it declares: a name read that it does not declare fails the test
    whatever its values)."""
    profiles = cached_profiles(Path(path), kernel_regex)
    kernels = {kernel.kernel_id: kernel for kernel in open_report(path).kernels}
    return [dataclasses.replace(profile, metrics=_Asked({
        **builder.read_metrics(kernels[profile.kernel_id], instances=False),
        **profile.metrics})) for profile in profiles]


def _written(sources: list[Path]) -> dict[str, str]:
    """Each page (Markdown and HTML), its findings, the index and the plots' inputs."""
    writeup = pages_writeup.collect(sources)
    written = {"index.md": render_index(writeup, [], "md"),
               "plots": repr([call.inputs() for call in plot_calls(writeup)])}
    for page in writeup.pages:
        for fmt in ("md", "html"):
            written[f"{page.slug}.{fmt}"] = render_page(page, writeup, fmt)
        written[f"{page.slug}.findings"] = repr((page.good, page.bad, page.findings,
                                                 page.fix_ideas, page.tldr, page.key_values))
    return written


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_pages_read_with_the_declared_metrics_are_those_read_with_every_metric(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sources = SOURCES[name]
    assert sources
    monkeypatch.setattr(pages_writeup, "load_kernel_reports", cached_profiles)
    declared = _written(sources)
    monkeypatch.setattr(pages_writeup, "load_kernel_reports", _with_every_metric)
    _Asked.names.clear()
    every = _written(sources)
    assert set(declared) == set(every)
    for page, text in every.items():
        assert declared[page] == text, f"{page} differs when every metric is read"
    undeclared = sorted(_Asked.names - PAGE_METRICS)
    assert not undeclared, (f"read by name but not declared in harness/report/page_metrics.py: "
                            f"{undeclared}")


def test_a_page_profile_holds_the_declared_metrics_and_no_other() -> None:
    (report,) = [path for path in SOURCES["zoo"] if path.name == "zoo_atomic_shared.ncu-rep"]
    (profile,) = cached_profiles(report)
    kernel = open_report(report).kernels[0]
    every = builder.read_metrics(kernel)
    assert len(every) > 1000
    assert set(profile.metrics) == PAGE_METRICS & set(every)
    assert profile.metrics["launch__registers_per_thread"] == every[
        "launch__registers_per_thread"]
    modifiers = profile.metrics["sass__inst_executed_per_opcode_with_modifier_all"]
    assert modifiers.instances and modifiers.instances == every[modifiers.name].instances
