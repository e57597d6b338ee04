"""SDWA and DPP forms of VOP1/VOP2/VOPC instructions (Vega ISA guide 12.7.1 / 12.7.2).

SDWA (sub-dword addressing): each source is narrowed by its ``src*_sel`` (BYTE_0..3,
WORD_0/1, DWORD), zero- or (``sext``) sign-extended to 32 bits, then ``abs``/``neg``
(float operations) apply; the operation runs on those values; the result's low bits
go to the ``dst_sel`` field of the destination and the other bits are zero
(UNUSED_PAD), copies of the field's sign bit above it (UNUSED_SEXT) or the old
destination bits (UNUSED_PRESERVE).  VOPC writes VCC or the SDWA ``sdst``.

DPP (data-parallel primitives): src0 is read from another lane of the wave chosen by
``dpp_ctrl`` (quad_perm, row_shl/shr/ror 1..15 within rows of 16 lanes,
wave_shl/rol/shr/ror by 1, row_mirror, row_half_mirror, row_bcast:15/31).  A lane
whose source lane is outside the row/wave or disabled in EXEC reads 0 if
``bound_ctrl`` is set and is not written otherwise; rows and banks (groups of 4
lanes of a row) whose ``row_mask``/``bank_mask`` bit is clear are not written.

Covered operations: the plain 32-bit VOP1/VOP2 operations of the core
(:data:`.valu.VALU`), the 16-bit integer ones (:mod:`.i16`), one- and two-source f16
arithmetic and conversions (:mod:`.f16`), carry-out adds/subtracts, ``v_cndmask_b32``
and the f16/f32/i16/u16/i32/u32 compares.  A form outside this list stops with
UnsupportedInstruction naming it.

The wave's float mode (MODE register) applies as in the plain forms (:mod:`.vop_float`,
:mod:`.f16`): f32/f16 sources (after selection or the lane move, and ``abs``/``neg``) are
flushed to a signed zero when FP_DENORM flushes inputs, results when it flushes
outputs (``v_mac_f32`` never keeps f32 denormals); ``clamp`` turns NaN into 0 only under
DX10_CLAMP; ``v_min/max_f32`` follow the ISA pseudo-code (IEEE mode: a signalling NaN
operand returns quieted; -0 < +0; the f16 ones too, on the bits); the directed FP_ROUND
modes are emulated as in the plain forms (:data:`.vop_float.DIRECTED`, f16 results by
FP_ROUND_16_64), exact operations run in any mode, the others are refused by name.
f16 results get the SDWA ``clamp``/``omod`` output modifiers like f32 ones (GFX9 DPP has
no output modifiers); ``v_cvt_f16_f32``/``v_cvt_f32_f16`` use their source and result
types (neg/abs bit, flush field, modifiers); an f16 source reads an inline float
constant in its f16 encoding.
"""

from __future__ import annotations

import numpy as np

from .. import ops as O
from ..errors import UnsupportedInstruction
from ._util import I64, U32, raw_reader, raw_reader16, s16
from .float_mode import FLUSH, IEEE_KEEP, denorm_bits, mode_of, round_bits
from . import valu as _valu
from .. import state

_SDWA_OK_EXTRA = {"v_cndmask_b32"}


