"""A seeded sweep over damaged history stores, sized for CI on two cores.

Each case sets one stored value of a real store (three real runs) to a hostile one: a wrong
type, text past its column's bound, control and bidi characters, markup, broken or inflating
payloads, payloads of the right shape with wrong values, schema versions that are not one.
Then `history check --format json`, and for every third case `history show`, run in-process,
and the outcome is sorted:

- refused:  exit 2 and one `ncuh: error:` line on stderr, nothing raw in it
- accepted: exit 0 or 1, no raw control or bidi character anywhere, JSON that parses
- anything else (a traceback, an exit status of its own, two lines, raw text, a changed
  store) fails the sweep.

On PostgreSQL only what its columns accept can be stored: a value it refuses to store is no
case. The store's own tests name each damage's line (`test_history_trust.py`); this one
shows that nothing around them escapes.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from history_support import (  # noqa: F401  (the pg_server fixture)
    engine_of,
    ncuh,
    new_database,
    pg_server_fixture,
    recorded,
    samples,
    sha,
    with_samples,
)

from harness.history import open_store

RAW = re.compile("[\x00-\x08\x0b\x0c\x0d\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
HOSTILE_TEXT = "\x1b[31m\u202e<script>x</script>\n# head $\\x$ | ```"
TEXT_COLUMNS = {
    "ncuh_runs": ("commit_sha", "branch", "tag", "project", "gpu", "compute_capability",
                  "ncu_version", "started_at", "added_at", "source", "failed"),
    "ncuh_kernels": ("name", "size", "function", "device"),
}


@dataclass(frozen=True)
class Case:
    what: str
    statement: str
    value: Any = None


def _payload_variants(rng: random.Random) -> list[tuple[str, Any]]:
    (kernel,) = recorded("base").kernels
    plain = zlib.decompress(kernel.payload())
    data = json.loads(plain)
    flipped = bytearray(kernel.payload())
    for _ in range(4):
        flipped[rng.randrange(2, len(flipped))] ^= 1 << rng.randrange(8)
    metric = rng.choice(sorted(data["metrics"]))
    wrong = [("a string metric", {**data, "metrics": {**data["metrics"], metric: "1.0"}}),
             ("a null metric", {**data, "metrics": {**data["metrics"], metric: None}}),
             ("metrics a list", {**data, "metrics": [1, 2]}),
             ("units of numbers", {**data, "units": {metric: 3}}),
             ("rules not a list", {**data, "rules": {"name": "x"}}),
             ("a rule of numbers", {**data, "rules": [{"name": 1, "title": 2, "type": 3}]}),
             ("samples of text", {**data, "samples_ms": ["fast"]}),
             ("samples nested", {**data, "samples_ms": [[0.3]]}),
             ("cc a number", {**data, "cc": 9.0}),
             ("no cc", {k: v for k, v in data.items() if k != "cc"}),
             ("hostile names", {**data, "metrics": {HOSTILE_TEXT: 1.0},
                                "units": {HOSTILE_TEXT: HOSTILE_TEXT},
                                "rules": [{"name": HOSTILE_TEXT, "title": HOSTILE_TEXT,
                                           "type": "OPT", "speedup_pct": 5.0}]})]
    return ([("random bytes", rng.randbytes(64)), ("a cut payload", plain[: len(plain) // 2]),
             ("bits flipped", bytes(flipped)),
             ("zlib of text", zlib.compress(b"not json")),
             ("deep JSON", zlib.compress(b"[" * 5000 + b"]" * 5000))]
            + [(what, zlib.compress(json.dumps(value).encode())) for what, value in wrong])


def cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    found = [Case(f"payload: {what}", "UPDATE ncuh_kernels SET payload = :v WHERE id = 2", v)
             for what, v in _payload_variants(rng)]
    for table, columns in TEXT_COLUMNS.items():
        for column in columns:
            value = rng.choice([None, "", 12345, "x" * rng.choice([256, 70_000]), HOSTILE_TEXT,
                                "[{]", '[{"label": "l"}]', "0x0"])
            found.append(Case(f"{table}.{column} = {value!r:.30}",
                              f"UPDATE {table} SET {column} = :v WHERE id = 2", value))
    found += [Case("ordinal -1", "UPDATE ncuh_kernels SET ordinal = -1"),
              Case("ordinal 2^40", "UPDATE ncuh_kernels SET ordinal = 1099511627776"),
              Case("an orphan kernel", "UPDATE ncuh_kernels SET run_id = 99 WHERE id = 1"),
              Case("version 2", "UPDATE ncuh_schema_version SET version = 2"),
              Case("version 0", "UPDATE ncuh_schema_version SET version = 0"),
              Case("no version", "DELETE FROM ncuh_schema_version"),
              Case("a hostile project", "UPDATE ncuh_store_info SET value = :v", HOSTILE_TEXT),
              Case("no runs", "DELETE FROM ncuh_runs"),
              Case("no kernels", "DELETE FROM ncuh_kernels")]
    return found


def _fill(store_url: str) -> None:
    store = open_store(store_url, create=True)
    for n in (1, 2, 3):
        store.add(with_samples(recorded("base"), samples(0.30, 0.01, seed=n)), sha(n), "main")
    store.close()


def _stored(store_url: str, case: Case) -> bool:
    """The case's value written into the store; False where the engine refuses to hold it."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    engine = engine_of(store_url)
    try:
        with engine.begin() as conn:
            conn.execute(text(case.statement), {"v": case.value})
    except DBAPIError:
        return False
    finally:
        engine.dispose()
    return True


