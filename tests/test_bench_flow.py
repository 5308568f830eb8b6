"""The bench flow on the CPU: a project whose callables compute with NumPy, run through the real
resolve -> check -> verify -> time -> speedups -> table path (NumPy stands in for CuPy, and
the CUDA-event timer for a wall clock), so the plumbing is tested where there is no GPU."""

from __future__ import annotations

import time
import types
from pathlib import Path

import numpy as np
import pytest

from harness.gpu import backend, bench, verify
from harness.gpu.bench_table import format_table
from harness.gpu.timing import Measurement
from harness.project import load_project

PROJECT = """
[project]
name = "numpy-scale"
description = "out = 2*x on the host"
module = "host_project"

[problem]
dims = ["n"]
default_sizes = ["1000", "4096"]
profile_size = "1000"
inputs = "make_inputs"
outputs = ["out"]
expected = "expected"
tolerance = 1e-6
flops = "n"
bytes = "8*n"

[reference]
name = "NumPy"
call = "numpy_scale"

[[limit]]
name = "copy"
call = "copy"
bytes = "8*n"

[[variant]]
name = "loop"
call = "loop_scale"
capture = "regex:x"
constraints = "check"
params = { STEP = 1 }

[[variant]]
name = "wrong"
call = "wrong_scale"
capture = "regex:y"

[[variant]]
name = "tuned"
call = "loop_scale"
capture = "regex:z"
constraints = "check"
params = { STEP = 1 }
tunable = { STEP = [1, 2] }
"""

MODULE = '''
import numpy as np

def make_inputs(size, seed):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(size.n, dtype=np.float32),
            "out": np.empty(size.n, dtype=np.float32)}

def expected(inputs, size):
    return {"out": 2.0 * inputs["x"].astype(np.float64)}

def numpy_scale(inputs, size):
    np.multiply(inputs["x"], np.float32(2), out=inputs["out"])

def copy(inputs, size):
    inputs["out"][:] = inputs["x"]

def loop_scale(inputs, size, params):
    inputs["out"][:] = inputs["x"] * np.float32(2)

def wrong_scale(inputs, size, params):
    inputs["out"][: size.n // 2] = inputs["x"][: size.n // 2] * np.float32(2)

def check(size, params):
    if size is not None and size.n % 1000 and params["STEP"] == 1:
        return ["STEP=1 needs n to be a multiple of 1000"]
    return []
'''


@pytest.fixture
def host_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "ncuh.toml").write_text(PROJECT)
    (tmp_path / "host_project.py").write_text(MODULE)
    stream = types.SimpleNamespace(synchronize=lambda: None)
    shim = types.SimpleNamespace(**{name: getattr(np, name) for name in (
        "asarray", "float64", "isfinite", "abs", "linalg", "maximum", "nan", "iinfo")},
        cuda=types.SimpleNamespace(get_current_stream=lambda: stream))
    for module in (backend, verify, bench):
        monkeypatch.setattr(module, "require_gpu", lambda: shim)

    def timer(launch, *, repeats, warmup, flush_l2, flusher, label):
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            launch()
            samples.append(max((time.perf_counter() - start) * 1e3, 1e-6))
        return Measurement(tuple(samples), label=label)

    monkeypatch.setattr(bench, "time_launches", timer)
    monkeypatch.setattr(bench, "current_gpu_name", lambda: "Host")
    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path / "cache"))
    return load_project(tmp_path)


