"""Shared test setup: fixture paths, clean skips for tests marked `gpu`, golden files, and
the groups that pytest-xdist keeps on one worker.

Prose (findings, pages, verdicts) is pinned in tests/golden/<module>/<name>.txt through the
`golden` fixture. After an intended change of wording, rewrite them with
`pytest --update-golden` (or NCUH_UPDATE_GOLDEN=1) and review the diff.

The suite runs on every core (`-n auto --dist loadgroup` in pyproject.toml). A test module's
tests run on one worker, so its module-scoped fixtures (reports read once, a Slurm cluster,
a browser's pages) are made once; the GPU tests (all in `test_*_gpu.py` modules) are one
group, so on a GPU machine they run one after the other on a single worker and never share
the GPU. `-n 0` runs everything in one process.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
NAIVE_SMEM_REPORT = FIXTURES / "h100_sgemm_naive_smem.ncu-rep"
NAIVE_SMEM_RAW_CSV = FIXTURES / "h100_sgemm_naive_smem.raw.csv"
NAIVE_SMEM_DETAILS = FIXTURES / "h100_sgemm_naive_smem.details.txt.gz"
GOLDEN = Path(__file__).parent / "golden"

# Python's default, where the environment turns it off (PYTHONDONTWRITEBYTECODE), for the whole
# test process: pytest keeps each test module's rewritten asserts in __pycache__ (ignored by
# git, as are the harness modules' bytecode written beside them), so each xdist worker, and the
# next run, reads them instead of rewriting every test module at every collection.
sys.dont_write_bytecode = False


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite tests/golden/ from what the tests produce")


class Golden:
    """Compares text with its golden file; with the update switch on, writes it instead."""

    def __init__(self, folder: Path, update: bool) -> None:
        self.folder, self.update = folder, update

    def __call__(self, name: str, text: str) -> None:
        path = self.folder / f"{name}.txt"
        if self.update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert path.is_file(), f"no golden file {path}: run pytest --update-golden"
        assert text == path.read_text(encoding="utf-8"), f"differs from {path}"


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    """`golden(name, text)`: `text` must equal tests/golden/<test module>/<name>.txt."""
    update = request.config.getoption("--update-golden") or bool(
        os.environ.get("NCUH_UPDATE_GOLDEN"))
    module = request.module.__name__.rpartition(".")[2].removeprefix("test_")
    return Golden(GOLDEN / module, update)


@functools.cache
def gpu_unavailable_reason() -> str | None:
    """Why GPU tests cannot run here, or None when a CUDA device answers through CuPy."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as error:  # CUDA driver missing or unusable
        return f"no usable CUDA device ({type(error).__name__})"
    return None


def pytest_configure(config: pytest.Config) -> None:
    # Tests never read or write the user's ~/.cache/ncuh: a test run starts from an empty
    # cache folder of its own, which its xdist workers (started with the environment set
    # here) share; tests that need another one set NCUH_CACHE_DIR themselves.
    if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("NCUH_CACHE_DIR"):
        return
    folder = tempfile.mkdtemp(prefix="ncuh-test-cache-")
    config.add_cleanup(functools.partial(shutil.rmtree, folder, True))
    os.environ["NCUH_CACHE_DIR"] = folder


# Modules whose tests share one worker with other modules' tests: every GPU test, one after
# the other (they never share the GPU); the history tests (one PostgreSQL server); the tests
# that run the documented commands (each such command run once, tests/cli_examples.py); the
# tests that read the reduction run's pages (written up once, tests/reduction_run.py); the
# tests that read every committed report in-process (each read once, packed_fixtures).
WORKER_GROUPS = {
    "gpu": re.compile(r"(^|/)test_\w+_gpu\.py$"),
    "postgresql": re.compile(r"(^|/)test_history_\w+\.py$"),
    "examples": re.compile(r"(^|/)test_(docs|readme_commands|check_command)\.py$"),
    "reduction run": re.compile(r"(^|/)test_(reduction_pages|writeup_side_by_side)\.py$"),
    "fixture reports": re.compile(
        r"(^|/)test_(findings_claims|findings_prose|findings_coalescing|zoo_pages|pages_set"
        r"|profile_metrics_raw|roofline|sass_hotspots)\.py$"),
}


# The groups that take longest, handed out first so that no worker is left running one of
# them alone at the end; the others follow, most tests first.
LONG_GROUPS = ("fixture reports", "examples", "tests/test_details_page.py", "tests/test_fuzz.py",
               "tests/test_signals.py", "tests/test_diff_fixture.py", "postgresql",
               "tests/test_data_not_code.py")


def worker_group(nodeid: str) -> str:
    """The group of a test that pytest-xdist keeps on one worker: a group of WORKER_GROUPS,
    else the test's module."""
    module = nodeid.split("::")[0]
    return next((name for name, pattern in WORKER_GROUPS.items() if pattern.search(module)),
                module)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadgroup` by `worker_group`. xdist's own loadgroup reads marks through node
    ids that pytest 9.2 no longer lets a plugin rename (pytest-xdist issue 1386); a scope
    scheduler that groups by node id works on every pytest."""
    # every distributing mode keeps the groups (above all: GPU tests never share a GPU)
    if config.getvalue("dist") in ("no", "each", None):
        return None
    from xdist.scheduler import LoadScopeScheduling

    if not all(hasattr(LoadScopeScheduling, name)
               for name in ("_split_scope", "_assign_work_unit")):
        raise pytest.UsageError("this pytest-xdist has no scope scheduler to group tests by: "
                                "run with -n0, or install pytest-xdist<3.9")

    class GroupScheduling(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            if not self.ordered:  # the queue is whole by the first hand-out
                self.ordered = True
                units = sorted(self.workqueue.items(), key=lambda unit: (
                    LONG_GROUPS.index(unit[0]) if unit[0] in LONG_GROUPS else len(LONG_GROUPS),
                    -len(unit[1])))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return GroupScheduling(config, log)


# (node id, marked gpu) of every test collected, for tests/test_suite_hygiene.py
COLLECTED = pytest.StashKey[list[tuple[str, bool]]]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    config.stash[COLLECTED] = [(item.nodeid, item.get_closest_marker("gpu") is not None)
                               for item in items]
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    for item in gpu_items:
        item.add_marker(pytest.mark.skip(reason=f"gpu test: {reason}"))


@pytest.fixture
def naive_smem_report() -> Path:
    return NAIVE_SMEM_REPORT


def interrupt_when_written(path: Path, words: int) -> threading.Thread:
    """Send this process SIGINT (Ctrl-C) once `path` holds `words` words (the pids a child
    wrote when it was up), from a thread started here: the interrupt comes when the children
    are there, however slowly they started."""

    def wait_then_interrupt() -> None:
        for _ in range(60_000):  # a minute at most: a child that never writes fails the test
            if path.is_file() and len(path.read_text().split()) >= words:
                break
            time.sleep(0.001)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=wait_then_interrupt, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def ctrl_c_raises() -> Iterator[Callable[[Path, int], threading.Thread]]:
    """Ctrl-C (SIGINT) raises KeyboardInterrupt during the test, as in a terminal, even where
    the suite was started with SIGINT ignored (a shell's background job: Python then leaves it
    ignored). Gives `interrupt_when_written`."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield interrupt_when_written
    finally:  # None: a handler not set from Python, which cannot be put back
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
