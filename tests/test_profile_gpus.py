"""`ncuh profile --gpus`: one ncu per GPU at once, without a GPU.

ncu and nvidia-smi are the stand-ins in tests/standins (real executables on PATH: the children
really run, concurrently, in their own process groups); the reports they write are a real
recorded one. What is checked: the targets run at the same time on different GPUs, each child
pinned by UUID with its own ncu lock directory, the manifest says which GPU profiled what, and
mixed GPU models are refused unless asked.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from standin_support import (
    living_ncus,
    standins_fixture,  # noqa: F401  (the `standins` fixture)
)

from harness.cli import main
from harness.errors import NcuhError
from harness.profile import past_runs as history
from harness.profile import run as lib
from harness.profile.gpus import (
    Gpu,
    gpu_for_bus_id,
    lock_directory,
    parse_gpu_list,
    pinned_environment,
    select_gpus,
)
from harness.rundir.manifest import load_run

H100 = "NVIDIA H100 80GB HBM3"
SMI_ROWS = (
    "0, GPU-0a, 00000000:1B:00.0, NVIDIA H100 80GB HBM3, 9.0\n"
    "1, GPU-1b, 00000000:2C:00.0, NVIDIA H100 80GB HBM3, 9.0\n"
)


def _runs(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _union(runs: list[dict]) -> float:
    """Seconds during which at least one of the runs was running."""
    total, end = 0.0, float("-inf")
    for run in sorted(runs, key=lambda r: r["start"]):
        total += max(0.0, run["end"] - max(run["start"], end))
        end = max(end, run["end"])
    return total


def test_parse_gpu_list_reads_nvidia_smi_rows() -> None:
    gpus = parse_gpu_list(SMI_ROWS + "garbage line\n")
    assert gpus == [Gpu(0, H100, "GPU-0a", "00000000:1B:00.0", "9.0"),
                    Gpu(1, H100, "GPU-1b", "00000000:2C:00.0", "9.0")]


def test_select_gpus_all_or_by_index_and_clear_errors() -> None:
    gpus = parse_gpu_list(SMI_ROWS)
    assert select_gpus("all", gpus) == gpus
    assert select_gpus("1,0,1", gpus) == [gpus[1], gpus[0]]
    with pytest.raises(NcuhError, match="no GPU 2 on this host"):
        select_gpus("0,2", gpus)
    with pytest.raises(NcuhError, match="give 'all' or GPU indexes"):
        select_gpus("first", gpus)
    with pytest.raises(NcuhError, match="nvidia-smi lists no GPU"):
        select_gpus("all", [])


def test_mixed_models_are_refused_unless_allowed() -> None:
    gpus = [Gpu(0, H100, "GPU-0a", "0:1B:0.0"), Gpu(1, "NVIDIA H200", "GPU-1b", "0:2C:0.0")]
    with pytest.raises(NcuhError, match=r"mixes GPU models \(NVIDIA H100 80GB HBM3; NVIDIA H200\)"):
        select_gpus("all", gpus)
    assert select_gpus("all", gpus, allow_mismatch=True) == gpus
    assert select_gpus("1", gpus) == [gpus[1]]  # one model is no mix


def test_each_gpu_gets_its_own_ncu_lock_directory(tmp_path: Path) -> None:
    a, b = parse_gpu_list(SMI_ROWS)
    env_a = pinned_environment({"PATH": "/bin"}, a, tmp_path)
    env_b = pinned_environment({"PATH": "/bin"}, b, tmp_path)
    assert env_a["CUDA_VISIBLE_DEVICES"] == "GPU-0a" and env_b["CUDA_VISIBLE_DEVICES"] == "GPU-1b"
    assert env_a["TMPDIR"] != env_b["TMPDIR"]
    assert Path(env_a["TMPDIR"]) == lock_directory(a, tmp_path) and Path(env_a["TMPDIR"]).is_dir()
    assert env_a["PATH"] == "/bin"


def test_a_pinned_program_keeps_its_inductor_cache_where_it_has_it_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The moved TMPDIR must not move a torch.compile'd program's cache: PyTorch's own default
    is the temporary directory the program alone sees."""
    (gpu, _) = parse_gpu_list(SMI_ROWS)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr("getpass.getuser", lambda: "ada/lovelace")
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    (tmp_path / "tmp").mkdir()
    try:
        env = pinned_environment({"PATH": "/bin"}, gpu, tmp_path / "locks")
        cache = tmp_path / "tmp" / "torchinductor_ada_lovelace"
        assert env["TORCHINDUCTOR_CACHE_DIR"] == str(cache)
        assert env["TMPDIR"] == str(lock_directory(gpu, tmp_path / "locks"))
        chosen = pinned_environment({"TORCHINDUCTOR_CACHE_DIR": "/data/ind"}, gpu, tmp_path)
        assert chosen["TORCHINDUCTOR_CACHE_DIR"] == "/data/ind"  # the user's own stays

        def nameless() -> str:
            raise KeyError("getpwuid(): uid not found: 4242")

        monkeypatch.setattr("getpass.getuser", nameless)  # a uid without a passwd entry
        assert "TORCHINDUCTOR_CACHE_DIR" not in pinned_environment({}, gpu, tmp_path / "locks")
    finally:
        tempfile.tempdir = None


