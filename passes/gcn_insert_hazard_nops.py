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
from vlpc.passes.common import kernels
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


def _class_unit(cls: type) -> str | None:
    return cls.UNIT if issubclass(cls, gcn.GCNInstruction) else None


def _class_mnemonic(cls: type) -> str:
    row = cls.ISA if issubclass(cls, gcn.GCNInstruction) else None
    return "" if row is None else row.mnemonic


def _class_wide_store(cls: type) -> bool:
    row = cls.ISA if issubclass(cls, gcn.GCNInstruction) else None
    data = isa.store_data(row) if row is not None else None
    return data is not None and data[1] > 2


def _any_class(cls: type) -> bool:
    return True


# Which operation classes a kind can apply to at all (the class facts its function above tests
# first): the pass evaluates a kind's function only for ops of those classes (a kind missing
# here is evaluated for every op).
PRODUCER_CLASSES: dict[str, Callable[[type], bool]] = {
    "valu_writes_sgpr": lambda c: _class_unit(c) == "valu",
    "valu_writes_vcc": lambda c: _class_unit(c) == "valu",
    "valu_writes_exec": lambda c: _class_unit(c) == "valu",
    "valu_writes_vgpr": lambda c: _class_unit(c) == "valu",
    "salu_writes_m0": lambda c: _class_unit(c) == "salu",
    "store_wider_than_8_bytes": _class_wide_store,
    "s_setreg": lambda c: _class_mnemonic(c).startswith("s_setreg"),
}
CONSUMER_CLASSES: dict[str, Callable[[type], bool]] = {
    "vmem_reads_sgpr": lambda c: _class_unit(c) == "vmem",
    "readlane_lane_select": lambda c: _class_mnemonic(c) in ("v_readlane_b32", "v_writelane_b32"),
    "v_div_fmas": lambda c: _class_mnemonic(c).startswith("v_div_fmas"),
    "dpp": lambda c: issubclass(c, gcn.GCNInstruction) and c.ISA is not None and c.MNEMONIC.endswith("_dpp"),
    "dpp_reads_vgpr": lambda c: issubclass(c, gcn.GCNInstruction) and c.ISA is not None and c.MNEMONIC.endswith("_dpp"),
    "lds_or_sendmsg_or_movrel": lambda c: (_class_unit(c) in ("lds", "message")
                                           or _class_mnemonic(c).startswith("s_movrel")),
    "valu_writes_store_data": lambda c: _class_unit(c) == "valu",
    "s_getreg": lambda c: _class_mnemonic(c) == "s_getreg_b32",
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


class _Facts:
    """What the hazard table asks of each instruction, computed once per op, kind and pass run
    (a loop body is looked at up to three times: its first iteration after each path into it,
    then after its own end), and only for the kinds its class can be (``PRODUCER_CLASSES``,
    ``CONSUMER_CLASSES``): the registers it consumes for each consumer kind of the table's
    hazards (only the non-empty ones are kept), those it produces for a producer kind, and
    its wait states."""

    _EMPTY: frozenset = frozenset()

    def __init__(self, hazards: list[Hazard]):
        self.hazards = hazards
        self.consumers = sorted({h.consumer for h in hazards})
        self._class_consumers: dict[type, list[str]] = {}
        self._class_produces: dict[tuple[type, str], bool] = {}
        self._consumed: dict[int, dict[str, set[Reg]]] = {}
        self._produced: dict[tuple[int, str], set[Reg]] = {}
        self._wait_states: dict[type, int] = {}
        self._class_flags: dict[type, tuple[bool, bool, bool, bool]] = {}

    def consumed(self, op: Operation) -> dict[str, set[Reg]]:
        """Consumer kind -> registers (non-empty sets only)."""
        facts = self._consumed.get(id(op))
        if facts is None:
            cls = type(op)
            kinds = self._class_consumers.get(cls)
            if kinds is None:
                kinds = self._class_consumers[cls] = [k for k in self.consumers
                                                      if CONSUMER_CLASSES.get(k, _any_class)(cls)]
            facts = {}
            for kind in kinds:
                regs = CONSUMERS[kind](op)
                if regs:
                    facts[kind] = regs
            self._consumed[id(op)] = facts
        return facts

    def produced(self, op: Operation, kind: str) -> set[Reg]:
        key = (id(op), kind)
        regs = self._produced.get(key)
        if regs is None:
            ckey = (type(op), kind)
            can = self._class_produces.get(ckey)
            if can is None:
                can = self._class_produces[ckey] = PRODUCER_CLASSES.get(kind, _any_class)(type(op))
            regs = self._produced[key] = PRODUCERS[kind](op) if can else self._EMPTY
        return regs

    def class_of(self, op: Operation) -> tuple[bool, bool, bool, bool]:
        """Whether ``op`` is a forward branch, a label, a loop, an instruction (by its class,
        looked up once per class: an ``isinstance`` of xDSL's abstract classes is slow)."""
        cls = type(op)
        flags = self._class_flags.get(cls)
        if flags is None:
            flags = self._class_flags[cls] = (issubclass(cls, gcn.SCbranchForwardOp), issubclass(cls, gcn.LabelOp),
                                              issubclass(cls, gcn.LoopOp), issubclass(cls, gcn.GCNInstruction))
        return flags

    def wait_states(self, op: Operation) -> int:
        cls = type(op)
        n = self._wait_states.get(cls)  # by class, except s_nop's own count
        if n is None:
            n = self._wait_states[cls] = -1 if issubclass(cls, gcn.SNopOp) else _wait_states(op)
        return _wait_states(op) if n < 0 else n


@dataclass(frozen=True)
class GcnInsertHazardNopsPass(ModulePass):
    """Option: ``target`` (which hazard table to use)."""

    name = "gcn-insert-hazard-nops"

    target: str = "gfx906"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hazards = [h for h in get_target(self.target).hazards
                   if h.producer in PRODUCERS and h.consumer in CONSUMERS]
        facts = _Facts(hazards)
        for kernel in kernels(op):
            self._block(kernel.body.block, [], facts)

    def _block(self, block: Block, before: list[Operation], facts: _Facts) -> list[Operation]:
        """``before``: instructions executed before this block, most recent last.

        Where a forward branch joins at a label, the instructions after it are checked
        against both paths' histories (the fall-through one and the branch's)."""
        histories = [list(before)]
        at_label: dict[str, list[list[Operation]]] = {}
        for op in list(block.ops):
            branch, label, loop, instruction = facts.class_of(op)
            if branch:
                at_label[op.target.data] = [list(h) for h in histories]
            if label and op.label.data in at_label:
                histories = histories + at_label.pop(op.label.data)
            if loop:
                # the first iteration follows the history, later ones follow the body's end
                for h in histories:
                    self._block(op.body.block, h, facts)
                self._block(op.body.block, list(_flat(op.body.block)), facts)
                body = list(_flat(op.body.block))
                histories = [h + body for h in histories]
                continue
            need, reason = 0, ""
            if facts.consumed(op):
                for history in histories:
                    n, r = _need(op, history, facts)
                    if n > need:
                        need, reason = n, r
            if need:
                nop = gcn.SNopOp(need - 1, comment=f"hazard {reason}")
                block.insert_op_before(nop, op)
                histories = [h + [nop] for h in histories]
            if instruction:
                histories = [(h + [op])[-64:] for h in histories]
        return histories[0]


def _need(op: Operation, history: list[Operation], facts: _Facts) -> tuple[int, str]:
    """Wait states still missing before ``op`` after ``history`` (and the hazard's name)."""
    need, reason = 0, ""
    consumed_by_kind = facts.consumed(op)
    for h in facts.hazards:
        consumed = consumed_by_kind.get(h.consumer)
        if not consumed:
            continue
        distance = 0
        for prev in reversed(history):
            if distance >= h.wait_states:
                break
            if facts.produced(prev, h.producer) & consumed:
                if h.wait_states - distance > need:
                    need, reason = h.wait_states - distance, h.name
                break
            distance += facts.wait_states(prev)
    return need, reason


def _flat(block: Block):
    for op in block.ops:
        if isinstance(op, gcn.LoopOp):
            yield from _flat(op.body.block)
        else:
            yield op
