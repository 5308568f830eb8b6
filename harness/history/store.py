"""The run store: an SQLite file under the project, or a team's PostgreSQL, one schema.

`open_store` finds the store (`--store`, else `NCUH_HISTORY`, else `.ncuh/history.sqlite`
under the project), checks its schema version and turns every database failure into one
line (`HistoryError`, exit 2). Opening writes nothing: a database that holds anything but
ncuh's tables is refused as it is (its journal mode too), and a new store is made by its first
`add`, in that add's transaction. Each `add` is one transaction: it lands whole or not at all.
SQLite runs in WAL mode with a busy timeout and takes its write lock when a transaction
begins, so concurrent writers wait their turn instead of failing. Every value read back is
checked (`harness.history.rows`): damage is one line naming the store, the run and the field.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import (
    Connection,
    Engine,
    Integer,
    create_engine,
    event,
    func,
    inspect,
    select,
    text,
)
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError, IntegrityError, NoSuchModuleError

from harness.errors import NcuhError
from harness.history import rows, tables
from harness.history.record import KernelRecord, RunRecord, StoredRun, size_text
from harness.history.store_url import hidden, masked, parsed

DEFAULT_STORE = Path(".ncuh") / "history.sqlite"
ENV_VARIABLE = "NCUH_HISTORY"
BUSY_TIMEOUT_S = 60.0

# Upgrades from an older schema version, applied in order inside one transaction.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {}


class HistoryError(NcuhError):
    """The history store is missing, corrupt, unreachable, of another version or project."""


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


def describe(url: str, parsed_url: URL | None = None) -> str:
    """The store's name for messages: a path, or the URL with its passwords masked."""
    if parsed_url is not None and parsed_url.get_backend_name() == "sqlite":
        return parsed_url.database or masked(url)
    return masked(url)


