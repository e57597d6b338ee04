"""Control flow, LDS, barriers, atomics, buffer and global memory on the emulator."""

import numpy as np
import pytest

from vlpc.runtime.emulator.memory import Memory
from vlpc.runtime.emulator.testing import run_lanes, run_program
from vlpc.runtime.emulator.errors import OutOfBoundsAccess

U = np.uint32


def test_divergent_loop_and_reconvergence():
    # each lane loops a[i] % 8 times adding 3; lanes diverge and reconverge after the loop
    a = np.random.default_rng(0).integers(0, 100, 64).astype(U)
    body = """
    v_and_b32 v2, 7, v10
    v_mov_b32 v20, 0
    s_mov_b64 s[8:9], exec
    loop:
      v_cmp_ne_u32 vcc, 0, v2
      s_and_b64 exec, exec, vcc
      s_cbranch_execz done
      v_add_u32 v20, 3, v20
      v_subrev_u32 v2, 1, v2
      s_branch loop
    done:
    s_mov_b64 exec, s[8:9]
    v_add_u32 v21, 1, v20
    """
    (o, o2), st = run_lanes(body, [a], 2)
    np.testing.assert_array_equal(o, (a & 7) * 3)
    np.testing.assert_array_equal(o2, (a & 7) * 3 + 1)


def test_wave_divergence_between_waves_and_merge():
    # workgroup of 4 waves; odd waves skip a block (scalar branch on the wave index)
    body = """
    v_readfirstlane_b32 s8, v0
    s_lshr_b32 s8, s8, 6
    s_and_b32 s9, s8, 1
    s_cmp_eq_u32 s9, 1
    v_mov_b32 v20, 10
    s_cbranch_scc1 skip
    v_mov_b32 v20, 20
    s_nop 0
    skip:
    v_add_u32 v20, v20, 1
    """
    (o,), st = run_lanes(body, [], 1, block=256)
    wave = np.arange(256) // 64
    np.testing.assert_array_equal(o, np.where(wave % 2 == 1, 11, 21))
    assert st.waves == 4 and st.workgroups == 1


def test_barrier_lds_exchange_between_waves():
    # each work-item writes its id to LDS, barrier, reads the id of work-item (255 - t)
    body = """
    v_lshlrev_b32 v2, 2, v0
    v_add_u32 v3, 1000, v0
    ds_write_b32 v2, v3
    s_waitcnt lgkmcnt(0)
    s_barrier
    v_sub_u32 v4, 255, v0
    v_lshlrev_b32 v4, 2, v4
    ds_read_b32 v20, v4
    ds_read2_b32 v[24:25], v2 offset1:1
    s_waitcnt lgkmcnt(0)
    v_mov_b32 v21, v24
    """
    (o, o2), st = run_lanes(body, [], 2, block=256, grid=2, lds_bytes=1028)
    t = np.tile(np.arange(256), 2)
    np.testing.assert_array_equal(o, 1000 + 255 - t)
    np.testing.assert_array_equal(o2, 1000 + t)
    assert st.barriers == 8
    assert st.lds_bytes_written == 4 * 512 and st.lds_bytes_read == 4 * 512 * 3


def test_ds_write2_b64_st64_and_read_b128():
    body = """
    v_lshlrev_b32 v2, 3, v0
    v_mov_b32 v4, v0
    v_add_u32 v5, 100, v0
    v_add_u32 v6, 200, v0
    v_add_u32 v7, 300, v0
    ds_write2st64_b64 v2, v[4:5], v[6:7] offset1:1
    s_waitcnt lgkmcnt(0)
    ds_read_b64 v[24:25], v2
    v_lshlrev_b32 v3, 3, v0
    v_add_u32 v3, 512, v3
    ds_read_b64 v[26:27], v3
    s_waitcnt lgkmcnt(0)
    v_add_u32 v20, v24, v25
    v_add_u32 v21, v26, v27
    """
    (a, b), _ = run_lanes(body, [], 2, lds_bytes=1024)
    t = np.arange(64)
    # second pair lands 64*8 bytes later: lanes 0..63 at 512 + 8t overlaps lanes 64.. of the first
    np.testing.assert_array_equal(a, 2 * t + 100)
    np.testing.assert_array_equal(b, 2 * t + 500)


