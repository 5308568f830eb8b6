"""The contradiction oracle: for every kind of sentence the pages can say, the counters that
would contradict it, read from the report independently of the rule that wrote it.

`contradictions(profile, findings)` checks a kernel's findings and fix ideas (as `run_rules`
returns them); `page_contradictions` adds the page's own sentences (the TLDR against the
limit the run benched). Each check names the sentence and the counters that contradict it; a
report whose pages say nothing it contradicts gives an empty list.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from harness.findings import divergence, evidence, pipe_work, waves
from harness.findings.bank_conflicts import BAD_SHARE, MATRIX, MAX_WAYS, excess_pct
from harness.findings.bound import pipe_headroom_pct
from harness.findings.model import Finding, FixIdea
from harness.findings.occupancy_limits import REGISTER_STEP, blocks_per_sm
from harness.findings.stalls import CARRIES, SPILLS
from harness.report import SITE_CLASSES, KernelReport, sites_by_reason, tensor_precisions

PERCENT = re.compile(r"(\d[\d,]*(?:\.\d+)?)%")
AT_LIMIT = 85.0  # percent of the practical limit (pages.tldr)
REGISTER_CUT = 0.25  # the largest share of its registers a cap may take (fixes.launch)
SMALL_BLOCK = 64  # threads: a block this small is not told to be smaller
RE_READ = 1.5  # L2 sectors per DRAM sector below which each byte is read about once
GATHER = 10.0  # percent of excess sectors: the loads are scattered, not a coalesced run
WIDE = 8.0  # bytes per lane: loads already 64-bit or wider
OWN_TRAFFIC = 50.0  # percent of memory instructions that are local (spills, arrays)


@dataclass(frozen=True)
class Contradiction:
    """A sentence of a page and the counters that contradict it."""

    kernel: str
    sentence: str
    counters: str

    def __str__(self) -> str:
        return f"{self.kernel}: {self.sentence!r} — {self.counters}"


def _executed(profile: KernelReport, opcodes: tuple[str, ...]) -> float:
    return sum(o.executed for o in profile.instruction_mix if o.opcode in opcodes)


def _read(profile: KernelReport, measure: str) -> float | None:
    return evidence.read(profile, measure)


# ---------------------------------------------------------------------------------------------
# findings


def _stall(profile: KernelReport, f: Finding) -> str | None:
    """A stall told by a class of instructions: that class must carry most of its samples
    and have executed; a local-memory story must match ncu's spill count."""
    key = f.metrics.get("carrier")
    if key is None:
        return None
    reason = str(f.metrics["reason"])
    sites = sites_by_reason(profile).get(reason)
    if sites is None or not sites.enough:
        return f"too few PC samples of {reason} to name what carries it"
    share = sites.share(str(key))
    if share < CARRIES:
        return f"{key} carries only {share:.1f}% of the {reason} samples"
    opcodes = SITE_CLASSES.get(str(key), ("", ()))[1]
    if opcodes and profile.instruction_mix and not _executed(profile, opcodes):
        return f"no {'/'.join(opcodes)} instruction executed"
    spills = _read(profile, "spill_share_of_local_pct")
    if "register spills" in f.title and (spills is None or spills < SPILLS):
        return f"register spills are {spills}% of the local loads and stores"
    if "per-thread array" in f.title and (spills is None or spills >= SPILLS):
        return f"register spills are {spills}% of the local loads and stores"
    return None


def _lanes(profile: KernelReport, f: Finding) -> str | None:
    """Lanes blamed on one cause: that cause must lose the most lanes."""
    lost = divergence.lanes_lost(profile)
    if lost is None:
        return "the lane counters were not collected"
    cause = str(f.metrics.get("cause"))
    if lost[cause] < max(lost.values()):
        return f"lanes lost per warp instruction: {lost}"
    if cause == "divergence" and not profile.divergence.divergent_branches:
        return "no divergent branch was counted"
    return None


def _pipe(profile: KernelReport, f: Finding) -> str | None:
    """A busy pipe named by its work, and a tensor pipe by its precisions: that work and
    those precisions must have executed."""
    pipe = str(f.metrics.get("pipe", ""))
    for key, (words, opcodes) in pipe_work.PIPE_WORK.get(pipe, {}).items():
        named_here = f"busy with {words}" in f.title or f" and {words} (" in f.title
        if named_here and not _executed(profile, opcodes):
            return f"no {'/'.join(opcodes)} executed ({key})"
    named = re.search(r"tensor \(([A-Z0-9/]+) MMA\)", f.title)
    if named:
        ran = set(tensor_precisions(profile))
        if not set(named.group(1).split("/")) <= ran:
            return f"the MMAs executed are {sorted(ran)}"
    return None


def _mix(profile: KernelReport, f: Finding) -> str | None:
    """"Overhead the math pays for" is no story of a kernel whose MMAs do the math."""
    mma = _read(profile, "mma_executed") or 0.0
    if "overhead the math pays for" in f.text and mma:
        return f"{mma:,.0f} MMA instructions executed: the tensor cores do the math"
    if f.metrics.get("math_class") == "tensor" and not mma:
        return "no MMA instruction executed"
    return None


