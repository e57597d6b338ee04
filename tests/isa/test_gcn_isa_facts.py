"""The gcn dialect and the waitcnt/hazard passes read instruction facts from the gfx906
table (vlpc.isa), and a mnemonic the table does not have cannot become an op class.

Expected values come from the AMD Vega ISA guide (widths in the instruction names, DS
offset units, section 4.4's counters and return order) and LLVM (gfx908/gfx10-only
mnemonics, GCNHazardRecognizer wait states), not from the code under test.
"""

from __future__ import annotations

from typing import ClassVar

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Block, Region
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from vlpc import isa
from vlpc.dialects import gcn
from vlpc.passes.gcn_insert_hazard_nops import GcnInsertHazardNopsPass
from vlpc.passes.gcn_insert_waitcnt import GcnInsertWaitcntPass


@pytest.mark.parametrize("mnemonic", [
    "v_fma_f33",              # misspelt
    "s_load_dwordx3",         # no such width
    "v_mfma_f32_4x4x1f32",    # gfx908 (MAI), not gfx906
    "v_dot2c_f32_f16",        # gfx10 / gfx908, not gfx906
    "v_fma_f32_sdwa",         # v_fma_f32 is VOP3-only: no SDWA form
    "v_add_f64_e32",          # VOP3-only: no 32-bit encoding
])
def test_mnemonic_outside_the_table_is_rejected_at_definition(mnemonic):
    with pytest.raises(TypeError, match=mnemonic):
        class _Bad(gcn.VOP1Base):  # noqa: F841
            name = "gcn.test_bad"
            MNEMONIC: ClassVar[str] = mnemonic


def test_valid_forms_are_accepted():
    class Sdwa(gcn.VOP1Base):
        name = "gcn.test_v_add_f32_sdwa"
        MNEMONIC: ClassVar[str] = "v_add_f32_sdwa"

    assert Sdwa.ISA is isa.lookup("v_add_f32") and Sdwa.UNIT == "valu"


def test_restated_fact_that_disagrees_with_the_table_is_rejected():
    with pytest.raises(TypeError, match="DWORDS"):
        class _Wrong(gcn.GlobalLoadBase):  # noqa: F841
            name = "gcn.test_wrong"
            MNEMONIC: ClassVar[str] = "global_load_dwordx2"
            DWORDS: ClassVar[int] = 4


def test_every_op_class_has_its_table_row():
    ops = [c for c in gcn.GCN.operations if issubclass(c, gcn.GCNInstruction)]
    assert len(ops) > 60
    for c in ops:
        if c.ISA is None:  # prints no instruction, or the s_cbranch_* family
            assert c.MNEMONIC in ("", "s_cbranch"), c
            continue
        assert c.ISA is isa.lookup_form(c.MNEMONIC)
        assert c.UNIT == c.ISA.issue_class


def test_widths_come_from_the_table_and_match_the_isa_guide():
    # names: dword = 1, x2 = 2, ... (AMD Vega ISA, SMEM/FLAT/DS opcode tables)
    assert {w: c.MNEMONIC for w, c in gcn.S_LOADS.items()} == {
        1: "s_load_dword", 2: "s_load_dwordx2", 4: "s_load_dwordx4", 8: "s_load_dwordx8", 16: "s_load_dwordx16"}
    assert {w: c.MNEMONIC for w, c in gcn.DS_READS.items()} == {1: "ds_read_b32", 2: "ds_read_b64", 4: "ds_read_b128"}
    assert gcn.GlobalStoreDwordx4Op.DWORDS == 4 and gcn.GlobalAtomicCmpswapX2Op.DWORDS == 2
    assert gcn.VAddF64Op.WIDTH == 2 and gcn.VAddF32Op.WIDTH == 1
    # DS_WRITE2[ST64]: offsets in units of the element size, x64 for st64
    assert (gcn.DsWrite2B32Op.OFFSET_UNIT, gcn.DsWrite2st64B32Op.OFFSET_UNIT,
            gcn.DsWrite2st64B64Op.OFFSET_UNIT) == (4, 256, 512)
    # section 4.4: SMEM returns out of order in lgkmcnt; LDS in order in lgkmcnt; VMEM in order in vmcnt
    assert (gcn.SLoadDwordOp.ISA.counters, gcn.SLoadDwordOp.ISA.in_order) == (("lgkmcnt",), False)
    assert (gcn.DsReadB32Op.ISA.counters, gcn.DsReadB32Op.ISA.in_order) == (("lgkmcnt",), True)
    assert (gcn.GlobalLoadDwordOp.ISA.counters, gcn.GlobalLoadDwordOp.ISA.in_order) == (("vmcnt",), True)


