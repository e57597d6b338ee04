"""Vector memory: FLAT/GLOBAL and MUBUF loads, stores and atomics (Vega ISA guide
chapters 8-9, 12.14-12.16), and the bookkeeping every memory instruction shares:
:func:`_issue` (the wait counters: a destination stays pending until an
``s_waitcnt`` retires it), out-of-bounds diagnostics (:func:`_oob`) and the buffer
check's site key (:func:`_site`).  Scalar memory is :mod:`.smem`'s, LDS :mod:`.ds`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import ops as O
from ..state import PRIVATE_APERTURE_BASE, TARGET, U32, U64, WAVE, ssrc_reader
from ..decode import Instr, Operand
from ..errors import BufferOutOfRange, OutOfBoundsAccess
from .findings import finding
from ._util import table_mnemonics

if TYPE_CHECKING:  # the core's wave state, for annotations only (no import of the core)
    from ..core import Batch, Group, Prepared


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



_SUB = {"ubyte": (1, False), "sbyte": (1, True), "ushort": (2, False), "sshort": (2, True),
        "byte": (1, False), "short": (2, False)}


def _vmem_access(b: Batch, g: Group, p: Prepared, ins: Instr, addr: np.ndarray, valid=None, site=True):
    """Do the load/store/atomic of a FLAT/GLOBAL/MUBUF instruction at per-lane ``addr`` (n,64) u64.

    ``valid`` (n,64) bool: lanes in range (MUBUF bounds); others read 0 / drop writes.
    ``site`` False: no per-instruction buffer check (scratch reached through the private
    aperture: the same instruction may reach global memory for other lanes or calls).
    """
    key = _site(b, ins) if site else None
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
                raw = b.mem.load_bytes(flat, nb, mn, key)
                v = raw[:, 0].astype(np.int64) if nb == 1 else raw.view("<u2")[:, 0].astype(np.int64)
                if signed:
                    v = np.where(v >= (1 << (8 * nb - 1)), v - (1 << (8 * nb)), v)
                data = v.astype(U32)[:, None]
                nbytes = nb
            else:
                data = b.mem.load(flat, 4 * nd, mn, key) if m else np.zeros((0, nd), U32)
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
                b.mem.store_bytes(flat, by, mn, key)
                b.st.global_bytes_written += nb * m
            else:
                b.mem.store(flat, vals, mn, key)
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
        old = b.mem.atomic(op, flat, d, c, wide, site=key)
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


def _private_aperture_hi() -> int:
    return PRIVATE_APERTURE_BASE >> 32


def private_flat_addresses(b: Batch, g: Group, offset: np.ndarray) -> np.ndarray:
    """Device addresses of private (scratch) byte offsets ``offset`` (n, 64) reached through a
    FLAT address in the private aperture: the wave's FLAT_SCRATCH (the kernel prologue sets it
    to the flat scratch init SGPRs plus its wave offset, AMDGPUUsage "Flat Scratch") plus the
    per-lane swizzle of the private segment buffer (4-byte elements, 64 lanes), so FLAT and
    MUBUF scratch accesses of one private byte meet."""
    from .. import isa as eisa
    fs = O.u64_of(b.S[eisa.FLAT_SCRATCH_LO][g.sel], b.S[eisa.FLAT_SCRATCH_LO + 1][g.sel]).astype(np.int64)
    es = SWIZZLE_ELEMENT_BYTES
    lane = np.arange(WAVE, dtype=np.int64)[None, :]
    return fs[:, None] + (offset // es) * es * WAVE + lane * es + offset % es


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
    generic = ins.mnemonic.startswith("flat_")
    name = f["op"]
    sub = name.split("_", 1)[1] if name.startswith(("load", "store")) else ""
    comps = int(sub[len("dwordx"):]) if sub.startswith("dwordx") else 1
    priv_hi = _private_aperture_hi()

    def fn(b, g):
        if rs is not None:
            base = np.asarray(rs(b, g), U64)[:, None]
            addr = base + b.V[ra][g.sel].astype(U64)
        else:
            addr = O.u64_of(b.V[ra][g.sel], b.V[ra + 1][g.sel])
        if offv:
            addr = (addr.astype(np.int64) + offv).astype(U64)
        if generic:
            priv = b.em(g) & ((addr >> U64(32)) == U64(priv_hi))
            if priv.any():  # FLAT into the private aperture: scratch, swizzled per dword
                pofs = (addr & U64(0xFFFFFFFF)).astype(np.int64)
                ga = addr.astype(np.int64)
                parts = [(np.where(priv, private_flat_addresses(b, g, pofs + 4 * c), ga + 4 * c),
                          np.ones(addr.shape, bool)) for c in range(comps)]
                if comps == 1:
                    _vmem_access(b, g, p, ins, parts[0][0].astype(U64), site=False)
                else:
                    _per_dword(b, g, p, ins, parts, site=None)
                return
        _vmem_access(b, g, p, ins, addr)
    return fn


#: gfx9 buffer resource (V#) fields used by the address and range rules (Vega ISA guide,
#: "Buffer Resource Descriptor"): word1 stride [29:16], swizzle enable [31]; word2
#: num_records; word3 index stride [22:21] (8, 16, 32, 64), add TID enable [23].
#: GFX9 has no element-size field: a swizzled buffer's elements are 4 bytes (LLVM
#: SIInstrInfo::getScratchRsrcWords23, "GFX9 doesn't have ELEMENT_SIZE").
SWIZZLE_ELEMENT_BYTES = 4


def buffer_addresses(words, index, offset, soffset, lane, csize):
    """Byte addresses and range-check results of one component of a MUBUF/MTBUF access
    (Vega ISA guide, "Buffer Addressing" and "Range Checking").

    ``words``: the V#'s four dwords, each ``(n,)`` (one per wave); ``index`` / ``offset``
    ``(n, 64)`` (the VGPR index, 0 without ``idxen``; the instruction offset plus the VGPR
    offset with ``offen``, plus 4 x the component for per-dword components); ``soffset``
    ``(n,)``; ``lane`` ``(64,)``; ``csize``: the bytes the range check covers.  Returns
    ``(address (n, 64) int64, in range (n, 64) bool)``.

    * index += lane when ADD_TID_ENABLE; address = base + soffset + (swizzled: ((index /
      index_stride) x stride + offset / 4 x 4) x index_stride + (index % index_stride) x 4 +
      offset % 4; else offset + stride x index);
    * range: the private (scratch) form (ADD_TID and no ``idxen``) is not checked; a
      structured buffer (stride != 0) checks index < num_records, and offset < stride when
      swizzled; a raw one (stride 0) checks offset + csize <= num_records; ``soffset`` is
      outside every check.
    """
    w0, w1, w2, w3 = (np.asarray(w, U64)[:, None] for w in words)
    base = (w0 | ((w1 & U64(0xFFFF)) << U64(32))).astype(np.int64)
    stride = ((w1 >> U64(16)) & U64(0x3FFF)).astype(np.int64)
    swz = ((w1 >> U64(31)) & U64(1)).astype(bool)
    nrec = w2.astype(np.int64)
    istride = (U64(8) << ((w3 >> U64(21)) & U64(3))).astype(np.int64)
    tid = ((w3 >> U64(23)) & U64(1)).astype(bool)
    index = index + np.where(tid, lane[None, :], 0)
    es = SWIZZLE_ELEMENT_BYTES
    swizzled = ((index // istride) * stride + (offset // es) * es) * istride + (index % istride) * es + offset % es
    addr = base + soffset[:, None] + np.where(swz, swizzled, offset + stride * index)
    raw_ok = offset + csize <= nrec
    struct_ok = (index < nrec) & (~swz | (offset < stride))
    ok = np.where(stride == 0, raw_ok, struct_ok)
    return addr, ok


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
    sub = name.split("_", 1)[1] if name.startswith(("load", "store")) else ""
    if name.startswith(("load", "store")):
        nbytes = _SUB[sub][0] if sub in _SUB else 4 * (ins.dst[0].width if ins.dst else ins.src[-1].width)
    else:
        nbytes = 4 * f["width"]
    # dword loads and stores are range-checked (and swizzled) per dword; formats (``typed``: a
    # format access run as dwords by vmem_format.py), sub-dword accesses and atomics all or
    # nothing (Vega ISA guide, "Range Checking", notes)
    per_dword = sub.startswith("dword") and nbytes > 4 and not f.get("typed")
    comps = nbytes // 4 if per_dword else 1
    csize = 4 if per_dword else nbytes
    lane = np.arange(WAVE, dtype=np.int64)

    def fn(b, g):
        S = b.S
        words = [S[rs + i][g.sel] for i in range(4)]
        so = np.broadcast_to(rso(b, g), (g.n,)).astype(np.int64)
        vi = 0
        index = np.zeros((g.n, WAVE), np.int64)
        offset = np.full((g.n, WAVE), inst_off, np.int64)
        if idxen:
            index = index + b.V[va.reg][g.sel].astype(np.int64)
            vi = 1
        if offen:
            offset = offset + b.V[va.reg + vi][g.sel].astype(np.int64)
        private = ((words[3] >> U32(23)) & U32(1)).astype(bool) & (not idxen)
        parts = [buffer_addresses(words, index, offset + 4 * c, so, lane, csize) for c in range(comps)]
        for _, ok in parts:
            ok |= private[:, None]
        em = b.em(g)
        bad = np.zeros_like(em)
        for _, ok in parts:
            bad |= em & ~ok
        if bad.any():
            wi, ln = np.nonzero(bad)
            w = int(wi[0])
            e = BufferOutOfRange(
                f"lane {int(ln[0])}: offset {int(offset[w, ln[0]])}, index {int(index[w, ln[0]])} is outside "
                f"the buffer resource (num_records {int(words[2][w])}, stride "
                f"{int((words[1][w] >> U32(16)) & U32(0x3FFF))}); lanes {sorted(set(ln[:16].tolist()))}: "
                f"{'loads 0' if name.startswith('load') else 'dropped'} on the hardware")
            finding(b, "buffer_range", b.fault(e, g, p, w))
        contiguous = comps == 1 or not (((words[1] >> U32(31)) & U32(1)).any() or
                                        any((ok != parts[0][1]).any() for _, ok in parts[1:]))
        if contiguous:
            addr, ok = parts[0]
            _vmem_access(b, g, p, ins, addr.astype(U64), None if ok.all() else ok)
        else:
            _per_dword(b, g, p, ins, parts, _site(b, ins))
    return fn


def _per_dword(b: Batch, g: Group, p: Prepared, ins: Instr, parts, site):
    """A dword load/store whose components are not contiguous (a swizzled buffer, scratch) or
    not all in range alike: one dword per component, each with its own address and range."""
    em = b.em(g)
    load = ins.f["op"].startswith("load")
    reg = ins.dst[0].reg if load else (ins.src[1] if ins.encoding == "FLAT" else ins.src[-1]).reg
    if b.rec is not None:
        b.rec.memory(g, parts[0][0].astype(U64), em & parts[0][1], 4 * len(parts))
    for c, (addr, ok) in enumerate(parts):
        act = em & ok
        flat = addr[act].astype(U64)
        try:
            if load:
                data = b.mem.load(flat, 4, ins.mnemonic, site) if flat.size else np.zeros((0, 1), U32)
                cur = b.V[reg + c][g.sel]
                if not g.contig:
                    cur = cur.copy()
                cur[em & ~ok] = 0
                cur[act] = data[:, 0]
                if not g.contig:
                    b.V[reg + c][g.sel] = cur
                b.st.global_bytes_read += 4 * flat.size
            elif flat.size:
                b.mem.store(flat, b.V[reg + c][g.sel][act], ins.mnemonic, site)
                b.st.global_bytes_written += 4 * flat.size
        except OutOfBoundsAccess as e:
            wi, ln = np.nonzero(act)
            raise _oob(b, g, e, g.idx[wi], ln, flat)
    _issue(g, p, "vm")


#: the FLAT/GLOBAL and MUBUF loads, stores and atomics; the D16 forms are :mod:`.vmem_d16`'s, the
#: format forms :mod:`.vmem_format`'s, the L1 invalidations :mod:`.salu_extra`'s
BASE_BUILDERS = {**{mn: build_flat for mn in table_mnemonics("FLAT", "GLOBAL", but=lambda mn: "_d16" in mn)},
                 **{mn: build_mubuf for mn in table_mnemonics(
                     "MUBUF", but=lambda mn: any(w in mn for w in ("_d16", "format", "wbinvl1")))}}
