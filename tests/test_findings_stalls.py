"""The dominant warp stall reasons (Warp State Statistics), each told by the instructions that
carry its samples (Source Counters)."""

from __future__ import annotations

from pathlib import Path

import pytest
from findings_support import naive, smem, synthetic
from packed_fixtures import cached_profiles, reports

from harness.findings import run_rules, stalls
from harness.findings.fixes import fixes_for
from harness.report import SITE_CLASSES, Carrier, SassInstruction, sites_by_reason, stall_sites
from harness.report.model import KernelReport, StallReason, WarpState

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "tests" / "fixtures" / "zoo"


def _warp(total: float, **reasons: float) -> WarpState:
    return WarpState(
        cycles_per_issued_instruction=total,
        stalls=tuple(StallReason(r, r, c) for r, c in sorted(reasons.items(), key=lambda x: -x[1])),
    )


def test_smem_fixture_mio_throttle_dominates():
    # ncu CPIStall: "each warp ... spends 21.4 cycles being stalled waiting for the MIO ...";
    # Warp Cycles Per Issued Instruction 40.46
    found = stalls.check(smem())
    first = found[0]
    assert first.metrics["reason"] == "mio_throttle"
    assert first.kind == "bad"
    assert "21.4" in first.text and "40.5" in first.text
    assert first.section == "Warp State Statistics"
    # the MIO queue holds the tile's shared loads: 96.3% of its samples sit at LDS/STS
    assert first.metrics["carrier"] == "shared"
    assert "at shared memory (LDS/STS): 96.3% of its samples" in first.title
    assert [i.rule for i in fixes_for(smem(), first)] == ["wider_shared_accesses"]
    # not selected (6.3 cycles, 15.5%) is reported too, as information
    assert [f.metrics["reason"] for f in found] == ["mio_throttle", "not_selected"]
    assert found[1].kind == "info"


def test_naive_fixture_lg_throttle():
    # ncu: "spends 393.1 cycles being stalled waiting for the L1 instruction queue for local
    # and global (LG) memory operations"; 430.06 cycles per issued instruction
    [first] = stalls.check(naive())
    assert first.metrics["reason"] == "lg_throttle"
    assert "393.1" in first.title and "430.1" in first.title


def test_each_named_reason_is_recognized():
    for reason in ("mio_throttle", "long_scoreboard", "short_scoreboard", "barrier"):
        profile = synthetic(warp_state=_warp(10.0, **{reason: 6.0, "selected": 1.0}))
        [finding] = stalls.check(profile)
        assert finding.metrics["reason"] == reason
        assert finding.kind == "bad"
        # without PC samples no class is named, and no fix idea fits
        assert "carrier" not in finding.metrics
        assert "not judged: the report has no PC samples" in finding.text
        assert fixes_for(profile, finding) == ()


def test_small_stalls_are_not_findings():
    profile = synthetic(warp_state=_warp(10.0, mio_throttle=1.2, long_scoreboard=0.5, selected=1.0))
    assert stalls.check(profile) == []


def test_selected_is_never_a_stall():
    profile = synthetic(warp_state=_warp(2.0, selected=1.0, wait=0.2))
    assert stalls.check(profile) == []


def test_not_collected():
    assert stalls.check(synthetic()) == []


def test_other_reasons_are_reported_as_information():
    profile = synthetic(warp_state=WarpState(
        cycles_per_issued_instruction=10.0,
        stalls=(StallReason("no_instructions", "No Instructions", 4.0),)))
    [finding] = stalls.check(profile)
    assert finding.kind == "info"
    assert "for instructions to be fetched" in finding.text
    assert [f.fixes for f in run_rules(profile) if f.rule == "stalls"] == [()]


@pytest.mark.parametrize("key", [*SITE_CLASSES, "other"])
def test_every_story_names_the_opcodes_it_has_and_no_empty_list(key: str) -> None:
    with_ops = Carrier(key, 10, 100.0, (), ("LDSM", "STS"))
    without = Carrier(key, 10, 100.0, (), ())
    for carrier in (with_ops, without):
        text = f"{carrier.words} / {stalls._story_words(carrier)}"
        assert "{ops}" not in text and "()" not in text, text
    if key != "other" and "{ops}" in stalls.STORIES.get(key, ""):
        assert "LDSM/STS" in stalls._story_words(with_ops)
    assert with_ops.words.endswith("(LDSM/STS)") == (key != "other")


def _sites(profile: KernelReport, reason: str) -> list[tuple[str, tuple[str, ...], int]]:
    return [(c.key, c.opcodes, c.samples) for c in sites_by_reason(profile)[reason].carriers]


