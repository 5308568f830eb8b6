"""A program's run (`ncuh profile --top`) written up, diffed and kept in history, on real
reports of PyTorch's kernels (program_support): the ranking index, the kernel pages, one page
set per process, and a kernel matched across runs by its name and launch shape.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pages_support import unpacked_copy
from program_support import GEMM, ProgramNcu, flash_name, program_run, step

from harness.cli import main
from harness.diff import diff_runs
from harness.errors import ReportError
from harness.history import add_runs, open_store
from harness.history.series import build_series
from harness.rundir import kernel_key, load_run

GEMM_KEY = f"{GEMM} <<<2x66x1, 384x1x1>>>"


def writeup(*sources: Path, out: Path) -> Any:
    return CliRunner().invoke(main, ["writeup", *map(str, sources), "--out", str(out)],
                              catch_exceptions=False)


@pytest.fixture(scope="module")
def one_step(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return program_run(monkeypatch, tmp_path_factory.mktemp("runs"), step(), "train-step",
                           top=3)


@pytest.fixture(scope="module")
def one_step_pages(one_step: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pages")
    result = writeup(one_step, out=out)
    assert result.exit_code == 0, result.output
    return out


# ------------------------------------------------------------------ pages


def test_the_index_ranks_the_kernels_with_share_and_bound(one_step_pages: Path,
                                                          golden: Any) -> None:
    golden("index", (one_step_pages / "index.md").read_text())


def test_each_profiled_kernel_has_a_linked_page_in_both_formats(one_step_pages: Path) -> None:
    index = (one_step_pages / "index.md").read_text()
    links = re.findall(r"\]\(([^)]+\.md)\)", index)
    assert len(links) == 3 and all((one_step_pages / link).is_file() for link in links)
    html = (one_step_pages / "index.html").read_text()
    assert all(f'href="{link.removesuffix(".md")}.html"' in html for link in links)
    assert (one_step_pages / "plots" / "gpu_time.png").is_file()


def test_a_kernel_page_says_where_it_stands_in_the_program(one_step_pages: Path,
                                                          golden: Any) -> None:
    page = (one_step_pages / "02-nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT.md").read_text()
    assert page.startswith(f"# 2\\. {GEMM}\n")
    golden("gemm_in_the_program", page[page.index("### In the program"):
                                       page.index("### Benchmark Results")])
    # the chain page's findings, from the real report
    assert "### In-Depth Findings" in page and "Tensor (FP) pipe at 95.2%" in page
    assert "Profiled duration (ncu, one launch): 0.216864 ms" in page


def test_a_report_of_another_launch_is_said_and_not_judged(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any) -> None:
    run = program_run(monkeypatch, tmp_path / "runs", step(second_shape=True), "shapes", top=4)
    result = writeup(run, out=tmp_path / "pages")
    assert result.exit_code == 0, result.output
    index = (tmp_path / "pages" / "index.md").read_text()
    row = next(line for line in index.splitlines() if "| 1x66x1 |" in line)
    assert row.endswith("| not judged: the report holds another launch (see its page) |")
    page = next((tmp_path / "pages").glob("03-*.md")).read_text()
    assert f"**Not the ranked launch:** the report holds {GEMM} launched" in page
    assert "2x66x1, 384x1x1>>>: the second pass's launch count led to another" in page
    assert "led to another launch than the ranked one" in result.stderr
    # diff compares it under its own name and launch, never as the ranked kernel
    result = CliRunner().invoke(main, ["diff", str(run), str(run)])
    assert result.exit_code == 0, result.output
    assert f"holds {GEMM} <<<2x66x1, 384x1x1>>>, not the ranked launch" in result.stderr
    assert f"{GEMM} <<<1x66x1, 384x1x1>>> (compared under its own name)" in result.stderr
    assert f"| ⚪ SAME | {GEMM} |" in result.stdout.replace("\\_", "_")


def test_a_failed_kernel_is_listed_with_why(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path, golden: Any) -> None:
    fake = ProgramNcu(step())
    answer = fake.answer

    def fail_the_gemm(argv: list[str]) -> tuple[int, str]:
        if "-k" in argv and argv[argv.index("-k") + 1] == GEMM:
            return 1, "==ERROR== The application returned an error code (1).\n"
        return answer(argv)

    fake.answer = fail_the_gemm  # type: ignore[method-assign]
    run = program_run(monkeypatch, tmp_path / "runs", step(), "failed", fake=fake)
    result = writeup(run, out=tmp_path / "pages")
    assert result.exit_code == 0, result.output
    index = (tmp_path / "pages" / "index.md").read_text()
    assert ("| not judged: failed: the profiled program exited with status 1 |"
            in index.splitlines()[9])
    (paragraph,) = [line for line in index.splitlines() if line.startswith("The first pass")]
    golden("one_of_two_profiled", paragraph)


def test_each_process_gets_its_pages_under_an_index_of_processes(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    launches = [launch for pair in zip(step(4242, 0), step(4343, 1), strict=True)
                for launch in pair]
    run = program_run(monkeypatch, tmp_path / "runs", launches, "ranks", top=1,
                      program=("python", "-m", "torch.distributed.run", "train.py"))
    result = writeup(run, out=tmp_path / "pages")
    assert result.exit_code == 0, result.output
    top = (tmp_path / "pages" / "index.md").read_text()
    assert "| [GPU 0 (process 4242)](gpu0/index.md) | 10 | 4 | 1.913 | 53.6% |" in top
    assert "| [GPU 1 (process 4343)](gpu1/index.md) | 10 | 4 | 1.913 | 53.6% |" in top
    for key in ("gpu0", "gpu1"):
        index = (tmp_path / "pages" / key / "index.md").read_text()
        assert "[All processes](../index.md)" in index
        (link,) = re.findall(r"\]\(([^)]+\.md)\)", index.split("| # |")[1])
        page = (tmp_path / "pages" / key / link).read_text()
        process = {"gpu0": 4242, "gpu1": 4343}[key]
        assert f"of GPU {key[-1]} (process {process}) by GPU time" in page
        assert "[index](index.md)" in page
    assert result.stdout.splitlines()[-1].endswith("pages/index.html")


def test_a_programs_run_is_written_up_alone(one_step: Path, tmp_path: Path) -> None:
    result = writeup(one_step, Path("tests/fixtures/h100_pages_naive_1024.ncu-rep"),
                     out=tmp_path / "pages")
    assert result.exit_code == 2
    assert "is written up on its own" in result.stderr and not (tmp_path / "pages").exists()


# ------------------------------------------------------------------ diff


@pytest.fixture(scope="module")
def twelve_layers(tmp_path_factory: pytest.TempPathFactory) -> dict[float, Path]:
    """Runs of a twelve-layer step, the GEMM's launches stretched by each factor."""
    out = tmp_path_factory.mktemp("runs")
    with pytest.MonkeyPatch.context() as monkeypatch:
        return {scale: program_run(monkeypatch, out, step(layers=12, gemm_scale=scale),
                                   f"gemm-x{scale}")
                for scale in (1.0, 1.0864, 1.112, 1.152)}