def test_bus_ids_match_in_cuda_and_smi_spelling() -> None:
    gpus = parse_gpu_list(SMI_ROWS)
    assert gpu_for_bus_id(gpus, "0000:2C:00.0") == gpus[1]
    assert gpu_for_bus_id(gpus, "0000:3D:00.0") is None and gpu_for_bus_id(gpus, None) is None


def test_gpus_all_profiles_on_both_gpus_at_once(tmp_path: Path, standins: Path) -> None:
    out = tmp_path / "runs"
    result = CliRunner().invoke(main, [
        "profile", "--variant", "naive", "--variant", "register_tiled", "--size", "256",
        "--size", "512", "--gpus", "all", "--metrics-csv", "--out", str(out)],
        catch_exceptions=False)
    assert result.exit_code == 0, result.output
    runs = _runs(standins)
    assert len(runs) == 4
    # Both GPUs busy at once: the first run on each started before either's first ended.
    by_gpu: dict[str, list[dict]] = {}
    for run in sorted(runs, key=lambda r: r["start"]):
        by_gpu.setdefault(run["gpu"], []).append(run)
    assert sorted(by_gpu) == ["GPU-0a", "GPU-1b"]
    first_a, first_b = by_gpu["GPU-0a"][0], by_gpu["GPU-1b"][0]
    assert max(first_a["start"], first_b["start"]) < min(first_a["end"], first_b["end"])
    assert {r["tmpdir"] for r in by_gpu["GPU-0a"]} != {r["tmpdir"] for r in by_gpu["GPU-1b"]}
    # Four 1.5 s runs on two GPUs: the time any ncu ran is about half their sum.
    assert _union(runs) < 0.75 * sum(r["end"] - r["start"] for r in runs)

    run = load_run(next(out.iterdir()))
    entries = run.manifest["entries"]
    assert [e["label"] for e in entries] == ["naive_256", "naive_512", "register_tiled_256",
                                             "register_tiled_512"]  # plan order, not end order
    pinned = {r["label"]: r["gpu"] for r in runs}
    for entry in entries:
        assert entry["status"] == "ok" and entry["passes"] == 30
        assert entry["gpu"]["uuid"] == pinned[entry["label"]]
        assert entry["gpu"]["name"] == H100 and entry["gpu"]["index"] in (0, 1)
    assert sorted(g["uuid"] for g in run.manifest["gpus"]) == ["GPU-0a", "GPU-1b"]
    assert run.manifest["metrics"]["status"] == "ok"
    # Plain progress lines (not a terminal): one start and one end line per target.
    lines = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 8 and sum(": ok " in line for line in lines) == 4
    assert any(" on GPU 1: ok" in line for line in lines)
    # The summary on stdout names each entry's pass count, as ncu printed it.
    assert [line.split()[-2:] for line in result.stdout.splitlines()[:4]] == [["30", "passes"]] * 4


