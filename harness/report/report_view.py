"""The "Profiling Results" view of a report: ncu's details page, per kernel and section.

For each section of each kernel: its header metrics (label, unit, value, as ncu prints them:
scaled units, thousands separators), then ncu's rule messages with their estimated speedups.
Rendered as ncu-style text, Markdown or JSON. Metric rows come from the section's own header
metric list in the report (`ISection.header_metrics()`), in metric-name order like ncu's text.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import textwrap
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from harness.report.details_layout import (
    DISPLAY_UNITS,
    EXTRA_HEADER_ROWS,
    HEADER_GROUPS,
    HEADER_UNITS,
    INSTANCE_HEADER_ROWS,
    METRIC_OPTIONS,
    SORT_AS,
    SOURCE_UNITS,
    BodyLayout,
    body_layouts,
)
from harness.report.model import (
    BodyTable,
    KernelReport,
    KernelView,
    MetricRow,
    RuleResult,
    SectionView,
)
from harness.report.ncu_format import display, format_number, scale_unit
from harness.report.reportfile import KernelRef, open_report, select_kernels
from harness.report.rule_text import format_speedup, speedup_label
from harness.report.rules import read_rules
from harness.rundir import added_metrics, is_slim
from harness.util import md_text

ViewFormat = Literal["text", "md", "json"]
VIEW_FORMATS: tuple[ViewFormat, ...] = ("text", "md", "json")
# ncu's --print-details: "header" (its default) prints each section's header table and rules,
# "all" the body tables too
Details = Literal["header", "all"]
DETAILS: tuple[Details, ...] = ("header", "all")

NOT_AVAILABLE = "(!) n/a"  # ncu's value for a metric the report does not hold
RULE_WRAP = 109  # ncu wraps rule message lines at 109 characters (then pads them)
RULE_SEPARATOR = "----- " + "-" * 110  # 120 columns with its indent
RULE_COLUMNS = 120  # ncu pads every line of a rule message with spaces to 120 columns


def _value(action: Any, name: str) -> Any:
    metric = action.metric_by_name(name)
    if metric is None or not metric.has_value():
        return None
    return metric.value()


_NAMESPACE = re.compile(r"\b(?:\w+::)+")
# a cast of a template value argument: a type name in parentheses before a number, integral
# ("(unsigned int)4096") or an enumeration ("(padding_t)70", from cuFFT's kernels)
_VALUE_CAST = re.compile(r"\([A-Za-z_]\w*(?: \w+)*\)(?=-?\d)")


def simplified_name(demangled: str) -> str:
    """A kernel's name as ncu's details page heads it: the demangled name without namespaces
    and without the casts of template value arguments ("(int)128" -> "128", "(padding_t)70" ->
    "70"); an extern "C" kernel keeps its plain name."""
    return _VALUE_CAST.sub("", _NAMESPACE.sub("", demangled))


def _headline(kernel: KernelRef) -> str:
    action = kernel.action

    def dims(prefix: str) -> str:
        values = [_value(action, f"{prefix}_{axis}") for axis in "xyz"]
        return "(" + ", ".join("?" if v is None else str(v) for v in values) + ")"

    grid, block = dims("launch__grid_dim"), dims("launch__block_dim")
    parts = [f"{simplified_name(kernel.demangled_name)} {grid}x{block}"]
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
    value, unit = display(raw_value, SOURCE_UNITS.get(str(metric.name()), raw_unit))
    unit = DISPLAY_UNITS.get(str(metric.name()), unit)
    return MetricRow(label=str(metric.label() or metric.name()), unit=unit, value=value,
                     metric=str(metric.name()), raw_value=raw_value, raw_unit=raw_unit)


def _named_row(action: Any, name: str, label: str) -> MetricRow | None:
    metric = action.metric_by_name(name) if name in _names(action) else None
    if metric is None or not metric.has_value():
        return None
    row = _row(metric)
    return MetricRow(label=label, unit=row.unit, value=row.value, metric=row.metric,
                     raw_value=row.raw_value, raw_unit=row.raw_unit)


def _names(action: Any) -> frozenset[str]:
    cached = getattr(action, "_ncuh_names", None)
    if cached is None:
        cached = frozenset(action.metric_names())
        with contextlib.suppress(AttributeError):  # a proxy that takes no attributes
            action._ncuh_names = cached
    return cached


_LEADING_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?")


def sort_value(printed: str) -> float | None:
    """The number ncu sorts a body table by: it reads the printed value only up to a
    thousands separator, so "1,215.00" sorts as 1 (below "1.49") and "8,046.77" ties with
    "8,464.72" (seen in its Warp State tables)."""
    match = _LEADING_NUMBER.match(printed.split(",", 1)[0])
    return float(match.group(0)) if match else None


# ncu prints "sum (v1; v2; ...)" values in a 30-column value column, right-aligned, wrapped
# greedily at spaces: 29 columns on the first line and on the last, 28 in between (read off
# its pages)
LIST_WIDTH = 30
LIST_FIRST, LIST_REST = 29, 28


def wrap_list(text: str) -> list[str]:
    """`text` wrapped at spaces the way ncu wraps instance lists."""
    words = text.split(" ")
    lines: list[str] = []
    current = ""
    for index, word in enumerate(words):
        candidate = f"{current} {word}" if current else word
        last = index == len(words) - 1
        limit = LIST_FIRST if not lines or last else LIST_REST
        if current and len(candidate) > limit:
            lines.append(current)
            current = word
        else:
            current = candidate
    lines.append(current)
    return lines


def _instance_list(metric: Any, row: MetricRow) -> str:
    """ncu's text for an instanced metric in a body table: the sum, then every instance
    value in the sum's display unit, wrapped at 30 columns (lines joined by newlines)."""
    total = metric.value()
    scaled, _ = scale_unit(float(total), str(metric.unit() or ""))
    # the unit's power of ten (1000 for Kbyte), so 25 / 1000 prints 0.03 as ncu prints it
    divisor = round(float(total) / scaled) if total and scaled != total else 1
    values = []
    for index in range(metric.num_instances()):
        value = metric.value(index)
        values.append(format_number(value if divisor == 1 else value / divisor))
    text = f"{row.value} ({'; '.join(values)})"
    return "\n".join(wrap_list(text))


