"""The timing model (runtime/timing): microkernels whose modeled time follows from the
model's own stated rules (vlpc/targets/timing.py TimingParams, runtime/timing/cu.py), and
ordering properties that must hold whatever the calibration.

Expected values are derived here from the rules (4-cycle VALU issue per SIMD, half-rate
f64, SMEM latency = scalar-cache hit latency (+ L2 on a miss), bandwidth = bytes /
share, LDS bank conflicts), not read back from the model.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from vlpc.benchmarking.seed import seed_source
from vlpc.runtime.emulator.core import lds_bank_cycles
from vlpc.runtime.emulator.memory import Memory
from vlpc.runtime.emulator.testing import run_program
from vlpc.runtime.timing import TraceRequest, combine
from vlpc.runtime.timing.cu import simulate_cu
from vlpc.targets import get_board

BOARD = get_board("mi60")
# deterministic, penalty-free rules for the microkernels; the L2 decided by the miss
# probability each test gives (the "line" rule: the "address" rule, the default, is
# tested in test_timing_memory.py)
P = replace(BOARD.timing, long_instruction_extra_cycles=0.0, branch_taken_extra_cycles=0, l2_miss_rule="line")
B0 = BOARD.at(timing=P)
#: The sharing-group L2 rule (TimingParams.l2_miss_rule = "group", not the calibrated default).
BG = BOARD.at(timing=replace(P, l2_miss_rule="group"))


def traced(asm: str, block=64, grid=1, wgs=(0,), mem=None, kernarg=0, **cfg):
    req = TraceRequest(tuple(wgs), tuple(wgs))
    _, st = run_program(asm, mem, grid=(grid, 1, 1), block=(block, 1, 1), kernarg=kernarg,
                        trace=req, **cfg)
    assert st.trace is not None
    return st.trace


def cycles(trace, wgs=(0,), board=B0, **kw):
    return simulate_cu(trace, list(wgs), board, **kw)


def test_dependent_fma_chain_issues_every_4_cycles():
    n = 200
    body = "v_mov_b32 v1, 1.0\nv_mov_b32 v2, 2.0\n" + "v_fmac_f32 v1, v2, v2\n" * n + "s_endpgm\n"
    r = cycles(traced(body))
    # one wave: one VALU per turn (4 cycles), dependent or not (GCN's 4-cycle cadence)
    assert (n + 2) * 4 <= r.cycles <= (n + 2) * 4 + 12
    assert r.breakdown["valu"] == (n + 2) * 4


def test_independent_waves_share_their_simd():
    n = 150
    body = "v_mov_b32 v1, 1.0\n" + "v_fmac_f32 v1, v1, v1\n" * n + "s_endpgm\n"
    one_per_simd = cycles(traced(body, block=256)).cycles   # 4 waves: one per SIMD
    two_per_simd = cycles(traced(body, block=512)).cycles   # 8 waves: two per SIMD
    assert one_per_simd == pytest.approx((n + 1) * 4, abs=12)
    assert two_per_simd == pytest.approx(2 * (n + 1) * 4, abs=16)


def test_f64_fma_is_half_rate():
    n = 100
    body = ("v_mov_b32 v2, 0\nv_mov_b32 v3, 0\nv_mov_b32 v4, 0\nv_mov_b32 v5, 0\n"
            + "v_fma_f64 v[2:3], v[4:5], v[4:5], v[2:3]\n" * n + "s_endpgm\n")
    r = cycles(traced(body))
    assert r.cycles == pytest.approx(4 * 4 + n * 8, abs=12)   # gfx906: f64 at half rate, 8 cycles


def test_half_rate_integer_multiply_chain():
    """v_mul_lo_u32 runs at half rate (the ISA table's 8 cycles per wave64, measured on MI50):
    n of them in one wave take n x 8 cycles, n v_mul_u32_u24 n x 4."""
    n = 100
    head = "v_mov_b32 v1, 3\nv_mov_b32 v2, 5\n"
    half = cycles(traced(head + "v_mul_lo_u32 v1, v1, v2\n" * n + "s_endpgm\n"))
    full = cycles(traced(head + "v_mul_u32_u24 v1, v1, v2\n" * n + "s_endpgm\n"))
    assert half.breakdown["valu"] == 2 * 4 + n * 8
    assert full.breakdown["valu"] == 2 * 4 + n * 4
    assert half.cycles == pytest.approx(2 * 4 + n * 8, abs=12)


def _smem_chain(n: int, stride: int) -> str:
    out = ["s_mov_b64 s[4:5], s[0:1]"]
    for i in range(n):
        out.append(f"s_load_dword s{8 + i % 8}, s[4:5], 0x{i * stride:x}")
        out.append("s_waitcnt lgkmcnt(0)")
    out.append("s_endpgm")
    return "\n".join(out) + "\n"


def test_smem_latency_chain():
    n = 12
    mem = Memory()
    buf = mem.alloc(64 * n * 2, align=256)
    hits = cycles(traced(_smem_chain(n, 4), mem=mem, kernarg=buf), l2_miss=0.0)
    misses = cycles(traced(_smem_chain(n, 64), mem=mem, kernarg=buf), l2_miss=0.0)
    # stride 4 bytes: the first load misses the scalar cache, the rest of the line hits
    per_hit = P.smem_hit_cycles
    per_miss = P.smem_hit_cycles + P.l2_hit_cycles
    assert hits.counters["scalar_misses"] == 1 and hits.counters["scalar_hits"] == n - 1
    assert misses.counters["scalar_misses"] == n
    lo_hit = (n - 1) * per_hit + per_miss
    assert lo_hit <= hits.cycles <= lo_hit + n * 8 + 16
    assert n * per_miss <= misses.cycles <= n * per_miss + n * 8 + 16


def test_hit_on_a_pending_scalar_line_waits_for_its_fill():
    # two one-wave workgroups on one CU load the same dword at once: one misses the scalar
    # cache, the other hits the line while its fill is still on the way from L2, so both
    # finish after the miss latency (not the other one after a hit latency)
    mem = Memory()
    buf = mem.alloc(256, align=256)
    asm = "s_load_dword s8, s[0:1], 0x0\ns_waitcnt lgkmcnt(0)\ns_endpgm\n"
    r = cycles(traced(asm, grid=2, wgs=(0, 1), mem=mem, kernarg=buf), wgs=(0, 1), l2_miss=0.0)
    assert r.counters["scalar_misses"] == 1 and r.counters["scalar_hits"] == 1
    per_miss = P.smem_hit_cycles + P.l2_hit_cycles
    assert min(r.wg_finish) >= per_miss
    assert max(r.wg_finish) <= per_miss + 24


def test_a_sharers_fill_costs_the_hbm_latency():
    n = 8
    mem = Memory()
    buf = mem.alloc(64 * n * 2, align=256)
    tr = traced(_smem_chain(n, 64), mem=mem, kernarg=buf)
    hbm = P.hbm_latency_ns * B0.engine_clock_mhz / 1000
    # l2_miss = 0: another CU fetched every line; with l2_shared_fill = 1 it is still in
    # flight (sharers in phase) and this CU waits for it, without fetching it again
    done = cycles(tr, l2_miss=0.0, l2_shared_fill=0.0)
    inflight = cycles(tr, l2_miss=0.0, l2_shared_fill=1.0)
    assert inflight.counters["l2_misses"] == 0 and inflight.counters["hbm_bytes"] == 0
    assert inflight.counters["l2_shared_fills"] == n
    assert inflight.cycles - done.cycles == pytest.approx(n * hbm, abs=n * 2 + 4)


def test_refilled_workgroups_do_not_wait_for_sharers_fills():
    # (l2_miss_rule "group"; under the calibrated "line" rule every round waits alike)
    # the first resident set starts with every other CU's first residents (in phase), so
    # a line another CU fetches is still in flight: each of the n dependent loads waits
    # for the HBM fill.  A workgroup in a refilled slot starts at a time that differs
    # from CU to CU: its sharers' fills are done, so each load costs an L2 hit only.
    n = 8
    mem = Memory()
    buf = mem.alloc(64 * n * 2, align=256)
    tr = traced(_smem_chain(n, 64), mem=mem, kernarg=buf)
    hbm = P.hbm_latency_ns * B0.engine_clock_mhz / 1000
    r = cycles(tr, wgs=(0, 0), board=BG, resident=1, l2_miss=0.0, l2_shared_fill=1.0)
    assert r.counters["l2_shared_fills"] == n and r.counters["l2_misses"] == 0
    first, second = r.wg_finish[0], r.wg_finish[1] - r.wg_finish[0]
    assert first == pytest.approx(n * (P.smem_hit_cycles + P.l2_hit_cycles + hbm), abs=n * 8 + 16)
    assert second == pytest.approx(n * (P.smem_hit_cycles + P.l2_hit_cycles), abs=n * 8 + 16)


def test_l2_misses_are_decided_per_sharing_group():
    # (l2_miss_rule "group")
    # one workgroup's 16 vector lines and its kernel-argument line have the same sharers
    # (the footprint holds only this workgroup): a copy fetches all of them or none, and
    # over 20 copies the share that fetches follows the miss probability (low-discrepancy
    # draws: within one copy of 0.3 x 20), instead of nearly every copy meeting a miss
    # among its 17 lines as independent per-line draws would give (1 - 0.7^17 = 99.8 %)
    mem = Memory()
    buf = mem.alloc(64 * 4 * 4 + 256, align=256)
    body = ["s_load_dwordx2 s[4:5], s[0:1], 0x0", "s_waitcnt lgkmcnt(0)",
            "v_lshlrev_b32 v1, 2, v0"]
    body += [f"global_load_dword v{10 + i}, v1, s[4:5] offset:{i * 256}" for i in range(4)]
    body += ["s_waitcnt vmcnt(0)", "s_endpgm"]
    kernarg = mem.alloc(64, align=64)
    mem.write(kernarg, np.array([buf], np.uint64).view(np.uint8))
    tr = traced("\n".join(body) + "\n", mem=mem, kernarg=kernarg)
    copies, p = 20, 0.3
    r = cycles(tr, wgs=(0,) * copies, board=BG, resident=1, l2_miss=p)
    per_copy = (r.counters["l1_misses"] + r.counters["scalar_misses"]) // copies
    assert per_copy == 17
    fetching, rest = divmod(r.counters["l2_misses"], per_copy)
    assert rest == 0
    assert abs(fetching - p * copies) <= 1


def test_shared_lines_make_time_less_than_inverse_to_the_clock():
    # four workgroups read the same lines (L2 miss probability 1/4): the model's sharers run
    # in phase, so each waits for the HBM fill, fixed in ns; VALU work scales with 1/clock
    from vlpc.runtime.timing import gpu

    n = 8
    mem = Memory()
    buf = mem.alloc(64 * n * 2, align=256)
    req = TraceRequest((0,), (0, 1, 2, 3))
    _, st = run_program(_smem_chain(n, 64), mem, grid=(4, 1, 1), block=(64, 1, 1), kernarg=buf, trace=req)
    tr = st.trace
    assert gpu.l2_miss_probability(tr) == pytest.approx(0.25)
    res = gpu.Residency(1, 1, 1, "")
    fast = gpu.model_kernel(tr, B0.at(engine_clock_mhz=1700), res)
    slow = gpu.model_kernel(tr, B0.at(engine_clock_mhz=1100), res)
    hbm_ns = P.hbm_latency_ns * P.l2_shared_fill_wait
    # n dependent loads, each: cycles + HBM ns; the cycles are the same at both clocks
    assert fast.cycles - slow.cycles == pytest.approx(n * hbm_ns * (1.7 - 1.1), abs=n * 2 + 4)
    assert (slow.time_us - P.launch_overhead_us) < (fast.time_us - P.launch_overhead_us) * 1700 / 1100


def test_streaming_loads_hit_the_hbm_bandwidth_limit():
    loads = 16
    mem = Memory()
    waves = 8
    nbytes = waves * 64 * 4 * loads
    buf = mem.alloc(nbytes + 4096, align=256)
    body = ["s_load_dwordx2 s[4:5], s[0:1], 0x0", "s_waitcnt lgkmcnt(0)",
            "v_lshlrev_b32 v1, 2, v0",          # 4 bytes per lane
            f"s_mul_i32 s6, s2, {64 * 4 * loads}",  # per-workgroup (one wave) offset
            "v_add_u32 v1, s6, v1"]
    for i in range(loads):
        body.append(f"global_load_dword v{10 + i}, v1, s[4:5] offset:{i * 256}")
    body += ["s_waitcnt vmcnt(0)", "s_endpgm"]
    kernarg = mem.alloc(64, align=64)
    mem.write(kernarg, np.array([buf], np.uint64).view(np.uint8))
    tr = traced("\n".join(body) + "\n", grid=waves, wgs=tuple(range(waves)), mem=mem, kernarg=kernarg)
    share = 1.0  # bytes per cycle
    r = cycles(tr, wgs=tuple(range(waves)), l2_miss=1.0, hbm_share_bytes_per_cycle=share)
    lines = r.counters["l1_misses"]
    assert lines == waves * loads * 4  # 64 lanes x 4 bytes = 4 new lines per load
    assert r.counters["l2_misses"] == lines + r.counters["scalar_misses"]
    limit = lines * P.line_bytes / share
    assert limit <= r.cycles <= limit + P.l2_hit_cycles + P.hbm_latency_ns * B0.engine_clock_mhz / 1000 + 2000


def test_lds_bank_conflicts_from_lane_addresses():
    em = np.ones((1, 64), bool)
    linear = (np.arange(64, dtype=np.int64) * 4)[None, :]
    same_bank = (np.arange(64, dtype=np.int64) * 128)[None, :]
    broadcast = np.zeros((1, 64), np.int64)
    assert lds_bank_cycles(linear, em, 1)[0] == 2         # 32 lanes, 32 banks: one pass per half
    assert lds_bank_cycles(same_bank, em, 1)[0] == 64     # 32 distinct words in one bank per half
    assert lds_bank_cycles(broadcast, em, 1)[0] == 2      # one address: a broadcast
    assert lds_bank_cycles(linear, em, 4)[0] == 8         # b128 at overlapping addresses: 8 passes
    # 128 B per clock: a conflict-free access of W dwords per lane takes 2W cycles
    assert lds_bank_cycles(linear * 2, em, 2)[0] == 4     # b64: 4 passes of 16 lanes
    assert lds_bank_cycles(linear * 4, em, 4)[0] == 8     # b128: 8 passes of 8 lanes (not 4-way x 4)
    # b32 at a 16-byte stride: 8 banks serve 32 lanes, 4 distinct dwords each: 4 per half wave
    assert lds_bank_cycles(linear * 4, em, 1)[0] == 8
    # b128 at a 128-byte stride: the 8 lanes of a pass all in banks 0..3, 8-way
    assert lds_bank_cycles(linear * 32, em, 4)[0] == 8 * 8
    # two address sets (ds_read2_b32, ds_read2st64_b32): both count, 2 + 2 cycles
    assert lds_bank_cycles([linear, linear + 256 * 64], em, 1)[0] == 4
    # only the active lanes count; a pass with none costs nothing
    half = np.zeros((1, 64), bool)
    half[0, :32] = True
    assert lds_bank_cycles(linear, half, 1)[0] == 1


def _lds_kernel(stride_bytes: int, n: int) -> str:
    return ("v_mul_u32_u24 v1, %d, v0\n" % stride_bytes
            + "ds_read_b32 v2, v1\ns_waitcnt lgkmcnt(0)\n" * n + "s_endpgm\n")


def test_lds_conflicts_cost_cycles():
    n = 32
    free = cycles(traced(_lds_kernel(4, n), block=256, lds_bytes=65536), wgs=(0,))
    conflict = cycles(traced(_lds_kernel(128, n), block=256, lds_bytes=65536), wgs=(0,))
    # 4 waves share the CU's LDS pipeline: each access occupies it 64 cycles instead of 2,
    # so the conflicting kernel is bound by 4 x n x 64 cycles of LDS; the other by latency
    assert conflict.cycles >= 4 * n * 64
    assert free.cycles <= n * (P.lds_latency_cycles + 2 + 2 * P.issue_turn_cycles) + 64
    assert free.cycles < conflict.cycles / 3


def _lds_burst(read: str, shift: int, n: int) -> str:
    """n independent LDS reads per wave (lane address = v0 << shift), one wait at the end."""
    return (f"v_lshlrev_b32 v1, {shift}, v0\n" + f"{read}\n" * n
            + "s_waitcnt lgkmcnt(0)\ns_endpgm\n")


@pytest.mark.parametrize("read,shift,per_wave", [
    ("ds_read_b128 v[4:7], v1", 4, 8),                     # conflict-free b128: 1024 B / 128 B per clock
    ("ds_read_b32 v4, v1", 4, 8),                          # 4-way conflict: 4 cycles per half wave
    ("ds_read_b32 v4, v1", 2, 2),                          # conflict-free b32
    ("ds_read2_b32 v[4:5], v1 offset1:64", 2, 4),          # two address sets: 2 + 2
    ("ds_read2st64_b32 v[4:5], v1 offset1:1", 2, 4),       # st64: 2 + 2, not one set's 2
])
def test_lds_pipeline_serves_128_bytes_per_clock(read, shift, per_wave):
    """4 waves (one per SIMD) issue n independent reads each: the CU's one LDS pipeline is busy
    4 x n x (cycles per wave access), the access's cycles from the rule above; the last
    result returns lds_latency_cycles later."""
    n = 12  # below lgkmcnt's 15
    r = cycles(traced(_lds_burst(read, shift, n), block=256, lds_bytes=65536))
    busy = 4 * n * per_wave
    assert busy <= r.cycles <= busy + P.lds_latency_cycles + 40


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_barrier_waits_for_the_slowest_wave():
    n = 120
    body = ("v_readfirstlane_b32 s4, v0\n"
            "s_cmp_eq_u32 s4, 0\n"
            "s_cbranch_scc0 skip\n"
            "v_mov_b32 v1, 1.0\n" + "v_fmac_f32 v1, v1, v1\n" * n +
            "skip:\n"
            "s_barrier\n"
            "s_endpgm\n")
    r = cycles(traced(body, block=128))
    assert r.cycles >= n * 4
    assert r.breakdown["barrier"] >= (n - 10) * 4 * 0.9  # wave 1's SIMD waits at the barrier


def test_more_waves_per_simd_hide_latency():
    # each wave: a scalar load, wait, 16 FMAs, repeated: latency-bound alone
    body = ["s_mov_b64 s[4:5], s[0:1]", "v_mov_b32 v1, 1.0"]
    for i in range(16):
        body += [f"s_load_dword s8, s[4:5], 0x{i * 64:x}", "s_waitcnt lgkmcnt(0)"]
        body += ["v_fmac_f32 v1, s8, v1"] * 16
    body.append("s_endpgm")
    mem = Memory()
    buf = mem.alloc(64 * 32, align=256)
    asm = "\n".join(body) + "\n"
    one = cycles(traced(asm, block=256, mem=mem, kernarg=buf))         # 1 wave per SIMD
    three = cycles(traced(asm, block=768, mem=mem, kernarg=buf))       # 3 waves per SIMD
    # three times the work in much less than three times the time
    assert three.cycles < 2.0 * one.cycles
    assert three.breakdown["valu"] / sum(three.breakdown.values()) > \
        one.breakdown["valu"] / sum(one.breakdown.values())




def _modeled(m, n, k, board="mi60", **opts):
    import vlpc
    from vlpc.runtime.emulator.device import EmulatorDevice

    mod = vlpc.compile(seed_source(m, n, k), **opts)
    ck = mod.kernel()
    dev = EmulatorDevice(gpu=board, timing_only=True)
    a, b, c = dev.alloc(m * k * 4), dev.alloc(n * k * 4), dev.alloc(m * n * 4)
    st = ck.execute(dev, mod.code_object, [a, b, c, m, n, k, k, k, n, 1.0, 0.0], m, n, k)
    return st


def test_split_plan_time_is_the_sum_of_its_kernels():
    import vlpc
    from vlpc.runtime.emulator.device import EmulatorDevice

    m, n, k = 64, 256, 512
    mod = vlpc.compile(seed_source(m, n, k), split_k=2, split_mode="workspace")
    ck = mod.kernel()
    steps = ck.plan(m, n, k)
    assert len(steps) == 2
    dev = EmulatorDevice(gpu="mi60")
    a, b, c = dev.alloc(m * k * 4), dev.alloc(n * k * 4), dev.alloc(m * n * 4)
    st = ck.execute(dev, mod.code_object, [a, b, c, m, n, k, k, k, n, 1.0, 0.0], m, n, k)
    assert len(st.timing.kernels) == 2
    assert st.timing.time_us == pytest.approx(sum(p.time_us for p in _parts(st)), rel=1e-9)
    assert st.timing.time_us > 2 * BOARD.timing.launch_overhead_us


def _parts(st):
    # the combined report keeps the per-kernel reports it summed
    return st.timing.parts


def test_clock_scales_engine_bound_time():
    body = "v_mov_b32 v1, 1.0\n" + "v_fmac_f32 v1, v1, v1\n" * 100 + "s_endpgm\n"
    tr = traced(body)
    from vlpc.runtime.timing import gpu

    res = gpu.Residency(1, 1, 1, "")
    fast = gpu.model_kernel(tr, B0.at(engine_clock_mhz=1700), res)
    slow = gpu.model_kernel(tr, B0.at(engine_clock_mhz=1100), res)
    assert fast.cycles == slow.cycles  # no memory: the same cycles
    assert (slow.time_us - P.launch_overhead_us) == pytest.approx(
        (fast.time_us - P.launch_overhead_us) * 1700 / 1100, rel=1e-9)


def test_unknown_board_is_a_clear_error():
    from vlpc.errors import DeviceError
    from vlpc.runtime.selection import get_device

    with pytest.raises(DeviceError, match="unknown board 'mi70'"):
        get_device("emulator", gpu="mi70")


def test_every_timing_parameter_has_a_source():
    from dataclasses import fields

    from vlpc.targets import TIMING_SOURCES, TimingParams

    names = {f.name for f in fields(TimingParams)}
    assert names == set(TIMING_SOURCES)
    assert all(len(TIMING_SOURCES[n].strip()) > 10 for n in names)
    # a latency that is not in engine cycles says so in its name (the model converts ns and us)
    for n in names:
        if "latency" in n or n.endswith("_cycles"):
            assert n.endswith(("_cycles", "_ns", "_us")), n


def test_line_rule_waits_in_every_round_and_draws_per_line():
    # the calibrated "line" rule: a refilled slot waits for sharers' fills like the first
    # resident set, and the same 20 copies as above meet misses line by line (no copy is
    # all-or-nothing); an unknown rule is refused by name
    n = 8
    mem = Memory()
    buf = mem.alloc(64 * n * 2, align=256)
    tr = traced(_smem_chain(n, 64), mem=mem, kernarg=buf)
    r = cycles(tr, wgs=(0, 0), resident=1, l2_miss=0.0, l2_shared_fill=1.0)
    assert r.counters["l2_shared_fills"] == 2 * n
    assert r.wg_finish[1] - r.wg_finish[0] == pytest.approx(r.wg_finish[0], abs=n * 8 + 16)
    with pytest.raises(ValueError, match="l2_miss_rule"):
        cycles(tr, board=BOARD.at(timing=replace(P, l2_miss_rule="lines")))


@pytest.mark.parametrize("rule", ["line", "group"])
def test_modeled_time_between_clock_bound_and_clock_free(rule):
    # Every modeled cost is engine cycles (x 1/clock) or nanoseconds (fixed), so lowering the
    # clock from f_hi to f_lo can slow the kernel by at most f_hi / f_lo and never speed it up.
    # A miss rule whose draws depend on the clock (e.g. a window in engine cycles) broke this.
    from vlpc.runtime.timing import gpu

    st = _modeled(1024, 1024, 128, schedule="seed", split_k=1)
    t = st.timing
    board = BOARD.at(timing=replace(BOARD.timing, l2_miss_rule=rule))
    res = gpu.Residency(t.wgs_per_cu, st.trace.waves_per_wg, 0, "")
    clocks = (1700, 1500, 1300, 1100)
    us = {f: gpu.model_kernel(st.trace, board.at(engine_clock_mhz=f), res, l2_miss=t.l2_miss).time_us
          - board.timing.launch_overhead_us for f in clocks}
    for hi, lo in zip(clocks, clocks[1:]):
        assert us[hi] <= us[lo] <= us[hi] * hi / lo * (1 + 1e-9), (hi, lo, us)
