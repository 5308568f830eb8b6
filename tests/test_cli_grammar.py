"""One grammar across commands: -o/--out, -k/--kernel, --size/--sizes, --variant completion,
the default output places and the install hint."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.shell_completion import ShellComplete
from click.testing import CliRunner
from packed_fixtures import NAIVE_SMEM_REPORT

from harness.cli import COMMANDS, SHORT_HELP, main
from harness.commands.options import KERNEL_HELP, kernel_pattern
from harness.gpu.env import cupy_install_hint

ROOT = Path(__file__).resolve().parents[1]
WRITERS = ["bench", "profile", "merge", "export", "writeup", "diff"]


def command(name: str) -> click.Command:
    found = main.get_command(click.Context(main), name)
    assert found is not None
    return found


def option(name: str, param: str) -> click.Option:
    (found,) = [p for p in command(name).params if p.name == param]
    return found  # type: ignore[return-value]


def test_the_help_lists_each_commands_own_short_help() -> None:
    """`ncuh --help` lists the commands from `SHORT_HELP`, without importing them."""
    assert list(SHORT_HELP) == list(COMMANDS)
    for name in COMMANDS:
        assert command(name).get_short_help_str(1000) == SHORT_HELP[name], name
    listed = CliRunner().invoke(main, ["--help"]).stdout.split("Commands:\n")[1]
    assert [line.split()[0] for line in listed.splitlines()] == list(COMMANDS)
    probe = ("import sys\nfrom harness.cli import main\n"
             "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith('harness.commands.')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True, cwd=ROOT).stdout.splitlines()[-1]
    assert loaded == "['harness.commands.options']"  # the project option's help alone


@pytest.mark.parametrize("name", WRITERS)
def test_every_command_that_writes_takes_o_and_out(name: str) -> None:
    assert option(name, "out").opts == ["-o", "--out"]


def test_only_writers_have_out() -> None:
    have = [name for name in COMMANDS if any(p.name == "out" for p in command(name).params)]
    assert sorted(have) == sorted(WRITERS)


def test_export_keeps_output_as_a_hidden_alias(tmp_path: Path) -> None:
    alias = option("export", "output_alias")
    assert alias.hidden and alias.opts == ["--output"]
    assert "--output" not in CliRunner().invoke(main, ["export", "--help"]).stdout
    for spelling in ("-o", "--out", "--output"):
        target = tmp_path / f"{spelling.strip('-')}.csv"
        result = CliRunner().invoke(main, ["export", str(NAIVE_SMEM_REPORT), "-k",
                                           "sgemm_naive", spelling, str(target)])
        assert result.exit_code == 0, result.output
        assert target.read_text().startswith("kernel_id,kernel,metric,instance,value,unit")


@pytest.mark.parametrize("name", ["report", "export"])
def test_kernel_option_is_ncu_syntax_everywhere(name: str) -> None:
    kernel = option(name, "kernel_regex")
    assert kernel.opts == ["-k", "--kernel"] and kernel.help == KERNEL_HELP
    assert kernel.metavar == "NAME|regex:EXPR"
    assert option("profile", "kernel").help == f"With a program: {KERNEL_HELP}"
    assert option("profile", "kernel").metavar == "NAME|regex:EXPR"


def test_kernel_pattern_plain_name_is_exact_and_regex_is_searched() -> None:
    assert kernel_pattern(None) is None
    assert kernel_pattern("sgemm.naive") == r"^sgemm\.naive$"
    assert kernel_pattern("regex:sgemm") == "sgemm"
    assert kernel_pattern("regex:") == ""


def test_a_plain_name_selects_that_kernel_only() -> None:
    exact = CliRunner().invoke(main, ["report", str(NAIVE_SMEM_REPORT), "-k", "sgemm_naive"])
    assert exact.exit_code == 0
    assert "sgemm_naive (32, 32, 1)" in exact.stdout and "sgemm_smem" not in exact.stdout
    part = CliRunner().invoke(main, ["report", str(NAIVE_SMEM_REPORT), "-k", "sgemm"])
    assert part.exit_code == 2  # a name is not a substring: regex:sgemm is
    assert "no kernel" in part.stderr
    both = CliRunner().invoke(main, ["report", str(NAIVE_SMEM_REPORT), "-k", "regex:sgemm"])
    assert both.exit_code == 0
    assert "sgemm_naive" in both.stdout and "sgemm_smem" in both.stdout


def test_bench_and_profile_share_size_and_sizes() -> None:
    for param in ("size", "sizes"):
        bench, profile = option("bench", param), option("profile", param)
        assert bench.opts == profile.opts == [f"--{param}"]
        assert bench.multiple and profile.multiple
    assert option("bench", "sizes").help == option("profile", "sizes").help
    assert option("bench", "size").help.endswith("[default: the project's default_sizes].")
    assert option("profile", "size").help.endswith("[default: the project's profile_size].")


def test_bench_refuses_a_bad_size_naming_the_option() -> None:
    result = CliRunner().invoke(main, ["bench", "--variant", "naive", "--size", "12x3"])
    assert result.exit_code == 2
    assert result.stderr.startswith("ncuh: error: bad --size '12x3': ")


@pytest.mark.parametrize("name", ["bench", "profile"])
def test_variant_names_complete(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NCUH_PROJECT", raising=False)
    completer = ShellComplete(main, {}, "ncuh", "_NCUH_COMPLETE")
    args = [name, "--project", str(ROOT / "kernels" / "reduction"), "--variant"]
    found = [item.value for item in completer.get_completions(args, "w")]
    assert found == ["warp_shuffle"]
    found = [item.value for item in completer.get_completions(args, "")]
    assert found[:2] == ["interleaved_divergent", "interleaved_strided"] and len(found) == 10
    broken = [name, "--project", "/no/such/project", "--variant"]
    assert completer.get_completions(broken, "") == []  # never a traceback in the shell


def test_writeup_writes_under_runs_by_default(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["writeup", str(NAIVE_SMEM_REPORT), "--format", "md"])
    assert result.exit_code == 0, result.output
    (made,) = (tmp_path / "runs").iterdir()
    assert made.name.startswith("writeup-") and (made / "index.md").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["runs"]
    assert option("writeup", "out").default is None


def test_install_hint_names_the_checkout_or_cupy_itself(tmp_path: Path) -> None:
    assert cupy_install_hint() == f"pip install -e '{ROOT}[cuda13]', or [cuda12] for CUDA 12"
    installed = tmp_path / "site-packages" / "harness" / "gpu" / "env.py"
    assert cupy_install_hint(str(installed)) == (
        "pip install cupy-cuda13x, or cupy-cuda12x for CUDA 12")
