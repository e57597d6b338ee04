"""The energy model (runtime/timing/energy.py): its arithmetic on a hand-counted microkernel,
the V/f scaling, timing-only scaling, and monotonic properties of vlpc's kernels.

Expected counts come from the ISA's semantics counted by hand (a wave of 64 lanes, the
emulator's definition of a forwarded read: a VGPR the wave's previous VALU instruction
wrote); expected energies from those counts times the coefficients.  The calibration's
figures (*An Alternative SGEMM on VEGA* section 3.2) are printed by benchmarks/energy_calibration.py, not
asserted here.  The MI60 runs at 1700 MHz here, the coefficients' reference clock (where
(V / V_ref)^2 = 1 and the idle power is the measured 42 W), not at its stock 1800 MHz.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from vlpc.runtime.timing import Residency, TraceRequest, model_kernel
from vlpc.runtime.timing.energy import (COMPONENTS, EnergyError, EnergyEvents, estimate, events_from_stats,
                                        idle_watts, launch_energy)
from vlpc.benchmarking.seed import seed_source
from vlpc.targets import ENERGY, ENERGY_SOURCES, EnergyParams, get_board

MICRO = """
v_mov_b32 v1, 1.0
v_mov_b32 v2, 2.0
s_mov_b32 s4, 3.0
v_fma_f32 v3, v1, s4, v2
v_fma_f32 v3, v1, s4, v3
s_endpgm
"""

# Per wave (64 lanes), by hand:
#   VALU: 4 instructions x 64 lanes; 2 FMAs (128 f32 FMA lanes), 2 moves (128 other lanes)
#   VGPR reads: each FMA reads 2 VGPRs x 64 lanes = 256; forwarded: v2 in the first FMA (the
#   previous VALU, v_mov v2, wrote it) and v3 in the second: 128; not forwarded: 128
#   VGPR writes: 4 x 64 = 256; SGPR reads: s4 by each FMA = 2; SGPR writes: s_mov = 1
#   instructions: 6 (4 VALU, 1 SALU, s_endpgm); no memory, LDS or barrier.
HAND = dict(vgpr_reads=128, forwarded_reads=128, vgpr_writes=256, sgpr_reads=2, sgpr_writes=1,
            fma_f32_lanes=128, fma_f64_lanes=0, valu_other_lanes=128, instructions=6, salu=1, smem=0,
            scalar_cache_bytes=0, l1_bytes=0, l2_bytes=0, hbm_bytes=0, lds_bytes=0, barriers=0,
            dot2_f32_f16_lanes=0, dot4_i32_i8_lanes=0, pk_fma_f16_lanes=0)

#: Round, distinct coefficients so every term is visible in the sum.
PARAMS = replace(ENERGY, vgpr_read_pj=2.0, vgpr_write_pj=3.0, forwarded_read_pj=0.5, sgpr_read_pj=7.0,
                 sgpr_write_pj=11.0, fma_f32_pj=13.0, fma_f64_pj=0.0, valu_other_pj=17.0,
                 valu_lane_overhead_pj=19.0, issue_pj=23.0, salu_pj=29.0, smem_access_pj=31.0)


def _vega20_voltage(mhz: float) -> float:
    """The assumed V/f line through (808 MHz, 0.716 V) and (1801 MHz, 1.081 V)."""
    return 0.716 + (mhz - 808.0) * (1.081 - 0.716) / (1801.0 - 808.0)


@pytest.fixture(scope="module")
def micro():
    """The microkernel on a grid of 2 workgroups, only workgroup 0 executed (timing-only)."""
    from vlpc.runtime.emulator.testing import run_program

    _mem, st = run_program(MICRO, grid=(2, 1, 1), trace=TraceRequest((0,), (), True))
    rep = model_kernel(st.trace, get_board("mi60", clock_mhz=1700), Residency(1, 1, 1, ""))
    return st, rep


def test_micro_counts_scaled_to_the_grid(micro):
    st, rep = micro
    assert st.workgroups == 1 and rep.workgroups == 2
    ev = events_from_stats(st, rep)
    assert ev.as_dict() == {k: 2.0 * v for k, v in HAND.items()}  # 1 of 2 workgroups executed


def test_micro_energy_arithmetic(micro):
    st, rep = micro
    board = get_board("mi60", clock_mhz=1700)
    e = estimate(events_from_stats(st, rep), board, rep.time_us, params=PARAMS, flops=1000.0)
    per_wg_pj = {"vgpr": 128 * 2.0 + 256 * 3.0, "forwarded": 128 * 0.5, "sgpr": 2 * 7.0 + 1 * 11.0,
                 "fma": 128 * 13.0, "valu_other": 128 * 17.0, "valu_overhead": 256 * 19.0, "issue": 6 * 23.0,
                 "salu": 29.0}
    for c in COMPONENTS:
        want = 2 * per_wg_pj.get(c, 0.0) * 1e-12
        if c == "static":
            want = 42.0 * rep.time_us * 1e-6  # the seed's section 3.2: MI60 idle 42 W at 1700 MHz
        assert e.joules[c] == pytest.approx(want, rel=1e-12, abs=1e-18), c
    total = 2 * sum(per_wg_pj.values()) * 1e-12 + 42.0 * rep.time_us * 1e-6
    assert e.total_joules == pytest.approx(total, rel=1e-12)
    assert e.watts == pytest.approx(total / (rep.time_us * 1e-6), rel=1e-12)
    assert e.pj_per_flop == pytest.approx(total / 1000.0 * 1e12, rel=1e-12)
    assert e.gflops_per_watt == pytest.approx(1000.0 / total / 1e9, rel=1e-12)


def test_voltage_scaling_and_idle_prediction(micro):
    st, rep = micro
    ev = events_from_stats(st, rep)
    ev.hbm_bytes = 1000.0
    b17, b15 = get_board("mi60", clock_mhz=1700), get_board("mi60", clock_mhz=1500)
    e17 = estimate(ev, b17, 10.0, params=PARAMS)
    e15 = estimate(ev, b15, 10.0, params=PARAMS)
    s = (_vega20_voltage(1500) / _vega20_voltage(1700)) ** 2
    for c in COMPONENTS:
        if c in ("hbm", "static"):
            continue
        assert e15.joules[c] == pytest.approx(e17.joules[c] * s, rel=1e-9), c
    assert e15.joules["hbm"] == e17.joules["hbm"] == pytest.approx(1000.0 * PARAMS.hbm_pj_per_byte * 1e-12)
    assert idle_watts(b17) == pytest.approx(42.0)
    assert idle_watts(b15) == pytest.approx(42.0 * s)
    assert e15.voltage == pytest.approx(_vega20_voltage(1500))


def test_power_above_the_board_limit_is_flagged(micro):
    """MI60's typical board power is 300 W (AMD spec sheet): the same events in a time short
    enough to average more than that are flagged; in a longer time they are not."""
    st, rep = micro
    ev = events_from_stats(st, rep)
    board = get_board("mi60", clock_mhz=1700)
    assert board.power_limit_watts == 300.0
    dyn = estimate(ev, board, 1.0, params=PARAMS).dynamic_joules
    # average power = dynamic / t + idle (42 W): above 300 W iff t < dynamic / 258 W
    t_edge_us = dyn / (300.0 - 42.0) * 1e6
    hot = estimate(ev, board, 0.5 * t_edge_us, params=PARAMS)
    cool = estimate(ev, board, 2.0 * t_edge_us, params=PARAMS)
    assert hot.watts > 300.0 and hot.over_power_limit and "ABOVE" in hot.summary()
    assert cool.watts < 300.0 and not cool.over_power_limit and "ABOVE" not in cool.summary()
    unlimited = estimate(ev, replace(board, power_limit_watts=None), 0.5 * t_edge_us, params=PARAMS)
    assert not unlimited.over_power_limit


MEMORY = """
s_load_dwordx2 s[4:5], s[0:1], 0x0
s_waitcnt lgkmcnt(0)
v_lshlrev_b32 v1, 2, v0
global_load_dword v2, v1, s[4:5]
s_waitcnt vmcnt(0)
global_store_dword v1, v2, s[4:5] offset:256
s_endpgm
"""


def test_memory_events_from_cold_caches():
    """One SMEM load of 8 bytes (one 64-byte line), 64 lanes x 4 bytes loaded (4 lines) and
    stored; caches start cold and the only footprint is the executed workgroup's, so every
    line misses L1 / the scalar cache and L2.  Per workgroup: scalar cache 8 B, L1 256 + 256
    B, L2 (4 + 1) x 64 + 256 stored, HBM the same; 2 workgroups, 1 executed."""
    from vlpc.runtime.emulator.memory import Memory
    from vlpc.runtime.emulator.testing import run_program

    mem = Memory()
    buf = mem.alloc(512, align=256, tag="buf")
    mem.write(buf, np.arange(128, dtype=np.float32))
    karg = mem.alloc(64, tag="kernargs")
    mem.write(karg, np.array([buf], np.uint64))
    mem, st = run_program(MEMORY, mem, kernarg=karg, grid=(2, 1, 1), trace=TraceRequest((0,), (0,), True))
    assert np.array_equal(mem.read(buf + 256, 256).view(np.float32), np.arange(64, dtype=np.float32))
    rep = model_kernel(st.trace, get_board("mi60", clock_mhz=1700), Residency(1, 1, 1, ""))
    ev = events_from_stats(st, rep)
    assert (ev.smem, ev.scalar_cache_bytes) == (2.0, 16.0)
    assert ev.l1_bytes == 2 * (256 + 256)
    assert ev.l2_bytes == 2 * (5 * 64 + 256)
    assert ev.hbm_bytes == 2 * (5 * 64 + 256)
    assert ev.valu_other_lanes == 2 * 64 and ev.fma_f32_lanes == 0
    e = estimate(ev, get_board("mi60", clock_mhz=1700), rep.time_us)
    assert e.joules["hbm"] == pytest.approx(ev.hbm_bytes * ENERGY.hbm_pj_per_byte * 1e-12)
    assert e.joules["l1"] == pytest.approx(ev.l1_bytes * ENERGY.l1_pj_per_byte * 1e-12)


def test_every_coefficient_has_a_source():
    names = {f for f in EnergyParams.__dataclass_fields__}
    assert names == set(ENERGY_SOURCES)
    calibrated = [k for k, v in ENERGY_SOURCES.items() if v.startswith("calibrated")]
    # at most two calibrated coefficients (VGPR read and write are one: equal by definition)
    assert set(calibrated) <= {"vgpr_read_pj", "vgpr_write_pj", "valu_lane_overhead_pj"}
    assert ENERGY.vgpr_read_pj == ENERGY.vgpr_write_pj


def test_no_timing_model_is_a_clear_error():
    from vlpc.runtime.emulator.testing import run_program

    _mem, st = run_program(MICRO)
    with pytest.raises(EnergyError, match="timing model"):
        launch_energy(st)


def test_negative_time_refused():
    with pytest.raises(EnergyError, match="positive"):
        estimate(EnergyEvents(), get_board("mi60", clock_mhz=1700), 0.0)


# -- vlpc's kernels: monotonic properties ----------------------------------------------------

M, N, K = 64, 256, 32




def _launch(**opts):
    """Run the kernel on the emulator with the MI60 timing model; verify C; return its LaunchStats."""
    import vlpc
    from vlpc.runtime.emulator.device import EmulatorDevice

    ck = vlpc.compile(seed_source(M, N, K), split_k=1, **opts)
    k = ck.kernel()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((N, K), dtype=np.float32)
    dev = EmulatorDevice(gpu="mi60")
    bufs = [dev.upload(a), dev.upload(b), dev.upload(np.full((M, N), np.nan, np.float32))]
    lc = k.launch(M, N, K)
    st = dev.launch(ck.code_object, k.name, grid=lc.grid, block=lc.block,
                    args=[*bufs, np.int32(M), np.int32(N), np.int32(K), np.int32(K), np.int32(K), np.int32(N),
                          np.float32(1.0), np.float32(0.0)])
    c = dev.download(bufs[2], np.float32, (M, N))
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.allclose(c, ref, rtol=1e-4, atol=1e-4)  # beta = 0 over a NaN C
    return st


def _energy(**opts):
    return launch_energy(_launch(**opts), flops=2.0 * M * N * K)


@pytest.fixture(scope="module")
def kernels():
    return {"sqc": _energy(schedule="seed"), "sqc-nofwd": _energy(schedule="seed", forwarding=False),
            "default-nofwd": _energy(forwarding=False), "default": _energy(), "lds": _energy(strategy="lds")}


@pytest.mark.parametrize("fwd, nofwd", [("sqc", "sqc-nofwd"), ("default", "default-nofwd")])
def test_removing_forwarding_never_lowers_energy(kernels, fwd, nofwd):
    a, b = kernels[fwd], kernels[nofwd]
    assert a.events.forwarded_reads > b.events.forwarded_reads
    assert a.events.fma_f32_lanes == b.events.fma_f32_lanes
    assert b.dynamic_joules > a.dynamic_joules
    # the difference is the register file: each read no longer forwarded costs a bank read
    moved = a.events.forwarded_reads - b.events.forwarded_reads
    want = moved * (ENERGY.vgpr_read_pj - ENERGY.forwarded_read_pj) * 1e-12 * ENERGY.scale(a.clock_mhz)
    got = (b.joules["vgpr"] + b.joules["forwarded"]) - (a.joules["vgpr"] + a.joules["forwarded"])
    assert got == pytest.approx(want, rel=1e-9)


def test_lds_energy_only_for_the_lds_strategy(kernels):
    assert kernels["lds"].joules["lds"] > 0
    assert kernels["lds"].events.barriers > 0 and kernels["lds"].joules["barrier"] > 0
    for name in ("sqc", "sqc-nofwd", "default"):
        assert kernels[name].joules["lds"] == 0.0
        assert kernels[name].joules["barrier"] == 0.0


def test_sqc_reads_fewer_vgprs_than_lds(kernels):
    """The seed's section 2.11 claim, in joules: sqc's register-file energy is below legacy's."""
    assert kernels["sqc"].joules["vgpr"] < kernels["lds"].joules["vgpr"]


