"""The run store: an SQLite file under the project, or a team's PostgreSQL, one schema.

`open_store` finds the store (`--store`, else `NCUH_HISTORY`, else `.ncuh/history.sqlite`
under the project), checks its schema version and turns every database failure into one
line (`HistoryError`, exit 2). Each `add` is one transaction: it lands whole or not at all.
SQLite runs in WAL mode with a busy timeout and takes its write lock when a transaction
begins, so concurrent writers wait their turn instead of failing.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Connection, Engine, create_engine, event, func, inspect, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, NoSuchModuleError

from harness.diff import FailedEntry
from harness.errors import NcuhError
from harness.history import tables
from harness.history.record import KernelRecord, RunRecord, parse_failed, size_text

DEFAULT_STORE = Path(".ncuh") / "history.sqlite"
ENV_VARIABLE = "NCUH_HISTORY"
BUSY_TIMEOUT_S = 60.0

# Upgrades from an older schema version, applied in order inside one transaction.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {}


class HistoryError(NcuhError):
    """The history store is missing, corrupt, unreachable, of another version or project."""


@dataclass(frozen=True)
class StoredRun:
    """A run as the store holds it, with its kernels (in the order they were recorded)."""

    id: int
    commit: str
    branch: str | None
    tag: str | None
    project: str | None
    gpu: str | None
    compute_capability: str | None
    ncu_version: str | None
    started_at: str | None
    added_at: str
    source: str
    kernels: tuple[KernelRecord, ...]
    failed: tuple[FailedEntry, ...] = ()

    @property
    def short_commit(self) -> str:
        return self.commit[:10]


@dataclass(frozen=True)
class AddOutcome:
    status: Literal["added", "present"]
    run_id: int
    record: RunRecord
    commit: str


def store_target(store: str | Path | None, project_dir: Path) -> str:
    """The store's URL: what was given, else NCUH_HISTORY, else the project's SQLite file."""
    spec = str(store) if store is not None else os.environ.get(ENV_VARIABLE) or None
    if spec is None:
        spec = str(project_dir / DEFAULT_STORE)
    if "://" in spec:
        return spec
    return f"sqlite:///{Path(spec).expanduser().absolute()}"


def describe(url: str) -> str:
    """The store's name for messages: a path, or a URL without its password."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return parsed.database or url
    return parsed.render_as_string(hide_password=True)


