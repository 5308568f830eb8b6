"""Which parameters a tunable variant runs with: tuning winners per GPU model and size.

Two files hold winners, both schema "ncuh.tuning/1" (a list of entries: variant, gpu, size,
params, source fingerprint, and how it was measured):

* `tuning.json` beside the project file: the winners the project ships (read only);
* the user's cache, `$NCUH_CACHE_DIR/<project>/tuning.json` or
  `~/.cache/ncuh/<project>/tuning.json`, written by `ncuh bench --tune`; it overrides.

`resolve_params` is what bench and the runner ask (the compiler never does): the winner for
this GPU, variant and size; else the winner of the nearest tuned size on the same GPU (by
log-distance) when the variant's constraints accept it at this size; else the defaults.
An entry recorded for another source (its fingerprint changed) is stale and ignored.
A GPU model with no entries at all borrows those of a model of the same compute capability
(an H100 PCIe those of an H100 SXM), saying so in `origin`: the same architecture runs the
same configurations, nearly as well, where the defaults are often far off.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.gpu.backend import source_text
from harness.project import Project, Size, Variant
from harness.util import CACHE_ENV as CACHE_ENV
from harness.util import atomic_write_text, cache_dir

TUNING_SCHEMA = "ncuh.tuning/1"
TUNING_FILE = "tuning.json"


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

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.entries: list[dict[str, Any]] = []
        self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            # Missing or unreadable: start empty; a cache is never worth failing a run for.
            return
        if isinstance(data, dict) and data.get("schema") == TUNING_SCHEMA:
            entries = data.get("entries")
            if isinstance(entries, list):
                self.entries = [e for e in entries if isinstance(e, dict)
                                and isinstance(e.get("params"), dict)]

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
                                                      _size_key(str(e.get("size")))))
        data = {"schema": TUNING_SCHEMA, "project": project, "entries": ordered}
        return atomic_write_text(self.path, json.dumps(data, indent=2) + "\n")


def _size_key(text: str) -> list[int]:
    return [int(part) for part in text.split("x") if part.isdigit()]


def _log_distance(a: Size, b: list[int]) -> float:
    if len(b) != len(a):
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
    user = user if user is not None else TuneCache(cache_path(project))
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
