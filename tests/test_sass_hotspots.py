"""Hottest SASS instructions from PC sampling, and their mapping to CUDA source lines."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.report.reportfile import open_report
from harness.report.sass_hotspots import hotspots, source_code

REPORT = Path(__file__).parent / "fixtures" / "h100_sgemm_naive_smem.ncu-rep"


@pytest.fixture(scope="module")
def report():
    return open_report(REPORT)


def test_smem_hottest_instruction_matches_ncu_cpistall_rule(report):
    # ncu's CPIStall rule on sgemm_smem: "This line is responsible for 15.1% of all warp
    # stalls. 78.5% of the stalls for this line are of type long_scoreboard."
    top = hotspots(report.kernels[1].action, top=3)
    assert len(top) == 3
    first = top[0]
    assert first.sass == "STS [R16], R27"
    assert f"{first.share_pct:.1f}" == "15.1"
    assert first.reason == "long_scoreboard"
    assert f"{100 * first.reason_samples / first.samples:.1f}" == "78.5"
    assert first.executed == 1048576  # inst_executed at that PC
    assert first.source is None  # the fixture was built without -lineinfo
    assert [h.samples for h in top] == sorted((h.samples for h in top), reverse=True)


def test_naive_hotspots_are_throttled_global_loads(report):
    top = hotspots(report.kernels[0].action)
    assert len(top) == 5
    assert all(h.sass.startswith("LDG.E") and h.reason == "lg_throttle" for h in top)


class _Metric:
    def __init__(self, values: dict[int, float]):
        self._pcs, self._values = list(values), list(values.values())

    def correlation_ids(self):
        return SimpleNamespace(as_uint64=lambda i: self._pcs[i])

    def num_instances(self):
        return len(self._pcs)

    def as_double(self, i):
        return self._values[i]


class _LineInfoAction:
    """An action as ncu_report gives it for a kernel built with -lineinfo."""

    def __init__(self):
        self.metrics = {
            "smsp__pcsamp_warps_issue_stalled_mio_throttle": _Metric({0x100: 30.0, 0x110: 2.0}),
            "smsp__pcsamp_warps_issue_stalled_barrier": _Metric({0x100: 5.0, 0x120: 9.0}),
            "smsp__pcsamp_warps_issue_stalled_barrier_not_issued": _Metric({0x100: 99.0}),
            "inst_executed": _Metric({0x100: 64.0, 0x110: 64.0, 0x120: 8.0}),
        }

    def metric_names(self):
        return list(self.metrics)

    def metric_by_name(self, name):
        return self.metrics[name]

    def sass_by_pc(self, pc):
        return {0x100: "  LDS.128 R4, [R2]", 0x110: "FFMA R1, R2, R3, R1", 0x120: "BAR.SYNC"}[pc]

    def source_info(self, pc):
        line = {0x100: 42, 0x110: 43}.get(pc)
        if line is None:
            return None
        return SimpleNamespace(file_name=lambda: "/src/kernels/sgemm.cu", line=lambda: line)


def test_hotspots_map_to_source_lines_with_line_info():
    top = hotspots(_LineInfoAction(), top=2)
    assert [(h.offset, h.sass, h.samples, h.reason) for h in top] == [
        (0x0, "LDS.128 R4, [R2]", 35, "mio_throttle"),  # _not_issued samples are not added
        (0x20, "BAR.SYNC", 9, "barrier"),
    ]
    assert top[0].source == "sgemm.cu:42"
    assert top[1].source is None
    assert top[0].share_pct == pytest.approx(100 * 35 / 46)


def test_no_sampling_data_gives_no_hotspots():
    action = _LineInfoAction()
    action.metrics = {"inst_executed": _Metric({0x100: 1.0})}
    assert hotspots(action) == []


def test_hot_lines_show_their_code_from_the_bundled_kernels(tmp_path):
    from harness.project import default_project_path

    def kernels_dir():
        return default_project_path().parent

    action = _LineInfoAction()
    action.source_info = lambda pc: SimpleNamespace(  # as after the backend's #line
        file_name=lambda: "register_tiled.cu", line=lambda: 22)
    top = hotspots(action, top=1, folders=[tmp_path, kernels_dir()])
    expected = (kernels_dir() / "register_tiled.cu").read_text().splitlines()[21].strip()
    assert top[0].source == "register_tiled.cu:22"
    assert top[0].code == expected and top[0].code.startswith("As[r][c] =")
    assert hotspots(action, top=1)[0].code is None  # a user's kernel: no folder to look in


def test_hot_lines_prefer_the_sources_imported_into_the_report():
    action = _LineInfoAction()
    action.source_files = lambda: {"/home/me/sgemm.cu": "\n".join(
        f"line {n}" for n in range(1, 50))}
    assert hotspots(action, top=1)[0].code == "line 42"
    assert source_code(action, "sgemm.cu:99") is None  # past the end of the file
    assert source_code(action, None) is None


def test_pages_show_the_hot_line_code_escaped_in_markdown_and_html():
    import dataclasses

    from harness.render import render_page
    from harness.report.sass_hotspots import Hotspot
    from harness.writeup import collect

    writeup = collect([REPORT])
    page = writeup.pages[0]
    spot = Hotspot(pc=0x100, offset=0, sass="STS [R61], R42", samples=10, share_pct=50.0,
                   reason="long_scoreboard", reason_samples=9, executed=None,
                   source="k.cu:7", code="s[i] = a < b | c;")
    page.bonus = dataclasses.replace(page.bonus, hotspots=(spot,), has_line_info=True)
    markdown = render_page(page, writeup, "md")
    assert "| k.cu:7: s\\[i\\] = a \\< b \\| c; |" in markdown
    html = render_page(page, writeup, "html")
    assert "k.cu:7<br><code>s[i] = a &lt; b | c;</code>" in html
