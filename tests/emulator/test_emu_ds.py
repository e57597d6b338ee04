"""DS lane shuffles, 64-bit/float/compare-store atomics and d16 forms against the ISA
definitions (Vega ISA guide ch. 10, 12.13), computed per lane in Python."""

from __future__ import annotations

import numpy as np

from vlpc.runtime.emulator.testing import run_lanes

L = np.arange(64, dtype=np.uint32)
A = (L * 0x01000193 + 7).astype(np.uint32)


def run(body, *cols, n_out=1):
    outs, _ = run_lanes(body, [np.asarray(c, np.uint32) for c in cols], n_out=n_out, lds_bytes=1024)
    return [[int(x) for x in o] for o in outs]


def test_bpermute_permute_swizzle():
    body = ("v_add_u32 v21, 1, v0\nv_and_b32 v21, 63, v21\nv_lshlrev_b32 v21, 2, v21\n"
            "ds_bpermute_b32 v20, v21, v10\ns_waitcnt lgkmcnt(0)")
    assert run(body, A)[0] == [int(A[(i + 1) % 64]) for i in range(64)]
    # permute: lane i sends its value to lane (i + 1) % 64
    body = ("v_add_u32 v21, 1, v0\nv_and_b32 v21, 63, v21\nv_lshlrev_b32 v21, 2, v21\n"
            "ds_permute_b32 v20, v21, v10\ns_waitcnt lgkmcnt(0)")
    assert run(body, A)[0] == [int(A[(i - 1) % 64]) for i in range(64)]
    # bit-mask mode: and 0x1f, or 0, xor 1 -> lane ^ 1
    assert run("ds_swizzle_b32 v20, v10 offset:0x041f\ns_waitcnt lgkmcnt(0)", A)[0] == \
        [int(A[i ^ 1]) for i in range(64)]
    # quad-permute mode [3,2,1,0]
    assert run("ds_swizzle_b32 v20, v10 offset:0x801b\ns_waitcnt lgkmcnt(0)", A)[0] == \
        [int(A[(i & ~3) + 3 - (i & 3)]) for i in range(64)]


def test_bpermute_from_an_inactive_lane_reads_zero():
    body = ("v_lshlrev_b32 v21, 2, v0\nv_xor_b32 v21, 4, v21\n"     # source lane = lane ^ 1
            "v_mov_b32 v20, 0\n"
            "v_cmp_gt_u32 vcc, 32, v0\ns_and_saveexec_b64 s[40:41], vcc\n"    # lanes 0..31 active
            "ds_bpermute_b32 v20, v21, v10\ns_waitcnt lgkmcnt(0)\ns_or_b64 exec, exec, s[40:41]")
    got = run(body, A)[0]
    assert got[:32] == [int(A[i ^ 1]) for i in range(32)] and got[32:] == [0] * 32


def test_ds_add_rtn_u64_in_lane_order():
    # lanes hit 4 slots of 8 bytes; data = lane + 2^32; old values come back in lane order
    body = ("v_and_b32 v21, 3, v0\nv_lshlrev_b32 v21, 3, v21\n"
            "v_mov_b32 v22, v0\nv_mov_b32 v23, 1\n"
            "ds_add_rtn_u64 v[24:25], v21, v[22:23]\ns_waitcnt lgkmcnt(0)\n"
            "s_barrier\nds_read_b64 v[26:27], v21\ns_waitcnt lgkmcnt(0)\n"
            "v_mov_b32 v20, v24\nv_mov_b32 v21, v25\nv_mov_b32 v22, v26\nv_mov_b32 v23, v27")
    lo_old, hi_old, lo_fin, hi_fin = run(body, A, n_out=4)
    for i in range(64):
        before = [j for j in range(i) if j % 4 == i % 4]
        assert lo_old[i] == sum(before) and hi_old[i] == len(before)
        allj = [j for j in range(64) if j % 4 == i % 4]
        assert lo_fin[i] == sum(allj) and hi_fin[i] == len(allj)


def test_cmpst_mskor_and_float_add():
    # one lane per dword: cmpst stores DATA1 where MEM == DATA0
    body = ("v_lshlrev_b32 v21, 2, v0\nds_write_b32 v21, v10\n"
            "ds_cmpst_rtn_b32 v22, v21, v11, v12\ns_waitcnt lgkmcnt(0)\nds_read_b32 v20, v21\n"
            "s_waitcnt lgkmcnt(0)")
    cmp = np.where(L % 2 == 0, A, 0).astype(np.uint32)
    assert run(body, A, cmp, L + 1000)[0] == [int(L[i] + 1000) if i % 2 == 0 else int(A[i]) for i in range(64)]
    body = ("v_lshlrev_b32 v21, 2, v0\nds_write_b32 v21, v10\n"
            "ds_mskor_b32 v21, v11, v12\ns_waitcnt lgkmcnt(0)\nds_read_b32 v20, v21\ns_waitcnt lgkmcnt(0)")
    assert run(body, A, [0xFF] * 64, [0x5A] * 64)[0] == [(int(a) & ~0xFF & 0xFFFFFFFF) | 0x5A for a in A]
    one = np.full(64, np.float32(0.5).view(np.uint32))
    body = ("v_mov_b32 v21, 0\nv_mov_b32 v22, 0\nds_write_b32 v21, v22\ns_waitcnt lgkmcnt(0)\n"
            "ds_add_f32 v21, v10\ns_waitcnt lgkmcnt(0)\nds_read_b32 v20, v21\ns_waitcnt lgkmcnt(0)")
    assert run(body, one)[0] == [int(np.float32(32.0).view(np.uint32))] * 64


