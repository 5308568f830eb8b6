"""Register spills (local-memory instructions)."""

from __future__ import annotations

from findings_support import naive, smem, synthetic

from harness.findings import spills
from harness.report.model import LaunchConfig


def test_fixture_kernels_do_not_spill():
    # ncu Memory Workload Analysis: Local Memory Spilling Requests 0 for both kernels
    assert smem().local_memory_spill_requests == 0
    assert spills.check(smem()) == []
    assert spills.check(naive()) == []


def test_spilling_kernel():
    profile = synthetic(local_memory_spill_requests=4096.0, executed_instructions=409600.0,
                        launch=LaunchConfig(registers_per_thread=255.0))
    [finding] = spills.check(profile)
    assert finding.kind == "bad"
    assert "4,096" in finding.title and "255 registers" in finding.title
    assert "1.00% of all instructions" in finding.text


def test_not_collected():
    assert spills.check(synthetic()) == []
