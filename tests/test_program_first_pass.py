"""The first pass of a real program: a transformer's training step (examples/transformer_step.py,
eager, compiled and replayed from a CUDA graph) timed launch by launch by ncu on an H200
(tests/fixtures/program/). ncu's own raw page of each report is read as ncuh reads it, checked
launch by launch against what the report itself holds (its table, `held.py`), ranked, and
spanned by the NVTX step range over the threads that launched into it.
"""

from __future__ import annotations

import csv
import functools
import io
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from packed_fixtures import fixture
from program_support import ProgramNcu
from test_program_top import NCU

from harness.cli import main
from harness.profile import run as lib
from harness.profile.launches import read_launches, with_mangled
from harness.profile.nvtx_spans import DEFAULT_DOMAIN, Span
from harness.profile.ranking import Window, rank_launches
from harness.rundir import load_run

PROGRAM = Path(__file__).parent / "fixtures" / "program"
MODES = ("eager", "compile", "graph")
STEP = (Span(DEFAULT_DOMAIN, "step"),)


@functools.cache
def page(mode: str) -> str:
    """ncu's `--page raw --csv` of the first pass (display units, names as ncu prints them)."""
    return fixture(PROGRAM / f"first_{mode}.raw.csv").read_text(encoding="utf-8")


@functools.cache
def truth(mode: str) -> list[dict[str, Any]]:
    """Each launch as the report itself holds it, in report order: the table `held.py` wrote
    from it through ncu_report (the report, its libraries' cubins embedded, is not committed)."""
    with fixture(PROGRAM / f"first_{mode}.held.csv").open(newline="", encoding="utf-8") as text:
        rows = list(csv.DictReader(text))
    assert [int(row["index"]) for row in rows] == list(range(len(rows)))
    return [{"mangled": row["mangled"],
             "ns": float(row["gpu__time_duration.sum"]),
             "grid": tuple(int(row[f"grid_{a}"]) for a in "xyz"),
             "block": tuple(int(row[f"block_{a}"]) for a in "xyz"),
             "device": int(row["device"])}
            for row in rows]


@functools.cache
def mangled_page(mode: str) -> str:
    """The same page with mangled names (`--print-kernel-base mangled`): ncu's own cells,
    each kernel name the report's mangled name of that launch."""
    rows = list(csv.reader(io.StringIO(page(mode))))
    column = rows[0].index("Kernel Name")
    for row in rows[2:]:
        row[column] = truth(mode)[int(row[0])]["mangled"]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return out.getvalue()


@functools.cache
def launches(mode: str) -> list[Any]:
    return with_mangled(read_launches(page(mode)), read_launches(mangled_page(mode)))


@pytest.mark.parametrize("mode,count", [("eager", 1076), ("compile", 932), ("graph", 2047)])
def test_the_raw_page_reads_as_the_report_holds_each_launch(mode: str, count: int) -> None:
    read, held = launches(mode), truth(mode)
    assert len(read) == len(held) == count
    for launch, launch_held in zip(read, held, strict=True):
        assert launch.duration_ns == pytest.approx(launch_held["ns"], abs=0.5)  # 6 digits of us
        assert (launch.grid, launch.block, launch.device) == (
            launch_held["grid"], launch_held["block"], launch_held["device"])
        assert launch.mangled == launch_held["mangled"]


@pytest.mark.parametrize("mode,spanned,inside,gpu_time_ns", [
    ("eager", 646, 192, 6_081_120),  # backward: 205 launches a step from autograd's thread
    ("compile", 550, 154, 5_113_120),
    ("graph", 646, 646, 6_171_200),  # the replay launches every node from the main thread
])
def test_the_step_range_spans_the_launches_of_every_thread(
        mode: str, spanned: int, inside: int, gpu_time_ns: int) -> None:
    ranked = rank_launches(launches(mode), Window(), STEP).processes[0]
    assert (ranked.launches, round(ranked.total_ns)) == (spanned, gpu_time_ns)
    # what ncu's own --nvtx-include step/ keeps: the launches of the thread inside the range
    assert sum(1 for launch in launches(mode) if STEP[0].holds(launch.ranges)) == inside


