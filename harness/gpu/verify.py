"""Correctness of one launch against the project's truth, before anything is timed.

Fresh inputs from the project's `inputs(size, seed)`; the truth from its `expected(inputs,
size)`, computed BEFORE the launch from the untouched inputs; the outputs named in `poison`
are then filled with NaN (an element the kernel forgets to write stays NaN and fails); one
launch; every output in `outputs` compared with the truth the project's way:

    relative_frobenius   ||out - truth|| / ||truth||  < tolerance   (float64, on the GPU)
    max_abs              max |out - truth|            < tolerance
    allclose             |out - truth| <= atol + rtol*|truth| everywhere (error: worst ratio)
    exact                every element equal to the truth, bit for bit where the dtypes are
                         the same (error: how many differ); a tolerance of 0 means it too
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from harness.errors import NcuhError
from harness.gpu.backend import Runnable, prepare
from harness.gpu.env import require_gpu
from harness.project import Project, Size


@dataclass(frozen=True)
class VerifyResult:
    """The outcome of one correctness check."""

    variant: str
    size: list[int]
    params: dict[str, int]
    seed: int | None
    compare: str
    rel_error: float  # the compare's error (inf when an output holds NaN/inf)
    max_abs_error: float
    nonfinite: int  # NaN or inf elements in the outputs
    tolerance: float
    ok: bool
    output: str | None = None  # the output with the largest error

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @property
    def message(self) -> str:
        """Why it failed, in one line ("" when it passed)."""
        if self.ok:
            return ""
        if self.nonfinite:
            return f"wrong result: {self.nonfinite} non-finite output elements in {self.output}"
        if self.compare == "exact":
            return (f"wrong result: {int(self.rel_error)} element(s) of {self.output} differ "
                    "from the truth (compared exactly)")
        return (f"wrong result: {self.compare.replace('_', ' ')} error {self.rel_error:.3g} in "
                f"{self.output} (limit {self.tolerance:g})")


def poison(cupy: Any, array: Any) -> None:
    """Fill an output with a value no kernel computes by accident: NaN, or an integer's max."""
    kind = getattr(array.dtype, "kind", "f")
    if kind in "fc":
        array.fill(cupy.nan)
    else:
        array.fill(cupy.iinfo(array.dtype).max)


def differing(cupy: Any, out: Any, truth: Any) -> int:
    """How many elements of `out` are not exactly `truth`'s: compared as bits where the two
    have one dtype (so -0.0 is not 0.0), else as values in their common type."""
    out, truth = cupy.ascontiguousarray(out), cupy.ascontiguousarray(truth)
    if out.dtype == truth.dtype and out.dtype.itemsize in (1, 2, 4, 8):
        bits = cupy.dtype(f"u{out.dtype.itemsize}")
        return int((out.view(bits) != truth.view(bits)).sum())
    return int((out != truth).sum())


def _error(cupy: Any, project: Project, out: Any, truth: Any,
           exact: bool) -> tuple[float, float, int]:
    out64 = cupy.asarray(out).astype(cupy.float64)
    truth64 = cupy.asarray(truth).astype(cupy.float64)
    if out64.shape != truth64.shape:
        raise NcuhError(f"an output has shape {out64.shape} but expected gives {truth64.shape}")
    nonfinite = int((~cupy.isfinite(out64)).sum())
    if nonfinite:
        return math.inf, math.inf, nonfinite
    diff = cupy.abs(out64 - truth64)
    max_abs = float(diff.max()) if diff.size else 0.0
    if exact:
        return float(differing(cupy, cupy.asarray(out), cupy.asarray(truth))), max_abs, 0
    if project.compare == "max_abs":
        return max_abs, max_abs, 0
    if project.compare == "allclose":
        allowed = project.atol + project.rtol * cupy.abs(truth64)
        ratio = float((diff / cupy.maximum(allowed, 1e-300)).max()) if diff.size else 0.0
        return ratio, max_abs, 0
    norm = float(cupy.linalg.norm(truth64))
    error = float(cupy.linalg.norm(diff))
    return (error / norm if norm > 0 else error), max_abs, 0


def exact(project: Project, size: Size) -> bool:
    """Whether outputs must equal the truth exactly: compare = "exact", or a tolerance of 0."""
    return project.compare == "exact" or (project.compare != "allclose"
                                          and project.tolerance_at(size) == 0)


def check_outputs(project: Project, inputs: dict[str, Any], truth: dict[str, Any], size: Size,
                  names: tuple[str, ...] | None = None) -> tuple[float, float, int, str | None]:
    """(worst error, worst max-abs, non-finite count, worst output) over the outputs."""
    cupy = require_gpu()
    worst: tuple[float, float, int, str | None] = (0.0, 0.0, 0, None)
    for name in names or project.outputs:
        if name not in inputs or name not in truth:
            raise NcuhError(f"output {name!r} is missing from the "
                            f"{'inputs' if name not in inputs else 'expected'} dict")
        error, max_abs, nonfinite = _error(cupy, project, inputs[name], truth[name],
                                           exact(project, size))
        if (nonfinite, error) > (worst[2], worst[0]) or worst[3] is None:
            worst = (error, max(max_abs, worst[1]), worst[2] + nonfinite, name)
    return worst


def verify(project: Project, runnable: Runnable, size: Size,
           seed: int | None = None) -> VerifyResult:
    """Launch `runnable` once on fresh inputs and compare its outputs with the truth."""
    cupy = require_gpu()
    inputs = project.inputs(size, seed)
    truth = project.expected(inputs, size)  # type: ignore[misc]  # before the launch
    for name in project.poison:
        poison(cupy, inputs[name])
    runnable(inputs)
    cupy.cuda.get_current_stream().synchronize()
    error, max_abs, nonfinite, output = check_outputs(project, inputs, truth, size)
    compare = "exact" if exact(project, size) else project.compare
    tolerance = {"exact": 0.0, "allclose": 1.0}.get(compare, project.tolerance_at(size))
    ok = nonfinite == 0 and (error == 0 if compare == "exact" else error <= 1.0
                             if compare == "allclose" else error < tolerance)
    return VerifyResult(
        variant=runnable.name, size=size.as_list(), params=dict(runnable.params), seed=seed,
        compare=compare, rel_error=error, max_abs_error=max_abs, nonfinite=nonfinite,
        tolerance=tolerance, ok=ok, output=output,
    )


def verify_variant(project: Project, name: str, size: Size, *, seed: int | None = None,
                   params: dict[str, Any] | None = None) -> VerifyResult:
    """Prepare variant `name` (defaults, or `params`) and verify it once: for a project's tests."""
    return verify(project, prepare(project, name, size, params), size, seed)
