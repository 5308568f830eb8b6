"""Timing statistics, counter gates and thresholds of `ncuh diff`, on synthetic data."""

from __future__ import annotations

import numpy as np
import pytest

from harness.diff.inputs import KernelData, KernelKey
from harness.diff.stats import compare_samples
from harness.diff.thresholds import ThresholdsError, TimingSettings, load_thresholds
from harness.diff.verdicts import judge_kernel, kernel_verdict

SETTINGS = TimingSettings(noise_floor_pct=5.0, confidence=0.95, alpha=0.01,
                          bootstrap_resamples=2000, seed=7)


def _noisy(median: float, noise: float, rng: np.random.Generator, n: int = 30) -> np.ndarray:
    return median * (1.0 + noise * rng.standard_normal(n))


def test_five_percent_slowdown_under_one_percent_noise_is_caught() -> None:
    rng = np.random.default_rng(1234)
    caught = 0
    for _ in range(20):
        result = compare_samples(_noisy(1.0, 0.01, rng), _noisy(1.05, 0.01, rng), 3.0, "lower",
                                 SETTINGS)
        caught += result.verdict == "SLOWER"
        assert 3.0 < result.change_pct < 7.0
    assert caught == 20
    one = compare_samples(_noisy(1.0, 0.01, rng), _noisy(1.05, 0.01, rng), 3.0, "lower", SETTINGS)
    assert one.method == "bootstrap+mann-whitney"
    assert one.ci_low_pct is not None and one.ci_low_pct > 0
    assert one.p_value is not None and one.p_value < 0.01


def test_same_code_with_three_percent_noise_reports_nothing() -> None:
    rng = np.random.default_rng(99)
    verdicts = [compare_samples(_noisy(2.0, 0.03, rng), _noisy(2.0, 0.03, rng), 3.0, "lower",
                                SETTINGS).verdict for _ in range(50)]
    assert "SLOWER" not in verdicts and "FASTER" not in verdicts
    assert verdicts.count("SAME") >= 48


def test_threshold_alone_is_not_enough_when_noise_is_large() -> None:
    # a 6% shift under 20% noise with 8 samples: beyond the threshold, not beyond the noise
    rng = np.random.default_rng(5)
    base = _noisy(1.0, 0.20, rng, n=8)
    cur = base[::-1] * 1.06
    result = compare_samples(base, cur, 3.0, "lower", SETTINGS)
    assert result.verdict == "UNSURE"
    assert "within the noise" in result.note


def test_bootstrap_is_reproducible_with_its_seed() -> None:
    rng = np.random.default_rng(3)
    base, cur = _noisy(1.0, 0.02, rng), _noisy(1.04, 0.02, rng)
    first = compare_samples(base, cur, 3.0, "lower", SETTINGS)
    again = compare_samples(base, cur, 3.0, "lower", SETTINGS)
    assert (first.ci_low_pct, first.ci_high_pct) == (again.ci_low_pct, again.ci_high_pct)


@pytest.mark.parametrize(("current", "verdict"), [(1.02, "SAME"), (1.04, "UNSURE"),
                                                  (1.10, "SLOWER"), (0.90, "FASTER")])
def test_one_sample_per_side_uses_the_noise_floor(current: float, verdict: str) -> None:
    result = compare_samples([1.0], [current], 3.0, "lower", SETTINGS)
    assert result.method == "noise-floor"
    assert result.verdict == verdict


def test_higher_is_better_flips_the_direction() -> None:
    result = compare_samples([100.0], [80.0], 3.0, "higher", SETTINGS)
    assert result.verdict == "SLOWER"


def _kernel(samples: tuple[float, ...] = (), **metrics: float) -> KernelData:
    return KernelData(key=KernelKey("k"), function="k", source="synthetic",
                      metrics=dict(metrics), samples_ms=samples)


def test_counters_are_held_to_tight_thresholds() -> None:
    thresholds = load_thresholds()
    base = _kernel(**{"gpu__time_duration.sum": 1000.0, "launch__registers_per_thread": 32.0,
                      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 0.0,
                      "smsp__inst_executed.sum": 1e8})
    cur = _kernel(**{"gpu__time_duration.sum": 1010.0, "launch__registers_per_thread": 40.0,
                     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 3.0,
                     "smsp__inst_executed.sum": 1e8 * 1.002})
    verdicts = {v.key: v for v in judge_kernel(base, cur, thresholds)}
    assert verdicts["time"].verdict == "SAME"
    assert verdicts["registers"].verdict == "SLOWER"  # any extra register counts
    assert verdicts["shared_store_bank_conflicts"].verdict == "SAME"  # 3 < min_abs 1024
    assert verdicts["instructions"].verdict == "SAME"  # 0.2% < 0.5%
    assert "dram_read_bytes" not in verdicts  # collected on neither side: not judged
    assert kernel_verdict(list(verdicts.values())) == "SLOWER"


