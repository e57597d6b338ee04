"""The ``gcn`` dialect: GCN (GFX9) instructions on register-typed SSA values.

Registers are types on SSA values, after xDSL's ``riscv`` dialect:

* ``!gcn.sgpr<x8>``: an unallocated range of 8 consecutive SGPRs;
  ``!gcn.sgpr<s[32:39]>`` once allocated (``!gcn.sgpr<s5>`` for one register).
* ``!gcn.vgpr<x4>`` / ``!gcn.vgpr<v[8:11]>`` likewise for VGPRs.
* ``!gcn.special<exec>``, ``<vcc>``, ``<m0>``: fixed special registers.

Every instruction is one operation that prints one line of assembly
(:meth:`GCNInstruction.assembly_line`); SSA results are the registers an
instruction writes, operands the registers it reads; immediates are properties.
``gcn.kernel`` holds a kernel body (its entry block arguments are the registers
the dispatcher initialises), ``gcn.loop`` a counted loop whose back edge is a
``gcn.loop_back`` (``s_cbranch_scc*``), and ``gcn.module``-level printing emits
the ``.amdhsa_kernel`` descriptor and the ``.amdgpu_metadata`` note from the
kernel's ``descriptor``/``metadata`` attributes (filled by ``gcn-emit-descriptor``).

SCC is modelled implicitly (``implicit_defs``/``implicit_uses`` class data), as
are EXEC for vector instructions; instruction selection emits code in issue
order and no pass reorders across them.

Instruction facts come from the gfx906 table (``vlpc.isa``), never from the op
classes: when a class naming a ``MNEMONIC`` is defined, the mnemonic (and its
``_e32``/``_e64``/``_sdwa``/``_dpp`` form) is looked up and a misspelt or
non-gfx906 one is a ``TypeError``; the class gets its table row (``ISA``: encoding,
opcode, counters, in-order return, issue class), its ``UNIT`` (the row's issue
class) and the widths its base class reads from the row's operands
(``WIDTH_FACTS``/``_table_facts``: ``DWORDS``, ``DST_WIDTH``, ``WIDTH``, ``OFFSET_UNIT``).  A class
that restates one of them must agree with the table.  The thin ops of a family (a base
class and a mnemonic, nothing else) are generated from the table by ``_table_op``
(``TABLE_OPS``); hand-written classes remain for ops with their own operands, syntax or
verification.
"""

from __future__ import annotations

import json
from abc import ABC
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntAttr,
    IntegerAttr,
    NoneAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    opt_attr_def,
    opt_operand_def,
    opt_prop_def,
    operand_def,
    param_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from vlpc import isa as _isa
from vlpc.dialects.op_init import i64_attr as _i64
from vlpc.dialects.op_init import init_operation as _init_operation

# ---------------------------------------------------------------------------
# Register types
# ---------------------------------------------------------------------------


#: Register types built by ``unallocated``/``at``, reused (building and verifying an attribute
#: is a measurable part of compile time: thousands per kernel).
_REGISTER_TYPES: dict[tuple, "GCNRegisterType"] = {}


@dataclass(frozen=True)
class GCNRegisterType(ParametrizedAttribute, TypeAttribute, ABC):
    """A range of ``width`` consecutive 32-bit registers; ``index`` is None until allocated.

    Two register types are equal (and hash alike) when they are of one kind (SGPR, VGPR) and
    have the same ``width`` and ``index``: ``!gcn.sgpr<s5>`` is not ``!gcn.sgpr<s6>``,
    ``!gcn.sgpr<x2>`` or ``!gcn.sgpr<s[5:6]>``, and an allocated range is not the unallocated
    one of its width (``kind_and_width`` compares only those).  The parameters are declared as
    dataclass fields of this abstract base, as xDSL declares those of its ``RegisterType``
    (xdsl/backend/register_type.py): ``irdl_attr_definition`` makes each concrete subclass a
    frozen dataclass whose generated ``__eq__``/``__hash__`` cover exactly the fields of its
    dataclass bases, and with ``param_def`` on an undecorated base they covered none.
    """

    PREFIX: ClassVar[str]
    width: IntAttr
    index: IntAttr | NoneAttr

    @classmethod
    def unallocated(cls, width: int = 1):
        key = (cls, width, None)
        t = _REGISTER_TYPES.get(key)
        if t is None:  # attributes are immutable: one instance per kind, width and register
            t = _REGISTER_TYPES[key] = cls(IntAttr(width), NoneAttr())
        return t

    @classmethod
    def at(cls, index: int, width: int = 1):
        key = (cls, width, index)
        t = _REGISTER_TYPES.get(key)
        if t is None:
            t = _REGISTER_TYPES[key] = cls(IntAttr(width), IntAttr(index))
        return t

    @property
    def is_allocated(self) -> bool:
        return isinstance(self.index, IntAttr)

    @property
    def n(self) -> int:
        return self.width.data

    @property
    def first(self) -> int:
        assert isinstance(self.index, IntAttr), f"{self} is not allocated"
        return self.index.data

    def registers(self) -> range:
        """Physical register numbers this range occupies."""
        return range(self.first, self.first + self.n)

    def asm(self) -> str:
        """Assembly spelling: ``s5``, ``v[8:11]``; unallocated values have none."""
        if not self.is_allocated:
            raise VerifyException(f"register {self} is not allocated; run gcn-allocate-registers first")
        i = self.first
        return f"{self.PREFIX}{i}" if self.n == 1 else f"{self.PREFIX}[{i}:{i + self.n - 1}]"

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            tok = parser.parse_identifier()
            if tok.startswith("x") and tok[1:].isdigit():
                return (IntAttr(int(tok[1:])), NoneAttr())
            if tok == cls.PREFIX and parser.parse_optional_punctuation("["):
                lo = parser.parse_integer()
                parser.parse_punctuation(":")
                hi = parser.parse_integer()
                parser.parse_punctuation("]")
                return (IntAttr(hi - lo + 1), IntAttr(lo))
            if tok.startswith(cls.PREFIX) and tok[len(cls.PREFIX):].isdigit():
                return (IntAttr(1), IntAttr(int(tok[len(cls.PREFIX):])))
            parser.raise_error(f"expected x<width>, {cls.PREFIX}N or {cls.PREFIX}[lo:hi]")

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.asm() if self.is_allocated else f"x{self.n}")

    def verify(self) -> None:
        if self.n not in (1, 2, 3, 4, 8, 16):
            raise VerifyException(f"{self.name}: unsupported register range width {self.n}")


@irdl_attr_definition
class SGPRType(GCNRegisterType):
    """Scalar registers (one value per wavefront)."""

    name = "gcn.sgpr"
    PREFIX = "s"


@irdl_attr_definition
class VGPRType(GCNRegisterType):
    """Vector registers (one value per work-item)."""

    name = "gcn.vgpr"
    PREFIX = "v"


SPECIAL_WIDTH = {"exec": 2, "vcc": 2, "m0": 1}


@irdl_attr_definition
class SpecialRegType(ParametrizedAttribute, TypeAttribute):
    """A special register: ``exec``, ``vcc`` or ``m0``."""

    name = "gcn.special"
    reg: StringAttr = param_def(StringAttr)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (StringAttr(parser.parse_identifier()),)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.reg.data)

    def verify(self) -> None:
        if self.reg.data not in SPECIAL_WIDTH:
            raise VerifyException(f"unknown special register {self.reg.data}")

    def asm(self) -> str:
        return self.reg.data


def kind_and_width(t: Attribute) -> object:
    """``(SGPRType or VGPRType, width)`` of a register range, whether allocated or not;
    ``t`` itself for any other type.  What must agree between values the allocator gives one
    register range (a loop's init, block argument, yielded value and result), and all the
    IRDL constraints of a ``gcn`` op can tell apart in an operand or result type (they name
    register kinds, never registers, which are chosen after the ops are built): verification
    remembers the signatures it accepted by this (``vlpc.compiler``), as by the types
    themselves every allocated operand combination would be checked anew."""
    cls = t.__class__
    return (cls, t.width.data) if cls in _RANGE_CLASSES else t


def _allocated_first(t: Attribute) -> int | None:
    """The first register of an allocated range, else None."""
    if t.__class__ in _RANGE_CLASSES:
        index = t.index
        if index.__class__ is IntAttr:
            return index.data
    return None


#: The register range types (final classes: a class test is an ``isinstance`` without
#: the ABC's ``__instancecheck__``, verification runs these per operand).
_RANGE_CLASSES = frozenset((SGPRType, VGPRType))


def sgpr(width: int = 1) -> SGPRType:
    return SGPRType.unallocated(width)


