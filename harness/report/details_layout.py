"""What ncu's details page shows beyond what `ncu_report` lists as a section's header metrics.

ncu lays its details page out from its section files, which a report does not carry and
`ncu_report` does not expose. Two parts of that layout are rebuilt here from the metrics the
report does hold:
  * header rows ncu adds to a section's header table (`ISection.header_metrics()` lists each
    metric under one section only): "Waves Per SM" under Speed Of Light, the occupancy rows
    under Launch Statistics, the per-instruction totals of Source Counters, the NUMA rows;
  * the body tables of every section (throughput breakdowns, pipe utilization, rooflines,
    memory tables, occupancy graphs, hotspot tables, the NUMA table), titled as ncu titles them.
Labels, titles, descriptions and a few units are ncu 2025.3.1's wording, copied from its
output; the rows and values are the report's own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# section identifier -> (metric, label) rows ncu adds to the section's header table
EXTRA_HEADER_ROWS: dict[str, tuple[tuple[str, str], ...]] = {
    "SpeedOfLight": (("launch__waves_per_multiprocessor", "Waves Per SM"),),
    "ComputeWorkloadAnalysis": (
        ("sm__inst_issued.max.pct_of_peak_sustained_elapsed", "Max. Issued Slots Busy"),),
    # ncu's "theoretical" here is the hardware maximum (16 on Hopper whatever the occupancy)
    "SchedulerStats": (
        ("smsp__warps_active.avg.peak_sustained", "Theoretical Active Warps Per Scheduler"),),
    "InstructionStats": (("inst_executed", "Instructions Executed"),),
    "MemoryWorkloadAnalysis": (
        ("inst_executed", "Instructions Executed"),
        ("lrc__ilc_input_sectors.sum", "L2 Compression Input Sectors"),
        ("lts__average_gcomp_input_sector_success_rate.pct", "L2 Compression Success Rate"),
    ),
    "MemoryWorkloadAnalysis_Chart": (
        ("dram__bytes.sum.per_second", "DRAM Bandwidth"),
        ("lts__average_gcomp_input_sector_success_rate.pct", "L2 Compression Success Rate"),
        ("lts__t_sectors.sum", "L2 Cache Sectors"),
        ("lts__t_sectors_srcunit_tex.avg.pct_of_peak_sustained_elapsed",
         "L2 Cache Sector Throughput For TEX"),
        ("lts__t_sectors_srcunit_tex_aperture_peer_lookup_miss.sum",
         "Missed L2 Cache Sectors For TEX Accessing Peer Memory"),
        ("lts__t_sectors_srcunit_tex_aperture_sysmem_lookup_miss.sum",
         "Missed L2 Cache Sectors For TEX Accessing System Memory"),
        ("lts__t_sectors_srcunit_tex_lookup_miss.sum", "Missed L2 Cache Sectors For TEX"),
        ("pcie__read_bytes.sum.per_second", "PCIe read bandwidth"),
        ("pcie__write_bytes.sum.per_second", "PCIe write bandwidth"),
    ),
    "MemoryWorkloadAnalysis_Tables": (
        ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "DRAM Throughput"),
        ("l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct",
         "L1TEX Hit Rate For Global Loads"),
        ("l1tex__t_sector_pipe_lsu_mem_global_op_st_hit_rate.pct",
         "L1TEX Hit Rate For Global Stores"),
        ("l1tex__t_sector_pipe_lsu_mem_local_op_ld_hit_rate.pct", "L1TEX Hit Rate For Local Loads"),
        ("l1tex__t_sector_pipe_lsu_mem_local_op_st_hit_rate.pct",
         "L1TEX Hit Rate For Local Stores"),
        ("l1tex__throughput.avg.pct_of_peak_sustained_elapsed", "L1TEX Throughput"),
        ("lts__t_sector_op_read_hit_rate.pct", "L2 Hit Rate For Loads"),
        ("lts__t_sector_op_write_hit_rate.pct", "L2 Hit Rate For Stores"),
        ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2 Throughput"),
        *((f"smsp__sass_average_data_bytes_per_sector_mem_{space}_op_{op}.{stat}",
           f"{word} Bytes Per Sector For {space.title()} {direction}")
          for space in ("global", "local") for op, direction in (("ld", "Loads"), ("st", "Stores"))
          for stat, word in (("max_rate", "Maximum"), ("ratio", "Average"))),
    ),
    "SpeedOfLight_RooflineChart": (
        ("sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained",
         "Theoretical Predicated-On DFMA Thread Instructions Executed"),
        ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
         "Theoretical Predicated-On FFMA Thread Instructions Executed"),
        ("smsp__sass_thread_inst_executed_op_dfma_pred_on.sum.per_cycle_elapsed",
         "Predicated-On DFMA Thread Instructions Executed Per Cycle"),
        ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed",
         "Predicated-On FFMA Thread Instructions Executed Per Cycle"),
    ),
    "PmSampling": (
        ("gpc__cycles_elapsed.max", "Elapsed Cycles"),
        ("gpu__time_duration.sum", "Duration"),
        ("profiler__pmsampler_interval_time", "Maximum Sampling Interval"),
    ),
    "WarpStateStats": (("smsp__issue_active.avg.per_cycle_active", "Issued Warp Per Scheduler"),),
    "LaunchStats": (
        ("sm__maximum_warps_per_active_cycle_pct", "Theoretical Occupancy"),
        ("sm__warps_active.avg.pct_of_peak_sustained_active", "Achieved Occupancy"),
    ),
    "Occupancy": (
        ("smsp__maximum_warps_avg_per_active_cycle", "Theoretical Warps Per Scheduler"),
        ("smsp__warps_active.avg.peak_sustained", "GPU Maximum Warps Per Scheduler"),
    ),
}

# stall reason (metric suffix) -> the short name ncu 2025.3.1's Source Counters header gives it
_SOURCE_STALLS = {
    "barrier": "barrier", "branch_resolving": "branch_resolving", "dispatch_stall": "dispatch",
    "drain": "drain", "imc_miss": "imc", "lg_throttle": "lg", "long_scoreboard": "long_sb",
    "math_pipe_throttle": "math", "membar": "membar", "mio_throttle": "mio", "misc": "misc",
    "no_instructions": "no_inst", "not_selected": "not_selected", "selected": "selected",
    "short_scoreboard": "short_sb", "sleeping": "sleep", "tex_throttle": "tex", "wait": "wait",
}

# Source Counters: ncu's header adds the per-instruction metrics of its source view (each
# metric's total over the kernel's instructions), labelled as ncu 2025.3.1 labels them
EXTRA_HEADER_ROWS["SourceCounters"] = (
    ("derived__avg_thread_executed", "Avg. Threads Executed"),
    ("derived__avg_thread_executed_true", "Avg. Predicated-On Threads Executed"),
    ("derived__avg_thread_unexecuted_true", "Avg. Predicated-On Threads Unexecuted"),
    ("derived__derivative_avg_thread_executed_true",
     "Derivative Avg. Predicated-On Threads Executed"),
    ("derived__memory_l1_conflicts_shared_nway", "L1 Conflicts Shared N-Way"),
    ("derived__memory_l1_wavefronts_shared_excessive", "L1 Wavefronts Shared Excessive"),
    ("derived__memory_l2_theoretical_sectors_global_excessive",
     "L2 Theoretical Sectors Global Excessive"),
    ("gpc__cycles_elapsed.max", "Elapsed Cycles"),
    ("inst_executed", "Instructions Executed"),
    ("l1tex__cycles_active.sum", "L1 Active Cycles"),
    ("l1tex__cycles_elapsed.sum", "L1 Elapsed Cycles"),
    ("lts__cycles_active.sum", "L2 Active Cycles"),
    ("lts__cycles_elapsed.sum", "L2 Elapsed Cycles"),
    ("memory_access_size_type", "Access Size"),
    ("memory_access_type", "Access Operation"),
    ("memory_l1_tag_requests_global", "L1 Tag Requests Global"),
    ("memory_l1_wavefronts_shared", "L1 Wavefronts Shared"),
    ("memory_l1_wavefronts_shared_ideal", "L1 Wavefronts Shared Ideal"),
    ("memory_l2_theoretical_sectors_global", "L2 Theoretical Sectors Global"),
    ("memory_l2_theoretical_sectors_global_ideal", "L2 Theoretical Sectors Global Ideal"),
    ("memory_l2_theoretical_sectors_local", "L2 Theoretical Sectors Local"),
    ("memory_type", "Address Space"),
    ("smsp__branch_targets_threads_divergent", "Divergent Branches"),
    ("smsp__inst_executed.sum", "Executed Instructions"),
    ("smsp__pcsamp_sample_count", "# Samples"),
    # the stall reasons of the source view, short-named (no warpgroup_arrive among them)
    *((f"smsp__pcsamp_warps_issue_stalled_{reason}", f"stall_{short}")
      for reason, short in _SOURCE_STALLS.items()),
    *((f"smsp__pcsamp_warps_issue_stalled_{reason}_not_issued", f"stall_{short} (Not Issued)")
      # ncu's one irregular label: "stall_sleep", but "stall_sleeping (Not Issued)"
      for reason, short in {**_SOURCE_STALLS, "sleeping": "sleeping"}.items()),
    ("smsp__sass_inst_executed_memdesc_explicit_evict_type", "L2 Explicit Evict Policies"),
    *((f"smsp__sass_inst_executed_memdesc_explicit_{prop}prop_evict_{policy}",
       f"L2 Explicit {word} Policy Evict {policy.replace('_', ' ').title()}")
      for prop, word, policies in (("hit", "Hit", ("first", "last", "normal", "normal_demote")),
                                   ("miss", "Miss", ("first", "normal")))
      for policy in policies),
    ("thread_inst_executed", "Thread Instructions Executed"),
    ("thread_inst_executed_true", "Predicated-On Thread Instructions Executed"),
)

# section identifier -> (metric group, label): ncu adds a header row for every member of the
# group, labelled "<label> (<member>)", placed where the group's name sorts
HEADER_GROUPS: dict[str, tuple[tuple[str, str], ...]] = {
    "SourceCounters": (
        ("group:smsp__pcsamp_warp_stall_reasons", "Warp Stall Sampling (All Samples)"),
        ("group:smsp__pcsamp_warp_stall_reasons_not_issued",
         "Warp Stall Sampling (Not-issued Samples)"),
    ),
}

# NUMA Affinity: one instance per GPU; ncu prints each as "<count> (<instances>)"
EXTRA_HEADER_ROWS["NumaAffinity"] = (
    ("numa__cpu_affinity", "CPU Affinity"),
    ("numa__dev_display_name_all", "Device Names"),
    ("numa__id_cpu", "NUMA ID by CPU Affinity"),
    ("numa__id_memory", "NUMA ID by Memory Affinity"),
)
INSTANCE_HEADER_ROWS = frozenset(name for name, _ in EXTRA_HEADER_ROWS["NumaAffinity"])



def _hierarchical_header(ops: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The header of a hierarchical roofline section: L1 and L2 writeback cycles, then the
    theoretical and achieved rates of its instructions (`ops`, the FMA first)."""
    rows = [
        ("l1tex__lsu_writeback_active_mem_lgds.sum.peak_sustained",
         "L1/TEX peak local/global writeback cycles"),
        ("l1tex__lsu_writeback_active_mem_lgds.sum.per_second",
         "L1/TEX active local/global writeback cycles per second"),
        ("lts__lts2xbar_cycles_active.sum.peak_sustained", "L2 peak writeback cycles"),
        ("lts__lts2xbar_cycles_active.sum.per_second", "L2 active writeback cycles per second"),
    ]
    if ops:
        rows.append((f"sm__sass_thread_inst_executed_op_{ops[0]}_pred_on.sum.peak_sustained",
                     f"Theoretical Predicated-On {ops[0].upper()} Thread Instructions Executed"))
        rows += [(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed",
                  f"Predicated-On {op.upper()} Thread Instructions Executed Per Cycle")
                 for op in sorted(ops)]
    return tuple(rows)