def test_the_eager_step_spanned_is_the_graphs_replay_kernel_for_kernel() -> None:
    """The eager step's span holds the kernels (name, launch shape, count) that the same step
    captured in a CUDA graph replays: nothing of the step is left out, nothing else is in."""
    def kernels(mode: str) -> set[tuple[str, tuple[int, ...], tuple[int, ...], int]]:
        process = rank_launches(launches(mode), Window(), STEP).processes[0]
        return {(k.mangled, k.grid, k.block, k.launches) for k in process.kernels}

    assert kernels("eager") == kernels("graph") and len(kernels("eager")) == 80


def test_the_eager_steps_ranking_and_its_representative_launches() -> None:
    (process,) = rank_launches(launches("eager"), Window(), STEP).processes
    first = process.kernels[0]
    assert (first.name, first.grid, first.block, first.launches) == (
        "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT", (2, 64, 1), (384, 1, 1), 26)
    assert first.share_pct == pytest.approx(100 * first.total_ns / 6_081_120)
    assert process.kernels[4].cumulative_pct == pytest.approx(21.8, abs=0.05)
    held = truth("eager")
    for kernel in process.kernels[:5]:
        # counted from the program's start: the second pass filters by name alone
        same = [i for i, launch in enumerate(held) if launch["mangled"] == kernel.mangled]
        assert same.index(kernel.representative_id) == kernel.representative_skip
        durations = sorted(kernel.durations_ns)
        middle = (durations[(len(durations) - 1) // 2] + durations[len(durations) // 2]) / 2
        nearest = min(abs(ns - middle) for ns in kernel.durations_ns)
        assert abs(held[kernel.representative_id]["ns"] - middle) == pytest.approx(nearest)


def profile_on_the_eager_first_pass(monkeypatch: pytest.MonkeyPatch, *args: str
                                    ) -> tuple[Any, ProgramNcu]:
    """`ncuh profile ARGS` with ncu's stand-in answering the recorded eager first pass (and
    each second pass with a committed report)."""
    monkeypatch.setattr("harness.util.ncu_executable", lambda: NCU)
    fake = ProgramNcu([], table=page("eager"), mangled_table=mangled_page("eager"))
    monkeypatch.setattr(lib, "run_command", fake)
    monkeypatch.setattr(lib, "start_command", lib.in_threads(fake))
    return CliRunner().invoke(main, ["profile", *args], catch_exceptions=False), fake


def test_top_with_a_step_range_profiles_each_kernel_by_name_from_the_start(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path / "cache"))
    result, fake = profile_on_the_eager_first_pass(
        monkeypatch, "--top", "3", "--nvtx-include", "step/", "--out", str(tmp_path), "--",
        "python3", "examples/transformer_step.py", "--steps", "2", "--warmup", "1")
    assert result.exit_code == 0, result.output
    assert "GPU time 6.081 ms over 646 launches of 80 kernels" in result.stdout.splitlines()
    first, *second = [argv for argv in fake.calls if "-o" in argv]
    assert "--nvtx" in first and "--nvtx-include" not in first  # every launch, its ranges
    ranking = load_run(result.stdout.splitlines()[-1]).record.ranking
    assert ranking.window["nvtx_over"] == "every thread"
    assert len(second) == 3
    for argv, kernel in zip(second, ranking.processes[0].kernels[:3], strict=True):
        assert "--nvtx" not in argv
        assert argv[argv.index("-k") + 1] == kernel.mangled
        assert argv[argv.index("--launch-skip") + 1] == str(kernel.representative.skip)


def test_a_range_no_launch_was_made_in_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    result, _ = profile_on_the_eager_first_pass(
        monkeypatch, "--top", "3", "--nvtx-include", "steps/", "--out", str(tmp_path), "--",
        "python3", "t.py")
    assert result.exit_code == 2
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("ncuh: error: none of the first pass's 1076 launches")
    assert "inside the NVTX range steps/ (check --nvtx-include" in line
    assert not any(tmp_path.iterdir())