def vgpr(width: int = 1) -> VGPRType:
    return VGPRType.unallocated(width)


#: id(register type) -> (the type, its assembly spelling): types are shared objects, spelled
#: thousands of times per kernel (kept alive here, so an id is never another type's).
_ASM_OF_TYPE: dict[int, tuple[Attribute, str]] = {}


def reg_asm(value: SSAValue) -> str:
    t = value.type
    hit = _ASM_OF_TYPE.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    if isinstance(t, GCNRegisterType | SpecialRegType):
        text = t.asm()
        if len(_ASM_OF_TYPE) < 1 << 16:
            _ASM_OF_TYPE[id(t)] = (t, text)
        return text
    raise VerifyException(f"value of type {t} is not a GCN register")


# ---------------------------------------------------------------------------
# Instructions
# ---------------------------------------------------------------------------

def branch_conditions() -> frozenset[str]:
    """Conditions ``c`` of the gfx906 conditional branches ``s_cbranch_<c> <label>`` (the
    table's ``s_cbranch_*`` rows whose only operand is the branch offset)."""
    return _BRANCH_CONDITIONS


_BRANCH_CONDITIONS = frozenset(
    r.mnemonic[len("s_cbranch_"):] for r in _isa.table().values()
    if r.mnemonic.startswith("s_cbranch_") and r.operands == (("imm", 0),))


def _table_row(cls: type, mnemonic: str) -> _isa.Instruction:
    """The table row of a class's ``MNEMONIC`` (``s_cbranch``: the conditional branch family)."""
    try:
        if mnemonic == "s_cbranch":
            return _isa.lookup("s_cbranch_" + min(_BRANCH_CONDITIONS))
        return _isa.lookup_form(mnemonic)
    except KeyError as e:
        raise TypeError(f"gcn op class {cls.__qualname__}: MNEMONIC {e.args[0]}") from None


class GCNInstruction(IRDLOperation, ABC):
    """Base of every instruction op: one assembly line, class data for the passes.

    ``ISA`` is the instruction's row of the gfx906 table (``vlpc.isa``; None for ops that
    print no instruction); ``UNIT`` its issue class there (``salu valu smem vmem lds branch
    waitcnt nop barrier message export``; ``pseudo``/``other`` for ops without a row);
    ``implicit_defs``/``implicit_uses`` name special state (``scc``, ``exec``, ``vcc``)
    read or written without an SSA operand.
    """

    MNEMONIC: ClassVar[str]
    #: The table row of ``MNEMONIC`` (set when the class is defined).
    ISA: ClassVar[_isa.Instruction | None] = None
    UNIT: ClassVar[str] = "other"
    IMPLICIT_DEFS: ClassVar[tuple[str, ...]] = ()
    IMPLICIT_USES: ClassVar[tuple[str, ...]] = ()
    #: Results may not share registers with operands (memory loads: the address
    #: must survive an XNACK replay).
    EARLY_CLOBBER: ClassVar[bool] = False

    comment = opt_attr_def(StringAttr)

    def __init__(self, *, operands=None, result_types=None, properties=None, attributes=None, successors=None,
                 regions=None):
        # xDSL's IRDLOperation.__init__, without its generic builder where it is not needed
        # (vlpc.dialects.op_init; compile speed, issue 18)
        _init_operation(self, operands, result_types, properties, attributes, successors, regions)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        mnemonic = cls.__dict__.get("MNEMONIC")
        if not mnemonic:  # inherited (bound where it is defined), or an op that prints no instruction
            return
        row = _table_row(cls, mnemonic)
        facts = {"UNIT": row.issue_class, **cls._table_facts(row)}
        annotations = cls.__dict__.get("__annotations__")
        if annotations is None:
            annotations = {}
            cls.__annotations__ = annotations
        for key, value in facts.items():
            own = cls.__dict__.get(key)
            if own is not None and own != value:
                raise TypeError(f"gcn op class {cls.__qualname__}: {key} = {own!r}, but the gfx906 table "
                                f"gives {value!r} for {mnemonic} (vlpc/isa/gfx906.json)")
            setattr(cls, key, value)
            annotations.setdefault(key, "ClassVar")
        cls.ISA = None if mnemonic == "s_cbranch" else row
        annotations.setdefault("ISA", "ClassVar")

    #: Widths a family of ops reads from its table row: ``{"DWORDS": 1}`` sets the class's
    #: ``DWORDS`` to the width (in dwords) of the row's operand 1.
    WIDTH_FACTS: ClassVar[dict[str, int]] = {}

    @classmethod
    def _table_facts(cls, row: _isa.Instruction) -> dict[str, object]:
        """Class data a family of ops reads from its table row (widths in dwords; ``WIDTH_FACTS``)."""
        return {fact: row.operands[i][1] for fact, i in cls.WIDTH_FACTS.items()}

    @classmethod
    def table_result_type(cls, index: int = 0) -> GCNRegisterType:
        """An unallocated register range of the kind and width of operand ``index`` of the
        table row (operand 0: the destination of an ALU instruction)."""
        assert cls.ISA is not None, f"{cls.__name__} has no table row"
        kind, dwords = cls.ISA.operands[index]
        return {"s": SGPRType, "v": VGPRType}[kind].unallocated(dwords)

    def asm_operands(self) -> list[str]:
        return [reg_asm(r) for r in self.results] + [reg_asm(o) for o in self.operands]

    def asm_suffix(self) -> str:
        return ""

    def assembly_line(self) -> str:
        ops = ", ".join(self.asm_operands())
        line = f"  {self.MNEMONIC}"
        if ops:
            line += " " + ops
        line += self.asm_suffix()
        if self.comment is not None:
            line = f"{line:<48} ; {self.comment.data}"
        return line


def _imm_text(value: int) -> str:
    return str(value) if -16 <= value <= 64 else hex(value & 0xFFFFFFFF)


def _comment(comment: str | None) -> dict[str, Attribute]:
    """The attributes of an op built with an optional assembly ``comment`` (none for None or '')."""
    return {"comment": StringAttr(comment)} if comment else {}


def _reg_or_imm(src: SSAValue | int) -> tuple[list[SSAValue], dict[str, Attribute]]:
    """An optional register operand and its alternative, the ``imm`` property: ``([src], {})``
    for a register, ``([], {"imm": src})`` for an integer."""
    return ([], {"imm": _i64(src)}) if isinstance(src, int) else ([src], {})


def _reg_or_imm_asm(reg: SSAValue | None, imm: IntegerAttr | None) -> str:
    """Assembly of an operand that is a register or, when absent, the immediate ``imm``."""
    return reg_asm(reg) if reg is not None else _imm_text(imm.value.data)


def _check_reg_xor_imm(op: GCNInstruction, reg: str) -> None:
    """Exactly one of the optional register operand ``reg`` and the ``imm`` property is set."""
    if (getattr(op, reg) is None) == (op.imm is None):
        raise VerifyException(f"{op.name}: exactly one of {reg} and imm must be given")


def _table_op(base: type, mnemonic: str, doc: str | None = None, **class_data) -> type:
    """The op class of the gfx906 table's ``mnemonic`` in the family ``base``: a thin class,
    generated (as xDSL's ``riscv`` dialect builds its ops from a few parameterised bases).

    Its class name (``v_add_f32`` -> ``VAddF32Op``) and op name (``gcn.v_add_f32``; an
    ``_e64`` suffix is not part of it) follow from the mnemonic, its facts (encoding,
    opcode, widths, counters, issue class) from the table row when the class is defined
    (:meth:`GCNInstruction.__init_subclass__`; a mnemonic outside the table is a
    TypeError).  ``class_data`` sets other class variables (``IMPLICIT_USES``,
    ``IMPLICIT_DEFS``).  The docstring is ``doc`` (what the instruction computes), else
    the row's sample assembly.
    """
    op = mnemonic.removesuffix("_e64")
    cls_name = "".join(p[:1].upper() + p[1:] for p in op.split("_")) + "Op"
    attrs = {"name": f"gcn.{op}", "MNEMONIC": mnemonic, **class_data, "__module__": __name__,
             "__qualname__": cls_name, "__annotations__": dict.fromkeys(("MNEMONIC", *class_data), "ClassVar")}
    cls = irdl_op_definition(type(cls_name, (base,), attrs))
    row = cls.ISA
    cls.__doc__ = doc or f"``{row.asm}`` ({row.encoding}, opcode {row.opcode:#x}; the gfx906 table)."
    TABLE_OPS.append(cls)
    return cls


#: The op classes :func:`_table_op` generated, in definition order.
TABLE_OPS: list[type[GCNInstruction]] = []


