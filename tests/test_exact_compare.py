"""`compare = "exact"` (or a tolerance of 0): every output equal to the truth, bit for bit
where the dtypes agree. Checked through the real verify path with NumPy standing in for CuPy
(as tests/test_bench_flow.py does), on a transpose, which moves values and computes none."""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

from harness.errors import ProjectError
from harness.gpu import backend, verify
from harness.project import load_project

PROJECT = """
[project]
name = "host-transpose"
module = "host_transpose"

[problem]
dims = ["rows", "cols"]
default_sizes = ["5x3"]
inputs = "make_inputs"
outputs = ["out"]
expected = "expected"
{compare}

[[variant]]
name = "right"
call = "transpose"
capture = "regex:a"

[[variant]]
name = "one_ulp_off"
call = "one_ulp_off"
capture = "regex:b"

[[variant]]
name = "negative_zero"
call = "negative_zero"
capture = "regex:c"
"""

MODULE = '''
import numpy as np

def make_inputs(size, seed):
    x = np.arange(size.rows * size.cols, dtype=np.float32).reshape(size.rows, size.cols) - 7
    return {"x": x, "out": np.empty((size.cols, size.rows), dtype=np.float32)}

def expected(inputs, size):
    return {"out": np.ascontiguousarray(inputs["x"].T)}

def transpose(inputs, size, params):
    inputs["out"][...] = inputs["x"].T

def one_ulp_off(inputs, size, params):
    transpose(inputs, size, params)
    inputs["out"][0, 0] = np.nextafter(inputs["out"][0, 0], np.float32(np.inf))

def negative_zero(inputs, size, params):
    transpose(inputs, size, params)
    inputs["out"][inputs["out"] == 0] = np.float32(-0.0)
'''


def _project(tmp_path: Path, compare: str):  # type: ignore[no-untyped-def]
    (tmp_path / "ncuh.toml").write_text(PROJECT.format(compare=compare))
    (tmp_path / "host_transpose.py").write_text(MODULE)
    return load_project(tmp_path)


@pytest.fixture(autouse=True)
def numpy_for_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = types.SimpleNamespace(synchronize=lambda: None)
    shim = types.SimpleNamespace(**{name: getattr(np, name) for name in (
        "asarray", "ascontiguousarray", "dtype", "float64", "isfinite", "abs", "linalg",
        "maximum", "nan", "iinfo")}, cuda=types.SimpleNamespace(get_current_stream=lambda: stream))
    for module in (backend, verify):
        monkeypatch.setattr(module, "require_gpu", lambda: shim)


def _verify(project, name: str):  # type: ignore[no-untyped-def]
    size = project.default_sizes[0]
    return verify.verify(project, backend.prepare(project, name, size), size, seed=1)


@pytest.mark.parametrize("compare", ['compare = "exact"', "tolerance = 0",
                                     'compare = "max_abs"\ntolerance = 0.0'])
def test_exact_passes_the_same_bits_and_fails_one_ulp_or_a_sign_of_zero(
        tmp_path: Path, compare: str) -> None:
    project = _project(tmp_path, compare)
    right = _verify(project, "right")
    assert right.ok and right.compare == "exact" and right.rel_error == 0.0
    assert right.tolerance == 0.0
    off = _verify(project, "one_ulp_off")
    assert not off.ok and off.rel_error == 1.0 and off.max_abs_error == 2**-21  # one ulp of -7
    assert off.message == "wrong result: 1 element(s) of out differ from the truth (compared " \
                          "exactly)"
    zero = _verify(project, "negative_zero")  # -0.0 == 0.0 as values, not as bits
    assert not zero.ok and zero.rel_error == 1.0 and zero.max_abs_error == 0.0


def test_a_tolerance_above_zero_lets_one_ulp_pass(tmp_path: Path) -> None:
    project = _project(tmp_path, 'compare = "max_abs"\ntolerance = 1e-6')
    off = _verify(project, "one_ulp_off")
    assert off.ok and off.compare == "max_abs" and off.tolerance == 1e-6


def test_values_of_another_dtype_are_compared_as_values() -> None:
    out = np.array([1.0, -0.0, 3.0], dtype=np.float32)
    assert verify.differing(np, out, np.array([1.0, 0.0, 3.0])) == 0  # float64 truth
    assert verify.differing(np, out, np.array([1.0, 0.0, 3.0], dtype=np.float32)) == 1
    assert verify.differing(np, out, np.array([1, 0, 4])) == 1
    big = np.array([2**40 + 1], dtype=np.int64)
    assert verify.differing(np, big, np.array([2**40], dtype=np.int64)) == 1


def test_exact_takes_no_tolerance(tmp_path: Path) -> None:
    with pytest.raises(ProjectError, match=r"key 'tolerance': compare = \"exact\" takes no "
                                           r"tolerance"):
        _project(tmp_path, 'compare = "exact"\ntolerance = 1e-6')
