"""The corruption sweep in CI: every command, every kind of input, every hostile cause of
issue 29, no traceback, no silent success, every refusal one line, clean output, no input
changed (see tests/fuzz_sweep.py for what the outcomes mean).

Sized for CI: each kind of report corruption once, the two real reports taking two kinds
each (every cause above still met), the JSON and TOML cases as many as before;
`benchmarks/fuzz_counts.py` runs the same sweep larger and prints the table. The Hypothesis
test beside it throws generated JSON documents at the manifest and bench readers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fuzz_sweep import sweep, table
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import NcuhError
from harness.rundir.manifest import BenchFile, Manifest, load_bench, load_run


@pytest.fixture(scope="module")
def tally():
    # under pytest-xdist the other cores already run other tests: one process of cases
    workers = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
    return sweep(per_report=2, json_cases=24, toml_cases=24, seed=14, workers=workers)


def test_sweep_has_no_traceback_and_every_refusal_is_one_line(tally) -> None:
    print("\n" + table(tally))
    print(f"values changed where nothing could tell: {tally.changed_values}")
    assert tally.total() >= 130  # the CI size: a smaller sweep fails here
    kinds = {target for target, _ in tally.counts if target.startswith("report (")}
    assert kinds == {f"report ({kind})" for kind in ("flip 4 KiB", "flip bytes", "truncate",
                                                     "zero 4 KiB")}
    assert {command for _, command in tally.counts} >= {
        "report", "export", "diff bad good", "diff good bad", "writeup", "diff --config",
        "list", "profile --dry-run"}
    assert tally.total("traceback") == 0, tally.examples
    assert tally.total("bad error") == 0, tally.examples


def test_no_silent_success_where_corruption_is_detectable(tally) -> None:
    """Corrupted input is refused or gives the pristine answer; only a report whose export
    keeps every row (a flipped byte that decoded to another valid value: the format has no
    checksum) may show other values, and those are counted apart."""
    assert tally.total("silent") == 0, tally.examples
    changed = {key for key, counts in tally.counts.items() if counts["changed value"]}
    assert all(target == "report (flip bytes)" for target, _ in changed), changed


def test_no_input_is_ever_changed_and_output_stays_clean(tally) -> None:
    assert tally.total("data lost") == 0, tally.examples
    assert tally.total("unclean") == 0, tally.examples


def test_every_cause_of_issue_29_is_refused_in_one_line_or_read_cleanly(tally) -> None:
    causes = {key: counts for key, counts in tally.counts.items() if key[0].startswith("cause")}
    assert len(causes) >= 35
    for (target, command), counts in causes.items():
        assert counts["refused"] + counts["valid"] == sum(counts.values()), (target, command)
    valid = sorted(target for (target, _), counts in causes.items() if counts["valid"])
    assert valid == ["cause: 1000 variants", "cause: a label =HYPERLINK(...)",
                     "cause: a label with ESC, BEL, U+202E and a newline",
                     "cause: a label with ESC, BEL, U+202E and a newline"]


def test_the_issue_14_corruption_is_always_refused(tally) -> None:
    """4 KiB flipped at 15-95% and truncations: refused by every command, every time."""
    for (target, command), counts in tally.counts.items():
        if target in ("report (flip 4 KiB)", "report (truncate)"):
            assert counts["refused"] == sum(counts.values()), (target, command, counts)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["schema", "entries", "results", "size", "label",
                                       "status", "report", "variant", "samples_ms", "x"]),
                      children, max_size=4),
    max_leaves=12)
documents = st.fixed_dictionaries(
    {"schema": st.sampled_from(["ncuh.run/1", "ncuh.bench/1", "other"])},
    optional={"entries": json_values, "results": json_values, "environment": json_values})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(document=documents)
def test_generated_documents_are_read_or_refused_in_one_line(tmp_path: Path, document) -> None:
    text = json.dumps(document)
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "manifest.json").write_text(text)
    (run / "bench.json").write_text(text)
    for read in (lambda: load_run(run), lambda: load_bench(run / "bench.json"),
                 lambda: Manifest.from_json(text, "m"), lambda: BenchFile.from_json(text, "b")):
        try:
            read()
        except NcuhError as error:
            assert "\n" not in str(error)