def test_every_kind_of_result_comes_out_of_one_run(host_project, golden) -> None:
    run = bench.run_bench(host_project, ["loop", "wrong", "tuned"],
                          list(host_project.default_sizes), repeats=3, warmup=0,
                          l2_flush=False, references=True)
    status = {(r.variant, r.size[0]): r.status for r in run.results}
    assert status == {
        ("loop", 1000): "ok", ("loop", 4096): "unsupported",
        ("wrong", 1000): "failed", ("wrong", 4096): "failed",
        ("tuned", 1000): "ok", ("tuned", 4096): "unsupported",
        ("numpy", 1000): "ok", ("numpy", 4096): "ok", ("copy", 1000): "ok", ("copy", 4096): "ok",
    }
    loop = run.result("loop", (1000,))
    assert loop.kind == "variant" and loop.rel_error == 0.0 and loop.tuning == "defaults"
    assert loop.gflops == pytest.approx(1000 / loop.median_ms / 1e6)
    assert loop.gbps == pytest.approx(8000 / loop.median_ms / 1e6)
    assert loop.speedup["numpy"] == pytest.approx(run.result("numpy", (1000,)).median_ms
                                                  / loop.median_ms)
    assert loop.speedup["loop"] == pytest.approx(1.0) and loop.speedup["previous"] is None
    wrong = run.result("wrong", (1000,))
    # Half of the output was never written: it stayed NaN, and nothing was timed.
    assert wrong.samples_ms == [] and wrong.error == "wrong result: 500 non-finite output " \
        "elements in out"
    assert run.result("loop", (4096,)).error == "STEP=1 needs n to be a multiple of 1000"
    limit = run.result("copy", (4096,))
    assert limit.kind == "limit" and limit.rel_error is None and limit.speedup == {}
    assert limit.gbps == pytest.approx(8 * 4096 / limit.median_ms / 1e6)
    assert run.result("numpy", (4096,)).kind == "reference"
    assert run.project["reference"] == "numpy" and run.project["baseline"] == "loop"

    table = format_table(run)
    header = table.splitlines()[4].split()
    assert header == ["variant", "size", "median", "ms", "IQR", "ms", "GFLOP/s", "GB/s",
                      "vs", "NumPy", "vs", "loop", "vs", "prev", "rel", "err"]
    golden("failed_row_and_reference_line", "\n".join(
        [table.splitlines()[2], *(line for line in table.splitlines()
                                  if line.startswith("wrong    1000"))]))


def test_tuned_winners_and_a_size_the_winner_cannot_take(host_project, tmp_path: Path) -> None:
    from harness.gpu.tuning import TuneCache, cache_path, source_fingerprint

    tuned = host_project.variant("tuned")
    cache = TuneCache(cache_path(host_project))
    cache.put({"variant": "tuned", "gpu": "Host", "size": "1000", "params": {"STEP": 2},
               "source_sha256": source_fingerprint(host_project, tuned)})
    cache.save("numpy-scale")
    run = bench.run_bench(host_project, ["tuned"], [host_project.parse_size("1000"),
                                                    host_project.parse_size("4096")],
                          repeats=2, warmup=0, l2_flush=False)
    first, second = run.results
    assert (first.tuning, first.params) == ("tuned", {"STEP": 2})
    # 4096 has no winner: the nearest (1000) is taken, and STEP=2 takes any n
    assert (second.tuning, second.params, second.status) == ("nearest 1000 (tuned)",
                                                              {"STEP": 2}, "ok")


def test_the_runner_checks_warms_up_and_launches_once(host_project, monkeypatch) -> None:
    from harness.errors import UnsupportedShapeError
    from harness.gpu import runner

    calls = []
    runtime = types.SimpleNamespace(deviceSynchronize=lambda: None)
    shim = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime))
    monkeypatch.setattr(runner, "require_gpu", lambda: shim)
    monkeypatch.setattr(runner, "cuda_fields", lambda cupy: {"gpu": "Host"})
    monkeypatch.setattr(runner, "current_gpu_name", lambda: "Host")
    original = host_project.variant("loop").call

    def counting(inputs, size, params):
        calls.append(size.n)
        original(inputs, size, params)

    object.__setattr__(host_project.variant("loop"), "call", counting)
    size = host_project.parse_size("2000")
    result = runner.run(host_project, "loop", size, params=None, warmup=2, label="loop_2000",
                        capture="kernel")
    # warm-up, the captured launch, then verification's own launch (count-based capture)
    assert calls == [2000] * 4
    assert result.rel_error == 0.0 and result.params == {"STEP": 1} and result.size == [2000]
    assert result.tuning == "defaults" and result.environment == {"gpu": "Host"}
    with pytest.raises(UnsupportedShapeError, match="multiple of 1000"):
        runner.run(host_project, "loop", host_project.parse_size("1500"), params=None,
                   warmup=0, label="x", capture="kernel")


def test_a_sweep_keeps_the_fastest_valid_configuration(host_project, monkeypatch) -> None:
    from harness.gpu import sweep
    from harness.gpu.tuning import TuneCache, cache_path, resolve_params

    monkeypatch.setattr(sweep, "require_gpu", lambda: None)
    monkeypatch.setattr(sweep, "L2Flusher", lambda cupy: None)
    monkeypatch.setattr(sweep, "current_gpu_name", lambda: "Host")
    tuned = host_project.variant("tuned")
    size = host_project.parse_size("4096")  # STEP=1 is refused here: one rejected, one timed
    result = sweep.autotune(host_project, tuned, size, repeats=2, warmup=0)
    assert (result.rejected, result.failed, result.timed) == (1, 0, 1)
    assert result.best.params == {"STEP": 2}
    entry = TuneCache(cache_path(host_project)).get("Host", "tuned", size)
    assert entry["params"] == {"STEP": 2} and entry["configs"]["rejected"] == 1
    assert resolve_params(host_project, tuned, size, "Host").origin == "tuned"


