"""Typed buffer loads/stores: MUBUF ``buffer_{load,store}_format_{x,xy,xyz,xyzw}`` (format
from the buffer descriptor: NUM_FORMAT word3[14:12], DATA_FORMAT word3[18:15]) and MTBUF
``tbuffer_{load,store}_format_*`` (format in the instruction: dfmt, nfmt), Vega ISA guide
8.1 and 12.15-12.16.

Emulated for 32-bit components (DATA_FORMAT 32, 32_32, 32_32_32, 32_32_32_32 with
NUM_FORMAT uint, sint or float: the register holds the memory dword unchanged) when the
format has at least the instruction's components: then the access is the core's
``dword``/``dwordxN`` access with the same addressing.  Other formats (8/16-bit,
packed, normalized, scaled conversions) and the d16 forms stop with
UnsupportedInstruction naming the mnemonic and the format.
"""

from __future__ import annotations

import dataclasses

from ..errors import UnsupportedInstruction

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


def _check(ins, dfmt, nfmt, n):
    if _DFMT32.get(dfmt, 0) < n or nfmt not in _NFMT_RAW:
        raise UnsupportedInstruction(
            f"{ins.mnemonic} with data format {dfmt}, number format {nfmt}: only 32-bit uint/sint/float "
            f"components are emulated", mnemonic=ins.mnemonic)


def _build(ins, b, p):
    from .. import core
    pl = _plain(ins.f["op"])
    if pl is None:
        return None
    op, n = pl
    ins2 = dataclasses.replace(ins, f=dict(ins.f, op=op), encoding="MUBUF")
    if ins.encoding == "MTBUF":
        _check(ins, ins.f["dfmt"], ins.f["nfmt"], n)
        return core.build_mubuf(ins2, b, p)
    inner = core.build_mubuf(ins2, b, p)
    r = ins.f["srsrc"].reg

    def run(b, g):
        w3 = b.S[r + 3][g.sel]
        for v in set(int(x) for x in w3):
            _check(ins, (v >> 15) & 0xF, (v >> 12) & 7, n)
        return inner(b, g)
    return run


def _names():
    from vlpc import isa as table
    out = {}
    for enc in ("MUBUF", "MTBUF"):
        for mn in table.opcodes(enc).values():
            if "_format_" in mn and "d16" not in mn:
                out[mn] = _build
    return out


BUILDERS = _names()
