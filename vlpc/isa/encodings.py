"""GFX9 microcode formats: each encoding's fixed bits and fields, defined once.

Source: AMD "Vega" Instruction Set Architecture reference guide, chapter 12
("Microcode Formats"), cross-checked against LLVM's ``SIInstrFormats.td`` /
``*Instructions.td`` ``_vi``/``_gfx9`` encodings (``tests/isa/test_isa_encodings.py``
assembles a sample of every format with ``llvm-mc -show-encoding`` and compares each field).

Bit positions count over the whole instruction: a 64-bit format's second dword holds
bits 32..63, as in the guide's tables.  Every bit belongs to exactly one field: the
format's fixed ``encoding`` bits (a field with a ``value``), a named field, or a
``reserved`` one (zero when encoding).  :data:`SDWA`, :data:`SDWAB` and :data:`DPP` are
the 32-bit dword that follows a VOP1/VOP2/VOPC word whose ``src0`` is 249 (SDWA) or
250 (DPP): ``SDWAB`` is the VOPC form (an SGPR destination instead of dst_sel/dst_unused).

Both sides use these layouts: ``tools/gen_isa_table.py`` builds its candidate
machine words with :meth:`Format.encode`, and the emulator's decoder
(``runtime/emulator/decode.py``) finds the format with :func:`identify` and reads the
fields with :meth:`Format.unpack`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    """Bits ``hi..lo`` (inclusive) of an instruction; ``value``: the fixed value of the
    format's encoding bits (None for an operand field)."""

    name: str
    hi: int
    lo: int
    value: int | None = None

    @property
    def width(self) -> int:
        return self.hi - self.lo + 1

    @property
    def mask(self) -> int:
        """The field's mask once shifted down to bit 0."""
        return (1 << self.width) - 1


class Format:
    """One microcode format: ``name``, ``bits`` (32 or 64) and its fields, low bits first."""

    def __init__(self, name: str, bits: int, fields: list[tuple]):
        self.name = name
        self.bits = bits
        self.dwords = bits // 32
        self.fields = tuple(Field(*f) for f in fields)
        self._by_name = {f.name: f for f in self.fields if f.name != "reserved"}
        fixed = [f for f in self.fields if f.value is not None]
        #: the fixed encoding bits (all in the first dword): ``w & fixed_mask == fixed_value``
        self.fixed_mask = sum(f.mask << f.lo for f in fixed)
        self.fixed_value = sum(f.value << f.lo for f in fixed)
        # unpack() is generated from the layout (the decoder calls it once per instruction
        # word it caches): one dict display of shifts and masks
        items = ", ".join(f"{f.name!r}: (x >> {f.lo}) & {f.mask:#x}" for f in self.fields
                          if f.value is None and f.name != "reserved")
        self._unpack = eval(f"lambda x: {{{items}}}")  # noqa: S307 (text built above from constants)

    def __repr__(self) -> str:
        return f"Format({self.name!r}, {self.bits})"

    def __getitem__(self, name: str) -> Field:
        return self._by_name[name]

    def encode(self, **values: int) -> list[int]:
        """The instruction's dwords with the named fields set (others, and reserved bits, 0).

        Raises ValueError for a field the format does not have (or a fixed one) or a value
        that does not fit in its bits."""
        x = self.fixed_value
        for name, v in values.items():
            f = self._by_name.get(name)
            if f is None or f.value is not None:
                raise ValueError(f"{self.name} has no field {name!r}")
            if not 0 <= v <= f.mask:
                raise ValueError(f"{self.name}.{name} = {v} does not fit in {f.width} bits")
            x |= v << f.lo
        return [(x >> (32 * i)) & 0xFFFFFFFF for i in range(self.dwords)]

    def unpack(self, w: int, w1: int = 0) -> dict[str, int]:
        """The operand fields of the instruction whose first dword is ``w`` (second ``w1``)."""
        return self._unpack(w | (w1 << 32))

    def replace(self, w: int, **values: int) -> int:
        """The first dword ``w`` with first-dword fields replaced."""
        for name, v in values.items():
            f = self._by_name[name]
            w = (w & ~(f.mask << f.lo)) | ((v & f.mask) << f.lo)
        return w


_R = "reserved"

# -- scalar ALU and control (Vega ISA guide 12.1) --------------------------------
SOP2 = Format("SOP2", 32, [("ssrc0", 7, 0), ("ssrc1", 15, 8), ("sdst", 22, 16), ("op", 29, 23),
                           ("encoding", 31, 30, 0b10)])
SOPK = Format("SOPK", 32, [("simm16", 15, 0), ("sdst", 22, 16), ("op", 27, 23), ("encoding", 31, 28, 0b1011)])
SOP1 = Format("SOP1", 32, [("ssrc0", 7, 0), ("op", 15, 8), ("sdst", 22, 16), ("encoding", 31, 23, 0x17D)])
SOPC = Format("SOPC", 32, [("ssrc0", 7, 0), ("ssrc1", 15, 8), ("op", 22, 16), ("encoding", 31, 23, 0x17E)])
SOPP = Format("SOPP", 32, [("simm16", 15, 0), ("op", 22, 16), ("encoding", 31, 23, 0x17F)])