def _sem(mn: str):
    """(fn, kind): fn on 32-bit raw values; kind 'plain' | 'i16' | 'carry' | 'cmp' | 'cndmask'."""
    from . import f16, i16
    if mn in i16.FUNCS:
        return i16.FUNCS[mn], "i16"
    if mn == "v_ldexp_f16":
        return (lambda a, e, rb=0: f16.from_f_rounded(f16._ldexp(f16._to_f(a), e), rb)), "i16"
    if mn in f16.MINMAX16:  # the ISA pseudo-code on the bits (IEEE mode: signalling NaNs)
        mm = f16.MINMAX16[mn]
        return (lambda a, c, rb=0, ieee=True: mm(ieee)(a, c)), "i16"
    if mn in f16.ARITH and (f16.ARITH[mn][1] <= 2 or mn == "v_mac_f16"):
        g16 = f16.ARITH[mn][0]
        return (lambda *v, rb=0: f16.from_f_rounded(g16(*[f16._to_f(x) for x in v]), rb)), "i16"
    if mn in f16.TO_INT:
        t16 = f16.TO_INT[mn]
        return (lambda a: t16(f16._to_f(a))), "i16"
    if mn in f16.FROM_INT:
        i2f = f16.FROM_INT[mn]
        return (lambda a, rb=0: f16.from_f_rounded(i2f(a), rb)), "i16"
    if mn.startswith(("v_cmp_", "v_cmpx_")) and mn.endswith(("_f16", "_i16", "_u16")):
        parts = mn.split("_")
        cond, ty = parts[2], parts[-1]
        if cond == "class":
            return f16.cmp_class16, "cmp"
        if ty == "f16":
            return (lambda a, c: O._fcmp(cond, f16._to_f(a), f16._to_f(c))), "cmp"
        if ty == "i16":
            return (lambda a, c: O.int_cmp(cond, s16(a), s16(c))), "cmp"
        return (lambda a, c: O.int_cmp(cond, np.asarray(a, I64) & 0xFFFF, np.asarray(c, I64) & 0xFFFF)), "cmp"
    if mn in _valu._CARRY:
        return _valu._CARRY[mn], "carry"
    if mn == "v_cndmask_b32":
        return None, "cndmask"
    if mn.startswith(("v_cmp_", "v_cmpx_")):
        parts = mn.split("_")
        if parts[2] == "class" and parts[-1] == "f32":
            return (lambda a, c: O.cmp_class(a, c)), "cmp"
        if parts[2] == "class" or parts[-1] not in ("f32", "f64", "i32", "u32"):
            return None, None
        return _valu.cmp_test(mn), "cmp"
    if mn == "v_fmac_f32":
        return O.fma32, "plain"   # the accumulator (the destination) is the third operand
    from . import convert
    fn = _valu.VALU.get(mn) or convert.RAW.get(mn)
    if fn is None or mn in ("v_madmk_f32", "v_madak_f32"):
        return None, None
    return fn, "plain"


def _result_type(mn, kind, ftype):
    """The float type of the result (for the output modifiers and the result flush), or None."""
    from . import f16
    if kind in ("cmp", "carry", "cndmask") or mn in f16.TO_INT:
        return None
    if mn == "v_cvt_f32_f16":
        return "f32"
    if mn == "v_cvt_f16_f32":
        return "f16"
    if ftype == "f32":
        from .vop_float import _types
        ty = _types(mn)
        if ty is not None:
            return ty[0]          # None for an integer result (v_cvt_i32_f32, ...)
        return None if mn.startswith("v_frexp_exp") else "f32"
    return ftype


def _readers(ins, mn, ftype, nsrc):
    """Raw source readers; a 16-bit float source reads an inline constant as its f16 encoding."""
    from . import f16
    src16 = ftype == "f16" and mn not in f16.FROM_INT
    return [(raw_reader16 if src16 else _raw_reader)(o) for o in ins.src[:nsrc]]


def _default_post(ins, mn, kind, ftype):
    """The output modifiers (omod, clamp) when no mode plan runs the instruction, as
    ``fn(bits, batch, group)`` (a clamped NaN becomes 0 under MODE.DX10_CLAMP), or None."""
    rt = _result_type(mn, kind, ftype)
    if rt not in ("f32", "f16") or not (ins.f.get("omod", 0) or ins.f.get("clamp", 0)):
        return None
    if rt == "f32" and not ins.f.get("clamp", 0):
        p32 = _valu._post_f32(ins)
        return lambda v, b, g: p32(v)
    from .float_mode import _post
    posts = {dx10: _post(ins, rt, dx10) for dx10 in (True, False)}
    return lambda v, b, g: posts[bool((mode_of(b, g) >> 8) & 1)](v)


