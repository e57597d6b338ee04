"""What the emulator's instruction semantics share with its core, apart from the core's
scheduling and checking machinery: the wavefront size and target, the dtype aliases, the
aperture bases, the control codes a semantic function returns, the operand readers and
writers (a :class:`~.decode.Operand` -> a function of the wave state ``(b, g)``), and the LDS
bank model.

:mod:`.core` imports this module and the :mod:`.semantics` modules do; the semantics never
import the core (its ``Batch``, ``Group`` and ``Prepared`` only as type annotations), so
the core can look the semantics up without an import cycle.
"""

from __future__ import annotations

import numpy as np

from vlpc.targets import GFX906

from . import isa
from . import ops as O
from .decode import Operand

U32, U64, I32, I64, F32, F64 = O.U32, O.U64, O.I32, O.I64, O.F32, O.F64

#: Aperture bases reported by ``src_shared_base``/``src_private_base`` (hidden kernargs too).
SHARED_APERTURE_BASE = 0x1000_0000_0000_0000
PRIVATE_APERTURE_BASE = 0x2000_0000_0000_0000

WAVE = GFX906.wavefront_size
TARGET = GFX906

#: Control codes of a semantic function's result: the wave ended, waits at a barrier, or the
#: group splits on a divergent branch.
_END, _BARRIER, _SPLIT = -1, -2, -3


class _Unsupported(Exception):
    pass


# -- operand readers -------------------------------------------------------------

def _mods(f, op: Operand):
    if not (op.neg or op.abs):
        return f
    if op.width == 2:
        sign, absm = O.SIGN64, U64(0x7FFFFFFFFFFFFFFF)
    else:
        sign, absm = O.SIGN32, U32(0x7FFFFFFF)
    if op.abs and op.neg:
        return lambda b, g: (f(b, g) & absm) | sign
    if op.abs:
        return lambda b, g: f(b, g) & absm
    return lambda b, g: f(b, g) ^ sign


def vsrc_reader(op: Operand):
    """VALU source -> array broadcastable to (n, 64) (uint32 or uint64)."""
    k, r, w = op.kind, op.reg, op.width
    if k == "v":
        if w == 1:
            f = lambda b, g: b.V[r][g.sel]  # noqa: E731
        else:
            f = lambda b, g: O.u64_of(b.V[r][g.sel], b.V[r + 1][g.sel])  # noqa: E731
    elif k == "s":
        if w == 1:
            f = lambda b, g: b.S[r][g.sel][:, None]  # noqa: E731
        else:
            f = lambda b, g: O.u64_of(b.S[r][g.sel], b.S[r + 1][g.sel])[:, None]  # noqa: E731
    elif k in ("const", "lit"):
        c = np.array(op.value, U64 if w == 2 else U32)
        f = lambda b, g: c  # noqa: E731
    elif k == "scc":
        f = lambda b, g: b.SCC[g.sel].astype(U32)[:, None]  # noqa: E731
    elif k == "vccz":
        f = lambda b, g: ((b.S[isa.VCC_LO][g.sel] | b.S[isa.VCC_HI][g.sel]) == 0).astype(U32)[:, None]  # noqa: E731
    elif k == "execz":
        f = lambda b, g: ((b.S[isa.EXEC_LO][g.sel] | b.S[isa.EXEC_HI][g.sel]) == 0).astype(U32)[:, None]  # noqa: E731
    else:
        raise _Unsupported(f"operand {op.text}")
    return _mods(f, op)


