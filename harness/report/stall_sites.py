"""Which instructions carry each warp stall reason: the per-PC stall samples of the Source
Counters, told by the class of instruction that causes them.

A PC sample records the instruction a warp is stalled at. For most reasons that instruction is
the cause: a load waiting for room in its queue (MIO or LG throttle), a MUFU, a WGMMA wait
(`WARPGROUP.DEPBAR`), an mbarrier try-wait, a cluster barrier wait. For a scoreboard wait it is
the consumer: the cause is the earlier variable-latency instruction whose result it reads, or
whose operand it would overwrite before that instruction has read it, found by walking back
through the instructions (`sass_operands`). A block barrier lets the warp run on to the first
instruction that needs it, so its samples go to the nearest BAR before them; a membar wait goes
to the fence before it (told by its MEMBAR); the drain at exit goes to the stores still in
flight. Those reasons (`TRACED`) are traced to another instruction; the others are told by the
instruction they were sampled at.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from harness.report.model import KernelReport, SassInstruction
from harness.report.sass_operands import Operands, parse

# class key -> (its name on the pages, basic opcodes); an opcode belongs to one class. The pages
# name a class by the opcodes its samples are told by ("shared memory (LDSM)"), not by the whole
# list.
SITE_CLASSES: dict[str, tuple[str, tuple[str, ...]]] = {
    "constant": ("constant loads", ("LDC", "ULDC")),
    "local": ("local memory", ("LDL", "STL")),
    "global": ("global memory", ("LDG", "STG")),
    "generic": ("generic loads and stores", ("LD", "ST")),
    "shared": ("shared memory", ("LDS", "STS", "LDSM", "STSM", "STAS", "ATOMS")),
    "global_atomic": ("global atomics", ("ATOM", "ATOMG", "RED", "REDG", "REDAS")),
    "mufu": ("special math", ("MUFU",)),
    "conversion": ("conversions", ("I2F", "F2I", "F2F", "I2FP", "F2IP", "FRND")),
    "shuffle": ("warp shuffles", ("SHFL",)),
    "special_register": ("special-register reads", ("S2R", "S2UR")),
    "wgmma": ("warpgroup MMAs and their waits",
              ("HGMMA", "QGMMA", "IGMMA", "BGMMA", "WARPGROUP")),
    "mbarrier": ("mbarrier waits", ("SYNCS", "NANOSLEEP")),
    "async_copy": ("TMA and asynchronous copies",
                   ("UTMALDG", "UTMASTG", "UTMAPF", "UTMACMDFLUSH", "UBLKCP", "LDGSTS",
                    "LDGDEPBAR", "DEPBAR")),
    "block_barrier": ("block barriers", ("BAR",)),
    "cluster_barrier": ("cluster barriers", ("UCGABAR_ARV", "UCGABAR_WAIT")),
    "memory_barrier": ("memory barriers", ("MEMBAR", "FENCE")),
    # a device-scope fence on sm_90 is MEMBAR.SC.GPU, ERRBAR, CGAERRBAR (the CGA's error barrier,
    # no cluster barrier), CCTL.IVALL (cache control)
    "error_barrier": ("error barriers", ("ERRBAR", "CGAERRBAR")),
    "cache_control": ("cache control", ("CCTL", "CCTLL")),
    "mma": ("warp MMAs", ("HMMA", "IMMA", "DMMA", "BMMA")),
    "texture": ("texture and surface accesses", ("TEX", "TLD", "TLD4", "TXQ", "SULD", "SUST")),
    "control": ("branches and control", ("BRA", "BRX", "JMP", "BSSY", "BSYNC", "CALL", "RET",
                                         "EXIT", "WARPSYNC", "YIELD", "ELECT")),
}
OTHER = "other"  # arithmetic and moves: everything no class above names
# opcodes whose first modifier names the instruction (a WGMMA wait is WARPGROUP.DEPBAR, its
# arrive WARPGROUP.ARRIVE; an mbarrier try-wait SYNCS.PHASECHK): the pages name them with it
_NAMED_BY_MODIFIER = frozenset(("WARPGROUP", "SYNCS"))
_CLASS_OF = {op: key for key, (_, ops) in SITE_CLASSES.items() for op in ops}

# the variable-latency instructions each scoreboard waits on: those that write a register
# late, or read one late (stores, atomics and loads read their operands when they leave the
# queue)
LONG_SCOREBOARD = frozenset(("LDG", "LDL", "LD", "ATOM", "ATOMG", "RED", "REDG", "STG", "STL",
                             "ST", "TEX", "TLD", "TLD4", "SULD", "SUST", "SYNCS", "LDGSTS"))
SHORT_SCOREBOARD = frozenset(("LDS", "LDSM", "ATOMS", "STS", "STSM", "STAS", "LDC", "ULDC",
                              "MUFU", "SHFL", "S2R", "S2UR", "I2F", "F2I", "F2F", "I2FP",
                              "F2IP", "FRND", "POPC", "FLO", "BREV", "REDUX", "MATCH", "BAR"))
_READ_LATE = frozenset(("STG", "STL", "ST", "RED", "REDG", "ATOM", "ATOMG", "STS", "STSM",
                        "ATOMS", "STAS", "LDG", "LDL", "LD", "LDS", "LDGSTS"))
# how far back a cause is looked for: a producer further away has long completed
SCOREBOARD_REACH = 256
BARRIER_REACH = 32
DRAIN_REACH = 64
# the instructions a barrier stall waits at itself (a WGMMA wait, a cluster barrier's wait, an
# mbarrier try-wait, which suspends the warp until the phase completes); a BAR lets the warp
# run on to the first instruction that needs it
WAITING = frozenset(("WARPGROUP", "UCGABAR_WAIT", "DEPBAR"))
MBARRIER_WAIT = "SYNCS.PHASECHK"
BARRIERS = frozenset(("BAR", "WARPGROUP", "UCGABAR_WAIT", "DEPBAR"))
# the reasons whose samples are traced back to the instruction they wait on (`_cause`)
TRACED = frozenset(("long_scoreboard", "short_scoreboard", "barrier", "membar", "drain"))
MEMORY_BARRIERS = frozenset(("MEMBAR", "FENCE"))
ERROR_BARRIERS = frozenset(("ERRBAR", "CGAERRBAR"))
STORES = frozenset(("STG", "ST", "STL", "STS", "RED", "REDG", "ATOM", "ATOMG", "UTMASTG"))
TOP_SITES = 3
# fewer samples of a reason than this say nothing of where its time goes
MIN_SAMPLES = 20


@dataclass(frozen=True)
class Site:
    """One instruction that causes samples of a reason, and how many."""

    pc: int
    sass: str
    source: str | None  # "file.cu:42" with line info
    samples: int


@dataclass(frozen=True)
class Carrier:
    """One class of instructions and the samples of a reason it causes."""

    key: str  # a key of SITE_CLASSES, or OTHER
    samples: int
    share_pct: float  # of the reason's samples
    sites: tuple[Site, ...]  # the instructions with most samples, most first
    opcodes: tuple[str, ...]  # the opcodes of all its sites, most samples first

    @property
    def words(self) -> str:
        """The class and the opcodes that carry its samples: "shared memory (LDSM)"."""
        if self.key == OTHER or not self.opcodes:
            return site_words(self.key)
        return f"{site_words(self.key)} ({'/'.join(self.opcodes)})"


@dataclass(frozen=True)
class ReasonSites:
    """The samples of one stall reason and the classes of instructions that cause them."""

    reason: str
    samples: int
    carriers: tuple[Carrier, ...]  # most samples first; unattributed samples are in none

    @property
    def enough(self) -> bool:
        """Whether there are samples enough to say which instructions carry the reason."""
        return self.samples >= MIN_SAMPLES

    @property
    def attributed_pct(self) -> float:
        """The share of the reason's samples whose causing instruction was found."""
        return sum(c.share_pct for c in self.carriers)

    def share(self, key: str) -> float:
        """The share of the reason's samples that class `key` causes, in percent."""
        return next((c.share_pct for c in self.carriers if c.key == key), 0.0)

    def carrier(self, key: str) -> Carrier | None:
        return next((c for c in self.carriers if c.key == key), None)