def test_global_atomics_contention_cmpswap_loop():
    mem = Memory()
    counter = mem.alloc(16)
    mem.write(counter, np.zeros(4, U))
    # every work-item of 4 workgroups x 128 adds (id+1) with a cmpswap loop, and does atomic_add
    asm = """
    s_load_dwordx2 s[4:5], s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    v_mov_b32 v1, 0
    v_mov_b32 v10, 4
    v_add_u32 v6, 1, v0
    global_atomic_add v10, v6, s[4:5]
    s_mov_b64 s[8:9], exec
    global_load_dword v2, v1, s[4:5] glc
    s_waitcnt vmcnt(0)
    retry:
      v_add_u32 v4, v2, v6
      v_mov_b32 v5, v2
      global_atomic_cmpswap v3, v1, v[4:5], s[4:5] glc
      s_waitcnt vmcnt(0)
      v_cmp_ne_u32 vcc, v3, v2
      v_mov_b32 v2, v3
      s_and_b64 exec, exec, vcc
      s_cbranch_execnz retry
    s_mov_b64 exec, s[8:9]
    s_endpgm
    """
    karg = mem.alloc(16)
    mem.write(karg, np.array([counter], np.uint64))
    run_program(asm, mem, grid=(4, 1, 1), block=(128, 1, 1), kernarg=karg)
    got = mem.read(counter, 8).view(U)
    want = 4 * sum(range(1, 129))
    assert got[0] == want and got[1] == want


def test_buffer_load_out_of_range_returns_zero_and_store_dropped():
    mem = Memory()
    buf = mem.alloc(256)
    mem.write(buf, np.arange(64, dtype=U) + 1)
    out = mem.alloc(256)
    karg = mem.alloc(32)
    mem.write(karg, np.array([buf, out], np.uint64))
    # V#: base, stride 0, num_records = 100 bytes (25 dwords)
    asm = """
    s_load_dwordx4 s[4:7], s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    s_mov_b32 s8, s4
    s_and_b32 s9, s5, 0xffff
    s_movk_i32 s10, 100
    s_mov_b32 s11, 0x27000
    v_lshlrev_b32 v1, 2, v0
    buffer_load_dword v2, v1, s[8:11], 0 offen
    s_waitcnt vmcnt(0)
    v_add_u32 v2, 1000, v2
    buffer_store_dword v2, v1, s[8:11], 0 offen offset:8
    global_store_dword v1, v2, s[6:7]
    s_endpgm
    """
    run_program(asm, mem, kernarg=karg)
    got = mem.read(out, 256).view(U)
    want = np.where(np.arange(64) < 25, np.arange(64) + 1, 0) + 1000
    np.testing.assert_array_equal(got, want)
    after = mem.read(buf, 256).view(U)
    # stores with offset 8: lanes whose offset+8+4 <= 100 (lanes 0..22) wrote dword t+2
    expect = np.arange(64, dtype=U) + 1
    for t in range(64):
        if 4 * t + 8 + 4 <= 100:
            expect[t + 2] = want[t]
    np.testing.assert_array_equal(after, expect)


