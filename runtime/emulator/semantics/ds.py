"""DS (LDS) instructions beyond the core's reads, writes and 32-bit integer atomics
(Vega ISA guide chapter 10 and 12.13):

* lane shuffles that do not touch LDS memory: ``ds_bpermute_b32`` (each lane reads the
  data of lane ``(addr + offset) / 4 mod 64``; a source lane disabled in EXEC gives 0),
  ``ds_permute_b32`` (each lane writes its data to that lane; lanes nobody writes get
  0; the highest lane wins a conflict) and ``ds_swizzle_b32`` (offset bit 15 set:
  quad permute by offset[7:0]; clear: within 32 lanes, source = ((lane & and) | or) ^
  xor with the masks in offset[4:0], [9:5], [14:10]);
* atomics in lane order: 32- and 64-bit ``add sub rsub inc dec min max and or xor``
  (signed/unsigned by the suffix), ``wrxchg``, ``wrxchg2``/``wrxchg2st64`` (two
  addresses), ``cmpst`` (MEM = MEM == DATA0 ? DATA1 : MEM), ``mskor`` (MEM = (MEM &
  ~DATA0) | DATA1), f32 ``add``/``min``/``max``, with and without ``_rtn`` (returns
  the old value);
* ``ds_read_*_d16`` / ``_d16_hi`` (into the low / high half, keeping the other) and
  ``ds_write_b8_d16_hi`` / ``ds_write_b16_d16_hi`` (store the high half);
* ``ds_src2`` forms, ``ds_wrap_rtn_b32``, ``ds_append``/``ds_consume`` (counter at
  M0[15:0] + offset) and ``ds_read/write_addtid_b32`` (address M0[15:0] + offset +
  lane * 4).

Addresses are bytes in the workgroup's LDS (``addr + offset``, two offsets scaled by
the element size (x64 for ``st64``) for the ``2`` forms); an access outside the LDS
allocation is an ``"lds_range"`` finding (:mod:`.findings`: LdsOutOfRange, or reported with
the hardware's result: the write dropped, 0 read), except for ``ds_append``/``ds_consume``
and the ``src2`` forms, which always raise LdsOutOfRange.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from vlpc import isa as table

from ..errors import LdsOutOfRange
from ._util import I64, U32
from ..state import WAVE, lds_bank_cycles
from ..decode import Instr
from .findings import finding
from .memory import _issue
from . import memory as _memory
from .. import state

if TYPE_CHECKING:  # the core's wave state, for annotations only (no import of the core)
    from ..core import Batch, Prepared


def _addr(b, g, ra, off, nbytes, p=None):
    """(n, 64) LDS byte addresses (the workgroup's base added) of ``V[ra] + off`` and the
    (n, 64) mask of the active lanes that are in range (the others are an ``"lds_range"``
    finding, :func:`_out_of_range`; without ``p`` any of them raises LdsOutOfRange)."""
    a = b.V[ra][g.sel].astype(np.int64) + off
    em = b.em(g)
    ok = em
    if p is not None:
        inside = _out_of_range(b, g, p, a, nbytes, b.lds_bytes)
        ok = em if inside is None else inside
    else:
        bad = em & ((a < 0) | (a + nbytes > b.lds_bytes))
        if bad.any():
            wi, ln = np.nonzero(bad)
            e = LdsOutOfRange(f"lane {int(ln[0])} accesses LDS bytes [{int(a[wi[0], ln[0]])}, "
                              f"{int(a[wi[0], ln[0]]) + nbytes}) but the workgroup has {b.lds_bytes} bytes",
                              lds_address=int(a[wi[0], ln[0]]))
            e.wave_index = int(wi[0])
            raise e
    return a + (b.wg_of_wave[g.idx].astype(np.int64) * b.lds_words * 4)[:, None], ok


def _out_of_range(b, g, p, a, nbytes, limit):
    """None when every active lane's ``[a, a + nbytes)`` is inside the workgroup's ``limit``
    LDS bytes, else the mask of active lanes that are: the others are a ``"lds_range"``
    finding (:mod:`.findings`: LdsOutOfRange, or a warning and the hardware's result: the
    write dropped, 0 read)."""
    em = b.em(g)
    bad = em & ((a < 0) | (a + nbytes > limit))
    if not bad.any():
        return None
    wi, ln = np.nonzero(bad)
    e = LdsOutOfRange(f"lane {int(ln[0])} accesses LDS bytes [{int(a[wi[0], ln[0]])}, "
                      f"{int(a[wi[0], ln[0]]) + nbytes}) but the workgroup has {limit} bytes "
                      f"(lanes {sorted(set(ln[:16].tolist()))})", lds_address=int(a[wi[0], ln[0]]))
    finding(b, "lds_range", b.fault(e, g, p, int(wi[0])))
    return em & ~bad


def _write_lanes(b, g, reg, vals_by_lane, em):
    cur = b.V[reg][g.sel]
    if not g.contig:
        cur = cur.copy()
    cur[em] = vals_by_lane
    if not g.contig:
        b.V[reg][g.sel] = cur


# -- lane shuffles ---------------------------------------------------------------------------

def _build_bpermute(ins, b, p):
    ra, rd = ins.src[0].reg, ins.src[1].reg
    d = ins.dst[0].reg
    off = ins.f["offset"]
    p.load_kind = "lds"
    fwd = ins.mnemonic == "ds_permute_b32"

    def run(b, g):
        em = b.em(g)
        lane = ((b.V[ra][g.sel].astype(np.int64) + off) >> 2) & 63
        data = b.V[rd][g.sel]
        rows = np.arange(g.n)[:, None]
        if fwd:
            out = np.zeros((g.n, state.WAVE), U32)
            for ln in range(state.WAVE):  # lane order: the highest lane wins
                m = em[:, ln]
                out[np.nonzero(m)[0], lane[m, ln]] = data[m, ln]
        else:
            out = np.where(em[rows, lane], data[rows, lane], U32(0))
        b.vwrite(g, d, out)
        _memory._issue(g, p, "lds")
    return run


def swizzle_lanes(offset: int) -> np.ndarray:
    """Source lane per lane for ds_swizzle_b32 ``offset``."""
    lane = np.arange(64)
    if offset & 0x8000:
        sel = (offset >> (2 * (lane & 3))) & 3
        return (lane & ~3) + sel
    and_m, or_m, xor_m = offset & 0x1F, (offset >> 5) & 0x1F, (offset >> 10) & 0x1F
    return (lane & 0x20) | ((((lane & 0x1F) & and_m) | or_m) ^ xor_m)


def _build_swizzle(ins, b, p):
    rd, d = ins.src[0].reg, ins.dst[0].reg
    src = swizzle_lanes(ins.f["offset"])
    p.load_kind = "lds"

    def run(b, g):
        em = b.em(g)
        data = b.V[rd][g.sel]
        b.vwrite(g, d, np.where(em[:, src], data[:, src], U32(0)))
        _memory._issue(g, p, "lds")
    return run


# -- atomics ---------------------------------------------------------------------------------

def _op(name: str):
    """(kind, width in dwords, float) from a ds_<op>[_rtn]_<type> mnemonic."""
    body = name[3:].replace("_rtn", "")
    op, ty = body.rsplit("_", 1)
    wide = 2 if ty.endswith("64") else 1
    return op, ty, wide


def _rmw(op, ty, old, d0, d1):
    """New memory value (python ints) for one lane."""
    bits = 64 if ty.endswith("64") else 32
    m = (1 << bits) - 1

    def sgn(x):
        return x - (1 << bits) if x >> (bits - 1) else x
    if ty in ("f32", "f64"):
        ut, ft = (np.uint32, np.float32) if ty == "f32" else (np.uint64, np.float64)
        fo = np.array(old, ut).view(ft)
        fd = np.array(d0, ut).view(ft)
        if op == "cmpst":  # float compare: MEM = (MEM == DATA0) ? DATA1 : MEM
            return d1 if fo == fd else old
        with np.errstate(all="ignore"):
            r = {"add": fo + fd, "min": np.fmin(fo, fd), "max": np.fmax(fo, fd)}[op]
        return int(np.array(r, ft).view(ut))
    if op == "wrap":  # DS_WRAP_RTN_B32: MEM = (MEM >= DATA0) ? MEM - DATA0 : MEM + DATA1
        return (old - d0) & m if old >= d0 else (old + d1) & m
    if op == "add":
        return (old + d0) & m
    if op == "sub":
        return (old - d0) & m
    if op == "rsub":
        return (d0 - old) & m
    if op == "inc":
        return 0 if old >= d0 else old + 1
    if op == "dec":
        return d0 if old == 0 or old > d0 else old - 1
    if op in ("min", "max"):
        pick = min if op == "min" else max
        if ty[0] == "i":
            return pick(sgn(old), sgn(d0)) & m
        return pick(old, d0)
    if op == "and":
        return old & d0
    if op == "or":
        return old | d0
    if op == "xor":
        return old ^ d0
    if op in ("wrxchg", "wrxchg2", "wrxchg2st64"):
        return d0
    if op == "cmpst":
        return d1 if old == d0 else old
    if op == "mskor":
        return (old & ~d0 & m) | d1
    raise KeyError(op)


_ATOMIC_OPS = {"add", "sub", "rsub", "inc", "dec", "min", "max", "and", "or", "xor", "wrxchg",
               "wrxchg2", "wrxchg2st64", "cmpst", "mskor", "wrap"}


def _build_atomic(ins, b, p):
    mn = ins.mnemonic
    op, ty, wide = _op(mn)
    if op not in _ATOMIC_OPS or (ty in ("f32", "f64") and op not in ("add", "min", "max", "cmpst")):
        return None
    f = ins.f
    ra = ins.src[0].reg
    datas = [o.reg for o in ins.src[1:]]
    rtn = ins.dst[0] if ins.dst else None
    if rtn is not None:
        p.load_kind = "lds"
    two = op.startswith("wrxchg2")
    if two:
        unit = 4 * wide * (64 if op.endswith("st64") else 1)
        offs = [f["offset0"] * unit, f["offset1"] * unit]
    else:
        offs = [f["offset"]]

    def run(b, g):
        em = b.em(g)
        mem8 = b.LDS.reshape(-1).view(np.uint8)
        found = [_addr(b, g, ra, o, 4 * wide, p) for o in offs]
        addrs = [a[em] for a, _ in found]
        keeps = [ok[em] for _, ok in found]  # out of range: no update, 0 returned
        if any((a[k] & (4 * wide - 1 if wide == 2 else 3)).any() for a, k in zip(addrs, keeps)):
            raise LdsOutOfRange(f"{mn}: misaligned LDS atomic address")
        dv = [np.stack([b.V[r + i][g.sel][em] for i in range(wide)], axis=-1) for r in datas]

        def val(arr, k):
            x = 0
            for i in range(wide):
                x |= int(arr[k, i]) << (32 * i)
            return x
        olds = []
        for j, a in enumerate(addrs):
            out = np.zeros((a.size, wide), U32)
            for k in range(a.size):  # lane order
                if not keeps[j][k]:
                    continue
                base = int(a[k])
                old = int.from_bytes(mem8[base: base + 4 * wide].tobytes(), "little")
                if two:
                    d0 = val(dv[j], k)
                    d1 = 0
                else:
                    d0 = val(dv[0], k) if dv else 0
                    d1 = val(dv[1], k) if len(dv) > 1 else 0
                new = _rmw(op, ty, old, d0, d1)
                mem8[base: base + 4 * wide] = np.frombuffer(new.to_bytes(4 * wide, "little"), np.uint8)
                for i in range(wide):
                    out[k, i] = (old >> (32 * i)) & 0xFFFFFFFF
            olds.append(out)
            b.st.lds_bytes_read += 4 * wide * int(keeps[j].sum())
            b.st.lds_bytes_written += 4 * wide * int(keeps[j].sum())
        if rtn is not None:
            col = 0
            for out in olds:
                for i in range(wide):
                    _write_lanes(b, g, rtn.reg + col + i, out[:, i], em)
                col += wide
        _memory._issue(g, p, "lds")
    return run


# -- d16 reads and writes --------------------------------------------------------------------

def _build_d16(ins, b, p):
    mn = ins.mnemonic
    off = ins.f["offset"]
    ra = ins.src[0].reg
    hi = mn.endswith("_hi")
    if mn.startswith("ds_read"):
        nb = 1 if ("u8" in mn or "i8" in mn) else 2
        signed = "_i8" in mn or "_i16" in mn
        d = ins.dst[0].reg
        p.load_kind = "lds"

        def run_r(b, g):
            em = b.em(g)
            a, ok = _addr(b, g, ra, off, nb, p)
            keep = ok[em]
            a = np.where(keep, a[em], 0)  # out of range: reads 0
            raw = b.LDS.reshape(-1).view(np.uint8)[a[:, None] + np.arange(nb)]
            raw = np.where(keep[:, None], raw, 0).astype(np.uint8)
            v = raw[:, 0].astype(I64) if nb == 1 else raw.view("<u2")[:, 0].astype(I64)
            if signed:
                v = np.where(v >= (1 << (8 * nb - 1)), v - (1 << (8 * nb)), v)
            v &= 0xFFFF
            cur = b.V[d][g.sel][em].astype(I64)
            new = ((cur & 0xFFFF) | (v << 16)) if hi else ((cur & ~0xFFFF) | v)
            _write_lanes(b, g, d, (new & 0xFFFFFFFF).astype(U32), em)
            b.st.lds_bytes_read += nb * a.size
            _memory._issue(g, p, "lds")
        return run_r
    nb = 1 if "b8" in mn else 2
    rd = ins.src[1].reg

    def run_w(b, g):
        a, em = _addr(b, g, ra, off, nb, p)  # out of range: dropped
        a = a[em]
        v = b.V[rd][g.sel][em] >> U32(16)
        by = v.astype("<u4").view(np.uint8).reshape(-1, 4)[:, :nb]
        b.LDS.reshape(-1).view(np.uint8)[a[:, None] + np.arange(nb)] = by
        b.st.lds_bytes_written += nb * a.size
        _memory._issue(g, p, "lds")
    return run_w


def _build_src2(ins, b, p):
    """DS_<op>_SRC2_<type>: MEM[A] = MEM[A] op MEM[B] with A = ADDR and B = A + 4 *
    (offset1[7] ? {A[31], A[31:17]} : {offset1[6], offset1[6:0], offset0}) (x2 for 64-bit
    types); no data VGPR, no return."""
    mn = ins.mnemonic
    body = mn[3:].replace("_src2", "")
    op, ty = body.rsplit("_", 1)
    if op == "write":
        op = "wrxchg"
    wide = 2 if ty.endswith("64") else 1
    ra = ins.src[0].reg
    o0, o1 = ins.f["offset0"], ins.f["offset1"]

    def run(b, g):
        em = b.em(g)
        a_ = b.V[ra][g.sel].astype(np.int64)
        if o1 & 0x80:
            rel = (((a_ >> 31) & 1) << 15) | ((a_ >> 17) & 0x7FFF)
            rel = np.where(rel & 0x8000, rel - 0x10000, rel)
        else:
            v = ((o1 & 0x40) << 9) | ((o1 & 0x7F) << 8) | o0
            rel = np.full(a_.shape, v - 0x10000 if v & 0x8000 else v, np.int64)
        base = (b.wg_of_wave[g.idx].astype(np.int64) * b.lds_words * 4)[:, None]
        A_ = _addr(b, g, ra, 0, 4 * wide)[0][em]
        B_ = (a_ + rel * 4 * wide)
        bad = em & ((B_ < 0) | (B_ + 4 * wide > b.lds_bytes))
        if bad.any():
            raise LdsOutOfRange(f"{mn}: source address outside the LDS allocation")
        B_ = (B_ + base)[em]
        mem8 = b.LDS.reshape(-1).view(np.uint8)
        for k in range(A_.size):
            x, y = int(A_[k]), int(B_[k])
            old = int.from_bytes(mem8[x: x + 4 * wide].tobytes(), "little")
            src = int.from_bytes(mem8[y: y + 4 * wide].tobytes(), "little")
            new = _rmw(op, ty, old, src, 0)
            mem8[x: x + 4 * wide] = np.frombuffer(new.to_bytes(4 * wide, "little"), np.uint8)
        _memory._issue(g, p, "lds")
    return run


def _build_append(ins, b, p):
    """DS_APPEND / DS_CONSUME: the dword at LDS address M0[15:0] + offset counts up / down by
    the number of active lanes; every active lane gets the value before the update."""
    from .. import isa as eisa
    d = ins.dst[0].reg
    off = ins.f["offset"]
    sign = 1 if ins.mnemonic == "ds_append" else -1
    p.load_kind = "lds"
    p.rkeys = p.rkeys | {eisa.M0}
    p.keys = p.rkeys | p.wkeys

    def run(b, g):
        em = b.em(g)
        out = np.zeros((g.n, state.WAVE), U32)
        mem = b.LDS
        for w in range(g.n):
            wi = int(g.idx[w])
            a_ = (int(b.S[eisa.M0][wi]) & 0xFFFF) + off
            if a_ + 4 > b.lds_bytes or a_ & 3:
                raise LdsOutOfRange(f"{ins.mnemonic}: counter address {a_} outside the LDS allocation")
            row = mem[b.wg_of_wave[wi]]
            old = int(row[a_ >> 2])
            row[a_ >> 2] = (old + sign * int(em[w].sum())) & 0xFFFFFFFF
            out[w] = old
        b.vwrite(g, d, out)
        _memory._issue(g, p, "lds")
    return run


def _build_addtid(ins, b, p):
    """DS_READ_ADDTID_B32 / DS_WRITE_ADDTID_B32: LDS address M0[15:0] + offset + lane * 4."""
    from .. import isa as eisa
    off = ins.f["offset"]
    read = ins.mnemonic.startswith("ds_read")
    reg = ins.dst[0].reg if read else ins.src[0].reg
    if read:
        p.load_kind = "lds"
    p.rkeys = p.rkeys | {eisa.M0}
    p.keys = p.rkeys | p.wkeys
    lane4 = (np.arange(state.WAVE, dtype=np.int64) * 4)[None, :]

    def run(b, g):
        em = b.em(g)
        a_ = (b.S[eisa.M0][g.sel].astype(np.int64) & 0xFFFF)[:, None] + off + lane4
        if (em & (a_ & 3 != 0)).any():
            raise LdsOutOfRange(f"{ins.mnemonic}: misaligned LDS address")
        inside = _out_of_range(b, g, p, a_, 4, b.lds_bytes)
        if inside is not None:  # out of range: dropped / 0
            if read:
                _write_lanes(b, g, reg, np.zeros(int((em & ~inside).sum()), U32), em & ~inside)
            em = inside
        a_ = a_ + (b.wg_of_wave[g.idx].astype(np.int64) * b.lds_words * 4)[:, None]
        w = b.LDS.reshape(-1)
        if read:
            _write_lanes(b, g, reg, w[a_[em] >> 2], em)
            b.st.lds_bytes_read += 4 * int(em.sum())
        else:
            w[a_[em] >> 2] = b.V[reg][g.sel][em]
            b.st.lds_bytes_written += 4 * int(em.sum())
        _memory._issue(g, p, "lds")
    return run


def _names():
    out = {"ds_bpermute_b32": _build_bpermute, "ds_permute_b32": _build_bpermute,
           "ds_swizzle_b32": _build_swizzle, "ds_read_addtid_b32": _build_addtid,
           "ds_write_addtid_b32": _build_addtid}
    for mn in table.opcodes("DS").values():
        if mn in out:
            continue
        if "_d16" in mn:
            out[mn] = _build_d16
            continue
        if "_src2_" in mn:
            out[mn] = _build_src2
            continue
        if mn in ("ds_append", "ds_consume"):
            out[mn] = _build_append
            continue
        body = mn[3:].replace("_rtn", "")
        if "_" not in body:
            continue
        op, ty = body.rsplit("_", 1)
        if op in _ATOMIC_OPS and ty in ("u32", "i32", "b32", "u64", "i64", "b64", "f32", "f64"):
            if _is_base(mn):
                continue  # build_ds's 32-bit integer atomics
            out[mn] = _build_atomic
    return out


# ---- the base DS instructions ----

#: the LDS atomics :func:`build_ds` runs in their 32-bit integer forms (with and without ``_rtn``)
_BASE_ATOMIC_OPS = ("add", "sub", "rsub", "inc", "dec", "min", "max", "and", "or", "xor", "wrxchg")


def _is_base(mn: str) -> bool:
    """Whether :func:`build_ds` runs DS mnemonic ``mn``: ``ds_nop``, the reads and writes (b8 to
    b128, the sign- and zero-extending sub-dword reads, ``read2``/``write2`` and their ``st64``
    forms; not the D16, ``addtid`` and ``src2`` ones) and the 32-bit integer atomics."""
    if mn == "ds_nop":
        return True
    if mn.startswith(("ds_read", "ds_write")):
        return not any(w in mn for w in ("_d16", "addtid", "src2"))
    op, _, ty = mn[3:].replace("_rtn", "").rpartition("_")
    return op in _BASE_ATOMIC_OPS and ty in ("u32", "i32", "b32")


def build_ds(ins: Instr, b: Batch, p: Prepared):
    mn = ins.mnemonic
    f = ins.f
    if mn == "ds_nop":
        return lambda b, g: None
    ra = ins.src[0].reg
    sz = f["dwords"]
    lds_limit = b.lds_bytes
    if mn.startswith("ds_read"):
        p.load_kind = "lds"
    elif "_rtn_" in mn:
        p.load_kind = "lds"
    two = "read2" in mn or "write2" in mn
    st64 = "st64" in mn
    if two:
        unit = 4 * sz * (64 if st64 else 1)
        offs = [f["offset0"] * unit, f["offset1"] * unit]
    else:
        offs = [f["offset"]]
    sub_bytes = {"ds_read_u8": (1, False), "ds_read_i8": (1, True), "ds_read_u16": (2, False),
                 "ds_read_i16": (2, True), "ds_write_b8": (1, False), "ds_write_b16": (2, False)}.get(mn)

    nb_lane = sub_bytes[0] if sub_bytes else 4 * sz

    def lane_index(b, g, extra):
        """(n, 64) LDS byte addresses of one address set, and None or the (n, 64) mask of the
        active lanes inside the allocation (the others: a finding, see _out_of_range)."""
        a = b.V[ra][g.sel].astype(np.int64) + extra
        return a, _out_of_range(b, g, p, a, nb_lane, lds_limit)

    def wgbase(b, g):
        return (b.wg_of_wave[g.idx].astype(np.int64) * b.lds_words * 4)[:, None]

    if mn.startswith("ds_read"):
        dst = ins.dst[0].reg

        def fn(b, g):
            em = b.em(g)
            base = wgbase(b, g)
            flat8 = b.LDS.reshape(-1).view(np.uint8)
            # every address set is read before any result is written: the destination may
            # overlap the address VGPR (ds_read2st64_b32 v[15:16], v15)
            loaded = []
            for o in offs:
                a, ok = lane_index(b, g, o)
                a = a + base
                use = em if ok is None else ok
                full = ok is None and b.full(g)
                aa = a.reshape(-1) if full else a[use]
                if sub_bytes:
                    nb, signed = sub_bytes
                    raw = flat8[aa[:, None] + np.arange(nb)]
                    v = raw[:, 0].astype(np.int64) if nb == 1 else raw.view("<u2")[:, 0].astype(np.int64)
                    if signed:
                        v = np.where(v >= (1 << (8 * nb - 1)), v - (1 << (8 * nb)), v)
                    data = v.astype(U32)[:, None]
                    b.st.lds_bytes_read += nb * aa.size
                else:
                    if not (aa & 3).any():
                        data = b.LDS.reshape(-1)[(aa >> 2)[:, None] + np.arange(sz)]
                    else:
                        data = flat8[aa[:, None] + np.arange(4 * sz)].view(U32).reshape(-1, sz)
                    b.st.lds_bytes_read += 4 * sz * aa.size
                loaded.append((a, ok, use, full, data))
            col = 0
            for a, ok, use, full, data in loaded:
                for i in range(data.shape[1]):
                    if full:
                        b.V[dst + col + i][g.sel] = data[:, i].reshape(g.n, WAVE)
                    else:
                        cur = b.V[dst + col + i][g.sel]
                        if not g.contig:
                            cur = cur.copy()
                        if ok is not None:
                            cur[em & ~ok] = 0  # out of range: the hardware returns 0
                        cur[use] = data[:, i]
                        if not g.contig:
                            b.V[dst + col + i][g.sel] = cur
                col += sz
            if b.rec is not None and g.traced:
                b.rec.memory(g, a, em, 0, lds_bank_cycles([x[0] for x in loaded], em, sz))
            _issue(g, p, "lds")
        return fn
    if mn.startswith("ds_write"):
        datas = [o.reg for o in ins.src[1:]]

        def fn(b, g):
            em = b.em(g)
            base = wgbase(b, g)
            flat8 = b.LDS.reshape(-1).view(np.uint8)
            sets = []
            for o, dr in zip(offs, datas):
                a, ok = lane_index(b, g, o)
                a = a + base
                sets.append(a)
                use = em if ok is None else ok  # out of range: the hardware drops the write
                full = ok is None and b.full(g)
                aa = a.reshape(-1) if full else a[use]
                vals = np.stack([b.V[dr + i][g.sel] for i in range(sz)], axis=-1)
                vals = vals.reshape(-1, sz) if full else vals[use]
                if sub_bytes:
                    nb = sub_bytes[0]
                    flat8[aa[:, None] + np.arange(nb)] = vals[:, 0].astype("<u4").view(np.uint8).reshape(-1, 4)[:, :nb]
                    b.st.lds_bytes_written += nb * aa.size
                elif not (aa & 3).any():
                    b.LDS.reshape(-1)[(aa >> 2)[:, None] + np.arange(sz)] = vals
                    b.st.lds_bytes_written += 4 * sz * aa.size
                else:
                    flat8[aa[:, None] + np.arange(4 * sz)] = np.ascontiguousarray(vals).view(np.uint8).reshape(-1, 4 * sz)
                    b.st.lds_bytes_written += 4 * sz * aa.size
            if b.rec is not None and g.traced:
                b.rec.memory(g, a, em, 0, lds_bank_cycles(sets, em, sz))
            _issue(g, p, "lds")
        return fn
    # LDS atomics (32-bit)
    opname = mn[3:].replace("_rtn", "")
    op = opname.rsplit("_", 1)[0]
    amap = {"add": "add", "sub": "sub", "min": None, "max": None, "and": "and", "or": "or", "xor": "xor",
            "inc": "inc", "dec": "dec", "wrxchg": "swap", "rsub": "rsub"}
    if op in ("min", "max"):
        signed = opname.endswith("i32")
        kind = ("s" if signed else "u") + op
    else:
        kind = amap.get(op)
    if kind is None or sz != 1:
        return None
    dr = ins.src[1].reg
    rtn = ins.dst[0].reg if ins.dst else None

    def fn(b, g):
        em = b.em(g)
        base = wgbase(b, g)
        a, ok = lane_index(b, g, offs[0])
        a = a + base
        if ok is not None:  # out of range: no update, the returned value is 0
            em = ok
            if rtn is not None:
                cur = b.V[rtn][g.sel]
                if not g.contig:
                    cur = cur.copy()
                cur[b.em(g) & ~ok] = 0
                if not g.contig:
                    b.V[rtn][g.sel] = cur
        aa = a[em]
        if (aa & 3).any():
            raise LdsOutOfRange("misaligned LDS atomic")
        vals = b.V[dr][g.sel][em]
        mem = b.LDS.reshape(-1)
        widx = aa >> 2
        old = np.empty(widx.size, U32)
        for i in range(widx.size):  # lane order
            o = mem[widx[i]]
            old[i] = o
            if kind == "rsub":
                nv = np.array([vals[i] - o], U32)
            else:
                from ..memory import _rmw
                nv = _rmw(kind, np.array([o], U32), vals[i:i + 1], None, U32)
            mem[widx[i]] = nv[0]
        b.st.lds_bytes_read += 4 * widx.size
        b.st.lds_bytes_written += 4 * widx.size
        if rtn is not None:
            cur = b.V[rtn][g.sel]
            if not g.contig:
                cur = cur.copy()
            cur[em] = old
            if not g.contig:
                b.V[rtn][g.sel] = cur
        _issue(g, p, "lds")
    return fn


BUILDERS = _names()
BASE_BUILDERS = {mn: build_ds for mn in table.opcodes("DS").values() if _is_base(mn)}
