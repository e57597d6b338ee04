"""The MODE register of each wave (float round/denorm modes, DX10 clamp, IEEE mode).

A wave starts with ``DispatchConfig.mode`` (from the kernel descriptor's
``compute_pgm_rsrc1``, :class:`vlpc.isa.modes.FloatMode`); ``s_setreg_b32`` /
``s_setreg_imm32_b32`` on ``hwreg(HW_REG_MODE, offset, size)`` change it and
``s_getreg_b32`` reads it (Vega ISA guide: SOPK, "hwRegId [5:0], offset [10:6],
size-1 [15:11]").  Float instructions read it through :func:`mode_of`.

The batch keeps one value while every wave has the same MODE (the common case:
one comparison per float instruction) and a per-wave array once they differ.
"""

from __future__ import annotations

import numpy as np

from vlpc.isa.modes import HW_REG_MODE
from .. import ops as O
from ..state import U32
from . import salu as _salu
from .. import state

U16, U32, U64 = np.uint16, np.uint32, np.uint64

#: MODE bits the float semantics read (FP_ROUND, FP_DENORM, DX10_CLAMP, IEEE)
FLOAT_BITS = 0x3FF
#: round to nearest even, f32 and f64/f16 denormals kept, DX10 clamp and IEEE on
IEEE_KEEP = 0x3F0


def _init(b):
    m = b.__dict__.get("_fmode")
    if m is None:
        b._fmode = int(getattr(b.cfg, "mode", IEEE_KEEP)) & 0xFFFFFFFF
        b._fmodes = None
    return b._fmode


def mode_of(b, g) -> int:
    """The MODE value of the waves of group ``g`` (they must agree)."""
    m = _init(b)
    if m >= 0:
        return m
    arr = b._fmodes[g.sel]
    v = int(arr[0])
    if not (arr == v).all():
        from ..errors import UnsupportedInstruction
        raise UnsupportedInstruction("waves executing one instruction together have different MODE "
                                     "registers (s_setreg under divergent control flow)")
    return v


def specialize(b, p, fast, checking):
    """The closure for prepared instruction ``p``: ``fast`` (IEEE-default semantics, no mode
    check) while every wave of the batch runs in the IEEE default mode, else ``checking``.

    A later MODE change (:func:`_set`) swaps ``checking`` into every such ``p``.  ``p.modal``
    keeps the pair, so a later batch re-running a kept copy of ``p`` (the core's program
    cache) specializes it for its own MODE.
    """
    p.modal = (fast, checking)
    if _init(b) >= 0 and (b._fmode & FLOAT_BITS) == IEEE_KEEP:
        b.__dict__.setdefault("_mode_watch", []).append((p, checking))
        return fast
    return checking


def _unspecialize(b):
    for p, fn in b.__dict__.get("_mode_watch", ()):
        p.fn = fn
    b._mode_watch = []


def _set(b, g, new: np.ndarray):
    m = _init(b)
    _unspecialize(b) if ((np.asarray(new, np.int64) & FLOAT_BITS) != IEEE_KEEP).any() or g.n != b.nw else None
    new = np.asarray(new, np.int64) & 0xFFFFFFFF
    v = int(new.reshape(-1)[0])
    if m >= 0 and g.n == b.nw and (new == v).all():
        b._fmode = v
        return
    if m >= 0:
        b._fmodes = np.full(b.nw, m, np.int64)
        b._fmode = -1
    b._fmodes[g.sel] = np.broadcast_to(new, (g.n,))
    u = b._fmodes
    if (u == u[0]).all():
        b._fmode = int(u[0])
        b._fmodes = None


def _hwreg(simm16: int) -> tuple[int, int, int]:
    return simm16 & 0x3F, (simm16 >> 6) & 0x1F, ((simm16 >> 11) & 0x1F) + 1


def build_setreg(ins, b, p):
    hw, off, size = _hwreg(ins.f["simm16"])
    if hw != HW_REG_MODE:
        return _salu.build_salu(ins, b, p)
    mask = ((1 << size) - 1) << off
    if ins.mnemonic == "s_setreg_imm32_b32":
        imm = np.int64(ins.f["imm32"])
        rd = lambda b, g: imm  # noqa: E731
    else:
        r = ins.src[0].reg
        rd = lambda b, g: b.S[r][g.sel].astype(np.int64)  # noqa: E731

    def fn(b, g):
        cur = mode_of(b, g) if _init(b) >= 0 else b._fmodes[g.sel]
        val = (np.asarray(rd(b, g), np.int64) << off) & mask
        _set(b, g, (np.asarray(cur, np.int64) & ~mask) | val)
    return fn


def build_getreg(ins, b, p):
    hw, off, size = _hwreg(ins.f["simm16"])
    if hw != HW_REG_MODE:
        return _salu.build_salu(ins, b, p)
    d = ins.dst[0].reg
    mask = (1 << size) - 1

    def fn(b, g):
        cur = np.int64(mode_of(b, g)) if _init(b) >= 0 else b._fmodes[g.sel]
        b.S[d][g.sel] = np.broadcast_to(((np.asarray(cur, np.int64) >> off) & mask).astype(U32), (g.n,))
    return fn


# -- denormal flushing (sign kept: AMDGPUUsage "Denormal flushing is sign respecting") --------

