"""Every instruction of the gfx906 table decodes to its own mnemonic in the emulator.

The machine-code samples come from the table (bytes LLVM's disassembler accepted,
tools/gen_isa_table.py), so the expected names are LLVM's, not the decoder's.
"""

from __future__ import annotations

import pytest

import vlpc.isa as isa
from vlpc.runtime.emulator.decode import decode_at

ROWS = list(isa.table().values())
_CLASS = {"VOP3a": "VOP3", "VOP3b": "VOP3", "GLOBAL": "FLAT", "SCRATCH": "FLAT"}


def test_every_row_decodes_to_its_mnemonic():
    bad = []
    for r in ROWS:
        ins = decode_at(r.sample, 0)
        if ins.mnemonic != r.mnemonic or ins.encoding != _CLASS.get(r.encoding, r.encoding):
            bad.append((r.mnemonic, r.encoding, ins.mnemonic, ins.encoding))
    assert not bad, bad[:20]


def test_every_e64_sdwa_dpp_form_decodes_to_its_mnemonic():
    bad = []
    n = 0
    for r in ROWS:
        for form, sample in (("e64", r.sample_e64), ("sdwa", r.sample_sdwa), ("dpp", r.sample_dpp)):
            if sample is None:
                continue
            n += 1
            ins = decode_at(sample, 0)
            ok = ins.mnemonic == r.mnemonic and ins.size == 8
            if form == "e64":
                ok = ok and ins.encoding == "VOP3"
            else:
                ok = ok and form in ins.f
            if not ok:
                bad.append((r.mnemonic, form, ins.mnemonic, ins.text))
    assert n > 600
    assert not bad, bad[:20]


@pytest.mark.parametrize("enc", ["MIMG", "VINTRP", "EXP"])
def test_graphics_rows_decode_unsupported_but_named(enc):
    rows = [r for r in ROWS if r.encoding == enc]
    assert rows
    for r in rows:
        ins = decode_at(r.sample, 0)
        assert ins.mnemonic == r.mnemonic and not ins.supported


def test_opcode_outside_the_table_is_named_by_class():
    # VOP1 opcode 0xff is not a gfx906 instruction
    word = (0x3F << 25) | (0xFF << 9) | 256
    ins = decode_at(word.to_bytes(4, "little") + b"\0" * 8, 0)
    assert not ins.supported and ins.mnemonic == "VOP1 opcode 255"