# -- scalar memory (12.2); GFX9: soe (SGPR offset with an immediate) at bit 14 -------
SMEM = Format("SMEM", 64, [("sbase", 5, 0), ("sdata", 12, 6), (_R, 13, 13), ("soe", 14, 14), ("nv", 15, 15),
                           ("glc", 16, 16), ("imm", 17, 17), ("op", 25, 18), ("encoding", 31, 26, 0x30),
                           ("offset", 52, 32), (_R, 56, 53), ("soffset", 63, 57)])

# -- vector ALU (12.3 - 12.6) ------------------------------------------------------
VOP2 = Format("VOP2", 32, [("src0", 8, 0), ("vsrc1", 16, 9), ("vdst", 24, 17), ("op", 30, 25),
                           ("encoding", 31, 31, 0)])
VOP1 = Format("VOP1", 32, [("src0", 8, 0), ("op", 16, 9), ("vdst", 24, 17), ("encoding", 31, 25, 0x3F)])
VOPC = Format("VOPC", 32, [("src0", 8, 0), ("vsrc1", 16, 9), ("op", 24, 17), ("encoding", 31, 25, 0x3E)])
_VOP3_SRCS = [("src0", 40, 32), ("src1", 49, 41), ("src2", 58, 50), ("omod", 60, 59), ("neg", 63, 61)]
VOP3A = Format("VOP3a", 64, [("vdst", 7, 0), ("abs", 10, 8), ("op_sel", 14, 11), ("clamp", 15, 15),
                             ("op", 25, 16), ("encoding", 31, 26, 0x34), *_VOP3_SRCS])
VOP3B = Format("VOP3b", 64, [("vdst", 7, 0), ("sdst", 14, 8), ("clamp", 15, 15), ("op", 25, 16),
                             ("encoding", 31, 26, 0x34), *_VOP3_SRCS])
VOP3P = Format("VOP3P", 64, [("vdst", 7, 0), ("neg_hi", 10, 8), ("op_sel", 13, 11), ("op_sel_hi2", 14, 14),
                             ("clamp", 15, 15), ("op", 22, 16), ("encoding", 31, 23, 0x1A7),
                             ("src0", 40, 32), ("src1", 49, 41), ("src2", 58, 50), ("op_sel_hi", 60, 59),
                             ("neg", 63, 61)])
#: The dword after a VOP1/VOP2 word with src0 = 249 (12.7).
SDWA = Format("SDWA", 32, [("src0", 7, 0), ("dst_sel", 10, 8), ("dst_unused", 12, 11), ("clamp", 13, 13),
                           ("omod", 15, 14), ("src0_sel", 18, 16), ("src0_sext", 19, 19), ("src0_neg", 20, 20),
                           ("src0_abs", 21, 21), (_R, 22, 22), ("s0", 23, 23), ("src1_sel", 26, 24),
                           ("src1_sext", 27, 27), ("src1_neg", 28, 28), ("src1_abs", 29, 29), (_R, 30, 30),
                           ("s1", 31, 31)])
#: The dword after a VOPC word with src0 = 249: the compare result to an SGPR pair (``sd``).
SDWAB = Format("SDWAB", 32, [("src0", 7, 0), ("sdst", 14, 8), ("sd", 15, 15), ("src0_sel", 18, 16),
                             ("src0_sext", 19, 19), ("src0_neg", 20, 20), ("src0_abs", 21, 21), (_R, 22, 22),
                             ("s0", 23, 23), ("src1_sel", 26, 24), ("src1_sext", 27, 27), ("src1_neg", 28, 28),
                             ("src1_abs", 29, 29), (_R, 30, 30), ("s1", 31, 31)])
#: The dword after a VOP1/VOP2/VOPC word with src0 = 250 (12.8).
DPP = Format("DPP", 32, [("src0", 7, 0), ("dpp_ctrl", 16, 8), (_R, 18, 17), ("bound_ctrl", 19, 19),
                         ("src0_neg", 20, 20), ("src0_abs", 21, 21), ("src1_neg", 22, 22), ("src1_abs", 23, 23),
                         ("bank_mask", 27, 24), ("row_mask", 31, 28)])

# -- interpolation, LDS, memory, export (12.9 - 12.17) ----------------------------------
VINTRP = Format("VINTRP", 32, [("vsrc", 7, 0), ("attr_chan", 9, 8), ("attr", 15, 10), ("op", 17, 16),
                               ("vdst", 25, 18), ("encoding", 31, 26, 0x35)])
DS = Format("DS", 64, [("offset0", 7, 0), ("offset1", 15, 8), ("gds", 16, 16), ("op", 24, 17), (_R, 25, 25),
                       ("encoding", 31, 26, 0x36), ("addr", 39, 32), ("data0", 47, 40), ("data1", 55, 48),
                       ("vdst", 63, 56)])
