"""The `ranking` block of a program's run (`ncuh profile --top`), and the names its kernels
go by across runs.

The first pass timed every launch; the block keeps, per process that launched kernels, each
kernel (its name, demangled and mangled, and its launch shape) with its launches' durations,
its share of the process's GPU time and the launch the second pass profiled. An entry that
profiled a ranked kernel names it (`RankedRef`). `kernel_key` is a kernel's name in `diff` and
`history`: its name and launch shape, and the process's key where the program ran several, so
that a kernel is matched across runs by what it is and how it was launched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field, FiniteFloat, NonNegativeInt, PositiveInt, model_validator

from harness.rundir.kernel_names import shape_text
from harness.rundir.schema import Record

Dim3 = Annotated[tuple[PositiveInt, PositiveInt, PositiveInt], Field()]
Nanoseconds = Annotated[FiniteFloat, Field(ge=0)]
Percent = Annotated[FiniteFloat, Field(ge=0, le=100.0001)]
PROGRAM_TIME = "program GPU time"  # the key of a process's total in diff and history


class Representative(Record):
    """The launch the second pass profiled: nearest the median duration."""

    id: NonNegativeInt  # ncu's result ID in the first pass
    skip: NonNegativeInt  # launches of the same name before it: the second pass's --launch-skip
    duration_ns: Nanoseconds


class RankedKernelRecord(Record):
    rank: PositiveInt
    name: Annotated[str, Field(min_length=1)]  # demangled, as ncu prints it
    mangled: str | None = None  # what the second pass's -k matched
    grid: Dim3
    block: Dim3
    launches: PositiveInt
    total_ns: Nanoseconds
    share_pct: Percent
    cumulative_pct: Percent
    mean_ns: Nanoseconds
    median_ns: Nanoseconds
    stdev_ns: Nanoseconds
    min_ns: Nanoseconds
    max_ns: Nanoseconds
    representative: Representative
    durations_ns: tuple[Nanoseconds, ...] = ()  # every launch's, in launch order

    @model_validator(mode="after")
    def _one_duration_per_launch(self) -> RankedKernelRecord:
        if self.durations_ns and len(self.durations_ns) != self.launches:
            raise ValueError(f"durations_ns holds {len(self.durations_ns)} launches, "
                             f"launches says {self.launches}")
        return self


class ProcessRecord(Record):
    key: Annotated[str, Field(min_length=1)]  # "gpu0"
    process: int | None = None
    device: int | None = None
    launches: NonNegativeInt
    total_ns: Nanoseconds
    kernels: tuple[RankedKernelRecord, ...]

    def kernel(self, rank: int) -> RankedKernelRecord | None:
        return next((kernel for kernel in self.kernels if kernel.rank == rank), None)


class RankingRecord(Record):
    """manifest.json's `ranking` (schema ncuh.run/2)."""

    metric: str = "gpu__time_duration.sum"
    top: PositiveInt
    report: str | None = None  # the first pass's report, beside the entries'
    seconds: FiniteFloat | None = None  # the first pass: the program under ncu
    export_command_lines: tuple[tuple[str, ...], ...] = ()  # demangled, then mangled names
    ncu: dict[str, Any] = Field(default_factory=dict)  # the first pass's ncu settings
    window: dict[str, Any] = Field(default_factory=dict)  # launch_skip, launch_count
    launches_seen: NonNegativeInt = 0
    processes: tuple[ProcessRecord, ...]

    def process(self, key: str) -> ProcessRecord | None:
        return next((process for process in self.processes if process.key == key), None)

    @property
    def several(self) -> bool:
        """Whether the program ran several processes (a torchrun's ranks)."""
        return len(self.processes) > 1


class RankedRef(Record):
    """An entry's ranked kernel: its process's key and its rank there."""

    process: Annotated[str, Field(min_length=1)]
    rank: PositiveInt


def kernel_key(kernel: RankedKernelRecord, process: str | None = None) -> str:
    """`name <<<grid, block>>>` (the CUDA launch's own notation), after `gpu1: ` where the
    program ran several processes."""
    text = f"{kernel.name} <<<{shape_text(kernel.grid)}, {shape_text(kernel.block)}>>>"
    return f"{process}: {text}" if process else text


def program_key(process: str | None = None) -> str:
    """The name a process's total GPU time goes by in diff and history."""
    return f"{process}: {PROGRAM_TIME}" if process else PROGRAM_TIME


def profiled_as_ranked(mangled: str, demangled: str, grid: Sequence[int] | None,
                       block: Sequence[int] | None, kernel: RankedKernelRecord) -> bool:
    """Whether a report's launch (its names and, where it says them, grid and block) is the
    ranked kernel's: by the mangled name where the ranking has one."""
    same = (mangled == kernel.mangled if kernel.mangled and mangled
            else demangled == kernel.name)
    return (same and (grid is None or tuple(grid) == kernel.grid)
            and (block is None or tuple(block) == kernel.block))