def _ftype(mn):
    for t in ("f16", "f32", "f64"):
        if t in mn.split("_")[-1:] or mn.endswith("_" + t):
            return t
    return None


def _select(x, sel, sext):
    x = np.asarray(x, U32).astype(I64)
    if sel <= 3:
        v, bits = (x >> (8 * sel)) & 0xFF, 8
    elif sel <= 5:
        v, bits = (x >> (16 * (sel - 4))) & 0xFFFF, 16
    else:
        return np.asarray(x, I64).astype(U32)
    if sext:
        v = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
    return v.astype(U32)


def _float_mods(x, o, ftype):
    if not (o.neg or o.abs):
        return x
    sign = U32(0x8000) if ftype == "f16" else U32(0x80000000)
    x = np.asarray(x, U32)
    if o.abs:
        x = x & ~sign
    if o.neg:
        x = x ^ sign
    return x


def _place(res, old, sel, unused):
    r = np.asarray(res, U32).astype(I64)
    if sel == 6:
        return r.astype(U32)
    if sel <= 3:
        sh, bits = 8 * sel, 8
    else:
        sh, bits = 16 * (sel - 4), 16
    field = (r & ((1 << bits) - 1)) << sh
    mask = ((1 << bits) - 1) << sh
    if unused == 2:
        out = (np.asarray(old, U32).astype(I64) & ~mask) | field
    elif unused == 1:
        top = ((r >> (bits - 1)) & 1).astype(bool)
        above = (0xFFFFFFFF ^ ((1 << (sh + bits)) - 1))
        out = field | np.where(top, above, 0)
    else:
        out = field
    return (out & 0xFFFFFFFF).astype(U32)


_raw_reader = raw_reader  # SDWA/DPP apply neg/abs after selection/permutation


class _ModePlan:
    """How an SDWA/DPP float instruction runs under a MODE other than the IEEE default:
    ``src_t``/``dst_t`` the float types of the sources (accumulator last) and result;
    ``always``: also in the default mode (v_min/max_f32's pseudo-code, v_mac_f32's flush)."""

    def __init__(self, ins, mn, kind, ftype, fn):
        from . import f16 as _f16
        from . import rounding
        from .vop_float import _MAD_F32, _MINMAX, _post, _sem, _types
        self.mn, self.kind, self.fn = mn, kind, fn
        self.minmax = mn in _MINMAX
        self.mad = mn in _MAD_F32
        self.always = self.minmax or self.mad
        from .vop_float import DIRECTED, _directed
        self.directed = mn in DIRECTED or (ftype == "f16" and kind == "i16")
        self._directed = _directed
        from .vop_float import _EXACT
        self.minmax16 = mn in _f16.MINMAX16
        self.exact = mn in _EXACT or self.minmax or self.minmax16
        self._rounding = rounding
        self._sem, self._post_of, self.ins = _sem, _post, ins
        self.ok = True
        if ftype == "f16":
            if kind == "cmp" and "_class_" in mn:
                self.ok = False   # tests the raw operand
            elif kind == "cmp":
                self.src_t, self.dst_t = ["f16", "f16"], None
            elif mn in _f16.ARITH:
                self.src_t, self.dst_t = ["f16"] * _f16.ARITH[mn][1], "f16"
            elif mn in _f16.TO_INT:
                self.src_t, self.dst_t = ["f16"], None
            elif mn in _f16.FROM_INT:
                self.src_t, self.dst_t = [None], "f16"
            elif mn == "v_cvt_f32_f16":
                self.src_t, self.dst_t = ["f16"], "f32"
            else:
                self.ok = False
        elif ftype == "f32":
            ty = _types(mn)
            if ty is None:
                self.ok = False
            else:
                self.dst_t, src_t = ty
                self.src_t = list(src_t)
        else:
            self.ok = False
        self._sems: dict = {}
        self._posts: dict = {}

    def flush_sources(self, vals, mode):
        out = []
        for i, v in enumerate(vals):
            t = self.src_t[i] if i < len(self.src_t) else None
            if t is not None and (self.mad or not (denorm_bits(mode, t) & 1)):
                v = FLUSH[t](v)
            out.append(v)
        return out

    def flush_result(self, v, mode):
        t = self.dst_t
        if t is not None and (self.mad or not (denorm_bits(mode, t) & 2)):
            v = FLUSH[t](v)
        return v

    def rounding(self, mode):
        """The directed FP_ROUND mode to emulate (0: nearest even); refuses the others."""
        if self.exact or self.dst_t is None:
            return 0  # exact, a compare, or an integer result: nothing to round
        rb = round_bits(mode, self.dst_t)   # the result's type rounds (the sources are exact)
        if rb and not self.directed:
            raise UnsupportedInstruction(
                f"{self.mn} (SDWA/DPP): round mode {rb} for {self.dst_t} (MODE register) is not "
                f"emulated (only round to nearest even)", mnemonic=self.mn)
        return rb

    def compute(self, vals, mode):
        """The plain f32 operation's result bits under ``mode`` (sources already flushed),
        with the output modifiers and the result flush."""
        rb = self.rounding(mode)
        if rb:
            v = self._directed(self.mn, vals, rb)
        else:
            ieee = bool((mode >> 9) & 1)
            sem = self._sems.get(ieee)
            if sem is None:
                sem = self._sems[ieee] = (self._sem(self.mn, ieee) if self.minmax else self.fn)
            v = sem(*vals)
        return self.output(v, mode)

    def output(self, v, mode):
        """Result bits ``v`` flushed, through the output modifiers (under DX10_CLAMP of
        ``mode``), flushed again."""
        v = self.flush_result(v, mode)
        dx10 = bool((mode >> 8) & 1)
        post = self._posts.get(dx10, 0)
        if post == 0:
            post = self._posts[dx10] = (self._post_of(self.ins, self.dst_t, dx10)
                                        if self.dst_t is not None else None)
        if post is not None:
            v = self.flush_result(post(v), mode)
        return v


