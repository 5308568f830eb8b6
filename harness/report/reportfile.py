"""Open Nsight Compute reports (`.ncu-rep`) and turn them into tidy data.

`open_report` checks the file itself before handing it to `ncu_report`, because `ncu_report`
quietly returns an empty report for a missing header, garbage or an empty file, and returns
partial results for a truncated one. `export_metrics` is the `ncuh export` table: every metric
of every kernel, one row per aggregate value and one per instance value.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise, repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import ReportError
from harness.report.ncu_import import import_ncu_report
from harness.util import (
    column_holds_bad_text,
    compiled_kernel_regex,
    holds_bad_text,
    regular_file,
)

if TYPE_CHECKING:
    import pandas as pd

EXPORT_COLUMNS = ("kernel_id", "kernel", "metric", "instance", "value", "unit")

# A report is "NVR\0", a u32 file-header size and file header, then blocks: a u32 block-header
# size, the block header (protobuf) and a payload whose size is field 5 of that header.
_MAGIC = b"NVR\x00"
XZ_MAGIC = b"\xfd7zXZ\x00"  # a report committed or shipped packed (`xz -d` gives the report)
_U32 = struct.Struct("<I")
_BLOCK_PAYLOAD_SIZE_FIELD = 5
_BLOCK_NUM_RESULTS_FIELD = 2
# No real block header is anywhere near this big; a larger size means garbage after the magic.
_MAX_BLOCK_HEADER = 64 * 1024 * 1024


@dataclass(frozen=True)
class KernelRef:
    """One profiled kernel launch (an ncu_report action) of a loaded report."""

    kernel_id: int  # 0-based in report order: ranges, then their actions
    name: str  # function name, e.g. "my_kernel"
    range_index: int
    action_index: int
    action: Any = field(repr=False, compare=False)  # ncu_report.IAction

    @property
    def demangled_name(self) -> str:
        ncu_report = import_ncu_report()
        return str(self.action.name(ncu_report.IAction.NameBase_DEMANGLED))

    @property
    def mangled_name(self) -> str:
        ncu_report = import_ncu_report()
        return str(self.action.name(ncu_report.IAction.NameBase_MANGLED))


@dataclass
class LoadedReport:
    """A validated report: its path, the ncu_report context (kept alive) and its kernels."""

    path: Path
    context: Any = field(repr=False)  # ncu_report.IContext; actions are only valid while it lives
    kernels: list[KernelRef] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# file checks


def _read_varint(buffer: bytes, offset: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if offset >= len(buffer):
            raise ValueError("varint runs past the end of the buffer")
        byte = buffer[offset]
        offset += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, offset
        if shift > 63:
            raise ValueError("varint too long")


def _varint_fields(buffer: bytes) -> dict[int, int]:
    """The varint fields of a protobuf message (others skipped); raises ValueError on garbage."""
    fields: dict[int, int] = {}
    offset = 0
    while offset < len(buffer):
        key, offset = _read_varint(buffer, offset)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            fields[number], offset = _read_varint(buffer, offset)
        elif wire_type == 2:
            length, offset = _read_varint(buffer, offset)
            offset += length
        elif wire_type == 1:
            offset += 8
        elif wire_type == 5:
            offset += 4
        else:
            raise ValueError(f"unknown protobuf wire type {wire_type}")
        if offset > len(buffer):
            raise ValueError("protobuf field runs past the end of the block header")
    return fields


@dataclass(frozen=True)
class ReportLayout:
    """What the block walk found: the number of blocks and of result (kernel) payloads."""

    size: int
    blocks: int
    results: int


def _truncated(path: Path, block_offset: int, size: int) -> str:
    return (
        f"{path} is truncated: the block at byte {block_offset:,} runs past the end of the "
        f"file ({size:,} bytes); was ncu interrupted while writing it?"
    )


def check_report_file(path: Path) -> ReportLayout:
    """Raise `ReportError` unless `path` is a complete Nsight Compute report file.

    Walks the block headers only (seeking over payloads), so it costs a few reads even for a
    large report; a file whose blocks do not end exactly at its last byte is truncated.
    """
    # os.stat first: a FIFO, device or socket is refused before it is opened (never a hang)
    size = regular_file(path, "report").st_size
    try:
        handle = path.open("rb")
    except OSError as error:
        raise ReportError(f"cannot read report {path}: {error.strerror or error}") from None
    if size == 0:
        handle.close()
        raise ReportError(f"{path} is empty (0 bytes), not an Nsight Compute report")
    with handle:
        head = handle.read(8)
        if head.startswith(XZ_MAGIC):
            raise ReportError(f"{path} is packed with xz, not an Nsight Compute report yet: "
                              "unpack it with `xz -dk` first")
        if len(head) < len(_MAGIC) or head[:4] != _MAGIC:
            raise ReportError(f"{path} is not an Nsight Compute report (no NVR header)")
        if len(head) < 8:
            raise ReportError(f"{path} is truncated: it ends inside the file header")
        offset = 8 + _U32.unpack(head[4:8])[0]
        blocks = results = 0
        while offset < size:
            handle.seek(offset)
            raw = handle.read(4)
            header_size = _U32.unpack(raw)[0] if len(raw) == 4 else 0
            if header_size > _MAX_BLOCK_HEADER:
                raise ReportError(f"{path} is corrupt: bad block header at byte {offset:,}")
            header = handle.read(header_size)
            if len(raw) < 4 or len(header) < header_size:
                raise ReportError(_truncated(path, offset, size))
            try:
                fields = _varint_fields(header)
            except ValueError:
                raise ReportError(
                    f"{path} is corrupt: unreadable block header at byte {offset:,}"
                ) from None
            end = offset + 4 + header_size + fields.get(_BLOCK_PAYLOAD_SIZE_FIELD, 0)
            if end > size:
                raise ReportError(_truncated(path, offset, size))
            offset = end
            blocks += 1
            results += fields.get(_BLOCK_NUM_RESULTS_FIELD, 0)
        if offset > size:  # the file header itself claims more bytes than there are
            raise ReportError(_truncated(path, 8, size))
    return ReportLayout(size=size, blocks=blocks, results=results)


# ---------------------------------------------------------------------------------------------
# loading

# What names a kernel launch. Bytes flipped inside a block's payload leave the block framing
# intact, and ncu_report then returns an action with no name and no metrics at all; such a
# report must be refused, not read as a report of nothing.
_IDENTITY_METRICS = ("launch__grid_size", "launch__block_size")
# ncu's metric names are printable ASCII without spaces (`sm__throughput.avg.pct_of_peak_...`,
# `breakdown:...`); a name with any other byte was read from a corrupt block.
_METRIC_NAME = re.compile(r"[\x21-\x7e]+")


def _kernel_identity(path: Path, index: int, action: Any, function_name: int) -> str:
    """The kernel's function name; `ReportError` unless its name, grid and block are readable."""
    name = action.name(function_name)
    missing = [] if isinstance(name, str) and name.strip() else ["name"]
    for metric_name in _IDENTITY_METRICS:
        metric = action.metric_by_name(metric_name)
        value = metric.value() if metric is not None else None
        if not isinstance(value, int | float) or not value > 0:
            missing.append(metric_name.removeprefix("launch__").removesuffix("_size"))
    if missing:
        raise ReportError(
            f"{path} is corrupt: kernel {index} has no readable {', '.join(missing)} "
            "(its data block cannot be decoded)"
        )
    names = action.metric_names()
    bad = next((m for m in names if not isinstance(m, str) or not _METRIC_NAME.fullmatch(m)),
               None)
    if bad is not None:
        raise ReportError(f"{path} is corrupt: kernel {index} ({name}) has an unreadable "
                          f"metric name {ascii(bad)[:60]}")
    if not _texts_are_utf8(action, names):
        raise ReportError(f"{path} is corrupt: kernel {index} ({name}) holds text that is not "
                          "UTF-8 (a name, string metric or rule message)")
    return name


