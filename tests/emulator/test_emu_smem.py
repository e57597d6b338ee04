"""Scalar memory stores and atomics (Vega ISA guide 12.4): the memory afterwards and the
returned old values, read back with vector loads."""

from __future__ import annotations

import numpy as np

from vlpc.runtime.emulator.testing import run_lanes

A = (np.arange(64, dtype=np.uint32) * 3 + 5).astype(np.uint32)


def run(body, n_out=1):
    outs, _ = run_lanes(body, [A], n_out=n_out)
    return [[int(x) for x in o] for o in outs]


def test_s_store_dword_then_vector_load():
    body = ("s_mov_b32 s40, 0x1234\ns_mov_b32 s41, 0x5678\n"
            "s_store_dwordx2 s[40:41], s[16:17], 0x8\ns_waitcnt lgkmcnt(0)\n"
            "v_mov_b32 v2, 8\nglobal_load_dword v20, v2, s[16:17]\n"
            "global_load_dword v21, v2, s[16:17] offset:4\ns_waitcnt vmcnt(0)")
    lo, hi = run(body, n_out=2)
    assert lo == [0x1234] * 64 and hi == [0x5678] * 64


def test_s_atomic_add_returns_the_old_value():
    body = ("s_mov_b32 s41, 100\n"
            "s_atomic_add s41, s[16:17], 0x4 glc\ns_waitcnt lgkmcnt(0)\n"
            "v_mov_b32 v20, s41\n"
            "v_mov_b32 v2, 4\nglobal_load_dword v21, v2, s[16:17]\ns_waitcnt vmcnt(0)")
    old, new = run(body, n_out=2)
    assert old == [int(A[1])] * 64 and new == [int(A[1]) + 100] * 64


def test_s_atomic_cmpswap_x2_and_no_return():
    body = ("s_mov_b32 s40, 7\ns_mov_b32 s41, 0\n"                      # new value 7
            f"s_mov_b32 s42, {int(A[2])}\ns_mov_b32 s43, {int(A[3])}\n"  # compare = current qword
            "s_atomic_cmpswap_x2 s[40:43], s[16:17], 0x8\ns_waitcnt lgkmcnt(0)\n"
            "v_mov_b32 v2, 8\nglobal_load_dword v20, v2, s[16:17]\n"
            "global_load_dword v21, v2, s[16:17] offset:4\ns_waitcnt vmcnt(0)")
    lo, hi = run(body, n_out=2)
    assert lo == [7] * 64 and hi == [0] * 64
