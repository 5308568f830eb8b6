"""Scalar against vectorized memory instructions (SASS opcode widths)."""

from __future__ import annotations

from findings_support import naive, smem, synthetic

from harness.findings import vectorization
from harness.findings.fixes import fixes_for
from harness.report.model import MemoryAccessWidth, MemoryWidths


def test_naive_fixture_nothing_vectorized():
    # ncu sass__inst_executed_per_opcode_with_modifier_all: LDG.E 67,141,632; STG.E 32,768
    [finding] = vectorization.check(naive())
    assert finding.kind == "bad"
    assert "LDG 0.0% of 67,141,632" in finding.text
    assert "STG 0.0% of 32,768" in finding.text
    # its loads are uncoalesced (each lane a sector of its own): float4 does not fit a gather
    assert fixes_for(naive(), finding) == ()


def test_smem_fixture_shared_loads_partly_vectorized():
    # LDS 33,554,432 and LDS.128 8,388,608: 20% wide, neither scalar-only nor vectorized
    [finding] = vectorization.check(smem())
    assert finding.kind == "bad"
    assert finding.metrics["shared_load_vector_pct"] == 20.0
    assert "shared stores" in finding.title and "shared loads" not in finding.title


def test_vectorized_kernel_is_good():
    widths = MemoryWidths((
        MemoryAccessWidth("global", "load", 128, 1000.0),
        MemoryAccessWidth("shared", "load", 128, 4000.0),
        MemoryAccessWidth("shared", "load", 32, 100.0),
    ))
    [finding] = vectorization.check(synthetic(memory_widths=widths))
    assert finding.kind == "good"
    assert "LDG 100.0%" in finding.title


def test_no_memory_instructions():
    assert vectorization.check(synthetic()) == []