def _plan(ins, mn, kind, ftype, fn):
    from . import f16
    from .vop_float import _types
    if ftype is None:  # conversions from integers: the result's float type
        ty = _types(mn)
        ftype = "f16" if mn in f16.FROM_INT else ("f32" if ty is not None and ty[0] == "f32" else None)
    plan = _ModePlan(ins, mn, kind, ftype, fn)
    return plan if plan.ok else None


def _moded(plan, b, g):
    """The MODE to run under, or None for the default path."""
    if plan is None:
        return None
    mode = mode_of(b, g) & 0x3FF
    return mode if (plan.always or mode != IEEE_KEEP) else None


def _cmp_runner(ins, fn, plan, fetch):
    """The runner of an SDWA/DPP compare: ``fetch(b, g)`` gives the two sources (after the
    selection or the lane move, with their modifiers) and the lanes to write."""
    wr = state.swriter(ins.dst[0])
    x = ins.mnemonic.startswith("v_cmpx_")

    def run_cmp(b, g):
        (a, c), lanes = fetch(b, g)
        mode = _moded(plan, b, g)
        if mode is not None:
            plan.rounding(mode)
            a, c = plan.flush_sources([a, c], mode)
        b.write_compare(g, wr, fn(a, c), lanes, x)
    return run_cmp


def _result(kind, fn, plan, post, vals, extra, acc, mode, b, g):
    """(result, carry-out or None) of a non-compare SDWA/DPP operation on the sources
    ``vals`` (after the selection or the lane move, with their modifiers) under ``mode``
    (:func:`_moded`): ``extra`` reads the further operands (v_cndmask's VCC, the carry-in),
    ``acc`` their values as the accumulator (v_mac)."""
    with np.errstate(all="ignore"):
        if kind == "cndmask":
            m = O.mask_of(np.broadcast_to(extra[0](b, g), (g.n, 1)).reshape(-1))
            return np.where(m, vals[1], vals[0]), None
        if kind == "carry":
            cin = None
            if extra:
                cin = O.mask_of(np.broadcast_to(extra[0](b, g), (g.n, 1)).reshape(-1))
            return fn(vals[0], vals[1], cin)
        if kind == "i16":
            return _f16_result(plan, fn, vals + acc(b, g), mode, post, b, g), None
        if mode is not None:
            return plan.compute(plan.flush_sources(vals + acc(b, g), mode), mode), None
        # v_mac_f32: the accumulator (the destination) is the third operand
        res = fn(*vals, *acc(b, g))
        return (res if post is None else post(res, b, g)), None


