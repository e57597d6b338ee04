"""Scalar ALU semantics: SOP1, SOP2, SOPK and SOPC (Vega ISA guide 12.1-12.4).

``s_setreg``/``s_getreg`` (MODE) are :mod:`.float_mode`'s, the GFX9 additions and
64-bit bit operations :mod:`.salu_extra`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import isa
from .. import ops as O
from ..state import I32, I64, PRIVATE_APERTURE_BASE, SHARED_APERTURE_BASE, U32, U64, ssrc_reader, swriter
from ..decode import Instr
from ._util import table_mnemonics
from .control import _jump
from .vint import _mul_hi_i, _mul_hi_u

if TYPE_CHECKING:  # the core's wave state, for annotations only (no import of the core)
    from ..core import Batch, Prepared


# -- SALU ---------------------------------------------------------------------------

def _s_i(x):
    return np.asarray(x, U32).view(I32).astype(I64)


def _sbfe(x, s, signed, w64):
    s = np.asarray(s, U32)
    off = (s & U32(63 if w64 else 31)).astype(U64)
    width = ((s >> U32(16)) & U32(0x7F)).astype(U64)
    x = np.asarray(x, U64 if w64 else U32).astype(U64)
    bits = U64(64 if w64 else 32)
    width = np.minimum(width, bits)
    mask = np.where(width >= U64(64), U64(0xFFFFFFFFFFFFFFFF), (U64(1) << np.minimum(width, U64(63))) - U64(1))
    v = (x >> off) & mask
    if signed:
        sh = (U64(64) - width) & U64(63)
        v = np.where(width == 0, U64(0), ((v << sh).view(I64) >> sh.astype(I64)).view(U64))
    if not w64:
        v = (v & U64(0xFFFFFFFF)).astype(U32)
    return v


def _nz(x):
    return np.asarray(x) != 0


_M32 = U64(0xFFFFFFFF)


def _salu_table():
    t = {}

    def u(x):
        return np.asarray(x, U32)

    def q(x):
        return np.asarray(x, U64)
    # SOP2: fn(a, b, scc) -> (res, scc|None)
    t["s_add_u32"] = lambda a, b, s: ((u(a).astype(U64) + u(b)) & _M32, (u(a).astype(U64) + u(b)) > _M32)
    t["s_sub_u32"] = lambda a, b, s: (u(a) - u(b), u(b) > u(a))
    t["s_addc_u32"] = lambda a, b, s: ((u(a).astype(U64) + u(b) + s) & _M32, (u(a).astype(U64) + u(b) + s) > _M32)
    t["s_subb_u32"] = lambda a, b, s: ((u(a).astype(I64) - u(b) - s).astype(U32), (u(a).astype(I64) - u(b) - s) < 0)

    def add_i(a, b, s):
        r = _s_i(a) + _s_i(b)
        return r.astype(U32), (r > 0x7FFFFFFF) | (r < -0x80000000)

    def sub_i(a, b, s):
        r = _s_i(a) - _s_i(b)
        return r.astype(U32), (r > 0x7FFFFFFF) | (r < -0x80000000)
    t["s_add_i32"] = add_i
    t["s_sub_i32"] = sub_i
    t["s_min_i32"] = lambda a, b, s: (np.minimum(_s_i(a), _s_i(b)).astype(U32), _s_i(a) < _s_i(b))
    t["s_max_i32"] = lambda a, b, s: (np.maximum(_s_i(a), _s_i(b)).astype(U32), _s_i(a) > _s_i(b))
    t["s_min_u32"] = lambda a, b, s: (np.minimum(u(a), u(b)), u(a) < u(b))
    t["s_max_u32"] = lambda a, b, s: (np.maximum(u(a), u(b)), u(a) > u(b))
    t["s_cselect_b32"] = lambda a, b, s: (np.where(s != 0, u(a), u(b)), None)
    t["s_cselect_b64"] = lambda a, b, s: (np.where(s != 0, q(a), q(b)), None)
    for w, cast in (("b32", u), ("b64", q)):
        t[f"s_and_{w}"] = lambda a, b, s, c=cast: (c(a) & c(b), _nz(c(a) & c(b)))
        t[f"s_or_{w}"] = lambda a, b, s, c=cast: (c(a) | c(b), _nz(c(a) | c(b)))
        t[f"s_xor_{w}"] = lambda a, b, s, c=cast: (c(a) ^ c(b), _nz(c(a) ^ c(b)))
        t[f"s_andn2_{w}"] = lambda a, b, s, c=cast: (c(a) & ~c(b), _nz(c(a) & ~c(b)))
        t[f"s_orn2_{w}"] = lambda a, b, s, c=cast: (c(a) | ~c(b), _nz(c(a) | ~c(b)))
        t[f"s_nand_{w}"] = lambda a, b, s, c=cast: (~(c(a) & c(b)), _nz(~(c(a) & c(b))))
        t[f"s_nor_{w}"] = lambda a, b, s, c=cast: (~(c(a) | c(b)), _nz(~(c(a) | c(b))))
        t[f"s_xnor_{w}"] = lambda a, b, s, c=cast: (~(c(a) ^ c(b)), _nz(~(c(a) ^ c(b))))
    t["s_lshl_b32"] = lambda a, b, s: (u(a) << (u(b) & U32(31)), _nz(u(a) << (u(b) & U32(31))))
    t["s_lshr_b32"] = lambda a, b, s: (u(a) >> (u(b) & U32(31)), _nz(u(a) >> (u(b) & U32(31))))
    t["s_ashr_i32"] = lambda a, b, s: ((u(a).view(I32) >> (u(b) & U32(31)).astype(I32)).view(U32),
                                       _nz(u(a).view(I32) >> (u(b) & U32(31)).astype(I32)))
    sh64 = lambda b: (u(b) & U32(63)).astype(U64)  # noqa: E731
    t["s_lshl_b64"] = lambda a, b, s: (q(a) << sh64(b), _nz(q(a) << sh64(b)))
    t["s_lshr_b64"] = lambda a, b, s: (q(a) >> sh64(b), _nz(q(a) >> sh64(b)))
    t["s_ashr_i64"] = lambda a, b, s: ((q(a).view(I64) >> sh64(b).astype(I64)).view(U64),
                                       _nz(q(a).view(I64) >> sh64(b).astype(I64)))
    t["s_bfm_b32"] = lambda a, b, s: ((((U64(1) << (u(a) & U32(31)).astype(U64)) - U64(1))
                                       << (u(b) & U32(31)).astype(U64)).astype(U32), None)
    t["s_mul_i32"] = lambda a, b, s: ((_s_i(a) * _s_i(b)).astype(U32), None)
    t["s_mul_hi_u32"] = lambda a, b, s: (_mul_hi_u(a, b), None)
    t["s_mul_hi_i32"] = lambda a, b, s: (_mul_hi_i(a, b), None)
    t["s_bfe_u32"] = lambda a, b, s: (_sbfe(a, b, False, False), _nz(_sbfe(a, b, False, False)))
    t["s_bfe_i32"] = lambda a, b, s: (_sbfe(a, b, True, False), _nz(_sbfe(a, b, True, False)))
    t["s_bfe_u64"] = lambda a, b, s: (_sbfe(a, b, False, True), _nz(_sbfe(a, b, False, True)))
    t["s_bfe_i64"] = lambda a, b, s: (_sbfe(a, b, True, True), _nz(_sbfe(a, b, True, True)))
    t["s_absdiff_i32"] = lambda a, b, s: (np.abs(_s_i(a) - _s_i(b)).astype(U32), _nz(np.abs(_s_i(a) - _s_i(b))))
    for n in (1, 2, 3, 4):
        t[f"s_lshl{n}_add_u32"] = lambda a, b, s, n=n: (
            (((u(a).astype(U64) << U64(n)) & _M32) + u(b)) & _M32,
            ((((u(a).astype(U64) << U64(n)) & _M32) + u(b)) > _M32) | ((u(a) >> U32(32 - n)) != 0))
    t["s_pack_ll_b32_b16"] = lambda a, b, s: ((u(a) & U32(0xFFFF)) | (u(b) << U32(16)), None)
    t["s_pack_lh_b32_b16"] = lambda a, b, s: ((u(a) & U32(0xFFFF)) | (u(b) & U32(0xFFFF0000)), None)
    t["s_pack_hh_b32_b16"] = lambda a, b, s: ((u(a) >> U32(16)) | (u(b) & U32(0xFFFF0000)), None)
    # SOP1: fn(a, scc) -> (res, scc|None)
    t["s_mov_b32"] = lambda a, s: (u(a), None)
    t["s_mov_b64"] = lambda a, s: (q(a), None)
    t["s_not_b32"] = lambda a, s: (~u(a), _nz(~u(a)))
    t["s_not_b64"] = lambda a, s: (~q(a), _nz(~q(a)))
    t["s_brev_b32"] = lambda a, s: (O.brev32(a), None)
    t["s_bcnt0_i32_b32"] = lambda a, s: (U32(32) - O.popcount32(a), _nz(U32(32) - O.popcount32(a)))
    t["s_bcnt1_i32_b32"] = lambda a, s: (O.popcount32(a), _nz(O.popcount32(a)))
    t["s_bcnt0_i32_b64"] = lambda a, s: (U32(64) - O.popcount64(a), _nz(U32(64) - O.popcount64(a)))
    t["s_bcnt1_i32_b64"] = lambda a, s: (O.popcount64(a), _nz(O.popcount64(a)))
    t["s_ff1_i32_b32"] = lambda a, s: (O.ffbl_b32(a), None)
    t["s_ff0_i32_b32"] = lambda a, s: (O.ffbl_b32(~u(a)), None)
    t["s_flbit_i32_b32"] = lambda a, s: (O.ffbh_u32(a), None)
    t["s_ff1_i32_b64"] = lambda a, s: (_ff1_64(q(a)), None)
    t["s_sext_i32_i8"] = lambda a, s: (O.sext(a, 8).astype(U32), None)
    t["s_sext_i32_i16"] = lambda a, s: (O.sext(a, 16).astype(U32), None)
    t["s_abs_i32"] = lambda a, s: (np.abs(_s_i(a)).astype(U32), _nz(np.abs(_s_i(a)).astype(U32)))
    return t


def _ff1_64(x):
    lo, hi = O.split64(x)
    a, b = O.ffbl_b32(lo), O.ffbl_b32(hi)
    return np.where(lo != 0, a, np.where(hi != 0, b + U32(32), U32(0xFFFFFFFF)))


SALU = _salu_table()

_SAVEEXEC = {
    "s_and_saveexec_b64": lambda s, e: s & e, "s_or_saveexec_b64": lambda s, e: s | e,
    "s_xor_saveexec_b64": lambda s, e: s ^ e, "s_andn2_saveexec_b64": lambda s, e: s & ~e,
    "s_orn2_saveexec_b64": lambda s, e: s | ~e, "s_nand_saveexec_b64": lambda s, e: ~(s & e),
    "s_nor_saveexec_b64": lambda s, e: ~(s | e), "s_xnor_saveexec_b64": lambda s, e: ~(s ^ e),
    "s_andn1_saveexec_b64": lambda s, e: ~s & e, "s_orn1_saveexec_b64": lambda s, e: ~s | e,
}


def build_salu(ins: Instr, b: Batch, p: Prepared):
    mn = ins.mnemonic
    enc = ins.encoding
    code_addr = b.cfg.code_address
    if mn == "s_getpc_b64":
        wr = swriter(ins.dst[0])
        val = np.array(code_addr + ins.pc + ins.size, U64)
        return lambda b, g: wr(b, g, val)
    if mn in ("s_setpc_b64", "s_swappc_b64"):
        rd = ssrc_reader(ins.src[0])
        wr = swriter(ins.dst[0]) if mn == "s_swappc_b64" else None
        ret = np.array(code_addr + ins.pc + ins.size, U64)

        def fn(b, g):
            tgt = np.broadcast_to(np.asarray(rd(b, g), U64), (g.n,)).astype(np.int64) - code_addr
            if wr is not None:
                wr(b, g, ret)
            return _jump(b, g, tgt)
        return fn
    if mn in _SAVEEXEC:
        rd = ssrc_reader(ins.src[0])
        wr = swriter(ins.dst[0])
        op = _SAVEEXEC[mn]

        def fn(b, g):
            s = np.asarray(rd(b, g), U64)
            e = b.exec64(g)
            new = op(s, e)
            wr(b, g, e)
            b.write_exec(g, np.broadcast_to(new, (g.n,)))
            b.SCC[g.sel] = new != 0
        return fn
    if enc == "SOPC":
        return _build_sopc(ins)
    if enc == "SOPK":
        return _build_sopk(ins, b)
    if mn in ("s_cmov_b32", "s_cmov_b64"):
        rd = ssrc_reader(ins.src[0])
        wr = swriter(ins.dst[0])
        r0, w = ins.dst[0].reg, ins.dst[0].width

        def fn(b, g):
            cur = O.u64_of(b.S[r0][g.sel], b.S[r0 + 1][g.sel]) if w == 2 else b.S[r0][g.sel]
            wr(b, g, np.where(b.SCC[g.sel], rd(b, g), cur))
        return fn
    sem = SALU.get(mn)
    if sem is None:
        return None
    readers = [ssrc_reader(o) for o in ins.src]
    wr = swriter(ins.dst[0]) if ins.dst else None
    if len(readers) == 1:
        r0 = readers[0]

        def fn(b, g):
            res, scc = sem(r0(b, g), b.SCC[g.sel])
            wr(b, g, res)
            if scc is not None:
                b.SCC[g.sel] = scc
    else:
        r0, r1 = readers
        needs_scc = mn in ("s_addc_u32", "s_subb_u32", "s_cselect_b32", "s_cselect_b64")

        def fn(b, g):
            s = b.SCC[g.sel].astype(U64 if mn != "s_subb_u32" else I64) if needs_scc else None
            res, scc = sem(r0(b, g), r1(b, g), s)
            wr(b, g, res)
            if scc is not None:
                b.SCC[g.sel] = scc
    return fn


def _build_sopc(ins: Instr):
    mn = ins.mnemonic
    ra, rb_ = [ssrc_reader(o) for o in ins.src]
    parts = mn.split("_")
    if mn.startswith("s_bitcmp"):
        want = 1 if parts[1] == "bitcmp1" else 0
        w64 = parts[2] == "b64"

        def fn(b, g):
            a = np.asarray(ra(b, g), U64 if w64 else U32).astype(U64)
            bit = (a >> (np.asarray(rb_(b, g), U32) & U32(63 if w64 else 31)).astype(U64)) & U64(1)
            b.SCC[g.sel] = np.broadcast_to(bit == want, (g.n,))
        return fn
    if len(parts) != 4:
        return None
    cond, ty = parts[2], parts[3]
    cond = {"lg": "ne"}.get(cond, cond)

    def fn(b, g):
        a, c = ra(b, g), rb_(b, g)
        if ty == "i32":
            a, c = np.asarray(a, U32).view(I32), np.asarray(c, U32).view(I32)
        elif ty == "u64":
            a, c = np.asarray(a, U64), np.asarray(c, U64)
        else:
            a, c = np.asarray(a, U32), np.asarray(c, U32)
        b.SCC[g.sel] = np.broadcast_to(O.int_cmp(cond, a, c), (g.n,))
    return fn


#: hwreg id of SH_MEM_BASES (LLVM SIDefines.h, ID_MEM_BASES)
HW_REG_SH_MEM_BASES = 15


def _build_sopk(ins: Instr, b: Batch):
    mn = ins.mnemonic
    simm = ins.f["simm16"]
    simm_s = simm - 0x10000 if simm & 0x8000 else simm
    if mn == "s_movk_i32":
        wr = swriter(ins.dst[0])
        v = np.array(simm_s & 0xFFFFFFFF, U32)
        return lambda b, g: wr(b, g, v)
    if mn == "s_cmovk_i32":
        r = ins.dst[0].reg
        v = U32(simm_s & 0xFFFFFFFF)

        def fn(b, g):
            b.S[r][g.sel] = np.where(b.SCC[g.sel], v, b.S[r][g.sel])
        return fn
    if mn.startswith("s_cmpk_"):
        r = ins.src[0].reg
        cond, ty = mn.split("_")[2], mn.split("_")[3]
        cond = {"lg": "ne"}.get(cond, cond)

        def fn(b, g):
            a = b.S[r][g.sel]
            if ty == "i32":
                res = O.int_cmp(cond, a.view(I32).astype(I64), np.int64(simm_s))
            else:
                res = O.int_cmp(cond, a.astype(U64), U64(simm))
            b.SCC[g.sel] = res
        return fn
    if mn == "s_addk_i32":
        r = ins.dst[0].reg

        def fn(b, g):
            x = b.S[r][g.sel].view(I32).astype(I64) + simm_s
            b.S[r][g.sel] = x.astype(U32)
            b.SCC[g.sel] = (x > 0x7FFFFFFF) | (x < -0x80000000)
        return fn
    if mn == "s_mulk_i32":
        r = ins.dst[0].reg

        def fn(b, g):
            b.S[r][g.sel] = (b.S[r][g.sel].view(I32).astype(I64) * simm_s).astype(U32)
        return fn
    if mn == "s_call_b64":
        wr = swriter(ins.dst[0])
        ret = np.array(b.cfg.code_address + ins.pc + 4, U64)
        tgt = ins.pc + 4 + 4 * simm_s

        def fn(b, g):
            wr(b, g, ret)
            return tgt
        return fn
    if mn in ("s_getreg_b32",):
        # hwreg(id, offset, size): SH_MEM_BASES gives the apertures (LLVM reads it for
        # addrspacecast on gfx9: private base [15:0], shared base [31:16], each the aperture
        # address >> 48); other registers read 0 (MODE: float_mode.py)
        hw, off, size = simm & 0x3F, (simm >> 6) & 0x1F, ((simm >> 11) & 0x1F) + 1
        val = 0
        if hw == HW_REG_SH_MEM_BASES:
            val = (PRIVATE_APERTURE_BASE >> 48) | ((SHARED_APERTURE_BASE >> 48) << 16)
        wr = swriter(ins.dst[0])
        z = np.array((val >> off) & ((1 << size) - 1), U32)
        return lambda b, g: wr(b, g, z)
    if mn in ("s_setreg_b32", "s_setreg_imm32_b32"):
        return lambda b, g: None
    return None


#: every scalar ALU mnemonic (SOP1, SOP2, SOPK, SOPC) of the gfx906 table
BASE_BUILDERS = {mn: build_salu for mn in table_mnemonics("SOP1", "SOP2", "SOPK", "SOPC")}
