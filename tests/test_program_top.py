"""`ncuh profile --top N -- PROGRAM` without a GPU: the first pass's launch table, the
ranking, the second pass's command lines, the manifest, and every refusal.

ncu is `program_support.ProgramNcu`: the launch table it prints is ncu's raw CSV page of a
training step of three layers (flash attention, a cuBLAS GEMM, an Inductor kernel, a fill),
and each second-pass ncu writes the committed report of the kernel its `-k` names.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import FIXTURES
from packed_fixtures import fixture
from program_support import (
    FILL,
    FILL_MANGLED,
    FUSED,
    GEMM,
    Launch,
    ProgramNcu,
    flash_mangled,
    flash_name,
    raw_page,
    step,
)
from standin_support import STANDINS

from harness.cli import main
from harness.profile import run as lib
from harness.profile.launches import Launch as TableLaunch
from harness.profile.launches import LaunchTableError, read_launches, with_mangled
from harness.profile.planning import ProfileRequest, first_pass_filter
from harness.profile.ranking import Window, rank_launches
from harness.rundir import load_run

NCU = Path("/opt/nvidia/nsight-compute/2025.3.1/ncu")
# The step's launches (ns), by hand: what every figure below comes from.
FLASH_NS, GEMM_NS, FUSED_NS, FILL_NS = (340_000, 342_000, 344_000), (210_000, 214_000, 218_000), \
    (80_000, 81_000, 82_000), (2_000,)
TOTAL_NS = sum(FLASH_NS) + sum(GEMM_NS) + sum(FUSED_NS) + sum(FILL_NS)  # 1,913,000


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """ncu on PATH and CuPy installed, neither real; a cache of its own."""
    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setattr("harness.util.ncu_executable", lambda: NCU)
    monkeypatch.setattr(lib, "cupy_installed", lambda: True)


def use(monkeypatch: pytest.MonkeyPatch, fake: ProgramNcu) -> ProgramNcu:
    monkeypatch.setattr(lib, "run_command", fake)
    monkeypatch.setattr(lib, "start_command", lib.in_threads(fake))
    return fake


def invoke(args: list[str]) -> Any:
    return CliRunner().invoke(main, ["profile", *args], catch_exceptions=False)


def error_lines(result: Any) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("ncuh: error:")]


# ------------------------------------------------------------------ the launch table


def test_the_launch_table_is_ncus_raw_page_in_its_own_unit() -> None:
    """ncu's raw page of a real H100 report (display units: ms): its one launch, exactly."""
    (launch,) = read_launches(fixture(FIXTURES / "h100_pages_naive_1024.raw.csv").read_text(
        encoding="utf-8"))
    assert launch == TableLaunch(id=0, name="sgemm_naive", grid=(32, 32, 1), block=(32, 32, 1),
                                 duration_ns=5_510_208.0, process=656, device=0,
                                 ranges=(("<default domain>", "ncuh-naive_1024"),))


def test_the_launch_table_in_base_units_skips_ncus_own_lines() -> None:
    launches = read_launches("==WARNING== first\n" + raw_page(step()))
    assert [launch.id for launch in launches] == list(range(10))
    assert launches[1] == TableLaunch(1, GEMM, (2, 66, 1), (384, 1, 1), 210_000.0, 4242, 0)
    assert read_launches(raw_page([Launch(FILL, (1, 1, 1), (32, 1, 1), 2.5)], unit="usecond")
                         )[0].duration_ns == 2_500.0


@pytest.mark.parametrize("table,phrase", [
    ("no table at all\n", "has no header row"),
    ('"ID","Kernel Name","Block Size","Grid Size"\n', "lacks gpu__time_duration.sum"),
    (raw_page([Launch(FILL, (1, 1, 1), (32, 1, 1), 5)], unit="byte"), "in 'byte', not a time"),
    (raw_page([Launch(FILL, (1, 1, 1), (32, 1, 1), 5)]).replace('"(1, 1, 1)"', '"(1, 1)"'),
     "grid '(1, 1)' is not (x, y, z)"),
    (raw_page([Launch(FILL, (1, 1, 1), (32, 1, 1), 5)]).replace('"5"', '"five"'),
     "'five' is not a number"),
    (raw_page([Launch(FILL, (1, 1, 1), (32, 1, 1), 5)]).replace(',"9.0"', ""),
     "11 cells, 12 columns"),
])
def test_a_table_that_is_not_one_launch_per_row_is_refused(table: str, phrase: str) -> None:
    with pytest.raises(LaunchTableError, match=phrase.replace("(", r"\(").replace(")", r"\)")):
        read_launches(table)


