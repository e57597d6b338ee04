"""Decoder round trip: LLVM's `-show-encoding` output is the oracle.

Each line is assembled by LLVM; its encoding bytes are decoded by the emulator and
the mnemonic, operands and size must match the text LLVM printed (modulo the
_e32/_e64 suffixes).
"""

import re

import pytest

from vlpc.runtime.emulator.decode import decode_at
from vlpc.runtime.toolchain import find_toolchain
from vlpc.targets import TargetId

LINES = """
s_add_u32 s0, s1, s2
s_addc_u32 s3, s4, 0x12345
s_sub_i32 s5, -16, 64
s_mul_i32 s6, s7, s8
s_and_b64 s[0:1], s[2:3], exec
s_or_b64 vcc, vcc, s[4:5]
s_andn2_b64 exec, exec, vcc
s_lshl_b64 s[4:5], s[6:7], 3
s_lshl2_add_u32 s0, s1, s2
s_bfe_u32 s0, s1, 0x80004
s_cselect_b64 s[0:1], s[2:3], 0
s_mov_b32 m0, s5
s_mov_b64 s[4:5], exec
s_not_b32 s1, s2
s_and_saveexec_b64 s[8:9], vcc
s_or_saveexec_b64 s[10:11], s[12:13]
s_getpc_b64 s[4:5]
s_setpc_b64 s[6:7]
s_swappc_b64 s[4:5], s[6:7]
s_movk_i32 s0, 0x1234
s_cmpk_lg_u32 s3, 0x20
s_addk_i32 s4, 0x10
s_cmp_eq_u32 s0, s1
s_cmp_lt_i32 s0, 5
s_cmp_lg_u64 s[0:1], s[2:3]
s_bitcmp1_b32 s0, 3
s_nop 3
s_endpgm
s_barrier
s_branch 12
s_cbranch_scc0 -3
s_cbranch_vccnz 7
s_cbranch_execz 2
s_waitcnt vmcnt(0)
s_waitcnt lgkmcnt(0)
s_waitcnt vmcnt(5) lgkmcnt(2)
s_setprio 2
s_sleep 1
s_load_dword s1, s[0:1], 0x10
s_load_dwordx2 s[2:3], s[4:5], s6
s_load_dwordx16 s[16:31], s[0:1], 0x40
s_load_dwordx8 s[8:15], s[2:3], s4 offset:0x20
s_buffer_load_dwordx4 s[8:11], s[4:7], 0x100
s_dcache_wb
v_mov_b32 v0, v1
v_mov_b32 v0, s5
v_mov_b32 v2, 0x3f800001
v_mov_b32 v3, 0.5
v_mov_b32 v3, -4.0
v_mov_b32 v3, 0.15915494
v_readfirstlane_b32 s3, v7
v_cvt_f32_i32 v1, v2
v_cvt_f64_f32 v[2:3], v4
v_rcp_f32 v1, v2
v_not_b32 v1, v2
v_add_f32 v1, v2, v3
v_mul_f32 v1, -1.0, v3
v_fmac_f32 v4, v5, v6
v_mac_f32 v4, s5, v6
v_add_co_u32 v0, vcc, v1, v2
v_addc_co_u32 v0, vcc, 0, v2, vcc
v_sub_co_u32 v0, vcc, s3, v2
v_add_u32 v0, 64, v1
v_lshlrev_b32 v1, 2, v0
v_and_b32 v1, 0xff, v3
v_cndmask_b32 v1, v2, v3, vcc
v_madmk_f32 v1, v2, 0x41000000, v3
v_madak_f32 v1, v2, v3, 0x41000000
v_cmp_lt_f32 vcc, v1, v2
v_cmp_eq_u32 vcc, 5, v2
v_cmpx_gt_i32 vcc, s1, v2
v_cmp_ne_u64 vcc, v[0:1], v[2:3]
v_cmp_lt_f32_e64 s[2:3], v1, 0.5
v_cmp_class_f32 vcc, v1, v2
v_fma_f32 v4, v68, s32, v4
v_fma_f32 v4, -v1, |v2|, v3
v_fma_f64 v[0:1], v[2:3], s[4:5], v[0:1]
v_fma_f64 v[0:1], -v[2:3], |v[4:5]|, v[0:1] clamp mul:2
v_mad_u32_u24 v1, v2, v3, v4
v_mad_u64_u32 v[0:1], s[4:5], v2, v3, v[4:5]
v_add_co_u32_e64 v0, s[4:5], v1, -1.0
v_addc_co_u32_e64 v0, s[6:7], v1, v2, s[4:5]
v_cndmask_b32_e64 v0, v1, v2, s[4:5]
v_add_u32_e64 v0, v1, v2 clamp
v_add_f32_e64 v0, v1, v2 div:2
v_mul_lo_u32 v1, v2, v3
v_mul_hi_u32 v1, v2, s3
v_lshl_add_u32 v1, v2, 3, v4
v_add_lshl_u32 v1, v2, v3, 2
v_add3_u32 v1, v2, v3, v4
v_bfe_u32 v1, v2, 8, 8
v_readlane_b32 s1, v2, 5
v_writelane_b32 v1, s2, 3
v_lshlrev_b64 v[0:1], 3, v[2:3]
v_add_f64 v[0:1], v[2:3], v[4:5]
v_mul_f64 v[0:1], v[2:3], 2.0
v_max_f64 v[0:1], v[2:3], v[4:5]
v_mbcnt_lo_u32_b32 v1, -1, 0
global_load_dword v8, v[2:3], off offset:-16
global_load_dwordx4 v[8:11], v2, s[20:21] offset:16
global_load_ubyte v1, v2, s[4:5]
global_load_sshort v1, v[2:3], off
global_store_dword v[2:3], v4, off
global_store_dwordx2 v2, v[4:5], s[6:7] offset:8
global_atomic_add v2, v4, s[0:1]
global_atomic_cmpswap v1, v2, v[4:5], s[0:1] glc
global_atomic_add_x2 v[0:1], v2, v[4:5], s[0:1] glc
global_atomic_smax v[2:3], v4, off
flat_load_dword v1, v[2:3]
flat_store_dwordx4 v[2:3], v[4:7] offset:16
ds_read_b32 v1, v2
ds_read_b32 v1, v2 offset:64
ds_read_b64 v[0:1], v2 offset:8
ds_read_b128 v[4:7], v2
ds_read2_b32 v[0:1], v2 offset0:4 offset1:8
ds_read2st64_b64 v[0:3], v2 offset1:2
ds_write_b32 v1, v2
ds_write_b128 v1, v[4:7] offset:16
ds_write2_b32 v1, v2, v3 offset0:1 offset1:2
ds_write2st64_b64 v2, v[4:5], v[6:7] offset1:3
ds_add_u32 v1, v2
ds_add_rtn_u32 v0, v1, v2
buffer_load_dword v1, v2, s[4:7], s8 offen offset:12
buffer_load_dwordx4 v[4:7], off, s[8:11], 0
buffer_store_dword v1, v2, s[4:7], 0 idxen
buffer_atomic_add v1, v2, s[4:7], s3 offen glc
"""


