"""benchmarks/bench_program_top.py's flow without a GPU: every command it would run answered by
a stand-in (the program's run being the committed sample's), on a host of one GPU. What is
pinned: the parts it runs and the ones it skips with why, what it writes under --out (at most
8 files, nothing else), and the table it prints last. The figures themselves need a GPU.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "reports" / "runs" / "transformer-step-h200-first-pass"
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_program_top as bench  # noqa: E402


class Host:
    """Answers the benchmark's commands as a one-GPU host would, and records them."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        self.calls.append(argv)
        if argv[1:3] == ["-m", "harness"] and argv[3] == "profile":
            out = Path(argv[argv.index("--out") + 1])
            run = out / f"run-{len(self.calls)}"
            shutil.copytree(SAMPLE, run)
            return subprocess.CompletedProcess(argv, 0, f"table\n{run}\n", "")
        if argv[1:3] == ["-m", "harness"] and argv[3] == "writeup":
            Path(argv[argv.index("--out") + 1]).mkdir(parents=True)
            return subprocess.CompletedProcess(argv, 0, "wrote 0 page(s)\n", "")
        if "--set" in argv:  # ncu --set full: stopped at its timeout
            raise subprocess.TimeoutExpired(argv, 1, output=b"==PROF== Profiling \"k\"\n" * 3)
        return subprocess.CompletedProcess(argv, 0, "2.11.0 13.0 3.6.0\n", "")


@pytest.fixture
def one_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Host:
    from harness.profile.gpus import Gpu

    host = Host(tmp_path)
    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path / "cache"))  # restored: main() sets it
    monkeypatch.setattr(bench.subprocess, "run", host)
    gpu = Gpu(index=0, name="NVIDIA H200", uuid="GPU-0", pci_bus_id="00000000:19:00.0")
    monkeypatch.setattr("harness.profile.gpus.list_gpus", lambda: [gpu])
    monkeypatch.setattr("harness.util.ncu_executable", lambda: Path("/usr/bin/ncu"))
    return host


def test_one_gpu_runs_every_part_but_torchrun_and_prints_the_table_last(
        one_gpu: Host, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["bench_program_top.py", "--out", str(out)])
    assert bench.main() == 0
    profiled = [argv[argv.index("--") + 1:] for argv in one_gpu.calls if "profile" in argv]
    assert len(profiled) == 3  # eager, compiled, the CUDA graph
    assert "--compile" in profiled[1] and "--cuda-graph" in profiled[2]
    assert not any("torch.distributed.run" in argv for argv in one_gpu.calls)
    assert not any("--gpus" in argv for argv in one_gpu.calls)
    files = sorted(path.name for path in out.rglob("*"))
    assert files == ["log.txt", "pages.tar.xz", "program_top.json", "program_top.md",
                     "run_compiled.tar.xz", "run_eager.tar.xz", "run_graph.tar.xz"]
    shown = capsys.readouterr().out.splitlines()
    assert shown[0] == "| figure | eager | compiled | cuda graph | torchrun |"
    assert shown[-1] == "| skipped | torchrun: needs two GPUs, fewer are visible | | | |"
    rows = {row.split(" | ")[0].removeprefix("| "): row.split(" | ")[1:] for row in shown}
    assert rows["share of GPU time the top N cover"] == [
        "21.8% (top 5)", "21.8% (top 5)", "10.2% (top 2)", "- |"]
    assert all(re.fullmatch(r"[0-9.]+", cell) for cell in rows["program alone (s)"][:2])
    assert any(row.startswith("| ncu --set full of the whole program (s) | ")
               and "(projected: stopped after " in row and ", 3/1076 launches)" in row
               for row in shown)


def test_a_part_past_the_budget_is_skipped_and_said(one_gpu: Host,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["bench_program_top.py", "--out", str(out),
                                      "--budget", "50"])
    assert bench.main() == 0
    shown = capsys.readouterr().out
    assert "| skipped | compiled: " in shown and "about 120 s needed |" in shown
    assert "| skipped | ncu --set full: " in shown and "about 70 s needed |" in shown
    assert "| skipped | cuda graph" not in shown
    assert sorted(path.name for path in out.glob("run_*")) == ["run_eager.tar.xz",
                                                               "run_graph.tar.xz"]


def test_parts_runs_only_the_parts_named(one_gpu: Host, monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["bench_program_top.py", "--out", str(out),
                                      "--parts", "compiled,full,graph"])
    assert bench.main() == 0
    profiled = [argv[argv.index("--") + 1:] for argv in one_gpu.calls if "profile" in argv]
    assert [("--compile" in argv, "--cuda-graph" in argv) for argv in profiled] == [
        (True, False), (False, True)]
    assert not any("--set" in argv for argv in one_gpu.calls)  # full needs eager's count
    shown = capsys.readouterr().out
    last = shown.splitlines()[-1]
    assert last.startswith("| skipped | ncu --set full: ") and "eager part" in last
    assert sorted(path.name for path in out.glob("run_*")) == ["run_compiled.tar.xz",
                                                               "run_graph.tar.xz"]


@pytest.mark.parametrize("parts", ["", "eager,gemm", ","])
def test_parts_unknown_or_none_is_one_line_and_status_2(
        one_gpu: Host, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any,
        parts: str) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_program_top.py", "--out", str(tmp_path / "out"),
                                      "--parts", parts])
    assert bench.main() == 2
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith("bench_program_top: --parts takes some of ")
    assert one_gpu.calls == [] and not (tmp_path / "out").exists()


def test_full_compiled_fills_the_compile_caches_then_profiles_the_compiled_program(
        one_gpu: Host, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["bench_program_top.py", "--out", str(out),
                                      "--parts", "full-compiled", "--compiled-launches", "932"])
    assert bench.main() == 0
    programs = [argv for argv in one_gpu.calls if str(bench.PROGRAM) in argv]
    assert len(programs) == 2 and all(argv[-1] == "--compile" for argv in programs)
    assert "--set" not in programs[0] and programs[1][:5] == [
        "/usr/bin/ncu", "--config-file", "off", "--set", "full"]
    row = next(line for line in capsys.readouterr().out.splitlines()
               if line.startswith("| ncu --set full of the whole program (s) | "))
    assert row.split(" | ")[1] == "-" and ", 3/932 launches)" in row.split(" | ")[2]


def test_full_compiled_without_a_launch_count_is_skipped_and_said(
        one_gpu: Host, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_program_top.py", "--out", str(tmp_path / "out"),
                                      "--parts", "full-compiled"])
    assert bench.main() == 0
    assert not any("--set" in argv for argv in one_gpu.calls)
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("| skipped | ncu --set full, compiled: needs the compiled part's")
