"""f32/f64 VALU instructions under the wave's float mode (MODE register).

Every f32/f64 arithmetic, conversion and compare instruction the core executes is
registered here.  While a wave's MODE is the IEEE default (round to nearest even,
denormals kept, DX10 clamp and IEEE mode on: what hipcc and vlpc request) the
core's own closure runs (its fast paths, e.g. ``v_fma_f32`` with an SGPR source).
Otherwise the instruction runs here:

* FP_DENORM (Vega ISA guide 3.3; ``vlpc.isa.modes``): source operands of a float
  type whose denorm mode flushes inputs are flushed to a signed zero before the
  operation; results of a type whose mode flushes outputs are flushed after it.
  f32 uses FLOAT_DENORM_MODE_32, f64 (and f16) FLOAT_DENORM_MODE_16_64;
  ``v_cvt_f64_f32`` flushes its source by the f32 mode and its result by the f64 mode.
* ``v_mad_f32``, ``v_mac_f32``, ``v_madak_f32``, ``v_madmk_f32``, ``v_mad_legacy_f32``
  never keep f32 denormals (LLVM selects them only when f32 denormals are flushed:
  ``AMDGPUInstructions.td`` ``FMADModeRegPat``/``NoFP32Denormals``).
* DX10_CLAMP: the ``clamp`` output modifier turns NaN into 0 when set, passes it
  through when clear.
* IEEE: ``v_min/max/min3/max3/med3`` return a quieted signalling NaN operand in IEEE
  mode; otherwise a NaN operand yields the other operand (Vega ISA guide,
  ``V_MIN_F32`` pseudo-code, with -0 < +0).  These follow the ISA pseudo-code in
  every mode (``v_med3_f32`` with a NaN operand is ``v_min3_f32`` of the three).
* FP_ROUND: the directed modes are emulated for ``v_add/sub/subrev/mul_f32``,
  ``v_fma_f32``, ``v_fmac_f32``, ``v_add_f64`` and ``v_mul_f64`` (:mod:`.rounding`), and
  composed of those roundings for the unfused ``v_mad/mac/madak/madmk/mad_legacy_f32``
  (the product rounded, then the sum), ``v_mul_legacy_f32`` and ``v_ldexp_f32``
  (:data:`DIRECTED`); compares, min/max, rounding to integral values, conversions to
  integers and widening conversions are exact (:data:`_EXACT`) and run in any mode; any
  other float instruction that runs under a directed mode stops with
  UnsupportedInstruction naming it (``tools/float_mode_audit.py --round`` lists them).

Conversions: ``v_cvt_f16_f32`` flushes its source by the f32 mode and its result by
the f16/f64 mode, ``v_cvt_f32_f16`` its source by the f16/f64 mode (and reads it as an
f16: ``abs``/``neg`` on bit 15, inline constants in f16); the ``v_cvt_*``
from integers have nothing to flush (results are never denormal) but round under a
directed FP_ROUND mode (:mod:`.rounding`), as do ``v_cvt_f32_f64`` and ``v_cvt_f16_f32``.

Not covered here: ``v_cmp_class_*`` (it tests the raw operand), ``v_frexp_*`` and
``v_rcp_iflag_f32`` (their semantics ignore the mode), the packing conversions
(:mod:`.convert`: ``v_cvt_pkrtz`` rounds toward zero by definition but flushes by the
modes) and the bit moves.  ``tools/float_mode_audit.py`` checks every float form of
the table against the denorm, IEEE, DX10-clamp and round fields.
"""

from __future__ import annotations

import numpy as np

from .. import ops as O
from ..errors import UnsupportedInstruction
from . import rounding
from .float_mode import FLUSH, IEEE_KEEP, _post, denorm_bits, mode_of, round_bits, round_directed, specialize
from . import valu as _valu
from .. import state

U32, U64, F32, F64 = O.U32, O.U64, O.F32, O.F64

#: results that are exact in every round mode: widening conversions, rounding to an
#: integral value, conversions to integers (they truncate or round by their own rule)
_EXACT = frozenset({"v_cvt_f64_f32", "v_cvt_f32_f16",
                    *(f"v_{op}_{t}" for op in ("trunc", "floor", "ceil", "rndne") for t in ("f32", "f64")),
                    "v_cvt_i32_f32", "v_cvt_u32_f32", "v_cvt_i32_f64", "v_cvt_u32_f64", "v_cvt_flr_i32_f32",
                    "v_cvt_rpi_i32_f32"})
