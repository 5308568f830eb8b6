"""Render a `Writeup` to Markdown and self-contained HTML (Jinja2 templates in `templates/`).

HTML is autoescaped (kernel names and messages are data, not markup), carries its CSS inline
and its plots as base64 `data:` images, so one file reads anywhere without a network.
Markdown pages reference the plots as PNG files under `plots/` beside them, which renders on
GitHub. The pages are written as one set (`write`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import jinja2

from harness.errors import ReportError
from harness.pages.markdown_html import markdown_to_html
from harness.pages.plots import ChartCall, Plot, draw_chart
from harness.pages.side_by_side import KeyValue
from harness.pages.writeup import KernelPage, Writeup, index_pages
from harness.report import Hotspot, Listing
from harness.util import (
    holds_bad_text,
    md_fenced,
    md_one_line,
    md_prose,
    md_text,
    pause_at,
    template_value,
    write_file_set,
)

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

Format = Literal["md", "html", "both"]
PLOTS_DIR = "plots"
GPUS_PAGE = "gpus"  # the same kernels on several GPU models

def md_escape(value: object) -> str:
    """Text safe inside Markdown prose and table cells: no markup, no raw HTML."""
    return md_text(value)


def num(value: float | None, digits: int = 2, unit: str = "") -> str:
    if value is None:
        return "n/a"
    text = f"{value:,.{digits}f}"
    return f"{text} {unit}".rstrip() if unit else text


def qty(value: float | None, unit: str = "") -> str:
    """A key counter as the side-by-side tables show it: bytes in KB/MB/GB (decimal, as ncu
    prints them), times in us, shares with one decimal, counts with separators."""
    if value is None:
        return "n/a"
    if unit == "B":
        for scale, name in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
            if abs(value) >= scale:
                return f"{value / scale:,.2f} {name}"
        return f"{value:,.0f} B"
    if unit in ("%", "% of peak"):
        return f"{value:.1f}%"
    if unit == "us":
        return f"{value:,.2f} us"
    if unit == "cycles/inst":
        return f"{value:,.1f}"
    return f"{value:,.0f}"


def listings(hotspots: Sequence[Hotspot]) -> list[tuple[list[int], Hotspot]]:
    """One listing per distinct source line among the hot spots: (hot spot numbers, the
    first hot spot on that line)."""
    seen: dict[str, tuple[list[int], Hotspot]] = {}
    for number, spot in enumerate(hotspots, start=1):
        if spot.listing is None or spot.source is None:
            continue
        seen.setdefault(spot.source, ([], spot))[0].append(number)
    return list(seen.values())


def listing_text(listing: Listing) -> str:
    """A listing as aligned text for a Markdown fence; the hot line is marked with ">"."""
    rows = [" " + f"{'line':>5}  {'samples':>8}  {'executed':>12}  source"]
    for line in listing.lines:
        mark = ">" if line.hot else " "
        rows.append(f"{mark}{line.number:>5}  {line.samples:>8,}  {line.executed:>12,.0f}  "
                    f"{line.code}".rstrip())
    return "\n".join(rows)


def change(value: float | None) -> str:
    """A relative change: "+12.3%", "-4.0%", "0.0%"; "n/a" without both sides."""
    if value is None:
        return "n/a"
    if value in (float("inf"), float("-inf")):
        return "new" if value > 0 else "gone"
    return f"{value:+.1f}%"


def _template_dir() -> Path:
    try:
        from importlib.resources import files

        return Path(str(files("harness.templates")))
    except (ImportError, ModuleNotFoundError):  # running from a plain checkout
        return Path(__file__).resolve().parents[2] / "templates"


# One environment per flavour for the whole process: Jinja2 caches compiled templates per
# environment, and compiling them again for each of a chain's pages cost more than rendering.
@cache
def _environment(html: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_template_dir())),
        autoescape=html,  # HTML: every value escaped; Markdown: escaped by `md` where needed
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=template_value,  # control and bidi characters as escapes
    )
    env.filters["md"] = md_escape  # data as Markdown text
    env.filters["fenced"] = md_fenced  # data inside a ``` block
    env.filters["one_line"] = md_one_line
    env.filters["prose"] = md_prose  # authored Markdown, no raw HTML, no fences
    env.filters["markdown"] = markdown_to_html
    env.filters["num"] = num
    env.filters["qty"] = qty
    env.filters["change"] = change
    env.filters["listing_text"] = listing_text
    env.globals["listings"] = listings
    return env


@dataclass(frozen=True)
class Rendered:
    """What `write` produced: the files, index first."""

    files: tuple[Path, ...]


def build_plots(writeup: Writeup) -> list[Plot]:
    """The index plots of the chain (at the largest profiled size for runs)."""
    return _PendingPlots(plot_calls(writeup), None).plots()


class _PendingPlots:
    """The index plots: kept ones read back at once, the others handed to `workers` (where
    there are some: `plot_workers`) to draw while the command goes on, or drawn here."""

    def __init__(self, calls: list[ChartCall], workers: Executor | None) -> None:
        self._calls = calls
        self._kept = [call.kept() for call in calls]
        self._drawing: dict[int, Future[Plot]] = {}
        for index, (call, plot) in enumerate(zip(calls, self._kept, strict=True)):
            if plot is None and workers is not None:
                try:
                    self._drawing[index] = workers.submit(draw_chart, call)
                except RuntimeError:  # a worker died, or the pool was shut: drawn here
                    break

    def plots(self) -> list[Plot]:
        return [plot or self._drawn(index) for index, plot in enumerate(self._kept)]

    def _drawn(self, index: int) -> Plot:
        drawing = self._drawing.get(index)
        if drawing is not None:
            try:
                return drawing.result()
            except Exception:  # a worker died (or failed): the command draws it itself
                pass
        return self._calls[index].drawn()


def plot_calls(writeup: Writeup) -> list[ChartCall]:
    """The index's charts and their inputs (at the largest profiled size for runs)."""
    pages = index_pages(writeup)
    if not pages:
        return []
    labels = [_short_label(p) for p in pages]
    stalls = [
        {s.reason: s.cycles_per_issue for s in (p.profile.warp_state.stalls if p.profile else ())
         if s.reason != "selected"}
        for p in pages
    ]
    occupancy = [p.profile.occupancy if p.profile else None for p in pages]
    throughput = (
        ChartCall("bandwidth_chart", (
            labels, [p.gbps for p in pages], writeup.reference_gbps,
            writeup.reference_name or "reference", writeup.limit_gbps,
            writeup.limit_name or "limit"))
        if writeup.bytes_model else
        ChartCall("gflops_chart", (labels, [p.gflops for p in pages], writeup.reference_gflops,
                                   writeup.reference_name or "reference")))
    return [
        throughput,
        ChartCall("stall_chart", (labels, stalls)),
        ChartCall("roofline_chart", (labels, [p.roofline for p in pages])),
        ChartCall("occupancy_chart", (
            labels,
            [o.theoretical_pct if o else None for o in occupancy],
            [o.achieved_pct if o else None for o in occupancy],
            [", ".join(o.limiters) if o else "" for o in occupancy],
        )),
        ChartCall("instruction_mix_chart", (labels, [
            {c.name: c.share_pct for c in p.profile.instruction_classes} if p.profile else {}
            for p in pages])),
        ChartCall("bound_unit_chart", (labels, [_bound_label(p) for p in pages],
                                       [_value(p, "bound_unit") for p in pages])),
    ]