def test_thin_ops_are_generated_from_the_table(monkeypatch):
    # a family base and a mnemonic give the class, its op name and its table facts
    monkeypatch.setattr(gcn, "TABLE_OPS", list(gcn.TABLE_OPS))   # (the dialect's list stays as it is)
    sub = gcn._table_op(gcn.VOP2Base, "v_min_f64")
    assert (sub.__name__, sub.name, sub.ISA, sub.WIDTH, sub.UNIT) == \
        ("VMinF64Op", "gcn.v_min_f64", isa.lookup("v_min_f64"), 2, "valu")
    assert "v_min_f64" in sub.__doc__ and sub in gcn.TABLE_OPS
    with pytest.raises(TypeError, match="v_min_f65"):
        gcn._table_op(gcn.VOP2Base, "v_min_f65")
    # the existing names and IR syntax: an _e64 mnemonic keeps the op name without it
    assert (gcn.VCmpNeU64Op.name, gcn.VCmpNeU64Op.MNEMONIC) == ("gcn.v_cmp_ne_u64", "v_cmp_ne_u64_e64")
    assert gcn.SAddcU32Op.IMPLICIT_USES == ("scc",) and gcn.SMulI32Op.IMPLICIT_DEFS == ()


def test_no_hand_written_thin_op_class_remains():
    # a class statement on a family base whose body only names the op and its mnemonic (a
    # docstring, ``name``, ClassVar data) belongs in a _table_op call instead
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(gcn))
    thin = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or not any(
                isinstance(b, ast.Name) and b.id.endswith("Base") for b in node.bases):
            continue
        body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        if all(isinstance(n, (ast.Assign, ast.AnnAssign)) for n in body):
            thin.append(node.name)
    assert thin == []
    assert len(gcn.TABLE_OPS) >= 55 and all(c in gcn.GCN.operations for c in gcn.TABLE_OPS)


def test_branch_condition_outside_the_table_fails_verification():
    assert {"scc0", "scc1", "execnz", "vccz"} <= gcn.branch_conditions()
    op = gcn.SCbranchForwardOp("scc2", ".Lx")
    with pytest.raises(Exception, match="s_cbranch_scc2 is not a gfx906 conditional branch"):
        op.verify()
    gcn.SCbranchForwardOp("vccnz", ".Lx").verify()


# ---- the passes, on instructions vlpc does not emit (defined here from the table) ----


@irdl_op_definition
class _FlatLoadDwordOp(gcn.GlobalLoadBase):
    name = "gcn.test_flat_load_dword"
    MNEMONIC: ClassVar[str] = "flat_load_dword"


@irdl_op_definition
class _SSetregOp(gcn.GCNInstruction):
    name = "gcn.test_s_setreg_b32"
    MNEMONIC: ClassVar[str] = "s_setreg_b32"
    src = operand_def(gcn.SGPRType)


@irdl_op_definition
class _SGetregOp(gcn.GCNInstruction):
    name = "gcn.test_s_getreg_b32"
    MNEMONIC: ClassVar[str] = "s_getreg_b32"
    sdst = result_def(gcn.SGPRType)


def _v(i, n=1):
    return gcn.VGPRType.at(i, n)


def _s(i, n=1):
    return gcn.SGPRType.at(i, n)


