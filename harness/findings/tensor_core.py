"""Tensor-core kernels: how busy the tensor pipe is, which MMA feeds it (warpgroup WGMMA or
warp-level mma.sync) and which path brings the operands from global memory (TMA, cp.async or
plain loads; `feeds`).

A Hopper GEMM or attention kernel is judged by its tensor pipe, not by the L1/TEX or the
occupancy figures of a SIMT kernel: a warp-specialized WGMMA kernel runs one or two blocks of a
few warpgroups per SM by design, and near the tensor pipe's peak (`NEAR_PEAK`) every other
problem can win back at most what the pipe has left.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.findings import evidence, feeds
from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.findings.pipes import busiest_pipes
from harness.report import KernelReport

NAME = "tensor_core"
SECTION = "Compute Workload Analysis"
NEAR_PEAK = 80.0  # percent of the tensor pipe's peak: what is left to win is small

WGMMA_OPCODES = ("HGMMA", "QGMMA", "IGMMA", "BGMMA")  # wgmma.mma_async: one warpgroup
MMA_OPCODES = ("HMMA", "IMMA", "DMMA", "BMMA")  # mma.sync: one warp
WARP_SPECIALIZED_OPCODES = ("USETMAXREG",)  # setmaxnreg: producer and consumer warpgroups


@dataclass(frozen=True)
class TensorUse:
    """What the tensor pipe does in one kernel, from its counters and opcodes."""

    pipe_pct: float  # the busiest tensor pipe, percent of peak
    pipe_label: str  # ncu's wording, e.g. "Tensor (FP)"
    mma: dict[str, float]  # executed MMA warp instructions by opcode
    feed: dict[str, float]  # bytes brought from global memory, by path (`feeds`)
    main_feed: tuple[str, ...]  # the paths that bring most of them
    warp_specialized: bool

    @property
    def wgmma(self) -> bool:
        return any(op in self.mma for op in WGMMA_OPCODES)

    @property
    def near_peak(self) -> bool:
        return self.pipe_pct >= NEAR_PEAK

    def mma_words(self) -> str:
        """"WGMMA (HGMMA)" or "mma.sync (HMMA)"."""
        ops = "/".join(sorted(self.mma, key=lambda op: -self.mma[op]))
        return f"WGMMA ({ops})" if self.wgmma else f"mma.sync ({ops})"

    def feed_words(self) -> str:
        """The paths that bring most of the bytes, e.g. "TMA (UTMALDG)" ("" when unknown)."""
        return " and ".join(self.main_feed)


def _executed(profile: KernelReport, opcodes: tuple[str, ...]) -> dict[str, float]:
    return {o.opcode: o.executed for o in profile.instruction_mix
            if o.opcode in opcodes and o.executed}


def tensor_use(profile: KernelReport) -> TensorUse | None:
    """The tensor pipe's use, or None when the kernel executed no MMA instruction or the
    tensor pipe was not collected."""
    mma = _executed(profile, WGMMA_OPCODES + MMA_OPCODES)
    tensor = [use for use in busiest_pipes(profile) if use.pipe.startswith("tensor")]
    if not mma or not tensor:
        return None
    top = max(tensor, key=lambda use: use.pct)
    return TensorUse(
        pipe_pct=top.pct,
        pipe_label=top.label,
        mma=mma,
        feed=feeds.load_bytes(profile),
        main_feed=tuple(feeds.main_paths(profile)),
        warp_specialized=bool(_executed(profile, WARP_SPECIALIZED_OPCODES)),
    )


def _tensor_pct(profile: KernelReport) -> float | None:
    tensor = [use.pct for use in busiest_pipes(profile) if use.pipe.startswith("tensor")]
    return max(tensor) if tensor else None


evidence.MEASURES["tensor_pipe_pct"] = ("busiest tensor pipe (% of peak)", _tensor_pct)
evidence.MEASURES["mma_executed"] = (
    "MMA instructions (WGMMA or mma.sync) executed",
    lambda p: evidence.executed(p, WGMMA_OPCODES + MMA_OPCODES))



def compute_side(profile: KernelReport) -> float | None:
    """The compute side as the bound judges it: the SM throughput, or the tensor pipe of a
    tensor-core kernel where that is busier."""
    compute = profile.speed_of_light.compute_throughput_pct
    use = tensor_use(profile)
    if compute is None or use is None:
        return compute
    return max(compute, use.pipe_pct)


evidence.MEASURES["compute_side_pct"] = (
    "compute side: SM throughput or the MMA kernel's tensor pipe (% of peak)", compute_side)


def uses_wgmma(profile: KernelReport) -> bool:
    """Whether the kernel's MMAs are warpgroup-wide (WGMMA): such kernels run a few
    warpgroups per SM by design."""
    use = tensor_use(profile)
    return use is not None and use.wgmma


def near_peak(profile: KernelReport) -> float | None:
    """The tensor pipe's percent of peak when a tensor-core kernel runs near it, else None."""
    use = tensor_use(profile)
    return use.pipe_pct if use is not None and use.near_peak else None