# ---- memory access families ----------------------------------------------------


class MemoryBase(GCNInstruction, ABC):
    """A load or store of ``DWORDS`` registers of data at an immediate byte ``offset``.

    A load's data is its result, table operand 0; a store's (``STORE``) is its ``vdata``
    operand, table operand 1 (the table lists an instruction's registers as its assembly
    does: destination first).  Verification checks the data width against ``DWORDS``.
    """

    DWORDS: ClassVar[int]
    STORE: ClassVar[bool] = False
    offset = prop_def(IntegerAttr, default_value=IntegerAttr(0, i64))

    @classmethod
    def _table_facts(cls, row: _isa.Instruction) -> dict[str, object]:
        return {"DWORDS": row.operands[1 if cls.STORE else 0][1]}

    def verify_(self) -> None:
        if self.STORE:
            data, verb, what = self.vdata, "stores", "data"
        else:
            data, verb, what = self.results[0], "writes", "result"
        t = data.type
        if t.n != self.DWORDS:
            kind = "SGPRs" if isinstance(t, SGPRType) else "VGPRs"
            raise VerifyException(f"{self.name} {verb} {self.DWORDS} {kind}, {what} has {t.n}")


class VectorAccessBase(MemoryBase, ABC):
    """A per-lane load or store (global memory or LDS): reads EXEC, and prints a nonzero
    ``offset`` as `` offset:N``."""

    IMPLICIT_USES: ClassVar[tuple[str, ...]] = ("exec",)

    def asm_suffix(self) -> str:
        off = self.offset.value.data
        return f" offset:{off}" if off else ""


# ---- scalar memory --------------------------------------------------------


class SLoadBase(MemoryBase, ABC):
    """``s_load_dwordxN sdst, sbase, [soffset] [offset]`` (SMEM; results return out of order)."""

    EARLY_CLOBBER: ClassVar[bool] = True
    sdst = result_def(SGPRType)
    sbase = operand_def(SGPRType)
    soffset = opt_operand_def(SGPRType)

    def __init__(self, sbase: SSAValue, offset: int = 0, soffset: SSAValue | None = None,
                 comment: str | None = None):
        super().__init__(
            operands=[sbase, [soffset] if soffset is not None else []],
            result_types=[sgpr(self.DWORDS)],
            properties={"offset": _i64(offset)},
            attributes=_comment(comment),
        )

    def asm_operands(self) -> list[str]:
        ops = [reg_asm(self.sdst), reg_asm(self.sbase)]
        off = self.offset.value.data
        if self.soffset is not None:
            ops.append(reg_asm(self.soffset))
        else:
            ops.append(hex(off))
        return ops

    def asm_suffix(self) -> str:
        off = self.offset.value.data
        return f" offset:{hex(off)}" if self.soffset is not None and off else ""

    def verify_(self) -> None:
        super().verify_()
        if self.sbase.type.n != 2:
            raise VerifyException(f"{self.name}: sbase must be an SGPR pair")


SLoadDwordOp = _table_op(SLoadBase, "s_load_dword")


SLoadDwordx2Op = _table_op(SLoadBase, "s_load_dwordx2")


SLoadDwordx4Op = _table_op(SLoadBase, "s_load_dwordx4")


SLoadDwordx8Op = _table_op(SLoadBase, "s_load_dwordx8")


SLoadDwordx16Op = _table_op(SLoadBase, "s_load_dwordx16")


S_LOADS: dict[int, type[SLoadBase]] = {  # by width in dwords
    c.DWORDS: c for c in (SLoadDwordOp, SLoadDwordx2Op, SLoadDwordx4Op, SLoadDwordx8Op, SLoadDwordx16Op)
}

# ---- scalar ALU -----------------------------------------------------------


class SOP2Base(GCNInstruction, ABC):
    """``op sdst, src0, src1`` where src1 is an SGPR or an immediate (inline or literal)."""

    IMPLICIT_DEFS: ClassVar[tuple[str, ...]] = ("scc",)
    DST_WIDTH: ClassVar[int]
    WIDTH_FACTS: ClassVar[dict[str, int]] = {"DST_WIDTH": 0}
    sdst = result_def(SGPRType)
    src0 = operand_def(SGPRType)
    src1 = opt_operand_def(SGPRType)
    imm = opt_prop_def(IntegerAttr)

    def __init__(self, src0: SSAValue, src1: SSAValue | int, comment: str | None = None):
        src1, props = _reg_or_imm(src1)
        super().__init__(operands=[src0, src1], result_types=[sgpr(self.DST_WIDTH)], properties=props,
                         attributes=_comment(comment))

    def asm_operands(self) -> list[str]:
        return [reg_asm(self.sdst), reg_asm(self.src0), _reg_or_imm_asm(self.src1, self.imm)]

    def verify_(self) -> None:
        _check_reg_xor_imm(self, "src1")


SAddU32Op = _table_op(SOP2Base, "s_add_u32")
SAddcU32Op = _table_op(SOP2Base, "s_addc_u32", IMPLICIT_USES=("scc",))
SSubU32Op = _table_op(SOP2Base, "s_sub_u32")
SMulI32Op = _table_op(SOP2Base, "s_mul_i32", IMPLICIT_DEFS=())
#: (a.lo16 | b.lo16 << 16) and (a.hi16 | b.hi16 << 16): two f16 values into one SGPR (no SCC)
SPackLlB32B16Op = _table_op(SOP2Base, "s_pack_ll_b32_b16", IMPLICIT_DEFS=())
SPackHhB32B16Op = _table_op(SOP2Base, "s_pack_hh_b32_b16", IMPLICIT_DEFS=())
SMinU32Op = _table_op(SOP2Base, "s_min_u32")
SLshlB32Op = _table_op(SOP2Base, "s_lshl_b32")
SLshrB32Op = _table_op(SOP2Base, "s_lshr_b32")
SAndB32Op = _table_op(SOP2Base, "s_and_b32")
SOrB32Op = _table_op(SOP2Base, "s_or_b32")
SXorB32Op = _table_op(SOP2Base, "s_xor_b32")
SMaxU32Op = _table_op(SOP2Base, "s_max_u32")


#: SCC ? src0 : src1 (reads SCC, writes none): a select without a branch (grouped workgroup order, isel/emit.py)
SCselectB32Op = _table_op(SOP2Base, "s_cselect_b32", "``s_cselect_b32 sdst, src0, src1``: SCC ? src0 : src1.",
                          IMPLICIT_DEFS=(), IMPLICIT_USES=("scc",))


SMulHiU32Op = _table_op(SOP2Base, "s_mul_hi_u32", "``s_mul_hi_u32`` (a GFX9 addition); src1 must be a register.",
                        IMPLICIT_DEFS=())


class SOPCBase(GCNInstruction, ABC):
    """``s_cmp_* src0, src1``: compares and writes SCC."""

    IMPLICIT_DEFS: ClassVar[tuple[str, ...]] = ("scc",)
    src0 = operand_def(SGPRType)
    src1 = opt_operand_def(SGPRType)
    imm = opt_prop_def(IntegerAttr)

    def __init__(self, src0: SSAValue, src1: SSAValue | int):
        src1, props = _reg_or_imm(src1)
        super().__init__(operands=[src0, src1], properties=props)

    def asm_operands(self) -> list[str]:
        return [reg_asm(self.src0), _reg_or_imm_asm(self.src1, self.imm)]


SCmpLgU32Op = _table_op(SOPCBase, "s_cmp_lg_u32")


SCmpEqU32Op = _table_op(SOPCBase, "s_cmp_eq_u32")


SCmpLtU32Op = _table_op(SOPCBase, "s_cmp_lt_u32")


@irdl_op_definition
class SMovB32Op(GCNInstruction):
    """``s_mov_b32 sdst, src`` (register or immediate)."""

    name = "gcn.s_mov_b32"
    MNEMONIC: ClassVar[str] = "s_mov_b32"
    sdst = result_def(SGPRType)
    src = opt_operand_def(SGPRType)
    imm = opt_prop_def(IntegerAttr)

    def __init__(self, src: SSAValue | int):
        src, props = _reg_or_imm(src)
        super().__init__(operands=[src], result_types=[self.table_result_type()], properties=props)

    def asm_operands(self) -> list[str]:
        return [reg_asm(self.sdst), _reg_or_imm_asm(self.src, self.imm)]


# ---- vector ALU -----------------------------------------------------------


class VOPBase(GCNInstruction, ABC):
    IMPLICIT_USES: ClassVar[tuple[str, ...]] = ("exec",)