for _precision, _ops in (("Double", ("dfma",)), ("Half", ("hfma", "hadd", "hmul")),
                         ("Single", ("ffma",)), ("Tensor", ())):
    EXTRA_HEADER_ROWS[f"SpeedOfLight_Hierarchical{_precision}RooflineChart"] = \
        _hierarchical_header(_ops)

# rows ncu places as if their metric had another name (the name it sorts them by)
SORT_AS = {"lrc__ilc_input_sectors.sum": "lts__gcomp_input_sectors.sum"}
# a header row's metric -> the one a section file's `Options` names instead on some chips
# (Hopper's L2 compression unit is `lrc`): ncu prints the row's label with the option's value
METRIC_OPTIONS = {
    "lts__average_gcomp_input_sector_success_rate.pct":
        "lrc__average_ilc_input_sector_success_rate.pct",
}

# metrics whose unit ncu prints differently from the unit ncu_report gives them: everywhere,
# and only in a section's header table (where the section file names the unit)
DISPLAY_UNITS = {"idc__requests.sum": ""}
# units ncu 2025.3.1 gives metrics whose report unit differs (the stall reasons' report unit is
# "warp"); ncu prints and scales their values in these units, on every fixture's page
SOURCE_UNITS = {f"smsp__pcsamp_warps_issue_stalled_{reason}{suffix}": unit
                for reason, unit in (("membar", "byte"), ("no_instructions", "inst"))
                for suffix in ("", "_not_issued")}
