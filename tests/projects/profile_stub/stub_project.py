"""Callables of the profile stub project; none of them is called by the CPU tests."""

from __future__ import annotations

from typing import Any

from harness.project import Launch, Size


def make_inputs(size: Size, seed: int | None) -> dict[str, Any]:
    raise NotImplementedError("the profile stub never runs")


def expected(inputs: dict[str, Any], size: Size) -> dict[str, Any]:
    raise NotImplementedError("the profile stub never runs")


def reference(inputs: dict[str, Any], size: Size) -> None:
    raise NotImplementedError("the profile stub never runs")


def launch(size: Size, params: dict[str, int], inputs: dict[str, Any]) -> Launch:
    return Launch(grid=(1,), block=(1,), args=())


def multiple_of_bm(size: Size | None, params: dict[str, int]) -> list[str]:
    block = params["BM"]
    if size is not None and any(n % block for n in size):
        return [f"needs every dimension to be a multiple of BM={block}, got {size}"]
    return []
