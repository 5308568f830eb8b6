"""Bench logic without a GPU: statistics, speedups, the table, bench.json, autotune, CLI errors."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import gpu_unavailable_reason

from harness.cli import main
from harness.errors import BadSizeError, ReportError
from harness.gpu.bench import (
    BENCH_SCHEMA,
    BenchResult,
    BenchRun,
    BenchSettings,
    aggregate_speedups,
    compare_runs,
    fill_speedups,
    per_second,
)
from harness.gpu.bench_table import format_seed_block, format_table
from harness.gpu.env import collect_environment, parse_ncu_version, parse_nvidia_smi
from harness.gpu.sweep import enumerate_configs, filter_configs
from harness.gpu.timing import Measurement
from harness.gpu.tuning import (
    TUNING_SCHEMA,
    TuneCache,
    cache_path,
    resolve_params,
    shipped_path,
    source_fingerprint,
)
from harness.project import load_project
from harness.project.locate import default_project_path
from harness.project.size import parse_sizes

SGEMM = load_project(default_project_path())
SGEMM_KEYS = {"reference": "cublas", "reference_name": "cuBLAS", "baseline": "naive",
              "baseline_title": "Naive", "description": "C = 1.5*A@B + -0.75*C",
              "dims": ["M", "N", "K"], "summary_min_size": 512}


def gflops(size, ms: float) -> float:
    m, n, k = size
    return per_second(2.0 * m * n * k, ms)


REPO = Path(__file__).resolve().parent.parent
SCALE = Path(__file__).parent / "projects" / "scale"
PREVIOUS = {"naive": None, "coalesced": "naive", "register_tiled": "coalesced", "cublas": None}


def _ok(variant: str, n: int, median: float, q1: float, q3: float) -> BenchResult:
    size = (n, n, n)
    return BenchResult(
        variant=variant, size=size, params={}, status="ok", samples_ms=[q1, median, q3],
        median_ms=median, q1_ms=q1, q3_ms=q3, min_ms=q1, gflops=gflops(size, median),
        rel_error=2.5e-7,
    )


def sample_run() -> BenchRun:
    results = [
        _ok("naive", 256, 0.25, 0.24, 0.26),
        _ok("naive", 512, 1.6, 1.58, 1.62),
        _ok("naive", 1024, 12.5, 12.4, 12.7),
        _ok("coalesced", 256, 0.05, 0.049, 0.051),
        _ok("coalesced", 512, 0.32, 0.31, 0.33),
        _ok("coalesced", 1024, 2.5, 2.45, 2.55),
        _ok("register_tiled", 256, 0.02, 0.0195, 0.0205),
        _ok("register_tiled", 512, 0.08, 0.079, 0.081),
        BenchResult(
            variant="register_tiled", size=(1024, 1024, 1024), params={"BM": 128},
            status="failed", rel_error=0.5, error="wrong result: relative error 0.5 (limit 1e-4)",
        ),
        _ok("cublas", 256, 0.01, 0.009, 0.011),
        _ok("cublas", 512, 0.04, 0.03, 0.05),
        _ok("cublas", 1024, 0.083, 0.082, 0.084),
    ]
    fill_speedups(results, PREVIOUS, "cublas", "naive")
    env = {"gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "driver": "580.159.04",
           "cuda_runtime": "13.0", "cupy": "14.2.0", "sm_clock_mhz": 1980.0}
    return BenchRun(environment=env, settings=BenchSettings(repeats=30, warmup=5),
                    results=results, created_at="2026-11-21T23:59:00+00:00",
                    project=dict(SGEMM_KEYS))


# --- statistics and arithmetic -------------------------------------------------------------


def test_measurement_quantiles_match_numpy() -> None:
    samples = (0.91, 1.07, 0.88, 1.3, 0.95, 1.01, 0.99, 2.4, 1.0)
    m = Measurement(samples)
    assert m.median == pytest.approx(np.median(samples))
    assert m.q1 == pytest.approx(np.percentile(samples, 25))
    assert m.q3 == pytest.approx(np.percentile(samples, 75))
    assert m.min == 0.88 and m.max == 2.4
    assert m.iqr == pytest.approx(np.percentile(samples, 75) - np.percentile(samples, 25))


def test_measurement_warns_only_when_iqr_exceeds_ten_percent_of_median() -> None:
    tight = Measurement((1.00, 1.01, 0.99, 1.02, 0.98), label="tight")
    assert not tight.noisy and tight.warning is None
    wide = Measurement((1.0, 1.3, 0.8, 1.2, 0.9), label="wide")
    assert wide.relative_iqr == pytest.approx(0.3)
    assert wide.noisy
    assert wide.warning.startswith("wide: IQR is 30% of the median")


def test_measurement_rejects_empty_and_negative_samples() -> None:
    with pytest.raises(ValueError):
        Measurement(())
    with pytest.raises(ValueError):
        Measurement((1.0, -0.1))


def test_gflops_counts_two_mnk_flops() -> None:
    # MEASUREMENTS.md: cuBLAS 4096^3 in 2.798 ms is 49.1 TFLOP/s (the project's 2*M*N*K).
    flops = SGEMM.flops(SGEMM.parse_size("4096"))
    assert per_second(flops, 2.798) == pytest.approx(49120.4, rel=1e-5)
    odd = SGEMM.parse_size("1000x1030x999")
    assert per_second(SGEMM.flops(odd), 1.0) == pytest.approx(2 * 1000 * 1030 * 999 / 1e6)
    # and its bytes: A, B read, C read and written
    assert SGEMM.bytes(odd) == 4 * (1000 * 999 + 999 * 1030 + 2 * 1000 * 1030)


def test_speedups_are_reference_time_over_variant_time() -> None:
    run = sample_run()
    tiled = run.result("register_tiled", (512, 512, 512))
    assert tiled.speedup == {"cublas": pytest.approx(0.5), "naive": pytest.approx(20.0),
                             "previous": pytest.approx(4.0)}
    assert run.result("naive", (512, 512, 512)).speedup["previous"] is None
    assert run.result("cublas", (1024, 1024, 1024)).speedup["cublas"] == pytest.approx(1.0)
    # A failed result has no speedups, and the reference of a failed result gives none either.
    failed = run.result("register_tiled", (1024, 1024, 1024))
    assert failed.speedup == {"cublas": None, "naive": None, "previous": None}


def test_missing_reference_gives_none_not_a_guess() -> None:
    results = [_ok("coalesced", 512, 0.32, 0.31, 0.33)]
    fill_speedups(results, PREVIOUS, "cublas", "naive")
    assert results[0].speedup == {"cublas": None, "naive": None, "previous": None}


def test_aggregate_speedup_is_geometric_mean_over_512_and_up() -> None:
    run = sample_run()
    factors = aggregate_speedups(run, "coalesced")
    assert factors["cublas"] == pytest.approx(math.sqrt(0.04 / 0.32 * 0.083 / 2.5))
    assert factors["naive"] == pytest.approx(5.0)
    # 256 is left out: with it the naive factor would still be 5, but cuBLAS's would change.
    assert aggregate_speedups(run, "coalesced", min_size=256)["cublas"] != factors["cublas"]


def test_the_summary_floor_is_the_projects_not_a_fixed_512() -> None:
    assert SGEMM.summary_min_size == 512 and SGEMM.manifest()["summary_min_size"] == 512
    run = sample_run()
    everything = aggregate_speedups(run, "coalesced", min_size=1)
    run.project = {**SGEMM_KEYS, "summary_min_size": None}  # a project without a floor
    assert aggregate_speedups(run, "coalesced") == everything
    assert "Speedup Factors (geometric mean over every size)" in format_table(run)
    assert "\nSpeedup Factors:\n" in format_seed_block(run, "register_tiled")
    # the edge: a floor of 256 counts 256, one of 257 does not
    run.project["summary_min_size"] = 256
    assert aggregate_speedups(run, "coalesced") == everything
    run.project["summary_min_size"] = 257
    assert aggregate_speedups(run, "coalesced") == aggregate_speedups(sample_run(), "coalesced")
    # files written before the key existed keep their 512+ reading
    run.project = {k: v for k, v in SGEMM_KEYS.items() if k != "summary_min_size"}
    assert run.summary_min_size == 512
    run.project = None
    assert run.summary_min_size == 512


def test_summary_min_size_in_the_project_file(tmp_path: Path) -> None:
    shutil.copytree(SCALE, tmp_path / "p")
    path = tmp_path / "p" / "ncuh.toml"
    assert load_project(path).summary_min_size is None
    path.write_text(path.read_text().replace('bytes = "8*n"\n', 'bytes = "8*n"\n'
                                             "summary_min_size = 4096\n", 1))
    assert load_project(path).summary_min_size == 4096
    path.write_text(path.read_text().replace("summary_min_size = 4096", "summary_min_size = 0"))
    result = CliRunner().invoke(main, ["list", "--project", str(path)])
    assert result.exit_code == 2
    assert "key 'problem.summary_min_size': expected a number >= 1" in result.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("128,256", [(128, 128, 128), (256, 256, 256)]),
        ("1000x1030x999", [(1000, 1030, 999)]),
        (" 512 , 64X32X16 ,", [(512, 512, 512), (64, 32, 16)]),
    ],
)
def test_parse_sizes(text: str, expected: list[tuple[int, int, int]]) -> None:
    assert parse_sizes(text, ("M", "N", "K")) == expected
    assert SGEMM.parse_sizes(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "0", "-4", "12x3", "1.5", "4x4x4x4"])
def test_parse_sizes_rejects(text: str) -> None:
    with pytest.raises(BadSizeError):
        parse_sizes(text, ("M", "N", "K"))


def test_references_add_the_first_variant_and_previous_in_chain_order() -> None:
    names = [v.name for v in SGEMM.with_previous([SGEMM.variant("register_tiled")])]
    assert names == ["naive", "blocktile_1d", "register_tiled"]
    chosen = [SGEMM.variant("coalesced"), SGEMM.variant("naive"), SGEMM.variant("coalesced")]
    assert [v.name for v in SGEMM.ordered(chosen)] == ["naive", "coalesced"]
    # the reference is not a variant: bench adds it beside the chain, under its own key
    assert SGEMM.reference.key == "cublas" and "cublas" not in SGEMM.names


# --- table -----------------------------------------------------------------------------------

EXPECTED_TABLE = """\
Benchmark Results (median of 30 event-timed launches, 5 warm-ups, L2 flushed before each)
NVIDIA H100 80GB HBM3 (sm_90) at 1980 MHz; driver 580.159.04, CUDA 13.0, CuPy 14.2.0
C = 1.5*A@B + -0.75*C; speedup = reference time / variant time

