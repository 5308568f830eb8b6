"""Limits on everything a hostile or unlucky input could make unbounded: JSON and TOML depth,
work-model expressions, kernel regexes, bootstrap resamples, variant counts, tolerances, tuning
sizes, project files that are not regular files. Each is one line and exit 2 past the limit,
and accepted at it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from packed_fixtures import H200_NAIVE, H200_RUN

from harness.cli import main
from harness.diff.thresholds import MAX_RESAMPLES, load_thresholds
from harness.errors import NcuhError
from harness.gpu.tuning import TuneCache, resolve_params, source_fingerprint
from harness.project import load_project
from harness.project.expr import (
    MAX_EXPRESSION_CHARS,
    MAX_EXPRESSION_DEPTH,
    compile_expression,
    evaluate,
)
from harness.project.loader import MAX_VARIANTS
from harness.util.input_file import MAX_JSON_DEPTH, json_depth, load_json, load_toml
from harness.util.user_regex import MAX_REGEX_CHARS

FIXTURES = Path(__file__).parent / "fixtures"
REPORT = H200_NAIVE
SCALE = Path(__file__).parent / "projects" / "scale"


def _invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _refused(result: Result, *words: str) -> str:
    """The single error line of a refusal (exit 2, nothing on stdout, no traceback)."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ncuh: error: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# --- JSON and TOML depth ----------------------------------------------------------------------


def test_json_depth_counts_brackets_outside_strings() -> None:
    assert json_depth('{"a": [1, {"b": "[[[{{{"}], "c": "\\"]"}') == 3
    assert json_depth("7") == 0
    assert json_depth(_nested(100_000)) == 100_000  # no recursion to run out of


def test_json_at_the_depth_limit_is_read_and_one_deeper_is_refused() -> None:
    assert load_json(_nested(MAX_JSON_DEPTH), "x") == json.loads(_nested(MAX_JSON_DEPTH))
    with pytest.raises(NcuhError, match=f"x: JSON nested deeper than {MAX_JSON_DEPTH} levels"):
        load_json(_nested(MAX_JSON_DEPTH + 1), "x")
    with pytest.raises(NcuhError, match="deeper than"):
        load_json(_nested(200_000), "x")  # a RecursionError in json.loads before


def _run_dir(tmp_path: Path, manifest_entries: str | None = None) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copyfile(REPORT, run / "naive_256.ncu-rep")
    manifest = json.loads((H200_RUN / "manifest.json").read_text())
    manifest["entries"] = manifest["entries"][:1]
    text = json.dumps(manifest)
    if manifest_entries is not None:  # a key of the manifest's own object
        text = text[:-1] + f', "extra": {manifest_entries}}}'

    (run / "manifest.json").write_text(text)
    return run


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 100_000])
def test_a_deeply_nested_manifest_is_one_line(tmp_path: Path, depth: int) -> None:
    run = _run_dir(tmp_path, _nested(depth))
    _refused(_invoke("diff", run, run), "manifest.json: JSON nested deeper than 64 levels")


def test_a_manifest_nested_to_the_limit_is_read(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, _nested(MAX_JSON_DEPTH - 1))  # inside the manifest's own object
    result = _invoke("diff", run, run)
    assert result.exit_code == 0, result.output


