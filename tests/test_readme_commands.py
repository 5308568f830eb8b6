"""The README's walk-throughs are literally right: every `ncuh` line names a real command and
real options, the variants it profiles exist in the project `ncuh init` writes, and a section
that runs pytest installs it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
from cli_examples import local, run_once

from harness.cli import main
from harness.project import load_project

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
STARTER = load_project(ROOT / "harness" / "project" / "starter" / "ncuh.toml")


def _section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end > 0 else None]


def _ncuh_lines(text: str) -> list[list[str]]:
    """Each `ncuh ...` command of the code blocks, split like a shell, comments dropped."""
    commands = []
    for block in re.findall(r"```\n(.*?)```", text, re.DOTALL):
        for line in block.splitlines():
            for part in line.split("&&"):
                # `run=$(ncuh profile ... | tail -n1)`: the ncuh command inside
                part = re.sub(r"^\s*\w+=\$\((ncuh [^|)]*)(\|[^)]*)?\)", r"\1", part)
                words = shlex.split(part, comments=True)
                if words[:1] == ["ncuh"]:
                    commands.append(words[1:])
    return commands


def _check(words: list[str]) -> None:
    context = click.Context(main)
    while words[0] == "--project":  # the group's own option
        words = words[2:]
    command = main.get_command(context, words[0])
    assert command is not None, words
    options = {name for param in command.params for name in getattr(param, "opts", [])}
    options |= {name for param in command.params for name in getattr(param, "secondary_opts", [])}
    for word in words[1:]:
        if word == "--":
            break
        if word.startswith("-"):
            assert word.split("=")[0] in options | {"--help"}, (words, word)


def test_the_users_day_runs_on_the_project_ncuh_init_writes() -> None:
    section = _section("The user's day")
    assert "ncuh init my-kernels && cd my-kernels" in section
    commands = _ncuh_lines(section)
    assert len(commands) >= 8
    for words in commands:
        _check(words)
        if words[0] == "profile" and "--variant" in words:
            assert words[words.index("--variant") + 1] in STARTER.names, words
        if "--sizes" in words:
            STARTER.parse_sizes(words[words.index("--sizes") + 1])


def test_your_own_kernels_installs_what_it_runs() -> None:
    section = _section("Your own kernels")
    for words in _ncuh_lines(section):
        _check(words)
    install = re.search(r"pip install '\.\[([\w,]+)\]'", section)
    assert install is not None, "the section says how to install ncuh"
    if re.search(r"^pytest ", section, re.MULTILINE):
        assert "test" in install.group(1).split(","), install.group(0)
    assert "ncuh init my-kernels && cd my-kernels" in section


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= 200


def test_the_readme_links_every_documentation_page_and_names_checks_extra() -> None:
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert len(pages) >= 13
    assert [page.name for page in pages if f"](docs/{page.name})" not in README] == []
    assert "`ncuh check` needs only the `nvrtc` extra (`pip install '.[nvrtc]'`)" in README
    assert "The suite takes about" in _section("Set up and run")


def test_ci_runs_the_readmes_test_command_exactly() -> None:
    section = _section("Set up and run")
    command = next(line for line in section.splitlines() if line.endswith("-m pytest"))
    ci = (ROOT / ".ci" / "run").read_text()
    assert command in ci.splitlines()


def test_every_ncuh_line_of_the_readme_names_real_options() -> None:
    commands = _ncuh_lines(README)
    assert len(commands) >= 20
    for words in commands:
        _check(words)


def test_the_samples_run_without_a_gpu() -> None:
    """Each command of "Try it without a GPU", on the shipped sample runs, exits 0."""
    commands = _ncuh_lines(_section("Try it without a GPU"))
    assert [words[0] if words[0] != "--project" else words[2] for words in commands] \
        == ["writeup", "diff", "report"]
    pages = [local(w) for w in commands[0] if w.startswith("/tmp/")]
    assert len(pages) == 1
    for words in commands:
        completed = run_once(tuple(local(w) for w in words))
        assert completed.returncode == 0, (words, completed.stderr)
    assert len(list(Path(pages[0]).glob("*_67108864.html"))) == 10
    assert (Path(pages[0]) / "index.md").is_file()
