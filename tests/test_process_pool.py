"""Work shared with forked workers through `concurrent.futures` (`harness.util.process_pool`):
results in order, a dead worker's share made here, the first failure raised, signals left to
the parent, and no worker left behind. Each case runs in a process of its own, as a command
does (a test worker's own threads are none of a fork's business)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.util import parallel_map, usable_cores, worker_pool

ROOT = Path(__file__).resolve().parent.parent


def _run(script: str) -> str:
    """`script` run by a new Python process; what it printed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


_LEFT = """
import multiprocessing
print("left:", len(multiprocessing.active_children()))
"""


def test_items_come_back_in_order_made_by_the_workers_and_here() -> None:
    said = _run("""
import multiprocessing, os
from harness.util import parallel_map
here = os.getpid()
lock = __import__("threading").Lock()  # passed on by the fork: no pickling of `make`
worked = multiprocessing.Event()
def make(i):
    if os.getpid() != here:
        worked.set()
    elif i < 8:
        worked.wait()  # after the last, this process goes on once a worker has made one
    return (i * i, os.getpid() != here, lock is not None)
made = parallel_map(make, 9, 3)
print([square for square, _, _ in made])
print(any(elsewhere for _, elsewhere, _ in made), made[-1][1])
""" + _LEFT)
    assert said.splitlines() == ["[0, 1, 4, 9, 16, 25, 36, 49, 64]", "True False", "left: 0"]


def test_one_job_or_one_item_is_made_here() -> None:
    here = os.getpid()
    assert parallel_map(lambda i: (i, os.getpid()), 3, 1) == [(0, here), (1, here), (2, here)]
    assert parallel_map(lambda i: os.getpid(), 1, 8) == [here]
    assert parallel_map(lambda i: i, 0, 8) == []


def test_an_index_whose_worker_died_is_made_here() -> None:
    said = _run("""
import os, signal
from harness.util import parallel_map
here = os.getpid()
def make(i):
    if i == 2 and os.getpid() != here:
        os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's out-of-memory killer would
    return (i, os.getpid() == here)
made = parallel_map(make, 6, 2)
print([i for i, _ in made], made[2][1])
""" + _LEFT)
    assert said.splitlines() == ["[0, 1, 2, 3, 4, 5] True", "left: 0"]


def test_the_first_failing_index_raises_whoever_met_it() -> None:
    said = _run("""
from harness.errors import ReportError
from harness.util import parallel_map
def make(i):
    if i in (3, 5):
        raise ReportError(f"item {i} is corrupt")
    return i
try:
    parallel_map(make, 8, 3)
except ReportError as error:
    print(type(error).__name__, error)
""" + _LEFT)
    assert said.splitlines() == ["ReportError item 3 is corrupt", "left: 0"]


def test_workers_leave_ctrl_c_to_the_parent_and_end_on_sigterm() -> None:
    said = _run("""
import multiprocessing, os, signal, time
from concurrent.futures.process import BrokenProcessPool
from harness.util import worker_pool
def dispositions():
    return (signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL,
            signal.pthread_sigmask(signal.SIG_BLOCK, []) == set())
signal.signal(signal.SIGTERM, lambda *_: print("the parent's handler ran in a worker"))
with worker_pool(1) as pool:
    print(pool.submit(dispositions).result())
    busy = pool.submit(time.sleep, 60)
    (worker,) = multiprocessing.active_children()
    os.kill(worker.pid, signal.SIGINT)  # ignored: the worker goes on
    os.kill(worker.pid, signal.SIGTERM)
    try:
        busy.result()
    except BrokenProcessPool:
        print("the worker ended on SIGTERM")
""" + _LEFT)
    assert said.splitlines() == ["(True, True, True)", "the worker ended on SIGTERM",
                                 "left: 0"]


def test_an_exception_in_the_block_ends_the_workers() -> None:
    said = _run("""
import time
from harness.util import worker_pool
try:
    with worker_pool(2) as pool:
        pool.submit(time.sleep, 60)  # a worker busy for a minute
        raise KeyboardInterrupt
except KeyboardInterrupt:
    print("interrupted")
""" + _LEFT)
    assert said.splitlines() == ["interrupted", "left: 0"]


def test_beside_threads_a_pool_forks_nothing_and_spawns_where_asked() -> None:
    said = _run("""
import os, threading
from harness.util import worker_pool
stop = threading.Event()
beside = threading.Thread(target=stop.wait)
beside.start()
with worker_pool(1) as pool:
    print(pool is None)
with worker_pool(1, spawn_beside_threads=True) as pool:
    print(pool.submit(os.getpid).result() != os.getpid())
stop.set()
beside.join()
""" + _LEFT)
    assert said.splitlines() == ["True", "True", "left: 0"]


def test_no_worker_is_no_pool() -> None:
    with worker_pool(0) as pool:
        assert pool is None
    assert usable_cores() >= 1


def test_ncuh_jobs_caps_the_cores_and_a_bad_value_is_one_line(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("NCUH_JOBS", raising=False)
    cores = usable_cores()
    assert cores == len(os.sched_getaffinity(0))
    monkeypatch.setenv("NCUH_JOBS", " 1 ")
    assert usable_cores() == 1
    monkeypatch.setenv("NCUH_JOBS", str(cores + 1))  # a cap: never more than this process has
    assert usable_cores() == cores
    monkeypatch.setenv("NCUH_JOBS", str(cores))
    assert usable_cores() == cores
    for bad in ("0", "-1", "two", "1.5", "\u0663"):  # an Arabic-Indic three is a digit, not ASCII
        run = ROOT / "reports" / "runs" / "sgemm-h200-256"
        done = CliRunner().invoke(main, ["export", str(run), "-o", str(tmp_path / "all.csv")],
                                  env={"NCUH_JOBS": bad})
        assert done.exit_code == 2, done.output
        assert done.stderr.splitlines() == [
            f"ncuh: error: NCUH_JOBS must be a whole number of 1 or more, not {bad!r}"]
        assert not (tmp_path / "all.csv").exists()


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signals")
def test_the_parent_keeps_its_signals_after_starting_a_pool() -> None:
    said = _run("""
import signal
from harness.util import worker_pool
def warm_up(word):
    print(word, flush=True)
with worker_pool(1, warm_up, ("warm",)) as pool:
    print(pool.submit(int).result(), signal.pthread_sigmask(signal.SIG_BLOCK, []) == set())
""" + _LEFT)
    assert said.splitlines() == ["warm", "0 True", "left: 0"]