def _texts_are_utf8(action: Any, names: Iterable[str]) -> bool:
    """Every string ncuh prints from this kernel is valid text; a flipped byte inside one
    would otherwise surface later as an encoding error in the middle of an output."""
    ncu_report = import_ncu_report()
    string_kind = ncu_report.IMetric.ValueKind_STRING
    texts: list[Any] = [action.name(ncu_report.IAction.NameBase_DEMANGLED)]
    for metric_name in names:
        metric = action.metric_by_name(metric_name)
        if metric.kind() == string_kind:
            texts += [metric.as_string(), metric.unit()]
    texts.append(action.rule_results_as_dicts())
    return not holds_bad_text(texts)


# Reports this process opened: ncu_report answers a few derived metrics' units from what its
# process asked before, so whoever keeps what it read must know what came before.
_opened = 0


def reports_opened() -> int:
    """How many reports this process has opened (`open_report`)."""
    return _opened


def open_report(path: Path | str) -> LoadedReport:
    """Validate and load a report; `ReportError` (one line) for anything that is not a
    complete report with at least one profiled kernel."""
    path = Path(path)
    context, places = load_context(path)
    kernels = [kernel_ref(path, context, kernel_id, place)
               for kernel_id, place in enumerate(places)]
    return LoadedReport(path=path, context=context, kernels=kernels)


