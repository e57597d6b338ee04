"""The timing model's parameters (``runtime/timing/``) and where each value comes from.

:class:`TimingParams` and :data:`TIMING_SOURCES`."""

from __future__ import annotations

from dataclasses import dataclass

# ---------------------------------------------------------------------------
# Boards and the timing model's parameters
#
# Every number the timing model (``runtime/timing/``) uses lives here, with its
# source.  "calibrated" marks a parameter fitted by ``benchmarks/timing_calibration.py``
# on the seed's 1700 MHz column ONLY (the measured MI60 table of *An Alternative SGEMM on
# VEGA*, section 3.1: docs/references.md); the 1500/1300/1100 MHz columns
# are predictions of the model, never fitted.  The calibrated values below are the
# coordinate search's result under the "address" L2 rule and the HBM model of issue 32 (one
# pass, MAPE 9.96 % on 7 sizes of the 1700 MHz column: 256, 768, 1536, 1792, 2560, 4096,
# 6144; on the seed's conditions, MI60 at 800 MHz memory): smem_hit_cycles 66.27,
# l2_hit_cycles 208.33, scalar_bytes_per_cycle 19.2, launch_overhead_us 1.26,
# hbm_latency_ns 300 (searched, unchanged).  The same model with the earlier "line" rule's
# fit had 99.4, 312.5, 19.2 and 0.84 (7.1 % on 14 sizes); the earlier reconstruction of the
# seed's loop 82.8, 250, 24 and 2.37; the first calibration (without hit-on-miss) 207, 375,
# 16 and 7.5.  The HBM efficiency parameters (hbm_bus_efficiency, hbm_activate_ns) are
# fitted to the streaming microbenchmark rows instead (TIMING_SOURCES).


@dataclass(frozen=True)
class TimingParams:
    """Cycle-model parameters of a gfx9 compute unit and its memory system.

    Units: ``*_cycles`` are engine-clock cycles; ``*_ns`` nanoseconds (fixed in time,
    whatever the engine clock: the HBM2 and its controller run on the memory
    clock); ``*_us`` microseconds.  See :data:`TIMING_SOURCES` for each field's source.
    """

    issue_turn_cycles: int = 4
    long_instruction_extra_cycles: float = 0.0
    branch_taken_extra_cycles: int = 4
    smem_hit_cycles: float = 66.267
    smem_issue_cycles: int = 1
    scalar_bytes_per_cycle: float = 19.2
    l1_hit_cycles: float = 120.0
    l1_bytes_per_cycle: int = 64
    l1_bytes: int = 16 * 1024
    l2_hit_cycles: float = 208.333
    l2_bytes: int = 4 * 1024 * 1024
    l2_channels: int = 16
    l2_bytes_per_cycle_per_channel: int = 64
    l2_ways: int = 16
    hbm_latency_ns: float = 300.0
    hbm_channels: int = 32
    hbm_page_bytes: int = 1024
    hbm_refresh_fraction: float = 0.0897
    hbm_bus_efficiency: float = 0.9552
    hbm_activate_ns: float = 0.864
    l2_shared_fill_wait: float = 1.0
    #: How an L2 miss is decided (runtime/timing/cu.py): "line" or "group".
    l2_miss_rule: str = "address"
    lds_latency_cycles: float = 64.0
    lds_banks: int = 32
    scalar_cache_bytes: int = 16 * 1024
    cus_per_scalar_cache: int = 3
    line_bytes: int = 64
    launch_overhead_us: float = 1.26
    store_latency_cycles: float = 250.0


