"""Roofline numbers of one kernel, read from the report's own roofline metrics.

The same quantities ncu's "GPU Speed Of Light Roofline Chart" plots for single precision:
achieved FLOP/s = (2 x FFMA + FADD + FMUL thread instructions per cycle) x SM frequency;
peak FLOP/s = 2 x peak FFMA per cycle x SM frequency; DRAM peak bytes/s = peak bytes per
cycle x DRAM frequency; arithmetic intensity = achieved FLOP/s / achieved DRAM bytes/s.
A metric the report lacks leaves its field None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

_FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed"
_FADD = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed"
_FMUL = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed"
_FFMA_PEAK = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained"
_SM_HZ = "sm__cycles_elapsed.avg.per_second"
_DRAM_PEAK = "dram__bytes.sum.peak_sustained"
_DRAM_HZ = "dram__cycles_elapsed.avg.per_second"
_DRAM_BPS = "dram__bytes.sum.per_second"


@dataclass(frozen=True)
class Roofline:
    """Single-precision roofline point and ceilings, in FLOP/s and bytes/s."""

    achieved_flops: float | None = None
    peak_flops: float | None = None
    dram_bytes_per_second: float | None = None
    peak_dram_bytes_per_second: float | None = None

    @property
    def arithmetic_intensity(self) -> float | None:
        """FLOPs per DRAM byte."""
        if self.achieved_flops is None or not self.dram_bytes_per_second:
            return None
        return self.achieved_flops / self.dram_bytes_per_second

    @property
    def ridge_point(self) -> float | None:
        """The intensity where the memory ceiling meets the compute ceiling."""
        if not self.peak_flops or not self.peak_dram_bytes_per_second:
            return None
        return self.peak_flops / self.peak_dram_bytes_per_second

    @property
    def peak_fraction_pct(self) -> float | None:
        if self.achieved_flops is None or not self.peak_flops:
            return None
        return 100.0 * self.achieved_flops / self.peak_flops


def roofline_from(number: Callable[[str], float | None]) -> Roofline:
    """The roofline from a lookup of plain metric values by name (None: not collected)."""
    ffma, fadd, fmul = (number(n) for n in (_FFMA, _FADD, _FMUL))
    sm_hz = number(_SM_HZ)
    ffma_peak = number(_FFMA_PEAK)
    dram_peak, dram_hz = number(_DRAM_PEAK), number(_DRAM_HZ)
    achieved = None
    if ffma is not None and sm_hz is not None:
        achieved = (2.0 * ffma + (fadd or 0.0) + (fmul or 0.0)) * sm_hz
    return Roofline(
        achieved_flops=achieved,
        peak_flops=2.0 * ffma_peak * sm_hz if ffma_peak is not None and sm_hz else None,
        dram_bytes_per_second=number(_DRAM_BPS),
        peak_dram_bytes_per_second=dram_peak * dram_hz if dram_peak and dram_hz else None,
    )
