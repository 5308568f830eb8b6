"""Improvement or regression against the previous iteration."""

from __future__ import annotations

from findings_support import naive, smem, synthetic

from harness.findings import progress
from harness.report.model import SpeedOfLight, StallReason, WarpState


def test_smem_against_naive_fixture():
    found = progress.check(smem(), naive())
    by_title = {f.title: f for f in found}
    speed = next(f for f in found if "faster" in f.title)
    # Duration 5.51 ms -> 300.93 us (ncu): 18.31x
    assert speed.kind == "good"
    assert "18.31x" in speed.title and "5,511.01 us -> 300.93 us" in speed.title
    texts = " ".join(by_title)
    assert "LG throttle stall per instruction 393.1 -> 0.0" in texts
    assert "MIO throttle stall per instruction 0.9 -> 21.4" in texts
    mio = next(f for f in found if f.metrics.get("reason") == "mio_throttle")
    assert mio.kind == "bad"


def test_regression_is_bad():
    old = synthetic(speed_of_light=SpeedOfLight(duration_ns=100_000.0))
    new = synthetic(speed_of_light=SpeedOfLight(duration_ns=150_000.0))
    [finding] = progress.check(new, old)
    assert finding.kind == "bad"
    assert "1.50x slower" in finding.title


def test_stall_delta_like_the_seed():
    def warp(mio: float) -> WarpState:
        return WarpState(cycles_per_issued_instruction=12.0,
                         stalls=(StallReason("mio_throttle", "MIO Throttle", mio),))
    [finding] = progress.check(synthetic(warp_state=warp(2.1)), synthetic(warp_state=warp(6.0)))
    assert finding.kind == "good"
    assert "MIO throttle stall per instruction 6.0 -> 2.1" in finding.title


def test_no_previous_or_noise():
    assert progress.check(smem(), None) == []
    same = synthetic(speed_of_light=SpeedOfLight(duration_ns=100_000.0))
    near = synthetic(speed_of_light=SpeedOfLight(duration_ns=102_000.0))
    assert progress.check(near, same) == []
