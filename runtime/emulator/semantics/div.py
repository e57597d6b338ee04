"""The division helpers hipcc's correctly rounded float/double division uses.

``v_div_scale_f32/f64`` (VOP3b: D, sdst = S0, S1, S2), ``v_div_fmas_f32/f64`` (reads
VCC) and ``v_div_fixup_f32/f64/f16``, after the pseudo-code of the Vega ISA guide
(section 12.8, VOP3a/VOP3b opcodes):

* DIV_SCALE: D = S0 unless S1 or S2 is 0 (D = NaN); exp(S2) - exp(S1) >= 96 (f64:
  768): VCC = 1, D = ldexp(S0, 64) if S0 == S1; S1 denormal: D = ldexp(S0, 64);
  1/S1 and S2/S1 denormal: VCC = 1, D = ldexp(S0, -64) if S0 == S1; 1/S1 denormal:
  D = ldexp(S0, -64); S2/S1 denormal: VCC = 1, D = ldexp(S0, 64) if S0 == S2;
  exp(S2) <= 23 (f64: 53): D = ldexp(S0, 64).  f64 scales by 2^128.  ``exp`` is the
  biased exponent field.
* DIV_FMAS: D = fma(S0, S1, S2), times 2^64 (f64: 2^128) where VCC is set and
  exp(S2) > 127 (f64: 1023), times 2^-64 (2^-128) where VCC is set otherwise.
* DIV_FIXUP (S0 quotient, S1 denominator, S2 numerator): NaN operands propagate
  (quieted, S2 first); 0/0 and inf/inf give NaN; x/0 and inf/x give a signed
  infinity; x/inf and 0/x a signed zero; exp(S2) - exp(S1) < -150 (f64: -1080) a
  signed zero (underflow); a NaN quotient S0 from finite operands (the scaled
  quotient overflowed in the FMA chain) a signed infinity (overflow); otherwise
  D = sign(S1 ^ S2) * |S0|.

The scale directions (which case scales by 2^64 and which by 2^-64) are the ones
that keep the whole sequence consistent (scaled numerator / scaled denominator /
FMAS rescale); ``tests/emulator/test_emu_div.py`` checks the complete f32 and f64 sequences
LLVM emits against IEEE division, bit for bit.

These ignore the FP_DENORM mode (hipcc switches f32 denormals on around them).
"""

from __future__ import annotations

import numpy as np

from .. import ops as O
from ._util import I64, U32, U64
from .. import state

_P = {False: dict(u=U32, f=np.float32, ebits=8, mbits=23, bias=127, big=96, tiny=23, sc=64),
      True: dict(u=U64, f=np.float64, ebits=11, mbits=52, bias=1023, big=768, tiny=53, sc=128)}


def _exp(x, k):
    return ((np.asarray(x, k["u"]).astype(U64) >> U64(k["mbits"])) & U64((1 << k["ebits"]) - 1)).astype(I64)


def _fl(x, k):
    return np.asarray(x, k["u"]).view(k["f"])


def _is_den(f, k):
    tiny = np.finfo(k["f"]).tiny
    return (f != 0) & (np.abs(f) < tiny) & np.isfinite(f)


