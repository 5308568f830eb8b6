"""The reduction chain on a GPU: every variant, and CUB, sums lengths 1 ... 2^26 correctly.

Two checks per variant and length: the project's own (uniform data against the float64 sum,
within the tolerance that grows with n, after NaN-poisoning `out`), and an exact one: on
integer-valued data every partial sum is a float32 integer, so any order of summation gives
the exact sum, and one lost or doubled element anywhere changes it. The single-pass kernel
is launched twice in a row: its ticket counter must reset itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy
import pytest

from harness.gpu.backend import prepare, prepare_call
from harness.gpu.verify import verify
from harness.project import load_project

pytestmark = pytest.mark.gpu

FOLDER = Path(__file__).resolve().parents[2] / "kernels" / "reduction"
LENGTHS = [1, 31, 32, 33, 1000, 2**20 + 7, 2**26]


@pytest.fixture(scope="module")
def project():
    return load_project(FOLDER / "ncuh.toml")


def _names():
    return load_project(FOLDER / "ncuh.toml").names


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("name", _names())
def test_variant_matches_the_float64_sum(project, name, n):
    size = project.parse_size(str(n))
    result = verify(project, prepare(project, name, size), size, seed=n)
    assert result.ok, result.message
    assert result.rel_error < result.tolerance


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("name", _names())
def test_variant_is_exact_on_integer_data(project, name, n):
    import cupy

    size = project.parse_size(str(n))
    runnable = prepare(project, name, size)
    inputs = project.inputs(size, 0)
    values = numpy.random.default_rng(n).integers(-8, 9, n)
    inputs["x"][...] = cupy.asarray(values.astype(numpy.float32))
    for _ in range(2):  # twice: nothing may carry over from the previous call
        inputs["out"].fill(cupy.nan)
        runnable(inputs)
        assert float(inputs["out"][0]) == int(values.sum())


def _shipped_params():
    """The shapes tuning.json ships for single_pass (the bench runs these, not the defaults)."""
    data = json.loads((FOLDER / "tuning.json").read_text())
    shapes = {json.dumps(entry["params"], sort_keys=True) for entry in data["entries"]}
    return [json.loads(shape) for shape in sorted(shapes)]


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize(
    "params", _shipped_params(), ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items())
)
def test_shipped_single_pass_shapes_are_exact(project, params, n):
    import cupy

    size = project.parse_size(str(n))
    runnable = prepare(project, "single_pass", size, params)
    inputs = project.inputs(size, 0)
    values = numpy.random.default_rng(n).integers(-8, 9, n)
    inputs["x"][...] = cupy.asarray(values.astype(numpy.float32))
    for _ in range(2):
        inputs["out"].fill(cupy.nan)
        runnable(inputs)
        assert float(inputs["out"][0]) == int(values.sum())
    result = verify(project, runnable, size, seed=n)
    assert result.ok, result.message


@pytest.mark.parametrize("n", LENGTHS)
def test_cub_reference_matches_the_float64_sum(project, n):
    size = project.parse_size(str(n))
    reference = prepare_call(project.reference.name, project.reference.call, size)
    result = verify(project, reference, size, seed=n)
    assert result.ok, result.message


def test_copy_limit_copies_x(project):
    import cupy

    size = project.parse_size(str(2**20 + 7))
    inputs = project.inputs(size, 3)
    limit = project.limits[0]
    limit.call(inputs, size)
    cupy.cuda.get_current_stream().synchronize()
    assert bool((inputs["copy_dst"] == inputs["x"]).all())