def load_context(path: Path) -> tuple[Any, list[tuple[int, int]]]:
    """The ncu_report context of a checked report file and where its kernels are, in report
    order: (range index, action index) each. No kernel is decoded yet (`kernel_ref` does)."""
    global _opened
    check_report_file(path)
    ncu_report = import_ncu_report()
    _opened += 1
    try:
        context = ncu_report.load_report(str(path))
    except Exception as error:  # ncu_report raises plain exceptions for unreadable files
        raise ReportError(f"ncu_report cannot load {path}: {error}") from None
    places = [(range_index, action_index) for range_index in range(context.num_ranges())
              for action_index in range(context.range_by_idx(range_index).num_actions())]
    if not places:
        raise ReportError(f"{path} holds no profiled kernels")
    return context, places


def kernel_ref(path: Path, context: Any, kernel_id: int, place: tuple[int, int]) -> KernelRef:
    """Kernel `kernel_id` of a loaded context, decoded and checked (`_kernel_identity`)."""
    range_index, action_index = place
    action = context.range_by_idx(range_index).action_by_idx(action_index)
    function_name = import_ncu_report().IAction.NameBase_FUNCTION
    return KernelRef(kernel_id=kernel_id,
                     name=_kernel_identity(path, kernel_id, action, function_name),
                     range_index=range_index, action_index=action_index, action=action)


def select_kernels(report: LoadedReport, kernel_regex: str | None) -> list[KernelRef]:
    """Kernels whose function (or demangled) name matches `kernel_regex` (re.search).

    None selects every kernel; a pattern that matches nothing is a `ReportError`.
    """
    if kernel_regex is None:
        return list(report.kernels)
    pattern = compiled_kernel_regex(kernel_regex, ReportError)
    chosen = [
        kernel
        for kernel in report.kernels
        if pattern.search(kernel.name) or pattern.search(kernel.demangled_name)
    ]
    if not chosen:
        names = ", ".join(sorted({kernel.name for kernel in report.kernels}))
        raise ReportError(
            f"no kernel in {report.path} matches {kernel_regex!r} (kernels: {names})"
        )
    return chosen


# ---------------------------------------------------------------------------------------------
# export


@dataclass
class ExportColumns:
    """The export table as parallel column lists (what `ncuh export` writes, without pandas)."""

    kernel_id: list[int] = field(default_factory=list)
    kernel: list[str] = field(default_factory=list)
    metric: list[str] = field(default_factory=list)
    instance: list[str] = field(default_factory=list)
    value: list[Any] = field(default_factory=list)
    unit: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.metric)

    def columns(self) -> list[list[Any]]:
        return [getattr(self, name) for name in EXPORT_COLUMNS]


def _accessor(ncu_report: Any, name: str) -> Any:
    """The `IMetric.<name>` accessor, looked up once per export rather than per metric.

    The raw SWIG function (`_ncu_report.IMetric_<name>`, which the public method only calls)
    saves a Python call per value read. The copy of ncu_report that
    ships with Nsight Compute 2025.3.1 (under its `extras/python`) crashed in them under Python
    3.12, so that copy keeps the public methods; the PyPI package gets the raw ones.
    """
    raw = getattr(getattr(ncu_report, "_ncu_report", None), f"IMetric_{name}", None)
    if raw is None or _shipped_with_ncu(ncu_report):
        return getattr(ncu_report.IMetric, name)
    return raw