def _build_sdwa(ins, b, p):
    mn = ins.mnemonic
    fn, kind = _sem(mn)
    if kind is None:
        return None
    sd = ins.f["sdwa"]
    ftype = _ftype(mn)
    nsrc = 1 if ins.encoding == "VOP1" else 2
    rd = _readers(ins, mn, ftype, nsrc)
    sels = [(sd["src0_sel"], sd["src0_sext"]), (sd["src1_sel"], sd["src1_sext"])]
    post = _default_post(ins, mn, kind, ftype)
    extra = [state.vsrc_reader(o) for o in ins.src[nsrc:]]
    plan = _plan(ins, mn, kind, ftype, fn)

    def operands(b, g):
        vals = []
        for i in range(nsrc):
            v = _select(rd[i](b, g), *sels[i])
            if ftype is not None:
                v = _float_mods(v, ins.src[i], ftype)
            vals.append(v)
        return vals

    if kind == "cmp":
        return _cmp_runner(ins, fn, plan, lambda b, g: (operands(b, g), b.em(g)))

    d = ins.dst[0].reg
    dsel, unused = sd["dst_sel"], sd["dst_unused"]
    cw = state.swriter(ins.dst[1]) if kind == "carry" else None

    def acc(b, g):
        return [e(b, g) for e in extra]

    def run(b, g):
        vals = operands(b, g)
        mode = _moded(plan, b, g)
        res, carry = _result(kind, fn, plan, post, vals, extra, acc, mode, b, g)
        res = np.broadcast_to(np.asarray(res).astype(U32), (g.n, state.WAVE))
        b.vwrite(g, d, _place(res, b.V[d][g.sel], dsel, unused))
        if cw is not None:
            cw(b, g, O.bits_of(np.broadcast_to(carry, (g.n, state.WAVE)) & b.em(g)))
    return run


# -- DPP ------------------------------------------------------------------------------------

