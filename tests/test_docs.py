"""The documentation site: its generated reference pages cover the code they are made from, its
shell examples name real commands and options (and run where no GPU is needed), and the
performance page names a date, a card and a command for every figure."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import click
import pytest
from cli_examples import local, run_here, run_once

from harness.cli import main
from harness.findings.registry import RULES
from harness.project.schema import ProjectFile

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
# Commands that need no GPU: their examples run when every path they read exists.
CPU_COMMANDS = {"report", "export", "writeup", "diff", "list", "init", "check", "history add",
                "history show", "history check"}
# Examples run as a process of their own, once per test run (cli_examples.run_once): other
# tests run the same commands; every other example runs in this process (cli_examples.run_here)
SHARED_COMMANDS = {"check", "writeup"}


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ncuh_pages", DOCS / "hooks" / "ncuh_pages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = _hook()


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    config = (ROOT / "mkdocs.yml").read_text()
    named = set(re.findall(r"^  - [^:]+: (\S+\.md)$", config, re.MULTILINE))
    assert named == {page.name for page in PAGES}
    assert "strict: true" in config and "docs/hooks/ncuh_pages.py" in config


def test_the_project_file_reference_covers_every_key_with_its_meaning() -> None:
    text = HOOK.project_file_reference()
    for table, field in ProjectFile.model_fields.items():
        model = field.annotation
        while not (isinstance(model, type) and hasattr(model, "model_fields")):
            model = next(a for a in model.__args__ if a is not type(None))  # list[X], X | None
        heading = f"[[{table}]]" if table in ("limit", "variant") else f"[{table}]"
        assert f"### `{heading}`" in text
        for key in model.model_fields:
            assert HOOK.PROJECT_KEYS[table].get(key), f"{table}.{key} has no meaning in the hook"
            assert f"| `{key}` |" in text
    assert "| `name` | string | required |" in text
    assert "| `compare` | one of `relative_frobenius`, `max_abs`, `allclose`, `exact` |" in text


def test_the_project_file_reference_says_what_is_required_and_what_defaults() -> None:
    text = HOOK.project_file_reference()
    problem = text[text.index("### `[problem]`"):text.index("### `[reference]`")]
    assert "| `inputs` | callable name | required |" in problem
    assert "| `rtol` | number or integer | `1e-05` |" in problem
    assert "| `poison` | list of string | optional |" in problem


def test_the_commands_reference_holds_every_command_and_option() -> None:
    text = HOOK.commands_reference()
    context = click.Context(main, info_name="ncuh")
    names = main.list_commands(context)
    assert {"init", "list", "bench", "profile", "merge", "export", "report", "writeup",
            "diff"} <= set(names)
    for name in names:
        command = main.get_command(context, name)
        assert command is not None
        assert f"## `ncuh {name}`" in text
        assert f"Usage: ncuh {name}" in text
        for param in command.params:
            if getattr(param, "hidden", False):
                continue  # an old spelling kept working, not advertised
            for option in getattr(param, "opts", []):
                if option.startswith("-"):
                    assert option in text, (name, option)


def test_the_findings_page_names_every_rule_and_its_thresholds() -> None:
    text = HOOK.findings_reference()
    assert len(RULES) >= 16
    for rule in RULES:
        assert f"### `{rule.name}`" in text
        for constant, value in HOOK.rule_constants(rule.check.__module__).items():
            assert f"| `{constant}` | {value:g} |" in text
    assert "| `LATENCY_THRESHOLD` | 60 |" in text and "| `MIN_SPEEDUP` | 1 |" in text
    assert "<!-- ncuh:findings -->" in (DOCS / "findings.md").read_text()
    from harness.findings.fixes import FIX_RULES

    assert len(FIX_RULES) >= 40
    for fix in FIX_RULES:
        assert f"### fix `{fix.name}`" in text and fix.doc in text


def test_the_hook_fills_each_marker_and_leaves_other_pages_alone() -> None:
    page = "# x\n\n<!-- ncuh:commands -->\n"
    assert "<!-- ncuh" not in HOOK.on_page_markdown(page, page=None)
    assert HOOK.on_page_markdown("# plain\n", page=None) == "# plain\n"


def test_each_generated_page_says_on_github_how_to_build_its_reference() -> None:
    for name in ("commands.md", "findings.md", "kernels.md"):
        text = (DOCS / name).read_text()
        note = text.index("On GitHub this page stops here")
        assert note < text.index("<!-- ncuh:") and "mkdocs serve" in text[note:]
        built = HOOK.on_page_markdown(text, page=None)
        assert "On GitHub this page stops here" not in built and "<!-- ncuh" not in built


def _expand(line: str) -> list[str]:
    """A one-line `for V in A B; do BODY; done` as its bodies, else the line itself."""
    loop = re.fullmatch(r"\s*for (\w+) in ([^;]+); do (.+); done\s*", line)
    if loop is None:
        return [line]
    name, values, body = loop.groups()
    return [body.replace(f"${name}", value) for value in values.split()]


def _sh_blocks() -> list[tuple[str, list[list[str]]]]:
    """Every ```sh block in the docs as its commands, each split like a shell. A command that
    ends in `|| test $? -eq 1` (a gate that may say "regression") keeps that as its last
    word."""
    found = []
    for page in PAGES:
        for block in re.findall(r"```sh\n(.*?)```", page.read_text(), re.DOTALL):
            commands = []
            for line in block.replace("\\\n", " ").splitlines():
                for command in _expand(line):
                    for part in command.split("&&"):
                        part, gate, _ = part.partition("|| test $? -eq 1")
                        words = shlex.split(part, comments=True)
                        if words:
                            commands.append(words + ([GATE] if gate else []))
            found.append((page.name, commands))
    return found


def _sh_lines() -> list[tuple[str, list[str]]]:
    """Every command of every ```sh block in the docs (see `_sh_blocks`)."""
    return [(page, words) for page, commands in _sh_blocks() for words in commands]


GATE = "<exit 0 or 1>"


def _command(words: list[str]) -> tuple[click.Command, list[str], list[str]]:
    """The click command of an `ncuh ...` line (a group's subcommand included), the words
    before it and the command's own words."""
    group: list[str] = []
    while words[0] == "--project":
        group, words = group + words[:2], words[2:]
    command = main.get_command(click.Context(main), words[0])
    assert command is not None, words
    while isinstance(command, click.Group):
        group, words = group + words[:1], words[1:]
        command = command.get_command(click.Context(command), words[0])
        assert command is not None, words
    return command, group, words[1:]


def _paths_read(command: click.Command, words: list[str]) -> list[str]:
    """The words that name inputs: arguments, not option values."""
    options = {opt: param for param in command.params for opt in getattr(param, "opts", [])}
    read, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word.startswith("-"):
            param = options.get(word.split("=")[0])
            skip = param is not None and not getattr(param, "is_flag", False) and "=" not in word
        else:
            read.append(word)
    return read


def test_every_shell_example_names_a_real_command_and_real_options() -> None:
    lines = _sh_lines()
    programs = {words[0] for _, words in lines}
    assert programs <= {"ncuh", "python3", ".venv/bin/pip", "cd", "bash", "."}, programs
    for page, words in lines:
        if words[0] != "ncuh":
            continue
        command, _, args = _command(words[1:])
        options = {o for p in command.params for o in [*getattr(p, "opts", []),
                                                        *getattr(p, "secondary_opts", [])]}
        for word in args:
            if word in ("--", GATE):
                break
            if word.startswith("-"):
                assert word.split("=")[0] in options | {"--help"}, (page, words)


def test_the_shell_examples_that_need_no_gpu_run(tmp_path: Path) -> None:
    """Each example of a command that needs no GPU runs where every path it reads exists;
    after `ncuh init NAME && cd NAME`, the rest of its block runs in the new project."""
    ran = []
    for page, commands in _sh_blocks():
        cwd, made = ROOT, {}
        for words in commands:
            if words[0] == "cd" and words[1:] and words[1] in made:
                cwd = made[words[1]]
            if words[0] != "ncuh":
                continue
            command, group, args = _command(words[1:])
            name = " ".join([*(w for w in group if w == "history"), command.name])
            if name not in CPU_COMMANDS:
                continue
            codes = (0, 1) if args[-1:] == [GATE] else (0,)
            args = [local(w) for w in args if w != GATE]
            if command.name == "init":
                made[args[0]] = tmp_path / f"{len(ran)}-{args[0]}"
                args = [str(made[args[0]])]
            elif not all((cwd / p).exists() for p in _paths_read(command, args)):
                continue  # a placeholder such as runs/<id>: parsed above, not run
            argv = [*group, command.name, *args]
            # in this process where other tests run the command as a process of its own (the
            # history commands change their store: each runs); `check` and `writeup` once per
            # test run, shared with the check tests and the quickstart's test
            completed = (run_once(tuple(argv), cwd) if name in SHARED_COMMANDS and cwd == ROOT
                         else run_here(argv, cwd))
            assert completed.returncode in codes, (page, words, completed.stderr)
            ran.append(name)
    assert {"writeup", "diff", "report", "export", "init", "list", "check"} <= set(ran), ran


def test_the_commands_page_shows_every_command_and_subcommand_in_an_example_and_a_help(
) -> None:
    examples = [words for page, words in _sh_lines() if page == "commands.md"]
    shown = set()
    for words in examples:
        if words[0] == "ncuh":
            command, group, _ = _command(words[1:])
            shown.add(" ".join([*(w for w in group if w != "--project" and "/" not in w),
                                command.name]))
    root = click.Context(main)
    every = set()
    for name in main.list_commands(root):
        command = main.get_command(root, name)
        if isinstance(command, click.Group):
            every |= {f"{name} {sub}" for sub in command.list_commands(click.Context(command))}
        else:
            every.add(name)
    assert shown == every
    built = HOOK.commands_reference()
    assert all(f"`ncuh {name}`" in built for name in every)


def test_the_site_builds_printing_nothing_but_its_progress(tmp_path: Path) -> None:
    """No warning, no banner from a theme: `.ci/run` fails on anything but INFO lines too."""
    pytest.importorskip("mkdocs")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                            str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                           timeout=300, check=False)
    assert built.returncode == 0, built.stderr
    lines = (built.stdout + built.stderr).splitlines()
    assert [line for line in lines if not line.startswith("INFO ")] == []
    commands = (tmp_path / "site" / "commands" / "index.html").read_text()
    assert "ncuh history check" in commands and "<!-- ncuh:" not in commands


