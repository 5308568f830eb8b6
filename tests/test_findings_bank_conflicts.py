"""Shared-memory bank conflicts, loads and stores apart (Memory Workload Analysis)."""

from __future__ import annotations

import dataclasses

from findings_support import naive, smem, synthetic

from harness.findings import bank_conflicts
from harness.findings.fixes import fixes_for
from harness.report.model import BankConflictStats, OpcodeCount, SharedBankConflicts


def test_smem_fixture_store_conflicts_match_ncu_rule():
    # ncu SharedMemoryConflicts: "a 1.1 - way bank conflict across all 2097152 shared store
    # requests. This results in 279780 bank conflicts, which represent 11.77% of the overall
    # 2376932 wavefronts for shared stores."
    found = {f.metrics["direction"]: f for f in bank_conflicts.check(smem())}
    store = found["store"]
    assert store.kind == "bad"
    assert store.metrics["conflicts"] == 279780
    assert store.metrics["wavefronts"] == 2376932
    assert store.metrics["requests"] == 2097152
    assert f"{store.metrics['ways']:.1f}" == "1.1"
    assert "11.77%" in store.text and "279,780" in store.text
    assert store.section == "Memory Workload Analysis"
    # loads: 29,073 conflicts of 50,360,721 wavefronts (0.06%): conflict-free
    assert found["load"].kind == "good"
    assert "0.06%" in found["load"].title


def test_naive_fixture_has_no_shared_accesses():
    assert bank_conflicts.check(naive()) == []


def test_four_way_store_conflict_synthetic():
    stats = BankConflictStats(requests=1000.0, wavefronts=4000.0, conflicts=3000.0)
    profile = synthetic(bank_conflicts=SharedBankConflicts(stores=stats))
    [finding] = bank_conflicts.check(profile)
    assert finding.metrics["direction"] == "store"
    assert "4.0-way" in finding.title and "75.0%" in finding.title
    # padding fits only where plain shared stores (STS) executed: none were counted here
    assert fixes_for(profile, finding) == ()
    with_sts = dataclasses.replace(profile, instruction_mix=(OpcodeCount("STS", 1000.0, 100.0),))
    [idea] = fixes_for(with_sts, finding)
    assert idea.rule == "pad_or_swizzle" and "32 different banks" in idea.what_if


def test_clean_loads_synthetic():
    stats = BankConflictStats(requests=1000.0, wavefronts=1000.0, conflicts=0.0)
    [finding] = bank_conflicts.check(synthetic(bank_conflicts=SharedBankConflicts(loads=stats)))
    assert finding.kind == "good"


def test_wide_accesses_are_said_against_their_fewest_wavefronts():
    # the BF16 chain's mma_ldmatrix at 4096 on an H200: STS.128 stores, 4 wavefronts each at
    # best; 1,515,100 of 18,292,316 wavefronts are conflicts over 4,194,304 instructions
    stats = BankConflictStats(requests=4194304.0, wavefronts=18292316.0, conflicts=1515100.0)
    assert bank_conflicts.fewest_wavefronts(stats) == 4.0
    profile = synthetic(bank_conflicts=SharedBankConflicts(stores=stats))
    [finding] = bank_conflicts.check(profile)
    assert finding.kind == "bad" and finding.metrics["fewest"] == 4.0
    assert "4.36 wavefronts per store where 4.00 would do" in finding.title
    assert "-way access" not in finding.text and "ncu's 4.4-way figure" in finding.text


def test_narrow_accesses_keep_the_n_way_figure_up_to_the_wide_bound():
    # fewest 1.49 per instruction (mostly 32-bit): still an N-way figure; 1.5 and up: wide
    def said(fewest: float) -> str:
        stats = BankConflictStats(requests=1000.0, wavefronts=1000.0 * fewest + 500.0,
                                  conflicts=500.0)
        [finding] = bank_conflicts.check(synthetic(bank_conflicts=SharedBankConflicts(
            loads=stats)))
        return finding.text

    assert "(a 2.0-way access)" in said(1.49)
    assert "of which its accesses need 1.50 at best" in said(1.5)
    assert bank_conflicts.fewest_wavefronts(BankConflictStats(requests=0.0)) is None
