"""``gcn-allocate-registers``: virtual SGPR/VGPR ranges to physical registers.

A linear-scan allocator over the kernel in issue order, shaped like xDSL's
``register_allocator`` but aware of GCN register *ranges*:

* Values that must share registers are joined into groups with fixed offsets:
  ``gcn.subreg`` results inside their source, ``gcn.reg_sequence`` inputs inside
  the result, and a loop's init value, block argument, yielded value and result
  (one register range for a loop-carried value).  An instruction's result is also
  coalesced with a same-sized operand that dies there (``v_fma_f32 vC, vB, sA, vC``
  stays in place), except for loads, whose results are early-clobber.
* A group is live from its first definition to its last use; a value defined
  before a loop and used inside it stays live to the loop's back edge.
* A loop tie that would put two live values in one register range becomes a copy: an
  init that stays live while the loop runs (a loop invariant in the body, used after the
  loop, or the init of two carried values) is copied on loop entry; carried values that
  cannot be computed in place (a permutation of the carried values, a value from before
  the loop, one value yielded twice) get a parallel copy at the back edge, ordered, a
  cycle broken with one temporary.  A loop whose ties are free gets no copy.
* Placement honours GCN alignment (SGPR ranges of 4+ registers start at a multiple
  of 4, pairs at an even register; VGPR ranges need none on gfx906) and the
  budgets: SGPRs ``s0..s{max-sgprs - 1}`` (102 addressable on gfx906) and VGPRs from
  ``waves-per-simd`` (3 -> 84) or ``max-vgprs``.
* Registers the dispatcher initialises are the kernel's entry block arguments and
  keep their registers.

When the demand exceeds the budget the pass fails with a located diagnostic that
names the budget and the demand (the peak number of live registers).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from vlpc.dialects import gcn
from vlpc.passes.common import kernels, op_error
from vlpc.targets import get_target


@dataclass(eq=False)
class _Group:
    root: SSAValue
    kind: str
    lo_off: int  # smallest member offset (may be negative before normalisation)
    hi_off: int  # one past the largest member register
    start: int
    end: int
    fixed: int | None  # physical register of the root, if pre-coloured
    align: int  # alignment for (root register + lo_off)
    align_off: int


@dataclass(frozen=True)
class GcnAllocateRegistersPass(ModulePass):
    """Options: ``waves-per-simd`` (VGPR budget from occupancy; 0 = automatic: the most waves, up to 4,
    whose budget the kernel's register demand fits), ``max-vgprs`` (overrides it), ``max-sgprs``, ``target``."""

    name = "gcn-allocate-registers"

    waves_per_simd: int = 0
    max_vgprs: int = 0
    max_sgprs: int = 0
    target: str = "gfx906"
    #: with ``waves-per-simd=0`` (automatic): the most waves per SIMD tried first
    AUTO_MAX_WAVES = 4

    def budgets(self) -> tuple[int | list[int], int]:
        """(VGPR budget, SGPR budget); the VGPR budget is a list, smallest first, for
        ``waves-per-simd=0``: the kernel gets the most waves (up to :attr:`AUTO_MAX_WAVES`)
        its register demand allows."""
        t = get_target(self.target)
        if self.waves_per_simd == 0 and not self.max_vgprs:
            sb = min(self.max_sgprs or t.addressable_sgprs, t.addressable_sgprs)
            out = []
            for w in range(self.AUTO_MAX_WAVES, 0, -1):
                per_wave = t.vgprs_per_simd_lane // w
                out.append(min(per_wave - per_wave % t.vgpr_granule, t.addressable_vgprs))
            return out, sb
        if not (self.waves_per_simd == 0 and self.max_vgprs) and not 1 <= self.waves_per_simd <= t.max_waves_per_simd:
            from vlpc.errors import VlpcError
            raise VlpcError(f"waves-per-simd={self.waves_per_simd}: {t.name} runs 1 to "
                            f"{t.max_waves_per_simd} waves per SIMD")
        if self.max_vgprs < 0 or self.max_sgprs < 0:
            from vlpc.errors import VlpcError
            raise VlpcError(f"max-vgprs={self.max_vgprs}, max-sgprs={self.max_sgprs}: register "
                            "budgets must not be negative (0 = the target's limit)")
        if self.max_vgprs:
            vb = self.max_vgprs
        else:
            per_wave = t.vgprs_per_simd_lane // max(1, self.waves_per_simd)
            vb = per_wave - per_wave % t.vgpr_granule
        sb = self.max_sgprs or t.addressable_sgprs
        return min(vb, t.addressable_vgprs), min(sb, t.addressable_sgprs)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in kernels(op):
            _allocate_kernel(kernel, *self.budgets())


def _linearize(kernel: gcn.KernelOp) -> tuple[list[Operation], list[tuple[int, int, gcn.LoopOp]]]:
    """The kernel's operations in issue order (an op's position is its index; a loop's body
    follows the loop op) and each loop's extent (first and last position, op)."""
    order: list[Operation] = []
    loops: list[tuple[int, int, gcn.LoopOp]] = []
    _linearize_block(kernel.body.block, order, loops)
    return order, loops


def _linearize_block(block: Block, order: list[Operation], loops: list[tuple[int, int, gcn.LoopOp]]) -> None:
    """:func:`_linearize` of one block.  (A module-level function: a nested one calling itself is a
    reference cycle that kept the kernel's operations alive until the next garbage collection.)"""
    for o in block.ops:
        order.append(o)
        if _op_class(type(o))[0]:  # a loop
            start = len(order) - 1
            _linearize_block(o.body.block, order, loops)
            loops.append((start, len(order) - 1, o))


def _insert_back_edge_copies(kernel: gcn.KernelOp) -> None:
    """Copy a yielded value that is defined while its block argument is still live.

    A loop-carried value has one register range; when the next iteration's value is
    computed before the current one's last use, they cannot share it, so the back
    edge gets a copy (LLVM's PHI elimination does the same).
    """
    for loop in _loops_in(kernel.body):
        block = loop.body.block
        back = block.last_op
        assert isinstance(back, gcn.LoopBackOp)
        order = {o: i for i, o in enumerate(block.ops)}
        new_yield = list(back.yielded)
        for i, (arg, y) in enumerate(zip(block.args, back.yielded)):
            if y is arg or not isinstance(y, OpResult) or y.op.parent_block() is not block:
                continue
            last_use = max((order.get(_top_level(u.operation, block), -1) for u in arg.uses
                            if u.operation is not back), default=-1)
            if last_use > order[y.op]:
                new_yield[i] = _copy_before(y, back)
        if new_yield != list(back.yielded):
            back.operands = new_yield


def _copy_before(v: SSAValue, before: Operation) -> SSAValue:
    """A copy of register range ``v`` (a new value in registers of its own), inserted before
    ``before``: ``s_mov_b32``/``v_mov_b32`` per register (a range of several is copied
    register by register and put back together with ``gcn.reg_sequence``).  The moves leave
    SCC, VCC and EXEC alone, so a copy may sit between a compare and the branch reading it."""
    t = v.type
    if isinstance(t, gcn.SGPRType):
        mov = gcn.SMovB32Op
    elif isinstance(t, gcn.VGPRType):
        mov = gcn.VMovB32Op
    else:
        raise op_error(before, f"internal error: cannot copy a loop-carried {t}")
    block = before.parent_block()
    assert block is not None
    if t.n == 1:
        op = mov(v)
        block.insert_op_before(op, before)
        return op.results[0]
    parts = []
    for r in range(t.n):
        sub = gcn.SubregOp(v, r)
        op = mov(sub.result)
        block.insert_ops_before([sub, op], before)
        parts.append(op.results[0])
    seq = gcn.RegSequenceOp(parts)
    block.insert_op_before(seq, before)
    return seq.result


def _entry_point(loop: gcn.LoopOp, init: SSAValue) -> Operation:
    """Where an entry copy of ``init`` for ``loop`` goes: before the loop, or before the first
    forward branch between ``init``'s definition and the loop (a branch that skips the loop
    expects its results in the registers of the inits, i.e. of the copy)."""
    at: Operation = loop
    o = loop.prev_op
    def_op = init.op if isinstance(init, OpResult) else None
    while o is not None and o is not def_op:
        if isinstance(o, gcn.SCbranchForwardOp):
            at = o
        o = o.prev_op
    return at


def _insert_loop_copies(conflicts: list[tuple[gcn.LoopOp, int, str]]) -> None:
    """Resolve the loop ties that would have put two live values in one register range.

    ``"entry"``: an init that stays live while the loop runs (a loop invariant inside, used
    after the loop, or the init of another carried value) is copied on loop entry, and the copy
    is the carried value's init.  ``"back"``: the carried values whose next value cannot be
    computed in place (another carried value's current one, a permutation of them, a value
    defined outside the loop, or one value yielded twice) get their next values by a parallel
    copy at the back edge: copies ordered so that no carried value is overwritten before
    every copy reading it has run, each cycle broken with one temporary (Boissinot et al.,
    "Revisiting Out-of-SSA Translation for Correctness, Code Quality, and Efficiency", CGO 2009).
    """
    by_loop: dict[gcn.LoopOp, set[int]] = {}
    for loop, i, what in conflicts:
        if what == "entry":
            init = loop.iter_args[i]
            new = list(loop.iter_args)
            new[i] = _copy_before(init, _entry_point(loop, init))
            loop.operands = new
        else:
            by_loop.setdefault(loop, set()).add(i)
    for loop, slots in by_loop.items():
        block = loop.body.block
        back = block.last_op
        assert isinstance(back, gcn.LoopBackOp)
        args = list(block.args)
        slot_of = {a: j for j, a in enumerate(args)}
        new_yield = list(back.yielded)
        pending = {i: new_yield[i] for i in sorted(slots)}  # slot -> the value it receives
        while pending:
            read = {slot_of[src] for src in pending.values() if src in slot_of}
            ready = [i for i in pending if i not in read]
            if ready:
                i = ready[0]
                new_yield[i] = _copy_before(pending.pop(i), back)
                continue
            # every pending destination is read by another pending copy: a cycle; keep the
            # current value of one carried value in a temporary
            i = next(iter(pending))
            tmp = _copy_before(args[i], back)
            pending = {j: (tmp if src is args[i] else src) for j, src in pending.items()}
        back.operands = new_yield


def _loops_in(region) -> list[gcn.LoopOp]:
    """The ``gcn.loop`` ops in ``region``, in walk order (as ``[o for o in region.walk() if
    isinstance(o, gcn.LoopOp)]``, without a generator per op)."""
    out = []
    for block in region.blocks:
        for o in block.ops:
            if _op_class(type(o))[0]:
                out.append(o)
            for r in o.regions:
                out += _loops_in(r)
    return out


def _top_level(op: Operation, block: Block) -> Operation:
    while op.parent_block() is not block:
        op = op.parent_op()
    return op


# Per operation class: (is a loop, early-clobber results, result may coalesce with an operand).
_OP_CLASS: dict[type, tuple[bool, bool, bool]] = {}


def _op_class(cls: type) -> tuple[bool, bool, bool]:
    info = _OP_CLASS.get(cls)
    if info is None:
        inst = issubclass(cls, gcn.GCNInstruction)
        clobber = inst and bool(cls.EARLY_CLOBBER)
        info = _OP_CLASS[cls] = (issubclass(cls, gcn.LoopOp), clobber,
                                 inst and not clobber and not issubclass(cls, gcn.PseudoOp | gcn.LoopOp))
    return info


# Per operation class: which register tie it makes (gcn.subreg, gcn.reg_sequence, a global
# load that may merge into a value), looked up once per class.
_NO_TIE, _SUBREG, _REG_SEQUENCE, _GLOBAL_LOAD = range(4)
_TIE_KIND: dict[type, int] = {}


def _tie_kind(cls: type) -> int:
    kind = _TIE_KIND.get(cls)
    if kind is None:
        kind = _TIE_KIND[cls] = (_SUBREG if issubclass(cls, gcn.SubregOp) else
                                 _REG_SEQUENCE if issubclass(cls, gcn.RegSequenceOp) else
                                 _GLOBAL_LOAD if issubclass(cls, gcn.GlobalLoadBase) else _NO_TIE)
    return kind


# Per type class: "s" (SGPRs), "v" (VGPRs) or None (not a register range to allocate).
_TYPE_KIND: dict[type, str | None] = {}


def _type_kind(t) -> str | None:
    cls = type(t)
    try:
        return _TYPE_KIND[cls]
    except KeyError:
        k = _TYPE_KIND[cls] = "s" if isinstance(t, gcn.SGPRType) else ("v" if isinstance(t, gcn.VGPRType) else None)
        return k


def _set_type(v: SSAValue, t) -> None:
    """Give ``v`` the type ``t``.  xDSL's public way, ``Rewriter.replace_value_with_new_type``,
    builds a new value and moves every use to it (a third of this pass's time); the pinned
    xDSL keeps a value's type in its ``_type`` field, which is set in place when present."""
    if "_type" in getattr(v, "__dict__", ()):
        v._type = t  # type: ignore[attr-defined]
    else:
        Rewriter.replace_value_with_new_type(v, t)


#: rounds of loop copies (entry copies, then a back edge's parallel copy, then the copies these
#: make the back edge of an in-place carried value need) before the allocator gives up
_COPY_ROUNDS = 4


def _allocate_kernel(kernel: gcn.KernelOp, vgpr_budget: int | list[int], sgpr_budget: int) -> None:
    for _ in range(_COPY_ROUNDS):
        _insert_back_edge_copies(kernel)
        conflicts = _try_allocate(kernel, vgpr_budget, sgpr_budget)
        if not conflicts:
            return
        _insert_loop_copies(conflicts)
    raise op_error(kernel, "internal error in gcn-allocate-registers: loop-carried values still share registers "
                   f"with live values after {_COPY_ROUNDS} rounds of copies")


def _try_allocate(kernel: gcn.KernelOp, vgpr_budget: int | list[int],
                  sgpr_budget: int) -> list[tuple[gcn.LoopOp, int, str]]:
    """Allocate, or (changing nothing) return the loop ties that would put two live values in
    one register range: (loop, carried value, ``"entry"`` or ``"back"``)."""
    order, loops = _linearize(kernel)

    # -- values, numbered in the order they are defined (kernel arguments, then in issue order a
    # loop's block arguments and each op's results); SSAValue hashes in Python, ints in C.
    vals: list[SSAValue] = []
    vid: dict[int, int] = {}
    # live intervals per value, in half positions: uses at 2p, defs at 2p+1 (2p if early-clobber)
    start: list[int] = []
    end: list[int] = []

    def define(v: SSAValue, at: int) -> None:
        vid[id(v)] = len(vals)
        vals.append(v)
        start.append(at)
        end.append(at)

    for a in kernel.body.block.args:
        define(a, -1)
    for p, o in enumerate(order):
        is_loop, clobber, _ = _op_class(type(o))
        if is_loop:
            for a in o.body.block.args:
                define(a, 2 * p + 1)
        at = 2 * p if clobber else 2 * p + 1
        for r in o.results:
            define(r, at)
        for operand in o.operands:
            i = vid[id(operand)]
            if end[i] < 2 * p:
                end[i] = 2 * p
    # loop results are defined at the back edge
    for s0, e0, loop in loops:
        for r in loop.res:
            i = vid[id(r)]
            start[i] = 2 * e0 + 1
            end[i] = max(end[i], start[i])
    # values defined before a loop and used inside stay live to its back edge
    for s0, e0, loop in loops:
        for i, v in enumerate(vals):
            if start[i] < 2 * s0 and 2 * s0 <= end[i] <= 2 * e0 + 1 and _used_in(v, loop):
                end[i] = max(end[i], 2 * e0 + 1)
    n_vals = len(vals)
    kinds = [_type_kind(v.type) for v in vals]
    widths = [v.type.n if k is not None else 0 for v, k in zip(vals, kinds)]

    # -- groups: union-find with offsets, reg(i) = reg(parent[i]) + offset[i]
    parent = list(range(n_vals))
    offset = [0] * n_vals

    def find(i: int) -> tuple[int, int]:
        p = parent[i]
        if p == i:
            return i, 0
        if parent[p] == p:  # (what the compressing walk below returns, and leaves, for a root's child)
            return p, offset[i]
        path = []
        while parent[i] != i:
            path.append(i)
            i = parent[i]
        acc = 0
        for j in reversed(path):  # path compression: every node on the path now points at the root
            acc += offset[j]
            offset[j] = acc
            parent[j] = i
        return i, offset[path[0]]

    def union(v: int, u: int, delta: int) -> bool:
        """Make reg(v) = reg(u) + delta.  False when it contradicts earlier unions."""
        rv, ov = find(v)
        ru, ou = find(u)
        if rv == ru:
            return ov == ou + delta
        # reg(rv) + ov = reg(ru) + ou + delta  =>  reg(rv) = reg(ru) + ou + delta - ov
        parent[rv] = ru
        offset[rv] = ou + delta - ov
        return True

    # subregs, reg_sequences, loop ties, coalescing
    def join(v: SSAValue, u: SSAValue, delta: int, why: str, at: Operation) -> None:
        if not union(vid[id(v)], vid[id(u)], delta):
            raise op_error(at, f"internal error in gcn-allocate-registers: conflicting register ties ({why})")

    loads = []
    subreg_sources: set[int] = set()
    for o in order:
        tie = _tie_kind(type(o))
        if tie == _SUBREG:  # (its one result, its one operand, the source)
            join(o.results[0], o.operands[0], o.properties["offset"].value.data, "subreg", o)
            subreg_sources.add(vid[id(o.operands[0])])
        elif tie == _REG_SEQUENCE:  # (its operands are the parts)
            off = 0
            result = o.results[0]
            for part in o.operands:
                join(part, result, off, "reg_sequence", o)
                off += part.type.n
        elif tie == _GLOBAL_LOAD:
            loads.append(o)
    for o in loads:
        if o.merge is not None:
            join(o.vdst, o.merge, 0, "load merge", o)

    fixed: dict[int, int] = {}
    for a in kernel.body.block.args:
        if isinstance(a.type, gcn.SpecialRegType):
            continue
        assert isinstance(a.type, gcn.GCNRegisterType) and a.type.is_allocated
        fixed[vid[id(a)]] = a.type.first
    aligns = [_align_of(k, n) for k, n in zip(kinds, widths)]

    def group_members() -> dict[int, list[int]]:
        """Root -> its register values, both in definition order."""
        members: dict[int, list[int]] = {}
        for i in range(n_vals):
            if kinds[i] is not None:
                members.setdefault(find(i)[0], []).append(i)
        return members

    members = group_members()

    # The interference summary of each group, relative to its root's register: for each
    # register offset, the merged live intervals of the members covering it; the offsets
    # (mod 2 and mod 4) of its aligned members; whether a member is pre-coloured.  Checking
    # two groups costs their registers and intervals, not the product of their members.
    occ_of: dict[int, dict[int, list[tuple[int, int]]]] = {}
    mod2_of: dict[int, set[int]] = {}
    mod4_of: dict[int, set[int]] = {}
    fixed_in: dict[int, bool] = {}
    for root, ms in members.items():
        per_reg: dict[int, list[tuple[int, int]]] = {}
        m2: set[int] = set()
        m4: set[int] = set()
        for m in ms:
            off = find(m)[1]
            iv = (start[m], end[m])
            for r in range(off, off + widths[m]):
                ivs = per_reg.get(r)
                if ivs is None:
                    per_reg[r] = [iv]
                else:
                    ivs.append(iv)
            a = aligns[m]
            if a >= 2:
                m2.add(off % 2)
            if a >= 4:
                m4.add(off % 4)
        occ_of[root] = {r: (ivs if len(ivs) == 1 else _merged(ivs)) for r, ivs in per_reg.items()}
        mod2_of[root], mod4_of[root] = m2, m4
        fixed_in[root] = any(m in fixed for m in ms)

    # For the loop ties, the groups with a range read through gcn.subreg get a finer summary:
    # the range's own interval ends at its last use as a whole, the sub-ranges' intervals cover
    # their registers (``add64(pair)`` reads the pair's low register, writes the low result, then
    # reads the high register: the low register is free once read, which the whole range's
    # interval does not show).
    occ_p_of: dict[int, dict[int, list[tuple[int, int]]]] = {}
    if subreg_sources and loops:
        pos = {id(o): p for p, o in enumerate(order)}
        end_p = {}
        for i in subreg_sources:
            v = vals[i]
            last = max((2 * pos[id(u.operation)] for u in v.uses if _tie_kind(type(u.operation)) != _SUBREG),
                       default=start[i])
            for s0, e0, loop in loops:
                if start[i] < 2 * s0 and last < 2 * e0 + 1 and _used_in(v, loop):
                    last = 2 * e0 + 1
            end_p[i] = max(last, start[i])
        for root in {find(i)[0] for i in end_p}:
            per_reg = {}
            for m in members[root]:
                off = find(m)[1]
                iv = (start[m], end_p.get(m, end[m]))
                for r in range(off, off + widths[m]):
                    per_reg.setdefault(r, []).append(iv)
            occ_p_of[root] = {r: _merged(ivs) for r, ivs in per_reg.items()}

    def compatible(ga: int, gb: int, delta: int, precise: bool = False) -> bool:
        """Whether group gb placed at reg(ga) + delta never holds two live values in one
        register, and the alignments of both groups' ranges can hold together (every
        member of 2+ alignment at one offset parity, every member of alignment 4 at one
        offset mod 4).  ``precise``: with the finer summaries of ranges read by parts."""
        if len(mod2_of[ga] | {(o + delta) % 2 for o in mod2_of[gb]}) > 1:
            return False
        if len(mod4_of[ga] | {(o + delta) % 4 for o in mod4_of[gb]}) > 1:
            return False
        occ_a = occ_p_of.get(ga, occ_of[ga]) if precise else occ_of[ga]
        for r, ivs_b in (occ_p_of.get(gb, occ_of[gb]) if precise else occ_of[gb]).items():
            ivs_a = occ_a.get(r + delta)
            if ivs_a is not None and _intersects(ivs_a, ivs_b):
                return False
        return True

    def merge_into(root: int, other: int, delta: int) -> None:
        """Fold group ``other`` (at reg(root) + delta) into ``root``'s summary."""
        occ = occ_of[root]
        for r, ivs in occ_of.pop(other).items():
            mine = occ.get(r + delta)
            occ[r + delta] = ivs if mine is None else _merged(mine + ivs)
        mod2_of[root] |= {(o + delta) % 2 for o in mod2_of.pop(other)}
        mod4_of[root] |= {(o + delta) % 4 for o in mod4_of.pop(other)}
        fixed_in[root] = fixed_in[root] or fixed_in.pop(other)

    def tie(v: SSAValue, u: SSAValue) -> bool:
        """Give ``v`` the registers of ``u`` (a loop tie) unless their groups would hold two
        live values in one register, or both hold dispatch registers; False then."""
        a, b = vid[id(v)], vid[id(u)]
        ra, oa = find(a)
        rb, ob = find(b)
        if ra == rb:
            return oa == ob
        if kinds[a] is None or kinds[b] is None:  # (not a register range: nothing to place)
            return union(a, b, 0)
        delta = ob - oa  # reg(ra) = reg(rb) + delta
        if (fixed_in[ra] and fixed_in[rb]) or not compatible(rb, ra, delta, precise=True):
            return False
        union(a, b, 0)
        root = find(a)[0]
        if ra in occ_p_of or rb in occ_p_of:
            pa, pb = occ_p_of.pop(ra, occ_of[ra]), occ_p_of.pop(rb, occ_of[rb])
            occ_p_of[root] = _shifted_union(pb, pa, delta) if root == rb else _shifted_union(pa, pb, -delta)
        if root == rb:
            merge_into(rb, ra, delta)
        else:
            merge_into(ra, rb, -delta)
        return True

    # Loop ties: a carried value's block argument, yielded value and result share one register
    # range, and its init joins them.  A tie that would overlap two live values is left to a
    # copy (_insert_loop_copies): on entry for an init that stays live, at the back edge for a
    # yielded value that cannot be computed in place.
    conflicts: list[tuple[gcn.LoopOp, int, str]] = []
    for s0, e0, loop in loops:
        block = loop.body.block
        back = block.last_op
        assert isinstance(back, gcn.LoopBackOp)
        for i, (init, arg, y, res) in enumerate(zip(loop.iter_args, block.args, back.yielded, loop.res)):
            if not tie(y, arg):
                conflicts.append((loop, i, "back"))
            if not tie(res, arg):
                raise op_error(loop, f"internal error in gcn-allocate-registers: loop-carried value {i}: the "
                               "result's registers hold another live value")
            if not tie(arg, init):
                conflicts.append((loop, i, "entry"))
    if conflicts:
        return conflicts

    # Coalesce an instruction's result with an operand of the same kind and width
    # that dies at this instruction (in-place accumulation), when no live ranges clash.
    for p, o in enumerate(order):
        if not _op_class(type(o))[2]:
            continue
        for res in o.results:
            r = vid[id(res)]
            kind = kinds[r]
            if kind is None:
                continue
            for operand in reversed(o.operands):
                q = vid[id(operand)]
                if kinds[q] != kind or widths[q] != widths[r] or end[q] != 2 * p:
                    continue
                ro, oo = find(q)
                rr, orr = find(r)
                if ro == rr or fixed_in[ro] or fixed_in[rr]:
                    continue
                delta = oo - orr  # reg(rr) = reg(ro) + delta
                if compatible(ro, rr, delta):
                    union(r, q, 0)
                    root, _ = find(r)
                    other = rr if root == ro else ro
                    merge_into(root, other, delta if root == ro else -delta)
                    break

    members = group_members()
    infos: list[_Group] = []
    for root, ms in members.items():
        offs = [find(m)[1] for m in ms]
        lo = min(offs)
        hi = max(o + widths[m] for o, m in zip(offs, ms))
        align, align_off = 1, 0
        fixed_reg = None
        for m, o in zip(ms, offs):
            if aligns[m] > align:
                align, align_off = aligns[m], o
            if m in fixed:
                fixed_reg = fixed[m] - o
        infos.append(_Group(root, kinds[root], lo, hi, min(start[m] for m in ms), max(end[m] for m in ms),
                            fixed_reg, align, align_off))

    assignment: dict[int, int] = {}
    for kind, budgets in (("s", [sgpr_budget]), ("v", vgpr_budget if isinstance(vgpr_budget, list) else [vgpr_budget])):
        gs = sorted((g for g in infos if g.kind == kind), key=lambda g: (g.fixed is None, g.start))
        ivs_of = {g.root: _merged([(start[m], end[m]) for m in members[g.root]]) for g in gs}
        if len(budgets) > 1:  # automatic occupancy: the smallest budget the demand fits, then larger ones
            peak = _peak_demand([occ_of.get(gg.root, {}) for gg in gs])
            budgets = [b for b in budgets if b >= peak] or budgets[-1:]
        for budget in budgets:
            # First fit from s0/v0; if fragmentation leaves no aligned range, retry with
            # single registers and pairs placed from the top of the budget, tuples from the bottom.
            placed = _place(gs, ivs_of, budget, segregate=False)
            if isinstance(placed, _Group):
                placed = _place(gs, ivs_of, budget, segregate=True)
            if isinstance(placed, _Group):
                placed = _place_by_priority(gs, ivs_of, budget, placed)
            if not isinstance(placed, _Group):
                break
        if isinstance(placed, _Group):
            g = placed
            at = ivs_of[g.root][0][0]
            live = len({r for gg, base in _place(gs, ivs_of, budget, segregate=True, upto=g).items()
                        for r in range(base, base + gg.hi_off - gg.lo_off)
                        if _intersects([(at, at)], ivs_of[gg.root])})
            width = g.hi_off - g.lo_off
            name = "SGPRs" if kind == "s" else "VGPRs"
            peak = _peak_demand([occ_of.get(gg.root, {}) for gg in gs])
            kname = kernel.sym_name.data
            if peak > budget:  # demand: no placement can fit
                hint = ("allow fewer waves per SIMD (waves-per-simd) or choose a smaller micro tile or K step"
                        if kind == "v" else "choose a smaller K step or micro tile")
                raise op_error(kernel, f"register allocation failed: kernel '{kname}' needs {peak} {name} "
                               f"live at once, the budget is {budget} (demand); {hint}")
            raise op_error(kernel, f"register allocation failed: kernel '{kname}' has at most {peak} {name} live "
                           f"at once, within the budget of {budget}, but no free{' aligned' if g.align > 1 else ''} "
                           f"range of {width} was left beside {live} live registers (fragmentation: a limitation of "
                           f"the allocator's placement, please report it)")
        if placed is None:
            raise op_error(kernel, "internal error in gcn-allocate-registers: a dispatch register is clobbered")
        for g, base in placed.items():
            assignment[g.root] = base - g.lo_off

    # -- set the allocated types
    classes = {"s": gcn.SGPRType, "v": gcn.VGPRType}
    for i, v in enumerate(vals):
        k = kinds[i]
        if k is None or i in fixed:
            continue
        root, off = find(i)
        _set_type(v, classes[k].at(assignment[root] + off, widths[i]))
    return []


def _used_in(v: SSAValue, loop: gcn.LoopOp) -> bool:
    """Whether ``v`` is used by an operation nested in ``loop``'s body."""
    for use in v.uses:
        o: Operation | None = use.operation
        if o is loop:
            continue
        while o is not None:
            if o is loop:
                return True
            o = o.parent_op()
    return False


def _place(gs: list[_Group], ivs_of: dict, budget: int, *, segregate: bool, upto: _Group | None = None):
    """Place groups in order; returns {group: first register}, the first group that does not
    fit, or None when a pre-coloured group collides.  ``upto``: stop before that group."""
    # register -> the disjoint live intervals of the groups placed on it: starts and ends,
    # sorted (groups sharing a register never overlap), so a test is two bisections
    occ: dict[int, tuple[list[int], list[int]]] = {}
    out: dict[_Group, int] = {}
    for g in gs:
        if g is upto:
            return out
        ivs = ivs_of[g.root]
        width = g.hi_off - g.lo_off

        def free(base: int) -> bool:
            for r in range(base, base + width):
                se = occ.get(r)
                if se is None:
                    continue
                starts, ends = se
                for s, e in ivs:
                    i = bisect.bisect_right(starts, e)  # intervals starting at or before e
                    if i and ends[i - 1] >= s:
                        return False
            return True

        if g.fixed is not None:
            base = g.fixed + g.lo_off
            if not free(base):
                return None
        else:
            candidates = range(0, budget - width + 1)
            if segregate and width < 4:
                candidates = reversed(candidates)
            base = next((b for b in candidates if (b + g.align_off - g.lo_off) % g.align == 0 and free(b)), None)
            if base is None:
                return g
        for r in range(base, base + width):
            starts, ends = occ.setdefault(r, ([], []))
            for s, e in ivs:
                i = bisect.bisect_right(starts, s)
                starts.insert(i, s)
                ends.insert(i, e)
        out[g] = base
    return out


def _place_by_priority(gs: list[_Group], ivs_of: dict, budget: int, failed: _Group, rounds: int = 40):
    """Retry placement with the group that did not fit moved ahead of the other free groups
    (priority bumping, as in iterated graph colouring), both with and without segregation;
    returns the first successful placement or the last group that did not fit."""
    order = list(gs)
    n_fixed = sum(1 for g in order if g.fixed is not None)
    for _ in range(rounds):
        order.remove(failed)
        order.insert(n_fixed, failed)
        for segregate in (False, True):
            placed = _place(order, ivs_of, budget, segregate=segregate)
            if not isinstance(placed, _Group):
                return placed
        if placed is failed:  # placed first and still no room: it would not fit in any order
            return placed
        failed = placed
    return failed


def _peak_demand(occupancies: list[dict[int, list[tuple[int, int]]]]) -> int:
    """The most registers live at one point, from each group's per-register live intervals
    (a lower bound on the registers any placement needs)."""
    events: list[tuple[int, int]] = []
    for occ in occupancies:
        for ivs in occ.values():
            for s, e in ivs:
                events.append((s, 1))
                events.append((e + 1, -1))
    peak = cur = 0
    for _, d in sorted(events):
        cur += d
        peak = max(peak, cur)
    return peak


def _align_of(kind: str | None, n: int) -> int:
    """Alignment of a range of ``n`` registers of ``kind`` ("s", "v" or None): SGPR tuples of 4+
    at a multiple of 4, pairs even; VGPR ranges need none (Vega ISA guide, "SGPR Alignment";
    LLVM's assembler refuses other tuples)."""
    if kind != "s":
        return 1
    return 4 if n >= 4 else (2 if n == 2 else 1)


def _shifted_union(a: dict[int, list[tuple[int, int]]], b: dict[int, list[tuple[int, int]]],
                   delta: int) -> dict[int, list[tuple[int, int]]]:
    """Per-register intervals of ``a`` and of ``b`` placed ``delta`` registers after it (new dict)."""
    out = dict(a)
    for r, ivs in b.items():
        mine = out.get(r + delta)
        out[r + delta] = ivs if mine is None else _merged(mine + ivs)
    return out


def _merged(ivs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(ivs):
        if out and s <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _intersects(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return True
    return False
