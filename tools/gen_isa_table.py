#!/usr/bin/env python3
"""Generate vlpc/isa/gfx906.json: every gfx906 instruction, enumerated through LLVM's disassembler.

Run once (the output is committed)::

    python tools/gen_isa_table.py [--llvm-mc llvm-mc-19] [-o vlpc/isa/gfx906.json]
    python tools/gen_isa_table.py --target gfx900     # vlpc/isa/gfx900.json: what gfx900 lacks

With ``--target gfx900`` every sample encoding of the gfx906 table (plain, ``_e64``, SDWA
and DPP forms) is disassembled again with ``-mcpu=gfx900``; a form LLVM rejects there, or
decodes as another instruction, is missing on gfx900 (see :func:`target_availability`).

For every encoding class the script builds one machine word per opcode value (with
the field layouts of :mod:`vlpc.isa.encodings`, which the emulator's decoder reads too, and
fixed, valid operand fields: VGPR sources v4/v8/v16, destination v12/s12, ...),
separates the candidates with ``s_movk_i32 s0, <index>`` markers and disassembles
them all in one ``llvm-mc --disassemble -mcpu=gfx906`` call.  An opcode that LLVM
reports as an invalid encoding is not a gfx906 instruction.  VOP1/VOP2/VOPC opcodes
are also tried in their SDWA and DPP forms, and their VOP3 (``_e64``) opcodes are
recorded.  The disassembled text gives the operand kinds and widths; the counter,
issue class and issue cycles are derived from the encoding class and the mnemonic
(rules documented in :mod:`vlpc.isa`).

Needs an LLVM with the AMDGPU target (Debian ``llvm-19``: ``llvm-mc-19``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# run it with the project's venv (vlpc installed: README set-up), never through sys.path
from vlpc.isa import SAMPLE_ADDR, SAMPLE_DATA, SAMPLE_DATA1, SAMPLE_DST  # noqa: E402
from vlpc.isa import encodings as E  # noqa: E402

# fixed operand fields of the candidate words: address v4, data v8, second data v16, result
# v12 (vlpc.isa.SAMPLE_*; a VGPR n is source code 256 + n), scalar operands s4/s8/s12/s16
A, D, D1, R = SAMPLE_ADDR, SAMPLE_DATA, SAMPLE_DATA1, SAMPLE_DST
V4, V8, V16 = 256 + A, 256 + D, 256 + D1
#: src0 codes that announce an SDWA / DPP dword after a VOP1/VOP2/VOPC word
E_SDWA, E_DPP = 249, 250


# Each builder takes (op, v): v in 0..VARIANTS-1 picks which operand fields are zero.
# LLVM's decoder matches unused fields as zero bits (e.g. vdata of a DS store), so an
# opcode is tried with each variant until one disassembles.
VARIANTS = 64


def _bit(v, i, x):
    return x if not (v >> i) & 1 else 0


def _sop2(op, v):
    return E.SOP2.encode(op=op, sdst=_bit(v, 0, 12), ssrc1=_bit(v, 1, 8), ssrc0=_bit(v, 2, 4))


def _sopk(op, v):
    return E.SOPK.encode(op=op, sdst=_bit(v, 0, 12), simm16=_bit(v, 1, 0x10))


def _sop1(op, v):
    return E.SOP1.encode(op=op, sdst=_bit(v, 0, 12), ssrc0=_bit(v, 1, 4))


def _sopc(op, v):
    return E.SOPC.encode(op=op, ssrc1=_bit(v, 0, 8), ssrc0=_bit(v, 1, 4))


def _sopp(op, v):
    return E.SOPP.encode(op=op, simm16=_bit(v, 0, 1))


def _smem(op, v):
    # sbase s[4:5], sdata s12, imm offset 0x10
    return E.SMEM.encode(op=op, imm=_bit(v, 3, 1), sdata=_bit(v, 0, 12), sbase=_bit(v, 1, 2),
                         offset=_bit(v, 2, 0x10))


def _vop2(op, v=0):
    return E.VOP2.encode(op=op, vdst=R, vsrc1=D, src0=V4)


def _vop1(op, v):
    return E.VOP1.encode(op=op, vdst=_bit(v, 0, R), src0=V4 if not (v >> 1) & 1 else 128)


def _vopc(op, v=0):
    return E.VOPC.encode(op=op, vsrc1=D, src0=V4)


def _vop3(op, v=0):
    # bit 4: src1/src2 are SGPRs (lane masks, lane selects); bit 5: src0 is an SGPR
    s1, s2 = (8, 16) if (v >> 4) & 1 else (V8, V16)
    s0 = 4 if (v >> 5) & 1 else V4
    return E.VOP3A.encode(op=op, vdst=_bit(v, 2, R), src0=_bit(v, 3, s0), src1=_bit(v, 0, s1),
                          src2=_bit(v, 1, s2))


def _vop3p(op, v=0):
    # op_sel_hi = [1,1,1] (the default LLVM does not print)
    return E.VOP3P.encode(op=op, op_sel_hi2=1, vdst=R, src0=V4, src1=V8, src2=_bit(v, 0, V16), op_sel_hi=3)


def _ds(op, v):
    return E.DS.encode(op=op, addr=_bit(v, 3, A), data0=_bit(v, 0, D), data1=_bit(v, 1, D1),
                       vdst=_bit(v, 2, R))


def _flat(seg):
    def f(op, v):
        saddr = 0x7F if not (v >> 2) & 1 else 0
        return E.FLAT.encode(op=op, seg=seg, addr=_bit(v, 3, A), data=_bit(v, 0, D), saddr=saddr,
                             vdst=_bit(v, 1, R))
    return f


def _mubuf(op, v):
    # offen, vaddr v4, vdata v12, srsrc s[8:11], soffset s16
    return E.MUBUF.encode(op=op, offen=_bit(v, 1, 1), vaddr=A, vdata=_bit(v, 0, R), srsrc=2, soffset=16)


def _mtbuf(op, v):
    # dfmt 4 (32), nfmt 4 (uint)
    return E.MTBUF.encode(op=op, nfmt=4, dfmt=4, offen=1, vaddr=A, vdata=R, srsrc=2, soffset=16)


def _mimg(op, v):
    # dmask 1, vaddr v4, vdata v12, srsrc s[8:15], ssamp s[16:19]
    dmask = 3 if (v >> 2) & 1 else 1
    return E.MIMG.encode(op=op, dmask=_bit(v, 0, dmask), vaddr=A, vdata=R, srsrc=2, ssamp=_bit(v, 1, 4))


def _vintrp(op, v):
    return E.VINTRP.encode(vdst=R, op=op, vsrc=_bit(v, 0, A))


def _exp(op, v):
    return E.EXP.encode(en=0xF, tgt=op)


#: class -> (opcode range, word builder)
CLASSES = {
    "SOP2": (range(0, 0x60), _sop2),
    "SOPK": (range(0, 0x1D), _sopk),
    "SOP1": (range(0, 0x100), _sop1),
    "SOPC": (range(0, 0x80), _sopc),
    "SOPP": (range(0, 0x80), _sopp),
    "SMEM": (range(0, 0x100), _smem),
    "VOP2": (range(0, 0x3E), _vop2),
    "VOP1": (range(0, 0x100), _vop1),
    "VOPC": (range(0, 0x100), _vopc),
    "VOP3": (range(0, 0x380), _vop3),
    "VOP3P": (range(0, 0x80), _vop3p),
    "DS": (range(0, 0x100), _ds),
    "FLAT": (range(0, 0x80), _flat(0)),
    "SCRATCH": (range(0, 0x80), _flat(1)),
    "GLOBAL": (range(0, 0x80), _flat(2)),
    "MUBUF": (range(0, 0x80), _mubuf),
    "MTBUF": (range(0, 0x10), _mtbuf),
    "MIMG": (range(0, 0x80), _mimg),
    "VINTRP": (range(0, 4), _vintrp),
    "EXP": (range(0, 1), _exp),
}


_VOP = {"VOP2": E.VOP2, "VOP1": E.VOP1, "VOPC": E.VOPC}


def _sdwa(enc):
    def f(op):
        # src0 v4 (in the SDWA dword), dst_sel/src0_sel/src1_sel = DWORD
        if enc == "VOP2":
            return [*E.VOP2.encode(op=op, vdst=R, vsrc1=D, src0=E_SDWA),
                    *E.SDWA.encode(src0=A, dst_sel=6, src0_sel=6, src1_sel=6)]
        if enc == "VOP1":  # no src1 fields
            return [*E.VOP1.encode(op=op, vdst=R, src0=E_SDWA), *E.SDWA.encode(src0=A, dst_sel=6, src0_sel=6)]
        return [*E.VOPC.encode(op=op, vsrc1=D, src0=E_SDWA), *E.SDWAB.encode(src0=A, src0_sel=6, src1_sel=6)]
    return f


def _dpp(enc):
    def f(op):
        # quad_perm:[0,1,2,3], masks 0xf
        dp = E.DPP.encode(src0=A, dpp_ctrl=0xE4, bank_mask=0xF, row_mask=0xF)
        fields = {"op": op, "src0": E_DPP, **({"vsrc1": D} if enc != "VOP1" else {}),
                  **({"vdst": R} if enc != "VOPC" else {})}
        return [*_VOP[enc].encode(**fields), *dp]
    return f


def disassemble_variants(mc: str, ops: list[int], fn, words_out: list | None = None) -> list[str | None]:
    """Disassemble opcode ``op`` with the first operand-field variant LLVM accepts.

    ``words_out`` (if given) receives the accepted machine words (or None) per opcode.
    """
    out: list[str | None] = [None] * len(ops)
    words: list = [None] * len(ops)
    todo = list(range(len(ops)))
    for v in range(VARIANTS):
        if not todo:
            break
        cand = {i: fn(ops[i], v) for i in todo}
        texts = disassemble(mc, [cand[i] for i in todo])
        todo = [i for i, t in zip(todo, texts)
                if not _acceptable(t) or not _set(out, i, t) or not _set(words, i, cand[i])]
    if words_out is not None:
        words_out[:] = words
    return out


def _hex(words) -> str:
    """Machine words (+ the FILLER dword a literal-taking form reads) as little-endian hex."""
    return b"".join(w.to_bytes(4, "little") for w in [*words, FILLER]).hex()


def _acceptable(t: str | None) -> bool:
    """LLVM decoded it, with no operand it marks invalid (and the assembler accepts it back)."""
    if t is None or "nvalid" in t:
        return False
    if t.startswith("image_atomic_cmpswap") and "dmask:0x3" not in t:
        return False  # the assembler wants dmask 0x3 for the (data, compare) pair
    return True


def _set(out, i, t):
    out[i] = t
    return True


#: A dword after each candidate, eaten as the literal of instructions that take one
#: (v_madmk_f32: 0x3c00 is also a valid f16 literal, 1.0); otherwise it disassembles
#: as a harmless second instruction that is ignored.
FILLER = 0x00003C00


def disassemble(mc: str, words_list: list[list[int]], mcpu: str = "gfx906") -> list[str | None]:
    """Disassemble each candidate (a list of dwords) for ``mcpu``; None where LLVM rejects the encoding."""
    lines = []
    for i, words in enumerate(words_list):
        marker, = E.SOPK.encode(op=0, sdst=0, simm16=i & 0xFFFF)  # s_movk_i32 s0, i
        lines.append(" ".join(f"0x{b:02x}" for b in marker.to_bytes(4, "little")))
        lines.append(" ".join(f"0x{b:02x}" for w in [*words, FILLER] for b in w.to_bytes(4, "little")))
    # The input goes through a pipe (no temporary file to leak or share), and llvm-mc's
    # answer is checked whole: a run that did not finish (killed, out of memory or processes
    # under load) or lost its output is an error, never a table with everything "missing".
    r = subprocess.run([mc, "--disassemble", "-arch=amdgcn", f"-mcpu={mcpu}"], input="\n".join(lines) + "\n",
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{mc} --disassemble -mcpu={mcpu} exited with {r.returncode}: "
                           f"{(r.stderr.strip().splitlines() or ['no message'])[-1]}")
    bad = set()
    for m in re.finditer(r":(\d+):\d+: warning: invalid instruction encoding", r.stderr):
        bad.add(int(m.group(1)))
    out: list[str | None] = [None] * len(words_list)
    cur, nxt = None, 0
    for line in r.stdout.splitlines():
        t = line.strip()
        if not t or t.startswith("."):
            continue
        m = re.fullmatch(r"s_movk_i32 s0, (0x[0-9a-f]+|\d+)", t)
        if m and int(m.group(1), 0) == (nxt & 0xFFFF):
            cur, nxt = nxt, nxt + 1
            continue
        if cur is not None and out[cur] is None:
            out[cur] = t
    if nxt != len(words_list):
        raise RuntimeError(f"{mc} --disassemble -mcpu={mcpu} printed {nxt} of the {len(words_list)} "
                           "candidates' markers: its output is incomplete")
    for i in range(len(out)):
        if (2 * i + 2) in bad:
            out[i] = None
    return out


_SUFFIXES = ("_e32", "_e64", "_sdwa", "_dpp")


def base_mnemonic(text: str) -> str:
    mn = text.split()[0]
    for s in _SUFFIXES:
        if mn.endswith(s):
            return mn[: -len(s)]
    return mn


_PAIRS = {"vcc", "exec", "flat_scratch", "xnack_mask"}
_SINGLE = {"vcc_lo", "vcc_hi", "exec_lo", "exec_hi", "m0", "flat_scratch_lo", "flat_scratch_hi",
           "xnack_mask_lo", "xnack_mask_hi", "scc"}


def operand_kind(tok: str) -> tuple[str, int]:
    t = tok.strip().strip("-|")
    if t.startswith("neg(") or t.startswith("abs("):
        t = t[4:-1]
    m = re.fullmatch(r"([vs]|ttmp)\[(\d+):(\d+)\]", t)
    if m:
        return ("v" if m.group(1) == "v" else "s", int(m.group(3)) - int(m.group(2)) + 1)
    if re.fullmatch(r"v\d+", t):
        return ("v", 1)
    if re.fullmatch(r"(s|ttmp)\d+", t) or t in _SINGLE:
        return ("s", 1)
    if t in _PAIRS:
        return ("s", 2)
    if t == "off":
        return ("off", 0)
    return ("imm", 0)


def operands(text: str) -> list[list]:
    rest = text.split(None, 1)[1] if " " in text else ""
    if not rest:
        return []
    toks = rest.split(", ")
    last = toks[-1].split(" ")
    toks[-1] = last[0]
    return [list(operand_kind(t)) for t in toks]


# ---------------------------------------------------------------------------
# derived properties (the rules are documented in vlpc/isa/__init__.py)

# Issue cycles of one wave64 VALU instruction on gfx906 (a SIMD16 takes 4 cycles at full
# rate).  Sources, in order of precedence: measured MI50 rates (carlushuang/gcnasm
# measure_ips_bench: v_mul_lo_u32, v_mul_hi_u32 and v_swap_b32 at 3.2e12 lane-instructions/s
# against 6.2e12 for full-rate instructions, so 8 cycles; v_sin_f32, v_cos_f16 and v_sqrt_f32
# at 1.6e12, so 16), then LLVM SISchedule.td (WriteTrans32 and WriteQuarterRate32 quarter
# rate; WriteIntMul quarter rate for the 64-bit v_mad_*64_*32; Write64Bit half rate for
# 64-bit integer shifts and compares) and AMDGPU.td (gfx906: FeatureHalfRate64Ops, f64 at
# half rate).  The f64 rate of other targets: F64_RATE_DIVISOR.
_TRANS = ("v_exp_", "v_log_", "v_rcp_", "v_rsq_", "v_sqrt_", "v_sin_", "v_cos_")
_HALF = {"v_mul_lo_u32", "v_mul_hi_u32", "v_mul_hi_i32", "v_swap_b32"}
_QUARTER_INT = {"v_mad_u64_u32", "v_mad_i64_i32"}
#: f64 VALU throughput as a fraction of f32's, per target: gfx906 1/2 (LLVM AMDGPU.td
#: FeatureHalfRate64Ops; MI50 6.6 TFLOP/s f64 vs 13.3 f32, AMD spec sheet), gfx900 1/16
#: (no HalfRate64Ops; MI25 768 GFLOP/s f64 vs 12.3 TFLOP/s f32, AMD spec sheet).
F64_RATE_DIVISOR = {"gfx906": 2, "gfx900": 16}


def counters(enc: str, mn: str) -> tuple[list[str], bool]:
    if enc == "SMEM":
        return ["lgkmcnt"], False
    if enc == "DS":
        if mn in ("ds_nop",):
            return [], True
        return ["lgkmcnt"], True
    if enc == "FLAT":
        return ["vmcnt", "lgkmcnt"], False
    if enc in ("GLOBAL", "SCRATCH", "MUBUF", "MTBUF", "MIMG"):
        return ["vmcnt"], True
    if enc == "EXP":
        return ["expcnt"], True
    if mn in ("s_sendmsg", "s_sendmsghalt"):
        return ["lgkmcnt"], True
    return [], True


def issue(enc: str, mn: str) -> tuple[str, int]:
    if enc in ("VOP1", "VOP2", "VOPC", "VOP3a", "VOP3b", "VOP3P", "VINTRP"):
        if mn == "v_nop":
            return "nop", 4
        if mn.startswith(_TRANS):
            return "valu", 16
        if mn in _QUARTER_INT:
            return "valu", 16
        if mn in _HALF:
            return "valu", 8
        if "_f64" in mn or mn.endswith(("_b64", "_i64", "_u64")):
            return "valu", 8
        return "valu", 4
    if enc == "SMEM":
        return "smem", 1
    if enc in ("FLAT", "GLOBAL", "SCRATCH", "MUBUF", "MTBUF", "MIMG"):
        return "vmem", 1
    if enc == "DS":
        return "lds", 1
    if enc == "EXP":
        return "export", 1
    if enc == "SOPP":
        if mn == "s_waitcnt":
            return "waitcnt", 1
        if mn in ("s_nop", "s_sleep", "s_setprio"):
            return "nop", 1
        if mn == "s_barrier":
            return "barrier", 1
        if mn == "s_branch" or mn.startswith("s_cbranch"):
            return "branch", 1
        if mn in ("s_sendmsg", "s_sendmsghalt"):
            return "message", 1
        return "salu", 1
    if mn in ("s_setpc_b64", "s_swappc_b64", "s_call_b64", "s_cbranch_g_fork", "s_cbranch_i_fork",
              "s_cbranch_join"):
        return "branch", 1
    return "salu", 1


def generate(mc: str) -> dict:
    rows: dict[str, dict] = {}
    for enc, (ops, fn) in CLASSES.items():
        ops = list(ops)
        wl: list = []
        texts = disassemble_variants(mc, ops, fn, wl)
        for op, t, words in zip(ops, texts, wl):
            if t is None:
                continue
            mn = base_mnemonic(t)
            if enc == "VOP3":
                if op < 0x1C0:
                    continue  # VOP3 forms of VOPC/VOP2/VOP1: recorded with those below
                opnds = operands(t)
                # VOP3b: a second (SGPR pair) destination after vdst
                e = "VOP3b" if len(opnds) > 1 and opnds[1] == ["s", 2] and "s[0:1]" in t else "VOP3a"
            else:
                e = enc
            if mn in rows and rows[mn]["encoding"] in ("VOP3a", "VOP3b") and e == "VINTRP":
                old = rows.pop(mn)  # the VOP3 form of a VINTRP instruction
                extra = {"vop3_opcode": old["opcode"], "asm_e64": old["asm"], "bytes_e64": old["bytes"]}
            else:
                extra = {}
            if mn in rows:
                raise SystemExit(f"duplicate mnemonic {mn}: {rows[mn]['encoding']} and {e}")
            cnt, in_order = counters(e, mn)
            cls, cyc = issue(e, mn)
            rows[mn] = {"mnemonic": mn, "encoding": e, "opcode": op, "asm": t, "bytes": _hex(words),
                        "operands": operands(t), "counters": cnt, "in_order": in_order,
                        "issue_class": cls, "cycles": cyc, **extra}
    # VOP3 (e64) opcodes of VOPC/VOP2/VOP1, and SDWA/DPP forms
    for enc, off in (("VOPC", 0), ("VOP2", 0x100), ("VOP1", 0x140)):
        ops = [r["opcode"] for r in rows.values() if r["encoding"] == enc]
        w64: list = []
        e64 = disassemble_variants(mc, [off + op for op in ops], _vop3, w64)
        sdwa = disassemble(mc, [_sdwa(enc)(op) for op in ops])
        dpp = disassemble(mc, [_dpp(enc)(op) for op in ops])
        byop = {r["opcode"]: r for r in rows.values() if r["encoding"] == enc}
        for op, t64, ts, td, ww in zip(ops, e64, sdwa, dpp, w64):
            r = byop[op]
            if t64 is not None and base_mnemonic(t64) == r["mnemonic"]:
                r["vop3_opcode"] = off + op
                first, *rest = t64.split(" ", 1)
                if not first.endswith("_e64"):  # LLVM prints v_nop_e64 as "v_nop"
                    first += "_e64"
                r["asm_e64"] = " ".join([first, *rest])
                r["bytes_e64"] = _hex(ww)
            r["sdwa"] = ts is not None and ts.split()[0].endswith("_sdwa")
            r["dpp"] = td is not None and td.split()[0].endswith("_dpp")
            if r["sdwa"]:
                r["bytes_sdwa"] = _hex(_sdwa(enc)(op))
            if r["dpp"]:
                r["bytes_dpp"] = _hex(_dpp(enc)(op))
    # VOP3-only opcodes whose e64 form is a VOP1/VOP2 mnemonic (none expected)
    out = sorted(rows.values(), key=lambda r: (list(CLASS_ORDER).index(r["encoding"]), r["opcode"]))
    return {"target": "gfx906", "generator": "tools/gen_isa_table.py",
            "llvm": next((ln.strip() for ln in subprocess.run([mc, "--version"], capture_output=True,
                                                              text=True).stdout.splitlines()
                          if "version" in ln), mc),
            "instructions": out}


# ---------------------------------------------------------------------------
# other targets: which gfx906 instructions (and forms) another processor lacks

#: The forms of a row and the keys of their sample machine code in gfx906.json.
FORMS = (("base", "bytes"), ("e64", "bytes_e64"), ("sdwa", "bytes_sdwa"), ("dpp", "bytes_dpp"))


def _words(hex_bytes: str) -> list[int]:
    """A row's sample machine code as dwords, without the trailing FILLER."""
    b = bytes.fromhex(hex_bytes)
    return [int.from_bytes(b[i:i + 4], "little") for i in range(0, len(b) - 4, 4)]