class Store:
    """An open history store; one still to be made (`ready` False) is made by its first add."""

    def __init__(self, engine: Engine, url: str, name: str, ready: bool = True) -> None:
        self.engine = engine
        self.url = url
        self.name = name
        self.ready = ready
        self._journal_set = False

    @property
    def file(self) -> Path | None:
        """The SQLite file of an embedded store; None for a database server."""
        prefix = "sqlite:///"
        return Path(self.url.removeprefix(prefix)) if self.url.startswith(prefix) else None

    # --- reading -----------------------------------------------------------------------------

    def runs(self, branch: str | None = None, kernel: str | None = None) -> list[StoredRun]:
        """Every run in the order it was added, with its kernels (only `kernel`'s, if given).
        Each value is checked as it is read: `HistoryError` names the damaged one."""
        if not self._made():
            return []
        with self._transaction() as conn:
            if not self._holds_history(conn):
                return []
            query = select(*_bounded(tables.runs, "manifest", "fingerprint")).order_by(
                tables.runs.c.id)
            if branch is not None:
                query = query.where(tables.runs.c.branch == branch)
            run_rows = conn.execute(query).mappings().all()
            kq = select(*_bounded(tables.kernels)).order_by(tables.kernels.c.id)
            if kernel is not None:
                kq = kq.where(tables.kernels.c.name == kernel)
            kernel_rows = conn.execute(kq).mappings().all()
        checked: dict[int, StoredRun] = {
            row["id"]: self._checked(rows.run, row, f"run {row['id']}") for row in run_rows}
        by_run: dict[int, list[KernelRecord]] = {}
        for row in kernel_rows:
            run = checked.get(row["run_id"])
            if run is not None:  # a kernel of a run not read (another branch's)
                by_run.setdefault(run.id, []).append(self._checked(
                    rows.kernel, row, f"run {run.id} at {run.short_commit}, kernel row "
                                      f"{row['id']}"))
        return [replace(r, kernels=tuple(by_run.get(r.id, ()))) for r in checked.values()]

    def _checked(self, check: Callable[[Any], Any], row: Any, where: str) -> Any:
        try:
            return check(row)
        except rows.Damage as damage:
            raise HistoryError(f"history store {self.name} is damaged: {where}: "
                               f"{damage}") from None

    def count(self) -> int:
        if not self._made():
            return 0
        with self._transaction() as conn:
            if not self._holds_history(conn):
                return 0
            return int(conn.execute(select(func.count()).select_from(tables.runs)).scalar_one())

    def project(self) -> str | None:
        if not self._made():
            return None
        with self._transaction() as conn:
            if not self._holds_history(conn):
                return None
            return _project(conn, self.name)

    def _made(self) -> bool:
        """False for an SQLite store whose file its first add has still to make: reading it
        must not make it."""
        return self.ready or self.file is None or self.file.exists()

    def _holds_history(self, conn: Connection) -> bool:
        """Whether ncuh's tables of this version are there: a store made (or upgraded) since it
        was opened holds them now."""
        if not self.ready:
            self.ready = _schema_state(conn, self.name) == "ours"
        return self.ready

    # --- writing -----------------------------------------------------------------------------

    def add(self, record: RunRecord, commit: str, branch: str | None = None,
            tag: str | None = None) -> AddOutcome:
        """Record one run at one commit; the same run at the same commit is left as it is.
        A store still to be made is made here, in the same transaction."""
        problem = rows.oversized(record, commit, branch, tag)
        if problem is not None:
            raise HistoryError(problem)
        self._journal()
        try:
            with self._transaction(write=True) as conn:
                _prepare_schema(conn, self.name)
                self.ready = True
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
                kernel_rows = [{"run_id": run_id, "name": k.name, "size": size_text(k.size),
                                "ordinal": k.ordinal, "function": k.function,
                                "device": k.device, "payload": k.payload()}
                               for k in record.kernels]
                if kernel_rows:
                    conn.execute(tables.kernels.insert(), kernel_rows)
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
            raise HistoryError(f"history store {self.name}: "
                               f"{hidden(_reason(error), self.url)}") from None

    def _journal(self) -> None:
        """Before the first write to an SQLite store: WAL mode, which readers never wait in.
        Only a store of ncuh's or an empty database is switched; another's is left as it is
        (the write that follows refuses it)."""
        if self._journal_set or self.engine.dialect.name != "sqlite":
            return
        file = self.file
        if file is not None:
            file.parent.mkdir(parents=True, exist_ok=True)
        try:
            with self.engine.connect() as conn:
                raw = conn.connection.dbapi_connection
                assert raw is not None
                names = {row[0] for row in raw.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
                if not names or tables.schema_version.name in names:
                    _while_locked(lambda: raw.execute("PRAGMA journal_mode=WAL"))
        except (sqlite3.Error, DBAPIError) as error:
            reason = error.orig if isinstance(error, DBAPIError) else error
            raise HistoryError(f"history store {self.name}: {reason}") from None
        except OSError as error:
            raise HistoryError(f"history store {self.name}: {error.strerror}") from None
        self._journal_set = True

    def close(self) -> None:
        self.engine.dispose()


def open_store(store: str | Path | None = None, project_dir: Path | None = None,
               create: bool = False) -> Store:
    """Open the store; `HistoryError` when it cannot be used. Nothing is written here: with
    `create`, a store that is not there yet (a missing file, an empty database) is made by
    its first `add`."""
    url = store_target(store, project_dir or Path.cwd())
    try:
        parsed_url = parsed(url)
    except ValueError as error:
        raise HistoryError(f"history store {masked(url)}: {error}") from None
    name = describe(url, parsed_url)
    backend = parsed_url.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise HistoryError(f"history store {name}: {backend} is not supported "
                           "(an SQLite file or postgresql://)")
    missing = False
    if backend == "sqlite":
        path = Path(parsed_url.database or "")
        missing = not path.exists()
        if missing and not create:
            raise HistoryError(f"no history store at {path} (`ncuh history add` creates one)")
        if not missing and not path.is_file():
            raise HistoryError(f"history store {path}: not a file")
    try:
        engine = _engine(url, backend)
    except (NoSuchModuleError, ImportError) as error:
        raise HistoryError(f"history store {name}: no database driver ({error}); "
                           "pip install 'ncuh[postgresql]'") from None
    except (ValueError, TypeError) as error:  # an option the driver does not take
        raise HistoryError(f"history store {name}: {hidden(str(error), url)}") from None
    opened = Store(engine, url, name, ready=False)
    if missing:
        return opened
    try:
        with opened._transaction() as conn:
            state = _schema_state(conn, name)
    except HistoryError:
        engine.dispose()
        raise
    if state == "empty" and not create:
        engine.dispose()
        raise HistoryError(f"history store {name}: holds no ncuh history yet "
                           "(`ncuh history add` records runs)")
    if state == "older" and not create:
        engine.dispose()
        raise HistoryError(f"history store {name}: its schema is older than this ncuh's "
                           f"({tables.SCHEMA_VERSION}); the next `ncuh history add` upgrades it")
    opened.ready = state == "ours"
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
        # reader upgraded to a writer under WAL fails at once instead of waiting. Nothing
        # here is kept in the file: a foreign database opened is left as it is.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
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


SchemaState = Literal["ours", "empty", "older"]


def _schema_state(conn: Connection, name: str) -> SchemaState:
    """What the database holds: ncuh's tables of this version ("ours"), of an older version
    that a migration upgrades ("older"), or nothing at all ("empty"); `HistoryError` for
    anything else (another's tables, a newer or unknown version, a damaged version)."""
    present = set(inspect(conn).get_table_names())
    if tables.schema_version.name not in present:
        if present:
            others = ", ".join(sorted(present)[:5]) + (", ..." if len(present) > 5 else "")
            raise HistoryError(f"history store {name}: not an ncuh history store (it holds "
                               f"other tables: {others}); give ncuh a database of its own")
        return "empty"
    values = conn.execute(select(tables.schema_version.c.version)).scalars().all()
    if not values:
        raise HistoryError(f"history store {name}: its schema version is missing")
    try:
        version = max(rows.schema_version(v) for v in values)
    except rows.Damage as damage:
        raise HistoryError(f"history store {name} is damaged: ncuh_schema_version: "
                           f"{damage}") from None
    if version == tables.SCHEMA_VERSION:
        return "ours"
    if version > tables.SCHEMA_VERSION:
        raise HistoryError(f"history store {name}: schema version {version} is newer than "
                           f"this ncuh's ({tables.SCHEMA_VERSION}); upgrade ncuh")
    if any(step not in MIGRATIONS for step in range(version, tables.SCHEMA_VERSION)):
        raise HistoryError(f"history store {name}: schema version {version} cannot be "
                           f"migrated to {tables.SCHEMA_VERSION}; start a new store")
    return "older"


def _prepare_schema(conn: Connection, name: str) -> None:
    """In a writing transaction: the tables made in an empty database, an older schema
    migrated (two first `add`s at once on PostgreSQL take turns here)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(4242030)"))
    state = _schema_state(conn, name)
    if state == "ours":
        return
    if state == "empty":
        tables.metadata.create_all(conn)
        conn.execute(tables.schema_version.insert().values(version=tables.SCHEMA_VERSION))
        return
    version = max(rows.schema_version(v) for v in conn.execute(
        select(tables.schema_version.c.version)).scalars())
    for step in range(version, tables.SCHEMA_VERSION):
        MIGRATIONS[step](conn)
    conn.execute(tables.schema_version.delete())
    conn.execute(tables.schema_version.insert().values(version=tables.SCHEMA_VERSION))


def _bounded(table: Any, *left_out: str) -> list[Any]:
    """A table's columns for a query, each text or bytes value cut one past its bound by the
    database itself, so that no stored value is read whole when it is too long to be ncuh's."""
    columns = []
    for column in table.c:
        if column.name in left_out:
            continue
        if isinstance(column.type, Integer):
            columns.append(column)
        else:
            columns.append(func.substr(column, 1, rows.limit(column) + 1,
                                       type_=column.type).label(column.name))
    return columns


def _existing(conn: Connection, fingerprint: str, commit: str) -> int | None:
    found = conn.execute(select(tables.runs.c.id).where(
        tables.runs.c.fingerprint == fingerprint, tables.runs.c.commit_sha == commit)).scalar()
    return None if found is None else int(found)


def _project(conn: Connection, name: str) -> str | None:
    """The project the store belongs to (None before a run that names one)."""
    (value,) = _bounded(tables.store_info, "key")
    found = conn.execute(select(value).where(tables.store_info.c.key == "project")).scalar()
    try:
        return rows.text(found, "project", rows.limit(tables.runs.c.project), optional=True)
    except rows.Damage as damage:
        raise HistoryError(f"history store {name} is damaged: ncuh_store_info: "
                           f"{damage}") from None


def _claim_project(conn: Connection, record: RunRecord, name: str) -> None:
    """A store belongs to one project: the first run that names one claims it."""
    if record.project is None:
        return
    held = _project(conn, name)
    if held is None:
        # two first adds at once may both find no project: the second's insert does nothing,
        # and the project read back is the first's
        conn.execute(_insert(conn, tables.store_info).values(key="project", value=record.project)
                     .on_conflict_do_nothing())
        held = _project(conn, name)
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
