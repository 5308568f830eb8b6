"""The `pages` overlay of ncu's section folder: widgets out, named metrics in, rules untouched.

The section files here are small ones written for the tests in ncu's section format (the
shape of ncu 2025.3's `MemoryWorkloadAnalysis_Tables.section`: one top-level `Metrics` block,
then a `Body` of widgets), not copies of NVIDIA's.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from harness.profile import section_overlay as so
from harness.profile.ncu_command import NcuSettings
from harness.profile.run import with_section_overlay

TABLES = '''Identifier: "MemoryWorkloadAnalysis_Tables"
DisplayName: "Memory Workload Analysis Tables"
Extends: "MemoryWorkloadAnalysis"
Order: 32
Sets {
  Identifier: "full"
}
Metrics {
  Metrics {
    Label: "L2 Hit Rate For Loads"
    Name: "lts__t_sector_op_read_hit_rate.pct"
  }
  Metrics {
    Label: "DRAM Throughput"
    Name: "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
    Filter {
      Items {
        MinArch: CC_75
      }
    }
  }
}
Body {
  DisplayName: "Memory Tables"
  Items {
    MemorySharedTable {
      Label: "Shared Memory"
    }
  }
  Items {
    MemoryL2CacheTable {
      Label: "L2 Cache"
    }
  }
}
'''
CHART = '''Identifier: "MemoryWorkloadAnalysis_Chart"
DisplayName: "Memory Workload Analysis Chart"
Metrics {
  Metrics {
    Label: "L2 Cache Sectors"
    Name: "lts__t_sectors.sum"
  }
}
Body {
  DisplayName: "Memory Chart"
  SetDefault: true
  Items {
    MemoryChart {
      Label: "Memory Chart"
    }
  }
}
'''
OCCUPANCY = '''Identifier: "Occupancy"
DisplayName: "Occupancy"
Metrics {
  Metrics {
    Name: "sm__warps_active.avg.pct_of_peak_sustained_active"
  }
}
Body {
  Items {
    Table {
      Metrics {
        Name: "launch__occupancy_limit_blocks"
      }
    }
  }
}
'''
RULE = '''requested_metrics = [
    MetricRequest("smsp__sass_inst_executed_op_shared_ld.sum", None, Importance.OPTIONAL, 0),
    MetricRequest("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", None),
    MetricRequest("smsp__inst_executed_op_ldsm.sum", None, Importance.OPTIONAL, 0, False),
]

def get_section_identifier():
    return "MemoryWorkloadAnalysis_Tables"

def apply(handle):
    value = action.metric_by_name("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
'''
# The shape of ncu 2025.3's SourceCounters.section: derived metrics defined at the top, then
# the per-instruction metrics of its source view in a `SourceMetrics`-like list (with groups,
# display properties and architecture filters inside entries).
SOURCE = '''Identifier: "SourceCounters"
DisplayName: "Source Counters"
MetricDefinitions {
  MetricDefinitions {
    Name: "derived__memory_l2_theoretical_sectors_global_excessive"
    Expression: "memory_l2_theoretical_sectors_global - memory_l2_theoretical_sectors_global_ideal"
  }
  MetricDefinitions {
    Name: "derived__memory_l1_conflicts_shared_nway"
    Expression: "memory_l1_wavefronts_shared / inst_executed"
  }
}
Metrics {
  Metrics {
    Label: "Executed Instructions"
    Name: "smsp__inst_executed.sum"
  }
}
SourceMetrics {
  Metrics {
    Label: "Address Space"
    Name: "memory_type"
    Groups: "group_memory_access"
  }
  Metrics {
    Label: "L1 Conflicts Shared N-Way"
    Name: "derived__memory_l1_conflicts_shared_nway"
    DisplayProperties {
      SourceView {
        DefaultVisible: false
      }
    }
  }
  Metrics {
    Label: "L2 Theoretical Sectors Global"
    Name: "memory_l2_theoretical_sectors_global"
  }

  Metrics {
    Label: "L2 Explicit Evict Policies"
    Name: "smsp__sass_inst_executed_memdesc_explicit_evict_type"
    Filter {
      MinArch: CC_80
    }
  }
  Metrics {
    Label: "L2 Theoretical Sectors Local"
    Name: "memory_l2_theoretical_sectors_local"
  }
}
'''
SOURCE_RULE = '''requested_metrics = [
    MetricRequest("memory_l2_theoretical_sectors_global", "l2_sectors"),
]

def get_identifier():
    return "UncoalescedGlobalAccess"

def get_section_identifier():
    return "SourceCounters"
'''
# a rule of another section that asks for one of the metrics `pages` would leave out
LOCAL_RULE = '''def get_section_identifier():
    return "MemoryWorkloadAnalysis"

requested = MetricRequest("memory_l2_theoretical_sectors_local")
'''
OTHER_RULE = '''def get_section_identifier():
    return "Occupancy"

requested = MetricRequest("launch__occupancy_limit_warps")
'''


@pytest.fixture
def stock(tmp_path: Path) -> Path:
    folder = tmp_path / "nsight-compute" / "sections"
    folder.mkdir(parents=True)
    (folder / "MemoryWorkloadAnalysis_Tables.section").write_text(TABLES)
    (folder / "MemoryWorkloadAnalysis_Chart.section").write_text(CHART)
    (folder / "Occupancy.section").write_text(OCCUPANCY)
    (folder / "SpeedOfLight.section").write_text('Identifier: "SpeedOfLight"\nMetrics {\n}\n')
    (folder / "SharedMemoryConflicts.py").write_text(RULE)
    (folder / "TheoreticalOccupancy.py").write_text(OTHER_RULE)
    (folder / "SourceCounters.section").write_text(SOURCE)
    (folder / "UncoalescedAccess.py").write_text(SOURCE_RULE)
    return folder


def _names(text: str) -> list[str]:
    return re.findall(r'(?<![A-Za-z])Name:\s*"([^"]+)"', text)


def test_slim_section_drops_the_widgets_and_keeps_the_display_name() -> None:
    slim = so.slim_section(TABLES, [])
    assert "MemorySharedTable" not in slim and "MemoryL2CacheTable" not in slim
    assert 'Body {\n  DisplayName: "Memory Tables"\n}' in slim
    # everything before the body is as it was: identifier, sets, metrics and their filters
    assert slim.startswith(TABLES[: TABLES.index("Body {")])


def test_slim_section_adds_each_extra_metric_once_and_not_those_named() -> None:
    extra = ["lts__t_sector_op_read_hit_rate.pct", "dram__bytes_read.sum", "dram__bytes_read.sum"]
    slim = so.slim_section(TABLES, extra)
    assert _names(slim) == [
        "lts__t_sector_op_read_hit_rate.pct",
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__bytes_read.sum",
    ]
    # the added metric sits inside the top-level Metrics block, before the body
    assert slim.index('Name: "dram__bytes_read.sum"') < slim.index("Body {")


def test_a_metric_a_body_names_outright_stays_collected() -> None:
    slim = so.slim_section(OCCUPANCY, ["x__y.sum"])
    assert "Table" not in slim
    assert _names(slim) == ["sm__warps_active.avg.pct_of_peak_sustained_active",
                            "launch__occupancy_limit_blocks", "x__y.sum"]


@pytest.mark.parametrize("broken", [
    TABLES.replace("Body {\n", "Body {\n  Items {\n", 1),  # unbalanced
    TABLES.replace("Metrics {\n  Metrics", "Metric {\n  Metrics", 1),  # no Metrics block
    TABLES + "Metrics {\n}\n",  # two
])
def test_slim_section_refuses_a_file_of_another_shape(broken: str) -> None:
    with pytest.raises(so.OverlayError):
        so.slim_section(broken, ["x__y.sum"])


def test_thin_section_leaves_out_exactly_the_entries_named() -> None:
    names = ["memory_type", "derived__memory_l1_conflicts_shared_nway",
             "smsp__sass_inst_executed_memdesc_explicit_evict_type"]
    thin = so.thin_section(SOURCE, names)
    # the definition and the entry of the derived metric both go, nested blocks and all, each
    # with its line; every other byte stays as it was
    assert thin == '''Identifier: "SourceCounters"
DisplayName: "Source Counters"
MetricDefinitions {
  MetricDefinitions {
    Name: "derived__memory_l2_theoretical_sectors_global_excessive"
    Expression: "memory_l2_theoretical_sectors_global - memory_l2_theoretical_sectors_global_ideal"
  }
}
Metrics {
  Metrics {
    Label: "Executed Instructions"
    Name: "smsp__inst_executed.sum"
  }
}
SourceMetrics {
  Metrics {
    Label: "L2 Theoretical Sectors Global"
    Name: "memory_l2_theoretical_sectors_global"
  }

  Metrics {
    Label: "L2 Theoretical Sectors Local"
    Name: "memory_l2_theoretical_sectors_local"
  }
}
'''
    assert so.thin_section(SOURCE, []) == SOURCE
    assert so.thin_section(SOURCE, ["not_there"]) == SOURCE


def test_thin_section_keeps_a_list_that_shares_a_name_and_refuses_bad_braces() -> None:
    # a `Metrics` list is never taken for an entry, even when an entry inside it is named
    assert so.thin_section(TABLES, ["lts__t_sector_op_read_hit_rate.pct"]) == \
        TABLES.replace('''  Metrics {
    Label: "L2 Hit Rate For Loads"
    Name: "lts__t_sector_op_read_hit_rate.pct"
  }
''', "")
    with pytest.raises(so.OverlayError):
        so.thin_section(SOURCE[:SOURCE.rindex("  }")], ["memory_type"])  # an entry unclosed


DERIVED = '''MetricDefinitions {
  MetricDefinitions {
    Name: "derived__avg_x"
    Expression: "thread_x / inst_executed"
  }
}
SourceMetrics {
  Metrics {
    Name: "thread_x"
  }
  Metrics {
    Name: "derived__avg_x"
  }
}
'''


def test_a_metric_a_kept_derived_metric_uses_is_kept_with_it() -> None:
    assert _names(so.thinned_text(DERIVED, ["thread_x", "derived__avg_x"])) == []
    # a rule asks for the derived metric: it stays, and so does what its expression reads
    assert _names(so.thinned_text(DERIVED, ["thread_x", "derived__avg_x"],
                                  kept=["derived__avg_x"])) == \
        ["derived__avg_x", "thread_x", "derived__avg_x"]
    assert so.thinned_text(DERIVED, ["thread_x"]) == DERIVED
    # thin_section alone would leave the expression reading a metric no longer collected
    assert "thread_x /" in so.thin_section(DERIVED, ["thread_x"])
    assert 'Name: "thread_x"' not in so.thin_section(DERIVED, ["thread_x"])


def test_a_source_counters_of_another_shape_stays_as_ncu_ships_it(
    stock: Path, tmp_path: Path
) -> None:
    broken = SOURCE[:SOURCE.rindex("  }")]  # its last entry unclosed
    (stock / "SourceCounters.section").write_text(broken)
    built = tmp_path / "overlay"
    assert so.build_overlay(stock, built) == so.SLIMMED_SECTIONS  # the rest as before
    assert (built / so.SECTIONS / "SourceCounters.section").read_text() == broken
    marker = so.read_marker(built)
    assert marker is not None and marker["thinned"] == {"SourceCounters": []}


def test_build_overlay_thins_source_counters_but_keeps_what_a_rule_asks_for(
    stock: Path, tmp_path: Path
) -> None:
    (stock / "MemoryMetrics.py").write_text(LOCAL_RULE)
    built = tmp_path / "overlay"
    so.build_overlay(stock, built)
    source = (built / so.SECTIONS / "SourceCounters.section").read_text()
    assert _names(source) == ["smsp__inst_executed.sum",
                              "memory_l2_theoretical_sectors_local"]  # a kept rule's: kept
    marker = so.read_marker(built)
    assert marker is not None
    assert marker["thinned"] == {"SourceCounters": [
        "memory_type", "derived__memory_l1_conflicts_shared_nway",
        "memory_l2_theoretical_sectors_global",
        "derived__memory_l2_theoretical_sectors_global_excessive",
        "smsp__sass_inst_executed_memdesc_explicit_evict_type"]}
    # the rule left out asked for the global sectors: they go with it; the other rules are
    # copied as they were
    assert marker["rules_left_out"] == ["UncoalescedGlobalAccess"]
    assert not (built / so.SECTIONS / "UncoalescedAccess.py").exists()
    assert (built / so.SECTIONS / "MemoryMetrics.py").read_text() == LOCAL_RULE


def test_a_rule_left_out_is_known_by_its_identifier_not_its_file_name(
    stock: Path, tmp_path: Path
) -> None:
    (stock / "UncoalescedAccess.py").rename(stock / "GlobalAccessPattern.py")
    (stock / "UncoalescedSharedAccess.py").write_text(LOCAL_RULE)  # another rule's identifier
    built = tmp_path / "overlay"
    so.build_overlay(stock, built)
    dest = built / so.SECTIONS
    assert not (dest / "GlobalAccessPattern.py").exists()
    assert (dest / "UncoalescedSharedAccess.py").read_text() == LOCAL_RULE
    assert so.read_marker(built)["rules_left_out"] == ["UncoalescedGlobalAccess"]
    # nothing asked to leave out: every rule is copied, its metrics kept
    whole = tmp_path / "whole"
    so.build_overlay(stock, whole, rules_left_out=())
    assert (whole / so.SECTIONS / "GlobalAccessPattern.py").is_file()
    assert so.read_marker(whole)["rules_left_out"] == []
    assert "memory_l2_theoretical_sectors_global" in _names(
        (whole / so.SECTIONS / "SourceCounters.section").read_text())


def test_rule_metrics_are_those_of_the_sections_rules_only(stock: Path) -> None:
    assert so.rule_metrics(stock, "MemoryWorkloadAnalysis_Tables") == [
        "smsp__sass_inst_executed_op_shared_ld.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
        "smsp__inst_executed_op_ldsm.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    ]
    assert so.rule_metrics(stock, "Occupancy") == ["launch__occupancy_limit_warps"]
    assert so.rule_metrics(stock, "SourceCounters") == ["memory_l2_theoretical_sectors_global"]
    assert so.rule_metrics(stock, "WarpStateStats") == []


def test_build_overlay_copies_everything_slims_two_and_thins_one(
    stock: Path, tmp_path: Path
) -> None:
    built = tmp_path / "overlay"
    assert so.build_overlay(stock, built) == so.SLIMMED_SECTIONS
    assert sorted(p.name for p in built.iterdir()) == [so.MARKER, so.SECTIONS]
    dest = built / so.SECTIONS  # only what ncu's own folder holds: no file of ncuh's in it
    assert sorted(p.name for p in dest.iterdir()) == sorted(
        p.name for p in stock.iterdir() if p.name != "UncoalescedAccess.py")
    marker = so.read_marker(built)
    assert marker is not None and marker["slimmed"] == list(so.SLIMMED_SECTIONS)
    assert marker["sections"] == sorted([*so.SLIMMED_SECTIONS, "Occupancy", "SourceCounters",
                                         "SpeedOfLight"])
    assert marker["thinned"] == {"SourceCounters": [
        "memory_type", "memory_l2_theoretical_sectors_local",
        "derived__memory_l1_conflicts_shared_nway", "memory_l2_theoretical_sectors_global",
        "derived__memory_l2_theoretical_sectors_global_excessive",
        "smsp__sass_inst_executed_memdesc_explicit_evict_type"]}
    assert marker["rules_left_out"] == ["UncoalescedGlobalAccess"]
    for name in ("Occupancy.section", "SpeedOfLight.section", "SharedMemoryConflicts.py"):
        assert (dest / name).read_bytes() == (stock / name).read_bytes()
    tables = (dest / "MemoryWorkloadAnalysis_Tables.section").read_text()
    assert "MemorySharedTable" not in tables
    names = _names(tables)
    assert "smsp__inst_executed_op_ldsm.sum" in names  # its rule's
    assert set(so.WIDGET_METRICS_READ) <= set(names)  # ncuh's
    chart = (dest / "MemoryWorkloadAnalysis_Chart.section").read_text()
    assert "MemoryChart" not in chart and "lts__t_sectors.sum" in _names(chart)
    # the Tables rule's metrics go to its own section, not to the chart
    assert "smsp__inst_executed_op_ldsm.sum" not in _names(chart)


def test_build_overlay_leaves_nothing_when_a_section_is_malformed(
    stock: Path, tmp_path: Path
) -> None:
    (stock / "MemoryWorkloadAnalysis_Chart.section").write_text(CHART.replace("}\n", "", 1))
    dest = tmp_path / "cache" / "overlay"
    with pytest.raises(so.OverlayError, match=r"MemoryWorkloadAnalysis_Chart\.section"):
        so.build_overlay(stock, dest)
    assert list(dest.parent.iterdir()) == []  # no overlay, no temporary folder


def test_pages_overlay_is_built_once_and_follows_the_stock_files(
    stock: Path, tmp_path: Path
) -> None:
    ncu = stock.parent / "ncu"
    ncu.write_text("")
    root = tmp_path / "cache"
    first = so.pages_overlay(ncu, root).overlay
    assert first is not None and first.stock == stock
    assert first.slimmed == so.SLIMMED_SECTIONS
    marker = first.folder / "built"
    marker.write_text("")
    again = so.pages_overlay(ncu, root).overlay
    assert again is not None and again.folder == first.folder and marker.exists()
    # a changed stock file (a new ncu) gets a new overlay beside the old one
    rule = stock / "SharedMemoryConflicts.py"
    rule.write_text(RULE + "\n# newer\n")
    os.utime(rule, ns=(1, 1))
    changed = so.pages_overlay(ncu, root).overlay
    assert changed is not None and changed.folder != first.folder
    assert len(list(root.iterdir())) == 2


def test_pages_overlay_says_why_there_is_none(stock: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    lonely = tmp_path / "bin" / "ncu"
    lonely.parent.mkdir()
    lonely.write_text("")  # a binary, nothing beside it: other installs are not guessed at
    result = so.pages_overlay(lonely, tmp_path / "cache")
    assert result.overlay is None and "no section folder found beside" in (result.reason or "")
    ncu = stock.parent / "ncu"
    ncu.write_text("")
    asked = so.pages_overlay(ncu, tmp_path / "cache", sections=("Occupancy", "MyOwnSection"))
    assert asked.overlay is None
    assert asked.reason == f"section MyOwnSection is not in ncu's stock folder {stock}"
    assert so.pages_overlay(ncu, tmp_path / "cache", sections=("Occupancy",)).overlay
    monkeypatch.setenv(so.SWITCH_ENV, "off")
    off = so.pages_overlay(ncu, tmp_path / "cache")
    assert off.overlay is None and off.reason == "NCUH_PAGES_OVERLAY=off"


def test_bad_bytes_and_no_home_are_reasons_not_tracebacks(
    stock: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ncu = stock.parent / "ncu"
    ncu.write_text("")
    (stock / "MemoryWorkloadAnalysis_Chart.section").write_bytes(
        CHART.encode().replace(b"Memory Chart", b"Memory \xff Chart"))
    result = so.pages_overlay(ncu, tmp_path / "cache")
    assert result.overlay is None
    assert "MemoryWorkloadAnalysis_Chart.section" in (result.reason or "")
    assert list((tmp_path / "cache").iterdir()) == []

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv(so.CACHE_ENV, raising=False)
    monkeypatch.setattr(so.Path, "home", staticmethod(no_home))
    homeless = so.pages_overlay(ncu)
    assert homeless.overlay is None and "home directory" in (homeless.reason or "")


def test_a_folder_without_its_marker_is_built_again(stock: Path, tmp_path: Path) -> None:
    ncu = stock.parent / "ncu"
    ncu.write_text("")
    first = so.pages_overlay(ncu, tmp_path / "cache").overlay
    assert first is not None
    for path in first.folder.iterdir():  # emptied by hand, or a half-deleted cache
        path.unlink()
    again = so.pages_overlay(ncu, tmp_path / "cache").overlay
    assert again is not None and again.folder == first.folder
    assert again.slimmed == so.SLIMMED_SECTIONS
    assert (again.folder / "Occupancy.section").read_text() == OCCUPANCY


def test_the_overlay_is_readable_by_others_and_follows_ncuhs_lists(
    stock: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ncu = stock.parent / "ncu"
    ncu.write_text("")
    old_umask = os.umask(0o022)
    try:
        overlay = so.pages_overlay(ncu, tmp_path / "cache").overlay
    finally:
        os.umask(old_umask)
    assert overlay is not None
    assert overlay.folder.parent.stat().st_mode & 0o777 == 0o755
    assert overlay.folder.stat().st_mode & 0o777 == 0o755
    key = so.stock_key(stock)
    monkeypatch.setattr(so, "WIDGET_METRICS_READ", (*so.WIDGET_METRICS_READ, "x__new.sum"))
    assert so.stock_key(stock) != key  # a new list of metrics: a new overlay
    widened = so.stock_key(stock)
    monkeypatch.setattr(so, "THINNED_METRICS", {"SourceCounters": ("memory_type",)})
    assert so.stock_key(stock) != widened  # a new list to leave out: a new overlay too


def test_the_cuda_toolkit_wrapper_finds_the_newest_nsight_compute_as_it_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toolkit = tmp_path / "cuda-13.0"
    (toolkit / "bin").mkdir(parents=True)
    wrapper = toolkit / "bin" / "ncu"
    wrapper.write_text("#!/bin/sh\nexec \"$LATEST/ncu\" \"$@\"\n")
    opt = tmp_path / "opt"
    for root in (toolkit / "nsight-compute-2025.1.0", toolkit / "nsight-compute-2025.3.1",
                 opt / "2024.3.2", opt / "2025.10.0", toolkit / "nsight-compute-2026.1.0"):
        (root / "sections").mkdir(parents=True)
        if root.name != "nsight-compute-2026.1.0":  # a tree without sections is passed over
            (root / "sections" / "SpeedOfLight.section").write_text("")
    monkeypatch.setattr("harness.util.versioned_roots", lambda: [])
    assert so.stock_sections(wrapper) == toolkit / "nsight-compute-2025.3.1" / "sections"
    monkeypatch.setattr("harness.util.versioned_roots",
                        lambda: [opt / "2025.10.0", opt / "2024.3.2"])
    assert so.stock_sections(wrapper) == opt / "2025.10.0" / "sections"


def test_pages_settings_take_the_overlay_and_other_sets_do_not(
    stock: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(so.CACHE_ENV, str(tmp_path / "cache"))
    ncu = stock.parent / "ncu"
    ncu.write_text("")
    pages = with_section_overlay(NcuSettings(), ncu)
    assert pages.section_folder is not None
    assert Path(pages.section_folder).parent.parent == tmp_path / "cache" / so.CACHE_FOLDER
    args = pages.args()
    assert args[:4] == ["--config-file", "off", "--section-folder", pages.section_folder]
    assert pages.manifest()["slimmed_sections"] == list(so.SLIMMED_SECTIONS)
    # the stock fixture's SourceCounters thinned, its rule of global sectors left out
    assert pages.manifest()["thinned_metrics"] == [
        "memory_type", "memory_l2_theoretical_sectors_local",
        "derived__memory_l1_conflicts_shared_nway", "memory_l2_theoretical_sectors_global",
        "derived__memory_l2_theoretical_sectors_global_excessive",
        "smsp__sass_inst_executed_memdesc_explicit_evict_type"]
    assert pages.manifest()["rules_left_out"] == ["UncoalescedGlobalAccess"]
    full = with_section_overlay(NcuSettings(set="full"), ncu)
    assert full.section_folder is None and "--section-folder" not in full.args()
    assert full.manifest()["section_folder"] is None
    assert full.manifest()["overlay_note"] is None
    assert full.manifest()["thinned_metrics"] == []
    assert full.manifest()["rules_left_out"] == []
    stock_only = with_section_overlay(NcuSettings(), tmp_path / "elsewhere" / "ncu")
    assert stock_only.section_folder is None and "--section-folder" not in stock_only.args()
    assert "no section folder found" in stock_only.manifest()["overlay_note"]


def test_dry_run_shows_the_overlay_of_the_ncu_on_path(
    stock: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from harness.cli import main

    ncu = stock.parent / "ncu"
    ncu.write_text("#!/bin/sh\nexit 0\n")
    ncu.chmod(0o755)
    monkeypatch.setenv("PATH", f"{ncu.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv(so.CACHE_ENV, str(tmp_path / "cache"))
    result = CliRunner().invoke(main, ["profile", "--variant", "naive", "--size", "256",
                                       "--dry-run"])
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.strip().splitlines()
    built = tmp_path / "cache" / so.CACHE_FOLDER / so.stock_key(stock)
    folder = built / so.SECTIONS
    assert line.startswith(f"{ncu} --config-file off --section-folder {folder} --section ")
    assert so.read_marker(built) is not None
    full = CliRunner().invoke(main, ["profile", "--variant", "naive", "--size", "256",
                                     "--set", "full", "--dry-run"])
    assert "--section-folder" not in full.stdout


# Source Counters' thread counts, and ncu 2025.3.1's ThreadDivergence rule, which asks for the
# derived one as an optional input it uses for nothing it says
THREAD_COUNTS = '''Identifier: "SourceCounters"
MetricDefinitions {
  MetricDefinitions {
    Name: "derived__avg_thread_executed_true"
    Expression: "thread_inst_executed_true / inst_executed"
  }
}
Metrics {
  Metrics {
    Name: "inst_executed"
  }
  Metrics {
    Name: "thread_inst_executed_true"
  }
  Metrics {
    Name: "derived__avg_thread_executed_true"
  }
}
'''
DIVERGENCE_RULE = '''requested_metrics = [
    MetricRequest("smsp__thread_inst_executed_per_inst_executed.ratio", "thread_inst_executed"),
    MetricRequest("derived__avg_thread_executed_true", "avg_executed_threads",
                  Importance.OPTIONAL, None, False),
]

def get_identifier():
    return "ThreadDivergence"

def get_section_identifier():
    return "WarpStateStats"
'''
REQUIRED_DIVERGENCE_RULE = re.sub(r",\s*Importance\.OPTIONAL, None, False", "", DIVERGENCE_RULE)
THREAD_METRICS = ("thread_inst_executed_true", "derived__avg_thread_executed_true")


def _thread_stock(tmp_path: Path, rule: str) -> Path:
    folder = tmp_path / "stock-threads"
    folder.mkdir()
    (folder / "SourceCounters.section").write_text(THREAD_COUNTS)
    (folder / "ThreadDivergence.py").write_text(rule)
    return folder


def test_rule_metrics_leave_out_only_an_optional_input_of_the_rule_named(tmp_path: Path) -> None:
    folder = _thread_stock(tmp_path, DIVERGENCE_RULE)
    derived = "derived__avg_thread_executed_true"
    assert derived in so.rule_metrics(folder)
    assert so.rule_metrics(folder, optional_left_out={"ThreadDivergence": [derived]}) == [
        "smsp__thread_inst_executed_per_inst_executed.ratio"]
    # another rule's name, or another metric of it, lets nothing go
    assert derived in so.rule_metrics(folder, optional_left_out={"Divergence": [derived]})
    assert derived in so.rule_metrics(
        folder, optional_left_out={"ThreadDivergence": ["thread_inst_executed_true"]})
    # asked for as required (a newer rule, say), it stays
    (folder / "ThreadDivergence.py").write_text(REQUIRED_DIVERGENCE_RULE)
    assert derived in so.rule_metrics(folder, optional_left_out={"ThreadDivergence": [derived]})


@pytest.mark.parametrize("rule", [
    # optional, but the rule warns when it is missing (the default): one more message
    DIVERGENCE_RULE.replace("Importance.OPTIONAL, None, False", "Importance.OPTIONAL"),
    # optional with a default value: the rule would read a stand-in
    DIVERGENCE_RULE.replace("Importance.OPTIONAL, None, False", "Importance.OPTIONAL, 0, False"),
    # asked for silently, but read by name elsewhere in the rule too
    DIVERGENCE_RULE + '\nvalue = action.metric_by_name("derived__avg_thread_executed_true")\n',
])
def test_an_optional_input_the_rule_would_miss_stays(tmp_path: Path, rule: str) -> None:
    folder = _thread_stock(tmp_path, rule)
    derived = "derived__avg_thread_executed_true"
    assert derived in so.rule_metrics(folder, optional_left_out={"ThreadDivergence": [derived]})


@pytest.mark.parametrize(("rule", "left_out"), [
    (DIVERGENCE_RULE, list(THREAD_METRICS)),  # an optional input: the thread counts go
    (REQUIRED_DIVERGENCE_RULE, []),  # a required one: they stay, with what the derived reads
])
def test_build_overlay_thins_the_thread_counts_unless_a_rule_needs_them(
    tmp_path: Path, rule: str, left_out: list[str]
) -> None:
    built = tmp_path / "overlay"
    so.build_overlay(_thread_stock(tmp_path, rule), built, slimmed=(),
                     thinned={"SourceCounters": THREAD_METRICS})
    marker = json.loads((built / so.MARKER).read_text())
    assert marker["thinned"] == {"SourceCounters": left_out}
    source = (built / so.SECTIONS / "SourceCounters.section").read_text()
    assert set(_names(source)) == {"inst_executed", *THREAD_METRICS} - set(left_out)
