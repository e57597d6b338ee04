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

from typing import TYPE_CHECKING

import numpy as np

from ._util import U32, U64
from ..state import ssrc_reader, swriter
from ..decode import Instr, Operand
from ..errors import OutOfBoundsAccess
from ._util import table_mnemonics
from .memory import _issue, _oob, _site
from . import memory as _memory
from .. import state

if TYPE_CHECKING:  # the core's wave state, for annotations only (no import of the core)
    from ..core import Batch, Prepared


def _addr_fn(ins):
    from ..decode import Operand
    base_op = ins.src[0]
    rbase = state.ssrc_reader(Operand("s", base_op.reg, 2))
    off = ins.f["offset"]
    rso = state.ssrc_reader(ins.src[-1]) if ins.f["soffset"] is not None else None
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
                    b.mem.store(a[ok] + U64(4 * i), vals[ok, i:i + 1], mn, _memory._site(b, ins))
                except OutOfBoundsAccess as e:
                    raise _memory._oob(b, g, e, g.idx[ok], np.zeros(int(ok.sum()), int), a[ok])
        b.st.global_bytes_written += 4 * nd * g.n
        _memory._issue(g, p, "smem")
    return run


def _build_atomic(ins, b, p):
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
                                       site=_memory._site(b, ins))
            except OutOfBoundsAccess as e:
                raise _memory._oob(b, g, e, g.idx[ok], np.zeros(int(ok.sum()), int), a[ok])
        if ret is not None:
            for i in range(wide):
                b.S[ret.reg + i][g.sel] = old[:, i]
        b.st.global_bytes_read += 4 * wide * g.n
        b.st.global_bytes_written += 4 * wide * g.n
        _memory._issue(g, p, "smem")
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


# ---- the core's SMEM instructions ----

def build_smem(ins: Instr, b: Batch, p: Prepared):
    mn = ins.mnemonic
    if mn in ("s_dcache_wb", "s_dcache_inv", "s_dcache_wb_vol", "s_dcache_inv_vol"):
        return lambda b, g: None
    if mn in ("s_memtime", "s_memrealtime"):
        wr = swriter(ins.dst[0])
        p.load_kind = "smem"

        def fn(b, g):
            wr(b, g, np.array(0, U64))
            _issue(g, p, "smem")
        return fn
    if "load" not in mn:
        return None
    nd = ins.f["ndwords"]
    base_op = ins.src[0]
    rbase = ssrc_reader(Operand("s", base_op.reg, 2))
    r4 = base_op.reg
    off = ins.f["offset"]
    so = ins.f["soffset"]
    rso = ssrc_reader(ins.src[-1]) if so is not None else None
    dst = ins.dst[0].reg
    buffer = ins.f["buffer"]
    p.load_kind = "smem"

    def fn(b, g):
        base = rbase(b, g)
        if buffer:
            base = base & U64(0xFFFFFFFFFFFF)
        o = np.full(g.n, off, np.int64)
        if rso is not None:
            o = o + np.broadcast_to(rso(b, g), (g.n,)).astype(np.int64)
        addr = ((base.astype(np.int64) + o).astype(U64)) & ~U64(3)
        if buffer:
            nrec = b.S[r4 + 2][g.sel].astype(np.int64)
            data = np.zeros((g.n, nd), U32)
            for i in range(nd):
                ok = (o + 4 * i + 4) <= nrec
                if ok.any():
                    try:
                        data[ok, i] = b.mem.load(addr[ok] + U64(4 * i), 4, "s_buffer_load")[:, 0]
                    except OutOfBoundsAccess as e:
                        raise _oob(b, g, e, g.idx[ok], np.zeros(int(ok.sum()), int), addr[ok])
        else:
            try:
                data = b.mem.load(addr, 4 * nd, mn, _site(b, ins))
            except OutOfBoundsAccess as e:
                raise _oob(b, g, e, g.idx, np.zeros(g.n, int), addr)
        for i in range(nd):
            b.S[dst + i][g.sel] = data[:, i]
        if b.rec is not None:
            b.rec.memory(g, addr[:, None], None, 4 * nd)
        nbytes = 4 * nd * g.n
        b.st.smem_bytes_read += nbytes
        b.st.global_bytes_read += nbytes
        _issue(g, p, "smem")
    return fn


BUILDERS = _names()
#: the SMEM loads and stores; the atomics, scratch and discard forms are this module's ``BUILDERS``
BASE_BUILDERS = {mn: build_smem for mn in table_mnemonics(
    "SMEM", but=lambda mn: any(w in mn for w in ("atomic", "scratch", "discard")))}
