"""SCRATCH loads/stores: per-lane private memory (every lane uses the same private
address and gets its own value back), sub-dword and d16 forms."""

from __future__ import annotations

import numpy as np

from vlpc.runtime.emulator.testing import run_lanes

A = (np.arange(64, dtype=np.uint32) * 0x01010101 + 0x80).astype(np.uint32)


def run(body, n_out=1):
    outs, _ = run_lanes(body, [A, np.full(64, 0xAAAA5555, np.uint32)], n_out=n_out)
    return [[int(x) for x in o] for o in outs]


def test_scratch_is_private_per_lane():
    body = ("v_mov_b32 v2, 16\nscratch_store_dword v2, v10, off\n"
            "scratch_load_dword v20, v2, off offset:0\ns_waitcnt vmcnt(0)")
    assert run(body)[0] == [int(a) for a in A]


def test_scratch_sub_dword_and_d16():
    body = ("v_mov_b32 v2, 8\nscratch_store_dword v2, v10, off\n"
            "scratch_load_sbyte v20, v2, off\nv_mov_b32 v21, v11\n"
            "scratch_load_short_d16_hi v21, v2, off offset:0\ns_waitcnt vmcnt(0)")
    sb, hi = run(body, n_out=2)
    assert sb == [((int(a) & 0xFF) - 256 if int(a) & 0x80 else int(a) & 0xFF) & 0xFFFFFFFF for a in A]
    assert hi == [((int(a) & 0xFFFF) << 16) | 0x5555 for a in A]
    body = ("s_mov_b32 s40, 32\nscratch_store_dwordx2 off, v[10:11], s40 offset:4\n"
            "v_mov_b32 v2, 36\nscratch_load_dwordx2 v[20:21], v2, off\ns_waitcnt vmcnt(0)")
    lo, hi = run(body, n_out=2)
    assert lo == [int(a) for a in A] and hi == [0xAAAA5555] * 64
