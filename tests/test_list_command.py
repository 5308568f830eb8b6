"""`ncuh list`: the chain in order, as text and JSON, without a GPU."""

from __future__ import annotations

import json

from click.testing import CliRunner

from harness.cli import main
from harness.project import load_project
from harness.project.locate import default_project_path

SGEMM = load_project(default_project_path())
CHAIN = [
    "naive", "coalesced", "smem_tiled", "blocktile_1d", "register_tiled", "vectorized",
    "bank_conflict_free", "warptiled", "double_buffered", "async_copy", "autotuned",
]


def _list(*args: str):
    result = CliRunner().invoke(main, ["list", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_list_json_is_the_chain_in_order() -> None:
    data = json.loads(_list("--format", "json"))
    assert data["project"] == "sgemm" and data["reference"] == "cuBLAS"
    assert data["dims"] == ["M", "N", "K"] and data["profile_size"] == "4096x4096x4096"
    records = data["variants"]
    assert [r["name"] for r in records] == CHAIN
    for record in records:
        assert {"name", "iteration", "title", "previous", "params"} <= set(record)
        assert isinstance(record["params"], dict) and record["title"]
        assert all(isinstance(v, int) for v in record["params"].values())
    iterations = [r["iteration"] for r in records]
    assert iterations == sorted(iterations) and len(set(iterations)) == len(iterations)
    names_so_far: set[str] = set()
    for record in records:
        # `previous` always points back up the chain, never forward or to itself.
        assert record["previous"] is None or record["previous"] in names_so_far
        names_so_far.add(record["name"])
    assert records[0]["previous"] is None
    assert records[1]["previous"] == "naive"
    assert records[CHAIN.index("autotuned")]["tunable"]


def test_list_json_matches_the_library() -> None:
    records = json.loads(_list("--format", "json"))["variants"]
    for record, variant in zip(records, SGEMM.variants, strict=True):
        assert record["params"] == variant.params
        assert record["strategy"] == variant.strategy
        assert record["kernel_name"] == variant.kernel_name


def test_list_text_has_one_line_per_variant() -> None:
    lines = _list().splitlines()
    assert lines[0].split() == ["#", "name", "title", "previous", "params"]
    assert len(lines) == 1 + len(CHAIN) + 2  # then the project and its reference
    for line, name in zip(lines[1:-2], CHAIN, strict=True):
        assert line.split()[1] == name
    assert lines[-2] == f"project: sgemm ({SGEMM.path})" and lines[-1] == "reference: cuBLAS"
    assert _list("--format", "text") == _list()


def test_list_rejects_unknown_format() -> None:
    result = CliRunner().invoke(main, ["list", "--format", "yaml"])
    assert result.exit_code == 2