def site_words(key: str) -> str:
    """How the pages name a class of instructions."""
    return SITE_CLASSES[key][0] if key in SITE_CLASSES else "arithmetic and moves"


def site_class(operands: Operands | None) -> str:
    """The class key of an instruction (OTHER for arithmetic, moves and unknown opcodes)."""
    if operands is None:
        return OTHER
    return _CLASS_OF.get(operands.base, OTHER)


def _scoreboard_cause(code: Sequence[Operands | None], at: int,
                      kinds: frozenset[str]) -> int | None:
    """The nearest earlier variable-latency instruction of `kinds` whose result the
    instruction at `at` reads, or whose operand it overwrites (loops: the walk wraps around
    to the end of the kernel)."""
    consumer = code[at]
    if consumer is None:
        return None
    needed, overwritten = set(consumer.reads), consumer.writes
    count = len(code)
    for step in range(1, min(SCOREBOARD_REACH, count)):
        earlier = code[(at - step) % count]
        if earlier is None:
            continue
        if earlier.base in kinds:
            if earlier.writes & needed:
                return (at - step) % count
            if earlier.base in _READ_LATE and earlier.reads & overwritten:
                return (at - step) % count
        needed -= earlier.writes  # written since by a fixed-latency instruction: not waited on
        if not needed and not overwritten:
            return None
    return None


def _nearest_before(code: Sequence[Operands | None], at: int, bases: frozenset[str],
                    reach: int) -> int | None:
    for index in range(at, max(-1, at - reach - 1), -1):
        found = code[index]
        if found is not None and found.base in bases:
            return index
    return None


