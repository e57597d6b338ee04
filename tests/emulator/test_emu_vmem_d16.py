"""d16 vector memory forms (Vega ISA guide 12.14): half-register loads keep the other
half; _d16_hi stores write the high half's low bits."""

from __future__ import annotations

import numpy as np

from vlpc.runtime.emulator.testing import run_lanes

A = (np.arange(64, dtype=np.uint32) * 0x01030507 + 0x80F09010).astype(np.uint32)
KEEP = np.full(64, 0xAAAA5555, np.uint32)


def run(body, n_out=1):
    outs, _ = run_lanes(body, [A, KEEP], n_out=n_out)
    return [[int(x) for x in o] for o in outs]


def test_global_load_d16_and_hi():
    got = run("v_mov_b32 v20, v11\nglobal_load_short_d16 v20, v1, s[16:17]\ns_waitcnt vmcnt(0)")[0]
    assert got == [0xAAAA0000 | (int(a) & 0xFFFF) for a in A]
    got = run("v_mov_b32 v20, v11\nglobal_load_short_d16_hi v20, v1, s[16:17]\ns_waitcnt vmcnt(0)")[0]
    assert got == [((int(a) & 0xFFFF) << 16) | 0x5555 for a in A]
    got = run("v_mov_b32 v20, v11\nglobal_load_sbyte_d16 v20, v1, s[16:17]\ns_waitcnt vmcnt(0)")[0]
    sx = lambda v: (v - 256 if v & 0x80 else v) & 0xFFFF  # noqa: E731
    assert got == [0xAAAA0000 | sx(int(a) & 0xFF) for a in A]


def test_global_store_d16_hi():
    body = ("v_mov_b32 v2, 0\nglobal_store_dword v1, v2, s[18:19]\n"
            "global_store_short_d16_hi v1, v10, s[18:19]\ns_waitcnt vmcnt(0)\n"
            "global_load_dword v20, v1, s[18:19]\ns_waitcnt vmcnt(0)")
    assert run(body)[0] == [int(a) >> 16 for a in A]
    body = ("v_mov_b32 v2, 0\nglobal_store_dword v1, v2, s[18:19]\n"
            "global_store_byte_d16_hi v1, v10, s[18:19]\ns_waitcnt vmcnt(0)\n"
            "global_load_dword v20, v1, s[18:19]\ns_waitcnt vmcnt(0)\nv_mov_b32 v21, v10")
    got, data = run(body, n_out=2)
    assert got == [(int(a) >> 16) & 0xFF for a in A] and data == [int(a) for a in A]
