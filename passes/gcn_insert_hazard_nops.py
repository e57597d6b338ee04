"""``gcn-insert-hazard-nops``: insert the GFX9 wait states that instruction pairs need.

The hazards are data (``vlpc.targets.Target.hazards``, from LLVM's
``GCNHazardRecognizer.cpp``): a producer kind, a consumer kind, the operand that
carries the dependence and the number of wait states.  For each consumer the pass
looks back over the instructions that precede it in execution order (including the
end of a loop body before the loop's first instruction) and, if a matching
producer is closer than the required number of wait states, inserts ``s_nop N``
(N + 1 wait states) before the consumer.  Every instruction counts as one wait
state; ``s_nop N`` counts N + 1.

What an instruction is comes from the gfx906 table (``vlpc.isa``, each op's ``ISA``
row), never from lists kept here: its issue class (``UNIT``: VALU, SALU, VMEM, LDS,
message), its mnemonic (``v_readlane/v_writelane``, ``v_div_fmas``, ``s_setreg``/
``s_getreg``, ``s_movrel*``, ``_dpp`` forms) and the data operand and width of a
vector-memory store or atomic (``vlpc.isa.store_data``: stores and atomics whose data
is wider than 8 bytes, LLVM ``GCNHazardRecognizer::createsVALUHazard``).  Register
operands come from the op's SSA values; where an instruction's operand roles are not
modelled (the lane select of ``v_readlane``/``v_writelane``), every SGPR it reads is
taken, which can only add wait states.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from vlpc import isa
from vlpc.dialects import gcn
from vlpc.passes.gcn_insert_waitcnt import Reg, reads, writes
from vlpc.targets import Hazard, get_target


def _regs(op: Operation, kind: str, results: bool) -> set[Reg]:
    regs = writes(op) if results else reads(op)
    return {r for r in regs if r[0] == kind}


def _is(op: Operation, unit: str) -> bool:
    """Whether the table's issue class of ``op`` is ``unit``."""
    return isinstance(op, gcn.GCNInstruction) and op.UNIT == unit


def _mnemonic(op: Operation) -> str:
    """The table mnemonic of ``op`` (``""`` for ops without a row; no form suffix)."""
    row = op.ISA if isinstance(op, gcn.GCNInstruction) else None
    return "" if row is None else row.mnemonic


def _is_dpp(op: Operation) -> bool:
    return isinstance(op, gcn.GCNInstruction) and op.ISA is not None and op.MNEMONIC.endswith("_dpp")


def _store_data_regs(op: Operation) -> set[Reg]:
    """Registers of the data of a vector-memory store or atomic wider than 8 bytes (the
    table gives the data operand and its width; the op's operands follow the table's order
    without the destination)."""
    row = op.ISA if isinstance(op, gcn.GCNInstruction) else None
    data = isa.store_data(row) if row is not None else None
    if data is None or data[1] <= 2 or data[0] >= len(op.operands):
        return set()
    return _regs_value(op.operands[data[0]])


# producer kind -> registers it writes that matter (empty set: not a producer)
PRODUCERS: dict[str, Callable[[Operation], set[Reg]]] = {
    "valu_writes_sgpr": lambda op: _regs(op, "s", True) if _is(op, "valu") else set(),
    "valu_writes_vcc": lambda op: {r for r in writes(op) if r[0] == "vcc"} if _is(op, "valu") else set(),
    "valu_writes_exec": lambda op: {r for r in writes(op) if r[0] == "exec"} if _is(op, "valu") else set(),
    "valu_writes_vgpr": lambda op: _regs(op, "v", True) if _is(op, "valu") else set(),
    "salu_writes_m0": lambda op: {r for r in writes(op) if r[0] == "m0"} if _is(op, "salu") else set(),
    "store_wider_than_8_bytes": _store_data_regs,
    "s_setreg": lambda op: {("hwreg", 0)} if _mnemonic(op).startswith("s_setreg") else set(),
}

# consumer kind -> registers it reads (or overwrites) that a producer may have written
CONSUMERS: dict[str, Callable[[Operation], set[Reg]]] = {
    "vmem_reads_sgpr": lambda op: _regs(op, "s", False) if _is(op, "vmem") else set(),
    "readlane_lane_select": lambda op: (_regs(op, "s", False)
                                        if _mnemonic(op) in ("v_readlane_b32", "v_writelane_b32") else set()),
    "v_div_fmas": lambda op: {("vcc", 0)} if _mnemonic(op).startswith("v_div_fmas") else set(),
    "dpp": lambda op: {("exec", 0)} if _is_dpp(op) else set(),
    "dpp_reads_vgpr": lambda op: _regs(op, "v", False) if _is_dpp(op) else set(),
    "lds_or_sendmsg_or_movrel": lambda op: ({("m0", 0)} if _is(op, "lds") or _is(op, "message")
                                            or _mnemonic(op).startswith("s_movrel") else set()),
    "valu_writes_store_data": lambda op: _regs(op, "v", True) if _is(op, "valu") else set(),
    "s_getreg": lambda op: {("hwreg", 0)} if _mnemonic(op) == "s_getreg_b32" else set(),
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
