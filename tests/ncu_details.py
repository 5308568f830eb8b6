"""Parse ncu's details page text (`--page details --print-details all`) for tests.

Per kernel: each section's first table (its header metrics: label -> (unit, value)) and its
rule messages (tag, speedup heading, text joined into one line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_KERNEL = re.compile(r"^  (?P<name>\S+) \(")
_SECTION = re.compile(r"^    Section: (?P<name>.+)$")
_RULE = re.compile(r"^    (?P<tag>OPT|INF|WRN|ERR|OK)\s+(?P<text>.*)$")
_TABLE_RULE = re.compile(r"^    -+( -+)+\s*$")


@dataclass
class DetailsRule:
    tag: str
    heading: str | None  # "Est. Speedup: 83.94%" or None
    text: str  # message, lines joined by single spaces


@dataclass
class DetailsSection:
    name: str
    header: dict[str, tuple[str, str]] = field(default_factory=dict)  # label -> (unit, value)
    rules: list[DetailsRule] = field(default_factory=list)
    raw_rule_lines: list[list[str]] = field(default_factory=list)


def _split_row(line: str, widths: list[int]) -> tuple[str, str, str]:
    body = line[4:]
    name = body[: widths[0]].strip()
    unit = body[widths[0] + 1 : widths[0] + 1 + widths[1]].strip()
    value = body[widths[0] + 1 + widths[1] + 1 :].strip()
    return name, unit, value


def parse_details(path: Path) -> dict[str, list[DetailsSection]]:
    """kernel name -> its sections in page order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    kernels: dict[str, list[DetailsSection]] = {}
    sections: list[DetailsSection] = []
    section: DetailsSection | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        if (match := _KERNEL.match(line)) and not line.startswith("    "):
            sections = kernels.setdefault(match.group("name"), [])
            section = None
        elif match := _SECTION.match(line):
            section = DetailsSection(match.group("name"))
            sections.append(section)
            # The section's own header table follows immediately (3 rule/heading lines).
            if index + 1 < len(lines) and _TABLE_RULE.match(lines[index + 1]):
                widths = [len(part) for part in lines[index + 1][4:].split(" ")]
                index += 4
                while not _TABLE_RULE.match(lines[index]):
                    label, unit, value = _split_row(lines[index], widths)
                    section.header[label] = (unit, value)
                    index += 1
        elif section is not None and (match := _RULE.match(line)):
            block = [match.group("text").rstrip()]
            index += 1
            while index < len(lines) and lines[index].startswith("          "):
                block.append(lines[index][10:].rstrip())
                index += 1
            section.raw_rule_lines.append(block)
            heading = block[0] if block[0].startswith("Est. ") else None
            text_lines = block[1:] if heading else block
            section.rules.append(DetailsRule(match.group("tag"), heading, " ".join(text_lines)))
            continue
        index += 1
    return kernels