HEADER_UNITS = {"lts__average_gcomp_output_sector_compression_achieved_rate.ratio": "%"}

# breakdown sub-metric unit prefix -> the unit name ncu prints ("{UNIT}: {COMPOUND_NAME}")
_UNITS = {"sm": "SM", "smsp": "SMSP", "idc": "IDC", "l1tex": "L1", "lts": "L2", "dram": "DRAM",
          "fbpa": "DRAM", "gpu": "GPU", "gcc": "GCC", "ltc": "LTC", "lrc": "LRC"}

# Compute Workload Analysis pipe labels that ncu's section file words differently from the
# metric's own label (Hopper's shared pipe also carries FP64)
_PIPE_LABELS = {"sm__pipe_shared_cycles_active": "Shared (FP64+Tensor)"}

_PIPE_TABLES = (
    ("Pipe Utilization (Elapsed Cycles)", "Pipe Utilization (% of elapsed cycles)",
     "Pipeline utilization based on the number of elapsed (all) cycles in the "
     "workload. This takes the rates of different instructions executing on the "
     "pipeline into account. For an instruction requiring 4 cycles to complete "
     "execution, the counter is increased by 1 for 4 cycles. Use this to understand "
     "the overall pipeline utilization over the entire workload.",
     "_cycles_active.avg.pct_of_peak_sustained_elapsed"),
    (None, "Pipe Utilization (% of peak instructions executed over elapsed cycles)",
     "Pipeline utilization based on the number of executed instructions over elapsed "
     "(all) cycles. This does not account for any variation in instruction latencies "
     "for this pipeline. For an instruction requiring 4 cycles to complete execution, "
     "the counter is increased by 1 only. Use this to understand the composition of "
     "instructions/latencies (high-latency, low-rate instructions won't result in peak "
     "values).",
     "inst_executed_pipe_*.avg.pct_of_peak_sustained_elapsed"),
    ("Pipe Utilization (Active Cycles)", "Pipe Utilization (% of active cycles)",
     "Pipeline utilization based on the number of cycles the pipeline was active. This "
     "takes the rates of different instructions executing on the pipeline into "
     "account. For an instruction requiring 4 cycles to complete execution, the "
     "counter is increased by 1 for 4 cycles. Use this to understand the pipeline "
     "utilization for the time it was active.",
     "_cycles_active.avg.pct_of_peak_sustained_active"),
    (None, "Pipe Utilization (% of peak instructions executed over active cycles)",
     "Pipeline utilization based on the number of executed instructions over active "
     "cycles. This does not account for any variation in instruction latencies for "
     "this pipeline. For an instruction requiring 4 cycles to complete execution, the "
     "counter is increased by 1 only. Use this to understand the composition of "
     "instructions/latencies (high-latency, low-rate instructions won't result in peak "
     "values).",
     "inst_executed_pipe_*.avg.pct_of_peak_sustained_active"),
)


