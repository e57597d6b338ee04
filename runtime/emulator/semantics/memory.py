"""Vector memory: FLAT/GLOBAL and MUBUF loads, stores and atomics (Vega ISA guide
chapters 8-9, 12.14-12.16), and the bookkeeping every memory instruction shares:
:func:`_issue` (the wait counters: a destination stays pending until an
``s_waitcnt`` retires it), out-of-bounds diagnostics (:func:`_oob`) and the buffer
check's site key (:func:`_site`).  Scalar memory is :mod:`.smem`'s, LDS :mod:`.ds`'s.
"""

from __future__ import annotations

import numpy as np

from .. import ops as O
from ..core import TARGET, U32, U64, WAVE, Batch, Group, Prepared, ssrc_reader
from ..decode import Instr, Operand
from ..errors import OutOfBoundsAccess
from ._util import core_executed


# -- memory instructions -------------------------------------------------------------

def _issue(g: Group, p: Prepared, kind: str):
    """Record an issued memory op; its destinations become pending."""
    if kind == "vm":
        g.vm_n += 1
        seq = g.vm_n
        lim = TARGET.vmcnt_max
        # the hardware stalls issue at the counter's maximum: older ops have returned
        if len(g.pending) > 0:
            for k in [k for k, (kd, s) in g.pending.items() if kd == "vm" and g.vm_n - s >= lim + 1]:
                del g.pending[k]
    elif kind == "lds":
        g.lds_n += 1
        g.lgkm_n += 1
        seq = g.lds_n
    else:
        g.lgkm_n += 1
        seq = g.lgkm_n
    for k in p.wkeys:
        g.pending[k] = (kind, seq)


def _oob(b: Batch, g: Group, e: OutOfBoundsAccess, lane_waves: np.ndarray, lanes: np.ndarray,
         addr: np.ndarray):
    bad = getattr(e, "bad_elements", None)
    if bad is None or len(bad) == 0:
        bad = np.flatnonzero(np.ones(len(addr), bool))[:1]
    i = int(bad[0])
    e.wave_index = int(np.searchsorted(g.idx, lane_waves[i])) if lane_waves.size else 0
    lanes_bad = sorted({int(lanes[j]) for j in bad[:16]})
    e.lanes = lanes_bad
    e.detail = f"{e.detail}; lane(s) {lanes_bad}"
    e.args = (e._format(),)
    return e


def _site(b: Batch, ins: Instr):
    """The per-instruction buffer check's key (see memory.Memory.check): the dispatch (its
    kernarg segment, freed when the dispatch ends) and the pc; None without a kernarg segment."""
    key = b.cfg.kernarg_address
    return (key, ins.pc) if key else None


def _lane_addrs(b: Batch, g: Group, addr: np.ndarray):
    """Active lanes' addresses (flat), with wave ids and lane numbers for diagnostics."""
    em = b.em(g)
    addr = np.broadcast_to(addr, (g.n, WAVE))
    if b.full(g):
        return addr.reshape(-1), None
    return addr[em], em



_SUB = {"ubyte": (1, False), "sbyte": (1, True), "ushort": (2, False), "sshort": (2, True),
        "byte": (1, False), "short": (2, False)}


def _vmem_access(b: Batch, g: Group, p: Prepared, ins: Instr, addr: np.ndarray, valid=None):
    """Do the load/store/atomic of a FLAT/GLOBAL/MUBUF instruction at per-lane ``addr`` (n,64) u64.

    ``valid`` (n,64) bool: lanes in range (MUBUF bounds); others read 0 / drop writes.
    """
    name = ins.f["op"]
    mn = ins.mnemonic
    em = b.em(g)
    full = b.full(g)
    act = em if valid is None else (em & valid)
    use_all = full and valid is None
    if use_all:
        flat = addr.reshape(-1)
        sel_lanes = None
    else:
        flat = addr[act]
        sel_lanes = act
    m = flat.size
    if b.rec is not None:
        b.rec.memory(g, addr, None if use_all else act, 4 * max(1, ins.dst[0].width if ins.dst else 1))

    def diag(e):
        if sel_lanes is None:
            w = np.repeat(g.idx, WAVE)
            ln = np.tile(np.arange(WAVE), g.n)
        else:
            wi, ln = np.nonzero(sel_lanes)
            w = g.idx[wi]
        return _oob(b, g, e, w, ln, flat)

    if name.startswith("load"):
        dst = ins.dst[0].reg
        nd = ins.dst[0].width
        sub = name.split("_", 1)[1]
        try:
            if sub in _SUB:
                nb, signed = _SUB[sub]
                raw = b.mem.load_bytes(flat, nb, mn, _site(b, ins))
                v = raw[:, 0].astype(np.int64) if nb == 1 else raw.view("<u2")[:, 0].astype(np.int64)
                if signed:
                    v = np.where(v >= (1 << (8 * nb - 1)), v - (1 << (8 * nb)), v)
                data = v.astype(U32)[:, None]
                nbytes = nb
            else:
                data = b.mem.load(flat, 4 * nd, mn, _site(b, ins)) if m else np.zeros((0, nd), U32)
                nbytes = 4 * nd
        except OutOfBoundsAccess as e:
            raise diag(e)
        b.st.global_bytes_read += nbytes * m
        for i in range(nd):
            if use_all:
                b.V[dst + i][g.sel] = data[:, i].reshape(g.n, WAVE)
            else:
                cur = b.V[dst + i][g.sel]
                if not g.contig:
                    cur = cur.copy()
                # lanes active but out of range read 0
                if valid is not None:
                    cur[em & ~valid] = 0
                cur[act] = data[:, i]
                if not g.contig:
                    b.V[dst + i][g.sel] = cur
        _issue(g, p, "vm")
        return
    if name.startswith("store"):
        data_op = ins.src[1] if ins.encoding == "FLAT" else ins.src[-1]
        r = data_op.reg
        nd = data_op.width
        sub = name.split("_", 1)[1]
        vals = np.stack([b.V[r + i][g.sel] for i in range(nd)], axis=-1)
        vals = vals.reshape(-1, nd) if use_all else vals[act]
        try:
            if sub in _SUB:
                nb = _SUB[sub][0]
                by = vals[:, 0].astype("<u4").view(np.uint8).reshape(-1, 4)[:, :nb]
                b.mem.store_bytes(flat, by, mn, _site(b, ins))
                b.st.global_bytes_written += nb * m
            else:
                b.mem.store(flat, vals, mn, _site(b, ins))
                b.st.global_bytes_written += 4 * nd * m
        except OutOfBoundsAccess as e:
            raise diag(e)
        _issue(g, p, "vm")
        return
    # atomics
    op = name[len("atomic_"):]
    wide = ins.f["width"]
    if op.endswith("_x2"):
        op = op[:-3]
    data_op = ins.src[1] if ins.encoding == "FLAT" else ins.src[-1]
    r = data_op.reg
    nd = data_op.width
    vals = np.stack([b.V[r + i][g.sel] for i in range(nd)], axis=-1)
    vals = vals.reshape(-1, nd) if use_all else vals[act]
    if op == "cmpswap":
        d, c = vals[:, :wide], vals[:, wide:]
    else:
        d, c = vals, None
    try:
        old = b.mem.atomic(op, flat, d, c, wide, site=_site(b, ins))
    except OutOfBoundsAccess as e:
        raise diag(e)
    b.st.global_bytes_read += 4 * wide * m
    b.st.global_bytes_written += 4 * wide * m
    if ins.dst:
        dst = ins.dst[0].reg
        for i in range(wide):
            if use_all:
                b.V[dst + i][g.sel] = old[:, i].reshape(g.n, WAVE)
            else:
                cur = b.V[dst + i][g.sel]
                if not g.contig:
                    cur = cur.copy()
                cur[act] = old[:, i]
                if not g.contig:
                    b.V[dst + i][g.sel] = cur
    _issue(g, p, "vm")