def _occupancy(profile: KernelReport, f: Finding) -> str | None:
    """A lift must ask for less than the kernel uses."""
    regs = profile.launch.registers_per_thread
    for found in re.findall(r"at most (\d+) registers per thread", f.title):
        if regs is not None and int(found) >= regs:
            return f"the kernel uses {regs:.0f} registers per thread"
    smem = (profile.launch.shared_mem_per_block_bytes or 0.0) / 1024
    for found in re.findall(r"at most ([\d.]+) KiB per block", f.title):
        if float(found) >= smem:
            return f"the kernel uses {smem:.1f} KiB of shared memory per block"
    if "shared memory per block" in f.title and not smem:
        return "the kernel uses no shared memory"
    return _occupancy_gap(profile, f.text)


def _occupancy_gap(profile: KernelReport, text: str) -> str | None:
    """The cause the gap between achieved and theoretical is put down to: an SM short of
    blocks needs room for two; one block per SM for the whole kernel needs both."""
    most, per_sm = blocks_per_sm(profile), profile.launch.waves_per_sm
    if "SMs hold fewer blocks than they could" in text and (most is None or most <= 1):
        return f"an SM holds {most} block at most: it is full or idle"
    if "one block per SM for the whole kernel" in text and (
            most != 1 or per_sm is None or per_sm > 1.0):
        return f"{most} blocks per SM at most, {per_sm} waves"
    return None


def _tail(profile: KernelReport, f: Finding) -> str | None:
    """A costly tail needs the warp slots empty for that share."""
    if f.kind != "bad" or not f.title.startswith("Tail"):
        return None
    empty = waves.empty_slots_pct(profile)
    if empty is None:
        return "the occupancy counters were not collected"
    if empty < waves.BAD_IDLE:
        return f"only {empty:.1f}% of the warp slots stayed empty"
    return None


def _conflicts(profile: KernelReport, f: Finding) -> str | None:
    """Bank conflicts read from an N-way figure no access pattern allows, or that counts
    matrix instructions' wavefronts."""
    if f.kind == "info" and f.metrics.get("odd_figure"):
        return None
    direction = str(f.metrics.get("direction", ""))
    stats = getattr(profile.bank_conflicts, f"{direction}s", None)
    if stats is None:
        return None
    by_instruction = excess_pct(profile, direction)
    if f.kind == "bad" and by_instruction is not None and by_instruction < BAD_SHARE:
        return (f"only {by_instruction:.1f}% of the {direction} wavefronts are beyond each "
                "instruction's ideal (Source Counters)")
    if f.metrics.get("by_instruction"):  # read from the instructions, not the l1tex figures
        return None
    if stats.ways is not None and stats.ways > MAX_WAYS:
        return f"{stats.ways:.1f} wavefronts per instruction: no warp access takes over 32"
    if _executed(profile, (MATRIX[direction],)) and f.kind != "info":
        return f"{MATRIX[direction]} executed: its wavefronts are not counted as instructions"
    return None


def _progress(profile: KernelReport, f: Finding, previous: KernelReport | None) -> str | None:
    """A lower share (throughput, occupancy) of a kernel that got faster doing fewer
    instructions is no regression."""
    before, after = f.metrics.get("before"), f.metrics.get("after")
    if f.kind != "bad" or previous is None or not isinstance(before, float) \
            or not isinstance(after, float) or after >= before:
        return None
    old, new = previous.speed_of_light.duration_ns, profile.speed_of_light.duration_ns
    if old and new and new < old and (profile.executed_instructions or 0.0) < (
            previous.executed_instructions or 0.0):
        return (f"the kernel got {old / new:.2f}x faster with fewer instructions "
                f"({previous.executed_instructions:,.0f} -> "
                f"{profile.executed_instructions:,.0f})")
    return None


FINDING_CHECKS: dict[str, Callable[[KernelReport, Finding], str | None]] = {
    "stalls": _stall,
    "divergence": _lanes,
    "pipes": _pipe,
    "instruction_mix": _mix,
    "occupancy": _occupancy,
    "waves": _tail,
    "bank_conflicts": _conflicts,
}


# ---------------------------------------------------------------------------------------------
# fix ideas


def _at_least(measure: str, low: float, words: str) -> Callable[[KernelReport], str | None]:
    def check(profile: KernelReport) -> str | None:
        value = _read(profile, measure)
        return None if value is not None and value >= low else f"{words}: {value}"
    return check


def _below(measure: str, high: float, words: str) -> Callable[[KernelReport], str | None]:
    def check(profile: KernelReport) -> str | None:
        value = _read(profile, measure)
        return None if value is not None and value < high else f"{words}: {value}"
    return check


def _register_cap(profile: KernelReport) -> str | None:
    regs, cap = profile.launch.registers_per_thread, _read(profile, "next_block_register_cap")
    if regs is None or cap is None or cap >= regs:
        return f"a cap of {cap} registers for a kernel of {regs}"
    if cap < regs * (1.0 - REGISTER_CUT) - REGISTER_STEP:
        return f"a cap of {cap:.0f} takes more than a quarter of {regs:.0f} registers"
    if _read(profile, "spill_instructions"):
        return "the kernel already spills"
    return None