def test_the_mangled_names_come_from_the_same_launches_or_not_at_all() -> None:
    demangled = read_launches(raw_page(step()))
    mangled = read_launches(raw_page(step(), names="mangled"))
    named = with_mangled(demangled, mangled)
    assert [launch.mangled for launch in named[:3]] == [FILL_MANGLED, GEMM, flash_mangled()]
    with pytest.raises(LaunchTableError, match="differ at launch 9"):
        with_mangled(demangled, mangled[:9])
    shifted = read_launches(raw_page(step(second_shape=True), names="mangled"))
    with pytest.raises(LaunchTableError, match="differ at launch 4"):
        with_mangled(read_launches(raw_page(step(second_shape=False) + step()[:3])), shifted)


# ------------------------------------------------------------------ the ranking


def _ranked(launches: list[Launch], window: Window | None = None) -> Any:
    return rank_launches(read_launches(raw_page(launches)), window or Window())


def test_kernels_are_ranked_by_total_gpu_time_with_share_and_spread() -> None:
    (process,) = _ranked(step()).processes
    flash, gemm, _, fill = process.kernels
    assert [k.name for k in process.kernels] == [flash_name(), GEMM, FUSED, FILL]
    assert [k.total_ns for k in process.kernels] == [sum(FLASH_NS), sum(GEMM_NS),
                                                     sum(FUSED_NS), sum(FILL_NS)]
    assert process.total_ns == TOTAL_NS and process.launches == 10
    assert flash.share_pct == pytest.approx(100 * 1_026_000 / TOTAL_NS)  # 53.63%
    assert gemm.cumulative_pct == pytest.approx(100 * 1_668_000 / TOTAL_NS)  # 87.19%
    assert fill.cumulative_pct == pytest.approx(100.0)
    assert (gemm.mean_ns, gemm.stdev_ns, gemm.launches) == (214_000, 4_000, 3)
    assert (flash.grid, flash.block) == ((16, 4, 16), (128, 1, 1))


def test_the_representative_launch_is_the_one_nearest_the_median() -> None:
    (process,) = _ranked(step()).processes
    flash, gemm, fused, _ = process.kernels
    # launch IDs: 0 fill, then per layer GEMM, flash, fused (1-3, 4-6, 7-9); the medians are
    # each kernel's second launch, which has one launch of its name before it
    assert [(k.representative_id, k.representative_skip, k.representative_ns)
            for k in (flash, gemm, fused)] == [(5, 1, 342_000), (4, 1, 214_000),
                                               (6, 1, 81_000)]


@pytest.mark.parametrize("durations,chosen", [
    ((100, 400, 250), 2),  # an odd count: the median launch itself
    ((250, 100, 250), 0),  # the median twice: the earlier
    ((100, 300, 250, 400), 1),  # an even count: the middle two are as near, the earlier wins
    ((100, 250, 300, 400), 1),
    ((400, 300, 250, 100), 1),
    ((100, 249, 251, 253, 400), 2),  # 251 is the median; 249 and 253 are 2 ns off
])
def test_the_launch_nearest_the_median_is_chosen_the_earlier_of_two(
        durations: tuple[int, ...], chosen: int) -> None:
    launches = [Launch(GEMM, (1, 1, 1), (32, 1, 1), ns) for ns in durations]
    (kernel,) = _ranked(launches).processes[0].kernels
    assert kernel.representative_id == chosen


