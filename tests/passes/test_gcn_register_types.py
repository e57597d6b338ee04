"""The gcn dialect's register types compare by kind, width and registers, and what compares them.

``!gcn.sgpr<...>``/``!gcn.vgpr<...>`` once compared equal whatever their registers (their
parameters were not dataclass fields, so xDSL's generated ``__eq__``/``__hash__`` compared
nothing): ``!gcn.sgpr<s1>`` equalled ``!gcn.sgpr<s[5:6]>``.  These tests pin the fixed
equality, the printed/parsed spellings (the ISA's ``s5``, ``v[8:11]``), the parser's check
that a value is used with the type it was defined with (xDSL compares the types), and the
verifiers that now say "same kind and width" (and, once allocated, "same registers")
where a loop, a sub-range, a register sequence or a load's merge value needs it.
"""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import IntAttr, ModuleOp, NoneAttr, StringAttr
from xdsl.ir import Block, Region
from xdsl.irdl import AnyAttr, AnyOf, BaseAttr, RangeLengthConstraint, RangeOf
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from vlpc.errors import DiagnosticError
from vlpc.compiler import make_context, parse, print_ir
from vlpc.dialects import gcn

S, V = gcn.SGPRType, gcn.VGPRType


# ---- equality and hashing ---------------------------------------------------------------


def test_register_types_differ_by_kind_width_and_registers():
    """Each of these names other registers (or none yet): no two are equal, and as set
    members or dict keys each stays its own entry (the broken equality made one of each kind)."""
    distinct = [S.at(5), S.at(6), S.at(5, 2), S.at(6, 2), S.at(4, 4), S.unallocated(1), S.unallocated(2),
                V.at(5), V.at(5, 2), V.unallocated(1), V.unallocated(4)]
    for i, a in enumerate(distinct):
        for j, b in enumerate(distinct):
            assert (a == b) == (i == j), (a, b)
            assert (a != b) == (i != j), (a, b)
    assert len(set(distinct)) == len(distinct)
    assert len({t: str(t) for t in distinct}) == len(distinct)
    # within a kind the hashes differ too (not promised in general, but the bug gave one hash
    # for all; as in xDSL's dataclass hash, an SGPR and a VGPR range of one index and width
    # hash alike and differ by equality)
    for kind in (S, V):
        ours = [t for t in distinct if type(t) is kind]
        assert len({hash(t) for t in ours}) == len(ours)


def test_equal_register_types_built_apart_are_equal_and_hash_alike():
    """A type built from its parameters (not the shared instance ``at``/``unallocated`` keep)
    equals the shared one: equality is by value, not identity."""
    for shared, fresh in ((S.at(5, 2), S(IntAttr(2), IntAttr(5))), (V.at(0), V(IntAttr(1), IntAttr(0))),
                          (S.unallocated(4), S(IntAttr(4), NoneAttr()))):
        assert fresh is not shared
        assert fresh == shared and hash(fresh) == hash(shared)
    assert S.at(3) != V.at(3) and S.unallocated(1) != V.unallocated(1)  # same parameters, other kind


def test_special_registers_compare_by_name():
    exec_, vcc = gcn.SpecialRegType(StringAttr("exec")), gcn.SpecialRegType(StringAttr("vcc"))
    assert exec_ != vcc and exec_ == gcn.exec_type() and hash(exec_) == hash(gcn.exec_type())
    assert len({exec_, vcc, gcn.SpecialRegType(StringAttr("m0"))}) == 3


def test_kind_and_width_ignores_only_the_registers():
    assert gcn.kind_and_width(S.at(7, 2)) == gcn.kind_and_width(S.unallocated(2)) == gcn.kind_and_width(S.at(0, 2))
    assert gcn.kind_and_width(S.at(7, 2)) != gcn.kind_and_width(S.at(7, 1))
    assert gcn.kind_and_width(S.at(7, 2)) != gcn.kind_and_width(V.at(7, 2))


# ---- the remembered constraint checks key types by what the constraints see --------------


