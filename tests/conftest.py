"""Shared test setup: fixture paths, clean skips for tests marked `gpu`, golden files, the
order modules are handed out in, and one GPU test at a time.

Prose (findings, pages, verdicts) is pinned in tests/golden/<module>/<name>.txt through the
`golden` fixture. After an intended change of wording, rewrite them with
`pytest --update-golden` (or NCUH_UPDATE_GOLDEN=1) and review the diff.

The suite runs on every core (`-n auto --dist loadfile --no-loadscope-reorder` in
pyproject.toml): a module's tests run on one worker, so its module-scoped fixtures (a Slurm
cluster, a browser's pages) are made once; a committed report's model is read once per test
run and shared through the run's folder (`packed_fixtures.cached_profiles`); and modules are
handed out in the order collected, the longest first (`FIRST_MODULES`).
Tests marked `gpu` hold a lock of the test run while they run, so on a GPU machine they run one
after the other, on whichever worker, and never share the GPU. `-n 0` runs everything in one
process.
"""

from __future__ import annotations

import atexit
import compileall
import contextlib
import fcntl
import functools
import gc
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = Path(__file__).parent / "golden"
RUN_FOLDER_ENV = "NCUH_TEST_RUN_DIR"  # the folder one test run's processes share

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
    # folder of its own, which its xdist workers (started with the environment set here)
    # share: the cache folder, and the lock the GPU tests take turns on. Tests that need
    # another cache folder set NCUH_CACHE_DIR themselves.
    if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(RUN_FOLDER_ENV):
        # Registered before the tests run, so it runs after every exit handler they register
        # (the PostgreSQL server's stop, unpacked folders removed, pools ended).
        atexit.register(_end_worker_at_once)
        return
    folder = tempfile.mkdtemp(prefix="ncuh-test-run-")
    config.add_cleanup(functools.partial(shutil.rmtree, folder, True))
    # Bytecode for every module of the checkout, written once before any worker starts (on a
    # fresh clone it is not there yet): else each worker, and each `ncuh` process the tests
    # start before them, compiles what it imports, and where the environment turns bytecode
    # off (PYTHONDONTWRITEBYTECODE) a process of a module no worker imports does every time.
    compileall.compile_dir(ROOT / "harness", quiet=2)
    # the tests' helpers (pytest compiles the test modules themselves, asserts rewritten)
    compileall.compile_dir(Path(__file__).parent, maxlevels=0, quiet=2,
                           rx=re.compile(r"test_[^/\\]*\.py$"))
    # The stand-in programs (tests/standins: `#!/usr/bin/env -S python3 -S`) run on this test
    # interpreter, not on whatever `python3` comes first on PATH (a version manager's shim
    # starts a few shells before the interpreter, on each of their calls); nothing else on
    # PATH changes.
    interpreter = os.path.join(folder, "bin")
    os.mkdir(interpreter)
    os.symlink(sys.executable, os.path.join(interpreter, "python3"))
    os.environ["PATH"] = os.pathsep.join([interpreter, os.environ.get("PATH", "")])
    os.environ[RUN_FOLDER_ENV] = folder
    os.environ["NCUH_CACHE_DIR"] = os.path.join(folder, "cache")
    # Where the suite's own xdist workers keep every core busy, a command it runs starts no
    # workers of its own (plot workers warming up matplotlib, an export in parts that each
    # open the report), as on a one-core machine; the tests of that parallel work ask for
    # cores of their own. A run in one process (`-n 0`, the GPU suite) leaves it be.
    if getattr(config.option, "numprocesses", None):
        os.environ.setdefault("NCUH_JOBS", "1")


def pytest_collection_finish() -> None:
    # A test process comes to hold gigabytes of report models and pages made by the tests,
    # most of them kept to the end: the collector's passes over them (a young generation every
    # 700 allocations, by default) free next to nothing. What collection made is set aside
    # for good, and the young generation is collected every 50,000 allocations.
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, *gc.get_threshold()[1:])


def pytest_unconfigure() -> None:
    # Before pytest's last collection (its check for exceptions raised while objects are freed):
    # a worker that ends without freeing its heap (`_end_worker_at_once`) has no use for a
    # collection that would walk gigabytes of models to free next to nothing.
    if _ends_at_once():
        gc.freeze()


def _ends_at_once() -> bool:
    """Whether this process is an xdist worker of a test run that ends with `os._exit`: not
    under coverage, which saves its data in an exit handler."""
    return bool(os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(RUN_FOLDER_ENV)
                and "coverage" not in sys.modules
                and not os.environ.get("COVERAGE_PROCESS_START"))