def test_decoder_round_trip_against_llvm():
    tc = find_toolchain()
    out = tc.disassemble_encodings(LINES, TargetId.parse("gfx906"))
    pairs = []
    for line in out.splitlines():
        m = re.match(r"\s*(.*?)\s*; encoding: \[(.*)\]", line)
        if m:
            pairs.append((m.group(1), bytes(int(x, 16) for x in m.group(2).split(","))))
    n_in = len([ln for ln in LINES.strip().splitlines() if ln.strip()])
    assert len(pairs) == n_in

    def norm(t):
        t = re.sub(r"\s+", " ", t).strip()
        return re.sub(r"_e32\b|_e64\b", "", t)

    bad = []
    for text, enc in pairs:
        ins = decode_at(enc + b"\0" * 8, 0)
        if ins.size != len(enc) or norm(ins.text) != norm(text) or not ins.supported:
            bad.append((text, ins.text, ins.size, len(enc)))
    assert not bad, "\n".join(f"LLVM: {a}\n MINE: {b} (size {c} vs {d})" for a, b, c, d in bad)


def test_graphics_encodings_decode_named_and_unsupported():
    tc = find_toolchain()
    out = tc.disassemble_encodings("image_load v[0:3], v[4:5], s[8:15] dmask:0xf unorm\n"
                                   "exp mrt0 v0, v1, v2, v3\n", TargetId.parse("gfx906"))
    encs = [bytes(int(x, 16) for x in m.split(",")) for m in re.findall(r"encoding: \[(.*)\]", out)]
    names = [decode_at(e, 0) for e in encs]
    assert [i.mnemonic for i in names] == ["image_load", "exp"]
    assert all(not i.supported and i.size == 8 for i in names)