def target_availability(mc: str, rows: list[dict], mcpu: str) -> dict:
    """Disassemble every gfx906 sample encoding again with ``-mcpu=<mcpu>``.

    A form is missing on ``mcpu`` when LLVM's decoder rejects the encoding there or decodes
    it as another instruction; ``missing`` lists the mnemonics whose plain form is missing,
    ``missing_forms`` the e64/SDWA/DPP forms missing on ``mcpu`` of the instructions it has,
    and ``other_mnemonic`` what ``mcpu`` has at the encoding of a missing one (gfx900's
    ``v_mad_mix_f32`` at gfx906's ``v_fma_mix_f32``).
    """
    cands, where = [], []
    for r in rows:
        for form, key in FORMS:
            if r.get(key):
                cands.append(_words(r[key]))
                where.append((r["mnemonic"], form))
    texts = disassemble(mc, cands, mcpu)
    missing: set[str] = set()
    forms: dict[str, list[str]] = {}
    other: dict[str, str] = {}
    for (mn, form), t in zip(where, texts):
        if t is not None and base_mnemonic(t) == mn and _acceptable(t):
            continue
        if form == "base":
            missing.add(mn)
            if t is not None and "nvalid" not in t:
                other[mn] = base_mnemonic(t)
        else:
            forms.setdefault(mn, []).append(form)
    forms = {mn: f for mn, f in forms.items() if mn not in missing}
    order = {r["mnemonic"]: i for i, r in enumerate(rows)}
    return {"target": mcpu, "base": "gfx906", "generator": "tools/gen_isa_table.py --target " + mcpu,
            "llvm": _llvm_version(mc),
            "missing": sorted(missing, key=order.__getitem__),
            "missing_forms": dict(sorted(forms.items(), key=lambda kv: order[kv[0]])),
            "other_mnemonic": dict(sorted(other.items(), key=lambda kv: order[kv[0]])),
            "cycles": target_cycles(rows, mcpu, missing)}


