"""MkDocs hook: the reference parts of the site, generated from the code at build time.

A page marks where a reference goes with an HTML comment: `<!-- ncuh:project-file -->` (the
project file's tables and keys, from the pydantic schema in `harness.project.schema`),
`<!-- ncuh:commands -->` (click's own help of every command) and `<!-- ncuh:findings -->`
(every rule of `harness.findings.registry`, its docstring and its thresholds).
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import click

MARKERS = ("project-file", "commands", "findings")

# What each key of the project file means. The schema gives names, types and defaults; a key
# the schema gains without a line here fails tests/test_docs.py.
PROJECT_KEYS: dict[str, dict[str, str]] = {
    "project": {
        "name": "The project's name (letters, digits, `_ . -`): in tables, pages and the "
                "tuning cache's folder.",
        "description": "One line printed above the bench table.",
        "module": "The Python module (beside the file) that `function` names without a "
                  "`module:` part are looked up in.",
    },
    "problem": {
        "dims": "The size parameters, e.g. `[\"M\", \"N\", \"K\"]` or `[\"n\"]`.",
        "default_sizes": "`ncuh bench`'s sizes: `4096`, `1024x2048x512`, `2^26`, `1<<20`, "
                         "`1e6`.",
        "profile_size": "`ncuh profile`'s size when `--size` is not given.",
        "inputs": "Callable `(size, seed) -> dict` of fresh device arrays.",
        "outputs": "The arrays a launch writes; these are checked.",
        "poison": "Arrays filled with NaN before the checked launch (default: `outputs`).",
        "expected": "Callable `(inputs, size) -> {output: truth}`, computed before the launch.",
        "tolerance": "A number >= 0, or a callable `(size) -> float`; 0 compares exactly.",
        "compare": "How outputs are held against the truth (`exact`: bit for bit).",
        "rtol": "Relative tolerance of `allclose`.",
        "atol": "Absolute tolerance of `allclose`.",
        "flops": "Work model: arithmetic on the dims (`2*M*N*K`) or a callable "
                 "`(size) -> number`; gives GFLOP/s.",
        "bytes": "Bytes moved, the same way; gives GB/s and the roofline's intensity.",
        "summary_min_size": "Sizes below this are left out of the geometric-mean summary.",
    },
    "reference": {
        "name": "The library every speedup is against, by its name in tables and pages.",
        "call": "Callable `(inputs, size) -> None`; checked and timed like a variant.",
        "strategy": "Markdown (or a `.md` file) shown on the reference's page.",
    },
    "limit": {
        "name": "A practical ceiling timed in the same run (e.g. a device copy).",
        "call": "Callable `(inputs, size) -> None`.",
        "bytes": "Bytes it moves, shown as GB/s.",
    },
    "variant": {
        "name": "Unique: letters, digits, `_`.",
        "title": "The page's title: \"Iteration N: Title\".",
        "previous": "The variant it improves on (default: the one above; `\"\"` for none).",
        "strategy": "Markdown, or a `.md` file: the page's Strategy section.",
        "source": "CUDA source compiled with NVRTC (`-std=c++17 -lineinfo`, every param as "
                  "`-D`; local `#include \"x.cuh\"` inlined).",
        "kernel": "The `__global__` function in `source`.",
        "launch": "Callable `(size, params, inputs) -> Launch | [Launch, ...]`.",
        "defines": "Callable `(size, params) -> {macro: value}`, extra `-D`s.",
        "call": "Instead of `source`: a Python launcher `(inputs, size, params) -> None` "
                "(CuPy, Triton, PyTorch, Numba).",
        "capture": "ncu's kernel filter for a `call` variant, e.g. `regex:^my_kernel`.",
        "arch": "The NVRTC target `source` needs, e.g. `sm_90a` for `wgmma` (default: the "
                "GPU's own; `ncuh check --arch` for the others).",
        "params": "Compile-time integers, e.g. `{ BLOCK = 256 }`.",
        "tunable": "The space `ncuh bench --tune` searches, e.g. `{ BLOCK = [128, 256] }`.",
        "constraints": "Callable `(size | None, params) -> [problem, ...]`; `[]` means it runs.",
    },
}


def _type(prop: dict[str, Any]) -> str:
    if "anyOf" in prop:
        kinds = [_type(p) for p in prop["anyOf"] if p.get("type") != "null"]
        return " or ".join(dict.fromkeys(kinds))
    if "enum" in prop:
        return "one of " + ", ".join(f"`{value}`" for value in prop["enum"])
    if "const" in prop:
        return f"`{prop['const']}`"
    kind = prop.get("type", "value")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if kind == "object":
        inner = next(iter(prop.get("patternProperties", {}).values()), {})
        return f"table of {_type(inner)}" if inner else "table"
    if "pattern" in prop and "(" in prop["pattern"] and ":" in prop["pattern"]:
        return "callable name"
    return {"string": "string", "integer": "integer", "number": "number",
            "boolean": "boolean"}.get(kind, kind)


def _default(name: str, prop: dict[str, Any], required: set[str]) -> str:
    if name in required:
        return "required"
    default = prop.get("default")
    if default is None or default in ("", [], {}):
        return "optional"
    return f"`{default}`"


def project_file_reference() -> str:
    """The project file's tables and keys, from `ProjectFile`'s JSON schema."""
    from harness.project.schema import ProjectFile

    schema = ProjectFile.model_json_schema()
    top = schema["properties"]
    top_required = set(schema.get("required", []))
    lines: list[str] = []
    for table, prop in top.items():
        ref = prop.get("$ref") or prop.get("items", {}).get("$ref")
        if ref is None:
            ref = next(p.get("$ref") or p.get("items", {}).get("$ref")
                       for p in prop.get("anyOf", []) if p.get("type") != "null")
        model = schema["$defs"][ref.rsplit("/", 1)[-1]]
        many = prop.get("type") == "array"
        heading = f"[[{table}]]" if many else f"[{table}]"
        need = "required" if table in top_required else "optional"
        lines += [f"### `{heading}`", "", f"{need}{', one or more' if many else ''}.", "",
                  "| key | type | default | meaning |", "|---|---|---|---|"]
        required = set(model.get("required", []))
        for name, field in model["properties"].items():
            meaning = PROJECT_KEYS.get(table, {}).get(name, "")
            lines.append(f"| `{name}` | {_type(field)} | {_default(name, field, required)} "
                         f"| {meaning} |")
        lines.append("")
    return "\n".join(lines)


def _helps(group: click.Group, context: click.Context, words: str) -> list[str]:
    """The help of each command of `group`, and of each subcommand of a group among them."""
    lines: list[str] = []
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if command is None:
            continue
        inner = click.Context(command, info_name=name, parent=context, terminal_width=100,
                              max_content_width=100)
        heading = "##" if words == "ncuh" else "###"
        lines += [f"{heading} `{words} {name}`", "", "```text", command.get_help(inner), "```",
                  ""]
        if isinstance(command, click.Group):
            lines += _helps(command, inner, f"{words} {name}")
    return lines


def commands_reference() -> str:
    """Every command's help, as `ncuh COMMAND --help` prints it (subcommands too)."""
    from harness.cli import main

    root = click.Context(main, info_name="ncuh", terminal_width=100, max_content_width=100)
    return "\n".join(["## `ncuh`", "", "```text", main.get_help(root), "```", "",
                      *_helps(main, root, "ncuh")])


