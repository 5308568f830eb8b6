"""Shared pieces of the history tests: a real PostgreSQL server, stores, recorded runs, the
command run in-process.

`pg_server` starts Debian's PostgreSQL (initdb + pg_ctl) in a temporary directory on a free
loopback port, as the postgres user when the tests run as root; where it cannot start, the
PostgreSQL half of every store-parametrized test skips with the reason. `store_url` gives
each test an empty store of either kind. Runs are built from the committed H100 fixture
reports and read once per test process: re-recording a read run at other commits is how a
history is replayed (the same run at another commit is another entry).
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import itertools
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result
from conftest import FIXTURES, run_folder
from packed_fixtures import H100_PAGES_NAIVE, report

from harness.cli import main
from harness.history.record import RunRecord, read_run
from harness.history.vcs import CI_VARIABLES

REGISTER_TILED = report(FIXTURES / "h100_full_register_tiled_1024.ncu-rep")
SMEM_TILED = report(FIXTURES / "h100_full_smem_tiled_1024.ncu-rep")
NAIVE_PAGES = H100_PAGES_NAIVE  # the quickest report to read
SIZE = [1024, 1024, 1024]
H100_ENV = {"gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
            "driver": "580.159.04", "ncu_version": "2025.3.1"}
H200_ENV = {**H100_ENV, "gpu": "NVIDIA H200"}


# no CI system's variables leak in from the machine running the tests
CLEAN_ENV = {name: "" for pair in CI_VARIABLES for name in pair} | {
    "NCUH_HISTORY": "", "GITHUB_HEAD_REF": ""}


def ncuh(*args: object, env: dict[str, str] | None = None) -> Result:
    """`ncuh ARGS` in this process, with no CI variable or NCUH_HISTORY from outside."""
    return CliRunner().invoke(main, [str(a) for a in args], env={**CLEAN_ENV, **(env or {})})


def one_error_line(result: Result) -> str:
    """The one `ncuh: error:` line of a refused command (exit 2, no traceback)."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ncuh: error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def sha(n: int) -> str:
    """A commit SHA of its own for run n (n < 256): 0101..., 0202..., ..."""
    return f"{n:02x}" * 20


def samples(median_ms: float, noise: float, seed: int, n: int = 30) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(x) for x in median_ms * (1.0 + noise * rng.standard_normal(n))]


def write_run(root: Path, name: str, report: Path, bench: list[float] | None,
              variant: str = "gemm", environment: dict[str, Any] | None = None,
              project: str | None = "sgemm", error: str | None = None) -> Path:
    """A run directory of one entry (a copy of `report` as `variant`) with bench samples;
    with `error`, the entry failed and has no report."""
    run = root / name
    run.mkdir(parents=True)
    label = f"{variant}_1024"
    entry = {"label": label, "variant": variant, "size": SIZE, "params": {},
             "report": f"{label}.ncu-rep", "status": "ok", "error": None}
    if error is None:
        shutil.copyfile(report, run / f"{label}.ncu-rep")
    else:
        entry.update(report=None, status="failed", error=error)
    env = dict(environment or H100_ENV)
    manifest: dict[str, Any] = {
        "schema": "ncuh.run/1", "ncuh_version": "0.1.0", "git_commit": None,
        "environment": env, "ncu": {"set": "full"}, "started_at": "2026-11-21T00:00:00Z",
        "finished_at": "2026-11-21T00:01:00Z",
        "entries": [entry]}
    if project is not None:
        manifest["project"] = {"name": project}
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    if bench:
        (run / "bench.json").write_text(json.dumps({
            "schema": "ncuh.bench/1", "ncuh_version": "0.1.0",
            "created_at": "2026-11-21T00:00:00Z", "environment": env,
            "settings": {"repeats": len(bench), "warmup": 5, "l2_flush": True, "alpha": 1.0,
                         "beta": 0.0},
            "results": [{"variant": variant, "size": SIZE, "params": {}, "samples_ms": bench,
                         "median_ms": float(np.median(bench)), "status": "ok",
                         "error": None}]}), encoding="utf-8")
    return run


_READ: dict[tuple[str, str], RunRecord] = {}


def recorded(kind: str, gpu: str = "h100") -> RunRecord:
    """A real run read once: "base" (register_tiled, bench median 0.300 ms) or "slower"
    (the change rewrote it as smem_tiled, and its bench samples are 6% slower)."""
    key = (kind, gpu)
    if key not in _READ:
        root = Path(tempfile.mkdtemp(prefix="history-runs-", dir=run_folder()))
        report = REGISTER_TILED if kind == "base" else SMEM_TILED
        env = H100_ENV if gpu == "h100" else H200_ENV
        median = 0.30 if kind == "base" else 0.318
        _READ[key] = read_run(write_run(root, f"{kind}-{gpu}", report,
                                        samples(median, 0.01, seed=1), environment=env))
    return _READ[key]