@dataclass(frozen=True)
class BodyRow:
    metric: str
    label: str
    # an instanced metric prints its sum and then every instance; False: its sum only
    instances: bool = True


@dataclass(frozen=True)
class GridColumn:
    """A column of a table with one row per instance (ncu's NUMA Affinity table)."""

    title: str
    metric: str | None  # None: the instances' correlation id
    align: str  # "<" or ">", as ncu aligns the column


@dataclass(frozen=True)
class BodyLayout:
    """One body table: the title lines above it and the metric rows, in ncu's order (or, for
    a table of instances, its columns)."""

    titles: tuple[str, ...]
    rows: tuple[BodyRow, ...]
    columns: tuple[GridColumn, ...] = ()


def breakdown_label(metric: str) -> str:
    """"sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed" ->
    "SM: Inst Executed Pipe Lsu" (ncu's "{UNIT}: {COMPOUND_NAME}")."""
    unit, _, rest = metric.partition("__")
    base = rest.split(".", 1)[0]
    words = " ".join(word.capitalize() for word in base.split("_"))
    return f"{_UNITS.get(unit, unit.upper())}: {words}"


def _by_value(rows: list[BodyRow], value: Callable[[str], float | None]) -> tuple[BodyRow, ...]:
    """Largest first, as ncu sorts them: by the value as printed (two decimals), so values
    that print alike in the order of their metric names."""
    return tuple(sorted(rows, key=lambda r: (-round(value(r.metric) or 0.0, 2), r.metric)))


def _breakdown(body: list[Any]) -> dict[str, list[str]]:
    """breakdown:<metric> body entries -> their sub-metrics (the value is a comma list)."""
    out: dict[str, list[str]] = {}
    for metric in body:
        name = str(metric.name())
        if name.startswith("breakdown:"):
            value = metric.value() if metric.has_value() else ""
            out[name[len("breakdown:"):]] = [m for m in str(value or "").split(",") if m]
    return out


# Occupancy graphs: (table, the varied resource's metric and label, the curve's suffix)
_OCCUPANCY_TABLES = (
    ("Impact of Varying Register Count Per Thread", "launch__registers_per_thread",
     "Registers Per Thread", "register_count"),
    ("Impact of Varying Block Size", "launch__block_size", "Block Size", "block_size"),
    ("Impact of Varying Shared Memory Usage Per Block", "launch__shared_mem_per_block",
     "Shared Memory Per Block", "shared_mem_size"),
    ("Impact of Varying Block Barriers", "launch__barrier_count", "Block Barrier Count",
     "barrier_count"),
)


