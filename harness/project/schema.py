"""The shape of a project file, as pydantic models: unknown keys are refused, types are strict.

`ncuh.toml` (or the `[tool.ncuh]` table of a `pyproject.toml`) is validated against
`ProjectFile`; `describe_errors` turns each of pydantic's complaints into one line naming the
key and what was expected. What the schema cannot see (callables, files, the chain's links) is
checked by `harness.project.loader`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

from harness.project.size import RESERVED_DIMS

ProjectName = Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")]  # a folder name
Identifier = Annotated[StrictStr, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
VariantName = Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9_]+$")]
CallableName = Annotated[StrictStr, Field(pattern=r"^([A-Za-z_][\w.]*:)?[A-Za-z_]\w*$")]
NonEmpty = Annotated[StrictStr, Field(min_length=1)]
# An NVRTC target such as sm_90a: the arch-specific targets (wgmma, setmaxnreg) need naming.
Arch = Annotated[StrictStr, Field(pattern=r"^sm_[0-9]{2,3}[af]?$")]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProjectTable(_Table):
    name: ProjectName
    description: StrictStr = ""
    module: Identifier | None = None


class ProblemTable(_Table):
    dims: Annotated[list[Identifier], Field(min_length=1)]
    default_sizes: Annotated[list[NonEmpty], Field(min_length=1)] = ["1024"]
    profile_size: NonEmpty | None = None
    inputs: CallableName
    outputs: Annotated[list[Identifier], Field(min_length=1)]
    poison: list[Identifier] | None = None
    expected: CallableName
    # finite: `inf` (or 1e309, which TOML reads as inf) would let every result pass; 0 is an
    # exact comparison, bit for bit
    tolerance: Annotated[StrictFloat | StrictInt, Field(ge=0, allow_inf_nan=False)] \
        | CallableName = 1e-4
    compare: Literal["relative_frobenius", "max_abs", "allclose", "exact"] = "relative_frobenius"
    rtol: Annotated[StrictFloat | StrictInt, Field(ge=0, allow_inf_nan=False)] = 1e-5
    atol: Annotated[StrictFloat | StrictInt, Field(ge=0, allow_inf_nan=False)] = 1e-8
    flops: NonEmpty | None = None
    bytes: NonEmpty | None = None
    summary_min_size: Annotated[StrictInt, Field(ge=1)] | None = None

    @model_validator(mode="after")
    def _exact_takes_no_tolerance(self) -> ProblemTable:
        if self.compare == "exact" and "tolerance" in self.model_fields_set:
            raise ValueError("key 'tolerance': compare = \"exact\" takes no tolerance (every "
                             "element must equal the truth); remove one of the two")
        return self

    @model_validator(mode="after")
    def _dims_are_not_size_methods(self) -> ProblemTable:
        taken = [name for name in self.dims if name in RESERVED_DIMS]
        if taken:
            raise ValueError(f"key 'dims': {taken[0]!r} is the name of a method of "
                             f"Size ({', '.join(sorted(RESERVED_DIMS))}); choose another name")
        return self


class ReferenceTable(_Table):
    name: NonEmpty
    call: CallableName
    strategy: StrictStr = ""


class LimitTable(_Table):
    name: NonEmpty
    call: CallableName
    bytes: NonEmpty


class VariantTable(_Table):
    name: VariantName
    title: NonEmpty | None = None
    previous: StrictStr | None = None
    strategy: StrictStr = ""
    source: NonEmpty | None = None
    kernel: Identifier | None = None
    launch: CallableName | None = None
    defines: CallableName | None = None
    call: CallableName | None = None
    capture: NonEmpty | None = None
    arch: Arch | None = None
    params: dict[Identifier, StrictInt] = {}
    tunable: dict[Identifier, Annotated[list[StrictInt], Field(min_length=1)]] = {}
    constraints: CallableName | None = None

    @model_validator(mode="after")
    def _one_way_to_launch(self) -> VariantTable:
        if self.source is not None and self.call is not None:
            raise ValueError("give either source= (NVRTC) or call= (a Python launcher), not both")
        if self.source is None and self.call is None:
            raise ValueError("missing key 'source' (a .cu file) or 'call' (a Python launcher)")
        if self.source is not None:
            missing = [key for key in ("kernel", "launch") if getattr(self, key) is None]
            if missing:
                raise ValueError(f"missing key {missing[0]!r}, needed with source=")
        elif (self.defines is not None or self.kernel is not None or self.launch is not None
              or self.arch is not None):
            raise ValueError("kernel=, launch=, defines= and arch= go with source=, not with "
                             "call=")
        elif self.capture is None:
            raise ValueError("missing key 'capture' (the ncu -k filter), needed with call=")
        unknown = [key for key in self.tunable if key not in self.params]
        if unknown:
            raise ValueError(
                f"tunable {unknown[0]!r} has no default in params (params = {{ {unknown[0]} = "
                "... } expected)"
            )
        return self


class ProjectFile(_Table):
    project: ProjectTable
    problem: ProblemTable
    reference: ReferenceTable | None = None
    limit: list[LimitTable] = []
    variant: Annotated[list[VariantTable], Field(min_length=1)]


_TABLES = {"variant": "[[variant]]", "limit": "[[limit]]"}
_UNION_TAGS = ("float", "int", "str", "constrained-str", "function-after", "bool")


def _expected(error: dict) -> str:
    kind = error["type"]
    context = error.get("ctx") or {}
    if kind == "missing":
        return "missing"
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "string_pattern_mismatch":
        got = f", got {error.get('input')!r}"
        if "[A-Za-z_][\\w.]*:" in str(context.get("pattern")):
            return f"expected a callable name (function or module:function){got}"
        return f"expected a name matching {context.get('pattern')}{got}"
    if kind in ("greater_than", "greater_than_equal"):
        sign = ">" if kind == "greater_than" else ">="
        return f"expected a number {sign} {context.get('gt', context.get('ge'))}"
    if kind == "finite_number":
        return "expected a finite number"
    if kind in ("too_short", "too_long"):
        return f"expected at least {context.get('min_length', 1)} item(s)"
    if kind in ("string_type", "int_type", "float_type", "list_type", "dict_type",
                "model_type", "bool_type"):
        noun = {"string_type": "a string", "int_type": "an integer", "float_type": "a number",
                "list_type": "a list", "dict_type": "a table", "model_type": "a table",
                "bool_type": "true or false"}[kind]
        return f"expected {noun}, got {type(error.get('input')).__name__} {error.get('input')!r}"
    if kind == "literal_error":
        return f"expected one of {context.get('expected')}"
    return error["msg"]


def _place(loc: Sequence[object], data: dict) -> tuple[str, list[str]]:
    """Where a pydantic location points: "[[variant]] #2 ('name')" (1-based, as the file reads)
    and the keys inside that table."""
    where, keys = "", []
    node: object = data
    for index, part in enumerate(loc):
        if isinstance(part, int) and index > 0 and loc[index - 1] in _TABLES:
            name = node[part].get("name") if isinstance(node, list) and part < len(node) \
                and isinstance(node[part], dict) else None
            where = f"{_TABLES[str(loc[index - 1])]} #{part + 1}" + (f" ({name!r})" if name else "")
            keys = []
        elif isinstance(part, str) and part in _TABLES and index == 0:
            pass
        else:
            keys.append(str(part))
        if isinstance(node, dict) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            node = None
    return where, keys


def _union_prefix(loc: Sequence[object]) -> tuple[object, ...] | None:
    """Where a union's member error points (the key before the member tags), else None."""
    tags = [i for i, part in enumerate(loc) if isinstance(part, str) and (
        "[" in part or part in _UNION_TAGS)]
    return tuple(loc[:tags[0]]) if tags else None