def summary(profile: KernelReport) -> str:
    """A few words for the bound line, e.g. "WGMMA (HGMMA) fed by TMA (UTMALDG)"; "" for a
    kernel without MMA instructions."""
    use = tensor_use(profile)
    if use is None:
        return ""
    feed = use.feed_words()
    return use.mma_words() + (f" fed by {feed}" if feed else "")


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    use = tensor_use(profile)
    if use is None:
        return []
    mma = ", ".join(f"{op} {fmt(n, 0)}" for op, n in sorted(use.mma.items(), key=lambda x: -x[1]))
    feed = ", ".join(f"{path} {fmt(n / 1e9, 2)} GB" for path, n in use.feed.items())
    parts = [f"{use.pipe_label} pipe busy {fmt(use.pipe_pct)}% of peak",
             f"executed MMA instructions: {mma}"]
    if feed:
        parts.append(f"operands from global memory: {feed}")
    occ = profile.occupancy.theoretical_pct
    if use.warp_specialized:
        parts.append("setmaxnreg (USETMAXREG) moves registers between producer and consumer "
                     "warpgroups: the kernel is warp-specialized")
    text = "; ".join(parts) + f" ({SECTION})."
    metrics: dict[str, float | str] = {"tensor_pct": use.pipe_pct,
                                       "mma_instructions": sum(use.mma.values())}
    if "TMA (UTMALDG)" in use.feed:
        metrics["tma_bytes"] = use.feed["TMA (UTMALDG)"]
    feed_words = use.feed_words()
    fed_by = f", fed by {feed_words}" if feed_words else ""
    if use.near_peak:
        design = (f" Theoretical occupancy of {fmt(occ)}% is the design of such a kernel, not a "
                  "limit: a few warpgroups keep the tensor cores busy." if occ is not None
                  and occ < 50.0 else "")
        return [Finding(
            rule=NAME, kind="good",
            title=f"The tensor cores run near their peak: {use.mma_words()}{fed_by} keeps the "
            f"{use.pipe_label} pipe busy {fmt(use.pipe_pct)}% of the time.",
            text=text + design,
            section=SECTION, weight=use.pipe_pct, metrics=metrics,
            evidence=(ev(profile, "mma_executed", ">", 0.0),
                      ev(profile, "tensor_pipe_pct", ">=", NEAR_PEAK)),
        )]
    return [Finding(
        rule=NAME, kind="info",
        title=f"A tensor-core kernel short of the tensor peak: {use.mma_words()}{fed_by} keeps "
        f"the {use.pipe_label} pipe busy {fmt(use.pipe_pct)}% of the time.",
        text=text + " What else the SM does between the MMAs (softmax, epilogue, waiting on "
        "operands) takes the rest.",
        section=SECTION, weight=100.0 - use.pipe_pct, metrics=metrics,
        evidence=(ev(profile, "mma_executed", ">", 0.0),
                  ev(profile, "tensor_pipe_pct", "<", NEAR_PEAK)),
    )]
