"""VOP3P: packed 16-bit math, dot products and fma_mix (Vega ISA guide 12.6; gfx906 DL
instructions).

Packed ops compute the low and the high 16-bit lane separately: the low lane's
source i is the half of source register i that ``op_sel[i]`` selects, the high
lane's the half ``op_sel_hi[i]`` selects; f16 ``neg_lo``/``neg_hi`` negate the
low/high lane's operand.  ``clamp`` saturates integer results (and clamps f16 ones
to [0, 1]).

* ``v_dot2_f32_f16``: D.f32 = S0.h[0]*S1.h[0] + S0.h[1]*S1.h[1] + S2.f32, computed
  exactly in f64 and rounded once to f32 (one rounding; hardware may round the
  partial sum differently when the terms cancel beyond 53 bits).
* ``v_dot2_i32_i16``/``u32_u16``, ``v_dot4_i32_i8``/``u32_u8``,
  ``v_dot8_i32_i4``/``u32_u4``: sums of the element products plus S2, wrapping
  (``clamp``: saturating) 32-bit.
* ``v_fma_mix_f32``: source i is f32 when ``op_sel_hi[i]`` is 0, else the f16
  half ``op_sel[i]`` selects, converted exactly; ``neg`` negates and ``neg_hi``
  takes the absolute value; one fused f32 rounding.  ``v_fma_mixlo_f16`` /
  ``v_fma_mixhi_f16`` round that result to f16 into the low / high half, keeping
  the other half.

An inline float constant in an f16 position is its f16 value in the low half.

The wave's MODE applies (Vega ISA guide 3.3): f16 operands (packed lanes, dot2's
products, fma_mix's f16 sources) are flushed to a signed zero when
FLOAT_DENORM_MODE_16_64 flushes inputs, f32 operands (dot2's accumulator, fma_mix's f32
sources) when FLOAT_DENORM_MODE_32 does; f16 results (packed, ``v_fma_mixlo/hi_f16``)
when FLOAT_DENORM_MODE_16_64 flushes outputs, f32 results (``v_dot2_f32_f16``,
``v_fma_mix_f32``) when FLOAT_DENORM_MODE_32 does; ``clamp`` turns NaN into 0 only
under DX10_CLAMP.  FP_ROUND applies to the result: the f16 field to packed f16 results,
the f32 field to ``v_dot2_f32_f16`` and ``v_fma_mix_f32`` (the exact value rounded once);
``v_fma_mixlo/hi_f16`` under a directed f16 mode round the exact value once to f16.
"""

from __future__ import annotations

import numpy as np

from .. import isa
from .. import ops as O
from . import rounding
from ._util import I64, U32, half, raw_reader, s16
from .f16 import minmax16
from .float_mode import denorm_bits, flush16, flush32, mode_of, round_bits, round_directed
from .. import state

F16, F32, F64 = np.float16, np.float32, np.float64


def _reader(o, f16: bool):
    from ..decode import Operand
    if f16 and o.kind == "const" and o.reg in isa.INLINE_FLOATS:
        v = int(np.array(isa.INLINE_FLOATS[o.reg][0], F16).view(np.uint16))
        o = Operand("const", o.reg, o.width, v, text=o.text)
    return raw_reader(o)


def _hf(x):
    return (np.asarray(x, U32) & U32(0xFFFF)).astype(np.uint16).view(F16).astype(F64)


def _fh(v):
    with np.errstate(all="ignore"):
        return np.asarray(v, F64).astype(F16).view(np.uint16).astype(U32)


def _u(x):
    return np.asarray(x, I64)


def _sat_u16(v, clamp):
    return np.clip(v, 0, 0xFFFF) if clamp else v


def _sat_i16(v, clamp):
    return np.clip(v, -0x8000, 0x7FFF) if clamp else v


def _minf(a, b):
    return np.where(np.isnan(a), b, np.where(np.isnan(b), a, np.minimum(a, b)))


def _maxf(a, b):
    return np.where(np.isnan(a), b, np.where(np.isnan(b), a, np.maximum(a, b)))


