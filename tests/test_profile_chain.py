"""`ncuh profile --dry-run` against the real bundled chain (no GPU, no ncu needed)."""

from __future__ import annotations

import shlex

from click.testing import CliRunner

from harness.cli import main
from harness.project import load_project
from harness.project.locate import default_project_path

SGEMM = load_project(default_project_path())


def test_dry_run_all_covers_every_variant_with_a_kernel_in_chain_order(tmp_path) -> None:
    result = CliRunner().invoke(
        main, ["profile", "--all", "--size", "256", "--out", str(tmp_path), "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    expected = [v.name for v in SGEMM.variants if v.kernel_name and v.source]
    assert "cublas" not in expected and len(expected) == len(SGEMM.names)
    labels = [shlex.split(line)[shlex.split(line).index("--label") + 1] for line in lines]
    assert labels == [f"{name}_256" for name in expected]
    assert not tmp_path.joinpath("x").exists() and list(tmp_path.iterdir()) == []


def test_unknown_variant_lists_the_real_names(tmp_path, golden) -> None:
    result = CliRunner().invoke(main, ["profile", "--variant", "tensor_cores", "--dry-run"])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(", ".join(SGEMM.names))
    golden("unknown_variant", result.stderr)


def test_bad_parameters_are_refused_before_anything_runs() -> None:
    result = CliRunner().invoke(main, ["profile", "--variant", "register_tiled", "--size", "256",
                                       "--params", '{"BM": 100}', "--dry-run"])
    assert result.exit_code == 2
    assert result.stderr.startswith("ncuh: error: invalid parameters for register_tiled")
    assert len(result.stderr.strip().splitlines()) == 1
