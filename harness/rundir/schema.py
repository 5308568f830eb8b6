"""Validate data files against pydantic models: a wrong shape is one line naming file and field.

Every file ncuh reads back (manifest.json, bench.json, threshold TOML files) has a model; this
module turns pydantic's `ValidationError` into an `NcuhError` subclass whose message says
which file, which field (`entries[2].report`) and what is wrong with it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.errors import NcuhError

Model = TypeVar("Model", bound=BaseModel)


class Record(BaseModel):
    """JSON records: strict types (a string is not a number), unknown fields kept."""

    model_config = ConfigDict(extra="allow", frozen=True, strict=True, populate_by_name=True)


def field_path(location: tuple[int | str, ...]) -> str:
    """('entries', 2, 'report') -> 'entries[2].report'."""
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def describe(error: ValidationError) -> str:
    """The first problem of a ValidationError as 'field: message (got value)'."""
    problems = error.errors(include_url=False)
    first = problems[0]
    where = field_path(tuple(first.get("loc", ())))
    message = first.get("msg", "invalid")
    if first.get("type") == "json_invalid":
        return f"not valid JSON ({first.get('ctx', {}).get('error', message)})"
    value = first.get("input")
    shown = "" if isinstance(value, dict | list) or first.get("type") == "missing" \
        else f" (got {_short(value)})"
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    return f"{where}: {message}{shown}{more}"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validate(model: type[Model], data: Any, source: str,
             error: type[NcuhError] = NcuhError, *, json_text: bool = False) -> Model:
    """`model` built from `data` (a Python object, or JSON text when `json_text`)."""
    try:
        if json_text:
            return model.model_validate_json(data)
        return model.model_validate(data)
    except ValidationError as problem:
        raise error(f"{source}: {describe(problem)}") from None
