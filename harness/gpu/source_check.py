"""What a project's CUDA sources say before they are compiled: is each variant's `kernel` an
`extern "C" __global__` of its source, and does each kernel use only parameters its variant
defines?

A kernel's text is its signature (with `__launch_bounds__`, `__cluster_dims__`) and its body;
a parameter is a name some variant of the project defines in `params` or `tunable`. A name the
source gives a default itself (`#define NAME`) needs no variant to define it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from harness.gpu.backend import shared_defaults, source_text
from harness.project import Project, Variant

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
# The attributes that may stand, with their arguments, between `__global__` and the name.
_KERNEL_ATTRIBUTES = r"__launch_bounds__|__cluster_dims__|__maxnreg__"
_GLOBAL = re.compile(r"__global__\b(?P<between>[^;{}]*?)"
                     rf"\b(?P<name>(?!(?:{_KERNEL_ATTRIBUTES})\b)[A-Za-z_]\w*)\s*\(")
_EXTERN_C_BLOCK = re.compile(r'extern\s+"C"\s*\{')
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)", re.MULTILINE)
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")


# A scalar parameter's C type -> (kind, bytes) as NumPy says them: what a launch must pass.
_SCALARS: dict[str, tuple[str, int]] = {
    **dict.fromkeys(("int", "signed", "signed int", "int32_t"), ("i", 4)),
    **dict.fromkeys(("unsigned", "unsigned int", "uint32_t"), ("u", 4)),
    **dict.fromkeys(("long", "long int", "signed long", "long long", "long long int",
                     "signed long long", "int64_t", "ptrdiff_t", "intptr_t", "ssize_t"),
                    ("i", 8)),
    **dict.fromkeys(("unsigned long", "unsigned long int", "unsigned long long",
                     "unsigned long long int", "uint64_t", "size_t", "uintptr_t"), ("u", 8)),
    **dict.fromkeys(("short", "short int", "signed short", "int16_t"), ("i", 2)),
    **dict.fromkeys(("unsigned short", "unsigned short int", "uint16_t"), ("u", 2)),
    **dict.fromkeys(("char", "signed char", "int8_t"), ("i", 1)),
    **dict.fromkeys(("unsigned char", "uint8_t"), ("u", 1)),
    "bool": ("b", 1), "float": ("f", 4), "double": ("f", 8),
    **dict.fromkeys(("__half", "half"), ("f", 2)),
}
_QUALIFIERS = {"const", "volatile", "__restrict__", "restrict", "__grid_constant__",
               "struct"}


@dataclass(frozen=True)
class Parameter:
    """One parameter of a kernel, as its signature writes it."""

    text: str  # "const float *__restrict__ x"
    pointer: bool
    const: bool  # a pointer to const: what it points to is only read
    scalar: tuple[str, int] | None  # a known scalar type: (NumPy kind, bytes)


@dataclass(frozen=True)
class Kernel:
    """One `__global__` function of a source: its name, linkage, parameters and text."""

    name: str
    extern_c: bool
    text: str  # from `__global__` to the end of its body
    parameters: tuple[Parameter, ...] | None = None  # None where they could not be read


def _parameter(text: str) -> Parameter:
    text = " ".join(text.split("=", 1)[0].split())
    pointer = "*" in text or text.endswith("]") or "&" in text
    const = pointer and "const" in _WORD.findall(text.split("*", 1)[0])
    words = [word for word in _WORD.findall(text) if word not in _QUALIFIERS]
    scalar = None
    if not pointer:
        scalar = _SCALARS.get(" ".join(words)) or _SCALARS.get(" ".join(words[:-1]))
    return Parameter(text, pointer, const, scalar)


def _parameters(code: str, opening: int) -> tuple[Parameter, ...] | None:
    """The parameters of the list that opens at `code[opening]` ("("); None where the list
    has templates or macros in it that this reading cannot follow."""
    depth, start, parts = 0, opening + 1, []
    for index in range(opening, len(code)):
        char = code[index]
        if char in "(<[":
            depth += 1
        elif char in ")>]":
            depth -= 1
            if depth == 0:
                parts.append(code[start:index])
                break
        elif char == "," and depth == 1:
            parts.append(code[start:index])
            start = index + 1
    else:
        return None
    parts = [part for part in parts if part.strip() and part.strip() != "void"]
    return tuple(_parameter(part) for part in parts)


def _code(text: str) -> str:
    """The text without comments; strings kept (extern "C" is one), their lengths unchanged."""
    return _COMMENT.sub(lambda m: " " * len(m.group(0)), text)


def _block_end(code: str, opening: int) -> int:
    """The index of the brace that closes the one at `opening` (the end when unbalanced)."""
    depth = 0
    for index in range(opening, len(code)):
        depth += {"{": 1, "}": -1}.get(code[index], 0)
        if depth == 0:
            return index
    return len(code) - 1


def source_words(text: str) -> set[str]:
    """Every identifier of a source outside its comments (a macro it uses is one)."""
    return set(_WORD.findall(_code(text)))


@functools.lru_cache(maxsize=16)  # each variant of a source asks again
def kernels(text: str) -> dict[str, Kernel]:
    """Every `__global__` function defined (with a body) in `text`, by name (the dict is
    shared: do not change it)."""
    code = _code(text)
    blocks = [(m.end() - 1, _block_end(code, m.end() - 1))
              for m in _EXTERN_C_BLOCK.finditer(code)]
    found: dict[str, Kernel] = {}
    for match in _GLOBAL.finditer(code):
        start = match.start()
        body = code.find("{", match.end())
        semicolon = code.find(";", match.end())
        if body < 0 or 0 <= semicolon < body:
            continue  # a declaration, not a definition
        end = _block_end(code, body)
        before = code[max(0, start - 40):start]
        extern_c = (bool(re.search(r'extern\s+"C"\s*(?:__\w+__\s*)*$', before))
                    or any(first < start < last for first, last in blocks))
        found[match.group("name")] = Kernel(match.group("name"), extern_c,
                                            code[start:end + 1],
                                            _parameters(code, match.end() - 1))
    return found


def kernel_problems(project: Project, variant: Variant) -> list[str]:
    """Is `variant.kernel` an extern "C" __global__ of its source? One line per problem."""
    if not variant.source or not variant.kernel:
        return []
    where = f"variant {variant.name!r}: key 'kernel'"
    found = kernels(source_text(project.folder, variant.source))
    kernel = found.get(variant.kernel)
    if kernel is None:
        there = [name for name, k in found.items() if k.extern_c]
        listed = ", ".join(there) if there else "none"
        return [f"{where}: {variant.kernel!r} is not an extern \"C\" __global__ in "
                f"{variant.source} (its extern \"C\" kernels: {listed})"]
    if not kernel.extern_c:
        return [f"{where}: {variant.kernel!r} in {variant.source} is not extern \"C\": write "
                f"extern \"C\" __global__ void {variant.kernel}(...) so NVRTC keeps its name "
                "unmangled"]
    return []


def parameter_problems(project: Project, variant: Variant) -> list[str]:
    """Parameters `variant`'s kernel uses that neither the variant nor the source defines.

    Such a name compiles only because another variant of the same file defines it (its
    default comes along) or not at all; either way this variant cannot tune it.
    """
    if not variant.source or not variant.kernel:
        return []
    text = source_text(project.folder, variant.source)
    kernel = kernels(text).get(variant.kernel)
    if kernel is None:
        return []
    known = {key for other in project.variants for key in (*other.params, *other.tunable)}
    mine = {*variant.params, *variant.tunable}
    defined_in_source = set(_DEFINE.findall(_code(text)))
    used = dict.fromkeys(word for word in _WORD.findall(_STRING.sub('""', kernel.text))
                         if word in known)
    missing = [name for name in used if name not in mine and name not in defined_in_source]
    if not missing:
        return []
    shared = shared_defaults(project, variant)
    notes = ", ".join(f"{name} (now {shared[name]}, another variant's default)"
                      if name in shared else name for name in missing)
    return [f"variant {variant.name!r}: kernel {variant.kernel!r} uses {notes}, which its "
            f"params do not define: add {'them' if len(missing) > 1 else 'it'} to the "
            "variant's params, or #define a default in the source"]
