"""Text views of a `BenchRun`: the printed table, and the seed pages' two benchmark blocks.

`format_table` is what `ncuh bench` prints: one row per variant and size (median, spread,
GFLOP/s and GB/s where the project has a work model, speedups against the project's reference
by its own name, error), then the "Speedup Factors" summary per variant. `format_seed_block`
renders one variant in the shape of the seed pages' two blocks ("Average Runtime per Size"
and "Speedup Factors (on sizes 512+)", the floor being the project's `summary_min_size`),
for the write-up.
Numbers carry significant figures, not fifteen digits.
"""

from __future__ import annotations

from harness.gpu.bench import PREVIOUS, BenchResult, BenchRun, aggregate_speedups
from harness.project import size_text

_NOT_TIMED = ("FAILED", "UNSUPPORTED")


def sig(value: float, digits: int = 4) -> str:
    """`value` with `digits` significant figures, never in exponent form for times."""
    if value == 0:
        return "0"
    text = f"{value:#.{digits}g}"
    if "e" in text:  # very large or small: fall back to fixed notation
        decimals = max(digits - 1 - len(str(int(abs(value)))), 0)
        text = f"{value:.{decimals}f}"
    return text.rstrip(".")


def format_factor(value: float | None) -> str:
    return "-" if value is None else f"{value:#.4g}x"


def _columns(run: BenchRun) -> list[str]:
    reference, baseline = run.speedup_keys
    columns = ["variant", "size", "median ms", "IQR ms"]
    if any(r.gflops is not None for r in run.results):
        columns.append("GFLOP/s")
    if any(r.gbps is not None for r in run.results):
        columns.append("GB/s")
    columns += [f"vs {run.label(key)}" for key in (reference, baseline) if key]
    return [*columns, "vs prev", "rel err"]


def _row(run: BenchRun, result: BenchResult, columns: list[str]) -> tuple[str, ...]:
    size = size_text(result.size)
    if not result.ok:
        reason = result.error or ""
        return (result.variant, size, result.status.upper(), reason,
                *([""] * (len(columns) - 4)))
    iqr = (result.q3_ms or 0.0) - (result.q1_ms or 0.0)
    reference, baseline = run.speedup_keys
    cells = [result.variant, size, sig(result.median_ms), sig(iqr, 2)]  # type: ignore[arg-type]
    if "GFLOP/s" in columns:
        cells.append("-" if result.gflops is None else f"{result.gflops:,.0f}")
    if "GB/s" in columns:
        cells.append("-" if result.gbps is None else f"{result.gbps:,.0f}")
    cells += [format_factor(result.speedup.get(key)) for key in (reference, baseline) if key]
    cells.append(format_factor(result.speedup.get(PREVIOUS)))
    cells.append("-" if result.rel_error is None else f"{result.rel_error:.1e}")
    return tuple(cells)


def _align(rows: list[tuple[str, ...]]) -> list[str]:
    timed = [r for r in rows if r[2] not in _NOT_TIMED]
    widths = [max(len(r[i]) for r in (rows if i < 2 else timed)) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        if row[2] in _NOT_TIMED:
            # The reason runs to the end of the line rather than stretching the columns.
            lines.append(f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]}: {row[3]}")
            continue
        cells = [f"{row[0]:<{widths[0]}}", f"{row[1]:<{widths[1]}}"]
        cells += [f"{cell:>{widths[i + 2]}}" for i, cell in enumerate(row[2:])]
        lines.append("  ".join(cells).rstrip())
    return lines


