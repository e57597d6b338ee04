"""Loop sampling (runtime/timing/sampling.py): a long main loop modeled from two short samples.

The reference is the whole model on the same trace (``loop_sample=False``): the shortcut must
agree with it within 0.5 % (the error bound the shortcut is documented with), apply only to
streams made of one repeated loop body, and keep short loops exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from vlpc.runtime.timing import gpu, sampling
from vlpc.runtime.timing.recorder import IssueRecorder, recording
from vlpc.runtime.timing.trace import KernelTrace, StaticInstr
from vlpc.targets import get_board

from vlpc.benchmarking.seed import seed_source


def _gemm_trace(m=128, n=256, k=2048):
    """A timing-only launch of vlpc's SGEMM (32x64 tiles: 16 workgroups), its trace and residency."""
    import vlpc
    from vlpc.runtime.emulator.device import EmulatorDevice

    mod = vlpc.compile(seed_source(m, n, k), gpu="mi60", split_k=1, macro_tile=(32, 64))
    ck = mod.kernel()
    board = get_board("mi60")
    dev = EmulatorDevice(gpu=board, timing_only=True)
    bufs = [dev.alloc(m * k * 4), dev.alloc(n * k * 4), dev.alloc(m * n * 4)]
    lc = ck.launch(m, n, k)
    st = dev.launch(mod.code_object, ck.name, grid=lc.grid, block=lc.block,
                    args=[*bufs, m, n, k, k, k, n, np.float32(1.0), np.float32(0.0)])
    res = gpu.Residency(st.timing.wgs_per_cu, st.trace.waves_per_wg, 0, "")
    return st.trace, board, res


@pytest.fixture(scope="module")
def gemm():
    return _gemm_trace()


def test_the_gemm_k_loop_is_found(gemm):
    tr, _, _ = gemm
    loop = sampling.find_loop(tr)
    assert loop is not None
    # K = 2048 at vlpc's K step of 16: 128 iterations of one body, in every traced wave
    assert loop.iterations == 2048 // 16
    assert set(loop.first) == set(tr.streams)


def test_sampled_gemm_agrees_with_the_whole_model(gemm, monkeypatch):
    tr, board, res = gemm
    full = gpu.model_kernel(tr, board, res, loop_sample=False)
    assert sampling.plan(tr, True) is not None  # 127 bodies > MIN_ITERATIONS
    fast = gpu.model_kernel(tr, board, res, loop_sample=True)
    assert fast.time_us != full.time_us  # sampled indeed
    assert fast.time_us == pytest.approx(full.time_us, rel=0.005)
    assert sum(v for k, v in fast.breakdown_us.items()) == pytest.approx(fast.time_us, rel=1e-9)
    monkeypatch.delenv("VLPC_TIMING_SAMPLE", raising=False)
    assert gpu.model_kernel(tr, board, res).time_us == full.time_us  # off by default
    monkeypatch.setenv("VLPC_TIMING_SAMPLE", "1")
    assert gpu.model_kernel(tr, board, res).time_us == fast.time_us


def test_a_recorder_sees_the_whole_trace(gemm):
    tr, board, res = gemm
    rec = IssueRecorder(max_events=0)
    with recording(rec):
        rep = gpu.model_kernel(tr, board, res, loop_sample=True)
    assert rep.time_us == gpu.model_kernel(tr, board, res, loop_sample=False).time_us
    assert rec.totals()["issues"] == sum(len(s) for s in tr.streams.values())


def _synthetic(streams: dict) -> KernelTrace:
    static = {pc: StaticInstr("v_add_f32", "VOP2", 4, "valu") for s in streams.values() for pc in s}
    return KernelTrace((1, 1, 1), len(streams), (0,), {k: np.asarray(v, np.int64) for k, v in streams.items()},
                       {}, {}, static)


def test_truncation_keeps_prologue_samples_and_last_iteration():
    body = [8, 12, 16]
    st = [0, 4] + body * 5 + [20, 24]
    tr = _synthetic({(0, 0): st})
    tr.mem[(0, 0)] = {1: (np.array([1]), 0), 2 + 3 * 4 + 1: (np.array([2]), 0), 18: (np.array([3]), 0)}
    loop = sampling.find_loop(tr)
    assert (loop.body, loop.iterations, loop.first[(0, 0)]) == (3, 5, 2)
    cut = sampling.truncate(tr, loop, 2)
    assert cut.streams[(0, 0)].tolist() == [0, 4] + body * 3 + [20, 24]
    # index 1 (prologue) stays, the last iteration's index 15 moves to 9, the epilogue's 18 to 12
    assert {i: int(e[0][0]) for i, e in cut.mem[(0, 0)].items()} == {1: 1, 9: 2, 12: 3}


@pytest.mark.parametrize("streams", [
    {(0, 0): [0, 4, 8, 4, 8, 12]},                        # too few iterations to sample
    {(0, 0): [0, 4, 8, 4, 8, 16, 4, 8, 12]},              # bodies differ
    {(0, 0): [0, 4, 8, 4, 8, 12], (0, 1): [0, 4, 8, 12]},  # waves differ
    {(0, 0): [0, 4, 8, 12]},                              # no loop
])
def test_no_common_periodic_loop_is_modeled_whole(streams):
    tr = _synthetic(streams)
    assert sampling.plan(tr, True) is None