def rule_constants(module_name: str) -> dict[str, float]:
    """The numeric module constants of a rule: its thresholds and limits."""
    module = importlib.import_module(module_name)
    return {name: value for name, value in vars(module).items()
            if name.isupper() and isinstance(value, int | float) and not isinstance(value, bool)}


def findings_reference() -> str:
    """Every rule of the registry, in the order it runs: its docstring and its constants."""
    from harness.findings.registry import RULES

    lines: list[str] = []
    for rule in RULES:
        module = rule.check.__module__
        summary, _, body = rule.doc.partition("\n")
        lines += [f"### `{rule.name}`", "", f"**{summary.strip()}**", "", body.strip(), "",
                  f"Source: `{module.replace('.', '/')}.py`.", ""]
        constants = rule_constants(module)
        if constants:
            lines += ["| threshold | value |", "|---|---|"]
            lines += [f"| `{name}` | {value:g} |" for name, value in constants.items()]
            lines.append("")
    return "\n".join(lines + fixes_reference())


def fixes_reference() -> list[str]:
    """Every fix rule: the findings it answers and when it fits (its docstring; the evidence
    it declares is shown on each page beside the idea)."""
    from harness.findings.fixes import FIX_RULES

    lines = ["## Fix ideas", "",
             "Each fix idea is a rule of `harness/findings/fixes/`: it answers the problems of "
             "the rules named, and is offered only where the evidence it declares holds.", ""]
    for rule in FIX_RULES:
        answers = ", ".join(f"`{name}`" for name in rule.answers)
        lines += [f"### fix `{rule.name}`", "", f"{rule.doc} (answers {answers}; source: "
                  f"`{rule.propose.__module__.replace('.', '/')}.py`)", ""]
    return lines


GENERATORS = {"project-file": project_file_reference, "commands": commands_reference,
              "findings": findings_reference}


# A page with a marker tells GitHub readers, above it, that the reference is built with the
# site; the built page has the reference, so that paragraph goes.
UNBUILT_NOTE = re.compile(r"^On GitHub this page stops here:.*?(?:\n\n|\Z)",
                          re.MULTILINE | re.DOTALL)


def on_page_markdown(markdown: str, **_: Any) -> str:
    for marker, generate in GENERATORS.items():
        tag = f"<!-- ncuh:{marker} -->"
        if tag in markdown:
            markdown = UNBUILT_NOTE.sub("", markdown).replace(tag, generate())
    return markdown