def test_a_deeply_nested_bench_json_is_one_line(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    (run / "bench.json").write_text('{"schema": "ncuh.bench/1", "results": '
                                    + _nested(50_000) + "}")
    _refused(_invoke("diff", run, run), "bench.json: JSON nested deeper than 64 levels")


def test_deeply_nested_params_are_one_line() -> None:
    deep = '{"A": ' + _nested(5000) + "}"
    _refused(_invoke("profile", "--variant", "naive", "--params", deep, "--dry-run"),
             "--params: JSON nested deeper than 64 levels")


def test_toml_at_the_depth_limit_is_read_and_deeper_is_refused() -> None:
    # `a = [...]` is one level for the document's table, one per bracket
    assert load_toml("a = " + _nested(MAX_JSON_DEPTH - 1), "t")["a"] == \
        json.loads(_nested(MAX_JSON_DEPTH - 1))
    for deeper in ("a = " + _nested(MAX_JSON_DEPTH), "a = " + _nested(100_000),
                   "[" + ".".join(["k"] * (MAX_JSON_DEPTH + 1)) + "]\n"):
        with pytest.raises(NcuhError, match="t: TOML nested deeper than 64 levels"):
            load_toml(deeper, "t")


def test_a_deeply_nested_thresholds_file_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "t.toml"
    config.write_text("[timing]\nseed = " + _nested(100_000) + "\n")
    _refused(_invoke("diff", REPORT, REPORT, "--config", config), "TOML nested deeper")


# --- work-model expressions -------------------------------------------------------------------


def test_expressions_at_the_size_and_depth_limits_are_evaluated() -> None:
    terms = "+".join(["n"] * MAX_EXPRESSION_DEPTH)  # 99 additions: 100 values deep
    assert evaluate(compile_expression(terms, ("n",)), {"n": 3}) == 3 * MAX_EXPRESSION_DEPTH
    signs = "-" * (MAX_EXPRESSION_DEPTH - 1) + "n"
    assert evaluate(compile_expression(signs, ("n",)), {"n": 2}) == -2
    long = "(" + "n" + " " * (MAX_EXPRESSION_CHARS - 3) + ")"
    assert len(long) == MAX_EXPRESSION_CHARS
    assert evaluate(compile_expression(long, ("n",)), {"n": 5}) == 5


@pytest.mark.parametrize("text, words", [
    ("+".join(["n"] * (MAX_EXPRESSION_DEPTH + 1)), "nests deeper than 100 levels"),
    ("-" * MAX_EXPRESSION_DEPTH + "n", "nests deeper than 100 levels"),
    ("(" * 300 + "n" + ")" * 300, "not an expression"),  # the parser's own limit
    ("n" + " " * MAX_EXPRESSION_CHARS, "at most 1000"),
    ("+".join(["n"] * 100_000), "an expression of 199999 characters (at most 1000)"),
    ("-" * 50_000 + "n", "an expression of 50001 characters"),
])
def test_expressions_past_the_limits_are_refused(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        compile_expression(text, ("n",))


def _project(tmp_path: Path, old: str, new: str) -> Path:
    folder = tmp_path / "p"
    shutil.copytree(SCALE, folder)
    path = folder / "ncuh.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


def test_a_50k_sign_flops_expression_is_one_line(tmp_path: Path) -> None:
    path = _project(tmp_path, 'flops = "n"', f'flops = "{"-" * 50_000}n"')
    _refused(_invoke("list", "--project", path), "key 'problem.flops'", "50001 characters")


# --- kernel regexes, resamples ----------------------------------------------------------------


@pytest.mark.parametrize("regex, words", [
    ("a{99999999999}", "the repetition number is too large"),
    ("(" * 5000 + ")" * 5000, f"of 10000 characters (at most {MAX_REGEX_CHARS})"),
])
def test_a_kernel_regex_past_re_limits_is_one_line(regex: str, words: str) -> None:
    for command in ("report", "export"):
        _refused(_invoke(command, "-k", "regex:" + regex, REPORT), words)


def test_a_kernel_regex_at_the_limits_is_used() -> None:
    result = _invoke("report", "-k", "regex:sgemm_naive|" + "a{4294967294}", REPORT)
    assert result.exit_code == 0, result.output
    assert "sgemm_naive" in result.stdout


def test_bootstrap_resamples_are_capped(tmp_path: Path) -> None:
    config = tmp_path / "t.toml"
    config.write_text(f"[timing]\nbootstrap_resamples = {MAX_RESAMPLES}\n")
    assert load_thresholds(config).timing.bootstrap_resamples == MAX_RESAMPLES
    for value in (MAX_RESAMPLES + 1, 10**9):
        config.write_text(f"[timing]\nbootstrap_resamples = {value}\n")
        _refused(_invoke("diff", REPORT, REPORT, "--config", config),
                 "timing.bootstrap_resamples", "less than or equal to 100000")
    config.write_text("[timing]\nbootstrap_resamples = 1e9\n")
    _refused(_invoke("diff", REPORT, REPORT, "--config", config), "timing.bootstrap_resamples")


# --- projects: variants, tolerance, file kinds ------------------------------------------------


def _with_variants(tmp_path: Path, count: int) -> Path:
    folder = tmp_path / f"p{count}"
    shutil.copytree(SCALE, folder)
    text = (folder / "ncuh.toml").read_text().split("[[variant]]")[0]
    text += "".join(f'[[variant]]\nname = "v{i}"\ncall = "launch_rawkernel"\n'
                    'capture = "regex:^scale_raw$"\n\n' for i in range(count))
    (folder / "ncuh.toml").write_text(text)
    return folder / "ncuh.toml"


def test_a_chain_of_the_most_variants_loads_and_one_more_is_refused(tmp_path: Path) -> None:
    project = load_project(_with_variants(tmp_path, MAX_VARIANTS))
    assert len(project.variants) == MAX_VARIANTS
    assert project.variants[-1].previous == f"v{MAX_VARIANTS - 2}"
    path = _with_variants(tmp_path, MAX_VARIANTS + 1)
    _refused(_invoke("list", "--project", path), "1001 [[variant]] tables (at most 1000)")


def test_a_long_cycle_of_previous_links_is_still_named(tmp_path: Path) -> None:
    path = _with_variants(tmp_path, 500)
    text = path.read_text().replace('name = "v0"\n', 'name = "v0"\nprevious = "v499"\n')
    path.write_text(text)
    _refused(_invoke("list", "--project", path), "key 'previous': a cycle (v0 -> v499 -> v498")


@pytest.mark.parametrize("value", ["inf", "1e309", "nan", "-inf", "-1e-9", "-5e-324"])
def test_a_tolerance_that_lets_everything_pass_is_refused(tmp_path: Path, value: str) -> None:
    path = _project(tmp_path, 'tolerance = "tolerance_for"', f"tolerance = {value}")
    _refused(_invoke("list", "--project", path), "key 'problem.tolerance'")


@pytest.mark.parametrize("value", ["1e308", "5e-324", "1", "0", "0.0"])
def test_a_finite_tolerance_of_zero_or_more_is_taken(tmp_path: Path, value: str) -> None:
    path = _project(tmp_path, 'tolerance = "tolerance_for"', f"tolerance = {value}")
    project = load_project(path)
    assert project.tolerance(project.profile_size) == float(value)


@pytest.mark.parametrize("rtol", ["inf", "nan"])
def test_allclose_tolerances_are_finite(tmp_path: Path, rtol: str) -> None:
    path = _project(tmp_path, 'compare = "max_abs"', f'compare = "allclose"\nrtol = {rtol}')
    _refused(_invoke("list", "--project", path), "key 'problem.rtol'")


def test_a_tolerance_callable_giving_inf_is_one_line(tmp_path: Path) -> None:
    path = _project(tmp_path, 'tolerance = "tolerance_for"', 'tolerance = "no_tolerance"')
    (path.parent / "scale_project.py").write_text(
        (path.parent / "scale_project.py").read_text()
        + "\n\ndef no_tolerance(size):\n    return float('inf')\n")
    project = load_project(path)
    with pytest.raises(NcuhError, match=r"no_tolerance gave inf at size .*finite number >= 0"):
        project.tolerance(project.profile_size)


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "folder-without-file", "dangling"])
def test_a_project_path_that_is_not_a_regular_file_is_refused(tmp_path: Path,
                                                              kind: str) -> None:
    if kind == "fifo":
        path: Path = tmp_path / "ncuh.toml"
        os.mkfifo(path)
        words = "a FIFO (named pipe), not a project file (--project)"
    elif kind == "dangling":
        path = tmp_path / "ncuh.toml"
        path.symlink_to(tmp_path / "gone.toml")
        words = "no such project file"
    elif kind == "/dev/zero":
        path, words = Path("/dev/zero"), "a character device, not a project file"
    else:
        path, words = tmp_path, "no ncuh.toml"
    _refused(_invoke("--project", path, "list"), words)
    _refused(_invoke("list", "--project", path), words)


