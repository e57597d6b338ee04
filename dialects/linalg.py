"""The ``linalg`` operations vlpc reads: xDSL's linalg dialect plus what upstream MLIR writes.

vlpc accepts matrix products written in MLIR's ``linalg`` dialect (on memrefs) and
raises them into ``gemm.matmul`` (pass ``convert-linalg-to-gemm``).  xDSL 0.74's
``linalg`` lacks some of the spellings MLIR uses, so vlpc's context loads this
superset of it:

* ``linalg.matmul`` accepts and prints upstream MLIR's custom syntax for explicit
  indexing maps, ``linalg.matmul indexing_maps = [...] ins(...) outs(...)``
  (the way MLIR 20+ spells a transposed operand; xDSL's own class drops
  non-default maps when printing and cannot parse that form).  xDSL's braced form
  ``linalg.matmul {indexing_maps = [...]} ins(...)`` still parses.
* ``linalg.matmul_transpose_a`` (A stored K x M) and ``linalg.matmul_transpose_b``
  (B stored N x K), the named ops of MLIR 19 and earlier.
* ``linalg.batch_matmul`` (``[batch, M, K] x [batch, K, N]``), optionally with
  ``indexing_maps``, so that it can be parsed and refused with a located reason.
* Mixed element types in the named products (``linalg.matmul ins(%a, %b : memref<..xf16>,
  memref<..xf16>) outs(%c : memref<..xf32>)``, i8 x i8 -> i32): the body casts each input to
  the output's element type first, as upstream MLIR's named ops do by default
  (``cast_signed``: ``arith.extf``/``arith.truncf`` between floats, ``arith.extsi``/
  ``arith.trunci`` between integers, ``arith.sitofp``/``arith.fptosi`` across); xDSL's own body
  multiplies the inputs as they are, which does not verify.

Every other operation is xDSL's own class (``xdsl.dialects.linalg``), so this
dialect is a drop-in replacement for xDSL's ``Linalg`` in a :class:`~xdsl.context.Context`.
``xdsl-opt`` reads it too: vlpc's plugin (``vlpc/universe.py``) makes xDSL's universe load
this dialect as ``linalg``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.linalg import Linalg as XdslLinalg
from xdsl.dialects.linalg import abstract_ops, attrs, ops
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr, IntegerType
from xdsl.ir import Dialect, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import irdl_op_definition, opt_prop_def
from xdsl.parser import Parser
from xdsl.printer import Printer

__all__ = ["BatchMatmulOp", "Linalg", "MatmulOp", "MatmulTransposeAOp", "MatmulTransposeBOp", "MATMUL_MAPS"]


def _maps(*fns) -> tuple[AffineMap, ...]:
    return tuple(AffineMap.from_callable(f) for f in fns)


#: The indexing maps of C[m, n] += A[m, k] * B[k, n] over (d0, d1, d2) = (m, n, k).
MATMUL_MAPS = _maps(lambda m, n, k: (m, k), lambda m, n, k: (k, n), lambda m, n, k: (m, n))
MATMUL_TRANSPOSE_A_MAPS = _maps(lambda m, n, k: (k, m), lambda m, n, k: (k, n), lambda m, n, k: (m, n))
MATMUL_TRANSPOSE_B_MAPS = _maps(lambda m, n, k: (m, k), lambda m, n, k: (n, k), lambda m, n, k: (m, n))
BATCH_MATMUL_MAPS = _maps(lambda b, m, n, k: (b, m, k), lambda b, m, n, k: (b, k, n),
                          lambda b, m, n, k: (b, m, n))


def _parse_leading_indexing_maps(parser: Parser) -> ArrayAttr | None:
    """Upstream's ``indexing_maps = [...]`` before ``ins(...)`` (no braces)."""
    if parser.parse_optional_keyword("indexing_maps") is None:
        return None
    parser.parse_punctuation("=")
    maps = parser.parse_attribute()
    if not isinstance(maps, ArrayAttr) or not all(isinstance(m, AffineMapAttr) for m in maps.data):
        parser.raise_error("indexing_maps must be an array of affine maps")
    return maps


def _with_maps(op, maps: ArrayAttr | None):
    if maps is not None:
        op.properties["indexing_maps"] = maps
    return op


def _print_leading_indexing_maps(printer: Printer, maps: ArrayAttr, default: Sequence[AffineMap]) -> None:
    if tuple(m.data for m in maps.data) != tuple(default):
        printer.print_string(" indexing_maps = ")
        printer.print_attribute(maps)


def _cast(value: SSAValue, to) -> SSAValue:
    """``value`` cast to the element type ``to`` as upstream's ``cast_signed`` type function does."""
    src = value.type
    if src == to:
        return value
    src_int, to_int = isinstance(src, IntegerType), isinstance(to, IntegerType)
    if src_int and to_int:
        op = arith.ExtSIOp if src.width.data < to.width.data else arith.TruncIOp
    elif not src_int and not to_int:
        op = arith.ExtFOp if src.bitwidth < to.bitwidth else arith.TruncFOp
    else:
        op = arith.SIToFPOp if src_int else arith.FPToSIOp
    return op(value, to).result


