"""The dry run itself: the project's Python on the CPU, with stand-ins for the GPU.

At each of the project's sizes (its default sizes and its profile size, smallest first),
`inputs(size, seed)` makes the arrays and each NVRTC variant's `launch` gives its launches,
checked against the target GPU's limits and the kernel's own parameters. At the smallest size a
variant's constraints accept, it runs whole: its outputs are marked first, and each must then
be written (by a launch that passes it where the kernel may write, a copy, a store, or a new
array in its place). At the smallest size `expected` runs too (its truth shaped like the
outputs), and the reference and the limits run as a variant does. A `call=` launcher runs at
its smallest size only (it may compute on the CPU). Last, a parameter that neither the source
nor any of the variant's callables uses is named.

Each problem is one line; what the stand-ins cannot run (a GPU library) is a note, and the
variant is then not judged further.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy

from harness.dryrun.blocked import NotStoodIn
from harness.dryrun.cupy_standin import (
    DeviceArray,
    KernelCall,
    Recorder,
    TooMuchMemory,
    extent,
)
from harness.dryrun.launches import argument_problems, geometry_problems, written_ranges
from harness.dryrun.targets import GiB
from harness.errors import NcuhError, ProjectError, one_line
from harness.gpu import Kernel, Parameter, kernels, program_text, source_words
from harness.project import Launch, Project, Size, Variant, signature_problem, variants_named

# The inputs of one size may take this much of the host's memory (a GPU's worth would not fit).
HOST_LIMIT = 4 * GiB
# What marks an output before a run: a byte no computation leaves everywhere by chance.
_MARK = 0xA5
_SEED = 0


@dataclass(frozen=True)
class DryRun:
    """What a dry run found: problems (exit 2), warnings and notes, one line each; the sizes
    it ran at and what ran."""

    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    sizes: tuple[str, ...] = ()
    ran: tuple[str, ...] = ()


class _Stopped(Exception):
    """A callable of the project did not finish; why is told already."""


class _ReadParams(dict):  # type: ignore[type-arg]
    """A variant's parameters that note which ones its callables read."""

    def __init__(self, values: dict[str, int], read: set[str]) -> None:
        super().__init__(values)
        self._read = read

    def __getitem__(self, key: str) -> int:
        self._read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._read.add(key)
        return super().get(key, default)

    def _all(self) -> None:
        self._read.update(super().keys())

    def __iter__(self) -> Iterator[str]:
        self._all()
        return super().__iter__()

    def keys(self) -> Any:
        self._all()
        return super().keys()

    def items(self) -> Any:
        self._all()
        return super().items()

    def values(self) -> Any:
        self._all()
        return super().values()

    def copy(self) -> dict[str, int]:
        self._all()
        return dict(super().items())


@dataclass
class _VariantState:
    read: set[str] = field(default_factory=set)
    ran: bool = False  # ran whole at one size
    judged: bool = True  # every callable of it finished wherever it ran
    done: bool = False  # stopped: no further sizes
    told: set[tuple[str, str]] = field(default_factory=set)  # launch problems named, by kind


def _name(function: Any) -> str:
    return getattr(function, "__name__", type(function).__name__)


_ABOUT_A_VARIANT = re.compile(r"^variant '([^']+)' (at size \S+: .*)$")


def _grouped(lines: list[str]) -> tuple[str, ...]:
    """Lines that say the same of several variants (a launcher they share) said once."""
    groups: dict[str, list[str]] = {}
    for line in lines:
        match = _ABOUT_A_VARIANT.match(line)
        key = match[2] if match else line
        groups.setdefault(key, []).append(match[1] if match else "")
    return tuple(key if names == [""] else f"{variants_named(names)} {key}"
                 for key, names in groups.items())


def _none_of(readers: list[str]) -> str:
    """"f never reads it", "neither f nor g reads it", "none of f, g, h reads it"."""
    if len(readers) == 1:
        return f"{readers[0]} never reads it"
    if len(readers) == 2:
        return f"neither {readers[0]} nor {readers[1]} reads it"
    return f"none of {', '.join(readers)} reads it"


def _sizes(project: Project) -> list[Size]:
    every = dict.fromkeys((*project.default_sizes, project.profile_size))
    return sorted(every, key=lambda size: (math.prod(size), tuple(size)))


def _mark(array: Any) -> bool:
    """Fill an output with the mark; False where it cannot be (not a contiguous array)."""
    if not isinstance(array, numpy.ndarray) or not (array.flags.c_contiguous
                                                    or array.flags.f_contiguous):
        return False
    array.reshape(-1, order="A").view(numpy.uint8).fill(_MARK)
    return True


def _changed(array: numpy.ndarray) -> bool:
    return bool((array.reshape(-1, order="A").view(numpy.uint8) != _MARK).any())


