"""GPU libraries the dry run does not stand in for: importing one works, using it stops.

Within a dry run, `import torch` (or triton, numba, CuPy's own extensions...) gives a module
whose every attribute is a `Blocked` name; calling one, or using it as a value, raises
`NotStoodIn` naming it, so that `check` can say exactly which call it could not run. A
module-level `import torch` or `@triton.jit` therefore costs the project nothing until a
function of it reaches the library. `NotStoodIn` is a BaseException: a project's own
`except Exception:` does not swallow it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

# The libraries a project's Python may reach for its GPU work (`cupy` itself has a stand-in).
GPU_LIBRARIES = ("torch", "triton", "numba", "pycuda", "jax", "jaxlib", "tensorflow",
                 "cupyx", "cupy_backends", "cuda", "cutlass", "tilelang", "warp")


class NotStoodIn(BaseException):
    """The project's Python reached something the dry run has no stand-in for."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class Blocked:
    """A name from a blocked library: attributes give more names; any use stops the run."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attribute: str) -> Blocked:
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        return Blocked(f"{self._name}.{attribute}")

    def _stop(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotStoodIn(self._name)

    __call__ = _stop
    __instancecheck__ = _stop
    __subclasscheck__ = _stop
    __iter__ = _stop
    __bool__ = _stop
    __len__ = _stop
    __getitem__ = _stop
    __setattr__ = _stop
    __index__ = _stop
    __int__ = _stop
    __float__ = _stop
    __enter__ = _stop
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _stop
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = _stop
    __lt__ = __le__ = __gt__ = __ge__ = _stop

    def __repr__(self) -> str:
        return f"<not stood in: {self._name}>"


class _BlockedModule(types.ModuleType):
    """A blocked library (or a module of it): every attribute is a `Blocked` name."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__path__: list[str] = []  # a package: `import torch.cuda` finds its modules here

    def __getattr__(self, attribute: str) -> Blocked:
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        return Blocked(f"{self.__name__}.{attribute}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds every module of the blocked libraries (first on `sys.meta_path`)."""

    def __init__(self, libraries: Sequence[str]) -> None:
        self.libraries = tuple(libraries)

    def blocks(self, name: str) -> bool:
        return any(name == top or name.startswith(f"{top}.") for top in self.libraries)

    def find_spec(self, name: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        if not self.blocks(name):
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _BlockedModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


@contextmanager
def blocked(libraries: Sequence[str] = GPU_LIBRARIES,
            modules: dict[str, types.ModuleType] | None = None) -> Iterator[None]:
    """Within: `libraries` are blocked and `modules` (name -> module) stand in for theirs;
    afterwards `sys.modules` holds what it held before for all of them."""
    finder = _Finder(libraries)
    kept = {name: module for name, module in sys.modules.items()
            if finder.blocks(name) or name in (modules or {})}
    for name in kept:
        del sys.modules[name]
    sys.modules.update(modules or {})
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in [name for name in sys.modules
                     if finder.blocks(name) or name in (modules or {})]:
            del sys.modules[name]
        sys.modules.update(kept)
