"""Fix ideas for what the warps wait on: each answers a stall told by the class of
instructions that carries its samples, or the finding that names the same work (spills,
per-thread arrays, atomics, barriers, shuffles, polling, distributed shared memory)."""

from __future__ import annotations

from harness.findings.evidence import Evidence, ev
from harness.findings.fixes.base import FixRule, carried, carried_by, carrier
from harness.findings.model import Finding, FixIdea
from harness.findings.occupancy_limits import MAX_REGISTERS
from harness.report import KernelReport

CARRIES = 50.0  # percent of a stall's samples at the class a fix idea is about
NARROW = 50.0  # percent of accesses wider than 32 bits: below it most are 32-bit
RE_READ = 3.0  # shared loads per shared store from which a block re-reads what it stages
SPILLS = 50.0  # percent of local loads and stores that are spills
LITTLE_WORK = 64.0  # warp instructions per warp: a warp does little beyond its prologue


def stop_spills(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Registers spill to local memory, and the register file has room for more per thread."""
    if finding.rule != "spills" and not carried_by(
            finding, ("long_scoreboard", "lg_throttle"), "local"):
        return None
    stall = (carried(profile, finding, CARRIES),) if finding.rule == "stalls" else ()
    return FixIdea(
        "stop_spills", "Stop the register spills.",
        "Spilled values round-trip through L1 and, once evicted, L2 and DRAM; every spill "
        "load waits as long as a global load.",
        "What if the register bound were raised (a smaller second __launch_bounds__ argument, "
        "or none), or each thread kept fewer values live (a smaller per-thread tile), so that "
        "nothing spills?",
        (*stall, ev(profile, "spill_instructions", ">", 0.0),
         ev(profile, "spill_share_of_local_pct", ">=", SPILLS),
         ev(profile, "registers_per_thread", "<", MAX_REGISTERS)))


def array_out_of_local_memory(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """A per-thread array lives in local memory (not spills)."""
    if finding.rule != "local_arrays" and not carried_by(
            finding, ("long_scoreboard", "lg_throttle"), "local"):
        return None
    stall = (carried(profile, finding, CARRIES),) if finding.rule == "stalls" else ()
    return FixIdea(
        "array_out_of_local_memory", "Keep the array in registers or shared memory.",
        "An array indexed with run-time values cannot live in registers, so every access "
        "goes through L1 and, on a miss, L2 and DRAM.",
        "What if the loops indexing the array were fully unrolled (constant indices), or the "
        "table moved to shared memory?",
        (*stall, ev(profile, "local_instructions", ">", 0.0),
         ev(profile, "spill_share_of_local_pct", "<", SPILLS)))


def wider_shared_accesses(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """The MIO queue (or its results) wait on scalar shared loads a block re-reads."""
    if not carried_by(finding, ("mio_throttle", "short_scoreboard"), "shared"):
        return None
    return FixIdea(
        "wider_shared_accesses", "Issue fewer, wider shared-memory loads.",
        "Most shared loads are 32-bit and the block re-reads what it staged: one 128-bit load "
        "brings four operands for one MIO slot.",
        "What if each thread loaded 128-bit vectors from shared memory and reused them from "
        "registers for several outputs?",
        (carried(profile, finding, CARRIES), ev(profile, "vector:shared_load", "<", NARROW),
         ev(profile, "tiles", ">=", 1.0)))


def load_shared_ahead(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Warps wait on shared loads of a tiled kernel: load the next operands one step early."""
    if not carried_by(finding, ("short_scoreboard",), "shared"):
        return None
    return FixIdea(
        "load_shared_ahead", "Load shared operands one step ahead.",
        "Warps wait for shared-memory loads to return; loading the next step's operands into "
        "registers before they are needed hides that latency.",
        "What if shared-memory operands were loaded into registers one step ahead of use "
        "(a second register fragment)?",
        (carried(profile, finding, CARRIES), ev(profile, "tiles", ">=", 1.0)))


def table_out_of_constant_memory(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Warps wait on constant loads indexed by a register: lanes reading different entries."""
    if not carried_by(finding, ("mio_throttle", "short_scoreboard", "imc_miss"), "constant") \
            or "indexed" not in finding.title:
        return None
    return FixIdea(
        "table_out_of_constant_memory", "Move the indexed table out of constant memory.",
        "The constant cache serves one address at a time: a warp whose lanes index a table "
        "at different entries waits for each in turn.",
        "What if the table were copied into shared memory (or registers, for a small one) "
        "once per block, where 32 lanes read 32 entries at once?",
        (carried(profile, finding, CARRIES),))


def amortize_the_prologue(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Warps wait on the constant loads of their launch (parameters, block size) because each
    does little else."""
    if not carried_by(finding, ("short_scoreboard", "imc_miss"), "constant") \
            or "indexed" in finding.title:
        return None
    return FixIdea(
        "amortize_the_prologue", "Give each warp more work.",
        "The warps wait on loads of the kernel's parameters and launch dimensions, which every "
        "warp does once: a warp that does little else spends its time on them.",
        "What if each thread handled several elements (a grid-stride loop over fewer blocks), "
        "so that one prologue serves them all?",
        (carried(profile, finding, CARRIES),
         ev(profile, "warp_instructions_per_warp", "<=", LITTLE_WORK)))


def fewer_transcendentals(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """The MIO queue, or the XU pipe, is full of MUFU instructions."""
    if finding.rule == "pipes":
        if finding.metrics.get("pipe") != "xu" or finding.metrics.get("work") != "mufu":
            return None
        because: tuple[Evidence, ...] = (ev(profile, "pipe_work:xu:mufu", ">=", CARRIES),)
    elif carried_by(finding, ("mio_throttle", "short_scoreboard"), "mufu"):
        because = (carried(profile, finding, CARRIES),)
    else:
        return None
    return FixIdea(
        "fewer_transcendentals", "Call fewer transcendental functions.",
        "MUFU (sin, cos, exp2, rsqrt, reciprocal) issues at a quarter of the FMA rate or less "
        "and queues in the MIO.",
        "What if the transcendental calls were hoisted out of the loop, replaced by "
        "identities (sin/cos of a sum from one sincos), or by a polynomial on the FMA pipe?",
        (*because, ev(profile, "opcode:MUFU", ">", 0.0)))


def synchronize_less(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Warps wait at block barriers (BAR)."""
    if finding.rule == "synchronization" and finding.metrics.get("kind") == "Block barriers":
        because: tuple[Evidence, ...] = ()
    elif carried_by(finding, ("barrier", "mio_throttle"), "block_barrier"):
        because = (carried(profile, finding, CARRIES),)
    else:
        return None
    return FixIdea(
        "synchronize_less", "Synchronize less often.",
        "Every warp waits at a barrier for the slowest one of its block; little work between "
        "barriers leaves the SM waiting most of the time.",
        "What if each barrier covered more work (several steps per __syncthreads), or warps "
        "that only exchange data among themselves used __syncwarp?",
        (*because, ev(profile, "opcode:BAR", ">", 0.0)))


def split_cluster_barrier(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Warps wait at cluster barriers and their fences."""
    if finding.rule == "synchronization" and finding.metrics.get("kind") == "Cluster barriers":
        because: tuple[Evidence, ...] = ()
    elif carried_by(finding, ("barrier", "membar"), "cluster_barrier") or carried_by(
            finding, ("membar",), "memory_barrier"):
        because = (carried(profile, finding, CARRIES),)
    else:
        return None
    return FixIdea(
        "split_cluster_barrier", "Split the cluster barrier.",
        "A cluster barrier waits for every block of the cluster and fences memory first.",
        "What if arrive and wait were split (barrier.cluster.arrive.relaxed early, wait just "
        "before the data is needed), so the fence and the wait overlap with work?",
        (*because, ev(profile, "opcode:UCGABAR_WAIT", ">", 0.0)))


def sleep_while_polling(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Warps spin on volatile loads."""
    if finding.rule != "synchronization" or finding.metrics.get("kind") != "polling":
        return None
    return FixIdea(
        "sleep_while_polling", "Wait without spinning.",
        "A spinning warp issues load after load that returns the same value, taking issue "
        "slots and memory bandwidth from the warps that do the work.",
        "What if the waiting warps slept between polls (__nanosleep with backoff), waited on "
        "a barrier or an mbarrier (try_wait), or the work were split into two kernels?",
        (ev(profile, "strong_load_share_pct", ">", 0.0), ev(profile, "opcode:YIELD", ">", 0.0)))


def aggregate_global_atomics(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Global atomics serialize in one L2 slice, or scatter over many sectors."""
    if finding.rule == "atomics" and finding.metrics.get("space") != "shared":
        because: tuple[Evidence, ...] = ()
    elif carrier(finding) is not None and carrier(finding)[1] == "global_atomic":
        because = (carried(profile, finding, CARRIES),)
    else:
        return None
    return FixIdea(
        "aggregate_global_atomics", "Aggregate before the atomic.",
        "Each global atomic is a read-modify-write in the L2 slice that owns its address: "
        "updates of one word wait for each other, scattered ones cost a sector each.",
        "What if each warp (or block) first combined its updates (warp shuffles, a "
        "shared-memory histogram) and only one lane per word issued the atomic, or each block "
        "wrote a partial result for a second pass?",
        (*because, ev(profile, "global_atomic_share_pct", ">", 0.0)))


def count_in_registers(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Shared-memory atomics dominate."""
    if finding.rule != "atomics" or finding.metrics.get("space") != "shared":
        return None
    return FixIdea(
        "count_in_registers", "Count in registers first.",
        "Each shared atomic is a read-modify-write in the block's shared memory; lanes that "
        "hit the same word are serialized.",
        "What if each thread (or warp, with __match_any_sync / __reduce_add_sync) accumulated "
        "its updates in registers and issued one atomic per distinct bin?",
        (ev(profile, "opcode:ATOMS", ">", 0.0),))


def exchange_less(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Warp shuffles or votes dominate, or warps wait on shuffles."""
    if finding.rule == "warp_primitives":
        opcode = str(finding.metrics.get("opcode"))
        because: tuple[Evidence, ...] = (ev(profile, f"opcode:{opcode}", ">", 0.0),)
    elif carried_by(finding, ("short_scoreboard", "mio_throttle"), "shuffle"):
        opcode = "SHFL"
        because = (carried(profile, finding, CARRIES), ev(profile, "opcode:SHFL", ">", 0.0))
    else:
        return None
    what_if = {
        "SHFL": "What if each shuffle carried more work (reduce several values in registers "
        "first, shuffle once per many elements), or an integer sum across the warp used "
        "__reduce_add_sync (REDUX)?",
        "VOTE": "What if the predicate were voted on less often (once per several elements, or "
        "hoisted out of the loop)?",
        "MATCH": "What if lanes were grouped by key once (a sort or a hash) rather than matched "
        "on every step?",
    }
    return FixIdea(
        "exchange_less", "Exchange less within the warp.",
        f"Each {opcode} costs an issue slot and a trip through its pipe for data the lanes "
        "already hold; the kernel's arithmetic waits behind them.",
        what_if.get(opcode, what_if["SHFL"]), because)


def copy_peer_once(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Distributed-shared-memory reads dominate, or warps wait on them."""
    if finding.rule == "clusters" and finding.kind == "bad":
        because: tuple[Evidence, ...] = (ev(profile, "dsmem_share_pct", ">", 0.0),)
    elif carried_by(finding, ("long_scoreboard", "lg_throttle"), "generic"):
        because = (carried(profile, finding, CARRIES), ev(profile, "dsmem_share_pct", ">", 0.0))
    else:
        return None
    return FixIdea(
        "copy_peer_once", "Copy the peer's data once.",
        "A DSMEM access costs a round trip to another SM, far slower than the local shared "
        "memory; data read many times is better copied into the block's own shared memory "
        "once (or pushed there by the producer) than read remotely each time.",
        "What if each block copied the peer's tile into its own shared memory in one bulk "
        "step (cp.async.bulk shared::cluster, or vectorized remote loads) and then read it "
        "locally?", (*because, ev(profile, "cluster_size", ">", 1.0)))


RULES = tuple(FixRule(f.__name__, answers, f) for f, answers in (
    (stop_spills, ("spills", "stalls")),
    (array_out_of_local_memory, ("local_arrays", "stalls")),
    (wider_shared_accesses, ("stalls",)),
    (load_shared_ahead, ("stalls",)),
    (table_out_of_constant_memory, ("stalls",)),
    (amortize_the_prologue, ("stalls",)),
    (fewer_transcendentals, ("stalls", "pipes")),
    (synchronize_less, ("stalls", "synchronization")),
    (split_cluster_barrier, ("stalls", "synchronization")),
    (sleep_while_polling, ("synchronization",)),
    (aggregate_global_atomics, ("atomics", "stalls")),
    (count_in_registers, ("atomics",)),
    (exchange_less, ("warp_primitives", "stalls")),
    (copy_peer_once, ("clusters", "stalls")),
))
