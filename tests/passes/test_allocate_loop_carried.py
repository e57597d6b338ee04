"""gcn-allocate-registers and loop-carried values that cannot simply share one register range.

The allocator gives a ``gcn.loop``'s init, block argument, yielded value and result one
register range.  Two shapes broke that (reported while writing a ``gcn.loop`` GEMV kernel):

1. an init that stays live while the loop runs (a loop invariant inside the body, used after
   the loop, or the init of a second carried value) got the carried value's register, so the
   loop's update clobbered it;
2. carried values permuted at the back edge (value i's next value is value j's current one)
   were tied into one register.

Each kernel here is hand-written in the gcn dialect, allocated, assembled with LLVM and run on
the strict emulator for one wavefront; every lane's results are compared with NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.parser import Parser

from vlpc.dialects import gcn
from vlpc.dialects.gcn_asm import print_assembly
from vlpc.passes import get_all_passes
from vlpc.compiler import make_context, run_passes
from vlpc.runtime import get_device, load_code_object
from vlpc.targets import TargetId

S, V = gcn.SGPRType, gcn.VGPRType
LANES = 64
TID = np.arange(LANES, dtype=np.uint32)
ATTRS = ('{arg_roles = ["kernarg_segment_ptr", "workitem_id_x", "exec"], kernargs = [{name = "out", '
         'offset = 0 : i64, size = 8 : i64, value_kind = "global_buffer", type = "u32*", access = "write_only"}], '
         'launch = {workgroup_size = 64 : i64}}')


class _Emitter:
    """Appends ops to a list; ``e(op)`` returns the op's first result (or the op)."""

    def __init__(self):
        self.ops: list = []

    def __call__(self, op):
        self.ops.append(op)
        return op.results[0] if op.results else op

    def loop(self, carried, body, label=".Lk_loop") -> gcn.LoopOp:
        """A ``gcn.loop`` over ``carried``: ``body(e, args)`` emits the body and returns the
        yielded values, the first a counter: the loop runs again while it is not 0."""
        block = Block(arg_types=[v.type for v in carried])
        eb = _Emitter()
        yielded = body(eb, block.args)
        eb(gcn.SCmpLgU32Op(yielded[0], 0))
        eb(gcn.LoopBackOp(yielded, "scc1"))
        block.add_ops(eb.ops)
        op = gcn.LoopOp(carried, Region(block), label)
        self.ops.append(op)
        return op

    def count_down(self, args, n_index=0):
        return self(gcn.SSubU32Op(args[n_index], 1))

    def to_vgpr(self, v):
        return self(gcn.VMovB32Op(v)) if isinstance(v.type, S) else v


def _module(build) -> ModuleOp:
    """One kernel: ``build(e, tid)`` emits the body and returns the values to store (lane l's
    value j at out[j * 64 + l]; SGPRs are stored through a v_mov_b32)."""
    block = Block(arg_types=[S.at(0, 2), V.at(0), gcn.exec_type()])
    kp, tid, _ = block.args
    e = _Emitter()
    out = e(gcn.SLoadDwordx2Op(kp, 0))
    addr = e(gcn.VLshlrevB32Op(2, tid))
    values = build(e, tid)
    for j, v in enumerate(values):
        e(gcn.GlobalStoreDwordOp(addr, e.to_vgpr(v), out, 4 * LANES * j))
    e(gcn.SEndpgmOp())
    block.add_ops(e.ops)
    attrs = Parser(make_context(), ATTRS).parse_optional_attr_dict()
    return ModuleOp([gcn.KernelOp("k", Region(block), attrs)])


def _allocate(module: ModuleOp) -> ModuleOp:
    passes = get_all_passes()
    run_passes(module, [passes["gcn-allocate-registers"]()(waves_per_simd=3, target="gfx906")], make_context())
    return module


def _run(build) -> tuple[np.ndarray, str]:
    """Allocate, finish (waitcnt, hazard nops, descriptor), assemble and run one wavefront:
    (the stored values, one row per value; the assembly)."""
    from vlpc.runtime.toolchain import find_toolchain

    module = _allocate(_module(build))
    passes = get_all_passes()
    run_passes(module, [passes[n]()(target="gfx906") for n in
                        ("gcn-insert-waitcnt", "gcn-insert-hazard-nops", "gcn-emit-descriptor")], make_context())
    asm = print_assembly(module, "gfx906")
    n_out = sum(isinstance(o, gcn.GlobalStoreDwordOp) for o in module.walk())
    tc = find_toolchain()
    code = tc.link(tc.assemble(asm, TargetId.parse("gfx906"), "loop_carried"))
    dev = get_device("emulator", strict=True)
    buf = dev.upload(np.full(n_out * LANES, 0xDEADBEEF, np.uint32))
    try:
        dev.launch(load_code_object(code), "k", grid=(1, 1, 1), block=(LANES, 1, 1), args=[buf])
        return dev.download(buf, np.uint32, (n_out, LANES)), asm
    finally:
        dev.free(buf)


