"""Cheaper construction of the ``gcn`` dialect's operations (issue 18, compile speed).

A compilation builds thousands of operations and integer properties; xDSL's generic
builder (``IRDLOperation.__init__`` -> ``irdl_op_init``) and ``IntegerAttr``'s constructor
(value normalisation and range verification) were a third of ``convert-gemm-to-gcn``.

* :func:`init_operation` builds an operation the way ``irdl_op_init`` does when its
  definition has no regions, successors or IRDL options (segment sizes) and at most one
  variadic or optional operand and result: the given operands and result types flattened in
  definition order, properties and attributes without ``None`` values, then
  ``Operation.__init__``.  Anything else (other definitions, ``Operation`` arguments
  instead of values, a wrong count) goes to xDSL's builder, which also gives its errors.
* :func:`i64_attr` is ``IntegerAttr(value, i64)``, one instance per value (attributes are
  immutable values and compare by value, so sharing one changes nothing printed or checked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import UNKNOWN_LOC, IntegerAttr, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.irdl.operations import OptionalDef, VariadicDef

#: Per operation class: (operand kinds, result kinds) with 0 single, 1 variadic, 2 optional;
#: None when the class needs xDSL's builder.
_SPECS: dict[type, tuple[tuple[int, ...], tuple[int, ...]] | None] = {}


def _kinds(defs) -> tuple[int, ...]:
    return tuple(2 if isinstance(d, OptionalDef) else 1 if isinstance(d, VariadicDef) else 0 for _, d in defs)


def _spec(cls: type[IRDLOperation]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    try:
        return _SPECS[cls]
    except KeyError:
        pass
    d = cls.get_irdl_definition()
    spec = None
    if not d.regions and not d.successors and not d.options:
        operands, results = _kinds(d.operands), _kinds(d.results)
        if sum(map(bool, operands)) <= 1 and sum(map(bool, results)) <= 1:
            spec = (operands, results)
    _SPECS[cls] = spec
    return spec


#: Classes known to be (or not to be) SSA values / attributes: ``isinstance`` on xDSL's
#: abstract base classes costs a Python call each time.
_IS_A: dict[type, dict[type, bool]] = {SSAValue: {}, Attribute: {}}


def _is_a(x, item: type) -> bool:
    known = _IS_A[item]
    cls = type(x)
    got = known.get(cls)
    if got is None:
        got = known[cls] = isinstance(x, item)
    return got


def _flatten(kinds: tuple[int, ...], args: Sequence, item: type) -> list | None:
    """``args`` flattened as ``irdl_build_arg_list`` does, or None where xDSL's builder must
    decide (or raise)."""
    if len(args) != len(kinds):
        return None
    out = []
    for kind, arg in zip(kinds, args):
        if kind == 0:
            if not _is_a(arg, item):
                return None
            out.append(arg)
        elif arg is None:
            if kind != 2:
                return None
        elif isinstance(arg, list | tuple) and (kind == 1 or len(arg) <= 1):
            for a in arg:
                if not _is_a(a, item):
                    return None
            out.extend(arg)
        else:
            return None
    return out


def init_operation(op: IRDLOperation, operands: Sequence | None, result_types: Sequence | None,
                   properties: Mapping[str, Attribute | None] | None, attributes: Mapping[str, Attribute | None] | None,
                   successors: Sequence | None, regions: Sequence | None) -> None:
    """Initialise ``op`` as ``IRDLOperation.__init__`` would (see the module docstring)."""
    spec = _spec(type(op)) if not successors and not regions else None
    if spec is not None:
        built_operands = _flatten(spec[0], operands or (), SSAValue)
        built_results = _flatten(spec[1], result_types or (), Attribute) if built_operands is not None else None
        if built_results is not None:
            Operation.__init__(
                op, operands=built_operands, result_types=built_results,
                properties={k: v for k, v in properties.items() if v is not None} if properties else {},
                attributes={k: v for k, v in attributes.items() if v is not None} if attributes else {},
                location=UNKNOWN_LOC)  # (what Operation.__init__ would look up, by an import per op)
            return
    IRDLOperation.__init__(op, operands=operands, result_types=result_types, properties=properties,
                           attributes=attributes, successors=successors, regions=regions)


_I64: dict[int, IntegerAttr] = {}


def i64_attr(value: int) -> IntegerAttr:
    """``IntegerAttr(value, i64)`` (shared instances for ints; anything else is built as given,
    so xDSL checks it)."""
    if type(value) is not int:
        return IntegerAttr(value, i64)
    attr = _I64.get(value)
    if attr is None:
        attr = IntegerAttr(value, i64)
        if len(_I64) < 1 << 16:
            _I64[value] = attr
    return attr
