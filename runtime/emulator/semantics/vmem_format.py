"""Typed buffer loads/stores: MUBUF ``buffer_{load,store}_format_{x,xy,xyz,xyzw}`` (format
from the buffer descriptor: NUM_FORMAT word3[14:12], DATA_FORMAT word3[18:15]) and MTBUF
``tbuffer_{load,store}_format_*`` (format in the instruction: dfmt, nfmt), Vega ISA guide
8.1 and 12.15-12.16.

Emulated for 32-bit components (DATA_FORMAT 32, 32_32, 32_32_32, 32_32_32_32 with
NUM_FORMAT uint, sint or float: the register holds the memory dword unchanged): the
access is the core's ``dword``/``dwordxN`` access (same addressing) of the components
both the format and the instruction have; a load fills the components the format lacks
with 0 (y, z) and 1 (w: 1.0 for float), a store drops them.  The d16 forms pack 16-bit
components (see :func:`_build_d16`).  Other formats (8/16-bit, packed, normalized,
scaled conversions) stop with UnsupportedInstruction naming the mnemonic and the
format.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import UnsupportedInstruction
from ._util import U32
from . import memory as _memory
from .. import state

_COMPONENTS = {"x": 1, "xy": 2, "xyz": 3, "xyzw": 4}
#: DATA_FORMAT -> 32-bit components (only the 32-bit-per-component formats)
_DFMT32 = {4: 1, 11: 2, 13: 3, 14: 4}
_NFMT_RAW = {4, 5, 7}   # uint, sint, float


def _plain(name: str) -> tuple[str, int] | None:
    kind, rest = name.split("_format_", 1)
    if "d16" in rest or rest not in _COMPONENTS:
        return None
    n = _COMPONENTS[rest]
    return f"{kind}_dword" + (f"x{n}" if n > 1 else ""), n


def _check(ins, dfmt, nfmt):
    if dfmt not in _DFMT32 or nfmt not in _NFMT_RAW:
        raise UnsupportedInstruction(
            f"{ins.mnemonic} with data format {dfmt}, number format {nfmt}: only 32-bit uint/sint/float "
            f"components are emulated", mnemonic=ins.mnemonic)
    return _DFMT32[dfmt]


def _access(ins, b, p, n):
    """(load, d, inner_for, fmt) of the typed buffer access ``ins`` of ``n`` components:
    whether it loads, its first data VGPR ``d``, ``inner_for(nf, b)`` the core's
    ``load``/``store_dword[xN]`` for ``nf`` 32-bit components through VGPRs ``d..d+nf-1``
    (same addressing as ``ins``, built once per ``nf``, with the batch ``b`` running it: the
    closures keep no batch, as the core's program cache shares them between batches) and
    ``fmt`` (:func:`_format_of`)."""
    from ..decode import vreg
    load = ins.f["op"].startswith("load")
    if load:
        p.load_kind = "vm"
    d = ins.dst[0].reg if load else ins.src[-1].reg
    inners: dict[int, object] = {}

    def inner_for(nf, b):
        fn = inners.get(nf)
        if fn is None:
            op = ("load" if load else "store") + "_dword" + (f"x{nf}" if nf > 1 else "")
            data = {"dst": [vreg(d, nf)]} if load else {"src": list(ins.src[:-1]) + [vreg(d, nf)]}
            ins2 = dataclasses.replace(ins, f=dict(ins.f, op=op, ndwords=nf, typed=True), encoding="MUBUF",
                                       **data)
            fn = inners[nf] = _memory.build_mubuf(ins2, b, p)
        return fn
    return load, d, inner_for, _format_of(ins, n)


def _format_of(ins, n):
    """``fmt(b, g)``: (components accessed: the instruction's ``n`` or fewer when the format
    has fewer, NUM_FORMAT) from the MTBUF fields or the buffer descriptor's word 3 (one
    format for all waves of the group, else UnsupportedInstruction)."""
    if ins.encoding == "MTBUF":
        return lambda b, g: (min(n, _check(ins, ins.f["dfmt"], ins.f["nfmt"])), ins.f["nfmt"])
    r = ins.f["srsrc"].reg

    def fmt(b, g):
        w3 = {int(x) for x in b.S[r + 3][g.sel]}
        if len(w3) != 1:
            raise UnsupportedInstruction(f"{ins.mnemonic}: waves with different buffer formats",
                                         mnemonic=ins.mnemonic)
        v = w3.pop()
        return min(n, _check(ins, (v >> 15) & 0xF, (v >> 12) & 7)), (v >> 12) & 7
    return fmt


def _build(ins, b, p):
    pl = _plain(ins.f["op"])
    if pl is None:
        return None
    n = pl[1]
    load, d, inner_for, fmt = _access(ins, b, p, n)

    def run(b, g):
        nf, nfmt = fmt(b, g)
        r_ = inner_for(nf, b)(b, g)
        if load and nf < n:
            # components the format lacks read as 0 (y, z) and 1 (w)
            one = 0x3F800000 if nfmt == 7 else 1
            for i in range(nf, n):
                b.vwrite(g, d + i, np.full((g.n, state.WAVE), one if i == 3 else 0, U32))
        return r_
    return run


def _build_d16(ins, b, p):
    """``*_format_d16_*``: 16-bit components packed two per VGPR (x, y in the low/high half
    of the first, z, w of the second; ``d16_hi_x``: the high half, low half kept).  Float
    formats convert f32 <-> f16 (round to nearest even), integer ones keep / extend the low
    16 bits.  Runs the core's dword access through the destination (or data) VGPRs and
    restores them before packing."""
    rest = ins.f["op"].split("_format_d16_", 1)[1]
    hi = rest.startswith("hi_")
    n = _COMPONENTS[rest[3:] if hi else rest]
    load, d, inner_for, fmt = _access(ins, b, p, n)

    def to16(x, nfmt):
        if nfmt == 7:
            return np.asarray(x, U32).view(np.float32).astype(np.float16).view(np.uint16).astype(U32)
        return np.asarray(x, U32) & U32(0xFFFF)

    def from16(x, nfmt):
        x = np.asarray(x, U32) & U32(0xFFFF)
        if nfmt == 7:
            return x.astype(np.uint16).view(np.float16).astype(np.float32).view(U32)
        if nfmt == 5:
            return np.where(x >= 0x8000, x | U32(0xFFFF0000), x).astype(U32)
        return x

    def run(b, g):
        nf, nfmt = fmt(b, g)
        if d + nf > b.nv:
            raise UnsupportedInstruction(f"{ins.mnemonic}: needs VGPRs up to v{d + nf - 1}", mnemonic=ins.mnemonic)
        saved = [b.V[d + i][g.sel].copy() for i in range(nf)]
        em = b.em(g)
        if load:
            r_ = inner_for(nf, b)(b, g)
            comps = [b.V[d + i][g.sel].copy() for i in range(nf)]
            for i in range(nf):
                b.V[d + i][g.sel] = saved[i]
            one = 0x3C00 if nfmt == 7 else 1
            vals = [to16(c, nfmt) for c in comps] + [np.full((g.n, state.WAVE), one if i == 3 else 0, U32)
                                                     for i in range(nf, n)]
            if hi:
                out = (b.V[d][g.sel] & U32(0xFFFF)) | (vals[0] << U32(16))
                b.V[d][g.sel] = np.where(em, out, b.V[d][g.sel])
                return r_
            for k in range((n + 1) // 2):
                lo = vals[2 * k]
                hv = vals[2 * k + 1] if 2 * k + 1 < n else U32(0)
                out = lo | (np.asarray(hv, U32) << U32(16))
                b.V[d + k][g.sel] = np.where(em, out, b.V[d + k][g.sel])
            return r_
        if hi:
            comps = [saved[0] >> U32(16)]
        else:
            comps = [(b.V[d + i // 2][g.sel] >> U32(16 * (i % 2))) for i in range(nf)]
        wide = [from16(c, nfmt) for c in comps]
        for i in range(nf):
            b.V[d + i][g.sel] = wide[i]
        try:
            return inner_for(nf, b)(b, g)
        finally:
            for i in range(nf):
                b.V[d + i][g.sel] = saved[i]
    return run


def _names():
    from vlpc import isa as table
    out = {}
    for enc in ("MUBUF", "MTBUF"):
        for mn in table.opcodes(enc).values():
            if "_format_" in mn:
                out[mn] = _build_d16 if "_d16" in mn else _build
    return out


BUILDERS = _names()