def _instances_text(metric: Any, row: MetricRow) -> str:
    """"1 (0-15)": the metric's value, then each instance's as it stands (NUMA rows)."""
    values = [str(metric.value(i)) for i in range(metric.num_instances())]
    return f"{row.value} ({'; '.join(values)})"


def _group_members(action: Any, name: str) -> list[str]:
    """The members of a metric group (group:<name>, a comma list), [] when the report lacks it."""
    row = _named_row(action, name, name)
    raw = row.raw_value if row is not None else None
    return [m for m in str(raw).split(",") if m] if isinstance(raw, str) else []


def _header_rows(action: Any, section: Any, identifier: str) -> tuple[MetricRow, ...]:
    """The section's header metrics plus the rows ncu repeats from other sections, in
    metric-name order as ncu prints them."""
    rows = {r.metric: r for r in (_row(m) for m in section.header_metrics())}
    for name, unit in HEADER_UNITS.items():
        if name in rows:
            rows[name] = dataclasses.replace(rows[name], unit=unit)
    slim = is_slim(identifier, _names(action))
    for name, label in EXTRA_HEADER_ROWS.get(identifier, ()):
        if name in rows:
            continue
        row = _named_row(action, name, label)
        if row is None and name in METRIC_OPTIONS:
            # the label, with the value of the metric this chip names instead
            option = _named_row(action, METRIC_OPTIONS[name], label)
            row = dataclasses.replace(option, metric=name) if option is not None else None
        if row is not None:
            if name in INSTANCE_HEADER_ROWS:
                row = dataclasses.replace(row, value=_instances_text(action.metric_by_name(name),
                                                                     row))
            rows[name] = row
    if slim:  # what the pages overlay added, named as themselves, in plain name order
        shown_as = {METRIC_OPTIONS[name] for name in rows if name in METRIC_OPTIONS}
        units = {metric.split("__", 1)[0] for metric in _names(action)}
        for name in added_metrics(identifier):
            if name in rows or name in shown_as:
                continue
            row = _named_row(action, name, name)
            if row is None and name.split("__", 1)[0] in units:
                # a metric of this chip's units that was not collected: ncu says "n/a"; one of
                # another chip's units (`syslts__` on Hopper) it leaves out
                row = MetricRow(name, "", NOT_AVAILABLE, name, None, "")
            if row is not None:
                rows[name] = row
    keyed = [(((r.metric if slim else SORT_AS.get(r.metric, r.metric)), 0), r)
             for r in rows.values()]
    # a group's members sort where the group's name sorts, in the group's order
    for group, label in HEADER_GROUPS.get(identifier, ()):
        for index, member in enumerate(_group_members(action, group)):
            if (row := _named_row(action, member, f"{label} ({member})")) is not None:
                keyed.append(((group, index), row))
    return tuple(row for _, row in sorted(keyed, key=lambda item: item[0]))


