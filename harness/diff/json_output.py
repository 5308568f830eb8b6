"""The diff as JSON, schema "ncuh.diff/1": status and exit code, both sides with their
environments, the summary counts, the thresholds used, and every kernel with its verdict, its
metrics and its explanation, sorted by severity (the shape is in docs/ci.md). Values are in
ncu's base units (bench timings in ms); a change from zero has change_pct null.
"""

from __future__ import annotations

import json
from typing import Any

from harness import __version__
from harness.diff.compare import DiffResult, KernelDiff
from harness.diff.inputs import KernelData

SCHEMA = "ncuh.diff/1"


def to_dict(result: DiffResult) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "ncuh_version": __version__,
        "status": "regression" if result.exit_code else "ok",
        "exit_code": result.exit_code,
        "baseline": result.baseline.to_json(),
        "current": result.current.to_json(),
        "mismatches": list(result.mismatches),
        "summary": {
            "kernels": len(result.kernels),
            **{v.lower(): result.count(v) for v in ("SLOWER", "FASTER", "SAME", "UNSURE")},
            "added": len(result.added), "removed": len(result.removed),
            "failed": len(result.broken),
        },
        "thresholds": result.thresholds.to_json(),
        "kernels": [_kernel(k) for k in result.kernels],
        "failed": [f.to_json() for f in result.broken],
        "added": [_one_sided(k) for k in result.added],
        "removed": [_one_sided(k) for k in result.removed],
    }


def render_json(result: DiffResult) -> str:
    return json.dumps(to_dict(result), indent=2, allow_nan=False) + "\n"


def _kernel(kernel: KernelDiff) -> dict[str, Any]:
    return {
        "key": kernel.key.to_json(),
        "baseline_function": kernel.baseline.function,
        "current_function": kernel.current.function,
        "verdict": kernel.verdict,
        "metrics": [m.to_json() for m in kernel.metrics],
        "explanation": kernel.explanation.to_json() if kernel.explanation else None,
    }


def _one_sided(kernel: KernelData) -> dict[str, Any]:
    return {"key": kernel.key.to_json(), "function": kernel.function, "source": kernel.source}
