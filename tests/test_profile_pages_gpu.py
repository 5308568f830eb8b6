"""The `pages` set on a GPU: ncu accepts its command line, the report holds exactly its sections,
and it needs fewer passes than `--set full`. Run with `pytest -m gpu`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.profile.ncu_command import PAGES_METRICS, PAGES_SECTIONS
from harness.report.reportfile import open_report, select_kernels
from harness.rundir.manifest import load_run
from harness.util.ncu_locate import ncu_executable

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent


def _profile(out: Path, *args: str) -> Path:
    completed = subprocess.run(
        [sys.executable, "-m", "harness", "profile", "--variant", "naive", "--size", "256",
         "--out", str(out), *args],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return Path(completed.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if ncu_executable() is None:
        pytest.skip("gpu test: ncu (Nsight Compute) is not installed")
    out = tmp_path_factory.mktemp("runs")
    return {"pages": _profile(out), "full": _profile(out, "--set", "full")}


def test_the_pages_report_holds_exactly_its_sections_and_metrics(runs: dict[str, Path]) -> None:
    run = load_run(runs["pages"])
    assert run.manifest["ncu"]["set"] == "pages"
    (entry,) = run.entries
    (kernel,) = select_kernels(open_report(entry.report), None)
    # ncu files the `--metrics` extras under a section of its own ('section0')
    assert {str(s.identifier()) for s in kernel.action.sections()} == {*PAGES_SECTIONS, "section0"}
    assert set(PAGES_METRICS) <= set(kernel.action.metric_names())


def test_pages_needs_fewer_passes_than_full(runs: dict[str, Path]) -> None:
    pages = load_run(runs["pages"]).manifest["entries"][0]["passes"]
    full = load_run(runs["full"]).manifest["entries"][0]["passes"]
    assert pages and full and pages < full


def test_pages_runs_on_the_overlay_and_finds_what_full_finds(runs: dict[str, Path]) -> None:
    from harness.findings.evidence import MEASURES, read
    from harness.findings.registry import run_rules
    from harness.report.builder import load_kernel_reports
    from harness.rundir.slim_sections import SLIMMED_SECTIONS, THINNED_METRICS, is_slim

    pages, full = load_run(runs["pages"]), load_run(runs["full"])
    ncu = pages.manifest["ncu"]
    assert ncu["section_folder"] and Path(ncu["section_folder"]).is_dir()
    assert ncu["slimmed_sections"] == list(SLIMMED_SECTIONS)
    assert "--section-folder" in ncu["command_lines"][0]
    assert full.manifest["ncu"]["section_folder"] is None
    (page_entry,), (full_entry,) = pages.entries, full.entries
    (kernel,) = select_kernels(open_report(page_entry.report), None)
    names = set(kernel.action.metric_names())
    assert all(is_slim(section, names) for section in SLIMMED_SECTIONS)
    # SourceCounters thinned: what the manifest says was left out is what the report lacks
    thinned = set(THINNED_METRICS["SourceCounters"])
    assert set(ncu["thinned_metrics"]) == thinned and not thinned & names
    (full_kernel,) = select_kernels(open_report(full_entry.report), None)
    assert thinned <= set(full_kernel.action.metric_names())

    def judged(report: Path) -> tuple[set[str], set[tuple[str, str]], str]:
        """The measures the report holds, the (rule, measure) pairs its findings could not
        read, and its bound."""
        (profile,) = load_kernel_reports(report)
        findings = run_rules(profile)
        return ({m for m in MEASURES if read(profile, m) is not None},
                {(f.rule, e.measure) for f in findings for e in f.evidence if e.value is None},
                next(f.title for f in findings if f.rule == "bound"))

    # Two runs measure twice, so a verdict near its threshold may fall either way; what the
    # overlay must not do is leave a rule without the counters the full set gives it.
    page_measures, page_unread, page_bound = judged(page_entry.report)
    full_measures, full_unread, full_bound = judged(full_entry.report)
    assert full_measures - page_measures == set()
    assert page_unread - full_unread == set()
    assert page_bound.split(":")[0] == full_bound.split(":")[0]