def _end_worker_at_once() -> None:
    """An xdist worker's last exit handler: its results are sent and the exit handlers the
    tests registered have run, so it ends without freeing its heap object by object, which
    the whole run would wait for (gigabytes once it has read every report: ncu_report keeps
    what it read). Handlers registered before the tests ran would be skipped: logging's is
    run here, and under coverage, which saves its data in one, the worker exits normally."""
    if not _ends_at_once():
        return
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_folder() -> Path:
    """The folder this test run's processes share; outside a test run (a benchmark that uses the
    test helpers), one of this process's own, removed when it exits."""
    if RUN_FOLDER_ENV not in os.environ:
        folder = tempfile.mkdtemp(prefix="ncuh-test-run-")
        atexit.register(shutil.rmtree, folder, True)
        os.environ[RUN_FOLDER_ENV] = folder
    return Path(os.environ[RUN_FOLDER_ENV])


@contextlib.contextmanager
def gpu_turn() -> Iterator[None]:
    """Holds the test run's GPU lock: one GPU test at a time, whichever worker runs it."""
    with (run_folder() / "gpu.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    # the whole protocol: a module's fixtures are set up and torn down within its tests' turns
    if item.get_closest_marker("gpu") is None:
        return (yield)
    with gpu_turn():
        return (yield)


# The modules that read most of the committed reports (`packed_fixtures.cached_profiles`).
REPORT_READERS = (
    "tests/test_findings_oracle.py",
    "tests/test_findings_claims.py",
    "tests/test_page_metrics.py",
    "tests/test_profile_metrics_raw.py",
    "tests/test_zoo_pages.py",
    "tests/test_pages_set.py",
    "tests/test_findings_coalescing.py",
    "tests/test_findings_prose.py",
    "tests/test_roofline.py",
    "tests/test_sass_hotspots.py",
)

# Test modules handed out first, longest first, so that no worker is left running one of them
# alone at the end (the report readers lead); the others follow in the order collected.
FIRST_MODULES = (
    *REPORT_READERS,
    "tests/test_details_page.py",
    "tests/test_fuzz.py",
    "tests/test_signals.py",
    "tests/test_check_command.py",
    "tests/test_profile_cpu.py",
    "tests/test_diff_bad_input.py",
    "tests/test_data_not_code.py",
    "tests/test_read_cache.py",
    "tests/test_profile_worker.py",
    "tests/test_head_start.py",
    "tests/test_docs.py",
)


def _module_rank(item: pytest.Item) -> int:
    module = item.nodeid.split("::")[0]
    return FIRST_MODULES.index(module) if module in FIRST_MODULES else len(FIRST_MODULES)


# (node id, marked gpu) of every test collected, for tests/test_suite_hygiene.py
COLLECTED = pytest.StashKey[list[tuple[str, bool]]]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_module_rank)  # stable: a module's tests keep their order
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


def interrupt_when_written(path: Path, words: int, held: int = 1) -> threading.Thread:
    """Send this process SIGINT (Ctrl-C) once `path` holds `words` words (the pids children
    wrote when they were up) and ncuh holds `held` children as running, from a thread started
    here: the interrupt comes when the children are there, however slowly they started. (An
    interrupt inside CPython's `Popen` before it returns the child is not what it tests.)"""
    from harness.profile import processes

    def wait_then_interrupt() -> None:
        for _ in range(60_000):  # a minute at most: a child that never writes fails the test
            if (path.is_file() and len(path.read_text().split()) >= words
                    and len(processes._RUNNING) >= held):
                break
            time.sleep(0.001)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=wait_then_interrupt, daemon=True)
    thread.start()
    return thread


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie is dead for our purpose)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def still_running(pids: Sequence[int]) -> list[int]:
    """Those of `pids` still running after they were stopped, waited for up to a minute: a
    bound only a child that is never killed reaches."""
    deadline = time.monotonic() + 60
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


@pytest.fixture
def ctrl_c_raises() -> Iterator[Callable[..., threading.Thread]]:
    """Ctrl-C (SIGINT) raises KeyboardInterrupt during the test, as in a terminal, even where
    the suite was started with SIGINT ignored (a shell's background job: Python then leaves it
    ignored). Gives `interrupt_when_written`."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield interrupt_when_written
    finally:  # None: a handler not set from Python, which cannot be put back
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