def test_global_sub_dword_and_x4_and_flat():
    mem = Memory()
    src = mem.alloc(1024)
    data = np.random.default_rng(3).integers(0, 256, 1024).astype(np.uint8)
    mem.write(src, data)
    out = mem.alloc(64 * 16)
    karg = mem.alloc(32)
    mem.write(karg, np.array([src, out], np.uint64))
    asm = """
    s_load_dwordx4 s[4:7], s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    v_lshlrev_b32 v1, 4, v0
    global_load_dwordx4 v[4:7], v1, s[4:5]
    global_load_sbyte v8, v0, s[4:5] offset:3
    global_load_ushort v9, v1, s[4:5] offset:2
    v_mov_b32 v10, s6
    v_mov_b32 v11, s7
    v_add_co_u32 v10, vcc, v10, v1
    v_addc_co_u32 v11, vcc, 0, v11, vcc
    s_waitcnt vmcnt(0)
    v_add_u32 v4, v4, v8
    v_add_u32 v5, v5, v9
    flat_store_dwordx4 v[10:11], v[4:7]
    s_endpgm
    """
    run_program(asm, mem, kernarg=karg)
    got = mem.read(out, 1024).view(U).reshape(64, 4)
    d32 = data.view(U).reshape(64, 4)
    sb = data[np.arange(64) + 3].view(np.int8).astype(np.int64)
    us = data.view(np.uint16)[(np.arange(64) * 16 + 2) // 2].astype(np.int64)
    np.testing.assert_array_equal(got[:, 0], (d32[:, 0].astype(np.int64) + sb).astype(U))
    np.testing.assert_array_equal(got[:, 1], (d32[:, 1].astype(np.int64) + us).astype(U))
    np.testing.assert_array_equal(got[:, 2:], d32[:, 2:])


def test_partial_wave_exec_and_workitem_ids():
    body = "v_mov_b32 v20, v0"
    (o,), st = run_lanes(body, [], 1, block=100)
    np.testing.assert_array_equal(o, np.arange(100))
    # 3D ids
    mem = Memory()
    out = mem.alloc(4 * 3 * 96)
    karg = mem.alloc(16)
    mem.write(karg, np.array([out], np.uint64))
    asm = """
    s_load_dwordx2 s[4:5], s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    v_mad_u32_u24 v3, v2, 12, 0
    v_mad_u32_u24 v3, v1, 4, v3
    v_add_u32 v3, v3, v0
    v_mul_u32_u24 v3, 12, v3
    global_store_dword v3, v0, s[4:5]
    global_store_dword v3, v1, s[4:5] offset:4
    global_store_dword v3, v2, s[4:5] offset:8
    s_endpgm
    """
    run_program(asm, mem, block=(4, 3, 8), kernarg=karg, vgpr_workitem_id=2)
    got = mem.read(out, 4 * 3 * 96).view(U).reshape(96, 3)
    t = np.arange(96)
    np.testing.assert_array_equal(got, np.stack([t % 4, (t // 4) % 3, t // 12], axis=1))


def test_smem_soe_forms_and_counters():
    mem = Memory()
    tab = mem.alloc(256)
    mem.write(tab, np.arange(64, dtype=U) * 7)
    karg = mem.alloc(16)
    mem.write(karg, np.array([tab], np.uint64))
    out = mem.alloc(64 * 4 * 3)
    body_asm = f"""
    s_load_dwordx2 s[4:5], s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    s_mov_b32 s6, 16
    s_load_dword s8, s[4:5], s6
    s_load_dword s9, s[4:5], s6 offset:0x8
    s_load_dwordx4 s[12:15], s[4:5], 0x20
    s_waitcnt lgkmcnt(0)
    s_add_u32 s8, s8, s9
    s_add_u32 s8, s8, s15
    v_mov_b32 v1, s8
    s_mov_b32 s20, {out & 0xffffffff}
    s_mov_b32 s21, {out >> 32}
    v_lshlrev_b32 v2, 2, v0
    global_store_dword v2, v1, s[20:21]
    s_endpgm
    """
    _, st = run_program(body_asm, mem, kernarg=karg)
    got = mem.read(out, 256).view(U)
    assert np.all(got == 7 * (4 + 6 + 11))
    assert st.smem_bytes_read == 8 + 4 + 4 + 16
    assert st.global_bytes_written == 256
    assert st.by_class["smem"] == 4 and st.by_mnemonic["s_load_dword"] == 2