def test_power_limited_clock_is_the_highest_within_the_limit():
    """PowerTune's clock (runtime/timing/energy.py power_limited): the modeled power there is within
    the limit, one resolution step higher it is not, and the kernel is slower than at the set clock."""
    from vlpc.runtime.timing import gpu
    from vlpc.runtime.timing.energy import power_limited

    st = _launch(strategy="lds")
    flops = 2.0 * M * N * K
    mi60 = get_board("mi60", clock_mhz=1700)
    at_set = launch_energy(st, mi60, flops=flops)
    assert power_limited(st, replace(mi60, power_limit_watts=at_set.watts * 1.01), flops=flops) is None
    limit = at_set.watts * 0.8
    board = replace(mi60, power_limit_watts=limit)
    r = power_limited(st, board, flops=flops, resolution_mhz=4.0)
    assert r is not None and r.at_set_clock.watts > limit
    assert min(f for f, _ in ENERGY.vf_curve) < r.clock_mhz < mi60.engine_clock_mhz
    assert r.energy.watts <= limit and r.energy.clock_mhz == r.clock_mhz
    assert r.energy.time_us > at_set.time_us
    up = board.at(engine_clock_mhz=r.clock_mhz + 4.0)
    tr = gpu.model_kernel(st.trace, up, Residency(st.timing.wgs_per_cu, st.trace.waves_per_wg, 0, ""),
                          l2_miss=st.timing.l2_miss_given)
    assert estimate(events_from_stats(st, tr), up, tr.time_us, flops=flops).watts > limit
    with pytest.raises(EnergyError, match="even at"):
        power_limited(st, replace(mi60, power_limit_watts=1.0), flops=flops)


