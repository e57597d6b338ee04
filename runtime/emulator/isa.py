"""GFX9 (Vega, gfx906) instruction-set tables, as data.

Each encoding has an opcode -> mnemonic table; operand widths (in dwords) are
derived from the mnemonic's type suffixes with a small override table.  The
numbers follow the "Vega Instruction Set Architecture" reference guide (AMD,
2017) and were checked against LLVM's assembler (``-show-encoding``) and
disassembler; ``tests/test_emu_decode.py`` keeps checking them.

Nothing here executes anything: :mod:`.decode` turns bytes into
:class:`~.decode.Instr` objects with these tables and :mod:`.core` gives them
semantics.
"""

from __future__ import annotations

import struct


def _table(text: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for line in text.strip().splitlines():
        for item in line.split(","):
            item = item.strip()
            if not item:
                continue
            num, name = item.split()
            out[int(num, 0)] = name
    return out


SOP2 = _table("""
0 s_add_u32, 1 s_sub_u32, 2 s_add_i32, 3 s_sub_i32, 4 s_addc_u32, 5 s_subb_u32,
6 s_min_i32, 7 s_min_u32, 8 s_max_i32, 9 s_max_u32, 10 s_cselect_b32, 11 s_cselect_b64,
12 s_and_b32, 13 s_and_b64, 14 s_or_b32, 15 s_or_b64, 16 s_xor_b32, 17 s_xor_b64,
18 s_andn2_b32, 19 s_andn2_b64, 20 s_orn2_b32, 21 s_orn2_b64, 22 s_nand_b32, 23 s_nand_b64,
24 s_nor_b32, 25 s_nor_b64, 26 s_xnor_b32, 27 s_xnor_b64, 28 s_lshl_b32, 29 s_lshl_b64,
30 s_lshr_b32, 31 s_lshr_b64, 32 s_ashr_i32, 33 s_ashr_i64, 34 s_bfm_b32, 35 s_bfm_b64,
36 s_mul_i32, 37 s_bfe_u32, 38 s_bfe_i32, 39 s_bfe_u64, 40 s_bfe_i64, 41 s_cbranch_g_fork,
42 s_absdiff_i32, 43 s_rfe_restore_b64, 44 s_mul_hi_u32, 45 s_mul_hi_i32,
46 s_lshl1_add_u32, 47 s_lshl2_add_u32, 48 s_lshl3_add_u32, 49 s_lshl4_add_u32,
50 s_pack_ll_b32_b16, 51 s_pack_lh_b32_b16, 52 s_pack_hh_b32_b16
""")

SOPK = _table("""
0 s_movk_i32, 1 s_cmovk_i32, 2 s_cmpk_eq_i32, 3 s_cmpk_lg_i32, 4 s_cmpk_gt_i32, 5 s_cmpk_ge_i32,
6 s_cmpk_lt_i32, 7 s_cmpk_le_i32, 8 s_cmpk_eq_u32, 9 s_cmpk_lg_u32, 10 s_cmpk_gt_u32,
11 s_cmpk_ge_u32, 12 s_cmpk_lt_u32, 13 s_cmpk_le_u32, 14 s_addk_i32, 15 s_mulk_i32,
16 s_cbranch_i_fork, 17 s_getreg_b32, 18 s_setreg_b32, 20 s_setreg_imm32_b32, 21 s_call_b64
""")

SOP1 = _table("""
0 s_mov_b32, 1 s_mov_b64, 2 s_cmov_b32, 3 s_cmov_b64, 4 s_not_b32, 5 s_not_b64, 6 s_wqm_b32,
7 s_wqm_b64, 8 s_brev_b32, 9 s_brev_b64, 10 s_bcnt0_i32_b32, 11 s_bcnt0_i32_b64,
12 s_bcnt1_i32_b32, 13 s_bcnt1_i32_b64, 14 s_ff0_i32_b32, 15 s_ff0_i32_b64, 16 s_ff1_i32_b32,
17 s_ff1_i32_b64, 18 s_flbit_i32_b32, 19 s_flbit_i32_b64, 20 s_flbit_i32, 21 s_flbit_i32_i64,
22 s_sext_i32_i8, 23 s_sext_i32_i16, 24 s_bitset0_b32, 25 s_bitset0_b64, 26 s_bitset1_b32,
27 s_bitset1_b64, 28 s_getpc_b64, 29 s_setpc_b64, 30 s_swappc_b64, 31 s_rfe_b64,
32 s_and_saveexec_b64, 33 s_or_saveexec_b64, 34 s_xor_saveexec_b64, 35 s_andn2_saveexec_b64,
36 s_orn2_saveexec_b64, 37 s_nand_saveexec_b64, 38 s_nor_saveexec_b64, 39 s_xnor_saveexec_b64,
40 s_quadmask_b32, 41 s_quadmask_b64, 42 s_movrels_b32, 43 s_movrels_b64, 44 s_movreld_b32,
45 s_movreld_b64, 46 s_cbranch_join, 48 s_abs_i32, 50 s_set_gpr_idx_idx,
51 s_andn1_saveexec_b64, 52 s_orn1_saveexec_b64, 53 s_andn1_wrexec_b64, 54 s_andn2_wrexec_b64,
55 s_bitreplicate_b64_b32
""")

SOPC = _table("""
0 s_cmp_eq_i32, 1 s_cmp_lg_i32, 2 s_cmp_gt_i32, 3 s_cmp_ge_i32, 4 s_cmp_lt_i32, 5 s_cmp_le_i32,
6 s_cmp_eq_u32, 7 s_cmp_lg_u32, 8 s_cmp_gt_u32, 9 s_cmp_ge_u32, 10 s_cmp_lt_u32, 11 s_cmp_le_u32,
12 s_bitcmp0_b32, 13 s_bitcmp1_b32, 14 s_bitcmp0_b64, 15 s_bitcmp1_b64, 16 s_setvskip,
17 s_set_gpr_idx_on, 18 s_cmp_eq_u64, 19 s_cmp_lg_u64
""")

SOPP = _table("""
0 s_nop, 1 s_endpgm, 2 s_branch, 3 s_wakeup, 4 s_cbranch_scc0, 5 s_cbranch_scc1,
6 s_cbranch_vccz, 7 s_cbranch_vccnz, 8 s_cbranch_execz, 9 s_cbranch_execnz, 10 s_barrier,
11 s_setkill, 12 s_waitcnt, 13 s_sethalt, 14 s_sleep, 15 s_setprio, 16 s_sendmsg,
17 s_sendmsghalt, 18 s_trap, 19 s_icache_inv, 20 s_incperflevel, 21 s_decperflevel,
22 s_ttracedata, 23 s_cbranch_cdbgsys, 24 s_cbranch_cdbguser, 25 s_cbranch_cdbgsys_or_user,
26 s_cbranch_cdbgsys_and_user, 27 s_endpgm_saved, 28 s_set_gpr_idx_off, 29 s_set_gpr_idx_mode
""")

SMEM = _table("""
0 s_load_dword, 1 s_load_dwordx2, 2 s_load_dwordx4, 3 s_load_dwordx8, 4 s_load_dwordx16,
8 s_buffer_load_dword, 9 s_buffer_load_dwordx2, 10 s_buffer_load_dwordx4,
11 s_buffer_load_dwordx8, 12 s_buffer_load_dwordx16,
16 s_store_dword, 17 s_store_dwordx2, 18 s_store_dwordx4,
24 s_buffer_store_dword, 25 s_buffer_store_dwordx2, 26 s_buffer_store_dwordx4,
32 s_dcache_inv, 33 s_dcache_wb, 34 s_dcache_inv_vol, 35 s_dcache_wb_vol, 36 s_memtime,
37 s_memrealtime, 38 s_atc_probe, 39 s_atc_probe_buffer
""")

VOP2 = _table("""
0 v_cndmask_b32, 1 v_add_f32, 2 v_sub_f32, 3 v_subrev_f32, 4 v_mul_legacy_f32, 5 v_mul_f32,
6 v_mul_i32_i24, 7 v_mul_hi_i32_i24, 8 v_mul_u32_u24, 9 v_mul_hi_u32_u24, 10 v_min_f32,
11 v_max_f32, 12 v_min_i32, 13 v_max_i32, 14 v_min_u32, 15 v_max_u32, 16 v_lshrrev_b32,
17 v_ashrrev_i32, 18 v_lshlrev_b32, 19 v_and_b32, 20 v_or_b32, 21 v_xor_b32, 22 v_mac_f32,
23 v_madmk_f32, 24 v_madak_f32, 25 v_add_co_u32, 26 v_sub_co_u32, 27 v_subrev_co_u32,
28 v_addc_co_u32, 29 v_subb_co_u32, 30 v_subbrev_co_u32, 31 v_add_f16, 32 v_sub_f16,
33 v_subrev_f16, 34 v_mul_f16, 35 v_mac_f16, 36 v_madmk_f16, 37 v_madak_f16, 38 v_add_u16,
39 v_sub_u16, 40 v_subrev_u16, 41 v_mul_lo_u16, 42 v_lshlrev_b16, 43 v_lshrrev_b16,
44 v_ashrrev_i16, 45 v_max_f16, 46 v_min_f16, 47 v_max_u16, 48 v_max_i16, 49 v_min_u16,
50 v_min_i16, 51 v_ldexp_f16, 52 v_add_u32, 53 v_sub_u32, 54 v_subrev_u32, 59 v_fmac_f32,
61 v_xnor_b32
""")

VOP1 = _table("""
0 v_nop, 1 v_mov_b32, 2 v_readfirstlane_b32, 3 v_cvt_i32_f64, 4 v_cvt_f64_i32, 5 v_cvt_f32_i32,
6 v_cvt_f32_u32, 7 v_cvt_u32_f32, 8 v_cvt_i32_f32, 10 v_cvt_f16_f32, 11 v_cvt_f32_f16,
12 v_cvt_rpi_i32_f32, 13 v_cvt_flr_i32_f32, 14 v_cvt_off_f32_i4, 15 v_cvt_f32_f64,
16 v_cvt_f64_f32, 17 v_cvt_f32_ubyte0, 18 v_cvt_f32_ubyte1, 19 v_cvt_f32_ubyte2,
20 v_cvt_f32_ubyte3, 21 v_cvt_u32_f64, 22 v_cvt_f64_u32, 23 v_trunc_f64, 24 v_ceil_f64,
25 v_rndne_f64, 26 v_floor_f64, 27 v_fract_f32, 28 v_trunc_f32, 29 v_ceil_f32,
30 v_rndne_f32, 31 v_floor_f32, 32 v_exp_f32, 33 v_log_f32, 34 v_rcp_f32,
35 v_rcp_iflag_f32, 36 v_rsq_f32, 37 v_rcp_f64, 38 v_rsq_f64, 39 v_sqrt_f32, 40 v_sqrt_f64,
41 v_sin_f32, 42 v_cos_f32, 43 v_not_b32, 44 v_bfrev_b32, 45 v_ffbh_u32, 46 v_ffbl_b32,
47 v_ffbh_i32, 48 v_frexp_exp_i32_f64, 49 v_frexp_mant_f64, 50 v_fract_f64,
51 v_frexp_exp_i32_f32, 52 v_frexp_mant_f32, 53 v_clrexcp, 81 v_swap_b32
""")

_CMP_F = ["f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq", "nlt", "tru"]
_CMP_I = ["f", "lt", "eq", "le", "gt", "ne", "ge", "t"]


def _vopc() -> dict[int, str]:
    t: dict[int, str] = {0x10: "v_cmp_class_f32", 0x11: "v_cmpx_class_f32",
                         0x12: "v_cmp_class_f64", 0x13: "v_cmpx_class_f64"}
    for base, kind, ty in ((0x40, "cmp", "f32"), (0x50, "cmpx", "f32"),
                           (0x60, "cmp", "f64"), (0x70, "cmpx", "f64")):
        for i, c in enumerate(_CMP_F):
            t[base + i] = f"v_{kind}_{c}_{ty}"
    for base, kind, ty in ((0xC0, "cmp", "i32"), (0xC8, "cmp", "u32"), (0xD0, "cmpx", "i32"),
                           (0xD8, "cmpx", "u32"), (0xE0, "cmp", "i64"), (0xE8, "cmp", "u64"),
                           (0xF0, "cmpx", "i64"), (0xF8, "cmpx", "u64")):
        for i, c in enumerate(_CMP_I):
            t[base + i] = f"v_{kind}_{c}_{ty}"
    return t


VOPC = _vopc()

#: VOP3-only opcodes (VOP3 also encodes VOPC at op, VOP2 at 0x100+op, VOP1 at 0x140+op).
VOP3_ONLY = _table("""
0x1c0 v_mad_legacy_f32, 0x1c1 v_mad_f32, 0x1c2 v_mad_i32_i24, 0x1c3 v_mad_u32_u24,
0x1c8 v_bfe_u32, 0x1c9 v_bfe_i32, 0x1ca v_bfi_b32, 0x1cb v_fma_f32, 0x1cc v_fma_f64,
0x1ce v_alignbit_b32, 0x1cf v_alignbyte_b32, 0x1d0 v_min3_f32, 0x1d1 v_min3_i32,
0x1d2 v_min3_u32, 0x1d3 v_max3_f32, 0x1d4 v_max3_i32, 0x1d5 v_max3_u32, 0x1d6 v_med3_f32,
0x1d7 v_med3_i32, 0x1d8 v_med3_u32, 0x1e0 v_div_scale_f32, 0x1e1 v_div_scale_f64,
0x1e2 v_div_fmas_f32, 0x1e3 v_div_fmas_f64, 0x1de v_div_fixup_f32, 0x1df v_div_fixup_f64,
0x1e8 v_mad_u64_u32, 0x1e9 v_mad_i64_i32,
0x1f3 v_xad_u32, 0x1fd v_lshl_add_u32, 0x1fe v_add_lshl_u32, 0x1ff v_add3_u32,
0x200 v_lshl_or_b32, 0x201 v_and_or_b32, 0x202 v_or3_b32,
0x280 v_add_f64, 0x281 v_mul_f64, 0x282 v_min_f64, 0x283 v_max_f64, 0x284 v_ldexp_f64,
0x285 v_mul_lo_u32, 0x286 v_mul_hi_u32, 0x287 v_mul_hi_i32, 0x288 v_ldexp_f32,
0x289 v_readlane_b32, 0x28a v_writelane_b32, 0x28b v_bcnt_u32_b32, 0x28c v_mbcnt_lo_u32_b32,
0x28d v_mbcnt_hi_u32_b32, 0x28f v_lshlrev_b64, 0x290 v_lshrrev_b64, 0x291 v_ashrrev_i64,
0x293 v_bfm_b32
""")

FLAT_OPS = _table("""
16 load_ubyte, 17 load_sbyte, 18 load_ushort, 19 load_sshort, 20 load_dword, 21 load_dwordx2,
22 load_dwordx3, 23 load_dwordx4, 24 store_byte, 26 store_short, 28 store_dword,
29 store_dwordx2, 30 store_dwordx3, 31 store_dwordx4,
64 atomic_swap, 65 atomic_cmpswap, 66 atomic_add, 67 atomic_sub, 68 atomic_smin, 69 atomic_umin,
70 atomic_smax, 71 atomic_umax, 72 atomic_and, 73 atomic_or, 74 atomic_xor, 75 atomic_inc,
76 atomic_dec, 96 atomic_swap_x2, 97 atomic_cmpswap_x2, 98 atomic_add_x2, 99 atomic_sub_x2,
100 atomic_smin_x2, 101 atomic_umin_x2, 102 atomic_smax_x2, 103 atomic_umax_x2,
104 atomic_and_x2, 105 atomic_or_x2, 106 atomic_xor_x2, 107 atomic_inc_x2, 108 atomic_dec_x2
""")

MUBUF_OPS = dict(FLAT_OPS)

DS = _table("""
0 ds_add_u32, 1 ds_sub_u32, 2 ds_rsub_u32, 3 ds_inc_u32, 4 ds_dec_u32, 5 ds_min_i32,
6 ds_max_i32, 7 ds_min_u32, 8 ds_max_u32, 9 ds_and_b32, 10 ds_or_b32, 11 ds_xor_b32,
13 ds_write_b32, 14 ds_write2_b32, 15 ds_write2st64_b32, 20 ds_nop, 30 ds_write_b8,
31 ds_write_b16, 32 ds_add_rtn_u32, 33 ds_sub_rtn_u32, 34 ds_rsub_rtn_u32, 35 ds_inc_rtn_u32,
36 ds_dec_rtn_u32, 37 ds_min_rtn_i32, 38 ds_max_rtn_i32, 39 ds_min_rtn_u32, 40 ds_max_rtn_u32,
41 ds_and_rtn_b32, 42 ds_or_rtn_b32, 43 ds_xor_rtn_b32, 45 ds_wrxchg_rtn_b32,
54 ds_read_b32, 55 ds_read2_b32, 56 ds_read2st64_b32, 57 ds_read_i8, 58 ds_read_u8,
59 ds_read_i16, 60 ds_read_u16, 77 ds_write_b64, 78 ds_write2_b64, 79 ds_write2st64_b64,
118 ds_read_b64, 119 ds_read2_b64, 120 ds_read2st64_b64, 222 ds_write_b96,
223 ds_write_b128, 254 ds_read_b96, 255 ds_read_b128
""")

# --------------------------------------------------------------------------
# Operand encodings (9-bit VOP source field; SALU uses the low 8 bits).

SGPR_LIMIT = 102          # s0..s101 are general SGPRs on GFX9
FLAT_SCRATCH_LO = 102
XNACK_MASK_LO = 104
VCC_LO = 106
VCC_HI = 107
TTMP0 = 108
M0 = 124
NULL_125 = 125
EXEC_LO = 126
EXEC_HI = 127
INLINE_INT_ZERO = 128
VCCZ = 251
EXECZ = 252
SCC = 253
LDS_DIRECT = 254
LITERAL = 255
SDWA = 249
DPP = 250
VGPR0 = 256

#: Named scalar registers as LLVM prints them (single dword).
SPECIAL_NAMES = {
    102: "flat_scratch_lo", 103: "flat_scratch_hi", 104: "xnack_mask_lo", 105: "xnack_mask_hi",
    106: "vcc_lo", 107: "vcc_hi", 124: "m0", 126: "exec_lo", 127: "exec_hi",
    235: "src_shared_base", 236: "src_shared_limit", 237: "src_private_base",
    238: "src_private_limit", 239: "src_pops_exiting_wave_id",
    251: "src_vccz", 252: "src_execz", 253: "src_scc", 254: "src_lds_direct",
}
#: 64-bit register pairs with names.
PAIR_NAMES = {102: "flat_scratch", 104: "xnack_mask", 106: "vcc", 126: "exec"}

_INV_2PI = 0.15915494309189535

#: Inline float constants: code -> (value, f32 bits, f64 bits, LLVM text).
INLINE_FLOATS: dict[int, tuple[float, int, int, str]] = {}
for _code, _val, _txt in ((240, 0.5, "0.5"), (241, -0.5, "-0.5"), (242, 1.0, "1.0"),
                          (243, -1.0, "-1.0"), (244, 2.0, "2.0"), (245, -2.0, "-2.0"),
                          (246, 4.0, "4.0"), (247, -4.0, "-4.0")):
    INLINE_FLOATS[_code] = (_val, struct.unpack("<I", struct.pack("<f", _val))[0],
                            struct.unpack("<Q", struct.pack("<d", _val))[0], _txt)
INLINE_FLOATS[248] = (_INV_2PI, 0x3E22F983, 0x3FC45F306DC9C882, "0.15915494")


def inline_int(code: int) -> int | None:
    """The integer an inline-constant code stands for (128..208), else None."""
    if 128 <= code <= 192:
        return code - 128
    if 193 <= code <= 208:
        return 192 - code
    return None


# --------------------------------------------------------------------------
# Operand widths (dwords) from the mnemonic.

def _suffix_width(t: str) -> int:
    return 2 if t.endswith("64") else 1


#: mnemonic -> (dst dwords, src dwords...) where the suffix rule is wrong.
WIDTH_OVERRIDES: dict[str, tuple[int, ...]] = {
    "v_mad_u64_u32": (2, 1, 1, 2), "v_mad_i64_i32": (2, 1, 1, 2),
    "v_lshlrev_b64": (2, 1, 2), "v_lshrrev_b64": (2, 1, 2), "v_ashrrev_i64": (2, 1, 2),
    "v_ldexp_f64": (2, 2, 1), "v_cmp_class_f64": (2, 2, 1), "v_cmpx_class_f64": (2, 2, 1),
    "v_div_fixup_f64": (2, 2, 2, 2), "v_div_fmas_f64": (2, 2, 2, 2), "v_div_scale_f64": (2, 2, 2, 2),
    "v_frexp_exp_i32_f64": (1, 2), "v_frexp_mant_f64": (2, 2),
    "v_readlane_b32": (1, 1, 1), "v_writelane_b32": (1, 1, 1),
    "s_lshl_b64": (2, 2, 1), "s_lshr_b64": (2, 2, 1), "s_ashr_i64": (2, 2, 1),
    "s_bfe_u64": (2, 2, 1), "s_bfe_i64": (2, 2, 1), "s_bfm_b64": (2, 1, 1),
    "s_bcnt0_i32_b64": (1, 2), "s_bcnt1_i32_b64": (1, 2), "s_ff0_i32_b64": (1, 2),
    "s_ff1_i32_b64": (1, 2), "s_flbit_i32_b64": (1, 2), "s_flbit_i32_i64": (1, 2),
    "s_bitcmp0_b64": (0, 2, 1), "s_bitcmp1_b64": (0, 2, 1),
    "s_bitset0_b64": (2, 1), "s_bitset1_b64": (2, 1), "s_getpc_b64": (2,), "s_setpc_b64": (0, 2),
    "s_swappc_b64": (2, 2), "s_bitreplicate_b64_b32": (2, 1), "s_quadmask_b64": (2, 2),
}


def widths(mnemonic: str, nsrc: int) -> tuple[int, ...]:
    """(dst width, src widths...) in dwords for a VALU/SALU mnemonic."""
    base = mnemonic
    for suf in ("_e32", "_e64"):
        if base.endswith(suf):
            base = base[: -len(suf)]
    if base in WIDTH_OVERRIDES:
        w = WIDTH_OVERRIDES[base]
        return w + (w[-1],) * (1 + nsrc - len(w)) if len(w) < 1 + nsrc else w[: 1 + nsrc]
    parts = base.split("_")
    types = [p for p in parts if p[:1] in "fiub" and p[1:].isdigit()]
    if base.startswith("v_cvt_") and len(types) >= 2:
        return (_suffix_width(types[0]),) + (_suffix_width(types[1]),) * nsrc
    if base.startswith(("v_cmp", "s_cmp")):
        w = _suffix_width(types[-1]) if types else 1
        return (2 if base.startswith("v_") else 0,) + (w,) * nsrc
    w = _suffix_width(types[-1]) if types else 1
    return (w,) + (w,) * nsrc
