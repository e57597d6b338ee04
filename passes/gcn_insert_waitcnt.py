"""``gcn-insert-waitcnt``: derive every ``s_waitcnt`` from memory operations and register uses.

Rules (Vega ISA guide, ``s_waitcnt``; LLVM ``SIInsertWaitcnts.cpp``: docs/references.md):

* Vector memory operations (loads and stores) count in ``vmcnt`` and complete in
  issue order, so a register loaded by a VMEM load with N younger VMEM operations
  behind it is ready after ``s_waitcnt vmcnt(N)``.
* Scalar memory loads count in ``lgkmcnt`` and may return out of order, so only
  ``lgkmcnt(0)`` guarantees a given result.
* LDS operations (``ds_*``, reads and writes) count in ``lgkmcnt`` too and complete
  in issue order among themselves: a register loaded by a ``ds_read`` with N younger
  LDS operations behind it is ready after ``lgkmcnt(N)``.  While a scalar load may
  still be outstanding the counter mixes in-order and out-of-order returns, so
  only ``lgkmcnt(0)`` is used then (as LLVM does).
* ``s_barrier`` orders execution, not memory: before it every outstanding LDS
  operation is retired (``lgkmcnt(0)``), so the other waves of the workgroup see
  this wave's LDS writes after the barrier and its reads are done before they
  overwrite the data (the ``__syncthreads`` contract).
* A wait is inserted immediately before the first instruction that reads or
  overwrites a register whose load is outstanding.  Loops are analysed to a fixed
  point, so values loaded in one iteration and used in the next get their waits.
* Placement policy for scalar loads: when an SMEM load is issued while older SMEM
  results are still outstanding and one of those older results is needed before
  the new one with no VALU instruction in between, the ``lgkmcnt(0)`` that older
  use needs is placed *before* the new load.  Waiting at the use would also wait
  for the new load (out-of-order return), leaving it no latency cover; waiting
  earlier costs the older loads only the scalar instructions in between.  A wait
  the kernel places itself between the new load and that use (the seed schedule's
  hand-placed ``lgkmcnt(0)``) is honored instead.

Counts above the counter maxima (vmcnt 63, lgkmcnt 15 on gfx906) are clamped,
which only makes a wait stricter.

Which counter an instruction increments and whether its results return in order
are the gfx906 table's facts (``vlpc.isa``: ``Instruction.counters`` and
``in_order``, reached through each op's ``ISA`` row); the barrier and the VALU work
of the placement policy are the table's issue classes (``UNIT``).  Out-of-order
returns in ``vmcnt`` (FLAT, which also counts in ``lgkmcnt``) are retired only by
a count of 0, like scalar loads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from vlpc.dialects import gcn
from vlpc.passes.common import kernels
from vlpc.targets import get_target

Reg = tuple[str, int]


#: id(type) -> (the type, its registers): register types are shared objects (and kept alive
#: here, so an id is never another type's), each looked at many times per kernel.
_REGS_OF_TYPE: dict[int, tuple[object, tuple[Reg, ...]]] = {}


def regs_of(value: SSAValue) -> list[Reg]:
    t = value.type
    hit = _REGS_OF_TYPE.get(id(t))
    if hit is None or hit[0] is not t:
        if isinstance(t, gcn.GCNRegisterType):
            regs = tuple((t.PREFIX, r) for r in t.registers())
        elif isinstance(t, gcn.SpecialRegType):
            regs = ((t.reg.data, 0),)
        else:
            regs = ()
        hit = (t, regs)
        if len(_REGS_OF_TYPE) < 1 << 16:
            _REGS_OF_TYPE[id(t)] = hit
    return list(hit[1])


def reads(op: Operation) -> list[Reg]:
    """Registers an instruction reads (a loop's back branch passes values, it reads none)."""
    if isinstance(op, gcn.LoopBackOp):
        return []
    return [r for o in op.operands for r in regs_of(o)]


def writes(op: Operation) -> list[Reg]:
    return [r for o in op.results for r in regs_of(o)]


def counted(op: Operation) -> tuple[tuple[str, ...], bool]:
    """(wait counters ``op`` increments, whether its results return in issue order), from
    its row of the gfx906 table; ``((), True)`` for ops without one (pseudo ops, loops)."""
    row = op.ISA if isinstance(op, gcn.GCNInstruction) else None
    return ((), True) if row is None else (row.counters, row.in_order)


def is_smem(op: Operation) -> bool:
    """Whether ``op`` counts in ``lgkmcnt`` and returns out of order (scalar memory; table facts)."""
    counters, in_order = counted(op)
    return "lgkmcnt" in counters and not in_order


@dataclass
class WaitState:
    """Outstanding memory results: VMEM register -> age (younger VMEM ops), SMEM registers,
    LDS register -> age (younger LDS ops), how many LDS operations (reads or
    writes) may still be outstanding, and registers of out-of-order ``vmcnt`` returns."""

    vm: dict[Reg, int] = field(default_factory=dict)
    smem: set[Reg] = field(default_factory=set)
    lds: dict[Reg, int] = field(default_factory=dict)
    lds_ops: int = 0
    vm_unordered: set[Reg] = field(default_factory=set)

    def copy(self) -> WaitState:
        return WaitState(dict(self.vm), set(self.smem), dict(self.lds), self.lds_ops, set(self.vm_unordered))

    def join(self, other: WaitState) -> WaitState:
        vm = dict(self.vm)
        for r, age in other.vm.items():
            vm[r] = min(age, vm.get(r, age))
        lds = dict(self.lds)
        for r, age in other.lds.items():
            lds[r] = min(age, lds.get(r, age))
        return WaitState(vm, self.smem | other.smem, lds, max(self.lds_ops, other.lds_ops),
                         self.vm_unordered | other.vm_unordered)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, WaitState) and self.vm == other.vm and self.smem == other.smem
                and self.lds == other.lds and self.lds_ops == other.lds_ops
                and self.vm_unordered == other.vm_unordered)

    def needed(self, regs: list[Reg]) -> tuple[int | None, int | None]:
        """(vmcnt, lgkmcnt) to wait for before touching ``regs`` (None: no wait)."""
        ages = [self.vm[r] for r in regs if r in self.vm]
        if any(r in self.vm_unordered for r in regs):
            ages.append(0)
        lgkm = 0 if any(r in self.smem for r in regs) else None
        lds_ages = [self.lds[r] for r in regs if r in self.lds]
        if lds_ages and lgkm is None:
            lgkm = 0 if self.smem else min(lds_ages)
        return (min(ages) if ages else None), lgkm

    def needed_for_barrier(self) -> int | None:
        """lgkmcnt before ``s_barrier``: 0 while any LDS operation may be outstanding."""
        return 0 if self.lds_ops else None

    def wait(self, vmcnt: int | None, lgkmcnt: int | None) -> None:
        if vmcnt is not None:
            self.vm = {r: a for r, a in self.vm.items() if a < vmcnt}
            if vmcnt == 0:
                self.vm_unordered = set()
        if lgkmcnt is not None:
            # at most lgkmcnt operations remain, so LDS ones with that many younger are done
            self.lds = {r: a for r, a in self.lds.items() if a < lgkmcnt}
            self.lds_ops = min(self.lds_ops, lgkmcnt)
            if lgkmcnt == 0:
                self.smem = set()

    def issue(self, op: Operation, written: list[Reg] | None = None) -> None:
        """Account for issuing ``op`` (``written``: its result registers, if known)."""
        counters, in_order = counted(op)
        if not counters:
            return
        if written is None:
            written = writes(op)
        if "vmcnt" in counters:
            self.vm = {r: a + 1 for r, a in self.vm.items()}
            for r in written:
                if in_order:
                    self.vm[r] = 0
                else:
                    self.vm.pop(r, None)
                    self.vm_unordered.add(r)
        if "lgkmcnt" in counters:
            if not in_order:
                self.smem |= set(written)
            else:
                self.lds = {r: a + 1 for r, a in self.lds.items()}
                for r in written:
                    self.lds[r] = 0
                self.lds_ops += 1