def _occupancy_tables(body: list[Any]) -> tuple[BodyLayout, ...]:
    """"% Occupancy Graphs" and "# Warps Graphs": each curve (its values per register
    count, block size, ...) beside the launch's own value; rows in metric-name order."""
    labels = {str(m.name()): str(m.label() or "") for m in body}
    layouts = []
    for chart, curve in (("% Occupancy Graphs", "derived__pct_occupancy_per_"),
                         ("# Warps Graphs", "launch__occupancy_per_")):
        for index, (table, launch, label, suffix) in enumerate(_OCCUPANCY_TABLES):
            rows = sorted((BodyRow(f"{curve}{suffix}", labels.get(f"{curve}{suffix}", "")),
                           BodyRow(launch, label)), key=lambda r: r.metric)
            titles = ((chart,) if index == 0 else ()) + (f"Table Name : {table}",)
            layouts.append(BodyLayout(titles, tuple(rows)))
        layouts.append(BodyLayout(("Table Name : Impact of Varying Cluster Size",), (
            BodyRow("launch__cluster_size", "Cluster Size"),
            BodyRow("launch__occupancy_per_cluster_size", "Active Clusters"))))
    if not all(r.metric in labels or r.metric.startswith("launch__")
               for layout in layouts for r in layout.rows):
        return ()
    return tuple(layouts)


_STALL = re.compile(r"^smsp__average_warps_issue_stalled_\w+_per_issue_active\.ratio$")

# Memory Workload Analysis tables: (table name, the metric group listing its rows)
_MEMORY_TABLES = (
    ("Shared Memory", "group:memory__shared_table"),
    ("L1/TEX Cache", "group:memory__first_level_cache_table"),
    ("L2 Cache", "group:memory__l2_cache_table"),
    ("L2 Cache Eviction Policies", "group:memory__l2_cache_evict_policy_table"),
    ("Device Memory", "group:memory__dram_table"),
)


def _group_tables(tables: tuple[tuple[str, str], ...], chart: str,
                  group: Callable[[str], list[str]]) -> tuple[BodyLayout, ...]:
    """Tables whose rows are a metric group's members, labelled with their metric names."""
    layouts = []
    for table, name in tables:
        members = group(name)
        if members:
            titles = ((chart,) if not layouts else ()) + (f"Table Name : {table}",)
            layouts.append(BodyLayout(titles, tuple(BodyRow(m, m) for m in members)))
    return tuple(layouts)


def body_layouts(identifier: str, body: list[Any],
                 value: Callable[[str], float | None],
                 group: Callable[[str], list[str]] = lambda name: []) -> tuple[BodyLayout, ...]:
    """The body tables ncu prints for a section, for the sections rebuilt here. `group` gives
    the members of a metric group (group:<name>), [] when the report lacks it."""
    if identifier == "SchedulerStats":
        return (BodyLayout(("Table Name : Warps Per Scheduler",), (
            BodyRow("smsp__issue_active.avg.per_cycle_active", "Issued Warp Per Scheduler"),
            BodyRow("smsp__maximum_warps_avg_per_active_cycle",
                    "Theoretical Warps Per Scheduler"),
            BodyRow("smsp__warps_active.avg.peak_sustained", "GPU Maximum Warps Per Scheduler"),
            BodyRow("smsp__warps_active.avg.per_cycle_active", "Active Warps Per Scheduler"),
            BodyRow("smsp__warps_eligible.avg.per_cycle_active", "Eligible Warps Per Scheduler"),
        )),)
    if identifier == "WarpStateStats":
        stalls = [BodyRow(str(m.name()), str(m.label() or m.name())) for m in body
                  if _STALL.match(str(m.name()))]
        return (BodyLayout(("Table Name : Warp State (All Cycles)",), _by_value(stalls, value)),) \
            if stalls else ()
    if identifier == "Occupancy":
        return _occupancy_tables(body)
    if identifier == "Nvlink_Topology" and value("nvlink__count_logical") == 0:
        return (BodyLayout(("NVLink Topology", "The system does not have any NVLink connections."),
                           ()),)
    if identifier == "WorkloadDistribution":
        # each unit's active cycles: average, busiest and idlest instance, and the sum
        return (BodyLayout(("Table Name : Workload Distribution",), tuple(
            BodyRow(f"{unit}__cycles_active.{stat}", f"{label} Active Cycles")
            for unit, label in (("dram", "DRAM"), ("l1tex", "L1"), ("lts", "L2"), ("sm", "SM"),
                                ("smsp", "SMSP"))
            for stat in ("avg", "max", "min", "sum"))),)
    if identifier == "InstructionStats":
        labels = {str(m.name()): str(m.label() or "") for m in body}
        return tuple(
            BodyLayout((chart, f"Table Name : {table}"), (BodyRow(name, labels[name]),))
            for chart, table, name in (
                ("Opcode Category Chart", "Executed Instruction Categories",
                 "sass__inst_executed_per_opcode_category"),
                ("Opcode Charts", "Executed Instruction Mix", "sass__inst_executed_per_opcode"))
            if name in labels)
    if identifier == "SourceCounters":
        return _source_tables(group)
    if identifier == "NumaAffinity":
        return (BodyLayout(("Table Name : NUMA Affinity",), (), columns=_NUMA_COLUMNS),)
    if identifier == "MemoryWorkloadAnalysis_Chart":
        return _group_tables((("Memory Chart", "group:memory__chart"),), "Memory Chart", group)
    if identifier == "MemoryWorkloadAnalysis_Tables":
        return _group_tables(_MEMORY_TABLES, "Memory Tables", group)
    if identifier == "SpeedOfLight":
        return _speed_of_light(body, value)
    if identifier == "ComputeWorkloadAnalysis":
        return _pipe_tables(body, value)
    if identifier == "SpeedOfLight_RooflineChart":
        return _roofline_tables(body)
    for precision in _HIERARCHICAL:
        if identifier == f"SpeedOfLight_Hierarchical{precision}RooflineChart":
            return _hierarchical_tables(precision, body)
    if identifier == "SpeedOfLight_HierarchicalTensorRooflineChart":
        return _tensor_tables(body)
    return ()


