"""The dominant warp stall reasons (Warp State Statistics).

A stall reason matters when warps spend a large share of the cycles between two issued
instructions in it. ncu's CPIStall rule flags the largest; we report every reason above
`SHARE_THRESHOLD` percent of those cycles, each with its own fix idea.
"""

from __future__ import annotations

from harness.findings import shape
from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport, stall_label

NAME = "stalls"
SECTION = "Warp State Statistics"
SHARE_THRESHOLD = 15.0  # percent of the cycles between two issued instructions
MIN_CYCLES = 1.0  # below one cycle per instruction a reason is noise
MAX_FINDINGS = 3

# reason -> (what warps wait for, kind, fix title, fix text, what if)
_REASONS: dict[str, tuple[str, str, str, str, str]] = {
    "mio_throttle": (
        "for the MIO (memory input/output) instruction queue to be not full",
        "bad",
        "Issue fewer, wider shared-memory instructions.",
        "The MIO queue fills with shared-memory (and special-math) instructions. Fewer but "
        "wider loads, or operands reused from registers, relieve it.",
        "What if each thread loaded 128-bit vectors from shared memory and reused them from "
        "registers for several outputs?",
    ),
    "long_scoreboard": (
        "on a global/local memory (L1TEX) operand",
        "bad",
        "Hide global-memory latency.",
        "Warps wait for data from global memory. Loading earlier (prefetch into registers or "
        "shared memory while computing on the previous tile) overlaps that wait with work.",
        "What if the next tile were loaded while the current one is being computed on "
        "(double buffering or cp.async)?",
    ),
    "short_scoreboard": (
        "on an MIO operand (shared memory or special math)",
        "bad",
        "Shorten the wait on shared-memory results.",
        "Warps wait for shared-memory loads to return. Loading operands for the next "
        "iteration into registers before they are needed hides that latency.",
        "What if shared-memory operands were loaded into registers one step ahead of use?",
    ),
    "barrier": (
        "at a barrier (__syncthreads) for the other warps of the block",
        "bad",
        "Synchronize less often.",
        "Warps wait at __syncthreads for slower warps of their block. Fewer barriers per tile "
        "(larger tiles, or split arrive/wait barriers) shorten those waits.",
        "What if each block synchronized once per larger tile, or overlapped loading and "
        "computing with asynchronous barriers?",
    ),
    "not_selected": (
        "while eligible, because the scheduler picked another warp",
        "info",
        "",
        "",
        "",
    ),
    "lg_throttle": (
        "for the L1 instruction queue for local and global (LG) memory operations",
        "bad",
        "Issue fewer, wider global-memory instructions.",
        "The LG queue is full of global loads. Coalesced, vectorized loads (one 128-bit load "
        "instead of four 32-bit ones) issue far fewer instructions for the same bytes.",
        "What if neighbouring threads read neighbouring addresses with 128-bit loads?",
    ),
    "math_pipe_throttle": (
        "for a busy math pipeline",
        "info",
        "",
        "",
        "",
    ),
    "wait": (
        "on a fixed-latency dependency",
        "info",
        "",
        "",
        "",
    ),
}

# reason -> (fix title, fix text, what if) for a kernel that streams rather than tiles
# (`shape.tiles`): the tiled kernel's advice speaks of tiles it does not have
_STREAMING: dict[str, tuple[str, str, str]] = {
    "long_scoreboard": (
        "Keep more bytes in flight.",
        "Warps wait for data from global memory. More independent loads per thread before "
        "the first use (unrolled, or 128-bit where the loads are narrower) put more bytes in "
        "flight per warp.",
        "What if each thread issued more independent loads before using the first of them?",
    ),
    "barrier": (
        "Synchronize less often.",
        "Warps wait at __syncthreads for slower warps of their block. Steps inside one warp "
        "need no block-wide barrier.",
        "What if the last steps ran within a warp (shuffles), so the block synchronized fewer "
        "times?",
    ),
}


def label(reason: str) -> str:
    return stall_label(reason)


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
        # reasons without a tailored explanation (drain, membar, no_instructions, ...) are
        # still reported, in ncu's own words, as information
        waits_for, kind, fix_title, fix_text, what_if = _REASONS.get(
            stall.reason, (f"in the '{stall.label}' state", "info", "", "", ""))
        if stall.reason in _STREAMING and not shape.tiles(profile):
            fix_title, fix_text, what_if = _STREAMING[stall.reason]
        cycles = fmt(stall.cycles_per_issue)
        if stall.reason == "not_selected":
            title = (f"Schedulers have spare eligible warps: {cycles} cycles per instruction are "
                     f"'not selected' stalls ({fmt(share)}% of {fmt(total)}).")
        else:
            title = (f"Warps stall on {label(stall.reason)}: {cycles} of every {fmt(total)} "
                     f"cycles between two instructions ({fmt(share)}%).")
        findings.append(
            Finding(
                rule=NAME,
                kind=kind,  # type: ignore[arg-type]
                title=title,
                text=f"Warps wait {cycles} cycles per issued instruction {waits_for}: "
                f"{fmt(share)}% of the {fmt(total)} cycles between two issued instructions "
                f"({SECTION}).",
                section=SECTION,
                fix_title=fix_title or None,
                fix_text=fix_text or None,
                what_if=what_if or None,
                weight=share,
                metrics={"reason": stall.reason, "cycles": stall.cycles_per_issue,
                         "share_pct": share, "total_cycles": total},
                evidence=(ev(profile, f"stall:{stall.reason}", ">=", SHARE_THRESHOLD),),
            )
        )
        if len(findings) == MAX_FINDINGS:
            break
    return findings
