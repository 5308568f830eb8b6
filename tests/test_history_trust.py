"""The history store read as carefully as a report, on SQLite and on a real PostgreSQL.

A damaged store is one line naming the store, the run and the field (exit 2), for `show` and
for `check`; a database that is not ncuh's, or an empty file, is never written, its journal
mode untouched; a refused `add` leaves no new file and no new table. These pin the store's
documented promises beside `test_history_store.py` (an interrupted add, concurrent writers):
nothing is written when a command fails.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

import pytest
from history_support import (  # noqa: F401  (the pg_server and store_url fixtures)
    NAIVE_PAGES,
    execute,
    ncuh,
    one_error_line,
    pg_server_fixture,
    recorded,
    samples,
    sha,
    store_url_fixture,
    with_samples,
    write_run,
)

from harness.history import open_store
from harness.history.rows import MAX_PAYLOAD_PLAIN_BYTES


def _payload(**changes: object) -> bytes:
    """The recorded kernel's payload as `add` writes it, with `changes` (None: key left out)."""
    (kernel,) = recorded("base").kernels
    data = json.loads(zlib.decompress(kernel.payload()))
    for key, value in changes.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    return zlib.compress(json.dumps(data).encode())


def _bomb() -> bytes:
    """A payload that inflates past the bound: 70 MB of JSON packed into about 70 KB."""
    packer = zlib.compressobj(9)
    chunk = b" " * (1024 * 1024)
    body = b"".join(packer.compress(chunk) for _ in range(MAX_PAYLOAD_PLAIN_BYTES // len(chunk)
                                                          + 6))
    return packer.compress(b'{"a": [') + body + packer.compress(b"]}") + packer.flush()


@pytest.fixture(name="store")
def filled_store(store_url: str) -> str:
    """A store of two real runs (commits 1 and 2), the second the newest."""
    opened = open_store(store_url, create=True)
    for n in (1, 2):
        opened.add(with_samples(recorded("base"), samples(0.30, 0.01, seed=n)), sha(n), "main")
    opened.close()
    return store_url


def _name(store_url: str) -> str:
    return open_store(store_url).name


def _to_text(store_url: str, table: str, column: str) -> str:
    """SQL that lets a PostgreSQL column hold any text (SQLite's columns already do)."""
    if "://" not in store_url:
        return "SELECT 1"
    return f"ALTER TABLE {table} ALTER COLUMN {column} TYPE text USING {column}::text"


# (case, what it breaks, SQL, bound values, what the one line says)
DAMAGE = [
    ("payload not zlib", "UPDATE ncuh_kernels SET payload = :v", {"v": b"\x01\x02\x03"},
     "kernel row 1: payload: not zlib data"),
    ("payload without its keys", "UPDATE ncuh_kernels SET payload = :v",
     {"v": _payload(metrics=None)}, "kernel row 1: payload: no metrics"),
    ("payload not an object", "UPDATE ncuh_kernels SET payload = :v",
     {"v": zlib.compress(b"[1, 2]")}, "kernel row 1: payload: not a JSON object"),
    ("metric values that are strings", "UPDATE ncuh_kernels SET payload = :v",
     {"v": _payload(metrics={"gpu__time_duration.sum": "316192.0"})},
     "payload metrics['gpu__time_duration.sum']: the text '316192.0', not a number"),
    ("samples that are strings", "UPDATE ncuh_kernels SET payload = :v",
     {"v": _payload(samples_ms=["0.3"])},
     "payload samples_ms[0]: the text '0.3', not a number"),
    ("a rule without its title", "UPDATE ncuh_kernels SET payload = :v",
     {"v": _payload(rules=[{"name": "r", "type": "OPT"}])},
     "payload rules[0].title: nothing, not text"),
    ("a zlib bomb", "UPDATE ncuh_kernels SET payload = :v", {"v": _bomb()},
     f"payload: not zlib data of at most {MAX_PAYLOAD_PLAIN_BYTES:,} bytes"),
    ("failed not JSON", "UPDATE ncuh_runs SET failed = 'nope'", {},
     "run 1: failed: not valid JSON"),
    ("a failed entry of another shape", "UPDATE ncuh_runs SET failed = :v",
     {"v": '[{"label": 7, "key": {"name": "g", "size": null, "ordinal": 0}, "error": "x"}]'},
     "run 1: failed[0].label: an int, not text"),
    ("a size like axb", "UPDATE ncuh_kernels SET size = 'axb'", {},
     "kernel row 1: size: 'axb' is not a size like 1024x1024x1024"),
    ("a negative ordinal", "UPDATE ncuh_kernels SET ordinal = -1", {},
     "kernel row 1: ordinal: an int, not a whole number from 0 to 2^31"),
    ("an empty commit", "UPDATE ncuh_runs SET commit_sha = ''", {}, "run 1: commit_sha: empty"),
]


