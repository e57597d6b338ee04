"""Scalar ALU instructions beyond the core's (Vega ISA guide 12.2-12.3, SOP1/SOP2):

``s_brev_b64``, ``s_bitset0/1_b32/b64`` (D.u[S0[4:0] or [5:0]] = 0/1, other bits of
D kept), ``s_ff0_i32_b64`` (first 0 bit from the LSB, -1 if none),
``s_flbit_i32_b64`` (leading zeros from the MSB, -1 for 0), ``s_flbit_i32`` /
``s_flbit_i32_i64`` (leading bits equal to the sign bit, -1 for 0 and -1),
``s_quadmask_b32/b64`` (bit i = OR of S0 bits 4i..4i+3; SCC = D != 0),
``s_wqm_b32/b64`` (each nibble with a bit set becomes 0xf; SCC = D != 0),
``s_bitreplicate_b64_b32`` (bit i of S0 to bits 2i and 2i+1), ``s_andn1_wrexec_b64``
(EXEC = ~EXEC & S0) and ``s_andn2_wrexec_b64`` (EXEC = S0 & ~EXEC): D = the new EXEC,
SCC = EXEC != 0; ``s_movrels_b32/b64`` (D = SGPR[S0 + M0]), ``s_movreld_b32/b64``
(SGPR[D + M0] = S0), ``s_bfm_b64`` (((1 << S0[5:0]) - 1) << S1[5:0]); ``s_sendmsg``
(no message model: a no-op that counts on lgkmcnt like the hardware's).
Per-wave Python integers (scalar instructions, one value per wave).
"""

from __future__ import annotations

import numpy as np

from .. import isa
from ._util import U32, U64
from . import control as _control
from . import memory as _memory
from .. import state

M32, M64 = (1 << 32) - 1, (1 << 64) - 1


def _per_wave(fn, nbits_out, scc=None, reads_dst=False):
    """Builder for D = fn(S0 [, S1] [, old D]) on Python ints, one per wave."""
    def build(ins, b, p):
        rd = [state.ssrc_reader(o) for o in ins.src]
        d = ins.dst[0]
        old = state.ssrc_reader(d) if reads_dst else None
        wr = state.swriter(d)

        def run(b, g):
            srcs = [np.broadcast_to(r(b, g), (g.n,)) for r in rd]
            olds = np.broadcast_to(old(b, g), (g.n,)) if old is not None else None
            out = []
            for w in range(g.n):
                args = [int(s[w]) for s in srcs]
                if olds is not None:
                    args.append(int(olds[w]))
                out.append(fn(*args))
            res = np.array(out, U64 if nbits_out == 64 else U32)
            wr(b, g, res)
            if scc is not None:
                b.SCC[g.sel] = res != 0
        return run
    return build


def _writes(p, *keys):
    """Registers the instruction writes beyond its decoded destinations (EXEC; SCC is
    :data:`..isa.SCC_WRITERS`, added by the core)."""
    p.wkeys = p.wkeys | set(keys)
    p.keys = p.rkeys | p.wkeys


def _brev64(x):
    return int(f"{x:064b}"[::-1], 2)


def _ff0_64(x):
    for i in range(64):
        if not (x >> i) & 1:
            return i
    return M32


def _flbit64(x):
    return M32 if x == 0 else 64 - x.bit_length()


def _flbit_signed(x, bits):
    """Leading bits equal to the sign bit; -1 when every bit is (0 or -1)."""
    if x >> (bits - 1):
        x = ~x & ((1 << bits) - 1)
    return M32 if x == 0 else bits - x.bit_length()


def _quadmask(x, n):
    return sum(1 << i for i in range(n) if (x >> (4 * i)) & 0xF)


