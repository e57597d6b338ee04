"""``gcn-insert-hazard-nops``: insert the GFX9 wait states that instruction pairs need.

The hazards are data (``vlpc.targets.Target.hazards``, from LLVM's
``GCNHazardRecognizer.cpp``): a producer kind, a consumer kind, the operand that
carries the dependence and the number of wait states.  For each consumer the pass
looks back over the instructions that precede it in execution order (including the
end of a loop body before the loop's first instruction) and, if a matching
producer is closer than the required number of wait states, inserts ``s_nop N``
(N + 1 wait states) before the consumer.  Every instruction counts as one wait
state; ``s_nop N`` counts N + 1.

Kinds this pass recognises (others in the table belong to instructions vlpc does
not emit, such as DPP, ``s_setreg`` and ``v_div_fmas``, and are reported if met):
``valu_writes_sgpr``/``vmem_reads_sgpr``, ``valu_writes_vcc``,
``salu_writes_m0``/``lds_or_sendmsg_or_movrel``, ``store_wider_than_8_bytes``/
``valu_writes_store_data``, ``valu_writes_sgpr``/``readlane_lane_select``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from vlpc.dialects import gcn
from vlpc.passes.gcn_insert_waitcnt import Reg, reads, writes
from vlpc.targets import Hazard, get_target


def _regs(op: Operation, kind: str, results: bool) -> set[Reg]:
    regs = writes(op) if results else reads(op)
    return {r for r in regs if r[0] == kind}


def _is(op: Operation, unit: str) -> bool:
    return isinstance(op, gcn.GCNInstruction) and op.UNIT == unit


# producer kind -> registers it writes that matter (empty set: not a producer)
PRODUCERS: dict[str, Callable[[Operation], set[Reg]]] = {
    "valu_writes_sgpr": lambda op: _regs(op, "s", True) if _is(op, "valu") else set(),
    "valu_writes_vcc": lambda op: {r for r in writes(op) if r[0] == "vcc"} if _is(op, "valu") else set(),
    "valu_writes_exec": lambda op: {r for r in writes(op) if r[0] == "exec"} if _is(op, "valu") else set(),
    "valu_writes_vgpr": lambda op: _regs(op, "v", True) if _is(op, "valu") else set(),
    "salu_writes_m0": lambda op: {r for r in writes(op) if r[0] == "m0"} if _is(op, "salu") else set(),
    "store_wider_than_8_bytes": lambda op: (
        {r for o in op.operands[1:2] for r in _regs_value(o)}
        if _is(op, "vmem") and not op.results and len(op.operands) > 1 and op.operands[1].type.n > 2 else set()),
}

# consumer kind -> registers it reads (or overwrites) that a producer may have written
CONSUMERS: dict[str, Callable[[Operation], set[Reg]]] = {
    "vmem_reads_sgpr": lambda op: _regs(op, "s", False) if _is(op, "vmem") else set(),
    "readlane_lane_select": lambda op: set(),  # vlpc emits no v_readlane/v_writelane
    "v_div_fmas": lambda op: set(),
    "dpp": lambda op: set(),
    "dpp_reads_vgpr": lambda op: set(),
    "lds_or_sendmsg_or_movrel": lambda op: {("m0", 0)} if _is(op, "lds") else set(),
    "valu_writes_store_data": lambda op: _regs(op, "v", True) if _is(op, "valu") else set(),
    "s_getreg": lambda op: set(),
}


def _regs_value(v) -> set[Reg]:
    t = v.type
    return {(t.PREFIX, r) for r in t.registers()} if isinstance(t, gcn.GCNRegisterType) else set()


def _wait_states(op: Operation) -> int:
    if isinstance(op, gcn.SNopOp):
        return op.count.value.data + 1
    if isinstance(op, gcn.GCNInstruction) and not isinstance(op, gcn.PseudoOp | gcn.LoopOp):
        return 1
    return 0


@dataclass(frozen=True)
class GcnInsertHazardNopsPass(ModulePass):
    """Option: ``target`` (which hazard table to use)."""

    name = "gcn-insert-hazard-nops"

    target: str = "gfx906"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hazards = [h for h in get_target(self.target).hazards
                   if h.producer in PRODUCERS and h.consumer in CONSUMERS]
        for kernel in [o for o in op.walk() if isinstance(o, gcn.KernelOp)]:
            self._block(kernel.body.block, [], hazards)

    def _block(self, block: Block, before: list[Operation], hazards: list[Hazard]) -> list[Operation]:
        """``before``: instructions executed before this block, most recent last.

        Where a forward branch joins at a label, the instructions after it are checked
        against both paths' histories (the fall-through one and the branch's)."""
        histories = [list(before)]
        at_label: dict[str, list[list[Operation]]] = {}
        for op in list(block.ops):
            if isinstance(op, gcn.SCbranchForwardOp):
                at_label[op.target.data] = [list(h) for h in histories]
            if isinstance(op, gcn.LabelOp) and op.label.data in at_label:
                histories = histories + at_label.pop(op.label.data)
            if isinstance(op, gcn.LoopOp):
                # the first iteration follows the history, later ones follow the body's end
                for h in histories:
                    self._block(op.body.block, h, hazards)
                self._block(op.body.block, list(_flat(op.body.block)), hazards)
                body = list(_flat(op.body.block))
                histories = [h + body for h in histories]
                continue
            need, reason = 0, ""
            for history in histories:
                n, r = _need(op, history, hazards)
                if n > need:
                    need, reason = n, r
            if need:
                nop = gcn.SNopOp(need - 1, comment=f"hazard {reason}")
                block.insert_op_before(nop, op)
                histories = [h + [nop] for h in histories]
            if isinstance(op, gcn.GCNInstruction):
                histories = [(h + [op])[-64:] for h in histories]
        return histories[0]


def _need(op: Operation, history: list[Operation], hazards: list[Hazard]) -> tuple[int, str]:
    """Wait states still missing before ``op`` after ``history`` (and the hazard's name)."""
    need, reason = 0, ""
    for h in hazards:
        consumed = CONSUMERS[h.consumer](op)
        if not consumed:
            continue
        distance = 0
        for prev in reversed(history):
            if distance >= h.wait_states:
                break
            if PRODUCERS[h.producer](prev) & consumed:
                if h.wait_states - distance > need:
                    need, reason = h.wait_states - distance, h.name
                break
            distance += _wait_states(prev)
    return need, reason


def _flat(block: Block):
    for op in block.ops:
        if isinstance(op, gcn.LoopOp):
            yield from _flat(op.body.block)
        else:
            yield op