def _names_only_kinds(constr) -> bool:
    """Whether an operand/result constraint admits types by their class alone (a count of
    values, as single and optional operands have, constrains no type)."""
    if isinstance(constr, AnyAttr | BaseAttr):
        return True
    if isinstance(constr, AnyOf):
        return all(_names_only_kinds(c) for c in constr.attr_constrs)
    if isinstance(constr, RangeLengthConstraint):
        return _names_only_kinds(constr.constraint)
    if isinstance(constr, RangeOf):
        return _names_only_kinds(constr.constr)
    return False


def test_gcn_operand_and_result_constraints_name_only_kinds():
    """vlpc.compiler remembers accepted signatures keyed by ``gcn.kind_and_width``
    (kind and width of a register type, not its registers); that is sound while every gcn
    operand/result constraint names only attribute classes.  A constraint on particular
    registers (or any other attribute value) must change that key."""
    checked = 0
    for cls in gcn.GCN.operations:
        d = cls.get_irdl_definition()
        for name, od in (*d.operands, *d.results):
            assert _names_only_kinds(od.constr), f"{cls.name} {name}: {od.constr}"
            checked += 1
    assert checked > 100
    sig = gcn.kind_and_width
    assert sig(S.at(4)) == sig(S.at(9)) == sig(S.unallocated(1))
    assert sig(S.at(4)) != sig(S.at(4, 2)) and sig(S.at(4)) != sig(V.at(4))


def test_a_remembered_check_still_refuses_the_wrong_kind_of_register():
    """After s_mov_b32 s4 <- s5 passed (and was remembered), s_mov_b32 from a VGPR is refused."""
    import vlpc.compiler  # noqa: F401  (installs the remembered checks)

    block = Block(arg_types=[S.at(5), V.at(5)])
    good = gcn.SMovB32Op(block.args[0])
    good.verify()
    good.verify()
    bad = gcn.SMovB32Op(block.args[0])
    bad.operands = [block.args[1]]
    with pytest.raises(VerifyException):
        bad.verify()


# ---- printing and parsing ------------------------------------------------------------------


@pytest.mark.parametrize("text, width, first, cls", [
    ("!gcn.sgpr<x1>", 1, None, S), ("!gcn.sgpr<x16>", 16, None, S), ("!gcn.sgpr<s5>", 1, 5, S),
    ("!gcn.sgpr<s[8:11]>", 4, 8, S), ("!gcn.vgpr<v0>", 1, 0, V), ("!gcn.vgpr<v[2:3]>", 2, 2, V),
    ("!gcn.vgpr<x4>", 4, None, V)])
def test_register_type_spellings_round_trip(text, width, first, cls):
    """The assembly spelling in the type (LLVM AMDGPUOperandSyntax.rst: ``s[lo:hi]`` inclusive) parses to the
    registers it names, and prints back the same."""
    t = Parser(make_context(), text).parse_attribute()
    assert type(t) is cls and t.n == width and (t.first if t.is_allocated else None) == first
    assert t == (cls.unallocated(width) if first is None else cls.at(first, width))
    assert str(t) == text


def _kernel(body: str, args: str = "%0: !gcn.sgpr<s[0:1]>, %1: !gcn.vgpr<v0>, %2: !gcn.special<exec>") -> str:
    return ('builtin.module {\n  "gcn.kernel"() <{sym_name = "k"}> ({\n'
            f"  ^bb0({args}):\n{body}"
            '    "gcn.s_endpgm"() : () -> ()\n  }) : () -> ()\n}\n')


ALLOCATED = ('    %3 = "gcn.subreg"(%0) <{offset = 1 : i64}> : (!gcn.sgpr<s[0:1]>) -> !gcn.sgpr<s1>\n'
             '    %4 = "gcn.s_mov_b32"(%3) : (!gcn.sgpr<s1>) -> !gcn.sgpr<s2>\n')