def _wqm(x, bits):
    return sum(0xF << (4 * i) for i in range(bits // 4) if (x >> (4 * i)) & 0xF)


def _bitrep(x):
    out = 0
    for i in range(32):
        if (x >> i) & 1:
            out |= 3 << (2 * i)
    return out


def _wrexec(n1: bool):
    def build(ins, b, p):
        from .. import ops as O
        rd = state.ssrc_reader(ins.src[0])
        wr = state.swriter(ins.dst[0])
        _writes(p, isa.EXEC_LO, isa.EXEC_HI)  # SCC: isa.SCC_WRITERS
        p.rkeys = p.rkeys | {isa.EXEC_LO, isa.EXEC_HI}
        p.keys = p.rkeys | p.wkeys

        def run(b, g):
            s0 = np.broadcast_to(np.asarray(rd(b, g), U64), (g.n,))
            ex = O.u64_of(b.S[isa.EXEC_LO][g.sel], b.S[isa.EXEC_HI][g.sel])
            new = (~ex & s0) if n1 else (s0 & ~ex)
            b.write_exec(g, new)
            wr(b, g, new)
            b.SCC[g.sel] = new != 0
        return run
    return build


def _movrel(kind, wide):
    def build(ins, b, p):
        from ..errors import RegisterRangeError
        if kind == "s":  # s_movrels: D = SGPR[S0 + M0]
            base, d = ins.src[0], ins.dst[0].reg
        else:            # s_movreld: SGPR[D + M0] = S0
            base, d = ins.dst[0], None
            rs = state.ssrc_reader(ins.src[0])
        # the register read (movrels) or written (movreld) is SGPR[base + M0], known at run time
        if kind == "s":
            p.rkeys = (p.rkeys - set(range(base.reg, base.reg + wide))) | {isa.M0}
        else:
            p.wkeys = p.wkeys - set(range(base.reg, base.reg + wide))
            p.rkeys = p.rkeys | {isa.M0}
        p.keys = p.rkeys | p.wkeys

        def run(b, g):
            m0 = b.S[isa.M0][g.sel].astype(np.int64)
            idx = base.reg + m0
            if ((idx < 0) | (idx + wide > b.cfg.sgpr_count)).any():
                raise RegisterRangeError(f"{ins.mnemonic}: SGPR index {int(idx.max())} (+M0) is beyond the "
                                         f"{b.cfg.sgpr_count} SGPRs", register=f"s{int(idx.max())}")
            cols = g.idx if not g.contig else np.arange(g.sel.start, g.sel.stop)
            if kind == "s":
                for i in range(wide):
                    b.S[d + i][g.sel] = b.S[idx + i, cols]
            else:
                v = np.broadcast_to(np.asarray(rs(b, g), U64 if wide == 2 else U32), (g.n,))
                if wide == 2:
                    b.S[idx, cols] = (v & U64(M32)).astype(U32)
                    b.S[idx + 1, cols] = (v >> U64(32)).astype(U32)
                    b.SI[idx + 1, cols] = True
                else:
                    b.S[idx, cols] = v
                b.SI[idx, cols] = True
        return run
    return build


def _nop(ins, b, p):
    return lambda b, g: None


def _trap(ins, b, p):
    """s_trap: the wave enters the trap handler; ROCm reports a queue error (HIP's abort()
    and failed device asserts compile to ``s_trap 2``): here an EmulatorFault."""
    from ..errors import EmulatorFault
    code = ins.f["simm16"] & 0xFF

    def run(b, g):
        raise EmulatorFault(f"the kernel executed s_trap {code} (abort() or a failed assert in device code)")
    return run


def _endpgm(ins, b, p):
    """s_endpgm_ordered_ps_done: ends the wave like s_endpgm (the pixel-shader ordering
    signal has no compute meaning)."""
    import dataclasses

    return _control.build_sopp(dataclasses.replace(ins, mnemonic="s_endpgm"), b, p)


def _vmem_nop(ins, b, p):
    """buffer_wbinvl1(_vol): invalidate the vector L1 cache (no cache model: counts on vmcnt)."""

    def run(b, g):
        _memory._issue(g, p, "vm")
    return run


BUILDERS = {
    "s_brev_b64": _per_wave(_brev64, 64),
    "s_bitset0_b32": _per_wave(lambda s, d: d & ~(1 << (s & 31)) & M32, 32, reads_dst=True),
    "s_bitset1_b32": _per_wave(lambda s, d: d | (1 << (s & 31)), 32, reads_dst=True),
    "s_bitset0_b64": _per_wave(lambda s, d: d & ~(1 << (s & 63)) & M64, 64, reads_dst=True),
    "s_bitset1_b64": _per_wave(lambda s, d: d | (1 << (s & 63)), 64, reads_dst=True),
    "s_ff0_i32_b64": _per_wave(_ff0_64, 32),
    "s_flbit_i32_b64": _per_wave(_flbit64, 32),
    "s_flbit_i32": _per_wave(lambda x: _flbit_signed(x, 32), 32),
    "s_flbit_i32_i64": _per_wave(lambda x: _flbit_signed(x, 64), 32),
    "s_quadmask_b32": _per_wave(lambda x: _quadmask(x, 8), 32, scc=True),
    "s_quadmask_b64": _per_wave(lambda x: _quadmask(x, 16), 64, scc=True),
    "s_wqm_b32": _per_wave(lambda x: _wqm(x, 32), 32, scc=True),
    "s_wqm_b64": _per_wave(lambda x: _wqm(x, 64), 64, scc=True),
    "s_bitreplicate_b64_b32": _per_wave(_bitrep, 64),
    "s_bfm_b64": _per_wave(lambda a, c: (((1 << (a & 63)) - 1) << (c & 63)) & M64, 64),
    "s_andn1_wrexec_b64": _wrexec(True),
    "s_andn2_wrexec_b64": _wrexec(False),
    "s_movrels_b32": _movrel("s", 1), "s_movrels_b64": _movrel("s", 2),
    "s_movreld_b32": _movrel("d", 1), "s_movreld_b64": _movrel("d", 2),
    "s_sendmsg": _nop,
    "s_trap": _trap,
    "s_endpgm_ordered_ps_done": lambda ins, b, p: _endpgm(ins, b, p),
    "buffer_wbinvl1": _vmem_nop, "buffer_wbinvl1_vol": _vmem_nop,
}
