"""Thread-block clusters and distributed shared memory (DSMEM): the cluster shape, the loads,
stores and atomics a block sends to another block's shared memory over the SM-to-SM network
(`l1tex__t_{requests,sectors}_pipe_lsu_mem_dshared_op_*`) (Memory Workload Analysis), and the
cluster's own instructions in the SASS, at their source lines: TMA copies multicast to several
blocks, mbarrier arrivals through a cluster address (a barrier of this block or another's) and
cluster barriers. A report without the DSMEM counters leaves that traffic not judged.
"""

from __future__ import annotations

import re

from harness.findings import evidence
from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "clusters"
SECTION = "Memory Workload Analysis"
DOMINANT = 10.0  # DSMEM requests, percent of executed warp instructions
CLUSTER_SIZE = "launch__cluster_size"
OPS = {"ld": "loads", "st": "stores", "atom": "atomics", "redas": "remote adds"}
SECTOR_BYTES = 32
# The instructions that carry a cluster's traffic, by their SASS opcode: a TMA copy with
# .multicast::cluster, mbarrier.arrive on a shared::cluster address (SYNCS.ARRIVE...RED; an
# arrival on this block's own barrier is plain SYNCS.ARRIVE), barrier.cluster.
CLUSTER_INSTRUCTIONS = (
    ("multicast TMA copies", re.compile(r"UTMA\w*(\.\w+)*\.MULTICAST\b")),
    ("mbarrier arrivals through a cluster address", re.compile(r"SYNCS\.ARRIVE(\.\w+)*\.RED\b")),
    ("cluster barriers", re.compile(r"UCGABAR_\w+")),
)
MAX_LINES = 3  # source lines named per kind of instruction


def dsmem(profile: KernelReport) -> dict[str, tuple[float, float]]:
    """DSMEM operation -> (warp-level requests, sectors), where any were made."""
    found = {}
    for op in OPS:
        requests = profile.metric(f"l1tex__t_requests_pipe_lsu_mem_dshared_op_{op}.sum")
        sectors = profile.metric(f"l1tex__t_sectors_pipe_lsu_mem_dshared_op_{op}.sum")
        if requests:
            found[op] = (requests, sectors or 0.0)
    return found


def dsmem_counted(profile: KernelReport) -> bool:
    """Whether the report has any of the DSMEM counters (a set without them says nothing)."""
    return any(profile.metric(f"l1tex__t_requests_pipe_lsu_mem_dshared_op_{op}.sum") is not None
               for op in OPS)


def _file_and_line(source: str) -> tuple[str, int]:
    """"k.cu:42" -> ("k.cu", 42), so that line 9 comes before line 10."""
    file, _, line = source.rpartition(":")
    return (file, int(line)) if line.isdigit() else (source, 0)


def cluster_instructions(profile: KernelReport) -> dict[str, str]:
    """Each kind of cluster instruction the kernel executed -> how many, by which opcodes at
    which source lines: "65,536 executed (`UTMALDG.2D.MULTICAST` at k.cu:53)"."""
    named = {}
    for label, pattern in CLUSTER_INSTRUCTIONS:  # guarded ones too: an elected thread's
        hits = [i for i in profile.sass if i.executed and pattern.match(i.opcode)]
        if not hits:
            continue
        opcodes = sorted({i.opcode for i in hits})
        lines = sorted({i.source for i in hits if i.source}, key=_file_and_line)
        where = f" at {', '.join(lines[:MAX_LINES])}" if lines else ""
        named[label] = (f"{fmt(sum(i.executed for i in hits), 0)} executed "
                        f"({', '.join(f'`{op}`' for op in opcodes)}{where})")
    return named


def _traffic_title(profile: KernelReport, requests: float, share: float,
                   kinds: list[str]) -> str:
    if requests:
        return (f"{fmt(requests, 0)} distributed-shared-memory requests ({fmt(share)}% of "
                "executed instructions).")
    if dsmem_counted(profile):
        return "no distributed-shared-memory traffic."
    return ("distributed-shared-memory traffic not judged (no DSMEM counters)"
            + (f"; in the SASS: {', '.join(kinds)}." if kinds else "."))


def dsmem_share(profile: KernelReport) -> float | None:
    """DSMEM requests against executed warp instructions, in percent."""
    total = profile.executed_instructions
    if not total:
        return None
    return 100.0 * sum(r for r, _ in dsmem(profile).values()) / total


evidence.MEASURES["dsmem_share_pct"] = (
    "distributed-shared-memory requests (% of executed instructions)", dsmem_share)


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    size = profile.metric(CLUSTER_SIZE)
    if not size or size <= 1:
        return []
    traffic = dsmem(profile)
    shape = "x".join(fmt(profile.metric(f"launch__cluster_dim_{a}") or 1, 0) for a in "xyz")
    grid = profile.launch.grid_size
    clusters = f"{fmt(grid / size, 0)} clusters of {fmt(size, 0)} blocks ({shape})" if grid \
        else f"clusters of {fmt(size, 0)} blocks ({shape})"
    total = profile.executed_instructions or 0.0
    requests = sum(r for r, _ in traffic.values())
    moved = sum(s for _, s in traffic.values()) * SECTOR_BYTES
    share = 100.0 * requests / total if total else 0.0
    parts = ", ".join(f"{OPS[op]} {fmt(r, 0)} requests ({fmt(s * SECTOR_BYTES / 1e6)} MB)"
                      for op, (r, s) in traffic.items())
    if parts:
        traffic_text = parts
    elif dsmem_counted(profile):
        traffic_text = "no loads, stores or atomics to another block's shared memory"
    else:
        traffic_text = ("not judged: the report has no DSMEM counters "
                        "(l1tex__t_requests_pipe_lsu_mem_dshared_op_*)")
    carried = cluster_instructions(profile)
    if carried:
        carried_text = "; the cluster's instructions: " + "; ".join(
            f"{label}: {what}" for label, what in carried.items())
    elif not profile.sass:
        carried_text = "; which instructions carry its traffic is not judged: no SASS listing"
    else:
        carried_text = ""
    text = (f"The kernel runs in {clusters}; distributed shared memory: {traffic_text} "
            f"({SECTION}){carried_text}.")
    metrics: dict[str, float | str] = {"cluster_size": size, "dsmem_requests": requests,
                                       "dsmem_bytes": moved, "share_pct": share}
    if share < DOMINANT:
        return [Finding(
            rule=NAME, kind="info",
            title=f"Thread-block clusters: {clusters}; "
            f"{_traffic_title(profile, requests, share, list(carried))}",
            text=text, section=SECTION, metrics=metrics,
            evidence=(ev(profile, "cluster_size", ">", 1.0),))]
    main = max(traffic, key=lambda op: traffic[op][0])
    long_wait = profile.warp_state.stall("long_scoreboard")
    per = profile.warp_state.cycles_per_issued_instruction
    waits = (f"; warps wait {fmt(long_wait)} of every {fmt(per)} cycles on their results"
             if long_wait and per and main in ("ld", "atom") else "")
    return [Finding(
        rule=NAME, kind="bad",
        title=f"Distributed shared memory traffic dominates: {fmt(requests, 0)} requests to "
        f"another block's shared memory ({fmt(share)}% of executed instructions, "
        f"{fmt(moved / 1e9, 2)} GB) cross the SM-to-SM network{waits}.",
        text=text, section=SECTION,
        weight=share, metrics=metrics,
        evidence=(ev(profile, "cluster_size", ">", 1.0),
                  ev(profile, "dsmem_share_pct", ">=", DOMINANT)),
    )]
