"""Decode GFX9 machine code into :class:`Instr` objects (once per PC, cached).

Every instruction of the gfx906 table (:mod:`vlpc.isa`) decodes to its
mnemonic: SOP1, SOP2, SOPK, SOPC, SOPP, SMEM, VOP1, VOP2, VOPC (with their SDWA
and DPP forms: ``f["sdwa"]`` / ``f["dpp"]``), VOP3a/VOP3b (including the VOP3
forms of VOP1/VOP2/VOPC), VOP3P, DS, FLAT/GLOBAL/SCRATCH, MUBUF, MTBUF, MIMG,
VINTRP and EXP.  Operand widths of the VOP3-only, VOP3P and memory instructions
come from the table's operand list.  MIMG, VINTRP and EXP (graphics) and the
MUBUF ``lds`` form decode with ``supported`` False; whether an instruction has
semantics is the executor's business (it raises
:class:`~.errors.UnsupportedInstruction` naming the mnemonic and address).
An opcode outside the table decodes to ``"<class> opcode N"``, unsupported.
The format of a word and its fields come from the microcode layouts of
:mod:`vlpc.isa.encodings` (the ones ``tools/gen_isa_table.py`` encodes with).

Operands are :class:`Operand` objects; register operands use one numbering for
both files: scalar source codes 0..255 as in the hardware's 9-bit source field
(s0..s101, vcc_lo=106, m0=124, exec_lo=126, inline constants 128..248, ...)
and VGPR ``n`` as ``256 + n``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from vlpc import isa as _table
from vlpc.isa import encodings as E
from vlpc.targets import GFX906

from . import isa


@dataclass(frozen=True)
class Operand:
    """One operand.

    ``kind``: ``v`` (VGPRs ``reg..reg+width-1``), ``s`` (scalar register file,
    index ``reg``), ``const`` (inline constant: ``value`` holds the raw bits
    for the operand's width), ``lit`` (32-bit literal in ``value``),
    ``scc``/``vccz``/``execz`` (computed sources), ``imm`` (an instruction
    field such as an offset), ``off`` (no register).
    """

    kind: str
    reg: int = 0
    width: int = 1
    value: int = 0
    neg: bool = False
    abs: bool = False
    text: str = ""

    def __str__(self) -> str:
        t = self.text
        if self.abs:
            t = f"|{t}|"
        if self.neg:
            t = f"-{t}"
        return t


@dataclass
class Instr:
    """A decoded instruction at ``pc`` (byte offset in the code image)."""

    pc: int
    size: int
    encoding: str
    opcode: int
    mnemonic: str
    dst: list[Operand] = field(default_factory=list)
    src: list[Operand] = field(default_factory=list)
    #: extra fields: offsets, flags (glc, offen, clamp, omod, ...), simm16
    f: dict = field(default_factory=dict)
    supported: bool = True
    raw: bytes = b""
    text: str = ""
    vop3: bool = False

    def __str__(self) -> str:
        return self.text


# ---------------------------------------------------------------------------
# operand construction

def reg_text(code: int, width: int) -> str:
    if code >= isa.VGPR0:
        n = code - isa.VGPR0
        return f"v{n}" if width == 1 else f"v[{n}:{n + width - 1}]"
    if code < isa.SGPR_LIMIT:
        return f"s{code}" if width == 1 else f"s[{code}:{code + width - 1}]"
    if isa.TTMP0 <= code < isa.TTMP0 + 16:
        n = code - isa.TTMP0
        return f"ttmp{n}" if width == 1 else f"ttmp[{n}:{n + width - 1}]"
    if width == 2 and code in isa.PAIR_NAMES:
        return isa.PAIR_NAMES[code]
    return isa.SPECIAL_NAMES.get(code, f"<reg{code}>")


def src_operand(code: int, width: int, literal: int | None = None, *, is_float: bool = False) -> Operand:
    """The operand for a 9-bit (or 8-bit scalar) source code."""
    if code >= isa.VGPR0:
        return Operand("v", code - isa.VGPR0, width, text=reg_text(code, width))
    if code <= isa.EXEC_HI and code != isa.NULL_125:
        return Operand("s", code, width, text=reg_text(code, width))
    iv = isa.inline_int(code)
    if iv is not None:
        bits = iv & ((1 << (32 * width)) - 1)
        return Operand("const", code, width, value=bits, text=str(iv))
    if code in isa.INLINE_FLOATS:
        _, b32, b64, txt = isa.INLINE_FLOATS[code]
        return Operand("const", code, width, value=b64 if width == 2 else b32, text=txt)
    if code == isa.LITERAL:
        lit = literal or 0
        if width == 2 and is_float:
            val = lit << 32
        else:
            val = lit
        return Operand("lit", code, width, value=val, text=f"0x{lit:x}")
    if code == isa.SCC:
        return Operand("scc", code, 1, text="src_scc")
    if code == isa.VCCZ:
        return Operand("vccz", code, 1, text="src_vccz")
    if code == isa.EXECZ:
        return Operand("execz", code, 1, text="src_execz")
    if code == isa.NULL_125:
        return Operand("const", code, width, value=0, text="<null>")
    return Operand("unsupported", code, width, text=isa.SPECIAL_NAMES.get(code, f"<src{code}>"))


def vreg(n: int, width: int = 1) -> Operand:
    return Operand("v", n, width, text=reg_text(isa.VGPR0 + n, width))


def sreg(n: int, width: int = 1) -> Operand:
    return Operand("s", n, width, text=reg_text(n, width))


def _is_float_op(mn: str) -> bool:
    return any(t in mn for t in ("_f32", "_f64", "_f16")) and not mn.startswith("v_cvt_f")


# ---------------------------------------------------------------------------
# decoding

VOP3B_OPS = isa.VOP3B_OPS
_CARRY_IN = isa.CARRY_IN
#: VOP1/VOP2 instructions without a VOP3 encoding (two VGPR results; an inline literal).
#: VOP2 multiply-adds with a literal constant K in the dword after the instruction.
_MADK = ("v_madmk_f32", "v_madak_f32", "v_madmk_f16", "v_madak_f16")
_NO_VOP3_FORM = {"v_swap_b32", *_MADK}


class Decoder:
    """Decodes (and caches) instructions of one code image for ``target`` (a processor or
    target id): an instruction of the gfx906 table that ``target`` lacks
    (:mod:`vlpc.isa.availability`; gfx900: ``v_fmac_f32``, dot instructions...) decodes
    unsupported, with ``f["target_lacks"]`` naming it and the target."""

    def __init__(self, code: bytes, target: str = "gfx906"):
        from vlpc.isa.availability import missing

        self.code = bytes(code)
        self.cache: dict[int, Instr] = {}
        self.target = target
        self.lacks = missing(target)

    def __call__(self, pc: int) -> Instr:
        ins = self.cache.get(pc)
        if ins is None:
            ins = decode_at(self.code, pc)
            if ins.mnemonic in self.lacks:
                from vlpc.isa.availability import unavailable_reason

                ins.supported = False
                ins.f["target_lacks"] = unavailable_reason(ins.mnemonic, self.target)
            self.cache[pc] = ins
        return ins


def _dword(code: bytes, pc: int) -> int:
    if pc + 4 > len(code) or pc < 0:
        raise IndexError(pc)
    return struct.unpack_from("<I", code, pc)[0]


def decode_at(code: bytes, pc: int) -> Instr:
    """Decode the instruction at byte offset ``pc`` of ``code``."""
    try:
        w = _dword(code, pc)
    except IndexError:
        return Instr(pc, 4, "none", 0, "<end of code>", supported=False, text="<pc outside the code object>")

    def lit() -> int:
        try:
            return _dword(code, pc + 4)
        except IndexError:
            return 0

    ins = _decode(code, pc, w, lit)
    ins.raw = code[pc: pc + ins.size]
    if not ins.text:
        ins.text = format_instr(ins)
    return ins


def _unsupported(pc: int, size: int, enc: str, what: str, op: int = 0) -> Instr:
    return Instr(pc, size, enc, op, what, supported=False, text=what)


def _decode(code: bytes, pc: int, w: int, lit) -> Instr:
    fmt = E.identify(w)
    if fmt is None:
        return _unsupported(pc, 4, "unknown", f"unknown encoding 0x{w:08x}")
    if fmt.dwords == 1:
        return _DECODE_32[fmt.name](pc, w, lit)
    if fmt is E.VOP3A:
        return _vop3(pc, w, lit(), code)
    if fmt is E.EXP:
        ins = Instr(pc, 8, "EXP", 0, "exp", supported=False)
        ins.text = f"exp (raw 0x{w:08x}{lit():08x}; graphics export)"
        return ins
    return _DECODE_64[fmt.name](pc, w, lit())


def _ssrc(code, width, lit, is_float=False):
    return src_operand(code, width, lit() if code == isa.LITERAL else None, is_float=is_float)


def _sop2(pc, w, lit):
    f = E.SOP2.unpack(w)
    op = f["op"]
    mn = isa.SOP2.get(op)
    if mn is None:
        return _unsupported(pc, 4, "SOP2", f"SOP2 opcode {op}", op)
    s0, s1, d = f["ssrc0"], f["ssrc1"], f["sdst"]
    wd = isa.widths(mn, 2)
    size = 8 if isa.LITERAL in (s0, s1) else 4
    ins = Instr(pc, size, "SOP2", op, mn)
    ins.dst = [sreg(d, wd[0])]
    ins.src = [_ssrc(s0, wd[1], lit), _ssrc(s1, wd[2], lit)]
    return ins


def _sopk(pc, w, lit):
    f = E.SOPK.unpack(w)
    op = f["op"]
    mn = isa.SOPK.get(op)
    if mn is None:
        return _unsupported(pc, 4, "SOPK", f"SOPK opcode {op}", op)
    d = f["sdst"]
    simm = f["simm16"]
    size = 8 if mn == "s_setreg_imm32_b32" else 4
    ins = Instr(pc, size, "SOPK", op, mn)
    ins.f["simm16"] = simm
    if mn.startswith("s_cmpk"):
        ins.src = [sreg(d)]
    elif mn in ("s_setreg_b32",):
        ins.src = [sreg(d)]
    elif mn == "s_call_b64":
        ins.dst = [sreg(d, 2)]
    elif mn == "s_setreg_imm32_b32":
        ins.f["imm32"] = lit()
    else:
        ins.dst = [sreg(d)]
        if mn in ("s_addk_i32", "s_mulk_i32", "s_cmovk_i32"):
            ins.src = [sreg(d)]
    return ins


def _sop1(pc, w, lit):
    f = E.SOP1.unpack(w)
    op = f["op"]
    mn = isa.SOP1.get(op)
    if mn is None:
        return _unsupported(pc, 4, "SOP1", f"SOP1 opcode {op}", op)
    s0, d = f["ssrc0"], f["sdst"]
    wd = isa.widths(mn, 1)
    size = 8 if s0 == isa.LITERAL else 4
    ins = Instr(pc, size, "SOP1", op, mn)
    if mn != "s_setpc_b64":
        ins.dst = [sreg(d, wd[0])]
    if mn != "s_getpc_b64":
        ins.src = [_ssrc(s0, wd[1] if len(wd) > 1 else 1, lit)]
    return ins


def _sopc(pc, w, lit):
    f = E.SOPC.unpack(w)
    op = f["op"]
    mn = isa.SOPC.get(op)
    if mn is None:
        return _unsupported(pc, 4, "SOPC", f"SOPC opcode {op}", op)
    s0, s1 = f["ssrc0"], f["ssrc1"]
    wd = isa.widths(mn, 2)
    size = 8 if isa.LITERAL in (s0, s1) else 4
    ins = Instr(pc, size, "SOPC", op, mn)
    ins.src = [_ssrc(s0, wd[1], lit), _ssrc(s1, wd[2], lit)]
    return ins


def _sopp(pc, w, lit=None):
    f = E.SOPP.unpack(w)
    op = f["op"]
    mn = isa.SOPP.get(op)
    if mn is None:
        return _unsupported(pc, 4, "SOPP", f"SOPP opcode {op}", op)
    ins = Instr(pc, 4, "SOPP", op, mn)
    simm = f["simm16"]
    ins.f["simm16"] = simm
    if mn == "s_waitcnt":
        c = E.WAITCNT.unpack(simm)
        ins.f["vmcnt"] = c["vmcnt_lo"] | c["vmcnt_hi"] << E.WAITCNT["vmcnt_lo"].width
        ins.f["expcnt"] = c["expcnt"]
        ins.f["lgkmcnt"] = c["lgkmcnt"]
    if mn == "s_branch" or mn.startswith("s_cbranch"):
        ins.f["target"] = pc + 4 + 4 * (simm - 0x10000 if simm & 0x8000 else simm)
    return ins


def _smem(pc, w, w1):
    fl = E.SMEM.unpack(w, w1)
    op = fl["op"]
    mn = isa.SMEM.get(op)
    if mn is None:
        return _unsupported(pc, 8, "SMEM", f"SMEM opcode {op}", op)
    sbase = fl["sbase"] << 1  # the field holds the SGPR pair's index
    sdata = fl["sdata"]
    glc, imm, soe = fl["glc"], fl["imm"], fl["soe"]
    ins = Instr(pc, 8, "SMEM", op, mn)
    nd = 1
    if "dwordx" in mn:
        nd = int(mn.rsplit("dwordx", 1)[1])
    buffer = "buffer" in mn
    ins.f.update(glc=glc, imm=imm, soe=soe, ndwords=nd, buffer=buffer)
    off21 = _signed(fl["offset"], E.SMEM["offset"].width)
    if imm:
        ins.f["offset"] = off21
        ins.f["soffset"] = fl["soffset"] if soe else None
    else:
        ins.f["offset"] = 0
        # without imm the offset field's low byte is the SGPR offset's source code
        ins.f["soffset"] = fl["soffset"] if soe else fl["offset"] & 0xFF
    base = sreg(sbase, 4 if buffer else 2)
    if mn in ("s_memtime", "s_memrealtime"):
        ins.dst = [sreg(sdata, 2)]
    elif "load" in mn:
        ins.dst = [sreg(sdata, nd)]
        ins.src = [base]
    elif "store" in mn:
        ins.src = [base, sreg(sdata, nd)]
    elif "atomic" in mn:
        wide = 2 if mn.endswith("_x2") else 1
        ins.f["width"] = wide
        ins.src = [base, sreg(sdata, wide * (2 if "cmpswap" in mn else 1))]
        if glc:
            ins.dst = [sreg(sdata, wide)]
    else:
        ins.src = []
    if ins.f["soffset"] is not None and ("load" in mn or "store" in mn or "atomic" in mn):
        ins.src.append(src_operand(ins.f["soffset"], 1))
    return ins


# -- vector ALU ---------------------------------------------------------------

_VOP_OPCODES = {"VOP1": isa.VOP1, "VOP2": isa.VOP2, "VOPC": isa.VOPC}


def _vop_mnemonic(pc, w, lit, enc, op, src0, plain):
    """The mnemonic of the VOP1/VOP2/VOPC (``enc``) word ``w`` with opcode ``op``, or the
    decoded :class:`Instr` when ``w`` is no plain form: an opcode outside the table
    (unsupported), or the SDWA/DPP form (src0 = 249/250, :func:`_sdwa_dpp` with the
    plain-form decoder ``plain``)."""
    mn = _VOP_OPCODES[enc].get(op)
    if mn is None:
        return _unsupported(pc, 4, enc, f"{enc} opcode {op}", op)
    if src0 in (isa.SDWA, isa.DPP):
        return _sdwa_dpp(pc, w, lit, enc, mn, plain)
    return mn


def _vop2(pc, w, lit):
    f = E.VOP2.unpack(w)
    op = f["op"]
    mn = _vop_mnemonic(pc, w, lit, "VOP2", op, f["src0"], _vop2)
    if isinstance(mn, Instr):
        return mn
    s0, v1, vd = f["src0"], f["vsrc1"], f["vdst"]
    wd = isa.widths(mn, 2)
    isf = _is_float_op(mn)
    size = 8 if s0 == isa.LITERAL or mn in _MADK else 4
    ins = Instr(pc, size, "VOP2", op, mn)
    ins.dst = [vreg(vd, wd[0])]
    ins.src = [_ssrc(s0, wd[1], lit, isf), vreg(v1, wd[2])]
    if mn in _MADK:
        k = Operand("lit", isa.LITERAL, 1, value=lit(), text=f"0x{lit():x}")
        if mn.startswith("v_madmk"):
            ins.src = [ins.src[0], k, ins.src[1]]
        else:
            ins.src = [ins.src[0], ins.src[1], k]
    if mn == "v_cndmask_b32":
        ins.src.append(sreg(isa.VCC_LO, 2))
    if mn in VOP3B_OPS:
        ins.dst.append(sreg(isa.VCC_LO, 2))
    if mn in _CARRY_IN:
        ins.src.append(sreg(isa.VCC_LO, 2))
    if mn in ("v_mac_f32", "v_fmac_f32", "v_mac_f16"):
        ins.src.append(vreg(vd, 1))
    return ins


def _vop1(pc, w, lit):
    f = E.VOP1.unpack(w)
    op = f["op"]
    mn = _vop_mnemonic(pc, w, lit, "VOP1", op, f["src0"], _vop1)
    if isinstance(mn, Instr):
        return mn
    s0, vd = f["src0"], f["vdst"]
    wd = isa.widths(mn, 1)
    ins = Instr(pc, 8 if s0 == isa.LITERAL else 4, "VOP1", op, mn)
    if mn in ("v_nop", "v_clrexcp"):
        ins.size = 4
        return ins
    ins.src = [_ssrc(s0, wd[1], lit, _is_float_op(mn))]
    if mn == "v_readfirstlane_b32":
        ins.dst = [sreg(vd, 1)]
    elif mn == "v_swap_b32":
        if s0 < isa.VGPR0:  # both operands of v_swap_b32 are VGPRs
            return _unsupported(pc, ins.size, "VOP1", f"v_swap_b32 with a non-VGPR source "
                                f"(raw 0x{w:08x}: not a valid encoding)", op)
        ins.dst = [vreg(vd), vreg(s0 - isa.VGPR0)]
        ins.src = [vreg(vd), ins.src[0]]
    else:
        ins.dst = [vreg(vd, wd[0])]
    return ins


def _vopc(pc, w, lit):
    f = E.VOPC.unpack(w)
    op = f["op"]
    mn = _vop_mnemonic(pc, w, lit, "VOPC", op, f["src0"], _vopc)
    if isinstance(mn, Instr):
        return mn
    s0, v1 = f["src0"], f["vsrc1"]
    wd = isa.widths(mn, 2)
    ins = Instr(pc, 8 if s0 == isa.LITERAL else 4, "VOPC", op, mn)
    ins.dst = [sreg(isa.VCC_LO, 2)]
    ins.src = [_ssrc(s0, wd[1], lit, _is_float_op(mn)), vreg(v1, wd[2])]
    return ins


_SEL = ("BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD", "sel7")
_UNUSED = ("UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE", "unused3")


def _with_mods(o: Operand, neg: bool, absm: bool) -> Operand:
    if not (neg or absm):
        return o
    return Operand(o.kind, o.reg, o.width, o.value, neg=neg, abs=absm, text=o.text)


def _sdwa_dpp(pc, w, lit, enc, mn, plain):
    """The SDWA (src0 = 249) or DPP (src0 = 250) form of a VOP1/VOP2/VOPC instruction.

    The second dword's fields (Vega ISA guide 12.7 / 12.8) go to ``f["sdwa"]`` /
    ``f["dpp"]``; operands are those of the plain form with src0 from that dword.
    """
    base = E.FORMATS[enc]
    is_sdwa = base.unpack(w)["src0"] == isa.SDWA
    row = _table.lookup(mn)
    d = lit()
    if (is_sdwa and not row.sdwa) or (not is_sdwa and not row.dpp):
        return _unsupported(pc, 8, enc, f"{mn}_{'sdwa' if is_sdwa else 'dpp'} (no such form on gfx906)",
                            row.opcode)
    x = (E.SDWAB if enc == "VOPC" else E.SDWA).unpack(d) if is_sdwa else E.DPP.unpack(d)
    if is_sdwa and x["s0"]:
        code0 = x["src0"]  # an SGPR / constant source
    else:
        code0 = isa.VGPR0 + x["src0"]
    ww = base.replace(w, src0=code0)
    ins = plain(pc, ww, lambda: 0)
    ins.size = 8
    ins.raw = b""
    if not ins.supported:
        return ins
    mods = [(x["src0_neg"], x["src0_abs"]), (x["src1_neg"], x["src1_abs"])]
    if is_sdwa:
        f = {"src0_sel": x["src0_sel"], "src0_sext": x["src0_sext"], "src1_sel": x["src1_sel"],
             "src1_sext": x["src1_sext"]}
        if enc == "VOPC":
            if x["sd"]:
                ins.dst = [sreg(x["sdst"], 2)]
            f.update(dst_sel=6, dst_unused=0, clamp=0, omod=0)
        else:
            f.update(dst_sel=x["dst_sel"], dst_unused=x["dst_unused"], clamp=x["clamp"], omod=x["omod"])
        if enc in ("VOP2", "VOPC") and x["s1"] and len(ins.src) > 1:
            v1 = base.unpack(w)["vsrc1"]
            ins.src[1] = src_operand(v1, ins.src[1].width)
        ins.f["sdwa"] = f
        ins.f["clamp"], ins.f["omod"] = f["clamp"], f["omod"]
    else:
        f = {"dpp_ctrl": x["dpp_ctrl"], "bound_ctrl": x["bound_ctrl"], "bank_mask": x["bank_mask"],
             "row_mask": x["row_mask"]}
        ins.f["dpp"] = f
    for i in range(min(2, len(ins.src))):
        ins.src[i] = _with_mods(ins.src[i], bool(mods[i][0]), bool(mods[i][1]))
    ins.text = ""
    return ins


def _vop3p(pc, w, w1):
    """VOP3P (packed 16-bit math, dot products, fma_mix): Vega ISA guide 12.6."""
    x = E.VOP3P.unpack(w, w1)
    op = x["op"]
    mn = isa.VOP3P.get(op)
    if mn is None:
        return _unsupported(pc, 8, "VOP3P", f"VOP3P opcode {op}", op)
    row = _table.lookup(mn)
    widths = [wd for _, wd in row.operands]
    nsrc = len(widths) - 1
    vd, neg_hi, op_sel, clamp, neg = x["vdst"], x["neg_hi"], x["op_sel"], x["clamp"], x["neg"]
    # op_sel_hi of src2 is in the first dword, of src0/src1 in the second
    op_sel_hi = x["op_sel_hi2"] << 2 | x["op_sel_hi"]
    s = [x["src0"], x["src1"], x["src2"]]
    ins = Instr(pc, 8, "VOP3P", op, mn, vop3=True)
    ins.f.update(op_sel=op_sel, op_sel_hi=op_sel_hi, neg=neg, neg_hi=neg_hi, clamp=clamp, omod=0)
    for i in range(nsrc):
        o = src_operand(s[i], widths[1 + i], None)
        if o.kind == "lit":
            o = Operand("unsupported", isa.LITERAL, widths[1 + i], text="<literal in VOP3P>")
        ins.src.append(o)
    ins.dst = [vreg(vd, widths[0])]
    return ins


def _vop3(pc, w, w1, code):
    x = E.VOP3A.unpack(w, w1)
    op = x["op"]
    if op < 0x100:
        mn, kind = isa.VOPC.get(op), "VOPC"
    elif op < 0x140:
        mn, kind = isa.VOP2.get(op - 0x100), "VOP2"
    elif op < 0x1C0:
        mn, kind = isa.VOP1.get(op - 0x140), "VOP1"
    else:
        mn, kind = isa.VOP3_ONLY.get(op), "VOP3"
    if mn is None or mn in _NO_VOP3_FORM:
        return _unsupported(pc, 8, "VOP3", f"VOP3 opcode 0x{op:x}", op)
    row = _table.lookup(mn) if kind == "VOP3" else None
    if row is not None and row.encoding == "VINTRP":
        return Instr(pc, 8, "VOP3", op, mn, supported=False, vop3=True,
                     text=f"{mn}_e64 (graphics interpolation)")
    vd, absm, clamp, omod, negm = x["vdst"], x["abs"], x["clamp"], x["omod"], x["neg"]
    s = [x["src0"], x["src1"], x["src2"]]
    vop3b = mn in VOP3B_OPS
    if vop3b:
        absm = 0
        sdst = E.VOP3B.unpack(w, w1)["sdst"]
    if kind == "VOPC":
        nsrc = 2
    elif kind == "VOP2":
        nsrc = 3 if mn == "v_cndmask_b32" or mn in _CARRY_IN else 2
    elif kind == "VOP1":
        nsrc = 0 if mn in ("v_nop", "v_clrexcp") else 1
    else:
        # operand widths of the VOP3-only instructions from the table (VOP3b: drop sdst)
        tw = [x for _, x in row.operands]
        if vop3b:
            tw = tw[:1] + tw[2:]
        nsrc = len(tw) - 1
    wd = isa.widths(mn, nsrc) if kind != "VOP3" else tuple(tw)
    isf = _is_float_op(mn)
    ins = Instr(pc, 8, "VOP3", op, mn, vop3=True)
    ins.f.update(clamp=clamp, omod=omod, op_sel=0 if vop3b else x["op_sel"])
    srcs = []
    for i in range(nsrc):
        width = wd[1 + i] if 1 + i < len(wd) else 1
        if mn in ("v_cndmask_b32",) and i == 2 or (mn in _CARRY_IN and i == 2):
            width = 2
            if s[i] >= isa.VGPR0:  # the lane mask is an SGPR pair (or a constant), never a VGPR
                return _unsupported(pc, 8, "VOP3", f"{mn}_e64 with a VGPR lane mask "
                                    f"(raw 0x{w:08x}{w1:08x}: not a valid encoding)", op)
        o = src_operand(s[i], width, None, is_float=isf)
        if o.kind == "lit":
            o = Operand("unsupported", isa.LITERAL, width, text="<literal in VOP3>")
        if (negm >> i) & 1 or (absm >> i) & 1:
            o = Operand(o.kind, o.reg, o.width, o.value, neg=bool((negm >> i) & 1),
                        abs=bool((absm >> i) & 1), text=o.text)
        srcs.append(o)
    ins.src = srcs
    if kind == "VOPC":
        ins.dst = [sreg(vd, 2)]
    elif mn == "v_readlane_b32":
        ins.dst = [sreg(vd, 1)]
    elif mn == "v_readfirstlane_b32":
        ins.dst = [sreg(vd, 1)]
    elif mn in ("v_nop", "v_clrexcp"):
        ins.dst = []
    else:
        ins.dst = [vreg(vd, wd[0])]
    if vop3b:
        ins.dst.append(sreg(sdst, 2))
    if mn in ("v_mac_f32", "v_fmac_f32"):
        ins.src.append(vreg(vd, 1))
    return ins


# -- memory ---------------------------------------------------------------------

def _sample_regs(mn: str) -> dict[int, int]:
    """VGPR operands of the table's sample instruction: first register -> width.

    The samples use fixed fields (:data:`vlpc.isa.SAMPLE_ADDR` ...: address v4, data v8,
    second data v16, result v12), so the sample tells which fields an instruction
    uses and how wide they are.
    """
    out = _SAMPLE_CACHE.get(mn)
    if out is None:
        out = {}
        import re
        for m in re.finditer(r"\bv(?:(\d+)\b|\[(\d+):(\d+)\])", _table.lookup(mn).asm):
            if m.group(1) is not None:
                out[int(m.group(1))] = 1
            else:
                out[int(m.group(2))] = int(m.group(3)) - int(m.group(2)) + 1
        _SAMPLE_CACHE[mn] = out
    return out


_SAMPLE_CACHE: dict[str, dict[int, int]] = {}
_S_ADDR, _S_DATA, _S_DATA1, _S_DST = _table.SAMPLE_ADDR, _table.SAMPLE_DATA, _table.SAMPLE_DATA1, _table.SAMPLE_DST


def _flat(pc, w, w1):
    x = E.FLAT.unpack(w, w1)
    op, seg = x["op"], x["seg"]
    segname = {0: "flat", 1: "scratch", 2: "global"}.get(seg, "seg3")
    name = isa.FLAT_SEGMENT_OPS.get(segname, {}).get(op)
    if name is None:
        return _unsupported(pc, 8, "FLAT", f"{segname} opcode {op}", op)
    mn = f"{segname}_{name}"
    sample = _sample_regs(mn)
    width = E.FLAT["offset"].width
    # GLOBAL/SCRATCH: a signed 13-bit offset; FLAT: unsigned, its top bit unused
    off = _signed(x["offset"], width) if seg != 0 else x["offset"] & ((1 << (width - 1)) - 1)
    glc, slc, addr, data, saddr, vdst = x["glc"], x["slc"], x["addr"], x["data"], x["saddr"], x["vdst"]
    ins = Instr(pc, 8, "FLAT", op, mn)
    use_saddr = seg != 0 and saddr != 0x7F
    ins.f.update(offset=off, glc=glc, slc=slc, seg=segname, saddr=saddr if use_saddr else None,
                 op=name)
    if seg == 1:
        # scratch: a 32-bit VGPR offset, or none (saddr alone), or neither ("off")
        # (on gfx9 an SGPR base replaces the VGPR address)
        addr_op = Operand("off", text="off") if use_saddr else vreg(addr, 1)
        ins.f["saddr_op"] = sreg(saddr, 1) if use_saddr else Operand("off", text="off")
    else:
        addr_op = vreg(addr, 1 if use_saddr else 2)
        ins.f["saddr_op"] = sreg(saddr, 2) if use_saddr else Operand("off", text="off")
    ins.f["addr"] = addr_op
    srcs = [addr_op] if addr_op.kind == "v" else []
    nd_data = sample.get(_S_DATA, 0)
    nd_dst = sample.get(_S_DST, 0)
    if name.startswith("load"):
        ins.f["ndwords"] = nd_dst
        ins.dst = [vreg(vdst, nd_dst)]
        if name.endswith("_d16") or name.endswith("_d16_hi"):
            srcs.append(vreg(vdst, nd_dst))  # d16 loads keep the other half of vdst
        ins.src = srcs
    elif name.startswith("store"):
        ins.f["ndwords"] = nd_data
        ins.src = srcs + [vreg(data, nd_data)]
    else:
        wide = 2 if name.endswith("_x2") else 1
        ins.f["width"] = wide
        ins.src = srcs + [vreg(data, nd_data)]
        if glc:
            ins.dst = [vreg(vdst, wide)]
    if use_saddr:
        ins.src.append(ins.f["saddr_op"])
    return ins


def _ds(pc, w, w1):
    x = E.DS.unpack(w, w1)
    op = x["op"]
    mn = isa.DS.get(op)
    if mn is None:
        return _unsupported(pc, 8, "DS", f"DS opcode {op}", op)
    sample = _sample_regs(mn)
    off0, off1, gds = x["offset0"], x["offset1"], x["gds"]
    addr, d0, d1, vd = x["addr"], x["data0"], x["data1"], x["vdst"]
    ins = Instr(pc, 8, "DS", op, mn)
    ins.f.update(offset0=off0, offset1=off1, offset=off0 | (off1 << 8), gds=gds)
    if gds and not mn.startswith("ds_gws"):
        ins.supported = False
    srcs = []
    if _S_ADDR in sample:
        srcs.append(vreg(addr))
    if _S_DATA in sample:
        srcs.append(vreg(d0, sample[_S_DATA]))
    if _S_DATA1 in sample:
        srcs.append(vreg(d1, sample[_S_DATA1]))
    if _S_DST in sample:
        ins.dst = [vreg(vd, sample[_S_DST])]
        if mn.endswith(("_d16", "_d16_hi")):
            srcs.append(vreg(vd, sample[_S_DST]))
    ins.src = srcs
    sz = 1
    for t, n in (("b128", 4), ("b96", 3), ("b64", 2), ("u64", 2), ("i64", 2), ("f64", 2)):
        if mn.endswith(t) or f"_{t}" in mn:
            sz = n
            break
    ins.f["dwords"] = sz
    return ins


def _buffer_common(pc, x, enc, op, mn, name):
    """The fields MUBUF and MTBUF share (``x``: the unpacked fields)."""
    off, offen, idxen, glc = x["offset"], x["offen"], x["idxen"], x["glc"]
    vaddr, vdata, soff = x["vaddr"], x["vdata"], x["soffset"]
    srsrc = x["srsrc"] << 2  # the field holds the SGPR quad's index
    ins = Instr(pc, 8, enc, op, mn)
    ins.f.update(offset=off, offen=offen, idxen=idxen, glc=glc, op=name)
    nv = offen + idxen
    ins.f["vaddr"] = vreg(vaddr, nv) if nv else Operand("off", text="off")
    ins.f["srsrc"] = sreg(srsrc, 4)
    ins.f["soffset"] = src_operand(soff, 1)
    srcs = [ins.f["srsrc"], ins.f["soffset"]] + ([ins.f["vaddr"]] if nv else [])
    nd = _sample_regs(mn).get(_S_DST, 1)
    if "load" in name:
        ins.f["ndwords"] = nd
        ins.dst = [vreg(vdata, nd)]
        if name.endswith(("_d16", "_d16_hi")):
            srcs.append(vreg(vdata, nd))
    elif "store" in name:
        ins.f["ndwords"] = nd
        srcs.append(vreg(vdata, nd))
    elif name.startswith("atomic"):
        wide = 2 if name.endswith("_x2") else 1
        ins.f["width"] = wide
        srcs.append(vreg(vdata, wide * (2 if "cmpswap" in name else 1)))
        if glc:
            ins.dst = [vreg(vdata, wide)]
    ins.src = srcs
    return ins


def _mubuf(pc, w, w1):
    x = E.MUBUF.unpack(w, w1)
    op = x["op"]
    name = isa.MUBUF_OPS.get(op)
    if name is None:
        return _unsupported(pc, 8, "MUBUF", f"MUBUF opcode {op}", op)
    ins = _buffer_common(pc, x, "MUBUF", op, f"buffer_{name}", name)
    lds, slc = x["lds"], x["slc"]
    ins.f.update(slc=slc, lds=lds)
    if lds:
        ins.supported = False
        ins.text = f"buffer_{name} ... lds (raw 0x{w:08x}{w1:08x}: the LDS-destination form)"
    return ins


def _mtbuf(pc, w, w1):
    x = E.MTBUF.unpack(w, w1)
    op = x["op"]
    name = isa.MTBUF_OPS.get(op)
    if name is None:
        return _unsupported(pc, 8, "MTBUF", f"MTBUF opcode {op}", op)
    ins = _buffer_common(pc, x, "MTBUF", op, f"tbuffer_{name}", name)
    ins.f.update(dfmt=x["dfmt"], nfmt=x["nfmt"], slc=x["slc"])
    return ins


def _mimg(pc, w, w1):
    op = E.MIMG.unpack(w, w1)["op"]
    mn = isa.MIMG.get(op)
    if mn is None:
        return _unsupported(pc, 8, "MIMG", f"MIMG opcode {op}", op)
    return Instr(pc, 8, "MIMG", op, mn, supported=False,
                 text=f"{mn} (raw 0x{w:08x}{w1:08x}; image instructions are not emulated)")


def _vintrp(pc, w, lit):
    op = E.VINTRP.unpack(w)["op"]
    mn = isa.VINTRP.get(op, f"VINTRP opcode {op}")
    return Instr(pc, 4, "VINTRP", op, mn, supported=False, text=f"{mn} (graphics interpolation)")


def _signed(v: int, bits: int) -> int:
    """Field value ``v`` of ``bits`` bits read as two's complement."""
    return v - (1 << bits) if v >> (bits - 1) else v


#: Decoders by format (:func:`vlpc.isa.encodings.identify`): one-dword formats take
#: (pc, w, lit), two-dword ones (pc, w, w1); VOP3 and EXP are handled in :func:`_decode`.
_DECODE_32 = {"SOP2": _sop2, "SOPK": _sopk, "SOP1": _sop1, "SOPC": _sopc, "SOPP": _sopp,
              "VOP2": _vop2, "VOP1": _vop1, "VOPC": _vopc, "VINTRP": _vintrp}
_DECODE_64 = {"SMEM": _smem, "VOP3P": _vop3p, "DS": _ds, "FLAT": _flat, "MUBUF": _mubuf,
              "MTBUF": _mtbuf, "MIMG": _mimg}


# ---------------------------------------------------------------------------
# text (close to LLVM's syntax)

def _hex(v: int) -> str:
    return f"0x{v:x}" if v >= 0 else f"-0x{-v:x}"


def format_instr(ins: Instr) -> str:
    mn = ins.mnemonic
    enc = ins.encoding
    if not ins.supported and not ins.dst and not ins.src:
        return mn
    if enc == "SOPP":
        simm = ins.f["simm16"]
        if mn in ("s_endpgm", "s_barrier", "s_icache_inv", "s_wakeup", "s_endpgm_saved",
                  "s_set_gpr_idx_off", "s_ttracedata"):
            return mn
        if mn == "s_waitcnt":
            parts = []
            T = GFX906  # a counter at its maximum is no wait (the assembler omits it)
            if ins.f["vmcnt"] != T.vmcnt_max:
                parts.append(f"vmcnt({ins.f['vmcnt']})")
            if ins.f["expcnt"] != T.expcnt_max:
                parts.append(f"expcnt({ins.f['expcnt']})")
            if ins.f["lgkmcnt"] != T.lgkmcnt_max:
                parts.append(f"lgkmcnt({ins.f['lgkmcnt']})")
            full = f"vmcnt({T.vmcnt_max}) expcnt({T.expcnt_max}) lgkmcnt({T.lgkmcnt_max})"
            return f"{mn} {' '.join(parts) if parts else full}"
        if "target" in ins.f:
            return f"{mn} {simm - 0x10000 if simm & 0x8000 else simm}"
        return f"{mn} {simm}"
    if enc == "SOPK":
        simm = ins.f["simm16"]
        regs = [str(o) for o in ins.dst] or [str(o) for o in ins.src]
        if mn == "s_setreg_imm32_b32":
            return f"{mn} {simm}, 0x{ins.f['imm32']:x}"
        return f"{mn} {', '.join(regs + [_hex(simm)])}"
    if enc == "SMEM":
        if not ins.dst and not ins.src:
            return mn
        ops = [str(o) for o in ins.dst]
        if "store" in mn:
            ops = [str(ins.src[1]), str(ins.src[0])]
        elif ins.src:
            ops.append(str(ins.src[0]))
        so = ins.f["soffset"]
        if ins.f["imm"] and so is None:
            ops.append(_hex(ins.f["offset"]))
        elif ins.f["imm"]:
            ops.append(f"{src_operand(so, 1)} offset:{_hex(ins.f['offset'])}")
        else:
            ops.append(str(src_operand(so, 1)))
        t = f"{mn} {', '.join(ops)}"
        return t + (" glc" if ins.f["glc"] else "")
    if enc == "FLAT":
        f = ins.f
        name = f["op"]
        ops = []
        if name.startswith("load"):
            ops = [str(ins.dst[0]), str(f["addr"])]
        elif name.startswith("store"):
            ops = [str(f["addr"]), str(ins.src[1])]
        else:
            ops = ([str(ins.dst[0])] if ins.dst else []) + [str(f["addr"]), str(ins.src[1])]
        if f["seg"] != "flat":
            ops.append(str(f["saddr_op"]))
        t = f"{mn} {', '.join(ops)}"
        if f["offset"]:
            t += f" offset:{f['offset']}"
        if f["glc"]:
            t += " glc"
        if f["slc"]:
            t += " slc"
        return t
    if enc == "DS":
        f = ins.f
        ops = [str(o) for o in ins.dst] + [str(o) for o in ins.src]
        t = f"{mn} {', '.join(ops)}" if ops else mn
        if "2" in mn.split("_")[1]:
            if f["offset0"]:
                t += f" offset0:{f['offset0']}"
            if f["offset1"]:
                t += f" offset1:{f['offset1']}"
        elif f["offset"]:
            t += f" offset:{f['offset']}"
        if f["gds"]:
            t += " gds"
        return t
    if enc in ("MUBUF", "MTBUF"):
        f = ins.f
        data = ins.dst[0] if ins.dst else ins.src[-1]
        ops = [str(data), str(f["vaddr"]), str(f["srsrc"]), str(f["soffset"])]
        t = f"{mn} {', '.join(ops)}"
        for k in ("offen", "idxen"):
            if f[k]:
                t += f" {k}"
        if f["offset"]:
            t += f" offset:{f['offset']}"
        for k in ("glc", "slc"):
            if f[k]:
                t += f" {k}"
        return t
    # ALU encodings
    name = mn
    if enc == "VOP3" and ins.opcode < 0x1C0:
        name += "_e64"
    sd, dp = ins.f.get("sdwa"), ins.f.get("dpp")
    if sd is not None or dp is not None:
        ops = ", ".join([str(o) for o in ins.dst] + [str(o) for o in ins.src
                                                     if not (o.kind == "s" and o.reg == isa.VCC_LO
                                                             and enc != "VOPC")])
        if sd is not None:
            t = f"{mn}_sdwa {ops}"
            if enc != "VOPC":
                t += f" dst_sel:{_SEL[sd['dst_sel']]} dst_unused:{_UNUSED[sd['dst_unused']]}"
            t += f" src0_sel:{_SEL[sd['src0_sel']]}"
            if enc != "VOP1":
                t += f" src1_sel:{_SEL[sd['src1_sel']]}"
            return t
        return (f"{mn}_dpp {ops} dpp_ctrl:0x{dp['dpp_ctrl']:x} row_mask:0x{dp['row_mask']:x} "
                f"bank_mask:0x{dp['bank_mask']:x}" + (" bound_ctrl:0" if dp["bound_ctrl"] else ""))
    if enc == "VOP3P":
        ops = ", ".join([str(o) for o in ins.dst] + [str(o) for o in ins.src])
        t = f"{mn} {ops}"
        n = len(ins.src)
        f = ins.f
        if f["op_sel"] & ((1 << n) - 1):
            t += " op_sel:[" + ",".join(str((f["op_sel"] >> i) & 1) for i in range(n)) + "]"
        if (f["op_sel_hi"] & ((1 << n) - 1)) != (1 << n) - 1:
            t += " op_sel_hi:[" + ",".join(str((f["op_sel_hi"] >> i) & 1) for i in range(n)) + "]"
        if f["neg"] & ((1 << n) - 1):
            t += " neg_lo:[" + ",".join(str((f["neg"] >> i) & 1) for i in range(n)) + "]"
        if f["neg_hi"] & ((1 << n) - 1):
            t += " neg_hi:[" + ",".join(str((f["neg_hi"] >> i) & 1) for i in range(n)) + "]"
        return t + (" clamp" if f["clamp"] else "")
    srcs = list(ins.src)
    dsts = list(ins.dst)
    if mn in ("v_mac_f32", "v_fmac_f32"):
        srcs = srcs[:-1]
    if mn == "v_swap_b32":
        return f"{name} {dsts[0]}, {dsts[1]}"
    ops = [str(o) for o in dsts] + [str(o) for o in srcs]
    t = f"{name} {', '.join(ops)}" if ops else name
    if ins.f.get("clamp"):
        t += " clamp"
    om = ins.f.get("omod", 0)
    if om:
        t += {1: " mul:2", 2: " mul:4", 3: " div:2"}[om]
    return t
