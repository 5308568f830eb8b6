"""Thresholds: which metrics are judged, how tightly, and which way is better.

The defaults live in `default_thresholds.toml` beside this module (documented there); a
user's TOML file (`ncuh diff --config`) is merged over them metric by metric, key by key, and
the result is validated (`ThresholdsFile`): a wrong type, an unknown key, a NaN or negative
threshold or a non-positive resample count is one line naming the file and the field.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.errors import NcuhError
from harness.rundir import validate
from harness.util import load_toml, read_text

Kind = Literal["timing", "counter"]
Direction = Literal["lower", "higher"]
TIME = "time"  # the pseudo-metric: bench samples, else gpu__time_duration.sum
NCU_DURATION = "gpu__time_duration.sum"


class ThresholdsError(NcuhError):
    """A thresholds file that cannot be read or says something invalid."""


@dataclass(frozen=True)
class MetricRule:
    """How one metric is judged."""

    key: str  # the TOML table name, e.g. "shared_store_bank_conflicts"
    metrics: tuple[str, ...]  # ncu metric names, summed; ("time",) for the timing metric
    label: str
    kind: Kind
    direction: Direction
    threshold_pct: float
    min_abs: float = 0.0
    scale: float = 1.0
    unit: str = ""

    @property
    def is_time(self) -> bool:
        return self.metrics == (TIME,)

    def value(self, metrics: dict[str, float]) -> float | None:
        """The metric's value for one kernel, or None when any part was not collected."""
        parts = [metrics.get(name) for name in self.metrics]
        if any(part is None for part in parts):
            return None
        return self.scale * sum(parts)  # type: ignore[arg-type]

    def to_json(self) -> dict[str, Any]:
        return {"metric": list(self.metrics), "label": self.label, "kind": self.kind,
                "direction": self.direction, "threshold_pct": self.threshold_pct,
                "min_abs": self.min_abs, "scale": self.scale, "unit": self.unit}


@dataclass(frozen=True)
class TimingSettings:
    noise_floor_pct: float = 5.0
    confidence: float = 0.95
    alpha: float = 0.01
    bootstrap_resamples: int = 2000
    seed: int = 0


@dataclass(frozen=True)
class Thresholds:
    timing: TimingSettings = field(default_factory=TimingSettings)
    rules: tuple[MetricRule, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"timing": self.timing.__dict__, "metrics": {r.key: r.to_json() for r in self.rules}}


def load_thresholds(config: Path | str | None = None) -> Thresholds:
    """The defaults, with the user's file (if any) merged over them."""
    raw = tomllib.loads(
        resources.files("harness.diff").joinpath("default_thresholds.toml").read_text("utf-8"))
    if config is not None:
        raw = _merge(raw, _read_user(Path(config)))
    return _parse(raw, source=str(config) if config else "default_thresholds.toml")


def _read_user(path: Path) -> dict[str, Any]:
    text = read_text(path, "thresholds")
    return load_toml(text, str(path), ThresholdsError)


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


# --- the file's shape (pydantic): strict types, no unknown keys, finite non-negative numbers ---

MAX_RESAMPLES = 100_000
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]


class _Table(BaseModel):
    # strict: "5" is not a number and true is not 1; forbid: a misspelt key is an error, not
    # a silently ignored setting
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class TimingTable(_Table):
    noise_floor_pct: NonNegative = 5.0
    confidence: Fraction = 0.95
    alpha: Fraction = 0.01
    # each resample is a row of samples in memory: 1e9 of them would want hundreds of GiB
    bootstrap_resamples: Annotated[int, Field(ge=1, le=MAX_RESAMPLES)] = 2000
    seed: Annotated[int, Field(ge=0)] = 0


class MetricTable(_Table):
    metric: Annotated[str, Field(min_length=1)] | Annotated[
        list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    label: str | None = None
    unit: str = ""
    kind: Kind | None = None
    direction: Direction = "lower"
    threshold_pct: NonNegative = 0.0
    min_abs: NonNegative = 0.0
    scale: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 1.0
    enabled: bool = True


class ThresholdsFile(_Table):
    timing: TimingTable = Field(default_factory=TimingTable)
    metrics: dict[str, MetricTable] = Field(default_factory=dict)


def _parse(raw: dict[str, Any], source: str) -> Thresholds:
    data = validate(ThresholdsFile, raw, source, ThresholdsError)
    timing = TimingSettings(**data.timing.model_dump())
    rules = tuple(_rule(key, table) for key, table in data.metrics.items() if table.enabled)
    return Thresholds(timing=timing, rules=rules)


def _rule(key: str, table: MetricTable) -> MetricRule:
    names = (table.metric,) if isinstance(table.metric, str) else tuple(table.metric)
    kind = table.kind or ("timing" if names == (TIME,) else "counter")
    return MetricRule(key=key, metrics=names, label=table.label or key, kind=kind,
                      direction=table.direction, threshold_pct=table.threshold_pct,
                      min_abs=table.min_abs, scale=table.scale, unit=table.unit)