class VFmaBase(VOPBase, ABC):
    """``v_fma_fN vdst, src0, src1, src2`` = src0 * src1 + src2, one rounding (VOP3), on
    ``WIDTH`` registers per operand (the table's destination width: 1, or a pair for f64).

    At most one source may be an SGPR (range) (the constant bus, LLVM getConstantBusLimit).
    """

    WIDTH: ClassVar[int]
    WIDTH_FACTS: ClassVar[dict[str, int]] = {"WIDTH": 0}
    vdst = result_def(VGPRType)
    src0 = operand_def(VGPRType | SGPRType)
    src1 = operand_def(VGPRType | SGPRType)
    src2 = operand_def(VGPRType | SGPRType)

    def __init__(self, src0: SSAValue, src1: SSAValue, src2: SSAValue, comment: str | None = None):
        super().__init__(operands=[src0, src1, src2], result_types=[self.table_result_type()],
                         attributes=_comment(comment))

    def verify_(self) -> None:
        pair = self.WIDTH == 2
        if len({o for o in self.operands if isinstance(o.type, SGPRType)}) > 1:
            raise VerifyException(f"{self.MNEMONIC} reads more than one SGPR{' pair' if pair else ''} "
                                  "(constant bus limit is 1 on gfx9)")
        if any(o.type.n != self.WIDTH for o in self.operands):
            raise VerifyException(f"{self.MNEMONIC} operands are {'register pairs' if pair else 'single registers'}")


VFmaF32Op = _table_op(VFmaBase, "v_fma_f32", "``v_fma_f32 vdst, src0, src1, src2`` = src0 * src1 + src2, one "
                      "rounding (VOP3); at most one source may be an SGPR (the constant bus, LLVM "
                      "getConstantBusLimit).")
VFmaF64Op = _table_op(VFmaBase, "v_fma_f64", "``v_fma_f64 vdst, src0, src1, src2`` on register pairs, one "
                      "rounding (VOP3); at most one source may be an SGPR pair (the constant bus, LLVM "
                      "getConstantBusLimit).")


class VOP2Base(VOPBase, ABC):
    """``op vdst, src0, src1`` where src0 may be an SGPR (range) and src1 is a VGPR (range);
    ``WIDTH`` registers per operand (1, or 2 for f64; the table's destination width)."""

    WIDTH: ClassVar[int]
    WIDTH_FACTS: ClassVar[dict[str, int]] = {"WIDTH": 0}
    vdst = result_def(VGPRType)
    src0 = operand_def(VGPRType | SGPRType)
    src1 = operand_def(VGPRType)

    def __init__(self, src0: SSAValue, src1: SSAValue):
        super().__init__(operands=[src0, src1], result_types=[vgpr(self.WIDTH)])


VAddF32Op = _table_op(VOP2Base, "v_add_f32")


VAddF64Op = _table_op(VOP2Base, "v_add_f64")


class VOP1Base(VOPBase, ABC):
    """``op vdst, src`` (VOP1)."""

    vdst = result_def(VGPRType)
    src = operand_def(VGPRType)

    def __init__(self, src: SSAValue):
        super().__init__(operands=[src], result_types=[self.table_result_type()])


class VMaxZeroBase(VOP1Base, ABC):
    """``op vdst, 0, src``: a VOP2 op whose ``src0`` is the inline constant 0, so one register
    operand as a VOP1 op (``v_max_*``: ReLU)."""

    def asm_operands(self) -> list[str]:
        return [reg_asm(self.vdst), "0", reg_asm(self.src)]


VMaxF32Op = _table_op(VMaxZeroBase, "v_max_f32", "``v_max_f32 vdst, 0, src`` (ReLU).")


VMaxF64Op = _table_op(VMaxZeroBase, "v_max_f64", "``v_max_f64 vdst, 0, src`` (ReLU on a register pair).")


VExpF32Op = _table_op(
    VOP1Base, "v_exp_f32",
    "``v_exp_f32``: 2**x (approximate, 1 ULP on hardware).",
)


VRcpF32Op = _table_op(
    VOP1Base, "v_rcp_f32",
    "``v_rcp_f32``: 1/x (approximate, 1 ULP on hardware).",
)


VMulF32Op = _table_op(
    VOP2Base, "v_mul_f32",
    "``v_mul_f32 vdst, src0, src1`` (src0 may be an SGPR).",
)


VMulF64Op = _table_op(
    VOP2Base, "v_mul_f64",
    "``v_mul_f64 vdst, src0, src1`` on register pairs (src0 may be an SGPR pair).",
)


@irdl_op_definition
class VMulLoU32Op(VOPBase):
    """``v_mul_lo_u32 vdst, src0, src1`` (VOP3; low 32 bits of the product)."""

    name = "gcn.v_mul_lo_u32"
    MNEMONIC: ClassVar[str] = "v_mul_lo_u32"
    vdst = result_def(VGPRType)
    src0 = operand_def(VGPRType)
    src1 = operand_def(VGPRType | SGPRType)

    def __init__(self, src0: SSAValue, src1: SSAValue):
        super().__init__(operands=[src0, src1], result_types=[self.table_result_type()])


class VShiftRevBase(VOPBase, ABC):
    """``op vdst, shift, src`` with an immediate shift (``v_lshlrev_b32``, ``v_lshrrev_b32``)."""

    vdst = result_def(VGPRType)
    src = operand_def(VGPRType)
    shift = prop_def(IntegerAttr)

    def __init__(self, shift: int, src: SSAValue):
        super().__init__(operands=[src], result_types=[self.table_result_type()],
                         properties={"shift": _i64(shift)})

    def asm_operands(self) -> list[str]:
        return [reg_asm(self.vdst), str(self.shift.value.data), reg_asm(self.src)]


VLshlrevB32Op = _table_op(VShiftRevBase, "v_lshlrev_b32", "``v_lshlrev_b32 vdst, shift, src`` with an immediate shift.")


@irdl_op_definition
class VReadfirstlaneB32Op(VOPBase):
    """``v_readfirstlane_b32 sdst, vsrc``: a VALU instruction that writes an SGPR."""

    name = "gcn.v_readfirstlane_b32"
    MNEMONIC: ClassVar[str] = "v_readfirstlane_b32"
    sdst = result_def(SGPRType)
    src = operand_def(VGPRType)

    def __init__(self, src: SSAValue):
        super().__init__(operands=[src], result_types=[self.table_result_type()])


@irdl_op_definition
class VMovB32Op(VOPBase):
    """``v_mov_b32 vdst, src`` (register, or an immediate)."""

    name = "gcn.v_mov_b32"
    MNEMONIC: ClassVar[str] = "v_mov_b32"
    vdst = result_def(VGPRType)
    src = opt_operand_def(VGPRType | SGPRType)
    imm = opt_prop_def(IntegerAttr)

    def __init__(self, src: SSAValue | int):
        src, props = _reg_or_imm(src)
        super().__init__(operands=[src], result_types=[self.table_result_type()], properties=props)

    def asm_operands(self) -> list[str]:
        return [reg_asm(self.vdst), _reg_or_imm_asm(self.src, self.imm)]


VAddU32Op = _table_op(
    VOP2Base, "v_add_u32",
    "``v_add_u32 vdst, src0, src1`` (GFX9, no carry out); src0 may be an SGPR.",
)


@irdl_op_definition
class VCmpGtU32Op(VOPBase):
    """``v_cmp_gt_u32_e64 sdst, src0, src1``: per-lane src0 > src1 into an SGPR pair (VOP3)."""

    name = "gcn.v_cmp_gt_u32"
    MNEMONIC: ClassVar[str] = "v_cmp_gt_u32_e64"
    sdst = result_def(SGPRType)
    src0 = operand_def(SGPRType)
    src1 = operand_def(VGPRType)

    def __init__(self, src0: SSAValue, src1: SSAValue):
        super().__init__(operands=[src0, src1], result_types=[self.table_result_type()])


class SOP64Base(GCNInstruction, ABC):
    """64-bit scalar operation whose destination may be EXEC: ``op sdst, src0, src1``.

    ``src1`` is an SGPR pair or, when absent, the inline constant ``imm``.
    """

    sdst = result_def(SGPRType | SpecialRegType)
    src0 = operand_def(SGPRType | SpecialRegType)
    src1 = opt_operand_def(SGPRType | SpecialRegType)
    imm = opt_prop_def(IntegerAttr)

    def __init__(self, src0: SSAValue, src1: SSAValue | int, result_type: Attribute | None = None):
        src1, props = _reg_or_imm(src1)
        super().__init__(operands=[src0, src1], result_types=[result_type or self.table_result_type()],
                         properties=props)

    def asm_operands(self) -> list[str]:
        return [reg_asm(self.sdst), reg_asm(self.src0), _reg_or_imm_asm(self.src1, self.imm)]