#: packed ops: mnemonic -> (fn(values..., clamp) on one 16-bit lane, is_f16)
PACKED = {
    "v_pk_add_u16": (lambda a, b, c=0: _sat_u16(_u(a) + _u(b), c), False),
    "v_pk_sub_u16": (lambda a, b, c=0: _sat_u16(_u(a) - _u(b), c), False),
    "v_pk_add_i16": (lambda a, b, c=0: _sat_i16(s16(a) + s16(b), c), False),
    "v_pk_sub_i16": (lambda a, b, c=0: _sat_i16(s16(a) - s16(b), c), False),
    "v_pk_mul_lo_u16": (lambda a, b, c=0: _u(a) * _u(b), False),
    "v_pk_lshlrev_b16": (lambda a, b, c=0: _u(b) << (_u(a) & 15), False),
    "v_pk_lshrrev_b16": (lambda a, b, c=0: _u(b) >> (_u(a) & 15), False),
    "v_pk_ashrrev_i16": (lambda a, b, c=0: s16(b) >> (_u(a) & 15), False),
    "v_pk_max_i16": (lambda a, b, c=0: np.maximum(s16(a), s16(b)), False),
    "v_pk_min_i16": (lambda a, b, c=0: np.minimum(s16(a), s16(b)), False),
    "v_pk_max_u16": (lambda a, b, c=0: np.maximum(_u(a), _u(b)), False),
    "v_pk_min_u16": (lambda a, b, c=0: np.minimum(_u(a), _u(b)), False),
    "v_pk_mad_i16": (lambda a, b, d, c=0: _sat_i16(s16(a) * s16(b) + s16(d), c), False),
    "v_pk_mad_u16": (lambda a, b, d, c=0: _sat_u16(_u(a) * _u(b) + _u(d), c), False),
    "v_pk_fma_f16": (lambda a, b, d, c=0: a * b + d, True),
    "v_pk_add_f16": (lambda a, b, c=0: a + b, True),
    "v_pk_mul_f16": (lambda a, b, c=0: a * b, True),
    "v_pk_min_f16": (lambda a, b, c=0: _minf(a, b), True),
    "v_pk_max_f16": (lambda a, b, c=0: _maxf(a, b), True),
}


def _build_packed(mn):
    fn, is_f16 = PACKED[mn]

    def build(ins, b, p):
        f = ins.f
        rd = [_reader(o, is_f16) for o in ins.src]
        d = ins.dst[0].reg
        clamp = f["clamp"]
        bitwise = mn in ("v_pk_min_f16", "v_pk_max_f16")

        def lane_vals(vals, sel_bits, neg_bits, keep_in):
            out = []
            for i, v in enumerate(vals):
                x = half(v, bool((sel_bits >> i) & 1))
                if is_f16:
                    x = x if keep_in else flush16(x)
                    if bitwise:
                        x = x ^ U32(0x8000) if (neg_bits >> i) & 1 else x
                    else:
                        x = _hf(x)
                        if (neg_bits >> i) & 1:
                            x = -x
                out.append(x)
            return out

        def run(b, g):
            vals = [r(b, g) for r in rd]
            res = []
            mode = mode_of(b, g) if is_f16 else 0
            dm = denorm_bits(mode, "f16")
            for sel_bits, neg_bits in ((f["op_sel"], f["neg"]), (f["op_sel_hi"], f["neg_hi"])):
                with np.errstate(all="ignore"):
                    if bitwise:  # V_PK_MIN/MAX_F16: the V_MIN/MAX_F16 pseudo-code per lane
                        v = minmax16(*lane_vals(vals, sel_bits, neg_bits, dm & 1), bool((mode >> 9) & 1),
                                     mn == "v_pk_min_f16")
                        if not clamp:
                            res.append((v if dm & 2 else flush16(v)).astype(I64) & 0xFFFF)
                            continue
                        v = _hf(v)
                    else:
                        v = fn(*lane_vals(vals, sel_bits, neg_bits, dm & 1), clamp)
                    if is_f16:
                        if clamp:
                            v = np.clip(v, 0.0, 1.0)
                            if (mode >> 8) & 1:  # DX10_CLAMP: NaN -> 0
                                v = np.where(np.isnan(v), 0.0, v)
                        rb = round_bits(mode, "f16")
                        v = round_directed(v, F16, rb).view(np.uint16).astype(U32) if rb else _fh(v)
                        if not (dm & 2):
                            v = flush16(v)
                res.append(np.asarray(v).astype(I64) & 0xFFFF)
            out = res[0] | (res[1] << 16)
            b.vwrite(g, d, np.broadcast_to(out, (g.n, state.WAVE)).astype(U32))
        return run
    return build


def _elems(x, bits, signed):
    x = np.asarray(x, U32).astype(I64)
    n = 32 // bits
    m = (1 << bits) - 1
    out = []
    for i in range(n):
        v = (x >> (bits * i)) & m
        if signed:
            v = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
        out.append(v)
    return out


def _build_idot(bits, signed):
    def build(ins, b, p):
        rd = [_reader(o, False) for o in ins.src[:3]]
        wr = state.vwriter(ins.dst[0])
        clamp = ins.f["clamp"]

        def run(b, g):
            a, c, acc = (r(b, g) for r in rd)
            s = sum(x * y for x, y in zip(_elems(a, bits, signed), _elems(c, bits, signed)))
            acc = np.asarray(acc, U32).view(np.int32).astype(I64) if signed else np.asarray(acc, U32).astype(I64)
            s = s + acc
            if clamp:
                s = np.clip(s, -(1 << 31), (1 << 31) - 1) if signed else np.clip(s, 0, 0xFFFFFFFF)
            wr(b, g, (np.asarray(s, I64) & 0xFFFFFFFF).astype(U32))
        return run
    return build


