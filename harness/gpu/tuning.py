"""Which parameters a tunable variant runs with: tuning winners per GPU model and size.

Winners (schema "ncuh.tuning/1") come from `tuning.json` beside the project file (shipped, read
only) and from the user's cache (`<project>/tuning.json` under `harness.util.cache_dir`,
written by `ncuh bench --tune`), which overrides.
`resolve_params` gives the winner for this GPU, variant and size; else the nearest tuned size's
when the variant's constraints accept it; else the defaults. An entry for another source is
stale. A GPU model with no entries borrows those of a model of the same compute capability,
saying so in `origin`.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import NcuhError
from harness.gpu.backend import source_text
from harness.project import Project, Size, Variant
from harness.util import CACHE_ENV as CACHE_ENV
from harness.util import atomic_write_text, cache_dir, load_json, read_owned

TUNING_SCHEMA = "ncuh.tuning/1"
TUNING_FILE = "tuning.json"
MAX_TUNING_BYTES = 64 * 1024 * 1024


def cache_path(project: Project) -> Path:
    """The user's cache of winners for `project`."""
    return cache_dir() / project.name / TUNING_FILE


def shipped_path(project: Project) -> Path:
    return project.folder / TUNING_FILE


def source_fingerprint(project: Project, variant: Variant) -> str:
    """A short hash of what the variant compiles (headers inlined) or of its launcher's module,
    so a winner follows code changes."""
    if variant.source:
        try:
            text = source_text(project.folder, variant.source)
        except OSError:
            text = variant.source
    else:
        try:
            text = Path(inspect.getsourcefile(variant.call) or "").read_text(encoding="utf-8")
        except (OSError, TypeError):
            text = f"no source: {variant.name}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class TuneCache:
    """One tuning file: entries keyed by (gpu, variant, size)."""

    def __init__(self, path: Path | str, kept: bool = False) -> None:
        self.path = Path(path)
        self.kept = kept  # the user cache's file, read only where it is the user's alone
        self.entries: list[dict[str, Any]] = []
        self._load()

    def _load(self) -> None:
        try:
            if self.kept:
                owned = read_owned(self.path, MAX_TUNING_BYTES)
                if owned is None:  # missing, or another user's, or writable by others
                    return
                text = owned.decode("utf-8")
            else:
                text = self.path.read_text(encoding="utf-8")
            data = load_json(text, str(self.path))
        except (OSError, ValueError, NcuhError):
            # Missing, unreadable or nested too deeply: start empty; a cache is never worth
            # failing a run for.
            return
        if isinstance(data, dict) and data.get("schema") == TUNING_SCHEMA:
            entries = data.get("entries")
            if isinstance(entries, list):
                # An entry whose size is not whole positive numbers (`"0"`, `"²"`) could only
                # be a wrong nearest winner for every size: it is left out.
                self.entries = [e for e in entries if isinstance(e, dict)
                                and isinstance(e.get("params"), dict)
                                and _size_key(e.get("size")) is not None]

    def get(self, gpu: str, variant: str, size: Size | str) -> dict[str, Any] | None:
        for entry in self.entries:
            if (entry.get("gpu"), entry.get("variant"), entry.get("size")) == (
                    gpu, variant, str(size)):
                return entry
        return None

    def for_gpu(self, gpu: str, variant: str) -> list[dict[str, Any]]:
        return [e for e in self.entries if e.get("gpu") == gpu and e.get("variant") == variant]

    def put(self, entry: dict[str, Any]) -> None:
        key = (entry["gpu"], entry["variant"], entry["size"])
        self.entries = [e for e in self.entries
                        if (e.get("gpu"), e.get("variant"), e.get("size")) != key]
        self.entries.append(entry)

    def save(self, project: str | None = None) -> Path:
        ordered = sorted(self.entries, key=lambda e: (str(e.get("gpu")), str(e.get("variant")),
                                                      _size_key(e.get("size")) or []))
        data = {"schema": TUNING_SCHEMA, "project": project, "entries": ordered}
        written = atomic_write_text(self.path, json.dumps(data, indent=2) + "\n")
        if self.kept:
            os.chmod(written, 0o644)  # whatever the umask: a kept file others may write is not read
        return written