class Store:
    """An open history store."""

    def __init__(self, engine: Engine, url: str) -> None:
        self.engine = engine
        self.url = url
        self.name = describe(url)

    @property
    def file(self) -> Path | None:
        """The SQLite file of an embedded store; None for a database server."""
        prefix = "sqlite:///"
        return Path(self.url.removeprefix(prefix)) if self.url.startswith(prefix) else None

    # --- reading -----------------------------------------------------------------------------

    def runs(self, branch: str | None = None, kernel: str | None = None) -> list[StoredRun]:
        """Every run in the order it was added, with its kernels (only `kernel`'s, if given)."""
        with self._transaction() as conn:
            query = select(tables.runs).order_by(tables.runs.c.id)
            if branch is not None:
                query = query.where(tables.runs.c.branch == branch)
            rows = conn.execute(query).mappings().all()
            kq = select(tables.kernels).order_by(tables.kernels.c.id)
            if kernel is not None:
                kq = kq.where(tables.kernels.c.name == kernel)
            by_run: dict[int, list[KernelRecord]] = {}
            for k in conn.execute(kq).mappings():
                by_run.setdefault(k["run_id"], []).append(KernelRecord.from_row(
                    k["name"], k["size"], k["ordinal"], k["function"], k["device"],
                    k["payload"]))
        return [StoredRun(id=r["id"], commit=r["commit_sha"], branch=r["branch"], tag=r["tag"],
                          project=r["project"], gpu=r["gpu"],
                          compute_capability=r["compute_capability"],
                          ncu_version=r["ncu_version"], started_at=r["started_at"],
                          added_at=r["added_at"], source=r["source"],
                          kernels=tuple(by_run.get(r["id"], ())),
                          failed=parse_failed(r["failed"]))
                for r in rows]

    def count(self) -> int:
        with self._transaction() as conn:
            return int(conn.execute(select(func.count()).select_from(tables.runs)).scalar_one())

    def project(self) -> str | None:
        with self._transaction() as conn:
            return _project(conn)

    # --- writing -----------------------------------------------------------------------------

    def add(self, record: RunRecord, commit: str, branch: str | None = None,
            tag: str | None = None) -> AddOutcome:
        """Record one run at one commit; the same run at the same commit is left as it is."""
        try:
            with self._transaction(write=True) as conn:
                existing = _existing(conn, record.fingerprint, commit)
                if existing is not None:
                    return AddOutcome("present", existing, record, commit)
                _claim_project(conn, record, self.name)
                run_id = conn.execute(tables.runs.insert().values(
                    fingerprint=record.fingerprint, commit_sha=commit, branch=branch, tag=tag,
                    project=record.project, gpu=record.gpu,
                    compute_capability=record.compute_capability,
                    ncu_version=record.ncu_version, started_at=record.started_at,
                    added_at=datetime.now(UTC).isoformat(timespec="seconds"),
                    source=str(record.source), manifest=record.manifest_blob(),
                    failed=record.failed_json(),
                )).inserted_primary_key[0]
                rows = [{"run_id": run_id, "name": k.name, "size": size_text(k.size),
                         "ordinal": k.ordinal, "function": k.function, "device": k.device,
                         "payload": k.payload()} for k in record.kernels]
                if rows:
                    conn.execute(tables.kernels.insert(), rows)
                return AddOutcome("added", int(run_id), record, commit)
        except IntegrityError:
            # another writer recorded the same run at the same commit first
            with self._transaction() as conn:
                existing = _existing(conn, record.fingerprint, commit)
            if existing is None:
                raise
            return AddOutcome("present", existing, record, commit)

    # --- plumbing ----------------------------------------------------------------------------

    @contextmanager
    def _transaction(self, write: bool = False) -> Iterator[Connection]:
        """One transaction; on SQLite a writing one takes the write lock as it begins."""
        try:
            with self.engine.connect() as conn:
                conn.execution_options(ncuh_write=write)
                with conn.begin():
                    yield conn
        except IntegrityError:
            raise
        except DBAPIError as error:
            raise HistoryError(f"history store {self.name}: {_reason(error)}") from None

    def close(self) -> None:
        self.engine.dispose()


def open_store(store: str | Path | None = None, project_dir: Path | None = None,
               create: bool = False) -> Store:
    """Open (and with `create`, make) the store; `HistoryError` when it cannot be used."""
    url = store_target(store, project_dir or Path.cwd())
    name = describe(url)
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise HistoryError(f"history store {url!r}: not a database URL") from None
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise HistoryError(f"history store {name}: {backend} is not supported "
                           "(an SQLite file or postgresql://)")
    if backend == "sqlite":
        path = Path(parsed.database or "")
        if not path.exists() and not create:
            raise HistoryError(f"no history store at {path} (`ncuh history add` creates one)")
        if path.exists() and not path.is_file():
            raise HistoryError(f"history store {path}: not a file")
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
    try:
        engine = _engine(url, backend)
    except (NoSuchModuleError, ImportError) as error:
        raise HistoryError(f"history store {name}: no database driver ({error}); "
                           "pip install 'ncuh[postgresql]'") from None
    opened = Store(engine, url)
    try:
        with opened._transaction(write=create) as conn:
            _check_schema(conn, backend, name, create)
    except HistoryError:
        engine.dispose()
        raise
    return opened


