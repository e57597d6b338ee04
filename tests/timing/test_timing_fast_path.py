"""The timing model's CU-0-only launch (EmulatorDevice.footprint_round = False) with the L2 miss
probability computed from the tile geometry (vlpc.benchmarking.seed.l2_miss_estimate) gives the
same modeled time as the full timing-only launch, which records the first round's footprints."""


import numpy as np
import pytest

import vlpc
from vlpc.benchmarking.seed import l2_miss_estimate, seed_source
from vlpc.runtime.emulator.device import EmulatorDevice
from vlpc.targets import get_board


@pytest.mark.parametrize("m,n", [(256, 1024), (512, 512)])
def test_cu0_trace_with_geometric_l2_miss_matches_the_full_launch(m, n):
    k = 640
    board = get_board("mi60")
    mod = vlpc.compile(seed_source(m, n, k), gpu="mi60", split_k=1)
    ck = mod.kernel()
    li = ck.launch_info
    lc = ck.launch(m, n, k)

    def launch(fast: bool):
        dev = EmulatorDevice(gpu=board, timing_only=True)
        if fast:
            from vlpc.runtime.timing import residency
            res = residency(board, ck.vgprs, ck.sgprs, 0, li["workgroup_size"])
            dev.footprint_round = False
            dev.l2_miss = l2_miss_estimate(m, n, k, (li["macro_m"], li["macro_n"]), 4,
                                           board.compute_units * res.wgs_per_cu)
        bufs = [dev.alloc(m * k * 4), dev.alloc(n * k * 4), dev.alloc(m * n * 4)]
        st = dev.launch(mod.code_object, ck.name, grid=lc.grid, block=lc.block,
                        args=[*bufs, m, n, k, k, k, n, np.float32(1.0), np.float32(0.0)])
        return st

    full, fast = launch(False), launch(True)
    # the recorded footprint also holds the kernarg line every workgroup reads (0.03 % here)
    assert fast.timing.l2_miss == pytest.approx(full.timing.l2_miss, rel=1e-3)
    # the full launch finds each line's sharers in the first round's footprints (the
    # "address" L2 rule); the shortcut draws misses with the geometric probability and takes
    # the CUs' overlap as 1 / that probability.  With the A touch (one global_load_dword per wave
    # and K step that brings the next step's A lines into the L2, passes/isel/emit.py
    # a_touch) the shortcut's geometric probability no longer sees which CU fills a shared A line
    # first: 1.8 % apart at 256 x 1024 (118.8 vs 121.0 us; 1.1 % before the touch)
    assert fast.timing.time_us == pytest.approx(full.timing.time_us, rel=2.5e-2)
    assert fast.workgroups < full.workgroups  # only CU 0's workgroups ran