def _shipped_with_ncu(ncu_report: Any) -> bool:
    parts = Path(getattr(ncu_report, "__file__", None) or "extras/python").parts
    return any(a == "extras" and b == "python" for a, b in pairwise(parts))


ExportPart = tuple[int, int]  # (index, count): the index-th of `count` contiguous slices


def _part_bounds(
    work: list[tuple[KernelRef, str]], part: ExportPart, num_instances: Any
) -> tuple[int, int]:
    """The slice of `work` that is part `index` of `count`, balanced by rows, not metrics.

    A few metrics hold almost all the rows (a per-PC source counter has one instance per SASS
    instruction, a PM-sampling one per sample), so equal numbers of metrics would leave one
    part with most of the work. Every part computes the same bounds from the same weights.
    """
    index, count = part
    if count <= 1:
        return 0, len(work)
    weights = [1 + num_instances(kernel.action.metric_by_name(name)) for kernel, name in work]
    total = sum(weights)
    bounds, running = [0], 0
    for position, weight in enumerate(weights):
        running += weight
        # Close a part once its share of the rows is reached.
        while len(bounds) < count and running >= total * len(bounds) / count:
            bounds.append(position + 1)
    bounds += [len(work)] * (count + 1 - len(bounds))
    return bounds[index], bounds[index + 1]


@dataclass(frozen=True)
class MetricRecord:
    """One metric of one kernel as the export reads it: its aggregate row and its instances."""

    kernel_id: int
    kernel: str
    metric: str
    unit: str
    value: Any  # float, int, str, or None (no aggregate value)
    labels: list[str]  # one per instance: its correlation id as text, or "#<index>"
    values: list[Any]  # one per instance, as `value`
    # Every label is a number or "#<index>": no cell of it needs quoting or a guard.
    plain_labels: bool
    # Every instance value is a number or None.
    plain_values: bool


def metric_records(
    kernels: Iterable[KernelRef], ncu_report: Any, part: ExportPart = (0, 1),
    wanted: Callable[[str], bool] | None = None, instances: bool = True,
    share_labels: bool = False,
) -> Iterator[MetricRecord]:
    """Every (kernel, metric) of `kernels` in report order, or the `part` of them (see
    `_part_bounds`): the parts of an export, concatenated in order, are the whole export.
    With `share_labels`, equal instance labels are one string object."""
    metric_cls = ncu_report.IMetric
    as_double = _accessor(ncu_report, "as_double")
    as_string = _accessor(ncu_report, "as_string")
    as_uint64 = _accessor(ncu_report, "as_uint64")
    readers = {
        metric_cls.ValueKind_DOUBLE: as_double,
        metric_cls.ValueKind_FLOAT: as_double,
        metric_cls.ValueKind_STRING: as_string,
        metric_cls.ValueKind_UINT32: as_uint64,
        metric_cls.ValueKind_UINT64: as_uint64,
    }
    kind = _accessor(ncu_report, "kind")
    num_instances = _accessor(ncu_report, "num_instances")
    has_correlation_ids = _accessor(ncu_report, "has_correlation_ids")
    correlation_ids = _accessor(ncu_report, "correlation_ids")
    has_value = _accessor(ncu_report, "has_value")
    unit_of = _accessor(ncu_report, "unit")

    work = [(kernel, name) for kernel in kernels for name in kernel.action.metric_names()
            if wanted is None or wanted(name)]
    first, stop = _part_bounds(work, part, num_instances)
    # ncu_report names some metrics' units from the units asked before them in the process:
    # asked alone, derived__memory_l2_theoretical_sectors_global_excessive says "byte", asked
    # after the metrics before it (as a whole export asks them) "sector", as ncu's raw page
    # does. A part that starts later asks those units first, so each part says what the whole
    # export says. A name's unit is asked once: within one report it is the same in every
    # kernel (ncu_report keeps the first answer for a name), which the export's byte-identity
    # tests hold to.
    units: dict[str, str] = {}
    seen: dict[str, str] | None = {} if share_labels else None
    for kernel, metric_name in work[:first]:
        if metric_name not in units:
            units[metric_name] = unit_of(kernel.action.metric_by_name(metric_name))
    for kernel, metric_name in work[first:stop]:
        metric = kernel.action.metric_by_name(metric_name)
        unit = units.get(metric_name)
        if unit is None:
            unit = units[metric_name] = unit_of(metric)
        reader = readers.get(kind(metric))
        count = num_instances(metric) if instances else 0
        # Sampled (PM sampling) ratios have instances but no aggregate: ncu prints an
        # empty cell where ncu_report's accessor would answer 0.
        value = reader(metric) if reader is not None and has_value(metric) else None
        indices = range(count)
        plain = True
        if count and has_correlation_ids(metric):
            ids = correlation_ids(metric)
            id_reader = readers.get(kind(ids, 0))
            if id_reader is None:
                labels = [f"#{i}" for i in indices]
            else:
                labels = list(map(str, map(id_reader, repeat(ids, count), indices)))
                if seen is not None:
                    # one text per id: a kernel's per-PC metrics then share their labels,
                    # which a pickle (what `read_cache` keeps) writes once
                    labels = [seen.setdefault(label, label) for label in labels]
                plain = id_reader is not as_string
        else:
            labels = [f"#{i}" for i in indices]
        instance_reader = readers.get(kind(metric, 0)) if count else None
        if instance_reader is None:
            values: list[Any] = [None] * count
        else:
            values = list(map(instance_reader, repeat(metric, count), indices))
        yield MetricRecord(kernel.kernel_id, kernel.name, metric_name, unit, value, labels,
                           values, plain, instance_reader is not as_string)


