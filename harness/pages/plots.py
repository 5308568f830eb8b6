"""The index page's plots, as PNG bytes: GFLOP/s per iteration, stalls, roofline, occupancy,
and a program's GPU time per kernel.

Figures are built on the Agg canvas directly (no pyplot state, nothing left open), small and
at a modest DPI, under matplotlib's default settings (a user's matplotlibrc does not restyle
the pages). Each chart is kept once drawn (`plot_cache`): the same inputs give the same
plot without importing matplotlib.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import io
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.pages import plot_cache
from harness.report import Roofline
from harness.util import usable_cores, worker_pool

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DPI = 100
SIZE = (8.0, 3.6)
_PALETTE = ("#4878d0", "#ee854a", "#6acc64", "#d65f5f", "#956cb4", "#8c613c", "#dc7ec0",
            "#797979", "#d5bb67", "#82c6e2")


@dataclass(frozen=True)
class Plot:
    """One rendered plot: a file name stem, a caption and the PNG."""

    name: str
    title: str
    png: bytes

    @property
    def data_uri(self) -> str:
        return to_data_uri(self.png)



def _legend(ax: Axes, **options: Any) -> None:
    """A legend beside the axes, where anything is labelled (a report without the data draws
    no bars and gets no empty legend box)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**options)

def to_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


@dataclass(frozen=True)
class ChartCall:
    """One chart of the index and what it is drawn from: `CHARTS[chart](*args, **options)`."""

    chart: str
    args: tuple[Any, ...]
    options: dict[str, Any] = field(default_factory=dict)

    def inputs(self) -> str:
        """What the chart's kept plot is keyed by (`plot_cache`): the repr of its inputs."""
        return repr((self.args, sorted(self.options.items())))

    def kept(self) -> Plot | None:
        """The plot kept from an earlier drawing, without drawing."""
        found = plot_cache.kept(self.chart, self.inputs())
        return Plot(*found) if found is not None else None

    def drawn(self) -> Plot:
        """The plot, kept or drawn here (and kept)."""
        return CHARTS[self.chart](*self.args, **self.options)


# The index's charts by name, each drawn once for the same inputs (`_kept`).
CHARTS: dict[str, Callable[..., Plot]] = {}


def _kept(chart: Callable[..., Plot]) -> Callable[..., Plot]:
    """`chart`, drawn once for the same inputs under matplotlib's defaults and kept."""

    @functools.wraps(chart)
    def kept(*args: Any, **options: Any) -> Plot:
        def draw() -> tuple[str, str, bytes]:
            import matplotlib  # here, not above: a kept plot needs no matplotlib

            with matplotlib.rc_context():
                matplotlib.rcdefaults()
                # names on a chart are data: `$...$` in one is text, never mathtext
                matplotlib.rcParams["text.parse_math"] = False
                plot = chart(*args, **options)
            return plot.name, plot.title, plot.png

        inputs = ChartCall(chart.__name__, args, options).inputs()
        return Plot(*plot_cache.kept_or_drawn(chart.__name__, inputs, draw))

    CHARTS[chart.__name__] = kept
    return kept


def draw_chart(call: ChartCall) -> Plot:
    """`call`'s plot, kept or drawn (what a plot worker is asked)."""
    return call.drawn()


PLOT_WORKERS = 6  # at most one a chart of the index


@contextlib.contextmanager
def plot_workers() -> Iterator[Executor | None]:
    """Processes forked now, one per further core, that import matplotlib and draw a first
    figure while this process goes on (reading its reports), then draw the charts they are
    handed (`draw_chart`); None on one core, or beside other threads (`worker_pool`), where
    this process draws."""
    with worker_pool(min(usable_cores() - 1, PLOT_WORKERS), warm_up) as pool:
        yield pool


def warm_up() -> None:
    """Import what drawing needs and draw one small figure with text (fonts loaded), so that
    a plot worker draws its charts at once."""
    import matplotlib

    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        fig, ax = _figure()
        ax.set_title("warm-up")
        ax.bar([0, 1], [1.0, 2.0])
        _png(fig)


