"""A real small bench on the GPU: correctness first, event timing, bench.json, autotune cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.gpu.bench import BenchRun, run_bench
from harness.project import load_project
from harness.project.locate import default_project_path

pytestmark = pytest.mark.gpu

SGEMM = load_project(default_project_path())
VARIANTS = ["naive", "register_tiled", "cublas"]
SIZES = [256, 512]


@pytest.fixture(scope="module")
def small_run() -> BenchRun:
    # The chain's two variants plus the reference (added by references=True with the
    # previous iteration, which is then dropped: register_tiled's previous is not timed here).
    run = run_bench(SGEMM, VARIANTS[:2], [SGEMM.size([n]) for n in SIZES], repeats=7, warmup=2,
                    references=True)
    run.results = [r for r in run.results if r.variant in VARIANTS]
    from harness.gpu.bench import fill_speedups

    fill_speedups(run.results, {"register_tiled": "blocktile_1d"}, "cublas", "naive")
    return run


def test_small_bench_times_every_variant_after_verifying_it(small_run: BenchRun) -> None:
    assert [(r.variant, r.size[0]) for r in small_run.results] == [
        (v, n) for v in VARIANTS for n in SIZES
    ]
    assert [r.kind for r in small_run.results] == ["variant"] * 4 + ["reference"] * 2
    for result in small_run.results:
        assert result.status == "ok", result.error
        assert result.rel_error is not None and result.rel_error < 1e-4
        assert len(result.samples_ms) == 7 and all(s > 0 for s in result.samples_ms)
        assert result.min_ms <= result.q1_ms <= result.median_ms <= result.q3_ms
        n = result.size[0]
        assert result.gflops == pytest.approx(2 * n**3 / (result.median_ms * 1e-3) / 1e9)
    cublas = small_run.result("cublas", (512, 512, 512))
    tiled = small_run.result("register_tiled", (512, 512, 512))
    naive = small_run.result("naive", (512, 512, 512))
    assert cublas.speedup["cublas"] == pytest.approx(1.0)
    assert tiled.speedup["cublas"] == pytest.approx(cublas.median_ms / tiled.median_ms)
    assert tiled.speedup["naive"] == pytest.approx(naive.median_ms / tiled.median_ms)
    # register_tiled's previous iteration (blocktile_1d) was not in the run.
    assert tiled.speedup["previous"] is None
    # A register-tiled kernel beats the naive one by a wide margin on any modern GPU.
    assert tiled.speedup["naive"] > 2


def test_small_bench_records_the_environment(small_run: BenchRun) -> None:
    env = small_run.environment
    assert env["gpu"] and env["compute_capability"] and env["sm_count"] > 0
    assert env["cuda_runtime"] and env["cupy"]
    assert env["l2_flush_bytes"] >= 2 * env["l2_cache_bytes"]
    # every timed result read the clocks (blocktile_1d too, dropped from the results above)
    assert len(env["clocks_after_timing"]) == len(small_run.results) + len(SIZES)


def test_small_bench_json_round_trips(small_run: BenchRun, tmp_path: Path) -> None:
    path = small_run.save(tmp_path / "bench.json")
    data = json.loads(path.read_text())
    assert data["schema"] == "ncuh.bench/1" and data["settings"]["l2_flush"] is True
    assert data["project"]["name"] == "sgemm" and data["project"]["reference"] == "cublas"
    assert BenchRun.load(path).to_json() == small_run.to_json()


def test_bench_command_writes_json_and_prints_table(tmp_path: Path) -> None:
    from harness.cli import main

    result = CliRunner().invoke(main, [
        "bench", "--variant", "coalesced", "--sizes", "256,1000x1030x999", "--repeats", "5",
        "--out", str(tmp_path / "run"),
    ])
    assert result.exit_code == 0, result.output
    run = BenchRun.load(tmp_path / "run" / "bench.json")
    # --references (the default) adds naive and cuBLAS, coalesced's previous is naive.
    assert run.variants == ["naive", "coalesced", "cublas"]
    assert all(r.status == "ok" for r in run.results), [r.error for r in run.results]
    assert "coalesced  1000x1030x999" in result.output
    assert "Speedup Factors" in result.output and "vs cuBLAS" in result.output


def test_autotune_sweep_caches_the_winner(tmp_path: Path, monkeypatch) -> None:
    from harness.gpu.env import current_gpu_name
    from harness.gpu.sweep import autotune
    from harness.gpu.tuning import TuneCache, cache_path, resolve_params

    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path))
    variant = SGEMM.variant("autotuned")
    size = SGEMM.parse_size("512")
    result = autotune(SGEMM, variant, size, repeats=5, warmup=1, limit=3)
    assert result.rejected > 0 and result.timed + result.failed == 3
    assert result.best is not None
    assert result.best.median_ms == min(c.median_ms for c in result.candidates
                                        if c.status == "ok")
    entry = TuneCache(cache_path(SGEMM)).get(current_gpu_name(), "autotuned", size)
    assert entry["params"] == result.best.params
    resolved = resolve_params(SGEMM, variant, size, current_gpu_name())
    assert resolved.params == result.best.params and resolved.origin == "tuned"


def test_a_fresh_install_finds_the_shipped_winners_on_h100_and_h200(tmp_path: Path,
                                                                   monkeypatch) -> None:
    """The README's main command on a machine with no user cache (issue: 0.32x at 1024). The
    H200's winners are shipped; an H100 (the same compute capability) borrows them."""
    from harness.gpu.bench import BenchSettings, bench_one
    from harness.gpu.env import current_gpu_name

    gpu = current_gpu_name()
    if gpu not in ("NVIDIA H100 80GB HBM3", "NVIDIA H200"):
        pytest.skip(f"no shipped winners for {gpu}")
    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path / "empty"))
    result = bench_one(SGEMM, SGEMM.variant("autotuned"), SGEMM.parse_size("1024"),
                       BenchSettings(repeats=5, warmup=2))
    assert result.status == "ok", result.error
    assert result.tuning == ("shipped" if gpu == "NVIDIA H200" else
                             "shipped for NVIDIA H200 (same compute capability 9.0)")
    # K split over two blocks, through the global workspace (SERIAL)
    assert result.params["SPLIT"] == 2 and result.params["SERIAL"] == 1