def test_a_kernel_is_matched_by_name_and_shape_and_timed_by_its_launches(
        twelve_layers: dict[float, Path]) -> None:
    result = diff_runs(twelve_layers[1.0], twelve_layers[1.0])
    assert {k.key.name for k in result.kernels} == {
        "program GPU time", GEMM_KEY, f"{flash_name()} <<<16x4x16, 128x1x1>>>"}
    gemm = next(k for k in result.kernels if k.key.name == GEMM_KEY)
    assert gemm.timing.source == "launches" and gemm.timing.timing.n_baseline == 12
    assert result.exit_code == 0 and all(k.verdict == "SAME" for k in result.kernels)


@pytest.mark.parametrize("scale,program,gemm", [
    (1.0864, "SAME", "SLOWER"),  # the program's GPU time +2.9%: within the 3% threshold
    (1.112, "UNSURE", "SLOWER"),  # +3.8%: beyond it, within the 5% noise floor of one sample
    (1.152, "SLOWER", "SLOWER"),  # +5.1%: beyond both
])
def test_the_programs_gpu_time_is_judged_beside_its_kernels(
        twelve_layers: dict[float, Path], scale: float, program: str, gemm: str) -> None:
    result = diff_runs(twelve_layers[1.0], twelve_layers[scale])
    verdicts = {k.key.name: k.verdict for k in result.kernels}
    assert verdicts["program GPU time"] == program and verdicts[GEMM_KEY] == gemm
    assert verdicts[f"{flash_name()} <<<16x4x16, 128x1x1>>>"] == "SAME"
    assert result.exit_code == 1


def test_diff_names_the_program_time_and_exits_1_on_a_slower_program(
        twelve_layers: dict[float, Path]) -> None:
    result = CliRunner().invoke(main, ["diff", str(twelve_layers[1.0]),
                                       str(twelve_layers[1.152])])
    assert result.exit_code == 1
    row = next(line for line in result.stdout.splitlines() if "| program GPU time" in line)
    assert row.startswith("| 🔴 SLOWER | program GPU time | 7.646 ms → 8.036 ms | +5.1% |")
    assert row.endswith("no profile for this kernel (the first pass's launches alone) |")


# ------------------------------------------------------------------ history


def test_history_keeps_a_series_per_kernel_and_one_of_the_programs_time(
        twelve_layers: dict[float, Path], tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'history.sqlite'}", create=True)
    add_runs(store, [twelve_layers[1.0]], commit="01" * 20)
    add_runs(store, [twelve_layers[1.152]], commit="02" * 20)
    series = {s.key.name: s for s in build_series(store.runs())}
    assert set(series) == {"program GPU time", GEMM_KEY,
                           f"{flash_name()} <<<16x4x16, 128x1x1>>>"}
    times = [kernel.time_ms for kernel in series["program GPU time"].kernels]
    assert times == pytest.approx([7.646, 7.646 + 0.152 * 2.568], abs=1e-9)
    assert len(series[GEMM_KEY].kernels[0].samples_ms) == 12