_MAD_F32 = frozenset({"v_mad_f32", "v_mac_f32", "v_madak_f32", "v_madmk_f32", "v_mad_legacy_f32"})
_SKIP = ("v_cmp_class", "v_cmpx_class", "v_frexp_", "v_rcp_iflag_f32", "v_div_")
_INT_TYPES = ("i32", "u32", "i64", "u64", "i24", "u24", "b32")


def _types(mn: str) -> tuple[str | None, list[str | None]] | None:
    """(result float type or None, per-source float type or None); None if not a float op."""
    parts = mn.split("_")
    ft = [p for p in parts if p in ("f32", "f64", "f16")]
    if mn in ("v_cvt_f16_f32", "v_cvt_f32_f16"):
        return parts[2], [parts[3]]
    if not ft or mn.startswith(_SKIP) or "f16" in ft:
        return None  # f16 instructions: semantics/f16.py
    if mn.startswith("v_cvt_"):
        ts = [p for p in parts[2:] if p[:1] in "fiu" and p[1:].isdigit()]
        if len(ts) < 2:
            return None
        dst = ts[0] if ts[0] in ("f32", "f64", "f16") else None
        src = ts[1] if ts[1] in ("f32", "f64", "f16") else None
        if src is None and dst is not None and mn in DIRECTED:
            return dst, [None]  # int -> float: nothing to flush, but it rounds
        if src is None:
            return None
        return dst, [src]
    t = ft[-1]
    if mn.startswith(("v_cmp_", "v_cmpx_")):
        return None, [t, t]
    if mn in ("v_ldexp_f32", "v_ldexp_f64"):
        return t, [t, None]
    return t, [t, t, t]


# -- ISA pseudo-code min/max (with -0 < +0 and IEEE-mode signalling NaNs) --------------------

def _is_snan(x, is64):
    if is64:
        x = np.asarray(x, U64)
        return ((x & U64(0x7FF0000000000000)) == U64(0x7FF0000000000000)) & \
            ((x & U64(0x000FFFFFFFFFFFFF)) != 0) & ((x & U64(0x0008000000000000)) == 0)
    x = np.asarray(x, U32)
    return ((x & U32(0x7F800000)) == U32(0x7F800000)) & ((x & U32(0x007FFFFF)) != 0) & \
        ((x & U32(0x00400000)) == 0)


def _minmax(a, c, is64, ieee, want_min):
    """V_MIN_F32 / V_MAX_F32 (and f64) pseudo-code of the Vega ISA guide on raw bits."""
    a, c = np.broadcast_arrays(np.asarray(a, U64 if is64 else U32), np.asarray(c, U64 if is64 else U32))
    fa, fc = (O.f64(a), O.f64(c)) if is64 else (O.f32(a), O.f32(c))
    quiet = U64(0x0008000000000000) if is64 else U32(0x00400000)
    sign = U64(0x8000000000000000) if is64 else U32(0x80000000)
    with np.errstate(invalid="ignore"):
        if want_min:
            pick_a = (fa < fc) | ((fa == fc) & ((a & sign) != 0))
        else:
            pick_a = (fa > fc) | ((fa == fc) & ((a & sign) == 0))
    r = np.where(pick_a, a, c)
    na, nc = np.isnan(fa), np.isnan(fc)
    r = np.where(nc & ~na, a, r)
    r = np.where(na, c, r)
    if ieee:
        sa, sc = _is_snan(a, is64), _is_snan(c, is64)
        r = np.where(sc, c | quiet, r)
        r = np.where(sa, a | quiet, r)
    return r


def _minmax_fns(is64: bool, ieee: bool):
    def mn_(a, c):
        return _minmax(a, c, is64, ieee, True)

    def mx_(a, c):
        return _minmax(a, c, is64, ieee, False)
    return mn_, mx_


def _minmax_sem(mn: str):
    is64 = mn.endswith("_f64")

    def sem(ieee):
        lo, hi = _minmax_fns(is64, ieee)
        if mn.startswith("v_min3"):
            return lambda a, b, c: lo(lo(a, b), c)
        if mn.startswith("v_max3"):
            return lambda a, b, c: hi(hi(a, b), c)
        if mn.startswith("v_med3"):
            def med3(a, b, c):
                # V_MED3_F32: a NaN operand -> V_MIN3_F32; else the median
                fa, fb, fc = O.f32(a), O.f32(b), O.f32(c)
                anynan = np.isnan(fa) | np.isnan(fb) | np.isnan(fc)
                fm = O.f32(hi(hi(a, b), c))
                med = np.where(fm == fa, hi(b, c), np.where(fm == fb, hi(a, c), hi(a, b)))
                return np.where(anynan, lo(lo(a, b), c), med)
            return med3
        return lo if mn.startswith("v_min") else hi
    return sem


