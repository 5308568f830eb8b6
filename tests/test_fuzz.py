"""The corruption sweep in CI: every command, every kind of input, no traceback, no silent
success, every refusal one line (see tests/fuzz_sweep.py for what the outcomes mean).

Sized to run in well under two minutes on two cores; `benchmarks/fuzz_counts.py` runs the
same sweep larger and prints the table. The Hypothesis test beside it throws generated JSON
documents at the manifest and bench readers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fuzz_sweep import sweep, table
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import NcuhError
from harness.rundir.manifest import BenchFile, Manifest, load_bench, load_run


@pytest.fixture(scope="module")
def tally():
    return sweep(per_report=24, json_cases=40, toml_cases=40, seed=14)


def test_sweep_has_no_traceback_and_every_refusal_is_one_line(tally) -> None:
    print("\n" + table(tally))
    assert tally.total() >= 300
    assert tally.total("traceback") == 0, tally.examples
    assert tally.total("bad error") == 0, tally.examples


def test_no_silent_success_where_corruption_is_detectable(tally) -> None:
    """Everything but a few flipped bytes inside a report (which can decode to another valid
    value: the format has no checksum) is refused or gives the pristine answer."""
    silent = {key: counts["silent"] for key, counts in tally.counts.items()
              if counts["silent"] and key[0] != "report (flip bytes)"}
    assert silent == {}, tally.examples


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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
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
