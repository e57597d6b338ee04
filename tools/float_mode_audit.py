#!/usr/bin/env python3
"""Audit: which float instructions of the gfx906 table ignore the denormal mode bits.

    python tools/float_mode_audit.py [--names v_add_f32,v_cvt_pkrtz_f16_f32] [--verbose]

Every VALU mnemonic of :mod:`vlpc.isa` with an ``f16``/``f32``/``f64`` type in its name is
run in each of its forms (the table's ``_e32``/VOP3 sample, the ``_e64`` one, SDWA and
DPP where the table says they exist) on 256 lanes of operands drawn from a pool of
denormals, tiny and ordinary normals of all three float types (f32 denormals, f16 pairs
of denormals, the high word of f64 denormals), under four MODE registers: denormals kept
for both fields (FLOAT_DENORM_MODE_32 = FLOAT_DENORM_MODE_16_64 = 3), flushed for both
(0, 0), flushed for f32 only (0, 3) and for f16/f64 only (3, 0).

An instruction whose result (destination register pair, or SGPR pair for compares) is
the same in all lanes under a flushing mode and the keeping mode does not read that
mode field (the pool makes every such instruction show a difference in some lane
unless its result cannot depend on the flush).  Expected: an instruction that has an f32 operand or result reads
FLOAT_DENORM_MODE_32, one with an f16 or f64 operand or result reads
FLOAT_DENORM_MODE_16_64 (Vega ISA guide 3.3, MODE.FP_DENORM), except those in
:data:`EXEMPT` (each with the reason it cannot or must not show a difference).
:func:`audit` returns the findings; the script prints them and exits 1 if any
instruction outside :data:`EXEMPT` ignores a field it should read, or any form fails
to run (``v_interp_*``, :data:`NOT_RUN`, are left out: graphics interpolation).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field

import numpy as np

#: MODE (denorm_32, denorm_16_64) settings compared against (3, 3)
MODES = {"keep": (3, 3), "flush_all": (0, 0), "flush_32": (0, 3), "flush_16_64": (3, 0)}

LANES = 256

#: 32-bit words operands are drawn from (f32 view / f64 high word view / f16 pair view)
POOL = np.array([
    0x00000200, 0x80000200, 0x007FFFFF, 0x00800000, 0x00400000,   # f32 denormals, min normal
    0x0D800000, 0x3F000000, 0x3F800000, 0x49800000, 0xBF800000,   # 2^-100, 0.5, 1, 2^20, -1
    0x00010001, 0x03FF03FF, 0x80018001, 0x04000400, 0x02000200,   # f16 denormal pairs, min normal
    0x38003800, 0x3C003C00, 0x1E001E00, 0x20002000, 0x4C004C00,   # f16 0.5, 1, 2^-7.., 2^-7, 16
    0x00000001, 0x000FFFFF, 0x00100000, 0x3FF00000, 0x3FE00000,   # f64 high words: den, normal
    0x20000000, 0x5FF00000, 0x00000000,
    0x3EAAAAAB, 0x3DCCCCCD, 0x35553555, 0x3FD55555, 0xC0490FDB,   # inexact: 1/3, 0.1, f16 1/3, pi
    0x7F800001, 0x7C017C01, 0x7FF00001, 0x7FC00000,               # signalling NaNs (f32, f16, f64), qNaN
], np.uint32)

#: registers the table's samples use: sources v4/v8/v16 (pairs v[4:5] ...), result v12/v[12:13]
_INIT_V = (4, 5, 8, 9, 16, 17, 12, 13)

#: mnemonic prefix or name -> why it cannot (or must not) show a difference under flushing
EXEMPT = {
    "v_cmp_class_": "tests the raw operand's class (a denormal is reported as one)",
    "v_cmpx_class_": "tests the raw operand's class (a denormal is reported as one)",
    "v_cmp_f_": "constant result (false)",
    "v_cmpx_f_": "constant result (false)",
    "v_cmp_tru_": "constant result (true)",
    "v_cmpx_tru_": "constant result (true)",
    "v_cmp_o_": "tests for NaN only: a flushed denormal is as ordered as a kept one",
    "v_cmpx_o_": "tests for NaN only: a flushed denormal is as ordered as a kept one",
    "v_cmp_u_": "tests for NaN only: a flushed denormal is as ordered as a kept one",
    "v_cmpx_u_": "tests for NaN only: a flushed denormal is as ordered as a kept one",
    "v_frexp_": "exponent/mantissa split of the raw operand (not flushed, as LLVM assumes)",
    "v_rcp_iflag_f32": "integer-division helper: LLVM uses it on integer-converted values only",
    "v_div_scale_": "scaling step of IEEE division: handles denormals by its own scaling",
    "v_div_fmas_": "scaling step of IEEE division",
    "v_div_fixup_": "special-case step of IEEE division",
    "v_trig_preop_f64": "a table lookup of 2/pi bits: its result is never denormal",
    "v_trunc_": "a denormal truncates to a signed zero, flushed or not",
    "v_rndne_": "a denormal rounds to a signed zero, flushed or not",
    "v_exp_f": "2^x of a denormal or of a zero is 1",
    "v_exp_legacy_f32": "2^x of a denormal or of a zero is 1",
    "v_cos_f": "cos of a denormal or of a zero is 1",
    "v_mac_f32": "never keeps f32 denormals, in any mode (LLVM FMADModeRegPat: selected only when flushed)",
    "v_mad_f32": "never keeps f32 denormals, in any mode (LLVM FMADModeRegPat: selected only when flushed)",
    "v_madak_f32": "never keeps f32 denormals, in any mode (LLVM FMADModeRegPat: selected only when flushed)",
    "v_madmk_f32": "never keeps f32 denormals, in any mode (LLVM FMADModeRegPat: selected only when flushed)",
    "v_mad_legacy_f32": "never keeps f32 denormals, in any mode (like v_mad_f32)",
    "v_cvt_f32_ubyte": "integer source, result never denormal",
    "v_cvt_f32_i32": "integer source, result never denormal",
    "v_cvt_f32_u32": "integer source, result never denormal",
    "v_cvt_f64_i32": "integer source, result never denormal",
    "v_cvt_f64_u32": "integer source, result never denormal",
    "v_cvt_f16_i16": "integer source, result never denormal",
    "v_cvt_f16_u16": "integer source, result never denormal",
    "v_cvt_off_f32_i4": "integer source, result never denormal",
    "v_cvt_i32_f": "integer result: a denormal source truncates to 0 flushed or not",
    "v_cvt_u32_f": "integer result: a denormal source truncates to 0 flushed or not",
    "v_cvt_i16_f16": "integer result: a denormal source truncates to 0 flushed or not",
    "v_cvt_u16_f16": "integer result: a denormal source truncates to 0 flushed or not",
    "v_cvt_rpi_i32_f32": "integer result: a denormal source rounds to 0 flushed or not",
    "v_cvt_pk_u8_f32": "integer result: an f32 denormal rounds to 0 flushed or not",
    "v_cvt_pknorm_i16_f32": "integer result: an f32 denormal * 32767 rounds to 0 flushed or not",
    "v_cvt_pknorm_u16_f32": "integer result: an f32 denormal * 65535 rounds to 0 flushed or not",
    "v_cvt_pkaccum_u8_f32": "integer result: an f32 denormal rounds to 0 flushed or not",
    "v_cvt_pkrtz_f16_f32:f32": "f32 denormals are far below the f16 range: a signed 0 either way",
    "v_cvt_f16_f32:f32": "f32 denormals are far below the f16 range: a signed 0 either way",
    "v_cvt_f32_f64:f16_64": "f64 denormals are far below the f32 range: a signed 0 either way",
    "v_cvt_f64_f32:f16_64": "an f32 value is never an f64 denormal",
    "v_cvt_f32_f16:f32": "an f16 value is never an f32 denormal",
}
# (a key is a mnemonic or a prefix of mnemonics; a ":field" suffix exempts that mode field only)


#: not run: interpolation reads a graphics wave's LDS attribute data (decoded and named only)
NOT_RUN = ("v_interp_",)


@dataclass
class Finding:
    form: str                      # assembly of the instruction as run
    mnemonic: str
    reads: dict = field(default_factory=dict)   # mode name -> result differs from "keep"
    error: str | None = None


def _float_types(mn: str, form: str = "") -> set[str]:
    """The float types an instruction's operands and result use (by its name; fma_mix: its
    sources are f16 where op_sel_hi is set, f32 otherwise, and an f32 result of f16 sources
    is never denormal)."""
    if "_mix" in mn:
        src = "f16" if "op_sel_hi:[1,1,1]" in form else "f32"
        res = "f32" if mn.endswith("_f32") else "f16"
        return {src} if (res, src) == ("f32", "f16") else {src, res}
    return {t for t in ("f16", "f32", "f64") if re.search(rf"_{t}(_|$)", mn)}


def _expected_fields(mn: str, form: str = "") -> set[str]:
    ts = _float_types(mn, form)
    out = set()
    if "f32" in ts:
        out.add("f32")
    if ts & {"f16", "f64"}:
        out.add("f16_64")
    return out


def exempt_reason(mn: str, fld: str) -> str | None:
    for key, why in EXEMPT.items():
        name, _, only = key.partition(":")
        if mn.startswith(name) and (not only or only == fld):
            return why
    return None


def forms(row) -> list[str]:
    """The assembly of each form of table row ``row`` to run."""
    out = [row.asm]
    if "op_sel_hi:[1,1,1]" in row.asm:   # fma_mix: also with f32 sources
        out.append(row.asm.replace("op_sel_hi:[1,1,1]", "op_sel_hi:[0,0,0]"))
    if row.asm_e64:
        out.append(row.asm_e64)
    base = row.asm
    enc = row.encoding
    if "_e32 " in base and row.sdwa:
        t = base.replace("_e32 ", "_sdwa ", 1)
        if enc == "VOPC":
            out.append(t + " src0_sel:DWORD src1_sel:DWORD")
        else:
            out.append(t + " dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD"
                       + (" src1_sel:DWORD" if enc == "VOP2" else ""))
    if "_e32 " in base and row.dpp:
        out.append(base.replace("_e32 ", "_dpp ", 1) + " quad_perm:[0,1,2,3] row_mask:0xf bank_mask:0xf")
    return out


def _dst_regs(asm: str) -> tuple[str, str]:
    d = asm.split(None, 1)[1].split(",")[0].strip()
    m = re.fullmatch(r"([vs])\[(\d+):\d+\]", d)
    if m:
        k, n = m.group(1), int(m.group(2))
        return f"{k}{n}", f"{k}{n + 1}"
    if d == "vcc":
        return "vcc_lo", "vcc_hi"
    if d.startswith("v"):
        return d, f"v{int(d[1:]) + 1}"
    return d, d


def _kernel(asms: list[str]) -> str:
    lines = ["s_load_dwordx4 s[16:19], s[0:1], 0x0", "s_waitcnt lgkmcnt(0)",
             f"s_mul_i32 s3, s2, {LANES}", "v_add_u32 v1, s3, v0", "v_lshlrev_b32 v1, 2, v1",
             "s_mov_b64 s[14:15], exec"]
    for j in range(len(_INIT_V)):
        lines += [f"s_add_u32 s20, s16, {j * 4 * LANES}", "s_addc_u32 s21, s17, 0",
                  f"global_load_dword v{40 + j}, v1, s[20:21]"]
    lines.append("s_waitcnt vmcnt(0)")
    for k, asm in enumerate(asms):
        lines += ["s_mov_b64 exec, s[14:15]", "s_mov_b64 vcc, s[14:15]", "s_mov_b64 s[12:13], 0"]
        lines += [f"v_mov_b32 v{r}, v{40 + j}" for j, r in enumerate(_INIT_V)]
        lines.append(asm)
        lo, hi = _dst_regs(asm)
        lines += ["s_mov_b64 exec, s[14:15]", f"v_mov_b32 v{60 + 2 * k}, {lo}", f"v_mov_b32 v{61 + 2 * k}, {hi}"]
    lines.append("s_mov_b64 exec, s[14:15]")
    for k in range(2 * len(asms)):
        lines += [f"s_add_u32 s20, s18, {k * 4 * LANES}", "s_addc_u32 s21, s19, 0",
                  f"global_store_dword v1, v{60 + k}, s[20:21]"]
    lines.append("s_endpgm")
    return "\n".join(lines) + "\n"


def _run(asms: list[str], inputs: np.ndarray, mode: int) -> np.ndarray:
    """Results (len(asms), 2, LANES) of the instructions run in one kernel."""
    from vlpc.runtime.emulator.memory import Memory
    from vlpc.runtime.emulator.testing import run_program
    mem = Memory()
    inp = mem.alloc(inputs.nbytes, tag="in")
    mem.write(inp, inputs)
    nout = 2 * len(asms) * LANES * 4
    out = mem.alloc(nout, tag="out")
    karg = mem.alloc(64, tag="kernargs")
    mem.write(karg, np.array([inp, out], np.uint64))
    mem, _ = run_program(_kernel(asms), mem, grid=(1, 1, 1), block=(LANES, 1, 1), kernarg=karg, mode=mode)
    return mem.read(out, nout).view(np.uint32).reshape(len(asms), 2, LANES)


def _mode_register(d32: int, d64: int) -> int:
    from vlpc.isa.modes import FloatMode
    return FloatMode(denorm_32=d32, denorm_16_64=d64).register


def _results(asms, inputs):
    """{mode name: results} for ``asms``, or raises the first instruction's fault."""
    return {name: _run(asms, inputs, _mode_register(*dm)) for name, dm in MODES.items()}


