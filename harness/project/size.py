"""Problem sizes: `Size`, a frozen mapping of the project's dimensions, and THE size parser.

Every command reads sizes through `parse_size` / `parse_sizes`, so `ncuh bench --sizes`,
`ncuh profile --size` and the runner's `--size` accept the same words:

    "4096"             every dimension 4096
    "1024x2048x512"    one value per dimension, in the order of `[problem] dims` (x or ,)
    "2^26", "1<<20", "1e6"   any value may be a power or an exact float literal

A list (`--sizes 1024,2048,4096`) separates sizes with commas; inside a list item the
dimensions are separated by `x`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence

from harness.errors import BadSizeError

_NUMBER = re.compile(r"^\d+$")
_POWER = re.compile(r"^(\d+)\s*(?:\^|\*\*)\s*(\d+)$")
_SHIFT = re.compile(r"^(\d+)\s*<<\s*(\d+)$")
_FLOAT = re.compile(r"^\d+(?:\.\d*)?[eE]\+?\d+$")
# Anything past this is a typo, not a problem size (and 2^31 is CUDA's 32-bit index limit).
MAX_DIM = 2**62


class Size:
    """A problem size: the project's dims -> positive ints, immutable and hashable.

    Read it as `size.M`, `size["n"]`, `dict(size)` or `size.as_dict()`; iterating gives the
    values in dims order, so `m, n, k = size` and `tuple(size)` work like a shape.
    """

    __slots__ = ("_dims", "_values")
    _dims: tuple[str, ...]
    _values: tuple[int, ...]

    def __init__(self, dims: Sequence[str], values: Sequence[int]) -> None:
        if len(dims) != len(values):
            raise ValueError(f"{len(values)} values for {len(dims)} dimensions")
        object.__setattr__(self, "_dims", tuple(dims))
        object.__setattr__(self, "_values", tuple(int(v) for v in values))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Size is immutable")

    def __getattr__(self, name: str) -> int:
        dims = object.__getattribute__(self, "_dims")
        if name in dims:
            return object.__getattribute__(self, "_values")[dims.index(name)]
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"a size has no dimension {name!r} (its dims: {', '.join(dims)})")

    def __getitem__(self, key: str | int) -> int:
        if isinstance(key, int):
            return self._values[key]
        if key not in self._dims:
            raise KeyError(f"a size has no dimension {key!r} (its dims: {', '.join(self._dims)})")
        return self._values[self._dims.index(key)]

    def __iter__(self) -> Iterator[int]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._dims)

    def __contains__(self, name: object) -> bool:
        return name in self._dims

    def keys(self) -> tuple[str, ...]:
        return self._dims

    def values(self) -> tuple[int, ...]:
        return self._values

    def items(self) -> list[tuple[str, int]]:
        return list(zip(self._dims, self._values, strict=True))

    @property
    def dims(self) -> tuple[str, ...]:
        return self._dims

    # A Size equals the tuple of its values (`size == (4096, 4096, 4096)`), so it hashes like
    # that tuple: equal objects must have equal hashes, in sets and dict keys alike.
    def __hash__(self) -> int:
        return hash(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Size):
            return self._dims == other._dims and self._values == other._values
        if isinstance(other, (tuple, list)):
            return self._values == tuple(other)
        return NotImplemented

    def __lt__(self, other: Size) -> bool:
        return self._values < other._values

    def __str__(self) -> str:
        return size_text(self._values)

    def __repr__(self) -> str:
        return f"Size({', '.join(f'{d}={v}' for d, v in self.items())})"

    @property
    def label(self) -> str:
        """Short for labels and file names: "4096" when all dims are equal, else "4096x2048x1"."""
        if len(set(self._values)) == 1:
            return str(self._values[0])
        return str(self)

    def as_list(self) -> list[int]:
        return list(self._values)

    def as_dict(self) -> dict[str, int]:
        return dict(self.items())


def size_text(values: Sequence[int]) -> str:
    """A size's values as every table and file name writes them: "1024x2048x512"."""
    return "x".join(str(int(v)) for v in values)


# A dimension with one of these names would be hidden behind the method (`size.items` is the
# method, not the dimension): the project schema refuses them as dim names.
RESERVED_DIMS = frozenset(name for name in dir(Size) if not name.startswith("_"))


def parse_value(text: str) -> int:
    """One dimension: 4096, 2^26, 2**26, 1<<20 or 1e6 (exact integers only); ValueError else."""
    word = text.strip()
    value: int | None = None
    if _NUMBER.match(word):
        value = int(word)
    elif match := _POWER.match(word):
        base, exponent = int(match.group(1)), int(match.group(2))
        value = base**exponent if exponent <= 64 else None
    elif match := _SHIFT.match(word):
        value = int(match.group(1)) << int(match.group(2)) if int(match.group(2)) <= 64 else None
    elif _FLOAT.match(word):
        number = float(word)
        if math.isfinite(number) and number == int(number):
            value = int(number)
    if value is None:
        raise ValueError(f"{text.strip()!r} is not a whole number (e.g. 4096, 2^26, 1<<20, 1e6)")
    if not 1 <= value <= MAX_DIM:
        raise ValueError(f"{text.strip()!r} must be between 1 and 2^62")
    return value


def parse_size(text: str, dims: Sequence[str]) -> Size:
    """"4096" -> every dim 4096; "1024x2048x512" (or with commas) -> one value per dim."""
    raw = str(text).strip()
    parts = [p for p in re.split(r"[xX,]", raw)] if raw else []
    if not parts or any(not p.strip() for p in parts):
        raise BadSizeError(f"bad size {raw!r}: {_expected(dims)}")
    if len(parts) == 1:
        parts = parts * len(dims)
    if len(parts) != len(dims):
        raise BadSizeError(
            f"bad size {raw!r}: {len(parts)} values for {len(dims)} dimensions "
            f"({', '.join(dims)}): {_expected(dims)}"
        )
    try:
        values = [parse_value(p) for p in parts]
    except ValueError as error:
        raise BadSizeError(f"bad size {raw!r}: {error}") from None
    return Size(dims, values)


def _expected(dims: Sequence[str]) -> str:
    """What a size may be, said for this project's dims."""
    value = "N, 2^K, 1<<K or 1eK"
    if len(dims) == 1:
        return f"expected {value}"
    return (f"expected {value} for every dimension, or one per dimension joined by x "
            f"({'x'.join(dims)})")


def parse_sizes(text: str, dims: Sequence[str]) -> list[Size]:
    """A comma-separated list of sizes (dimensions inside an item separated by x)."""
    items = [item.strip() for item in str(text).split(",") if item.strip()]
    if not items:
        raise BadSizeError(f"bad sizes {text!r}: no size given")
    return list(dict.fromkeys(parse_size(item, dims) for item in items))
