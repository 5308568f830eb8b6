"""The hottest SASS instructions by PC-sampling stall samples, with their main stall reason.

ncu's Source Counters section samples warp program counters (`smsp__pcsamp_*`, instanced by
PC); the profile holds them per instruction (`KernelReport.sass`). Summing the per-reason
sample counts at each PC gives the instructions where warps spend their time, with the CUDA
file and line when the kernel was compiled with line info (`-lineinfo`). The line's code comes
from the sources imported into the report (`ncu --import-source yes`) or, for the bundled
kernels, from the file of that name in `kernels/`. Each hot spot carries a listing of its
source around the line (`Listing`), with the stall samples and executed instructions of every
line, so the pages can show the code in place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.report.model import KernelReport

CONTEXT = 10  # source lines shown on either side of a hot spot's line


@dataclass(frozen=True)
class SourceLine:
    """One line of a listing, with what the SASS instructions mapped to it did."""

    number: int
    code: str
    samples: int  # stall samples at the line's instructions
    executed: float  # warp-level instructions executed at the line
    hot: bool  # the hot spot's own line


@dataclass(frozen=True)
class Listing:
    """The source around a hot spot's line."""

    file: str  # as ncu names it, e.g. "warp_shuffle.cu"
    lines: tuple[SourceLine, ...]


@dataclass(frozen=True)
class Hotspot:
    """One SASS instruction and the stall samples taken at it."""

    pc: int  # absolute program counter as ncu recorded it
    offset: int  # PC relative to the kernel's first sampled/executed instruction
    sass: str  # instruction text, e.g. "LDS R9, [R2+0x80]"
    samples: int  # all samples at this PC
    share_pct: float  # of all samples in the kernel
    reason: str  # reason with the most samples, e.g. "mio_throttle"
    reason_samples: int
    executed: float | None  # warp-level instructions executed at this PC (inst_executed)
    source: str | None  # "file.cu:42" with line info, else None
    code: str | None = None  # the text of that source line, when the file is at hand
    listing: Listing | None = None  # the source around that line, when the file is at hand


def _source_text(source_files: Mapping[str, str], name: str,
                 folders: Sequence[Path]) -> str | None:
    """A source file's text: from the report's imported sources, else from a file of that
    name in one of `folders`."""
    text = next((content for path, content in source_files.items()
                 if str(path).rsplit("/", 1)[-1] == name and content), None)
    if text is None:
        found = [folder / name for folder in folders if (folder / name).is_file()]
        text = found[0].read_text(encoding="utf-8", errors="replace") if found else None
    return text


def _split(source: str | None) -> tuple[str, int] | None:
    if not source:
        return None
    name, _, number = source.rpartition(":")
    return (name, int(number)) if number.isdigit() else None


def source_code(source_files: Mapping[str, str], source: str | None,
                folders: Sequence[Path] = ()) -> str | None:
    """The code on `source` ("file.cu:42"): from the report's imported sources, else from a
    file of that name in one of `folders`; None when neither has it."""
    split = _split(source)
    if split is None:
        return None
    lines = (_source_text(source_files, split[0], folders) or "").splitlines()
    line = split[1]
    if not 0 < line <= len(lines):
        return None
    return lines[line - 1].strip() or None


def listing(profile: KernelReport, source: str | None, folders: Sequence[Path] = (),
            context: int = CONTEXT) -> Listing | None:
    """The source `context` lines either side of `source` ("file.cu:42"), each line with the
    stall samples and executed instructions of the SASS mapped to it; None without the file."""
    split = _split(source)
    if split is None:
        return None
    name, line = split
    lines = (_source_text(profile.source_files, name, folders) or "").splitlines()
    if not 0 < line <= len(lines):
        return None
    samples: dict[int, int] = {}
    executed: dict[int, float] = {}
    for instruction in profile.sass:
        at = _split(instruction.source)
        if at is None or at[0].rsplit("/", 1)[-1] != name.rsplit("/", 1)[-1]:
            continue
        samples[at[1]] = samples.get(at[1], 0) + sum(instruction.stall_samples.values())
        executed[at[1]] = executed.get(at[1], 0.0) + instruction.executed
    first, last = max(1, line - context), min(len(lines), line + context)
    return Listing(name, tuple(
        SourceLine(n, lines[n - 1].rstrip(), samples.get(n, 0), executed.get(n, 0.0), n == line)
        for n in range(first, last + 1)))


def hotspots(profile: KernelReport, top: int = 5, folders: Sequence[Path] = ()) -> list[Hotspot]:
    """The `top` instructions with the most stall samples, most first; [] without sampling.
    `folders` are searched for source files the report did not import (see `source_code`)."""
    sampled = [i for i in profile.sass if i.stall_samples]
    if not sampled:
        return []
    totals = {i.pc: sum(i.stall_samples.values()) for i in sampled}
    all_samples = sum(totals.values())
    base = min(i.pc for i in profile.sass)
    chosen = sorted(sampled, key=lambda i: (-totals[i.pc], i.pc))[:top]
    result = []
    for instruction in chosen:
        reasons = instruction.stall_samples
        # ties go to the alphabetically first reason so the output is deterministic
        reason = max(sorted(reasons), key=lambda r: reasons[r])
        result.append(
            Hotspot(
                pc=instruction.pc,
                offset=instruction.pc - base,
                sass=instruction.sass,
                samples=totals[instruction.pc],
                share_pct=100.0 * totals[instruction.pc] / all_samples,
                reason=reason,
                reason_samples=reasons[reason],
                executed=instruction.executed if instruction.executed else None,
                source=instruction.source,
                code=source_code(profile.source_files, instruction.source, folders),
                listing=listing(profile, instruction.source, folders),
            )
        )
    return result