def test_d16_read_and_write():
    body = ("v_lshlrev_b32 v21, 2, v0\nds_write_b32 v21, v10\n"
            "v_mov_b32 v20, v11\nds_read_u16_d16_hi v20, v21\ns_waitcnt lgkmcnt(0)")
    assert run(body, A, [0x1234] * 64)[0] == [((int(a) & 0xFFFF) << 16) | 0x1234 for a in A]
    body = ("v_lshlrev_b32 v21, 2, v0\nv_mov_b32 v22, 0\nds_write_b32 v21, v22\n"
            "ds_write_b16_d16_hi v21, v10\ns_waitcnt lgkmcnt(0)\nds_read_b32 v20, v21\ns_waitcnt lgkmcnt(0)")
    assert run(body, A)[0] == [int(a) >> 16 for a in A]
    body = ("v_lshlrev_b32 v21, 2, v0\nds_write_b32 v21, v10\n"
            "v_mov_b32 v20, v11\nds_read_i8_d16 v20, v21\ns_waitcnt lgkmcnt(0)")
    sx = lambda v: (v - 256 if v & 0x80 else v) & 0xFFFF  # noqa: E731
    assert run(body, A, [0xABCD0000] * 64)[0] == [0xABCD0000 | sx(int(a) & 0xFF) for a in A]


def test_src2_wrap_float_cmpst_and_append():
    # ds_add_src2_u32 with offset1[7] = 0: B = A + 4 * {offset1[6:0], offset0} = A + 4 * 16
    body = ("v_lshlrev_b32 v21, 2, v0\nds_write_b32 v21, v10\ns_waitcnt lgkmcnt(0)\ns_barrier\n"
            "v_cmp_gt_u32 vcc, 16, v0\ns_and_saveexec_b64 s[40:41], vcc\n"
            "ds_add_src2_u32 v21 offset:16\ns_waitcnt lgkmcnt(0)\ns_or_b64 exec, exec, s[40:41]\n"
            "s_barrier\nds_read_b32 v20, v21\ns_waitcnt lgkmcnt(0)")
    assert run(body, A)[0] == [int((A[i] + A[i + 16]) & 0xFFFFFFFF) if i < 16 else int(A[i]) for i in range(64)]
    # wrap: MEM >= DATA0 ? MEM - DATA0 : MEM + DATA1
    body = ("v_lshlrev_b32 v21, 2, v0\nds_write_b32 v21, v10\n"
            "ds_wrap_rtn_b32 v22, v21, v11, v12\ns_waitcnt lgkmcnt(0)\nds_read_b32 v20, v21\n"
            "s_waitcnt lgkmcnt(0)")
    d0 = np.full(64, 100, np.uint32)
    vals = (L * 4).astype(np.uint32)
    assert run(body, vals, d0, np.full(64, 7, np.uint32))[0] == \
        [int(v) - 100 if v >= 100 else int(v) + 7 for v in vals]
    # float compare-store: -0.0 == +0.0
    f = lambda x: int(np.array(x, np.float32).view(np.uint32))  # noqa: E731
    body = ("v_lshlrev_b32 v21, 2, v0\nds_write_b32 v21, v10\n"
            "ds_cmpst_f32 v21, v11, v12\ns_waitcnt lgkmcnt(0)\nds_read_b32 v20, v21\ns_waitcnt lgkmcnt(0)")
    assert run(body, [f(-0.0)] * 64, [f(0.0)] * 64, [f(5.0)] * 64)[0] == [f(5.0)] * 64
    # ds_append: every active lane gets the count before; the counter grows by the active lanes
    body = ("s_mov_b32 m0, 0\nv_mov_b32 v21, 0\nv_mov_b32 v22, 10\nds_write_b32 v21, v22\n"
            "ds_append v23\ns_waitcnt lgkmcnt(0)\nds_read_b32 v24, v21\ns_waitcnt lgkmcnt(0)\n"
            "v_mov_b32 v20, v23\nv_mov_b32 v21, v24")
    old, new = run(body, A, n_out=2)
    assert old == [10] * 64 and new == [74] * 64
