"""The metrics the pages read by name: what a page's `KernelReport.metrics` holds.

A report holds a few thousand metrics; the pages, the findings and their fix ideas read the
typed fields of `KernelReport` (built from the metrics `builder` names) and, by name through
`KernelReport.metric` and `KernelReport.metrics`, the metrics listed here. A writeup reads
these and no other of the every-metric table, which `ncuh export` writes whole. A rule that
reads another metric by name adds it here, in one line: `tests/test_page_metrics.py` runs
every rule and renders every page of every committed report with this reading and with the
every-metric one, and fails on any difference and on any name read that is not listed.
"""

from __future__ import annotations

PAGE_METRICS: frozenset[str] = frozenset({
    # findings.occupancy_limits: the device's per-SM and per-block limits, and the launch's
    # barriers; findings.waves: the SMs a wave fills
    "device__attribute_max_blocks_per_multiprocessor",
    "device__attribute_max_registers_per_block",
    "device__attribute_multiprocessor_count",
    "device__attribute_max_registers_per_multiprocessor",
    "device__attribute_max_shared_memory_per_multiprocessor",
    "device__attribute_max_warps_per_multiprocessor",
    "device__attribute_reserved_shared_memory_per_block",
    "launch__barrier_count",
    # findings.atomics and findings.evidence: atomics' wavefronts and sectors
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
    # findings.clusters: the cluster's shape and its distributed-shared-memory traffic
    "launch__cluster_size",
    "launch__cluster_dim_x",
    "launch__cluster_dim_y",
    "launch__cluster_dim_z",
    *(f"l1tex__t_{count}_pipe_lsu_mem_dshared_op_{op}.sum"
      for count in ("requests", "sectors") for op in ("ld", "st", "atom", "redas")),
    # findings.feeds: bytes TMA loaded
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
    # findings.imbalance: active cycles over the SMs
    "launch__sm_count",
    "sm__cycles_active.avg",
    "sm__cycles_active.max",
    "sm__cycles_active.min",
    "sm__cycles_active.sum",
    "sm__cycles_elapsed.max",
    # findings.memory_level: the L2 hit rate; findings.evidence: sectors read from L2 and DRAM
    "lts__t_sector_hit_rate.pct",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "dram__sectors_read.sum",
    # report.math_precisions: the math rate per precision, from the pipes and the tensor paths
    "sm__cycles_elapsed.avg.per_second",
    *(f"smsp__sass_thread_inst_executed_op_{kind}{op}_pred_on.sum.per_cycle_elapsed"
      for kind in ("f", "d") for op in ("fma", "add", "mul")),
    *(f"sm__ops_path_tensor_src_{source}{destination}{sparsity}.sum"
      for source in ("fp8", "fp16", "bf16", "tf32", "fp64", "int8", "int1")  # those it names
      for destination in ("", "_dst_fp16", "_dst_fp32")
      for sparsity in ("", "_sparsity_off", "_sparsity_on")),
    # findings.evidence and findings.synchronization: opcodes with their modifiers (instanced)
    "sass__inst_executed_per_opcode_with_modifier_all",
    # pages.side_by_side: the key counters, as `ncuh diff` compares them
    "gpu__time_duration.sum",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "smsp__inst_executed.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors.sum",
})
