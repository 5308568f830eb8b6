"""The `pages` set's section folder: ncu's own sections, two with their display widgets left out
and one thinned of per-instruction metrics nothing reads.

The overlay is a copy of the running ncu's stock section folder (rules included) in which
`MemoryWorkloadAnalysis_Tables` and `MemoryWorkloadAnalysis_Chart` keep their identifiers,
metric lists and rules but trade their widgets for the metrics ncuh and those rules read, and
Source Counters leaves out `THINNED_METRICS` (with the two rules that read them): 23 replay
passes instead of 36 on an H100. It is built once per stock folder under
`$NCUH_CACHE_DIR/_ncu_sections/<key>/`; where it cannot be built, `pages_overlay` returns None
with the reason and `pages` runs on the stock sections (the manifest's `ncu.overlay_note`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import util
from harness.rundir import (
    OPTIONAL_RULE_INPUTS_LEFT_OUT,
    RULE_METRICS,
    RULES_LEFT_OUT,
    SLIMMED_SECTIONS,
    THINNED_METRICS,
    WIDGET_METRICS_READ,
)
from harness.util import CACHE_ENV as CACHE_ENV
from harness.util import cache_dir, switched_off

# 2: Source Counters thinned too; 3: of per-instruction thread counts; 4: of the sectors and
# wavefronts per instruction, with the two rules that read them
OVERLAY_VERSION = 4
CACHE_FOLDER = "_ncu_sections"
# A built overlay `<key>/` holds `sections/` (the folder ncu is given: section and rule files
# only, as in ncu's own) and `overlay.json` (what it holds), renamed into place together.
SECTIONS = "sections"
MARKER = "overlay.json"
SWITCH_ENV = "NCUH_PAGES_OVERLAY"  # "off": `pages` on ncu's stock sections (36 passes on H100)
_IDENTIFIER = re.compile(r'^Identifier:\s*"([^"]+)"', re.MULTILINE)
_TOP_BLOCK = r"^{name}\s*\{{"
_NAMED = re.compile(r'(?<![A-Za-z])Name:\s*"([^"]+)"')  # `Name:`, not `DisplayName:`
# A metric entry of a section's lists, or a derived metric's definition, at any depth.
_ENTRY = re.compile(r"(?<![A-Za-z])(Metrics|MetricDefinitions)\s*\{")
_EXPRESSION = re.compile(r'(?<![A-Za-z])Expression:\s*"([^"]*)"')
_METRIC_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_RULE_SECTION = re.compile(r'def\s+get_section_identifier\(\s*\)\s*:\s*return\s+"([^"]+)"')
_RULE_IDENTIFIER = re.compile(r'def\s+get_identifier\(\s*\)\s*:\s*return\s+"([^"]+)"')
# A request that may go unanswered without a word: optional, no default value, no warning
# (`MetricRequest("name", "alias", Importance.OPTIONAL, None, False)`, as ncu 2025.3.1 writes
# it). With a default the rule would read a stand-in value; with the warning it would print
# one more message; in any other form it is taken for required.
_SILENT_OPTIONAL_REQUEST = re.compile(
    r'MetricRequest\(\s*"([^"]+)"\s*,\s*(?:"[^"]*"|None)\s*,\s*Importance\.OPTIONAL\s*,'
    r'\s*None\s*,\s*False\s*\)')
# Rules name what they read as `MetricRequest("name", ...)` (ncu 2023.2 and later) or
# `metric_by_name("name")` (older rules, and helpers).
_RULE_METRIC = re.compile(r'(?:MetricRequest|metric_by_name)\(\s*"([^"]+)"')


class OverlayError(Exception):
    """A stock section file is not in the shape the overlay expects."""


@dataclass(frozen=True)
class Overlay:
    """A built overlay: the folder to pass as `--section-folder`, and what it changed."""

    folder: Path
    stock: Path
    slimmed: tuple[str, ...]
    thinned: tuple[str, ...] = ()  # the metrics left out of thinned sections
    rules_left_out: tuple[str, ...] = ()  # identifiers of ncu's rules not copied


@dataclass(frozen=True)
class OverlayResult:
    overlay: Overlay | None
    reason: str | None = None  # why there is none (then `pages` runs on the stock sections)


def _block_end(text: str, open_brace: int) -> int:
    """Index of the brace closing the one at `open_brace` (section files quote no braces)."""
    depth = 0
    for index in range(open_brace, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return index
    raise OverlayError("unbalanced braces")


def _top_blocks(text: str, name: str) -> list[tuple[int, int]]:
    """(start, end) of every top-level `name { ... }` block."""
    blocks = []
    for match in re.finditer(_TOP_BLOCK.format(name=re.escape(name)), text, re.MULTILINE):
        blocks.append((match.start(), _block_end(text, match.end() - 1)))
    return blocks


def _metric_entry(name: str) -> str:
    return f'  Metrics {{\n    Label: "{name}"\n    Name: "{name}"\n  }}\n'


def slim_section(text: str, extra_metrics: Iterable[str]) -> str:
    """The section file `text` with each body's items left out (its display name kept) and
    `extra_metrics` added to its top-level `Metrics` list (those it names already, once)."""
    metrics_blocks = _top_blocks(text, "Metrics")
    if len(metrics_blocks) != 1:
        raise OverlayError(f"expected one top-level Metrics block, found {len(metrics_blocks)}")
    from_bodies: list[str] = []
    for start, end in reversed(_top_blocks(text, "Body")):
        display = re.search(r'^  DisplayName:\s*"[^"]*"', text[start:end], re.MULTILINE)
        # a metric a body names outright (not a widget's own) stays collected
        from_bodies[:0] = [name for name in _NAMED.findall(text[start:end])
                           if not name.startswith(("breakdown:", "group:"))]
        body = "Body {\n" + (display.group(0) + "\n" if display else "") + "}"
        text = text[:start] + body + text[end + 1:]
    start, end = _top_blocks(text, "Metrics")[0]
    named = set(_NAMED.findall(text[start:end]))
    added = "".join(_metric_entry(name) for name in dict.fromkeys([*from_bodies, *extra_metrics])
                    if name not in named)
    return text[:end] + added + text[end:]


def thin_section(text: str, names: Iterable[str]) -> str:
    """The section file `text` without the metric entries and derived-metric definitions named
    `names` (each a leaf block `Metrics { Name: "..." ... }`, at any depth; its line goes too);
    every other byte as it was."""
    drop = set(names)
    kept: list[str] = []
    position = 0
    for match in _ENTRY.finditer(text):
        end = _block_end(text, match.end() - 1)
        inner = text[match.end():end]
        name = _NAMED.search(inner)
        if name is None or name.group(1) not in drop or _ENTRY.search(inner):
            continue  # a list of entries, or an entry to keep: look inside it
        line_start = text.rfind("\n", 0, match.start()) + 1
        start = line_start if not text[line_start:match.start()].strip() else match.start()
        after = end + 1
        if text.startswith("\n", after) and start == line_start:
            after += 1
        kept.append(text[position:start])
        position = after
    kept.append(text[position:])
    return "".join(kept)


def rule_metrics(folder: Path, section: str | None = None,
                 optional_left_out: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """Every metric the rule files in `folder` that belong to `section` (None: any section)
    ask for, in order; less, for a rule named in `optional_left_out` (rule identifier ->
    metrics), those of its names that it asks for only as silent optional inputs (every
    mention of the name in its file is such a request)."""
    names: list[str] = []
    for rule in sorted(folder.glob("*.py")):
        text = rule.read_text(encoding="utf-8", errors="replace")
        owner = _RULE_SECTION.search(text)
        if section is not None and not (owner and owner.group(1) == section):
            continue
        mentions = _RULE_METRIC.findall(text)
        identifier = _RULE_IDENTIFIER.search(text)
        allowed = (optional_left_out or {}).get(identifier.group(1), ()) if identifier else ()
        silent = _SILENT_OPTIONAL_REQUEST.findall(text)
        may_go = {name for name in allowed if 0 < mentions.count(name) == silent.count(name)}
        names.extend(name for name in mentions if name not in may_go)
    return list(dict.fromkeys(names))


def leave_out_rules(folder: Path, identifiers: Collection[str]) -> list[str]:
    """Delete the rule files in `folder` whose rule is one of `identifiers`; return those
    deleted, in file order (a rule the folder lacks is not named)."""
    left_out = []
    for rule in sorted(folder.glob("*.py")):
        match = _RULE_IDENTIFIER.search(rule.read_text(encoding="utf-8", errors="replace"))
        if match and match.group(1) in identifiers:
            rule.unlink()
            left_out.append(match.group(1))
    return left_out


def _section_files(folder: Path) -> dict[str, Path]:
    """Section identifier -> its file."""
    files = {}
    for path in sorted(folder.glob("*.section")):
        match = _IDENTIFIER.search(path.read_text(encoding="utf-8", errors="replace"))
        if match:
            files[match.group(1)] = path
    return files


def build_overlay(stock: Path, dest: Path, slimmed: Sequence[str] = SLIMMED_SECTIONS,
                  thinned: Mapping[str, Sequence[str]] = THINNED_METRICS,
                  rules_left_out: Collection[str] = RULES_LEFT_OUT) -> tuple[str, ...]:
    """Write the overlay of `stock` to `dest` (which must not exist), whole or not at all:
    `dest/sections/` and `dest/overlay.json` (`read_marker`); return the sections slimmed
    (those of `slimmed` that the stock folder has). `thinned`: section -> metrics to leave
    out of it (`thin_section`); `rules_left_out`: identifiers of rules not to copy, whose
    requests then keep nothing in."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}."))
    try:
        folder = tmp / SECTIONS
        folder.mkdir()
        for path in stock.iterdir():
            if path.is_file():
                shutil.copy2(path, folder / path.name)
        rules = leave_out_rules(folder, rules_left_out)
        files = _section_files(folder)
        done = []
        for section in slimmed:
            path = files.get(section)
            if path is None:
                continue
            # the rules' requests as of ncu 2025.3.1, then any a newer ncu's rules add
            extra = [*RULE_METRICS.get(section, ()), *rule_metrics(folder, section),
                     *WIDGET_METRICS_READ]
            try:
                path.write_text(slim_section(path.read_text(encoding="utf-8"), extra),
                                encoding="utf-8")
            except (OverlayError, UnicodeDecodeError) as error:
                raise OverlayError(f"{path.name}: {error}") from None
            done.append(section)
        marker = {"stock": str(stock), "slimmed": done, "thinned": _thin(folder, files, thinned),
                  "rules_left_out": rules, "sections": sorted(files)}
        (tmp / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
        # readable by every user's ncu, writable by its owner alone whatever the umask: a rule
        # file here is Python that ncu runs, and `read_marker` serves no other overlay
        for path in [tmp / MARKER, *folder.iterdir()]:
            os.chmod(path, 0o644)
        os.chmod(folder, 0o755)
        os.chmod(tmp, 0o755)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tuple(done)


def thinned_text(text: str, names: Iterable[str], kept: Iterable[str] = ()) -> str:
    """`thin_section` of `names`, less those in `kept` and those a derived metric left in the
    file uses (its `Expression`), until none is missing from a kept expression."""
    leave_out = set(names) - set(kept)
    while True:
        thin = thin_section(text, leave_out)
        used = {token for expression in _EXPRESSION.findall(thin)
                for token in _METRIC_TOKEN.findall(expression)}
        if not used & leave_out:
            return thin
        leave_out -= used


def _thin(folder: Path, files: dict[str, Path],
          thinned: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Thin the sections of `thinned` in `folder`; section -> the names left out (a metric
    some rule of the folder asks for is kept, but for an optional input that
    `OPTIONAL_RULE_INPUTS_LEFT_OUT` lets go). A section not in the shape expected (or not
    UTF-8) stays as it is: thinning only saves time."""
    asked = rule_metrics(folder, optional_left_out=OPTIONAL_RULE_INPUTS_LEFT_OUT)
    done = {}
    for section, names in thinned.items():
        path = files.get(section)
        if path is None:
            continue
        try:
            text = path.read_text(encoding="utf-8")
            thin = thinned_text(text, names, kept=asked)
        except (OverlayError, UnicodeDecodeError):
            done[section] = []
            continue
        left_out = set(_NAMED.findall(text)) - set(_NAMED.findall(thin))
        done[section] = [name for name in names if name in left_out]
        path.write_text(thin, encoding="utf-8")
    return done


def read_marker(dest: Path) -> dict[str, Any] | None:
    """What the overlay built at `dest` holds (`build_overlay`), or None where there is no
    whole one (never built, half-deleted, or emptied) or where it is not this user's alone
    (`owned_overlay`)."""
    try:
        if not owned_overlay(dest):
            return None
        marker = json.loads((dest / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or not _has_sections(dest / SECTIONS):
        return None
    return marker


def owned_overlay(dest: Path) -> bool:
    """Whether the overlay's folders and files are this user's and writable by no one else,
    none a link: ncu runs its rule files."""
    folder = dest / SECTIONS
    for path in (dest, dest / MARKER, folder, *folder.iterdir()):
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode) or not util.owned_privately(info):
            return False
    return True


def stock_key(stock: Path) -> str:
    """The stock files' names, sizes and times, and what the overlay adds: a new ncu, an edited
    section or a new ncuh list of metrics each gets a new overlay."""
    digest = hashlib.sha256(f"{OVERLAY_VERSION}\n{stock.resolve()}\n".encode())
    digest.update(json.dumps([SLIMMED_SECTIONS, WIDGET_METRICS_READ, RULE_METRICS,
                              THINNED_METRICS, OPTIONAL_RULE_INPUTS_LEFT_OUT, RULES_LEFT_OUT],
                             sort_keys=True).encode())
    for path in sorted(stock.iterdir()):
        if path.is_file():
            info = path.stat()
            digest.update(f"{path.name}\t{info.st_size}\t{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _is_script(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(2) == b"#!"
    except OSError:
        return False


def stock_sections(ncu: Path | str) -> Path | None:
    """The stock section folder of the Nsight Compute that `ncu` runs, or None.

    `<root>/sections` beside the resolved executable. The CUDA toolkit's `bin/ncu` is a shell
    script that runs the newest Nsight Compute among `<toolkit>/nsight-compute-<version>` and
    `/opt/nvidia/nsight-compute/<version>`: for a script, the newest of those, as it chooses.
    Nothing else: sections of another ncu version than the one that runs would not match its
    rules (`NCU_HOME` and other installs are not guessed at).
    """
    executable = Path(ncu).resolve()
    beside = executable.parent / "sections"
    if _has_sections(beside):
        return beside
    if not _is_script(executable):
        return None
    roots = [*executable.parent.parent.glob("nsight-compute*"),
             *util.versioned_roots()]
    found = [root / "sections" for root in roots if _has_sections(root / "sections")]
    return max(found, key=lambda folder: util.version_key(folder.parent), default=None)


def _has_sections(folder: Path) -> bool:
    return (folder / "SpeedOfLight.section").is_file()


def cache_root() -> Path:
    return cache_dir() / CACHE_FOLDER


def pages_overlay(ncu: Path | str, root: Path | None = None,
                  sections: Sequence[str] = ()) -> OverlayResult:
    """The overlay for `ncu`, built on first use; None (with the reason) where it cannot be,
    where `NCUH_PAGES_OVERLAY=off` asks for ncu's stock sections, or where `sections` (asked
    for beside `pages`) names one the stock folder lacks: `--section-folder` replaces ncu's
    search path, so a section of the user's own folder would not be found."""
    if switched_off(SWITCH_ENV):
        return OverlayResult(None, f"{SWITCH_ENV}=off")
    try:
        stock = stock_sections(ncu)
        if stock is None:
            return OverlayResult(None, f"no section folder found beside {ncu}")
        dest = (root or cache_root()) / stock_key(stock)
        marker = read_marker(dest)
        if marker is None:
            if dest.exists():  # not a whole overlay: set it aside, build again
                shutil.rmtree(dest, ignore_errors=True)
            try:
                build_overlay(stock, dest)
            except OSError:
                if read_marker(dest) is None:  # else a concurrent ncuh renamed its copy in
                    raise
            marker = read_marker(dest)
            if marker is None:
                return OverlayResult(None, f"section overlay: {dest} holds no overlay")
    except (OSError, OverlayError, RuntimeError, ValueError) as error:
        # RuntimeError: Path.home() without HOME or a passwd entry; ValueError: bad bytes
        return OverlayResult(None, f"section overlay: {error}")
    missing = [name for name in sections if name not in marker.get("sections", ())]
    if missing:
        return OverlayResult(None, f"section {missing[0]} is not in ncu's stock folder {stock}")
    thinned = marker.get("thinned")
    left_out = tuple(name for names in thinned.values() for name in names) \
        if isinstance(thinned, dict) else ()
    rules = marker.get("rules_left_out")
    return OverlayResult(Overlay(folder=dest / SECTIONS, stock=stock,
                                 slimmed=tuple(marker.get("slimmed", ())), thinned=left_out,
                                 rules_left_out=tuple(rules) if isinstance(rules, list) else ()))
