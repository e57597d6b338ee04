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
from vlpc.passes.common import op_error
from vlpc.targets import get_target


class _Groups:
    """Union-find with offsets: reg(v) = reg(root(v)) + offset(v)."""

    def __init__(self) -> None:
        self.parent: dict[SSAValue, tuple[SSAValue, int]] = {}

    def find(self, v: SSAValue) -> tuple[SSAValue, int]:
        p, off = self.parent.get(v, (v, 0))
        if p is v:
            return v, 0
        root, off2 = self.find(p)
        self.parent[v] = (root, off + off2)
        return root, off + off2

    def union(self, v: SSAValue, u: SSAValue, delta: int) -> bool:
        """Make reg(v) = reg(u) + delta.  False when it contradicts earlier unions."""
        rv, ov = self.find(v)
        ru, ou = self.find(u)
        if rv is ru:
            return ov == ou + delta
        # reg(rv) + ov = reg(ru) + ou + delta  =>  reg(rv) = reg(ru) + ou + delta - ov
        self.parent[rv] = (ru, ou + delta - ov)
        return True


def _kind(v: SSAValue) -> str | None:
    t = v.type
    if isinstance(t, gcn.SGPRType):
        return "s"
    if isinstance(t, gcn.VGPRType):
        return "v"
    return None


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
    """Options: ``waves-per-simd`` (VGPR budget from occupancy), ``max-vgprs`` (overrides it), ``max-sgprs``, ``target``."""

    name = "gcn-allocate-registers"

    waves_per_simd: int = 3
    max_vgprs: int = 0
    max_sgprs: int = 0
    target: str = "gfx906"

    def budgets(self) -> tuple[int, int]:
        t = get_target(self.target)
        if not 1 <= self.waves_per_simd <= t.max_waves_per_simd:
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
        for kernel in [o for o in op.walk() if isinstance(o, gcn.KernelOp)]:
            _allocate_kernel(kernel, *self.budgets())


def _linearize(kernel: gcn.KernelOp):
    """Positions of ops, definitions and uses; loop extents."""
    pos: dict[Operation, int] = {}
    loops: list[tuple[int, int, gcn.LoopOp]] = []

    def walk(block: Block) -> None:
        for o in block.ops:
            pos[o] = len(pos)
            if isinstance(o, gcn.LoopOp):
                start = pos[o]
                walk(o.body.block)
                loops.append((start, len(pos) - 1, o))

    walk(kernel.body.block)
    return pos, loops


def _insert_back_edge_copies(kernel: gcn.KernelOp) -> None:
    """Copy a yielded value that is defined while its block argument is still live.

    A loop-carried value has one register range; when the next iteration's value is
    computed before the current one's last use, they cannot share it, so the back
    edge gets a copy (LLVM's PHI elimination does the same).
    """
    for loop in [o for o in kernel.body.walk() if isinstance(o, gcn.LoopOp)]:
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
                t = y.type
                if isinstance(t, gcn.SGPRType) and t.n == 1:
                    copy = gcn.SMovB32Op(y)
                    new_yield[i] = copy.sdst
                elif isinstance(t, gcn.VGPRType) and t.n == 1:
                    copy = gcn.VMovB32Op(y)
                    new_yield[i] = copy.vdst
                else:
                    raise op_error(back, f"internal error: cannot copy a loop-carried {t} on the back edge")
                block.insert_op_before(copy, back)  # s_mov/v_mov leave SCC alone
        if new_yield != list(back.yielded):
            back.operands = new_yield


def _top_level(op: Operation, block: Block) -> Operation:
    while op.parent_block() is not block:
        op = op.parent_op()
    return op