def candidates(names: list[str] | None = None) -> list[tuple[str, str]]:
    """(mnemonic, assembly) of every float VALU form to audit."""
    from vlpc import isa
    out = []
    for mn, row in isa.table().items():
        if not mn.startswith("v_") or not _float_types(mn) or mn.startswith(NOT_RUN):
            continue
        if names and mn not in names:
            continue
        out += [(mn, f) for f in forms(row)]
    return out


def audit(names: list[str] | None = None, chunk: int = 80, seed: int = 16) -> list[Finding]:
    """Run the audit; one :class:`Finding` per form (``reads``: mode name -> bool)."""
    rng = np.random.default_rng(seed)
    inputs = rng.choice(POOL, size=(len(_INIT_V), LANES)).astype(np.uint32)
    cands = candidates(names)
    findings: list[Finding] = []
    for i in range(0, len(cands), chunk):
        part = cands[i:i + chunk]
        try:
            res = _results([a for _, a in part], inputs)
            groups = [(part, res)]
        except Exception:  # one of them faults: run them one by one
            groups = []
            for mn, a in part:
                try:
                    groups.append(([(mn, a)], _results([a], inputs)))
                except Exception as e:  # noqa: BLE001 - reported, not hidden
                    findings.append(Finding(a, mn, error=f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"))
        for grp, res in groups:
            for k, (mn, a) in enumerate(grp):
                keep = res["keep"][k]
                reads = {m: bool((res[m][k] != keep).any()) for m in MODES if m != "keep"}
                findings.append(Finding(a, mn, reads))
    return findings


def round_survey(names: list[str] | None = None, seed: int = 16) -> dict[str, list[str]]:
    """How each form meets a directed FP_ROUND mode (both fields toward +inf, -inf, zero;
    denormals kept): ``refused`` (stops with UnsupportedInstruction naming the round mode),
    ``rounds`` (some result differs from round-to-nearest) or ``same`` (every result equals
    the round-to-nearest one: an exact operation, or one that ignores FP_ROUND)."""
    from vlpc.isa.modes import FloatMode
    rng = np.random.default_rng(seed)
    inputs = rng.choice(POOL, size=(len(_INIT_V), LANES)).astype(np.uint32)
    out: dict[str, list[str]] = {"refused": [], "rounds": [], "same": [], "error": []}
    for mn, a in candidates(names):
        try:
            base = _run([a], inputs, FloatMode().register)
        except Exception:  # noqa: BLE001
            out["error"].append(a)
            continue
        differs, refused = False, False
        for rb in (1, 2, 3):
            try:
                r = _run([a], inputs, FloatMode(round_32=rb, round_16_64=rb).register)
            except Exception as e:  # noqa: BLE001
                if "round mode" not in str(e):
                    raise
                refused = True
                break
            differs |= bool((r != base).any())
        out["refused" if refused else "rounds" if differs else "same"].append(a)
    return out


#: instructions whose results depend on MODE.IEEE (Vega ISA guide, V_MIN_F32 pseudo-code:
#: a signalling NaN operand returns quieted in IEEE mode, the other operand otherwise)
IEEE_READERS = re.compile(r"v_(pk_)?(min|max|min3|max3|med3)_f(16|32|64)$")


def ieee_survey(names: list[str] | None = None, chunk: int = 80, seed: int = 16) -> tuple[list, list]:
    """(forms whose results change with MODE.IEEE, forms that did not run)."""
    from vlpc.isa.modes import FloatMode
    rng = np.random.default_rng(seed)
    inputs = rng.choice(POOL, size=(len(_INIT_V), LANES)).astype(np.uint32)
    cands = candidates(names)
    changed, failed = [], []
    for i in range(0, len(cands), chunk):
        part = [a for _, a in cands[i:i + chunk]]
        try:
            on, off = (_run(part, inputs, FloatMode(ieee=v).register) for v in (True, False))
        except Exception:  # noqa: BLE001
            failed += part
            continue
        changed += [a for k, a in enumerate(part) if (on[k] != off[k]).any()]
    return changed, failed


#: forms whose clamped result cannot be NaN (so DX10_CLAMP cannot show): mnemonic prefix -> why
DX10_EXEMPT = {
    "v_cvt_f16_i16": "integer source", "v_cvt_f16_u16": "integer source", "v_cvt_f32_i32": "integer source",
    "v_cvt_f32_u32": "integer source", "v_cvt_f32_ubyte": "integer source", "v_cvt_f64_i32": "integer source",
    "v_cvt_f64_u32": "integer source", "v_cvt_off_f32_i4": "integer source",
    "v_cvt_i": "integer result", "v_cvt_u": "integer result", "v_cvt_norm_": "integer result",
    "v_cvt_rpi_": "integer result", "v_cvt_flr_": "integer result",
    "v_cvt_pk": "packed integer (or, v_cvt_pkrtz, refused) result", "v_frexp_exp_": "integer result",
    "v_cubeid_f32": "a face number", "v_div_scale_": "scales by a power of two (LLVM never clamps it)",
    "v_trig_preop_f64": "a table value", "v_pack_b32_f16": "a move of two halves",
}


def dx10_survey(names: list[str] | None = None, seed: int = 16, chunk: int = 80) -> dict[str, list[str]]:
    """Forms with the ``clamp`` output modifier (VOP3/VOP3P/SDWA forms LLVM accepts it on),
    under MODE.DX10_CLAMP on and off (NaNs in the operands): ``changes`` (a clamped NaN
    becomes 0 only with DX10_CLAMP, Vega ISA guide 3.3), ``same``, ``no_clamp`` (LLVM
    rejects the modifier) or ``error`` (the emulator stops).  The forms run ``chunk`` to a
    kernel (as :func:`audit`: each from the same registers); a chunk that does not assemble or
    run is run again in halves, down to the forms that fail alone."""
    from vlpc.isa.modes import FloatMode
    rng = np.random.default_rng(seed)
    inputs = rng.choice(POOL, size=(len(_INIT_V), LANES)).astype(np.uint32)
    out: dict[str, list[str]] = {"changes": [], "same": [], "no_clamp": [], "error": []}
    clamped = [(a.replace(" dst_sel:", " clamp dst_sel:", 1) if "_sdwa " in a else a + " clamp")
               for mn, a in candidates(names)
               if not ("_e32 " in a or "_dpp " in a or mn.startswith(("v_cmp", "v_cmpx")))]

    def survey(part: list[str]) -> None:
        if len(part) == 1:
            _dx10_one(part[0], inputs, out)
            return
        try:
            on, off = (_run(part, inputs, FloatMode(dx10_clamp=v).register) for v in (True, False))
        except Exception:  # noqa: BLE001 - a form of the part fails: each half again
            survey(part[:len(part) // 2])
            survey(part[len(part) // 2:])
            return
        for k, form in enumerate(part):
            out["changes" if (on[k] != off[k]).any() else "same"].append(form)

    for i in range(0, len(clamped), chunk):
        survey(clamped[i:i + chunk])
    return out


def _dx10_one(form: str, inputs: np.ndarray, out: dict[str, list[str]]) -> None:
    """:func:`dx10_survey` for one form, run alone."""
    from vlpc.errors import AssemblerError
    from vlpc.isa.modes import FloatMode
    try:
        on, off = (_run([form], inputs, FloatMode(dx10_clamp=v).register) for v in (True, False))
    except AssemblerError:
        out["no_clamp"].append(form)
        return
    except Exception:  # noqa: BLE001
        out["error"].append(form)
        return
    out["changes" if (on != off).any() else "same"].append(form)


def unsupported(findings: list[Finding]) -> list[tuple[str, str]]:
    """(form, the emulator's error) for each form that did not run."""
    return [(f.form, f.error) for f in findings if f.error]


def problems(findings: list[Finding]) -> list[tuple[str, str]]:
    """(form, what is wrong) for each form that ignores a mode field it should read (not
    exempt), or changes under one its types do not use."""
    out = []
    for f in findings:
        if f.error:
            continue
        for fld, mode in (("f32", "flush_32"), ("f16_64", "flush_16_64")):
            expected = _expected_fields(f.mnemonic, f.form)
            if fld in expected and not f.reads[mode] and exempt_reason(f.mnemonic, fld) is None:
                out.append((f.form, f"ignores FLOAT_DENORM_MODE_{'32' if fld == 'f32' else '16_64'}"))
            if fld not in expected and f.reads[mode]:
                out.append((f.form, f"changes under FLOAT_DENORM_MODE_{'32' if fld == 'f32' else '16_64'}, "
                                    f"which its types do not use"))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--names", help="comma-separated mnemonics (default: every float VALU mnemonic)")
    ap.add_argument("--verbose", action="store_true", help="print every form's result")
    ap.add_argument("--dx10", action="store_true",
                    help="instead: which forms with clamp read MODE.DX10_CLAMP (NaN operands)")
    ap.add_argument("--ieee", action="store_true",
                    help="instead: which forms read MODE.IEEE (signalling NaN operands)")
    ap.add_argument("--round", action="store_true",
                    help="instead: how each form meets a directed FP_ROUND mode (refused / rounds / same)")
    args = ap.parse_args(argv)
    names = args.names.split(",") if args.names else None
    if args.dx10:
        for k, forms_ in dx10_survey(names).items():
            print(f"{k}: {len(forms_)}")
            for f in forms_:
                print(f"  {f}")
        return 0
    if args.ieee:
        changed, failed = ieee_survey(names)
        expected = {a for mn, a in candidates(names) if IEEE_READERS.match(mn)}
        print(f"forms whose results change with MODE.IEEE: {len(changed)} (expected {len(expected)})")
        for a in sorted(set(changed) ^ expected):
            print(f"  {'unexpected' if a in changed else 'ignores IEEE'}: {a}")
        for a in failed:
            print(f"  did not run: {a}")
        return 0
    if args.round:
        survey = round_survey(names)
        for k, forms_ in survey.items():
            print(f"{k}: {len(forms_)}")
            for f in forms_:
                print(f"  {f}")
        return 0
    findings = audit(names)
    bad = problems(findings)
    failed = unsupported(findings)
    exempt = sorted({f.mnemonic for f in findings if not f.error and not any(f.reads.values())})
    if args.verbose:
        for f in findings:
            print(f"{f.form:70s} {f.error or ' '.join(m for m, r in f.reads.items() if r) or '-'}")
    print(f"{len(findings)} forms of {len({f.mnemonic for f in findings})} float mnemonics audited")
    print(f"identical under denorm modes 0 and 3 (all exempt unless listed below): {len(exempt)}")
    for mn in exempt:
        why = exempt_reason(mn, "f32") or exempt_reason(mn, "f16_64")
        print(f"  {mn}: {why or 'NOT EXEMPT'}")
    print(f"forms that did not run: {len(failed)}")
    for form, what in failed:
        print(f"  {form}: {what}")
    print(f"mode problems: {len(bad)}")
    for form, what in bad:
        print(f"  {form}: {what}")
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())