def test_python_gives_the_ranking_as_a_table_and_writes_the_programs_pages(
        one_step: Path, tmp_path: Path) -> None:
    import harness

    result = harness.load(one_step)
    table = result.ranking()
    assert list(table["kernel"]) == [flash_name(), GEMM,
                                     "triton_red_fused_mul_native_layer_norm_sigmoid_0",
                                     table["kernel"][3]]
    assert list(table["grid"][:2]) == ["16x4x16", "2x66x1"]
    assert table["total_ms"].sum() == pytest.approx(1.913)
    assert table["cumulative_pct"].iloc[-1] == pytest.approx(100.0)
    index = result.page(tmp_path / "pages")
    assert index == tmp_path / "pages" / "index.md" and "| # | Kernel |" in index.read_text()
    with pytest.raises(ReportError, match="not a program's run"):
        harness.load("reports/runs/sgemm-h200-256").ranking()


def test_the_key_of_a_ranked_kernel_is_its_name_and_launch_shape(one_step: Path) -> None:
    ranking = load_run(one_step).record.ranking
    gemm = ranking.processes[0].kernel(2)
    assert kernel_key(gemm) == GEMM_KEY
    assert kernel_key(gemm, "gpu1") == f"gpu1: {GEMM_KEY}"


@pytest.mark.parametrize("change,phrase", [
    (lambda m: m["ranking"]["processes"][0]["kernels"][0].update(durations_ns=[1.0, 2.0]),
     "ranking.processes[0].kernels[0]: Value error, durations_ns holds 2 launches, launches "
     "says 3"),
    (lambda m: m["ranking"]["processes"][0]["kernels"][1].update(grid=[2, 0, 1]),
     "ranking.processes[0].kernels[1].grid[1]"),
    (lambda m: m["ranking"]["processes"][0]["kernels"][1].update(share_pct=150.0),
     "ranking.processes[0].kernels[1].share_pct"),
    (lambda m: m["ranking"]["processes"][0].update(kernels="many"),
     "ranking.processes[0].kernels"),
    (lambda m: m["entries"][0]["ranked"].update(rank=99),
     "entries[0].ranked: no kernel of rank 99 in process 'gpu0' of the ranking"),
    (lambda m: m["entries"][1]["ranked"].update(process="gpu7"),
     "entries[1].ranked: no kernel of rank 2 in process 'gpu7' of the ranking"),
])
def test_a_bad_ranking_is_one_line_naming_the_field(one_step: Path, tmp_path: Path, change: Any,
                                                    phrase: str) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(one_step, run)
    manifest = json.loads((run / "manifest.json").read_text())
    change(manifest)
    (run / "manifest.json").write_text(json.dumps(manifest))
    for args in (["writeup", str(run), "--out", str(tmp_path / "w")], ["diff", str(run), str(run)],
                 ["history", "add", str(run), "--store", str(tmp_path / "h.sqlite"),
                  "--commit", "ab" * 20]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("ncuh: error: ") and phrase in line, line
    assert not (tmp_path / "w").exists()


def _ranked_samples() -> list[Path]:
    runs = Path(__file__).resolve().parent.parent / "reports" / "runs"
    return sorted(path.parent for path in runs.glob("*/manifest.json")
                  if '"ranking"' in path.read_text())


def test_each_programs_sample_run_writes_up_from_a_fresh_clone(tmp_path: Path) -> None:
    """The sample runs of `profile --top` in reports/runs/ (recorded on a GPU): every ranked
    kernel of the top N has its page or says why not, and the index links each page."""
    samples = _ranked_samples()
    if not samples:
        pytest.skip("no program's sample run (profile --top) in reports/runs/ yet")
    for sample in samples:
        out = tmp_path / sample.name
        if any(sample.glob("*.ncu-rep.xz")):  # reports packed with xz: a user unpacks a copy
            sample = unpacked_copy(sample, tmp_path / "runs")
        result = writeup(sample, out=out)
        assert result.exit_code == 0, result.output
        for index in out.rglob("index.md"):
            for link in re.findall(r"\]\(([^)]+\.md)\)", index.read_text()):
                assert (index.parent / link).is_file(), (index, link)


@pytest.mark.parametrize("window,words", [
    ({}, "every launch the filters let through"),
    ({"launch_skip": 40, "launch_count": 200},
     "200 launches after the first 40 the filters let through"),
    ({"nvtx_include": ["step/"], "nvtx_over": "every thread"},
     "every launch the filters let through inside the NVTX range step/ from any thread"),
    ({"nvtx_include": ["regex:step_[0-9]/", "train/"], "nvtx_over": "ncu"},
     "every launch the filters let through inside the NVTX range regex:step_[0-9]/ or train/"),
])
def test_the_index_says_which_launches_the_first_pass_ranked(window: dict[str, Any],
                                                             words: str) -> None:
    from harness.pages.program import _window
    from harness.rundir.ranking import RankingRecord

    assert _window(RankingRecord(top=1, processes=(), window=window)) == words