def _three_tid(e, tid):
    return e(gcn.VAddU32Op(e(gcn.VAddU32Op(tid, tid)), tid))


# ---- 1. an init that stays live while the loop runs: copied on loop entry ----------------


def test_an_init_that_is_also_a_loop_invariant_keeps_its_value():
    """acc = x; 3 times acc += x: 4x, and x is still x after the loop.  (The bug: acc and
    x in one VGPR, ``v_add_u32 v2, v2, v2``, so 8x.)"""
    def build(e, tid):
        x = _three_tid(e, tid)

        def body(eb, args):
            return [eb.count_down(args), eb(gcn.VAddU32Op(x, args[1]))]
        lp = e.loop([e(gcn.SMovB32Op(3)), x], body)
        return [lp.res[1], x]
    got, asm = _run(build)
    np.testing.assert_array_equal(got, [4 * 3 * TID, 3 * TID])


def test_an_init_used_after_the_loop_keeps_its_value():
    def build(e, tid):
        x = _three_tid(e, tid)
        lp = e.loop([e(gcn.SMovB32Op(3)), x], lambda eb, a: [eb.count_down(a), eb(gcn.VAddU32Op(a[1], a[1]))])
        return [lp.res[1], e(gcn.VAddU32Op(x, tid))]
    got, _ = _run(build)
    np.testing.assert_array_equal(got, [8 * 3 * TID, 4 * TID])


def test_one_init_for_two_carried_values():
    """a = b = x; 3 times a += tid, b += b: x + 3 tid and 8x."""
    def build(e, tid):
        x = _three_tid(e, tid)

        def body(eb, a):
            return [eb.count_down(a), eb(gcn.VAddU32Op(a[1], tid)), eb(gcn.VAddU32Op(a[2], a[2]))]
        lp = e.loop([e(gcn.SMovB32Op(3)), x, x], body)
        return [lp.res[1], lp.res[2]]
    got, _ = _run(build)
    np.testing.assert_array_equal(got, [3 * TID + 3 * TID, 8 * 3 * TID])


def test_an_sgpr_init_used_inside_the_loop():
    """An SGPR counter whose init (5) is also the step added to an SGPR sum each iteration."""
    def build(e, tid):
        five = e(gcn.SMovB32Op(5))

        def body(eb, a):
            return [eb.count_down(a), eb(gcn.SAddU32Op(a[1], five))]
        lp = e.loop([five, e(gcn.SMovB32Op(1))], body)
        return [lp.res[1], five]
    got, _ = _run(build)
    np.testing.assert_array_equal(got, [np.full(LANES, 1 + 5 * 5), np.full(LANES, 5)])


def test_a_loop_skipped_by_a_forward_branch_leaves_the_init_in_its_result():
    """The entry copy goes before a forward branch over the loop: when the branch is taken
    the loop's result (in the copy's registers) is the init."""
    def build(e, tid):
        x = _three_tid(e, tid)
        n = e(gcn.SMovB32Op(3))
        e(gcn.SCmpEqU32Op(n, 3))
        e(gcn.SCbranchForwardOp("scc1", ".Lk_skip"))

        def body(eb, a):
            return [eb.count_down(a), eb(gcn.VAddU32Op(x, a[1]))]
        lp = e.loop([n, x], body)
        e(gcn.LabelOp(".Lk_skip"))
        return [lp.res[1], x]
    got, _ = _run(build)
    np.testing.assert_array_equal(got, [3 * TID, 3 * TID])


# ---- 2. carried values permuted at the back edge: a parallel copy ------------------------


def _rotate(n_iter: int, inits: list[int], perm: list[int]) -> list[int]:
    vals = list(inits)
    for _ in range(n_iter):
        vals = [vals[p] for p in perm]
    return vals


@pytest.mark.parametrize("perm, n_iter", [([1, 0], 3), ([1, 2, 0], 4), ([2, 0, 1], 5), ([1, 0, 3, 2], 3),
                                          ([0, 2, 1], 3), ([1, 1, 0], 2)])