@dataclass(frozen=True)
class GcnInsertWaitcntPass(ModulePass):
    """Option: ``target`` (counter maxima)."""

    name = "gcn-insert-waitcnt"

    target: str = "gfx906"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = get_target(self.target)
        for kernel in kernels(op):
            _Inserter(target.vmcnt_max, target.lgkmcnt_max).block(kernel.body.block, WaitState(), [], insert=True)


# What gcn-insert-waitcnt does with an operation, by its class (looked up once per class: an
# ``isinstance`` of xDSL's abstract classes is slow and each op is seen several times).
_BRANCH, _LABEL, _LOOP, _SKIP, _WAIT, _INSTRUCTION = range(6)
_CATEGORY: dict[type, tuple[int, bool, bool]] = {}


def _category(cls: type) -> tuple[int, bool, bool]:
    """(what the pass does with ops of ``cls``: a forward branch, a label, a loop, nothing, a
    wait or an instruction; whether it is a barrier; whether it is an SMEM load)."""
    got = _CATEGORY.get(cls)
    if got is None:
        if issubclass(cls, gcn.SCbranchForwardOp):
            cat = _BRANCH
        elif issubclass(cls, gcn.LabelOp):
            cat = _LABEL
        elif issubclass(cls, gcn.LoopOp):
            cat = _LOOP
        elif not issubclass(cls, gcn.GCNInstruction) or issubclass(cls, gcn.PseudoOp):
            cat = _SKIP
        elif issubclass(cls, gcn.SWaitcntOp):
            cat = _WAIT
        else:
            cat = _INSTRUCTION
        inst = issubclass(cls, gcn.GCNInstruction)
        row = cls.ISA if inst else None
        counters, in_order = ((), True) if row is None else (row.counters, row.in_order)
        got = _CATEGORY[cls] = (cat, inst and cls.UNIT == "barrier", "lgkmcnt" in counters and not in_order)
    return got


