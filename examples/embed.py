"""vlpc as a compiler backend, from Python: compile, inspect the kernel, run its plan yourself,
use the one-call vlpc.run, and put vlpc's passes into your own xDSL pipeline.

    python examples/embed.py            # runs on the built-in GCN emulator (no GPU needed)

Tested by tests/docs/test_docs_examples.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from xdsl.passes import PassPipeline

import vlpc
from vlpc.dialects.gcn_asm import print_assembly
from vlpc.compiler import make_context, parse
from vlpc.runtime import get_device, load_code_object

HERE = Path(__file__).resolve().parent


def main() -> None:
    # 1. Compile a linalg module (C += A * B^T on memrefs).  The input may also be gemm-dialect
    #    text, an xDSL ModuleOp, or an upstream MLIR module (iree.compiler.ir / mlir.ir).
    text = (HERE / "linalg_matmul_transpose_b.mlir").read_text()
    compiled = vlpc.compile(text, target="gfx906")           # options: macro_tile=(64, 128), k_step=8, ...
    kernel = compiled.kernel()                                # the module's only kernel
    print(f"kernel {kernel.name}: layout {kernel.layout}, alpha {kernel.alpha}, beta {kernel.beta} "
          f"(fixed by the IR: linalg accumulates into C)")
    print(f"  {len(kernel.asm.splitlines())} lines of assembly, code object {len(kernel.code_object)} bytes "
          f"for {kernel.target_id}, {kernel.vgprs} VGPRs, {kernel.sgprs} SGPRs")
    print("  kernel arguments:", ", ".join(f"{a['.name']}@{a['.offset']}" for a in kernel.kernargs))

    # 2. The plan is a function of the problem size (M, N, K): the launches, in order (a split-K
    #    plan adds its _reduce kernel, a small M a row-narrow companion; CompiledKernel.plan).
    m, n, k = 128, 256, 64
    for step in kernel.plan(m, n, k):
        print(f"  launch {step.kernel}: grid {step.grid} workgroups x block {step.block} work-items")

    # 3. Run the whole plan yourself with the runtime (the kernel ABI: A, B, C, M, N, K, lda, ldb,
    #    ldc, alpha, beta): CompiledKernel.execute adds the workspace and launches every kernel of the
    #    plan (C and C++ hosts: vlpc compile --emit hip-launcher, docs/hip.md).
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)         # A: M x K
    b = rng.standard_normal((n, k), dtype=np.float32)         # B: N x K (transposed operand)
    c = rng.standard_normal((m, n), dtype=np.float32)         # C: M x N, accumulated into
    dev = get_device("emulator")                              # or "hip" on a gfx906, or "auto"
    bufs = [dev.upload(x) for x in (a, b, c)]
    args = [*bufs, *(np.int32(v) for v in (m, n, k, k, k, n)), np.float32(kernel.alpha), np.float32(kernel.beta)]
    kernel.execute(dev, load_code_object(kernel.code_object), args, m, n, k)
    out = dev.download(bufs[2], np.float32, (m, n))
    for buf in bufs:
        dev.free(buf)
    err = np.abs(out - (c + a @ b.T)).max()
    print(f"  manual launch on {dev.name}: max |C - (C0 + A B^T)| = {err:.2e}")
    assert err < 1e-3

    # 4. Or in one call: vlpc.run compiles (unless given a compiled module), launches, verifies.
    r = vlpc.run(compiled, a, b, c)
    assert r.verified and np.array_equal(r.c, out)
    print(f"  vlpc.run: verified, max error {r.max_abs_error:.2e} (bound {r.tolerance:.2e}), "
          f"{r.stats.instructions} wave-instructions executed")

    # 5. The pipeline as xDSL passes with their options, to insert into another compiler's pipeline.
    passes = vlpc.pipeline("gfx906", macro_tile=(32, 128), micro_tile=(32, 1), k_step=8)
    for name, options in vlpc.pipeline_options(passes):  # Python field names; the text form uses hyphens
        print(f"  pass {name}: " + " ".join(f"{key.replace('_', '-')}={value}" for key, value in options.items()))
    print("  as text for vlpc opt -p / xdsl-opt -p:", vlpc.pipeline_spec(passes))
    ctx = make_context()
    module = parse(text, "linalg_matmul_transpose_b.mlir", ctx)
    PassPipeline(tuple(passes[:5])).apply(ctx, module)       # stop at the planned gemm.matmul ...
    planned = next(op for op in module.walk() if op.name == "gemm.matmul")
    print(f"  after {passes[4].name}: {planned.name} layout {planned.layout.data}, "
          f"macro tile {planned.get_int_array('macro_tile')}, grid {planned.get_int_array('grid')}")
    PassPipeline(tuple(passes[5:])).apply(ctx, module)       # ... and finish the lowering
    asm = print_assembly(module, "gfx906")
    print(f"  custom pipeline: {asm.count('v_fma_f32')} v_fma_f32 instructions")


if __name__ == "__main__":
    main()
