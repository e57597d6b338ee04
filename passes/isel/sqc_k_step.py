"""The order of one K step of the ``sqc`` scheme (A in SGPRs, B in a ring of VGPRs), shared
by the f32/f64 kernel (``sqc.SqcKernelBuilder``) and the f16/int8 dot kernel
(``dot.DotKernelBuilder``).  The loop around the steps (its counter, the steps'
carried registers, the tails of K % k_step, the back edge) is :mod:`vlpc.passes.isel.sqc_k_loop`.

A step reads ``k_step`` values (dwords) of K for every row of the micro tile.  A's values are
scalar loads ("pieces": up to 16 dwords of one row, ``s_load_dwordx16``) grouped into
*batches* of SGPRs; B's are vector loads ("slots", ``global_load_dwordx4`` quads of K for B
stored N x K).  A step is a list of events a builder turns into instructions:

* ``("a", batch, next_step)``: load batch ``batch`` of A (of the next K step when
  ``next_step``) into the buffer the following batch's multiply-adds read;
* ``("mac", batch, (row, kk, piece, index))``: one multiply-add (``v_fma_f32``,
  ``v_dot2_f32_f16``, ...) of ``batch``;
* ``("b", slot)``: reload B slot ``slot`` for the next step, after its last use in this one;
* ``("b_all",)``: reload every slot at once, after the step's last multiply-add (``bunch``);
* ``("end", batch)``: the batch's multiply-adds are done: the loaded batch becomes current.

Two placements of A's loads (``late``):

* ``late`` (schedule ``default``): batches of :data:`WIDE_A_BATCH_SGPRS` loaded after the
  previous batch's multiply-adds, one buffer: one ``s_waitcnt lgkmcnt(0)`` per 64
  multiply-adds, the scalar loads' latency hidden by the other waves of the SIMD;
* not ``late`` (schedule ``cover``): batches of :data:`A_BATCH_SGPRS`, each loaded while the
  previous one feeds its multiply-adds (double-buffered: an even number of batches).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

# The batch sizes (SGPRs) live with the plan that reads them (the gemm dialect's decode GEMV k step).
from vlpc.dialects.gemm import A_BATCH_SGPRS, WIDE_A_BATCH_SGPRS  # noqa: F401  (re-exported)

Piece = tuple  # (width in dwords, rows, kks)


def a_batches(pieces: Sequence[Piece], late: bool, group: int = 1) -> list[list[Piece]]:
    """Group A's pieces (in order) into batches of at most :data:`WIDE_A_BATCH_SGPRS`
    (``late``) or :data:`A_BATCH_SGPRS` SGPRs.  Not ``late``, the K loop double-buffers batches
    (one in use, the next loading) and carries the next step's first batch around the back
    edge in the first batch's SGPRs: with an odd number of batches the last one would need a
    third buffer (its range overlaps both neighbours'), so a batch is split to make the count
    even.  ``group``: pieces come in runs of that many that stay in one batch (the f16 dot
    kernel's A stored K x M packs rows 2kk and 2kk + 1 of a batch into one SGPR)."""
    size_limit = WIDE_A_BATCH_SGPRS if late else A_BATCH_SGPRS
    out: list[list[Piece]] = []
    size = 0
    for g0 in range(0, len(pieces), group):
        run = list(pieces[g0:g0 + group])
        width = sum(pc[0] for pc in run)
        if not out or size + width > size_limit:
            out.append([])
            size = 0
        out[-1].extend(run)
        size += width
    if len(out) > 1 and len(out) % 2 and not late:
        i = next((j for j in reversed(range(len(out))) if len(out[j]) > group), None)
        if i is not None:
            half = len(out[i]) // group // 2 * group
            out[i:i + 1] = [out[i][:half], out[i][half:]]
    return out


def k_step_events(step_batches: Sequence[Sequence[Piece]], fma_order: Callable, slot_of: Callable[[int], int],
                  late: bool, bunch: bool = False) -> list[tuple]:
    """The events of one K step (module docstring), in program order.

    ``fma_order(batch, last)`` gives a batch's multiply-adds as ``(row, kk, piece, index)``;
    ``slot_of(kk)`` the B slot that holds value ``kk`` of the step.  ``bunch``: B's slots are
    reloaded together after the step's last multiply-add instead of each after its last use."""
    nb = len(step_batches)
    fmas = [(bi, t) for bi, bp in enumerate(step_batches) for t in fma_order(bp, bi == nb - 1)]
    last_use = {slot_of(t[1]): n for n, (_, t) in enumerate(fmas)}
    last_n = len(fmas) - 1
    events: list[tuple] = []
    n = 0
    for bi, bp in enumerate(step_batches):
        last = bi == nb - 1
        if not late:
            if not last:
                events.append(("a", bi + 1, False))
            elif bi:  # the next step's offsets are needed only from here on
                events.append(("a", 0, True))
        for t in fma_order(bp, last):
            events.append(("mac", bi, t))
            if last_use[slot_of(t[1])] == n:
                if not bunch:
                    events.append(("b", slot_of(t[1])))
                elif n == last_n:
                    events.append(("b_all",))
            n += 1
        if late and not last:
            events.append(("a", bi + 1, False))
        elif last and (not bi or late):  # one batch, or late: into this batch's SGPRs, after its multiply-adds
            events.append(("a", 0, True))
        events.append(("end", bi))
    return events


def run_k_step(events: Sequence[tuple], cur: list, load_a: Callable[[int, bool], list],
               mac: Callable[[list, int, tuple], None], load_b: Callable[[int], None],
               load_b_all: Callable[[], None]) -> list:
    """Emit one K step's events through the builder's callbacks: ``load_a(batch, next_step)``
    returns the batch's loaded registers, ``mac(cur, batch, fma)`` emits one multiply-add
    reading the current batch ``cur``, ``load_b(slot)`` / ``load_b_all()`` the B reloads.
    ``cur`` is the step's first batch; returns the next step's first batch."""
    nxt = cur
    for ev in events:
        kind = ev[0]
        if kind == "a":
            nxt = load_a(ev[1], ev[2])
        elif kind == "mac":
            mac(cur, ev[1], ev[2])
        elif kind == "b":
            load_b(ev[1])
        elif kind == "b_all":
            load_b_all()
        else:
            cur = nxt
    return cur