variant         size            median ms  IQR ms  GFLOP/s  vs cuBLAS  vs naive  vs prev  rel err
naive           256x256x256        0.2500   0.020      134   0.04000x    1.000x        -  2.5e-07
naive           512x512x512         1.600   0.040      168   0.02500x    1.000x        -  2.5e-07
naive           1024x1024x1024      12.50    0.30      172  0.006640x    1.000x        -  2.5e-07
coalesced       256x256x256       0.05000  0.0020      671    0.2000x    5.000x   5.000x  2.5e-07
coalesced       512x512x512        0.3200   0.020      839    0.1250x    5.000x   5.000x  2.5e-07
coalesced       1024x1024x1024      2.500    0.10      859   0.03320x    5.000x   5.000x  2.5e-07
register_tiled  256x256x256       0.02000  0.0010    1,678    0.5000x    12.50x   2.500x  2.5e-07
register_tiled  512x512x512       0.08000  0.0020    3,355    0.5000x    20.00x   4.000x  2.5e-07
register_tiled  1024x1024x1024  FAILED: wrong result: relative error 0.5 (limit 1e-4)
cublas          256x256x256       0.01000  0.0020    3,355     1.000x    25.00x        -  2.5e-07
cublas          512x512x512       0.04000   0.020    6,711     1.000x    40.00x        -  2.5e-07
cublas          1024x1024x1024    0.08300  0.0020   25,873     1.000x    150.6x        -  2.5e-07

