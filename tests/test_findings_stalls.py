"""The dominant warp stall reasons (Warp State Statistics), each told by the instructions that
carry its samples (Source Counters)."""

from __future__ import annotations

import pytest
from findings_support import naive, smem, synthetic

from harness.findings import run_rules, stalls
from harness.findings.fixes import fixes_for
from harness.report import SITE_CLASSES, Carrier, SassInstruction, sites_by_reason
from harness.report.model import StallReason, WarpState


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


def test_a_cache_control_instruction_is_not_called_a_memory_barrier() -> None:
    """An acquire fence compiles to MEMBAR then CCTL.IVALL: a membar wait is sampled at the
    CCTL after it and is the MEMBAR's; any other stall sampled at a CCTL is cache control's."""
    profile = synthetic(sass=(
        SassInstruction(0x100, "MEMBAR.ALL.GPU", 1.0),
        SassInstruction(0x110, "CCTL.IVALL", 1.0, None, {"membar": 40, "dispatch_stall": 30}),
        SassInstruction(0x120, "EXIT", 1.0),
    ))
    sites = sites_by_reason(profile)
    membar, dispatch = sites["membar"].carriers, sites["dispatch_stall"].carriers
    assert [(c.key, c.opcodes, c.samples) for c in membar] == [("memory_barrier", ("MEMBAR",), 40)]
    assert [(c.key, c.opcodes, c.samples) for c in dispatch] == [("cache_control", ("CCTL",), 30)]
    assert dispatch[0].words == "cache control (CCTL)"
    assert stalls._story_words(dispatch[0]).startswith("cache-control instructions (CCTL)")
