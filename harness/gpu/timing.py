"""Event timing of one GPU launch: warm-up, L2 flush, raw samples, median and spread.

The method follows triton.testing.do_bench and torch.utils.benchmark: warm up first (module
load, NVRTC compilation and library handle creation stay out of the numbers), then time each
launch on its own with a pair of CUDA events, after writing a buffer larger than the L2
cache so every launch starts with cold caches, as it would inside a real program. The raw
samples are kept; the statistics derive from them (`Measurement`), and a spread wider than
10% of the median is flagged rather than hidden.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.gpu.env import require_gpu

# IQR/median above which a measurement is called noisy (torch.utils.benchmark's threshold).
NOISY_IQR_FRACTION = 0.10

# Flush buffer size when the device does not report its L2 size (H200: 60 MB, H100: 50 MB).
_FALLBACK_L2_BYTES = 64 * 1024 * 1024


def quantile(sorted_samples: Sequence[float], q: float) -> float:
    """The q-quantile of sorted samples, linear interpolation (numpy's default method)."""
    if not sorted_samples:
        raise ValueError("no samples")
    position = (len(sorted_samples) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_samples) - 1)
    fraction = position - low
    return sorted_samples[low] + (sorted_samples[high] - sorted_samples[low]) * fraction


@dataclass(frozen=True)
class Measurement:
    """Raw times of repeated launches (ms) and the statistics derived from them."""

    samples_ms: tuple[float, ...]
    label: str = ""
    # Set by time_launches: the host took longer to queue the launches than the stream was
    # held, so the GPU may have idled inside some timed intervals (launch overhead counted).
    host_bound: bool = False

    def __post_init__(self) -> None:
        if not self.samples_ms:
            raise ValueError("a Measurement needs at least one sample")
        if any(not math.isfinite(s) or s < 0 for s in self.samples_ms):
            raise ValueError(f"invalid time sample in {self.samples_ms!r}")

    @functools.cached_property
    def _sorted(self) -> tuple[float, ...]:
        return tuple(sorted(self.samples_ms))

    @property
    def repeats(self) -> int:
        return len(self.samples_ms)

    @property
    def median(self) -> float:
        return quantile(self._sorted, 0.5)

    @property
    def q1(self) -> float:
        return quantile(self._sorted, 0.25)

    @property
    def q3(self) -> float:
        return quantile(self._sorted, 0.75)

    @property
    def min(self) -> float:
        return self._sorted[0]

    @property
    def max(self) -> float:
        return self._sorted[-1]

    @property
    def mean(self) -> float:
        return sum(self.samples_ms) / len(self.samples_ms)

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def relative_iqr(self) -> float:
        """IQR over median: the spread as a fraction of the typical time."""
        return self.iqr / self.median if self.median > 0 else math.inf

    @property
    def noisy(self) -> bool:
        return self.relative_iqr > NOISY_IQR_FRACTION

    @property
    def warning(self) -> str | None:
        """One line when the spread is too wide to trust small differences, else None."""
        name = f"{self.label}: " if self.label else ""
        if self.host_bound:
            return f"{name}the host queued launches slower than the GPU ran them; times may " \
                   "include launch overhead"
        if not self.noisy:
            return None
        return (
            f"{name}IQR is {self.relative_iqr:.0%} of the median "
            f"({self.q1:.4g}-{self.q3:.4g} ms around {self.median:.4g} ms); "
            "differences smaller than that are noise"
        )

    def __str__(self) -> str:
        return (
            f"{self.label + ': ' if self.label else ''}median {self.median:.4g} ms "
            f"(IQR {self.q1:.4g}-{self.q3:.4g}, min {self.min:.4g}, n={self.repeats})"
        )


class L2Flusher:
    """Writes a device buffer twice the size of the L2 cache to evict earlier data from it."""

    def __init__(self, cupy: Any, l2_bytes: int | None = None) -> None:
        if l2_bytes is None:
            l2_bytes = device_l2_bytes(cupy)
        self.nbytes = 2 * max(int(l2_bytes or _FALLBACK_L2_BYTES), 1024 * 1024)
        self._buffer = cupy.empty(self.nbytes // 4, dtype=cupy.int32)

    def __call__(self) -> None:
        # A write, not a read: it must leave the L2 full of lines that are not the kernel's.
        self._buffer.fill(0)


_HOLD_SOURCE = r"""
extern "C" __global__ void ncuh_hold_stream(unsigned long long nanoseconds) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < nanoseconds);
}
"""

# Host time allowed per timed launch while the stream is held (flush + events + launch from
# Python take tens of microseconds; this leaves a wide margin).
HOLD_MS_PER_LAUNCH = 0.5
MAX_HOLD_MS = 500.0


@functools.cache
def _hold_kernel(cupy: Any) -> Any:
    return cupy.RawKernel(_HOLD_SOURCE, "ncuh_hold_stream")


def hold_stream(cupy: Any, milliseconds: float) -> None:
    """Keep the current stream busy for `milliseconds` with a one-thread wait kernel.

    Queued behind it, the timed launches run back to back once it ends: the GPU never waits
    for Python between a start event and its kernel, so small kernels are not charged for
    launch overhead (nvbench's "blocking kernel" does the same).
    """
    import numpy

    nanoseconds = numpy.uint64(int(milliseconds * 1e6))
    _hold_kernel(cupy)((1,), (1,), (nanoseconds,))


def device_l2_bytes(cupy: Any) -> int | None:
    """The current device's L2 cache size in bytes, from its attributes."""
    try:
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    except Exception:
        return None
    size = props.get("l2CacheSize")
    return int(size) if size else None


def time_launches(
    launch: Callable[[], Any],
    *,
    repeats: int = 30,
    warmup: int = 5,
    flush_l2: bool = True,
    label: str = "",
    flusher: L2Flusher | None = None,
) -> Measurement:
    """Time `launch` `repeats` times with CUDA events on the current stream.

    Each timed launch is preceded by an L2 flush (outside the events). The stream is held
    by a wait kernel while the host queues every launch (`hold_stream`), and all events are
    read after one final synchronize.
    """
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    import time

    cupy = require_gpu()
    if flush_l2 and flusher is None:
        flusher = L2Flusher(cupy)
    stream = cupy.cuda.get_current_stream()
    for _ in range(max(warmup, 0)):
        if flusher is not None:
            flusher()
        launch()
    stream.synchronize()

    pairs = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(repeats)]
    hold_ms = min(HOLD_MS_PER_LAUNCH * repeats + 1.0, MAX_HOLD_MS)
    hold_stream(cupy, hold_ms)
    queued_from = time.perf_counter()
    for start, end in pairs:
        if flusher is not None:
            flusher()
        start.record(stream)
        launch()
        end.record(stream)
    queue_ms = (time.perf_counter() - queued_from) * 1e3
    stream.synchronize()
    samples = tuple(float(cupy.cuda.get_elapsed_time(start, end)) for start, end in pairs)
    return Measurement(samples, label=label, host_bound=queue_ms > hold_ms)