_SIZE = re.compile(r"[1-9][0-9]{0,17}(?:x[1-9][0-9]{0,17})*")


def _size_key(text: object) -> list[int] | None:
    """The dimensions of a recorded size like `4096x4096x4096`; None unless each is a whole
    positive number in ASCII digits."""
    if not isinstance(text, str) or not _SIZE.fullmatch(text):
        return None
    return [int(part) for part in text.split("x")]


def _log_distance(a: Size, b: list[int] | None) -> float:
    if b is None or len(b) != len(a):
        return math.inf
    return sum(abs(math.log(x) - math.log(y)) for x, y in zip(a, b, strict=True) if x > 0 and y > 0)


@dataclass(frozen=True)
class Resolved:
    """The parameters a variant runs with, and where they came from."""

    params: dict[str, int]
    # "defaults" | "tuned" (user cache) | "shipped" | "nearest <size> (<from>)", each followed
    # by " for <gpu> (same compute capability X.Y)" when borrowed from another GPU model
    origin: str


def _borrowed_gpu(caches: list[TuneCache], gpu: str, variant: str,
                  compute_capability: str | None) -> str | None:
    """The GPU model whose entries a GPU without any may use: same compute capability, the
    longest common name prefix ("NVIDIA H100 PCIe" -> "NVIDIA H100 80GB HBM3")."""
    if compute_capability is None:
        return None
    models = sorted({str(e.get("gpu")) for cache in caches for e in cache.entries
                     if e.get("variant") == variant
                     and str(e.get("compute_capability")) == compute_capability})
    if not models:
        return None
    def shared(name: str) -> int:  # characters in common at the start of the two names
        return next((i for i, (a, b) in enumerate(zip(name, gpu, strict=False)) if a != b),
                    min(len(name), len(gpu)))

    return max(models, key=shared)


def resolve_params(project: Project, variant: Variant, size: Size, gpu: str | None, *,
                   compute_capability: str | None = None, user: TuneCache | None = None,
                   shipped: TuneCache | None = None) -> Resolved:
    """The winner for (gpu, variant, size), the nearest valid one, or the defaults; a GPU
    model without entries takes those of one of the same `compute_capability`."""
    defaults = dict(variant.params)
    if not variant.tunable or gpu is None:
        return Resolved(defaults, "defaults")
    user = user if user is not None else TuneCache(cache_path(project), kept=True)
    shipped = shipped if shipped is not None else TuneCache(shipped_path(project))
    note = ""
    if not any(cache.for_gpu(gpu, variant.name) for cache in (shipped, user)):
        borrowed = _borrowed_gpu([shipped, user], gpu, variant.name, compute_capability)
        if borrowed is not None:
            gpu, note = borrowed, f" for {borrowed} (same compute capability {compute_capability})"
    fingerprint = source_fingerprint(project, variant)
    candidates: dict[str, tuple[dict[str, Any], str]] = {}
    for cache, origin in ((shipped, "shipped"), (user, "tuned")):  # the user's last: it wins
        for entry in cache.for_gpu(gpu, variant.name):
            if entry.get("source_sha256") == fingerprint:
                candidates[str(entry.get("size"))] = (entry, origin + note)
    if str(size) in candidates:
        entry, origin = candidates[str(size)]
        return Resolved({**defaults, **entry["params"]}, origin)
    if not candidates:
        return Resolved(defaults, "defaults")
    nearest = min(candidates, key=lambda text: (_log_distance(size, _size_key(text)),
                                                 -math.prod(_size_key(text) or [0])))
    entry, origin = candidates[nearest]
    params = {**defaults, **entry["params"]}
    if project.problems(variant, params, size):
        return Resolved(defaults, "defaults")
    return Resolved(params, f"nearest {nearest} ({origin})")
