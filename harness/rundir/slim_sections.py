"""What the `pages` set's slimmed and thinned sections hold, so what a run's `pages` reports hold:
read by the profile side that writes them (`harness.profile.section_overlay`) and by the report
side that reads them (the typed report's rules, the details page).

`WIDGET_METRICS_READ` and `RULE_METRICS` replace the widgets of the two memory sections;
`THINNED_METRICS` are Source Counters' per-instruction metrics that the pages do without (the
bank conflicts finding reads the shared wavefronts where a `full` report has them), `RULES_LEFT_OUT`
the two ncu rules that read them, and `OPTIONAL_RULE_INPUTS_LEFT_OUT` a
rule's optional input that changes nothing it says. `is_slim` tells a slimmed section from a
stock one. What each costs is on the documentation's Performance page.
"""

from __future__ import annotations

from collections.abc import Collection

SLIMMED_SECTIONS: tuple[str, ...] = (
    "MemoryWorkloadAnalysis_Tables",
    "MemoryWorkloadAnalysis_Chart",
)
# What ncuh's readers (harness.report, harness.findings, harness.diff) use that only those
# widgets collected, named as an H100 `--set full` report names them (ncu 2025.3.1): a
# report recorded with `pages` less the two widget sections lacked exactly these.
WIDGET_METRICS_READ: tuple[str, ...] = (
    "dram__bytes_read.sum",
    "dram__bytes_read.sum.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum.per_second",
    "dram__bytes_write.sum",
    "dram__bytes_write.sum.pct_of_peak_sustained_elapsed",
    "dram__bytes_write.sum.per_second",
    "idc__requests.sum",
    "idc__requests.sum.pct_of_peak_sustained_elapsed",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum.pct_of_peak_sustained_elapsed",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum.pct_of_peak_sustained_elapsed",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum.pct_of_peak_sustained_elapsed",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum.pct_of_peak_sustained_elapsed",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "lrc__ilc_input_sectors.sum.pct_of_peak_sustained_elapsed",
    "lrc__ilc_input_sectors.sum.per_second",
    "lts__average_gcomp_output_sector_compression_achieved_rate.ratio",
    "lts__t_sectors.sum.per_second",
    "lts__t_sectors_srcunit_tex_op_atom.sum",
    "lts__t_sectors_srcunit_tex_op_atom.sum.pct_of_peak_sustained_elapsed",
    "lts__t_sectors_srcunit_tex_op_atom.sum.per_second",
    "lts__t_sectors_srcunit_tex_op_red.sum",
    "lts__t_sectors_srcunit_tex_op_red.sum.pct_of_peak_sustained_elapsed",
    "lts__t_sectors_srcunit_tex_op_red.sum.per_second",
    "sass__inst_executed_local_loads",
    "sass__inst_executed_local_stores",
    "smsp__inst_executed_op_shared_atom.sum",
    "smsp__inst_executed_op_shared_atom.sum.pct_of_peak_sustained_elapsed",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_local_ld.sum",
    "smsp__sass_inst_executed_op_local_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
)

# Source Counters' per-instruction metrics that `pages` leaves out (ncu 2025.3.1's names): no
# finding, page or diff of ncuh's needs them (the details page lists them, as ncu does, and the
# bank conflicts finding localizes conflicts with the shared wavefronts where they were kept),
# nor does any rule that `pages` runs (a metric a kept rule asks for, or a kept derived metric
# reads, stays whatever this list says, but for OPTIONAL_RULE_INPUTS_LEFT_OUT). What stays:
# executed instructions and the stall samples (the hot spots, the instruction mix), and the
# divergent branches, which cost no measurable replay time of their own.
THINNED_METRICS: dict[str, tuple[str, ...]] = {
    "SourceCounters": (
        "memory_type",
        "memory_access_type",
        "memory_access_size_type",
        "memory_l1_tag_requests_global",
        "memory_l2_theoretical_sectors_local",
        "derived__memory_l1_conflicts_shared_nway",
        # sectors and wavefronts per instruction, with their ideal and excess: the two rules
        # of RULES_LEFT_OUT read them; the coalescing finding reads Memory Workload Analysis,
        # and the bank conflicts finding reads the l1tex counters where these are left out
        # (and says which instructions carry the conflicts only where they are collected)
        "memory_l2_theoretical_sectors_global",
        "memory_l2_theoretical_sectors_global_ideal",
        "derived__memory_l2_theoretical_sectors_global_excessive",
        "memory_l1_wavefronts_shared",
        "memory_l1_wavefronts_shared_ideal",
        "derived__memory_l1_wavefronts_shared_excessive",
        "smsp__sass_inst_executed_memdesc_explicit_evict_type",
        "smsp__sass_inst_executed_memdesc_explicit_hitprop_evict_first",
        "smsp__sass_inst_executed_memdesc_explicit_hitprop_evict_last",
        "smsp__sass_inst_executed_memdesc_explicit_hitprop_evict_normal",
        "smsp__sass_inst_executed_memdesc_explicit_hitprop_evict_normal_demote",
        "smsp__sass_inst_executed_memdesc_explicit_missprop_evict_first",
        "smsp__sass_inst_executed_memdesc_explicit_missprop_evict_normal",
        # thread counts per instruction: all threads, and the predicated-on ones with what
        # ncu's source view derives from them (see OPTIONAL_RULE_INPUTS_LEFT_OUT)
        "thread_inst_executed",
        "derived__avg_thread_executed",
        "thread_inst_executed_true",
        "derived__avg_thread_executed_true",
        "derived__avg_thread_unexecuted_true",
        "derived__derivative_avg_thread_executed_true",
    ),
}
# ncu rules (their identifiers) that `pages` does not run: Source Counters' two access-pattern
# rules, which need the per-instruction sectors and wavefronts above. What the first says,
# excess sectors of global accesses, ncuh's coalescing finding says from Memory Workload
# Analysis metrics `pages` and `full` both collect (`harness.findings.coalescing`); what the
# second says, excess wavefronts of shared accesses, is the bank conflicts finding's. Their
# results in a `full` report are left to ncu's own pages and the details page, so that a page
# says the same whichever set recorded it (`KernelReport.rules_for_pages`), but for the bank
# conflicts finding, which a `full` report's wavefronts by instruction localize.
RULES_LEFT_OUT: tuple[str, ...] = ("UncoalescedGlobalAccess", "UncoalescedSharedAccess")
# Inputs a rule asks for as optional (`Importance.OPTIONAL`) and uses for nothing it says:
# rule -> those its request may go without where THINNED_METRICS names them. ncu 2025.3.1's
# ThreadDivergence reads derived__avg_thread_executed_true only to add a per-instruction
# derivative for ncu's source view (derived__derivative_avg_thread_executed_true); its
# message, estimated speedup and focus metrics come from two WarpStateStats ratios, which
# ncuh's divergence finding reads too. Where a newer ncu's rule asks for one as required, it
# stays.
OPTIONAL_RULE_INPUTS_LEFT_OUT: dict[str, tuple[str, ...]] = {
    "ThreadDivergence": ("derived__avg_thread_executed_true",),
}