def _fence_waited_on(code: Sequence[Operands | None], at: int) -> int | None:
    """The barrier a membar wait at `at` waits on: the nearest run of fence instructions
    (MEMBAR ERRBAR CGAERRBAR, as a device-scope fence compiles), told by its MEMBAR or FENCE
    where the run has one, else by its nearest error barrier (one of its own, not a MEMBAR of
    an earlier fence)."""
    parts = MEMORY_BARRIERS | ERROR_BARRIERS
    nearest = _nearest_before(code, at, parts, BARRIER_REACH)
    if nearest is None:
        return None
    for index in range(nearest, -1, -1):  # back through the run, never round the kernel's end
        found = code[index]
        if found is None or found.base not in parts:
            break
        if found.base in MEMORY_BARRIERS:
            return index
    return nearest


def _cause(code: Sequence[Operands | None], at: int, reason: str) -> int | None:
    """The index of the instruction that causes a sample of `reason` taken at `at`."""
    here = code[at]
    if reason == "long_scoreboard":
        return _scoreboard_cause(code, at, LONG_SCOREBOARD)
    if reason == "short_scoreboard":
        return _scoreboard_cause(code, at, SHORT_SCOREBOARD)
    if reason == "barrier":
        if here is not None and (here.base in WAITING
                                 or here.opcode.startswith(MBARRIER_WAIT)):
            return at
        return _nearest_before(code, at - 1, BARRIERS, BARRIER_REACH) if at else None
    if reason == "membar":
        return _fence_waited_on(code, at)
    if reason == "drain":
        return _nearest_before(code, at, STORES, DRAIN_REACH)
    return at if here is not None else None


def _carriers(instructions: Sequence[SassInstruction], code: Sequence[Operands | None],
              reason: str) -> ReasonSites:
    by_site: dict[int, int] = {}
    total = 0
    for at, instruction in enumerate(instructions):
        samples = instruction.stall_samples.get(reason, 0)
        if not samples:
            continue
        total += samples
        cause = _cause(code, at, reason)
        if cause is not None:
            by_site[cause] = by_site.get(cause, 0) + samples
    grouped: dict[str, list[Site]] = {}
    by_opcode: dict[str, dict[str, int]] = {}
    for index, samples in by_site.items():
        instruction, operands = instructions[index], code[index]
        key = site_class(operands)
        grouped.setdefault(key, []).append(
            Site(instruction.pc, instruction.sass, instruction.source, samples))
        if operands is not None:
            name = (".".join(operands.opcode.split(".")[:2])
                    if operands.base in _NAMED_BY_MODIFIER else operands.base)
            opcodes = by_opcode.setdefault(key, {})
            opcodes[name] = opcodes.get(name, 0) + samples
    carriers = []
    for key, sites in grouped.items():
        count = sum(s.samples for s in sites)
        ranked = sorted(sites, key=lambda s: (-s.samples, s.pc))[:TOP_SITES]
        opcodes = sorted(by_opcode.get(key, {}).items(), key=lambda item: (-item[1], item[0]))
        carriers.append(Carrier(key, count, 100.0 * count / total, tuple(ranked),
                                tuple(op for op, _ in opcodes)))
    carriers.sort(key=lambda c: (-c.samples, c.key))
    return ReasonSites(reason, total, tuple(carriers))


# Warp-state reasons whose PC samples are recorded under another name: `gmma` (a warp waits for
# its warpgroup's WGMMA work) is sampled as `warpgroup_arrive` (a WGMMA or WARPGROUP.DEPBAR
# waiting on the warpgroup's WARPGROUP.ARRIVE); ncu's Warpgroup Arrive rule reports the `gmma`
# cycles as those stalls.
SAMPLED_AS = {"gmma": "warpgroup_arrive"}

# the sites of the last profiles asked about: rules, evidence and the oracle ask again
_KEPT: OrderedDict[int, tuple[tuple[SassInstruction, ...], Mapping[str, ReasonSites]]] = \
    OrderedDict()
_KEEP = 16


def sites_by_reason(profile: KernelReport) -> Mapping[str, ReasonSites]:
    """Each sampled stall reason (not `selected`, the issue itself), and each warp-state reason
    sampled under another name (`SAMPLED_AS`) -> the classes of the instructions that cause its
    samples; empty without PC sampling."""
    kept = _KEPT.get(id(profile.sass))
    if kept is not None and kept[0] is profile.sass:
        _KEPT.move_to_end(id(profile.sass))
        return kept[1]
    instructions = profile.sass
    code = [parse(i.sass) for i in instructions]
    reasons = sorted({r for i in instructions for r, n in i.stall_samples.items() if n}
                     - {"selected"})
    found = {reason: _carriers(instructions, code, reason) for reason in reasons}
    for reason, sampled in SAMPLED_AS.items():
        if sampled in found and reason not in found:
            found[reason] = replace(found[sampled], reason=reason)
    _KEPT[id(profile.sass)] = (instructions, found)
    while len(_KEPT) > _KEEP:
        _KEPT.popitem(last=False)
    return found