def test_a_worse_counter_in_a_measurably_faster_kernel_is_a_trade_not_a_regression() -> None:
    thresholds = load_thresholds()
    base = _kernel(**{"gpu__time_duration.sum": 1000.0, "launch__registers_per_thread": 32.0})
    cur = _kernel(**{"gpu__time_duration.sum": 700.0, "launch__registers_per_thread": 64.0})
    verdicts = judge_kernel(base, cur, thresholds)
    assert {v.key: v.verdict for v in verdicts} == {"time": "FASTER", "registers": "SLOWER"}
    assert kernel_verdict(verdicts) == "FASTER"


def test_bench_samples_win_over_ncu_duration() -> None:
    thresholds = load_thresholds()
    rng = np.random.default_rng(11)
    base = _kernel(tuple(_noisy(1.0, 0.01, rng)), **{"gpu__time_duration.sum": 1000.0})
    cur = _kernel(tuple(_noisy(1.05, 0.01, rng)), **{"gpu__time_duration.sum": 1000.0})
    (time,) = [v for v in judge_kernel(base, cur, thresholds) if v.key == "time"]
    assert time.source == "bench" and time.unit == "ms" and time.verdict == "SLOWER"


def test_metric_collected_on_one_side_only_is_unsure_not_zero() -> None:
    thresholds = load_thresholds()
    base = _kernel(**{"launch__registers_per_thread": 32.0})
    cur = _kernel()
    (regs,) = judge_kernel(base, cur, thresholds)
    assert regs.verdict == "UNSURE" and regs.current is None
    assert "not collected on the current" in regs.note


def test_user_thresholds_merge_over_the_defaults(tmp_path) -> None:
    config = tmp_path / "t.toml"
    config.write_text('[timing]\nnoise_floor_pct = 2.0\n\n[metrics.time]\nthreshold_pct = 1.0\n'
                      '\n[metrics.registers]\nenabled = false\n\n[metrics.occupancy]\n'
                      'metric = "sm__warps_active.avg.pct_of_peak_sustained_active"\n'
                      'direction = "higher"\nthreshold_pct = 5.0\n', encoding="utf-8")
    thresholds = load_thresholds(config)
    rules = {r.key: r for r in thresholds.rules}
    assert thresholds.timing.noise_floor_pct == 2.0
    assert thresholds.timing.bootstrap_resamples == 2000  # untouched default
    assert rules["time"].threshold_pct == 1.0 and rules["time"].kind == "timing"
    assert "registers" not in rules
    assert rules["occupancy"].direction == "higher" and rules["occupancy"].kind == "counter"
    assert rules["instructions"].threshold_pct == 0.5


@pytest.mark.parametrize("text", ['[metrics.time]\ndirection = "sideways"\n',
                                  "[timing\n", '[bogus]\nx = 1\n',
                                  '[metrics.x]\nthreshold_pct = 1.0\n'])
def test_invalid_thresholds_files_are_refused(tmp_path, text: str) -> None:
    config = tmp_path / "t.toml"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(ThresholdsError):
        load_thresholds(config)


def test_counter_noise_between_two_real_identical_runs_is_not_a_regression() -> None:
    """The largest counter moves seen between two consecutive `ncuh profile --all --bench`
    runs of the unchanged chain on an H200 (1024^3; docs/results/diff_noise_h200_1024.json):
    none may gate."""
    thresholds = load_thresholds()
    base = _kernel(**{
        "lts__t_sectors.sum": 63748320.0 / 32,  # double_buffered L2 bytes
        "dram__bytes_write.sum": 0.0,
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 111724.0,  # blocktile_1d
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 85622.0,
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 1134198.0,
    })
    cur = _kernel(**{
        "lts__t_sectors.sum": 66680928.0 / 32,  # +4.6%
        "dram__bytes_write.sum": 768.0,
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 127925.0,  # +14.5%
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 97089.0,  # +13.4%
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 1145665.0,  # +1.0%
    })
    verdicts = judge_kernel(base, cur, thresholds)
    assert {v.key: v.verdict for v in verdicts if v.verdict != "SAME"} == {}
    assert kernel_verdict(verdicts) == "SAME"


def test_a_counter_that_improved_alone_does_not_make_the_kernel_faster() -> None:
    thresholds = load_thresholds()
    base = _kernel(**{"gpu__time_duration.sum": 1000.0, "launch__registers_per_thread": 64.0})
    cur = _kernel(**{"gpu__time_duration.sum": 1001.0, "launch__registers_per_thread": 48.0})
    verdicts = judge_kernel(base, cur, thresholds)
    assert {v.key: v.verdict for v in verdicts}["registers"] == "FASTER"
    assert kernel_verdict(verdicts) == "SAME"


def test_a_real_bank_conflict_regression_still_gates() -> None:
    """The issue's example: shared-store bank conflicts 0 -> 16.3M."""
    thresholds = load_thresholds()
    base = _kernel(**{"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 0.0})
    cur = _kernel(**{"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 16.3e6})
    assert kernel_verdict(judge_kernel(base, cur, thresholds)) == "SLOWER"