def _outcome(result: Any, fmt_json: bool) -> str:
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return "traceback"
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        one = len(lines) == 1 and lines[0].startswith("ncuh: error: ")
        return "refused" if one and not RAW.search(result.stderr) else "bad error"
    if result.exit_code not in (0, 1):
        return "traceback"
    if RAW.search(result.output):
        return "unclean"
    if fmt_json:
        try:
            json.loads(result.stdout)
        except ValueError:
            return "unclean"
    return "accepted"


def _digest(store_url: str) -> str:
    if "://" in store_url:
        return ""
    return hashlib.sha256(Path(store_url).read_bytes()).hexdigest()


def run_sweep(make_store: Any, chosen: list[Case], out: Path) -> tuple[Counter[str], list[str]]:
    counts: Counter[str] = Counter()
    bad: list[str] = []
    for n, case in enumerate(chosen):
        store_url = make_store(n)
        if not _stored(store_url, case):
            counts["not storable"] += 1
            continue
        before = _digest(store_url)
        commands = [(("check", "--format", "json"), True)]
        if n % 3 == 0:
            commands.append((("show", "--out", out / f"pages{n}"), False))
        for args, fmt_json in commands:
            outcome = _outcome(ncuh("history", *args, "--store", store_url), fmt_json)
            if _digest(store_url) != before:
                outcome = "store changed"
            counts[outcome] += 1
            if outcome not in ("refused", "accepted"):
                bad.append(f"{case.what} / {args[0]}: {outcome}")
    return counts, bad


def test_a_damaged_sqlite_store_is_refused_in_one_line_or_read_cleanly(tmp_path: Path) -> None:
    base = tmp_path / "base.sqlite"
    _fill(str(base))
    chosen = cases(seed=44)

    def make_store(n: int) -> str:
        path = tmp_path / f"s{n}.sqlite"
        shutil.copyfile(base, path)
        return str(path)

    counts, bad = run_sweep(make_store, chosen, tmp_path)
    print(f"\nSQLite sweep over {len(chosen)} cases: {dict(counts)}")
    assert bad == []
    assert len(chosen) >= 40 and counts["refused"] >= 30 and counts["accepted"] >= 5, counts
    assert counts["not storable"] == 0  # SQLite holds any value in any column


def test_a_damaged_postgresql_store_is_refused_in_one_line_or_read_cleanly(
        pg_server: str | None, tmp_path: Path) -> None:
    if pg_server is None:
        pytest.skip("PostgreSQL could not start here (initdb/pg_ctl missing or failing)")
    base = new_database(pg_server)
    _fill(base)
    template = base.rsplit("/", 1)[1]
    chosen = random.Random(44).sample(cases(seed=44), 14)

    def make_store(n: int) -> str:
        import psycopg

        name = f"{template}_c{n}"
        with psycopg.connect(f"{pg_server}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return f"{pg_server}/{name}"

    counts, bad = run_sweep(make_store, chosen, tmp_path)
    print(f"\nPostgreSQL sweep over {len(chosen)} cases: {dict(counts)}")
    assert bad == []
    assert counts["refused"] + counts["accepted"] >= 8, counts
