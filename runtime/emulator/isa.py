"""GFX9 (Vega, gfx906) instruction-set tables, as data.

Each encoding's opcode -> mnemonic map comes from the one gfx906 table,
:mod:`vlpc.isa` (generated through LLVM's disassembler, checked against its
assembler by ``tests/isa/test_isa_table.py``), and so do the operand widths (in dwords,
:func:`widths`, from the table's operands), the implicit SCC operands
(:data:`SCC_WRITERS`, :data:`SCC_READERS`) and the execution classes
(:data:`EXECUTION_CLASSES`, :func:`execution_class`: :mod:`vlpc.isa.classes`).

Nothing here executes anything: :mod:`.decode` turns bytes into
:class:`~.decode.Instr` objects with these tables and :mod:`.core` gives them
semantics.
"""

from __future__ import annotations

import re
import struct


from vlpc import isa as _table
from vlpc.isa.classes import EXECUTION_CLASSES, execution_class  # noqa: F401  (the core's classes)


def _strip(encoding: str, prefix: str) -> dict[int, str]:
    return {op: mn[len(prefix):] for op, mn in _table.opcodes(encoding).items()}


# opcode -> mnemonic per encoding class, from the gfx906 table (vlpc/isa/gfx906.json)
SOP2 = _table.opcodes("SOP2")
SOPK = _table.opcodes("SOPK")
SOP1 = _table.opcodes("SOP1")
SOPC = _table.opcodes("SOPC")
SOPP = _table.opcodes("SOPP")
SMEM = _table.opcodes("SMEM")
VOP2 = _table.opcodes("VOP2")
VOP1 = _table.opcodes("VOP1")
VOPC = _table.opcodes("VOPC")
VOP3P = _table.opcodes("VOP3P")
VINTRP = _table.opcodes("VINTRP")
DS = _table.opcodes("DS")
MIMG = _table.opcodes("MIMG")
#: VOP3 opcodes from 0x1c0: the VOP3-only instructions and the VOP3 forms of VINTRP
#: (VOP3 also encodes VOPC at op, VOP2 at 0x100+op, VOP1 at 0x140+op).
VOP3_ONLY = {op: mn for op, mn in _table.vop3_opcodes().items() if op >= 0x1C0}
#: FLAT/GLOBAL/SCRATCH opcode -> operation name without the segment prefix
FLAT_SEGMENT_OPS = {"flat": _strip("FLAT", "flat_"), "global": _strip("GLOBAL", "global_"),
                    "scratch": _strip("SCRATCH", "scratch_")}
FLAT_OPS = FLAT_SEGMENT_OPS["flat"]
MUBUF_OPS = _strip("MUBUF", "buffer_")
MTBUF_OPS = _strip("MTBUF", "tbuffer_")

#: Encodings whose every gfx906 mnemonic the base builders of :mod:`.semantics` execute (scalar
#: ALU: ``salu``; VOP2 and the VOP3b carry/scale forms: ``valu``).
_WHOLE_ENCODINGS = ("SOP1", "SOP2", "SOPK", "SOPC", "VOP2", "VOP3b")


def _core_executed() -> frozenset:
    """:data:`CORE_EXECUTED` from the gfx906 table: every mnemonic of :data:`_WHOLE_ENCODINGS`, and of
    the other base encodings those outside a family module's own forms -- SOPP but
    ``s_endpgm_ordered_ps_done`` (``salu_extra``), VOPC but the 16-bit compares (``f16``),
    FLAT/GLOBAL but the D16 forms (``vmem_d16``), MUBUF but the D16 and format forms and the L1
    invalidations (``vmem_d16``, ``vmem_format``, ``salu_extra``), SMEM but the atomics, scratch and
    discard forms (``smem``) -- plus the VOP1, VOP3a and DS mnemonics the base builders implement
    (:data:`_CORE_VOP1_VOP3A_DS`)."""
    out = set(_CORE_VOP1_VOP3A_DS)
    for r in _table.table().values():
        enc, mn = r.encoding, r.mnemonic
        if (enc in _WHOLE_ENCODINGS
                or (enc == "SOPP" and mn != "s_endpgm_ordered_ps_done")
                or (enc == "VOPC" and not re.search(r"_[fiu]16$", mn))
                or (enc in ("FLAT", "GLOBAL") and "_d16" not in mn)
                or (enc == "MUBUF" and "_d16" not in mn and "format" not in mn and "wbinvl1" not in mn)
                or (enc == "SMEM" and not any(w in mn for w in ("atomic", "scratch", "discard")))):
            out.add(mn)
    return frozenset(out)