_salt = itertools.count()


def with_samples(record: RunRecord, bench: list[float]) -> RunRecord:
    """The run with other bench samples (and so another fingerprint)."""
    kernels = tuple(replace(k, samples_ms=tuple(bench)) for k in record.kernels)
    return replace(record, kernels=kernels,
                   fingerprint=f"{record.fingerprint[:40]}{next(_salt):024d}")


def engine_of(store_url: str) -> Any:
    """A plain SQLAlchemy engine on a store, to change it as someone else would."""
    from sqlalchemy import create_engine

    if "://" not in store_url:
        return create_engine(f"sqlite:///{store_url}")
    return create_engine(store_url.replace("postgresql://", "postgresql+psycopg://", 1))


def execute(store_url: str, *statements: str, **values: Any) -> None:
    """Run SQL statements (with `values` bound by name) on a store, in one transaction."""
    from sqlalchemy import text

    engine = engine_of(store_url)
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(text(statement), values)
    engine.dispose()


# --- PostgreSQL ------------------------------------------------------------------------------


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_postgres(command: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root
    if os.geteuid() == 0 and shutil.which("runuser"):
        return ["runuser", "-u", "postgres", "--", *command]
    return command


def _memory_folder() -> str | None:
    """/dev/shm where it is a writable tmpfs with room for a few hundred databases: a server
    there creates a database many times faster than on a busy disk, and its
    folder is removed at once; elsewhere, the temporary folder."""
    try:
        stat = os.statvfs("/dev/shm")
    except OSError:
        return None
    room = stat.f_bavail * stat.f_frsize
    return "/dev/shm" if room >= 4 << 30 and os.access("/dev/shm", os.W_OK) else None


@contextlib.contextmanager
def postgres_server() -> Iterator[str | None]:
    """A fresh server; yields its base URL (no database), or None with a reason printed."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        yield None
        return
    root = Path(tempfile.mkdtemp(prefix="ncuh-pg-", dir=_memory_folder()))
    data = root / "data"
    port = _free_port()
    url: str | None = None
    try:
        if os.geteuid() == 0:
            shutil.chown(root, "postgres")  # LookupError: no postgres user to run it as
        subprocess.run(_as_postgres([initdb, "-D", str(data), "-U", "ncuh", "-A", "trust",
                                     "--no-sync", "-E", "UTF8"]),
                       check=True, capture_output=True, timeout=120)
        subprocess.run(_as_postgres([pg_ctl, "-D", str(data), "-l", str(root / "log"), "-w",
                                     "-t", "60", "-o",
                                     f"-p {port} -k {root} -h 127.0.0.1 -F",
                                     "start"]), check=True, capture_output=True, timeout=90)
        url = f"postgresql://ncuh@127.0.0.1:{port}"
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError, LookupError):
        url = None
    try:
        yield url
    finally:
        if url is not None:
            subprocess.run(_as_postgres([pg_ctl, "-D", str(data), "-m", "immediate", "-w",
                                         "stop"]), capture_output=True, timeout=60, check=False)
        shutil.rmtree(root, ignore_errors=True)


_server: list[str | None] = []  # the one server of this test process, started on first use


def _shared_server() -> str | None:
    """One PostgreSQL server for the whole test process, stopped when the process exits."""
    if not _server:
        context = postgres_server()
        _server.append(context.__enter__())
        atexit.register(context.__exit__, None, None, None)
    return _server[0]


@pytest.fixture(scope="module", name="pg_server")
def pg_server_fixture() -> str | None:
    pytest.importorskip("psycopg", reason="psycopg (the postgresql extra) is not installed")
    return _shared_server()


_databases = itertools.count()


def new_database(server: str) -> str:
    import psycopg

    name = f"h{os.getpid()}_{next(_databases)}_{int(time.time() * 1000) % 100000}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{server}/{name}"


@pytest.fixture(params=["sqlite", "postgresql"], name="store_url")
def store_url_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty store of each kind: an SQLite file path, or a PostgreSQL database URL."""
    if request.param == "sqlite":
        return str(tmp_path / ".ncuh" / "history.sqlite")
    server = request.getfixturevalue("pg_server")
    if server is None:
        pytest.skip("PostgreSQL could not start here (initdb/pg_ctl missing or failing)")
    return new_database(server)