def _grid(action: Any, layout: BodyLayout) -> BodyTable | None:
    """A table with one row per instance of its metrics (ncu's NUMA Affinity table)."""
    metrics = [action.metric_by_name(c.metric) if c.metric in _names(action) else None
               for c in layout.columns if c.metric is not None]
    if not metrics or any(m is None or not m.num_instances() for m in metrics):
        return None
    first = metrics[0]
    ids = first.correlation_ids()
    cells = []
    for index in range(first.num_instances()):
        row = []
        for column in layout.columns:
            if column.metric is None:
                row.append(str(ids.value(index)) if ids is not None else str(index))
            else:
                metric = action.metric_by_name(column.metric)
                row.append(str(metric.value(index)) if index < metric.num_instances() else "")
        cells.append(tuple(row))
    return BodyTable(titles=layout.titles, rows=(), columns=tuple(c.title for c in layout.columns),
                     cells=tuple(cells), align="".join(c.align for c in layout.columns))


def _body_tables(action: Any, section: Any, identifier: str) -> tuple[BodyTable, ...]:
    def value(name: str) -> float | None:
        row = _named_row(action, name, name)
        return sort_value(row.value) if row is not None else None

    body = list(section.body_metrics())
    # the section's own metric objects carry the unit the section gives (inst, not thread)
    own = {str(m.name()): m for m in body}

    def row_of(name: str, label: str, instances: bool = True) -> MetricRow | None:
        metric = own.get(name)
        if metric is None or not metric.has_value():
            return _named_row(action, name, label)
        row = dataclasses.replace(_row(metric), label=label)
        if instances and metric.num_instances() > 1:  # a curve: its sum, then every value
            row = dataclasses.replace(row, value=_instance_list(metric, row))
        return row

    def group(name: str) -> list[str]:
        return _group_members(action, name)

    tables = []
    for layout in body_layouts(identifier, body, value, group):
        if layout.columns:
            if (grid := _grid(action, layout)) is not None:
                tables.append(grid)
            continue
        # a metric the report lacks: ncu prints the row with "(!) n/a" and no unit
        rows = tuple(row_of(r.metric, r.label, r.instances)
                     or MetricRow(r.label, "", NOT_AVAILABLE, r.metric, None, "")
                     for r in layout.rows)
        if rows or not layout.rows:  # a layout without rows is a note (titles only)
            tables.append(BodyTable(titles=layout.titles, rows=rows))
    return tuple(tables)


def build_view(kernel: KernelRef, rules: tuple[RuleResult, ...] | None = None) -> KernelView:
    """The sections (header metrics, body tables, rules) of one kernel, in ncu's order."""
    if rules is None:
        rules = read_rules(kernel.action)
    sections = []
    for section in sorted(kernel.action.sections(), key=lambda s: (s.order(), s.name())):
        identifier = str(section.identifier())
        rows = _header_rows(kernel.action, section, identifier)
        body = _body_tables(kernel.action, section, identifier)
        section_rules = tuple(r for r in rules if r.section == identifier)
        if not rows and not section_rules and not body:
            continue
        sections.append(SectionView(identifier=identifier, name=str(section.name()), rows=rows,
                                    rules=section_rules, body=body))
    return KernelView(kernel_id=kernel.kernel_id, name=kernel.name, headline=_headline(kernel),
                      sections=tuple(sections))