def _gib(nbytes: int) -> str:
    return f"{nbytes / GiB:.3g} GiB"


class Trial:
    """One dry run of `project`, its stand-in GPU's doings told to `recorder`."""

    def __init__(self, project: Project, recorder: Recorder) -> None:
        self.project, self.target, self.recorder = project, recorder.target, recorder
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.notes: list[str] = []
        self.sizes_run: list[str] = []
        self.ran: dict[str, None] = {}
        self.states = {variant.name: _VariantState() for variant in project.variants}
        self.inputs: dict[str, Any] = {}  # those of the size under way
        self._memory_stop = False  # the last size stopped for its memory
        self._programs: dict[str, str | None] = {}  # source -> what NVRTC compiles

    # ------------------------------------------------------------------ the whole run

    def run(self) -> DryRun:
        sizes = _sizes(self.project)
        for index, size in enumerate(sizes):
            if not self._at(size, first=index == 0):
                left = sizes[index + 1:]
                if left and self._memory_stop:
                    self.notes.append(f"not run at the larger size(s) {', '.join(map(str, left))}"
                                      " either")
                break
        self._unused_parameters()
        return DryRun(_grouped(self.problems), tuple(self.warnings), _grouped(self.notes),
                      tuple(self.sizes_run), tuple(self.ran))

    def _at(self, size: Size, first: bool) -> bool:
        """Everything that runs at `size`; False where no larger size can run."""
        self.recorder.forget()
        self.recorder.values_matter = first  # `expected` computes from them at this size only
        inputs = self._inputs(size)
        if inputs is None:
            return False
        self.inputs = inputs
        self.sizes_run.append(str(size))
        self.ran["inputs"] = None
        if first:
            self._expected(inputs, size)
            if self.project.reference is not None:
                reference = self.project.reference
                self._library(f"[reference] {reference.name!r}", "the reference",
                              reference.call, inputs, size)
            for limit in self.project.limits:
                self._library(f"[[limit]] {limit.name!r}", f"limit {limit.name!r}",
                              limit.call, inputs, size)
        for variant in self.project.variants:
            state = self.states[variant.name]
            if not state.done and not (variant.call is not None and state.ran):
                self._variant(variant, state, inputs, size)
        return True

    # ------------------------------------------------------------------ calling the project

    def _call(self, where: str, text: str, role: str, function: Callable[..., Any],
              *args: Any) -> Any:
        """`function(*args)` on a fresh record; what stops it is told here, once, and raised
        as `_Stopped`. A function that cannot play `role` is not called: `check` names it."""
        if signature_problem(where, role, function) is not None:
            raise _Stopped
        self.recorder.reset()
        try:
            return function(*args)
        except NotStoodIn as stop:
            self.notes.append(f"{where}: {text} not run: it uses {stop.what}, which "
                              "`ncuh check` has no stand-in for (a GPU library)")
        except TooMuchMemory as too_much:
            self._memory_stop = True
            if too_much.on_gpu:
                self.warnings.append(f"{where}: {text} allocates more than "
                                     f"{_gib(too_much.limit)}, more than any "
                                     f"{self.target.arch} GPU holds{self._one_number(args)}")
            else:
                self.notes.append(f"{where}: {text} not run: it allocates more than the "
                                  f"{_gib(too_much.limit)} `ncuh check` stands in for on the "
                                  "host")
        except (KeyboardInterrupt, _Stopped):
            raise
        except BaseException as error:  # the project's own code: SystemExit too
            self.problems.append(f"{where}: {text} raised {self._one_line(error)}")
        raise _Stopped

    def _one_line(self, error: BaseException) -> str:
        text = one_line(error, self.project.folder)
        if isinstance(error, ValueError) and "values to unpack" in str(error):
            dims = self.project.dims
            text += f"; a size unpacks to its {len(dims)} dims ({', '.join(dims)})"
        return text

    def _one_number(self, args: tuple[Any, ...]) -> str:
        size = next((arg for arg in args if isinstance(arg, Size)), None)
        if size is None or len(size) < 2 or len(set(size)) > 1:
            return ""
        return (f" (one number means every dimension: {next(iter(size))} is {size} in this "
                f"{len(size)}-dimensional project)")

    # ------------------------------------------------------------------ inputs and truth

    def _inputs(self, size: Size) -> dict[str, Any] | None:
        where = "key 'problem.inputs'"
        function = self.project.inputs
        try:
            inputs = self._call(where, f"{_name(function)}({size}, seed={_SEED})", "inputs",
                                function, size, _SEED)
        except _Stopped:
            return None
        if not isinstance(inputs, dict):
            self.problems.append(f"{where}: {_name(function)}({size}, seed={_SEED}) returned "
                                 f"{type(inputs).__name__}, not a dict of arrays")
            return None
        missing = [name for name in self.project.outputs if name not in inputs]
        for name in missing:
            self.problems.append(f"key 'problem.outputs': {name!r} is not among what "
                                 f"{_name(function)} returns ({', '.join(map(str, inputs))})")
        return None if missing else inputs

    def _expected(self, inputs: dict[str, Any], size: Size) -> None:
        function = self.project.expected
        if function is None:
            return
        where, text = "key 'problem.expected'", f"{_name(function)}(inputs, {size})"
        try:
            truth = self._call(where, text, "expected", function, dict(inputs), size)
        except _Stopped:
            return
        self.ran["expected"] = None
        if not isinstance(truth, dict):
            self.problems.append(f"{where}: {text} returned {type(truth).__name__}, not a dict "
                                 "of the outputs' truth")
            return
        for name in self.project.outputs:
            if name not in truth:
                self.problems.append(f"{where}: {text} gives no {name!r} (it gives "
                                     f"{', '.join(map(str, truth)) or 'nothing'})")
            elif numpy.shape(truth[name]) != numpy.shape(inputs[name]):
                self.problems.append(
                    f"{where}: {text} gives {name!r} of shape {numpy.shape(truth[name])}, but "
                    f"{_name(self.project.inputs)} makes {name!r} of shape "
                    f"{numpy.shape(inputs[name])}: no result could match it")

    # ------------------------------------------------------------------ runs and their outputs

    def _library(self, where: str, label: str, function: Callable[..., Any],
                 inputs: dict[str, Any], size: Size) -> None:
        """The reference or a limit: `call(inputs, size)`, its launches checked and (the
        reference's) outputs written."""
        text = f"{_name(function)}(inputs, {size})"
        given, marked = self._marked(inputs)
        try:
            self._call(where, text, "reference", function, given, size)
        except _Stopped:
            return
        self.ran[label] = None
        self._launches(where, None, self.recorder.calls)
        if where.startswith("[reference]"):  # a limit's copy goes where it likes
            self._outputs_written(where, text, inputs, given, marked, self.recorder.calls)

    def _marked(self, inputs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, bool]]:
        """A fresh dict of the inputs for one run, every output marked."""
        return dict(inputs), {name: _mark(inputs[name]) for name in self.project.outputs}

    def _outputs_written(self, where: str, text: str, inputs: dict[str, Any],
                         given: dict[str, Any], marked: dict[str, bool],
                         calls: list[KernelCall]) -> None:
        writes = list(self.recorder.writes)
        passed: dict[str, list[str]] = {}
        for call in calls:
            parameters = self._parameters(call)
            writes += written_ranges(call, parameters)
            for index, value in enumerate(call.args if isinstance(call.args, (tuple, list))
                                          else ()):
                name = self._array_name(inputs, value)
                if name and parameters and len(parameters) == len(call.args):
                    passed.setdefault(name, []).append(parameters[index].text)
        for name in self.project.outputs:
            array = inputs[name]
            if given.get(name) is not array or not isinstance(array, numpy.ndarray):
                continue  # a new array in its place (or not an array: not judged)
            low, high = extent(array)
            if any(start < high and low < end for start, end in writes):
                continue
            if marked[name] and _changed(array):
                continue
            how = (f" (it passes it only as `{'`, `'.join(passed[name])}`, a pointer to const)"
                   if name in passed else " (no launch passes it, and nothing copies or stores "
                   "into it)")
            self.problems.append(f"{where}: {text} never writes output {name!r}{how}")

    @staticmethod
    def _array_name(inputs: dict[str, Any], value: Any) -> str | None:
        if not isinstance(value, DeviceArray):
            return None
        low, high = extent(value)
        for name, array in inputs.items():
            if isinstance(array, numpy.ndarray):
                start, end = extent(array)
                if start < high and low < end:
                    return str(name)
        return None

    # ------------------------------------------------------------------ variants

    def _variant(self, variant: Variant, state: _VariantState, inputs: dict[str, Any],
                 size: Size) -> None:
        where = f"variant {variant.name!r} at size {size}"
        params = _ReadParams(dict(variant.params), state.read)
        try:
            if not self._accepts(variant, size, params, where):
                return
            whole = not state.ran
            given, marked = self._marked(inputs) if whole else (dict(inputs), {})
            if variant.call is not None:
                text = f"{_name(variant.call)}(inputs, {size}, params)"
                self._call(where, text, "call", variant.call, given, size, params)
                calls = list(self.recorder.calls)
            else:
                text = f"{_name(variant.launch)}({size}, params, inputs)"
                calls = self._nvrtc_launches(variant, where, text, given, size, params)
        except _Stopped:
            state.done, state.judged = True, False
            return
        for label, problem in self._launch_problems(variant, calls):
            kind = (label, re.sub(r"\d+", "#", problem))  # once a variant, not once a size
            if kind not in state.told:
                state.told.add(kind)
                self.problems.append(f"{where}: {label}: {problem}")
        if whole:
            self._outputs_written(where, text, inputs, given, marked, calls)
            state.ran = True
            self.ran[f"variant {variant.name}"] = None

    def _accepts(self, variant: Variant, size: Size, params: _ReadParams, where: str) -> bool:
        if variant.constraints is None:
            return True
        text = f"{_name(variant.constraints)}({size}, params)"
        found = self._call(where, text, "constraints", variant.constraints, size, params)
        return not found

    def _nvrtc_launches(self, variant: Variant, where: str, text: str, given: dict[str, Any],
                        size: Size, params: _ReadParams) -> list[KernelCall]:
        if variant.defines is not None:
            self._call(where, f"{_name(variant.defines)}({size}, params)", "defines",
                       variant.defines, size, params)
        planned = self._call(where, text, "launch", variant.launch, size, params, given)  # type: ignore[arg-type]
        recorded = list(self.recorder.calls)  # launched from inside `launch` itself
        program = self._program(variant)
        calls = []
        for item in planned if isinstance(planned, (list, tuple)) else [planned]:
            if not isinstance(item, (Launch, dict)):
                self.problems.append(f"{where}: {text} returned {type(item).__name__}, not a "
                                     "Launch (or a list of them)")
                raise _Stopped
            try:
                one = Launch.coerce(item)
            except (NcuhError, TypeError, KeyError, ValueError) as error:
                self.problems.append(f"{where}: {text} returned a launch dict that does not "
                                     f"make a Launch ({type(error).__name__}: {error})")
                raise _Stopped from None
            calls.append(KernelCall(one.kernel or variant.kernel or "", one.grid, one.block,
                                    one.args, one.shared_mem, program, "launch"))
        return calls + recorded

    # ------------------------------------------------------------------ launches

    def _program(self, variant: Variant) -> str | None:
        """What NVRTC compiles for `variant` (None: no source, or one check names as
        unreadable)."""
        if not variant.source:
            return None
        if variant.source not in self._programs:
            try:
                self._programs[variant.source] = program_text(self.project.folder,
                                                              variant.source)
            except ProjectError:
                self._programs[variant.source] = None
        return self._programs[variant.source]

    def _kernel(self, call: KernelCall) -> Kernel | None:
        """The extern "C" __global__ a launch names, in the code it comes from."""
        if call.code is None:
            return None
        kernel = kernels(call.code).get(call.kernel)
        return kernel if kernel is not None and kernel.extern_c else None

    def _parameters(self, call: KernelCall) -> tuple[Parameter, ...] | None:
        kernel = self._kernel(call)
        return None if kernel is None else kernel.parameters

    def _launches(self, where: str, variant: Variant | None, calls: list[KernelCall]) -> None:
        """Each launch's geometry and arguments, one line per problem."""
        self.problems += [f"{where}: {label}: {problem}"
                          for label, problem in self._launch_problems(variant, calls)]

    def _launch_problems(self, variant: Variant | None, calls: list[KernelCall]
                         ) -> Iterator[tuple[str, str]]:
        """(which launch, its problem) for each problem of each launch."""
        for index, call in enumerate(calls):
            label = (f"launch {index + 1} of {len(calls)} ({call.kernel})" if len(calls) > 1
                     else f"the launch of {call.kernel!r}")
            problems = geometry_problems(call, self.target)
            problems += argument_problems(call, self._parameters(call),
                                          lambda value: self._array_name(self.inputs, value))
            checked = variant is not None and call.via == "launch" and \
                call.kernel == variant.kernel  # `kernel =` is checked against its source already
            if call.code is not None and self._kernel(call) is None and not checked:
                problems.append(f"no extern \"C\" __global__ {call.kernel!r} in its "
                                f"{'source' if call.via == 'launch' else 'code'}")
            yield from ((label, problem) for problem in problems)

    # ------------------------------------------------------------------ parameters

    def _unused_parameters(self) -> None:
        for variant in self.project.variants:
            state = self.states[variant.name]
            if not (state.ran and state.judged):
                continue  # not judged: some callable of it did not run
            program = self._program(variant)
            if variant.source and program is None:
                continue  # a source that cannot be read: check names it
            words = source_words(program) if program else set()
            readers = [_name(f) for f in (variant.launch, variant.defines, variant.call,
                                          variant.constraints) if f is not None]
            for key in variant.params:
                if key in state.read or key in words:
                    continue
                near = difflib.get_close_matches(key, sorted(words | {
                    k for other in self.project.variants for k in other.params} - {key}), n=1)
                nowhere = (f"not in {variant.source}, and " if variant.source else "") + \
                    _none_of(readers)
                hint = f"; did you mean {near[0]}?" if near else ""
                self.warnings.append(f"variant {variant.name!r}: parameter {key} is used "
                                     f"nowhere: {nowhere}{hint}")
