"""The targets of an earlier `ncuh profile`, so that the same request starts ncu at once.

Checking a project file (pydantic's schema, the project's own Python module) takes a third of a
second or more before the first ncu could start, and someone profiling the same variant again
after each edit of its kernel asks for the same plan every time: the kernel's source is compiled
by the runner under ncu, it is not read by the plan. So each plan that checked is kept under
`<user cache>/_plans/<key>.json`, the key hashing everything a plan is made from: the request's
variants, sizes, parameters, warm-up and capture, the project file's path and bytes, this ncuh's
version and folder, and the Python that runs the runner.

On a hit, `harness.profile.run` starts the first ncu on the kept targets and checks the project
while it runs (`PlanCheck`): a project that no longer checks (its module broke, say) stops that
ncu, leaves no run directory and says why in one line (exit 2); targets that came out different
stop it too and the run starts again on the new plan. A miss costs nothing but the key: the
plan is checked first, as always, and kept. `NCUH_PLAN_CACHE=off` never reads or keeps one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import __version__
from harness.atomic import atomic_write_text
from harness.profile.ncu_command import KernelFilter
from harness.user_cache import cache_dir

if TYPE_CHECKING:
    from harness.profile.run import Plan, ProfileRequest, Target

PLAN_CACHE_VERSION = 1
CACHE_FOLDER = "_plans"
SWITCH_ENV = "NCUH_PLAN_CACHE"  # "off": check the project before ncu starts, every time
KEEP = 64  # plans kept; the least recently used go first
_PACKAGE = Path(__file__).resolve().parents[1]


def wanted() -> bool:
    return os.environ.get(SWITCH_ENV, "").strip().lower() not in ("off", "0", "no")


def plan_key(request: ProfileRequest, capture: str, project_file: Path) -> str | None:
    """The key of `request`'s plan; None where the project file cannot be read (the check
    then says why)."""
    try:
        contents = project_file.read_bytes()
    except OSError:
        return None
    asked = {
        "version": PLAN_CACHE_VERSION, "ncuh": __version__, "package": str(_PACKAGE),
        "python": sys.executable, "project": str(project_file),
        "variants": list(request.variants), "all": request.all_variants,
        "sizes": [list(s) if isinstance(s, tuple) else s for s in request.sizes],
        "params": request.params, "warmup": request.warmup, "capture": capture,
    }
    digest = hashlib.sha256(json.dumps(asked, sort_keys=True, default=str).encode())
    digest.update(contents)
    return digest.hexdigest()[:32]


def _folder() -> Path:
    return cache_dir() / CACHE_FOLDER


def _target_record(target: Target) -> dict[str, Any]:
    record = asdict(target)
    record["kernel_filter"] = asdict(target.kernel_filter)
    return record


def _target(record: dict[str, Any]) -> Target:
    from harness.profile.run import Target

    kernel_filter = dict(record["kernel_filter"])
    kernel_filter["nvtx_include"] = tuple(kernel_filter["nvtx_include"])
    return Target(
        label=record["label"], variant=record["variant"],
        size=tuple(record["size"]) if record["size"] is not None else None,
        params=dict(record["params"]), program=tuple(record["program"]),
        kernel_filter=KernelFilter(**kernel_filter),
    )


def load(key: str) -> tuple[Target, ...] | None:
    """The targets kept under `key`, or None (none kept, or not readable as such)."""
    path = _folder() / f"{key}.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        targets = tuple(_target(item) for item in record["targets"])
    except (OSError, ValueError, KeyError, TypeError, RuntimeError):
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: kept longest
    return targets or None


def store(key: str, targets: tuple[Target, ...]) -> None:
    """Keep `targets` under `key`; a cache that cannot be written is no error (the next run
    checks first again), and the oldest plans beyond `KEEP` are dropped."""
    record = {"version": PLAN_CACHE_VERSION, "targets": [_target_record(t) for t in targets]}
    try:
        folder = _folder()
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(folder / f"{key}.json", json.dumps(record, default=str) + "\n")
        kept = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kept[KEEP:]:
            old.unlink(missing_ok=True)
    except (OSError, RuntimeError):  # RuntimeError: Path.home() without a home
        pass


def forget(key: str) -> None:
    with contextlib.suppress(OSError, RuntimeError):
        (_folder() / f"{key}.json").unlink(missing_ok=True)


class StalePlan(Exception):
    """The kept targets differ from those the project gives now."""


@dataclass
class PlanCheck:
    """The check of a project whose kept plan a run started on: done once, by whichever ncu
    has started first (several do at once with `--gpus`), while that ncu runs."""

    make_plan: Callable[[], Plan]
    kept: tuple[Target, ...]
    key: str

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._plan: Plan | None = None
        self._error: BaseException | None = None

    def plan(self) -> Plan:
        """The checked plan; raises what the check raised (every caller), `StalePlan` when
        the project now gives other targets."""
        with self._lock:
            if self._plan is None and self._error is None:
                try:
                    checked = self.make_plan()
                    if checked.targets != self.kept:
                        raise StalePlan(self.key)
                    self._plan = checked
                except BaseException as error:
                    forget(self.key)
                    self._error = error
            if self._error is not None:
                raise self._error
            assert self._plan is not None
            return self._plan
