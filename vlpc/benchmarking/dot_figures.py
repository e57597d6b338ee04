"""The modeled launch of the f16/int8 dot kernels that ``benchmarks/dot_gemm_figures.py`` prints
and ``benchmarks/gemv_ceiling.py`` and ``model_goals.py`` compare with: one NT GEMM, compiled
with its automatic plan (or given options) and launched once on the timing-only emulator.
Every figure is **modeled** (the timing model on the emulator's trace), never measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import vlpc
from vlpc.benchmarking import timed_launch
from vlpc.runtime import get_device

SCALAR = {"f16": "f32", "i8": "i32"}
NP = {"f16": np.float16, "i8": np.int8, "f32": np.float32, "f16c": np.float16, "i32": np.int32}


def source(m: int, n: int, k: int, ab: str, ct: str, gemv: str | None = None) -> str:
    """One NT ``gemm.matmul`` (``gemv``: its ``gemv`` attribute, e.g. ``"sgpr"``, or none)."""
    s = SCALAR[ab]
    ta, tb, tc = f"memref<{m}x{k}x{ab}>", f"memref<{n}x{k}x{ab}>", f"memref<{m}x{n}x{ct}>"
    extra = f', gemv = \"{gemv}\"' if gemv else ""
    return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {s}, %beta: {s}) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"{extra}}} : {ta}, {tb}, {tc}, {s}, {s}\n"
            "  func.return\n}\n")


@dataclass
class Row:
    """One modeled launch: its time (us), rate, shares of the dot peak and of the HBM pin bandwidth
    (with and without the modeled launch overhead), registers and where the time went."""

    name: str
    m: int
    n: int
    k: int
    ab: str
    ct: str
    us: float
    rate: float  # TFLOP/s (f16) or TOP/s (int8)
    peak_share: float
    hbm_share: float
    hbm_share_kernel: float  # the same without the modeled launch overhead (kernel time only)
    vgprs: int
    sgprs: int
    where: str = ""  # the model's breakdown of the time (TimingReport.summary)


def modeled(name: str, m: int, n: int, k: int, ab: str, ct: str, gpu: str = "mi60", clock: float | None = None,
            memory_clock: float | None = None, gemv: str | None = None, **options) -> Row:
    """:class:`Row` of one timing-only launch of :func:`source` (A and B standard normal f16 or
    uniform int8, C zero, alpha 1, beta 0) on board ``gpu`` at the given clocks (MHz; None: the
    board's), compiled with ``options``."""
    kern = vlpc.compile(source(m, n, k, ab, ct, gemv), **options).kernel("g")
    dev = get_device("emulator", gpu=gpu, clock_mhz=clock, memory_clock_mhz=memory_clock, timing_only=True)
    rng = np.random.default_rng(0)
    if ab == "i8":
        a, b = (rng.integers(-128, 128, s).astype(np.int8) for s in ((m, k), (n, k)))
        c = np.zeros((m, n), np.int32)
        alpha, beta = np.int32(1), np.int32(0)
    else:
        a, b = (rng.standard_normal(s).astype(np.float16) for s in ((m, k), (n, k)))
        c = np.zeros((m, n), NP[ct])
        alpha, beta = np.float32(1), np.float32(0)
    st = timed_launch(kern, dev, a, b, c, m, n, k, k, alpha, beta)
    tm = st.timing
    board = dev.board
    per_lane = 4 if ab == "f16" else 8  # FLOP (ops) per lane and dot instruction
    peak = 64 * per_lane * board.compute_units * board.engine_clock_mhz * 1e6
    ops = 2.0 * m * n * k
    moved = a.nbytes + b.nbytes + c.nbytes
    kernel_us = tm.time_us - tm.breakdown_us.get("launch", 0.0)
    hbm = board.hbm_bytes_per_second
    return Row(name, m, n, k, ab, ct, tm.time_us, ops / (tm.time_us * 1e-6) / 1e12,
               ops / (tm.time_us * 1e-6) / peak, moved / (tm.time_us * 1e-6) / hbm,
               moved / (kernel_us * 1e-6) / hbm, kern.vgprs, kern.sgprs, tm.summary())
