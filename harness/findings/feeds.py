"""The paths that bring a kernel's data from global memory, by bytes: the TMA engine (bulk and
tensor copies), cp.async (LDGSTS) and plain loads (LDG). Instruction counts do not compare:
one TMA instruction moves a whole tile, one LDG a few bytes per lane.
"""

from __future__ import annotations

from harness.report import KernelReport

TMA_LOAD_BYTES = "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"
SECTOR_BYTES = 32
NAMED_SHARE = 0.1  # a path that brings at least this share of the bytes is named
ASYNC_PATHS = ("TMA (UTMALDG)", "cp.async (LDGSTS)")


def load_bytes(profile: KernelReport) -> dict[str, float]:
    """Bytes read from global memory by path, where any were counted."""
    coalescing = profile.coalescing
    async_sectors = coalescing.async_copies.sectors or 0.0
    # L1TEX's global-load sectors (`..._op_ld`) include those of cp.async: LDG's are the rest
    ldg_sectors = max(0.0, (coalescing.loads.sectors or 0.0) - async_sectors)
    paths = {
        "TMA (UTMALDG)": profile.metric(TMA_LOAD_BYTES) or 0.0,
        "cp.async (LDGSTS)": async_sectors * SECTOR_BYTES,
        "global loads (LDG)": ldg_sectors * SECTOR_BYTES,
    }
    return {path: n for path, n in paths.items() if n}


def main_paths(profile: KernelReport) -> list[str]:
    """The paths that bring at least `NAMED_SHARE` of the bytes, most bytes first."""
    paths = load_bytes(profile)
    total = sum(paths.values())
    return [p for p in sorted(paths, key=lambda p: -paths[p]) if paths[p] >= NAMED_SHARE * total]


def async_share(profile: KernelReport) -> float | None:
    """The share (0-1) of global bytes that arrive asynchronously (TMA or cp.async), None when
    no load was counted."""
    paths = load_bytes(profile)
    total = sum(paths.values())
    return sum(paths.get(p, 0.0) for p in ASYNC_PATHS) / total if total else None