def test_power_limited_retimes_under_the_launchs_l2_rule():
    """power_limited re-times each launch under the L2 rule of its own model: at the set clock
    the re-timed launch is the launch (time, HBM bytes and joules), here for 8 workgroups sharing
    A and B rows, where the "address" rule and the first round's miss probability differ; and a
    launch modeled with a given miss probability (``EmulatorDevice.l2_miss``) is re-timed with it."""
    import vlpc
    from vlpc.runtime.emulator.device import EmulatorDevice
    from vlpc.runtime.timing.energy import power_limited

    m, n, k = 256, 512, 32
    ck = vlpc.compile(seed_source(m, n, k), split_k=1, macro_tile=(64, 256))
    kern = ck.kernel()
    mi60 = get_board("mi60", clock_mhz=1700)
    assert mi60.timing.l2_miss_rule == "address"
    for given in (None, 0.5):
        dev = EmulatorDevice(gpu=mi60, timing_only=True)
        dev.l2_miss = given
        bufs = [dev.alloc(m * k * 4), dev.alloc(n * k * 4), dev.alloc(m * n * 4)]
        lc = kern.launch(m, n, k)
        st = dev.launch(ck.code_object, kern.name, grid=lc.grid, block=lc.block,
                        args=[*bufs, np.int32(m), np.int32(n), np.int32(k), np.int32(k), np.int32(k), np.int32(n),
                              np.float32(1.0), np.float32(0.0)])
        assert st.timing.l2_miss_given == given
        flops = 2.0 * m * n * k
        at_set = launch_energy(st, mi60, flops=flops)
        r = power_limited(st, replace(mi60, power_limit_watts=at_set.watts * 0.9), flops=flops)
        assert r is not None
        assert r.at_set_clock.time_us == pytest.approx(st.timing.time_us, rel=1e-12)
        assert r.at_set_clock.events.hbm_bytes == pytest.approx(at_set.events.hbm_bytes, rel=1e-12)
        assert r.at_set_clock.joules == pytest.approx(at_set.joules, rel=1e-12)
        if given is None:  # the recorded probability in place of the address rule: other HBM traffic
            res = Residency(st.timing.wgs_per_cu, st.trace.waves_per_wg, 0, "")
            other = model_kernel(st.trace, mi60, res, l2_miss=st.timing.l2_miss)
            assert other.hbm_bytes > 1.5 * st.timing.hbm_bytes


