"""vlpc.isa (the gfx906 instruction table) against LLVM's assembler.

Every row's sample instruction (and its ``_e64`` form) is assembled in ONE
assembler call with ``-show-encoding``; the encoding class and opcode are read
back from the bytes with the field layout of the Vega ISA guide (chapter 12,
"Microcode formats") written out here, independently of the emulator's decoder.
"""

from __future__ import annotations

import pytest

from llvm_support import llvm_encodings
import vlpc.isa as isa


def _fields(b: bytes) -> tuple[str, int]:
    """(encoding class, opcode) of an instruction's bytes (Vega ISA guide ch. 12)."""
    w = int.from_bytes(b[:4], "little")
    if w >> 30 == 0b10:
        if w >> 28 == 0b1011:
            sub = (w >> 23) & 0x1F
            if sub == 0x1D:
                return "SOP1", (w >> 8) & 0xFF
            if sub == 0x1E:
                return "SOPC", (w >> 16) & 0x7F
            if sub == 0x1F:
                return "SOPP", (w >> 16) & 0x7F
            return "SOPK", sub
        return "SOP2", (w >> 23) & 0x7F
    if w >> 31 == 0:
        if w >> 25 == 0x3F:
            return "VOP1", (w >> 9) & 0xFF
        if w >> 25 == 0x3E:
            return "VOPC", (w >> 17) & 0xFF
        return "VOP2", (w >> 25) & 0x3F
    top6 = w >> 26
    if top6 == 0x30:
        return "SMEM", (w >> 18) & 0xFF
    if top6 == 0x34:
        if w >> 23 == 0x1A7:
            return "VOP3P", (w >> 16) & 0x7F
        return "VOP3", (w >> 16) & 0x3FF
    if top6 == 0x35:
        return "VINTRP", (w >> 16) & 0x3
    if top6 == 0x36:
        return "DS", (w >> 17) & 0xFF
    if top6 == 0x37:
        return ("FLAT", "SCRATCH", "GLOBAL", "?")[(w >> 14) & 3], (w >> 18) & 0x7F
    if top6 == 0x38:
        return "MUBUF", (w >> 18) & 0x7F
    if top6 == 0x3A:
        return "MTBUF", (w >> 15) & 0xF
    if top6 == 0x3C:
        return "MIMG", (w >> 18) & 0x7F
    if top6 == 0x31:
        return "EXP", 0
    return "?", -1


@pytest.fixture(scope="module")
def encodings():
    rows = list(isa.table().values())
    lines, expect = [], []
    for r in rows:
        lines.append(r.asm)
        expect.append((r.mnemonic, "VOP3" if r.encoding in ("VOP3a", "VOP3b") else r.encoding, r.opcode))
        if r.asm_e64:
            lines.append(r.asm_e64)
            expect.append((r.mnemonic, "VOP3", r.vop3_opcode))
    return expect, llvm_encodings(lines)


def test_every_row_assembles_to_its_class_and_opcode(encodings):
    expect, encs = encodings
    assert len(encs) == len(expect)
    bad = [(mn, cls, op, _fields(b)) for (mn, cls, op), b in zip(expect, encs) if _fields(b) != (cls, op)]
    assert not bad, bad[:10]


def test_table_size_and_classes():
    t = isa.table()
    # 1,175 mnemonics in the base encodings of gfx906 (LLVM 19's disassembler)
    assert len(t) == 1175
    counts = {e: len(isa.opcodes(e)) for e in isa.ENCODINGS}
    assert counts["DS"] == 147 and counts["VOPC"] == 198 and counts["VOP3P"] == 29
    assert all(counts[e] > 0 for e in isa.ENCODINGS)
    # the instruction of the issue: v_add_i32 is VOP3 opcode 0x29c on gfx9
    assert isa.lookup("v_add_i32").opcode == 0x29C
    assert isa.vop3_opcodes()[0x29C] == "v_add_i32"


def test_lookup_suffixes_and_unknown():
    assert isa.lookup("v_add_f32_e64") is isa.lookup("v_add_f32")
    assert isa.lookup("v_mov_b32_sdwa").encoding == "VOP1"
    assert isa.lookup("v_add_f32").vop3_opcode == 0x101
    with pytest.raises(KeyError, match="v_pk_fma_f32"):
        isa.lookup("v_pk_fma_f32")  # gfx90a, not gfx906


def test_counters_and_order():
    assert isa.lookup("s_load_dwordx16").counters == ("lgkmcnt",)
    assert not isa.lookup("s_load_dwordx16").in_order
    assert isa.lookup("global_load_dwordx4").counters == ("vmcnt",)
    assert isa.lookup("global_load_dwordx4").in_order
    assert isa.lookup("ds_read_b128").counters == ("lgkmcnt",) and isa.lookup("ds_read_b128").in_order
    assert set(isa.lookup("flat_load_dword").counters) == {"vmcnt", "lgkmcnt"}
    assert isa.lookup("exp").counters == ("expcnt",)
    assert isa.lookup("v_fma_f32").counters == ()


def test_issue_classes_and_cycles():
    L = isa.lookup
    assert (L("v_fma_f32").issue_class, L("v_fma_f32").cycles) == ("valu", 4)
    assert L("v_fma_f64").cycles == 8 and L("v_add_f64").cycles == 8 and L("v_mul_f64").cycles == 8
    for t in ("v_rcp_f32", "v_sqrt_f32", "v_exp_f32", "v_log_f32", "v_sin_f32", "v_cos_f32", "v_rsq_f64",
              "v_cos_f16", "v_mad_u64_u32"):
        assert L(t).cycles == 16, t
    # half rate, measured on MI50 (3.2e12 vs 6.2e12 lane-instructions/s: carlushuang/gcnasm)
    for t in ("v_mul_lo_u32", "v_mul_hi_u32", "v_mul_hi_i32", "v_swap_b32"):
        assert L(t).cycles == 8, t
    for t in ("v_mul_u32_u24", "v_mad_u32_u24", "v_dot2_f32_f16", "v_pk_fma_f16", "v_lshl_or_b32"):
        assert L(t).cycles == 4, t
    assert L("s_add_u32").issue_class == "salu"
    assert L("s_cbranch_scc1").issue_class == "branch"
    assert L("s_waitcnt").issue_class == "waitcnt"
    assert L("s_load_dword").issue_class == "smem"
    assert L("buffer_load_dword").issue_class == "vmem"
    assert L("ds_bpermute_b32").issue_class == "lds"


def test_operand_widths():
    assert isa.lookup("v_fma_f64").operands == (("v", 2),) * 4
    assert isa.lookup("s_load_dwordx8").operands[0] == ("s", 8)
    assert isa.lookup("v_mad_u64_u32").operands[:2] == (("v", 2), ("s", 2))
    assert isa.lookup("v_mad_u64_u32").encoding == "VOP3b"


def test_table_ships_as_package_data():
    from importlib import resources
    assert resources.files("vlpc.isa").joinpath("gfx906.json").is_file()