def build_flat(ins: Instr, b: Batch, p: Prepared):
    f = ins.f
    addr_op = f["addr"]
    ra = addr_op.reg
    off = f["offset"]
    saddr = f["saddr"]
    if ins.mnemonic.split("_", 1)[1].startswith("load") or (ins.dst and "atomic" in ins.mnemonic):
        p.load_kind = "vm"
    rs = ssrc_reader(Operand("s", saddr, 2)) if saddr is not None else None
    offv = np.int64(off)

    def fn(b, g):
        if rs is not None:
            base = np.asarray(rs(b, g), U64)[:, None]
            addr = base + b.V[ra][g.sel].astype(U64)
        else:
            addr = O.u64_of(b.V[ra][g.sel], b.V[ra + 1][g.sel])
        if offv:
            addr = (addr.astype(np.int64) + offv).astype(U64)
        _vmem_access(b, g, p, ins, addr)
    return fn


def build_mubuf(ins: Instr, b: Batch, p: Prepared):
    f = ins.f
    rs = f["srsrc"].reg
    rso = ssrc_reader(f["soffset"])
    va = f["vaddr"]
    offen, idxen = f["offen"], f["idxen"]
    inst_off = f["offset"]
    name = f["op"]
    if name.startswith("load") or (ins.dst and name.startswith("atomic")):
        p.load_kind = "vm"
    if name.startswith(("load", "store")):
        sub = name.split("_", 1)[1]
        nbytes = _SUB[sub][0] if sub in _SUB else 4 * (ins.dst[0].width if ins.dst else ins.src[-1].width)
    else:
        nbytes = 4 * f["width"]

    def fn(b, g):
        S = b.S
        d0 = S[rs][g.sel].astype(U64)
        d1 = S[rs + 1][g.sel].astype(U64)
        base = d0 | ((d1 & U64(0xFFFF)) << U64(32))
        stride = ((d1 >> U64(16)) & U64(0x3FFF)).astype(np.int64)
        nrec = S[rs + 2][g.sel].astype(np.int64)
        so = np.broadcast_to(rso(b, g), (g.n,)).astype(np.int64)
        vi = 0
        index = np.zeros((g.n, 1), np.int64)
        offset = np.full((g.n, 1), inst_off, np.int64)
        if idxen:
            index = b.V[va.reg][g.sel].astype(np.int64)
            vi = 1
        if offen:
            offset = offset + b.V[va.reg + vi][g.sel].astype(np.int64)
        st = stride[:, None]
        if (stride == 0).all():
            valid = (offset + nbytes) <= nrec[:, None]
        else:
            valid = np.where(st == 0, (offset + nbytes) <= nrec[:, None], index < nrec[:, None])
        addr = (base.astype(np.int64)[:, None] + so[:, None] + offset + st * index).astype(U64)
        addr = np.broadcast_to(addr, (g.n, WAVE))
        valid = np.broadcast_to(valid, (g.n, WAVE))
        _vmem_access(b, g, p, ins, addr, None if valid.all() else valid)
    return fn


BASE_BUILDERS = {**{mn: build_flat for mn in core_executed("FLAT", "GLOBAL")},
            **{mn: build_mubuf for mn in core_executed("MUBUF")}}
