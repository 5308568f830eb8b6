"""Trend plots as PNG bytes: one figure per series, one per kernel across GPU models.

Figures are drawn on the Agg canvas directly (no pyplot state), small and at a modest DPI, so
a thousand-run history of twelve kernels plots in seconds.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from harness.diff import STALL_PREFIX, STALL_SUFFIX
from harness.errors import printable
from harness.history.series import Series

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DPI = 80
MAX_TICKS = 8
TOP_STALLS = 3
COLORS = ("#4878d0", "#ee854a", "#6acc64", "#d65f5f", "#956cb4", "#8c613c")

# (title, metric names added up, scale): the key counters beside time
COUNTER_PANELS: tuple[tuple[str, tuple[str, ...], float], ...] = (
    ("DRAM bytes (read + written)", ("dram__bytes_read.sum", "dram__bytes_write.sum"), 1.0),
    ("L2 bytes", ("lts__t_sectors.sum",), 32.0),
    ("instructions executed", ("smsp__inst_executed.sum",), 1.0),
    ("achieved occupancy (%)", ("sm__warps_active.avg.pct_of_peak_sustained_active",), 1.0),
)


def _figure(width: float, height: float) -> Figure:
    # matplotlib is imported where a figure is drawn: the commands that only add or check
    # runs never pay for it
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI)


@contextlib.contextmanager
def _literal_text() -> Iterator[None]:
    """Every text drawn inside is literal: a name or commit holding `$...$` is data, never
    mathtext for matplotlib to parse."""
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
        yield


def _shown(text: str) -> str:
    """Data as plot text: control and bidi characters written as escapes."""
    return printable(text)


def _png(figure: Figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    return buffer.getvalue()


def _commit_ticks(axes: Axes, commits: Sequence[str]) -> None:
    n = len(commits)
    every = max(1, int(np.ceil(n / MAX_TICKS)))
    ticks = list(range(0, n, every))
    axes.set_xticks(ticks)
    axes.set_xticklabels([_shown(commits[i][:7]) for i in ticks], rotation=30, fontsize=6,
                         ha="right")


def summed(series: Series, metrics: Sequence[str], scale: float) -> list[float | None]:
    """Per run, the metrics added up and scaled; None where one of them was not collected."""
    columns = [series.values(m) for m in metrics]
    out: list[float | None] = []
    for row in zip(*columns, strict=True):
        out.append(None if any(v is None for v in row) else scale * sum(row))  # type: ignore[misc]
    return out


def top_stalls(series: Series, count: int = TOP_STALLS) -> list[str]:
    """The stall metrics with the most cycles per issued instruction over the series."""
    totals: dict[str, float] = {}
    for kernel in series.kernels:
        for name, value in kernel.metrics.items():
            if name.startswith(STALL_PREFIX) and name.endswith(STALL_SUFFIX) \
                    and "selected" not in name:
                totals[name] = totals.get(name, 0.0) + value
    return sorted(totals, key=lambda n: -totals[n])[:count]


def stall_name(metric: str) -> str:
    return metric[len(STALL_PREFIX):-len(STALL_SUFFIX)]


def series_figure(series: Series, step_indices: Sequence[int],
                  metric: str | None = None) -> bytes:
    """Time with its bench interval, then the key counters (or one chosen metric)."""
    with _literal_text():
        return _series_figure(series, step_indices, metric)


def _series_figure(series: Series, step_indices: Sequence[int], metric: str | None) -> bytes:
    commits = [r.commit for r in series.runs]
    x = np.arange(len(series))
    panels: list[tuple[str, list[tuple[str, list[float | None]]]]] = []
    if metric is not None:
        panels.append((_shown(metric), [(_shown(metric), series.values(metric))]))
    else:
        for title, names, scale in COUNTER_PANELS:
            panels.append((title, [(title, summed(series, names, scale))]))
        stalls = top_stalls(series)
        panels.append(("top stalls (cycles per instruction)",
                       [(_shown(stall_name(s)), series.values(s)) for s in stalls]))
    columns = 3
    rows = 1 + int(np.ceil(len(panels) / columns))
    # a fixed layout: matplotlib's constrained layout measures every label again, a third of
    # the time of a thousand-run figure
    figure = _figure(10.0, 2.4 * rows)
    grid = figure.add_gridspec(rows, columns, left=0.07, right=0.98, top=0.94, bottom=0.08,
                               hspace=0.75, wspace=0.25)
    time_axes = figure.add_subplot(grid[0, :])
    _time_panel(time_axes, series, x, step_indices)
    _commit_ticks(time_axes, commits)
    for i, (title, lines) in enumerate(panels):
        axes = figure.add_subplot(grid[1 + i // columns, i % columns])
        for color, (label, values) in zip(COLORS, lines, strict=False):
            y = np.array([np.nan if v is None else v for v in values], dtype=float)
            axes.plot(x, y, color=color, linewidth=1.0, label=label)
        if len(lines) > 1:
            axes.legend(fontsize=6, loc="best")
        for index in step_indices:
            axes.axvline(index - 0.5, color="#d65f5f", linestyle="--", linewidth=0.8)
        axes.set_title(title, fontsize=8)
        axes.tick_params(labelsize=6)
        _commit_ticks(axes, commits)
    return _png(figure)


def _time_panel(axes: Axes, series: Series, x: np.ndarray, steps: Sequence[int]) -> None:
    times = np.array([k.time_ms or np.nan for k in series.kernels], dtype=float)
    axes.plot(x, times, color=COLORS[0], linewidth=1.2, marker="." if len(x) < 200 else None,
              label="time (bench median, else ncu duration)")
    low = np.array([np.percentile(k.samples_ms, 2.5) if k.samples_ms else np.nan
                    for k in series.kernels])
    high = np.array([np.percentile(k.samples_ms, 97.5) if k.samples_ms else np.nan
                     for k in series.kernels])
    if np.isfinite(low).any():
        axes.fill_between(x, low, high, color=COLORS[0], alpha=0.2,
                          label="bench samples, 2.5-97.5 percentile")
    for index in steps:
        axes.axvline(index - 0.5, color="#d65f5f", linestyle="--", linewidth=1.0)
    axes.set_ylabel("ms", fontsize=8)
    axes.set_title(_shown(f"{series.key.label}: time per run"), fontsize=9)
    axes.legend(fontsize=7, loc="best")


def gpu_figure(group: Sequence[Series], order: dict[int, int]) -> bytes:
    """One kernel on several GPU models side by side: each one's best time / its time (1 is
    that GPU's best), on the common order in which runs were added."""
    with _literal_text():
        return _gpu_figure(group, order)