#: The VOP1, VOP3a and DS mnemonics the base builders implement (the rest of those encodings are
#: the family modules': 16-bit, packed, SAD, cube, interpolation, the DS 64-bit/float atomics, ...).
_CORE_VOP1_VOP3A_DS = frozenset({
    "ds_add_rtn_u32", "ds_add_u32", "ds_and_b32", "ds_and_rtn_b32", "ds_dec_rtn_u32", "ds_dec_u32",
    "ds_inc_rtn_u32", "ds_inc_u32", "ds_max_i32", "ds_max_rtn_i32", "ds_max_rtn_u32", "ds_max_u32",
    "ds_min_i32", "ds_min_rtn_i32", "ds_min_rtn_u32", "ds_min_u32", "ds_nop", "ds_or_b32", "ds_or_rtn_b32",
    "ds_read2_b32", "ds_read2_b64", "ds_read2st64_b32", "ds_read2st64_b64", "ds_read_b128", "ds_read_b32",
    "ds_read_b64", "ds_read_b96", "ds_read_i16", "ds_read_i8", "ds_read_u16", "ds_read_u8", "ds_rsub_rtn_u32",
    "ds_rsub_u32", "ds_sub_rtn_u32", "ds_sub_u32", "ds_write2_b32", "ds_write2_b64", "ds_write2st64_b32",
    "ds_write2st64_b64", "ds_write_b128", "ds_write_b16", "ds_write_b32", "ds_write_b64", "ds_write_b8",
    "ds_write_b96", "ds_wrxchg_rtn_b32", "ds_xor_b32", "ds_xor_rtn_b32", "v_add3_u32", "v_add_f64",
    "v_add_lshl_u32", "v_alignbit_b32", "v_alignbyte_b32", "v_and_or_b32", "v_ashrrev_i64", "v_bcnt_u32_b32",
    "v_bfe_i32", "v_bfe_u32", "v_bfi_b32", "v_bfm_b32", "v_bfrev_b32", "v_ceil_f32", "v_ceil_f64",
    "v_clrexcp", "v_cos_f32", "v_cvt_f16_f32", "v_cvt_f32_f16", "v_cvt_f32_f64", "v_cvt_f32_i32",
    "v_cvt_f32_u32", "v_cvt_f32_ubyte0", "v_cvt_f32_ubyte1", "v_cvt_f32_ubyte2", "v_cvt_f32_ubyte3",
    "v_cvt_f64_f32", "v_cvt_f64_i32", "v_cvt_f64_u32", "v_cvt_flr_i32_f32", "v_cvt_i32_f32", "v_cvt_i32_f64",
    "v_cvt_off_f32_i4", "v_cvt_rpi_i32_f32", "v_cvt_u32_f32", "v_cvt_u32_f64", "v_div_fixup_f32",
    "v_div_fixup_f64", "v_div_fmas_f32", "v_div_fmas_f64", "v_exp_f32", "v_ffbh_i32", "v_ffbh_u32",
    "v_ffbl_b32", "v_floor_f32", "v_floor_f64", "v_fma_f32", "v_fma_f64", "v_fract_f32", "v_fract_f64",
    "v_frexp_exp_i32_f32", "v_frexp_exp_i32_f64", "v_frexp_mant_f32", "v_frexp_mant_f64", "v_ldexp_f32",
    "v_ldexp_f64", "v_log_f32", "v_lshl_add_u32", "v_lshl_or_b32", "v_lshlrev_b64", "v_lshrrev_b64",
    "v_mad_f32", "v_mad_i32_i24", "v_mad_legacy_f32", "v_mad_u32_u24", "v_max3_f32", "v_max3_i32",
    "v_max3_u32", "v_max_f64", "v_mbcnt_hi_u32_b32", "v_mbcnt_lo_u32_b32", "v_med3_f32", "v_med3_i32",
    "v_med3_u32", "v_min3_f32", "v_min3_i32", "v_min3_u32", "v_min_f64", "v_mov_b32", "v_mul_f64",
    "v_mul_hi_i32", "v_mul_hi_u32", "v_mul_lo_u32", "v_nop", "v_not_b32", "v_or3_b32", "v_rcp_f32",
    "v_rcp_f64", "v_rcp_iflag_f32", "v_readfirstlane_b32", "v_readlane_b32", "v_rndne_f32", "v_rndne_f64",
    "v_rsq_f32", "v_rsq_f64", "v_sin_f32", "v_sqrt_f32", "v_sqrt_f64", "v_swap_b32", "v_trunc_f32",
    "v_trunc_f64", "v_writelane_b32", "v_xad_u32",
})

#: The mnemonics the executor's base builders (:mod:`.semantics`' ``BASE_BUILDERS``) were written
#: for (they dispatch by name prefix, so a mnemonic outside this set reaches them only through a
#: family module in :mod:`.semantics`, which registers it explicitly).
CORE_EXECUTED = _core_executed()


# --------------------------------------------------------------------------
# Implicit SCC operands (the uninitialised-register and waitcnt checkers read these).

def _scalar_mnemonics() -> frozenset:
    return frozenset(SOP1.values()) | frozenset(SOP2.values()) | frozenset(SOPK.values()) | \
        frozenset(SOPC.values())


