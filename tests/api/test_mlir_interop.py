"""Interop with the upstream MLIR Python bindings (the optional extra: pip install 'vlpc[mlir]').

* A linalg.matmul module built with the upstream bindings, printed by MLIR, compiles
  and runs in vlpc (from its text and from the module object).
* vlpc's gemm-level IR, printed in generic form, parses and verifies in upstream MLIR,
  and comes back unchanged.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import vlpc
from vlpc.dialects.gemm import MatmulOp
from vlpc.interop import from_upstream, print_generic, to_upstream, upstream_available, upstream_ir
from vlpc.compiler import make_context, parse, run_passes

from reference import assert_gemm_close, gemm_reference

OK, WHY = upstream_available()
pytestmark = pytest.mark.skipif(not OK, reason=WHY)

SMALL = dict(macro_tile=(16, 64), micro_tile=(16, 1), k_step=8)
M, N, K = 16, 64, 32


def bindings():
    ir = upstream_ir()
    root = ir.__name__.rsplit(".", 1)[0]
    dialects = importlib.import_module(f"{root}.dialects")
    return ir, importlib.import_module(f"{dialects.__name__}.func"), importlib.import_module(f"{dialects.__name__}.linalg")


def build_matmul(transpose_b: bool = True, batch: int | None = None):
    """func.func @mm(A, B, C) { linalg.matmul (B transposed via indexing maps) } with the upstream builders."""
    ir, func, linalg = bindings()
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        f32 = ir.F32Type.get()
        pre = [batch] if batch else []
        a_t = ir.MemRefType.get([*pre, M, K], f32)
        b_t = ir.MemRefType.get([*pre, N, K] if transpose_b else [*pre, K, N], f32)
        c_t = ir.MemRefType.get([*pre, M, N], f32)
        with ir.InsertionPoint(module.body):
            @func.FuncOp.from_py_func(a_t, b_t, c_t, name="mm")
            def mm(a, b, c):
                if batch:
                    linalg.batch_matmul(a, b, outs=[c])
                elif transpose_b:
                    d = [ir.AffineDimExpr.get(i) for i in range(3)]
                    maps = [ir.AffineMap.get(3, 0, [d[0], d[2]]), ir.AffineMap.get(3, 0, [d[1], d[2]]),
                            ir.AffineMap.get(3, 0, [d[0], d[1]])]
                    linalg.matmul(a, b, outs=[c], indexing_maps=maps)
                else:
                    linalg.matmul(a, b, outs=[c])
        assert module.operation.verify()
        return module, str(module)


def test_upstream_linalg_matmul_compiles_and_runs():
    module, text = build_matmul(transpose_b=True)
    assert "linalg.matmul indexing_maps" in text  # MLIR's own custom syntax for the transposed operand
    compiled = vlpc.compile(text, **SMALL)                 # from the printed text
    kernel = compiled.kernel("mm")
    assert (kernel.layout, kernel.alpha, kernel.beta) == ("NT", 1.0, 1.0)
    assert vlpc.compile(module, **SMALL).asm == compiled.asm  # from the module object (generic form)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((N, K), dtype=np.float32)
    c = rng.standard_normal((M, N), dtype=np.float32)
    r = vlpc.run(compiled, a, b, c, verify=False)
    assert_gemm_close(r.c, *gemm_reference(a, b, c, 1.0, 1.0, layout="NT"))


def test_upstream_default_matmul_raises_to_nn():
    _, text = build_matmul(transpose_b=False)
    ctx = make_context()
    m = parse(text, "up.mlir", ctx)
    run_passes(m, vlpc.pipeline(**SMALL)[:1], ctx)
    (mm,) = [o for o in m.walk() if isinstance(o, MatmulOp)]
    assert mm.layout.data == "NN"


def test_upstream_batch_matmul_is_refused():
    _, text = build_matmul(transpose_b=False, batch=2)
    with pytest.raises(vlpc.DiagnosticError, match="batched linalg products are not raised yet"):
        vlpc.compile(text, **SMALL)


def test_gemm_level_ir_parses_upstream():
    """gemm-tile .. gemm-split-k output, printed generic, parses and verifies in MLIR (gemm is an
    unregistered dialect there) and round-trips back into an identical xDSL module."""
    ctx = make_context()
    text = open(__file__.replace("tests/api/test_mlir_interop.py", "examples/sgemm_nt.mlir")).read()
    module = parse(text, "sgemm_nt.mlir", ctx)
    run_passes(module, vlpc.pipeline(**SMALL)[:5], ctx)
    generic = print_generic(module)
    assert '"gemm.matmul"' in generic and "macro_tile" in generic
    up = to_upstream(module)
    assert up.operation.verify()
    ops = [op.name for op in up.body.operations[0].regions[0].blocks[0].operations]
    assert ops == ["gemm.matmul", "func.return"]
    back = parse(from_upstream(up), "back.mlir", make_context())
    assert back.is_structurally_equivalent(module)