def flush32(x):
    x = np.asarray(x, U32)
    den = ((x & U32(0x7F800000)) == 0) & ((x & U32(0x007FFFFF)) != 0)
    return np.where(den, x & U32(0x80000000), x)


def flush64(x):
    x = np.asarray(x, U64)
    den = ((x & U64(0x7FF0000000000000)) == 0) & ((x & U64(0x000FFFFFFFFFFFFF)) != 0)
    return np.where(den, x & U64(0x8000000000000000), x)


def flush16(x):
    """f16 in the low 16 bits of a dword (the high half is kept)."""
    x = np.asarray(x, U32)
    den = ((x & U32(0x7C00)) == 0) & ((x & U32(0x03FF)) != 0)
    return np.where(den, x & U32(0xFFFF8000), x)


FLUSH = {"f32": flush32, "f64": flush64, "f16": flush16}


def round_directed(v, dtype, rb: int):
    """f64 values ``v`` (the exact result, or one accurate far beyond ``dtype``) rounded to
    ``dtype`` (np.float16 / np.float32) by FP_ROUND mode ``rb``: 0 nearest even, 1 toward
    +inf, 2 toward -inf, 3 toward zero (IEEE 754: a directed mode never rounds a finite
    value to the infinity it points away from)."""
    v = np.asarray(v, np.float64)
    with np.errstate(all="ignore"):
        r = v.astype(dtype)
        if rb == 0:
            return r
        rv = r.astype(np.float64)
        if rb == 1:
            step = rv < v
            to = np.inf
        elif rb == 2:
            step = rv > v
            to = -np.inf
        else:
            step = np.abs(rv) > np.abs(v)
            to = 0.0
        return np.where(step, np.nextafter(r, dtype(to)), r).astype(dtype)


def denorm_bits(mode: int, ftype: str) -> int:
    """The FP_DENORM field for ``ftype`` (bit 0: keep inputs, bit 1: keep results)."""
    return (mode >> (4 if ftype == "f32" else 6)) & 3


def round_bits(mode: int, ftype: str) -> int:
    return (mode >> (0 if ftype == "f32" else 2)) & 3


def plain_flushed(fn, src_types, dst_type, *, exact: bool = False):
    """Builder for ``D = fn(S0, S1, ...)`` on raw bits (as :func:`._util.plain`) whose float
    sources (``src_types``: "f32"/"f64"/"f16" or None per source) are flushed by their
    type's FP_DENORM input bit and whose result (``dst_type``) by its output bit, before
    and after the output modifiers (``omod``, ``clamp`` with DX10_CLAMP).  A directed
    FP_ROUND mode for the result type stops it with UnsupportedInstruction unless its
    results are ``exact`` (nothing to round)."""
    def build(ins, b, p):
        rd = [state.vsrc_reader(o) for o in ins.src]
        wr = state.vwriter(ins.dst[0])
        posts: dict = {}

        def run(b, g):
            mode = mode_of(b, g)
            if not exact and dst_type is not None and round_bits(mode, dst_type):
                from ..errors import UnsupportedInstruction
                raise UnsupportedInstruction(
                    f"{ins.mnemonic}: round mode {round_bits(mode, dst_type)} for {dst_type} (MODE register) is "
                    f"not emulated (only round to nearest even)", mnemonic=ins.mnemonic)
            vals = []
            for r, t in zip(rd, src_types):
                v = r(b, g)
                vals.append(v if t is None or denorm_bits(mode, t) & 1 else FLUSH[t](v))
            with np.errstate(all="ignore"):
                v = fn(*vals)
                if dst_type is not None:
                    keep = denorm_bits(mode, dst_type) & 2
                    v = v if keep else FLUSH[dst_type](v)
                    dx10 = bool((mode >> 8) & 1)
                    post = posts.get(dx10, 0)
                    if post == 0:
                        post = posts[dx10] = _post(ins, dst_type, dx10)
                    if post is not None:
                        v = post(v)
                        v = v if keep else FLUSH[dst_type](v)
            wr(b, g, v)
        return run
    return build


BUILDERS = {"s_setreg_b32": build_setreg, "s_setreg_imm32_b32": build_setreg, "s_getreg_b32": build_getreg}


def _post(ins, ftype, dx10):
    """The output modifiers of a float VALU result of type ``ftype`` ("f16", "f32", "f64"):
    ``omod`` (x2, x4, x0.5) then ``clamp`` to [0, 1] (NaN to 0 with ``dx10``), on the result
    bits; None when neither is set."""
    om, cl = ins.f.get("omod", 0), ins.f.get("clamp", 0)
    if not om and not cl:
        return None
    is64 = ftype == "f64"
    mul = {0: None, 1: 2.0, 2: 4.0, 3: 0.5}[om]

    def post(bits):
        if ftype == "f16":
            x = (np.asarray(bits, U32) & U32(0xFFFF)).astype(np.uint16).view(np.float16)
        else:
            x = O.f64(bits) if is64 else O.f32(bits)
        with np.errstate(all="ignore"):
            if mul is not None:
                x = x * x.dtype.type(mul)
            if cl:
                nan = np.isnan(x)
                x = np.clip(x, 0, 1).astype(x.dtype)
                if dx10:
                    x = np.where(nan, x.dtype.type(0), x)
        if ftype == "f16":
            return np.asarray(x, np.float16).view(np.uint16).astype(U32)
        return O.b64(x) if is64 else O.b32(x)
    return post