def test_the_quickstart_quotes_what_its_writeup_prints() -> None:
    page = (DOCS / "index.md").read_text()
    quoted = page[page.index("```text\nwrote "):].split("```")[1].removeprefix("text\n")
    out = local("/tmp/ncuh-pages")  # the same command as the page's example: run once for both
    completed = run_once(("--project", "kernels/reduction", "writeup",
                          "reports/runs/reduction-h100-2p26", "--out", out))
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == quoted.replace("/tmp/ncuh-pages", out)


def test_every_performance_figure_has_a_date_a_card_and_a_command() -> None:
    text = (DOCS / "performance.md").read_text()
    table = text[text.index("| figure |"):text.index("## The tools")]
    rows = [row for row in table.splitlines()[2:] if row.startswith("|")]
    assert len(rows) >= 10
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 5, row
        _, value, card, date, command = cells
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", date), row
        assert re.search(r"H100|H200|CPU", card), row
        assert value and "`" in command, row


@pytest.mark.parametrize("path", sorted((DOCS / "results").glob("*.json")), ids=lambda p: p.name)
def test_each_result_file_says_when_where_and_how(path: Path) -> None:
    result = json.loads(path.read_text())
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", result["date"])
    assert result.get("card") or result.get("machine")
    assert result["command"] and result["results"]
    assert f"results/{path.name}" in (DOCS / "performance.md").read_text()


