"""`bench(...)` and `profile(...)`: a project's variants timed or profiled on this machine's
GPU, handed back as the `Result` that `load` gives for what they wrote."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.api.result import BENCH_FILE, Result, load
from harness.errors import NcuhError


def _project(project: Path | str | None) -> Any:
    from harness.project import open_project

    return open_project(project)


def _stamped(prefix: str) -> Path:
    return Path("runs") / f"{prefix}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


def bench(variants: Sequence[str] | None = None, sizes: Sequence[str] | None = None, *,
          project: Path | str | None = None, repeats: int = 30, warmup: int = 5,
          references: bool = True, seed: int | None = None,
          out: Path | str | None = None) -> Result:
    """Verify, then time `variants` (default: all) at `sizes` (size words like "4096" or
    "4096x1024"; default: the project's default_sizes) as `ncuh bench` does; bench.json is
    written under `out` (default: runs/bench-<UTC time>) and returned as a `Result`."""
    from harness.gpu import run_bench

    loaded = _project(project)
    chosen = [loaded.variant(name) for name in variants] if variants else list(loaded.variants)
    shapes = [loaded.parse_size(text) for text in sizes] if sizes else list(loaded.default_sizes)
    run = run_bench(loaded, chosen, shapes, repeats, warmup=warmup, seed=seed,
                    references=references)
    folder = Path(out) if out is not None else _stamped("bench")
    run.save(folder / BENCH_FILE)
    return load(folder)


def profile(variants: Sequence[str] | None = None, sizes: Sequence[str] | None = None, *,
            project: Path | str | None = None, section_set: str = "pages",
            bench: bool = False, out: Path | str = "runs", program: Sequence[str] = (),
            top: int | None = None, nvtx_include: Sequence[str] = ()) -> Result:
    """Profile `variants` (default: all) at `sizes` (default: the project's profile_size)
    under Nsight Compute as `ncuh profile` does; the run directory is returned as a
    `Result`. A variant that failed is an `NcuhError` naming it. With `program` (a command
    line) and `top`, the program's `top` kernels with the most GPU time instead, within the
    NVTX ranges `nvtx_include` names (`Result.ranking()` gives its ranking)."""
    from harness.profile import KernelFilter, NcuSettings, ProfileRequest, run_profile

    request = ProfileRequest(
        variants=tuple(variants or ()), all_variants=not variants and not program,
        sizes=tuple(sizes or ()), settings=NcuSettings(set=section_set), out=Path(out),
        bench=bench, project=Path(project) if project is not None else None,
        program=tuple(program), top=top,
        program_filter=KernelFilter(nvtx_include=tuple(nvtx_include)))
    outcome = run_profile(request)
    if outcome.failures:
        failed = "; ".join(f"{e.target.label}: {e.error}" for e in outcome.failures)
        raise NcuhError(f"profile failed: {failed}")
    return load(outcome.run_dir, project=project)
