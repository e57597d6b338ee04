"""The K loop skeleton of the ``sqc`` scheme (A in SGPRs, B in a ring of VGPRs), shared by the
f32/f64 kernel (``sqc.SqcKernelBuilder``) and the f16/int8 dot kernel
(``dot.DotKernelBuilder``); the order of one step's loads and multiply-adds is
:mod:`vlpc.passes.isel.sqc_k_step`'s.

:func:`emit_k_loops` emits, for K counted in elements of ``esz`` bytes (f32/f64 values, or the
dot kernels' packed dwords):

* the loop of whole K steps (``.L<name>_k_loop``): the step's first batch of A and every B
  slot loaded before it and carried around the back edge; a step loads the next step's
  (offset ``koff + k_step * esz``, clamped to the last step, which then re-reads itself);
  skipped when K (given at launch) is under one step;
* optionally the last step peeled after the loop (``peel``), loading nothing of a next step;
* K given at launch: a loop of single values over K % k_step (``.L<name>_k_tail``);
* static K not a multiple of k_step: the last K % k_step values, unrolled.

The builder passes what differs between kernels as callables: how A's pieces load and feed
a multiply-add, how B's slots load and feed one, and the multiply-add itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import Block, Region, SSAValue

from vlpc.dialects import gcn
from vlpc.passes.isel.emit import pow2_runs
from vlpc.passes.isel.sqc_k_step import k_step_events, run_k_step

#: B loads of 1, 2 or 4 dwords (B N x K, the static tail's runs of values).
_B_LOADS = {4: gcn.GlobalLoadDwordx4Op, 2: gcn.GlobalLoadDwordx2Op, 1: gcn.GlobalLoadDwordOp}


@dataclass
class _KLoop:
    """The arguments of :func:`emit_k_loops` (its docstring) its parts share."""

    e: object
    name: str
    k_val: SSAValue | int
    n_steps: int | None
    k_tail: int
    ks: int
    esz: int
    dw: int
    batches: Callable[[int], list]
    fma_order: Callable
    late: bool
    bunch: bool
    peel: bool
    mac_op: Callable
    texts: dict[str, str]
    a_offset: Callable[[SSAValue], SSAValue]
    load_piece: Callable
    a_operand: Callable
    b_tile: SSAValue
    voff_b: SSAValue
    b_quads: bool
    b_slot_of: Callable[[int], tuple[int, int]]
    load_b_slot: Callable
    load_all_slots: Callable
    b_step_base: Callable[[SSAValue], SSAValue]
    b_operand: Callable
    load_b_one: Callable[[SSAValue, str], SSAValue]
    prefetch_a: Callable[[SSAValue], None] | None


def emit_k_loops(e, name: str, acc: list[SSAValue], k_val: SSAValue | int, n_steps: int | None, k_tail: int,
                 ks: int, esz: int, dw: int, *, batches: Callable[[int], list], fma_order: Callable,
                 late: bool, bunch: bool, peel: bool, mac_op: Callable, texts: dict[str, str],
                 a_offset: Callable[[SSAValue], SSAValue], load_piece: Callable, a_operand: Callable,
                 b_tile: SSAValue, voff_b: SSAValue, b_quads: bool, b_slot_of: Callable[[int], tuple[int, int]],
                 load_b_slot: Callable, load_all_slots: Callable, b_step_base: Callable[[SSAValue], SSAValue],
                 b_operand: Callable, load_b_one: Callable[[SSAValue, str], SSAValue],
                 prefetch_a: Callable[[SSAValue], None] | None = None) -> list[SSAValue]:
    """Emit the K loops (module docstring) through emitter ``e`` (its ``block`` is pointed at
    each loop's body while the body is built, so the builder's callables emit there too);
    returns the accumulators after them.

    K: ``k_val`` elements (an int, or an SGPR given at launch), ``n_steps`` whole steps of
    ``ks`` elements (None at launch), ``k_tail`` = K % ks when static; ``esz`` bytes per
    element, ``dw`` dwords per B value.  ``batches(kcount)``: the batches of A's pieces
    (:func:`sqc_k_step.a_batches`) for ``kcount`` values of K; ``fma_order``, ``late``,
    ``bunch``: those of :func:`sqc_k_step.k_step_events`.  ``mac_op(b, a, acc)`` builds one
    multiply-add.  A: ``a_offset(koff)`` the SGPR offset of the step at byte offset ``koff``,
    ``load_piece(piece, soffset)``, ``a_operand(vals, batch, piece_index, row, kk)``.  B:
    ``b_tile`` its tile base, ``voff_b`` the lane offset, ``b_quads`` B N x K (a
    ``global_load_dwordx4`` per lane holds 4 // dw values of K), ``b_slot_of(kk)`` (slot, index), ``load_b_slot(slot, base, text)``,
    ``load_all_slots(base, text)``, ``b_step_base(koff)``, ``b_operand(slots, kk)``,
    ``load_b_one(base, text)`` one value of K.  ``texts``: the comments ``k_full``,
    ``k_rest``, ``next``, ``b_one`` and ``b_tail`` (a format string of the value's k).
    ``prefetch_a(pref)``: called at the top of each step of the loop with the next step's byte
    offset ``pref`` (clamped), to bring that step's A lines towards the CU a step ahead of the
    scalar loads (the sqc kernel's vector touch, ``SqcKernelBuilder``); None: nothing.

    The parts, in program order: :func:`_whole_steps` (the loop of whole K steps, and the peeled
    last step), :func:`_launch_tail` (K given at launch) and :func:`_static_tail` (static K % ks)."""
    kl = _KLoop(e, name, k_val, n_steps, k_tail, ks, esz, dw, batches, fma_order, late, bunch, peel, mac_op,
                texts, a_offset, load_piece, a_operand, b_tile, voff_b, b_quads, b_slot_of, load_b_slot,
                load_all_slots, b_step_base, b_operand, load_b_one, prefetch_a)
    if n_steps is None or n_steps > 0:
        acc = _whole_steps(kl, acc)
    if not isinstance(k_val, int):
        acc = _launch_tail(kl, acc)
    if k_tail:
        acc = _static_tail(kl, acc)
    return acc


def _loop(kl: _KLoop, carried: list[SSAValue], build: Callable[[Block], None], label: str) -> gcn.LoopOp:
    """A ``gcn.loop`` over ``carried``; ``build(body)`` emits the body, its back edge included."""
    e = kl.e
    body = Block(arg_types=[v.type for v in carried])
    outer, e.block = e.block, body
    try:
        build(body)
    finally:
        e.block = outer
    return e(gcn.LoopOp(carried, Region(body), label=label))


def _mac_into(kl: _KLoop, step_batches: list, slots: list[SSAValue],
              out: list[SSAValue]) -> Callable[[list, int, tuple], None]:
    """``run_k_step``'s ``mac``: one multiply-add of a step into ``out``, B from ``slots``."""
    def mac(vals: list[SSAValue], bi: int, t: tuple) -> None:
        r, kk, pi, _ = t
        out[r] = kl.e(kl.mac_op(kl.b_operand(slots, kk), kl.a_operand(vals, step_batches[bi], pi, r, kk), out[r])).vdst
    return mac


def _whole_steps(kl: _KLoop, acc: list[SSAValue]) -> list[SSAValue]:
    """The loop of whole K steps (``.L<name>_k_loop``, skipped when K given at launch is under one
    step), then the peeled last step (``peel``); returns the accumulators."""
    e, ks, esz, k_val, n_steps = kl.e, kl.ks, kl.esz, kl.k_val, kl.n_steps
    step_batches = kl.batches(ks)
    skip_main = f".L{kl.name}_after_k_loop"
    if isinstance(k_val, int):
        kmax: SSAValue | int = (n_steps - 1 - kl.peel) * ks * esz  # type: ignore[operator]
    else:
        k_full = e(gcn.SAndB32Op(k_val, -ks, comment=kl.texts["k_full"])).sdst
        kmax = e.mul(e(gcn.SSubU32Op(k_full, ks)).sdst, esz)
        # K known only at launch: no K step at all when K < k_step
        e(gcn.SCmpLtU32Op(k_val, ks))
        e(gcn.SCbranchForwardOp("scc1", skip_main))
    koff0 = e.const(0)
    batch0 = [kl.load_piece(pc, kl.a_offset(koff0)) for pc in step_batches[0]]
    slots0 = kl.load_all_slots(kl.b_tile, "B slot")
    nb0, n_carry = len(batch0), len(slots0)
    events = k_step_events(step_batches, kl.fma_order, lambda kk: kl.b_slot_of(kk)[0], kl.late, kl.bunch)
    main = _loop(kl, [koff0, *batch0, *slots0, *acc], _step_body(kl, step_batches, events, kmax, nb0, n_carry),
                 f".L{kl.name}_k_loop")
    acc = list(main.res[1 + nb0 + n_carry:])
    if kl.peel:  # the last step: its batches of A and its B slots, nothing of a next step
        soff_last = kl.a_offset(main.res[0])
        last = [ev for ev in events if ev[0] not in ("b", "b_all") and not (ev[0] == "a" and ev[2])]
        run_k_step(last, list(main.res[1:1 + nb0]),
                   lambda bi, _nxt: [kl.load_piece(pc, soff_last) for pc in step_batches[bi]],
                   _mac_into(kl, step_batches, list(main.res[1 + nb0:1 + nb0 + n_carry]), acc),
                   lambda q: None, lambda: None)
    if not isinstance(k_val, int):
        e(gcn.LabelOp(skip_main))
    return acc


def _step_body(kl: _KLoop, step_batches: list, events: list[tuple], kmax: SSAValue | int, nb0: int,
               n_carry: int) -> Callable[[Block], None]:
    """The builder of one K step, the loop's body: its arguments are the step's byte offset, its
    first batch of A (``nb0`` registers), the ``n_carry`` B slots and the accumulators; it loads the
    next step's (offset clamped to ``kmax`` unless the last step is peeled) and ends with the back
    edge."""
    e, ks, esz = kl.e, kl.ks, kl.esz

    def k_step(body: Block) -> None:
        koff = body.args[0]
        cur = list(body.args[1:1 + nb0])
        slots = list(body.args[1 + nb0:1 + nb0 + n_carry])
        step_acc = list(body.args[1 + nb0 + n_carry:])
        pref = e(gcn.SAddU32Op(koff, ks * esz, comment="next K step")).sdst
        if not kl.peel:
            pref = e(gcn.SMinU32Op(pref, kmax, comment="clamp: last step re-reads itself")).sdst
        if kl.prefetch_a is not None:
            kl.prefetch_a(pref)
        a_soff = kl.a_offset(koff)
        new_slots: list[SSAValue | None] = [None] * n_carry
        b_next: list[SSAValue] = []

        def next_b_base() -> SSAValue:
            if not b_next:  # the next step's B base, needed from the first reload on
                b_next.append(kl.b_step_base(pref))
            return b_next[0]

        def load_b(q: int) -> None:
            new_slots[q] = kl.load_b_slot(q, next_b_base(), f"B next slot {q}")

        def load_b_all() -> None:
            new_slots[:] = kl.load_all_slots(next_b_base(), "B next slot")

        def load_a(bi: int, next_step: bool) -> list[SSAValue]:
            return [kl.load_piece(pc, kl.a_offset(pref) if next_step else a_soff) for pc in step_batches[bi]]

        cur = run_k_step(events, cur, load_a, _mac_into(kl, step_batches, slots, step_acc), load_b, load_b_all)
        e(gcn.SCmpLgU32Op(koff, kmax))
        e(gcn.LoopBackOp([pref, *cur, *new_slots, *step_acc], "scc1"))

    return k_step


def _launch_tail(kl: _KLoop, acc: list[SSAValue]) -> list[SSAValue]:
    """K known only at launch: a loop of single values over K % k_step (``.L<name>_k_tail``)."""
    e, ks, esz, k_val = kl.e, kl.ks, kl.esz, kl.k_val
    skip_tail = f".L{kl.name}_after_k_tail"
    k_rest = e(gcn.SAndB32Op(k_val, ks - 1, comment=kl.texts["k_rest"])).sdst
    k_end = e.mul(k_val, esz)
    k_first = e(gcn.SSubU32Op(k_end, e.mul(k_rest, esz))).sdst
    e(gcn.SCmpLgU32Op(k_rest, 0))
    e(gcn.SCbranchForwardOp("scc0", skip_tail))

    def one_value(body: Block) -> None:
        koff, tail_acc = body.args[0], list(body.args[1:])
        a_soff = kl.a_offset(koff)
        bval = kl.load_b_one(kl.b_step_base(koff), kl.texts["b_one"])
        for bp in kl.batches(1):
            vals = [kl.load_piece(pc, a_soff) for pc in bp]
            for r, kk, pi, _ in kl.fma_order(bp, False):
                tail_acc[r] = e(kl.mac_op(bval, kl.a_operand(vals, bp, pi, r, kk), tail_acc[r])).vdst
        k_next = e(gcn.SAddU32Op(koff, esz, comment=kl.texts["next"])).sdst
        e(gcn.SCmpLgU32Op(k_next, k_end))
        e(gcn.LoopBackOp([k_next, *tail_acc], "scc1"))

    acc = list(_loop(kl, [k_first, *acc], one_value, f".L{kl.name}_k_tail").res[1:])
    e(gcn.LabelOp(skip_tail))
    return acc


def _static_tail(kl: _KLoop, acc: list[SSAValue]) -> list[SSAValue]:
    """Static K not a multiple of k_step: the last K % k_step values, unrolled."""
    e, esz, dw, k_tail = kl.e, kl.esz, kl.dw, kl.k_tail
    acc = list(acc)
    k0 = kl.n_steps * kl.ks  # type: ignore[operator]
    koff_t = e.const(k0 * esz)
    a_soff = kl.a_offset(koff_t)
    b_base = kl.b_step_base(koff_t)
    if kl.b_quads:
        tail_b = []
        for w, kb in pow2_runs(k_tail, 4 // dw):
            v = e(_B_LOADS[w * dw](kl.voff_b, b_base, offset=kb * esz, comment=kl.texts["b_tail"].format(k0 + kb))).vdst
            tail_b += [(v, j) for j in range(w)]
    else:
        tail_b = [(kl.load_b_slot(kk, b_base, kl.texts["b_tail"].format(k0 + kk)), 0) for kk in range(k_tail)]
    for bp in kl.batches(k_tail):
        vals = [kl.load_piece(pc, a_soff) for pc in bp]
        for r, kk, pi, _ in kl.fma_order(bp, False):
            bv, j = tail_b[kk]
            bop = e.sub(bv, j * dw, dw) if bv.type.n > dw else bv
            acc[r] = e(kl.mac_op(bop, kl.a_operand(vals, bp, pi, r, kk), acc[r])).vdst
    return acc
