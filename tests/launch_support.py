"""Launch a compiled kernel directly (no vlpc.run, no vlpc checker) and return all of C.

For tests that must see C's padding beyond N or a batch's gaps, or that must not depend on
the product's own verification.  The result is checked with tests/reference.py.
"""

from __future__ import annotations

import numpy as np

from vlpc.runtime import get_device, load_code_object


def nt_source(m: int, n: int, k: int, dtype: str = "f32") -> str:
    """A static ``gemm.matmul`` (layout NT: A M x K, B N x K, C M x N) with alpha and beta
    given at launch: the plain GEMM many tests compile (:func:`gemm_source`'s defaults)."""
    return gemm_source(m, n, k, dtype=dtype)


def gemm_source(m, n, k, lda=None, ldb=None, ldc=None, dynamic=False, layout="NT", dtype="f32"):
    """A ``gemm.matmul`` kernel ``sgemm`` with alpha and beta given at launch: ``layout`` (BLAS
    transa/transb), A, B and C static or (``dynamic``) sized at launch, leading dimensions
    ``lda``/``ldb``/``ldc`` (None: minimal) as strided memrefs."""
    def mt(rows, cols, ld):
        if dynamic:
            return f"memref<?x?x{dtype}>" if ld is None else f"memref<?x?x{dtype}, strided<[?, 1]>>"
        return (f"memref<{rows}x{cols}x{dtype}>" if ld is None
                else f"memref<{rows}x{cols}x{dtype}, strided<[{ld}, 1]>>")
    a = mt(m, k, lda) if layout[0] == "N" else mt(k, m, lda)
    b = mt(k, n, ldb) if layout[1] == "N" else mt(n, k, ldb)
    c = mt(m, n, ldc)
    return f"""builtin.module {{
  func.func @sgemm(%a: {a}, %b: {b}, %c: {c}, %alpha: {dtype}, %beta: {dtype}) {{
    gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "{layout}"}} : {a}, {b}, {c}, {dtype}, {dtype}
    func.return
  }}
}}
"""


def launch(kern, a: np.ndarray, b: np.ndarray, c: np.ndarray, alpha: float, beta: float,
           m: int, n: int, k: int, *, bias: np.ndarray | None = None, lds: tuple[int, int, int] | None = None,
           batch: int | None = None, strides: tuple[int, int, int] | None = None,
           strict: bool = True) -> np.ndarray:
    """Run ``kern`` (a CompiledKernel) on the emulator with exactly-sized buffers; C as stored after.

    ``a``, ``b``, ``c``: stored arrays (2-D: row stride = last extent; flat with ``lds`` and
    ``strides`` for a strided batch).  Returns C with ``c``'s shape and dtype.
    """
    dt = c.dtype.type
    dev = get_device("emulator", strict=strict)
    arrays = [np.ascontiguousarray(x) for x in (a, b, c)] + ([np.ascontiguousarray(bias)] if bias is not None else [])
    bufs = [dev.upload(x) for x in arrays]
    lda, ldb, ldc = lds if lds is not None else (a.shape[-1], b.shape[-1], c.shape[-1])
    try:
        args = [*bufs[:3], *(np.int32(v) for v in (m, n, k, lda, ldb, ldc)), dt(alpha), dt(beta), *bufs[3:]]
        if strides is not None:
            args += [np.int32(s) for s in strides]
        kern.execute(dev, load_code_object(kern.code_object), args, m, n, k, ldc, batch,
                     buffer_sizes={i: x.nbytes for i, x in enumerate(arrays)})
        return dev.download(bufs[2], dt, c.shape)
    finally:
        for buf in bufs:
            dev.free(buf)


def run_elementwise(env, kernel: str, n: int, grid, block, ins, outs) -> list[np.ndarray]:
    """Launch a hipcc-built element-wise test kernel ``kernel(int n, in..., out...)``: ``env`` is
    (device, loaded code object), ``ins`` the input arrays, ``outs`` the output dtypes (n values
    each, zero-filled before).  Returns the outputs."""
    dev, co = env
    bufs = [dev.upload(np.ascontiguousarray(x)) for x in ins]
    obufs = [dev.upload(np.zeros(n, dt)) for dt in outs]
    dev.launch(co, kernel, grid=grid, block=block, args=[np.int32(n), *bufs, *obufs])
    return [dev.download(b, dt, (n,)) for b, dt in zip(obufs, outs)]