@pytest.mark.parametrize(("case", "statement", "values", "says"), DAMAGE,
                         ids=[case[0] for case in DAMAGE])
def test_a_damaged_value_is_one_line_naming_the_store_the_run_and_the_field(
        store: str, case: str, statement: str, values: dict[str, object], says: str,
        tmp_path: Path) -> None:
    name = _name(store)
    execute(store, statement, **values)
    for command in (("show", "--out", tmp_path / "pages"), ("check",)):
        line = one_error_line(ncuh("history", *command, "--store", store))
        assert line.startswith(f"ncuh: error: history store {name} is damaged: run 1")
        assert line.endswith(says) or says in line, line
    assert not (tmp_path / "pages").exists()


def test_a_value_too_long_to_be_ncuhs_is_cut_by_the_database_and_refused(
        store: str, tmp_path: Path) -> None:
    """A 1 MB kernel name, or a 1 MB GPU name: read no further than the bound, one line."""
    execute(store, _to_text(store, "ncuh_kernels", "name"),
            _to_text(store, "ncuh_runs", "gpu"))
    execute(store, "UPDATE ncuh_kernels SET name = :v WHERE id = 2", v="k" * 1_000_000)
    line = one_error_line(ncuh("history", "show", "--store", store, "--out", tmp_path / "p"))
    assert line.endswith("kernel row 2: name: 513 characters (at most 512)")
    execute(store, "UPDATE ncuh_kernels SET name = 'gemm'",
            "UPDATE ncuh_runs SET gpu = :v WHERE id = 1", v="G" * 1_000_000)
    line = one_error_line(ncuh("history", "check", "--store", store))
    assert line.endswith("run 1: gpu: 256 characters (at most 255)")


def test_a_schema_version_stored_as_text_or_missing_is_one_line(store: str, tmp_path: Path,
                                                               golden) -> None:
    name = _name(store)
    if "://" in store:
        execute(store, _to_text(store, "ncuh_schema_version", "version"),
                "UPDATE ncuh_schema_version SET version = '1'")
    else:
        execute(store, "DROP TABLE ncuh_schema_version",
                "CREATE TABLE ncuh_schema_version (version TEXT)",
                "INSERT INTO ncuh_schema_version VALUES ('1')")
    run = write_run(tmp_path, "run", NAIVE_PAGES, None)
    for command in (("check",), ("add", run, "--commit", "c9")):
        line = one_error_line(ncuh("history", *command, "--store", store))
        golden("schema_version_as_text", line.replace(name, "STORE"))
    execute(store, "DELETE FROM ncuh_schema_version")
    assert one_error_line(ncuh("history", "check", "--store", store)).endswith(
        "its schema version is missing")


def test_a_stored_project_of_another_kind_is_one_line(store: str, tmp_path: Path) -> None:
    execute(store, "UPDATE ncuh_store_info SET value = :v", v="p" * 300)
    run = write_run(tmp_path, "run", NAIVE_PAGES, None)
    line = one_error_line(ncuh("history", "add", run, "--commit", "c9", "--store", store))
    assert line.endswith("ncuh_store_info: project: 300 characters (at most 255)")
    assert open_store(store).count() == 2


# --- a store that is not ncuh's ----------------------------------------------------------------


def _named(root: Path, name: str, variant: str) -> Path:
    """A real run whose one entry's variant is `variant` (its report keeps a short name)."""
    run = write_run(root, name, NAIVE_PAGES, None)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    manifest["entries"][0]["variant"] = variant
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return run


def _folder_state(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.parent.iterdir()}


def test_a_foreign_sqlite_database_is_refused_and_never_written(tmp_path: Path,
                                                                golden) -> None:
    (tmp_path / "db").mkdir()
    path = tmp_path / "db" / "notes.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.close()
    before = _folder_state(path)
    run = write_run(tmp_path / "runs", "run", NAIVE_PAGES, None)
    for command in (("show", "--out", tmp_path / "pages"), ("check",),
                    ("add", run, "--commit", "c1")):
        line = one_error_line(ncuh("history", *command, "--store", path))
        golden("foreign_database", line.replace(str(path), "STORE"))
        assert _folder_state(path) == before  # no byte, no -wal, no -shm, no journal
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    conn.close()


def test_an_empty_file_is_read_as_no_history_and_left_empty(tmp_path: Path) -> None:
    (tmp_path / "db").mkdir()
    path = tmp_path / "db" / "history.sqlite"
    path.write_bytes(b"")
    for command in (("show", "--out", tmp_path / "pages"), ("check",)):
        line = one_error_line(ncuh("history", *command, "--store", path))
        assert line.endswith(f"history store {path}: holds no ncuh history yet (`ncuh history "
                             "add` records runs)")
        assert _folder_state(path) == {"history.sqlite": b""}
    run = write_run(tmp_path / "runs", "run", NAIVE_PAGES, None)
    assert ncuh("history", "add", run, "--commit", "c1", "--store", path).exit_code == 0
    assert open_store(path).count() == 1  # `add` makes the store there