# -- the command line ------------------------------------------------------------------------


def test_report_energy_writes_table_csv_and_chart(tmp_path, capsys):
    import csv

    from vlpc.cli import main

    f = tmp_path / "g.mlir"
    f.write_text(seed_source(M, N, K))
    prefix = tmp_path / "out"
    assert main(["report", str(f), "--energy", "-o", str(prefix), "--schedule", "seed", "-q"]) == 0
    out = capsys.readouterr().out
    for label in ("energy per GEMM (mJ)", "average board power (W)", "pJ per FLOP", "GFLOP/s per W",
                  "LDS (pJ/FLOP)", "| figure | sqc | sqc, no forwarding | legacy (lds) |"):
        assert label in out
    rows = list(csv.DictReader(open(f"{prefix}.csv")))
    assert [r["variant"] for r in rows] == ["sqc", "sqc-nofwd", "lds"]
    by = {r["variant"]: r for r in rows}
    assert float(by["lds"]["joules_lds"]) > 0 and float(by["sqc"]["joules_lds"]) == 0
    for r in rows:  # the components add up to the total, and the figures agree with each other
        parts = sum(float(v) for k, v in r.items() if k.startswith("joules_"))
        assert parts == pytest.approx(float(r["joules"]), rel=1e-5)
        assert float(r["watts"]) == pytest.approx(float(r["joules"]) / (float(r["time_us"]) * 1e-6), rel=1e-4)
        assert float(r["pj_per_flop"]) == pytest.approx(float(r["joules"]) / (2 * M * N * K) * 1e12, rel=1e-4)
        assert float(r["flops"]) == 2 * M * N * K and r["batch"] == "0"
        assert r["figures"] == "modeled (vlpc timing and energy models), not measured"
    table = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
             for line in out.splitlines() if line.startswith("| ")}
    # the Markdown table and the CSV give the same figures (rounded in the table)
    assert table["pJ per FLOP"] == [f"{float(r['pj_per_flop']):.2f}" for r in rows]
    assert table["modeled time (us)"] == [f"{float(r['time_us']):,.1f}" for r in rows]
    assert table["energy per GEMM (mJ)"] == [f"{float(r['joules']) * 1e3:,.3f}" for r in rows]
    assert table["VGPR bank reads/writes (pJ/FLOP)"] == [
        f"{float(r['joules_vgpr']) / float(r['flops']) * 1e12:.3f}" for r in rows]
    svg = (tmp_path / "out.svg").read_text()
    assert svg.startswith("<?xml") and "pJ/FLOP" in svg
    # the kernel table gives a one-kernel plan's grid and modeled time too
    import vlpc

    grid = vlpc.compile(seed_source(M, N, K), strategy="lds").kernel().launch(M, N, K).grid
    assert f"| legacy (lds) | sgemm_seed (grid {'x'.join(map(str, grid))}, {float(by['lds']['time_us']):,.1f} us) |" in out


