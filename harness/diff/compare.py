"""`diff_runs`: baseline against current, from inputs to verdicts and explanations.

This is the whole of `ncuh diff` as data; the command only renders the result and turns
`DiffResult.exit_code` into the process status (0 nothing regressed, 1 a regression).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.diff.explain import Explanation, explain_counters
from harness.diff.inputs import (
    Environment,
    FailedEntry,
    KernelData,
    KernelKey,
    Side,
    load_side,
)
from harness.diff.matching import match_kernels, parse_pairs
from harness.diff.stats import Verdict
from harness.diff.thresholds import Thresholds, load_thresholds
from harness.diff.verdicts import SEVERITY, MetricVerdict, judge_kernel, kernel_verdict
from harness.errors import IncompatibleInputsError, NcuhError

ENVIRONMENT_FIELDS = (("gpu", "GPU"), ("compute_capability", "compute capability"),
                      ("ncu_version", "ncu version"))


@dataclass(frozen=True)
class KernelDiff:
    key: KernelKey
    baseline: KernelData
    current: KernelData
    verdict: Verdict
    metrics: tuple[MetricVerdict, ...]
    explanation: Explanation | None  # for every kernel whose verdict is not SAME

    @property
    def regressions(self) -> tuple[MetricVerdict, ...]:
        return tuple(m for m in self.metrics if m.regressed) if self.verdict == "SLOWER" else ()

    @property
    def timing(self) -> MetricVerdict | None:
        return next((m for m in self.metrics if m.kind == "timing"), None)

    def severity(self) -> tuple[int, float]:
        """Sort key: verdict class first, then the larger timing change first."""
        change = self.timing.change_pct if self.timing and self.timing.change_pct else 0.0
        return SEVERITY[self.verdict], -abs(change)


@dataclass(frozen=True)
class DiffResult:
    baseline: Side
    current: Side
    kernels: tuple[KernelDiff, ...]  # sorted by severity
    added: tuple[KernelData, ...]
    removed: tuple[KernelData, ...]
    mismatches: tuple[str, ...]  # environment differences accepted with --allow-mismatch
    thresholds: Thresholds
    # current-run entries that failed (no report) although the baseline has that kernel:
    # a kernel that stopped working is worse than a slower one, so it fails the diff too
    broken: tuple[FailedEntry, ...] = ()

    @property
    def regressed(self) -> tuple[KernelDiff, ...]:
        return tuple(k for k in self.kernels if k.verdict == "SLOWER")

    @property
    def exit_code(self) -> int:
        return 1 if self.regressed or self.broken else 0

    def count(self, verdict: Verdict) -> int:
        return sum(1 for k in self.kernels if k.verdict == verdict)


def diff_runs(
    baseline: Side | Path | str,
    current: Side | Path | str,
    config: Thresholds | Path | str | None = None,
    pairs: Iterable[str] | dict[str, str] = (),
    allow_mismatch: bool = False,
    allow_no_match: bool = False,
) -> DiffResult:
    """Compare two run directories or reports (or already loaded sides).

    When no kernel of one side pairs with one of the other, nothing was compared: that is an
    `NcuhError` (exit 2) unless `allow_no_match`, because a gate that judged nothing must not
    pass.
    """
    thresholds = config if isinstance(config, Thresholds) else load_thresholds(config)
    renames = dict(pairs) if isinstance(pairs, dict) else parse_pairs(list(pairs))
    base_side = baseline if isinstance(baseline, Side) else load_side(baseline)
    cur_side = current if isinstance(current, Side) else load_side(current)
    mismatches = environment_mismatches(base_side.environment, cur_side.environment)
    if mismatches and not allow_mismatch:
        raise IncompatibleInputsError(
            f"baseline and current differ in {'; '.join(mismatches)}: "
            "refusing to compare (pass --allow-mismatch to compare anyway)")
    matching = match_kernels(base_side, cur_side, renames)
    kernels = []
    for pair in matching.pairs:
        metrics = judge_kernel(pair.baseline, pair.current, thresholds)
        verdict = kernel_verdict(metrics)
        explanation = (None if verdict == "SAME"
                       else explain_counters(pair.baseline, pair.current, metrics))
        kernels.append(KernelDiff(pair.key, pair.baseline, pair.current, verdict,
                                  tuple(metrics), explanation))
    # a size-less key (a user program) may sit beside sized ones: None sorts first
    kernels.sort(key=lambda k: (k.severity(), k.key.name, k.key.size or (), k.key.ordinal))
    baseline_names = {(renames.get(k.key.name, k.key.name), k.key.size)
                      for k in base_side.kernels}
    broken = tuple(f for f in cur_side.failed if (f.key.name, f.key.size) in baseline_names)
    # kernels that stopped working were compared (and fail the diff); nothing at all was not
    if not kernels and not broken and not allow_no_match:
        raise NcuhError(
            f"no kernel of {base_side.path} matches one of {cur_side.path} "
            f"(baseline: {_names(base_side)}; current: {_names(cur_side)}): nothing to compare; "
            "pair renamed kernels with --pair, or pass --allow-no-match")
    broken_names = {(f.key.name, f.key.size) for f in broken}
    removed = tuple(k for k in matching.removed  # a broken kernel is listed once, as broken
                    if (renames.get(k.key.name, k.key.name), k.key.size) not in broken_names)
    return DiffResult(base_side, cur_side, tuple(kernels), matching.added, removed,
                      tuple(mismatches), thresholds, broken)


def environment_mismatches(base: Environment, cur: Environment) -> list[str]:
    """'GPU (A vs B)' for each field both sides state and disagree on."""
    out = []
    for attr, label in ENVIRONMENT_FIELDS:
        b, c = getattr(base, attr), getattr(cur, attr)
        if b is not None and c is not None and str(b) != str(c):
            out.append(f"{label} ({b} vs {c})")
    return out


def _names(side: Side, limit: int = 5) -> str:
    labels = list(dict.fromkeys(k.key.label for k in side.kernels))
    labels += [f"{f.label} (failed)" for f in side.failed]
    more = f" and {len(labels) - limit} more" if len(labels) > limit else ""
    return (", ".join(labels[:limit]) + more) or "none"