# What the sections' rules request (`MetricRequest("...")` in ncu 2025.3.1's rule files
# MemoryCacheAccessPattern and SharedMemoryConflicts for the tables, MemoryApertureUsage and
# MemoryL2Compression for the chart), in the rules' order; some exist on other chips only.
RULE_METRICS: dict[str, tuple[str, ...]] = {
    "MemoryWorkloadAnalysis_Tables": (
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.max_rate",
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.max_rate",
        "smsp__sass_average_data_bytes_per_sector_mem_local_op_ld.ratio",
        "smsp__sass_average_data_bytes_per_sector_mem_local_op_ld.max_rate",
        "smsp__sass_average_data_bytes_per_sector_mem_local_op_st.ratio",
        "smsp__sass_average_data_bytes_per_sector_mem_local_op_st.max_rate",
        "l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct",
        "l1tex__t_sector_pipe_lsu_mem_global_op_st_hit_rate.pct",
        "l1tex__t_sector_pipe_lsu_mem_local_op_ld_hit_rate.pct",
        "l1tex__t_sector_pipe_lsu_mem_local_op_st_hit_rate.pct",
        "lts__t_sector_op_read_hit_rate.pct",
        "lts__t_sector_op_write_hit_rate.pct",
        "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "smsp__sass_inst_executed_op_shared_ld.sum",
        "smsp__sass_inst_executed_op_shared_st.sum",
        "smsp__inst_executed_op_ldsm.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    ),
    "MemoryWorkloadAnalysis_Chart": (
        "device__attribute_compute_capability_major",
        "device__attribute_compute_capability_minor",
        "lts__t_sectors_srcunit_tex.avg.pct_of_peak_sustained_elapsed",
        "lts__t_sectors_srcunit_tex_lookup_miss.sum",
        "lts__t_sectors_srcunit_tex_aperture_peer_lookup_miss.sum",
        "lts__t_sectors_srcunit_tex_aperture_sysmem_lookup_miss.sum",
        "syslts__t_sectors_srcunit_tex_aperture_peer_lookup_miss.sum",
        "syslts__t_sectors_srcunit_tex_aperture_sysmem_lookup_miss.sum",
        "dram__bytes.sum.per_second",
        "pcie__read_bytes.sum.per_second",
        "pcie__write_bytes.sum.per_second",
        "nvlrx__bytes.sum.per_second",
        "nvltx__bytes.sum.per_second",
        "lts__t_sectors.sum",
        "l1tex__m_l1tex2xbar_write_bytes.sum",
        "dram__bytes_read.sum.pct_of_peak_sustained_elapsed",
        "lts__gcomp_input_sectors.sum",
        "lts__average_gcomp_input_sector_success_rate.pct",
        "lrc__ilc_input_sectors.sum",
        "lrc__average_ilc_input_sector_success_rate.pct",
        "dram__bytes_op_read.sum.pct_of_peak_sustained_elapsed",
    ),
}
# The widget groups of the stock sections: a report whose section lacks all of them was
# recorded with the slimmed section.
WIDGET_GROUPS: dict[str, tuple[str, ...]] = {
    "MemoryWorkloadAnalysis_Tables": (
        "group:memory__shared_table",
        "group:memory__first_level_cache_table",
        "group:memory__l2_cache_table",
        "group:memory__l2_cache_evict_policy_table",
        "group:memory__dram_table",
    ),
    "MemoryWorkloadAnalysis_Chart": ("group:memory__chart",),
}


def added_metrics(section: str) -> tuple[str, ...]:
    """The metrics the overlay adds to `section`'s list as of ncu 2025.3.1 (a newer ncu's rules
    may ask for more; those it adds too, but the details page does not know them)."""
    if section not in SLIMMED_SECTIONS:
        return ()
    return tuple(dict.fromkeys([*RULE_METRICS.get(section, ()), *WIDGET_METRICS_READ]))


def is_slim(section: str, metric_names: Collection[str]) -> bool:
    """Whether a report with these metrics holds `section` slimmed (none of its widgets)."""
    groups = WIDGET_GROUPS.get(section)
    return bool(groups) and not any(group in metric_names for group in groups)