def target_cycles(rows: list[dict], mcpu: str, missing=()) -> dict[str, int]:
    """Issue cycles on ``mcpu`` that differ from gfx906's ``cycles`` column: f64 VALU
    instructions at ``mcpu``'s f64 rate (:data:`F64_RATE_DIVISOR`): at least
    4 x the divisor cycles per wave64 (gfx900: 64)."""
    floor = 4 * F64_RATE_DIVISOR[mcpu]
    return {r["mnemonic"]: max(r["cycles"], floor) for r in rows
            if r["issue_class"] == "valu" and "_f64" in r["mnemonic"] and r["mnemonic"] not in missing
            and max(r["cycles"], floor) != r["cycles"]}


def _llvm_version(mc: str) -> str:
    out = subprocess.run([mc, "--version"], capture_output=True, text=True).stdout
    return next((ln.strip() for ln in out.splitlines() if "version" in ln), mc)


CLASS_ORDER = ("SOP2", "SOPK", "SOP1", "SOPC", "SOPP", "SMEM", "VOP2", "VOP1", "VOPC", "VOP3a", "VOP3b",
               "VOP3P", "VINTRP", "DS", "FLAT", "GLOBAL", "SCRATCH", "MUBUF", "MTBUF", "MIMG", "EXP")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llvm-mc", default=shutil.which("llvm-mc-19") or "llvm-mc")
    ap.add_argument("-o", "--output", default=None,
                    help="default: vlpc/isa/gfx906.json, or vlpc/isa/<target>.json with --target")
    ap.add_argument("--target", default="gfx906",
                    help="gfx906: the full table; another processor (gfx900): which of the gfx906 "
                         "table's instructions and forms it lacks, from the same sample encodings "
                         "disassembled with -mcpu=<target>")
    a = ap.parse_args(argv)
    if a.target != "gfx906":
        out = a.output or str(ROOT / "vlpc" / "isa" / f"{a.target}.json")
        rows = json.loads((ROOT / "vlpc" / "isa" / "gfx906.json").read_text())["instructions"]
        data = target_availability(a.llvm_mc, rows, a.target)
        with open(out, "w") as f:
            f.write(json.dumps(data, indent=1) + "\n")
        print(f"{a.target}: {len(data['missing'])} of {len(rows)} gfx906 instructions missing, "
              f"{len(data['missing_forms'])} with missing forms -> {out}")
        return 0
    a.output = a.output or str(ROOT / "vlpc" / "isa" / "gfx906.json")
    table = generate(a.llvm_mc)
    with open(a.output, "w") as f:
        f.write("{\n")
        for k in ("target", "generator", "llvm"):
            f.write(f"  {json.dumps(k)}: {json.dumps(table[k])},\n")
        f.write('  "instructions": [\n')
        rows = table["instructions"]
        for i, r in enumerate(rows):
            f.write("    " + json.dumps(r, separators=(",", ":")) + ("," if i + 1 < len(rows) else "") + "\n")
        f.write("  ]\n}\n")
    from collections import Counter
    c = Counter(r["encoding"] for r in rows)
    print(f"{len(rows)} instructions -> {a.output}")
    print(", ".join(f"{k} {c[k]}" for k in CLASS_ORDER if c[k]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
