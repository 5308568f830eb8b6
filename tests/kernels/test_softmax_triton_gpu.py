"""The Triton softmax chain on a GPU: every variant, and PyTorch, against torch.softmax.

Two checks per variant and shape: the project's own (the float64 truth, within the bound of
`tolerance`, after NaN-poisoning `out`), and torch.testing.assert_close against
`torch.softmax` on the same x (float32 defaults: rtol 1.3e-6, atol 1e-5). The shapes cover one
row, one column, odd and non-power-of-two rows, rows longer than a chunk, the longest row
held in registers and rows only `online` takes. Needs CuPy, torch and Triton and a CUDA GPU;
skipped with one reason where any is missing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.gpu.backend import prepare, prepare_call
from harness.gpu.verify import verify
from harness.project import load_project

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = pytest.mark.gpu

FOLDER = Path(__file__).resolve().parents[2] / "kernels" / "softmax_triton"
PROJECT = load_project(FOLDER / "ncuh.toml")
MODULE = sys.modules["softmax_triton_project"]  # the project's module, loaded with it
SHAPES = ["1x1", "1x7", "1x8192", "3x1000", "37x333", "64x4097", "4099x256", "5x32768",
          "2x65536", "1x131071", "8192x8192"]


def _cases():
    """(variant, shape) pairs the variant's constraints accept; the rest must be refused
    only for rows longer than registers hold."""
    cases = []
    for variant in PROJECT.variants:
        for shape in SHAPES:
            size = PROJECT.parse_size(shape)
            if variant.constraints(size, dict(variant.params)):
                assert variant.name in ("fused", "multi_row") and size.cols > 32768
                continue
            cases.append((variant.name, shape))
    return cases


@pytest.fixture(scope="module", autouse=True)
def _torch_on_gpu():
    if not torch.cuda.is_available():
        pytest.skip("gpu test: torch sees no CUDA device")


def _check(runnable, size, seed):
    """The harness's check, then the same launch on new inputs against torch.softmax."""
    result = verify(PROJECT, runnable, size, seed=seed)
    assert result.ok, result.message
    inputs = PROJECT.inputs(size, seed)
    inputs["out"].fill(float("nan"))
    runnable(inputs)
    as_torch = MODULE.as_torch
    torch.testing.assert_close(as_torch(inputs["out"]),
                               torch.softmax(as_torch(inputs["x"]), dim=-1))


@pytest.mark.parametrize(("name", "shape"), _cases())
def test_variant_matches_torch_softmax(name, shape):
    size = PROJECT.parse_size(shape)
    _check(prepare(PROJECT, name, size), size, seed=size.rows * 7 + size.cols)


@pytest.mark.parametrize("shape", SHAPES)
def test_fused_and_multi_row_refuse_only_rows_past_registers(shape):
    size = PROJECT.parse_size(shape)
    for name in ("fused", "multi_row"):
        variant = PROJECT.variant(name)
        assert bool(variant.constraints(size, dict(variant.params))) == (size.cols > 32768)


@pytest.mark.parametrize(
    "params",
    [
        # one program per SM: every program walks many tiles
        {"TILE": 2048, "PER_THREAD": 8, "PROGRAMS_PER_SM": 1, "STAGES": 3},
        {"TILE": 16384, "PER_THREAD": 32, "PROGRAMS_PER_SM": 4, "STAGES": 1},
        {"TILE": 4096, "PER_THREAD": 16, "PROGRAMS_PER_SM": 0, "STAGES": 2},
    ],
    ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()),
)
@pytest.mark.parametrize("shape", ["4099x256", "37x333", "1000x1000", "3x8192"])
def test_multi_row_shapes_match(params, shape):
    size = PROJECT.parse_size(shape)
    _check(prepare(PROJECT, "multi_row", size, params), size, seed=11)