_MINMAX = ("v_min_f32", "v_max_f32", "v_min_f64", "v_max_f64", "v_min3_f32", "v_max3_f32", "v_med3_f32")


def _mad_legacy(a, b_, c):
    """V_MAD_LEGACY_F32: DX9 rules, 0 * anything (inf, NaN) = 0, then + S2 (unfused)."""
    fa, fb = O.f32(a), O.f32(b_)
    with np.errstate(all="ignore"):
        p = np.where((fa == 0) | (fb == 0), F32(0), fa * fb)
        return O.b32(p + O.f32(c))


#: directed FP_ROUND emulated beyond :data:`.rounding.DIRECTED`: composed of its roundings
_COMPOSED = frozenset({"v_mad_f32", "v_mac_f32", "v_madak_f32", "v_madmk_f32", "v_mad_legacy_f32",
                       "v_mul_legacy_f32", "v_ldexp_f32", "v_fract_f32", "v_fract_f64"})
DIRECTED = rounding.DIRECTED | _COMPOSED


def _directed(mn: str, vals, rb: int):
    """Result bits of ``mn`` on raw ``vals`` under the directed FP_ROUND mode ``rb``:
    :func:`.rounding.directed`, or for the unfused multiply-adds the product rounded (and,
    as they never keep f32 denormals, flushed) then the sum rounded; the legacy forms'
    0 * anything = 0 first; ``v_ldexp_f32`` and ``v_fract_f32`` the exact f64 value rounded
    once."""
    if mn in rounding.DIRECTED:
        return rounding.directed(mn, vals, rb)
    if mn == "v_ldexp_f32":
        e = np.asarray(vals[1], U32).view(np.int32).astype(F64).clip(-400, 400)
        return O.b32(round_directed(O.f32(vals[0]).astype(F64) * np.exp2(e), F32, rb))
    if mn == "v_fract_f32":  # x - floor(x) is exact in f64; the result stays below 1 (V_FRACT_F32)
        x = O.f32(vals[0])
        r = round_directed(x.astype(F64) - np.floor(x.astype(F64)), F32, rb)
        return O.b32(np.where(np.isinf(x), F32(np.nan), np.minimum(r, F32(0.99999994))))
    if mn == "v_fract_f64":  # x - floor(x) exactly as TwoSum's pair, rounded once; below 1
        x = O.f64(vals[0])
        with np.errstate(all="ignore"):
            hi, lo = O.two_sum(x, -np.floor(x))
            r = np.asarray(rounding.round_pair(hi, np.where(np.isfinite(hi), lo, 0.0), F64, rb), U64).view(F64)
        return O.b64(np.where(np.isinf(x), np.nan, np.minimum(r, np.nextafter(1.0, 0.0))))
    p = rounding.directed("v_mul_f32", vals[:2], rb)
    if mn in ("v_mul_legacy_f32", "v_mad_legacy_f32"):
        p = np.where((O.f32(vals[0]) == 0) | (O.f32(vals[1]) == 0), U32(0), p)
    if mn == "v_mul_legacy_f32":
        return p
    return rounding.directed("v_add_f32", [FLUSH["f32"](p), vals[2]], rb)


def _sem(mn: str, ieee: bool):
    if mn in _MINMAX:
        return _minmax_sem(mn)(ieee)
    if mn in ("v_fma_f32", "v_fmac_f32"):
        return O.fma32
    if mn == "v_mad_legacy_f32":
        return _mad_legacy
    return _valu.VALU.get(mn)


def _f16_reader(o):
    """An f16 source (``v_cvt_f32_f16``): the low half, ``abs``/``neg`` on bit 15, an inline
    float constant in its f16 encoding."""
    from ._util import raw_reader16
    rd = raw_reader16(o)
    clear = U32(0x7FFF) if o.abs else U32(0xFFFF)
    flip = U32(0x8000) if o.neg else U32(0)
    return lambda b, g: (np.asarray(rd(b, g), U32) & clear) ^ flip


def _check_round(ins, mode, ftypes):
    for t in ftypes:
        if t is not None and round_bits(mode, t):
            raise UnsupportedInstruction(
                f"{ins.mnemonic}: round mode {round_bits(mode, t)} for {t} (MODE register) is not emulated "
                f"(only round to nearest even)", mnemonic=ins.mnemonic)