def test_module_round_trip_keeps_every_register():
    """print(parse(text)) is the text and every value has the registers written; the parsed
    module is structurally equivalent to a second parse, and not to one whose kernel argument
    is in another VGPR (xDSL compares block argument types: with the broken equality it was;
    it does not compare op result types)."""
    text = _kernel(ALLOCATED)
    module = parse(text)
    assert print_ir(module) == text
    kernel = module.body.block.first_op
    assert [a.type for a in kernel.body.block.args] == [S.at(0, 2), V.at(0), gcn.exec_type()]
    assert [r.type for op in kernel.body.walk() for r in op.results] == [S.at(1), S.at(2)]
    assert module.is_structurally_equivalent(parse(text))
    assert not module.is_structurally_equivalent(parse(text.replace("!gcn.vgpr<v0>", "!gcn.vgpr<v1>")))


def test_a_value_used_with_other_registers_than_defined_is_a_located_error():
    """%3 is defined in s1 and used as s4: xDSL's parser refuses it (it compares the types;
    it accepted this before), and vlpc reports file:line:col."""
    text = _kernel(ALLOCATED.replace('"gcn.s_mov_b32"(%3) : (!gcn.sgpr<s1>)', '"gcn.s_mov_b32"(%3) : (!gcn.sgpr<s4>)'))
    with pytest.raises(DiagnosticError) as e:
        parse(text, "k.mlir")
    msg = str(e.value)
    assert msg.startswith("k.mlir:5:") and "!gcn.sgpr<s4>" in msg and "!gcn.sgpr<s1>" in msg, msg


# ---- verifiers ------------------------------------------------------------------------------


def _loop_text(init: str, arg: str, yielded: str, result: str) -> str:
    return _kernel(
        f'    %3 = "gcn.subreg"(%0) <{{offset = 1 : i64}}> : (!gcn.sgpr<s[0:1]>) -> {init}\n'
        f'    %4 = "gcn.loop"(%3) <{{label = "L"}}> ({{\n'
        f"    ^bb0(%5: {arg}):\n"
        f'      %6 = "gcn.s_mov_b32"(%5) : ({arg}) -> {yielded}\n'
        f'      "gcn.loop_back"(%6) <{{condition = "scc1"}}> : ({yielded}) -> ()\n'
        f"    }}) : ({init}) -> {result}\n")


def test_a_loop_carries_one_register_range():
    """The loop-carried value's init, block argument, yielded value and result: all of one
    kind and width before allocation, all in the same registers after it."""
    x1, s1 = "!gcn.sgpr<x1>", "!gcn.sgpr<s1>"
    parse(_loop_text(x1, x1, x1, x1))
    parse(_loop_text(s1, s1, s1, s1))
    parse(_loop_text(s1, x1, x1, x1))  # the init allocated first (a kernel argument's register)


@pytest.mark.parametrize("init, arg, yielded, result, message", [
    ("!gcn.sgpr<x1>", "!gcn.sgpr<x2>", "!gcn.sgpr<x1>", "!gcn.sgpr<x1>",
     "gcn.loop: loop-carried value 0: the block argument is !gcn.sgpr<x2>, but the init is !gcn.sgpr<x1> "
     "(one register range: same kind and width)"),
    ("!gcn.sgpr<x1>", "!gcn.sgpr<x1>", "!gcn.sgpr<x1>", "!gcn.vgpr<x1>",
     "gcn.loop: loop-carried value 0: the result is !gcn.vgpr<x1>, but the init is !gcn.sgpr<x1>"),
    ("!gcn.sgpr<s1>", "!gcn.sgpr<s1>", "!gcn.sgpr<s2>", "!gcn.sgpr<s1>",
     "gcn.loop: loop-carried value 0: the yielded value is !gcn.sgpr<s2>, but the loop carries it in s1.."),
])
def test_a_loop_whose_carried_value_changes_registers_is_refused(init, arg, yielded, result, message):
    """Accepted silently before (the verifier compared nothing): the back edge has no copy,
    so a yielded value in other registers than the block argument is a wrong loop."""
    with pytest.raises(DiagnosticError) as e:
        parse(_loop_text(init, arg, yielded, result), "l.mlir")
    assert str(e.value).startswith("l.mlir:") and message in str(e.value), str(e.value)


def _args():
    """Registers a kernel could hand over: s[4:7], v0, v[1:2], s8."""
    return Block(arg_types=[S.at(4, 4), V.at(0), V.at(1, 2), S.at(8)]).args


