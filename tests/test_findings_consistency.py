"""The registry's promises: no praise of what ncu flags, praise qualified when lanes idle, and
a TLDR that names the largest estimated gain."""

from __future__ import annotations

import dataclasses

from findings_support import naive, smem

from harness.findings import divergence, run_rules
from harness.findings.registry import tldr_finding
from harness.report.model import Divergence, RuleResult


def _titles(findings, kind):
    return [f.title for f in findings if f.kind == kind]


def test_real_store_conflicts_do_not_unpraise_conflict_free_loads(golden):
    # ncu flags "Shared Store Bank Conflicts" on sgemm_smem; its loads are conflict-free
    good = _titles(run_rules(smem()), "good")
    golden("smem_conflict_free_loads",
           "\n".join(title for title in good if title.startswith("Shared-memory loads")))


def test_good_statement_withheld_when_ncu_flags_the_same_unit():
    flagged = RuleResult(name="SharedMemoryConflicts", title="Shared Load Bank Conflicts",
                         type="OPT", message="...", speedup_pct=5.0,
                         section="MemoryWorkloadAnalysis_Tables")
    profile = dataclasses.replace(smem(), rules=(*smem().rules, flagged))
    findings = run_rules(profile)
    def praise(title: str) -> bool:
        return title.startswith("Shared-memory loads") and "free of bank conflicts" in title

    assert not any(praise(t) for t in _titles(findings, "good"))
    info = [t for t in _titles(findings, "info") if praise(t)]
    assert info and info[0].endswith("— but ncu flags: Shared Load Bank Conflicts.")


def test_ncu_info_messages_do_not_withhold_praise():
    # ncu's SOLBottleneck on sgemm_naive is type OK (printed INF): not a problem
    assert [r.type for r in naive().rules if r.name == "SOLBottleneck"] == ["OK"]
    assert "Occupancy is high: 92.8% achieved of 100.0% theoretical." in _titles(
        run_rules(naive()), "good")


def _idle(lanes: float):
    return dataclasses.replace(naive(), divergence=Divergence(
        active_threads_per_warp=lanes, not_predicated_off_threads_per_warp=lanes))


def test_praise_is_qualified_when_most_lanes_idle_edge():
    edge = divergence.MOST_IDLE_LANES
    assert "Occupancy is high: 92.8% achieved of 100.0% theoretical." in _titles(
        run_rules(_idle(edge)), "good")
    findings = run_rules(_idle(edge - 0.01))
    assert not any(t.startswith("Occupancy is high") for t in _titles(findings, "good"))
    assert any(t.startswith("Occupancy is high") and "of 32 lanes per warp instruction do work"
               in t for t in _titles(findings, "info"))


def test_findings_carry_ncu_speedup_estimates():
    by_rule = {f.rule: f for f in run_rules(naive()) if f.kind == "bad"}
    # ncu's MemoryCacheAccessPattern (83.9%) covers coalescing; its UncoalescedGlobalAccess
    # (36.0%) is left out: `pages` does not run it (RULES_LEFT_OUT)
    assert f"{by_rule['coalescing'].speedup_pct:.2f}" == "83.94"
    assert any(r.name == "UncoalescedGlobalAccess" and r.speedup_pct
               for r in naive().rules)
    assert by_rule["vectorization"].speedup_pct is None


def test_tldr_names_the_largest_estimated_gain():
    findings = run_rules(naive())
    top = tldr_finding(findings)
    assert top is not None and top.rule == "coalescing"  # 83.9% beats stalls' 4.1%
    bigger = dataclasses.replace(top, rule="stalls", speedup_pct=None, weight=90.0)
    assert tldr_finding([top, bigger]) is bigger  # own weight counts where ncu has no estimate
    assert tldr_finding([f for f in findings if f.kind != "bad"]) is None