def dpp_lanes(ctrl: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(source lane per lane, source in range) for a dpp_ctrl value; None if reserved."""
    lane = np.arange(64)
    row, pos = lane // 16, lane % 16
    ok = np.ones(64, bool)
    if ctrl <= 0xFF:
        src = (lane & ~3) + ((ctrl >> (2 * (lane & 3))) & 3)
    elif 0x101 <= ctrl <= 0x10F:
        n = ctrl & 0xF
        src, ok = lane + n, pos + n < 16
    elif 0x111 <= ctrl <= 0x11F:
        n = ctrl & 0xF
        src, ok = lane - n, pos - n >= 0
    elif 0x121 <= ctrl <= 0x12F:
        n = ctrl & 0xF
        src = row * 16 + (pos - n) % 16
    elif ctrl == 0x130:
        src, ok = lane + 1, lane + 1 < 64
    elif ctrl == 0x134:
        src = (lane + 1) % 64
    elif ctrl == 0x138:
        src, ok = lane - 1, lane - 1 >= 0
    elif ctrl == 0x13C:
        src = (lane - 1) % 64
    elif ctrl == 0x140:
        src = row * 16 + 15 - pos
    elif ctrl == 0x141:
        src = lane - (lane % 8) + 7 - (lane % 8)
    elif ctrl == 0x142:
        src, ok = row * 16 - 1, row >= 1
    elif ctrl == 0x143:
        src, ok = np.full(64, 31), row >= 2
    else:
        return None
    src = np.where(ok, src, 0).astype(np.int64)
    return src, ok


def _build_dpp(ins, b, p):
    mn = ins.mnemonic
    fn, kind = _sem(mn)
    if kind is None:
        return None
    dp = ins.f["dpp"]
    lanes = dpp_lanes(dp["dpp_ctrl"])
    if lanes is None:
        return None
    src_lane, in_range = lanes
    bound = bool(dp["bound_ctrl"])
    lane = np.arange(64)
    wmask = (((dp["row_mask"] >> (lane // 16)) & 1) == 1) & (((dp["bank_mask"] >> ((lane >> 2) & 3)) & 1) == 1)
    ftype = _ftype(mn)
    nsrc = 1 if ins.encoding == "VOP1" else 2
    rd = _readers(ins, mn, ftype, nsrc)
    extra = [state.vsrc_reader(o) for o in ins.src[nsrc:]]
    post = _default_post(ins, mn, kind, ftype)
    plan = _plan(ins, mn, kind, ftype, fn)

    def fetch(b, g):
        em = b.em(g)
        v0 = np.broadcast_to(rd[0](b, g), (g.n, state.WAVE))
        moved = v0[:, src_lane]
        valid = in_range[None, :] & em[:, src_lane]
        if bound:
            moved = np.where(valid, moved, U32(0))
            wen = wmask[None, :] & em
        else:
            wen = wmask[None, :] & em & valid
        vals = [moved] + [np.broadcast_to(r(b, g), (g.n, state.WAVE)) for r in rd[1:]]
        if ftype is not None:
            vals = [_float_mods(v, o, ftype) if o.width == 1 else v for v, o in zip(vals, ins.src)]
        return vals, wen

    if kind == "cmp":
        return _cmp_runner(ins, fn, plan, fetch)

    d = ins.dst[0].reg
    if ins.dst[0].width != 1:
        return None
    cw = state.swriter(ins.dst[1]) if kind == "carry" else None

    def acc(b, g):
        return [np.broadcast_to(e(b, g), (g.n, state.WAVE)) for e in extra]

    def run(b, g):
        vals, wen = fetch(b, g)
        if kind == "i16":
            vals = [v & U32(0xFFFF) for v in vals]
        mode = _moded(plan, b, g)
        res, carry = _result(kind, fn, plan, post, vals, extra, acc, mode, b, g)
        res = np.broadcast_to(np.asarray(res).astype(U32), (g.n, state.WAVE))
        old = b.V[d][g.sel]
        b.vwrite(g, d, np.where(wen, res, old))
        if cw is not None:
            cw(b, g, O.bits_of(np.broadcast_to(carry, (g.n, state.WAVE)) & wen))
    return run


def builder(ins):
    """The builder for an SDWA or DPP instruction, or None (no semantics)."""
    if any(o.width != 1 for o in list(ins.dst[:1]) + list(ins.src[:2]) if o.kind in ("v", "s")) \
            and not ins.mnemonic.startswith(("v_cmp", "v_add_co", "v_sub", "v_addc", "v_cndmask")):
        return None  # SDWA/DPP act on 32-bit operands
    if "sdwa" in ins.f:
        return _build_sdwa
    return _build_dpp


BUILDERS: dict = {}


def _f16_result(plan, fn, vals, mode, post, b, g):
    """A 16-bit VOP result of an SDWA/DPP form: under a float ``mode`` the f16 sources flushed
    and the result rounded by FP_ROUND_16_64 (min/max also read MODE.IEEE), then the output
    modifiers; without one, ``fn`` on the raw values, then ``post`` (when given).  Low 16
    bits, as int64."""
    if mode is None:
        res = np.asarray(fn(*vals), I64) & 0xFFFF
        return res if post is None else post(res, b, g)
    rb = plan.rounding(mode)
    kw = {"rb": rb} if rb else {}
    if plan.minmax16:
        kw["ieee"] = bool((mode >> 9) & 1)
    return plan.output(np.asarray(fn(*plan.flush_sources(vals, mode), **kw), I64) & 0xFFFF, mode)
