"""What the compile-speed work (issue 18) must not change: a remembered constraint check never
hides a bad operation, and the ziglang toolchain runs the wheel's ``zig`` without a Python."""

from __future__ import annotations

import os

import pytest
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

import vlpc.pipeline  # noqa: F401  (installs the remembered checks on vlpc's dialects)
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
    """builtin.module is IsolatedFromAbove (vlpc.pipeline's faster check of it): an op inside
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