SAndB64Op = _table_op(SOP64Base, "s_and_b64", IMPLICIT_DEFS=("scc",))
SXorB64Op = _table_op(SOP64Base, "s_xor_b64", IMPLICIT_DEFS=("scc",))
#: 64-bit shifts of an SGPR pair (src1: the shift amount, an inline constant or an SGPR)
SLshlB64Op = _table_op(SOP64Base, "s_lshl_b64", IMPLICIT_DEFS=("scc",))
SLshrB64Op = _table_op(SOP64Base, "s_lshr_b64", IMPLICIT_DEFS=("scc",))


SCselectB64Op = _table_op(
    SOP64Base, "s_cselect_b64",
    "``s_cselect_b64 sdst, src0, src1``: SCC ? src0 : src1.",
    IMPLICIT_USES=("scc",),
)


SCmpLeU32Op = _table_op(SOPCBase, "s_cmp_le_u32")


def exec_type() -> SpecialRegType:
    return SpecialRegType(StringAttr("exec"))


# ---- vector memory ----------------------------------------------------------


class GlobalLoadBase(VectorAccessBase, ABC):
    """``global_load_dwordxN vdst, vaddr, saddr offset:imm``: address = saddr + vaddr + offset.

    Vector memory loads return in order (``s_waitcnt vmcnt(N)``).
    """

    EARLY_CLOBBER: ClassVar[bool] = True
    vdst = result_def(VGPRType)
    vaddr = operand_def(VGPRType)
    saddr = operand_def(SGPRType)
    #: Lanes EXEC disables keep their old value: ``merge`` is that old value, and the
    #: allocator gives it the result's registers (it is not printed).
    merge = opt_operand_def(VGPRType)

    def __init__(self, vaddr: SSAValue, saddr: SSAValue, offset: int = 0, comment: str | None = None,
                 merge: SSAValue | None = None):
        super().__init__(operands=[vaddr, saddr, [merge] if merge is not None else []],
                         result_types=[vgpr(self.DWORDS)],
                         properties={"offset": _i64(offset)},
                         attributes=_comment(comment))

    def asm_operands(self) -> list[str]:
        return [reg_asm(self.vdst), reg_asm(self.vaddr), reg_asm(self.saddr)]

    def verify_(self) -> None:
        super().verify_()
        if self.merge is not None:
            vdst, merge = self.vdst.type, self.merge.type
            if merge.n != vdst.n:
                raise VerifyException(f"{self.name}: merge is {merge}, the result {vdst}: the lanes EXEC disables "
                                      "keep the merge value, so both must be the same width")
            at, first = _allocated_first(merge), _allocated_first(vdst)
            if at is not None and first is not None and at != first:
                raise VerifyException(f"{self.name}: merge is {merge}, the result {vdst}: both must be one "
                                      "register range")


GlobalLoadDwordOp = _table_op(GlobalLoadBase, "global_load_dword")


GlobalLoadDwordx2Op = _table_op(GlobalLoadBase, "global_load_dwordx2")


GlobalLoadDwordx4Op = _table_op(GlobalLoadBase, "global_load_dwordx4")


class GlobalStoreBase(VectorAccessBase, ABC):
    """``global_store_dwordxN vaddr, vdata, saddr offset:imm`` (operands in the order of
    ``global_store_dword``: the hazard pass reads ``vdata`` as operand 1)."""

    STORE: ClassVar[bool] = True
    vaddr = operand_def(VGPRType)
    vdata = operand_def(VGPRType)
    saddr = operand_def(SGPRType)

    def __init__(self, vaddr: SSAValue, vdata: SSAValue, saddr: SSAValue, offset: int = 0,
                 comment: str | None = None):
        super().__init__(operands=[vaddr, vdata, saddr], properties={"offset": _i64(offset)},
                         attributes=_comment(comment))


GlobalStoreDwordOp = _table_op(GlobalStoreBase, "global_store_dword", "``global_store_dword vaddr, vdata, saddr "
                               "offset:imm``.")


GlobalStoreDwordx2Op = _table_op(GlobalStoreBase, "global_store_dwordx2")


GlobalStoreDwordx4Op = _table_op(GlobalStoreBase, "global_store_dwordx4")


# ---- pseudo operations (no instruction; resolved by register allocation) -----


class PseudoOp(GCNInstruction, ABC):
    """An operation that prints no instruction (``assembly_line`` is empty)."""

    UNIT: ClassVar[str] = "pseudo"

    def assembly_line(self) -> str | None:  # type: ignore[override]
        return None


@irdl_op_definition
class SubregOp(PseudoOp):
    """``%r = gcn.subreg %tuple[offset]``: registers ``offset..offset+w-1`` of a range.

    The allocator places the result inside its source; the source stays live while
    any sub-range is used.
    """

    name = "gcn.subreg"
    MNEMONIC: ClassVar[str] = ""
    source = operand_def(SGPRType | VGPRType)
    result = result_def(SGPRType | VGPRType)
    offset = prop_def(IntegerAttr)

    def __init__(self, source: SSAValue, offset: int, width: int = 1):
        t = type(source.type).unallocated(width)
        super().__init__(operands=[source], result_types=[t], properties={"offset": _i64(offset)})

    def verify_(self) -> None:
        source, result = self.source.type, self.result.type  # (each accessor call costs: thousands per kernel)
        if type(source) is not type(result):
            raise VerifyException("gcn.subreg: source and result must be the same register kind")
        off = self.offset.value.data
        if off < 0 or off + result.n > source.n:
            raise VerifyException(f"gcn.subreg: [{off}, +{result.n}) is outside a {source.n}-register range")
        first, sub = source.index, result.index  # (thousands per kernel: no helper call)
        if first.__class__ is IntAttr and sub.__class__ is IntAttr and sub.data != first.data + off:
            raise VerifyException(f"gcn.subreg: registers {off}.. of {source} are {source.PREFIX}{first.data + off}.., "
                                  f"but the result is {result}")


@irdl_op_definition
class RegSequenceOp(PseudoOp):
    """``%r = gcn.reg_sequence %a, %b``: a range whose consecutive parts are the inputs.

    The allocator gives each input the registers of its part (like LLVM's REG_SEQUENCE).
    """

    name = "gcn.reg_sequence"
    MNEMONIC: ClassVar[str] = ""
    parts = var_operand_def(SGPRType | VGPRType)
    result = result_def(SGPRType | VGPRType)

    def __init__(self, parts: Sequence[SSAValue]):
        width = sum(p.type.n for p in parts)
        super().__init__(operands=[parts], result_types=[type(parts[0].type).unallocated(width)])

    def verify_(self) -> None:
        result = self.result.type
        first = _allocated_first(result)
        off = 0
        for i, p in enumerate(self.parts):
            t = p.type
            if type(t) is not type(result):
                raise VerifyException(f"gcn.reg_sequence: part {i} is {t}, the result {result}: "
                                      "parts and result must be the same register kind")
            at = _allocated_first(t)
            if first is not None and at is not None and at != first + off:
                raise VerifyException(f"gcn.reg_sequence: part {i} is {t}, but registers {off}.. of the result "
                                      f"{result} are {result.PREFIX}{first + off}..")
            off += t.n
        if off != result.n:
            raise VerifyException(f"gcn.reg_sequence: the parts are {off} registers, the result {result} is {result.n}")


# ---- program control ----------------------------------------------------------


@irdl_op_definition
class SWaitcntOp(GCNInstruction):
    """``s_waitcnt vmcnt(N) lgkmcnt(M)``; inserted only by ``gcn-insert-waitcnt``."""

    name = "gcn.s_waitcnt"
    MNEMONIC: ClassVar[str] = "s_waitcnt"
    vmcnt = opt_prop_def(IntegerAttr)
    lgkmcnt = opt_prop_def(IntegerAttr)

    def __init__(self, vmcnt: int | None = None, lgkmcnt: int | None = None):
        props = {}
        if vmcnt is not None:
            props["vmcnt"] = _i64(vmcnt)
        if lgkmcnt is not None:
            props["lgkmcnt"] = _i64(lgkmcnt)
        super().__init__(properties=props)

    def asm_operands(self) -> list[str]:
        parts = []
        if self.vmcnt is not None:
            parts.append(f"vmcnt({self.vmcnt.value.data})")
        if self.lgkmcnt is not None:
            parts.append(f"lgkmcnt({self.lgkmcnt.value.data})")
        return [" ".join(parts)]


