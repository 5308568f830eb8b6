"""Executed SASS opcodes grouped into classes: what the kernel spends its instructions on.

ncu counts executed warp instructions per basic opcode (`sass__inst_executed_per_opcode`);
its own categories (`sass__inst_executed_per_opcode_category`: "Load/Store", "Integer",
"Floating Point", ...) lump FP32 with FP64 and loads with stores. The classes here separate
what a kernel engineer asks about: which precision, tensor cores or not, which memory space
and direction, and the overhead (integer address arithmetic, control, conversion, moves).
Opcodes come from the CUDA binary utilities' instruction set reference (Volta to Hopper).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from harness.report.model import InstructionClass, OpcodeCount

# class name -> opcodes; an opcode belongs to one class only
CLASSES: dict[str, tuple[str, ...]] = {
    "FP32": ("FFMA", "FFMA32I", "FADD", "FADD32I", "FMUL", "FMUL32I", "FMNMX", "FSETP", "FSET",
             "FSEL", "FCHK", "FSWZADD"),
    "FP64": ("DFMA", "DADD", "DMUL", "DMNMX", "DSETP", "DSET"),
    "FP16": ("HFMA2", "HADD2", "HMUL2", "HMNMX2", "HSETP2", "HSET2"),
    "tensor": ("HMMA", "HGMMA", "IMMA", "IGMMA", "DMMA", "BMMA", "BGMMA", "QGMMA", "WARPGROUP",
               "WARPGROUPSET"),
    "transcendental (XU)": ("MUFU",),
    "integer": ("IMAD", "IMAD32I", "IMADSP", "IMUL", "IMUL32I", "IADD", "IADD3", "IADD32I",
                "IABS", "IMNMX", "ISETP", "ISCADD", "LEA", "LOP", "LOP3", "LOP32I", "SHF", "SHL",
                "SHR", "POPC", "FLO", "BREV", "BMSK", "SGXT", "IDP", "IDP4A", "VABSDIFF",
                "VABSDIFF4", "BFE", "BFI", "XMAD", "ICMP"),
    "conversion": ("F2F", "F2I", "I2F", "I2I", "I2FP", "F2IP", "F2FP", "FRND"),
    "global load": ("LDG",),
    "global store": ("STG",),
    "shared load": ("LDS", "LDSM"),
    "shared store": ("STS", "STSM"),
    "local load": ("LDL",),
    "local store": ("STL",),
    "generic load/store": ("LD", "ST"),
    "constant load": ("LDC", "ULDC"),
    "atomic": ("ATOM", "ATOMG", "ATOMS", "RED", "REDG", "REDAS", "REDUX"),
    "async copy / TMA": ("LDGSTS", "LDGDEPBAR", "UBLKCP", "UTMALDG", "UTMASTG", "UTMAPF",
                         "UTMAREDG", "UBLKRED", "UBLKPF"),
    "texture": ("TEX", "TLD", "TLD4", "TXQ", "TMML", "TXD", "SULD", "SUST", "SUATOM", "SURED"),
    # CCTL.IVALL ends a device-scope fence (MEMBAR ERRBAR CGAERRBAR CCTL.IVALL); UCGABAR_* are
    # the cluster barrier's arrive and wait, not uniform-datapath twins of another opcode
    "synchronization": ("BAR", "BSYNC", "MEMBAR", "DEPBAR", "ERRBAR", "CGAERRBAR", "CCTL",
                        "CCTLL", "SYNCS", "ARRIVES", "FENCE", "WARPSYNC", "NANOSLEEP",
                        "UCGABAR_ARV", "UCGABAR_WAIT"),
    "control": ("BRA", "BRX", "BRXU", "JMP", "JMX", "JMXU", "CALL", "RET", "EXIT", "BSSY",
                "BREAK", "BPT", "KILL", "YIELD", "NOP", "ACQBULK", "ELECT", "ENDCOLLECTIVE"),
    "data movement": ("MOV", "MOV32I", "MOVM", "SHFL", "SEL", "PRMT", "S2R", "CS2R", "S2UR",
                      "R2UR", "P2R", "R2P", "VOTE", "VOTEU", "MATCH", "PLOP3", "PSETP", "CSMTEST",
                      "B2R", "R2B", "GETLMEMBASE", "SETLMEMBASE", "LEPC", "PMTRIG"),
}

_CLASS_OF = {op: name for name, ops in CLASSES.items() for op in ops}

MATH_CLASSES = ("FP32", "FP64", "FP16", "tensor", "transcendental (XU)")
MEMORY_CLASSES = ("global load", "global store", "shared load", "shared store", "local load",
                  "local store", "generic load/store", "constant load", "atomic",
                  "async copy / TMA", "texture")


def class_of(opcode: str) -> str:
    """The class of a basic SASS opcode; uniform-datapath twins (UIADD3, UMOV, ULDC...) join
    their vector class's overhead as "uniform", anything unknown is "other"."""
    if opcode in _CLASS_OF:
        return _CLASS_OF[opcode]
    if opcode.startswith("U") and len(opcode) > 1:
        return "uniform"
    return "other"


def classify(mix: Iterable[OpcodeCount]) -> tuple[InstructionClass, ...]:
    """Executed instructions per class with shares of all executed ones, most first."""
    executed: dict[str, float] = {}
    opcodes: dict[str, list[tuple[float, str]]] = {}
    for count in mix:
        name = class_of(count.opcode)
        executed[name] = executed.get(name, 0.0) + count.executed
        opcodes.setdefault(name, []).append((count.executed, count.opcode))
    total = sum(executed.values())
    classes = [
        InstructionClass(
            name=name,
            executed=n,
            share_pct=100.0 * n / total if total else 0.0,
            opcodes=tuple(op for _, op in sorted(opcodes[name], key=lambda t: (-t[0], t[1]))),
        )
        for name, n in executed.items()
    ]
    classes.sort(key=lambda c: (-c.executed, c.name))
    return tuple(classes)


def shares(classes: Iterable[InstructionClass]) -> Mapping[str, float]:
    return {c.name: c.share_pct for c in classes}
