"""`ncuh history show`: the trend pages, Markdown and self-contained HTML, written as one set.

An index lists every series (kernel x size x GPU model) with a sparkline, its latest time and
its steps; each series has a page with time and the key counters over commits, and each step
with its commit range and diff's explanation. Kernels seen on several GPU models get one more
plot with each model against its own best.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

import jinja2
from markupsafe import Markup

from harness.diff import Thresholds, load_thresholds
from harness.history import plots
from harness.history.changes import STEP_PCT, Step, series_steps, step_thresholds
from harness.history.record import StoredRun
from harness.history.series import Series, build_series
from harness.history.store import HistoryError
from harness.util import md_text, template_value, write_file_set

IMAGES = "img"


@dataclass(frozen=True)
class SeriesView:
    series: Series
    steps: tuple[Step, ...]
    png: bytes

    @property
    def slug(self) -> str:
        return self.series.key.slug

    @property
    def times(self) -> list[float]:
        return [k.time_ms or float("nan") for k in self.series.kernels]


@dataclass(frozen=True)
class GpuView:
    """One kernel at one size on several GPU models."""

    label: str
    slug: str
    png: bytes


@dataclass(frozen=True)
class Trends:
    runs: int
    views: tuple[SeriesView, ...]
    gpu_views: tuple[GpuView, ...]


def build_trends(runs: list[StoredRun], kernel: str | None = None, metric: str | None = None,
                 thresholds: Thresholds | None = None, step_pct: float = STEP_PCT) -> Trends:
    """Series, their steps and plots (data; `write_trends` renders and writes them)."""
    thresholds = step_thresholds(thresholds or load_thresholds(None), step_pct)
    all_series = build_series(runs, kernel)
    if not all_series:
        what = f"a kernel matching {kernel!r}" if kernel else "any kernel"
        raise HistoryError(f"the history store holds no run of {what} with a time to show")
    views = []
    for series in all_series:
        steps = tuple(series_steps(series, thresholds))
        png = plots.series_figure(series, [s.found.index for s in steps], metric)
        views.append(SeriesView(series, steps, png))
    order = {run.id: i for i, run in enumerate(runs)}
    groups: dict[tuple[str, tuple[int, ...] | None, int], list[Series]] = {}
    for series in all_series:
        groups.setdefault((series.key.name, series.key.size, series.key.ordinal),
                          []).append(series)
    gpu_views = tuple(GpuView(group[0].key.kernel_label, f"gpus-{group[0].key.slug}",
                              plots.gpu_figure(group, order))
                      for group in groups.values() if len(group) > 1)
    return Trends(len(runs), tuple(views), gpu_views)


def write_trends(trends: Trends, out: Path) -> list[Path]:
    """Write index.md, index.html and one page of each per series, as one set."""
    contents: dict[str, str | bytes] = {
        "index.md": _index_md(trends),
        "index.html": _render("history_index.html.j2", trends=trends),
    }
    for view in trends.views:
        contents[f"{IMAGES}/{view.slug}.png"] = view.png
        contents[f"{view.slug}.md"] = _series_md(view)
        contents[f"{view.slug}.html"] = _render("history_series.html.j2", view=view)
    for gpu in trends.gpu_views:
        contents[f"{IMAGES}/{gpu.slug}.png"] = gpu.png
    return write_file_set(out, contents, last=["index.md", "index.html"])


# --- Markdown --------------------------------------------------------------------------------


def _md(value: object) -> str:
    return md_text(value)


def _pct(value: float) -> str:
    return f"{value:+.1f}%"


def _step_lines(step: Step) -> list[str]:
    verdict = "slower" if step.regression else "faster"
    lines = [f"- **{_md(step.commit_range)}** ({_pct(step.change_pct)}, {verdict}): "
             f"{_md(step.summary)}"]
    explanation = step.diff.explanation
    for line in explanation.lines() if explanation else []:
        lines.append(f"  - {_md(line)}")
    return lines


def _index_md(trends: Trends) -> str:
    lines = [f"# ncuh history: {len(trends.views)} series over {trends.runs} runs", "",
             "| kernel | GPU | runs | latest | change since first | steps | trend |",
             "|---|---|---|---|---|---|---|"]
    for view in trends.views:
        times = view.times
        change = 100.0 * (times[-1] / times[0] - 1.0) if times[0] else 0.0
        steps = ", ".join(f"{s.commit_range} {_pct(s.change_pct)}" for s in view.steps) or "none"
        lines.append(f"| [{_md(view.series.key.kernel_label)}]({view.slug}.md) | "
                     f"{_md(view.series.key.gpu)} | {len(view.series)} | {times[-1]:.4g} ms | "
                     f"{_pct(change)} | {_md(steps)} | {plots.sparkline_text(times)} |")
    for gpu in trends.gpu_views:
        lines += ["", f"## {_md(gpu.label)} across GPU models", "",
                  f"![{_md(gpu.label)}]({IMAGES}/{gpu.slug}.png)"]
    return "\n".join(lines) + "\n"


def _series_md(view: SeriesView) -> str:
    series = view.series
    first, last = series.runs[0], series.runs[-1]
    lines = [f"# {_md(series.key.label)}", "",
             f"{len(series)} runs, {_md(first.short_commit)} to {_md(last.short_commit)}. "
             "[All series](index.md)", "",
             f"![{_md(series.key.label)}]({IMAGES}/{view.slug}.png)", "", "## Steps", ""]
    if not view.steps:
        lines.append("No step: the series stays within its noise and the threshold.")
    for step in view.steps:
        lines += _step_lines(step)
    return "\n".join(lines) + "\n"


# --- HTML ------------------------------------------------------------------------------------


def _template_dir() -> Path:
    try:
        from importlib.resources import files

        return Path(str(files("harness.templates")))
    except (ImportError, ModuleNotFoundError):  # a plain checkout
        return Path(__file__).resolve().parents[2] / "templates"


def _render(name: str, **values: object) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(_template_dir())),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, finalize=template_value)
    env.filters["data_uri"] = lambda png: "data:image/png;base64," + _b64(png)
    env.filters["sparkline"] = lambda values: Markup(plots.sparkline_svg(values))
    style = (_template_dir() / "style.css").read_text(encoding="utf-8")
    return env.get_template(name).render(style=style, **values)


def _b64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")
