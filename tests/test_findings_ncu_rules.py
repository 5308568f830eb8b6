"""ncu's own rule results, and the registry that merges them with ours."""

from __future__ import annotations

from findings_support import smem, synthetic

from harness.findings import ncu_rules, run_rules
from harness.findings.registry import RULES
from harness.report.model import RuleResult


def test_smem_fixture_rules_with_speedups():
    found = ncu_rules.check(smem())
    names = [f.metrics["ncu_rule"] for f in found]
    # ncu's OPT messages for sgemm_smem, largest estimated speedup first
    assert names[0] == "HighPipeUtilization"  # Low Utilization, 85.86%
    assert "SharedMemoryConflicts" in names
    conflicts = found[names.index("SharedMemoryConflicts")]
    assert "10.6%" in conflicts.title
    assert "279780 bank conflicts" in conflicts.text
    assert conflicts.section == "Memory Workload Analysis Tables"
    assert all(f.kind == "info" for f in found)


def test_registry_drops_ncu_messages_our_rules_already_explain():
    rules = {f.metrics.get("ncu_rule") for f in run_rules(smem()) if f.rule == "ncu_rules"}
    assert "SharedMemoryConflicts" not in rules  # bank_conflicts said it (bad)
    assert "CPIStall" not in rules  # stalls said it
    assert "HighPipeUtilization" not in rules  # pipes said it: LSU busiest, not FMA (bad)
    assert "IssueSlotUtilization" in rules  # nobody else did


def test_info_and_tiny_speedups_are_left_out():
    profile = synthetic(rules=(
        RuleResult("A", "Info", "INF", "just so you know"),
        RuleResult("B", "Tiny", "OPT", "hardly matters", speedup_pct=0.2),
        RuleResult("C", "Big", "OPT", "fix me", speedup_pct=42.0, section="Occupancy"),
    ))
    [finding] = ncu_rules.check(profile)
    assert finding.title == "ncu OPT: Big (ncu estimates up to 42.0% speedup)."
    assert finding.section == "Occupancy"


def test_every_rule_is_registered_once():
    names = [r.name for r in RULES]
    assert names == ["bound", "pipes", "divergence", "atomics", "memory_level", "stalls",
                     "bank_conflicts", "occupancy", "coalescing", "vectorization", "spills",
                     "local_arrays", "waves", "instruction_mix", "progress", "ncu_rules"]
