"""The timing model's memory system (runtime/timing/cu.py: L2 by address, HBM channels and
page activations; vlpc/targets/timing.py TimingParams): microkernels whose modeled traffic and
time follow from the model's stated rules, and properties that hold whatever the
calibration (dword streaming never faster than dwordx4, a faster memory clock never
slows a kernel, an L2-resident working set reaches HBM once).

Expected values are derived from the rules (bytes / HBM share, one page activation per
DRAM page an instruction's misses open, a set-associative LRU L2), not read back."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from vlpc.runtime.emulator.memory import Memory
from vlpc.runtime.emulator.testing import run_program
from vlpc.runtime.timing import TraceRequest, gpu
from vlpc.runtime.timing.cu import simulate_cu
from vlpc.targets import get_board

BOARD = get_board("mi50")
P = replace(BOARD.timing, long_instruction_extra_cycles=0.0, branch_taken_extra_cycles=0)
B0 = BOARD.at(timing=P)


def _stream_kernel(waves: int, loads: int, width: int, passes: int = 1, span: int | None = None,
                   cus: int = 1):
    """``waves`` one-wave workgroups of CU 0 (ids ``0, cus, 2 cus, ...`` of a grid of
    ``waves x cus``: breadth-first dispatch puts them on CU 0); each wave reads ``loads`` consecutive 64-lane loads of
    ``width`` bytes per lane (``global_load_dword`` / ``_dwordx2`` / ``_dwordx4``), its own
    ``64 x width x loads`` bytes (``span``: the bytes one wave's block covers; default its
    own), ``passes`` times.  Returns (trace, memory, bytes one pass of all waves reads)."""
    mem = Memory()
    per_wave = 64 * width * loads
    span = per_wave if span is None else span
    buf = mem.alloc(waves * cus * max(span, per_wave) + 4096, align=4096)
    op = {4: "global_load_dword", 8: "global_load_dwordx2", 16: "global_load_dwordx4"}[width]
    regs = width // 4
    body = ["s_load_dwordx2 s[4:5], s[0:1], 0x0", "s_waitcnt lgkmcnt(0)",
            f"v_lshlrev_b32 v1, {int(np.log2(width))}, v0",
            f"s_mul_i32 s6, s2, {span}",
            "v_add_u32 v1, s6, v1"]
    for _ in range(passes):
        for i in range(loads):
            dst = 10 + (i % 8) * regs
            vr = f"v{dst}" if regs == 1 else f"v[{dst}:{dst + regs - 1}]"
            body.append(f"v_add_u32 v2, {i * 64 * width}, v1")
            body.append(f"{op} {vr}, v2, s[4:5]")
        body.append("s_waitcnt vmcnt(0)")
    body.append("s_endpgm")
    kernarg = mem.alloc(64, align=64)
    mem.write(kernarg, np.array([buf], np.uint64).view(np.uint8))
    ids = tuple(range(0, waves * cus, cus))
    req = TraceRequest(ids, ids)
    _, st = run_program("\n".join(body) + "\n", mem, grid=(waves * cus, 1, 1), block=(64, 1, 1),
                        kernarg=kernarg, trace=req)
    return st.trace, waves * per_wave


def _streamed(width: int, board=B0, waves: int = 8, loads: int = 32, active: int = 60):
    tr, nbytes = _stream_kernel(waves, loads * 4 // width, width, cus=active)
    share = board.hbm_data_bytes_per_second / (board.engine_clock_mhz * 1e6) / active
    r = simulate_cu(tr, list(tr.traced), board, l2_miss=1.0, hbm_share_bytes_per_cycle=share,
                    active_cus=active)
    return r, nbytes, share


def test_streaming_dwordx4_at_the_hbm_ceiling():
    r, nbytes, share = _streamed(16)
    lines = nbytes // P.line_bytes
    # every line is streamed (read once, by no other workgroup): one HBM fetch each
    assert r.counters["l2_misses"] - r.counters["scalar_misses"] == lines
    # a wave's dwordx4 covers 1 KiB: one DRAM page (1 KiB) activation per instruction
    pages = r.counters["hbm_activations"] - r.counters["scalar_misses"]
    assert pages == lines * P.line_bytes // 1024
    ghz = B0.engine_clock_mhz / 1000
    per_page = P.hbm_activate_ns * ghz * 60 / P.hbm_channels
    limit = lines * P.line_bytes / share + pages * per_page
    hbm = P.hbm_latency_ns * ghz
    assert limit <= r.cycles <= limit + P.l2_hit_cycles + P.l1_hit_cycles + 2 * hbm + 500


def test_the_steady_streaming_rates_are_the_measured_large_buffer_rows():
    # hbm.stream.dwordx4 867-873 GB/s and hbm.stream.dword 814 GB/s (MI50, "whole GPU, large
    # buffer": benchmarks/microbench/measurements.csv) are steady rates: the model's own, with
    # no launch, ramp or drain (one page activation per KiB or per 256 B), must be them, so
    # that no read, however long, models above the measured 873 GB/s
    b = get_board("mi50")
    t = b.timing
    act = t.hbm_activate_ns * 1e-9 / t.hbm_channels
    assert b.streaming_ceiling_bytes_per_second == pytest.approx(1024 / (1024 / b.hbm_data_bytes_per_second + act))
    assert 867e9 <= b.streaming_ceiling_bytes_per_second <= 873e9
    assert 256 / (256 / b.hbm_data_bytes_per_second + act) == pytest.approx(814e9, rel=2e-3)


def test_dword_streaming_never_faster_than_dwordx4():
    x4, n4, _ = _streamed(16)
    x2, n2, _ = _streamed(8)
    x1, n1, _ = _streamed(4)
    assert n4 == n2 == n1
    # the same bytes: narrower loads open more DRAM pages per byte, never fewer
    assert x1.counters["hbm_activations"] > x2.counters["hbm_activations"] > x4.counters["hbm_activations"]
    assert x1.cycles >= x2.cycles >= x4.cycles


@pytest.mark.parametrize("width", [4, 16])
def test_raising_the_memory_clock_never_slows_a_kernel(width):
    tr, _ = _stream_kernel(8, 16 if width == 4 else 4, width, cus=B0.compute_units)
    res = gpu.Residency(8, 1, 8, "test")
    times = [gpu.model_kernel(tr, B0.at(memory_clock_mhz=f), res).time_us for f in (500, 800, 1000, 1200)]
    assert all(a >= b for a, b in zip(times, times[1:]))
    assert times[0] > times[-1]  # a streaming kernel is memory-bound: it does speed up


def test_an_l2_resident_working_set_reaches_hbm_once():
    # 8 waves read their own 4 KiB 4 times (32 KiB in all: more than the 16 KiB L1, far
    # less than this CU's share of the L2): every line comes from HBM once
    tr, nbytes = _stream_kernel(8, 4, 16, passes=4)
    r = simulate_cu(tr, list(range(8)), B0, l2_miss=1.0, hbm_share_bytes_per_cycle=1.0, active_cus=1)
    assert r.counters["l2_misses"] - r.counters["scalar_misses"] == nbytes // P.line_bytes
    assert r.counters["hbm_bytes"] == (r.counters["l2_misses"]) * P.line_bytes


def _strided_rows(monkeypatch=None):
    """24 one-wave workgroups on CU 0 each read their own 1 KiB row 3 times, the rows 16 KiB
    (256 lines) apart: 384 lines, 24 KiB (more than the 16 KiB L1), a tenth of this CU's L2
    share at 16 busy CUs (4 MiB / 16 = 4,096 lines, 256 sets of 16 ways)."""
    tr, nbytes = _stream_kernel(24, 1, 16, passes=3, span=16384, cus=16)
    r = simulate_cu(tr, list(tr.traced), B0, l2_miss=1.0, hbm_share_bytes_per_cycle=1.0, active_cus=16)
    return r, nbytes


def test_power_of_two_strided_rows_that_fit_the_l2_share_are_not_evicted():
    r, nbytes = _strided_rows()
    # the rows fit the share many times over: every line comes from HBM once
    assert r.counters["l2_misses"] - r.counters["scalar_misses"] == nbytes // P.line_bytes


def test_a_plain_modulo_set_index_would_evict_the_strided_rows(monkeypatch):
    # the discriminating case: with set = line mod sets the 24 rows, 256 lines (= sets) apart,
    # all fall in the same 16 sets, 24 lines to a 16-way set, and LRU evicts each before its reuse
    from vlpc.runtime.timing import cu

    monkeypatch.setattr(cu, "l2_set_index", lambda line, sets: line % sets)
    r, nbytes = _strided_rows()
    assert r.counters["l2_misses"] - r.counters["scalar_misses"] > 2 * nbytes // P.line_bytes


def test_the_hashed_set_index_fills_every_set_once_per_block_of_consecutive_lines():
    from vlpc.runtime.timing.cu import l2_set_index

    for sets in (640, 256, 1000):
        for block in (0, 1, 7, 1 << 20):
            got = sorted(l2_set_index(block * sets + i, sets) for i in range(sets))
            assert got == list(range(sets))
    # rows a power of two apart (a multiple of the set count) do not share one set
    assert len({l2_set_index(r * 256, 256) for r in range(64)}) > 32


def test_a_reused_tile_hits_l2_and_streamed_data_misses():
    # two workgroups of the first round read the same 4 KiB tile (span 0: the same
    # addresses): on one CU the second hits what the first fetched; on two CUs each line
    # is fetched by one of its two sharers and the other waits for that fill
    tr, _ = _stream_kernel(2, 4, 16, span=0)
    sharers_on_other_cus = simulate_cu(tr, [0], B0, l2_miss=1.0, hbm_share_bytes_per_cycle=1.0, active_cus=2,
                                       l2_shared_fill=1.0)
    both_here = simulate_cu(tr, [0, 1], B0, l2_miss=1.0, hbm_share_bytes_per_cycle=1.0, active_cus=1)
    lines = 4 * 64 * 16 // P.line_bytes
    # on one CU: the second reader hits the first one's lines in L2 (or L1)
    assert both_here.counters["l2_misses"] - both_here.counters["scalar_misses"] == lines
    # workgroup 1 on another CU: this CU fetches a line for 1 of its 2 sharers
    fetched = sharers_on_other_cus.counters["l2_misses"] - sharers_on_other_cus.counters["scalar_misses"]
    assert fetched == pytest.approx(lines / 2, abs=2)
    # the others: the sharer's fill is in flight (l2_shared_fill = 1): no HBM bytes of ours
    assert sharers_on_other_cus.counters["l2_shared_fills"] + fetched == lines


def test_boards_at_stock_clocks_and_the_seed_condition():
    from vlpc.runtime import get_device
    from vlpc.targets import SEED_MEMORY_CLOCK_MHZ, seed_board

    for name, engine in (("mi60", 1800.0), ("mi50", 1725.0)):
        b = get_board(name)
        assert (b.engine_clock_mhz, b.memory_clock_mhz) == (engine, 1000.0)
        assert b.hbm_bytes_per_second == 4096 * 2 * 1000e6 / 8  # 1,024 GB/s pin rate
    seed = seed_board(1500)
    assert (seed.name, seed.engine_clock_mhz, seed.memory_clock_mhz) == ("mi60", 1500.0, SEED_MEMORY_CLOCK_MHZ)
    dev = get_device("emulator", gpu="mi50", memory_clock_mhz=800)
    assert dev.board.memory_clock_mhz == 800 and dev.board.hbm_bytes_per_second == 819.2e9


def test_memory_clock_option_bad_value_is_one_line(capsys):
    from pathlib import Path

    from vlpc.cli import main

    dyn = str(Path(__file__).resolve().parents[2] / "examples" / "sgemm_dynamic.mlir")
    assert main(["bench", dyn, "--m", "64", "--n", "64", "--k", "64", "--memory-clock", "50"]) == 1
    err = capsys.readouterr().err
    assert "--memory-clock 50: memory clock 50.0 MHz is outside 100..3000 MHz" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_sorted_unique_is_numpys_unique():
    """runtime/timing/trace.py sorted_unique: the sorted distinct values, as np.unique gives."""
    from vlpc.runtime.timing.trace import sorted_unique

    rng = np.random.default_rng(3)
    for a in (np.zeros(0, np.int64), np.array([5], np.int64), rng.integers(0, 50, 1000),
              rng.integers(0, 1 << 40, (30, 7)).astype(np.int64)):
        got = sorted_unique(a)
        assert got.dtype == a.dtype and np.array_equal(got, np.unique(a))


# -- the same properties over random small kernels (hypothesis) ----------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

EXAMPLES = int(__import__("os").environ.get("VLPC_PROPERTY_EXAMPLES", "6"))
_PROP = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow])


@_PROP
@given(waves=st.integers(4, 8), kib=st.sampled_from([2, 4, 8]), active=st.sampled_from([30, 60]))
def test_property_dword_streaming_never_faster_than_dwordx4(waves, kib, active):
    # streaming: the same bytes per wave (kib KiB) read by dword, dwordx2 and dwordx4 loads on
    # CU 0 of `active` busy CUs, bound by its share of HBM.  (Latency-bound, a few waves on one
    # CU or one wave on many, dword models up to 12 cycles faster than dwordx4: the last
    # dwordx4 returns 1 KiB to its wave, a dword 256 B; not streaming, not asserted.)
    got = []
    for width in (4, 8, 16):
        tr, nbytes = _stream_kernel(waves, kib * 1024 // (64 * width), width, cus=active)
        share = B0.hbm_data_bytes_per_second / (B0.engine_clock_mhz * 1e6) / active
        r = simulate_cu(tr, list(tr.traced), B0, l2_miss=1.0, hbm_share_bytes_per_cycle=share, active_cus=active)
        got.append((nbytes, r.cycles))
    assert got[0][0] == got[1][0] == got[2][0] == waves * kib * 1024
    # dword never faster than the wider loads (dwordx2 against dwordx4 is not ordered when the
    # kernel is latency-bound: a few cycles either way, not asserted)
    assert got[0][1] >= got[1][1] and got[0][1] >= got[2][1]


@_PROP
@given(width=st.sampled_from([4, 16]), waves=st.integers(1, 8),
       clocks=st.lists(st.sampled_from([400, 600, 800, 945, 1000, 1200]), min_size=2, max_size=2, unique=True))
def test_property_raising_the_memory_clock_never_slows_a_kernel(width, waves, clocks):
    lo, hi = sorted(clocks)
    tr, _ = _stream_kernel(waves, 1024 // (64 * width) * 4, width, cus=B0.compute_units)
    res = gpu.Residency(8, 1, 8, "test")
    slow = gpu.model_kernel(tr, B0.at(memory_clock_mhz=lo), res).time_us
    fast = gpu.model_kernel(tr, B0.at(memory_clock_mhz=hi), res).time_us
    assert fast <= slow


@_PROP
@given(waves=st.integers(1, 8), loads=st.integers(1, 4), passes=st.integers(2, 4))
def test_property_an_l2_resident_working_set_never_reaches_hbm_twice(waves, loads, passes):
    # each wave reads its own loads KiB (dwordx4) passes times: at most 32 KiB in all, far less
    # than one CU's share of the L2, so every line comes from HBM exactly once
    tr, nbytes = _stream_kernel(waves, loads, 16, passes=passes)
    r = simulate_cu(tr, list(range(waves)), B0, l2_miss=1.0, hbm_share_bytes_per_cycle=1.0, active_cus=1)
    assert r.counters["l2_misses"] - r.counters["scalar_misses"] == nbytes // P.line_bytes
    assert r.counters["hbm_bytes"] == r.counters["l2_misses"] * P.line_bytes


# -- no kernel whose data is read once models above the streaming ceiling --------------------------


def _row_per_wave_gemv(rows: int, stride: int, board=B0, resident: int = 8, contiguous: bool = False):
    """A GEMV's weight traffic: ``rows`` one-wave workgroups, each reading its own weight row
    of ``64 x stride`` bytes once, lane ``l`` the ``stride`` bytes at ``l x stride`` (16 bytes per
    ``global_load_dwordx4``, ``stride / 16`` of them: the lane-along-K GEMVs' pattern,
    passes/isel/quant_lane.py, whose Q8_0 wave instruction spans 64 x 68 bytes), or
    (``contiguous``) load ``i`` the row's ``i``-th KiB (passes/isel/gemv.py's f16/int8 rows).
    Only CU 0's first ``resident`` workgroups are traced and the first round's footprints
    recorded (a timing-only launch); returns (report, weight bytes)."""
    C = board.compute_units
    first_round = min(rows, C * resident)
    mem = Memory()
    span = 64 * stride
    buf = mem.alloc(first_round * span + 4096, align=4096)
    body = ["s_load_dwordx2 s[4:5], s[0:1], 0x0", "s_waitcnt lgkmcnt(0)",
            f"v_mul_u32_u24 v1, {16 if contiguous else stride}, v0", f"s_mul_i32 s6, s2, {span}",
            "v_add_u32 v1, s6, v1"]
    for i in range(stride // 16):
        body += [f"v_add_u32 v2, {1024 * i if contiguous else 16 * i}, v1", f"global_load_dwordx4 v[{10 + 4 * (i % 8)}:{13 + 4 * (i % 8)}], v2, s[4:5]"]
    body += ["s_waitcnt vmcnt(0)", "s_endpgm"]
    kernarg = mem.alloc(64, align=64)
    mem.write(kernarg, np.array([buf], np.uint64).view(np.uint8))
    traced = tuple(range(0, first_round, C))[:resident]
    req = TraceRequest(traced, tuple(range(first_round)), only=True)
    _, st = run_program("\n".join(body) + "\n", mem, grid=(rows, 1, 1), block=(64, 1, 1),
                        kernarg=kernarg, trace=req)
    rep = gpu.model_kernel(st.trace, board, gpu.Residency(resident, 1, resident // 4 or 1, "test"))
    return rep, rows * span


@pytest.mark.parametrize("stride,contiguous,resident",
                         [(16, False, 8), (32, False, 8), (64, False, 8), (128, False, 8), (128, True, 32)])
@pytest.mark.parametrize("per_cu", [8, 64, 1024])
def test_a_gemv_reading_its_weights_once_never_exceeds_the_streaming_ceiling(stride, contiguous, resident, per_cu):
    # whatever the number of rows N (per_cu x 60 CUs: one round to the steady state, which the
    # model extrapolates), however wide one wave instruction's span (1 to 8 KiB) and however
    # many workgroups are resident, the weight bytes over the modeled kernel time stay at or
    # below Board.streaming_ceiling_bytes_per_second
    rep, nbytes = _row_per_wave_gemv(per_cu * B0.compute_units, stride, resident=resident, contiguous=contiguous)
    kernel_s = (rep.time_us - rep.breakdown_us["launch"]) * 1e-6
    assert rep.hbm_bytes >= nbytes  # every weight line reaches HBM (read once: never an L2 hit)
    assert nbytes / kernel_s <= B0.streaming_ceiling_bytes_per_second * (1 + 1e-9)


def test_the_int8_decode_gemv_of_many_rows_never_exceeds_the_streaming_ceiling():
    # passes/isel/gemv.py's lane GEMV, y = x W^T with 4 int8 rows of x and N = 61,440 weight
    # rows of 4 KiB: 1,024 workgroups per CU, the model extrapolates past 64 of them.  Before
    # the extrapolated interval was bounded by the CU's HBM share (runtime/timing/gpu.py), its
    # window made this launch 100.4 % of the modeled ceiling
    import vlpc
    from vlpc.runtime import get_device, load_code_object

    m, n, k = 4, 61440, 4096
    t = f"memref<{m}x{k}xi8>, memref<{n}x{k}xi8>, memref<{m}x{n}xi32>, i32, i32"
    src = (f"func.func @g(%a: memref<{m}x{k}xi8>, %b: memref<{n}x{k}xi8>, %c: memref<{m}x{n}xi32>, "
           f"%alpha: i32, %beta: i32) {{\n  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"}} : {t}\n"
           "  func.return\n}\n")
    kern = vlpc.compile(src).kernel("g")
    assert kern.launch_info["macro_n"] < 64  # the lane GEMV (one weight row per wave)
    dev = get_device("emulator", gpu="mi50", timing_only=True)
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    w = np.tile(rng.integers(-128, 128, (64, k)).astype(np.int8), (n // 64, 1))  # values do not change the work
    c = np.zeros((m, n), np.int32)
    bufs = [dev.upload(x) for x in (a, w, c)]
    st = kern.execute(dev, load_code_object(kern.code_object),
                      [*bufs, *(np.int32(v) for v in (m, n, k, k, k, n)), np.int32(1), np.int32(0)], m, n, k, n)
    tm = st.timing
    assert tm.hbm_bytes >= w.nbytes
    kernel_s = (tm.time_us - tm.breakdown_us["launch"]) * 1e-6
    assert w.nbytes / kernel_s <= dev.board.streaming_ceiling_bytes_per_second
