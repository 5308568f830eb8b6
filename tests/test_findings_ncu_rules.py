"""ncu's own rule results, and the registry that merges them with ours."""

from __future__ import annotations

from pathlib import Path

from findings_support import smem, synthetic

from harness.findings import ncu_rules, run_rules
from harness.findings.registry import RULES
from harness.report.model import RuleResult


def test_smem_fixture_rules_with_speedups():
    found = ncu_rules.check(smem())
    names = [f.metrics["ncu_rule"] for f in found]
    # ncu's OPT messages for sgemm_smem, largest estimated speedup first; Low Utilization
    # (85.86%) speaks of the compute pipes while L1/TEX (shared memory) binds: set aside
    assert names[0] == "CPIStall"
    assert "HighPipeUtilization" not in names
    aside = [a.title for a in ncu_rules.ncu_set_aside(smem())]
    assert aside[0] == "ncu OPT: Low Utilization (ncu estimates up to 85.9% speedup)"
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
    # nobody else did, but memory binds the kernel: set aside, not dropped
    assert "IssueSlotUtilization" not in rules
    assert any("Issue Slot Utilization" in a.title for a in ncu_rules.ncu_set_aside(smem()))
    naive = {f.metrics.get("ncu_rule") for f in run_rules(smem()) if f.rule == "ncu_rules"}
    assert "LaunchConfiguration" not in naive  # 3.88 waves leave 3.0% idle: set aside too


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
    assert names == ["bound", "tensor_core", "pipes", "divergence", "atomics",
                     "warp_primitives", "synchronization", "clusters", "memory_level", "stalls",
                     "bank_conflicts", "occupancy", "imbalance", "coalescing", "vectorization",
                     "spills", "local_arrays", "waves", "instruction_mix", "progress",
                     "ncu_rules"]



# ---------------------------------------------------------------------------------------------
# judged before shown: what does not bear on the kernel goes to "ncu also says"


def _reduction(variant: str):
    from packed_fixtures import REDUCTION_RUN

    from harness.report.builder import load_kernel_reports

    return load_kernel_reports(REDUCTION_RUN / f"{variant}_67108864.ncu-rep")[0]


def test_warp_shuffle_store_rules_are_set_aside(golden):
    profile = _reduction("warp_shuffle")
    aside = {a.title: a.reason for a in ncu_rules.ncu_set_aside(profile)}
    golden("warp_shuffle_set_aside",
           "\n".join(f"{title}\n    {reason}" for title, reason in sorted(aside.items())))
    assert "1,056 executed" in aside[
        "ncu OPT: Low Compression Rate (ncu estimates up to 80.3% speedup)"]
    assert aside["ncu OPT: L2 Global Store Access Pattern (ncu estimates up to 69.0% speedup)"]
    assert "memory binds the kernel (DRAM at 81.0% of peak)" in aside[
        "ncu OPT: Low Utilization (ncu estimates up to 81.9% speedup)"]
    shown = [f.title for f in ncu_rules.check(profile)]
    assert not any("Compression" in t or "Store Access" in t or "Low Utilization" in t
                   for t in shown), shown


def test_store_share_boundary_decides_the_set_aside():
    import dataclasses

    from harness.report.model import MemoryAccessWidth, MemoryWidths

    profile = _reduction("warp_shuffle")
    loads = profile.memory_widths.executed("global", "load")

    def with_stores(share_pct: float):
        stores = share_pct / 100.0 * loads / (1 - share_pct / 100.0)
        kept = [a for a in profile.memory_widths.accesses
                if (a.space, a.kind) != ("global", "store")]
        widths = MemoryWidths((*kept, MemoryAccessWidth("global", "store", 32, stores)))
        return dataclasses.replace(profile, memory_widths=widths)

    def compression_aside(p) -> bool:
        return any("Compression" in a.title for a in ncu_rules.ncu_set_aside(p))

    assert compression_aside(with_stores(ncu_rules.MIN_DIRECTION_SHARE - 0.01))
    assert not compression_aside(with_stores(ncu_rules.MIN_DIRECTION_SHARE))


def test_a_streaming_kernel_keeps_its_store_rules():
    # the zoo's DRAM stream writes as much as it reads: the compression rule stays a finding
    from packed_fixtures import report

    from harness.report.builder import load_kernel_reports

    [stream] = load_kernel_reports(report(Path(__file__).parent / "fixtures" / "zoo"
                                    / "zoo_stream_dram.ncu-rep"))
    assert any("Low Compression Rate" in f.title for f in ncu_rules.check(stream))
    assert not any("Compression" in a.title for a in ncu_rules.ncu_set_aside(stream))
