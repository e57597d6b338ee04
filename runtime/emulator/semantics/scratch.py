"""SCRATCH (private) loads and stores: ``scratch_load_*`` / ``scratch_store_*`` (Vega ISA
guide 12.14, FLAT segment 1).

Each lane has its own private memory; the instruction's address (the VGPR offset, or
the SGPR base with ``off``, plus the immediate offset) is a byte offset in the lane's
space (the hardware's per-lane swizzle and FLAT_SCRATCH base are not modelled: the
wave's private segment starts at offset 0).  Private memory starts zeroed and grows on
demand up to 64 KiB per lane (an access beyond it is an OutOfBoundsAccess); loads
count on vmcnt like global loads.  ``_d16`` loads keep the other half; byte/short
loads zero- or sign-extend.
"""

from __future__ import annotations

import numpy as np

from ..errors import OutOfBoundsAccess
from ._util import I64, U32
from . import memory as _memory
from .. import state

LIMIT = 64 * 1024
_SUB = {"ubyte": (1, False), "sbyte": (1, True), "ushort": (2, False), "sshort": (2, True),
        "byte": (1, False), "short": (2, False)}


def _mem(b, need: int):
    cur = b.__dict__.get("_private")
    if cur is None or cur.shape[2] < need:
        size = max(need, 256, 0 if cur is None else 2 * cur.shape[2])
        new = np.zeros((b.nw, 64, min(size, LIMIT)), np.uint8)
        if cur is not None:
            new[:, :, : cur.shape[2]] = cur
        b._private = cur = new
    return cur


def _build(ins, b, p):
    f = ins.f
    name = f["op"]
    kind, sub = name.split("_", 1)
    hi = sub.endswith("_d16_hi")
    d16 = "_d16" in sub
    base_sub = sub.replace("_d16_hi", "").replace("_d16", "")
    if kind == "load":
        p.load_kind = "vm"
    if base_sub in _SUB:
        nb, signed = _SUB[base_sub]
        nd = 1
    elif base_sub.startswith("dword"):
        nd = int(base_sub[len("dwordx"):]) if "x" in base_sub else 1
        nb, signed = 4 * nd, False
    else:
        return None
    addr_op = f["addr"]
    saddr = f["saddr_op"] if f["saddr"] is not None else None
    off = f["offset"]

    def lane_addr(b, g):
        a = np.zeros((g.n, state.WAVE), I64)
        if addr_op.kind == "v":
            a = a + b.V[addr_op.reg][g.sel].astype(I64)
        if saddr is not None:
            a = a + b.S[saddr.reg][g.sel].astype(I64)[:, None]
        a = a + off
        em = b.em(g)
        bad = em & ((a < 0) | (a + nb > LIMIT))
        if bad.any():
            wi, ln = np.nonzero(bad)
            raise OutOfBoundsAccess(f"{ins.mnemonic}: lane {int(ln[0])} private address {int(a[wi[0], ln[0]])} "
                                    f"is outside the emulated {LIMIT}-byte private segment",
                                    fault_address=int(a[wi[0], ln[0]]), size=nb)
        return a, em

    rows_of = lambda g: g.idx  # noqa: E731

    if kind == "load":
        d = ins.dst[0].reg

        def run_load(b, g):
            a, em = lane_addr(b, g)
            mem = _mem(b, int(a[em].max()) + nb if em.any() else 0)
            w, ln = np.nonzero(em)
            rows = rows_of(g)[w]
            by = mem[rows[:, None], ln[:, None], a[w, ln][:, None] + np.arange(nb)]
            if nb >= 4:
                vals = by.view("<u4").reshape(-1, nd)
            else:
                v = by[:, 0].astype(I64) if nb == 1 else by.view("<u2")[:, 0].astype(I64)
                if signed:
                    v = np.where(v >= (1 << (8 * nb - 1)), v - (1 << (8 * nb)), v)
                vals = (v & 0xFFFFFFFF).astype(U32)[:, None]
            for i in range(nd):
                cur = b.V[d + i][g.sel].copy()
                x = vals[:, i]
                if d16:
                    old = cur[w, ln]
                    x = ((old & U32(0xFFFF)) | (x << U32(16))) if hi else ((old & U32(0xFFFF0000)) | (x & U32(0xFFFF)))
                cur[w, ln] = x
                b.V[d + i][g.sel] = cur
            b.st.global_bytes_read += nb * w.size
            _memory._issue(g, p, "vm")
        return run_load

    data = ins.src[1] if addr_op.kind == "v" else ins.src[0]

    def run_store(b, g):
        a, em = lane_addr(b, g)
        mem = _mem(b, int(a[em].max()) + nb if em.any() else 0)
        w, ln = np.nonzero(em)
        rows = rows_of(g)[w]
        vals = np.stack([b.V[data.reg + i][g.sel][w, ln] for i in range(nd)], axis=-1).astype("<u4")
        if hi:
            vals = vals >> 16
        by = vals.view(np.uint8).reshape(-1, 4 * nd)[:, :nb]
        mem[rows[:, None], ln[:, None], a[w, ln][:, None] + np.arange(nb)] = by
        b.st.global_bytes_written += nb * w.size
        _memory._issue(g, p, "vm")
    return run_store


def _names():
    from vlpc import isa as table
    return {mn: _build for mn in table.opcodes("SCRATCH").values()}


BUILDERS = _names()
