"""Vector ALU semantics of the plain (VOP1, VOP2, VOPC, VOP3 ``_e64``) forms (Vega ISA
guide 12.7-12.11): the generic builder :func:`build_valu` (one closure per
instruction: read the sources, apply the mnemonic's bit function, apply output
modifiers, write), the bit functions of 32-bit integer, f32, f64 and conversion
instructions (:data:`VALU`), compares (``v_cmp*``/``v_cmpx*``), carry-out
arithmetic, lane reads/writes, ``v_fma_f32`` (exact in f64 with a double-rounding
fix) and ``v_mad_u64_u32``.  Float-mode-aware variants live in :mod:`.vop_float`
(which runs :func:`build_valu` as its fast path in the default mode), SDWA/DPP forms
in :mod:`.sdwa_dpp`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import ops as O
from ..state import F32, F64, I64, U32, U64, WAVE, ssrc_reader, swriter, vsrc_reader, vwriter
from ..decode import Instr
from . import convert, f32, f64, vint
from ._util import _i, table_mnemonics
from .float_mode import _post

if TYPE_CHECKING:  # the core's wave state, for annotations only (no import of the core)
    from ..core import Batch, Prepared

#: mnemonic -> bit function (raw source bits...) -> result bits, of the VALU families
#: (:mod:`.vint`, :mod:`.f32`, :mod:`.f64`, :mod:`.convert`) that :func:`build_valu` runs.
VALU: dict = {**vint.TABLE, **f32.TABLE, **f64.TABLE, **convert.TABLE}


# -- VALU --------------------------------------------------------------------------


_CARRY = {
    # mnemonic: fn(a, b, carry_in bool or None) -> (result u32, carry bool)
    "v_add_co_u32": lambda a, b, c: _addc(a, b, None),
    "v_sub_co_u32": lambda a, b, c: _subb(a, b, None),
    "v_subrev_co_u32": lambda a, b, c: _subb(b, a, None),
    "v_addc_co_u32": lambda a, b, c: _addc(a, b, c),
    "v_subb_co_u32": lambda a, b, c: _subb(a, b, c),
    "v_subbrev_co_u32": lambda a, b, c: _subb(b, a, c),
}


def _addc(a, b, c):
    s = np.asarray(a, U32).astype(U64) + np.asarray(b, U32).astype(U64)
    if c is not None:
        s = s + c.astype(U64)
    return (s & U64(0xFFFFFFFF)).astype(U32), s > U64(0xFFFFFFFF)


def _subb(a, b, c):
    s = np.asarray(a, U32).astype(I64) - np.asarray(b, U32).astype(I64)
    if c is not None:
        s = s - c.astype(I64)
    return s.astype(U32), s < 0


def _post_f32(ins: Instr):
    om, cl = ins.f.get("omod", 0), ins.f.get("clamp", 0)
    if not om and not cl:
        return None
    mul = {0: None, 1: F32(2.0), 2: F32(4.0), 3: F32(0.5)}[om]

    def post(bits):
        x = O.f32(bits)
        if mul is not None:
            x = x * mul
        if cl:
            x = np.where(np.isnan(x), F32(0), np.clip(x, F32(0), F32(1)))
        return O.b32(x)
    return post


def _post_f64(ins: Instr):
    om, cl = ins.f.get("omod", 0), ins.f.get("clamp", 0)
    if not om and not cl:
        return None
    mul = {0: None, 1: 2.0, 2: 4.0, 3: 0.5}[om]

    def post(bits):
        x = O.f64(bits)
        if mul is not None:
            x = x * mul
        if cl:
            x = np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0))
        return O.b64(x)
    return post


def build_valu(ins: Instr, b: Batch, p: Prepared):
    mn = ins.mnemonic
    if mn in ("v_nop", "v_clrexcp"):
        return lambda b, g: None
    if mn.startswith(("v_cmp_", "v_cmpx_")):
        return _build_cmp(ins)
    readers = [vsrc_reader(o) for o in ins.src]
    if mn == "v_readfirstlane_b32":
        rd, wr = readers[0], swriter(ins.dst[0])

        def fn(b, g):
            v = np.broadcast_to(rd(b, g), (g.n, WAVE))
            em = b.em(g)
            lane = np.where(em.any(axis=1), em.argmax(axis=1), 0)
            wr(b, g, v[np.arange(g.n), lane])
        return fn
    if mn == "v_readlane_b32":
        rd = readers[0]
        ls = ssrc_reader(ins.src[1])
        wr = swriter(ins.dst[0])

        def fn(b, g):
            v = np.broadcast_to(rd(b, g), (g.n, WAVE))
            lane = np.broadcast_to(ls(b, g), (g.n,)).astype(np.int64) & 63
            wr(b, g, v[np.arange(g.n), lane])
        return fn
    if mn == "v_writelane_b32":
        sv = ssrc_reader(ins.src[0])
        ls = ssrc_reader(ins.src[1])
        r = ins.dst[0].reg

        def fn(b, g):
            val = np.broadcast_to(sv(b, g), (g.n,))
            lane = np.broadcast_to(ls(b, g), (g.n,)).astype(np.int64) & 63
            rows = g.idx
            b.V[r][rows, lane] = val
        return fn
    if mn == "v_cndmask_b32":
        ra, rb_, rm = readers
        wr = vwriter(ins.dst[0])

        def fn(b, g):
            m = O.mask_of(np.broadcast_to(rm(b, g), (g.n, 1)).reshape(-1))
            wr(b, g, np.where(m, rb_(b, g), ra(b, g)))
        return fn
    if mn in _CARRY:
        sem = _CARRY[mn]
        rd = readers[:2]
        rc = readers[2] if len(readers) > 2 else None
        wr = vwriter(ins.dst[0])
        cw = swriter(ins.dst[1])
        clamp = ins.f.get("clamp", 0)

        def fn(b, g):
            cin = None
            if rc is not None:
                cin = O.mask_of(np.broadcast_to(rc(b, g), (g.n, 1)).reshape(-1))
            res, carry = sem(rd[0](b, g), rd[1](b, g), cin)
            if clamp:
                res = np.where(carry, U32(0) if "sub" in mn else U32(0xFFFFFFFF), res)
            res = np.broadcast_to(res, (g.n, WAVE))
            wr(b, g, res)
            carry = np.broadcast_to(carry, (g.n, WAVE)) & b.em(g)
            cw(b, g, O.bits_of(carry))
        return fn
    if mn in ("v_mad_u64_u32", "v_mad_i64_i32"):
        ra, rb_, rc = readers
        wr = vwriter(ins.dst[0])
        cw = swriter(ins.dst[1])
        signed = mn == "v_mad_i64_i32"

        def fn(b, g):
            a, bb, c = ra(b, g), rb_(b, g), rc(b, g)
            if signed:
                prod = (_i(a).astype(I64) * _i(bb).astype(I64)).view(U64)
                res = prod + np.asarray(c, U64)
                pi = prod.view(I64)
                ci = np.asarray(c, U64).view(I64)
                carry = ((pi >= 0) == (ci >= 0)) & ((res.view(I64) >= 0) != (pi >= 0))
            else:
                prod = np.asarray(a, U32).astype(U64) * np.asarray(bb, U32).astype(U64)
                res = prod + np.asarray(c, U64)
                carry = res < prod
            wr(b, g, np.broadcast_to(res, (g.n, WAVE)))
            cw(b, g, O.bits_of(np.broadcast_to(carry, (g.n, WAVE)) & b.em(g)))
        return fn
    if mn in ("v_mbcnt_lo_u32_b32", "v_mbcnt_hi_u32_b32"):
        ra, rb_ = readers
        wr = vwriter(ins.dst[0])
        hi = mn == "v_mbcnt_hi_u32_b32"
        lanes = np.arange(WAVE)
        lo_mask = np.where(lanes < 32, (np.uint64(1) << lanes.clip(0, 31).astype(U64)) - U64(1),
                           U64(0xFFFFFFFF)).astype(U64)
        hi_mask = np.where(lanes >= 32, (np.uint64(1) << (lanes - 32).clip(0, 31).astype(U64)) - U64(1),
                           U64(0)).astype(U64)
        m = (hi_mask if hi else lo_mask).astype(U32)

        def fn(b, g):
            a = np.asarray(ra(b, g), U32)
            wr(b, g, O.popcount32(a & m) + np.asarray(rb_(b, g), U32))
        return fn
    if mn in ("v_fma_f32", "v_fmac_f32"):
        return _build_fma32(ins, readers)
    if mn == "v_swap_b32":
        r0, r1 = ins.dst[0].reg, ins.dst[1].reg

        def fn(b, g):
            x = b.V[r0][g.sel].copy()
            y = b.V[r1][g.sel].copy()
            b.vwrite(g, r0, y)
            b.vwrite(g, r1, x)
        return fn
    sem = VALU.get(mn)
    if sem is None:
        return None
    wr = vwriter(ins.dst[0])
    w = ins.dst[0].width
    post = None
    parts = mn.split("_")
    int_result = (mn.startswith("v_cvt_") and parts[2][:1] in "iu") or mn.startswith("v_frexp_exp")
    if int_result:
        pass  # a float -> integer conversion: the float output modifiers do not apply
    elif mn == "v_cvt_f16_f32":
        post = _post(ins, "f16", True) if (ins.f.get("omod", 0) or ins.f.get("clamp", 0)) else None
    elif "_f32" in mn and w == 1:
        post = _post_f32(ins)
    elif "_f64" in mn and w == 2:
        post = _post_f64(ins)
    elif ins.f.get("clamp") and mn in ("v_add_u32", "v_sub_u32", "v_subrev_u32"):
        base = sem

        def sem(a, b_, _base=base):
            a64, b64 = np.asarray(a, U32).astype(I64), np.asarray(b_, U32).astype(I64)
            if mn == "v_add_u32":
                return np.minimum(a64 + b64, 0xFFFFFFFF).astype(U32)
            if mn == "v_sub_u32":
                return np.maximum(a64 - b64, 0).astype(U32)
            return np.maximum(b64 - a64, 0).astype(U32)
    n = len(readers)
    if n == 1:
        r0 = readers[0]

        def fn(b, g):
            v = sem(r0(b, g))
            if post is not None:
                v = post(v)
            wr(b, g, v)
    elif n == 2:
        r0, r1 = readers

        def fn(b, g):
            v = sem(r0(b, g), r1(b, g))
            if post is not None:
                v = post(v)
            wr(b, g, v)
    else:
        r0, r1, r2 = readers[:3]

        def fn(b, g):
            v = sem(r0(b, g), r1(b, g), r2(b, g))
            if post is not None:
                v = post(v)
            wr(b, g, v)
    return fn


def _build_fma32(ins: Instr, readers):
    ra, rb_, rc = readers[:3]
    d = ins.dst[0].reg
    post = _post_f32(ins)
    srcs = ins.src[:3]
    simple = post is None and all(o.kind in ("v", "s", "const", "lit") and not (o.neg or o.abs)
                                  and o.width == 1 for o in srcs)
    kinds = tuple(o.kind for o in srcs)
    regs = tuple(o.reg for o in srcs)
    consts = tuple(np.array(o.value, U32).view(F32) for o in srcs)
    # the vector operand to cast first (fast path needs at least one VGPR source)
    vec = [i for i, k in enumerate(kinds) if k == "v"]

    def generic(b, g):
        a, bb, c = ra(b, g), rb_(b, g), rc(b, g)
        t = O.fma32_into(a, bb, c, b.scratch)
        r = np.array(np.broadcast_to(t.astype(F32).view(U32), t.shape))
        O.fma32_fix(t, a, bb, c, r)
        if post is not None:
            r = post(r)
        b.vwrite(g, d, r)

    if not simple or not vec:
        return generic

    def getter(i, f64=False):
        # f32 operands; the ufuncs below cast them to f64 exactly (``f64``: cast here)
        k, r = kinds[i], regs[i]
        if k == "v":
            return lambda b, sel: b.Vf[r, sel]
        if k == "s":
            if f64:
                return lambda b, sel: b.Sf[r, sel].astype(F64)[:, None]
            return lambda b, sel: b.Sf[r, sel][:, None]
        c = consts[i]
        return lambda b, sel: c

    first = vec[0]
    others = [i for i in (0, 1) if i != first] if first in (0, 1) else [0, 1]
    mul_other = others[0] if first in (0, 1) else None
    g0, g1 = getter(0, True), getter(1, True)
    g2 = getter(2)
    gx = getter(first)
    gy = getter(mul_other) if mul_other is not None else None
    count = np.count_nonzero

    def fn(b, g):
        if not g.contig:
            return generic(b, g)
        n = g.n
        sel = g.sel
        bufs = b.scr.get(("fma32", n))
        if bufs is None:
            shape = (n, WAVE)
            t, u = b.scratch(shape, F64, 0), b.scratch(shape, F64, 1)
            bufs = b.scr[("fma32", n)] = (t, u, b.scratch(shape, bool, 3), b.scratch(shape, bool, 4),
                                          t.view(U64), u.view(U64))
        t, u, hit, nz, tb, uu = bufs
        if gy is not None:
            # the exact f32 x f32 product in f64, then the f64 sum (the operands cast exactly)
            np.multiply(gx(b, sel), gy(b, sel), out=t, dtype=F64)
            np.add(t, g2(b, sel), out=t, dtype=F64)
        else:
            # only src2 is a vector: the product is a per-wave scalar (exact in f64)
            prod = g0(b, sel) * g1(b, sel)
            np.copyto(t, g2(b, sel))
            np.add(t, prod, out=t)
        # Double rounding is possible only where the f64 sum sits on an f32 halfway
        # point: low 29 mantissa bits == 0x10000000 (normal range) or == 0 (subnormal
        # f32 range); one AND + compare finds both patterns (and zeros, exact: dropped
        # when there are any hits).  Lanes outside EXEC are not written: not repaired.
        np.bitwise_and(tb, _CAND_MASK, out=uu)
        np.equal(uu, 0, out=hit)
        full = g._full
        if full is None:
            full = b.full(g)
        em = None if full else g._em
        if em is not None:
            np.logical_and(hit, em, out=hit)
        if count(hit):
            np.not_equal(t, 0.0, out=nz)
            np.logical_and(hit, nz, out=hit)
            if count(hit):
                a, bb, c = ra(b, g), rb_(b, g), rc(b, g)
                r = t.astype(F32).view(U32)
                O.fma32_fix_lanes(t, a, bb, c, r, np.nonzero(hit))
                b.vwrite(g, d, r)
                return None
        if em is None:
            np.copyto(b.Vf[d, sel], t, casting="same_kind")
        else:
            np.copyto(b.Vf[d, sel], t, casting="same_kind", where=em)
        return None
    return fn


_CAND_MASK = U64(0x1FFFFFFF ^ 0x10000000)
_MINNORM64 = F64(2.0 ** -126)


def cmp_test(mn: str):
    """``test(a, c) -> bool array`` of a 32/64-bit ``v_cmp[x]_<cond>_<type>`` on raw source
    bits (``class``: ``c`` is the class mask); None for other types (16-bit ones are
    :mod:`.f16`'s and :mod:`.i16`'s).  Shared with the SDWA forms (:mod:`.sdwa_dpp`)."""
    parts = mn.split("_")
    ty = parts[-1]
    if parts[2] == "class":
        if ty not in ("f32", "f64"):
            return None
        is64 = ty == "f64"
        return lambda a, m: O.cmp_class(a, m, is64)
    cond = parts[2]
    if ty == "f32":
        return lambda a, c: O.f32_cmp(cond, a, c)
    if ty == "f64":
        return lambda a, c: O.f64_cmp(cond, a, c)
    if ty == "i32":
        return lambda a, c: O.int_cmp(cond, _i(a), _i(c))
    if ty == "u32":
        return lambda a, c: O.int_cmp(cond, np.asarray(a, U32), np.asarray(c, U32))
    if ty == "i64":
        return lambda a, c: O.int_cmp(cond, np.asarray(a, U64).view(I64), np.asarray(c, U64).view(I64))
    if ty == "u64":
        return lambda a, c: O.int_cmp(cond, np.asarray(a, U64), np.asarray(c, U64))
    return None


def _build_cmp(ins: Instr):
    mn = ins.mnemonic
    x = mn.split("_")[1] == "cmpx"
    ra, rb_ = [vsrc_reader(o) for o in ins.src[:2]]
    test = cmp_test(mn)
    if test is None:
        return None
    wr = swriter(ins.dst[0])

    def fn(b, g):
        b.write_compare(g, wr, test(ra(b, g), rb_(b, g)), b.em(g), x)
    return fn


#: the VALU mnemonics :func:`build_valu` runs by name (no bit function in :data:`VALU`)
_NAMED = frozenset({"v_nop", "v_clrexcp", "v_readfirstlane_b32", "v_readlane_b32", "v_writelane_b32",
                    "v_cndmask_b32", *_CARRY, "v_mad_u64_u32", "v_mad_i64_i32", "v_mbcnt_lo_u32_b32",
                    "v_mbcnt_hi_u32_b32", "v_fma_f32", "v_fmac_f32", "v_swap_b32"})


def _runs(mn: str) -> bool:
    """Whether :func:`build_valu` runs ``mn``: a bit function of :data:`VALU`, a mnemonic of
    :data:`_NAMED`, or a 32/64-bit compare (:func:`cmp_test`)."""
    if mn.startswith(("v_cmp_", "v_cmpx_")):
        return cmp_test(mn) is not None
    return mn in VALU or mn in _NAMED


#: the plain VOP1, VOP2, VOPC and VOP3 forms :func:`build_valu` runs (the 16-bit, packed,
#: division, SAD, cube, interpolation, ... ones are the family modules')
BASE_BUILDERS = {mn: build_valu for mn in table_mnemonics("VOP1", "VOP2", "VOPC", "VOP3a", "VOP3b",
                                                          but=lambda mn: not _runs(mn))}