def describe_errors(error: ValidationError, data: dict) -> list[str]:
    """Every problem, one line each, as "<where>key '<key>': <what was expected>"."""
    groups: dict[tuple[object, ...], list[dict]] = {}
    for member in error.errors():
        prefix = _union_prefix(member["loc"])
        groups.setdefault(prefix if prefix is not None else tuple(member["loc"]),
                          []).append(member)
    return list(dict.fromkeys(_describe(members, data) for members in groups.values()))


def _describe(errors: list[dict], data: dict) -> str:
    """One line for the errors pydantic gives about one key."""
    first = errors[0]
    loc = [part for part in first["loc"] if not (isinstance(part, str) and "[" in part)]
    # A union (a number or a callable name) reports one error per member, under tags that are
    # not keys: name the key once and every form it may take.
    prefix = _union_prefix(first["loc"])
    if prefix is not None:
        forms = []
        for member in errors:
            form = _expected(member).split(", got")[0].removeprefix("expected ")
            if form not in forms:
                forms.append(form)
        where, keys = _place(prefix, data)
        place = f"{where}: " if where else ""
        return (f"{place}key {'.'.join(keys)!r}: expected {' or '.join(forms)}, "
                f"got {first.get('input')!r}")
    where, keys = _place(loc, data)
    if first["type"] == "value_error":
        message = str(first["msg"]).removeprefix("Value error, ")
        table = f"[{'.'.join(keys)}]" if keys else "file"
        return f"{where or table}: {message}"
    key = ".".join(keys) if keys else (str(loc[0]) if loc else "?")
    if first["type"] == "extra_forbidden" and len(keys) >= 1:
        parent = keys[:-1]
        table = ".".join(parent)
        allowed = _allowed(loc[:-1])
        where_text = f"{where} " if where else (f"[{table}] " if table else "")
        return f"{where_text}unknown key {keys[-1]!r} (expected one of: {allowed})".strip()
    if first["type"] == "missing":
        place = f"{where}: " if where else ""
        return f"{place}missing key {key!r}"
    place = f"{where}: " if where else ""
    return f"{place}key {key!r}: {_expected(first)}"


def _allowed(loc: list) -> str:
    model: type[BaseModel] = ProjectFile
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            break
        annotation = field.annotation
        inner = getattr(annotation, "__args__", (annotation,))
        found = next((a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)),
                     None)
        if found is None:
            inner_args = [x for a in inner for x in getattr(a, "__args__", ())]
            found = next((a for a in inner_args
                          if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if found is None:
            break
        model = found
    return ", ".join(model.model_fields)