def test_a_foreign_postgresql_database_is_refused_and_never_written(
        pg_server: str | None, tmp_path: Path, golden) -> None:
    if pg_server is None:
        pytest.skip("PostgreSQL could not start here (initdb/pg_ctl missing or failing)")
    from history_support import new_database
    from sqlalchemy import inspect

    url = new_database(pg_server)
    execute(url, "CREATE TABLE notes (text TEXT)", "INSERT INTO notes VALUES ('mine')")
    run = write_run(tmp_path, "run", NAIVE_PAGES, None)
    for command in (("show", "--out", tmp_path / "pages"), ("check",),
                    ("add", run, "--commit", "c1")):
        line = one_error_line(ncuh("history", *command, "--store", url))
        golden("foreign_database", line.replace(url, "STORE"))
    from history_support import engine_of

    engine = engine_of(url)
    assert inspect(engine).get_table_names() == ["notes"]
    engine.dispose()


# --- a refused command leaves nothing behind ---------------------------------------------------


def test_a_refused_add_leaves_no_new_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # not a git checkout: no commit is known
    store = tmp_path / "new" / ".ncuh" / "history.sqlite"
    good = write_run(tmp_path, "good", NAIVE_PAGES, None)
    no_run = tmp_path / "not-a-run"
    no_run.mkdir()
    long_name = _named(tmp_path, "long", "v" * 1_000_000)
    refusals = [
        ((good,), "no commit known for this run (not in a git checkout, no CI variables): "
                  "pass --commit"),
        ((good, no_run, "--commit", "c1"), "not-a-run: not a run directory (no manifest.json)"),
        ((long_name, "--commit", "c1"), "a kernel name of 1,000,000 characters (at most 512): "
                                        "'vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv...'"),
        ((good, "--commit", "c" * 65), "a --commit of 65 characters (at most 64): "),
    ]
    for args, says in refusals:
        line = one_error_line(ncuh("history", "add", *args, "--store", store))
        assert says in line, line
        assert not (tmp_path / "new").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good", "long", "not-a-run"]


def test_a_refused_add_changes_no_store(store_url: str, tmp_path: Path) -> None:
    """An empty database gets no table; a store, no run and no byte."""
    from history_support import engine_of
    from sqlalchemy import inspect

    long_name = _named(tmp_path, "long", "v" * 600)
    if "://" in store_url:
        line = one_error_line(ncuh("history", "add", long_name, "--commit", "c1",
                                   "--store", store_url))
        assert "a kernel name of 600 characters (at most 512)" in line
        engine = engine_of(store_url)
        assert inspect(engine).get_table_names() == []
        engine.dispose()
    good = write_run(tmp_path, "good", NAIVE_PAGES, None)
    other = write_run(tmp_path, "other", NAIVE_PAGES, None, project="reduction")
    assert ncuh("history", "add", good, "--commit", "c1", "--store", store_url).exit_code == 0
    before = Path(store_url).read_bytes() if "://" not in store_url else None
    for args in ((long_name, "--commit", "c2"), (other, "--commit", "c2"),
                 (good, other, "--commit", "c3")):
        one_error_line(ncuh("history", "add", *args, "--store", store_url))
    assert [r.commit for r in open_store(store_url).runs()] == ["c1"]
    if before is not None:
        assert Path(store_url).read_bytes() == before


# --- store URLs: passwords never shown, a malformed URL one line ------------------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_password_is_never_printed_where_the_store_fails(tmp_path: Path, golden) -> None:
    port = _closed_port()
    secret = "s3cret-Pw"
    for url in (f"postgresql://ncuh:{secret}@127.0.0.1:{port}/db",
                f"postgresql://ncuh@127.0.0.1:{port}/db?password={secret}",
                f"postgresql://ncuh@127.0.0.1:{port}/db?sslmode=disable&sslpassword={secret}",
                f"postgresql://ncuh:pa@{secret}@127.0.0.1:{port}/db"):
        for command in (("check",), ("show", "--out", tmp_path / "p")):
            result = ncuh("history", *command, "--store", url)
            line = one_error_line(result)
            assert secret not in result.output and "pa@" not in line, line
            assert "***" in line, line
        result = ncuh("history", "check", env={"NCUH_HISTORY": url})
        assert secret not in result.output and "***" in one_error_line(result)
    at_line = one_error_line(ncuh("history", "check", "--store",
                                  f"postgresql://ncuh:pa@{secret}@127.0.0.1:{port}/db"))
    golden("password_holding_an_at", at_line.replace(str(port), "PORT"))


