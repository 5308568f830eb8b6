"""The history store on SQLite and on a real PostgreSQL: entries, versions, projects, failures."""

from __future__ import annotations

import pickle
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from history_support import (  # noqa: F401  (the pg_server and store_url fixtures)
    engine_of,
    pg_server_fixture,
    recorded,
    samples,
    sha,
    store_url_fixture,
    with_samples,
)
from sqlalchemy import text

from harness.diff.thresholds import NCU_DURATION
from harness.history import HistoryError, open_store
from harness.history import tables as history_tables


def test_a_run_keeps_its_kernels_metrics_rules_and_samples(store_url: str) -> None:
    record = recorded("base")
    store = open_store(store_url, create=True)
    outcome = store.add(record, sha(1), "main", "nightly")
    assert outcome.status == "added"
    (run,) = store.runs()
    assert (run.commit, run.branch, run.tag, run.project) == (sha(1), "main", "nightly", "sgemm")
    assert run.gpu == "NVIDIA H100 80GB HBM3"
    (kernel,) = run.kernels
    (original,) = record.kernels
    assert kernel.name == "gemm" and kernel.size == (1024, 1024, 1024)
    assert kernel.function == "sgemm_register_tiled"
    # ncu's own duration of the fixture, kept exactly
    assert kernel.metrics[NCU_DURATION] == 316192.0
    assert kernel.metrics == original.metrics
    assert kernel.samples_ms == original.samples_ms and len(kernel.samples_ms) == 30
    assert kernel.rules == original.rules
    # a subset, not the whole report (2208 metrics)
    assert 40 < len(kernel.metrics) < 200
    store.close()


def test_the_same_run_at_the_same_commit_twice_changes_nothing(store_url: str) -> None:
    store = open_store(store_url, create=True)
    record = recorded("base")
    first = store.add(record, sha(1))
    again = store.add(record, sha(1))
    assert (first.status, again.status) == ("added", "present")
    assert again.run_id == first.run_id
    assert store.count() == 1
    other = store.add(record, sha(2))  # the same run at another commit: another entry
    assert other.status == "added" and store.count() == 2
    assert [r.commit for r in store.runs()] == [sha(1), sha(2)]
    store.close()


def test_a_run_of_another_project_is_refused(store_url: str, tmp_path: Path) -> None:
    store = open_store(store_url, create=True)
    store.add(recorded("base"), sha(1))
    stranger = replace(recorded("base"), project="reduction", fingerprint="f" * 64)
    with pytest.raises(HistoryError, match=r"a run of project 'reduction', but history store "
                                           r".* belongs to project 'sgemm'"):
        store.add(stranger, sha(2))
    assert store.count() == 1
    store.close()