class _Inserter:
    def __init__(self, vmcnt_max: int, lgkmcnt_max: int):
        self.vmcnt_max = vmcnt_max
        self.lgkmcnt_max = lgkmcnt_max
        # Registers each instruction reads and writes, computed once: a loop body is walked
        # until its fixed point and every SMEM load looks ahead over the rest of the kernel.
        self._rw: dict[Operation, tuple[list[Reg], list[Reg], frozenset[Reg]]] = {}

    def rw(self, op: Operation) -> tuple[list[Reg], list[Reg], frozenset[Reg]]:
        """(reads, writes, both as a set) of ``op``."""
        got = self._rw.get(op)
        if got is None:
            r, w = reads(op), writes(op)
            got = self._rw[op] = (r, w, frozenset(r) | frozenset(w))
        return got

    def block(self, block: Block, state: WaitState, continuation: list[Operation], insert: bool) -> WaitState:
        """Walk ``block`` from ``state``; ``continuation`` is what runs after it (for lookahead)."""
        ops = list(block.ops)
        at_label: dict[str, WaitState] = {}  # states arriving at a label by a forward branch
        for i, op in enumerate(ops):
            cat, barrier, smem = _category(type(op))
            if cat == _SKIP:
                continue
            if cat == _BRANCH:
                at_label[op.target.data] = state.copy()
                continue
            if cat == _LABEL:
                if op.label.data in at_label:
                    state = state.join(at_label.pop(op.label.data))
                continue
            if cat == _LOOP:
                body = op.body.block
                after = ops[i + 1:] + continuation
                # fixed point over the back edge
                entry = state.copy()
                while True:
                    end = self.block(body, entry.copy(), list(body.ops) + after, insert=False)
                    joined = entry.join(end)
                    if joined == entry:
                        break
                    entry = joined
                state = self.block(body, entry.copy(), list(body.ops) + after, insert=insert)
                continue
            if cat == _WAIT:
                state.wait(None if op.vmcnt is None else op.vmcnt.value.data,
                           None if op.lgkmcnt is None else op.lgkmcnt.value.data)
                continue
            op_reads, op_writes, _ = self.rw(op)
            vmcnt, lgkm = state.needed(op_reads + op_writes)
            if barrier and state.needed_for_barrier() is not None:
                lgkm = 0
            if smem and state.smem and lgkm != 0:
                if self._old_smem_used_first(state.smem, set(op_writes), ops[i + 1:] + continuation,
                                             self._fresh_smem(ops, i)):
                    lgkm = 0
            if vmcnt is not None or lgkm is not None:
                vmcnt = None if vmcnt is None else min(vmcnt, self.vmcnt_max)
                lgkm = None if lgkm is None else min(lgkm, self.lgkmcnt_max)
                if insert:
                    block.insert_op_before(gcn.SWaitcntOp(vmcnt=vmcnt, lgkmcnt=lgkm), op)
                state.wait(vmcnt, lgkm)
            state.issue(op, op_writes)
        return state

    def _fresh_smem(self, ops: list[Operation], i: int) -> frozenset[Reg]:
        """Registers of SMEM loads issued in ``ops`` before ``i`` with no VALU instruction since."""
        fresh: set[Reg] = set()
        for op in reversed(ops[:i]):
            if not isinstance(op, gcn.GCNInstruction) or isinstance(op, gcn.PseudoOp | gcn.SWaitcntOp):
                if isinstance(op, gcn.SWaitcntOp):
                    break
                continue
            if op.UNIT == "valu":
                break
            if is_smem(op):
                fresh |= set(self.rw(op)[1])
        return frozenset(fresh)

    def _old_smem_used_first(self, old: set[Reg], new: set[Reg], rest: list[Operation],
                             fresh: frozenset[Reg] = frozenset()) -> bool:
        """Whether to wait for older SMEM results before issuing a new SMEM load: an
        older result is needed before any VALU instruction (waiting now costs the older
        loads no cover), and the new result is used later, after VALU work (which
        waiting now gives the new load as cover).  Not when that older result comes from
        a load issued with no VALU instruction since (``fresh``): waiting for it now would
        expose its whole latency and then the new load's, where one wait at the use
        overlaps both (a batch of loads issued together, schedule ``wide``)."""
        u_old = None
        valu_between = 0
        for op in _flatten(rest):
            if u_old is None and isinstance(op, gcn.SWaitcntOp) and op.lgkmcnt is not None:
                return False  # the kernel's own wait retires them first (schedule seed places its waits)
            touched = self.rw(op)[2]
            if u_old is None:
                if touched & old:
                    if touched & old & fresh:
                        return False
                    u_old = op
                elif touched & new or op.UNIT == "valu":
                    return False
                continue
            if touched & new:
                return valu_between > 0
            if op.UNIT == "valu":
                valu_between += 1
        return False


def _flatten(ops: list[Operation]):
    for op in ops:
        if isinstance(op, gcn.LoopOp):
            yield from _flatten(list(op.body.block.ops))
        elif isinstance(op, gcn.GCNInstruction) and not isinstance(op, gcn.PseudoOp):
            yield op
