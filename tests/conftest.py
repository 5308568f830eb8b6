"""Shared test setup: fixture paths, and clean skips for tests marked `gpu`."""

from __future__ import annotations

import functools
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
NAIVE_SMEM_REPORT = FIXTURES / "h100_sgemm_naive_smem.ncu-rep"
NAIVE_SMEM_RAW_CSV = FIXTURES / "h100_sgemm_naive_smem.raw.csv"
NAIVE_SMEM_DETAILS = FIXTURES / "h100_sgemm_naive_smem.details.txt.gz"


@functools.cache
def gpu_unavailable_reason() -> str | None:
    """Why GPU tests cannot run here, or None when a CUDA device answers through CuPy."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as error:  # CUDA driver missing or unusable
        return f"no usable CUDA device ({type(error).__name__})"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    for item in gpu_items:
        item.add_marker(pytest.mark.skip(reason=f"gpu test: {reason}"))


@pytest.fixture
def naive_smem_report() -> Path:
    return NAIVE_SMEM_REPORT


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """Ctrl-C (SIGINT) raises KeyboardInterrupt during the test, as in a terminal, even where
    the suite was started with SIGINT ignored (a shell's background job: Python then leaves it
    ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:  # None: a handler not set from Python, which cannot be put back
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
