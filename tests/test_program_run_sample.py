"""The complete sample of a program's run in reports/runs/transformer-step-2h200: `ncuh profile
--top 5 --nvtx-include step/ --gpus all` of the eager transformer step
(`examples/transformer_step.py --steps 1 --warmup 2`) on two H200s, its five second-pass reports
packed with xz (13 MB as they are, 1 MB packed: each holds its whole libtorch or cuBLAS module)
and its first pass's report left out (76 MB; its ranking is in the manifest). Its pages in
reports/program/ are what `ncuh writeup` writes from it (Markdown and HTML, byte for byte but
for the plots' pixels), and no sentence of them is contradicted by the reports.

To write the pages again: `python tests/test_program_run_sample.py` from the repository root.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # run as a script, as under pytest

from pages_support import assert_pages_as_committed, unpacked_copy, write_pages

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "reports" / "runs" / "transformer-step-2h200"
PAGES = ROOT / "reports" / "program"
KERNELS = ["01-nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT",
           "02-native_unnamed_GammaBetaBackwardCUDAKernelT",
           "03-nvjet_sm90_tst_64x128_64x8_2x1_v_bz_NTN",
           "04-native_unnamed_cunn_SoftMaxForwardReg_float",
           "05-native_unnamed_vectorized_layer_norm_kernel"]


def unpack(into: Path) -> Path:
    """The sample as a run directory under `into`, its reports unpacked."""
    return unpacked_copy(SAMPLE, into)


def test_the_sample_holds_the_five_ranked_kernels_packed(tmp_path: Path) -> None:
    from harness.rundir import load_run

    assert sorted(path.name for path in SAMPLE.glob("*.ncu-rep.xz")) == [
        f"{name}.ncu-rep.xz" for name in KERNELS]
    assert not list(SAMPLE.glob("*.ncu-rep"))  # none committed unpacked
    run = load_run(unpack(tmp_path))
    (process,) = run.record.ranking.processes
    assert (process.launches, len(process.kernels)) == (323, 80)
    assert [entry.label for entry in run.entries] == KERNELS
    assert all(entry.ok for entry in run.entries)
    gpus = json.loads((SAMPLE / "manifest.json").read_text())["entries"]
    assert {entry["gpu"]["index"] for entry in gpus} == {0, 1}  # --gpus all spread them


def test_the_committed_pages_are_what_writeup_writes_from_the_sample(tmp_path: Path) -> None:
    """The Markdown and HTML pages, byte for byte but for the plots' own bytes."""
    write_pages("writeup", str(unpack(tmp_path / "runs")), "--out", str(tmp_path / "pages"))
    assert_pages_as_committed(tmp_path / "pages", PAGES, ["index", *KERNELS])


def test_writeup_of_the_packed_sample_as_it_is_says_how_to_unpack_it(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "harness", "writeup", str(SAMPLE), "--out",
                           str(tmp_path / "pages")], capture_output=True, text=True, cwd=ROOT,
                          check=False)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"ncuh: error: report not found: {SAMPLE}/01-nvjet")
    packed = f"{KERNELS[0]}.ncu-rep.xz"
    assert line.endswith(f"(packed beside it as {packed}: unpack it with `xz -dk`)")
    assert not (tmp_path / "pages").exists()


def test_the_index_names_each_kernels_share_and_its_bound() -> None:
    index = (PAGES / "index.md").read_text()
    assert "this process launched 323 of them, of 80 kernels" in index
    assert "The top 5 cover 23.2% of it" in index
    assert "compute-bound (Tensor (FP) pipe at 70.0%: WGMMA (HGMMA))" in index
    assert "long scoreboard stalls at mbarrier waits (SYNCS.PHASECHK)" in index
    assert "long scoreboard stalls at global memory (LDG)" in index


def test_no_sentence_of_the_samples_pages_is_contradicted(tmp_path: Path) -> None:
    """Each page (the oracle of tests/test_findings_oracle.py): its findings against their
    counters, its TLDR against them."""
    from harness.findings.oracle import contradictions, page_contradictions
    from harness.pages.writeup import collect

    pages = collect([unpack(tmp_path)]).pages
    assert len(pages) == len(KERNELS)
    for page in pages:
        assert page.profile is not None
        assert page_contradictions(page.profile, page.tldr, len(page.fix_ideas),
                                   page.pct_of_limit) == [], page.heading
        assert contradictions(page.profile, [*page.findings, *page.good]) == [], page.heading


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        shutil.rmtree(PAGES, ignore_errors=True)
        write_pages("writeup", str(unpack(Path(scratch))), "--out", str(PAGES))
    print(f"wrote {PAGES.relative_to(ROOT)}")