Speedup Factors (geometric mean over sizes with M, N, K >= 512)
variant           cuBLAS   Naive    Prev
naive           0.01288x  1.000x       -
coalesced       0.06442x  5.000x  5.000x
register_tiled   0.5000x  20.00x  4.000x
cublas            1.000x  77.62x       -
"""


def test_table_matches_golden_text() -> None:
    assert format_table(sample_run()) == EXPECTED_TABLE


def test_table_lists_noisy_measurements(golden) -> None:
    run = sample_run()
    run.results[0].warning = "naive 256x256x256: IQR is 30% of the median"
    table = format_table(run)
    assert table.endswith("  naive 256x256x256: IQR is 30% of the median\n")
    golden("noisy_warnings", table[table.index("Warnings"):])


def test_seed_block_has_the_seed_pages_shape(golden) -> None:
    # Compare shared/seeds/000: "512x512 Matrix: 0.230535 ms" and "cuBLAS: 0.5747x".
    block = format_seed_block(sample_run(), "register_tiled")
    assert "512x512x512: 0.080000 ms\n" in block and "cuBLAS: 0.5000x\n" in block
    golden("seed_block", block)


# --- bench.json ------------------------------------------------------------------------------

RESULT_KEYS = {"variant", "size", "params", "samples_ms", "median_ms", "q1_ms", "q3_ms",
               "min_ms", "gflops", "rel_error", "speedup", "status", "error"}


def test_bench_json_has_the_shared_schema_and_round_trips(tmp_path: Path) -> None:
    run = sample_run()
    path = run.save(tmp_path / "out" / "bench.json")
    data = json.loads(path.read_text())
    assert data["schema"] == BENCH_SCHEMA == "ncuh.bench/1"
    assert set(data) == {"schema", "ncuh_version", "created_at", "environment", "settings",
                         "results", "project"}
    assert data["project"]["reference"] == "cublas"
    assert data["settings"]["l2_flush"] is True and data["settings"]["repeats"] == 30
    for result in data["results"]:
        assert set(result) >= RESULT_KEYS
        assert len(result["size"]) == 3
        assert set(result["speedup"]) == {"cublas", "naive", "previous"}
    assert data["results"][8]["status"] == "failed" and data["results"][8]["samples_ms"] == []
    loaded = BenchRun.load(path)
    assert loaded.to_json() == run.to_json()
    assert format_table(loaded) == EXPECTED_TABLE
    assert [p.name for p in path.parent.iterdir()] == ["bench.json"]  # no temporary left


def test_bench_json_is_read_by_the_run_directory_reader(tmp_path: Path) -> None:
    from harness.rundir.manifest import BENCH_SCHEMA as RUNDIR_SCHEMA

    assert RUNDIR_SCHEMA == BENCH_SCHEMA


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{ not json", "bench.json: not valid JSON"),
        ('{"schema": "ncuh.run/1"}', r"not ncuh bench results \(schema 'ncuh.run/1'"),
        ('{"schema": "ncuh.bench/1", "results": [{"variant": "naive"}]}',
         r"results\[0\].size: Field required"),
        ('{"schema": "ncuh.bench/1", "results": [{"variant": "naive", "size": [1], '
         '"status": "great"}]}', r"results\[0\].status: Input should be 'ok', 'failed' or "
                                 r"'unsupported' \(got 'great'\)"),
        ('{"schema": "ncuh.bench/1", "results": [{"variant": "naive", "size": [1], '
         '"status": "ok", "kind": "library"}]}', r"results\[0\].kind: Input should be "
                                                 "'variant', 'reference' or 'limit'"),
    ],
)
def test_bad_bench_json_is_a_report_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bench.json"
    path.write_text(content)
    with pytest.raises(ReportError, match=message):
        BenchRun.load(path)
    with pytest.raises(ReportError, match=r"bench results not found: .*missing\.json"):
        BenchRun.load(tmp_path / "missing.json")


def test_compare_runs_pairs_ok_results() -> None:
    baseline = sample_run()
    current = sample_run()
    current.results[1].median_ms = 0.8  # naive 512 twice as fast
    pairs = {(c.variant, c.size): c.ratio for c in compare_runs(baseline, current)}
    assert pairs[("naive", (512, 512, 512))] == pytest.approx(0.5)
    assert ("register_tiled", (1024, 1024, 1024)) not in pairs
    assert len(pairs) == 11


# --- environment -----------------------------------------------------------------------------

NCU_VERSION_OUTPUT = """NVIDIA (R) Nsight Compute Command Line Profiler
Copyright (c) 2018-2025 NVIDIA Corporation
Version 2025.3.1.0 (build 36398880) (public-release)
"""


def test_parse_ncu_version() -> None:
    assert parse_ncu_version(NCU_VERSION_OUTPUT) == "2025.3.1.0"
    assert parse_ncu_version("") is None and parse_ncu_version("garbage") is None


def test_parse_nvidia_smi_line() -> None:
    fields = parse_nvidia_smi("NVIDIA H100 80GB HBM3, 580.159.04, 1980, 2619, 1980, [N/A]\n")
    assert fields == {"gpu": "NVIDIA H100 80GB HBM3", "driver": "580.159.04",
                      "sm_clock_mhz": 1980.0, "mem_clock_mhz": 2619.0,
                      "max_sm_clock_mhz": 1980.0, "max_mem_clock_mhz": None}
    assert parse_nvidia_smi("") == {} and parse_nvidia_smi("a, b") == {}


def test_environment_fields_are_optional_and_come_from_nvidia_smi(monkeypatch) -> None:
    import harness.gpu.env as gpu_env

    monkeypatch.setattr(gpu_env, "_import_cupy", lambda: None)
    monkeypatch.setattr(gpu_env.shutil, "which", lambda name: f"/usr/bin/{name}")
    calls = []

    def fake(argv):
        calls.append(list(argv))
        if argv[0] == "ncu":
            return NCU_VERSION_OUTPUT
        return "NVIDIA H200, 580.159.03, 1980, 3201, 1980, 3201\n"

    env = collect_environment(runner=fake)
    assert env["gpu"] == "NVIDIA H200" and env["driver"] == "580.159.03"
    assert env["sm_clock_mhz"] == 1980.0 and env["clocks"]["mem_mhz"] == 3201.0
    assert env["clock_source"] == "nvidia-smi" and env["ncu_version"] == "2025.3.1.0"
    assert env["cuda_runtime"] is None and env["compute_capability"] is None
    assert calls[0][:2] == ["nvidia-smi",
                            "--query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,"
                            "clocks.max.mem"]


def test_environment_without_cuda_never_imports_cupy_and_asks_for_compute_cap(
    monkeypatch,
) -> None:
    import harness.gpu.env as gpu_env

    def no_cupy():
        raise AssertionError("CuPy must not be imported with cuda=False")

    monkeypatch.setattr(gpu_env, "_import_cupy", no_cupy)
    monkeypatch.setattr(gpu_env, "_nvml_fields", lambda bus: {})
    monkeypatch.setattr(gpu_env, "driver_cuda_version", lambda: "13.0")
    queries = []

    def old_driver(argv):
        # A driver before 510 rejects the unknown field: the query is asked again without it.
        queries.append(argv[1])
        if "compute_cap" in argv[1]:
            return None
        return "NVIDIA A100-SXM4-80GB, 470.82.01, 210, 1593, 1410, 1593\n"

    env = collect_environment(runner=old_driver, cuda=False, pci_bus_id="0000:07:00.0")
    assert queries == [
        "--query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,"
        "compute_cap",
        "--query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem"]
    assert env["gpu"] == "NVIDIA A100-SXM4-80GB" and env["compute_capability"] is None
    assert env["cuda_driver"] == env["cuda"] == "13.0" and env["cuda_runtime"] is None
    assert env["pci_bus_id"] == "0000:07:00.0"

    env = collect_environment(
        runner=lambda argv: "NVIDIA H200, 580.159.04, 1980, 3201, 1980, 3201, 9.0\n",
        cuda=False)
    assert (env["gpu"], env["compute_capability"]) == ("NVIDIA H200", "9.0")


def test_environment_without_any_tool_is_all_none(monkeypatch) -> None:
    import harness.gpu.env as gpu_env

    monkeypatch.setattr(gpu_env, "_import_cupy", lambda: None)
    env = collect_environment(runner=lambda argv: None)
    assert env["gpu"] is None and env["ncu_version"] is None and env["sm_clock_mhz"] is None
    assert env["python"] and env["ncuh_version"]
    json.dumps(env)  # serialisable as is


# --- tuning --------------------------------------------------------------------------------

H100 = "NVIDIA H100 80GB HBM3"
H200 = "NVIDIA H200"


def test_sweep_enumerates_the_whole_product_and_filters_before_compiling() -> None:
    variant = SGEMM.variant("autotuned")
    assert variant.tunable, "the autotuned variant declares what it sweeps"
    configs = list(enumerate_configs(variant))
    assert len(configs) == math.prod(len(v) for v in variant.tunable.values())
    assert all(set(variant.params) <= set(c) for c in configs)
    size = SGEMM.parse_size("1024")
    valid, rejected = filter_configs(SGEMM, variant, configs, size)
    assert len(valid) + len(rejected) == len(configs)
    assert valid and rejected, "a useful sweep space has both valid and invalid points"
    assert all(SGEMM.problems(variant, p, size) == [] for p in valid)
    assert all(r.status == "rejected" and r.reason for r in rejected)
    assert variant.params in valid or SGEMM.problems(variant, variant.params, size) != []


# Issue 43's sizes: the defaults from 256 up and six shapes that are not square powers of two.
TARGET_SIZES = ["256", "512", "1024", "2048", "4096", "4096x1024x8192", "1024x4096x512",
                "1000", "4097", "8192x8192x256", "333x777x4099"]


def test_the_bundled_project_ships_h200_winners_for_every_target_size(
    tmp_path: Path, monkeypatch
) -> None:
    # A fresh install: no user cache at all. The H200 has a winner of the current source at
    # each target size, so each resolves to one tuned for its own class; the H100's entries
    # were for an older source and are gone (other 9.0 GPUs borrow the H200's: next test).
    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path / "empty"))
    variant = SGEMM.variant("autotuned")
    shipped = TuneCache(shipped_path(SGEMM))
    assert {e["gpu"] for e in shipped.entries} == {H200}
    assert all(e["source_sha256"] == source_fingerprint(SGEMM, variant) for e in shipped.entries)
    assert sorted(e["size"] for e in shipped.entries) == sorted(
        str(SGEMM.parse_size(text)) for text in TARGET_SIZES)
    for text in TARGET_SIZES:
        size = SGEMM.parse_size(text)
        resolved = resolve_params(SGEMM, variant, size, H200)
        assert resolved.origin == "shipped", text
        assert resolved.params == {**variant.params, **shipped.get(H200, "autotuned", size)
                                   ["params"]}
        assert SGEMM.problems(variant, resolved.params, size) == [], text
    # the small sizes take small tiles with K split deep: over a cluster of eight blocks at
    # 256, four blocks through the workspace at 512; 333x777x4099 splits 7 ways through it
    splits = {}
    for text in ("256", "512", "333x777x4099"):
        small = resolve_params(SGEMM, variant, SGEMM.parse_size(text), H200).params
        assert small["BM"] * small["BN"] <= 128 * 32, text
        splits[text] = (small["SPLIT"], small["SERIAL"])
    assert splits == {"256": (8, 0), "512": (4, 1), "333x777x4099": (7, 1)}
    # 1024 splits K over two; 4096 takes the defaults' 64x128 tile without a split
    assert resolve_params(SGEMM, variant, SGEMM.parse_size("1024"), H200).params["SPLIT"] == 2
    big = resolve_params(SGEMM, variant, SGEMM.parse_size("4096"), H200).params
    assert (big["BM"], big["BN"], big["SPLIT"]) == (64, 128, 1)
    # 128 (not a target) takes its nearest class, 256
    near = resolve_params(SGEMM, variant, SGEMM.parse_size("128"), H200)
    assert near.origin == "nearest 256x256x256 (shipped)"
    # another GPU model, of no known compute capability, has no winners: the defaults
    assert resolve_params(SGEMM, variant, SGEMM.parse_size("1024"), "Tesla T4").params \
        == variant.params


def test_a_gpu_model_without_winners_borrows_those_of_its_compute_capability(
        tmp_path: Path) -> None:
    variant = SGEMM.variant("autotuned")
    empty = TuneCache(tmp_path / "none.json")
    shipped = TuneCache(shipped_path(SGEMM))
    borrowed = f"shipped for {H200} (same compute capability 9.0)"
    # the H100 (no entries of the current source) and its PCIe model take the H200's
    for gpu in (H100, "NVIDIA H100 PCIe", "NVIDIA H200 NVL"):
        for text in ("256", "1024", "4097"):
            size = SGEMM.parse_size(text)
            other = resolve_params(SGEMM, variant, size, gpu, compute_capability="9.0",
                                   user=empty, shipped=shipped)
            own = resolve_params(SGEMM, variant, size, H200, user=empty, shipped=shipped)
            assert (other.params, other.origin) == (own.params, borrowed), (gpu, text)
    # another architecture, or an unknown one, keeps the defaults
    size = SGEMM.parse_size("1024")
    for cc in ("8.0", "9.1", None):
        other = resolve_params(SGEMM, variant, size, "NVIDIA A100-SXM4-80GB",
                               compute_capability=cc, user=empty, shipped=shipped)
        assert (other.params, other.origin) == (variant.params, "defaults")
    # a model with entries of its own never borrows, even for a size it has not tuned
    own = resolve_params(SGEMM, variant, SGEMM.parse_size("3000"), H200,
                         compute_capability="9.0", user=empty, shipped=shipped)
    assert "same compute capability" not in own.origin


def test_a_size_without_a_winner_takes_the_nearest_tuned_size_when_valid(tmp_path: Path) -> None:
    variant = SGEMM.variant("autotuned")
    empty = TuneCache(tmp_path / "none.json")
    shipped = TuneCache(shipped_path(SGEMM))
    near_1000 = resolve_params(SGEMM, variant, SGEMM.parse_size("1000x1030x999"), H200,
                               user=empty, shipped=shipped)
    assert near_1000.origin == "nearest 1000x1000x1000 (shipped)"
    assert near_1000.params == resolve_params(SGEMM, variant, SGEMM.parse_size("1000"), H200,
                                              user=empty, shipped=shipped).params
    # 3000 is nearer 4096 than 2048 in log-distance (log 3000/2048 = 0.38 > log 4096/3000 = 0.31)
    near = resolve_params(SGEMM, variant, SGEMM.parse_size("3000"), H200, user=empty,
                          shipped=shipped)
    assert near.origin == "nearest 4096x4096x4096 (shipped)"
    # a winner the constraints refuse at this size is not taken: the defaults instead
    bad = TuneCache(tmp_path / "bad.json")
    bad.put({"variant": "autotuned", "gpu": "GPU", "size": "512x512x512",
             "params": {"WM": 64, "WN": 64, "TM": 8, "TN": 8},
             "source_sha256": source_fingerprint(SGEMM, variant)})
    fallback = resolve_params(SGEMM, variant, SGEMM.parse_size("256"), "GPU", user=bad,
                              shipped=empty)
    assert fallback == type(fallback)(dict(variant.params), "defaults")


def test_user_cache_overrides_shipped_winners_and_round_trips(tmp_path: Path,
                                                              monkeypatch) -> None:
    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path / "cache"))
    assert cache_path(SGEMM) == tmp_path / "cache" / "sgemm" / "tuning.json"
    variant = SGEMM.variant("autotuned")
    size = SGEMM.parse_size("1024")
    valid, _ = filter_configs(SGEMM, variant, list(enumerate_configs(variant)), size)
    shipped_winner = TuneCache(shipped_path(SGEMM)).get(H200, "autotuned", size)["params"]
    winner = next(p for p in valid if p != variant.params and p != shipped_winner)

    cache = TuneCache(cache_path(SGEMM))
    cache.put({"variant": "autotuned", "gpu": H200, "size": str(size), "params": winner,
               "median_ms": 0.1, "source_sha256": source_fingerprint(SGEMM, variant)})
    cache.save("sgemm")
    data = json.loads(cache_path(SGEMM).read_text())
    assert data["schema"] == TUNING_SCHEMA and data["entries"][0]["params"] == winner
    assert resolve_params(SGEMM, variant, size, H200) == type(
        resolve_params(SGEMM, variant, size, H200))(winner, "tuned")
    # other sizes still come from the shipped file
    assert resolve_params(SGEMM, variant, SGEMM.parse_size("4096"), H200).origin == "shipped"
    # a non-tunable variant never consults any cache
    naive = SGEMM.variant("naive")
    assert resolve_params(SGEMM, naive, size, H100).params == naive.params


def test_stale_or_corrupt_cache_falls_back_to_defaults(tmp_path: Path) -> None:
    variant = SGEMM.variant("autotuned")
    size = SGEMM.parse_size("512")
    path = tmp_path / "tuning.json"
    cache = TuneCache(path)
    cache.put({"variant": "autotuned", "gpu": "GPU", "size": str(size), "params": {"BM": 64},
               "source_sha256": "0" * 16})
    cache.save()
    empty = TuneCache(tmp_path / "missing.json")
    assert resolve_params(SGEMM, variant, size, "GPU", user=TuneCache(path),
                          shipped=empty).params == variant.params
    path.write_text("{ truncated")
    assert TuneCache(path).entries == []


# --- CLI errors ------------------------------------------------------------------------------


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_bench_unknown_variant_is_exit_2_listing_names() -> None:
    result = _invoke("bench", "--variant", "nosuch", "--sizes", "128")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ncuh: error:")
    for variant in SGEMM.variants:
        assert variant.name in lines[0]


@pytest.mark.parametrize("sizes", ["12x3", "abc", "0", ","])
def test_bench_bad_sizes_is_exit_2(sizes: str) -> None:
    result = _invoke("bench", "--variant", "naive", "--sizes", sizes)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        line for line in result.output.strip().splitlines() if line.startswith("ncuh: error:")
    ]
    assert "bad --sizes" in result.output


def test_bench_needs_a_variant_choice() -> None:
    result = _invoke("bench", "--sizes", "128")
    assert result.exit_code == 2 and "--all" in result.output
    result = _invoke("bench", "--all", "--variant", "naive")
    assert result.exit_code == 2 and "not both" in result.output


@pytest.mark.skipif(gpu_unavailable_reason() is None, reason="this machine has a GPU")
def test_bench_without_gpu_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # The real entry point in a fresh interpreter: no traceback, nothing written.
    completed = subprocess.run(
        [sys.executable, "-m", "harness", "bench", "--variant", "naive", "--sizes", "128",
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
    )
    assert completed.returncode == 2
    assert completed.stdout == ""
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith("ncuh: error: no NVIDIA GPU visible")
    assert not (tmp_path / "out").exists()


def _cupy_whose_count(answer):  # type: ignore[no-untyped-def]
    import types

    def count() -> int:
        if isinstance(answer, BaseException):
            raise answer
        return answer

    return types.SimpleNamespace(cuda=types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=count)))


class CUDARuntimeError(RuntimeError):
    """CuPy's error type, by name."""


