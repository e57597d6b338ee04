"""Shared pieces of the family modules: operand readers/writers and 16-bit halves."""

from __future__ import annotations

import numpy as np

from vlpc import isa as table

from .. import ops as O
from .. import state

U16, U32, U64, I32, I64 = np.uint16, np.uint32, np.uint64, np.int32, np.int64
F32, F64 = np.float32, np.float64


def raw_reader(o):
    """A VALU source reader without the operand's ``neg``/``abs`` (the caller applies them:
    SDWA/DPP after selection or the lane move, 16-bit ops on the half they use)."""
    from ..decode import Operand
    return state.vsrc_reader(Operand(o.kind, o.reg, o.width, o.value, text=o.text))


#: inline float constants (source codes 240..248) as f16 bits: a 16-bit float operand
#: reads the constant in its own format (LLVM AMDGPUOperandSyntax, "inline constants":
#: 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0 and 1/(2*pi) = 0x3118 for f16)
F16_INLINE = {240: 0x3800, 241: 0xB800, 242: 0x3C00, 243: 0xBC00, 244: 0x4000, 245: 0xC000,
              246: 0x4400, 247: 0xC400, 248: 0x3118}


def raw_reader16(o):
    """:func:`raw_reader` for a 16-bit float source: an inline float constant reads as its
    f16 encoding (the decoder gives the f32 one, whose low half is 0)."""
    from ..decode import Operand
    val = F16_INLINE.get(o.reg, o.value) if o.kind == "const" else o.value
    return state.vsrc_reader(Operand(o.kind, o.reg, o.width, val, text=o.text))


def table_mnemonics(*encodings: str, but=None) -> frozenset:
    """The gfx906 table's mnemonics (:mod:`vlpc.isa`) whose encoding class is one of
    ``encodings``, less those ``but(mnemonic)`` is true for (the forms a family module owns):
    how a base module declares the mnemonics its builder implements (``BASE_BUILDERS``)."""
    return frozenset(mn for mn, r in table.table().items()
                     if r.encoding in encodings and not (but is not None and but(mn)))


def plain(fn):
    """Builder for ``D = fn(S0, S1, ...)`` on raw bits (uint32/uint64 arrays)."""
    def build(ins, b, p):
        rd = [state.vsrc_reader(o) for o in ins.src]
        wr = state.vwriter(ins.dst[0])

        def run(b, g):
            with np.errstate(all="ignore"):
                wr(b, g, fn(*[r(b, g) for r in rd]))
        return run
    return build


def half(x, hi: bool):
    """The low (or high) 16 bits of 32-bit values, as uint32."""
    x = np.asarray(x, U32)
    return (x >> U32(16)) if hi else (x & U32(0xFFFF))


def s16(x):
    """16-bit two's complement (in the low bits) -> int64."""
    x = np.asarray(x, U32).astype(I64) & 0xFFFF
    return np.where(x >= 0x8000, x - 0x10000, x)


def op16(fn, *, keep_high=False):
    """Builder for a 16-bit VALU op ``D.16 = fn(S0.16, S1.16, ...)`` (uint32 arrays holding
    16 bits each).  VOP3 ``op_sel`` bits 0..2 pick the high half of a source, bit 3 writes
    the result to the high half and keeps the low one; otherwise the result goes to the low
    half and the high half is zeroed (GFX9), unless ``keep_high``.
    """
    def build(ins, b, p):
        rd = [state.vsrc_reader(o) for o in ins.src]
        d = ins.dst[0].reg
        sel = ins.f.get("op_sel", 0) if ins.encoding == "VOP3" else 0
        clamp = ins.f.get("clamp", 0)

        def run(b, g):
            srcs = [half(r(b, g), bool((sel >> i) & 1)) for i, r in enumerate(rd)]
            with np.errstate(all="ignore"):
                v = np.asarray(fn(*srcs, clamp=clamp) if _takes_clamp(fn) else fn(*srcs))
            v = v.astype(I64) & 0xFFFF
            cur = b.V[d][g.sel].astype(I64)
            if (sel >> 3) & 1:
                out = (cur & 0xFFFF) | (v << 16)
            elif keep_high:
                out = (cur & ~0xFFFF) | v
            else:
                out = v
            b.vwrite(g, d, np.broadcast_to(out, (g.n, state.WAVE)).astype(U32))
        return run
    return build


def _takes_clamp(fn) -> bool:
    import inspect
    try:
        return "clamp" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


# ---- bit-function helpers of the VALU tables (vint, f32, f64, convert) ----


def _f(fn):
    """Wrap an f32 function of float arrays into a bits -> bits function."""
    return lambda *a: O.b32(fn(*[O.f32(x) for x in a]))


def _d(fn):
    return lambda *a: O.b64(fn(*[O.f64(x) for x in a]))


def _i(x):
    return np.asarray(x, U32).view(I32)


def _shift(x):
    return np.asarray(x, U32) & U32(31)


def _minmax3(kind, fn):
    if kind == "f":
        return lambda a, b, c: O.b32(fn(fn(O.f32(a), O.f32(b)), O.f32(c)))
    if kind == "i":
        return lambda a, b, c: fn(fn(_i(a), _i(b)), _i(c)).view(U32)
    return lambda a, b, c: fn(fn(np.asarray(a, U32), b), c)


def _med3(kind):
    def f(a, b, c):
        if kind == "f":
            x = np.stack(np.broadcast_arrays(O.f32(a), O.f32(b), O.f32(c)))
            return O.b32(np.median(x, axis=0).astype(F32))
        if kind == "i":
            x = np.stack(np.broadcast_arrays(_i(a), _i(b), _i(c)))
            return np.sort(x, axis=0)[1].view(U32)
        x = np.stack(np.broadcast_arrays(np.asarray(a, U32), np.asarray(b, U32), np.asarray(c, U32)))
        return np.sort(x, axis=0)[1]
    return f


def _rndne(x):
    return np.rint(x)
