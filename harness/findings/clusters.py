"""Thread-block clusters and distributed shared memory (DSMEM): the cluster shape, and the
loads, stores and atomics a block sends to another block's shared memory over the SM-to-SM
network (`l1tex__t_{requests,sectors}_pipe_lsu_mem_dshared_op_*`) (Memory Workload Analysis).
"""

from __future__ import annotations

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


def dsmem(profile: KernelReport) -> dict[str, tuple[float, float]]:
    """DSMEM operation -> (warp-level requests, sectors), where any were made."""
    found = {}
    for op in OPS:
        requests = profile.metric(f"l1tex__t_requests_pipe_lsu_mem_dshared_op_{op}.sum")
        sectors = profile.metric(f"l1tex__t_sectors_pipe_lsu_mem_dshared_op_{op}.sum")
        if requests:
            found[op] = (requests, sectors or 0.0)
    return found


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
    text = (f"The kernel runs in {clusters}; distributed shared memory: "
            + (parts or "no loads, stores or atomics to another block's shared memory")
            + f" ({SECTION}).")
    metrics: dict[str, float | str] = {"cluster_size": size, "dsmem_requests": requests,
                                       "dsmem_bytes": moved, "share_pct": share}
    if share < DOMINANT:
        return [Finding(
            rule=NAME, kind="info",
            title=f"Thread-block clusters: {clusters}"
            + (f"; {fmt(requests, 0)} distributed-shared-memory requests ({fmt(share)}% of "
               "executed instructions)." if requests else "; no distributed-shared-memory "
               "traffic."),
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