@irdl_op_definition
class SNopOp(GCNInstruction):
    """``s_nop N``: N+1 wait states; inserted only by ``gcn-insert-hazard-nops``."""

    name = "gcn.s_nop"
    MNEMONIC: ClassVar[str] = "s_nop"
    count = prop_def(IntegerAttr)

    def __init__(self, count: int, comment: str | None = None):
        super().__init__(properties={"count": _i64(count)}, attributes=_comment(comment))

    def asm_operands(self) -> list[str]:
        return [str(self.count.value.data)]


@irdl_op_definition
class SEndpgmOp(GCNInstruction):
    """``s_endpgm``: ends the wavefront; the kernel body's terminator."""

    name = "gcn.s_endpgm"
    MNEMONIC: ClassVar[str] = "s_endpgm"
    traits = traits_def(IsTerminator())


@irdl_op_definition
class LoopOp(GCNInstruction):
    """A loop with loop-carried registers; prints its label, then its body.

    ``iter_args`` initialise the body's block arguments; ``gcn.loop_back`` yields
    the next values and branches back while its condition holds; the results are
    the values of the last iteration.  The register allocator gives an init, its
    block argument, the yielded value and the result one register range.
    """

    name = "gcn.loop"
    MNEMONIC: ClassVar[str] = ""
    UNIT: ClassVar[str] = "other"
    iter_args = var_operand_def()
    res = var_result_def()
    label = prop_def(StringAttr)
    body = region_def("single_block")

    def __init__(self, iter_args: Sequence[SSAValue], body: Region, label: str):
        super().__init__(operands=[iter_args], result_types=[[a.type for a in iter_args]],
                         regions=[body], properties={"label": StringAttr(label)})

    def assembly_line(self) -> str:
        return f"{self.label.data}:"

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != len(self.iter_args):
            raise VerifyException("gcn.loop: block arguments and iter_args differ in number")
        term = block.last_op
        if not isinstance(term, LoopBackOp):
            raise VerifyException("gcn.loop body must end with gcn.loop_back")
        if len(term.operands) != len(self.iter_args):
            raise VerifyException("gcn.loop_back yields a different number of values than iter_args")
        if len(self.res) != len(self.iter_args):
            raise VerifyException("gcn.loop: results and iter_args differ in number")
        # one register range per loop-carried value (gcn-allocate-registers ties the four):
        # same kind and width always; the same registers where allocated
        for i, (init, arg, y, res) in enumerate(zip(self.iter_args, block.args, term.operands, self.res)):
            want = kind_and_width(init.type)
            at = _allocated_first(init.type)
            for what, v in (("block argument", arg), ("yielded value", y), ("result", res)):
                if kind_and_width(v.type) != want:
                    raise VerifyException(f"gcn.loop: loop-carried value {i}: the {what} is {v.type}, but the init "
                                          f"is {init.type} (one register range: same kind and width)")
                first = _allocated_first(v.type)
                if at is None:
                    at = first
                elif first is not None and first != at:
                    raise VerifyException(f"gcn.loop: loop-carried value {i}: the {what} is {v.type}, but the loop "
                                          f"carries it in {type(v.type).PREFIX}{at}.. (one register range)")


@irdl_op_definition
class LoopBackOp(GCNInstruction):
    """``s_cbranch_scc1 <label>`` (or ``scc0``, or ``execnz`` for a loop that runs while
    some lane is still active) back to the enclosing ``gcn.loop``."""

    name = "gcn.loop_back"
    MNEMONIC: ClassVar[str] = "s_cbranch"
    IMPLICIT_USES: ClassVar[tuple[str, ...]] = ("scc",)
    yielded = var_operand_def()
    condition = prop_def(StringAttr)
    traits = traits_def(IsTerminator())

    def __init__(self, yielded: Sequence[SSAValue], condition: str = "scc1"):
        super().__init__(operands=[yielded], properties={"condition": StringAttr(condition)})

    def verify_(self) -> None:
        _check_branch_condition(self)

    def assembly_line(self) -> str:
        loop = self.parent_op()
        assert isinstance(loop, LoopOp)
        return f"  s_cbranch_{self.condition.data} {loop.label.data}"


@irdl_op_definition
class SCbranchForwardOp(GCNInstruction):
    """``s_cbranch_scc0 <label>`` / ``s_cbranch_scc1 <label>``: skip forward to a later
    ``gcn.label`` of the same block (e.g. around a loop that runs zero times)."""

    name = "gcn.s_cbranch_forward"
    MNEMONIC: ClassVar[str] = "s_cbranch"
    IMPLICIT_USES: ClassVar[tuple[str, ...]] = ("scc",)
    condition = prop_def(StringAttr)
    target = prop_def(StringAttr)

    def __init__(self, condition: str, target: str):
        super().__init__(properties={"condition": StringAttr(condition), "target": StringAttr(target)})

    def verify_(self) -> None:
        _check_branch_condition(self)

    def assembly_line(self) -> str:
        return f"  s_cbranch_{self.condition.data} {self.target.data}"


def _check_branch_condition(op: LoopBackOp | SCbranchForwardOp) -> None:
    cond = op.condition.data
    if cond not in _BRANCH_CONDITIONS:
        raise VerifyException(f"{op.name}: s_cbranch_{cond} is not a gfx906 conditional branch "
                              f"(conditions: {', '.join(sorted(_BRANCH_CONDITIONS))})")