def _built(cls, operands, result_types, properties=None):
    """An op of ``cls`` with the given result types, by xDSL's generic builder (the ops'
    own constructors give unallocated results)."""
    from xdsl.irdl import IRDLOperation

    op = cls.__new__(cls)
    IRDLOperation.__init__(op, operands=operands, result_types=result_types, properties=properties or {})
    return op


def _offset(n: int):
    return {"offset": gcn.IntegerAttr(n, gcn.i64)}


def test_an_allocated_subreg_must_name_its_part_of_the_source():
    src = _args()[0]
    gcn.SubregOp(src, 2, 2).verify()
    _built(gcn.SubregOp, [src], [S.at(6, 2)], _offset(2)).verify()  # s[4:7][2..3] is s[6:7]
    bad = _built(gcn.SubregOp, [src], [S.at(5, 2)], _offset(2))
    with pytest.raises(VerifyException, match=r"registers 2.. of !gcn.sgpr<s\[4:7\]> are s6.., but the result is "
                                              r"!gcn.sgpr<s\[5:6\]>"):
        bad.verify()


def test_a_reg_sequence_is_its_parts_in_order():
    s47, v0, v12, s8 = _args()
    gcn.RegSequenceOp([v0, v12]).verify()
    _built(gcn.RegSequenceOp, [[v0, v12]], [V.at(0, 3)]).verify()
    bad = _built(gcn.RegSequenceOp, [[v0, v12]], [V.at(1, 3)])  # the parts sit at v0 and v[1:2]: not from v1
    with pytest.raises(VerifyException, match=r"part 0 is !gcn.vgpr<v0>, but registers 0.. of the result"):
        bad.verify()
    short = _built(gcn.RegSequenceOp, [[v0, v12]], [V.unallocated(4)])
    with pytest.raises(VerifyException, match="the parts are 3 registers, the result !gcn.vgpr<x4> is 4"):
        short.verify()
    mixed = gcn.RegSequenceOp([v0, s8])
    with pytest.raises(VerifyException, match="part 1 is !gcn.sgpr<s8>, the result !gcn.vgpr<x2>: parts and "
                                              "result must be the same register kind"):
        mixed.verify()


def test_a_global_load_merges_into_a_value_of_its_width():
    s47, v0, v12, s8 = _args()
    saddr = gcn.SubregOp(s47, 0, 2).result
    gcn.GlobalLoadDwordx2Op(v0, saddr, merge=v12).verify()
    load = gcn.GlobalLoadDwordOp(v0, saddr, merge=v12)  # 1 dword loaded, a 2-register merge value
    with pytest.raises(VerifyException, match=r"merge is !gcn.vgpr<v\[1:2\]>, the result !gcn.vgpr<x1>"):
        load.verify()
    _built(gcn.GlobalLoadDwordx2Op, [v0, saddr, [v12]], [V.at(1, 2)], _offset(0)).verify()
    moved = _built(gcn.GlobalLoadDwordx2Op, [v0, saddr, [v12]], [V.at(3, 2)], _offset(0))
    with pytest.raises(VerifyException, match="both must be one register range"):
        moved.verify()
    wide = _built(gcn.GlobalLoadDwordOp, [v0, saddr, []], [V.unallocated(2)], _offset(0))
    with pytest.raises(VerifyException, match="gcn.global_load_dword writes 1 VGPRs, result has 2"):
        wide.verify()


def test_a_global_store_stores_its_width():
    """``global_store_dwordxN`` stores N VGPRs: a data range of another width is refused (an
    instruction llvm-mc would reject; the verifier once accepted it for ``global_store_dword``)."""
    s47, v0, v12, s8 = _args()
    saddr = gcn.SubregOp(s47, 0, 2).result
    gcn.GlobalStoreDwordx2Op(v0, v12, saddr).verify()
    with pytest.raises(VerifyException, match="stores 1 VGPRs, data has 2"):
        gcn.GlobalStoreDwordOp(v0, v12, saddr).verify()
    with pytest.raises(VerifyException, match="stores 4 VGPRs, data has 2"):
        gcn.GlobalStoreDwordx4Op(v0, v12, saddr).verify()
