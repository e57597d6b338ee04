"""The embedding API: vlpc.pipeline (passes with options, for another compiler's pipeline),
vlpc.compile (kernel object: assembly, code object, metadata, launch configuration) and vlpc.run."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from xdsl.passes import PassPipeline

import vlpc
import importlib
from vlpc.dialects.gcn_asm import print_assembly
from vlpc.passes import get_all_passes
from vlpc.compiler import make_context, parse

from reference import assert_gemm_close, check_run, gemm_reference

# `vlpc.pipeline` is the function (vlpc.compiler.pipeline, re-exported by vlpc).
pipeline_module = importlib.import_module("vlpc.compiler")

SMALL = dict(macro_tile=(16, 64), micro_tile=(16, 1), k_step=8)

GEMM_NT = """func.func @sgemm(%a: memref<32x64xf32>, %b: memref<128x64xf32>, %c: memref<32x128xf32>,
                   %alpha: f32, %beta: f32) {
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"}
      : memref<32x64xf32>, memref<128x64xf32>, memref<32x128xf32>, f32, f32
  func.return
}
"""

GEMM_DYN = """func.func @sgemm_dyn(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>, %alpha: f32, %beta: f32) {
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, f32, f32
  func.return
}
"""

LINALG_NT = """func.func @lin(%a: memref<16x32xf32>, %b: memref<64x32xf32>, %c: memref<16x64xf32>) {
  linalg.matmul_transpose_b ins(%a, %b : memref<16x32xf32>, memref<64x32xf32>) outs(%c : memref<16x64xf32>)
  func.return
}
"""


@pytest.fixture(scope="module")
def nt():
    return vlpc.compile(GEMM_NT, **SMALL)


def test_pipeline_lists_passes_with_options():
    passes = vlpc.pipeline("gfx906", macro_tile=(16, 64), micro_tile=(16, 1), k_step=8)
    names = [p.name for p in passes]
    assert names == list(pipeline_module.PASS_ORDER)
    assert names[0] == "convert-linalg-to-gemm" and names[-1] == "gcn-emit-descriptor"
    opts = dict(vlpc.pipeline_options(passes))
    assert opts["gemm-tile"] == {"macro_m": 16, "macro_n": 64, "micro_m": 16, "micro_n": 1, "k_step": 8,
                                 "model": True, "split_k": 0, "cus": 0, "gpu": "", "target": "gfx906",
                                 "wg_group": 0}
    assert dict(vlpc.pipeline_options(vlpc.pipeline("gfx906", wg_group=4)))["gemm-tile"]["wg_group"] == 4
    assert opts["gcn-emit-descriptor"]["target"] == "gfx906"
    assert [p.name for p in vlpc.pipeline(linalg=False)] == names[1:]
    with pytest.raises(vlpc.VlpcError, match="unknown option"):
        vlpc.pipeline(macro=(1, 2))
    with pytest.raises(vlpc.VlpcError):
        vlpc.pipeline("gfx999")


def test_pipeline_spec_round_trips_through_xdsl():
    passes = vlpc.pipeline("gfx906:xnack-", macro_tile=(64, 128))
    spec = vlpc.pipeline_spec(passes, include_default=True)
    assert "gemm-tile{macro-m=64 macro-n=128" in spec  # one spelling: hyphens, as --list-passes and MLIR
    assert not __import__("re").search(r"[{ ][a-z0-9-]*_[a-z0-9_-]*=", spec), spec
    parsed = PassPipeline.parse_spec(get_all_passes(), spec).passes
    assert parsed == tuple(passes)  # frozen dataclasses: equal options


def test_insert_vlpc_passes_into_another_pipeline():
    """Another compiler's xDSL pipeline: its own pass, then vlpc's, stopping at the gemm level
    to inspect, then the rest; the assembly is what vlpc.compile produces."""
    from xdsl.transforms.canonicalize import CanonicalizePass

    passes = vlpc.pipeline("gfx906", **SMALL)
    ctx = make_context()
    module = parse(LINALG_NT, "lin.mlir", ctx)
    PassPipeline((CanonicalizePass(), *passes[:5])).apply(ctx, module)
    assert "gemm.matmul" in str(module) and 'split_k = 1' in str(module)
    PassPipeline(tuple(passes[5:])).apply(ctx, module)
    asm = print_assembly(module, "gfx906")
    assert ".amdhsa_kernel lin" in asm and "v_fma_f32" in asm


def test_compiled_kernel_object(nt):
    k = nt.kernel()
    assert k is nt.kernel("sgemm") and k.name == "sgemm"
    assert k.asm == nt.asm and ".amdhsa_kernel sgemm" in k.asm
    assert k.code_object == nt.code_object and k.code_object[:4] == b"\x7fELF"
    assert k.target_id == nt.target_id and k.target_id.startswith("gfx906")
    assert k.metadata[".name"] == "sgemm" and k.metadata[".kernarg_segment_size"] == 56
    assert [a[".name"] for a in k.kernargs] == ["A", "B", "C", "M", "N", "K", "lda", "ldb", "ldc", "alpha", "beta"]
    assert (k.layout, k.alpha, k.beta) == ("NT", None, None)  # alpha/beta are free kernel arguments here
    cfg = k.launch(32, 128, 64)
    # one wavefront a 16x64 tile, times the automatic local split (groups of waves splitting K)
    assert cfg.grid == (128 // 64, 32 // 16, 1) and cfg.block == (64 * k.local_split, 1, 1)
    assert k.launch(32, 128, 64, batch=1) == cfg
    with pytest.raises(vlpc.VlpcError, match="batch"):  # a 2-D kernel computes one product
        k.launch(32, 128, 64, batch=2)
    with pytest.raises(vlpc.VlpcError, match="compiled for M=32"):
        k.launch(64, 128, 64)


def test_run_with_arrays_alpha_beta(nt):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((32, 64), dtype=np.float32)
    b = rng.standard_normal((128, 64), dtype=np.float32)
    c = rng.standard_normal((32, 128), dtype=np.float32)
    r = vlpc.run(nt, a, b, c, alpha=2.0, beta=0.5)
    assert r.verified and r.max_abs_error <= r.tolerance  # the product's checker reports its verdict
    assert_gemm_close(r.c, *gemm_reference(a, b, c, 2.0, 0.5, layout="NT"))
    assert r.launch == nt.kernel().launch(32, 128, 64)
    assert r.stats is not None and r.stats.instructions > 0 and r.device.startswith("emulator")
    assert (r.problem.m, r.problem.n, r.problem.k) == (32, 128, 64)
    # defaults: alpha 1, beta 0 (C = A B^T); the same kernel object can be run directly
    r2 = vlpc.run(nt.kernel(), a, b, verify=False)
    assert_gemm_close(r2.c, *gemm_reference(a, b, None, 1.0, 0.0, layout="NT", m=32))


def test_run_errors(nt):
    with pytest.raises(vlpc.VlpcError, match="has shape"):
        vlpc.run(nt, np.zeros((16, 64), np.float32))
    with pytest.raises(vlpc.VlpcError, match="dtype float64"):
        vlpc.run(nt, np.zeros((32, 64)))
    with pytest.raises(vlpc.VlpcError, match="contradicts the static size"):
        vlpc.run(nt, m=64)
    # NaN in C with beta != 0 gives NaN: the right answer, verified (issue 14 item 6's class)
    r = vlpc.run(nt, c=np.full((32, 128), np.nan, np.float32), beta=1.0)
    assert r.verified and np.isnan(r.c).all()
    # a result outside the bound raises VerificationError with the result attached: a device
    # whose download adds 1 to one element of C
    from vlpc.runtime import get_device

    dev = get_device("emulator")
    download = dev.download

    def corrupt(buf, dtype=None, shape=None):
        out = download(buf, dtype, shape)
        out.reshape(-1)[5] += 1.0
        return out

    dev.download = corrupt
    with pytest.raises(vlpc.VerificationError, match=r"1 of 4096 elements outside the error bound") as info:
        vlpc.run(nt, device=dev)
    assert info.value.result.verified is False and info.value.exit_code == 3


def test_run_linalg_fixes_alpha_beta():
    compiled = vlpc.compile(LINALG_NT, **SMALL)
    r = vlpc.run(compiled, seed=3, verify=False)
    assert (r.alpha, r.beta) == (1.0, 1.0)
    check_run(r)
    with pytest.raises(vlpc.VlpcError, match="fixes beta = 1.0"):
        vlpc.run(compiled, beta=0.0)


def test_run_dynamic_sizes_from_arrays():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((32, 16), dtype=np.float32)   # M x K
    b = rng.standard_normal((64, 16), dtype=np.float32)   # N x K
    r = vlpc.run(GEMM_DYN, a, b, verify=False, **SMALL)
    assert (r.problem.m, r.problem.n, r.problem.k) == (32, 64, 16)
    assert_gemm_close(r.c, *gemm_reference(a, b, None, 1.0, 0.0, layout="NT"))
    with pytest.raises(vlpc.VlpcError, match="M is dynamic"):
        vlpc.run(GEMM_DYN, **SMALL)


def test_vlpc_run_function_and_command_module_coexist():
    import sys

    from vlpc.commands.run import cmd_run  # the `vlpc run` command's module
    from vlpc.verify import tolerance

    assert callable(vlpc.run) and vlpc.run.__module__ == "vlpc.api"
    assert sys.modules["vlpc.commands.run"].cmd_run is cmd_run and callable(tolerance)


def test_pipeline_docstring_examples():
    failures, tried = doctest.testmod(pipeline_module, verbose=False)
    assert tried >= 3 and failures == 0


def test_run_fused_epilogue_with_bias():
    text = """func.func @g(%a: memref<16x32xf32>, %b: memref<64x32xf32>, %c: memref<16x64xf32>, %alpha: f32, %beta: f32,
                 %bias: memref<64xf32>) {
  gemm.matmul %a, %b, %c, %alpha, %beta bias(%bias : memref<64xf32>) {layout = "NT", epilogue = ["bias_col", "relu"]}
      : memref<16x32xf32>, memref<64x32xf32>, memref<16x64xf32>, f32, f32
  func.return
}
"""
    compiled = vlpc.compile(text, **SMALL)
    rng = np.random.default_rng(3)
    bias = rng.standard_normal(64).astype(np.float32)
    r = vlpc.run(compiled, bias=bias, alpha=1.5, beta=0.0, verify=False)
    a, b = r.inputs["A"], r.inputs["B"]
    assert_gemm_close(r.c, *gemm_reference(a, b, None, 1.5, 0.0, layout="NT", m=16,
                                           epilogue=["bias_col", "relu"], bias=bias))
    with pytest.raises(vlpc.VlpcError, match="vector of length 64"):
        vlpc.run(compiled, bias=np.zeros(16, np.float32))
    with pytest.raises(vlpc.VlpcError, match="no bias epilogue"):
        vlpc.run(GEMM_NT, bias=bias, **SMALL)


def test_run_reports_the_whole_plan_it_ran():
    """Issue 36 item 9: vlpc.run is the one call that runs a whole plan; its result lists every
    launch (a split-K plan's _reduce kernel, a small M's row-narrow companion), not just the main
    kernel's grid."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "examples" / "sgemm_dynamic.mlir").read_text()
    kern = vlpc.compile(text, split_k=2, macro_tile=(32, 64)).kernel()
    r = vlpc.run(kern, m=40, n=64, k=32)
    assert r.verified
    assert [s.kernel for s in r.plan] == ["sgemm_dyn", "sgemm_dyn_reduce"]
    assert r.plan == kern.plan(40, 64, 32) and r.plan[0].grid == r.launch.grid == (1, 2, 2)
    r = vlpc.run(kern, m=9, n=64, k=32)
    assert r.verified and [s.kernel for s in r.plan] == ["sgemm_dyn_rows8"]
