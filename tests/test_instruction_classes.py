"""Executed SASS opcodes grouped into classes (Instruction Statistics)."""

from __future__ import annotations

import pytest
from findings_support import naive, smem

from harness.findings import instruction_mix
from harness.report.instruction_classes import CLASSES, class_of


def test_every_opcode_has_one_class():
    seen = [op for ops in CLASSES.values() for op in ops]
    assert len(seen) == len(set(seen))
    assert class_of("FFMA") == "FP32" and class_of("DFMA") == "FP64"
    assert class_of("HGMMA") == "tensor" and class_of("MUFU") == "transcendental (XU)"
    assert class_of("STG") == "global store" and class_of("ATOMS") == "atomic"
    assert class_of("UIADD3") == "uniform" and class_of("NEWOP") == "other"
    # a fence's error barrier and the cluster barrier: no "other", no uniform twin
    assert {class_of(op) for op in ("CGAERRBAR", "UCGABAR_ARV", "UCGABAR_WAIT", "CCTL")} == {
        "synchronization"}


def test_classes_add_up_to_ncu_instruction_count():
    for profile in (naive(), smem()):
        total = sum(c.executed for c in profile.instruction_classes)
        assert total == profile.executed_instructions  # smsp__inst_executed.sum
        assert sum(c.share_pct for c in profile.instruction_classes) == pytest.approx(100.0)
    # ncu's opcode counts: sgemm_naive executes 67,141,632 LDG and 33,554,432 FFMA
    classes = {c.name: c for c in naive().instruction_classes}
    assert classes["global load"].executed == 67141632
    assert classes["FP32"].opcodes[0] == "FFMA"


def test_math_share_finding_on_real_kernels(golden):
    [finding] = instruction_mix.check(naive())
    assert finding.title.startswith("FFMA is only 21.7% of executed instructions")
    golden("naive_math_share", finding.title)
    [finding] = instruction_mix.check(smem())
    assert finding.metrics["math_share_pct"] == pytest.approx(37.34, abs=0.01)


def test_math_share_edge():
    import dataclasses

    from harness.report.model import InstructionClass

    def with_fp32(share: float):
        classes = (InstructionClass("FP32", share, share, ("FFMA",)),
                   InstructionClass("integer", 100 - share, 100 - share, ("IMAD",)))
        return dataclasses.replace(naive(), instruction_classes=classes)

    assert "only" not in instruction_mix.check(with_fp32(instruction_mix.MATH_SHARE))[0].title
    assert "only" in instruction_mix.check(with_fp32(instruction_mix.MATH_SHARE - 0.01))[0].title
