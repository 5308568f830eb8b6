"""The diff as Markdown for a GitHub Actions job summary.

One status line first (what a reviewer reads), then a table of kernels sorted by severity,
then one collapsed <details> block per kernel that changed. GitHub caps a step summary at
1 MiB, so the page is built within a byte budget: details (then table rows) that do not fit
are left out with a note saying how many and where the full data is (the JSON output).
"""

from __future__ import annotations

from harness.diff.compare import DiffResult, KernelDiff
from harness.diff.formatting import percent, quantity
from harness.diff.inputs import KernelData
from harness.diff.verdicts import SEVERITY
from harness.util import code_span, html_text, md_text

MAX_BYTES = 1024 * 1024 - 1  # GitHub: "summaries are limited to 1 MiB"
_RESERVE = 1024  # room kept for the truncation note
_ICON = {"SLOWER": "🔴", "UNSURE": "🟡", "FASTER": "🟢", "SAME": "⚪"}


def _kernels(count: int) -> str:
    return f"{count} kernel" + ("" if count == 1 else "s")


def status_line(result: DiffResult) -> str:
    total = len(result.kernels)
    tail = f" — {_side_names(result)}"
    broken = (f"; {len(result.broken)} failed in the current run: "
              + ", ".join(f.label for f in result.broken[:3])) if result.broken else ""
    if result.regressed or result.broken:
        names = ", ".join(k.key.label for k in result.regressed[:3])
        more = f" and {len(result.regressed) - 3} more" if len(result.regressed) > 3 else ""
        return (f"❌ ncuh diff: REGRESSION in {len(result.regressed)} of {_kernels(total)}"
                f"{': ' + names + more if names else ''}{broken}{tail}")
    counts = ", ".join(f"{result.count(v)} {v.lower()}" for v in ("FASTER", "UNSURE", "SAME")
                       if result.count(v))
    return f"✅ ncuh diff: no regression in {_kernels(total)}: {counts or 'none compared'}{tail}"


def render_markdown(result: DiffResult, max_bytes: int = MAX_BYTES) -> str:
    """The whole page, guaranteed to be at most `max_bytes` UTF-8 bytes."""
    # the status line starts with an emoji, so it is a paragraph, never a heading: a `#` in it
    # cannot close one and needs no escape (a terminal shows this line as it is)
    head = [md_text(status_line(result)).replace("\\#", "#"), ""]
    head += _environment_lines(result)
    rows = [_table_row(k) for k in result.kernels]
    details = [_details(k) for k in result.kernels if k.verdict != "SAME"]
    tail = _failed(result) + _one_sided("Added (current only, not judged)", result.added) \
        + _one_sided("Removed (baseline only, not judged)", result.removed)
    budget = max_bytes - _RESERVE
    used = _size(head) + _size(tail)
    table = ["| verdict | kernel | duration (baseline → current) | change | evidence |",
             "|---|---|---|---|---|"] if rows else ["No kernel is present on both sides."]
    used += _size(table)
    kept_rows, dropped_rows = _fit(rows, budget - used)
    used += _size(kept_rows)
    kept_details, dropped_details = _fit(details, budget - used)
    notes = []
    if dropped_rows or dropped_details:
        notes = ["", f"> Truncated to stay under GitHub's 1 MiB summary limit: {dropped_rows} "
                 f"table rows and {dropped_details} detail blocks left out; "
                 "`ncuh diff --format json` has everything."]
    body = head + table + kept_rows + [""] + kept_details + tail + notes
    text = "\n".join(body).rstrip() + "\n"
    # hard guarantee, even for a pathological status line or kernel name
    encoded = text.encode("utf-8")
    if len(encoded) > max_bytes:
        text = encoded[: max_bytes - 40].decode("utf-8", "ignore") + "\n\n> (truncated)\n"
    return text


def _side_names(result: DiffResult) -> str:
    return f"baseline {result.baseline.path.name} vs current {result.current.path.name}"


def _environment_lines(result: DiffResult) -> list[str]:
    env = result.current.environment
    parts = [p for p in (env.gpu, f"CC {env.compute_capability}" if env.compute_capability
                         else None, f"ncu {env.ncu_version}" if env.ncu_version else None) if p]
    lines = [md_text(" · ".join(parts)) if parts else ""]
    if result.mismatches:
        lines.append(f"⚠️ compared despite differing {_text('; '.join(result.mismatches))} "
                     "(--allow-mismatch)")
    return [*lines, ""] if any(lines) else []