def test_the_bench_command_prints_the_table_and_writes_bench_json(host_project, tmp_path,
                                                                 monkeypatch) -> None:
    from click.testing import CliRunner

    import harness.gpu
    from harness.cli import main

    monkeypatch.setattr(harness.gpu, "require_gpu", lambda: None)  # as the command looks it up
    monkeypatch.setattr(bench, "L2Flusher", lambda cupy: None)
    result = CliRunner().invoke(main, ["bench", "--project", str(host_project.path), "--variant",
                                       "loop", "--sizes", "1000", "--repeats", "2",
                                       "--no-references", "--out", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    run = bench.BenchRun.load(tmp_path / "b" / "bench.json")
    assert run.variants == ["loop"] and run.results[0].status == "ok"
    assert run.project["path"] == str(host_project.path)
    assert "loop     1000" in result.stdout and "vs NumPy" in result.stdout
    failing = CliRunner().invoke(main, ["bench", "--project", str(host_project.path),
                                        "--variant", "wrong", "--sizes", "1000", "--out",
                                        str(tmp_path / "w")])
    assert failing.exit_code == 1
    assert "ncuh: 1 result(s) failed verification: wrong 1000" in failing.stderr


def test_constraints_that_raise_at_one_size_fail_only_that_result(host_project) -> None:
    loop = host_project.variant("loop")

    def picky(size, params):
        if size is not None and size.n == 3000:
            raise RuntimeError("no 3000")
        return []

    object.__setattr__(loop, "constraints", picky)
    run = bench.run_bench(host_project, ["loop"], [host_project.parse_size("1000"),
                                                   host_project.parse_size("3000")],
                          repeats=2, warmup=0, l2_flush=False)
    first, second = run.results
    assert first.status == "ok"
    assert second.status == "failed" and second.samples_ms == []
    assert second.error.endswith("[[variant]] #1 ('loop'): key 'constraints' raised "
                                 "RuntimeError: no 3000 at size 3000")


def test_a_work_model_that_fails_at_one_size_fails_only_that_result(host_project, golden) -> None:
    def flops(size):
        return size.n / (size.n - 3000)

    object.__setattr__(host_project, "flops", flops)
    run = bench.run_bench(host_project, ["loop"], [host_project.parse_size("1000"),
                                                   host_project.parse_size("3000")],
                          repeats=2, warmup=0, l2_flush=False)
    first, second = run.results
    assert first.status == "ok" and first.gflops == pytest.approx(-0.5 / first.median_ms / 1e6)
    assert second.status == "failed"
    assert "ZeroDivisionError" in second.error
    golden("work_model_fails", second.error)


def test_a_sweep_compiles_its_configurations_ahead_in_threads(host_project, monkeypatch) -> None:
    import threading

    from harness.errors import NcuhError
    from harness.gpu import sweep
    from harness.project.locate import default_project_path

    # A Python launcher compiles nothing (and needs no GPU to say so).
    tuned = host_project.variant("tuned")
    assert sweep.compile_ahead(host_project, tuned, host_project.parse_size("1000"),
                               [{"STEP": 1}, {"STEP": 2}]) == 0.0

    class Device:  # CuPy's: the current device's id, and a context that makes it current
        def __init__(self, device_id: int = 0) -> None:
            self.id = device_id

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            return None

    sgemm = load_project(default_project_path())
    variant = sgemm.variant("autotuned")
    configs = [{**variant.params, "SPLIT": split} for split in (1, 2, 4, 8)]
    both_running = threading.Barrier(2, timeout=60)  # breaks unless two compiles overlap
    prepared = []

    def prepare(project, name, size, params):
        if params["SPLIT"] in (1, 2):
            both_running.wait()
        prepared.append(params["SPLIT"])
        if params["SPLIT"] == 8:
            raise NcuhError("autotuned failed to compile")  # left for its bench_one
        if params["SPLIT"] == 4:
            raise ZeroDivisionError("the project's macros raised")  # so is any other error

    monkeypatch.setattr(sweep, "require_gpu",
                        lambda: types.SimpleNamespace(cuda=types.SimpleNamespace(Device=Device)))
    monkeypatch.setattr(sweep, "prepare", prepare)
    seconds = sweep.compile_ahead(sgemm, variant, sgemm.parse_size("512"), configs, workers=2)
    assert sorted(prepared) == [1, 2, 4, 8] and seconds >= 0.0
