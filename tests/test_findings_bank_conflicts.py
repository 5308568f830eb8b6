"""Shared-memory bank conflicts, loads and stores apart (Memory Workload Analysis)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from findings_support import naive, smem, synthetic

from harness.findings import bank_conflicts
from harness.findings.fixes import fixes_for
from harness.report.model import BankConflictStats, OpcodeCount, SharedBankConflicts


def test_smem_fixture_store_conflicts_are_on_no_instruction():
    # ncu SharedMemoryConflicts: "a 1.1 - way bank conflict across all 2097152 shared store
    # requests. This results in 279780 bank conflicts, which represent 11.77% of the overall
    # 2376932 wavefronts for shared stores." The report's Source Counters (--set full) give
    # every STS its ideal wavefronts: 2,097,152 of them, none beyond, so the conflicts the
    # l1tex counter counts are not the stores' addresses (32x32 tiles, one row a warp)
    found = {f.metrics["direction"]: f for f in bank_conflicts.check(smem())}
    store = found["store"]
    assert store.kind == "info" and store.metrics["by_instruction"] == 1.0
    assert store.metrics["conflicts"] == 0 and store.metrics["wavefronts"] == 2097152
    assert bank_conflicts.excess_pct(smem(), "store") == 0.0
    assert "counts 279,780 store bank conflicts (11.8% of its wavefronts)" in store.text
    assert "11.8% of the store wavefronts as conflicts" in store.title
    assert store.section == "Memory Workload Analysis"
    assert fixes_for(smem(), store) == ()  # no padding idea for addresses that do not conflict
    # loads: each LDS at its ideal too: conflict-free
    assert found["load"].kind == "good"
    assert "0.00% of the LDS wavefronts beyond their ideal" in found["load"].title


def test_without_source_counters_the_l1tex_figures_are_read():
    # the same kernel read without its per-instruction wavefronts (a `--set pages` report)
    profile = dataclasses.replace(smem(), sass=tuple(
        dataclasses.replace(i, shared_wavefronts=None, shared_wavefronts_ideal=None)
        for i in smem().sass))
    assert bank_conflicts.excess_pct(profile, "store") is None
    store = {f.metrics["direction"]: f for f in bank_conflicts.check(profile)}["store"]
    assert store.kind == "bad" and store.metrics["conflicts"] == 279780
    assert "11.77%" in store.text and "279,780" in store.text


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


def _bf16_full(variant: str):
    from packed_fixtures import FIXTURES, cached_profiles, fixture

    [profile] = cached_profiles(fixture(
        FIXTURES / "source_counters" / f"h200_bf16_{variant}_full_4096.ncu-rep"))
    return profile


def test_cp_async_writes_that_conflict_are_named_at_their_instructions():
    # the BF16 chain's multistage at 4096 (--set full, H200): the l1tex counters count no
    # store conflicts (LDGSTS is not a shared store to them), but the A tiles' 16-byte
    # cp.async writes each take 2x their ideal wavefronts: 8,388,608 of 25,165,824 (33.3%)
    profile = _bf16_full("multistage")
    assert profile.bank_conflicts.stores.conflicts == 0
    store = {f.metrics["direction"]: f for f in bank_conflicts.check(profile)}["store"]
    assert store.kind == "bad" and store.metrics["conflicts"] == 8388608
    assert store.metrics["wavefronts"] == 25165824
    assert store.title.startswith("Shared-memory stores hit bank conflicts: 33.3% of the LDGSTS")
    assert "`LDGSTS.E.BYPASS.128` at multistage.cu:14 (7 instructions, 2.00x" in store.title
    assert store.title.endswith(" and 1 more.")  # the one at multistage.cu:36
    assert "`LDGSTS.E.BYPASS.128` at multistage.cu:36 (2.00x its ideal" in store.text
    assert bank_conflicts.excess_pct(profile, "load") == 0.0


def test_stores_the_l1tex_counter_blames_but_no_instruction_carries():
    # mma_ldmatrix at 4096 (--set full, H200): 1,499,103 store conflicts counted (8.2%), yet
    # each of its four STS.128 takes exactly its ideal 4 wavefronts
    from harness.findings.oracle import contradictions

    profile = _bf16_full("mma_ldmatrix")
    store = {f.metrics["direction"]: f for f in bank_conflicts.check(profile)}["store"]
    assert store.kind == "info" and bank_conflicts.excess_pct(profile, "store") == 0.0
    assert "counts 1,499,103 store bank conflicts (8.2% of its wavefronts)" in store.text
    assert "padding or swizzling them would not remove these" in store.text
    assert contradictions(profile, [store]) == []
    # the same conflicts called a problem would be contradicted by the instructions
    bad = dataclasses.replace(store, kind="bad")
    [said] = contradictions(profile, [bad])
    assert "beyond each instruction's ideal (Source Counters)" in str(said)


def test_a_pages_report_says_it_could_not_localize_the_conflicts():
    # the committed run of mma_ldmatrix (--set pages): the l1tex counters alone
    from packed_fixtures import cached_profiles

    from harness.report.model import KernelReport

    root = Path(__file__).resolve().parent.parent / "reports" / "runs" / "gemm_bf16-h200-4096"
    profile: KernelReport = cached_profiles(root / "mma_ldmatrix_4096.ncu-rep")[0]
    assert bank_conflicts.excess_pct(profile, "store") is None
    store = {f.metrics["direction"]: f for f in bank_conflicts.check(profile)}["store"]
    assert store.kind == "bad"
    assert "which instructions' addresses conflict is not judged" in store.text
