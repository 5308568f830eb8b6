"""The reports `ncuh profile` recorded on an H200 (the fixtures later stages build on).

Recorded with `ncuh profile --variant naive --variant register_tiled --size 256` (set full,
clock control base, NVTX capture); the manifest of that run is beside them, and ncu's own
`--page raw --csv` of each report is the truth the values are checked against.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from packed_fixtures import H200_RUN, fixture

from harness.report.reportfile import export_metrics, open_report

FIXTURES = Path(__file__).parent / "fixtures"
VARIANTS = ("naive", "register_tiled")


def _raw(variant: str) -> dict[str, tuple[str, str]]:
    with fixture(FIXTURES / f"h200_{variant}_256.raw.csv").open(newline="",
                                                              encoding="utf-8") as f:
        header, units, values = list(csv.reader(f))[:3]
    return {name: (unit, value) for name, unit, value in zip(header, units, values, strict=True)}


def _int(cell: str) -> int:
    return int(cell.replace(",", ""))  # ncu's raw page groups thousands: "1,024"


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_nvtx_capture_holds_exactly_the_target_launch(variant: str) -> None:
    report = open_report(H200_RUN / f"{variant}_256.ncu-rep")
    assert [k.name for k in report.kernels] == [f"sgemm_{variant}"]
    raw = _raw(variant)
    assert raw["Kernel Name"][1] == f"sgemm_{variant}"
    # ncu recorded the NVTX range the runner pushed around the launch.
    assert f"ncuh-{variant}_256" in "".join(value for _, value in raw.values())


@pytest.mark.parametrize(("variant", "grid", "block", "registers", "duration_us"), [
    ("naive", 64, 1024, 32, 185.632),
    ("register_tiled", 4, 256, 162, 96.256),
])
def test_values_equal_ncus_raw_page(
    variant: str, grid: int, block: int, registers: int, duration_us: float
) -> None:
    frame = export_metrics(H200_RUN / f"{variant}_256.ncu-rep")
    aggregate = frame[frame["instance"] == ""].set_index("metric")["value"]
    raw = _raw(variant)
    assert aggregate["launch__grid_size"] == grid == _int(raw["launch__grid_size"][1])
    assert aggregate["launch__block_size"] == block == _int(raw["launch__block_size"][1])
    assert aggregate["launch__registers_per_thread"] == registers
    assert raw["gpu__time_duration.sum"][0] == "us"
    assert aggregate["gpu__time_duration.sum"] / 1000 == pytest.approx(duration_us)
    assert float(raw["gpu__time_duration.sum"][1]) == pytest.approx(duration_us)


def test_the_recorded_manifest_describes_the_reports() -> None:
    manifest = json.loads((H200_RUN / "manifest.json").read_text())
    assert manifest["schema"] == "ncuh.run/1"
    assert manifest["environment"]["gpu"] == "NVIDIA H200"
    assert manifest["environment"]["ncu_version"] == "2025.3.1.0"
    ncu = manifest["ncu"]
    assert (ncu["set"], ncu["clock_control"], ncu["capture"]) == ("full", "base", "nvtx")
    entries = {e["label"]: e for e in manifest["entries"]}
    assert entries["naive_256"]["kernel_name"] == "sgemm_naive"
    assert entries["register_tiled_256"]["params"]["BM"] == 128
    assert all(e["status"] == "ok" and e["rel_error"] < 1e-6 for e in entries.values())