def _gpu_figure(group: Sequence[Series], order: dict[int, int]) -> bytes:
    figure = _figure(10.0, 2.6)
    figure.subplots_adjust(left=0.07, right=0.98, top=0.88, bottom=0.18)
    axes = figure.add_subplot()
    for color, series in zip(COLORS, group, strict=False):
        times = np.array([k.time_ms or np.nan for k in series.kernels], dtype=float)
        best = np.nanmin(times)
        xs = [order[r.id] for r in series.runs]
        axes.plot(xs, best / times, color=color, linewidth=1.0, marker=".",
                  label=_shown(f"{series.key.gpu} (best {best:.4g} ms)"))
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("fraction of its best", fontsize=8)
    axes.set_xlabel("run (order added)", fontsize=8)
    axes.set_title(_shown(f"{group[0].key.kernel_label}: each GPU model against its own best"),
                   fontsize=9)
    axes.legend(fontsize=7, loc="lower left")
    axes.tick_params(labelsize=6)
    return _png(figure)


def sparkline_svg(values: Sequence[float], width: int = 120, height: int = 24) -> str:
    """A small inline SVG polyline (numbers only: nothing from the data is text)."""
    y = np.asarray([v for v in values if v == v], dtype=float)
    if y.size == 0:
        return ""
    if y.size == 1:
        y = np.repeat(y, 2)
    span = float(y.max() - y.min()) or 1.0
    xs = np.linspace(1, width - 1, y.size)
    ys = height - 2 - (y - y.min()) / span * (height - 4)
    points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(xs, ys, strict=True))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}"><polyline fill="none" stroke="#4878d0" '
            f'stroke-width="1.2" points="{points}"/></svg>')


BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline_text(values: Sequence[float], width: int = 30) -> str:
    """The same as block characters, for Markdown (the last `width` values)."""
    y = np.asarray([v for v in values if v == v][-width:], dtype=float)
    if y.size == 0:
        return ""
    span = float(y.max() - y.min())
    if span == 0:
        return BLOCKS[3] * y.size
    levels = np.rint((y - y.min()) / span * (len(BLOCKS) - 1)).astype(int)
    return "".join(BLOCKS[i] for i in levels)
