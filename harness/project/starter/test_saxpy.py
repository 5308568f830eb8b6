"""Every variant of this project matches the float64 truth, and the vectorized one keeps up
with the reference (run where CuPy sees a GPU; skipped elsewhere).

    pytest -q test_saxpy.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.gpu import verify_variant
from harness.project import load_project

PROJECT = load_project(Path(__file__).with_name("ncuh.toml"))


def _gpu() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.mark.skipif(not _gpu(), reason="needs a CUDA GPU and CuPy")
@pytest.mark.parametrize("size", ["1", "33", "1000", "2^20", "1000003"])
@pytest.mark.parametrize("name", PROJECT.names)
def test_variant_matches_the_truth(name: str, size: str) -> None:
    result = verify_variant(PROJECT, name, PROJECT.parse_size(size), seed=7)
    assert result.ok, result.message


def test_vectorized_keeps_up_with_the_reference(ncuh_bench) -> None:
    """`ncuh_bench` (ncuh's pytest fixture) verifies, then times the variant beside CuPy in one
    run."""
    timing = ncuh_bench("vectorized", "2^26")
    assert timing.vs_reference is not None and timing.vs_reference >= 0.9, timing
