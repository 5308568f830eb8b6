"""The "Profiling Results" view of a report: ncu's details page, per kernel and section.

For each section of each kernel: its header metrics (label, unit, value, as ncu prints them:
scaled units, thousands separators), then ncu's rule messages with their estimated speedups.
Rendered as ncu-style text, Markdown or JSON. Metric rows come from the section's own header
metric list in the report (`ISection.header_metrics()`), in metric-name order like ncu's text.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from harness import markdown_text
from harness.report.kernel_profile import RuleResult
from harness.report.ncu_format import display
from harness.report.profile_builder import read_rules
from harness.report.reportfile import KernelRef, open_report, select_kernels
from harness.report.rule_text import format_speedup, speedup_label

ViewFormat = Literal["text", "md", "json"]
VIEW_FORMATS: tuple[ViewFormat, ...] = ("text", "md", "json")

RULE_WRAP = 109  # ncu wraps rule message lines at 109 characters (then pads them)
RULE_SEPARATOR = "----- " + "-" * 114


@dataclass(frozen=True)
class MetricRow:
    label: str  # ncu's wording, e.g. "Compute (SM) Throughput"
    unit: str  # display unit, e.g. "ms"
    value: str  # display value, e.g. "5.51"
    metric: str  # metric name
    raw_value: float | int | str | None  # base units, as ncu_report gives it
    raw_unit: str


@dataclass(frozen=True)
class SectionView:
    identifier: str
    name: str
    rows: tuple[MetricRow, ...]
    rules: tuple[RuleResult, ...]


@dataclass(frozen=True)
class KernelView:
    kernel_id: int
    name: str
    headline: str  # "my_kernel (32, 32, 1)x(32, 32, 1), Context 1, Stream 7, Device 0, CC 9.0"
    sections: tuple[SectionView, ...]


def _value(action: Any, name: str) -> Any:
    metric = action.metric_by_name(name)
    if metric is None or not metric.has_value():
        return None
    return metric.value()


def _headline(kernel: KernelRef) -> str:
    action = kernel.action

    def dims(prefix: str) -> str:
        values = [_value(action, f"{prefix}_{axis}") for axis in "xyz"]
        return "(" + ", ".join("?" if v is None else str(v) for v in values) + ")"

    parts = [f"{kernel.name} {dims('launch__grid_dim')}x{dims('launch__block_dim')}"]
    for label, metric in (("Context", "launch__context_id"), ("Stream", "launch__stream_id"),
                          ("Device", "launch__device_id")):
        value = _value(action, metric)
        if value is not None:
            parts.append(f"{label} {value}")
    major = _value(action, "device__attribute_compute_capability_major")
    minor = _value(action, "device__attribute_compute_capability_minor")
    if major is not None and minor is not None:
        parts.append(f"CC {major}.{minor}")
    return ", ".join(parts)


def _row(metric: Any) -> MetricRow:
    raw_value = metric.value() if metric.has_value() else None
    raw_unit = str(metric.unit() or "")
    value, unit = display(raw_value, raw_unit)
    return MetricRow(label=str(metric.label() or metric.name()), unit=unit, value=value,
                     metric=str(metric.name()), raw_value=raw_value, raw_unit=raw_unit)


def build_view(kernel: KernelRef) -> KernelView:
    """The sections (header metrics and rules) of one kernel, in ncu's section order."""
    rules = read_rules(kernel.action)
    sections = []
    for section in sorted(kernel.action.sections(), key=lambda s: (s.order(), s.name())):
        identifier = str(section.identifier())
        rows = tuple(sorted((_row(m) for m in section.header_metrics()), key=lambda r: r.metric))
        section_rules = tuple(r for r in rules if r.section == identifier)
        if not rows and not section_rules:
            continue
        sections.append(SectionView(identifier=identifier, name=str(section.name()), rows=rows,
                                    rules=section_rules))
    return KernelView(kernel_id=kernel.kernel_id, name=kernel.name, headline=_headline(kernel),
                      sections=tuple(sections))


