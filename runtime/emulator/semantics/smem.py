"""Scalar memory stores and atomics (Vega ISA guide 12.4, SMEM opcodes 16..26, 64..172).

``s_store_dword{,x2,x4}`` write SDATA to ``base + offset`` (the address's low two
bits ignored, as for scalar loads); ``s_buffer_store_*`` address through the buffer
descriptor in s[base:base+3] (base address bits 47:0; dwords at offsets past
NUM_RECORDS are dropped); ``s_atomic_*`` / ``s_buffer_atomic_*`` (32- and 64-bit
``swap cmpswap add sub smin umin smax umax and or xor inc dec``) update memory and,
with ``glc``, return the old value to SDATA (cmpswap: SDATA = {data, compare}).
All count on lgkmcnt (returns out of order).  ``s_dcache_discard*`` and
``s_atc_probe*`` do nothing here (no cache model).  Scratch forms
(``s_scratch_*``) are not emulated.
"""

from __future__ import annotations

import numpy as np

from ._util import U32, U64


def _addr_fn(ins):
    from .. import core
    from ..decode import Operand
    base_op = ins.src[0]
    rbase = core.ssrc_reader(Operand("s", base_op.reg, 2))
    off = ins.f["offset"]
    rso = core.ssrc_reader(ins.src[-1]) if ins.f["soffset"] is not None else None
    buffer = ins.f["buffer"]
    r4 = base_op.reg

    def addr(b, g):
        base = np.asarray(rbase(b, g), U64)
        if buffer:
            base = base & U64(0xFFFFFFFFFFFF)
        o = np.full(g.n, off, np.int64)
        if rso is not None:
            o = o + np.broadcast_to(rso(b, g), (g.n,)).astype(np.int64)
        a = (base.astype(np.int64) + o).astype(U64) & ~U64(3)
        nrec = b.S[r4 + 2][g.sel].astype(np.int64) if buffer else None
        return a, o, nrec
    return addr


def _build_store(ins, b, p):
    from .. import core
    addr = _addr_fn(ins)
    data = ins.src[1]
    nd = data.width
    mn = ins.mnemonic

    def run(b, g):
        a, o, nrec = addr(b, g)
        vals = np.stack([b.S[data.reg + i][g.sel] for i in range(nd)], axis=-1)
        for i in range(nd):
            ok = np.ones(g.n, bool) if nrec is None else (o + 4 * i + 4) <= nrec
            if ok.any():
                try:
                    b.mem.store(a[ok] + U64(4 * i), vals[ok, i:i + 1], mn, core._site(b, ins))
                except core.OutOfBoundsAccess as e:
                    raise core._oob(b, g, e, g.idx[ok], np.zeros(int(ok.sum()), int), a[ok])
        b.st.global_bytes_written += 4 * nd * g.n
        core._issue(g, p, "smem")
    return run


def _build_atomic(ins, b, p):
    from .. import core
    mn = ins.mnemonic
    op = mn.split("atomic_", 1)[1]
    wide = ins.f["width"]
    if op.endswith("_x2"):
        op = op[:-3]
    addr = _addr_fn(ins)
    data = ins.src[1]
    ret = ins.dst[0] if ins.dst else None
    if ret is not None:
        p.load_kind = "smem"

    def run(b, g):
        a, o, nrec = addr(b, g)
        ok = np.ones(g.n, bool) if nrec is None else (o + 4 * wide) <= nrec
        vals = np.stack([b.S[data.reg + i][g.sel] for i in range(data.width)], axis=-1)
        d, c = (vals[:, :wide], vals[:, wide:]) if op == "cmpswap" else (vals, None)
        old = np.zeros((g.n, wide), U32)
        if ok.any():
            try:
                old[ok] = b.mem.atomic(op, a[ok], d[ok], None if c is None else c[ok], wide,
                                       site=core._site(b, ins))
            except core.OutOfBoundsAccess as e:
                raise core._oob(b, g, e, g.idx[ok], np.zeros(int(ok.sum()), int), a[ok])
        if ret is not None:
            for i in range(wide):
                b.S[ret.reg + i][g.sel] = old[:, i]
        b.st.global_bytes_read += 4 * wide * g.n
        b.st.global_bytes_written += 4 * wide * g.n
        core._issue(g, p, "smem")
    return run


def _nop(ins, b, p):
    return lambda b, g: None


def _names():
    from vlpc import isa as table
    out = {}
    for mn in table.opcodes("SMEM").values():
        if mn.startswith("s_scratch"):
            continue
        if "store" in mn:
            out[mn] = _build_store
        elif "atomic" in mn:
            out[mn] = _build_atomic
        elif mn.startswith(("s_dcache_discard", "s_atc_probe")):
            out[mn] = _nop
    return out


BUILDERS = _names()
