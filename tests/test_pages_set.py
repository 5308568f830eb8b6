"""The `pages` section set against real `--set full` reports: what it keeps and what it drops.

The reports were recorded with `--set full` (ncu 2025.3, H100 and H200): their section lists are
ncu's own word on what `full` holds, and their rule results say which sections the findings
that defer to ncu's rules come from. The pairs at the end were recorded both ways.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packed_fixtures import (
    H100_PAGES_NAIVE,
    H100_PAGES_SMEM_TILED,
    H200_NAIVE,
    H200_REGISTER_TILED,
    cached_profiles,
    ncu_page,
    reports,
)
from packed_fixtures import report as fixture_report

from harness.findings.registry import run_rules
from harness.profile.ncu_command import PAGES_METRICS, PAGES_SECTIONS
from harness.report.details_layout import EXTRA_HEADER_ROWS, METRIC_OPTIONS
from harness.report.reportfile import open_report, select_kernels
from harness.rundir.slim_sections import (
    RULES_LEFT_OUT,
    SLIMMED_SECTIONS,
    THINNED_METRICS,
    added_metrics,
    is_slim,
)

FIXTURES = Path(__file__).parent / "fixtures"
# Every `--set full` report: the chain's, and the zoo's (one per problem class: atomics, FP64,
# tensor cores, divergence, ...), whose rules must come from sections `pages` keeps too.
# The async-copy GEMM (cp.async loads) both ways, committed packed (`packed_fixtures`).
ASYNC_PAIR = tuple(fixture_report(FIXTURES / "async_copy_pair" / f"h100_{kind}_async_copy_1024"
                                  ".ncu-rep")
                   for kind in ("pages", "full"))
FULL_REPORTS = [*reports(FIXTURES, "h*_*.ncu-rep"), H200_NAIVE, H200_REGISTER_TILED,
                *reports(FIXTURES / "zoo", "zoo_*.ncu-rep"), ASYNC_PAIR[1]]
FULL_REPORTS = [r for r in FULL_REPORTS if "_pages_" not in r.name]
DROPPED = {
    "NumaAffinity", "Nvlink_Tables", "Nvlink_Topology", "PmSampling",
    "SpeedOfLight_HierarchicalDoubleRooflineChart", "SpeedOfLight_HierarchicalHalfRooflineChart",
    "SpeedOfLight_HierarchicalTensorRooflineChart",
}


def _sections(report: Path) -> set[str]:
    kernels = select_kernels(open_report(report), None)
    return {str(section.identifier()) for k in kernels for section in k.action.sections()}


@pytest.mark.parametrize("report", FULL_REPORTS, ids=lambda p: p.name)
def test_pages_is_full_less_what_nobody_reads(report: Path) -> None:
    full = _sections(report)
    assert set(PAGES_SECTIONS) <= full  # every name is a section ncu knows
    assert full - set(PAGES_SECTIONS) == DROPPED


@pytest.mark.parametrize("report", FULL_REPORTS, ids=lambda p: p.name)
def test_every_rule_ncu_fired_comes_from_a_section_pages_keeps(report: Path) -> None:
    for profile in cached_profiles(report):
        sections = {rule.section for rule in profile.rules}
        assert sections <= set(PAGES_SECTIONS), profile.name


@pytest.mark.parametrize("report", FULL_REPORTS, ids=lambda p: p.name)
def test_the_metrics_named_are_in_the_full_reports(report: Path) -> None:
    for kernel in select_kernels(open_report(report), None):
        assert set(PAGES_METRICS) <= set(kernel.action.metric_names())


# Pairs of reports of the same kernel recorded both ways (benchmarks/gpu/profile_speed.sh
# records them: `<gpu>_pages_<label>.ncu-rep` beside `<gpu>_full_<label>.ncu-rep`; two of the
# `pages` ones are sample runs in reports/ too).
PAIRS = [(H100_PAGES_NAIVE, fixture_report(FIXTURES / "h100_full_naive_1024.ncu-rep")),
         (fixture_report(FIXTURES / "h100_pages_register_tiled_1024.ncu-rep"),
          fixture_report(FIXTURES / "h100_full_register_tiled_1024.ncu-rep")),
         (H100_PAGES_SMEM_TILED, fixture_report(FIXTURES / "h100_full_smem_tiled_1024.ncu-rep")),
         ASYNC_PAIR]


def _collected(value: object, path: str = "") -> dict[str, bool]:
    """Every field of a profile record, flattened: was it collected (not None)?"""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields: dict[str, bool] = {}
        for field in dataclasses.fields(value):
            fields.update(_collected(getattr(value, field.name), f"{path}.{field.name}"))
        return fields
    return {path: value is not None and value != ()}


def _findings(report: Path) -> list[list[tuple[str, str, str]]]:
    """Per kernel: each finding's rule, kind and ncu rule (order aside: weights are measured),
    but the bank conflicts finding's, which `full` reads from each instruction's wavefronts
    (`_by_instruction`)."""
    return [sorted((f.rule, f.kind, str(f.metrics.get("ncu_rule", ""))) for f in run_rules(p)
                   if f.rule != "bank_conflicts")
            for p in cached_profiles(report)]


def _by_instruction(report: Path) -> set[bool]:
    """Whether each bank conflicts finding of the report was read instruction by instruction."""
    return {bool(f.metrics.get("by_instruction")) for p in cached_profiles(report)
            for f in run_rules(p) if f.rule == "bank_conflicts"}


@pytest.mark.skipif(not PAIRS, reason="no pages/full report pair recorded yet "
                                      "(benchmarks/gpu/profile_speed.sh records one)")
@pytest.mark.parametrize("pair", PAIRS, ids=lambda pair: pair[1].name)
def test_pages_and_full_give_the_same_findings_and_fields(pair: tuple[Path, Path]) -> None:
    pages, full = pair
    assert full.is_file(), f"{full.name} is missing beside {pages.name}"
    assert _findings(pages) == _findings(full)
    # the per-instruction wavefronts `pages` leaves out (THINNED_METRICS) decide `full`'s bank
    # conflicts finding; `pages` reads the l1tex counters and says it could not localize them
    assert _by_instruction(pages) <= {False} and _by_instruction(full) <= {True}
    pairs = zip(cached_profiles(pages), cached_profiles(full), strict=True)
    for page_profile, full_profile in pairs:
        assert _collected(page_profile) == _collected(full_profile)
    # ncu files the `--metrics` extras under a section of its own, named
    # 'Command line profiler metrics' with the identifier 'section0'
    assert _sections(pages) == {*PAGES_SECTIONS, "section0"}


def _raw_value(report: Path, column: str) -> str:
    """The first kernel's value of `column` on ncu's raw page beside the report."""
    import csv
    with ncu_page(report, ".raw.csv").open(newline="", encoding="utf-8") as handle:
        header, _units, first = list(csv.reader(handle))[:3]
    return first[header.index(column)]


def _metric_names(report: Path) -> set[str]:
    (kernel, *_) = select_kernels(open_report(report), None)
    return set(kernel.action.metric_names())


@pytest.mark.parametrize("pair", PAIRS, ids=lambda pair: pair[1].name)
def test_pages_slims_the_memory_widgets_and_keeps_what_they_fed(pair: tuple[Path, Path]) -> None:
    pages, full = pair
    pages_names, full_names = _metric_names(pages), _metric_names(full)
    for section in SLIMMED_SECTIONS:
        assert is_slim(section, pages_names) and not is_slim(section, full_names)
        # every metric ncuh reads or a rule asks for that the full report holds, pages holds
        # (or the name this chip gives it: Hopper's L2 compression unit is `lrc`)
        lost = {m for m in added_metrics(section) if m in full_names and m not in pages_names}
        assert {METRIC_OPTIONS.get(m) for m in lost} <= pages_names
    # ncu's own count of replay passes (H100, ncu 2025.3.1): 23 with the overlay, 38 in full
    assert float(_raw_value(pages, "profiler__replayer_passes")) == 23
    assert float(_raw_value(full, "profiler__replayer_passes")) == 38


# Source Counters' per-instruction metrics that `pages` keeps: those ncuh reads
# (harness.report.builder: inst_executed; sass_hotspots: the stall samples), and the
# divergent branches (no measurable replay time of their own, measured on an H100 with
# `benchmarks/bench_section_passes.py`).
SOURCE_METRICS_READ = (
    "inst_executed", "smsp__pcsamp_sample_count", "smsp__branch_targets_threads_divergent",
)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda pair: pair[1].name)
def test_pages_thins_source_counters_of_what_nobody_reads(pair: tuple[Path, Path]) -> None:
    pages, full = pair
    pages_names, full_names = _metric_names(pages), _metric_names(full)
    thinned = set(THINNED_METRICS["SourceCounters"])
    assert thinned <= full_names  # each name is one ncu collects in `full`
    # of the section's metrics (its header and source view, as the details page lists them),
    # pages lacks exactly the thinned ones
    source = {name for name, _ in EXTRA_HEADER_ROWS["SourceCounters"]}
    assert (full_names & source) - pages_names == thinned
    assert set(SOURCE_METRICS_READ) <= pages_names & full_names


def _rule_names(report: Path) -> set[str]:
    return {rule.name for profile in cached_profiles(report) for rule in profile.rules}


@pytest.mark.parametrize("pair", PAIRS, ids=lambda pair: pair[1].name)
def test_pages_runs_no_rule_of_the_per_instruction_sectors(pair: tuple[Path, Path]) -> None:
    pages, full = pair
    assert not _rule_names(pages) & set(RULES_LEFT_OUT)
    # full ran them: each speaks where a kernel's accesses move excess sectors (naive's global
    # loads and stores; register_tiled's shared loads too; async_copy's cp.async loads and
    # shared loads); findings read neither
    both = {"UncoalescedGlobalAccess", "UncoalescedSharedAccess"}
    fired = {"naive": {"UncoalescedGlobalAccess"}, "smem_tiled": set(),
             "register_tiled": both, "async_copy": both}
    variant = full.name.removeprefix("h100_full_").removesuffix("_1024.ncu-rep")
    assert _rule_names(full) & set(RULES_LEFT_OUT) == fired[variant]
    for profile in cached_profiles(full):
        assert not {r.name for r in profile.rules_for_pages} & set(RULES_LEFT_OUT)


def test_cp_async_loads_are_judged_the_same_both_ways_as_source_counters_counts_them(
        golden) -> None:
    # ncu's UncoalescedGlobalAccess (full only): "524288 excessive sectors (22% of the total
    # 2356912 sectors)", every one of them the cp.async loads' (its LDG loads and STG stores
    # move their ideal). The cp.async sectors (raw pages: 2,096,480 with pages, 2,096,528 with
    # full) beyond 16 for each of the 98,304 LDGSTS.E.BYPASS.128: 523,616 and 523,664.
    found = []
    for report, sectors in zip(ASYNC_PAIR, (2096480, 2096528), strict=True):
        assert float(_raw_value(report, "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_"
                                        "ldgsts_cache_bypass.sum")) == sectors
        (profile,) = cached_profiles(report)
        (finding,) = [f for f in run_rules(profile) if f.rule == "coalescing"]
        assert finding.metrics["excessive_sectors"] == sectors - 98304 * 16
        assert finding.metrics["excessive_sectors"] == pytest.approx(524288, rel=2e-3)
        found.append((finding.kind, finding.title))
    assert len(found) == 2 and found[0] == found[1] and found[0][0] == "bad"
    golden("cp_async_coalescing_title", found[0][1])
    (rule,) = [r for r in cached_profiles(ASYNC_PAIR[1])[0].rules
               if r.name == "UncoalescedGlobalAccess"]
    assert "524288 excessive sectors (22% of the total 2356912" in rule.message


def test_without_the_memory_counters_ncus_coalescing_rule_stands() -> None:
    # a report of a set without Memory Workload Analysis (no sectors to judge from): the
    # findings read ncu's UncoalescedGlobalAccess after all
    import dataclasses

    from harness.report.model import Coalescing

    (full,) = cached_profiles(fixture_report(FIXTURES / "h100_full_naive_1024.ncu-rep"))
    assert "UncoalescedGlobalAccess" not in {r.name for r in full.rules_for_pages}
    bare = dataclasses.replace(full, coalescing=Coalescing())
    assert "UncoalescedGlobalAccess" in {r.name for r in bare.rules_for_pages}
    assert ("ncu_rules", "info", "UncoalescedGlobalAccess") in {
        (f.rule, f.kind, str(f.metrics.get("ncu_rule", ""))) for f in run_rules(bare)}


def test_the_coalescing_finding_reads_the_same_counters_both_ways(golden) -> None:
    # naive: ncu's UncoalescedGlobalAccess (full only) counts 85% of the sectors excess,
    # instruction by instruction; the memory counters both sets collect say 84.9%
    pages, full = H100_PAGES_NAIVE, fixture_report(FIXTURES / "h100_full_naive_1024.ncu-rep")
    found = []
    for report in (pages, full):
        (profile,) = cached_profiles(report)
        (finding,) = [f for f in run_rules(profile) if f.rule == "coalescing"]
        found.append(finding)
    assert [(f.kind, f.title) for f in found] == [("bad", found[0].title)] * 2
    golden("coalescing_title", found[0].title)
    # the loads' counters agree to the sector; the stores' vary by a few thousand (0.3%)
    assert "loads: 84.9% of 1,108,344,832 sectors excess" in found[0].text
    assert "loads: 84.9% of 1,108,344,832 sectors excess" in found[1].text
    assert found[0].metrics["sectors"] == pytest.approx(found[1].metrics["sectors"], rel=1e-5)
    # the estimate is ncu's MemoryCacheAccessPattern's, which weighs in measured throughputs
    assert found[0].speedup_pct == pytest.approx(found[1].speedup_pct, rel=0.01)
    (rule,) = [r for r in cached_profiles(full)[0].rules if r.name == "UncoalescedGlobalAccess"]
    assert "(85% of the total" in rule.message


# A kernel whose warps diverge (the zoo's, `tests/fixtures/zoo/zoo_divergence.py`), profiled with
# `ncuh profile --set pages` and `--set full` on an H100, where ncu's
# ThreadDivergence rule fires: `pages` leaves out the per-instruction thread counts the rule
# asks for only as an optional input, and the rule says the same.
DIVERGENCE_PAIR = tuple(fixture_report(FIXTURES / "divergence_pair" / f"h100_{kind}_zoo_divergence"
                                       ".ncu-rep")
                        for kind in ("pages", "full"))
THREAD_COUNTS = {"thread_inst_executed_true", "derived__avg_thread_executed_true"}


def test_a_divergent_kernel_gets_the_same_findings_without_the_thread_counts() -> None:
    pages, full = DIVERGENCE_PAIR
    assert _findings(pages) == _findings(full)
    # the per-instruction wavefronts `pages` leaves out (THINNED_METRICS) decide `full`'s bank
    # conflicts finding; `pages` reads the l1tex counters and says it could not localize them
    assert _by_instruction(pages) <= {False} and _by_instruction(full) <= {True}
    assert ("divergence", "bad", "") in _findings(pages)[0]
    assert set(THINNED_METRICS["SourceCounters"]) >= THREAD_COUNTS
    assert not THREAD_COUNTS & _metric_names(pages)
    assert _metric_names(full) >= THREAD_COUNTS
    # the program launches its kernel three times; ncu profiled each
    profiles = list(zip(cached_profiles(pages), cached_profiles(full), strict=True))
    assert len(profiles) == 3
    for pair in profiles:
        rules = [next(rule for rule in profile.rules if rule.name == "ThreadDivergence")
                 for profile in pair]
        assert rules[0].message == rules[1].message
        assert "an average of 8.1 threads being active per cycle" in rules[0].message
        # the estimate weighs in the compute throughput, measured anew in each run
        assert rules[0].speedup_pct == pytest.approx(rules[1].speedup_pct, rel=0.01)
