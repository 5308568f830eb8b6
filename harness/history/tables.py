"""The history store's tables (SQLAlchemy Core), the same on SQLite and PostgreSQL.

A run is one row of `runs` per (run fingerprint, commit); its kernels are rows of `kernels`
whose `payload` is zlib-compressed JSON (the metric subset, units, ncu rules, bench samples):
a store is read whole for trends, so payloads are never queried by their contents.
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

SCHEMA_VERSION = 1

metadata = MetaData()

schema_version = Table(
    "ncuh_schema_version", metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
)

# Store-wide facts: the project the store belongs to.
store_info = Table(
    "ncuh_store_info", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

runs = Table(
    "ncuh_runs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("fingerprint", String(64), nullable=False),  # sha256 of manifest.json + bench.json
    Column("commit_sha", String(64), nullable=False),
    Column("branch", String(255), nullable=True),
    Column("tag", String(255), nullable=True),
    Column("project", String(255), nullable=True),
    Column("gpu", String(255), nullable=True),
    Column("compute_capability", String(32), nullable=True),
    Column("ncu_version", String(64), nullable=True),
    Column("started_at", String(64), nullable=True),
    Column("added_at", String(64), nullable=False),
    Column("source", Text, nullable=False),  # the run directory's path when it was added
    Column("manifest", LargeBinary, nullable=False),  # zlib JSON
    Column("failed", Text, nullable=False),  # JSON: the entries that produced no report
    UniqueConstraint("fingerprint", "commit_sha", name="uq_ncuh_runs_run_commit"),
)

kernels = Table(
    "ncuh_kernels", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("ncuh_runs.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("name", String(512), nullable=False),
    Column("size", String(255), nullable=True),  # "1024x1024x1024"; NULL for a user program
    Column("ordinal", Integer, nullable=False),
    Column("function", String(1024), nullable=True),
    Column("device", String(255), nullable=True),
    Column("payload", LargeBinary, nullable=False),  # zlib JSON
)
