"""SIGINT, SIGTERM and SIGHUP at named points of export, writeup, merge, bench and profile:
exit 128+N, no partial output, no staging folder, no living child.

The points are `harness.util.pause_at`'s: a real `python -m harness` stops there (NCUH_PAUSE_AT)
and says so, and the test signals it then; in-process commands (bench and profile, which need
stand-ins for the GPU and ncu) get the signal from the point itself. No sleeps, no windows.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_bench_flow
from click.testing import CliRunner
from conftest import alive
from packed_fixtures import H100_PAGES_NAIVE
from standin_support import use_standins
from test_writeup_run import make_run

import harness.util.atomic
from harness.cli import main

ROOT = Path(__file__).resolve().parents[1]
# Ctrl-C reaches this process and the commands it starts, even where the suite was started as
# a shell's background job (which ignores SIGINT, and its children inherit that).
pytestmark = pytest.mark.usefixtures("ctrl_c_raises")
# one kernel of the `pages` set: what is signalled is the publishing, not the reading
SMALL_REPORT = H100_PAGES_NAIVE
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


def _children(pid: int) -> set[int]:
    """Every living descendant of `pid` (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


class Paused:
    """`python -m harness ARGS` stopped at `point`."""

    def __init__(self, args: list[str], point: str, cwd: Path) -> None:
        env = {**os.environ, "NCUH_PAUSE_AT": point,
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        self.stdout = (cwd / "stdout.txt").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "harness", *args], cwd=cwd, env=env,
            stdin=subprocess.PIPE, stdout=self.stdout, stderr=subprocess.PIPE)
        said = []
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            said.append(raw.decode())
            if raw.decode() == f"ncuh: paused at {point}\n":
                break
        else:
            self.process.wait()
            raise AssertionError(f"never reached {point}: {''.join(said)}")

    def signal(self, sig: int) -> None:
        self.process.send_signal(sig)

    def go_on(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"\n")
        self.process.stdin.flush()

    def end(self) -> tuple[int, str]:
        code = self.process.wait(timeout=120)
        assert self.process.stderr is not None and self.process.stdin is not None
        rest = self.process.stderr.read().decode()
        self.process.stdin.close()
        self.process.stderr.close()
        self.stdout.close()
        return code, rest


