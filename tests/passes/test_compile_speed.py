"""What the compile-speed work (issue 18) must not change: a remembered constraint check never
hides a bad operation, and the ziglang toolchain runs the wheel's ``zig`` without a Python."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

import vlpc.compiler  # noqa: F401  (installs the remembered checks on vlpc's dialects)
from vlpc.dialects import gcn


def _values():
    block = Block(arg_types=[gcn.SGPRType.at(4), gcn.VGPRType.at(7), gcn.SGPRType.at(5)])
    return block.args


def test_a_bad_operand_type_fails_every_time_even_after_good_ones():
    """s_mov_b32 takes an SGPR (gcn.py's definition); a VGPR operand is refused by xDSL's
    constraint check on each verification, before and after valid ops of the class passed."""
    s4, v7, s5 = _values()
    good = gcn.SMovB32Op(s4)
    for _ in range(3):
        good.verify()  # accepted, then remembered
    bad = gcn.SMovB32Op(s4)
    bad.operands = [v7]
    for _ in range(3):
        with pytest.raises(VerifyException, match="gcn.sgpr|SGPRType|expected"):
            bad.verify()
    gcn.SMovB32Op(s5).verify()  # another accepted signature


def test_a_remembered_signature_is_still_checked_per_op_for_structure():
    """The per-op checks of Operation.verify still run: an op using an erased value is refused
    even when its signature (class, types, properties) was accepted before."""
    s4, _, _ = _values()
    gcn.SMovB32Op(s4).verify()
    holder = Block(arg_types=[gcn.SGPRType.at(4)])
    op = gcn.SMovB32Op(holder.args[0])
    op.verify()
    holder.args[0].erase(safe_erase=False)
    with pytest.raises(ValueError, match="Erased SSA value"):
        op.verify()


def test_ziglang_toolchain_runs_zig_directly():
    from vlpc.runtime.toolchain import _zig

    tc = _zig()
    if tc is None:
        pytest.skip("the ziglang wheel is not installed")
    exe = tc.assembler[0]
    assert os.path.basename(exe) in ("zig", "zig.exe") and os.access(exe, os.X_OK)
    assert tc.assembler[1:] == ("clang",) and tc.linker == (exe, "ld.lld")


def test_isolated_from_above_still_refuses_a_value_from_outside():
    """builtin.module is IsolatedFromAbove (vlpc.compiler's faster check of it): an op inside
    using a value defined outside is refused with xDSL's message, one inside is accepted."""
    from xdsl.dialects.builtin import ModuleOp

    outside = Block(arg_types=[gcn.SGPRType.at(4)])
    inner = Block(arg_types=[gcn.SGPRType.at(6)])
    ok = gcn.SMovB32Op(inner.args[0])
    inner.add_op(ok)
    from xdsl.ir import Region

    holder = ModuleOp(Region([inner]))
    holder.verify()
    bad = gcn.SMovB32Op(outside.args[0])
    module = ModuleOp([bad])
    with pytest.raises(VerifyException, match="defined out of its IsolatedFromAbove parent"):
        module.verify()
    uses_module_result = gcn.SMovB32Op(ok.sdst)  # a result defined inside, used inside: fine
    inner.add_op(uses_module_result)
    holder.verify()


def test_isolated_from_above_nested_gives_xdsls_verdicts():
    """A module inside a module (both IsolatedFromAbove): the outer check leaves the inner
    module's operations to the inner one's check.  Same verdict and message as xDSL's own check
    for a value from outside used in the inner module, a value of the inner module used outside
    it, and a valid nesting."""
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Region
    from xdsl.traits import IsolatedFromAbove

    ours = IsolatedFromAbove.verify
    xdsls = ours.xdsl_verify

    def verdict(check, module):
        try:
            for op in module.walk():  # (every IsolatedFromAbove operation, as Operation.verify does)
                if op.has_trait(IsolatedFromAbove):
                    check(IsolatedFromAbove(), op)
        except VerifyException as e:
            return str(e)
        return None

    def nested(case):
        outer = Block(arg_types=[gcn.SGPRType.at(4)])
        inner = Block(arg_types=[gcn.SGPRType.at(6)])
        defined = gcn.SMovB32Op(inner.args[0])
        inner.add_op(defined)
        if case == "from outside":
            inner.add_op(gcn.SMovB32Op(outer.args[0]))
        outer.add_op(ModuleOp(Region([inner])))
        if case == "from the inner module":
            outer.add_op(gcn.SMovB32Op(defined.sdst))
        return ModuleOp(Region([outer]))

    for case in ("valid", "from outside", "from the inner module"):
        a, b = verdict(ours, nested(case)), verdict(xdsls, nested(case))
        assert a == b, (case, a, b)
    assert verdict(ours, nested("valid")) is None
    assert "defined out of its IsolatedFromAbove parent" in verdict(ours, nested("from outside"))


def _built_by_xdsl(cls, **kwargs):
    """An op of ``cls`` built by xDSL's generic IRDL builder (the path vlpc.dialects.op_init skips)."""
    from xdsl.irdl import IRDLOperation

    op = cls.__new__(cls)
    IRDLOperation.__init__(op, **kwargs)
    return op


def _same_op(a, b) -> None:
    assert type(a) is type(b)
    assert list(a.operands) == list(b.operands)
    assert [r.type for r in a.results] == [r.type for r in b.results]
    assert a.properties == b.properties and a.attributes == b.attributes
    for op in (a, b):  # each operand records its use by the op
        assert all(any(u.operation is op and u.index == i for u in o.uses) for i, o in enumerate(op.operands))


def test_fast_op_builder_builds_what_xdsl_builds():
    """gcn ops built through vlpc.dialects.op_init equal those of xDSL's builder: single,
    optional (given and empty) and variadic operands, results, properties with None dropped
    and default properties filled in."""
    s4, v7, s5 = _values()
    sgpr = gcn.SGPRType.unallocated(1)
    cases = [
        (gcn.SubregOp, dict(operands=[s4], result_types=[sgpr], properties={"offset": gcn.IntegerAttr(0, gcn.i64)})),
        (gcn.SMovB32Op, dict(operands=[[]], result_types=[sgpr], properties={"imm": gcn.IntegerAttr(5, gcn.i64)})),
        (gcn.SMovB32Op, dict(operands=[[s5]], result_types=[sgpr])),
        (gcn.RegSequenceOp, dict(operands=[[s4, s5]], result_types=[gcn.SGPRType.unallocated(2)])),
        (gcn.SWaitcntOp, dict(properties={"vmcnt": None, "lgkmcnt": gcn.IntegerAttr(0, gcn.i64)})),
        (gcn.GlobalStoreDwordx2Op, dict(operands=[v7, v7, s4],
                                        attributes={"comment": gcn.StringAttr("x"), "unused": None})),
    ]
    for cls, kwargs in cases:
        fast = cls.__new__(cls)
        gcn.GCNInstruction.__init__(fast, **kwargs)
        _same_op(fast, _built_by_xdsl(cls, **kwargs))
    assert gcn.SubregOp(s4, 3).offset == gcn.IntegerAttr(3, gcn.i64)
    assert gcn.GlobalStoreDwordx2Op(v7, v7, s4).offset.value.data == 0  # the default property


def test_fast_op_builder_leaves_bad_arguments_to_xdsl():
    """A wrong operand count or a None for a required operand still gets xDSL's error."""
    s4, _, s5 = _values()
    with pytest.raises(ValueError, match="Expected 1 operand"):
        gcn.GCNInstruction.__init__(gcn.SubregOp.__new__(gcn.SubregOp), operands=[s4, s5],
                                    result_types=[gcn.SGPRType.unallocated(1)])
    with pytest.raises(ValueError, match="non-variadic"):
        gcn.GCNInstruction.__init__(gcn.SubregOp.__new__(gcn.SubregOp), operands=[None],
                                    result_types=[gcn.SGPRType.unallocated(1)])


def test_shared_integer_properties_are_the_values_given():
    from vlpc.dialects.op_init import i64_attr

    assert i64_attr(7) is i64_attr(7)
    assert i64_attr(-3) == gcn.IntegerAttr(-3, gcn.i64)
    assert i64_attr(True) == gcn.IntegerAttr(True, gcn.i64)  # not the cached 1's object


def test_kernels_are_found_without_walking_their_bodies_and_never_nest():
    """passes.common.kernels finds what a full walk finds (the SGEMM example's split-K plan has
    two), and a gcn.kernel nested in another is refused by the verifier (so not walking kernel
    bodies misses nothing)."""
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Region

    from vlpc.passes.common import kernels
    from vlpc.compiler import make_context, parse, pipeline, run_passes

    text = (Path(__file__).resolve().parents[2] / "examples" / "sgemm_nt.mlir").read_text()
    ctx = make_context()
    module = parse(text, "sgemm_nt.mlir", ctx)
    run_passes(module, pipeline("gfx906", linalg=False, split_k=4)[:5], ctx)
    found = kernels(module)
    assert found == [o for o in module.walk() if isinstance(o, gcn.KernelOp)] and len(found) == 2

    inner = gcn.KernelOp("inner", Region(Block([gcn.SEndpgmOp()])))
    outer = gcn.KernelOp("outer", Region(Block([inner, gcn.SEndpgmOp()])))
    ModuleOp([gcn.KernelOp("alone", Region(Block([gcn.SEndpgmOp()])))]).verify()
    with pytest.raises(VerifyException, match="nested in gcn.kernel @outer"):
        ModuleOp([outer]).verify()


@pytest.mark.parametrize("command", ["compile", "opt", "run", "bench", "report", "doctor", "tune", "cache"])
def test_one_command_parser_is_the_full_parsers_part(command, capsys):
    """main() builds only the named command's parser: its --help (every option, default and
    choice) is the full parser's, and the full parser lists every command."""
    from vlpc.cli import COMMANDS, build_parser

    def help_of(parser) -> str:
        with pytest.raises(SystemExit):
            parser.parse_args([command, "--help"])
        return capsys.readouterr().out

    assert help_of(build_parser(only=command)) == help_of(build_parser())
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    top = capsys.readouterr().out
    assert all(c in top for c in COMMANDS)


def test_gc_is_frozen_only_when_main_is_the_program(tmp_path):
    """main() run as the program (argv None: the process exits next) freezes the objects left
    for the exit's teardown (no last full collection); called with arguments (in process, as
    the tests do) it leaves the collector as it was, enabled."""
    import subprocess
    import sys

    code = ("import gc, sys\nfrom vlpc.cli import main\n"
            "assert main(['cache', 'info']) == 0 and gc.get_freeze_count() == 0 and gc.isenabled()\n"
            "sys.argv = ['vlpc', 'compile', sys.argv[1], '--emit', 'asm', '-o', sys.argv[2]]\n"
            "rc = main()\nprint(rc, gc.get_freeze_count() > 0, gc.isenabled())")
    src = Path(__file__).resolve().parents[2] / "examples" / "sgemm_nt.mlir"
    proc = subprocess.run([sys.executable, "-c", code, str(src), str(tmp_path / "k.s")], capture_output=True,
                          text=True, check=True, env=dict(os.environ, VLPC_CACHE_DIR=str(tmp_path / "cache")))
    assert proc.stdout.splitlines()[-1].split() == ["0", "True", "True"], proc.stdout + proc.stderr
    assert (tmp_path / "k.s").read_text().count("v_fma_f32") > 100
