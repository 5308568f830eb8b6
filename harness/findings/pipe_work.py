"""What keeps a pipe busy: the executed opcodes each pipe issues, grouped by the work they do
(Instruction Statistics against Compute Workload Analysis).

From Nsight Compute's pipe descriptions: the ADU issues branches, block barriers and constant
loads; the LSU loads, stores, atomics, shuffles and special-register reads; the XU special math,
conversions and bit counts; the ALU integer and logic instructions. A busy pipe is explained by
the group that carries most of its executed instructions, and only a group that was executed is
named.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.findings import evidence
from harness.findings.model import fmt
from harness.report import KernelReport

# pipe -> group -> (words, basic opcodes)
PIPE_WORK: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "adu": {
        "branch": ("branches", ("BRA", "BRX", "BRXU", "JMP", "JMX", "JMXU", "CALL", "RET")),
        "barrier": ("block barriers", ("BAR",)),
        "constant": ("constant loads", ("LDC",)),
    },
    "lsu": {
        "global": ("global loads and stores", ("LDG", "STG")),
        "local": ("local loads and stores", ("LDL", "STL")),
        "shared": ("shared-memory accesses", ("LDS", "STS", "LDSM", "STSM")),
        "generic": ("generic loads and stores", ("LD", "ST")),
        "atomic": ("atomics", ("ATOM", "ATOMG", "ATOMS", "RED", "REDG")),
        "shuffle": ("warp shuffles", ("SHFL",)),
        "special_register": ("special-register reads", ("S2R",)),
    },
    "xu": {
        "mufu": ("special math", ("MUFU",)),
        "conversion": ("conversions", ("I2F", "F2I", "F2F", "I2FP", "F2IP", "FRND")),
        "bits": ("bit counts", ("POPC", "FLO", "BREV")),
    },
    "alu": {
        "integer": ("integer arithmetic", ("IADD3", "IABS", "IMNMX", "VIMNMX", "VIADD",
                                           "VIADDMNMX", "LEA", "ISCADD")),
        "logic": ("logic and shifts", ("LOP3", "LOP", "SHF", "SHL", "SHR", "PLOP3", "BMSK",
                                       "SGXT")),
        "compare": ("comparisons and selects", ("ISETP", "FSETP", "SEL", "FSEL", "FMNMX",
                                                "PRMT")),
        "vote": ("warp votes", ("VOTE",)),
    },
}
NAMED = 10.0  # percent of the pipe's instructions: a group named beside the main one


@dataclass(frozen=True)
class Work:
    """One group of a pipe's executed instructions."""

    key: str
    words: str
    executed: float
    share_pct: float  # of the pipe's executed instructions
    opcodes: dict[str, float]  # executed by opcode


def work_of(profile: KernelReport, pipe: str) -> list[Work]:
    """The groups of instructions `pipe` executed, most first; [] for a pipe not described."""
    groups = PIPE_WORK.get(pipe)
    if groups is None or not profile.instruction_mix:
        return []
    by_opcode = {o.opcode: o.executed for o in profile.instruction_mix if o.executed}
    found = []
    for key, (words, opcodes) in groups.items():
        counts = {op: by_opcode[op] for op in opcodes if op in by_opcode}
        if counts:
            found.append((key, words, sum(counts.values()), counts))
    total = sum(n for _, _, n, _ in found)
    return sorted((Work(key, words, n, 100.0 * n / total, counts)
                   for key, words, n, counts in found), key=lambda w: (-w.executed, w.key))


def words(work: list[Work]) -> str:
    """"block barriers (BAR, 65.2% of its instructions) and branches (BRA, 34.8%)": the
    groups named, with their opcodes and shares of the pipe's executed instructions."""
    named = [w for w in work if w.share_pct >= NAMED] or work[:1]
    parts = []
    for index, w in enumerate(named):
        ops = "/".join(op for op, _ in sorted(w.opcodes.items(), key=lambda x: -x[1])[:3])
        of = " of its instructions" if index == 0 else ""
        parts.append(f"{w.words} ({ops}, {fmt(w.share_pct)}%{of})")
    return " and ".join(parts)


def brief(work: list[Work]) -> str:
    """The groups named, in a few words: "block barriers, branches and constant loads"."""
    named = [w.words for w in work if w.share_pct >= NAMED] or [w.words for w in work[:1]]
    return ", ".join(named[:-1]) + " and " + named[-1] if len(named) > 1 else "".join(named)


def counts(work: list[Work]) -> str:
    """Every opcode of the pipe's groups with its executed count, e.g. "BAR 3,145,728"."""
    return ", ".join(f"{op} {fmt(n, 0)}" for w in work
                     for op, n in sorted(w.opcodes.items(), key=lambda x: -x[1]))


def _share(profile: KernelReport, pipe: str, key: str) -> float | None:
    work = work_of(profile, pipe)
    if not work:
        return None
    return next((w.share_pct for w in work if w.key == key), 0.0)


def _words(arg: str) -> str:
    pipe, key = arg.split(":", 1)
    return f"{PIPE_WORK[pipe][key][0]} (% of the {pipe.upper()} pipe's instructions)"


# `pipe_work:<pipe>:<group>`: the group's share of the pipe's executed instructions
evidence.PARAMETRIZED["pipe_work"] = (
    _words, lambda profile, arg: _share(profile, *arg.split(":", 1)))