@pytest.mark.parametrize(("answer", "visible", "line"), [
    (CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for "
                      "CUDA runtime version"), None,
     "no NVIDIA GPU visible (CUDA says CUDARuntimeError: cudaErrorInsufficientDriver: CUDA "
     "driver version is insufficient for CUDA runtime version); where there is a GPU, its "
     "driver is missing or older than CuPy's CUDA"),
    (CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected"), None,
     "no NVIDIA GPU visible (CUDA says CUDARuntimeError: cudaErrorNoDevice: no CUDA-capable "
     "device is detected)"),
    (0, "", "no NVIDIA GPU visible (CUDA_VISIBLE_DEVICES='' hides every one)"),
    (0, None, "no NVIDIA GPU visible (CUDA sees no device)"),
    (1, None, None),
])
def test_the_no_gpu_line_says_so_first_and_why_after(
        monkeypatch: pytest.MonkeyPatch, answer, visible: str | None, line: str | None) -> None:
    from harness.gpu import env

    monkeypatch.setattr(env, "_import_cupy", lambda: _cupy_whose_count(answer))
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert env.gpu_unavailable_reason() == line


# --- a real run --------------------------------------------------------------------------------

H200_BENCH = Path(__file__).parent / "fixtures" / "h200_bench_small.json"


