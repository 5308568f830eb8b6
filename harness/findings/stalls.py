"""The dominant warp stall reasons (Warp State Statistics), each told by the instructions that
carry its samples (Source Counters).

A stall reason matters when warps spend a large share of the cycles between two issued
instructions in it. ncu's CPIStall rule flags the largest; we report every reason above
`SHARE_THRESHOLD` percent of those cycles. What a reason's cycles are spent on is read from the
per-instruction PC samples (`report.stall_sites`): the class of instructions that causes at
least `CARRIES` percent of its samples (local memory, constant loads, MUFU, a WGMMA wait...)
gets its own story, with its hottest instructions and source lines; local memory is told as
register spills or as a per-thread array by ncu's count of spill instructions. Without PC
samples the reason is stated in ncu's words, and what causes it is not judged.
"""

from __future__ import annotations

import re

from harness.findings.evidence import Evidence, ev, spill_share
from harness.findings.model import Finding, fmt
from harness.report import (
    TRACED,
    Carrier,
    KernelReport,
    ReasonSites,
    Site,
    sites_by_reason,
    stall_label,
)

NAME = "stalls"
SECTION = "Warp State Statistics"
SHARE_THRESHOLD = 15.0  # percent of the cycles between two issued instructions
MIN_CYCLES = 1.0  # below one cycle per instruction a reason is noise
MAX_FINDINGS = 3
CARRIES = 50.0  # percent of a reason's samples: the class whose story is told
ALSO = 10.0  # percent of a reason's samples: another class named beside it
SPILLS = 50.0  # percent of local loads and stores that are spills: the local story is spills
SITES_SHOWN = 2

# reasons that are the issue itself or its ordinary waits: told, never a problem
INFO_REASONS = ("not_selected", "math_pipe_throttle", "wait", "dispatch_stall", "selected")
# reasons a problem is known to stand behind; the others are told as information
STALL_PROBLEMS = ("mio_throttle", "lg_throttle", "long_scoreboard", "short_scoreboard", "barrier")

# reason -> what the warps wait for, in ncu's terms (whatever instructions carry it)
MEANING: dict[str, str] = {
    "mio_throttle": "for room in the MIO (memory input/output) instruction queue",
    "lg_throttle": "for room in the L1 queue of local and global (LG) memory instructions",
    "long_scoreboard": "for the result of an L1TEX access (global, local or generic memory, "
    "an mbarrier, a texture)",
    "short_scoreboard": "for the result of an MIO operation (shared memory, constant loads, "
    "special math, shuffles)",
    "barrier": "at a barrier for the other warps (or the operations) it waits for",
    "membar": "at a memory barrier",
    "drain": "for memory stores to drain at exit",
    "not_selected": "while eligible, because the scheduler picked another warp",
    "math_pipe_throttle": "for a busy math pipeline",
    "wait": "on a fixed-latency dependency",
    "dispatch_stall": "for the dispatcher",
    "branch_resolving": "for a branch target to be computed",
    "no_instructions": "for instructions to be fetched",
    "imc_miss": "for an immediate constant cache miss",
    "warpgroup_arrive": "for the warpgroup's arrive before a WGMMA",
    "sleeping": "asleep (nanosleep)",
    "tex_throttle": "for room in the texture queue",
    "gmma": "for a warpgroup MMA (WGMMA) on the tensor cores",
}