def _engine(url: str, backend: str) -> Engine:
    if backend == "postgresql":
        # psycopg 3 (the plain postgresql:// URL would ask for psycopg2)
        url = url.replace("postgresql://", "postgresql+psycopg://", 1)
        return create_engine(url, pool_pre_ping=False,
                             connect_args={"connect_timeout": 10})
    engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
        # Transactions are begun by hand below: pysqlite's own would begin lazily, and a
        # reader upgraded to a writer under WAL fails at once instead of waiting.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        _while_locked(lambda: cursor.execute("PRAGMA journal_mode=WAL"))
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _sqlite_begin(conn: Connection) -> None:
        # a reader never blocks under WAL; a writer waits (busy timeout) for the lock up front
        write = conn.get_execution_options().get("ncuh_write", True)
        _while_locked(lambda: conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN"))

    return engine


def _while_locked(step: Callable[[], Any]) -> Any:
    """`step` again while SQLite says the file is locked, up to the busy timeout: two first
    opens of one file at once (the switch to WAL, its recovery) can be refused at once, before
    SQLite's own busy handler waits."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.01
    while True:
        try:
            return step()
        except (sqlite3.OperationalError, DBAPIError) as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def _check_schema(conn: Connection, backend: str, name: str, create: bool) -> None:
    if backend == "postgresql":
        # two first `add`s at once must not both create the tables
        conn.execute(text("SELECT pg_advisory_xact_lock(4242030)"))
    present = set(inspect(conn).get_table_names())
    ours = {t.name for t in tables.metadata.sorted_tables}
    if tables.schema_version.name not in present:
        if present & ours:
            raise HistoryError(f"history store {name}: not an ncuh history store "
                               "(tables without a schema version)")
        if not create:
            raise HistoryError(f"history store {name}: holds no ncuh history yet "
                               "(`ncuh history add` records runs)")
        tables.metadata.create_all(conn)
        conn.execute(tables.schema_version.insert().values(version=tables.SCHEMA_VERSION))
        return
    version = conn.execute(select(func.max(tables.schema_version.c.version))).scalar()
    if version == tables.SCHEMA_VERSION:
        return
    if version is None:
        raise HistoryError(f"history store {name}: its schema version is missing")
    if version > tables.SCHEMA_VERSION:
        raise HistoryError(f"history store {name}: schema version {version} is newer than "
                           f"this ncuh's ({tables.SCHEMA_VERSION}); upgrade ncuh")
    for step in range(version, tables.SCHEMA_VERSION):
        if step not in MIGRATIONS:
            raise HistoryError(f"history store {name}: schema version {version} cannot be "
                               f"migrated to {tables.SCHEMA_VERSION}; start a new store")
        MIGRATIONS[step](conn)
    conn.execute(tables.schema_version.delete())
    conn.execute(tables.schema_version.insert().values(version=tables.SCHEMA_VERSION))


def _existing(conn: Connection, fingerprint: str, commit: str) -> int | None:
    found = conn.execute(select(tables.runs.c.id).where(
        tables.runs.c.fingerprint == fingerprint, tables.runs.c.commit_sha == commit)).scalar()
    return None if found is None else int(found)


def _project(conn: Connection) -> str | None:
    return conn.execute(select(tables.store_info.c.value).where(
        tables.store_info.c.key == "project")).scalar()


def _claim_project(conn: Connection, record: RunRecord, name: str) -> None:
    """A store belongs to one project: the first run that names one claims it."""
    if record.project is None:
        return
    held = _project(conn)
    if held is None:
        # two first adds at once may both find no project: the second's insert does nothing,
        # and the project read back is the first's
        conn.execute(_insert(conn, tables.store_info).values(key="project", value=record.project)
                     .on_conflict_do_nothing())
        held = _project(conn)
    if held != record.project:
        raise HistoryError(f"{record.source}: a run of project {record.project!r}, but "
                           f"history store {name} belongs to project {held!r}")


def _insert(conn: Connection, table: Any) -> Any:
    """The dialect's INSERT, which knows ON CONFLICT DO NOTHING (SQLite and PostgreSQL).
    Each dialect's module is imported where it is used: the embedded store never loads
    PostgreSQL's."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        return postgresql_insert(table)
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table)


def _reason(error: DBAPIError) -> str:
    """The driver's first line, which says what went wrong (not SQLAlchemy's wrapping)."""
    original = error.orig if error.orig is not None else error
    lines = [line.strip() for line in str(original).splitlines() if line.strip()]
    return lines[0] if lines else type(original).__name__