def _shipped():
    """(variant, params) of every winner in the shipped tuning.json (none before one ships)."""
    path = FOLDER / "tuning.json"
    if not path.is_file():
        return []
    entries = json.loads(path.read_text())["entries"]
    found = {(e["variant"], json.dumps(e["params"], sort_keys=True)) for e in entries}
    return [(name, json.loads(params)) for name, params in sorted(found)]


@pytest.mark.parametrize(("name", "params"), _shipped(),
                         ids=lambda v: v if isinstance(v, str) else
                         ",".join(f"{k}={n}" for k, n in v.items()))
@pytest.mark.parametrize("shape", ["37x333", "4099x256", "3x8192"])
def test_shipped_winners_match(name, params, shape):
    """What the bench runs where a winner ships is right at odd shapes too."""
    size = PROJECT.parse_size(shape)
    if PROJECT.variant(name).constraints(size, params):
        pytest.skip(f"{name} {params} does not take {shape}")
    _check(prepare(PROJECT, name, size, params), size, seed=13)


@pytest.mark.parametrize("params", [{"BLOCK": 32, "WARPS": 1}, {"BLOCK": 4096, "WARPS": 16}],
                         ids=["BLOCK=32", "BLOCK=4096"])
@pytest.mark.parametrize("name", ["naive", "online"])
def test_chunk_widths_match(name, params):
    size = PROJECT.parse_size("33x5000")
    _check(prepare(PROJECT, name, size, params), size, seed=5)


@pytest.mark.parametrize("shape", ["1x7", "37x333", "4099x256", "8192x8192", "2x65536"])
def test_pytorch_reference_matches(shape):
    size = PROJECT.parse_size(shape)
    reference = prepare_call(PROJECT.reference.name, PROJECT.reference.call, size)
    result = verify(PROJECT, reference, size, seed=3)
    assert result.ok, result.message


def test_copy_limit_copies_x():
    import cupy

    size = PROJECT.parse_size("1000x1000")
    inputs = PROJECT.inputs(size, 3)
    PROJECT.limits[0].call(inputs, size)
    cupy.cuda.get_current_stream().synchronize()
    assert bool((inputs["out"] == inputs["x"]).all())


def test_launchers_queue_on_cupys_current_stream():
    """The harness times on CuPy's current stream; Triton launches on torch's: inside a
    launcher they are one stream, the default one or any other CuPy makes current."""
    import cupy

    with MODULE.on_cupy_stream():
        assert torch.cuda.current_stream().cuda_stream == cupy.cuda.get_current_stream().ptr
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream, MODULE.on_cupy_stream():
        assert torch.cuda.current_stream().cuda_stream == stream.ptr != 0


@pytest.mark.parametrize("name", [variant.name for variant in PROJECT.variants])
def test_every_variant_is_right_on_another_cupy_stream(name):
    import cupy

    size = PROJECT.parse_size("2048x2048")
    runnable = prepare(PROJECT, name, size)
    inputs = PROJECT.inputs(size, 9)
    truth = PROJECT.expected(inputs, size)["out"]
    # a non-blocking stream does not wait for the default one, where the inputs were made
    cupy.cuda.runtime.deviceSynchronize()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        inputs["out"].fill(cupy.nan)
        runnable(inputs)
        stream.synchronize()
    assert int(cupy.isnan(inputs["out"]).sum()) == 0
    assert float(cupy.abs(inputs["out"] - truth).max()) < 1e-5


def test_naive_leaves_nothing_for_the_next_call():
    """Its intermediates live in the inputs: a second call on new data recomputes them all."""
    import cupy

    size = PROJECT.parse_size("64x4097")
    runnable = prepare(PROJECT, "naive", size)
    inputs = PROJECT.inputs(size, 1)
    runnable(inputs)
    inputs["x"][...] = -inputs["x"]
    inputs["out"].fill(cupy.nan)
    runnable(inputs)
    truth = PROJECT.expected(inputs, size)["out"]
    assert float(cupy.abs(inputs["out"] - truth).max()) < 1e-5