def report_views(path: Path | str, kernel_regex: str | None = None) -> list[KernelView]:
    """Open a report and build the view of each (matching) kernel."""
    report = open_report(path)
    return [build_view(kernel) for kernel in select_kernels(report, kernel_regex)]


def profile_views(profiles: list[KernelReport]) -> list[KernelView]:
    """The details views the profiles carry (every profile built from a report has one)."""
    return [p.details for p in profiles if p.details is not None]


# ---------------------------------------------------------------------------------------------
# rendering


def _table(rows: tuple[MetricRow, ...], indent: str) -> list[str]:
    values = {id(r): r.value.split("\n") for r in rows}
    wrapped = any(len(v) > 1 for v in values.values())
    name_w = max([len("Metric Name"), *(len(r.label) for r in rows)])
    unit_w = max([len("Metric Unit"), *(len(r.unit) for r in rows)])
    value_w = max([len("Metric Value"), *(len(line) for v in values.values() for line in v)])
    if wrapped:
        value_w = max(value_w, LIST_WIDTH)
    rule = f"{indent}{'-' * name_w} {'-' * unit_w} {'-' * value_w}"
    lines = [rule, f"{indent}{'Metric Name':<{name_w}} {'Metric Unit':>{unit_w}} "
             f"{'Metric Value':>{value_w}}", rule]
    for r in rows:
        first, *rest = values[id(r)]
        lines.append(f"{indent}{r.label:<{name_w}} {r.unit:>{unit_w}} {first.strip():>{value_w}}")
        lines += [f"{indent}{'':<{name_w}} {'':>{unit_w}} {line.strip():>{value_w}}"
                  for line in rest]
    lines.append(rule)
    return lines


def _grid_lines(table: BodyTable, indent: str) -> list[str]:
    widths = [max([len(title), *(len(row[i]) for row in table.cells)])
              for i, title in enumerate(table.columns)]

    def line(cells: tuple[str, ...]) -> str:
        return indent + " ".join(f"{cell:{align}{width}}" for cell, align, width
                                 in zip(cells, table.align, widths, strict=True))

    rule = indent + " ".join("-" * width for width in widths)
    return [rule, line(table.columns), rule, *(line(row) for row in table.cells), rule]


def rule_heading(rule: RuleResult) -> str | None:
    """"Est. Speedup: 83.94%" (or the local wording), None when ncu gave no estimate."""
    if rule.speedup_pct is None:
        return None
    return f"{speedup_label(rule.speedup_type)}: {format_speedup(rule.speedup_pct)}"


class _RuleWrapper(textwrap.TextWrapper):
    """ncu's wrap of a rule message: a word longer than a line (a URL) starts a line of its
    own and is broken at the width there, and that line keeps the breaking space before it."""

    def __init__(self) -> None:
        super().__init__(RULE_WRAP, subsequent_indent=" ", break_long_words=False,
                         break_on_hyphens=False)
        self.broken: list[str] = []  # the long words' pieces that fill a line of their own

    def _handle_long_word(self, reversed_chunks: list[str], cur_line: list[str],
                          cur_len: int, width: int) -> None:
        if cur_line:  # end this line; the long word starts the next one
            return
        piece = reversed_chunks[-1][:self.width]  # the kept space not counted
        reversed_chunks[-1] = reversed_chunks[-1][len(piece):]
        cur_line.append(piece)
        self.broken.append(piece)


def _wrap_rule_message(message: str) -> list[str]:
    # ncu keeps the breaking space at the head of each continuation line while it measures,
    # so continuation lines hold one character less than the first; it drops that space
    # from the printed line, except on a line that starts with a broken long word.
    wrapper = _RuleWrapper()
    body = wrapper.wrap(message) or [""]
    return [body[0]] + [line if line[1:] in wrapper.broken else line[1:] for line in body[1:]]


