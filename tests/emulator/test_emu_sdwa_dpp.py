"""SDWA and DPP forms against the Vega ISA guide's definitions (12.7.1 SDWA: source
selects with zero/sign extension, destination select with UNUSED_PAD/SEXT/PRESERVE;
12.7.2 DPP: lane permutations, bound_ctrl, row and bank masks), computed per lane in
plain Python here.
"""

from __future__ import annotations

import numpy as np
import pytest

from vlpc.runtime.emulator.testing import run_lanes

LANES = np.arange(64, dtype=np.uint64)
A = ((LANES * 0x9E3779B1 + 0x1234) & 0xFFFFFFFF).astype(np.uint32)
B = ((LANES * 0x85EBCA77 + 0x8765) & 0xFFFFFFFF).astype(np.uint32)
OLD = np.full(64, 0xDEADBEEF, np.uint32)


def run(body):
    (out,), _ = run_lanes("v_mov_b32 v20, v12\n" + body, [A, B, OLD])
    return [int(x) for x in out]


def sx(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def test_sdwa_src_sel_word_1_murmur_mix():
    got = run("v_xor_b32_sdwa v20, v10, v11 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1 "
              "src1_sel:DWORD")
    assert got == [int(a >> 16) ^ int(b) for a, b in zip(A, B)]


def test_sdwa_dst_sel_preserve_and_pad():
    got = run("v_mov_b32_sdwa v20, v10 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_2")
    assert got == [(0xDEADBEEF & 0xFFFF) | (((int(a) >> 16) & 0xFF) << 16) for a in A]
    got = run("v_mov_b32_sdwa v20, v10 dst_sel:BYTE_1 dst_unused:UNUSED_PAD src0_sel:DWORD")
    assert got == [(int(a) & 0xFF) << 8 for a in A]


def test_sdwa_unused_sext_and_sext_source():
    got = run("v_mov_b32_sdwa v20, v10 dst_sel:BYTE_0 dst_unused:UNUSED_SEXT src0_sel:DWORD")
    assert got == [sx(int(a), 8) & 0xFFFFFFFF for a in A]
    got = run("v_add_u32_sdwa v20, sext(v10), v11 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0 "
              "src1_sel:WORD_0")
    assert got == [(sx(int(a), 8) + (int(b) & 0xFFFF)) & 0xFFFFFFFF for a, b in zip(A, B)]


def test_sdwa_16_bit_op_and_compare():
    got = run("v_add_u16_sdwa v20, v10, v11 dst_sel:WORD_1 dst_unused:UNUSED_PAD src0_sel:WORD_1 "
              "src1_sel:WORD_0")
    assert got == [(((int(a) >> 16) + (int(b) & 0xFFFF)) & 0xFFFF) << 16 for a, b in zip(A, B)]
    got = run("v_cmp_gt_u32_sdwa vcc, v10, v11 src0_sel:BYTE_0 src1_sel:BYTE_0\n"
              "v_cndmask_b32 v20, 0, 1, vcc")
    assert got == [int((int(a) & 0xFF) > (int(b) & 0xFF)) for a, b in zip(A, B)]


def test_dpp_quad_perm_and_row_ror():
    got = run("v_mov_b32_dpp v20, v10 quad_perm:[3,2,1,0] row_mask:0xf bank_mask:0xf")
    assert got == [int(A[(i & ~3) + 3 - (i & 3)]) for i in range(64)]
    got = run("v_add_u32_dpp v20, v10, v11 row_ror:4 row_mask:0xf bank_mask:0xf")
    assert got == [(int(A[16 * (i // 16) + (i % 16 - 4) % 16]) + int(B[i])) & 0xFFFFFFFF for i in range(64)]


@pytest.mark.parametrize("bound", [False, True])
def test_dpp_row_shr_bound_ctrl(bound):
    body = "v_mov_b32_dpp v20, v10 row_shr:1 row_mask:0xf bank_mask:0xf" + (" bound_ctrl:0" if bound else "")
    got = run(body)
    want = []
    for i in range(64):
        if i % 16 >= 1:
            want.append(int(A[i - 1]))
        else:
            want.append(0 if bound else 0xDEADBEEF)   # out of the row: 0, or not written
    assert got == want


def test_dpp_masks_and_wave_shifts():
    got = run("v_mov_b32_dpp v20, v10 quad_perm:[0,1,2,3] row_mask:0x5 bank_mask:0x3")
    want = [int(A[i]) if ((0x5 >> (i // 16)) & 1 and (0x3 >> ((i >> 2) & 3)) & 1) else 0xDEADBEEF
            for i in range(64)]
    assert got == want
    got = run("v_mov_b32_dpp v20, v10 wave_shr:1 row_mask:0xf bank_mask:0xf")
    assert got == [0xDEADBEEF] + [int(A[i - 1]) for i in range(1, 64)]
    got = run("v_mov_b32_dpp v20, v10 row_bcast:15 row_mask:0xa bank_mask:0xf")
    assert got == [int(A[16 * (i // 16) - 1]) if (i // 16) in (1, 3) else 0xDEADBEEF for i in range(64)]
    got = run("v_mov_b32_dpp v20, v10 row_mirror row_mask:0xf bank_mask:0xf")
    assert got == [int(A[16 * (i // 16) + 15 - i % 16]) for i in range(64)]


def test_sdwa_f16_add_on_the_high_words():
    h = lambda x: int(np.array(x, np.float16).view(np.uint16))  # noqa: E731
    a = np.full(64, (h(1.5) << 16) | h(9.0), np.uint32)
    b = np.full(64, (h(2.25) << 16) | h(7.0), np.uint32)
    (out,), _ = run_lanes("v_add_f16_sdwa v20, v10, v11 dst_sel:WORD_0 dst_unused:UNUSED_PAD "
                          "src0_sel:WORD_1 src1_sel:WORD_1", [a, b])
    assert int(out[0]) == h(3.75)


def test_dpp_mac_reads_the_destination():
    a = np.linspace(1, 2, 64).astype(np.float32)
    b = np.linspace(-3, 3, 64).astype(np.float32)
    c = np.full(64, 0.5, np.float32)
    (out,), _ = run_lanes("v_mov_b32 v20, v12\nv_mac_f32_dpp v20, v10, v11 quad_perm:[1,0,3,2] "
                          "row_mask:0xf bank_mask:0xf", [a.view(np.uint32), b.view(np.uint32), c.view(np.uint32)])
    perm = [(i & ~3) + [1, 0, 3, 2][i & 3] for i in range(64)]
    want = (a[perm] * b).astype(np.float32) + c        # unfused: the product rounds first
    assert (out.view(np.float32) == want.astype(np.float32)).all()
