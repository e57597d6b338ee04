"""vlpc.isa.classes: one instruction-class list for the emulator, the timing model and the reports."""

from __future__ import annotations

import vlpc.isa as isa
from vlpc.isa.classes import CATEGORIES, CATEGORY, EXECUTION_CLASSES, category_of, execution_class
from vlpc.report import INSTRUCTION_CLASSES
from vlpc.runtime.emulator import core
from vlpc.runtime.emulator.decode import decode_at


def test_every_row_has_an_execution_class_from_its_issue_class():
    for mn, row in isa.table().items():
        c = execution_class(mn)
        assert c in EXECUTION_CLASSES, mn
        if row.issue_class in ("message", "export") or (row.encoding == "SOPP" and row.issue_class == "salu"):
            assert c == "other", mn  # program control without scalar ALU work: s_endpgm, s_sendmsg, exp
        else:
            assert c == row.issue_class, mn
    assert execution_class("not_an_instruction") == "other"


def test_categories_cover_the_classes():
    assert tuple(CATEGORY) == EXECUTION_CLASSES
    assert set(CATEGORY.values()) == set(CATEGORIES)
    assert category_of("salu") == category_of("smem") == "scalar"
    assert [category_of(c) for c in ("waitcnt", "nop", "barrier", "other", "?")] == ["internal"] * 5


def test_the_emulator_and_the_report_use_the_one_list():
    assert core.CLASSES is EXECUTION_CLASSES
    assert INSTRUCTION_CLASSES == tuple(c for c in EXECUTION_CLASSES if c != "other")


def test_decoded_instructions_classify_by_the_table():
    want = {"v_fma_f32": "valu", "v_nop": "nop", "s_endpgm": "other", "s_waitcnt": "waitcnt",
            "s_barrier": "barrier", "s_cbranch_scc0": "branch", "s_setpc_b64": "branch",
            "s_add_u32": "salu", "s_load_dwordx4": "smem", "global_load_dword": "vmem",
            "buffer_store_dword": "vmem", "ds_read_b128": "lds", "s_nop": "nop", "s_sendmsg": "other"}
    for mn, cls in want.items():
        row = isa.lookup(mn)
        assert core.classify(decode_at(row.sample, 0)) == cls, mn
        if row.sample_e64:
            assert core.classify(decode_at(row.sample_e64, 0)) == cls, mn