def build(ins, b, p):
    mn = ins.mnemonic
    ty = _types(mn)
    if ty is None or "sdwa" in ins.f or "dpp" in ins.f:
        return _valu.build_valu(ins, b, p)
    dst_t, src_t = ty
    is_cmp = mn.startswith(("v_cmp_", "v_cmpx_"))
    f16_src = src_t[:1] == ["f16"]
    always_own = mn in _MINMAX or mn == "v_mad_legacy_f32" or f16_src
    fast = None if always_own else _valu.build_valu(ins, b, p)
    if fast is None and not always_own:
        return None
    nsrc = len(ins.src)
    readers = [_f16_reader(o) if f16_src else state.vsrc_reader(o) for o in ins.src]
    ftypes = {dst_t, *src_t[:nsrc]}
    mad = mn in _MAD_F32
    if is_cmp:
        cond = mn.split("_")[2]
        is64 = mn.endswith("_f64")
        wr = state.swriter(ins.dst[0])
        x = mn.startswith("v_cmpx_")
    else:
        wr = state.vwriter(ins.dst[0])

    def flush_in(i, v, mode):
        t = src_t[i] if i < len(src_t) else None
        if t is None:
            return v
        if mad or not (denorm_bits(mode, t) & 1):
            return FLUSH[t](v)
        return v

    sems: dict[bool, object] = {}
    posts: dict[bool, object] = {}

    exact = is_cmp or mn in _EXACT or mn in _MINMAX   # nothing to round: any FP_ROUND mode

    def slow(b, g, mode):
        directed = mn in DIRECTED and dst_t is not None and round_bits(mode, dst_t)
        if not directed and not exact:
            _check_round(ins, mode, {dst_t} if dst_t is not None else ftypes)   # the result rounds
        vals = [flush_in(i, r(b, g), mode) for i, r in enumerate(readers)]
        if is_cmp:
            res = (O.f64_cmp if is64 else O.f32_cmp)(cond, vals[0], vals[1])
            b.write_compare(g, wr, res, b.em(g), x)
            return None
        ieee = bool((mode >> 9) & 1)
        sem = sems.get(ieee)
        if sem is None:
            sem = sems[ieee] = _sem(mn, ieee)
        with np.errstate(all="ignore"):
            v = _directed(mn, vals, round_bits(mode, dst_t)) if directed else sem(*vals)
        if dst_t is not None and (mad or not (denorm_bits(mode, dst_t) & 2)):
            v = FLUSH[dst_t](v)
        dx10 = bool((mode >> 8) & 1)
        post = posts.get(dx10, 0)
        if post == 0:
            post = posts[dx10] = _post(ins, dst_t, dx10) if dst_t is not None else None
        if post is not None:
            v = post(v)
            if dst_t is not None and (mad or not (denorm_bits(mode, dst_t) & 2)):
                v = FLUSH[dst_t](v)
        wr(b, g, v)
        return None

    def fn(b, g):
        mode = mode_of(b, g) & 0x3FF
        if mode == IEEE_KEEP and fast is not None and not mad:
            return fast(b, g)
        return slow(b, g, mode)
    if fast is not None and not mad:
        return specialize(b, p, fast, fn)
    return fn


#: f32/f64 instructions whose semantics ignore the denorm and round fields (they split or
#: approximate the raw operand) but whose clamp output modifier follows DX10_CLAMP
_OUTMODS_ONLY = ("v_frexp_mant_f32", "v_frexp_mant_f64", "v_rcp_iflag_f32")


def _build_outmods_only(ins, b, p):
    if not (ins.f.get("omod", 0) or ins.f.get("clamp", 0)):
        return _valu.build_valu(ins, b, p)
    mn = ins.mnemonic
    t = "f64" if mn.endswith("_f64") else "f32"
    sem = _valu.VALU[mn]
    readers = [state.vsrc_reader(o) for o in ins.src]
    wr = state.vwriter(ins.dst[0])
    posts = {dx10: _post(ins, t, dx10) for dx10 in (True, False)}

    def fn(b, g):
        with np.errstate(all="ignore"):
            v = sem(*[r(b, g) for r in readers])
            wr(b, g, posts[bool((mode_of(b, g) >> 8) & 1)](v))
    return fn


def _names():
    out = []
    for mn in _valu.BASE_BUILDERS:
        if mn.startswith("v_") and _types(mn) is not None:
            out.append(mn)
    return out


BUILDERS = {mn: build for mn in _names()}
BUILDERS.update({mn: _build_outmods_only for mn in _OUTMODS_ONLY if mn in _valu.BASE_BUILDERS})