def report_views(path: Path | str, kernel_regex: str | None = None) -> list[KernelView]:
    """Open a report and build the view of each (matching) kernel."""
    report = open_report(path)
    return [build_view(kernel) for kernel in select_kernels(report, kernel_regex)]


# ---------------------------------------------------------------------------------------------
# rendering


def _table(rows: tuple[MetricRow, ...], indent: str) -> list[str]:
    name_w = max([len("Metric Name"), *(len(r.label) for r in rows)])
    unit_w = max([len("Metric Unit"), *(len(r.unit) for r in rows)])
    value_w = max([len("Metric Value"), *(len(r.value) for r in rows)])
    rule = f"{indent}{'-' * name_w} {'-' * unit_w} {'-' * value_w}"
    lines = [rule, f"{indent}{'Metric Name':<{name_w}} {'Metric Unit':>{unit_w}} "
             f"{'Metric Value':>{value_w}}", rule]
    lines += [f"{indent}{r.label:<{name_w}} {r.unit:>{unit_w}} {r.value:>{value_w}}" for r in rows]
    lines.append(rule)
    return lines


def rule_heading(rule: RuleResult) -> str | None:
    """"Est. Speedup: 83.94%" (or the local wording), None when ncu gave no estimate."""
    if rule.speedup_pct is None:
        return None
    return f"{speedup_label(rule.speedup_type)}: {format_speedup(rule.speedup_pct)}"


def _rule_lines(rule: RuleResult, indent: str) -> list[str]:
    # ncu keeps the breaking space at the head of each continuation line while it measures,
    # so continuation lines hold one character less than the first.
    body = textwrap.wrap(rule.message, RULE_WRAP, subsequent_indent=" ", break_long_words=False,
                         break_on_hyphens=False) or [""]
    body = [body[0]] + [line[1:] for line in body[1:]]
    heading = rule_heading(rule)
    first, rest = (heading, body) if heading else (body[0], body[1:])
    tag = rule.type if rule.type != "WARN" else "WRN"
    return [f"{indent}{tag:<5} {first}"] + [f"{indent}      {line}" for line in rest]


def render_text(views: list[KernelView]) -> str:
    """ncu's details page layout (as in `ncu --import R --page details`)."""
    lines: list[str] = []
    for view in views:
        lines.append(f"  {view.headline}")
        for section in view.sections:
            lines.append(f"    Section: {section.name}")
            if section.rows:
                lines += _table(section.rows, "    ")
            if section.rules:
                lines.append("")
                for number, rule in enumerate(section.rules):
                    if number:
                        lines.append(f"    {RULE_SEPARATOR}")
                    lines += _rule_lines(rule, "    ")
            lines.append("")
    return "\n".join(lines) + "\n"


def _md_cell(value: str) -> str:
    return markdown_text.text(value)  # data: no markup, no raw HTML, one line


def render_markdown(views: list[KernelView]) -> str:
    lines: list[str] = []
    for view in views:
        lines += [f"## {_md_cell(view.headline)}", ""]
        for section in view.sections:
            lines += [f"### {_md_cell(section.name)}", ""]
            if section.rows:
                lines += ["| Metric Name | Metric Unit | Metric Value |", "|---|---|--:|"]
                lines += [f"| {_md_cell(r.label)} | {_md_cell(r.unit)} | {_md_cell(r.value)} |"
                          for r in section.rows]
                lines.append("")
            for rule in section.rules:
                heading = rule_heading(rule)
                kind = _md_cell(rule.type)
                prefix = f"**{kind}** ({_md_cell(heading)})" if heading else f"**{kind}**"
                lines += [f"- {prefix} {_md_cell(rule.message)}"]
            if section.rules:
                lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def render_json(views: list[KernelView]) -> str:
    return json.dumps({"schema": "ncuh.report/1", "kernels": [asdict(v) for v in views]},
                      indent=2, ensure_ascii=False) + "\n"


def render(views: list[KernelView], fmt: ViewFormat = "text") -> str:
    renderers = {"text": render_text, "md": render_markdown, "json": render_json}
    return renderers[fmt](views)