def test_a_fence_is_told_by_its_membar_and_its_other_instructions_by_their_own_names() -> None:
    """A device-scope fence on sm_90 is MEMBAR, ERRBAR, CGAERRBAR, CCTL.IVALL: a membar wait
    sampled at the instructions after the MEMBAR is the MEMBAR's; other stalls sampled at
    the error barriers and the cache control are told as those, not as cluster barriers (the
    CGA's error barrier is in every fence, clusters or not) nor as memory barriers."""
    [cluster_sync] = [p for p in reports(ZOO) if p.name == "zoo_cluster_sync.ncu-rep"]
    [profile] = cached_profiles(cluster_sync)
    assert _sites(profile, "membar") == [("memory_barrier", ("MEMBAR",), 36472)]
    assert _sites(profile, "wait")[:2] == [
        ("error_barrier", ("CGAERRBAR", "ERRBAR"), 2666),
        ("cluster_barrier", ("UCGABAR_ARV", "UCGABAR_WAIT"), 753)]
    assert ("cache_control", ("CCTL",), 8) in _sites(profile, "mio_throttle")
    [told] = [f for f in run_rules(profile)
              if f.rule == "stalls" and f.metrics["reason"] == "membar"]
    assert "The warps wait on memory fences (MEMBAR)." in told.text
    assert "ERRBAR" not in told.text
    words = {c.key: c.words for c in sites_by_reason(profile)["mio_throttle"].carriers}
    assert words["cache_control"] == "cache control (CCTL)"
    assert words["error_barrier"] == "error barriers (CGAERRBAR)"
    # a fence without clusters (MEMBAR.SC.GPU ... CCTL.IVALL): its membar samples are its own
    [single_pass] = [p for p in reports(ROOT / "reports" / "runs" / "reduction-h100-2p26")
                     if p.name.startswith("single_pass")]
    [profile] = cached_profiles(single_pass)
    assert _sites(profile, "membar") == [("memory_barrier", ("MEMBAR",), 18)]


def _kernel(*sass: str, sampled: int = -1) -> KernelReport:
    """Instructions in order, the one at index `sampled` carrying 30 membar wait samples."""
    at = sampled % len(sass)
    return synthetic(sass=tuple(
        SassInstruction(0x10 * i, text, 1.0, None, {"membar": 30} if i == at else {})
        for i, text in enumerate(sass)))


def test_a_membar_wait_is_its_own_fences_and_no_earlier_ones() -> None:
    """A run of fence instructions is told by its MEMBAR; an error barrier with no MEMBAR
    of its own keeps the samples, not a MEMBAR of an earlier fence; nothing is looked for
    more than BARRIER_REACH instructions back."""
    fence = ("MEMBAR.SC.GPU", "ERRBAR", "CGAERRBAR")
    assert _sites(_kernel(*fence, "CCTL.IVALL"), "membar") == [
        ("memory_barrier", ("MEMBAR",), 30)]
    lone = _kernel("MEMBAR.SC.GPU", *["FFMA R1, R2, R3, R1"] * 9, "CGAERRBAR",
                   "UCGABAR_ARV")
    assert _sites(lone, "membar") == [("error_barrier", ("CGAERRBAR",), 30)]
    work = ["FFMA R1, R2, R3, R1"] * (stall_sites.BARRIER_REACH - 1)
    assert _sites(_kernel(*fence, *work, "UCGABAR_ARV"), "membar") == [
        ("memory_barrier", ("MEMBAR",), 30)]  # its CGAERRBAR exactly BARRIER_REACH back
    far = _kernel(*fence, *work, "FFMA R1, R2, R3, R1", "UCGABAR_ARV")
    assert _sites(far, "membar") == [] and sites_by_reason(far)["membar"].samples == 30
    # a run at the kernel's start ends there: not continued round to a MEMBAR at its end
    first = _kernel("ERRBAR", "CCTL.IVALL", "EXIT", "MEMBAR.SC.GPU", sampled=1)
    assert _sites(first, "membar") == [("error_barrier", ("ERRBAR",), 30)]
    # an instruction that cannot be read ends a run: its MEMBAR is another fence's
    unread = _kernel("MEMBAR.SC.GPU", "", "ERRBAR", "CCTL.IVALL")
    assert _sites(unread, "membar") == [("error_barrier", ("ERRBAR",), 30)]


def test_only_waits_traced_to_another_instruction_say_so() -> None:
    """A scoreboard, barrier, fence or drain wait "traces to" the instruction it waits on;
    other reasons' samples "sit at" the instruction they were taken at."""
    [smem_tiled] = [f for f in run_rules(smem())
                    if f.rule == "stalls" and f.metrics["reason"] == "mio_throttle"]
    assert "PC samples sit at: shared memory" in smem_tiled.text
    [cluster_sync] = [p for p in reports(ZOO) if p.name == "zoo_cluster_sync.ncu-rep"]
    [profile] = cached_profiles(cluster_sync)
    told = {f.metrics["reason"]: f.text for f in run_rules(profile) if f.rule == "stalls"}
    assert "PC samples trace to: memory barriers (MEMBAR)" in told["membar"]
