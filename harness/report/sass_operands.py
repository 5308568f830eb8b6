"""What one SASS instruction reads and writes, from its text as ncu disassembles it.

`LDG.E.128 R4, desc[UR4][R2.64]` writes R4..R7 and reads UR4, R2 and R3; `@!P0 BRA` reads P0.
Registers are the per-thread ones (R), the uniform ones (UR) and the predicates (P, UP); the
zero registers (RZ, URZ, PT, UPT) are neither read nor written. The first operand is the
destination, except for instructions without one (stores, RED atomics, branches, barriers) and
the comparisons, whose leading predicates are theirs. Vector widths come from the opcode's
modifiers (.64, .128; LDSM's .2 and .4 matrices; an MMA's fragments) and from a register's
own suffix (`R2.64`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# opcodes that write no register (their first operand is an address or a target)
NO_DESTINATION = frozenset((
    "ST", "STG", "STL", "STS", "STSM", "STAS", "RED", "REDG", "REDAS", "BAR", "BRA", "BRX",
    "BRXU", "JMP", "JMX", "JMXU", "EXIT", "BSYNC", "BSSY", "WARPSYNC", "YIELD", "NOP", "MEMBAR",
    "ERRBAR", "FENCE", "CCTL", "CCTLL", "DEPBAR", "LDGDEPBAR", "LDGSTS", "UTMALDG", "UTMASTG",
    "UTMAPF", "UTMAREDG", "UTMACMDFLUSH", "UBLKCP", "UBLKRED", "UBLKPF", "UCGABAR_ARV",
    "UCGABAR_WAIT", "CGAERRBAR", "WARPGROUP", "WARPGROUPSET", "NANOSLEEP", "CALL", "RET",
    "ARRIVES", "ENDCOLLECTIVE", "KILL", "BREAK", "BPT", "ACQBULK", "USETMAXREG"))
# comparisons: every leading predicate operand is written, nothing else
COMPARISONS = frozenset(("ISETP", "FSETP", "DSETP", "HSETP2", "PSETP", "UISETP", "PLOP3",
                         "UPLOP3", "FCHK", "R2P"))
# a predicate written beside the register result (`SHFL.BFLY PT, R9, R6, ...`)
PREDICATE_THEN_REGISTER = frozenset(("SHFL", "ATOM", "ATOMG", "VOTE"))
# opcodes whose data operands are as wide as the access (`STG.E.128 [R2.64], R8` reads R8..R11)
WIDE_DATA = frozenset(("ST", "STG", "STL", "STS", "STAS", "RED", "REDG", "ATOM", "ATOMG",
                       "ATOMS"))
MMA = frozenset(("HMMA", "IMMA", "DMMA", "BMMA"))
# an MMA's fragments span up to four registers each; over-counting one only widens a match
MMA_FRAGMENT = 4

_REGISTER = re.compile(r"(?<![\w.])!?(UR\d+|R\d+|UP\d+|P\d+)(?:\.(64|128))?(?!\w)")
_PREDICATE = re.compile(r"!?U?P(?:\d+|T)")
_SUFFIX_WIDTH = {"64": 2, "128": 4}


@dataclass(frozen=True)
class Operands:
    """The registers one instruction writes and reads."""

    opcode: str  # with its modifiers, e.g. "LDG.E.128"
    writes: frozenset[str]
    reads: frozenset[str]

    @property
    def base(self) -> str:
        """The opcode without modifiers, e.g. "LDG"."""
        return self.opcode.split(".")[0]


def _width(opcode: str) -> int:
    """Registers per operand that the opcode's modifiers imply (1 unless a vector access)."""
    parts = opcode.split(".")
    if parts[0] in MMA:
        return MMA_FRAGMENT
    if parts[0] == "LDSM" and parts[-1] in ("2", "4"):
        return int(parts[-1])
    for modifier in parts[1:]:
        if modifier in _SUFFIX_WIDTH:
            return _SUFFIX_WIDTH[modifier]
    return 1


def _registers(operand: str, width: int) -> list[str]:
    """The registers an operand names, each widened to its vector: "R2.64" -> R2, R3."""
    found = []
    for name, suffix in _REGISTER.findall(operand):
        count = 1 if "P" in name else _SUFFIX_WIDTH.get(suffix, width)
        if count == 1:
            found.append(name)
            continue
        prefix = "UR" if name.startswith("UR") else "R"
        first = int(name[len(prefix):])
        found += [f"{prefix}{first + k}" for k in range(count)]
    return found


def _destinations(base: str, operands: list[str]) -> int:
    """How many leading operands the instruction writes."""
    if base in NO_DESTINATION or not operands:
        return 0
    if base in COMPARISONS:
        count = 0
        for operand in operands:
            if not _PREDICATE.fullmatch(operand):
                break
            count += 1
        return count
    if base in PREDICATE_THEN_REGISTER and _PREDICATE.fullmatch(operands[0]):
        return 2
    return 1


def parse(text: str) -> Operands | None:
    """The operands of one instruction's text; None for an empty text."""
    if not text.strip():
        return None
    words = text.split(None, 1)
    guard: list[str] = []
    if words[0].startswith("@"):
        guard = [words[0].lstrip("@!")]
        words = words[1].split(None, 1) if len(words) > 1 else [""]
    opcode, rest = words[0], (words[1] if len(words) > 1 else "")
    base = opcode.split(".")[0]
    operands = [o.strip() for o in rest.split(",")] if rest.strip() else []
    width = _width(opcode)
    written = _destinations(base, operands)
    writes: list[str] = []
    reads = [g for g in guard if g not in ("PT", "UPT")]
    for index, operand in enumerate(operands):
        if index < written:
            writes += _registers(operand, width)
        else:
            data = (base in WIDE_DATA and "[" not in operand) or base in MMA
            reads += _registers(operand, width if data else 1)
    return Operands(opcode, frozenset(writes), frozenset(reads))