# class -> what warps wait on when that class carries the samples
STORIES: dict[str, str] = {
    "constant": "constant loads ({ops}) of kernel parameters and launch dimensions, waiting on "
    "the constant cache",
    "global": "global-memory accesses ({ops})",
    "generic": "generic accesses ({ops}), which reach global or distributed shared memory "
    "through one address space",
    "shared": "shared-memory instructions ({ops})",
    "global_atomic": "global atomics ({ops}): each is a read-modify-write in L2",
    "mufu": "special-math instructions (MUFU: sin, cos, exp2, rsqrt, reciprocal), which issue "
    "at a quarter of the FMA rate or less",
    "conversion": "type conversions ({ops}) on the XU pipe",
    "shuffle": "warp shuffles (SHFL)",
    "special_register": "special-register reads ({ops}: thread and block indices, clocks)",
    "wgmma": "warpgroup MMAs and their waits ({ops}): the warps wait for their tensor-core "
    "work, which is how a WGMMA kernel waits on the tensor cores",
    "mbarrier": "mbarriers ({ops}): the warps wait for data that TMA or another warp group "
    "signals",
    "async_copy": "TMA and asynchronous copies and their waits ({ops})",
    "block_barrier": "block barriers (BAR: __syncthreads and named barriers)",
    "cluster_barrier": "cluster barriers (barrier.cluster: {ops})",
    "memory_barrier": "memory fences ({ops})",
    "error_barrier": "error barriers ({ops})",
    "cache_control": "cache-control instructions ({ops})",
    "mma": "warp MMAs (mma.sync: {ops})",
    "texture": "texture and surface accesses ({ops})",
    "control": "branches and control flow",
    "other": "arithmetic and register moves",
}


# a constant load whose address comes from a register (`LDC R5, c[0x3][R5]`)
INDEXED_CONSTANTS = ("indexed constant loads (LDC with a register index): lanes that read "
                     "different addresses are served one address at a time by the constant "
                     "cache")


def indexed(sites: tuple[Site, ...]) -> bool:
    """Whether most of these constant loads' samples are told by loads indexed by a
    register."""
    total = sum(s.samples for s in sites)
    by_register = sum(s.samples for s in sites if re.search(r"c\[[^]]*\]\[U?R\d", s.sass))
    return bool(total) and 2 * by_register > total


def label(reason: str) -> str:
    return stall_label(reason)


def _local_story(profile: KernelReport) -> tuple[str, str, tuple[Evidence, ...]]:
    """The local-memory story: register spills or a per-thread array, by ncu's spill count."""
    share = spill_share(profile)
    local = profile.local_memory
    measure = Evidence("spill_share_of_local_pct", ">=", SPILLS, share)
    if share is None:
        return ("local memory (LDL/STL); whether spills or a per-thread array is not judged: "
                "the spill count was not collected", "", ())
    counts = (f"{fmt(local.spill_instructions or 0.0, 0)} of the {fmt(local.instructions, 0)} "
              "local loads and stores")
    if share >= SPILLS:
        return (f"local memory holding register spills ({counts} are spills)",
                ", register spills", (measure,))
    return (f"local memory holding a per-thread array ({counts}; {fmt(100.0 - share)}% are not "
            "spills: an array indexed at run time, or too large for registers)",
            ", a per-thread array",
            (Evidence("spill_share_of_local_pct", "<", SPILLS, share),))


def _story_words(carrier: Carrier) -> str:
    """What the warps wait on, with the opcodes its samples are told by where the story names
    them."""
    story = STORIES.get(carrier.key)
    if story is None or ("{ops}" in story and not carrier.opcodes):
        return carrier.words
    return story.replace("{ops}", "/".join(carrier.opcodes))


def _site(site: Site, samples: int) -> str:
    where = f" at {site.source}" if site.source else ""
    return f"`{site.sass}`{where} ({fmt(100.0 * site.samples / samples)}%)"


def _carriers_text(sites: ReasonSites) -> str:
    """"Its 1,024 PC samples trace to: local memory (LDL/STL) 90.2% (`LDL ...` at f.cu:16
    (12.0%), ...)"."""
    named = [c for c in sites.carriers if c.share_pct >= ALSO] or list(sites.carriers[:1])
    parts = [f"{c.words} {fmt(c.share_pct)}% ("
             + ", ".join(_site(s, sites.samples) for s in c.sites[:SITES_SHOWN]) + ")"
             for c in named]
    unknown = 100.0 - sites.attributed_pct
    traced = (f"; {fmt(unknown)}% could not be traced to the instruction that causes them"
              if unknown >= 1.0 else "")
    # a sample is taken at the instruction that waits; a scoreboard, barrier, fence or drain
    # wait is traced back to the instruction it waits on (`report.stall_sites.TRACED`)
    where = "trace to" if sites.reason in TRACED else "sit at"
    return f"Its {fmt(sites.samples, 0)} PC samples {where}: " + "; ".join(parts) + traced + "."


