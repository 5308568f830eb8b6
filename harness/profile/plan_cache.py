"""The targets of an earlier `ncuh profile`, so that the same request starts ncu at once.

Each plan that checked is kept under `<user cache>/_plans/<key>.json`, the key hashing all a plan
is made from (the request, the project file's path and bytes, this ncuh and its Python). What is
kept is data, never a command: each target's label, variant, size, parameters and kernel filter;
the command lines are built again from them. On a hit, `harness.profile.run` starts the first
ncu at once and checks the project beside it (`PlanCheck`): a project that no longer checks stops
that ncu (exit 2, no run directory), a plan that came out different starts the run again.
`NCUH_PLAN_CACHE=off` never reads or keeps one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import __version__
from harness.errors import NcuhError
from harness.profile.ncu_command import CaptureMode, runner_program, variant_filter
from harness.util import atomic_write_text, cache_dir, private_folder, read_owned, switched_off

if TYPE_CHECKING:
    from harness.profile.planning import Plan, ProfileRequest, Target

PLAN_CACHE_VERSION = 2
CACHE_FOLDER = "_plans"
SWITCH_ENV = "NCUH_PLAN_CACHE"  # "off": check the project before ncu starts, every time
KEEP = 64  # plans kept; the least recently used go first
MAX_PLAN_BYTES = 16 * 1024 * 1024  # a plan of a thousand targets is a few hundred kilobytes
_PACKAGE = Path(__file__).resolve().parents[1]


def is_on() -> bool:
    """Whether plans are kept and read back (`NCUH_PLAN_CACHE` is not "off")."""
    return not switched_off(SWITCH_ENV)


def _words(sizes: tuple[Any, ...]) -> list[Any]:
    return [list(size) if isinstance(size, tuple) else size for size in sizes]


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
        "sizes": _words(request.sizes), "params": request.params, "warmup": request.warmup,
        "capture": capture, "bench": request.bench, "bench_sizes": _words(request.bench_sizes),
    }
    try:
        text = json.dumps(asked, sort_keys=True, default=str)
    except TypeError:  # parameters no JSON object can hold: no key, no kept plan
        return None
    digest = hashlib.sha256(text.encode())
    digest.update(contents)
    return digest.hexdigest()[:32]


def _folder() -> Path:
    return cache_dir() / CACHE_FOLDER


@dataclass(frozen=True)
class KeptTarget:
    """What is kept of one target: data the command lines are built from again."""

    label: str
    variant: str
    size: tuple[int, ...]
    params: dict[str, Any]
    kernel: str  # the project's capture filter for the variant: a kernel name or "regex:..."

    @classmethod
    def of(cls, target: Target) -> KeptTarget:
        """What is kept of a project's target; ValueError for a program's (nothing to keep)."""
        kernel = target.kernel_filter.kernel
        if target.variant is None or target.size is None or kernel is None:
            raise ValueError(f"{target.label} is no variant of a project")
        return cls(target.label, target.variant, tuple(target.size), dict(target.params), kernel)

    @classmethod
    def from_json(cls, record: Any) -> KeptTarget:
        """One kept record; ValueError for anything not of this exact shape."""
        if not isinstance(record, dict) or set(record) != {"label", "variant", "size",
                                                          "params", "kernel"}:
            raise ValueError("not a kept target")
        label, variant, size, params, kernel = (record[k] for k in (
            "label", "variant", "size", "params", "kernel"))
        if not (isinstance(label, str) and isinstance(variant, str) and isinstance(kernel, str)
                and isinstance(params, dict) and isinstance(size, list) and size
                and all(type(n) is int and n > 0 for n in size)):
            raise ValueError("not a kept target")
        return cls(label, variant, tuple(size), params, kernel)

    def target(self, request: ProfileRequest, capture: CaptureMode,
               project_file: Path) -> Target:
        """The target, its command line built as `harness.profile.run.plan` builds it."""
        from harness.profile.planning import Target

        program = runner_program(self.variant, self.size, label=self.label,
                                 params=request.params, warmup=request.warmup,
                                 capture=capture, project=project_file)
        return Target(
            label=self.label, variant=self.variant, size=self.size, params=dict(self.params),
            program=tuple(program),
            kernel_filter=variant_filter(self.label, capture=capture, kernel_name=self.kernel,
                                         warmup=request.warmup),
        )


def load(key: str, request: ProfileRequest, capture: CaptureMode,
         project_file: Path) -> tuple[Target, ...] | None:
    """The targets kept under `key`, built again for `request`; None where none are kept or
    the file is not exactly what `store` writes."""
    try:
        path = _folder() / f"{key}.json"
        # another user's plan, or one others may write, is not this user's plan
        data = read_owned(path, MAX_PLAN_BYTES) if private_folder(path.parent) else None
        if data is None:
            return None
        record = json.loads(data)
        if not isinstance(record, dict) or record.get("version") != PLAN_CACHE_VERSION:
            return None
        kept = [KeptTarget.from_json(item) for item in record["targets"]]
    except (OSError, ValueError, KeyError, TypeError, RuntimeError):
        return None
    if not kept:
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: kept longest
    return tuple(item.target(request, capture, project_file) for item in kept)


def store(key: str, targets: tuple[Target, ...]) -> None:
    """Keep `targets` under `key`; a cache that cannot be written is no error (the next run
    checks first again), and the oldest plans beyond `KEEP` are dropped."""
    try:
        kept = [KeptTarget.of(target) for target in targets]
        record = {"version": PLAN_CACHE_VERSION,
                  "targets": [{**vars(item), "size": list(item.size)} for item in kept]}
        text = json.dumps(record) + "\n"
    except (TypeError, ValueError):  # not a project's targets, or no JSON
        return
    try:
        folder = _folder()
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(folder / f"{key}.json", text)
        os.chmod(folder / f"{key}.json", 0o600)  # whatever the umask: `load` reads no other
        kept = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kept[KEEP:]:
            old.unlink(missing_ok=True)
    # RuntimeError: Path.home() without a home; NcuhError: atomic_write_text's one-line
    # OutputError (the plan's name taken by a folder, say)
    except (OSError, RuntimeError, NcuhError):
        pass


def forget(key: str) -> None:
    with contextlib.suppress(OSError, RuntimeError):
        (_folder() / f"{key}.json").unlink(missing_ok=True)


class StalePlan(Exception):
    """The kept targets differ from those the project gives now: `checked` is its plan."""

    def __init__(self, checked: Plan) -> None:
        super().__init__("the kept plan is stale")
        self.checked = checked


@dataclass
class PlanCheck:
    """The check of a project whose kept plan a run started on: done once, on the main thread
    (a project's module may set signal handlers, say, which only that thread may), while the
    first ncu runs; other threads wait for its outcome."""

    make_plan: Callable[[], Plan]
    kept: tuple[Target, ...]
    key: str

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._plan: Plan | None = None
        self._error: BaseException | None = None

    def run(self) -> None:
        """Check now, once (the main thread); what it found is kept for `plan`."""
        with self._lock:
            if self._done.is_set():
                return
            try:
                checked = self.make_plan()
                if checked.targets != self.kept:
                    raise StalePlan(checked)
                self._plan = checked
            except (NcuhError, StalePlan) as error:  # the kept plan no longer holds
                forget(self.key)
                self._error = error
            except BaseException as error:  # an interrupt, say: the plan may still be good
                self._error = error
            finally:
                self._done.set()

    def plan(self) -> Plan:
        """The checked plan: checked here on the main thread, else waited for; raises what the
        check raised, `StalePlan` when the project now gives other targets."""
        if threading.current_thread() is threading.main_thread():
            self.run()
        else:
            self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._plan is not None
        return self._plan