def small_run(root: Path) -> Path:
    """`make_run`'s run directory with each report the small one (the same kernel as naive)."""
    run = make_run(root)
    for report in run.glob("*.ncu-rep"):
        shutil.copyfile(SMALL_REPORT, report)
    return run


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return small_run(tmp_path)


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_export_of_a_run_leaves_nothing_and_no_worker(run: Path, tmp_path: Path,
                                                      sig: int) -> None:
    out = tmp_path / "out"
    out.mkdir()
    paused = Paused(["export", str(run), "-o", str(out / "all.csv")], "export parts", tmp_path)
    workers = _children(paused.process.pid)
    assert workers  # the reports are being exported in children (a child each at least)
    paused.signal(sig)
    code, said = paused.end()
    assert code == 128 + sig, said
    assert "Traceback" not in said
    assert _listing(out) == []  # no all.csv, no .tmp, no .metrics-parts-*
    assert not [pid for pid in workers if alive(pid)]


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_writeup_into_a_new_folder_publishes_nothing(run: Path, tmp_path: Path,
                                                     sig: int) -> None:
    paused = Paused(["writeup", str(run), "--out", "pages", "--format", "md"],
                    "publish pages", tmp_path)
    paused.signal(sig)
    code, said = paused.end()
    assert code == 128 + sig, said
    assert not (tmp_path / "pages").exists()
    assert not list(tmp_path.glob(".pages*"))  # no staging folder


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                    reason="plots are drawn beside the pages only with a second core")
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_writeup_stopped_while_its_plots_are_drawn_leaves_no_worker(
        run: Path, tmp_path: Path, sig: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NCUH_REPORT_AND_PLOT_CACHE", "off")  # no plot kept: every one is drawn
    monkeypatch.delenv("NCUH_JOBS", raising=False)  # every core: plot workers
    paused = Paused(["writeup", str(run), "--out", "pages", "--format", "md"],
                    "drawing plots", tmp_path)
    workers = _children(paused.process.pid)
    assert workers  # the plot workers, drawing or done
    paused.signal(sig)
    code, said = paused.end()
    assert code == 128 + sig, said
    assert "Traceback" not in said
    assert not (tmp_path / "pages").exists()
    assert not list(tmp_path.glob(".pages*"))  # no staging folder
    assert not [pid for pid in workers if alive(pid)]


@pytest.fixture(scope="module")
def old_pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pages of `small_run`'s run, written once for the module, every Markdown page's
    text then replaced by "old" (an earlier set that a new writeup must replace whole)."""
    folder = tmp_path_factory.mktemp("old-pages")
    args = ["writeup", str(small_run(folder)), "--out", "pages", "--format", "md"]
    assert subprocess.run([sys.executable, "-m", "harness", *args], cwd=folder,
                          capture_output=True, check=False).returncode == 0
    for page in (folder / "pages").glob("*.md"):
        page.write_text("old\n")
    return folder / "pages"


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_writeup_over_old_pages_publishes_the_whole_set_or_none(
    run: Path, tmp_path: Path, old_pages: Path, sig: int
) -> None:
    args = ["writeup", str(run), "--out", "pages", "--format", "md"]
    pages = tmp_path / "pages"
    shutil.copytree(old_pages, pages)
    assert {p.read_text() for p in pages.glob("*.md")} == {"old\n"}
    before = _listing(pages)
    # stopped before the renames: the old set stays
    paused = Paused(args, "publish pages", tmp_path)
    paused.signal(sig)
    code, _ = paused.end()
    assert code == 128 + sig
    assert _listing(pages) == before and {p.read_text() for p in pages.glob("*.md")} == {"old\n"}
    # signalled during the renames: the signal waits for the last of them
    paused = Paused(args, "publishing pages", tmp_path)
    paused.signal(sig)
    paused.go_on()
    code, _ = paused.end()
    assert code == 128 + sig
    assert _listing(pages) == before and "old\n" not in {p.read_text() for p in pages.glob("*.md")}
    assert not list(tmp_path.glob(".pages*"))


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_merge_leaves_no_staging_folder(run: Path, tmp_path: Path, sig: int) -> None:
    paused = Paused(["merge", str(run), "--out", "merged"], "publish merged", tmp_path)
    paused.signal(sig)
    code, said = paused.end()
    assert code == 128 + sig, said
    assert not (tmp_path / "merged").exists() and not list(tmp_path.glob(".merged*"))


host_project = test_bench_flow.host_project  # the CPU stand-in project, as a fixture here


@pytest.fixture
def signal_at(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """In-process commands: {point: signal} sends the signal to ourselves at that point."""
    wanted: dict[str, int] = {}

    def pause_at(point: str) -> None:
        if point in wanted:
            os.kill(os.getpid(), wanted[point])

    monkeypatch.setattr(harness.util.atomic, "pause_at", pause_at)
    yield wanted
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handlers are put back


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_bench_writes_no_half_results(host_project, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch,
                                      signal_at: dict[str, int], sig: int) -> None:
    from test_bench_cpu import sample_run

    import harness.gpu
    from harness.commands import bench

    monkeypatch.setattr(harness.gpu, "require_gpu", lambda: None)  # as the command looks it up
    monkeypatch.setattr(bench, "run_bench", lambda *args, **kwargs: sample_run())
    out = tmp_path / "bench"
    signal_at["publish bench.json"] = sig
    result = CliRunner().invoke(main, ["bench", "--variant", "loop", "--sizes", "1000",
                                       "--repeats", "3", "--warmup", "0", "--out", str(out),
                                       "--project", str(host_project.path)])
    assert result.exit_code == 128 + sig, result.output
    assert _listing(out) == []  # its folder is there, empty: no bench.json, no .tmp


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_profile_leaves_no_run_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         signal_at: dict[str, int], sig: int) -> None:
    use_standins(monkeypatch, tmp_path)
    monkeypatch.setenv("NCUH_FAKE_NCU_SECONDS", "0")
    out = tmp_path / "runs"
    out.mkdir()
    before = _children(os.getpid())
    monkeypatch.setattr(harness.util.atomic, "pause_at", lambda point: os.kill(
        os.getpid(), sig) if point.startswith("publish ") and point != "publish manifest.json"
        else None)
    result = CliRunner().invoke(main, ["profile", "--variant", "naive", "--size", "256",
                                       "--out", str(out)])
    assert result.exit_code == 128 + sig, result.output
    assert _listing(out) == []
    assert not (_children(os.getpid()) - before)
