"""vlpc.isa.encodings (the GFX9 microcode formats) against LLVM's assembler.

Each layout must cover its 32 or 64 bits exactly once.  A sample of every format is
assembled by LLVM (``-show-encoding``, gfx906); the fields read back with the layout must
be the operands written in the sample's text (registers, modifiers, offsets: values
from the assembly, not from vlpc) and the table's opcode, and encoding those fields again
must give LLVM's bytes.
"""

from __future__ import annotations

import pytest

from llvm_support import llvm_encodings as assemble
import vlpc.isa as isa
from vlpc.isa import encodings as E

V = 256  # VGPR n is source code 256 + n in the 9-bit source fields

#: (assembly, base format, extension dword format or None, expected fields of base / extension,
#: the opcode's key in the table row: "opcode" or "vop3_opcode")
SAMPLES = [
    ("s_add_u32 s5, s6, s7", E.SOP2, None, dict(sdst=5, ssrc0=6, ssrc1=7), {}, "opcode"),
    ("s_movk_i32 s9, 0x1234", E.SOPK, None, dict(sdst=9, simm16=0x1234), {}, "opcode"),
    ("s_mov_b32 s3, s4", E.SOP1, None, dict(sdst=3, ssrc0=4), {}, "opcode"),
    ("s_cmp_eq_u32 s1, s2", E.SOPC, None, dict(ssrc0=1, ssrc1=2), {}, "opcode"),
    ("s_nop 5", E.SOPP, None, dict(simm16=5), {}, "opcode"),
    ("s_load_dwordx2 s[10:11], s[4:5], 0x24 glc", E.SMEM, None,
     dict(sbase=2, sdata=10, imm=1, glc=1, offset=0x24), {}, "opcode"),
    ("v_add_f32_e32 v5, v6, v7", E.VOP2, None, dict(vdst=5, src0=V + 6, vsrc1=7), {}, "opcode"),
    ("v_mov_b32_e32 v5, s6", E.VOP1, None, dict(vdst=5, src0=6), {}, "opcode"),
    ("v_cmp_lt_f32_e32 vcc, v1, v2", E.VOPC, None, dict(src0=V + 1, vsrc1=2), {}, "opcode"),
    ("v_fma_f32 v5, -v6, |v7|, v8 clamp mul:2", E.VOP3A, None,
     dict(vdst=5, src0=V + 6, src1=V + 7, src2=V + 8, neg=1, abs=2, clamp=1, omod=1), {}, "opcode"),
    ("v_add_f32_e64 v5, v6, -v7 div:2", E.VOP3A, None, dict(vdst=5, src0=V + 6, src1=V + 7, neg=2, omod=3),
     {}, "vop3_opcode"),
    ("v_add_co_u32_e64 v5, s[6:7], v1, v2", E.VOP3B, None, dict(vdst=5, sdst=6, src0=V + 1, src1=V + 2), {},
     "vop3_opcode"),
    ("v_pk_fma_f16 v5, v6, v7, v8 op_sel:[1,0,0] op_sel_hi:[0,1,1] neg_lo:[0,1,0] neg_hi:[0,0,1] clamp",
     E.VOP3P, None, dict(vdst=5, src0=V + 6, src1=V + 7, src2=V + 8, op_sel=1, op_sel_hi=2, op_sel_hi2=1,
                         neg=2, neg_hi=4, clamp=1), {}, "opcode"),
    ("v_add_f32_sdwa v5, v6, v7 dst_sel:WORD_1 dst_unused:UNUSED_PAD src0_sel:BYTE_2 src1_sel:WORD_0",
     E.VOP2, E.SDWA, dict(vdst=5, src0=249, vsrc1=7),
     dict(src0=6, dst_sel=5, dst_unused=0, src0_sel=2, src1_sel=4, s0=0, s1=0), "opcode"),
    ("v_cmp_lt_f32_sdwa s[6:7], v1, v2 src0_sel:WORD_1 src1_sel:BYTE_0", E.VOPC, E.SDWAB,
     dict(src0=249, vsrc1=2), dict(src0=1, sdst=6, sd=1, src0_sel=5, src1_sel=0), "opcode"),
    ("v_mov_b32_dpp v5, v6 quad_perm:[1,0,3,2] row_mask:0xa bank_mask:0x5 bound_ctrl:0", E.VOP1, E.DPP,
     dict(vdst=5, src0=250), dict(src0=6, dpp_ctrl=0xB1, row_mask=0xA, bank_mask=0x5, bound_ctrl=1), "opcode"),
    ("v_interp_p1_f32 v5, v6, attr3.y", E.VINTRP, None, dict(vdst=5, vsrc=6, attr=3, attr_chan=1), {},
     "opcode"),
    ("ds_write2_b32 v1, v2, v3 offset0:4 offset1:8", E.DS, None,
     dict(addr=1, data0=2, data1=3, offset0=4, offset1=8), {}, "opcode"),
    ("ds_read_b32 v5, v1 offset:16 gds", E.DS, None, dict(addr=1, vdst=5, offset0=16, gds=1), {}, "opcode"),
    ("flat_load_dword v5, v[1:2] glc slc", E.FLAT, None, dict(addr=1, vdst=5, seg=0, glc=1, slc=1), {},
     "opcode"),
    ("global_store_dword v1, v2, s[4:5] offset:-8", E.FLAT, None,
     dict(addr=1, data=2, saddr=4, seg=2, offset=(1 << 13) - 8), {}, "opcode"),
    ("scratch_load_dword v5, v1, off offset:12", E.FLAT, None,
     dict(addr=1, vdst=5, seg=1, saddr=0x7F, offset=12), {}, "opcode"),
    ("buffer_load_dword v5, v1, s[8:11], s3 offen offset:12 glc slc", E.MUBUF, None,
     dict(vdata=5, vaddr=1, srsrc=2, soffset=3, offen=1, offset=12, glc=1, slc=1), {}, "opcode"),
    ("buffer_store_dword v5, v[1:2], s[8:11], 0 idxen offen", E.MUBUF, None,
     dict(vdata=5, vaddr=1, srsrc=2, soffset=128, idxen=1, offen=1), {}, "opcode"),
    ("buffer_load_dword off, s[8:11], s3 lds", E.MUBUF, None, dict(srsrc=2, soffset=3, lds=1), {}, "opcode"),
    ("tbuffer_load_format_x v5, v1, s[8:11], dfmt:4, nfmt:4, s3 offen offset:12 slc", E.MTBUF, None,
     dict(vdata=5, vaddr=1, srsrc=2, soffset=3, offen=1, offset=12, dfmt=4, nfmt=4, slc=1), {}, "opcode"),
    ("image_load v[5:6], v[1:4], s[8:15] dmask:0x3 unorm glc da", E.MIMG, None,
     dict(vdata=5, vaddr=1, srsrc=2, dmask=3, unorm=1, glc=1, da=1), {}, "opcode"),
    ("image_sample v5, v[1:2], s[8:15], s[16:19] dmask:0x1", E.MIMG, None,
     dict(vdata=5, vaddr=1, srsrc=2, ssamp=4, dmask=1), {}, "opcode"),
    ("exp mrt0 v1, v2, v3, v4 done vm", E.EXP, None,
     dict(tgt=0, en=0xF, vsrc0=1, vsrc1=2, vsrc2=3, vsrc3=4, done=1, vm=1), {}, None),
]