def div_scale(s0, s1, s2, is64):
    k = _P[is64]
    s0, s1, s2 = np.broadcast_arrays(np.asarray(s0, k["u"]), np.asarray(s1, k["u"]), np.asarray(s2, k["u"]))
    f0, f1, f2 = _fl(s0, k), _fl(s1, k), _fl(s2, k)
    sc = k["sc"]
    with np.errstate(all="ignore"):
        up = np.ldexp(f0, sc).astype(k["f"])
        down = np.ldexp(f0, -sc).astype(k["f"])
        rcp = (k["f"](1) / f1).astype(k["f"])
        quo = (f2 / f1).astype(k["f"])
    e1, e2 = _exp(s1, k), _exp(s2, k)
    d = f0.copy()
    vcc = np.zeros(d.shape, bool)
    done = np.zeros(d.shape, bool)

    def case(cond, val=None, flag=False):
        nonlocal d, vcc, done
        c = cond & ~done
        if val is not None:
            d = np.where(c, val, d)
        if flag:
            vcc = vcc | c
        done = done | c

    case((f2 == 0) | (f1 == 0), np.array(np.nan, k["f"]))
    big = (e2 - e1) >= k["big"]
    case(big & (f0 == f1), up, True)
    case(big, None, True)
    case(_is_den(f1, k), up)
    both = _is_den(rcp, k) & _is_den(quo, k)
    case(both & (f0 == f1), down, True)
    case(both, None, True)
    case(_is_den(rcp, k), down)
    qd = _is_den(quo, k)
    case(qd & (f0 == f2), up, True)
    case(qd, None, True)
    case(e2 <= k["tiny"], up)
    return d.view(k["u"]), vcc


def div_fmas(s0, s1, s2, vcc, is64):
    k = _P[is64]
    r = O.fma64(s0, s1, s2) if is64 else O.fma32(s0, s1, s2)
    f = _fl(r, k)
    big = _exp(s2, k) > k["bias"]
    with np.errstate(all="ignore"):
        scaled = np.where(big, np.ldexp(f, k["sc"]), np.ldexp(f, -k["sc"])).astype(k["f"])
    return np.where(vcc, scaled, f).astype(k["f"]).view(k["u"])


def div_fixup(s0, s1, s2, ftype):
    if ftype == "f16":
        f0, f1, f2 = (np.asarray(np.asarray(x, U32) & U32(0xFFFF), np.uint16).view(np.float16)
                      for x in (s0, s1, s2))
        dt, u, qbit = np.float16, np.uint16, 0x200
    elif ftype == "f64":
        f0, f1, f2 = (np.asarray(x, U64).view(np.float64) for x in (s0, s1, s2))
        dt, u, qbit = np.float64, U64, 1 << 51
    else:
        f0, f1, f2 = (np.asarray(x, U32).view(np.float32) for x in (s0, s1, s2))
        dt, u, qbit = np.float32, U32, 1 << 22
    f0, f1, f2 = np.broadcast_arrays(f0, f1, f2)
    neg = np.signbit(f1) ^ np.signbit(f2)
    ebits, mbits, under = {"f16": (5, 10, -25), "f32": (8, 23, -150), "f64": (11, 52, -1080)}[ftype]
    ex = lambda f: ((np.asarray(f).view(u).astype(np.int64) >> mbits) & ((1 << ebits) - 1))  # noqa: E731
    with np.errstate(all="ignore"):
        out = np.where(neg, -np.abs(f0), np.abs(f0)).astype(dt)
        inf = np.where(neg, -np.inf, np.inf).astype(dt)
        zero = np.where(neg, -0.0, 0.0).astype(dt)
        out = np.where(np.isnan(f0), inf, out)
        out = np.where(ex(f2) - ex(f1) < under, zero, out)
        out = np.where((np.abs(f1) == np.inf) | (f2 == 0), zero, out)
        out = np.where((f1 == 0) | (np.abs(f2) == np.inf), inf, out)
        bad = ((f1 == 0) & (f2 == 0)) | ((np.abs(f1) == np.inf) & (np.abs(f2) == np.inf))
        bits = out.view(u)
        # 0/0, inf/inf: the negative quiet NaN 0xffc00000 (f64 0xfff8000000000000)
        nan_bits = {"f16": 0xFE00, "f32": 0xFFC00000, "f64": 0xFFF8000000000000}[ftype]
        bits = np.where(bad, u(nan_bits), bits)
        b1 = np.asarray(f1).view(u) | u(qbit)
        b2 = np.asarray(f2).view(u) | u(qbit)
        bits = np.where(np.isnan(f1), b1, bits)
        bits = np.where(np.isnan(f2), b2, bits)
    if ftype == "f16":
        return bits.astype(U32)
    return bits