def _header(run: BenchRun) -> list[str]:
    env, settings = run.environment, run.settings
    method = (
        f"Benchmark Results (median of {settings.repeats} event-timed launches, "
        f"{settings.warmup} warm-up{'s' if settings.warmup != 1 else ''}, "
        f"{'L2 flushed before each' if settings.l2_flush else 'L2 not flushed'})"
    )
    machine = env.get("gpu") or "unknown GPU"
    if env.get("compute_capability"):
        machine += f" (sm_{str(env['compute_capability']).replace('.', '')})"
    if env.get("sm_clock_mhz"):
        machine += f" at {env['sm_clock_mhz']:.0f} MHz"
    versions = [f"{label} {env[key]}" for label, key in
                (("driver", "driver"), ("CUDA", "cuda_runtime"), ("CuPy", "cupy")) if env.get(key)]
    if versions:
        machine += "; " + ", ".join(versions)
    description = (run.project or {}).get("description")
    terms = "speedup = reference time / variant time"
    return [method, machine, f"{description}; {terms}" if description else terms]


def _floor(run: BenchRun, min_size: int | None) -> int | None:
    """The summary's smallest dimension: `min_size`, else the run's project's; None: all."""
    floor = min_size if min_size is not None else run.summary_min_size
    return floor if floor is not None and floor > 1 else None


def format_summary(run: BenchRun, min_size: int | None = None) -> list[str]:
    """The "Speedup Factors" block: per variant, geometric mean over sizes >= min_size
    (default: the project's `summary_min_size`, else every size)."""
    min_size = _floor(run, min_size)
    reference, baseline = run.speedup_keys
    keys = [key for key in (reference, baseline) if key] + [PREVIOUS]
    titles = {reference: run.label(reference), PREVIOUS: "Prev",
              baseline: (run.project or {}).get("baseline_title") or str(baseline)}
    rows = [("variant", *(titles[key] for key in keys))]
    for variant in run.variants:
        factors = aggregate_speedups(run, variant, min_size or 1)
        if all(v is None for v in factors.values()):
            continue
        rows.append((variant, *(format_factor(factors[key]) for key in keys)))
    if len(rows) == 1:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    dims = ", ".join((run.project or {}).get("dims") or ["every dimension"])
    over = f"sizes with {dims} >= {min_size}" if min_size else "every size"
    lines = [f"Speedup Factors (geometric mean over {over})"]
    for row in rows:
        cells = [f"{row[0]:<{widths[0]}}", *(f"{c:>{widths[i + 1]}}" for i, c in
                                              enumerate(row[1:]))]
        lines.append("  ".join(cells))
    return lines


def format_table(run: BenchRun, min_size: int | None = None) -> str:
    """The whole printed report of a run: header, results table, summary, warnings."""
    columns = _columns(run)
    rows = [tuple(columns), *(_row(run, r, columns) for r in run.results)]
    lines = [*_header(run), "", *_align(rows)]
    summary = format_summary(run, min_size)
    if summary:
        lines += ["", *summary]
    warnings = [r.warning for r in run.results if r.warning]
    if warnings:
        lines += ["", "Warnings (noisy or launch-bound measurements):"]
        lines += [f"  {w}" for w in warnings]
    return "\n".join(lines) + "\n"


def format_seed_block(run: BenchRun, variant: str, min_size: int | None = None) -> str:
    """One variant in the seed pages' words: runtimes per size, then the speedup factors."""
    min_size = _floor(run, min_size)
    lines = ["Average Runtime per Size:"]
    for result in run.results:
        if result.variant != variant:
            continue
        label = size_text(result.size)
        if result.ok:
            lines.append(f"{label}: {result.median_ms:.6f} ms")
        else:
            lines.append(f"{label}: {result.status} ({result.error})")
    factors = aggregate_speedups(run, variant, min_size or 1)
    reference, baseline = run.speedup_keys
    titles = {reference: run.label(reference), PREVIOUS: "Prev",
              baseline: (run.project or {}).get("baseline_title") or str(baseline)}
    lines += ["", f"Speedup Factors (on sizes {min_size}+):" if min_size else "Speedup Factors:"]
    for key, value in factors.items():
        label = f"{titles[key]}:"
        lines.append(f"{label:<7} {'-' if value is None else f'{value:.4f}x'}")
    return "\n".join(lines) + "\n"
