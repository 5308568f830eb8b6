"""A loaded project: the problem, its reference, its practical limits and the chain of variants.

These records are what every command works on; `harness.project.loader` builds them from a
project file. Callables are the user's own functions, already imported and checked to exist.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import (
    NcuhError,
    ProjectError,
    UnknownVariantError,
    UnsupportedShapeError,
    one_line,
)
from harness.project.size import Size, parse_size, parse_sizes


@dataclass(frozen=True)
class Launch:
    """One kernel launch of an NVRTC variant, as its `launch` callable describes it.

    `shared_mem` is dynamic shared memory in bytes (over 48 KiB opts in); `kernel` names
    another `__global__` of the same source (default: the variant's `kernel`).
    """

    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: tuple[Any, ...]
    shared_mem: int = 0
    kernel: str | None = None

    @classmethod
    def coerce(cls, value: Launch | dict[str, Any]) -> Launch:
        """A `Launch`, or a plain dict with the same keys."""
        if isinstance(value, Launch):
            return value
        if isinstance(value, dict):
            unknown = set(value) - {"grid", "block", "args", "shared_mem", "kernel"}
            if unknown:
                raise NcuhError(f"a launch dict has unknown keys {sorted(unknown)}")
            return cls(
                grid=tuple(value["grid"]), block=tuple(value["block"]),
                args=tuple(value.get("args", ())), shared_mem=int(value.get("shared_mem", 0)),
                kernel=value.get("kernel"),
            )
        raise NcuhError(f"a launch must be a Launch or a dict, got {type(value).__name__}")


@dataclass(frozen=True)
class Variant:
    """One iteration of a project's chain."""

    name: str
    iteration: int
    title: str
    previous: str | None
    strategy: str = field(repr=False)
    params: dict[str, int] = field(hash=False, default_factory=dict)
    tunable: dict[str, list[int]] = field(hash=False, default_factory=dict)
    source: str | None = None  # NVRTC: file relative to the project folder
    kernel: str | None = None  # NVRTC: the __global__ name
    launch: Callable[..., Any] | None = field(default=None, repr=False, hash=False)
    defines: Callable[..., Any] | None = field(default=None, repr=False, hash=False)
    call: Callable[..., Any] | None = field(default=None, repr=False, hash=False)
    capture: str | None = None  # the ncu -k filter; default: the kernel's exact name
    # NVRTC: the target the source needs (sm_90a for wgmma); default: the GPU's own, sm_XX.
    arch: str | None = None
    constraints: Callable[..., Any] | None = field(default=None, repr=False, hash=False)

    @property
    def kernel_name(self) -> str | None:
        """The kernel ncu captures, by name where there is one (writeup's page filter)."""
        return self.kernel

    @property
    def capture_filter(self) -> str:
        """ncu's `-k` argument for this variant: `capture`, else the kernel's exact name."""
        if self.capture:
            return self.capture
        return f"regex:^{self.kernel}$"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form `ncuh list --format json` prints."""
        return {
            "name": self.name,
            "iteration": self.iteration,
            "title": self.title,
            "previous": self.previous,
            "source": self.source,
            "kernel_name": self.kernel,
            "launcher": "nvrtc" if self.source else "python",
            "capture": self.capture_filter,
            "arch": self.arch,
            "params": dict(self.params),
            "tunable": {key: list(values) for key, values in self.tunable.items()},
            "strategy": self.strategy,
        }


def variants_named(names: Sequence[str], most: int = 6) -> str:
    """"variant 'a'", "variants 'a', 'b'", or past `most` names "variants 'a', ... and 994
    more": how a line names the variants it is about."""
    shown = ", ".join(repr(name) for name in names[:most])
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return f"variant{'s' if len(names) > 1 else ''} {shown}{more}"


_TABLE_NAMES = re.compile(r"(\[\[?)(project|problem|reference|limit|variant)(\]\]?)"
                          r"|(key ')(project|problem|reference|limit|variant)([.'])")


def as_written(path: Path, message: str) -> str:
    """`message` with its tables named as the file writes them: in a pyproject.toml the
    project lives under [tool.ncuh], so "[[variant]] #2" reads "[[tool.ncuh.variant]] #2" and
    "key 'problem.dims'" reads "key 'tool.ncuh.problem.dims'"."""
    if path.name != "pyproject.toml":
        return message
    return _TABLE_NAMES.sub(
        lambda m: (f"{m[1]}tool.ncuh.{m[2]}{m[3]}" if m[1] else f"{m[4]}tool.ncuh.{m[5]}{m[6]}"),
        message)


def constraint_problems(path: Path, folder: Path, variant: Variant, size: Size | None,
                        params: dict[str, int]) -> list[str]:
    """What the variant's own `constraints(size, params)` says against `params` at `size`.

    The check is the user's code, called at sizes the loader never tried: when it raises, or
    returns something that is not a list of problems, that is a broken project file
    (`ProjectError`), never a traceback. A single string is one problem.
    """
    if variant.constraints is None:
        return []
    where = (f"{path}: [[variant]] #{variant.iteration + 1} ({variant.name!r}): "
             "key 'constraints'")
    at = "with size None (the parameters alone)" if size is None else f"at size {size}"
    try:
        found = variant.constraints(size, dict(params))
    except Exception as error:  # the user's check itself is broken
        raise ProjectError(as_written(path, f"{where} raised {one_line(error, folder)} {at}")) \
            from None
    if found is None:
        return []
    if isinstance(found, str):
        found = [found]
    if not isinstance(found, (list, tuple)):
        raise ProjectError(as_written(path, f"{where} returned {type(found).__name__} {at}; "
                                      "expected a list of problems (strings), [] when the "
                                      "parameters are fine"))
    return [str(problem) for problem in found]


@dataclass(frozen=True)
class Reference:
    """The library every speedup is against (its results are stored under `key`)."""

    name: str  # as the tables show it, e.g. the library's name
    key: str  # its name in bench.json: the display name, lower-case
    call: Callable[..., Any] = field(repr=False)
    strategy: str = ""


@dataclass(frozen=True)
class Limit:
    """A practical ceiling timed beside the variants (a device copy of the same bytes)."""

    name: str
    key: str
    call: Callable[..., Any] = field(repr=False)
    bytes: Callable[[Size], float] = field(repr=False)


@dataclass(frozen=True)
class Project:
    """A whole project file, loaded and checked."""

    name: str
    description: str
    path: Path  # the project file
    folder: Path  # paths and modules are relative to it
    dims: tuple[str, ...]
    default_sizes: tuple[Size, ...]
    profile_size: Size
    inputs: Callable[..., Any] = field(repr=False)
    outputs: tuple[str, ...] = ()
    poison: tuple[str, ...] = ()
    expected: Callable[..., Any] | None = field(default=None, repr=False)
    tolerance: Callable[[Size], float] = field(default=lambda size: 1e-4, repr=False)
    compare: str = "relative_frobenius"
    rtol: float = 1e-5
    atol: float = 1e-8
    flops: Callable[[Size], float] | None = field(default=None, repr=False)
    bytes: Callable[[Size], float] | None = field(default=None, repr=False)
    # The "Speedup Factors" summary counts sizes whose smallest dim is at least this (None: all).
    summary_min_size: int | None = None
    reference: Reference | None = None
    limits: tuple[Limit, ...] = ()
    variants: tuple[Variant, ...] = ()

    # ------------------------------------------------------------------ the chain

    @property
    def names(self) -> list[str]:
        return [variant.name for variant in self.variants]

    def variant(self, name: str) -> Variant:
        """The variant called `name`; `UnknownVariantError` listing the valid names."""
        for variant in self.variants:
            if variant.name == name:
                return variant
        raise UnknownVariantError(
            f"unknown variant {name!r}; known variants: {', '.join(self.names)}"
        )

    def resolve(self, variant: Variant | str) -> Variant:
        return self.variant(variant) if isinstance(variant, str) else variant

    @property
    def baseline(self) -> Variant:
        """The first variant: the chain's "vs naive" column."""
        return self.variants[0]

    def ordered(self, variants: Sequence[Variant]) -> list[Variant]:
        """Chain order, duplicates removed."""
        order = {name: index for index, name in enumerate(self.names)}
        unique = {v.name: v for v in variants}
        return sorted(unique.values(), key=lambda v: order.get(v.name, len(order)))

    def with_previous(self, variants: Sequence[Variant]) -> list[Variant]:
        """`variants` plus the baseline and each one's previous iteration, in chain order."""
        chosen = {v.name: v for v in variants}
        for name in [self.baseline.name, *(v.previous for v in variants if v.previous)]:
            if name and name not in chosen:
                chosen[name] = self.variant(name)
        return self.ordered(list(chosen.values()))

    # ------------------------------------------------------------------ sizes

    def parse_size(self, text: str) -> Size:
        return parse_size(text, self.dims)

    def parse_sizes(self, text: str) -> list[Size]:
        return parse_sizes(text, self.dims)

    def size(self, values: Sequence[int] | Size) -> Size:
        if isinstance(values, Size):
            return values
        values = [int(v) for v in values]
        if len(values) == 1 and len(self.dims) > 1:
            values *= len(self.dims)
        return Size(self.dims, values)

    # ------------------------------------------------------------------ parameters

    def effective_params(self, variant: Variant, params: dict[str, Any] | None) -> dict[str, int]:
        """The variant's defaults overridden by `params` (unknown names kept, for checking).

        Every override must be a whole number (`--params` is user JSON): a string, a float,
        null or a bool is an `NcuhError` naming the parameter, never silently cut to an int.
        """
        merged = dict(variant.params)
        for key, value in (params or {}).items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise NcuhError(f"parameter {key!r} of {variant.name} must be an integer, "
                                f"got {type(value).__name__} {value!r}")
            merged[key] = value
        return merged

    def problems(
        self, variant: Variant | str, params: dict[str, Any] | None, size: Size | None
    ) -> list[str]:
        """Every reason why `params` (overrides of the defaults) cannot run at `size`."""
        variant = self.resolve(variant)
        merged = self.effective_params(variant, params)
        takes = ", ".join(variant.params) or "none"
        unknown = [f"unknown parameter {key!r} for {variant.name} (takes {takes})"
                   for key in merged if key not in variant.params]
        if unknown:
            return unknown
        return constraint_problems(self.path, self.folder, variant, size, merged)

    def check_params(
        self, variant: Variant | str, params: dict[str, Any] | None, size: Size | None = None
    ) -> dict[str, int]:
        """The effective parameters; `NcuhError` naming every problem otherwise.

        Problems of the parameters alone are `NcuhError`; problems that appear only at this
        size are `UnsupportedShapeError` (a size the variant cannot take).
        """
        variant = self.resolve(variant)
        merged = self.effective_params(variant, params)
        general = self.problems(variant, params, None)
        if general:
            raise NcuhError(f"invalid parameters for {variant.name}: {'; '.join(general)}")
        if size is not None:
            sized = self.problems(variant, params, size)
            if sized:
                raise UnsupportedShapeError(f"{variant.name} {size}: {'; '.join(sized)}")
        return merged

    def tolerance_at(self, size: Size) -> float:
        return float(self.tolerance(size))

    def manifest(self, sizes: Sequence[Size] = ()) -> dict[str, Any]:
        """The `project` block of manifest.json and bench.json: names and keys, and what the
        pages show (the chain's titles and strategies, the limits, the work model at `sizes`),
        so that pages of a run never need to load, and run, the project again."""
        return {
            "name": self.name,
            "path": str(self.path),
            "description": self.description,
            "dims": list(self.dims),
            "reference": self.reference.key if self.reference else None,
            "reference_name": self.reference.name if self.reference else None,
            "baseline": self.baseline.name,
            "baseline_title": self.baseline.title,
            "summary_min_size": self.summary_min_size,
            "chain": [{"name": v.name, "iteration": v.iteration, "title": v.title,
                       "previous": v.previous, "strategy": v.strategy,
                       "kernel_name": v.kernel_name, "capture": v.capture_filter}
                      for v in self.variants],
            "limits": [{"name": limit.name, "key": limit.key} for limit in self.limits],
            "work_model": {"flops": self.flops is not None, "bytes": self.bytes is not None,
                           "at": [{"size": list(size), "flops": _work(self.flops, size),
                                   "bytes": _work(self.bytes, size)} for size in sizes]},
        }


def _work(model: Callable[[Size], float] | None, size: Size) -> float | None:
    """The work model at `size`; None where there is none or it fails there (the loader
    tried it at the project's own sizes; another size is the user's code's business)."""
    if model is None:
        return None
    try:
        value = float(model(size))
    except Exception:
        return None
    return value if math.isfinite(value) else None
