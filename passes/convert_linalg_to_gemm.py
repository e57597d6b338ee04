"""``convert-linalg-to-gemm``: raise linalg matrix products on memrefs into ``gemm.matmul``.

Raised (f32 or f64 memrefs, row-major with unit inner stride and zero offset):

================================================  ==============================  ======
linalg form                                       operands as stored              layout
================================================  ==============================  ======
``linalg.matmul``                                 A: M x K, B: K x N              ``NN``
``linalg.matmul_transpose_b`` / maps ``(m,k) (n,k) (m,n)``  A: M x K, B: N x K    ``NT``
``linalg.matmul_transpose_a`` / maps ``(k,m) (k,n) (m,n)``  A: K x M, B: K x N    ``TN``
``linalg.matmul`` with maps ``(k,m) (n,k) (m,n)``  A: K x M, B: N x K             ``TT``
``linalg.generic`` with any of those maps, iterators (parallel, parallel, reduction) and a
multiply-accumulate body (``arith.mulf`` of the two inputs, ``arith.addf`` with the output)
================================================  ==============================  ======

Element types: f32 and f64; f16 (C f16, or f32 from a named product, whose body vlpc's linalg
dialect widens as upstream's does, or from a generic whose body widens the inputs with
``arith.extf`` before ``arith.mulf``/``arith.addf`` in f32); i8 x i8 -> i32 from a named product
(signed, upstream's default ``cast_signed``) or a generic whose body is ``arith.extsi`` of both
inputs, ``arith.muli``, ``arith.addi`` (the dot kernels, ``passes/isel/dot.py``; alpha and
beta are then f32 or i32 constants).

linalg accumulates into its output (``C += op(A) * op(B)``), so the result is
``gemm.matmul`` with ``alpha = 1.0`` and ``beta = 1.0``, both ``arith.constant``s
placed before it (``convert-gemm-to-gcn`` records their values in the kernel's
launch information; the kernel still takes alpha and beta as arguments).  A
``linalg.fill`` of C with 0.0 directly before the product is folded into it
(``beta = 0.0``), the usual "zero then accumulate" idiom of frontends.

Refused, each with a located diagnostic saying why: ``linalg.batch_matmul`` and
batched generics ("batched linalg products are not raised yet": gemm.matmul on 3-D
memrefs is the strided batched GEMM), tensor operands (bufferize
first), other mixed or integer element types, indexing maps that are not a matrix
product, bodies that are not a multiply-accumulate, memrefs that are not row-major
with unit inner stride or that have a non-zero offset.  With ``strict=true`` (the
default) any other linalg operation is refused too (vlpc compiles only matrix
products); ``strict=false`` leaves them for a later pass of the embedding pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.linalg import abstract_ops
from xdsl.dialects.linalg import ops as xlinalg
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StridedLayoutAttr,
    TensorType,
    f32,
    i32,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from vlpc.dialects.gemm import MatmulOp as GemmMatmulOp
from vlpc.dialects.gemm import leading_dimension, type_name
from vlpc.passes.common import op_error

#: Named linalg operations whose body is a multiply-accumulate by definition.
NAMED_MATMULS = ("linalg.matmul", "linalg.matmul_transpose_a", "linalg.matmul_transpose_b")
BATCHED = ("linalg.batch_matmul", "linalg.batch_matmul_transpose_a", "linalg.batch_matmul_transpose_b",
           "linalg.batch_reduce_matmul")
#: Operations that live inside a linalg body, never raised on their own.
BODY_OPS = ("linalg.yield", "linalg.index")

BATCH_MESSAGE = ("batched linalg products are not raised yet: {what}; write the product as a gemm.matmul on "
                 "3-D memrefs (a strided batched GEMM)")


class NotRaisable(Exception):
    """Why an operation cannot be raised (becomes a located diagnostic)."""


@dataclass(frozen=True)
class MatmulForm:
    """A linalg operation recognised as ``C[m, n] += op(A) * op(B)``."""

    a: SSAValue
    b: SSAValue
    c: SSAValue
    layout: str  # BLAS transa/transb letters, e.g. "NT"


def _dims(m: AffineMap) -> tuple[int, ...] | None:
    """The dimension positions of a projection map, or None if it has other expressions."""
    if m.num_symbols:
        return None
    if not all(isinstance(e, AffineDimExpr) for e in m.results):
        return None
    return tuple(e.position for e in m.results)  # type: ignore[union-attr]


def _fmt(m: AffineMap) -> str:
    return str(m)


def _check_body(op: xlinalg.GenericOp, widen: str | None = None) -> None:
    """The body must be ``yield(addf(out, mulf(in0, in1)))`` (operands of mulf/addf in either order);
    with ``widen`` (``"f"``: f16 -> f32, ``"i"``: i8 -> i32) the inputs are first widened
    (``arith.extf`` / ``arith.extsi``) and the integer form uses ``arith.muli``/``arith.addi``."""
    block = op.body.block
    x, y, z = block.args
    ops = list(block.ops)
    names = ", ".join(o.name for o in ops)
    integer = widen == "i"
    mul_name, add_name = ("arith.muli", "arith.addi") if integer else ("arith.mulf", "arith.addf")
    ext_t = arith.ExtSIOp if integer else arith.ExtFOp
    why = (f"the body of linalg.generic is not a multiply-accumulate (expected "
           + (f"{ext_t.name} of both inputs, " if widen else "")
           + f"{mul_name} of the two inputs, {add_name} with the output, linalg.yield; found: {names})")
    if widen:
        if len(ops) != 5 or not all(isinstance(o, ext_t) for o in ops[:2]):
            raise NotRaisable(why)
        ext = ops[:2]
        if {e.input for e in ext} != {x, y} or ext[0].input is ext[1].input:
            raise NotRaisable(why + f"; {ext_t.name} must widen the two input elements")
        x, y = ext[0].result, ext[1].result
        ops = ops[2:]
    if len(ops) != 3:
        raise NotRaisable(why)
    mul, add, yld = ops
    mul_t, add_t = (arith.MuliOp, arith.AddiOp) if integer else (arith.MulfOp, arith.AddfOp)
    if not (isinstance(mul, mul_t) and isinstance(add, add_t) and isinstance(yld, xlinalg.YieldOp)):
        raise NotRaisable(why)
    if {mul.lhs, mul.rhs} != {x, y} or mul.lhs is mul.rhs:
        raise NotRaisable(why + f"; {mul_name} must multiply the two input elements")
    if {add.lhs, add.rhs} != {z, mul.result}:
        raise NotRaisable(why + f"; {add_name} must add the product to the output element")
    if list(yld.operands) != [add.result]:
        raise NotRaisable(why + "; linalg.yield must yield the sum")


def _check_memref(name: str, t: MemRefType) -> None:
    layout = t.layout
    if not isinstance(layout, NoneAttr | StridedLayoutAttr):
        raise NotRaisable(f"operand {name} has the layout {layout}: only row-major memrefs (identity or "
                          "strided<[ld, 1]>) can be raised")
    if isinstance(layout, StridedLayoutAttr):
        off = layout.offset
        if isinstance(off, NoneAttr) or off.data != 0:
            raise NotRaisable(f"operand {name} has a {'dynamic' if isinstance(off, NoneAttr) else 'non-zero'} "
                              "offset: gemm.matmul addresses its memrefs from their base (pass the subview's "
                              "base pointer as its own memref instead)")
    try:
        leading_dimension(t)
    except VerifyException as e:
        raise NotRaisable(f"operand {name}: {e}") from None


def classify(op: Operation) -> MatmulForm:
    """Recognise ``op`` as a matrix product or raise :class:`NotRaisable` with the reason."""
    if op.name in BATCHED:
        raise NotRaisable(BATCH_MESSAGE.format(what=f"{op.name} computes one product per batch element"))
    if not isinstance(op, abstract_ops.LinalgStructuredOperation):
        raise NotRaisable(f"{op.name} is not a matrix product: vlpc compiles only matrix products "
                          "(linalg.matmul, its transposed forms, or a linalg.generic that is one)")
    is_generic = isinstance(op, xlinalg.GenericOp)
    if not is_generic and op.name not in NAMED_MATMULS:
        raise NotRaisable(f"{op.name} is not a matrix product: vlpc compiles only matrix products "
                          "(linalg.matmul, its transposed forms, or a linalg.generic that is one)")
    if len(op.inputs) != 2 or len(op.outputs) != 1:
        raise NotRaisable(f"{op.name} has {len(op.inputs)} inputs and {len(op.outputs)} outputs: a matrix "
                          "product has 2 inputs (A, B) and 1 output (C)")
    operands = (op.inputs[0], op.inputs[1], op.outputs[0])
    types = [v.type for v in operands]
    if any(isinstance(t, TensorType) for t in types) or op.results:
        raise NotRaisable(f"{op.name} operates on tensors: vlpc needs memrefs (bufferize first, e.g. "
                          "mlir-opt --one-shot-bufferize=bufferize-function-boundaries)")
    if not all(isinstance(t, MemRefType) for t in types):
        raise NotRaisable(f"{op.name}: operands must be memrefs, got {', '.join(map(str, types))}")
    elts = [t.element_type for t in types]  # type: ignore[union-attr]
    names = [type_name(t) for t in elts]
    widen = None  # f16 -> f32 ("f") or i8 -> i32 ("i"): the dot kernels' mixed products
    if len(set(elts)) != 1:
        if names in (["f16", "f16", "f32"], ["i8", "i8", "i32"]):
            widen = names[2][0]
            cast = op.attributes.get("cast") or op.properties.get("cast")
            if not is_generic and cast is not None and "unsigned" in str(cast):
                raise NotRaisable(f"{op.name} with {cast}: the dot kernels multiply signed int8 (cast_signed)")
        else:
            raise NotRaisable(f"mixed element types ({', '.join(map(str, elts))}): gemm.matmul needs A, B and C "
                              "of one type, or f16 x f16 -> f32 / i8 x i8 -> i32 (a named product, or a "
                              "linalg.generic that widens its inputs)")
    elif not isinstance(elts[0], Float32Type | Float64Type | Float16Type):
        raise NotRaisable(f"element type {elts[0]} is not supported: gemm.matmul computes in f32, f64 or f16 "
                          "(and i8 x i8 -> i32)")

    maps = [m.data for m in op.get_indexing_maps().data]  # type: ignore[union-attr]
    iters = [it.data for it in op.get_iterator_types().data]  # type: ignore[union-attr]
    dims = [_dims(m) for m in maps]
    if any(d is None for d in dims):
        raise NotRaisable(f"indexing maps {', '.join(map(_fmt, maps))} are not projections onto loop "
                          "dimensions: not a matrix product")
    ranks = [len(t.get_shape()) for t in types]  # type: ignore[union-attr]
    n_loops = maps[0].num_dims
    if n_loops == 4 and ranks == [3, 3, 3]:
        batch = set(dims[0]) & set(dims[1]) & set(dims[2])  # type: ignore[arg-type]
        if len(batch) == 1 and iters[next(iter(batch))] == xlinalg.IteratorType.PARALLEL:
            raise NotRaisable(BATCH_MESSAGE.format(
                what=f"loop d{next(iter(batch))} indexes A, B and C (a batch dimension)"))
    if n_loops != 3 or ranks != [2, 2, 2]:
        raise NotRaisable(f"{op.name} has {n_loops} loops and operands of rank {ranks}: a matrix product has "
                          "3 loops (M, N, K) and 2-D operands")
    da, db, dc = dims  # type: ignore[misc]
    assert da is not None and db is not None and dc is not None
    if len(set(dc)) != 2:
        raise NotRaisable(f"the output map {_fmt(maps[2])} must index C by two distinct loops (M, N)")
    m, n = dc
    (k,) = {0, 1, 2} - {m, n}
    par, red = xlinalg.IteratorType.PARALLEL, xlinalg.IteratorType.REDUCTION
    if iters[m] != par or iters[n] != par or iters[k] != red:
        raise NotRaisable(f"iterator types {[str(i) for i in iters]}: a matrix product has parallel M and N "
                          f"loops (d{m}, d{n}, from the output map) and a reduction K loop (d{k})")
    if da == (m, k):
        ta = "N"
    elif da == (k, m):
        ta = "T"
    else:
        raise NotRaisable(f"the map of A {_fmt(maps[0])} must index A by (M, K) = (d{m}, d{k}) or, "
                          f"transposed, (d{k}, d{m})")
    if db == (k, n):
        tb = "N"
    elif db == (n, k):
        tb = "T"
    else:
        raise NotRaisable(f"the map of B {_fmt(maps[1])} must index B by (K, N) = (d{k}, d{n}) or, "
                          f"transposed, (d{n}, d{k})")
    if is_generic:
        _check_body(op, widen)  # type: ignore[arg-type]
    for name, t in zip("ABC", types):
        _check_memref(name, t)  # type: ignore[arg-type]
    return MatmulForm(*operands, ta + tb)


def _zero_fill_before(op: Operation, c: SSAValue) -> xlinalg.FillOp | None:
    """A ``linalg.fill`` of ``c`` with the constant 0.0 directly before ``op`` (constants skipped)."""
    prev = op.prev_op
    while isinstance(prev, arith.ConstantOp):
        prev = prev.prev_op
    if not isinstance(prev, xlinalg.FillOp) or len(prev.outputs) != 1 or prev.outputs[0] != c or prev.results:
        return None
    value = prev.inputs[0] if len(prev.inputs) == 1 else None
    owner = value.owner if value is not None else None
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr | IntegerAttr) \
            and owner.value.value.data == 0:
        return prev
    return None


def raise_matmul(op: Operation, form: MatmulForm, fold_fill: bool = True) -> GemmMatmulOp:
    """Replace ``op`` by ``gemm.matmul`` (alpha = 1, beta = 1, or 0 after a folded zero fill)."""
    elt = form.c.type.element_type  # type: ignore[attr-defined]
    beta_value = 1.0
    fill = _zero_fill_before(op, form.c) if fold_fill else None
    if fill is not None:
        beta_value = 0.0
        const = fill.inputs[0].owner
        fill.detach()
        fill.erase()
        if isinstance(const, arith.ConstantOp) and not const.result.uses:
            const.detach()
            const.erase()
    scalar = {"f16": f32, "i32": i32}.get(type_name(elt) or "", elt)  # the dot kernels' alpha/beta types
    if scalar == i32:
        alpha, beta = arith.ConstantOp(IntegerAttr(1, i32)), arith.ConstantOp(IntegerAttr(int(beta_value), i32))
    else:
        alpha = arith.ConstantOp(FloatAttr(1.0, scalar))
        beta = arith.ConstantOp(FloatAttr(beta_value, scalar))
    mm = GemmMatmulOp(form.a, form.b, form.c, alpha.result, beta.result, form.layout)
    block = op.parent_block()
    assert isinstance(block, Block)
    for new in (alpha, beta, mm):
        new.location = op.location
        block.insert_op_before(new, op)
    op.detach()
    op.erase()
    return mm


@dataclass(frozen=True)
class ConvertLinalgToGemmPass(ModulePass):
    """Raise linalg matrix products (matmul, transposed and generic forms) into gemm.matmul.

    Options: ``strict`` (default true: refuse every linalg operation that is not a
    raisable matrix product; false leaves those alone), ``fold-fill`` (default true:
    fold a zero ``linalg.fill`` of C into beta = 0).
    """

    name = "convert-linalg-to-gemm"

    strict: bool = True
    fold_fill: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        candidates = [o for o in op.walk() if o.name.startswith("linalg.") and o.name not in BODY_OPS
                      and not isinstance(o.parent_op(), abstract_ops.LinalgStructuredOperation)]
        for lop in candidates:
            if lop.parent is None:  # erased: a zero fill folded into the product after it
                continue
            if isinstance(lop, xlinalg.FillOp):
                if self.fold_fill and self._feeds_product(lop):
                    continue  # folded when the product that follows it is raised
                if self.strict:
                    raise op_error(lop, "cannot raise linalg.fill to gemm: only a fill of C with 0.0 directly "
                                        "before the matrix product folds into it (as beta = 0)")
                continue
            try:
                form = classify(lop)
            except NotRaisable as e:
                if self.strict or _product_like(lop):
                    raise op_error(lop, f"cannot raise {lop.name} to gemm.matmul: {e}") from None
                continue
            raise_matmul(lop, form, self.fold_fill)

    @staticmethod
    def _feeds_product(fill: Operation) -> bool:
        nxt = fill.next_op
        while isinstance(nxt, arith.ConstantOp):
            nxt = nxt.next_op
        if not isinstance(nxt, abstract_ops.LinalgStructuredOperation) or len(nxt.outputs) != 1:
            return False
        if nxt.name not in NAMED_MATMULS and not isinstance(nxt, xlinalg.GenericOp):
            return False
        return _zero_fill_before(nxt, nxt.outputs[0]) is fill


def _product_like(op: Operation) -> bool:
    """Meant as a matrix product (so a diagnostic even with ``strict=false``): a named matmul, a
    batched one, or a generic with a reduction loop and an ``arith.mulf`` in its body."""
    if op.name in NAMED_MATMULS or op.name in BATCHED:
        return True
    if not isinstance(op, xlinalg.GenericOp):
        return False
    reduces = any(it.data == xlinalg.IteratorType.REDUCTION for it in op.iterator_types.data)
    return reduces and any(isinstance(o, arith.MulfOp) for o in op.body.block.ops)


__all__ = ["ConvertLinalgToGemmPass", "MatmulForm", "NotRaisable", "classify", "raise_matmul"]