def _collect(
    kernels: Iterable[KernelRef], ncu_report: Any, part: ExportPart = (0, 1),
    wanted: Callable[[str], bool] | None = None, instances: bool = True,
) -> ExportColumns:
    out = ExportColumns()
    for record in metric_records(kernels, ncu_report, part, wanted, instances):
        rows = len(record.values) + 1
        out.kernel_id.extend([record.kernel_id] * rows)
        out.kernel.extend([record.kernel] * rows)
        out.metric.extend([record.metric] * rows)
        out.unit.extend([record.unit] * rows)
        out.instance.append("")
        out.instance.extend(record.labels)
        out.value.append(record.value)
        out.value.extend(record.values)
    return out


def export_columns(
    report_or_path: LoadedReport | Path | str,
    kernel_regex: str | None = None,
    part: ExportPart = (0, 1),
) -> ExportColumns:
    """`export_metrics` as plain column lists (no pandas import: fast CLI start).

    `part=(i, n)` exports only the i-th of n contiguous slices of the (kernel, metric) pairs,
    so n processes can share one export (`harness.report.metrics_export`).
    """
    report = (
        report_or_path
        if isinstance(report_or_path, LoadedReport)
        else open_report(report_or_path)
    )
    table = _collect(select_kernels(report, kernel_regex), import_ncu_report(), part)
    if any(column_holds_bad_text(column) for column in (table.kernel, table.instance,
                                                         table.value, table.unit)):
        raise ReportError(f"{report.path} is corrupt: it holds text that is not UTF-8")
    return table


def export_metrics(
    report_or_path: LoadedReport | Path | str, kernel_regex: str | None = None
) -> pd.DataFrame:
    """Every metric of every (selected) kernel as a tidy long table.

    Columns: kernel_id, kernel, metric, instance, value, unit. `instance` is "" on the
    aggregate row; instanced metrics add one row per instance labelled with its correlation id
    (opcode name, PC, ...) or `#<index>`. Values are ncu's base units as ncu_report gives them
    (float, int, or str for string metrics; None when the metric holds no value).
    """
    import pandas as pd

    columns = export_columns(report_or_path, kernel_regex)
    data: dict[str, Any] = dict(zip(EXPORT_COLUMNS, columns.columns(), strict=True))
    # Mixed floats, ints and strings: an object column keeps each value as ncu_report gave it.
    data["value"] = pd.Series(data["value"], dtype=object)
    return pd.DataFrame(data, columns=list(EXPORT_COLUMNS))
