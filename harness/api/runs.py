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
            bench: bool = False, out: Path | str = "runs") -> Result:
    """Profile `variants` (default: all) at `sizes` (default: the project's profile_size)
    under Nsight Compute as `ncuh profile` does; the run directory is returned as a
    `Result`. A variant that failed is an `NcuhError` naming it."""
    from harness.profile import NcuSettings, ProfileRequest, run_profile

    request = ProfileRequest(
        variants=tuple(variants or ()), all_variants=not variants,
        sizes=tuple(sizes or ()), settings=NcuSettings(set=section_set), out=Path(out),
        bench=bench, project=Path(project) if project is not None else None)
    outcome = run_profile(request)
    if outcome.failures:
        failed = "; ".join(f"{e.target.label}: {e.error}" for e in outcome.failures)
        raise NcuhError(f"profile failed: {failed}")
    return load(outcome.run_dir, project=project)