def _rule_lines(rule: RuleResult, indent: str, pad: bool) -> list[str]:
    body = _wrap_rule_message(rule.message)
    heading = rule_heading(rule)
    first, rest = (heading, body) if heading else (body[0], body[1:])
    tag = rule.tag
    lines = [f"{indent}{tag:<5} {first}"] + [f"{indent}      {line}" for line in rest]
    return [line.ljust(RULE_COLUMNS) for line in lines] if pad else lines


def _bodies(views: list[KernelView], details: Details) -> list[KernelView]:
    if details == "all":
        return views
    return [dataclasses.replace(v, sections=tuple(dataclasses.replace(s, body=())
                                                  for s in v.sections)) for v in views]


def render_text(views: list[KernelView], details: Details = "header", pad: bool = False) -> str:
    """ncu's details page layout (as in `ncu --import R --page details --print-details
    <details>`). `pad`: pad rule message lines with spaces to 120 columns, as ncu does (for
    a page compared byte for byte with ncu's; pages that embed the view leave it off)."""
    views = _bodies(views, details)
    lines: list[str] = []
    for view in views:
        lines.append(f"  {view.headline}")
        for section in view.sections:
            lines.append(f"    Section: {section.name}")
            if section.rows:
                lines += _table(section.rows, "    ")
            for table in section.body:
                if section.rows or table is not section.body[0]:
                    lines.append("")
                lines += [f"    {title}" for title in table.titles]
                if table.rows:
                    lines += _table(table.rows, "    ")
                elif table.columns:
                    lines += _grid_lines(table, "    ")
            if section.rules:
                lines.append("")
                for number, rule in enumerate(section.rules):
                    if number:
                        lines.append(f"    {RULE_SEPARATOR}")
                    lines += _rule_lines(rule, "    ", pad)
            lines.append("")
    return "\n".join(lines) + "\n"


def _md_cell(value: str) -> str:
    return md_text(value)  # data: no markup, no raw HTML, one line


def _md_table(rows: tuple[MetricRow, ...]) -> list[str]:
    return (["| Metric Name | Metric Unit | Metric Value |", "|---|---|--:|"]
            + [f"| {_md_cell(r.label)} | {_md_cell(r.unit)} | {_md_cell(r.value)} |"
               for r in rows] + [""])


def render_markdown(views: list[KernelView], details: Details = "header") -> str:
    views = _bodies(views, details)
    lines: list[str] = []
    for view in views:
        lines += [f"## {_md_cell(view.headline)}", ""]
        for section in view.sections:
            lines += [f"### {_md_cell(section.name)}", ""]
            if section.rows:
                lines += _md_table(section.rows)
            for table in section.body:
                if table.columns:
                    lines += [f"**{_md_cell(' · '.join(table.titles))}**", "",
                              "| " + " | ".join(_md_cell(c) for c in table.columns) + " |",
                              "|" + "|".join("---" if a == "<" else "--:" for a in table.align)
                              + "|",
                              *("| " + " | ".join(_md_cell(c) for c in row) + " |"
                                for row in table.cells), ""]
                    continue
                if not table.rows:  # a note
                    lines += [_md_cell(" ".join(table.titles)), ""]
                    continue
                lines += [f"**{_md_cell(' · '.join(table.titles[:2]))}**", ""]
                lines += _md_table(table.rows)
            for rule in section.rules:
                heading = rule_heading(rule)
                kind = _md_cell(rule.tag)
                prefix = f"**{kind}** ({_md_cell(heading)})" if heading else f"**{kind}**"
                lines += [f"- {prefix} {_md_cell(rule.message)}"]
            if section.rules:
                lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def render_json(views: list[KernelView], details: Details = "header") -> str:
    views = _bodies(views, details)
    return json.dumps({"schema": "ncuh.report/1", "kernels": [asdict(v) for v in views]},
                      indent=2, ensure_ascii=False) + "\n"


def render_view(views: list[KernelView], fmt: ViewFormat = "text",
                details: Details = "header") -> str:
    """The view as `ncuh report` prints it (its text byte for byte as ncu prints the page)."""
    if fmt == "text":
        return render_text(views, details, pad=True)
    renderers = {"md": render_markdown, "json": render_json}
    return renderers[fmt](views, details)