def test_gpus_refuses_mixed_models_before_any_ncu(
    tmp_path: Path, standins: Path, monkeypatch: pytest.MonkeyPatch, golden,
) -> None:
    monkeypatch.setenv("NCUH_FAKE_GPU_NAMES", f"{H100};NVIDIA H200")
    result = CliRunner().invoke(main, ["profile", "--variant", "naive", "--size", "256",
                                       "--gpus", "all", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    golden("mixed_gpu_models", result.stderr)
    assert not standins.exists() and list(tmp_path.iterdir()) == []
    result = CliRunner().invoke(main, ["profile", "--variant", "naive", "--size", "256",
                                       "--gpus", "all", "--allow-mismatch", "--out",
                                       str(tmp_path)])
    assert result.exit_code == 0, result.output


def test_a_fatal_error_on_one_gpu_stops_the_other(
    tmp_path: Path, standins: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = lib.profile_target

    def failing(target, *args, **kwargs):  # type: ignore[no-untyped-def]
        if target.label == "register_tiled_256":
            from harness.errors import CounterPermissionError

            raise CounterPermissionError("no counters")
        return original(target, *args, **kwargs)

    monkeypatch.setattr(lib, "profile_target", failing)
    monkeypatch.setenv("NCUH_FAKE_NCU_SECONDS", "20")
    result = CliRunner().invoke(main, ["profile", "--variant", "naive", "--variant",
                                       "register_tiled", "--size", "256", "--gpus", "all",
                                       "--out", str(tmp_path)])
    assert result.exit_code == 2 and "ncuh: error: no counters" in result.stderr
    # the 20 s ncu on the other GPU was stopped: it never finished (a finished stand-in logs
    # its run) and is not left running
    assert not standins.exists() or "naive_256" not in standins.read_text()
    assert living_ncus(standins) == []
    assert list(tmp_path.iterdir()) == []  # no run directory, not even an incomplete one


def test_longest_first_puts_the_unknown_then_the_longest_first() -> None:
    from harness.profile.schedule import longest_first

    assert longest_first([1.0, None, 9.0, 3.0, 9.0, None]) == [1, 5, 2, 4, 3, 0]
    assert longest_first([]) == []
    assert longest_first([None, None]) == [0, 1]


def test_run_queue_hands_out_in_the_order_given_and_answers_in_item_order() -> None:
    import threading

    from harness.profile.schedule import Slot, run_queue

    started: list[int] = []
    lock = threading.Lock()
    both_first = threading.Barrier(2, timeout=60)  # neither slot takes a third before both ran

    def work(index: int, item: str, slot: Slot, upcoming: object) -> str:
        with lock:
            started.append(index)
        if index in (4, 2):
            both_first.wait()
        return item.upper()

    slots = (Slot(Gpu(0, "GPU-0a", "a", H100, "9.0")), Slot(Gpu(1, "GPU-1b", "b", H100, "9.0")))
    items = ["a", "b", "c", "d", "e"]
    assert run_queue(items, slots, work, order=[4, 2, 0, 1, 3]) == ["A", "B", "C", "D", "E"]
    assert set(started[:2]) == {4, 2} and sorted(started) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="every item once"):
        run_queue(items, slots, work, order=[0, 0, 1, 2, 3])


@pytest.mark.parametrize("gpus", [1, 2])
def test_run_queue_gives_a_slot_the_item_it_reserved_next(gpus: int) -> None:
    """`upcoming()` sets the next item aside for the asking slot (the same one when asked
    twice), that slot runs it next, and no other slot runs it; None once nothing is left."""
    import threading

    from harness.profile.schedule import Slot, run_queue

    ran: dict[int, list[int]] = {}
    reserved: dict[int, list[int | None]] = {}
    lock = threading.Lock()

    def work(index: int, item: str, slot: Slot, upcoming) -> str:  # type: ignore[no-untyped-def]
        number = slot.gpu.index if slot.gpu else 0
        following = upcoming()
        assert upcoming() == following  # asked again: the same reservation
        with lock:
            ran.setdefault(number, []).append(index)
            reserved.setdefault(number, []).append(following[0] if following else None)
        time.sleep(0.02)
        return item

    slots = tuple(Slot(Gpu(n, f"GPU-{n}", f"{n}", H100, "9.0")) for n in range(gpus))
    items = [str(n) for n in range(7)]
    assert run_queue(items, slots, work) == items
    assert sorted(i for indices in ran.values() for i in indices) == list(range(7))
    for number, indices in ran.items():
        others_ran = {i for other, done in ran.items() if other != number for i in done}
        others_reserved = {i for other, kept in reserved.items() if other != number
                           for i in kept if i is not None}
        # What a slot reserved is what it ran next, unless a slot with nothing left took it
        # (with one GPU, always); with nothing left to reserve, a slot may take what another
        # slot reserved.
        for wanted, got in zip(reserved[number], indices[1:], strict=False):
            assert got == wanted or (gpus > 1 and (
                (wanted is None and got in others_reserved) or wanted in others_ran))
        assert reserved[number][-1] is None or reserved[number][-1] in others_ran


def test_a_slot_with_nothing_left_takes_what_a_busy_slot_reserved() -> None:
    """Two GPUs, one slow item first: the GPU on it reserves the next item while the other
    GPU finishes everything else; that GPU then takes the reservation instead of idling."""
    import threading

    from harness.profile.schedule import Slot, run_queue

    ran: dict[int, list[int]] = {}
    lock = threading.Lock()
    first_taken = threading.Event()
    finished: list[int] = []
    others_done = threading.Event()
    slow_saw_them_done: list[bool] = []

    def work(index: int, item: str, slot: Slot, upcoming) -> str:  # type: ignore[no-untyped-def]
        number = slot.gpu.index if slot.gpu else 0
        with lock:
            ran.setdefault(number, []).append(index)
        if index == 0:
            first_taken.set()
            upcoming()  # sets item 2 aside while item 0 runs long
            # item 0 runs until both others are done: had its slot kept item 2 for after it,
            # they never would be, and the wait would give up
            slow_saw_them_done.append(others_done.wait(30))
            return item
        first_taken.wait(30)
        with lock:
            finished.append(index)
            if sorted(finished) == [1, 2]:
                others_done.set()
        return item

    slots = tuple(Slot(Gpu(n, f"GPU-{n}", f"{n}", H100, "9.0")) for n in range(2))
    assert run_queue(["slow", "a", "b"], slots, work) == ["slow", "a", "b"]
    assert slow_saw_them_done == [True]  # item 2 ran beside the slow item, not after it
    (slow_gpu,) = [number for number, indices in ran.items() if 0 in indices]
    (other_gpu,) = [number for number in ran if number != slow_gpu]
    assert ran[slow_gpu] == [0]  # its reservation went to the idle GPU
    assert sorted(ran[other_gpu]) == [1, 2]


def _earlier_run(out: Path, name: str, section_set: str, entries: list[dict]) -> None:
    (out / name).mkdir(parents=True)
    (out / name / "manifest.json").write_text(json.dumps(
        {"ncu": {"set": section_set}, "entries": entries}))


def test_previous_seconds_come_from_the_newest_run_with_the_same_set(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    targets = lib.plan(lib.ProfileRequest(variants=("naive", "register_tiled"),
                                          sizes=("256",))).targets
    ok = {"status": "ok"}
    _earlier_run(out, "20261101-000000-all", "pages", [
        {**ok, "label": "naive_256", "seconds": 3.0},
        {**ok, "label": "register_tiled_256", "seconds": 2.0}])
    _earlier_run(out, "20261102-000000-all", "full", [{**ok, "label": "naive_256", "seconds": 9}])
    _earlier_run(out, "20261103-000000-all", "pages", [
        {**ok, "label": "naive_256", "seconds": 5},
        {"status": "failed", "label": "register_tiled_256", "seconds": 0.1}])
    (out / "20261104-000000-broken").mkdir()
    (out / "20261104-000000-broken" / "manifest.json").write_text("{not json")
    pages = lib.NcuSettings()
    past = history.PastEntry
    assert history.previous_entries(out, targets, pages) == [past(5.0), past(2.0)]
    assert history.previous_entries(out, targets, lib.NcuSettings(set="full")) == [past(9.0), None]
    assert history.previous_entries(tmp_path / "nothing", targets, pages) == [None, None]


def test_previous_work_leaves_out_the_start_an_entry_paid_itself(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    targets = lib.plan(lib.ProfileRequest(variants=("naive", "register_tiled", "smem_tiled"),
                                          sizes=("256",))).targets
    ok = {"status": "ok"}
    _earlier_run(out, "20261101-000000-all", "pages", [
        {**ok, "label": "naive_256", "seconds": 25.3, "start_s": 2.5},
        {**ok, "label": "register_tiled_256", "seconds": 3.8, "start_s": None},
        {**ok, "label": "smem_tiled_256", "seconds": 1.0, "start_s": True}])  # not seconds
    found = history.previous_entries(out, targets, lib.NcuSettings())
    assert found == [history.PastEntry(25.3, 2.5), history.PastEntry(3.8), history.PastEntry(1.0)]
    assert [past.work_s for past in found if past] == [pytest.approx(22.8), 3.8, 1.0]
    assert history.PastEntry(2.0, 3.0).work_s == 0.0  # a start longer than the entry: none left


def test_gpus_hand_the_longest_out_first_from_an_earlier_run(
    tmp_path: Path, standins: Path
) -> None:
    out = tmp_path / "runs"
    ok = {"status": "ok"}
    _earlier_run(out, "20261101-000000-all", "pages", [
        {**ok, "label": "naive_256", "seconds": 1.0},
        {**ok, "label": "naive_512", "seconds": 2.0},
        {**ok, "label": "register_tiled_256", "seconds": 8.0},
        {**ok, "label": "register_tiled_512", "seconds": 9.0}])
    result = CliRunner().invoke(main, [
        "profile", "--variant", "naive", "--variant", "register_tiled", "--size", "256",
        "--size", "512", "--gpus", "all", "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    starts = [run["label"] for run in sorted(_runs(standins), key=lambda r: r["start"])]
    assert set(starts[:2]) == {"register_tiled_512", "register_tiled_256"}
    newest = sorted(path for path in out.iterdir() if path.name != "20261101-000000-all")[-1]
    assert [e["label"] for e in load_run(newest).manifest["entries"]] == [
        "naive_256", "naive_512", "register_tiled_256", "register_tiled_512"]  # plan order


def test_plan_slots_shares_the_chain_out_so_both_gpus_end_together() -> None:
    from harness.profile.schedule import plan_slots

    # The SGEMM chain at 4096 on an H200, naive without its 2.5 s start.
    work = [22.8, 13.6, 7.8, 4.6, 3.8, 2.9, 2.8, 2.9, 2.8, 3.2, 3.2]
    plan = plan_slots(work, 2)
    assert plan is not None and sorted(i for part in plan for i in part) == list(range(11))
    loads = [sum(work[i] for i in part) for part in plan]
    assert max(loads) - min(loads) < 0.05  # 35.2 and 35.2
    assert all(part == sorted(part, key=lambda i: -work[i]) for part in plan)  # longest first
    assert plan[0][0] == 0 and plan[1][0] == 1  # the two longest start at once


def test_plan_slots_mends_what_longest_first_alone_gets_wrong() -> None:
    from harness.profile.schedule import plan_slots

    # LPT alone: 3+2+2 | 3+2, the longest 7; one swap makes it 2+2+2 | 3+3.
    assert plan_slots([3, 3, 2, 2, 2], 2) == [[2, 3, 4], [0, 1]]
    assert plan_slots([5, 4, 3, 3, 3, 2], 3) == [[0, 5], [1, 4], [2, 3]]
    assert plan_slots([1.0, 1.0], 3) == [[0], [1], []]  # more slots than items


def test_plan_slots_needs_several_slots_and_every_time() -> None:
    from harness.profile.schedule import plan_slots

    assert plan_slots([3.0, None, 1.0], 2) is None  # the shared queue balances instead
    assert plan_slots([3.0, 1.0], 1) is None
    assert plan_slots([], 2) is None


def test_a_planned_slot_runs_its_own_items_and_takes_the_last_of_another_when_worth_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.profile import schedule

    clock = [100.0]
    monkeypatch.setattr(schedule.time, "monotonic", lambda: clock[0])
    items = ["long", "a", "b", "c", "d"]
    estimates = [10.0, 3.0, 2.0, 1.0, 1.0]

    def handout(fresh_s: float) -> schedule._Handout[str]:
        rule = schedule.TakingRule(estimates, lambda: fresh_s)
        return schedule._Handout(items, [0, 1, 2, 3, 4], rule, plan=[[0, 3, 4], [1, 2]])

    planned = handout(fresh_s=0.5)
    assert planned.take(1) == (1, "a") and planned.take(0) == (0, "long")
    assert planned.reserve(0) == (3, "c")  # its own next, not the shared order's next
    assert planned.take(1) == (2, "b")
    clock[0] = 105.0  # slot 1 is done; slot 0 has 5 s of long, then c and d (1 s each)
    assert planned.take(1) == (4, "d")  # the last planned item: 0.5 + 1 s < 7 s
    assert planned.take(1) == (3, "c")  # then the reservation, by the taking rule
    clock[0] = 110.0
    assert planned.take(0) is None and planned.take(1) is None

    clock[0] = 200.0
    late = handout(fresh_s=2.0)
    late.take(0), late.take(1), late.reserve(0), late.take(1)
    clock[0] = 204.0  # long has 6 s left, c and d 1 s each: 8 s > 2 + 1
    assert late.take(1) == (4, "d")
    clock[0] = 208.5  # long has 1.5 s left, less than a 2 s start: c stays with slot 0
    assert late.take(1) is schedule.WAIT
    clock[0] = 210.0
    assert late.take(0) == (3, "c") and late.take(1) is None


def test_a_planned_slot_leaves_a_short_remainder_to_its_owner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.profile import schedule

    clock = [0.0]
    monkeypatch.setattr(schedule.time, "monotonic", lambda: clock[0])

    def handout() -> schedule._Handout[str]:
        rule = schedule.TakingRule([4.0, 1.0, 1.0], lambda: 2.5)
        planned = schedule._Handout(["a", "b", "c"], [0, 1, 2], rule, plan=[[0, 2], [1]])
        assert planned.take(0) == (0, "a") and planned.take(1) == (1, "b")
        return planned

    clock[0] = 0.0
    early = handout()
    clock[0] = 1.0  # a has 3 s left, then c: 4 s, more than a 2.5 s start and c's 1 s
    assert early.take(1) == (2, "c")
    clock[0] = 0.0
    late = handout()
    clock[0] = 2.0  # a has 2 s left, then c: 3 s, less than 3.5: slot 1 waits
    assert late.take(1) is schedule.WAIT
    clock[0] = 4.0
    assert late.take(0) == (2, "c") and late.take(1) is None


def test_run_queue_refuses_a_plan_that_does_not_fit() -> None:
    from harness.profile.schedule import Slot, run_queue

    slots = tuple(Slot(Gpu(n, f"GPU-{n}", f"{n}", H100, "9.0")) for n in range(2))
    for plan in ([[0, 1]], [[0], [0]], [[0], [2]]):
        with pytest.raises(ValueError, match="name every item once"):
            run_queue(["a", "b"], slots, lambda *args: None, plan=plan)
    assert run_queue(["a", "b"], slots, lambda index, item, slot, upcoming: item,
                     plan=[[], [1, 0]]) == ["a", "b"]


def test_gpus_plans_from_the_last_run_without_the_starts_it_paid(
    tmp_path: Path, standins: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.profile import schedule

    monkeypatch.setenv("NCUH_FAKE_NCU_SECONDS", "0.2")
    monkeypatch.setenv("NCUH_FAKE_NCU_SECONDS_OF", "naive_256=2.0")
    argv = ["profile", "--variant", "naive", "--variant", "register_tiled", "--size", "256",
            "--size", "512", "--gpus", "all", "--out", str(tmp_path / "runs")]
    plans: list[object] = []
    original = schedule.run_queue

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        plans.append(kwargs.get("plan"))
        return original(*args, **kwargs)

    monkeypatch.setattr(lib, "run_queue", recording)
    assert CliRunner().invoke(main, argv).exit_code == 0
    (first_dir,) = (tmp_path / "runs").iterdir()
    first = load_run(first_dir).manifest["entries"]
    fresh = [e for e in first if e["head_start_s"] is None]
    assert len(fresh) >= 2  # each GPU's first target paid its own start, and says how long
    assert all(0 < e["start_s"] <= e["seconds"] for e in fresh)
    assert all(e["start_s"] is None for e in first if e["head_start_s"] is not None)

    work = [e["seconds"] - (e["start_s"] or 0.0) for e in first]
    labels = [e["label"] for e in first]
    assert labels[0] == "naive_256"
    plan = schedule.plan_slots(work, 2)
    assert plan is not None and [labels[0]] in [[labels[i] for i in part] for part in plan]
    # naive, planned alone, holds its end until the other GPU's have ended: that GPU has
    # nothing to take from naive's, nor naive's from it, however the two run
    monkeypatch.setenv("NCUH_FAKE_NCU_EVENTS", str(tmp_path / "events"))
    monkeypatch.setenv("NCUH_FAKE_NCU_AWAIT", "naive_256/end=" + "+".join(
        f"{label}/end" for label in labels[1:]))
    assert CliRunner().invoke(main, argv).exit_code == 0
    assert plans == [None, plan]
    (second,) = [p for p in (tmp_path / "runs").iterdir() if p != first_dir]
    entries = load_run(second).manifest["entries"]
    (naive_gpu,) = {e["gpu"]["index"] for e in entries if e["label"] == "naive_256"}
    assert [e["label"] for e in entries if e["gpu"]["index"] == naive_gpu] == ["naive_256"]


def test_plan_slots_spreads_items_that_took_no_time() -> None:
    from harness.profile.schedule import plan_slots

    plan = plan_slots([0.0] * 5, 3)
    assert plan is not None and sorted(len(part) for part in plan) == [1, 2, 2]


def test_an_idle_planned_slot_looks_past_the_busiest_slot_when_its_last_item_is_too_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.profile import schedule

    clock = [0.0]
    monkeypatch.setattr(schedule.time, "monotonic", lambda: clock[0])
    # a (6 s) runs on slot 0 with x (5 s) to follow; b (9 s) on slot 1 with y (0.5 s); c on
    # slot 2, which then has nothing of its own. A fresh start costs 3 s.
    rule = schedule.TakingRule([6.0, 9.0, 0.1, 5.0, 0.5], lambda: 3.0)
    handout = schedule._Handout(list("abcxy"), [0, 1, 2, 3, 4], rule,
                                plan=[[0, 3], [1, 4], [2]])
    assert [handout.take(n) for n in range(3)] == [(0, "a"), (1, "b"), (2, "c")]
    clock[0] = 5.0
    # Slot 0 has 1 + 5 = 6 s left, the most, but x here would end at 3 + 5 = 8 s; slot 1 has
    # 4 + 0.5 s, and y here ends at 3.5 s: y is taken.
    assert handout.take(2) == (4, "y")
    assert handout.take(2) is schedule.WAIT  # x stays with slot 0
    assert handout.take(1) is schedule.WAIT  # b is done: slot 1 waits on x the same way
    assert handout.take(0) == (3, "x")
    assert [handout.take(n) for n in range(3)] == [None, None, None]


def test_with_own_starts_adds_the_typical_start_to_each_target() -> None:
    past = history.PastEntry
    before = [past(25.0, 4.0), past(3.0), past(10.0, 2.0), None, past(5.0, 3.0)]
    assert history.with_own_starts(before) == [24.0, 6.0, 11.0, None, 5.0]
    assert history.with_own_starts([past(3.0), None]) == [3.0, None]  # no start seen: none added


def test_the_taking_rule_knows_each_items_work_without_its_start() -> None:
    from harness.profile.schedule import TakingRule

    assert TakingRule([5.0, 2.0]).work(0) == 5.0  # no work given: the estimates
    assert TakingRule([5.0, 2.0], work_s=[3.0, 2.0]).work(0) == 3.0
    assert TakingRule([5.0]).work(3) is None


def test_previous_times_from_a_run_on_as_many_gpus_count_first(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    targets = lib.plan(lib.ProfileRequest(variants=("naive", "register_tiled"),
                                          sizes=("256",))).targets
    ok = {"status": "ok"}
    on = [{"uuid": "GPU-0a", "index": 0}, {"uuid": "GPU-1b", "index": 1}]
    _earlier_run(out, "20261101-000000-all", "pages", [  # both GPUs at once
        {**ok, "label": "naive_256", "seconds": 6.0, "gpu": on[0]},
        {**ok, "label": "sgemm_other", "seconds": 1.0, "gpu": on[1]}])
    _earlier_run(out, "20261102-000000-all", "pages", [  # one GPU, newer
        {**ok, "label": "naive_256", "seconds": 5.0, "gpu": on[1]},
        {**ok, "label": "register_tiled_256", "seconds": 2.0, "gpu": on[1]}])
    past = history.PastEntry
    assert history.previous_entries(out, targets, lib.NcuSettings(), 2) == [past(6.0), past(2.0)]
    assert history.previous_entries(out, targets, lib.NcuSettings(), 1) == [past(5.0), past(2.0)]
    assert history.previous_entries(out, targets, lib.NcuSettings(), 3) == [past(5.0), past(2.0)]


def test_previous_times_survive_hostile_manifests(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    targets = lib.plan(lib.ProfileRequest(variants=("naive",), sizes=("256",))).targets
    ok = {"status": "ok", "label": "naive_256"}
    _earlier_run(out, "20261101-000000-all", "pages", [{**ok, "seconds": 4.0}])
    for name, manifest in [
        ("20261102-a", '{"ncu": {"set": "pages"}, "entries": 5}'),
        ("20261102-b", '{"ncu": {"set": "pages"}, "entries": true}'),
        ("20261102-c", "[" * 100_000 + "]" * 100_000),
        ("20261102-d", json.dumps({"ncu": {"set": "pages"}, "entries": [
            {**ok, "seconds": 10**400}, {**ok, "seconds": 1.0, "start_s": 10**400,
                                        "gpu": ["x"]}]})),
    ]:
        (out / name).mkdir()
        (out / name / "manifest.json").write_text(manifest)
    assert history.previous_entries(out, targets, lib.NcuSettings()) == [history.PastEntry(1.0)]


def test_a_merged_run_counts_the_gpus_of_each_shard(tmp_path: Path) -> None:
    """Two Slurm shards on two GPUs ran apart: the merged run is a one-GPU history."""
    out = tmp_path / "runs"
    targets = lib.plan(lib.ProfileRequest(variants=("naive", "register_tiled"),
                                          sizes=("256",))).targets
    ok = {"status": "ok"}
    _earlier_run(out, "20261101-000000-all", "pages", [  # both GPUs at once
        {**ok, "label": "naive_256", "seconds": 6.0, "gpu": {"uuid": "GPU-0a"}},
        {**ok, "label": "register_tiled_256", "seconds": 3.0, "gpu": {"uuid": "GPU-1b"}}])
    _earlier_run(out, "20261102-000000-merged", "pages", [
        {**ok, "label": "naive_256", "seconds": 5.0, "gpu": {"uuid": "GPU-0a"}, "shard": "a"},
        {**ok, "label": "register_tiled_256", "seconds": 2.0, "gpu": {"uuid": "GPU-1b"},
         "shard": "b"}])
    past = history.PastEntry
    assert history.previous_entries(out, targets, lib.NcuSettings(), 1) == [past(5.0), past(2.0)]
    assert history.previous_entries(out, targets, lib.NcuSettings(), 2) == [past(6.0), past(3.0)]


def test_without_head_starts_each_waiting_target_counts_its_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.profile import schedule

    clock = [0.0]
    monkeypatch.setattr(schedule.time, "monotonic", lambda: clock[0])

    def handout(queued_start_s: float) -> schedule._Handout[str]:
        rule = schedule.TakingRule([2.0, 0.1, 1.0, 1.0], lambda: 2.0,
                                   queued_start_s=queued_start_s)
        planned = schedule._Handout(list("abcd"), [0, 1, 2, 3], rule,
                                    plan=[[0, 2, 3], [1]])
        clock[0] = 0.0
        assert planned.take(0) == (0, "a") and planned.take(1) == (1, "b")
        clock[0] = 1.0  # b is done; a has 1 s left
        return planned

    # a's 1 s, then c and d: 3 s, no more than a 2 s start and d's 1 s here.
    assert handout(0.0).take(1) is schedule.WAIT
    # Each of c and d will pay a 2 s start on slot 0 too: 7 s left there, d is taken.
    assert handout(2.0).take(1) == (3, "d")