def test_recorded_h200_run_loads_and_its_numbers_are_consistent() -> None:
    # `ncuh bench --variant naive --variant register_tiled --variant cublas --sizes
    # 512,1024,4096 --repeats 20` on an H200 (references added blocktile_1d and autotuned).
    run = BenchRun.load(H200_BENCH)
    assert run.environment["gpu"] == "NVIDIA H200"
    assert run.environment["sm_clock_mhz"] == 1980.0
    assert run.settings.repeats == 20 and run.settings.l2_flush
    cublas = run.result("cublas", (4096, 4096, 4096))
    assert cublas.median_ms == pytest.approx(2.933, abs=5e-4)
    assert cublas.gflops == pytest.approx(46859, abs=1)
    for result in run.results:
        assert result.status == "ok" and len(result.samples_ms) == 20
        assert Measurement(tuple(result.samples_ms)).median == pytest.approx(result.median_ms)
        assert result.gflops == pytest.approx(gflops(result.size, result.median_ms))
    stored = [dict(r.speedup) for r in run.results]
    # Recorded when cuBLAS was the chain's last link (its "previous" was autotuned).
    previous = {**{v.name: v.previous for v in SGEMM.variants}, "cublas": "autotuned"}
    fill_speedups(run.results, previous, "cublas", "naive")
    assert [r.speedup for r in run.results] == stored
    table = format_table(run)
    assert "cublas          4096x4096x4096      2.933" in table
    assert "NVIDIA H200 (sm_90) at 1980 MHz; driver 580.159.04" in table