def test_two_kernels_that_print_alike_are_told_apart_by_their_mangled_names() -> None:
    launches = [Launch(FILL, (1, 1, 1), (32, 1, 1), 10), Launch(FILL, (1, 1, 1), (32, 1, 1), 20)]
    twins = [TableLaunch(launch.id, launch.name, launch.grid, launch.block, launch.duration_ns,
                         mangled=f"_Z4fillILi{launch.id}EEvv")
             for launch in read_launches(raw_page(launches))]
    (process,) = rank_launches(twins).processes
    assert [(k.name, k.mangled, k.launches) for k in process.kernels] == [
        (FILL, "_Z4fillILi1EEvv", 1), (FILL, "_Z4fillILi0EEvv", 1)]
    assert [k.representative_skip for k in process.kernels] == [0, 0]


def test_the_same_function_at_another_launch_shape_is_another_kernel() -> None:
    (process,) = _ranked(step(second_shape=True)).processes
    shapes = [(k.name, k.grid) for k in process.kernels if k.name == GEMM]
    assert shapes == [(GEMM, (2, 66, 1)), (GEMM, (1, 66, 1))]
    second = next(k for k in process.kernels if k.grid == (1, 66, 1))
    # its launches are IDs 4, 8, 12: median 100,000 (all equal) picks the first, after one
    # launch of the same name at the other shape
    assert (second.representative_id, second.representative_skip) == (4, 1)


def test_the_window_ranks_the_launches_after_skip_and_up_to_count() -> None:
    ranking = _ranked(step(), Window(skip=4, count=3))  # launches 4, 5, 6: GEMM, flash, fused
    (process,) = ranking.processes
    assert [(k.name, k.launches) for k in process.kernels] == [
        (flash_name(), 1), (GEMM, 1), (FUSED, 1)]
    assert process.total_ns == 214_000 + 342_000 + 81_000 and ranking.launches_seen == 10
    # the skip still counts the launches before the window: the second pass finds them there
    assert process.kernels[0].representative_skip == 1


def test_each_process_is_ranked_by_itself_and_counted_on_its_device() -> None:
    launches = [launch for pair in zip(step(4242, 0), step(4343, 1), strict=True)
                for launch in pair]
    ranking = _ranked(launches)
    assert [(p.key, p.process, p.device) for p in ranking.processes] == [
        ("gpu0", 4242, 0), ("gpu1", 4343, 1)]
    for process in ranking.processes:
        assert process.total_ns == TOTAL_NS
        assert process.kernels[0].representative_skip == 1  # its own device's launches
    shared = _ranked([Launch(FILL, (1, 1, 1), (32, 1, 1), 5, 1, 0),
                      Launch(FILL, (1, 1, 1), (32, 1, 1), 5, 2, 0)])
    assert [p.key for p in shared.processes] == ["gpu0", "gpu0-2"]


# ------------------------------------------------------------------ the command