def _allocate_kernel(kernel: gcn.KernelOp, vgpr_budget: int, sgpr_budget: int) -> None:
    _insert_back_edge_copies(kernel)
    pos, loops = _linearize(kernel)
    groups = _Groups()

    # -- live intervals per value, in half positions: uses at 2p, defs at 2p+1 (2p if early-clobber)
    start: dict[SSAValue, int] = {}
    end: dict[SSAValue, int] = {}
    for a in kernel.body.block.args:
        start[a] = -1
        end[a] = -1
    for o, p in pos.items():
        if isinstance(o, gcn.LoopOp):
            for a in o.body.block.args:
                start[a] = 2 * p + 1
                end[a] = 2 * p + 1
        clobber = isinstance(o, gcn.GCNInstruction) and o.EARLY_CLOBBER
        for r in o.results:
            start[r] = 2 * p if clobber else 2 * p + 1
            end[r] = start[r]
        for operand in o.operands:
            end[operand] = max(end.get(operand, -1), 2 * p)
    # loop results are defined at the back edge
    for s0, e0, loop in loops:
        for r in loop.res:
            start[r] = 2 * e0 + 1
            end[r] = max(end[r], start[r])
    # values defined before a loop and used inside stay live to its back edge
    for s0, e0, loop in loops:
        for v in list(end):
            if start[v] < 2 * s0 and 2 * s0 <= end[v] <= 2 * e0 + 1 and _used_in(v, loop):
                end[v] = max(end[v], 2 * e0 + 1)

    # -- groups: subregs, reg_sequences, loop ties, coalescing
    def join(v: SSAValue, u: SSAValue, delta: int, why: str, at: Operation) -> None:
        if not groups.union(v, u, delta):
            raise op_error(at, f"internal error in gcn-allocate-registers: conflicting register ties ({why})")

    for o in pos:
        if isinstance(o, gcn.SubregOp):
            join(o.result, o.source, o.offset.value.data, "subreg", o)
        elif isinstance(o, gcn.RegSequenceOp):
            off = 0
            for part in o.parts:
                join(part, o.result, off, "reg_sequence", o)
                off += part.type.n
    for o in pos:
        if isinstance(o, gcn.GlobalLoadBase) and o.merge is not None:
            join(o.vdst, o.merge, 0, "load merge", o)
    for s0, e0, loop in loops:
        block = loop.body.block
        back = block.last_op
        assert isinstance(back, gcn.LoopBackOp)
        for init, arg, y, res in zip(loop.iter_args, block.args, back.yielded, loop.res):
            join(arg, init, 0, "loop init", loop)
            join(y, arg, 0, "loop back edge", back)
            join(res, arg, 0, "loop result", loop)

    fixed: dict[SSAValue, int] = {}
    for a in kernel.body.block.args:
        if isinstance(a.type, gcn.SpecialRegType):
            continue
        assert isinstance(a.type, gcn.GCNRegisterType) and a.type.is_allocated
        fixed[a] = a.type.first

    members: dict[SSAValue, list[SSAValue]] = {}

    def rebuild_members() -> None:
        members.clear()
        for v in start:
            if _kind(v) is None:
                continue
            root, _ = groups.find(v)
            members.setdefault(root, []).append(v)

    def group_span(root: SSAValue) -> tuple[int, int]:
        ms = members[root]
        return min(start[m] for m in ms), max(end[m] for m in ms)

    rebuild_members()

    # The interference summary of each group, relative to its root's register: for each
    # register offset, the merged live intervals of the members covering it; the offsets
    # (mod 2 and mod 4) of its aligned members; whether a member is pre-coloured.  Checking
    # two groups costs their registers and intervals, not the product of their members.
    occ_of: dict[SSAValue, dict[int, list[tuple[int, int]]]] = {}
    mod2_of: dict[SSAValue, set[int]] = {}
    mod4_of: dict[SSAValue, set[int]] = {}
    fixed_in: dict[SSAValue, bool] = {}
    for root, ms in members.items():
        per_reg: dict[int, list[tuple[int, int]]] = {}
        m2: set[int] = set()
        m4: set[int] = set()
        for m in ms:
            off = groups.find(m)[1]
            for r in range(off, off + m.type.n):
                per_reg.setdefault(r, []).append((start[m], end[m]))
            a = _align(m)
            if a >= 2:
                m2.add(off % 2)
            if a >= 4:
                m4.add(off % 4)
        occ_of[root] = {r: _merged(ivs) for r, ivs in per_reg.items()}
        mod2_of[root], mod4_of[root] = m2, m4
        fixed_in[root] = any(m in fixed for m in ms)

    def compatible(ga: SSAValue, gb: SSAValue, delta: int) -> bool:
        """Whether group gb placed at reg(ga) + delta never holds two live values in one
        register, and the alignments of both groups' ranges can hold together (every
        member of 2+ alignment at one offset parity, every member of alignment 4 at one
        offset mod 4)."""
        if len(mod2_of[ga] | {(o + delta) % 2 for o in mod2_of[gb]}) > 1:
            return False
        if len(mod4_of[ga] | {(o + delta) % 4 for o in mod4_of[gb]}) > 1:
            return False
        occ_a = occ_of[ga]
        for r, ivs_b in occ_of[gb].items():
            ivs_a = occ_a.get(r + delta)
            if ivs_a is not None and _intersects(ivs_a, ivs_b):
                return False
        return True

    def merge_into(root: SSAValue, other: SSAValue, delta: int) -> None:
        """Fold group ``other`` (at reg(root) + delta) into ``root``'s summary."""
        occ = occ_of[root]
        for r, ivs in occ_of.pop(other).items():
            occ[r + delta] = _merged(occ.get(r + delta, []) + ivs)
        mod2_of[root] |= {(o + delta) % 2 for o in mod2_of.pop(other)}
        mod4_of[root] |= {(o + delta) % 4 for o in mod4_of.pop(other)}
        fixed_in[root] = fixed_in[root] or fixed_in.pop(other)

    # Coalesce an instruction's result with an operand of the same kind and width
    # that dies at this instruction (in-place accumulation), when no live ranges clash.
    for o, p in pos.items():
        if not isinstance(o, gcn.GCNInstruction) or o.EARLY_CLOBBER or isinstance(o, gcn.PseudoOp | gcn.LoopOp):
            continue
        for r in o.results:
            if _kind(r) is None:
                continue
            for operand in reversed(o.operands):
                if _kind(operand) != _kind(r) or operand.type.n != r.type.n or end[operand] != 2 * p:
                    continue
                ro, oo = groups.find(operand)
                rr, orr = groups.find(r)
                if ro is rr or fixed_in[ro] or fixed_in[rr]:
                    continue
                delta = oo - orr  # reg(rr) = reg(ro) + delta
                if compatible(ro, rr, delta):
                    groups.union(r, operand, 0)
                    root, _ = groups.find(r)
                    other = rr if root is ro else ro
                    merge_into(root, other, delta if root is ro else -delta)
                    members[root].extend(members.pop(other))
                    break

    rebuild_members()
    infos: list[_Group] = []
    for root, ms in members.items():
        kind = _kind(root)
        offs = [(groups.find(m)[1], m.type.n) for m in ms]
        lo = min(o for o, _ in offs)
        hi = max(o + n for o, n in offs)
        align, align_off = 1, 0
        for m in ms:
            a = _align(m)
            if a > align:
                align, align_off = a, groups.find(m)[1]
        fixed_reg = None
        for m in ms:
            if m in fixed:
                fixed_reg = fixed[m] - groups.find(m)[1]
        s, e = group_span(root)
        infos.append(_Group(root, kind, lo, hi, s, e, fixed_reg, align, align_off))

    assignment: dict[SSAValue, int] = {}
    for kind, budget in (("s", sgpr_budget), ("v", vgpr_budget)):
        gs = sorted((g for g in infos if g.kind == kind), key=lambda g: (g.fixed is None, g.start))
        ivs_of = {g.root: _merged([(start[m], end[m]) for m in members[g.root]]) for g in gs}
        # First fit from s0/v0; if fragmentation leaves no aligned range, retry with
        # single registers and pairs placed from the top of the budget, tuples from the bottom.
        placed = _place(gs, ivs_of, budget, segregate=False)
        if isinstance(placed, _Group):
            placed = _place(gs, ivs_of, budget, segregate=True)
        if isinstance(placed, _Group):
            placed = _place_by_priority(gs, ivs_of, budget, placed)
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

    # -- rewrite types (xDSL replaces a value to change its type)
    new_types = []
    for v in start:
        k = _kind(v)
        if k is None or v in fixed:
            continue
        root, off = groups.find(v)
        cls = gcn.SGPRType if k == "s" else gcn.VGPRType
        new_types.append((v, cls.at(assignment[root] + off, v.type.n)))
    for v, t in new_types:
        Rewriter.replace_value_with_new_type(v, t)


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


def _align(v: SSAValue) -> int:
    """Alignment of a register range (gfx906.md: SGPR tuples of 4+ at a multiple of 4, pairs even)."""
    if _kind(v) != "s":
        return 1
    n = v.type.n
    return 4 if n >= 4 else (2 if n == 2 else 1)


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