def _outmods(ins, ftype):
    """The output modifiers (omod, clamp: NaN -> 0 under MODE.DX10_CLAMP) as
    ``fn(batch, group, bits)``, or None."""
    if not (ins.f.get("omod", 0) or ins.f.get("clamp", 0)):
        return None
    from .float_mode import mode_of
    from .float_mode import _post
    posts = {dx10: _post(ins, ftype, dx10) for dx10 in (True, False)}
    return lambda b, g, v: posts[bool((mode_of(b, g) >> 8) & 1)](v)


def _readers(ins, ftype):
    """Source readers; f16 sources: the half op_sel picks, neg/abs on bit 15, f16 inline constants."""
    if ftype != "f16":
        return [state.vsrc_reader(o) for o in ins.src[:3]]
    from ._util import half, raw_reader16
    from .f16 import _mod16
    sel = ins.f.get("op_sel", 0)

    def reader(i, o):
        r = raw_reader16(o)
        return lambda b, g: _mod16(half(r(b, g), bool((sel >> i) & 1)), o)
    return [reader(i, o) for i, o in enumerate(ins.src[:3])]


def _build_scale(is64):
    def build(ins, b, p):
        rd = [state.vsrc_reader(o) for o in ins.src[:3]]
        wr = state.vwriter(ins.dst[0])
        cw = state.swriter(ins.dst[1])

        def run(b, g):
            d, vcc = div_scale(rd[0](b, g), rd[1](b, g), rd[2](b, g), is64)
            wr(b, g, np.broadcast_to(d, (g.n, state.WAVE)))
            cw(b, g, O.bits_of(np.broadcast_to(vcc, (g.n, state.WAVE)) & b.em(g)))
        return run
    return build


def _build_fmas(is64):
    from ..errors import UnsupportedInstruction
    from .float_mode import mode_of, round_bits

    def build(ins, b, p):
        from .. import isa
        rd = [state.vsrc_reader(o) for o in ins.src[:3]]
        wr = state.vwriter(ins.dst[0])

        def run(b, g):
            if round_bits(mode_of(b, g), "f64" if is64 else "f32"):
                raise UnsupportedInstruction(
                    f"{ins.mnemonic}: round mode {round_bits(mode_of(b, g), 'f64' if is64 else 'f32')} "
                    f"(MODE register) is not emulated (only round to nearest even)", mnemonic=ins.mnemonic)
            vcc = O.mask_of(O.u64_of(b.S[isa.VCC_LO][g.sel], b.S[isa.VCC_HI][g.sel]))
            v = div_fmas(rd[0](b, g), rd[1](b, g), rd[2](b, g), vcc, is64)
            wr(b, g, v if post is None else post(b, g, v))
        post = _outmods(ins, "f64" if is64 else "f32")
        return run
    return build


def _build_fixup(ftype):
    def build(ins, b, p):
        rd = _readers(ins, ftype)
        wr = state.vwriter(ins.dst[0])
        post = _outmods(ins, ftype)

        def run(b, g):
            v = div_fixup(rd[0](b, g), rd[1](b, g), rd[2](b, g), ftype)
            wr(b, g, v if post is None else post(b, g, v))
        return run
    return build


BUILDERS = {
    "v_div_scale_f32": _build_scale(False), "v_div_scale_f64": _build_scale(True),
    "v_div_fmas_f32": _build_fmas(False), "v_div_fmas_f64": _build_fmas(True),
    "v_div_fixup_f32": _build_fixup("f32"), "v_div_fixup_f64": _build_fixup("f64"),
    "v_div_fixup_f16": _build_fixup("f16"),
    "v_div_fixup_legacy_f16": _build_fixup("f16"),   # the GFX8 encoding of the same operation
}
