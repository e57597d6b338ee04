"""Modeled f16/int8 dot GEMMs with A stored K x M (layouts TN/TT) on MI60 @ 1700 MHz.

The CU-0 shortcut of ``benchmarks/board_gemm.py`` (``gemm_fast``): the plan's kernel traced
on CU 0's workgroups only, the L2 miss probability from the tile geometry
(``seed_sweep.l2_miss_estimate``).  All figures are modeled (vlpc's timing model), not
measured.  Peaks: f16 dot 64 lanes x 4 FLOP, int8 dot 64 lanes x 8 ops, x CUs x clock.

Usage::

    python benchmarks/dot_layout_shortcut.py --layout TT --dtype i8     # ~10 s
    python benchmarks/dot_layout_shortcut.py --layout TN --dtype f16 --size 2048
    python benchmarks/dot_layout_shortcut.py --layout TT --dtype i8 --a-transpose in-kernel

A plan that copies A first (``passes/isel/transpose.py``: ``<name>_transpose``, then the
NT/NN dot kernel) is modeled kernel by kernel and the times added; the transpose kernel
shares no line of A or of the copy between workgroups, so its L2 miss probability is 1.
``--a-transpose pre|in-kernel`` forces the choice where both are possible (default: the
compiler's rule, ``a_transpose_reason``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np


from vlpc.benchmarking.seed import l2_miss_estimate  # noqa: E402

TYPES = {"i8": ("i8", "i32", "i32", 1, 8), "f16": ("f16", "f32", "f32", 2, 4)}  # ab, c, scalar, bytes, ops/lane


def source(m: int, n: int, k: int, layout: str, dtype: str) -> str:
    ab, ct, st, _, _ = TYPES[dtype]
    ta = f"memref<{k}x{m}x{ab}>" if layout[0] == "T" else f"memref<{m}x{k}x{ab}>"
    tb = f"memref<{n}x{k}x{ab}>" if layout[1] == "T" else f"memref<{k}x{n}x{ab}>"
    tc = f"memref<{m}x{n}x{ct}>"
    return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {st}, %beta: {st}) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"{layout}\"}} : {ta}, {tb}, {tc}, {st}, {st}\n"
            "  func.return\n}\n")


def model(size: int, layout: str, dtype: str, a_transpose: str = "auto") -> dict:
    import vlpc
    from vlpc.runtime import get_device
    from vlpc.runtime.timing import residency

    m = n = k = size
    _, _, st, esize, ops_per_lane = TYPES[dtype]
    mod = vlpc.compile(source(m, n, k, layout, dtype), gpu="mi60", a_transpose=a_transpose)
    ck = mod.kernel()
    li = ck.launch_info
    dev = get_device("emulator", gpu="mi60", clock_mhz=1700.0, timing_only=True)
    board = dev.board
    dev.footprint_round = False
    res = residency(board, ck.vgprs, ck.sgprs, 0, li["workgroup_size"])
    dev.l2_miss = l2_miss_estimate(m, n, k, (li["macro_m"], li["macro_n"]), esize,
                                   board.compute_units * res.wgs_per_cu)
    bufs = [dev.alloc(m * k * esize), dev.alloc(n * k * esize), dev.alloc(m * n * 4)]
    ws = ck.workspace_bytes(m, n, k)
    if ws:
        bufs.append(dev.alloc(ws))
    lda = m if layout[0] == "T" else k
    ldb = k if layout[1] == "T" else n
    scalar = np.int32 if st == "i32" else np.float32
    t0 = time.time()
    us = 0.0
    kernels = []
    main_miss = dev.l2_miss
    for step in ck.plan(m, n, k):
        other = ck.companions.get(step.kernel)
        pre = other is not None and other.launch_info.get("role") == "transpose"
        dev.l2_miss = 1.0 if pre else main_miss  # the copy: no line shared between workgroups
        stats = dev.launch(mod.code_object, step.kernel, grid=step.grid, block=step.block,
                           args=[*bufs[:3], m, n, k, lda, ldb, n, scalar(1), scalar(0), *bufs[3:]])
        us += stats.timing.time_us
        kernels.append(f"{step.kernel} {stats.timing.time_us:,.1f} us")
    peak = 64 * ops_per_lane * board.compute_units * board.engine_clock_mhz * 1e6
    rate = 2.0 * m * n * k / (us * 1e-6)
    return {"us": us, "rate": rate, "share": rate / peak, "peak": peak,
            "plan": f"{li['macro_m']}x{li['macro_n']} k{li['k_step']}; " + ", then ".join(kernels),
            "wall": time.time() - t0,
            "summary": stats.timing.summary()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layout", default="TT", choices=("NT", "NN", "TN", "TT"))
    ap.add_argument("--dtype", default="i8", choices=tuple(TYPES))
    ap.add_argument("--size", type=int, default=4096, help="M = N = K (default: %(default)s)")
    ap.add_argument("--a-transpose", default="auto", choices=("auto", "pre", "in-kernel"),
                    help="A stored K x M: copy it first (pre), pack it in the kernel, or the compiler's rule")
    a = ap.parse_args(argv)
    r = model(a.size, a.layout, a.dtype, a.a_transpose)
    unit = "TOP/s" if a.dtype == "i8" else "TFLOP/s"
    print(f"{a.dtype} {a.layout} {a.size}^3 (modeled, MI60 @ 1700 MHz, CU-0 shortcut): {r['us']:,.0f} us, "
          f"{r['rate'] / 1e12:.2f} {unit}, {100 * r['share']:.1f} % of {r['peak'] / 1e12:.1f} {unit}; "
          f"plan {r['plan']}; wall {r['wall']:.0f} s")
    print(r["summary"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
