"""`ncuh export` equals ncu's own raw page (`--page raw --csv`) for every metric and kernel."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from ncu_units import matches_printed, to_base, unit_factor
from packed_fixtures import H200_REGISTER_TILED, NAIVE_SMEM_RAW_CSV, NAIVE_SMEM_REPORT

from harness.cli import main
from harness.report.reportfile import EXPORT_COLUMNS, export_metrics, open_report

ROOT = Path(__file__).resolve().parent.parent

# Columns of the raw page that describe the launch rather than name a metric.
RAW_ID_COLUMNS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
                  "Stream", "Block Size", "Grid Size", "Device", "CC")


@pytest.fixture(scope="module")
def exported() -> pd.DataFrame:
    return export_metrics(NAIVE_SMEM_REPORT)


@pytest.fixture(scope="module")
def raw_page() -> pd.DataFrame:
    return pd.read_csv(NAIVE_SMEM_RAW_CSV, dtype=str, keep_default_na=False)


def test_units_converter_knows_ncu_display_units() -> None:
    assert to_base(5.511008, "ms", "ns") == pytest.approx(5511008.0)
    assert to_base(2.618985, "Ghz", "hz") == pytest.approx(2618985000.0)
    assert to_base(1.518766, "sector/ns", "sector/s") == pytest.approx(1518766000.0)
    assert to_base(5.3, "%/Kbyte", "%/byte") == pytest.approx(5300.0)
    assert to_base(8.192, "Kbyte", "byte") == pytest.approx(8192.0)
    assert to_base(3.0, "us", "ns") == pytest.approx(3000.0)
    assert unit_factor("inst/cycle") == 1.0


def test_export_has_exactly_the_tidy_columns(exported: pd.DataFrame) -> None:
    assert tuple(exported.columns) == EXPORT_COLUMNS
    assert set(exported["kernel_id"]) == {0, 1}
    assert set(exported.loc[exported.kernel_id == 0, "kernel"]) == {"sgemm_naive"}
    assert set(exported.loc[exported.kernel_id == 1, "kernel"]) == {"sgemm_smem"}


def test_export_matches_ncu_raw_page_for_every_metric(
    exported: pd.DataFrame, raw_page: pd.DataFrame
) -> None:
    display_units = raw_page.iloc[0]
    aggregate = exported[exported["instance"] == ""]
    checked = 0
    for row_index in range(1, len(raw_page)):
        raw = raw_page.iloc[row_index]
        kernel_id = int(raw["ID"])
        mine = aggregate[aggregate.kernel_id == kernel_id].set_index("metric")
        assert mine["kernel"].iloc[0] == raw["Kernel Name"]
        metric_columns = [c for c in raw_page.columns if c not in RAW_ID_COLUMNS]
        missing = [c for c in metric_columns if c not in mine.index]
        assert not missing, f"kernel {kernel_id}: not exported: {missing[:5]}"
        mismatches = []
        for metric in metric_columns:
            printed = raw[metric]
            value = mine.at[metric, "value"]
            unit = mine.at[metric, "unit"]
            if isinstance(value, str):
                ok = value == printed
            elif value is None:
                ok = printed in ("", "no data")  # ncu: "no data" for unknown-kind values
            elif isinstance(value, float) and math.isnan(value):
                ok = printed.lower() == "nan"
            else:
                ok = matches_printed(float(value), printed, display_units[metric], unit)
            if not ok:
                mismatches.append((metric, printed, display_units[metric], value, unit))
            checked += 1
        assert not mismatches, f"kernel {kernel_id}: {len(mismatches)} differ: {mismatches[:5]}"
    assert checked == 2 * (len(raw_page.columns) - len(RAW_ID_COLUMNS))


def test_export_has_only_group_and_breakdown_metrics_beyond_the_raw_page(
    exported: pd.DataFrame, raw_page: pd.DataFrame
) -> None:
    extra = set(exported["metric"]) - set(raw_page.columns)
    assert extra
    assert all(name.startswith(("group:", "breakdown:")) for name in extra)


def test_instanced_metrics_have_one_row_per_instance_with_correlation_ids(
    exported: pd.DataFrame,
) -> None:
    rows = exported[(exported.kernel_id == 0)
                    & (exported.metric == "sass__inst_executed_per_opcode")]
    aggregate = rows[rows.instance == ""]
    instances = rows[rows.instance != ""]
    assert len(aggregate) == 1
    assert aggregate["value"].iloc[0] == 154828800.0
    # Opcode names are the correlation ids; the instance values add up to the aggregate.
    assert {"LDG", "FFMA", "IMAD"} <= set(instances["instance"])
    assert instances.set_index("instance").at["LDG", "value"] == 67141632.0
    assert sum(instances["value"]) == pytest.approx(154828800.0)

    pcs = exported[(exported.kernel_id == 0) & (exported.metric == "inst_executed")]
    assert len(pcs) == 1 + 206
    assert all(label.isdigit() for label in pcs["instance"].iloc[1:])


def test_export_values_are_base_units_and_types_from_ncu_report(exported: pd.DataFrame) -> None:
    mine = exported[(exported.kernel_id == 0) & (exported.instance == "")].set_index("metric")
    assert mine.at["gpu__time_duration.sum", "value"] == 5511008.0
    assert mine.at["gpu__time_duration.sum", "unit"] == "ns"
    assert mine.at["launch__grid_size", "value"] == 1024
    assert mine.at["device__attribute_display_name", "value"] == "NVIDIA H100 80GB HBM3"


def test_kernel_filter_selects_by_name() -> None:
    frame = export_metrics(NAIVE_SMEM_REPORT, kernel_regex="smem$")
    assert set(frame["kernel"]) == {"sgemm_smem"}
    assert set(frame["kernel_id"]) == {1}  # ids stay those of the whole report


def test_export_accepts_a_loaded_report() -> None:
    report = open_report(NAIVE_SMEM_REPORT)
    assert [k.name for k in report.kernels] == ["sgemm_naive", "sgemm_smem"]
    assert len(export_metrics(report)) == len(export_metrics(NAIVE_SMEM_REPORT))


def test_cli_export_csv_to_stdout_round_trips(exported: pd.DataFrame) -> None:
    result = CliRunner().invoke(main, ["export", str(NAIVE_SMEM_REPORT)])
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert tuple(rows[0]) == EXPORT_COLUMNS
    assert len(rows) - 1 == len(exported)
    by_key = {(r[0], r[2], r[3]): r for r in rows[1:]}
    duration = by_key[("0", "gpu__time_duration.sum", "")]
    assert float(duration[4]) == 5511008.0 and duration[5] == "ns"
    # Floats keep every digit: the CSV value parses back to exactly ncu_report's double.
    sm_active = exported[(exported.kernel_id == 0) & (exported.instance == "")
                         & (exported.metric == "sm__cycles_active.avg")]["value"].iloc[0]
    assert float(by_key[("0", "sm__cycles_active.avg", "")][4]) == sm_active


def test_cli_export_json_file_is_written_atomically(tmp_path, exported: pd.DataFrame) -> None:
    output = tmp_path / "out" / "metrics.json"
    result = CliRunner().invoke(
        main, ["export", str(NAIVE_SMEM_REPORT), "-o", str(output), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    records = json.loads(output.read_text())
    assert len(records) == len(exported)
    assert set(records[0]) == set(EXPORT_COLUMNS)
    assert [p.name for p in output.parent.iterdir()] == ["metrics.json"]  # no temp file left


def test_cli_export_takes_its_format_from_the_outputs_name(tmp_path) -> None:
    """An --out named *.json gets JSON without --format json; a run directory, whose export is
    its metrics.csv, refuses such a name in one line rather than write CSV into it."""
    output = tmp_path / "metrics.JSON"
    result = CliRunner().invoke(main, ["export", str(NAIVE_SMEM_REPORT), "-o", str(output)])
    assert result.exit_code == 0, result.output
    assert set(json.loads(output.read_text())[0]) == set(EXPORT_COLUMNS)
    result = CliRunner().invoke(main, ["export", str(NAIVE_SMEM_REPORT), "-o",
                                       str(tmp_path / "metrics.txt")])
    assert result.exit_code == 0 and (tmp_path / "metrics.txt").read_text().startswith(
        ",".join(EXPORT_COLUMNS))
    run = ROOT / "reports" / "runs" / "sgemm-h200-256"
    result = CliRunner().invoke(main, ["export", str(run), "-o", str(tmp_path / "run.json")])
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"ncuh: error: {run}: a run directory exports as CSV only")
    assert line.endswith("(its metrics.csv): name the output .csv")
    assert not (tmp_path / "run.json").exists()


def test_export_and_report_start_light(tmp_path) -> None:
    """The CLI path imports neither pandas nor matplotlib nor CuPy (start-up time)."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from harness.cli import main\n"
        "for args in (['export', sys.argv[1], '-o', sys.argv[2]], ['report', sys.argv[1]]):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as done:\n"
        "        assert not done.code, done.code\n"
        "print(sorted(m for m in ('pandas', 'matplotlib', 'cupy') if m in sys.modules),"
        " file=sys.stderr)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe, str(NAIVE_SMEM_REPORT), str(tmp_path / "m.csv")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr.strip().splitlines()[-1] == "[]"


def test_export_parts_share_the_rows_not_the_metrics() -> None:
    # register_tiled's report: a few per-PC source counters hold most of its 40,628 rows.
    from harness.report.reportfile import export_columns

    report = open_report(H200_REGISTER_TILED)
    whole = export_columns(report)
    parts = [export_columns(report, part=(index, 8)) for index in range(8)]
    # Compared as text: a NaN value is not equal to itself.
    assert [repr(row) for part in parts for row in zip(*part.columns(), strict=True)] == [
        repr(row) for row in zip(*whole.columns(), strict=True)]
    biggest_metric = max(whole.metric.count(name) for name in set(whole.metric))
    # A part closes once it holds its share, so it overshoots by less than one metric's rows.
    assert max(len(part) for part in parts) <= len(whole) / 8 + biggest_metric
    assert min(len(part) for part in parts) >= len(whole) / 8 - biggest_metric