_SHARED = _at_least("shared_executed", 1.0, "shared-memory instructions executed")
_BAR = _at_least("opcode:BAR", 1.0, "BAR executed")
# fix rule -> the counters that must hold for it to fit (independent of the rule's evidence)
FIX_CHECKS: dict[str, Callable[[KernelReport], str | None]] = {
    "stop_spills": _at_least("spill_instructions", 1.0, "register spills executed"),
    "cap_registers": _register_cap,
    "wider_global_accesses": lambda p: (
        _below("global_load_lane_bytes", WIDE, "bytes per lane of the global loads")(p)
        or _below("global_excess_pct", GATHER, "excess global sectors (%)")(p)),
    "wider_shared_accesses": _SHARED,
    "wider_shared_stores": _SHARED,
    "load_shared_ahead": _SHARED,
    "pad_or_swizzle": _SHARED,
    "fit_shared_memory": _SHARED,
    "even_out_the_grid": _at_least("block_threads", SMALL_BLOCK, "threads per block"),
    "larger_tiles": _at_least("l2_reads_per_dram_read", RE_READ, "L2 reads per DRAM read"),
    "stage_in_shared_memory": _at_least("l2_reads_per_dram_read", RE_READ,
                                        "L2 reads per DRAM read"),
    "fewer_bytes": _below("local_of_memory_pct", OWN_TRAFFIC, "local share of memory (%)"),
    "synchronize_less": _BAR,
    "fewer_barrier_steps": _BAR,
    "fewer_transcendentals": _at_least("opcode:MUFU", 1.0, "MUFU executed"),
    "count_in_registers": _at_least("opcode:ATOMS", 1.0, "ATOMS executed"),
    "use_tensor_cores": _below("mma_executed", 1.0, "MMA instructions executed"),
}


def _fix(profile: KernelReport, idea: FixIdea) -> str | None:
    check = FIX_CHECKS.get(idea.rule)
    found = check(profile) if check is not None else None
    if found is None and "smaller blocks" in idea.what_if \
            and (profile.launch.block_size or 0) < SMALL_BLOCK:
        found = f"blocks of {profile.launch.block_size:.0f} threads"
    return found


# ---------------------------------------------------------------------------------------------


def _over_peak(f: Finding) -> str | None:
    """A share over 100% is stated only where it is quoted as ncu's odd figure."""
    if f.rule == "odd_figures":
        return None
    for value in PERCENT.findall(f"{f.title} {f.text}"):
        if float(value.replace(",", "")) > 100.0:
            return f"{value}% stated as a share"
    return None


def contradictions(profile: KernelReport, findings: list[Finding],
                   previous: KernelReport | None = None) -> list[Contradiction]:
    """Every sentence of these findings (titles, fix ideas) that the report (and the previous
    iteration's, for the changes since) contradicts."""
    found = []
    for f in findings:
        if f.title.startswith("Not judged"):
            continue
        check = FINDING_CHECKS.get(f.rule)
        checked = _progress(profile, f, previous) if f.rule == "progress" else \
            check(profile, f) if check is not None else None
        for why in (checked, _over_peak(f)):
            if why is not None:
                found.append(Contradiction(profile.name, f.title, why))
        for idea in f.fixes:
            why = _fix(profile, idea)
            if why is not None:
                found.append(Contradiction(profile.name, f"{idea.title} {idea.what_if}", why))
    return found


def page_contradictions(profile: KernelReport, tldr: str, fix_ideas: int,
                        pct_of_limit: float | None) -> list[Contradiction]:
    """The page's TLDR against the limit its run benched: "at the limit" only from
    `AT_LIMIT` percent of it, always from there, and then no fix idea."""
    found = []
    at = pct_of_limit is not None and pct_of_limit >= AT_LIMIT
    if ("at the limit" in tldr) != at:
        found.append(Contradiction(profile.name, tldr,
                                   f"{pct_of_limit}% of the practical limit"))
    if at and fix_ideas:
        found.append(Contradiction(profile.name, f"{fix_ideas} fix ideas",
                                   f"at {pct_of_limit:.1f}% of the practical limit"))
    estimate = re.search(r"ncu estimates up to (\d+)% speedup\)", tldr)
    if pct_of_limit is not None and estimate and float(estimate.group(1)) > 100.0 - pct_of_limit:
        found.append(Contradiction(profile.name, estimate.group(0),
                                   f"at {pct_of_limit:.1f}% of the practical limit, at most "
                                   f"{100.0 - pct_of_limit:.1f}% is left to win"))
    headroom = pipe_headroom_pct(profile)
    beyond = headroom is not None and estimate and float(estimate.group(1)) > headroom[2] + 1
    if pct_of_limit is None and beyond and headroom is not None and estimate:
        found.append(Contradiction(profile.name, estimate.group(0),
                                   f"the {headroom[0]} pipe at {headroom[1]:.1f}% of its peak "
                                   f"leaves at most {headroom[2]:.0f}% at the same instructions"))
    return found
