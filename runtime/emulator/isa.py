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