MUBUF = Format("MUBUF", 64, [("offset", 11, 0), ("offen", 12, 12), ("idxen", 13, 13), ("glc", 14, 14),
                             (_R, 15, 15), ("lds", 16, 16), ("slc", 17, 17), ("op", 24, 18), (_R, 25, 25),
                             ("encoding", 31, 26, 0x38), ("vaddr", 39, 32), ("vdata", 47, 40),
                             ("srsrc", 52, 48), (_R, 54, 53), ("tfe", 55, 55), ("soffset", 63, 56)])
MTBUF = Format("MTBUF", 64, [("offset", 11, 0), ("offen", 12, 12), ("idxen", 13, 13), ("glc", 14, 14),
                             ("op", 18, 15), ("dfmt", 22, 19), ("nfmt", 25, 23), ("encoding", 31, 26, 0x3A),
                             ("vaddr", 39, 32), ("vdata", 47, 40), ("srsrc", 52, 48), (_R, 53, 53),
                             ("slc", 54, 54), ("tfe", 55, 55), ("soffset", 63, 56)])
MIMG = Format("MIMG", 64, [(_R, 7, 0), ("dmask", 11, 8), ("unorm", 12, 12), ("glc", 13, 13), ("da", 14, 14),
                           ("a16", 15, 15), ("tfe", 16, 16), ("lwe", 17, 17), ("op", 24, 18), ("slc", 25, 25),
                           ("encoding", 31, 26, 0x3C), ("vaddr", 39, 32), ("vdata", 47, 40),
                           ("srsrc", 52, 48), ("ssamp", 57, 53), (_R, 62, 58), ("d16", 63, 63)])
#: FLAT, GLOBAL and SCRATCH share the format; ``seg`` picks the segment (0 flat, 1 scratch,
#: 2 global) and ``offset`` is 13 bits, signed for GLOBAL/SCRATCH (12 unsigned for FLAT).
FLAT = Format("FLAT", 64, [("offset", 12, 0), ("lds", 13, 13), ("seg", 15, 14), ("glc", 16, 16),
                           ("slc", 17, 17), ("op", 24, 18), (_R, 25, 25), ("encoding", 31, 26, 0x37),
                           ("addr", 39, 32), ("data", 47, 40), ("saddr", 54, 48), ("nv", 55, 55),
                           ("vdst", 63, 56)])
EXP = Format("EXP", 64, [("en", 3, 0), ("tgt", 9, 4), ("compr", 10, 10), ("done", 11, 11), ("vm", 12, 12),
                         (_R, 25, 13), ("encoding", 31, 26, 0x31), ("vsrc0", 39, 32), ("vsrc1", 47, 40),
                         ("vsrc2", 55, 48), ("vsrc3", 63, 56)])

#: The ``simm16`` of ``s_waitcnt`` (GFX9, Vega ISA guide 4.4): vmcnt is 6 bits, split in two.
WAITCNT = Format("WAITCNT", 16, [("vmcnt_lo", 3, 0), ("expcnt", 6, 4), (_R, 7, 7), ("lgkmcnt", 11, 8),
                                 (_R, 13, 12), ("vmcnt_hi", 15, 14)])
WAITCNT.dwords = 1

#: Every format, by name.
FORMATS = {f.name: f for f in (SOP2, SOPK, SOP1, SOPC, SOPP, SMEM, VOP2, VOP1, VOPC, VOP3A, VOP3B, VOP3P,
                               SDWA, SDWAB, DPP, VINTRP, DS, MUBUF, MTBUF, MIMG, FLAT, EXP, WAITCNT)}

#: Instruction formats a first dword can start, most fixed bits first, so that the first
#: match is the format (SOPK's 4 fixed bits also prefix SOP1/SOPC/SOPP; VOP3P's prefix is
#: VOP3's opcode space 0x380 and up).  VOP3b shares VOP3a's encoding bits: the opcode tells.
_BY_FIXED_BITS = tuple(sorted((f for f in FORMATS.values() if f.fixed_mask and f is not VOP3B),
                              key=lambda f: -bin(f.fixed_mask).count("1")))
#: Every format's fixed bits lie in bits 31..23 of the first dword: the format of each of
#: the 512 values of those bits, looked up by :func:`identify`.
_TOP = 23
assert all(f.fixed_mask >> _TOP << _TOP == f.fixed_mask for f in _BY_FIXED_BITS)
_BY_TOP = tuple(next((f for f in _BY_FIXED_BITS if (t << _TOP) & f.fixed_mask == f.fixed_value), None)
                for t in range(1 << (32 - _TOP)))


def identify(w: int) -> Format | None:
    """The format whose fixed encoding bits the first dword ``w`` carries (VOP3a for both
    VOP3 forms), or None for no GFX9 format."""
    return _BY_TOP[w >> _TOP]