def test_every_layout_covers_its_bits_once():
    assert set(E.FORMATS) >= {"SOP1", "SOP2", "SOPK", "SOPC", "SOPP", "SMEM", "VOP1", "VOP2", "VOPC", "VOP3a",
                              "VOP3b", "VOP3P", "DS", "FLAT", "MUBUF", "MTBUF", "MIMG", "VINTRP", "EXP",
                              "SDWA", "SDWAB", "DPP"}
    for f in E.FORMATS.values():
        assert f.bits in ((16,) if f is E.WAITCNT else (32, 64)), f
        seen = 0
        for fl in f.fields:
            assert 0 <= fl.lo <= fl.hi < f.bits, (f, fl)
            m = fl.mask << fl.lo
            assert not seen & m, f"{f.name}.{fl.name} overlaps another field"
            seen |= m
        assert seen == (1 << f.bits) - 1, f"{f.name}: bits {~seen & ((1 << f.bits) - 1):#x} in no field"
        if f.name not in ("SDWA", "SDWAB", "DPP", "WAITCNT"):
            assert f.fixed_mask and f.fixed_mask < 1 << 32, f  # encoding bits in the first dword


def test_identify_is_unambiguous():
    """No first dword carries two formats' encoding bits, except the pairs identify() orders:
    SOPK (4 fixed bits) under SOP1/SOPC/SOPP, VOP3a under VOP3P, SOP2 under SOPK's prefix."""
    insts = [f for f in E.FORMATS.values() if f.fixed_mask and f.name != "VOP3b"]
    for f in insts:
        for g in insts:
            if f is g:
                continue
            both = f.fixed_mask & g.fixed_mask
            if f.fixed_value & both == g.fixed_value & both:  # some word matches both
                more, less = (f, g) if bin(f.fixed_mask).count("1") > bin(g.fixed_mask).count("1") else (g, f)
                assert more.fixed_mask & less.fixed_mask == less.fixed_mask, (f, g)
                assert E.identify(more.fixed_value) is more