def _scc_writers() -> frozenset:
    names = _scalar_mnemonics()
    ops32 = ("and", "or", "xor", "andn2", "orn2", "nand", "nor", "xnor")
    explicit = {"s_add_u32", "s_sub_u32", "s_add_i32", "s_sub_i32", "s_addc_u32", "s_subb_u32",
                "s_min_i32", "s_min_u32", "s_max_i32", "s_max_u32", "s_absdiff_i32",
                "s_lshl_b32", "s_lshl_b64", "s_lshr_b32", "s_lshr_b64", "s_ashr_i32", "s_ashr_i64",
                "s_bfe_u32", "s_bfe_i32", "s_bfe_u64", "s_bfe_i64",
                "s_not_b32", "s_not_b64", "s_wqm_b32", "s_wqm_b64", "s_quadmask_b32", "s_quadmask_b64",
                "s_bcnt0_i32_b32", "s_bcnt0_i32_b64", "s_bcnt1_i32_b32", "s_bcnt1_i32_b64",
                "s_abs_i32", "s_andn1_wrexec_b64", "s_andn2_wrexec_b64", "s_addk_i32"}
    explicit |= {f"s_{op}_{w}" for op in ops32 for w in ("b32", "b64")}
    explicit |= {f"s_lshl{n}_add_u32" for n in (1, 2, 3, 4)}
    out = {m for m in names if m in explicit or m.endswith("_saveexec_b64")
           or m.startswith(("s_cmp_", "s_cmpk_", "s_bitcmp"))}
    return frozenset(out)


#: Scalar instructions that write SCC (besides any explicit ``src_scc`` destination): the
#: Vega ISA guide's SOP1/SOP2/SOPK/SOPC descriptions ("SCC = ..."), which agree with LLVM's
#: ``Defs = [SCC]`` in SOPInstructions.td; ``s_quadmask_b32/b64`` also set SCC = (D != 0) per
#: the ISA guide (LLVM does not model it).  Not writers: s_mov/cmov/cselect, s_mul*, s_bfm,
#: s_pack*, s_brev, s_ff*/s_flbit*, s_sext*, s_bitset*, s_movrel*, s_movk/mulk, s_get/setreg,
#: s_getpc/setpc/swappc/call, s_setvskip, s_set_gpr_idx_*.
SCC_WRITERS: frozenset = _scc_writers()

#: Instructions that read SCC (carry-in, select, conditional move or branch).
SCC_READERS: frozenset = frozenset({"s_addc_u32", "s_subb_u32", "s_cselect_b32", "s_cselect_b64",
                                    "s_cmov_b32", "s_cmov_b64", "s_cmovk_i32",
                                    "s_cbranch_scc0", "s_cbranch_scc1"})


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
# Operand widths (dwords) from the table's operands.

#: scalar instructions whose only operand is a source (the table lists operands in assembly
#: order without marking destinations)
_SOURCE_ONLY = frozenset({"s_setpc_b64", "s_rfe_b64", "s_cbranch_join", "s_set_gpr_idx_idx"})


def _vop2_pair(i: int) -> frozenset:
    """VOP2 rows of the table whose operand ``i`` (assembly order) is an SGPR pair (VCC in e32)."""
    return frozenset(mn for mn, r in _table.table().items()
                     if r.encoding == "VOP2" and len(r.operands) > 1 and tuple(r.operands[i]) == ("s", 2))


#: VALU instructions with a carry-out SGPR pair after the destination (VOP3b's sdst, VCC in
#: e32): the table's VOP3b rows and the VOP2 rows with VCC after the destination
#: (v_add_co_u32, v_addc_co_u32, ..., v_div_scale_*, v_mad_u64_u32, v_mad_i64_i32)
VOP3B_OPS = frozenset(mn for mn, r in _table.table().items() if r.encoding == "VOP3b") | _vop2_pair(1)
#: VOP2 instructions whose e32 form reads VCC as a last, implicit operand (the carry-ins and v_cndmask_b32)
_VCC_IN = _vop2_pair(-1)
#: VALU instructions with a carry in (VCC in e32, an SGPR pair in VOP3b): v_addc_co_u32,
#: v_subb_co_u32, v_subbrev_co_u32
CARRY_IN = VOP3B_OPS & _VCC_IN


def widths(mnemonic: str, nsrc: int) -> tuple[int, ...]:
    """(dst width, src widths...) in dwords of a VALU/SALU mnemonic, from the gfx906 table's
    operands (:mod:`vlpc.isa`, assembly order): a compare or source-only scalar instruction
    has dst width 0; the implicit VCC operands of e32 forms (carry out, carry in,
    ``v_cndmask``'s mask), VOP3b's carry-out SGPR pair and inline literal K operands
    (``v_madmk``/``v_madak``) are not sources here; missing sources repeat the last width."""
    row = _table.lookup(mnemonic)
    base = row.mnemonic
    ops = [w for _, w in row.operands]
    if row.encoding == "SOPC" or base in _SOURCE_ONLY:
        ops = [0] + ops
    else:
        if base in VOP3B_OPS:
            ops = ops[:1] + ops[2:]
        if row.encoding == "VOP2":
            if base in _VCC_IN:
                ops = ops[:-1]
            ops = [w for w in ops if w]  # v_madmk/v_madak's K
    if len(ops) < 1 + nsrc:
        ops = ops + [ops[-1] if ops else 1] * (1 + nsrc - len(ops))
    return tuple(ops[:1 + nsrc])