def test_carried_vgprs_permuted_at_the_back_edge(perm, n_iter):
    """Slot i's next value is slot perm[i]'s current one (swaps, 3-cycles, two 2-cycles, a
    fixed point, and one value taken by two slots)."""
    inits = [100 * (i + 1) for i in range(len(perm))]

    def build(e, tid):
        vs = [e(gcn.VAddU32Op(e(gcn.SMovB32Op(c)), tid)) for c in inits]

        def body(eb, a):
            return [eb.count_down(a), *(a[1 + p] for p in perm)]
        lp = e.loop([e(gcn.SMovB32Op(n_iter)), *vs], body)
        return list(lp.res[1:])
    got, _ = _run(build)
    want = [np.uint32(c) + TID for c in _rotate(n_iter, inits, perm)]
    np.testing.assert_array_equal(got, want)


def test_a_swap_with_a_value_computed_in_the_loop():
    """a' = b, b' = a + tid: the copy into a's slot at the back edge reads b, so b's next
    value, computed in the body, reaches b's slot by a copy after that read."""
    def build(e, tid):
        a0, b0 = e(gcn.VMovB32Op(7)), e(gcn.VAddU32Op(tid, tid))

        def body(eb, a):
            return [eb.count_down(a), a[2], eb(gcn.VAddU32Op(a[1], tid))]
        lp = e.loop([e(gcn.SMovB32Op(5)), a0, b0], body)
        return list(lp.res[1:])
    got, _ = _run(build)
    a, b = np.full(LANES, 7, np.uint32), 2 * TID
    for _ in range(5):
        a, b = b, a + TID
    np.testing.assert_array_equal(got, [a, b])


def test_carried_sgpr_pairs_swapped():
    """Two 2-SGPR ranges swapped each iteration (copied register by register)."""
    def build(e, tid):
        p = e(gcn.RegSequenceOp([e(gcn.SMovB32Op(11)), e(gcn.SMovB32Op(12))]))
        q = e(gcn.RegSequenceOp([e(gcn.SMovB32Op(21)), e(gcn.SMovB32Op(22))]))

        def body(eb, a):
            return [eb.count_down(a), a[2], a[1]]
        lp = e.loop([e(gcn.SMovB32Op(3)), p, q], body)
        return [e(gcn.SubregOp(r, k)) for r in lp.res[1:] for k in (0, 1)]
    got, _ = _run(build)
    np.testing.assert_array_equal(got, [np.full(LANES, v) for v in (21, 22, 11, 12)])


def test_a_value_from_before_the_loop_yielded_and_one_value_yielded_twice():
    """a' = x (defined before the loop), b' = c' = b + 1."""
    def build(e, tid):
        x = _three_tid(e, tid)

        def body(eb, a):
            t = eb(gcn.VAddU32Op(eb(gcn.SMovB32Op(1)), a[2]))
            return [eb.count_down(a), x, t, t]
        lp = e.loop([e(gcn.SMovB32Op(4)), e(gcn.VMovB32Op(9)), tid, e(gcn.VMovB32Op(0))], body)
        return [*lp.res[1:], x]
    got, _ = _run(build)
    np.testing.assert_array_equal(got, [3 * TID, TID + 4, TID + 4, 3 * TID])


# ---- an ordinary loop gets no copy ---------------------------------------------------------


def test_a_loop_whose_ties_are_free_gets_no_copy():
    """Init used only by the loop, next value computed after the last use of the current
    one: nothing is inserted (the kernels' assembly stays as before the fix)."""
    def build(e, tid):
        x = _three_tid(e, tid)

        def body(eb, a):
            return [eb.count_down(a), eb(gcn.VAddU32Op(a[1], tid))]
        lp = e.loop([e(gcn.SMovB32Op(3)), x], body)
        return [lp.res[1]]
    module = _module(build)
    before = [o.name for o in module.walk()]
    _allocate(module)
    assert [o.name for o in module.walk()] == before
    loop = next(o for o in module.walk() if isinstance(o, gcn.LoopOp))
    assert loop.iter_args[1].type == loop.body.block.args[1].type == loop.res[1].type


def test_an_outer_carried_value_as_an_inner_init_used_after_the_inner_loop():
    """Outer loop (2 times): b = a; inner loop (3 times): b += tid; then a' = a + b.
    a = tid -> 5 tid -> 13 tid: a must survive the inner loop that starts from it."""
    def build(e, tid):
        def outer(eo, ao):
            def inner(ei, ai):
                return [ei.count_down(ai), ei(gcn.VAddU32Op(ai[1], tid))]
            lp_in = eo.loop([eo(gcn.SMovB32Op(3)), ao[1]], inner, ".Lk_inner")
            return [eo.count_down(ao), eo(gcn.VAddU32Op(ao[1], lp_in.res[1]))]
        lp = e.loop([e(gcn.SMovB32Op(2)), tid], outer, ".Lk_outer")
        return [lp.res[1]]
    got, _ = _run(build)
    np.testing.assert_array_equal(got, [13 * TID])