def _key_map(page: KernelPage) -> dict[str, KeyValue]:
    return {k.key: k for k in page.key_values}


def _kv_qty(values: dict[str, KeyValue], key: str) -> str:
    found = values.get(key)
    return qty(found.value, found.unit) if found else "n/a"


def _bound_text(values: dict[str, KeyValue]) -> str:
    found = values.get("bound_unit")
    return f"{found.label} {qty(found.value, found.unit)}" if found else "n/a"


def _stalls_text(page: KernelPage) -> str:
    return ", ".join(f"{k.label.removesuffix(' stall')} {qty(k.value, k.unit)}"
                     for k in page.key_values if k.key.startswith("stall:")) or "n/a"


def _value(page: KernelPage, key: str) -> float | None:
    return next((k.value for k in page.key_values if k.key == key), None)


def _bound_label(page: KernelPage) -> str:
    label = next((k.label for k in page.key_values if k.key == "bound_unit"), "n/a")
    return label.removesuffix(" throughput").removesuffix(" pipe")


def _short_label(page: KernelPage) -> str:
    return page.label or page.kernel_name


def render_page(page: KernelPage, writeup: Writeup, fmt: Literal["md", "html"]) -> str:
    env = _environment(fmt == "html")
    template = env.get_template(f"page.{fmt}.j2")
    return template.render(page=page, writeup=writeup, style=_style() if fmt == "html" else "")