def _figure() -> tuple[Figure, Axes]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=SIZE, dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return fig, ax


def _png(fig: Figure, legend_outside: bool = False, rotated: bool = False) -> bytes:
    # fixed margins: tight_layout costs a text-measuring pass per figure
    fig.subplots_adjust(left=0.09, right=0.74 if legend_outside else 0.98,
                        bottom=0.3 if rotated else 0.15, top=0.9)
    buffer = io.BytesIO()
    # no Software/date metadata: the same data gives the same bytes
    fig.savefig(buffer, format="png", metadata={"Software": None})
    fig.clear()
    return buffer.getvalue()


def _ticks(ax: Axes, labels: Sequence[str]) -> bool:
    """Label the x axis; True when the labels had to be rotated (they need a deeper margin)."""
    ax.set_xticks(range(len(labels)))
    rotate = 30 if len(labels) > 4 or max((len(s) for s in labels), default=0) > 12 else 0
    ax.set_xticklabels(labels, rotation=rotate, ha="right" if rotate else "center", fontsize=8)
    return bool(rotate)


@_kept
def gflops_chart(labels: Sequence[str], gflops: Sequence[float | None],
                 reference: float | None, reference_name: str = "reference") -> Plot:
    """GFLOP/s per iteration as bars, the project's reference as a horizontal line."""
    return _throughput_chart("gflops", "GFLOP/s", labels, gflops, reference, reference_name)


@_kept
def bandwidth_chart(labels: Sequence[str], gbps: Sequence[float | None],
                    reference: float | None, reference_name: str = "reference",
                    limit: float | None = None, limit_name: str = "limit") -> Plot:
    """GB/s per iteration (the project's bytes model) as bars, the reference and the practical
    limit (a device copy of the same bytes, timed in the same run) as horizontal lines."""
    return _throughput_chart("bandwidth", "GB/s", labels, gbps, reference, reference_name,
                             limit, limit_name)