def test_report_energy_bad_clock_is_one_line(tmp_path, capsys):
    from vlpc.cli import main

    f = tmp_path / "g.mlir"
    f.write_text(seed_source(M, N, K))
    assert main(["report", str(f), "--energy", "--clock", "50", "-o", str(tmp_path / "o"), "-q"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["vlpc: --clock 50: engine clock 50.0 MHz is outside 100..3000 MHz"]


@pytest.mark.parametrize("clock, outside", [(3000, True), (700, True), (1100, False)])
def test_report_energy_says_when_the_clock_is_outside_the_vf_curve(tmp_path, capsys, clock, outside):
    """Past the V/f curve's points (808 and 1801 MHz, Vega 20's as amdgpu reports them) the voltage is
    extrapolated: the report and a warning say so, with the extrapolated voltage."""
    from vlpc.cli import main

    f = tmp_path / "g.mlir"
    f.write_text(seed_source(M, N, K))
    prefix = tmp_path / "o"
    assert main(["report", str(f), "--energy", "--gpu", "mi60", "--clock", str(clock), "-o", str(prefix), "-q"]) == 0
    cap = capsys.readouterr()
    volts = f"({_vega20_voltage(clock):.3f} V)"
    note = f"{clock} MHz is outside the mi60 V/f curve's 808..1801 MHz: the core voltage {volts} is extrapolated"
    assert (note in cap.out) == outside
    assert (note in (tmp_path / "o.md").read_text()) == outside
    warnings = [x for x in cap.err.splitlines() if x.startswith("vlpc: warning:")]
    assert warnings == ([f"vlpc: warning: --clock {clock}: " + note + " beyond its last point, and with it every "
                         "dynamic energy and the idle power, so these figures are outside the energy model's range"]
                        if outside else [])


def test_report_names_the_power_limited_clock():
    """A variant above the board's limit: the report's note says where the board would settle."""
    from vlpc.energy_report import EnergyComparison, EnergyRow
    from vlpc.runtime.timing.energy import EnergyReport, PowerLimited

    def rep(clock, joules, us):
        return EnergyReport(board="mi60", clock_mhz=clock, voltage=1.0, time_us=us, flops=1e9, idle_watts=42.0,
                            joules={c: (joules if c == "vgpr" else 0.0) for c in COMPONENTS}, power_limit_watts=300.0)

    hot, settled = rep(1700, 4e-3, 10.0), rep(1450, 3.5e-3, 12.0)  # 400 W, then 292 W
    assert hot.over_power_limit and not settled.over_power_limit
    row = EnergyRow("lds", "legacy (lds)", "k", 64, 64, 64, hot, PowerLimited(300.0, 1450.0, settled, hot))
    note = next(x for x in EnergyComparison([row]).savings_lines() if x.startswith("legacy (lds)"))
    assert "above the mi60 board's 300 W power limit" in note
    assert "would run at about 1450 MHz" in note and "292 W" in note


def test_a_plan_run_in_full_is_priced_as_its_launches():
    """docs/energy.md's Python route on a split-K plan: ``launch_energy(vlpc.run(...).stats)`` on an
    emulator with a board prices the merged statistics of the GEMM and its reduce kernel as the
    launches priced one by one and added (what ``vlpc report --energy`` does)."""
    import vlpc
    from vlpc.energy_report import record_launches
    from vlpc.runtime import get_device
    from vlpc.runtime.timing.energy import combine_energy

    dev = get_device("emulator", gpu="mi60")
    launches = record_launches(dev)
    r = vlpc.run(seed_source(M, N, K), device=dev, split_k=2)
    assert r.verified and [x.kernel for x in launches] == ["sgemm_seed", "sgemm_seed_reduce"]
    flops = 2.0 * M * N * K
    got = launch_energy(r.stats, flops=flops)
    want = combine_energy([launch_energy(x.stats) for x in launches], flops)
    assert got.time_us == pytest.approx(want.time_us, rel=1e-12)
    assert want.joules["l2"] > 0 and want.joules["hbm"] > 0
    for c in COMPONENTS:
        assert got.joules[c] == pytest.approx(want.joules[c], rel=1e-9, abs=1e-18), c
    # without flops, the operations are the FMA lanes run: the GEMM's 2 M N K plus the reduce kernel's
    assert launch_energy(r.stats).flops > flops
    # the power-limited clock re-times each launch's trace: the merged statistics keep none
    from vlpc.runtime.timing.energy import power_limited

    low = replace(get_board("mi60", clock_mhz=1700), power_limit_watts=want.watts * 0.9)
    with pytest.raises(EnergyError, match="record_launches"):
        power_limited(r.stats, low, flops=flops)
    assert power_limited([x.stats for x in launches], low, flops=flops).energy.watts <= want.watts * 0.9


def test_a_timing_only_plan_is_refused_naming_the_way_out():
    import vlpc
    from vlpc.runtime.emulator.device import EmulatorDevice

    # a grid larger than the workgroups the timing model traces: only some of them are executed
    r = vlpc.run(seed_source(4096, 4096, 32), device=EmulatorDevice(gpu="mi60", timing_only=True), split_k=2,
                 verify=False)
    assert r.stats.workgroups < r.stats.timing.workgroups and len(r.stats.timing.parts) == 2
    with pytest.raises(EnergyError, match="record_launches"):
        launch_energy(r.stats)


def test_progress_names_the_variant_running(tmp_path):
    """The bar's total grows as each variant starts, so its description says which one runs."""
    from vlpc.cli_support import Progress
    from vlpc.energy_report import build_comparison

    seen = []

    class Recorder(Progress):
        def add_total(self, workgroups):
            if workgroups:  # (the constructor's add_total(0) apart)
                seen.append((self.desc, int(workgroups)))
            super().add_total(workgroups)

    with Recorder(0, "vlpc --energy", quiet=True) as bar:
        rep = build_comparison(seed_source(M, N, K), "g.mlir", progress=bar, options={"split_k": 1})
    assert [r.variant for r in rep.rows] == ["sqc", "sqc-nofwd", "lds"]
    assert [d for d, _ in seen] == ["vlpc --energy: sqc (1/3)", "vlpc --energy: sqc, no forwarding (2/3)",
                                    "vlpc --energy: legacy (lds) (3/3)"]


def test_forwarding_that_changes_nothing_is_said_plainly(tmp_path, capsys):
    """An int8 GEMV (M = 4: the row kernel, the same dot order with and without forwarding) has the
    same counts in both variants: the report says there is no difference instead of "0.00 less"."""
    from vlpc.cli import main

    f = tmp_path / "gv.mlir"
    f.write_text("""
func.func @gv(%x: memref<4x256xi8>, %w: memref<256x256xi8>, %y: memref<4x256xi32>, %alpha: i32, %beta: i32) {
  gemm.matmul %x, %w, %y, %alpha, %beta {layout = "NT"} : memref<4x256xi8>, memref<256x256xi8>, memref<4x256xi32>, i32, i32
  func.return
}
""")
    assert main(["report", str(f), "--energy", "-o", str(tmp_path / "o"), "-q"]) == 0
    out = capsys.readouterr().out
    assert "- forwarding: no difference here: sqc with and without it execute the same event counts" in out
    assert "less dynamic energy" not in out


@pytest.mark.parametrize("flags", [["--device", "hip"], ["--no-model"], ["--rocblas-csv"], ["--strategy", "lds"],
                                   ["--no-forwarding"]])
def test_bench_energy_refuses_the_options_it_would_ignore(tmp_path, capsys, monkeypatch, flags):
    """They used to be ignored silently (exit 0): one line naming the flag, exit 1, no output written."""
    from vlpc.cli import main

    monkeypatch.chdir(tmp_path)
    rc = main(["bench", "--energy", "-q", "-f", "gemm", "-r", "f32_r", "-m", "64", "-n", "64", "-k", "32", *flags])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1
    assert err[0].startswith(f"vlpc: {' '.join(flags)}: ") and err[0].endswith(f"drop {' '.join(flags)}")
    assert not list(tmp_path.iterdir())


def test_report_energy_refuses_strategies(tmp_path, capsys):
    from vlpc.cli import main

    f = tmp_path / "g.mlir"
    f.write_text(seed_source(M, N, K))
    assert main(["report", str(f), "--energy", "--strategies", "lds", "-o", str(tmp_path / "o"), "-q"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "vlpc: --strategies lds: --energy compares sqc, sqc without forwarding and legacy (lds) itself: "
        "drop --strategies lds"]


def test_bench_energy_writes_its_csv_where_csv_says(tmp_path, capsys, monkeypatch):
    """vlpc bench --energy --csv F.csv: the energy CSV goes to F.csv (it used to be ignored, exit 0)."""
    import csv

    from vlpc.cli import main

    monkeypatch.chdir(tmp_path)
    f = tmp_path / "g.mlir"
    f.write_text(seed_source(M, N, K))
    assert main(["bench", str(f), "--energy", "-q", "--csv", "mine.csv", "--split-k", "1"]) == 0
    err = capsys.readouterr().err
    assert "vlpc: wrote g-energy.md, mine.csv, g-energy.svg" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g-energy.md", "g-energy.svg", "g.mlir", "mine.csv"]
    rows = list(csv.DictReader(open(tmp_path / "mine.csv")))
    assert [r["variant"] for r in rows] == ["sqc", "sqc-nofwd", "lds"]
    assert all(float(r["flops"]) == 2 * M * N * K for r in rows)


@pytest.mark.parametrize("ab, warned", [(["--alpha", "1", "--beta", "0"], False), (["--beta", "1"], True)])
def test_bench_energy_says_alpha_beta_are_not_priced(tmp_path, capsys, monkeypatch, ab, warned):
    from vlpc.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--energy", "-q", "-f", "gemm", "-r", "f32_r", "-m", "64", "-n", "64", "-k", "32", *ab]) == 0
    warnings = [x for x in capsys.readouterr().err.splitlines() if x.startswith("vlpc: warning:")]
    assert warnings == (["vlpc: warning: --energy prices every variant with alpha = 1, beta = 0 (C is not read): "
                         "--alpha/--beta are ignored"] if warned else [])


def test_bench_energy_says_how_rocblas_sizes_map(tmp_path, capsys, monkeypatch):
    """rocblas-bench's -m 64 -n 32 (column-major C, 64 x 32) is vlpc's row-major M=32 N=64: the header
    names vlpc's sizes, so the report says how the flags map (as vlpc bench without --energy does)."""
    from vlpc.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--energy", "-q", "-f", "gemm", "-r", "f32_r", "--transposeA", "T", "-m", "64", "-n", "32",
                 "-k", "16"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Modeled energy per GEMM: M=32 N=64 K=16, f32,")
    note = ("rocblas-bench's column-major 64 x 32 problem (-m 64 -n 32) runs as vlpc's row-major M=32 N=64 "
            "(layout NT, A and B exchanged).")
    assert note in out and note in (tmp_path / "gemm-energy.md").read_text()


def test_sizes_past_the_32bit_offsets_are_refused_before_allocating(tmp_path, capsys, monkeypatch):
    """A 70000 x 70000 f32 C spans 19.6e9 bytes: refused in one line before any buffer is allocated
    (it used to allocate and fill the 19.6 GB first, about a minute, and only then fail at launch)."""
    import vlpc.energy_report as er
    from vlpc.cli import main

    def no_alloc(*a, **k):
        raise AssertionError("buffers allocated for sizes the kernels cannot address")

    monkeypatch.setattr(er, "host_buffers", no_alloc)
    f = tmp_path / "d.mlir"
    f.write_text("""
func.func @sgemm(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>, %alpha: f32, %beta: f32) {
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, f32, f32
  return
}
""")
    assert main(["report", str(f), "--energy", "--m", "70000", "--n", "70000", "--k", "64", "-o",
                 str(tmp_path / "o"), "-q"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "vlpc: kernel 'sgemm': C spans 19600000000 bytes (70000 rows, ldc=70000): over the 32-bit byte offset "
        "limit of vlpc's kernels (2^32 bytes)"]


def test_output_prefix_given_with_a_suffix(tmp_path, capsys):
    """-o out.md writes out.md, out.csv and out.svg (it wrote out.md.md, out.md.csv, out.md.svg)."""
    from vlpc.cli import main

    f = tmp_path / "g.mlir"
    f.write_text(seed_source(M, N, K))
    assert main(["report", str(f), "--energy", "-o", str(tmp_path / "out.md"), "-q", "--split-k", "1"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.mlir", "out.csv", "out.md", "out.svg"]


@pytest.mark.parametrize("flags, line", [
    (["-o", "{d}/no/such/dir/p"], "cannot write report {d}/no/such/dir/p.md: directory {d}/no/such/dir does not "
                                  "exist: choose another -o PREFIX"),
    (["-o", "{d}/p", "--chart", "{d}/none/c.svg"], "cannot write chart {d}/none/c.svg: directory {d}/none does "
                                                   "not exist: choose another --chart"),
])
def test_unwritable_output_names_the_option(tmp_path, capsys, flags, line):
    """Checked before any compilation: one line, exit 1, naming the option that moves the file."""
    from vlpc.cli import main

    f = tmp_path / "g.mlir"
    f.write_text(seed_source(M, N, K))
    d = str(tmp_path)
    assert main(["report", str(f), "--energy", "-q", *[x.format(d=d) for x in flags]]) == 1
    assert capsys.readouterr().err.strip().splitlines() == ["vlpc: " + line.format(d=d)]
