"""What a launch may ask of the GPU `ncuh check` targets (`--arch`), and what the stand-in
CuPy says of that GPU when the project's Python asks.

The limits are CUDA's, per compute capability: the grid and block limits are the same on every
GPU since compute capability 3.0; the dynamic shared memory a block may opt into and the memory
of the largest GPU differ per architecture. An architecture not listed here gets the limits
that hold on every GPU, and no memory figure (sizes are then not weighed against one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GiB = 1024**3
KiB = 1024
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024
# Dynamic shared memory any block may take without opting in (cudaFuncSetAttribute).
DEFAULT_SHARED_MEMORY = 48 * KiB


@dataclass(frozen=True)
class Target:
    """The GPU a check measures launches against."""

    arch: str  # as given: "sm_90"
    major: int
    minor: int
    shared_memory_optin: int  # bytes of shared memory a block may opt into
    multiprocessors: int  # of a typical GPU of the architecture (what the stand-in reports)
    memory: int | None  # bytes of the largest GPU of the architecture, None where unknown

    def device_properties(self) -> dict[str, object]:
        """`cupy.cuda.runtime.getDeviceProperties` of the stand-in GPU (CUDA's field names)."""
        return {
            "name": f"ncuh check stand-in for {self.arch}".encode(),
            "major": self.major, "minor": self.minor,
            "multiProcessorCount": self.multiprocessors,
            "totalGlobalMem": self.memory or 0,
            "sharedMemPerBlock": DEFAULT_SHARED_MEMORY,
            "sharedMemPerBlockOptin": self.shared_memory_optin,
            "maxThreadsPerBlock": MAX_THREADS_PER_BLOCK,
            "maxThreadsDim": MAX_BLOCK, "maxGridSize": MAX_GRID,
            "maxThreadsPerMultiProcessor": 2048 if self.major >= 8 else 1024,
            "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
        }

    def device_attributes(self) -> dict[str, int]:
        """`cupy.cuda.Device().attributes` of the stand-in GPU (CuPy's names)."""
        return {
            "MultiProcessorCount": self.multiprocessors,
            "ComputeCapabilityMajor": self.major, "ComputeCapabilityMinor": self.minor,
            "MaxThreadsPerBlock": MAX_THREADS_PER_BLOCK,
            "MaxBlockDimX": MAX_BLOCK[0], "MaxBlockDimY": MAX_BLOCK[1],
            "MaxBlockDimZ": MAX_BLOCK[2], "MaxGridDimX": MAX_GRID[0],
            "MaxGridDimY": MAX_GRID[1], "MaxGridDimZ": MAX_GRID[2],
            "MaxSharedMemoryPerBlock": DEFAULT_SHARED_MEMORY,
            "MaxSharedMemoryPerBlockOptin": self.shared_memory_optin,
            "WarpSize": 32, "MaxRegistersPerBlock": 65536,
        }


# compute capability -> (shared memory a block may opt into, multiprocessors, the memory of
# the largest GPU of that architecture in GiB): CUDA's per-capability limits and the cards
# of each architecture (V100; Turing; A100; Ampere workstation; Orin; Ada; H100/H200/GH200;
# B200; Blackwell workstation)
_KNOWN: dict[tuple[int, int], tuple[int, int, int]] = {
    (7, 0): (96 * KiB, 80, 32),
    (7, 5): (64 * KiB, 72, 48),
    (8, 0): (163 * KiB, 108, 80),
    (8, 6): (99 * KiB, 84, 48),
    (8, 7): (163 * KiB, 16, 64),
    (8, 9): (99 * KiB, 142, 48),
    (9, 0): (227 * KiB, 132, 144),
    (10, 0): (227 * KiB, 148, 192),
    (12, 0): (99 * KiB, 188, 96),
}
_ARCH = re.compile(r"^(?:sm|compute)_(\d+?)(\d)[af]?$")


def target(arch: str) -> Target:
    """The target of `--arch` (sm_90, sm_90a, compute_80...); CUDA's common limits where the
    architecture is not known here."""
    match = _ARCH.match(arch.strip())
    major, minor = (int(match[1]), int(match[2])) if match else (0, 0)
    optin, multiprocessors, memory = _KNOWN.get((major, minor), (DEFAULT_SHARED_MEMORY, 1, 0))
    return Target(arch, major, minor, optin, multiprocessors, memory * GiB or None)