def test_load_project_refuses_a_fifo_without_opening_it(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "ncuh.toml")
    with pytest.raises(NcuhError, match="a FIFO"):
        load_project(tmp_path / "ncuh.toml")  # would block for ever on open()


# --- tuning files -----------------------------------------------------------------------------


def _tuning(tmp_path: Path, entries: list[dict[str, object]] | str) -> TuneCache:
    path = tmp_path / "tuning.json"
    text = entries if isinstance(entries, str) else json.dumps(
        {"schema": "ncuh.tuning/1", "entries": entries})
    path.write_text(text)
    return TuneCache(path)


@pytest.mark.parametrize("size", ["0", "²", "1x0x4", "-4", "", "4096 ", "0x1", "1e3", 4096,
                                  None, "9" * 19])
def test_a_tuning_entry_whose_size_is_not_whole_positive_numbers_is_left_out(
        tmp_path: Path, size: object) -> None:
    cache = _tuning(tmp_path, [{"variant": "v", "gpu": "G", "size": size, "params": {}},
                               {"variant": "v", "gpu": "G", "size": "64x1", "params": {}}])
    assert [entry["size"] for entry in cache.entries] == ["64x1"]


def test_a_deeply_nested_tuning_file_is_an_empty_cache(tmp_path: Path) -> None:
    assert _tuning(tmp_path, '{"schema": "ncuh.tuning/1", "entries": '
                   + _nested(100_000) + "}").entries == []


def test_a_tuning_entry_of_size_0_is_never_the_nearest_winner(tmp_path: Path) -> None:
    project = load_project(SCALE / "ncuh.toml")
    variant = project.variant("nvrtc")
    fingerprint = source_fingerprint(project, variant)
    entry = {"variant": "nvrtc", "gpu": "G", "params": {"BLOCK": 64},
             "source_sha256": fingerprint}
    empty = _tuning(tmp_path / "e", []) if (tmp_path / "e").mkdir() is None else None
    size = project.parse_size("5000")
    zero = _tuning(tmp_path, [{**entry, "size": "0"}])
    assert resolve_params(project, variant, size, "G", user=zero, shipped=empty).origin \
        == "defaults"
    one = _tuning(tmp_path, [{**entry, "size": "1"}])  # the smallest size that is one
    resolved = resolve_params(project, variant, size, "G", user=one, shipped=empty)
    assert (resolved.origin, resolved.params) == ("nearest 1 (tuned)", {"BLOCK": 64})