@irdl_op_definition
class LabelOp(GCNInstruction):
    """A label a forward branch may jump to (prints ``name:``)."""

    name = "gcn.label"
    MNEMONIC: ClassVar[str] = ""
    UNIT: ClassVar[str] = "pseudo"
    label = prop_def(StringAttr)

    def __init__(self, label: str):
        super().__init__(properties={"label": StringAttr(label)})

    def assembly_line(self) -> str:
        return f"{self.label.data}:"


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A GPU kernel: its body's entry block arguments are dispatch-initialised registers.

    Attributes: ``sym_name``; ``kernargs`` (array of dicts: name, offset, size,
    value_kind, type), ``launch`` (dict: how the host computes grid and workgroup
    size), and, after ``gcn-emit-descriptor``, ``descriptor`` (``.amdhsa_*``
    directive values) and ``metadata`` (the code object v5 metadata map as JSON).
    """

    name = "gcn.kernel"
    sym_name = prop_def(StringAttr)
    body = region_def("single_block")
    kernargs = opt_attr_def(ArrayAttr)
    launch = opt_attr_def(DictionaryAttr)
    descriptor = opt_attr_def(DictionaryAttr)
    metadata = opt_attr_def(StringAttr)
    traits = traits_def()

    def __init__(self, sym_name: str, body: Region, attributes: dict[str, Attribute] | None = None):
        super().__init__(regions=[body], properties={"sym_name": StringAttr(sym_name)},
                         attributes=attributes or {})

    def verify_(self) -> None:
        parent = self.parent_op()
        while parent is not None:  # (passes find kernels without walking kernel bodies)
            if isinstance(parent, KernelOp):
                raise VerifyException(f"gcn.kernel @{self.sym_name.data} is nested in gcn.kernel "
                                      f"@{parent.sym_name.data}: kernels hold no kernels")
            parent = parent.parent_op()

    def instructions(self) -> Iterator[GCNInstruction]:
        for op in self.body.walk():
            if isinstance(op, GCNInstruction):
                yield op


def metadata_json(kernel: KernelOp) -> dict:
    assert kernel.metadata is not None
    return json.loads(kernel.metadata.data)


# ---- LDS and friends (strategy lds) -------------------------------------------
#
# Instructions the legacy LDS-tiled kernel (passes/isel/lds.py) needs: LDS
# reads and writes (``ds_*``, unit "lds": they count in lgkmcnt and, unlike scalar
# loads, return in order among themselves), ``s_barrier``, wider global stores and
# the integer VALU used for per-lane addresses.  DS offsets are bytes (16 bits) for
# ``ds_read*``/``ds_write*`` and units of the element size (x64 for ``st64``, 8 bits
# each) for ``ds_write2*``; the builder checks them against vlpc.targets.


class DsAccessBase(VectorAccessBase, ABC):
    """An LDS read or write of ``DWORDS`` VGPRs at LDS[vaddr + offset]: ``vaddr`` is one VGPR."""

    def verify_(self) -> None:
        super().verify_()
        if self.vaddr.type.n != 1:
            raise VerifyException(f"{self.name}: the address vaddr must be one VGPR, not {self.vaddr.type}")


class DsReadBase(DsAccessBase, ABC):
    """``ds_read_bN vdst, vaddr offset:imm``: LDS[vaddr + offset] into ``DWORDS`` VGPRs."""

    vdst = result_def(VGPRType)
    vaddr = operand_def(VGPRType)

    def __init__(self, vaddr: SSAValue, offset: int = 0, comment: str | None = None):
        super().__init__(operands=[vaddr], result_types=[vgpr(self.DWORDS)],
                         properties={"offset": _i64(offset)}, attributes=_comment(comment))


DsReadB32Op = _table_op(DsReadBase, "ds_read_b32")


DsReadB64Op = _table_op(DsReadBase, "ds_read_b64")


DsReadB128Op = _table_op(DsReadBase, "ds_read_b128")


#: ``ds_swizzle_b32 vdst, vsrc offset:pattern``: lane l gets ``vsrc`` of another lane of its 32, no
#: LDS memory touched (AMD Vega ISA, DS_SWIZZLE_B32: offset bit 15 clear, the bit-mask mode: lane
#: ((l & and_mask) | or_mask) ^ xor_mask, masks in bits 0-4, 5-9, 10-14); ``vaddr`` is the source.
DsSwizzleB32Op = _table_op(DsReadBase, "ds_swizzle_b32")


DS_READS: dict[int, type[DsReadBase]] = {c.DWORDS: c for c in (DsReadB32Op, DsReadB64Op, DsReadB128Op)}


class DsWriteBase(DsAccessBase, ABC):
    """``ds_write_bN vaddr, vdata offset:imm``: ``DWORDS`` VGPRs to LDS[vaddr + offset]."""

    STORE: ClassVar[bool] = True
    vaddr = operand_def(VGPRType)
    vdata = operand_def(VGPRType)

    def __init__(self, vaddr: SSAValue, vdata: SSAValue, offset: int = 0, comment: str | None = None):
        super().__init__(operands=[vaddr, vdata], properties={"offset": _i64(offset)}, attributes=_comment(comment))


DsWriteB32Op = _table_op(DsWriteBase, "ds_write_b32")


DsWriteB64Op = _table_op(DsWriteBase, "ds_write_b64")


DsWriteB128Op = _table_op(DsWriteBase, "ds_write_b128")


DS_WRITES: dict[int, type[DsWriteBase]] = {c.DWORDS: c for c in (DsWriteB32Op, DsWriteB64Op, DsWriteB128Op)}


class DsWrite2Base(GCNInstruction, ABC):
    """``ds_write2[st64]_bN vaddr, vdata0, vdata1 offset0:a offset1:b``: two values of
    ``DWORDS`` VGPRs (1 for b32, a pair for b64) at vaddr + a*UNIT and vaddr + b*UNIT (UNIT
    the data width in bytes, x64 for ``st64``; a, b < 256; AMD Vega ISA, DS ops)."""

    IMPLICIT_USES: ClassVar[tuple[str, ...]] = ("exec",)
    DWORDS: ClassVar[int]
    #: Bytes per offset unit: the data width, x64 for ``st64`` (AMD Vega ISA, DS_WRITE2ST64).
    OFFSET_UNIT: ClassVar[int]
    vaddr = operand_def(VGPRType)
    vdata0 = operand_def(VGPRType)
    vdata1 = operand_def(VGPRType)
    offset0 = prop_def(IntegerAttr)
    offset1 = prop_def(IntegerAttr)

    @classmethod
    def _table_facts(cls, row: _isa.Instruction) -> dict[str, object]:
        dwords = row.operands[1][1]
        return {"DWORDS": dwords, "OFFSET_UNIT": 4 * dwords * (64 if "st64" in row.mnemonic else 1)}

    def __init__(self, vaddr: SSAValue, vdata0: SSAValue, vdata1: SSAValue, offset0: int, offset1: int,
                 comment: str | None = None):
        super().__init__(operands=[vaddr, vdata0, vdata1],
                         properties={"offset0": _i64(offset0), "offset1": _i64(offset1)},
                         attributes=_comment(comment))

    def asm_suffix(self) -> str:
        return f" offset0:{self.offset0.value.data} offset1:{self.offset1.value.data}"

    def verify_(self) -> None:
        if self.vaddr.type.n != 1 or self.vdata0.type.n != self.DWORDS or self.vdata1.type.n != self.DWORDS:
            data = "single VGPRs" if self.DWORDS == 1 else "VGPR pairs"
            raise VerifyException(f"{self.name}: one address VGPR and two data values, {data}")


DsWrite2B32Op = _table_op(DsWrite2Base, "ds_write2_b32")


DsWrite2st64B32Op = _table_op(DsWrite2Base, "ds_write2st64_b32")


DsWrite2st64B64Op = _table_op(
    DsWrite2Base, "ds_write2st64_b64",
    "``ds_write2st64_b64 vaddr, vdata0, vdata1 offset0:a offset1:b``: two register pairs (doubles) at "
    "vaddr + a*512 and vaddr + b*512 (a, b < 256; AMD Vega ISA, DS ops).",
)


@irdl_op_definition
class SBarrierOp(GCNInstruction):
    """``s_barrier``: waits until every wave of the workgroup has arrived.

    It orders execution, not memory: ``gcn-insert-waitcnt`` retires outstanding LDS
    operations (``lgkmcnt(0)``) before it so other waves see the writes.
    """

    name = "gcn.s_barrier"
    MNEMONIC: ClassVar[str] = "s_barrier"

    def __init__(self, comment: str | None = None):
        super().__init__(attributes=_comment(comment))


class GlobalAtomicCmpswapBase(GCNInstruction, ABC):
    """``global_atomic_cmpswap[_x2] vdst, vaddr, vdata, saddr offset:imm glc``: per lane,
    ``old = MEM[addr]; MEM[addr] = old == vdata[1] ? vdata[0] : old; vdst = old``.

    ``vdata`` is the pair (new value, expected value), each ``DWORDS`` VGPRs; with
    ``glc`` the old value returns and counts in ``vmcnt`` like a load (AMD Vega ISA,
    FLAT atomics).  The comparison is bitwise.
    """

    IMPLICIT_USES: ClassVar[tuple[str, ...]] = ("exec",)
    EARLY_CLOBBER: ClassVar[bool] = True
    DWORDS: ClassVar[int]
    vdst = result_def(VGPRType)
    vaddr = operand_def(VGPRType)
    vdata = operand_def(VGPRType)
    saddr = operand_def(SGPRType)

    @classmethod
    def _table_facts(cls, row: _isa.Instruction) -> dict[str, object]:
        return {"DWORDS": _isa.store_data(row)[1] // 2}  # data = (new value, expected value)

    def __init__(self, vaddr: SSAValue, vdata: SSAValue, saddr: SSAValue, comment: str | None = None):
        super().__init__(operands=[vaddr, vdata, saddr], result_types=[vgpr(self.DWORDS)],
                         attributes=_comment(comment))

    def asm_suffix(self) -> str:
        return " glc"

    def verify_(self) -> None:
        if self.vdata.type.n != 2 * self.DWORDS:
            raise VerifyException(f"{self.name}: data must be {2 * self.DWORDS} VGPRs (new value, expected value)")


GlobalAtomicCmpswapOp = _table_op(GlobalAtomicCmpswapBase, "global_atomic_cmpswap")


GlobalAtomicCmpswapX2Op = _table_op(GlobalAtomicCmpswapBase, "global_atomic_cmpswap_x2")


class VCmpNeBase(VOPBase, ABC):
    """``v_cmp_ne_uN_e64 sdst, src0, src1``: per-lane bitwise inequality of two VGPR values
    into an SGPR pair (VOP3)."""

    DWORDS: ClassVar[int]
    WIDTH_FACTS: ClassVar[dict[str, int]] = {"DWORDS": 1}
    sdst = result_def(SGPRType)
    src0 = operand_def(VGPRType)
    src1 = operand_def(VGPRType)

    def __init__(self, src0: SSAValue, src1: SSAValue):
        super().__init__(operands=[src0, src1], result_types=[self.table_result_type()])


VCmpNeU32Op = _table_op(VCmpNeBase, "v_cmp_ne_u32_e64")


class VCndmaskBase(VOPBase, ABC):
    """``v_cndmask_b32_e64 vdst, src0, src1, mask``: per lane src1 where the SGPR pair ``mask``
    has the lane's bit set, else src0 (VOP3; AMD Vega ISA, V_CNDMASK_B32)."""

    vdst = result_def(VGPRType)
    src0 = operand_def(VGPRType)
    src1 = operand_def(VGPRType)
    mask = operand_def(SGPRType)

    def __init__(self, src0: SSAValue, src1: SSAValue, mask: SSAValue):
        super().__init__(operands=[src0, src1, mask], result_types=[self.table_result_type()])


