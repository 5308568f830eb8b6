"""Hottest SASS instructions from PC sampling, and their mapping to CUDA source lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from packed_fixtures import NAIVE_SMEM_REPORT, REDUCTION_RUN, cached_profiles

from harness.report import load_kernel_reports
from harness.report.model import KernelReport, SassInstruction
from harness.report.sass_hotspots import hotspots, source_code

REPORT = NAIVE_SMEM_REPORT


@pytest.fixture(scope="module")
def profiles():
    return cached_profiles(REPORT)


def test_smem_hottest_instruction_matches_ncu_cpistall_rule(profiles):
    # ncu's CPIStall rule on sgemm_smem: "This line is responsible for 15.1% of all warp
    # stalls. 78.5% of the stalls for this line are of type long_scoreboard."
    top = hotspots(profiles[1], top=3)
    assert len(top) == 3
    first = top[0]
    assert first.sass == "STS [R16], R27"
    assert f"{first.share_pct:.1f}" == "15.1"
    assert first.reason == "long_scoreboard"
    assert f"{100 * first.reason_samples / first.samples:.1f}" == "78.5"
    assert first.executed == 1048576  # inst_executed at that PC
    assert first.source is None  # the fixture was built without -lineinfo
    assert [h.samples for h in top] == sorted((h.samples for h in top), reverse=True)


def test_naive_hotspots_are_throttled_global_loads(profiles):
    top = hotspots(profiles[0])
    assert len(top) == 5
    assert all(h.sass.startswith("LDG.E") and h.reason == "lg_throttle" for h in top)


def _line_info_profile(**changes) -> KernelReport:
    """A profile as a kernel built with -lineinfo gives it: samples and lines by PC."""
    sass = (
        SassInstruction(0x100, "LDS.128 R4, [R2]", 64.0, "sgemm.cu:42",
                        {"mio_throttle": 30, "barrier": 5}),
        SassInstruction(0x110, "FFMA R1, R2, R3, R1", 64.0, "sgemm.cu:43", {"mio_throttle": 2}),
        SassInstruction(0x120, "BAR.SYNC", 8.0, None, {"barrier": 9}),
    )
    fields = {"kernel_id": 0, "name": "k", "demangled_name": "k", "sass": sass, **changes}
    return KernelReport(**fields)


def test_hotspots_map_to_source_lines_with_line_info():
    top = hotspots(_line_info_profile(), top=2)
    assert [(h.offset, h.sass, h.samples, h.reason) for h in top] == [
        (0x0, "LDS.128 R4, [R2]", 35, "mio_throttle"),
        (0x20, "BAR.SYNC", 9, "barrier"),
    ]
    assert top[0].source == "sgemm.cu:42"
    assert top[1].source is None
    assert top[0].share_pct == pytest.approx(100 * 35 / 46)


def test_no_sampling_data_gives_no_hotspots():
    profile = _line_info_profile(sass=(SassInstruction(0x100, "FFMA R1, R2, R3, R1", 1.0),))
    assert hotspots(profile) == []


def test_not_issued_samples_are_not_stall_samples(profiles):
    # the profile keeps only smsp__pcsamp_warps_issue_stalled_<reason>, not <reason>_not_issued
    assert all(not reason.endswith("_not_issued")
               for i in profiles[1].sass for reason in i.stall_samples)


def test_hot_lines_show_their_code_from_the_bundled_kernels(tmp_path):
    from harness.project.locate import default_project_path

    def kernels_dir():
        return default_project_path().parent

    profile = _line_info_profile(sass=(
        SassInstruction(0x100, "LDS R4, [R2]", 1.0, "register_tiled.cu:22", {"wait": 3}),))
    top = hotspots(profile, top=1, folders=[tmp_path, kernels_dir()])
    expected = (kernels_dir() / "register_tiled.cu").read_text().splitlines()[21].strip()
    assert top[0].source == "register_tiled.cu:22"
    assert top[0].code == expected and top[0].code.startswith("As[r][c] =")
    assert hotspots(profile, top=1)[0].code is None  # a user's kernel: no folder to look in


def test_hot_lines_prefer_the_sources_imported_into_the_report():
    files = {"/home/me/sgemm.cu": "\n".join(f"line {n}" for n in range(1, 50))}
    profile = _line_info_profile(source_files=files)
    assert hotspots(profile, top=1)[0].code == "line 42"
    assert source_code(files, "sgemm.cu:99") is None  # past the end of the file
    assert source_code(files, None) is None


def test_pages_show_the_hot_line_code_escaped_in_markdown_and_html():
    import dataclasses

    from harness.pages.render import render_page
    from harness.pages.writeup import collect
    from harness.report.sass_hotspots import Hotspot

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


# ---------------------------------------------------------------------------------------------
# source in place: the listing around each hot spot


def test_listing_around_a_hot_spot_counts_every_line():
    from harness.report.sass_hotspots import CONTEXT, listing

    folders = [Path(__file__).parent.parent / "kernels" / "reduction"]
    [profile, *_] = load_kernel_reports(REDUCTION_RUN / "warp_shuffle_67108864.ncu-rep")
    [top, *_] = hotspots(profile, 5, folders)
    assert top.source == "warp_shuffle.cu:25" and top.listing is not None
    lines = {line.number: line for line in top.listing.lines}
    assert sorted(lines) == list(range(25 - CONTEXT, 25 + CONTEXT + 1))
    assert [n for n, line in lines.items() if line.hot] == [25]
    assert lines[25].code == "        v += in[i];"
    # per line: every SASS instruction ncu maps to it, summed
    at_25 = [i for i in profile.sass if i.source == "warp_shuffle.cu:25"]
    assert lines[25].samples == sum(sum(i.stall_samples.values()) for i in at_25) == 7643
    assert lines[25].executed == sum(i.executed for i in at_25) == 4211200
    assert lines[27].samples == 0 and lines[27].executed == 0  # a closing brace
    # near the end of the file the listing stops at its last line (36)
    end = listing(profile, "warp_shuffle.cu:31", folders)
    assert end is not None and end.lines[-1].number == 36 and end.lines[0].number == 21
    # without the source at hand there is nothing to list
    assert listing(profile, "warp_shuffle.cu:25") is None
    assert listing(profile, "warp_shuffle.cu:99", folders) is None


def test_zoo_reports_list_their_imported_python_source():
    from packed_fixtures import report

    from harness.pages.render import render_page
    from harness.pages.writeup import collect

    writeup = collect([report(Path(__file__).parent / "fixtures" / "zoo"
                              / "zoo_atomic_same.ncu-rep")])
    [page] = writeup.pages
    spots = [h for h in page.bonus.hotspots if h.listing is not None]
    assert spots and spots[0].listing.file == "zoo_atomic_same.py"
    md = render_page(page, writeup, "md")
    assert "in place: zoo_atomic_same.py:8" in md
    assert ">    8  " in md and "atomicAdd(total, in[i]);" in md
    html = render_page(page, writeup, "html")
    assert html.count('<details class="listing"') == len({h.source for h in spots})


def test_every_instruction_that_ran_or_was_sampled_is_disassembled() -> None:
    """The stall stories read the opcode and operands of every instruction that ran or was
    sampled (`stall_sites`); one never executed nor sampled carries nothing and is not asked."""
    from harness.report import builder
    from harness.report.model import Metric

    class Action:
        def __init__(self) -> None:
            self.asked: list[int] = []

        def sass_by_pc(self, pc: int) -> str:
            self.asked.append(pc)
            return f"FFMA  R{pc}, R1, R2, R{pc}"

        def source_info(self, pc: int) -> None:
            return None

    pcs = range(0x100, 0x100 + 16 * 100, 16)  # 100 instructions
    executed = {pc: 0.0 if pc >= 0x100 + 16 * 90 else 10.0 for pc in pcs}  # the last 10 idle
    samples = {pc: 1.0 for pc in list(pcs)[95:]}  # 5 of the idle ones sampled
    metrics = {
        "inst_executed": Metric("inst_executed", "", "inst", None,
                                tuple((str(pc), n) for pc, n in executed.items())),
        f"{builder.PCSAMP_PREFIX}long_scoreboard": Metric(
            f"{builder.PCSAMP_PREFIX}long_scoreboard", "", "", None,
            tuple((str(pc), n) for pc, n in samples.items())),
    }
    action = Action()
    sass = builder._sass(action, metrics)
    assert len(sass) == 100 and len(action.asked) == 95
    never = set(list(pcs)[90:95])
    assert not never & set(action.asked)
    texts = {i.pc: i.sass for i in sass}
    assert texts[0x100] == "FFMA R256, R1, R2, R256"  # spaces folded
    assert {pc for pc, text in texts.items() if not text} == never