def test_waitcnt_fields_from_llvm():
    """s_waitcnt vmcnt(45) expcnt(3) lgkmcnt(9): LLVM encodes simm16 0x893d (gfx9: vmcnt's
    high bits at 15:14)."""
    c = E.WAITCNT.unpack(0x893D)
    assert c == {"vmcnt_lo": 45 & 0xF, "expcnt": 3, "lgkmcnt": 9, "vmcnt_hi": 45 >> 4}
    assert E.WAITCNT.encode(**c) == [0x893D]


def test_encode_refuses_unknown_and_oversized_fields():
    with pytest.raises(ValueError, match="SOP2 has no field 'vdst'"):
        E.SOP2.encode(vdst=1)
    with pytest.raises(ValueError, match="does not fit in 7 bits"):
        E.SOP2.encode(op=128)
    with pytest.raises(ValueError, match="no field 'encoding'"):
        E.SOP2.encode(encoding=1)


@pytest.fixture(scope="module")
def llvm_encodings():
    encs = assemble([s[0] for s in SAMPLES])
    assert len(encs) == len(SAMPLES)
    return encs


@pytest.mark.parametrize("i", range(len(SAMPLES)), ids=[s[0].split()[0] for s in SAMPLES])
def test_layouts_read_and_rebuild_llvm_encodings(llvm_encodings, i):
    text, fmt, ext, want, want_ext, opkey = SAMPLES[i]
    b = llvm_encodings[i]
    dwords = [int.from_bytes(b[j:j + 4], "little") for j in range(0, len(b), 4)]
    assert len(dwords) == fmt.dwords + (1 if ext else 0)
    # the format is found from the first dword (both VOP3 forms share VOP3a's encoding bits)
    assert E.identify(dwords[0]) is (E.VOP3A if fmt is E.VOP3B else fmt)
    got = fmt.unpack(dwords[0], dwords[1] if fmt.dwords == 2 else 0)
    assert {k: got[k] for k in want} == want
    if opkey is not None:
        assert got["op"] == getattr(isa.lookup(text.split()[0]), opkey)
    assert fmt.encode(**got) == dwords[:fmt.dwords]
    if ext is not None:
        x = ext.unpack(dwords[-1])
        assert {k: x[k] for k in want_ext} == want_ext
        assert ext.encode(**x) == dwords[-1:]


def test_waitcnt_field_widths_are_the_targets_counter_maxima():
    from vlpc.targets import GFX900, GFX906

    for t in (GFX906, GFX900):
        assert t.vmcnt_max == (1 << (E.WAITCNT["vmcnt_lo"].width + E.WAITCNT["vmcnt_hi"].width)) - 1
        assert t.expcnt_max == E.WAITCNT["expcnt"].mask and t.lgkmcnt_max == E.WAITCNT["lgkmcnt"].mask
