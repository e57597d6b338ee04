"""vlpc: a GEMM compiler for AMD GCN (gfx906) on xDSL, with the A operand in SGPRs.

Python API::

    import vlpc
    result = vlpc.compile(open("gemm.mlir").read(), target="gfx906")
    result.asm, result.code_object, result.kernel().launch(m, n, k)
    passes = vlpc.pipeline("gfx906", macro_tile=(64, 128))   # xDSL ModulePass objects

The runtime (code objects, the GCN emulator, HIP) is :mod:`vlpc.runtime`.
"""

__version__ = "0.1.0"

from vlpc.pipeline import CompiledKernel, CompiledModule, compile, parse, pipeline  # noqa: E402

__all__ = ["CompiledKernel", "CompiledModule", "compile", "parse", "pipeline", "__version__"]