def ssrc_reader(op: Operand):
    """Scalar source -> per-wave array (n,) (uint32 or uint64) or 0-d constant."""
    k, r, w = op.kind, op.reg, op.width
    if k == "s":
        if w == 1:
            return lambda b, g: b.S[r][g.sel]
        return lambda b, g: O.u64_of(b.S[r][g.sel], b.S[r + 1][g.sel])
    if k in ("const", "lit"):
        c = np.array(op.value, U64 if w == 2 else U32)
        return lambda b, g: c
    if k == "scc":
        return lambda b, g: b.SCC[g.sel].astype(U32)
    if k == "vccz":
        return lambda b, g: ((b.S[isa.VCC_LO][g.sel] | b.S[isa.VCC_HI][g.sel]) == 0).astype(U32)
    if k == "execz":
        return lambda b, g: ((b.S[isa.EXEC_LO][g.sel] | b.S[isa.EXEC_HI][g.sel]) == 0).astype(U32)
    if k == "v":
        raise _Unsupported("VGPR operand in a scalar position")
    raise _Unsupported(f"operand {op.text}")


def swriter(op: Operand):
    r, w = op.reg, op.width
    touches_exec = r <= isa.EXEC_HI < r + w or r <= isa.EXEC_LO < r + w

    def write(b, g, val):
        val = np.asarray(val)
        if w == 1:
            b.S[r][g.sel] = np.broadcast_to(val.astype(U32, copy=False), (g.n,))
        else:
            v = np.broadcast_to(val.astype(U64, copy=False), (g.n,))
            lo, hi = O.split64(v)
            b.S[r][g.sel] = lo
            b.S[r + 1][g.sel] = hi
        if touches_exec:
            b.refresh_exec(g)
    return write


def vwriter(op: Operand):
    r, w = op.reg, op.width
    if w == 1:
        def write(b, g, val):
            b.vwrite(g, r, val)
    else:
        def write(b, g, val):
            lo, hi = O.split64(val)
            b.vwrite(g, r, lo)
            b.vwrite(g, r + 1, hi)
    return write


# -- LDS bank model (used by the DS semantics and the timing trace) --------------------

def lds_bank_cycles(addrs, em: np.ndarray, dwords: int, banks: int = 32) -> np.ndarray:
    """LDS cycles per wave for one DS instruction: ``addrs`` ((n, 64) byte addresses, or a
    list of them: the two address sets of ``ds_read2*``/``ds_write2*``, each an access of
    its own), ``em`` (n, 64) active lanes, ``dwords`` per lane per address set -> (n,) cycles.

    GCN's LDS has ``banks`` = 32 banks of 4 bytes, dword-interleaved, and serves 128 bytes
    per clock: a wave64 access is split into passes of 32 dwords, 32 lanes per pass for
    b32, 16 for b64, 8 for b96/b128 (AMD "Understanding AMD GPU LDS and Bank Conflicts",
    Composable Kernel docs: ``ds_write_b128`` in 8 phases of 8 lanes; AMD APP programming
    guide: b32 conflicts are checked per half wave).  A pass costs the largest number of
    distinct dwords any one bank serves in it (lanes reading the same dword share it: a
    broadcast), at least 1 when a lane is active; the passes and the address sets add.
    So a conflict-free access of W dwords per lane costs 2W cycles (64 x 4W / 128).
    """
    sets = list(addrs) if isinstance(addrs, (list, tuple)) else [addrs]
    em = np.asarray(em, bool)
    w = max(1, int(dwords))
    lanes = 32 >> (w - 1).bit_length()          # lanes per pass: 32, 16, 8 (b32, b64, b96/b128)
    total = None
    for a in sets:
        words = np.asarray(a, np.int64) >> 2
        n, nl = words.shape
        x = words[:, :, None] + np.arange(w)     # (n, lanes, w) dwords each lane touches
        x = np.where(em[:, :, None], x, -1).reshape(n, nl // lanes, lanes * w)
        x = np.sort(x, axis=-1)
        distinct = np.ones(x.shape, bool)
        distinct[..., 1:] = x[..., 1:] != x[..., :-1]
        distinct &= x >= 0
        bank = np.where(distinct, x % banks, banks)  # `banks`: a bin for inactive/duplicates
        per_bank = (bank[..., None] == np.arange(banks)).sum(axis=-2)   # (n, passes, banks)
        cyc = per_bank.max(axis=-1).sum(axis=-1)
        total = cyc if total is None else total + cyc
    return total.astype(np.int64)
