"""Every finding's words on the real fixtures, pinned in tests/golden/findings_prose/: the SGEMM
pair (the second judged against the first, as the chain's next page is) and one zoo report per
problem class. Rewrite them after an intended change with `pytest --update-golden`."""

from __future__ import annotations

from pathlib import Path

import pytest
from findings_support import naive, prose, smem
from packed_fixtures import cached_profiles, report

from harness.findings import run_rules

ZOO = Path(__file__).parent / "fixtures" / "zoo"
ZOO_PROGRAMS = sorted(path.stem for path in ZOO.glob("zoo_*.py"))


def test_the_sgemm_pair_reads_as_its_golden_pages(golden) -> None:
    golden("sgemm_naive", prose(run_rules(naive())))
    golden("sgemm_smem_after_naive", prose(run_rules(smem(), naive())))


@pytest.mark.parametrize("name", ZOO_PROGRAMS)
def test_each_zoo_kernel_reads_as_its_golden_page(name: str, golden) -> None:
    [profile] = cached_profiles(report(ZOO / f"{name}.ncu-rep"))
    golden(name, prose(run_rules(profile)))


def test_there_is_a_zoo_kernel_per_problem_class() -> None:
    assert len(ZOO_PROGRAMS) == 44  # every program of the zoo (tests/fixtures/zoo/README.md)