# one row per GPU, in ncu 2025.3.1's column order and wording
_NUMA_COLUMNS = (
    GridColumn("GPU ID", None, ">"),
    GridColumn("GPU Name", "numa__dev_display_name_all", "<"),
    GridColumn("NUMA ID by CPU Affinity", "numa__id_cpu", ">"),
    GridColumn("CPU Affinity", "numa__cpu_affinity", ">"),
    GridColumn("NUMA ID by Memory Affinity", "numa__id_memory", ">"),
)


def _source_tables(group: Callable[[str], list[str]]) -> tuple[BodyLayout, ...]:
    """Source Counters' body: the sampled stall reasons (labelled with their metric names) and
    the instructions executed, each as the kernel's total (ncu's source view lists them per
    instruction; its details page prints the totals only)."""
    stalls = group("group:smsp__pcsamp_warp_stall_reasons")
    layouts = []
    if stalls:
        layouts.append(BodyLayout(("Hotspot Locations",
                                   "Table Name : Warp Stall Sampling (All Samples)"),
                                  tuple(BodyRow(m, m, instances=False) for m in stalls)))
    layouts.append(BodyLayout(("Table Name : Most Instructions Executed",), (
        BodyRow("inst_executed", "Instructions Executed", instances=False),)))
    return tuple(layouts)


_TENSOR_PEAK = re.compile(r"^sm__ops_path_tensor_(?P<variant>\w+)\.sum\.peak_sustained$")
_TENSOR_LEVELS = (
    ("DRAM", ("dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second"),
     "dram__bytes.sum.per_second"),
    ("L2 Cache", ("derived__lts__lts2xbar_bytes.sum.peak_sustained",
                  "lts__cycles_elapsed.avg.per_second"),
     "derived__lts__lts2xbar_bytes.sum.per_second"),
    ("L1/TEX Cache", ("derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained",
                      "l1tex__cycles_elapsed.avg.per_second"),
     "derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.per_second"),
)


def tensor_variant_title(variant: str) -> str:
    """"op_hgmma_src_bf16_dst_fp32_sparsity_off" -> "Op:hgmma Src:bf16 Dst:fp32 Sparsity:off"."""
    words = variant.split("_")
    return " ".join(f"{key.capitalize()}:{value}" for key, value in zip(words[::2], words[1::2],
                                                                          strict=False))


