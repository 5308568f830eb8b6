"""Fix ideas for the launch: the resource that binds occupancy (with the headroom computed as
the hardware allocates), the grid's waves and balance, and the lanes of a warp. Each fits the
launch's shape: a one-block launch is not told to use smaller blocks, a kernel that would
spill is not told to cap its registers."""

from __future__ import annotations

from harness.findings import occupancy_limits
from harness.findings.evidence import Evidence, ev
from harness.findings.fixes.base import FixRule
from harness.findings.model import Finding, FixIdea
from harness.report import KernelReport

WARP = 32.0
# a register cap that removes more than this share of a kernel's registers trades the
# occupancy it wins for spills: the registers hold the kernel's live values
REGISTER_CUT = 0.25
LOW_OCCUPANCY = 60.0  # percent: theoretical occupancy a fix idea lifts
IDLE = 5.0  # percent of the elapsed time the SMs sat idle: a tail worth evening out
BAD_LANES = 24.0  # working lanes of 32


def _theoretical_low(profile: KernelReport, finding: Finding, resource: str) -> bool:
    return (finding.rule == "occupancy" and finding.title.startswith("Theoretical")
            and finding.metrics.get("limiter") == resource)


def cap_registers(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Registers bind occupancy and a modest cap fits one more block, without spills now."""
    if not _theoretical_low(profile, finding, "registers"):
        return None
    regs = profile.launch.registers_per_thread
    cap = occupancy_limits.next_block_register_cap(profile)
    if regs is None or cap is None:
        return None
    blocks = int(profile.occupancy.block_limits.get("registers") or 0) + 1
    threads = int(profile.launch.block_size or 0)
    return FixIdea(
        "cap_registers", "Use fewer registers per thread.",
        f"{regs:.0f} registers per thread bind occupancy; at most {cap:.0f} would fit "
        f"{blocks} blocks per SM (registers are allocated per warp in units of 256, within "
        "each of the SM's four sub-partitions).",
        f"What if registers were capped at {cap:.0f} (__launch_bounds__({threads}, {blocks}) "
        f"in CUDA C++, maxnreg={cap:.0f} in Triton), so one more block fits on each SM?",
        (Evidence("next_block_register_cap", "<", regs, cap),
         Evidence("next_block_register_cap", ">=", regs * (1.0 - REGISTER_CUT), cap),
         ev(profile, "spill_instructions", "<=", 0.0),
         ev(profile, "occupancy_causes", "<=", 1.0), ev(profile, "waves", ">=", 1.0),
         ev(profile, "theoretical_occupancy_pct", "<", LOW_OCCUPANCY)))


def fit_shared_memory(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Shared memory binds occupancy: a larger carve-out or smaller tiles fit one more block."""
    if not _theoretical_low(profile, finding, "shared_mem"):
        return None
    limit = occupancy_limits.binding(profile)
    if limit is None or limit.resource != "shared_mem":
        return None
    return FixIdea(
        "fit_shared_memory", "Size shared memory to fit more blocks.",
        f"{limit.cause}: {limit.lift}.",
        "What if the carve-out were raised (cudaFuncAttributePreferredSharedMemoryCarveout) "
        "or the tiles sized so that one more block's shared memory fits on each SM?",
        (ev(profile, "theoretical_occupancy_pct", "<", LOW_OCCUPANCY),
         ev(profile, "occupancy_causes", "<=", 1.0), ev(profile, "waves", ">=", 1.0),
         ev(profile, "shared_executed", ">", 0.0)))


def divide_the_warp_slots(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Large blocks leave warp slots empty: a block size that divides the SM's warps."""
    if finding.rule != "occupancy" or finding.metrics.get("limiter") != "warps":
        return None
    limit = occupancy_limits.binding(profile)
    if limit is None or limit.resource != "warps":
        return None
    return FixIdea(
        "divide_the_warp_slots", "Rebalance the block size.",
        f"{limit.cause}.", f"What if {limit.lift.replace('a block', 'blocks', 1)}?",
        (ev(profile, "theoretical_occupancy_pct", "<", 100.0), ev(profile, "waves", ">=", 1.0)))


def larger_blocks(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Small blocks hit the SM's block limit before its warp slots fill."""
    if finding.rule != "occupancy" or finding.metrics.get("limiter") != "blocks":
        return None
    limit = occupancy_limits.binding(profile)
    if limit is None or limit.resource != "blocks":
        return None
    return FixIdea(
        "larger_blocks", "Launch larger blocks.",
        f"{limit.cause}.", f"What if {limit.lift.replace(' would allow', ' allowed')}?",
        (ev(profile, "theoretical_occupancy_pct", "<", 100.0), ev(profile, "waves", ">=", 1.0)))


def even_out_the_grid(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Achieved occupancy falls short of theoretical over a grid of several waves: blocks
    that finish unevenly. Not for one wave or less (the grid itself is short)."""
    if finding.rule != "occupancy" or not finding.title.startswith("Achieved"):
        return None
    return FixIdea(
        "even_out_the_grid", "Balance the work across blocks.",
        "Warps sit idle for part of the run although the launch allows more: blocks finish "
        "unevenly, or the last wave is partial.",
        "What if the grid had more, smaller blocks, so SMs stay busy until the end?",
        (ev(profile, "waves", ">", 1.0), ev(profile, "block_threads", ">=", 2 * WARP),
         ev(profile, "sm_busy_pct", "<", 100.0 - IDLE)))


def fill_the_gpu(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """The grid is smaller than one wave: part of the GPU has nothing to do."""
    if finding.rule != "waves" or finding.kind != "bad" or "of one wave" not in finding.title:
        return None
    threads = profile.launch.block_size or 0.0
    how = ("each block handled fewer elements (smaller blocks, or the work of a block "
           "split over several)" if threads >= 2 * WARP else
           "the work were split over more blocks")
    return FixIdea(
        "fill_the_gpu", "Launch enough blocks to fill the GPU.",
        "The grid does not give every SM a block: those SMs idle for the whole kernel.",
        f"What if {how}, so the grid has at least one block per SM slot?",
        (ev(profile, "waves", "<", 1.0),))


def whole_waves(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """A partial last wave leaves SMs idle, and the SMs' active cycles show that idle time."""
    if finding.rule != "waves" or not finding.title.startswith("Tail"):
        return None
    return FixIdea(
        "whole_waves", "Even out the last wave.",
        "A grid that is a whole multiple of the blocks one wave holds leaves no SM idle at the "
        "end.",
        "What if the grid were sized to a whole number of waves (a grid-stride loop over as "
        "many blocks as fit at once)?",
        (ev(profile, "waves", ">=", 1.0), ev(profile, "last_wave_empty_pct", ">=", IDLE),
         ev(profile, "achieved_of_theoretical_pct", "<=", 100.0 - IDLE)))


def split_the_straggler(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """One SM works long after the others."""
    if finding.rule != "imbalance":
        return None
    return FixIdea(
        "split_the_straggler", "Split the straggler's work.",
        "The kernel lasts as long as its busiest SM: some blocks do far more work than "
        "others, and the rest of the GPU waits for them.",
        "What if the work were cut into more, evenly sized blocks (or a work queue handed out "
        "the heavy items first), so no SM runs on alone at the end?",
        (ev(profile, "sm_active_ratio", ">=", 1.5),))


def one_path_per_warp(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Divergent branches run a warp's paths one after another."""
    if finding.rule != "divergence" or finding.metrics.get("cause") != "divergence":
        return None
    return FixIdea(
        "one_path_per_warp", "Keep the lanes of a warp on one path.",
        "Divergent branches run the paths of a warp one after another: every throughput "
        "figure overstates useful work by the idle lanes.",
        "What if the work were regrouped so that threads taking the same path sit in the "
        "same warp (sort or bin by branch, or branch on warp-uniform values)?",
        (ev(profile, "divergent_branches", ">", 0.0),
         ev(profile, "lanes_lost_to_divergence", ">=", 1.0)))


def full_warps(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Blocks are not a multiple of 32 threads: their last warp runs part-empty."""
    if finding.rule != "divergence" or finding.metrics.get("cause") != "block_size":
        return None
    return FixIdea(
        "full_warps", "Launch whole warps.",
        "A block's threads fill its warps 32 at a time; a block that is not a multiple of 32 "
        "threads leaves lanes of its last warp empty, whatever the code does.",
        "What if blocks held a multiple of 32 threads (the same work in fewer, fuller "
        "blocks)?",
        (ev(profile, "lane_ceiling", "<", WARP),))


def retire_idle_lanes(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Lanes stay active but predicated off: threads with no work left still issue."""
    if finding.rule != "divergence" or finding.metrics.get("cause") != "predication":
        return None
    return FixIdea(
        "retire_idle_lanes", "Give the predicated-off lanes work, or drop them.",
        "Lanes predicated off issue with their warp and do nothing: a bounds check or a "
        "shrinking loop (a tree sum's later steps) leaves them idle.",
        "What if the loop's later steps ran in fewer warps (the active threads packed into "
        "the first warps), or each thread took several elements so none runs idle?",
        (ev(profile, "lanes_lost_to_predication", ">=", 1.0),))


RULES = tuple(FixRule(f.__name__, answers, f) for f, answers in (
    (cap_registers, ("occupancy",)),
    (fit_shared_memory, ("occupancy",)),
    (divide_the_warp_slots, ("occupancy",)),
    (larger_blocks, ("occupancy",)),
    (even_out_the_grid, ("occupancy",)),
    (fill_the_gpu, ("waves",)),
    (whole_waves, ("waves",)),
    (split_the_straggler, ("imbalance",)),
    (one_path_per_warp, ("divergence",)),
    (full_warps, ("divergence",)),
    (retire_idle_lanes, ("divergence",)),
))