def test_top_profiles_each_top_kernel_at_its_representative_launch(
        machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = use(monkeypatch, ProgramNcu(step()))
    result = invoke(["--top", "2", "--out", str(tmp_path), "--", "python", "train.py",
                     "--compile"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["#", "kernel", "grid"]
    assert lines[1][:61] == "  1  flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, …"
    assert lines[1][61:].split() == ["16x4x16", "128x1x1", "3", "1.026", "53.6%", "53.6%",
                                     "342.0", "2.0"]
    assert lines[2].split() == ["2", GEMM, "2x66x1", "384x1x1", "3", "0.642", "33.6%",
                                "87.2%", "214.0", "4.0"]
    assert lines[3].split() == ["2", "more", "kernels", "4", "0.245", "12.8%"]
    assert lines[4] == "GPU time 1.913 ms over 10 launches of 4 kernels"
    run = load_run(lines[-1])
    first, *second = [argv for argv in fake.calls if "-o" in argv]
    assert first[1:first.index("-o")] == [
        "--config-file", "off", "--metrics", "gpu__time_duration.sum", "--clock-control",
        "base", "--cache-control", "none", "--replay-mode", "kernel", "--graph-profiling",
        "node"]
    assert first[-4:] == ["-f", "python", "train.py", "--compile"]
    # each kernel by its mangled name: exact, whatever the demangler prints
    assert [argv[argv.index("--graph-profiling"):argv.index("-o")] for argv in second] == [
        ["--graph-profiling", "node", "--kernel-name-base", "mangled",
         "-k", flash_mangled(), "--launch-skip", "1", "--launch-count", "1"],
        ["--graph-profiling", "node", "--kernel-name-base", "mangled",
         "-k", GEMM, "--launch-skip", "1", "--launch-count", "1"]]
    assert flash_mangled().startswith("_ZN13pytorch_flash16flash_fwd_kernel")
    assert all(argv[argv.index("--replay-mode") - 2:argv.index("--replay-mode")]
               == ["--cache-control", "all"] for argv in second)
    assert [entry.label for entry in run.entries] == [
        "01-flash_fwd_kernel_Flash_fwd_kernel_traits_128_1",
        "02-nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"]
    assert [(e.ranked.process, e.ranked.rank) for e in run.entries] == [("gpu0", 1), ("gpu0", 2)]
    assert run.record.schema_ == "ncuh.run/2"


def test_the_manifest_keeps_the_ranking_and_every_launch(
        machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use(monkeypatch, ProgramNcu(step()))
    result = invoke(["--top", "1", "--out", str(tmp_path), "--", "python", "train.py"])
    assert result.exit_code == 0, result.output
    run = load_run(result.stdout.splitlines()[-1])
    ranking = run.record.ranking
    assert ranking.top == 1 and ranking.report == "ranking.ncu-rep"
    assert (run.path / "ranking.ncu-rep").is_file() and (run.path / "logs/ranking.log").is_file()
    assert ranking.ncu["cache_control"] == "none" and ranking.ncu["metrics"] == [
        "gpu__time_duration.sum"]
    (process,) = ranking.processes
    assert (process.key, process.launches, process.total_ns) == ("gpu0", 10, TOTAL_NS)
    flash = process.kernels[0]
    assert flash.durations_ns == FLASH_NS and flash.representative.skip == 1
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert manifest["ncu"]["command_lines"][0][-3:] == ["-f", "python", "train.py"]
    assert [argv[argv.index("--print-kernel-base") + 1] for argv in
            ranking.export_command_lines] == ["demangled", "mangled"]
    assert len(run.entries) == 1


def test_launch_skip_and_count_choose_the_window_and_end_the_first_pass(
        machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = use(monkeypatch, ProgramNcu(step()))
    result = invoke(["--top", "1", "--launch-skip", "4", "--launch-count", "3", "--out",
                     str(tmp_path), "--", "python", "train.py"])
    assert result.exit_code == 0, result.output
    first = next(argv for argv in fake.calls if "-o" in argv)
    assert "--launch-skip" not in first
    assert first[first.index("--launch-count") + 1] == "7"
    run = load_run(result.stdout.splitlines()[-1])
    assert run.record.ranking.window == {"launch_skip": 4, "launch_count": 3,
                                         "nvtx_include": [], "nvtx_over": None}
    assert run.record.ranking.processes[0].total_ns == 214_000 + 342_000 + 81_000


def test_torchrun_gets_a_ranking_and_pages_per_rank_on_its_gpu(
        machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    launches = [launch for pair in zip(step(4242, 0), step(4343, 1), strict=True)
                for launch in pair]
    fake = use(monkeypatch, ProgramNcu(launches))
    monkeypatch.setenv("PATH", f"{STANDINS}{os.pathsep}{os.environ['PATH']}")  # nvidia-smi
    result = invoke(["--top", "1", "--gpus", "all", "--out", str(tmp_path), "--", "python",
                     "-m", "torch.distributed.run", "--nproc-per-node", "2", "train.py"])
    assert result.exit_code == 0, result.output
    assert "process 4242 on GPU 0 (gpu0):" in result.stdout
    assert "process 4343 on GPU 1 (gpu1):" in result.stdout
    first, *second = [argv for argv in fake.calls if "-o" in argv]
    # ncu serializes every process's launches: a collective would wait for its peers forever
    assert first[first.index("-k") + 1] == "regex:^(?!nccl)"
    assert [argv[argv.index("--devices") + 1] for argv in second] == ["0", "1"]
    run = load_run(result.stdout.splitlines()[-1])
    assert [e.label[:9] for e in run.entries] == ["gpu0-01-f", "gpu1-01-f"]
    # the program needs both GPUs: its ncu runs are not pinned to one each
    assert all(env is None for argv, env in zip(fake.calls, fake.envs, strict=True)
               if argv in second)
    assert "profiled one at a time" in result.stderr


def test_a_users_kernel_filter_is_kept_for_the_first_pass(
        machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = use(monkeypatch, ProgramNcu(step()))
    result = invoke(["--top", "1", "-k", "regex:nvjet|flash", "--out", str(tmp_path), "--",
                     "python", "-m", "torch.distributed.run", "train.py"])
    assert result.exit_code == 0, result.output
    first = next(argv for argv in fake.calls if "-o" in argv)
    assert first[first.index("-k") + 1] == "regex:nvjet|flash"


@pytest.mark.parametrize("program,kernel", [
    (("torchrun", "--nproc-per-node", "2", "train.py"), "regex:^(?!nccl)"),
    (("/usr/bin/mpirun", "-n", "2", "python", "train.py"), "regex:^(?!nccl)"),
    (("uv", "run", "torchrun", "train.py"), "regex:^(?!nccl)"),
    (("python", "train.py", "--launcher", "torchrun"), None),  # past the launcher's words
    (("python", "train.py"), None),
])
def test_collectives_are_left_out_of_a_multi_process_launchers_first_pass(
        program: tuple[str, ...], kernel: str | None) -> None:
    request = ProfileRequest(program=program, top=3)
    assert first_pass_filter(request).kernel == kernel


def test_a_dry_run_prints_the_first_pass_and_says_what_follows(
        machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = use(monkeypatch, ProgramNcu(step()))
    result = invoke(["--top", "3", "--out", str(tmp_path), "--dry-run", "--", "python",
                     "train.py"])
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    argv = shlex.split(line)
    assert argv[argv.index("-o") + 1].endswith("-train/ranking.ncu-rep")
    assert "then one ncu per kernel of the top 3" in result.stderr
    assert fake.calls == [] and not any(tmp_path.iterdir())


@pytest.mark.parametrize("args,phrase", [
    (["--top", "2"], "--top ranks the kernels of a program: give one after --"),
    (["--top", "2", "--graph-profiling", "graph", "--", "python", "t.py"],
     "use --graph-profiling node"),
    (["--top", "2", "--slurm", "--", "python", "t.py"], "does not go with --slurm"),
    (["--top", "0", "--", "python", "t.py"], None),
    (["--graph-profiling", "node"], "need a program after --"),
])
def test_what_top_cannot_do_is_one_line_and_exit_2(
        machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str],
        phrase: str | None) -> None:
    fake = use(monkeypatch, ProgramNcu(step()))
    result = invoke([*args[:-3], "--out", str(tmp_path), *args[-3:]] if "--" in args
                    else [*args, "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    if phrase is not None:
        assert len(error_lines(result)) == 1 and phrase in error_lines(result)[0]
    assert fake.calls == [] and not any(tmp_path.iterdir())


@pytest.mark.parametrize("fake_args,phrase", [
    ({"first_pass": (1, "==PROF== Connected\n==ERROR== The application returned an error "
                        "code (1).\n")},
     "the first pass (every launch's duration) failed: the profiled program exited with "
     "status 1"),
    ({"table": "==ERROR== no table\n"}, "has no header row"),
    ({"table": raw_page([])}, "timed no launch in the ranked window"),
])
def test_a_first_pass_that_gives_no_ranking_stops_with_exit_2_and_no_run(
        machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        fake_args: dict[str, Any], phrase: str) -> None:
    fake = use(monkeypatch, ProgramNcu(step(), **fake_args))
    result = invoke(["--top", "2", "--out", str(tmp_path), "--", "python", "train.py"])
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result)
    assert phrase in line
    assert fake.second_pass == [] and not any(tmp_path.iterdir())