def _throughput_chart(name: str, unit: str, labels: Sequence[str],
                      values: Sequence[float | None], reference: float | None,
                      reference_name: str, limit: float | None = None,
                      limit_name: str = "limit") -> Plot:
    fig, ax = _figure()
    bars = ax.bar(range(len(labels)), [v or 0.0 for v in values], color=_PALETTE[0])
    for bar, value in zip(bars, values, strict=True):
        if value is not None:
            ax.annotate(f"{value:,.0f}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=7)
    if reference:
        ax.axhline(reference, color=_PALETTE[3], linestyle="--",
                   label=f"{reference_name} {reference:,.0f}")
    if limit:
        ax.axhline(limit, color=_PALETTE[7], linestyle=":",
                   label=f"{limit_name} {limit:,.0f}")
    if reference or limit:
        ax.legend(fontsize=8, loc="upper left")
    ax.set_ylabel(unit)
    ax.set_title("Throughput per iteration", fontsize=10)
    rotated = _ticks(ax, labels)
    # Only what the chart draws is named: loose reports have no reference to stand beside.
    beside = [name for name, value in ((reference_name, reference), (limit_name, limit))
              if value]
    title = f"{unit} per iteration" + (f" beside {' and '.join(beside)}" if beside else "")
    return Plot(name, title, _png(fig, rotated=rotated))


@_kept
def stall_chart(labels: Sequence[str], stalls: Sequence[dict[str, float]],
                top: int = 7, per: str = "iteration") -> Plot:
    """Each iteration's stall cycles per issued instruction split by reason, stacked as shares
    of its total (the total is printed on the bar).

    Shares rather than cycles: the naive kernel's stalls dwarf the rest by 100x, and stacked
    bars on a log axis misdraw every segment but the first.
    """
    totals: dict[str, float] = {}
    for per_kernel in stalls:
        for reason, cycles in per_kernel.items():
            totals[reason] = totals.get(reason, 0.0) + cycles
    reasons = sorted(totals, key=lambda r: -totals[r])[:top]
    kernel_totals = [sum(per_kernel.values()) for per_kernel in stalls]

    def shares(values: list[float]) -> list[float]:
        return [100.0 * v / t if t else 0.0 for v, t in zip(values, kernel_totals, strict=True)]

    fig, ax = _figure()
    positions = range(len(labels))
    bottom = [0.0] * len(labels)
    for i, reason in enumerate(reasons):
        heights = shares([per_kernel.get(reason, 0.0) for per_kernel in stalls])
        ax.bar(positions, heights, bottom=bottom, label=reason.replace("_", " "),
               color=_PALETTE[i % len(_PALETTE)])
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    other = shares([sum(v for r, v in per_kernel.items() if r not in reasons)
                    for per_kernel in stalls])
    if any(other):
        ax.bar(positions, other, bottom=bottom, label="other", color="#cccccc")
    for x, total in zip(positions, kernel_totals, strict=True):
        ax.text(x, 101, f"{total:.3g}", ha="center", va="bottom", fontsize=6)
    ax.set_ylim(0, 110)
    ax.set_ylabel("% of stall cycles (total on top)")
    ax.set_title(f"Warp stall reasons per {per}", fontsize=10)
    _legend(ax, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    rotated = _ticks(ax, labels)
    return Plot("stalls", f"Warp stall reasons per {per} (stacked)", _png(fig, True, rotated))


@_kept
def roofline_chart(labels: Sequence[str], points: Sequence[Roofline]) -> Plot:
    """Arithmetic intensity against achieved FLOP/s under the DRAM and FP32 ceilings."""
    fig, ax = _figure()
    ax.grid(True, which="both", alpha=0.3)
    ceilings = [p for p in points if p.peak_flops and p.peak_dram_bytes_per_second]
    intensities = [p.arithmetic_intensity for p in points if p.arithmetic_intensity]
    lo = min([0.1, *intensities]) / 2
    hi = max([100.0, *intensities]) * 2
    if ceilings:
        peak = ceilings[0].peak_flops or 0.0
        bandwidth = ceilings[0].peak_dram_bytes_per_second or 0.0
        ridge = peak / bandwidth
        xs = [lo, ridge, hi]
        ys = [lo * bandwidth / 1e9, peak / 1e9, peak / 1e9]
        ax.plot(xs, ys, color="#333333", linewidth=1.5,
                label=f"FP32 {peak / 1e12:,.1f} TFLOP/s, DRAM {bandwidth / 1e12:,.2f} TB/s")
    for i, (label, point) in enumerate(zip(labels, points, strict=True)):
        if point.arithmetic_intensity and point.achieved_flops:
            ax.scatter([point.arithmetic_intensity], [point.achieved_flops / 1e9], s=30,
                       color=_PALETTE[i % len(_PALETTE)], label=label, zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("Roofline (single precision, DRAM)", fontsize=10)
    # many iterations: keep the legend readable in two columns beside the axes
    _legend(ax, fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return Plot("roofline", "Roofline: arithmetic intensity against achieved FLOP/s",
                _png(fig, True))


@_kept
def occupancy_chart(labels: Sequence[str], theoretical: Sequence[float | None],
                    achieved: Sequence[float | None], limiters: Sequence[str],
                    per: str = "iteration") -> Plot:
    """Theoretical and achieved occupancy per iteration, each bar labelled with its limiter."""
    fig, ax = _figure()
    xs = range(len(labels))
    width = 0.38
    ax.bar([x - width / 2 for x in xs], [v or 0.0 for v in theoretical], width,
           label="theoretical", color=_PALETTE[0])
    ax.bar([x + width / 2 for x in xs], [v or 0.0 for v in achieved], width,
           label="achieved", color=_PALETTE[1])
    for x, value, limiter in zip(xs, theoretical, limiters, strict=True):
        if limiter and value:
            # inside the theoretical bar, so labels never collide with the title or legend
            ax.annotate(limiter, (x - width / 2, value / 2), ha="center", va="center",
                        fontsize=6, rotation=90, color="white")
    ax.set_ylim(0, 115)
    ax.set_ylabel("occupancy (% of warp slots)")
    ax.set_title(f"Occupancy and its limiter per {per}", fontsize=10)
    _legend(ax, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    rotated = _ticks(ax, labels)
    return Plot("occupancy", "Occupancy (theoretical, achieved) and its limiter",
                _png(fig, True, rotated))


@_kept
def instruction_mix_chart(labels: Sequence[str], mixes: Sequence[dict[str, float]],
                          top: int = 8, per: str = "iteration") -> Plot:
    """Each iteration's executed instructions by class (FP32, integer, global load, ...),
    stacked as shares of all its executed instructions."""
    totals: dict[str, float] = {}
    for mix in mixes:
        for name, share in mix.items():
            totals[name] = totals.get(name, 0.0) + share
    classes = sorted(totals, key=lambda c: (-totals[c], c))[:top]
    fig, ax = _figure()
    positions = range(len(labels))
    bottom = [0.0] * len(labels)
    for i, name in enumerate(classes):
        heights = [mix.get(name, 0.0) for mix in mixes]
        ax.bar(positions, heights, bottom=bottom, label=name, color=_PALETTE[i % len(_PALETTE)])
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    other = [sum(v for c, v in mix.items() if c not in classes) for mix in mixes]
    if any(other):
        ax.bar(positions, other, bottom=bottom, label="other", color="#cccccc")
    ax.set_ylim(0, 105)
    ax.set_ylabel("% of executed instructions")
    ax.set_title(f"Instruction mix per {per}", fontsize=10)
    _legend(ax, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    rotated = _ticks(ax, labels)
    return Plot("instruction_mix", f"Executed instructions by class per {per} (stacked)",
                _png(fig, True, rotated))


@_kept
def bound_unit_chart(labels: Sequence[str], units: Sequence[str],
                     pct: Sequence[float | None], per: str = "iteration") -> Plot:
    """Each iteration's binding unit at its % of peak (the unit named on the bar)."""
    fig, ax = _figure()
    names = sorted(set(units))
    colors = {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(names)}
    bars = ax.bar(range(len(labels)), [v or 0.0 for v in pct],
                  color=[colors[u] for u in units])
    for bar, unit, value in zip(bars, units, pct, strict=True):
        text = f"{unit}\n{value:.1f}%" if value is not None else f"{unit}\nn/a"
        ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=6)
    ax.set_ylim(0, 115)
    ax.set_ylabel("% of peak")
    ax.set_title(f"The binding unit's throughput per {per}", fontsize=10)
    rotated = _ticks(ax, labels)
    return Plot("bound_unit", f"The binding unit's throughput per {per} (% of peak)",
                _png(fig, rotated=rotated))


@_kept
def gpu_time_chart(labels: Sequence[str], shares: Sequence[float],
                   cumulative: Sequence[float]) -> Plot:
    """A program's kernels by their share of its GPU time (bars, most first), and the share
    they cover together down the ranking (a line)."""
    fig, ax = _figure()
    bars = ax.bar(range(len(labels)), list(shares), color=_PALETTE[0], label="share")
    for bar, value in zip(bars, shares, strict=True):
        ax.annotate(f"{value:.1f}%", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=7)
    ax.plot(range(len(labels)), list(cumulative), color=_PALETTE[3], marker="o",
            label="cumulative")
    ax.set_ylim(0, 105)
    ax.set_ylabel("% of GPU time")
    ax.legend(fontsize=8, loc="center right")
    ax.set_title("Share of the program's GPU time per kernel", fontsize=10)
    rotated = _ticks(ax, labels)
    return Plot("gpu_time", "Share of the program's GPU time per kernel (first pass)",
                _png(fig, rotated=rotated))