def _kernel(build):
    block = Block(arg_types=[_s(0, 2), _v(0, 2)])
    ops = build(*block.args)
    block.add_ops(ops + [gcn.SEndpgmOp()])
    kernel = gcn.KernelOp("k", Region(block))
    module = ModuleOp([kernel])
    return module, block


def _load(cls, vaddr, saddr, dst):
    return cls.create(operands=[vaddr, saddr], result_types=[dst],
                      properties={"offset": IntegerAttr(0, i64)})


def _fma(dst, a):
    return gcn.VFmaF32Op.create(operands=[a, a, a], result_types=[dst])


def _waits(block):
    return [(None if o.vmcnt is None else o.vmcnt.value.data, None if o.lgkmcnt is None else o.lgkmcnt.value.data)
            for o in block.ops if isinstance(o, gcn.SWaitcntOp)]


def test_waitcnt_in_order_vmem_uses_its_age():
    def build(kp, va):
        a = _load(gcn.GlobalLoadDwordOp, va, kp, _v(4))
        b = _load(gcn.GlobalLoadDwordOp, va, kp, _v(5))
        return [a, b, _fma(_v(6), a.results[0])]
    module, block = _kernel(build)
    GcnInsertWaitcntPass().apply(Context(), module)
    assert _waits(block) == [(1, None)]  # one younger VMEM load may stay outstanding


def test_waitcnt_flat_result_needs_both_counters_at_zero():
    # FLAT counts in vmcnt and lgkmcnt and may return out of order (ISA guide 4.4; LLVM
    # SIInsertWaitcnts): a younger in-order load does not make vmcnt(1) enough.
    def build(kp, va):
        f = _load(_FlatLoadDwordOp, va, kp, _v(4))
        b = _load(gcn.GlobalLoadDwordOp, va, kp, _v(5))
        return [f, b, _fma(_v(6), f.results[0])]
    module, block = _kernel(build)
    GcnInsertWaitcntPass().apply(Context(), module)
    assert _waits(block) == [(0, 0)]


def _nops(block):
    return [o.count.value.data for o in block.ops if isinstance(o, gcn.SNopOp)]


def test_hazard_setreg_then_getreg_from_the_table():
    def build(kp, va):
        return [_SSetregOp.create(operands=[kp]), _SGetregOp.create(result_types=[_s(5)])]
    module, block = _kernel(build)
    GcnInsertHazardNopsPass().apply(Context(), module)
    assert _nops(block) == [1]  # 2 wait states (LLVM GCNHazardRecognizer: SetRegWaitStates)


@pytest.mark.parametrize("cls,data_width,wide", [
    (gcn.GlobalStoreDwordx4Op, 4, True),
    (gcn.GlobalStoreDwordx2Op, 2, False),
    (gcn.GlobalAtomicCmpswapX2Op, 4, True),  # an atomic's 16-byte data counts too (mayStore)
])
def test_hazard_wide_store_data_overwritten_by_valu(cls, data_width, wide):
    def build(kp, va):
        data = gcn.RegSequenceOp.create(operands=[], result_types=[_v(8, data_width)])
        results = [_v(20, data_width // 2)] if cls is gcn.GlobalAtomicCmpswapX2Op else []
        store = cls.create(operands=[va, data.results[0], kp], result_types=results,
                           properties={} if results else {"offset": IntegerAttr(0, i64)})
        over = gcn.VMovB32Op.create(result_types=[_v(8)], properties={"imm": IntegerAttr(0, i64)})
        return [data, store, over]
    module, block = _kernel(build)
    GcnInsertHazardNopsPass().apply(Context(), module)
    assert _nops(block) == ([0] if wide else [])


def test_printer_refuses_a_line_outside_the_table():
    from vlpc.dialects.gcn_asm import _check_mnemonic
    from vlpc.errors import VlpcError

    op = gcn.SCbranchForwardOp("scc9", ".Lx")   # not verified: the printer still catches it
    with pytest.raises(VlpcError, match="s_cbranch_scc9"):
        _check_mnemonic(op, op.assembly_line())
    _check_mnemonic(gcn.SCbranchForwardOp("scc1", ".Lx"), "  s_cbranch_scc1 .Lx")
