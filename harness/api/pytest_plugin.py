"""The `ncuh_bench` pytest fixture: a project's own tests time a variant against the project's
reference on a GPU, and skip cleanly where there is none.

    # test_speed.py: no conftest needed, pytest finds the fixture through ncuh's entry point
    def test_vectorized_keeps_up_with_the_reference(ncuh_bench):
        timing = ncuh_bench("vectorized", "2^24")
        assert timing.vs_reference >= 0.9

ncuh registers this module under pytest's `pytest11` entry point (by its own name, so a
conftest's `pytest_plugins = ["harness.api.pytest_plugin"]` still works beside it). The
project is found from the test file's folder upwards (`ncuh_bench.project` names another) and
loaded first: a project that does not load fails the test with its one-line cause, GPU or
not. Each call verifies the variant, then times it and the reference in one run, as `ncuh
bench` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest

from harness.errors import NcuhError

if TYPE_CHECKING:
    from harness.project import Project

T = TypeVar("T")


@dataclass(frozen=True)
class Timing:
    """One variant at one size beside the project's reference, timed in the same run."""

    variant: str
    size: str
    median_ms: float
    reference: str | None  # the reference's name, None when the project has none
    reference_ms: float | None
    vs_reference: float | None  # how many times faster than the reference (>1: faster)
    gflops: float | None = None
    gbps: float | None = None


class NcuhBench:
    """The fixture's value: call it with a variant's name and a size word."""

    def __init__(self, project: Path | str, repeats: int = 30, warmup: int = 5) -> None:
        self.project = Path(project)
        self.repeats = repeats
        self.warmup = warmup

    def __call__(self, variant: str, size: str, *, repeats: int | None = None) -> Timing:
        from harness.gpu import run_bench

        project = _loaded(self.project)
        shape = _or_fail(lambda: project.parse_size(size), "")
        chosen = _or_fail(lambda: project.variant(variant), "")
        run = run_bench(project, [chosen], [shape], repeats or self.repeats,
                        warmup=self.warmup, references=True)
        result = run.result(variant, shape.as_list())
        if result is None or result.status != "ok" or result.median_ms is None:
            error = result.error if result is not None else "no result"
            pytest.fail(f"ncuh_bench: {variant} at {size}: {error}", pytrace=False)
        reference = project.reference
        reference_result = run.result(reference.key, shape.as_list()) if reference else None
        return Timing(
            variant=variant, size=size, median_ms=result.median_ms,
            reference=reference.name if reference else None,
            reference_ms=reference_result.median_ms if reference_result else None,
            vs_reference=result.speedup.get(reference.key) if reference else None,
            gflops=result.gflops, gbps=result.gbps)


def _or_fail(function: Callable[[], T], what: str) -> T:
    """`function()`; an `NcuhError` fails the test with its one line (after `what`), and no
    exception chain."""
    try:
        return function()
    except NcuhError as error:
        failure = str(error)
    pytest.fail(f"ncuh_bench: {what}{failure}", pytrace=False)


def _loaded(path: Path) -> Project:
    """The project at `path`; a project that does not load fails the test with its cause."""
    from harness.project import load_project

    return _or_fail(lambda: load_project(path), "the project does not load: ")


@pytest.fixture
def ncuh_bench(request: pytest.FixtureRequest) -> NcuhBench:
    """Time a variant against the project's reference; skips without a GPU or CuPy (after
    loading the project: a broken one fails, GPU or not)."""
    from harness.gpu import gpu_unavailable_reason
    from harness.project import find_project

    path = _or_fail(lambda: find_project(cwd=Path(str(request.path)).parent), "")
    _loaded(path)
    reason = gpu_unavailable_reason()
    if reason is not None:
        pytest.skip(f"ncuh_bench needs a GPU: {reason}")
    return NcuhBench(path)
