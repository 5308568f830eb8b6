"""The hottest SASS instructions by PC-sampling stall samples, with their main stall reason.

ncu's Source Counters section samples warp program counters (`smsp__pcsamp_*`, instanced by
PC). Summing the per-reason sample counts at each PC gives the instructions where warps
spend their time; `action.sass_by_pc` gives the instruction text and `action.source_info`
the CUDA file and line when the kernel was compiled with line info (`-lineinfo`). The line's
code comes from the sources imported into the report (`ncu --import-source yes`) or, for the
bundled kernels, from the file of that name in `kernels/`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PCSAMP_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
SAMPLE_COUNT = "smsp__pcsamp_sample_count"
INST_EXECUTED = "inst_executed"


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


def _instanced(action: Any, name: str) -> dict[int, float]:
    """PC -> value for a metric instanced by PC, {} when the report does not have it."""
    if name not in _names(action):
        return {}
    metric = action.metric_by_name(name)
    ids = metric.correlation_ids()
    if ids is None:
        return {}
    count = metric.num_instances()
    return {int(ids.as_uint64(i)): float(metric.as_double(i)) for i in range(count)}


def _names(action: Any) -> set[str]:
    # metric_names() is a few thousand strings; cache it on the call path only
    cached = getattr(_names, "_cache", None)
    if cached is not None and cached[0] is action:
        return cached[1]
    names = set(action.metric_names())
    _names._cache = (action, names)  # type: ignore[attr-defined]
    return names


def _source(action: Any, pc: int) -> str | None:
    try:
        info = action.source_info(pc)
    except Exception:  # ncu_report raises on PCs outside the function in some versions
        return None
    if info is None:
        return None
    file_name, line = info.file_name(), info.line()
    if not file_name or not line:
        return None
    return f"{file_name.rsplit('/', 1)[-1]}:{line}"


def source_code(action: Any, source: str | None, folders: Sequence[Path] = ()) -> str | None:
    """The code on `source` ("file.cu:42"): from the report's imported sources, else from a
    file of that name in one of `folders`; None when neither has it."""
    if not source:
        return None
    name, _, number = source.rpartition(":")
    if not number.isdigit():
        return None
    text = _imported_source(action, name)
    if text is None:
        found = [folder / name for folder in folders if (folder / name).is_file()]
        text = found[0].read_text(encoding="utf-8", errors="replace") if found else None
    lines = (text or "").splitlines()
    line = int(number)
    if not 0 < line <= len(lines):
        return None
    return lines[line - 1].strip() or None


def _imported_source(action: Any, name: str) -> str | None:
    try:
        files = dict(action.source_files().items())
    except Exception:  # an ncu_report without source_files, or none imported
        return None
    for path, content in files.items():
        if str(path).rsplit("/", 1)[-1] == name and content:
            return str(content)
    return None


def stall_samples_by_pc(action: Any) -> dict[int, dict[str, int]]:
    """PC -> {reason: samples}, reasons without samples left out."""
    names = _names(action)
    by_pc: dict[int, dict[str, int]] = {}
    for name in sorted(names):
        if not name.startswith(PCSAMP_PREFIX) or name.endswith("_not_issued"):
            continue
        reason = name[len(PCSAMP_PREFIX):]
        for pc, value in _instanced(action, name).items():
            if value:
                by_pc.setdefault(pc, {})[reason] = int(value)
    return by_pc


def hotspots(action: Any, top: int = 5, folders: Sequence[Path] = ()) -> list[Hotspot]:
    """The `top` instructions with the most stall samples, most first; [] without sampling.
    `folders` are searched for source files the report did not import (see `source_code`)."""
    by_pc = stall_samples_by_pc(action)
    if not by_pc:
        return []
    executed = _instanced(action, INST_EXECUTED)
    totals = {pc: sum(reasons.values()) for pc, reasons in by_pc.items()}
    all_samples = sum(totals.values())
    base = min(set(by_pc) | set(executed))
    chosen = sorted(totals, key=lambda pc: (-totals[pc], pc))[:top]
    result = []
    for pc in chosen:
        reasons = by_pc[pc]
        source = _source(action, pc)
        # ties go to the alphabetically first reason so the output is deterministic
        reason = max(sorted(reasons), key=lambda r: reasons[r])
        result.append(
            Hotspot(
                pc=pc,
                offset=pc - base,
                sass=" ".join(str(action.sass_by_pc(pc)).split()),
                samples=totals[pc],
                share_pct=100.0 * totals[pc] / all_samples,
                reason=reason,
                reason_samples=reasons[reason],
                executed=executed.get(pc),
                source=source,
                code=source_code(action, source, folders),
            )
        )
    return result
