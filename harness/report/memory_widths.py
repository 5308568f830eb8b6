"""Memory instruction widths from SASS opcodes with modifiers.

`sass__inst_executed_per_opcode_with_modifier_all` counts executed warp instructions per full
opcode (`LDG.E.128`, `LDS.U.128`, `STS.64`, `LDGSTS.E.BYPASS.128`, `LDL`, ...). The base opcode
gives the memory space and direction; a width modifier (8/16/32/64/128, U8/S16/F64, ...) the
bits per thread, 32 when there is none. This is how "no reads are vectorized" gets numbers.
"""

from __future__ import annotations

import re

from harness.report.model import AccessKind, MemoryAccessWidth, MemorySpace

# base opcode -> (space, kind). LD/ST use generic addresses (global or shared at run time).
OPCODE_SPACES: dict[str, tuple[MemorySpace, AccessKind]] = {
    "LDG": ("global", "load"),
    "STG": ("global", "store"),
    "LDGSTS": ("global", "load"),  # async copy global -> shared: the global read is the load
    "LDS": ("shared", "load"),
    "LDSM": ("shared", "load"),
    "STS": ("shared", "store"),
    "LDL": ("local", "load"),
    "STL": ("local", "store"),
    "LDC": ("constant", "load"),
    "ULDC": ("constant", "load"),
    "LD": ("generic", "load"),
    "ST": ("generic", "store"),
    "ATOM": ("generic", "atomic"),
    "ATOMG": ("global", "atomic"),
    "RED": ("global", "atomic"),
    "REDG": ("global", "atomic"),
    "ATOMS": ("shared", "atomic"),
}

_WIDTH = re.compile(r"^(?:[USFB]?)(8|16|32|64|128)$")
# LDSM.16.M88.4 loads four 8x8 matrices: 4 registers (128 bits) per thread; .2 -> 64; else 32.
_LDSM_COUNT_BITS = {"4": 128, "2": 64, "1": 32}


def classify_opcode(opcode: str) -> tuple[MemorySpace, AccessKind, int] | None:
    """(space, kind, width in bits) of a SASS opcode with modifiers, None if not a memory op."""
    base, *modifiers = opcode.split(".")
    target = OPCODE_SPACES.get(base)
    if target is None:
        return None
    if base == "LDSM":
        bits = _LDSM_COUNT_BITS.get(modifiers[-1] if modifiers else "1", 32)
        return target[0], target[1], bits
    bits = 32
    for modifier in modifiers:
        match = _WIDTH.match(modifier)
        if match:
            bits = int(match.group(1))
    return target[0], target[1], bits


def access_widths(counts: dict[str, float]) -> tuple[MemoryAccessWidth, ...]:
    """Executed memory instructions grouped by (space, kind, width), most executed first."""
    totals: dict[tuple[MemorySpace, AccessKind, int], float] = {}
    for opcode, executed in counts.items():
        classified = classify_opcode(opcode)
        if classified is None:
            continue
        totals[classified] = totals.get(classified, 0.0) + float(executed)
    accesses = [
        MemoryAccessWidth(space=space, kind=kind, width_bits=bits, executed=executed)
        for (space, kind, bits), executed in totals.items()
    ]
    accesses.sort(key=lambda a: (-a.executed, a.space, a.kind, a.width_bits))
    return tuple(accesses)