def _tensor_tables(body: list[Any]) -> tuple[BodyLayout, ...]:
    """"Roofline Tensor Core": for every tensor data path (op, source and destination types,
    sparsity) its DRAM, L2 and L1/TEX rooflines, then the achieved values of each, then one
    table of all paths' counters."""
    labels = {str(m.name()): str(m.label() or "") for m in body}
    variants = sorted(m.group("variant") for name in labels
                      if (m := _TENSOR_PEAK.match(name)))
    if not variants:
        return ()

    def rows(*names: str) -> tuple[BodyRow, ...]:
        return tuple(BodyRow(n, labels.get(n, n)) for n in names)

    frequency = "sm__cycles_elapsed.avg.per_second"
    layouts = []
    for number, variant in enumerate(variants):
        title = tensor_variant_title(variant)
        for level, (level_name, traffic, _) in enumerate(_TENSOR_LEVELS):
            first = ("Roofline Tensor Core", "Table Name : Tensor Core Operations Roofline") \
                if number == 0 and level == 0 else ()
            layouts += [
                BodyLayout((*first, f"{level_name} Roofline ({title})", "Peak Work"),
                           rows(frequency, f"sm__ops_path_tensor_{variant}.sum.peak_sustained")),
                BodyLayout(("Peak Traffic",), rows(*traffic)),
            ]
    for variant in variants:
        title = tensor_variant_title(variant)
        for level_name, _, bandwidth in _TENSOR_LEVELS:
            layouts += [
                BodyLayout((f"{level_name} Achieved Value ({title})", "Achieved Work"),
                           rows(frequency,
                                f"sm__ops_path_tensor_{variant}.sum.per_cycle_elapsed")),
                BodyLayout(("Achieved Traffic",), rows(bandwidth)),
            ]
    # closing the section, one table of every path's counters, labelled with the path
    summary = BodyLayout((), tuple(
        BodyRow(f"sm__ops_path_tensor_{variant}.sum{suffix}", tensor_variant_title(variant))
        for variant in variants
        for suffix in ("", ".pct_of_peak_sustained_elapsed", ".peak_sustained",
                       ".peak_sustained_elapsed.per_second", ".per_cycle_elapsed",
                       ".per_second")))
    if not all(row.metric in labels for layout in layouts for row in layout.rows):
        return ()  # another ncu version's section: print nothing rather than half of it
    return (*layouts, summary)


# precision -> (theoretical and achieved work metrics, achieved work rows after the first)
_HIERARCHICAL = {
    "Double": ("derived__sm__sass_thread_inst_executed_op_dfma_pred_on_x2",
               ("derived__smsp__sass_thread_inst_executed_op_dfma_pred_on_x2",
                "smsp__cycles_elapsed.avg.per_second",
                "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed",
                "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed")),
    "Half": ("derived__sm__sass_thread_inst_executed_op_hfma_pred_on_x4",
             ("derived__smsp__sass_thread_inst_executed_op_hadd_pred_on_x2",
              "derived__smsp__sass_thread_inst_executed_op_hfma_pred_on_x4",
              "derived__smsp__sass_thread_inst_executed_op_hmul_pred_on_x2",
              "smsp__cycles_elapsed.avg.per_second")),
    "Single": ("derived__sm__sass_thread_inst_executed_op_ffma_pred_on_x2",
               ("derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2",
                "smsp__cycles_elapsed.avg.per_second",
                "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed",
                "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed")),
}
# memory level -> (roofline title, achieved title, peak traffic rows, achieved traffic row)
_LEVELS = (
    ("DRAM Roofline", "DRAM Achieved Value",
     ("dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second"),
     ("dram__bytes.sum.per_second", None)),
    ("L2 Roofline", "L2 Achieved Value",
     ("derived__lts__lts2xbar_bytes.sum.peak_sustained", "lts__cycles_elapsed.avg.per_second"),
     ("derived__lts__lts2xbar_bytes.sum.per_second", None)),
    ("L1 Roofline (Global/Local)", "L1 Achieved Value (Global/Local)",
     ("derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained",
      "l1tex__cycles_elapsed.avg.per_second"),
     ("derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.per_second",
      "L1 Cache Bandwidth (Global/Local)")),
)


# rows whose metric ncu_report lists under another section (the tensor roofline) only
_ELSEWHERE = {
    "derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained":
        "Theoretical L1/TEX Cache Bytes Accessible",
    "derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.per_second":
        "L1 Cache Bandwidth (Global/Local)",
}


def _hierarchical_tables(precision: str, body: list[Any]) -> tuple[BodyLayout, ...]:
    """"Roofline <precision>": per memory level (DRAM, L2, L1) its peak work and traffic,
    then its achieved work and traffic."""
    labels = {**_ELSEWHERE, **{str(m.name()): str(m.label() or "") for m in body}}
    theoretical, achieved = _HIERARCHICAL[precision]

    def rows(*names: str) -> tuple[BodyRow, ...]:
        return tuple(BodyRow(n, labels.get(n, n)) for n in names)

    layouts = []
    for index, (title, _, traffic, _) in enumerate(_LEVELS):
        first = (f"Roofline {precision} Precision",
                 f"Table Name : Floating Point Operations Roofline ({precision} Precision)") \
            if index == 0 else ()
        layouts += [BodyLayout((*first, title, "Peak Work"),
                               rows(theoretical, "sm__cycles_elapsed.avg.per_second")),
                    BodyLayout(("Peak Traffic",), rows(*traffic))]
    for _, title, _, (bandwidth, label) in _LEVELS:
        layouts += [BodyLayout((title, "Achieved Work"), rows(*achieved)),
                    BodyLayout(("Achieved Traffic",),
                               (BodyRow(bandwidth, label or labels.get(bandwidth, bandwidth)),))]
    if not all(row.metric in labels for layout in layouts for row in layout.rows):
        return ()  # another ncu version's section: print nothing rather than half of it
    return tuple(layouts)