def render_index(writeup: Writeup, plots: list[Plot], fmt: Literal["md", "html"]) -> str:
    env = _environment(fmt == "html")
    template = env.get_template(f"index.{fmt}.j2")
    return template.render(writeup=writeup, pages=index_pages(writeup), all_pages=writeup.pages,
                           plots=plots, plots_dir=PLOTS_DIR, label=_short_label,
                           key_map=_key_map, kv_qty=_kv_qty, bound_text=_bound_text,
                           stalls_text=_stalls_text,
                           style=_style() if fmt == "html" else "")


def render_template(name: str, fmt: Literal["md", "html"], **context: object) -> str:
    """Template `<name>.<fmt>.j2` with `context` (and the style sheet for HTML), in the
    pages' own environment: their filters, escaping and printable text."""
    template = _environment(fmt == "html").get_template(f"{name}.{fmt}.j2")
    return template.render(**context, style=_style() if fmt == "html" else "")


def _style() -> str:
    return (_template_dir() / "style.css").read_text(encoding="utf-8")


def write(writeup: Writeup, out: Path | str, fmt: Format = "both",
          plot_workers: Executor | None = None) -> Rendered:
    """Write the index and every page under `out` as one set; return the files written.

    Everything is rendered first, then written into a temporary sibling of `out` and moved
    into place together, the index last (`atomic_file_set`): an interrupt or a full disk
    leaves the previous pages as they were, never an index linking to pages that are missing.
    """
    out = Path(out)
    formats: tuple[Literal["md", "html"], ...] = ("md", "html") if fmt == "both" else (fmt,)
    # the workers (where there are some) draw the plots not kept while the pages render here
    pending = _PendingPlots(plot_calls(writeup), plot_workers)
    pause_at("drawing plots")
    pages: dict[str, str | bytes] = {}
    for page in writeup.pages:
        for f in formats:
            pages[f"{page.slug}.{f}"] = render_page(page, writeup, f)
            if holds_bad_text(pages[f"{page.slug}.{f}"]):
                raise ReportError(f"{page.source} is corrupt: it holds text that is not UTF-8")
    plots = pending.plots()
    contents: dict[str, str | bytes] = {}
    for f in formats:
        contents[f"index.{f}"] = render_index(writeup, plots, f)
    if writeup.gpus is not None:
        for f in formats:
            contents[f"{GPUS_PAGE}.{f}"] = _environment(f == "html").get_template(
                f"gpus.{f}.j2").render(writeup=writeup, gpus=writeup.gpus,
                                       style=_style() if f == "html" else "")
    if "md" in formats:
        for plot in plots:
            contents[f"{PLOTS_DIR}/{plot.name}.png"] = plot.png
    contents.update(pages)
    if holds_bad_text([text for text in contents.values() if isinstance(text, str)]):
        raise ReportError(f"{', '.join(writeup.sources)}: a source holds text that is not UTF-8")
    indexes = [f"index.{f}" for f in formats]
    return Rendered(files=tuple(write_file_set(out, contents, last=indexes)))