def test_the_current_devices_name_and_compute_capability(monkeypatch) -> None:
    import types

    from harness.gpu import env as gpu_env

    props = {"name": b"NVIDIA H100 PCIe", "major": 9, "minor": 0}
    runtime = types.SimpleNamespace(getDeviceProperties=lambda device: props)
    shim = types.SimpleNamespace(cuda=types.SimpleNamespace(
        runtime=runtime, Device=lambda: types.SimpleNamespace(id=0)))
    monkeypatch.setattr(gpu_env, "_import_cupy", lambda: shim)
    assert gpu_env.current_gpu_name() == "NVIDIA H100 PCIe"
    assert gpu_env.current_compute_capability() == "9.0"
    monkeypatch.setattr(gpu_env, "_import_cupy", lambda: None)
    assert gpu_env.current_gpu_name() is None and gpu_env.current_compute_capability() is None


def test_a_sweep_whose_constraints_raise_is_a_project_error_not_a_traceback() -> None:
    from harness.errors import ProjectError

    project = load_project(SCALE)
    variant = project.variant("nvrtc")

    def broken(size, params):
        raise KeyError("BLOCK_SIZE")

    object.__setattr__(variant, "constraints", broken)
    configs = list(enumerate_configs(variant))
    with pytest.raises(ProjectError, match=r"\[\[variant\]\] #1 \('nvrtc'\): key 'constraints' "
                                           r"raised KeyError: 'BLOCK_SIZE' at size 4096"):
        filter_configs(project, variant, configs, project.parse_size("4096"))