def _table_row(kernel: KernelDiff) -> str:
    timing = kernel.timing
    if timing is None:
        duration, change = "n/c", "n/c"
    else:
        before = quantity(timing.baseline, timing.unit)
        duration = f"{before} → {quantity(timing.current, timing.unit)}"
        change = percent(timing.change_pct)
        if timing.timing and timing.timing.ci_low_pct is not None:
            change += f" [{timing.timing.ci_low_pct:+.1f}, {timing.timing.ci_high_pct:+.1f}]"
    evidence = _evidence(kernel)
    return (f"| {_ICON[kernel.verdict]} {kernel.verdict} | {_cell(kernel.key.label)} | "
            f"{duration} | {change} | {_cell(evidence)} |")


def _evidence(kernel: KernelDiff) -> str:
    if kernel.verdict == "SAME":
        return ""
    moved = sorted((m for m in kernel.metrics if m.verdict in ("SLOWER", "FASTER", "UNSURE")
                    and m.kind == "counter"), key=lambda m: SEVERITY[m.verdict])
    words = [f"{m.label} {percent(m.change_pct, 0)}" if m.change_pct is not None
             else f"{m.label}: {m.note}" for m in moved[:3]]
    if kernel.explanation and kernel.explanation.stalls:
        words.append(kernel.explanation.stalls[0].text)
    if not words and kernel.explanation:
        # nothing gated moved: the explanation's own evidence, without its headline
        words.append(kernel.explanation.summary.partition(": ")[2]
                     or kernel.explanation.summary)
    return "; ".join(words)


def _details(kernel: KernelDiff) -> str:
    summary = kernel.explanation.summary if kernel.explanation else kernel.verdict
    # inside the <details> HTML block Markdown escapes do not apply: HTML-escape there
    lines = [f"<details><summary>{_ICON[kernel.verdict]} <b>{html_text(kernel.key.label)}</b> "
             f"{kernel.verdict}: {html_text(summary)}</summary>", "",
             f"Baseline `{_code(kernel.baseline.source)}` · current "
             f"`{_code(kernel.current.source)}`", "",
             "| metric | verdict | baseline | current | change | threshold | note |",
             "|---|---|---|---|---|---|---|"]
    for m in kernel.metrics:
        lines.append(f"| {_cell(m.label)} | {m.word} | {quantity(m.baseline, m.unit)} | "
                     f"{quantity(m.current, m.unit)} | {percent(m.change_pct)} | "
                     f"{m.threshold_pct:g}% | {_cell(m.note)} |")
    if kernel.explanation:
        lines += ["", *[f"- {_text(line)}" for line in kernel.explanation.lines()]]
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def _failed(result: DiffResult) -> list[str]:
    lines = [f"- ❌ `{_code(f.label)}`: {_text(f.error)}" for f in result.broken[:200]]
    return ["**Failed in the current run (the baseline has these kernels):**", "", *lines, ""] \
        if lines else []


def _one_sided(title: str, kernels: tuple[KernelData, ...]) -> list[str]:
    if not kernels:
        return []
    names = ", ".join(f"`{_code(k.key.label)}`" for k in kernels[:200])
    more = f" and {len(kernels) - 200} more" if len(kernels) > 200 else ""
    return [f"**{title}:** {names}{more}", ""]


def _fit(blocks: list[str], budget: int) -> tuple[list[str], int]:
    kept, used = [], 0
    for index, block in enumerate(blocks):
        size = len(block.encode("utf-8")) + 1
        if used + size > budget:
            return kept, len(blocks) - index
        kept.append(block)
        used += size
    return kept, 0


def _size(lines: list[str]) -> int:
    return sum(len(line.encode("utf-8")) + 1 for line in lines)


def _text(value: str) -> str:
    """Kernel names and messages are data: Markdown text, never markup or raw HTML."""
    return md_text(value)


def _cell(value: str) -> str:
    return md_text(value)  # `|` is escaped too, line breaks become spaces


def _code(value: str) -> str:
    return code_span(value)