def _story(profile: KernelReport, reason: str
           ) -> tuple[str, str, str, tuple[Evidence, ...], str | None]:
    """(words for the title, the story sentence, the samples sentence, evidence, carrier key)
    of one reason, from the classes that carry its samples."""
    sites = sites_by_reason(profile).get(reason)
    if sites is None or not sites.enough:
        count = f"only {sites.samples} PC sample{'s' * (sites.samples != 1)}" \
            if sites is not None else "no PC samples"
        return ("", f"Which instructions cause it is not judged: the report has {count} of it "
                "(Source Counters).", "", (), None)
    main = sites.carriers[0] if sites.carriers else None
    samples = _carriers_text(sites)
    if main is None or main.share_pct < CARRIES:
        return ("", "No class of instructions carries most of its samples.", samples, (), None)
    carried = (ev(profile, f"carried:{reason}:{main.key}", ">=", CARRIES),)
    head = f", at {main.words}: {fmt(main.share_pct)}% of its samples"
    if reason in INFO_REASONS:  # the warps do not wait on the class: it is what they issue
        return (head, "", samples, carried, main.key)
    if main.key == "local":
        story, kind, local = _local_story(profile)
        return (head + kind, f"The warps wait on {story}.", samples, carried + local, main.key)
    if main.key == "constant" and indexed(main.sites):
        return (head + ", indexed by register", f"The warps wait on {INDEXED_CONSTANTS}.",
                samples, carried, main.key)
    return (head, f"The warps wait on {_story_words(main)}.", samples, carried, main.key)


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    warp = profile.warp_state
    total = warp.cycles_per_issued_instruction
    if not total or not warp.stalls:
        return []
    findings: list[Finding] = []
    # "selected" is the issue cycle itself, not a stall.
    for stall in sorted(warp.stalls, key=lambda s: -s.cycles_per_issue):
        if stall.reason == "selected":
            continue
        share = 100.0 * stall.cycles_per_issue / total
        if share < SHARE_THRESHOLD or stall.cycles_per_issue < MIN_CYCLES:
            continue
        findings.append(_finding(profile, stall.reason, stall.cycles_per_issue, share, total))
        if len(findings) == MAX_FINDINGS:
            break
    return findings


def _finding(profile: KernelReport, reason: str, cycles: float, share: float,
             total: float) -> Finding:
    head, story, samples, evidence, carrier = _story(profile, reason)
    waits_for = MEANING.get(reason, f"in the '{label(reason)}' state")
    if reason == "not_selected":
        title = (f"Schedulers have spare eligible warps: {fmt(cycles)} cycles per instruction "
                 f"are 'not selected' stalls ({fmt(share)}% of {fmt(total)}).")
    else:
        title = (f"Warps stall on {label(reason)}: {fmt(cycles)} of every {fmt(total)} cycles "
                 f"between two instructions ({fmt(share)}%){head}.")
    metrics: dict[str, float | str] = {"reason": reason, "cycles": cycles, "share_pct": share,
                                       "total_cycles": total}
    if carrier is not None:
        metrics["carrier"] = carrier
    return Finding(
        rule=NAME,
        kind="bad" if reason in STALL_PROBLEMS else "info",
        title=title,
        text=f"Warps wait {fmt(cycles)} cycles per issued instruction {waits_for}: "
        f"{fmt(share)}% of the {fmt(total)} cycles between two issued instructions "
        f"({SECTION})." + "".join(f" {part}" for part in (story, samples) if part),
        section=SECTION,
        weight=share,
        metrics=metrics,
        evidence=(ev(profile, f"stall:{reason}", ">=", SHARE_THRESHOLD), *evidence),
    )
