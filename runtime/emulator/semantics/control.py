"""Program control: SOPP (branches, ``s_endpgm``, ``s_barrier``, ``s_waitcnt``, messages;
Vega ISA guide 12.5) and the per-wave jump that splits a group of waves when a
branch goes both ways.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import isa
from ..decode import Instr
from ..state import _BARRIER, _END, _SPLIT
from ._util import table_mnemonics

if TYPE_CHECKING:  # the core's wave state, for annotations only (no import of the core)
    from ..core import Batch, Group, Prepared


def _jump(b: Batch, g: Group, tgt: np.ndarray):
    """Per-wave jump targets (byte offsets in the code image)."""
    t0 = int(tgt[0])
    if (tgt == t0).all():
        return t0
    children = []
    for t in np.unique(tgt):
        children.append(g.child(g.idx[tgt == t], int(t)))
    b.split = children
    return _SPLIT


# -- SOPP ---------------------------------------------------------------------------

def build_sopp(ins: Instr, b: Batch, p: Prepared):
    mn = ins.mnemonic
    if mn in ("s_nop", "s_setprio", "s_sleep", "s_icache_inv", "s_incperflevel", "s_decperflevel",
              "s_ttracedata", "s_setkill", "s_set_gpr_idx_off", "s_set_gpr_idx_mode",
              "s_cbranch_cdbgsys", "s_cbranch_cdbguser", "s_cbranch_cdbgsys_or_user",
              "s_cbranch_cdbgsys_and_user", "s_wakeup"):
        return lambda b, g: None
    if mn in ("s_endpgm", "s_endpgm_saved"):
        def fn(b, g):
            b.ended[g.sel] = True
            return _END
        return fn
    if mn == "s_barrier":
        def fn(b, g):
            b.at_barrier[g.sel] = True
            b.st.barriers += g.n
            return _BARRIER
        return fn
    if mn == "s_waitcnt":
        vm, lgkm = ins.f["vmcnt"], ins.f["lgkmcnt"]

        def fn(b, g):
            if not g.pending:
                return None
            drop = []
            for k, (kind, seq) in g.pending.items():
                if kind == "vm":
                    if g.vm_n - seq >= vm:
                        drop.append(k)
                elif kind == "lds":
                    if g.lds_n - seq >= lgkm or lgkm == 0:
                        drop.append(k)
                elif lgkm == 0:
                    drop.append(k)
            for k in drop:
                del g.pending[k]
            return None
        return fn
    if mn == "s_branch":
        tgt = ins.f["target"]
        return lambda b, g: tgt
    if mn.startswith("s_cbranch_"):
        tgt = ins.f["target"]
        nxt = ins.pc + 4
        kind = mn[len("s_cbranch_"):]
        if kind in ("scc0", "scc1"):
            want = kind == "scc1"
            cond = lambda b, g: b.SCC[g.sel] == want  # noqa: E731  (SCC read: isa.SCC_READERS)
        elif kind in ("vccz", "vccnz"):
            z = kind == "vccz"
            cond = lambda b, g: ((b.S[isa.VCC_LO][g.sel] | b.S[isa.VCC_HI][g.sel]) == 0) == z  # noqa: E731
            p.rkeys = frozenset({isa.VCC_LO, isa.VCC_HI})
        elif kind in ("execz", "execnz"):
            z = kind == "execz"
            cond = lambda b, g: (~b.em(g).any(axis=1)) == z  # noqa: E731
        else:
            return None
        p.keys = p.rkeys

        def fn(b, g):
            c = cond(b, g)
            if c.all():
                return tgt
            if not c.any():
                return nxt
            b.split = [g.child(g.idx[c], tgt), g.child(g.idx[~c], nxt)]
            return _SPLIT
        return fn
    if mn in ("s_sendmsg", "s_sendmsghalt", "s_trap", "s_sethalt"):
        return None
    return None


#: every SOPP mnemonic but ``s_endpgm_ordered_ps_done`` (:mod:`.salu_extra`'s)
BASE_BUILDERS = {mn: build_sopp for mn in table_mnemonics("SOPP", but=lambda mn: mn == "s_endpgm_ordered_ps_done")}
