"""The quantized-weight GEMV's modeled launch, shared by ``benchmarks/quant_gemv.py``,
``gemv_ceiling.py`` and ``model_goals.py``: one ``gemm.matmul`` with ``b_format`` (:func:`source`)
and one timing-only launch of its automatic plan on a board (:func:`modeled`, every figure
**modeled** by the timing model: docs/timing_model.md).
"""

from __future__ import annotations

import numpy as np

import vlpc
from vlpc.quant_run import b_buffer, random_weights, row_bytes
from vlpc.benchmarking import timed_launch
from vlpc.runtime import get_device

SHAPES = ((4096, 4096), (14336, 4096), (4096, 14336))  # N x K: Llama-3-8B's q/o, gate/up, down


def source(m: int, n: int, k: int, fmt: str, pad: int = 0) -> str:
    """One NT ``gemm.matmul`` of M x K f16 activations and N x K weights in ``fmt`` (rows of
    ``row_bytes`` bytes, ``pad`` more between rows), C f32 (kernel ``g``)."""
    rb = row_bytes(fmt, k)
    lay = f", strided<[{rb + pad}, 1]>" if pad else ""  # rows every row bytes + pad bytes
    ta, tb, tc = f"memref<{m}x{k}xf16>", f"memref<{n}x{rb}xi8{lay}>", f"memref<{m}x{n}xf32>"
    return (f"func.func @g(%x: {ta}, %w: {tb}, %y: {tc}, %alpha: f32, %beta: f32) {{\n"
            f'  gemm.matmul %x, %w, %y, %alpha, %beta {{layout = "NT", b_format = "{fmt}"}} : {ta}, {tb}, {tc}, f32, f32\n'
            "  func.return\n}\n")


def modeled(fmt: str, m: int, n: int, k: int, gpu: str = "mi50", clock: float = 1725.0, pad: int = 0) -> dict:
    """The automatic plan of :func:`source` launched once, timing only, on ``gpu`` at ``clock`` MHz:
    modeled time (``us``), weight bytes, GB/s, shares of the board's modeled streaming ceiling
    (with and without the launch overhead), the plan and register counts, where the time went."""
    kern = vlpc.compile(source(m, n, k, fmt, pad)).kernel("g")
    dev = get_device("emulator", gpu=gpu, clock_mhz=clock, timing_only=True)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = random_weights(fmt, n, k, rng)
    c = np.zeros((m, n), np.float32)
    st = timed_launch(kern, dev, a, b_buffer(b, n, b.shape[1] + pad, b.shape[1]), c, m, n, k, b.shape[1] + pad,
                      np.float32(1), np.float32(0))
    tm = st.timing
    ceiling = dev.board.streaming_ceiling_bytes_per_second
    kernel_us = tm.time_us - tm.breakdown_us.get("launch", 0.0)
    wb = b.nbytes
    return dict(fmt=fmt, m=m, n=n, k=k, us=tm.time_us, bytes=wb, gbs=wb / (tm.time_us * 1e-6) / 1e9,
                share=wb / (tm.time_us * 1e-6) / ceiling, share_kernel=wb / (kernel_us * 1e-6) / ceiling,
                local=kern.local_split, split=kern.split_k, vgprs=kern.vgprs, sgprs=kern.sgprs, where=tm.summary())
