"""16-bit ("d16") vector memory forms of GLOBAL/FLAT/MUBUF (Vega ISA guide 12.14-12.15):

``*_load_ubyte_d16`` / ``sbyte_d16`` / ``short_d16`` load 8/16 bits (zero/sign
extended to 16) into the low half of VDST and keep its high half; the ``_hi`` forms
load into the high half and keep the low one.  ``*_store_byte_d16_hi`` /
``short_d16_hi`` store bits [23:16] / [31:16] of VDATA.

They run the core's byte/short load or store (same addressing, bounds checks, counters
and vmcnt tracking) and merge the halves.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ._util import U32
from . import memory as _memory

_LOAD = {"ubyte_d16": "ubyte", "sbyte_d16": "sbyte", "short_d16": "ushort"}
_STORE = {"byte_d16_hi": "byte", "short_d16_hi": "short"}


def _core_builder(ins):
    return _memory.build_mubuf if ins.encoding == "MUBUF" else _memory.build_flat


def _build(ins, b, p):
    name = ins.f["op"]
    if name.startswith("load_"):
        sub = name[len("load_"):]
        hi = sub.endswith("_hi")
        plain_sub = _LOAD[sub[:-3] if hi else sub]
        ins2 = dataclasses.replace(ins, f=dict(ins.f, op="load_" + plain_sub))
        inner = _core_builder(ins)(ins2, b, p)
        d = ins.dst[0].reg

        def run_load(b, g):
            old = b.V[d][g.sel].copy()
            r = inner(b, g)
            new = b.V[d][g.sel]
            if hi:
                merged = (old & U32(0xFFFF)) | (new << U32(16))
            else:
                merged = (old & U32(0xFFFF0000)) | (new & U32(0xFFFF))
            b.V[d][g.sel] = np.where(b.em(g), merged, old)
            return r
        return run_load
    sub = name[len("store_"):]
    ins2 = dataclasses.replace(ins, f=dict(ins.f, op="store_" + _STORE[sub]))
    inner = _core_builder(ins)(ins2, b, p)
    data = ins.src[1] if ins.encoding == "FLAT" else ins.src[-1]
    r = data.reg

    def run_store(b, g):
        old = b.V[r][g.sel].copy()
        b.V[r][g.sel] = old >> U32(16)
        try:
            return inner(b, g)
        finally:
            b.V[r][g.sel] = old
    return run_store


def _names():
    from vlpc import isa as table
    out = {}
    for enc, prefix in (("GLOBAL", "global_"), ("FLAT", "flat_"), ("MUBUF", "buffer_")):
        for mn in table.opcodes(enc).values():
            op = mn[len(prefix):]
            if op.startswith("load_") and op[5:].replace("_hi", "") in _LOAD:
                out[mn] = _build
            elif op.startswith("store_") and op[6:] in _STORE:
                out[mn] = _build
    return out


BUILDERS = _names()
