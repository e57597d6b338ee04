"""The emulator's program cache (runtime/emulator/core.py, "The program cache"): a launch of a
code image already run takes its decoded and compiled instructions from the cache, and
computes exactly what a launch from an empty cache computes: C, every counter, MODE-dependent
float results (the Vega ISA guide's MODE register: denormal flushing), faults located for
their own launch, and the timing model's trace."""

from __future__ import annotations

import numpy as np
import pytest

import vlpc
from vlpc.runtime import get_device
from vlpc.runtime.emulator import core
from vlpc.runtime.emulator.errors import RegisterRangeError
from vlpc.runtime.emulator.testing import run_lanes

DEN = 0x00000200   # 2^-140, an f32 denormal
ONE = 0x3F800000


@pytest.fixture
def compiles(monkeypatch):
    """The PCs compile_instr compiles from now on (a list), from an empty program cache."""
    core.clear_program_cache()
    seen: list[int] = []
    real = core.compile_instr

    def counting(ins, b):
        seen.append(ins.pc)
        return real(ins, b)

    monkeypatch.setattr(core, "compile_instr", counting)
    yield seen
    core.clear_program_cache()


def _stats_fields(st):
    return (st.instructions, dict(st.by_class), dict(st.by_mnemonic), st.vgpr_reads, st.vgpr_writes,
            st.vgpr_reads_forwarded, st.sgpr_reads, st.sgpr_writes, st.global_bytes_read,
            st.global_bytes_written, {pc: list(row) for pc, row in st.by_pc.items()}, st.code_id)


def test_a_third_launch_compiles_nothing_and_counts_the_same(compiles):
    body = "v_mul_f32 v20, v10, v11\nv_add_f32 v20, v20, v10"
    a = np.arange(1, 65, dtype=np.float32)
    (out1,), st1 = run_lanes(body, [a, 2 * a])
    first = list(compiles)
    assert first, "the first launch compiles its instructions"
    assert not core._PROGRAMS  # a code image launched once is not kept
    run_lanes(body, [a, 2 * a])
    assert compiles == 2 * first and len(core._PROGRAMS) == 1  # kept from its second launch on
    (out3,), st3 = run_lanes(body, [3 * a, a])
    assert compiles == 2 * first  # nothing compiled again
    np.testing.assert_array_equal(out1.view(np.float32), a * (2 * a) + a)
    np.testing.assert_array_equal(out3.view(np.float32), (3 * a) * a + 3 * a)
    assert _stats_fields(st1) == _stats_fields(st3)
    # a launch whose compile key differs (here: the VGPR count) compiles again
    run_lanes(body, [a, a], vgpr_count=128)
    assert len(compiles) == 3 * len(first)


def test_several_batches_of_one_launch_count_like_one(compiles):
    body = "v_add_u32 v20, v10, v0"
    x = np.arange(4 * 64, dtype=np.uint32)
    (whole,), st_whole = run_lanes(body, [x], grid=4)
    n = len(compiles)
    (split,), st_split = run_lanes(body, [x], grid=4, max_waves_in_flight=1)  # 4 batches, one compile
    assert len(compiles) == 2 * n
    np.testing.assert_array_equal(whole, split)
    assert _stats_fields(st_whole) == _stats_fields(st_split)


FLAG_THEN_MUL = ("v_readfirstlane_b32 s40, v12\n"
                 "s_cmp_eq_u32 s40, 0\n"
                 "s_cbranch_scc1 skip\n"
                 "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 0\n"  # f32 denormals flushed
                 "skip:\n"
                 "v_mul_f32 v20, v10, v11")


@pytest.mark.parametrize("order", [(1, 0, 1), (0, 1, 0)])
def test_mode_dependent_instructions_are_specialized_per_launch(compiles, order):
    # v_mul_f32 compiled (and kept, at the second launch) after s_setreg flushed denormals (flag 1)
    # or in the default IEEE mode (flag 0) computes for the next launch's own MODE: 2^-140 * 1
    # flushed to +0, or kept
    def run(flag):
        (out,), _ = run_lanes(FLAG_THEN_MUL, [np.full(64, DEN, np.uint32), np.full(64, ONE, np.uint32),
                                              np.full(64, flag, np.uint32)])
        return int(out[0])
    got = [run(flag) for flag in order[:2]]
    n = len(compiles)
    got.append(run(order[2]))
    assert len(compiles) - n <= 1  # the second launch's kept instructions (and the s_setreg it skipped)
    assert got == [0 if flag else DEN for flag in order]


def test_a_fault_is_located_for_each_launch(compiles):
    # v200 is beyond the 32 VGPRs the launch allocates: RegisterRangeError at every launch, a
    # fresh fault each time (never one located for an earlier launch)
    faults = []
    for name in ("k", "k"):
        with pytest.raises(RegisterRangeError) as ei:
            run_lanes("v_mov_b32 v200, v10", [np.zeros(64, np.uint32)], vgpr_count=32, name=name)
        faults.append(ei.value)
    assert faults[0] is not faults[1]
    assert str(faults[0]) == str(faults[1]) and faults[1].kernel == "k" and faults[1].wave == ((0, 0, 0), 0)


def test_timing_model_runs_are_the_same_from_the_cache():
    from launch_support import nt_source

    kern = vlpc.compile(nt_source(64, 128, 16)).kernel()
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 16)).astype(np.float32)
    b = rng.standard_normal((128, 16)).astype(np.float32)

    def run():
        r = vlpc.run(kern, a, b, np.zeros((64, 128), np.float32), device=get_device("emulator", gpu="mi60"))
        return r.c, r.stats.cycles, _stats_fields(r.stats)

    core.clear_program_cache()
    cold = run()
    run()  # (kept from this second launch on)
    warm = run()
    np.testing.assert_array_equal(cold[0], warm[0])
    assert cold[1] == warm[1] and cold[1] > 0
    assert cold[2] == warm[2]
