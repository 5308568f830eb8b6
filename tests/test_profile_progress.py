"""The progress of a run: ncu's pass progress read as it comes, a live line or plain lines."""

from __future__ import annotations

import io

import pytest

from harness.profile.progress import PassProgress, ProgressDisplay, passes_in

# What ncu 2025.3 printed for one `--set full` kernel on the H100, cut where it was flushed.
NCU_OUTPUT = [
    "==PROF== Connected to process 4242 (/usr/bin/python3.12)\n",
    '==PROF== Profiling "sgemm_register_tiled" - 0: 0%',
    "...",
    ".50%",
    "....",
    "100% - 38 passes\n",
    "==PROF== Disconnected from process 4242\n",
]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_pass_progress_follows_ncus_dots() -> None:
    progress = PassProgress()
    seen = []
    for number, piece in enumerate(NCU_OUTPUT):
        progress.feed(piece, now=float(number))
        seen.append((progress.percent, progress.passes))
    assert seen == [(None, None), (0.0, None), (30.0, None), (50.0, None), (90.0, None),
                    (100.0, 38), (100.0, 38)]
    assert progress.started == 1.0


def test_remaining_time_from_the_rate_so_far() -> None:
    progress = PassProgress()
    progress.feed('==PROF== Profiling "k" - 0: 0%', now=10.0)
    assert progress.remaining(11.0) is None  # no pass done yet: no rate
    progress.feed("....", now=14.0)  # 40% after 4 s
    assert progress.remaining(14.0) == pytest.approx(6.0)
    progress.feed(".50%....100% - 9 passes\n", now=20.0)
    assert progress.remaining(20.0) == 0.0


def test_passes_in_a_whole_output() -> None:
    assert passes_in("".join(NCU_OUTPUT)) == 38
    assert passes_in("==PROF== Connected\n==ERROR== no kernels\n") is None


# What ncu 2025.3.1 printed for the naive SGEMM at 4096 on the H100 (pages set): for a slow
# kernel it puts a warning between the dots, which go on on the next line.
SLOW_KERNEL_OUTPUT = [
    "==PROF== Connected to process 2508 (/usr/bin/python3.12)\n",
    '==PROF== Profiling "sgemm_naive": 0%',
    "\n==WARNING== Launching the workload is taking more time than expected. If this continues "
    "to hang, terminate the profile and re-try by profiling the range of all related launches "
    "using '--replay-mode range'.\n",
    "....50%",
    "....100% - 36 passes\n",
    'ncuh-runner-result: {"variant": "naive", "rel_error": 1.1457753512176696e-06}\n',
    "==PROF== Disconnected from process 2508\n",
]


def test_a_warning_between_the_dots_is_read_past() -> None:
    assert passes_in("".join(SLOW_KERNEL_OUTPUT)) == 36
    progress = PassProgress()
    seen = []
    for number, piece in enumerate(SLOW_KERNEL_OUTPUT):
        progress.feed(piece, now=float(number))
        seen.append((progress.percent, progress.passes))
    assert seen == [(None, None), (0.0, None), (0.0, None), (50.0, None), (100.0, 36),
                    (100.0, 36), (100.0, 36)]


@pytest.mark.parametrize("after", ["42\n", "0.5\n", "...\n", "100%\n"])
def test_a_programs_digits_or_dots_after_the_count_are_not_progress(after: str) -> None:
    text = '==PROF== Profiling "k": 0%....50%....100% - 36 passes\n' + after
    assert passes_in(text) == 36
    progress = PassProgress()
    progress.feed(text, now=0.0)
    assert (progress.percent, progress.passes) == (100.0, 36)


def test_a_number_is_not_a_step_while_the_dots_go_on() -> None:
    progress = PassProgress()
    progress.feed('==PROF== Profiling "k": 0%...50%\n1.5\n', now=0.0)
    assert progress.percent == 50.0


def test_runner_output_after_the_dots_is_not_progress() -> None:
    # the runner's JSON has dots and digits: a line that is not all dots stops the reading
    text = '==PROF== Profiling "k": 0%...\nncuh-runner-result: {"x": 1.5}\n'
    progress = PassProgress()
    progress.feed(text, now=0.0)
    assert progress.percent == 30.0 and progress.passes is None
    assert passes_in(text) is None


def test_plain_lines_when_not_a_terminal() -> None:
    stream, clock = io.StringIO(), Clock()
    display = ProgressDisplay(stream, live=False, clock=clock)
    display.start("naive_4096", 0, 2, "GPU 1")
    for piece in NCU_OUTPUT:
        display.output("naive_4096", piece)
    clock.now += 12.5
    display.finish("naive_4096", "ok", 12.5, 38)
    display.start("tiled_4096", 1, 2)
    display.finish("tiled_4096", "failed", 1.0, None, "no kernel was profiled")
    display.close()
    assert stream.getvalue().splitlines() == [
        "[1/2] naive_4096 on GPU 1: profiling",
        "[1/2] naive_4096 on GPU 1: ok 12.5 s, 38 passes",
        "[2/2] tiled_4096: profiling",
        "[2/2] tiled_4096: failed 1.0 s (no kernel was profiled)",
    ]
    assert "\r" not in stream.getvalue()


def test_live_line_shows_passes_elapsed_and_eta() -> None:
    stream, clock = io.StringIO(), Clock()
    display = ProgressDisplay(stream, live=True, clock=clock, interval=0.0)
    display.start("a_4096", 0, 3, "GPU 0")
    clock.now += 10.0
    display.finish("a_4096", "ok", 10.0, 38)
    display.start("b_4096", 1, 3, "GPU 0")
    display.output("b_4096", '==PROF== Profiling "b" - 0: 0%')
    clock.now += 4.0
    display.output("b_4096", "....")  # 40% after 4 s: 6 s left, then one more of ~10 s
    assert display.line() == "[2/3] b_4096 on GPU 0 40% of passes | 0:14 elapsed, ETA 0:16"
    assert stream.getvalue().startswith("\r")
    assert "[1/3] a_4096 on GPU 0: ok 10.0 s, 38 passes\n" in stream.getvalue()
    display.close()
    assert stream.getvalue().endswith("\r")  # the live line is wiped, not left behind