def test_the_performance_page_names_every_benchmark_tool() -> None:
    text = (DOCS / "performance.md").read_text()
    tools = sorted([*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "benchmarks").glob("gpu/*")])
    assert len(list((ROOT / "benchmarks" / "gpu").iterdir())) <= 4
    for tool in tools:
        assert f"`{tool.relative_to(ROOT)}`" in text, tool


@pytest.mark.parametrize("tool", sorted([*(ROOT / "benchmarks").glob("*.py"),
                                         *(ROOT / "benchmarks").glob("gpu/*.sh")]),
                         ids=lambda p: p.name)
def test_each_benchmark_tool_prints_its_use(tool: Path) -> None:
    program = ["bash"] if tool.suffix == ".sh" else [sys.executable]
    completed = subprocess.run([*program, str(tool), "--help"], cwd=ROOT, capture_output=True,
                               text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    assert len(completed.stdout.splitlines()) >= 3


def test_reports_holds_only_pages_and_sample_runs() -> None:
    # four chains' pages (Markdown, HTML, plots), a program's pages, the sample runs, init's
    # project and one SGEMM page at 333x777x4099: about 40 files a chain; dated logs or scratch
    # output would push it past the bound
    files = [path for path in (ROOT / "reports").rglob("*") if path.is_file()]
    assert 20 <= len(files) <= 240


def test_every_command_has_a_short_help_that_ncuh_help_shows_whole() -> None:
    from click.testing import CliRunner

    from harness.cli import COMMANDS, main

    listing = CliRunner().invoke(main, ["--help"]).output
    rows = listing.split("Commands:\n", 1)[1].splitlines()
    assert [row.split()[0] for row in rows if row.strip()] == list(COMMANDS)
    for row in rows:
        assert row.rstrip().endswith(".") and "..." not in row, row