#: Where each :class:`TimingParams` value comes from.
TIMING_SOURCES: dict[str, str] = {
    "issue_turn_cycles": "AMD GCN architecture whitepaper (2012): round-robin issue, each SIMD "
                         "gets a turn every 4 cycles",
    "long_instruction_extra_cycles": "calibrated (CLRX 'GCN ISA Instruction Timings': an 8-byte "
                                     "instruction may need up to 4 extra cycles to dispatch)",
    "branch_taken_extra_cycles": "CLRX 'GCN ISA Instruction Timings' (jump penalties, one 4-cycle penalty)",
    "smem_hit_cycles": "calibrated (scalar cache hit latency)",
    "smem_issue_cycles": "assumed: one scalar cache request per cycle per CU",
    "scalar_bytes_per_cycle": "calibrated (scalar cache data return, bytes per cycle, shared by the "
                              "CUs of one scalar cache)",
    "l1_hit_cycles": "assumed from published GCN pointer-chasing measurements (~120 cycles, "
                     "chipsandcheese.com 'Measuring GPU memory latency')",
    "l1_bytes_per_cycle": "GCN whitepaper: vector L1 64 B/clk",
    "l1_bytes": "ROCm GPU specs: 16 KiB vector L1 per CU",
    "l2_hit_cycles": "calibrated (L2 hit latency, engine clock domain)",
    "l2_bytes": "ROCm GPU specs: 4 MiB L2",
    "l2_channels": "assumed 16 for gfx906 (the L2 is made of independent channels: GCN whitepaper; "
                   "ROCm Compute Profiler 'L2 cache (TCC)', 32 on MI100; no public gfx906 count is cited)",
    "l2_bytes_per_cycle_per_channel": "GCN whitepaper: 64 B/clk per L2 channel",
    "l2_ways": "assumed 16-way (AMD does not publish gfx906's L2 associativity; 16 ways as in the "
               "ROCm Compute Profiler's CDNA L2 description); LRU",
    "hbm_channels": "JEDEC JESD235A (HBM2): 8 independent 128-bit channels per stack; Vega 20 has 4 "
                    "stacks (4096 bits): 32 channels",
    "hbm_page_bytes": "JEDEC JESD235A (HBM2): 1 KB page (row) per pseudo channel in pseudo-channel mode "
                      "(2 KB per channel in legacy mode, HBM1's); the two pseudo channels of a channel share "
                      "its row/column command bus (so activations queue on hbm_channels); HBM2 controllers run "
                      "pseudo-channel mode (Xilinx PG313, Intel HBM2 IP user guide; Ramulator 2's HBM2 model, "
                      "CMU-SAFARI/ramulator2 src/dram/impl/HBM2.cpp: a pseudo channel's row is 64 columns of "
                      "128 bits). An instruction's misses open one page per KiB at best: no access pattern "
                      "streams faster than global_load_dwordx4's 1 KiB per wave",
    "hbm_refresh_fraction": "JEDEC JESD235A (HBM2): tRFC / tREFI = 350 ns / 3.9 us for 8 Gb dies (all-bank "
                            "refresh blocks the channel): 0.0897 of the time",
    "hbm_bus_efficiency": "fitted with hbm_activate_ns to the microbenchmark rows hbm.stream.dwordx4 (867-873 GB/s) "
                          "and hbm.stream.dword (814 GB/s) (MI50, 'whole GPU, large buffer', skyne98/wiki-gfx906 "
                          "gfx906-latency-hiding-ops.md): the model's steady streaming rates (no launch, ramp or "
                          "drain: a large buffer's rate) equal the rows, 870 (the range's middle) and 814 GB/s, in "
                          "closed form: 1024 B / 870 GB/s - 256 B / 814 GB/s = 768 B / (pin rate x (1 - "
                          "hbm_refresh_fraction) x efficiency), so 0.9552.  (An earlier fit put a 256 MiB read's "
                          "modeled time, launch and ramp included, at the rows, which left the model's asymptote at "
                          "880 GB/s, above the measured 873: longer reads, the 1 GB GEMV heads, modeled above it.)  "
                          "The data bus's share of the time refresh leaves (read/write turnaround, command bubbles)",
    "hbm_activate_ns": "fitted with hbm_bus_efficiency (see there; 1024 B / 870 GB/s - 1024 B / data rate = "
                       "activate / hbm_channels): the part of a DRAM page activation (tRCD + tRP) the channel's "
                       "other banks do not hide, per page an instruction's misses open",
    "hbm_latency_ns": "assumed 300 ns (what lies beyond an L2 miss: Infinity Fabric, memory controller, "
                      "HBM2; on Vega 20 the fabric (FCLK), SoC (SOCCLK) and memory (UCLK) clocks are DPM "
                      "domains of their own beside GFXCLK: amdgpu vega20_print_clk_levels, PP_FCLK/PP_SOCCLK/"
                      "PP_MCLK (PPCLK_UCLK) apart from PP_SCLK, so fixed in ns when the engine clock changes; ROCm Compute Profiler 'L2 cache (TCC)': L2 misses "
                      "go to Infinity Fabric).  Searched by the 'address' rule's calibration (single-round and "
                      "many-round sizes wait on it for different shares of their loads) and left at 300: 200 and 450 "
                      "fit the 1700 MHz column worse; no published Vega 20 HBM latency in ns was found",
    "l2_shared_fill_wait": "assumed 1.0: the model's CUs are identical and dispatched breadth-first "
                           "(runtime/timing/gpu.py), so the workgroups sharing a line run in phase: one "
                           "fetches it from HBM, the others hit the pending line and wait for the same "
                           "fill (hit-on-miss, ROCm Compute Profiler 'L2 cache (TCC)'); 0 = sharers far "
                           "apart in time (the first calibration's rule)",
    "l2_miss_rule": "'address' (default): a set-associative simulation of this CU's share of the L2 plus the "
                    "first round's sharers per line (runtime/timing/cu.py).  Earlier rules: 'line': each 64-byte line draws miss / shared fill on its own, "
                    "so a 64-line load nearly always meets one HBM latency whatever p_l2_miss (a known "
                    "weakness: the modeled time hardly follows the L2 miss probability).  'group' decides "
                    "once per sharing group (a workgroup's A or B panel) and workgroup copy, and only the "
                    "first resident set waits for sharers' fills; re-fitted on the 1700 MHz fit sizes (with the "
                    "earlier reconstruction of the seed's loop) it "
                    "gives 6.8 % there (line: 8.7 %) but 4.8 % on the whole 1700 column (line: 3.4 %) with "
                    "hbm_latency_ns 133, l2_hit_cycles 375, launch_overhead_us 1.05 (one coordinate pass), "
                    "and models the default SGEMM at 97.8 % of peak: not adopted until its fit is finished",
    "lds_latency_cycles": "assumed ~64 cycles (pyhip docs/mem_latency.md measures 64 cycles for "
                          "ds_read_b128 on a later CDNA part)",
    "lds_banks": "GCN whitepaper, Vega ISA guide (LDS): 32 banks of 4 bytes",
    "scalar_cache_bytes": "ROCm GPU specs; AMD GPU Hardware Basics: scalar cache 16 KiB shared by 3 CUs",
    "cus_per_scalar_cache": "ROCm GPU specs; AMD GPU Hardware Basics: scalar cache 16 KiB shared by 3 CUs",
    "line_bytes": "GCN whitepaper: 64-byte cache lines",
    "launch_overhead_us": "calibrated (kernel launch and completion as seen by the seed's timer)",
    "store_latency_cycles": "assumed equal to the L2 hit latency's default (write acknowledged by L2)",
}