def _roofline_tables(body: list[Any]) -> tuple[BodyLayout, ...]:
    """"GPU Throughput Rooflines": peak work and traffic, then achieved work and traffic, for
    single and double precision, labelled as the section labels its metrics."""
    labels = {str(m.name()): str(m.label() or "") for m in body}

    def rows(*names: str) -> tuple[BodyRow, ...]:
        return tuple(BodyRow(n, labels.get(n, n)) for n in names)

    traffic_peak = rows("dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second")
    traffic = rows("dram__bytes.sum.per_second")
    layouts = []
    for precision, op in (("Single", "ffma"), ("Double", "dfma")):
        first = ("GPU Throughput Rooflines", "Table Name : Floating Point Operations Roofline") \
            if precision == "Single" else ()
        layouts += [
            BodyLayout((*first, f"{precision} Precision Roofline", "Peak Work"), rows(
                f"derived__sm__sass_thread_inst_executed_op_{op}_pred_on_x2",
                "sm__cycles_elapsed.avg.per_second")),
            BodyLayout(("Peak Traffic",), traffic_peak),
        ]
    for precision, op, add, mul in (("Single", "ffma", "fadd", "fmul"),
                                    ("Double", "dfma", "dadd", "dmul")):
        layouts += [
            BodyLayout((f"{precision} Precision Achieved Value", "Achieved Work"), rows(
                f"derived__smsp__sass_thread_inst_executed_op_{op}_pred_on_x2",
                "smsp__cycles_elapsed.avg.per_second",
                f"smsp__sass_thread_inst_executed_op_{add}_pred_on.sum.per_cycle_elapsed",
                f"smsp__sass_thread_inst_executed_op_{mul}_pred_on.sum.per_cycle_elapsed")),
            BodyLayout(("Achieved Traffic",), traffic),
        ]
    if not all(row.metric in labels for layout in layouts for row in layout.rows):
        return ()  # another ncu version's section: print nothing rather than half of it
    return tuple(layouts)


def _speed_of_light(body: list[Any], value: Callable[[str], float | None]
                    ) -> tuple[BodyLayout, ...]:
    breakdowns = _breakdown(body)
    compute = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    memory = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
    if compute not in breakdowns or memory not in breakdowns:
        return ()
    layouts = [BodyLayout(("GPU Throughput Chart", "Table Name : GPU Throughput"),
                          (BodyRow(memory, "Memory [%]"), BodyRow(compute, "Compute (SM) [%]")))]
    for first, (name, table) in enumerate(((compute, "Compute Throughput Breakdown"),
                                           (memory, "Memory Throughput Breakdown"))):
        rows = [BodyRow(m, breakdown_label(m)) for m in breakdowns[name]]
        titles = (("GPU Throughput Breakdown",) if first == 0 else ()) + (
            f"Table Name : {table}",)
        layouts.append(BodyLayout(titles, _by_value(rows, value)))
    return tuple(layouts)


def _pipe_tables(body: list[Any], value: Callable[[str], float | None]
                 ) -> tuple[BodyLayout, ...]:
    names = [(str(m.name()), str(m.label() or "")) for m in body]
    layouts = []
    for chart, table, description, pattern in _PIPE_TABLES:
        if pattern.startswith("inst_executed_pipe_*"):
            suffix = pattern.split("*", 1)[1]
            chosen = [(n, lab) for n, lab in names
                      if n.startswith("sm__inst_executed_pipe_") and n.endswith(suffix)]
        else:
            chosen = [(n, lab) for n, lab in names
                      if n.startswith("sm__pipe_") and n.endswith(pattern)]
        if not chosen:
            continue
        if pattern.startswith("inst_executed_pipe_*"):
            # the FP16 share of the FMA pipe: in ncu's table, though not a body metric
            fma = f"sm__inst_executed_pipe_fma{suffix}"
            at = next((i + 1 for i, (n, _) in enumerate(chosen) if n == fma), len(chosen))
            chosen.insert(at, (f"sm__inst_executed_pipe_fma_type_fp16{suffix}", "FMA (FP16)"))
        rows = [BodyRow(n, _PIPE_LABELS.get(n.split(".", 1)[0], lab)) for n, lab in chosen]
        titles = ((chart,) if chart else ()) + (f"Table Name : {table}",
                                                 f"Table Description : {description}")
        layouts.append(BodyLayout(titles, _by_value(rows, value)))
    return tuple(layouts)
