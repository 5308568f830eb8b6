"""The kernel's math by precision: tensor-core operations (FP8, FP16, BF16, TF32, FP64, INT8)
and FP64 and FP32 on the SM's pipes, each as operations and operations per second.

Tensor operations come from ncu's own counts (`sm__ops_path_tensor_src_<precision>.sum`, an
MMA of m x n x k counting 2mnk) where the report holds them (`--set full`), else from the
executed MMA instructions with their modifiers (`sass__inst_executed_per_opcode_with_modifier_all`:
`HGMMA.64x128x16.F32.BF16`, `HMMA.16816.F32`, `QGMMA.64x128x32.F32.E4M3.E4M3`): the shape and
the input type are in the opcode, and a warpgroup MMA's count is one per warp of its four.
FP32 and FP64 come from the roofline's thread instructions per cycle (2 per FMA).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.report.model import KernelReport

OPS_METRIC = re.compile(r"^sm__ops_path_tensor_src_(?P<src>[a-z0-9]+)(?:_dst_[a-z0-9]+)?"
                        r"(?:_sparsity_(?:off|on))?\.sum$")
_SOURCE_PRECISION = {"fp8": "FP8", "fp16": "FP16", "bf16": "BF16", "tf32": "TF32",
                     "fp64": "FP64", "int8": "INT8", "int1": "INT1"}
WITH_MODIFIERS = "sass__inst_executed_per_opcode_with_modifier_all"
WARPGROUP_MMA = ("HGMMA", "QGMMA", "IGMMA", "BGMMA")  # issued by each of a warpgroup's 4 warps
WARP_MMA = ("HMMA", "IMMA", "DMMA", "BMMA")
WARPS_PER_WARPGROUP = 4
# mma.sync shapes written as digits: "16816" is m16 n8 k16
_SHAPES = {"16816": (16, 8, 16), "1688": (16, 8, 8), "1684": (16, 8, 4), "884": (8, 8, 4),
           "16832": (16, 8, 32), "8816": (8, 8, 16), "8832": (8, 8, 32), "16864": (16, 8, 64),
           "168128": (16, 8, 128), "168256": (16, 8, 256), "1688128": (16, 8, 128),
           "16816256": (16, 8, 256)}
_ROOFLINE = "smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed"
_SM_HZ = "sm__cycles_elapsed.avg.per_second"


@dataclass(frozen=True)
class MathRate:
    """One precision's operations and their rate over the profiled duration."""

    precision: str  # "FP8", "BF16", "FP32", ...
    unit: str  # "tensor" or "pipe"
    ops: float  # operations (2 per multiply-add)
    per_second: float
    counted_by: str  # "ncu" (its own counters) or "opcodes" (the MMA shapes executed)

    @property
    def words(self) -> str:
        """e.g. "FP8 (tensor cores) 1,109.5 TFLOP/s", "FP32 (SM pipes) 390.2 GFLOP/s"."""
        kind = "tensor cores" if self.unit == "tensor" else "SM pipes"
        unit = "OP/s" if self.precision.startswith("INT") else "FLOP/s"
        scale, prefix = (1e12, "T") if self.per_second >= 1e12 else (1e9, "G")
        return f"{self.precision} ({kind}) {self.per_second / scale:,.1f} {prefix}{unit}"


def _precision(opcode: str) -> str | None:
    """The input precision of an MMA opcode with its modifiers."""
    parts = opcode.split(".")
    base, modifiers = parts[0], set(parts[1:])
    if base == "DMMA":
        return "FP64"
    if base in ("QGMMA",) or modifiers & {"E4M3", "E5M2"}:
        return "FP8"
    if base in ("IMMA", "IGMMA"):
        return "INT8" if not modifiers & {"S4", "U4"} else "INT4"
    if base in ("BMMA", "BGMMA"):
        return "INT1"
    for name in ("BF16", "TF32"):
        if name in modifiers:
            return name
    return "FP16" if base in ("HMMA", "HGMMA") else None


def _shape(opcode: str) -> tuple[int, int, int] | None:
    parts = opcode.split(".")
    if len(parts) < 2:
        return None
    shape = parts[1]
    if "x" in shape:
        dims = shape.split("x")
        if len(dims) == 3 and all(d.isdigit() for d in dims):
            return int(dims[0]), int(dims[1]), int(dims[2])
        return None
    return _SHAPES.get(shape)


def _from_opcodes(profile: KernelReport) -> dict[str, float]:
    metric = profile.metrics.get(WITH_MODIFIERS)
    ops: dict[str, float] = {}
    for opcode, executed in metric.instances if metric is not None else ():
        base = opcode.split(".")[0]
        if base not in WARPGROUP_MMA + WARP_MMA or not executed:
            continue
        precision, shape = _precision(opcode), _shape(opcode)
        if precision is None or shape is None:
            continue
        m, n, k = shape
        per = 2.0 * m * n * k / (WARPS_PER_WARPGROUP if base in WARPGROUP_MMA else 1)
        ops[precision] = ops.get(precision, 0.0) + executed * per
    return ops


def _from_ncu(profile: KernelReport) -> dict[str, float]:
    ops: dict[str, float] = {}
    for name in profile.metrics:
        match = OPS_METRIC.match(name)
        value = profile.metric(name) if match else None
        if match is None or not value:
            continue
        precision = _SOURCE_PRECISION.get(match.group("src"))
        if precision is not None:
            ops[precision] = ops.get(precision, 0.0) + value
    return ops


def _pipe_rate(profile: KernelReport, prefix: str) -> float | None:
    """FLOP/s of one precision on the SM's pipes: 2 per FMA, 1 per add or multiply."""
    fma, add, mul = (profile.metric(_ROOFLINE.format(op=f"{prefix}{op}"))
                     for op in ("fma", "add", "mul"))
    hz = profile.metric(_SM_HZ)
    if fma is None or hz is None:
        return None
    return (2.0 * fma + (add or 0.0) + (mul or 0.0)) * hz


def math_rates(profile: KernelReport) -> list[MathRate]:
    """The kernel's math by precision, the most operations per second first; precisions that
    did no work are left out."""
    seconds = (profile.speed_of_light.duration_ns or 0.0) / 1e9
    rates: list[MathRate] = []
    ncu = _from_ncu(profile)
    counted_by, tensor = ("ncu", ncu) if ncu else ("opcodes", _from_opcodes(profile))
    if seconds:
        rates += [MathRate(p, "tensor", n, n / seconds, counted_by) for p, n in tensor.items()
                  if n]
    for precision, prefix in (("FP64", "d"), ("FP32", "f")):
        rate = _pipe_rate(profile, prefix)
        if rate:
            rates.append(MathRate(precision, "pipe", rate * seconds, rate, "ncu"))
    return sorted(rates, key=lambda r: -r.per_second)


def tensor_precisions(profile: KernelReport) -> list[str]:
    """The precisions of the MMAs the kernel executed, most operations first."""
    return [r.precision for r in math_rates(profile) if r.unit == "tensor"] or sorted(
        {p for op in _executed_mma(profile) if (p := _precision(op)) is not None})


def _executed_mma(profile: KernelReport) -> list[str]:
    metric = profile.metrics.get(WITH_MODIFIERS)
    return [op for op, n in (metric.instances if metric is not None else ())
            if n and op.split(".")[0] in WARPGROUP_MMA + WARP_MMA]