def _build_fdot2(ins, b, p):
    rd = [_reader(o, i < 2) for i, o in enumerate(ins.src[:3])]
    wr = state.vwriter(ins.dst[0])
    f = ins.f

    def run(b, g):
        a, c, acc = (r(b, g) for r in rd)
        mode = mode_of(b, g)
        d16, d32 = denorm_bits(mode, "f16"), denorm_bits(mode, "f32")
        f16_in = (lambda x: x) if d16 & 1 else flush16
        if not (d32 & 1):
            acc = flush32(acc)
        terms = []
        for k, (sel_bits, neg_bits) in enumerate(((f["op_sel"], f["neg"]), (f["op_sel_hi"], f["neg_hi"]))):
            x = _hf(f16_in(half(a, bool(sel_bits & 1))))
            y = _hf(f16_in(half(c, bool((sel_bits >> 1) & 1))))
            if neg_bits & 1:
                x = -x
            if (neg_bits >> 1) & 1:
                y = -y
            terms.append(x * y)
        z = np.asarray(acc, U32).view(F32).astype(F64)
        if f["neg"] & 4:
            z = -z
        with np.errstate(all="ignore"):
            rb = round_bits(mode, "f32")
            v = round_directed(terms[0] + terms[1] + z, F32, rb) if rb else (terms[0] + terms[1] + z).astype(F32)
            if f["clamp"]:
                v = np.clip(v, F32(0), F32(1))
                if (mode >> 8) & 1:
                    v = np.where(np.isnan(v), F32(0), v)
        v = v.view(U32)
        wr(b, g, v if d32 & 2 else flush32(v))
    return run


def _build_mix(kind):
    def build(ins, b, p):
        f = ins.f
        rd = [_reader(o, bool((f["op_sel_hi"] >> i) & 1)) for i, o in enumerate(ins.src[:3])]
        d = ins.dst[0].reg

        def src(i, v, mode):
            if (f["op_sel_hi"] >> i) & 1:
                x = half(v, bool((f["op_sel"] >> i) & 1))
                x = _hf(x if denorm_bits(mode, "f16") & 1 else flush16(x)).astype(F32).view(U32)
            else:
                x = np.asarray(v, U32)
                x = x if denorm_bits(mode, "f32") & 1 else flush32(x)
            if (f["neg_hi"] >> i) & 1:
                x = x & U32(0x7FFFFFFF)
            if (f["neg"] >> i) & 1:
                x = x ^ U32(0x80000000)
            return x

        def run(b, g):
            mode = mode_of(b, g)
            a, c, e = (np.broadcast_to(src(i, r(b, g), mode), (g.n, state.WAVE)) for i, r in enumerate(rd))
            rb = round_bits(mode, "f32" if kind == "f32" else "f16")
            if rb and kind != "f32":
                # the exact f32-operand fma rounded once to f16 in the directed mode
                h = rounding.round_pair(*rounding._exact("v_fma_f32", [a, c, e]), F16, rb)
                if f["clamp"]:
                    x = np.clip(_hf(h), 0.0, 1.0)
                    h = _fh(np.where(np.isnan(x), 0.0, x) if (mode >> 8) & 1 else x)
                h = (h if denorm_bits(mode, "f16") & 2 else flush16(h)).astype(I64)
                cur = b.V[d][g.sel].astype(I64)
                out = (cur & ~0xFFFF) | h if kind == "lo" else (cur & 0xFFFF) | (h << 16)
                b.vwrite(g, d, np.broadcast_to(out, (g.n, state.WAVE)).astype(U32))
                return
            r32 = rounding.directed("v_fma_f32", [a, c, e], rb) if rb else O.fma32(a, c, e)
            if f["clamp"]:
                x = np.clip(O.f32(r32), F32(0), F32(1))
                if (mode >> 8) & 1:
                    x = np.where(np.isnan(x), F32(0), x)
                r32 = O.b32(x)
            if kind == "f32":
                b.vwrite(g, d, r32 if denorm_bits(mode, "f32") & 2 else flush32(r32))
                return
            # round the f32 result to f16 (one more rounding of an f32 value: exact in f64 first)
            h = _fh(O.f32(r32).astype(F64))
            h = (h if denorm_bits(mode, "f16") & 2 else flush16(h)).astype(I64)
            cur = b.V[d][g.sel].astype(I64)
            out = (cur & ~0xFFFF) | h if kind == "lo" else (cur & 0xFFFF) | (h << 16)
            b.vwrite(g, d, np.broadcast_to(out, (g.n, state.WAVE)).astype(U32))
        return run
    return build


BUILDERS = {mn: _build_packed(mn) for mn in PACKED}
BUILDERS.update({
    "v_dot2_f32_f16": _build_fdot2,
    "v_dot2_i32_i16": _build_idot(16, True), "v_dot2_u32_u16": _build_idot(16, False),
    "v_dot4_i32_i8": _build_idot(8, True), "v_dot4_u32_u8": _build_idot(8, False),
    "v_dot8_i32_i4": _build_idot(4, True), "v_dot8_u32_u4": _build_idot(4, False),
    "v_fma_mix_f32": _build_mix("f32"), "v_fma_mixlo_f16": _build_mix("lo"),
    "v_fma_mixhi_f16": _build_mix("hi"),
})