def test_an_interrupted_add_leaves_the_store_as_it_was(store_url: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(store_url, create=True)
    store.add(recorded("base"), sha(1))
    broken = with_samples(recorded("base"), samples(0.3, 0.01, seed=9))

    def interrupted(self: object) -> bytes:
        raise KeyboardInterrupt  # after the run's row was written, before its kernels

    monkeypatch.setattr(type(broken.kernels[0]), "payload", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.add(broken, sha(2))
    monkeypatch.undo()
    assert [r.commit for r in store.runs()] == [sha(1)]
    assert store.add(broken, sha(2)).status == "added"  # nothing half-written in its way
    store.close()


def test_a_newer_schema_is_refused_and_an_unknown_older_one_too(store_url: str) -> None:
    store = open_store(store_url, create=True)
    store.add(recorded("base"), sha(1))
    with store.engine.begin() as conn:
        conn.execute(text(f"UPDATE {history_tables.schema_version.name} SET version = 99"))
    store.close()
    with pytest.raises(HistoryError, match="schema version 99 is newer than this ncuh's "
                                           r"\(1\); upgrade ncuh"):
        open_store(store_url)
    reopened_engine = engine_of(store_url)
    with reopened_engine.begin() as conn:
        conn.execute(text(f"UPDATE {history_tables.schema_version.name} SET version = 0"))
    reopened_engine.dispose()
    with pytest.raises(HistoryError, match="schema version 0 cannot be migrated to 1"):
        open_store(store_url)


def test_an_empty_database_is_not_a_store_until_a_run_is_added(store_url: str) -> None:
    if "://" not in store_url:
        with pytest.raises(HistoryError, match=r"no history store at .*history\.sqlite "
                                               r"\(`ncuh history add` creates one\)"):
            open_store(store_url)
    else:
        with pytest.raises(HistoryError, match="holds no ncuh history yet"):
            open_store(store_url)
    opened = open_store(store_url, create=True)  # opening makes nothing: the first add does
    assert (opened.count(), opened.runs(), opened.project()) == (0, [], None)
    opened.close()
    if "://" not in store_url:
        assert not Path(store_url).exists() and not Path(store_url).parent.exists()
    else:
        with pytest.raises(HistoryError, match="holds no ncuh history yet"):
            open_store(store_url)
    opened = open_store(store_url, create=True)
    opened.add(recorded("base"), sha(1))
    opened.close()
    assert open_store(store_url).count() == 1  # now it is one


def test_concurrent_adds_from_two_processes_lose_nothing(store_url: str, tmp_path: Path) -> None:
    # each process creates the store (both at once: one makes the tables, the other finds
    # them) and records its own run at five commits; the runs are read here (once) and handed
    # over pickled, so the processes spend their time writing
    handed = []
    for n in range(2):
        path = tmp_path / f"run{n}.pickle"
        path.write_bytes(pickle.dumps(with_samples(recorded("base"), samples(0.3, 0.01, n))))
        handed.append(path)
    script = ("import pickle, sys\n"
              "from pathlib import Path\n"
              "from harness.history import open_store\n"
              "record = pickle.loads(Path(sys.argv[2]).read_bytes())\n"
              "store = open_store(sys.argv[1], create=True)\n"
              "for i in range(5):\n"
              "    assert store.add(record, f'{sys.argv[3]}{i}').status == 'added'\n")
    workers = [subprocess.Popen([sys.executable, "-c", script, store_url, str(path), f"c{n}-"],
                                stderr=subprocess.PIPE, text=True)
               for n, path in enumerate(handed)]
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
    store = open_store(store_url)
    assert sorted(r.commit for r in store.runs()) == [f"c{n}-{i}" for n in (0, 1)
                                                      for i in range(5)]
    assert all(len(r.kernels) == 1 for r in store.runs())
    store.close()


def test_a_corrupt_sqlite_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    path.write_bytes(b"this is not a database, just bytes " * 100)
    with pytest.raises(HistoryError, match=r"history store .*history\.sqlite: file is not a "
                                           "database"):
        open_store(path)
    assert path.read_bytes() == b"this is not a database, just bytes " * 100


def test_an_unreachable_database_is_one_line() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(HistoryError, match=rf"history store postgresql://ncuh@127\.0\.0\.1:"
                                           rf"{port}/none: .*"):
        open_store(f"postgresql://ncuh@127.0.0.1:{port}/none")


def test_the_same_run_added_by_two_processes_at_once_is_one_entry(store_url: str,
                                                                  tmp_path: Path) -> None:
    path = tmp_path / "run.pickle"
    path.write_bytes(pickle.dumps(with_samples(recorded("base"), samples(0.3, 0.01, 7))))
    script = ("import pickle, sys\n"
              "from pathlib import Path\n"
              "from harness.history import open_store\n"
              "record = pickle.loads(Path(sys.argv[2]).read_bytes())\n"
              "store = open_store(sys.argv[1], create=True)\n"
              "print(' '.join(store.add(record, f'c{i}').status for i in range(5)))\n")
    workers = [subprocess.Popen([sys.executable, "-c", script, store_url, str(path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]
    statuses = []
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        statuses += out.split()
    # each commit's entry was made once; the other process found it (or raced and lost)
    assert sorted(statuses) == ["added"] * 5 + ["present"] * 5
    store = open_store(store_url)
    assert sorted(r.commit for r in store.runs()) == [f"c{i}" for i in range(5)]
    store.close()


def test_a_reader_is_not_held_up_by_a_writer_in_its_transaction(store_url: str) -> None:
    writer = open_store(store_url, create=True)
    writer.add(recorded("base"), sha(1))
    reader = open_store(store_url)
    with writer._transaction(write=True) as conn:  # holds the write lock (SQLite)
        conn.execute(text(f"DELETE FROM {history_tables.kernels.name}"))
        # the reader sees the store as it was before the writer's uncommitted change
        (run,) = reader.runs()
        assert len(run.kernels) == 1
        conn.rollback()
    reader.close()
    writer.close()