VCndmaskB32Op = _table_op(VCndmaskBase, "v_cndmask_b32_e64")


VCmpNeU64Op = _table_op(VCmpNeBase, "v_cmp_ne_u64_e64")


VLshrrevB32Op = _table_op(VShiftRevBase, "v_lshrrev_b32")


class VBitwiseBase(VOPBase, ABC):
    """``op vdst, src0, vsrc1`` (VOP2): ``src0`` an SGPR, a VGPR or an immediate (``imm``)."""

    vdst = result_def(VGPRType)
    src0 = opt_operand_def(VGPRType | SGPRType)
    src1 = operand_def(VGPRType)
    imm = opt_prop_def(IntegerAttr)

    def __init__(self, src0: SSAValue | int, src1: SSAValue):
        src0, props = _reg_or_imm(src0)
        super().__init__(operands=[src0, src1], result_types=[self.table_result_type()], properties=props)

    def asm_operands(self) -> list[str]:
        return [reg_asm(self.vdst), _reg_or_imm_asm(self.src0, self.imm), reg_asm(self.src1)]

    def verify_(self) -> None:
        _check_reg_xor_imm(self, "src0")


VAndB32Op = _table_op(VBitwiseBase, "v_and_b32")


VOrB32Op = _table_op(VBitwiseBase, "v_or_b32")


@irdl_op_definition
class VLshlAddU32Op(VOPBase):
    """``v_lshl_add_u32 vdst, src0, shift, src2`` = (src0 << shift) + src2 (VOP3, GFX9);
    with shift 0 a plain 32-bit add.  ``src2`` may be an SGPR."""

    name = "gcn.v_lshl_add_u32"
    MNEMONIC: ClassVar[str] = "v_lshl_add_u32"
    vdst = result_def(VGPRType)
    src0 = operand_def(VGPRType)
    src2 = operand_def(VGPRType | SGPRType)
    shift = prop_def(IntegerAttr)

    def __init__(self, src0: SSAValue, shift: int, src2: SSAValue):
        super().__init__(operands=[src0, src2], result_types=[self.table_result_type()],
                         properties={"shift": IntegerAttr(shift, i64)})

    def asm_operands(self) -> list[str]:
        return [reg_asm(self.vdst), reg_asm(self.src0), str(self.shift.value.data), reg_asm(self.src2)]


# ---- added for the f16/int8 dot kernels (passes/isel/dot.py) ----


class VDotBase(VOPBase, ABC):
    """``op vdst, src0, src1, src2`` (VOP3P dot product into a 32-bit accumulator):
    src0 and src2 are VGPRs, src1 a VGPR or an SGPR (one constant-bus read, LLVM getConstantBusLimit)."""

    vdst = result_def(VGPRType)
    src0 = operand_def(VGPRType)
    src1 = operand_def(VGPRType | SGPRType)
    src2 = operand_def(VGPRType)

    def __init__(self, src0: SSAValue, src1: SSAValue, src2: SSAValue, comment: str | None = None):
        super().__init__(operands=[src0, src1, src2], result_types=[self.table_result_type()],
                         attributes=_comment(comment))

    def verify_(self) -> None:
        if any(o.type.n != 1 for o in self.operands):
            raise VerifyException(f"{self.MNEMONIC} operands are single registers")


VDot2F32F16Op = _table_op(
    VDotBase, "v_dot2_f32_f16",
    "``v_dot2_f32_f16 vdst, src0, src1, src2``: src0.h[0]*src1.h[0] + src0.h[1]*src1.h[1] + "
    "src2.f32, f16 products accumulated in f32 (AMD Vega 7nm ISA, VOP3P).",
)


VDot4I32I8Op = _table_op(
    VDotBase, "v_dot4_i32_i8",
    "``v_dot4_i32_i8 vdst, src0, src1, src2``: the four signed byte products of src0 and src1 "
    "summed with src2 (i32, wrapping; AMD Vega 7nm ISA, VOP3P).",
)


GlobalLoadUshortOp = _table_op(
    GlobalLoadBase, "global_load_ushort",
    "``global_load_ushort``: one 16-bit value, zero-extended into a VGPR.",
)


GlobalLoadUbyteOp = _table_op(
    GlobalLoadBase, "global_load_ubyte",
    "``global_load_ubyte``: one byte, zero-extended into a VGPR.",
)


GlobalStoreShortOp = _table_op(
    GlobalStoreBase, "global_store_short",
    "``global_store_short vaddr, vdata, saddr``: the low 16 bits of a VGPR.",
)


VCvtF32F16Op = _table_op(
    VOP1Base, "v_cvt_f32_f16",
    "``v_cvt_f32_f16``: the f16 in the low half to f32 (exact).",
)


VCvtF16F32Op = _table_op(
    VOP1Base, "v_cvt_f16_f32",
    "``v_cvt_f16_f32``: f32 to f16 in the low half (round to nearest even), high half 0.",
)


VCvtF32I32Op = _table_op(
    VOP1Base, "v_cvt_f32_i32",
    "``v_cvt_f32_i32``: signed 32-bit integer to f32 (round to nearest even).",
)


# ---- added for the f16 dot kernel with B stored K x N (passes/isel/dot.py) ----


GlobalLoadShortD16HiOp = _table_op(
    GlobalLoadBase, "global_load_short_d16_hi",
    "``global_load_short_d16_hi``: 16 bits into the high half of a VGPR, the low half kept "
    "(``merge`` is the register's old value; the allocator gives it the result's register).",
    DWORDS=1,
)


GlobalLoadUbyteD16HiOp = _table_op(
    GlobalLoadBase, "global_load_ubyte_d16_hi",
    "``global_load_ubyte_d16_hi``: a byte, zero-extended to 16 bits, into the high half of a "
    "VGPR, the low half kept (``merge`` as for ``global_load_short_d16_hi``).",
    DWORDS=1,
)


# ---- LDS atomics (the decode GEMV's int8 reduction, passes/isel/dot.py) ----

DsAddU32Op = _table_op(
    DsWriteBase, "ds_add_u32",
    "``ds_add_u32 vaddr, vdata offset:imm``: LDS[vaddr + offset] += vdata (32-bit wrapping "
    "add, no value returned; counts in lgkmcnt as a ds_write).",
)


# ---- the quantized-weight GEMV's dequantization in registers (passes/isel/quant.py) ----

VPermB32Op = _table_op(
    VFmaBase, "v_perm_b32",
    "``v_perm_b32 vdst, src0, src1, sel``: byte i of vdst is byte sel.byte[i] of the 8-byte value "
    "{src0, src1} (0-3 from src1, 4-7 from src0; 12 gives 0x00; BYTE_PERMUTE, AMD Vega ISA); at most one "
    "SGPR source (the constant bus).",
)


VXorB32Op = _table_op(VBitwiseBase, "v_xor_b32")


VPkAddF16Op = _table_op(
    VOP2Base, "v_pk_add_f16",
    "``v_pk_add_f16 vdst, src0, src1``: both f16 halves added (VOP3P, round to nearest even); src0 may "
    "be an SGPR.",
)


# ---- the lane GEMV's activations quantized to int8 blocks (passes/isel/quant_lane.py) ----

VPkMaxI16Op = _table_op(
    VOP2Base, "v_pk_max_i16",
    "``v_pk_max_i16 vdst, src0, src1``: the larger of each signed 16-bit half (VOP3P); src0 may be an SGPR.",
)


VPkMinI16Op = _table_op(
    VOP2Base, "v_pk_min_i16",
    "``v_pk_min_i16 vdst, src0, src1``: the smaller of each signed 16-bit half (VOP3P); src0 may be an SGPR.",
)


VPkMulF16Op = _table_op(
    VOP2Base, "v_pk_mul_f16",
    "``v_pk_mul_f16 vdst, src0, src1``: both f16 halves multiplied (VOP3P, round to nearest even); src0 "
    "may be an SGPR.",
)


VPkFmaF16Op = _table_op(
    VFmaBase, "v_pk_fma_f16",
    "``v_pk_fma_f16 vdst, src0, src1, src2``: src0 * src1 + src2 on both f16 halves, one rounding "
    "(VOP3P); at most one SGPR source (the constant bus).",
)


def _operations() -> list[type[IRDLOperation]]:
    """Every ``gcn.*`` operation class defined in this module (new ops register themselves)."""
    return [v for v in globals().values()
            if isinstance(v, type) and issubclass(v, IRDLOperation) and getattr(v, "name", "").startswith("gcn.")]


GCN = Dialect("gcn", _operations(), [SGPRType, VGPRType, SpecialRegType])