def test_a_password_is_never_printed_where_the_store_works(pg_server: str | None,
                                                          tmp_path: Path) -> None:
    if pg_server is None:
        pytest.skip("PostgreSQL could not start here (initdb/pg_ctl missing or failing)")
    from history_support import new_database

    base = new_database(pg_server)  # trust authentication: any password is taken
    run = write_run(tmp_path, "run", NAIVE_PAGES, None)
    for n, url in enumerate((base.replace("ncuh@", "ncuh:s3cret-Pw@"),
                             f"{base}?password=s3cret-Pw")):
        result = ncuh("history", "add", run, "--commit", f"c{n}", "--store", url)
        assert result.exit_code == 0, result.output
        assert "s3cret-Pw" not in result.output and "***" in result.stdout
        checked = ncuh("history", "check", "--store", url)
        assert checked.exit_code == 0 and "s3cret-Pw" not in checked.output


@pytest.mark.parametrize(("url", "says"), [
    ("postgresql://ncuh@localhost:abc/db", "not a database URL (invalid literal for int() "
                                          "with base 10: 'abc')"),
    ("postgresql://ncuh@[::1/db", "not a database URL"),
    ("postgresql://ncuh@localhost:99999/db", "port 99999 is not from 1 to 65535"),
    ("postgresql://ncuh@localhost:0/db", "port 0 is not from 1 to 65535"),
    ("postgresql://ncuh:pw@localhost:abc/db?password=x1y2z3", "not a database URL"),
    ("mysql://ncuh@localhost/db", "mysql is not supported (an SQLite file or postgresql://)"),
])
def test_a_malformed_url_is_one_line(url: str, says: str) -> None:
    result = ncuh("history", "check", "--store", url)
    line = one_error_line(result)
    assert says in line and "x1y2z3" not in result.output and ":pw@" not in line, line


def test_masking_finds_every_password_however_it_is_written() -> None:
    from harness.history.store_url import hidden, masked, secrets

    assert masked("postgresql://u:p%40ss@h:5/d?sslmode=require&password=q&passfile=/f") == \
        "postgresql://u:***@h:5/d?sslmode=require&password=***&passfile=/f"
    assert masked("postgresql://u:a@b/c@h/d") == "postgresql://u:***@h/d"
    assert masked("postgresql://u:p?w#x@h/d") == "postgresql://u:***@h/d"
    assert masked("postgresql://u@h/d") == "postgresql://u@h/d"
    assert sorted(secrets("postgresql://u:p%40ss@h/d?token=t0k")) == ["p%40ss", "p@ss", "t0k"]
    assert hidden('could not resolve "p@ss"', "postgresql://u:p%40ss@h/d") == \
        'could not resolve "***"'


# --- options and names bounded -----------------------------------------------------------------


def test_a_bad_regex_or_step_is_one_line(store: str, tmp_path: Path, golden) -> None:
    out = tmp_path / "pages"
    bad = one_error_line(ncuh("history", "show", "--store", store, "-o", out, "-k", "regex:("))
    golden("bad_regex", bad)
    long = one_error_line(ncuh("history", "show", "--store", store, "-o", out,
                               "-k", "regex:" + "a" * 1001))
    assert long == "ncuh: error: --kernel regex of 1001 characters (at most 1000)"
    for step in ("nan", "inf", "-inf", "0", "1e9"):
        for command in (("show", "-o", out), ("check",)):
            line = one_error_line(ncuh("history", *command, "--store", store, "--step", step))
            assert "Invalid value for '--step'" in line, line
    assert not out.exists()
    accepted = ncuh("history", "check", "--store", store, "--step", "0.1")
    assert accepted.exit_code in (0, 1), accepted.output


def test_an_older_store_is_upgraded_by_add_alone(store: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch, golden) -> None:
    from sqlalchemy import text

    from harness.history import store as store_module

    steps: list[int] = []

    def migrate(conn: object) -> None:  # a migration from version 0: here, a note in the store
        conn.execute(text("UPDATE ncuh_store_info SET value = 'migrated'"))  # type: ignore[attr-defined]
        steps.append(0)

    monkeypatch.setitem(store_module.MIGRATIONS, 0, migrate)
    execute(store, "UPDATE ncuh_schema_version SET version = 0")
    line = one_error_line(ncuh("history", "check", "--store", store))
    golden("older_schema", line.replace(store, "STORE"))
    assert steps == []
    run = write_run(tmp_path, "run", NAIVE_PAGES, None, project=None)
    assert ncuh("history", "add", run, "--commit", "c3", "--store", store).exit_code == 0
    assert steps == [0]
    upgraded = open_store(store)
    assert upgraded.project() == "migrated" and upgraded.count() == 3