def mac_region(inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]) -> Region:
    """The body of a named matrix product: ``out + cast(in0) * cast(in1)``, each input cast to
    the output's element type (upstream's default ``cast_signed``); without casts it is xDSL's."""
    types = abstract_ops.NamedOperation.body_arg_types((*inputs, *outputs))
    out = types[-1]
    if all(t == out for t in types):
        return ops.MatmulOp.get_hidden_region(inputs, outputs)
    mul, add = (arith.MuliOp, arith.AddiOp) if isinstance(out, IntegerType) else (arith.MulfOp, arith.AddfOp)

    @Builder.implicit_region(types)
    def body(args) -> None:
        product = mul(_cast(args[0], out), _cast(args[1], out))
        ops.YieldOp(add(args[2], product))

    return body


class MatmulOp(ops.MatmulOp):
    """``linalg.matmul``: xDSL's op (a subclass: same definition), with upstream's
    ``indexing_maps = [...]`` syntax for parsing and printing and upstream's body for mixed
    element types (:func:`mac_region`)."""

    @classmethod
    def get_hidden_region(cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]) -> Region:
        return mac_region(inputs, outputs)

    @classmethod
    def parse(cls, parser: Parser):
        maps = _parse_leading_indexing_maps(parser)
        return _with_maps(super().parse(parser), maps)

    def print(self, printer: Printer):
        _print_leading_indexing_maps(printer, self.indexing_maps, MATMUL_MAPS)
        super().print(printer)


class _FixedMapsMatmul(abstract_ops.NamedOperation):
    """A named matmul variant with fixed indexing maps and a multiply-accumulate body."""

    MAPS: ClassVar[tuple[AffineMap, ...]] = MATMUL_MAPS

    def __init__(self, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue] = ()):
        super().__init__(ins=inputs, outs=outputs, result_types=[[]],
                         hidden_region=self.get_hidden_region(inputs, outputs))

    @classmethod
    def get_hidden_region(cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]) -> Region:
        return mac_region(inputs, outputs)

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        return self.MAPS

    def get_iterator_types(self) -> ArrayAttr[attrs.IteratorTypeAttr]:
        n_par = self.MAPS[0].num_dims - 1
        return ArrayAttr([*(attrs.IteratorTypeAttr.parallel() for _ in range(n_par)),
                          attrs.IteratorTypeAttr.reduction()])


@irdl_op_definition
class MatmulTransposeAOp(_FixedMapsMatmul):
    """``linalg.matmul_transpose_a``: ``C[m, n] += A[k, m] * B[k, n]`` (A stored K x M)."""

    name = "linalg.matmul_transpose_a"
    MAPS: ClassVar[tuple[AffineMap, ...]] = MATMUL_TRANSPOSE_A_MAPS


@irdl_op_definition
class MatmulTransposeBOp(_FixedMapsMatmul):
    """``linalg.matmul_transpose_b``: ``C[m, n] += A[m, k] * B[n, k]`` (B stored N x K)."""

    name = "linalg.matmul_transpose_b"
    MAPS: ClassVar[tuple[AffineMap, ...]] = MATMUL_TRANSPOSE_B_MAPS


@irdl_op_definition
class BatchMatmulOp(_FixedMapsMatmul):
    """``linalg.batch_matmul``: ``C[b, m, n] += A[b, m, k] * B[b, k, n]`` (optional ``indexing_maps``)."""

    name = "linalg.batch_matmul"
    MAPS: ClassVar[tuple[AffineMap, ...]] = BATCH_MATMUL_MAPS
    PRINT_ATTRS_IN_FRONT: ClassVar[bool] = True

    indexing_maps = opt_prop_def(ArrayAttr[AffineMapAttr])

    def get_indexing_maps(self) -> ArrayAttr[AffineMapAttr]:
        if self.indexing_maps is not None:
            return self.indexing_maps
        return ArrayAttr([AffineMapAttr(m) for m in self.MAPS])

    @classmethod
    def parse(cls, parser: Parser):
        maps = _parse_leading_indexing_maps(parser)
        return _with_maps(super().parse(parser), maps)

    def print(self, printer: Printer):
        if self.indexing_maps is not None:
            _print_leading_indexing_maps(printer, self.indexing_maps, self.MAPS)
        super().print(printer)


def _operations() -> list:
    extra = {MatmulOp.name: MatmulOp, MatmulTransposeAOp.name: MatmulTransposeAOp,
             MatmulTransposeBOp.name: MatmulTransposeBOp, BatchMatmulOp.name: BatchMatmulOp}
    ops = [extra.pop(op.name, op) for op in XdslLinalg.operations]
    return ops + list(extra.values())


#: xDSL's linalg dialect with the operations above (a drop-in replacement in a Context).
Linalg = Dialect("linalg", _operations(), list(XdslLinalg.attributes))
