"""Typed buffer loads (MUBUF format from the descriptor, MTBUF format in the instruction)
for 32-bit components, and the refusal of other formats."""

from __future__ import annotations

import numpy as np
import pytest

from vlpc.runtime.emulator.errors import UnsupportedInstruction
from vlpc.runtime.emulator.testing import run_lanes

A = (np.arange(64, dtype=np.uint32) * 7 + 3).astype(np.uint32)


def desc(dfmt, nfmt):
    word3 = (dfmt << 15) | (nfmt << 12)
    return ("s_mov_b32 s40, s16\ns_and_b32 s41, s17, 0xffff\ns_mov_b32 s42, 256\n"
            f"s_mov_b32 s43, 0x{word3:x}\n")


def run(body, n_out=1):
    outs, _ = run_lanes(body, [A], n_out=n_out)
    return [[int(x) for x in o] for o in outs]


def test_buffer_load_format_xy_32_32_float():
    body = desc(11, 7) + ("v_and_b32 v2, 31, v0\nv_lshlrev_b32 v2, 3, v2\n"
                          "buffer_load_format_xy v[20:21], v2, s[40:43], 0 offen\ns_waitcnt vmcnt(0)")
    x, y = run(body, n_out=2)
    assert x == [int(A[2 * (i % 32)]) for i in range(64)]
    assert y == [int(A[2 * (i % 32) + 1]) for i in range(64)]


def test_tbuffer_load_format_x():
    body = desc(0, 0) + ("v_lshlrev_b32 v2, 2, v0\n"
                         "tbuffer_load_format_x v20, v2, s[40:43], dfmt:4, nfmt:7, 0 offen\ns_waitcnt vmcnt(0)")
    assert run(body)[0] == [int(a) for a in A]


def test_other_formats_are_refused_with_the_mnemonic():
    body = desc(10, 0) + ("v_lshlrev_b32 v2, 2, v0\n"
                          "buffer_load_format_x v20, v2, s[40:43], 0 offen\ns_waitcnt vmcnt(0)")
    with pytest.raises(UnsupportedInstruction, match="buffer_load_format_x"):
        run(body)


def test_missing_components_read_zero_and_one():
    body = desc(4, 7) + ("v_lshlrev_b32 v2, 2, v0\n"
                         "buffer_load_format_xyzw v[20:23], v2, s[40:43], 0 offen\ns_waitcnt vmcnt(0)")
    x, y, z, w = run(body, n_out=4)
    assert x == [int(a) for a in A] and y == [0] * 64 and z == [0] * 64 and w == [0x3F800000] * 64


def test_d16_format_load_and_store_float():
    vals = np.array([1.5, -2.0] * 64, np.float32)
    h = lambda x: int(np.array(x, np.float16).view(np.uint16))  # noqa: E731
    outs, _ = run_lanes(desc(11, 7) + ("v_lshlrev_b32 v2, 3, v0\n"
                                       "buffer_load_format_d16_xy v20, v2, s[40:43], 0 offen\n"
                                       "s_waitcnt vmcnt(0)"), [vals.view(np.uint32)[:64]])
    # the first 32 lanes read pairs (1.5, -2.0) packed as f16 (lanes 32.. are past 256 bytes: 0)
    assert [int(x) for x in outs[0][:32]] == [h(1.5) | (h(-2.0) << 16)] * 32
    body = desc(4, 7) + ("v_lshlrev_b32 v2, 2, v0\nv_mov_b32 v3, 0x3e00\n"       # f16 1.5
                         "buffer_store_format_d16_x v3, v2, s[40:43], 0 offen\ns_waitcnt vmcnt(0)\n"
                         "buffer_load_dword v20, v2, s[40:43], 0 offen\ns_waitcnt vmcnt(0)")
    assert run(body)[0] == [int(np.array(1.5, np.float32).view(np.uint32))] * 64
