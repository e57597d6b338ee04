"""Decode GEMVs against the modeled streaming ceiling: f16, int8, GGUF Q8_0 and Q4_0 weights.

Every figure is **modeled** by vlpc's timing model (runtime/timing/, docs/timing_model.md), not
measured: there is no AMD GPU here.  Each row is one timing-only launch of the automatic plan
(``y = x W^T``: M rows of activations, weights stored N x K) on the named board at its stock
clocks (MI50 @ 1725 MHz, MI60 @ 1800 MHz, HBM2 at 1000 MHz: pin rate 1,024 GB/s).  Printed:
the modeled time (launch overhead included), the weight traffic (the N x K weights' bytes:
f16 2 bytes a weight, int8 1, Q8_0 34 and Q4_0 18 bytes per block of 32) per modeled second,
its share of the pin rate and of the modeled streaming ceiling
(``Board.streaming_ceiling_bytes_per_second``: the HBM model's best for a kernel that reads every
byte once with 1 KiB wave loads), and the same share without the modeled launch overhead
(``kernel``).  ``plan``: weight rows per workgroup / its waves (lanes), or the wavefront groups L
and workgroups S splitting K (sgpr, quant).  The kernels: ``lanes`` (f16/int8 with K x element bytes a multiple of 1 KiB:
passes/isel/gemv.py), ``sgpr`` (the dot kernels' decode GEMV, passes/isel/dot.py;
``--sgpr`` forces it with ``gemv = "sgpr"``) and ``quant`` (passes/isel/quant.py).

Usage::

    python benchmarks/gemv_ceiling.py                         # f16 and int8, M = 1, 4, 16, MI50
    python benchmarks/gemv_ceiling.py --formats q8_0,q4_0     # the GGUF formats' shapes
    python benchmarks/gemv_ceiling.py --gpu mi60 --m 1 --shapes 4096x4096 -v
    python benchmarks/gemv_ceiling.py --sgpr --formats f16    # the SGPR decode GEMV, for comparison

Default shapes (N x K): 4096x4096 and 11008x4096 for f16/int8 (issue 33's decode GEMVs), and
4096x4096, 14336x4096, 4096x14336 for Q8_0/Q4_0 (Llama-3-8B's q/o, gate/up and down).  One row
takes 10-60 s on 2 shared cores.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import vlpc
from vlpc.benchmarking import load_script
from vlpc.targets import get_board

DOT_SHAPES = ((4096, 4096), (11008, 4096))
QUANT_SHAPES = ((4096, 4096), (14336, 4096), (4096, 14336))
C_TYPE = {"f16": "f32", "i8": "i32"}


def modeled(fmt: str, m: int, n: int, k: int, gpu: str = "mi50", sgpr: bool = False) -> dict:
    """One timing-only launch of the automatic plan: time, weight bytes and where the time went."""
    board = get_board(gpu)
    if fmt in ("q8_0", "q4_0"):
        quant_modeled = load_script(Path(__file__).with_name("quant_gemv.py")).modeled  # the quantized GEMV's own launch

        r = quant_modeled(fmt, m, n, k, gpu, board.engine_clock_mhz)
        return dict(us=r["us"], kernel_us=None, weight_bytes=r["gbs"] * 1e9 * r["us"] * 1e-6, kernel="quant",
                    plan=f"S{r['split']} L{r['local']}", vgprs=r["vgprs"], where=r["where"],
                    launch_us=board.timing.launch_overhead_us)
    from vlpc.benchmarking.dot_figures import modeled as dot_modeled, source  # dot_gemm_figures.py's launch

    gemv = "sgpr" if sgpr else None
    ct = C_TYPE[fmt]
    r = dot_modeled("g", m, n, k, fmt, ct, gpu, gemv=gemv)
    kern = vlpc.compile(source(m, n, k, fmt, ct, gemv)).kernel("g")  # (the compile cache's)
    eb = 1 if fmt == "i8" else 2
    moved = (m * k + n * k) * eb + m * n * 4  # the bytes dot_gemm_figures' HBM shares count
    li = kern.launch_info
    lane = li.get("local_split", 1) == 1 and li["macro_n"] < 64
    plan = f"{li['macro_n']}/{li['workgroup_size'] // 64}w" if lane else f"L{kern.local_split} S{kern.split_k}"
    return dict(us=r.us, kernel_us=moved / (r.hbm_share_kernel * board.hbm_bytes_per_second) * 1e6,
                weight_bytes=n * k * eb, kernel="lanes" if lane else "sgpr", plan=plan, vgprs=r.vgprs, where=r.where,
                launch_us=board.timing.launch_overhead_us)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--formats", default="f16,i8", help="f16, i8, q8_0, q4_0 (comma-separated)")
    ap.add_argument("--m", default="1,4,16", help="activation rows, comma-separated")
    ap.add_argument("--shapes", help="N x K, comma-separated (default: the format's, module docstring)")
    ap.add_argument("--gpu", default="mi50", help="mi50 (1725 MHz) or mi60 (1800 MHz), HBM2 at 1000 MHz")
    ap.add_argument("--sgpr", action="store_true", help='f16/int8: the SGPR decode GEMV (gemv = "sgpr")')
    ap.add_argument("-v", "--verbose", action="store_true", help="also print where the modeled time goes")
    args = ap.parse_args(argv)
    board = get_board(args.gpu)
    pin, ceiling = board.hbm_bytes_per_second, board.streaming_ceiling_bytes_per_second
    print(f"modeled (timing model, not measured) on {args.gpu} @ {board.engine_clock_mhz:g} MHz, HBM2 "
          f"{board.memory_clock_mhz:g} MHz: pin {pin / 1e9:.0f} GB/s, modeled streaming ceiling "
          f"{ceiling / 1e9:.0f} GB/s, launch overhead {board.timing.launch_overhead_us:g} us")
    print(f"{'format':<6} {'M':>3} {'N':>6} {'K':>6} {'kernel':<6} {'plan':<7} {'us':>8} {'GB/s':>6} {'% pin':>6} "
          f"{'% ceil':>6} {'(kernel)':>8} {'VGPR':>4} {'wall s':>6}")
    for fmt in args.formats.split(","):
        quant = fmt in ("q8_0", "q4_0")
        shapes = ([tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")] if args.shapes else
                  QUANT_SHAPES if quant else DOT_SHAPES)
        for n, k in shapes:
            for m in (int(x) for x in args.m.split(",")):
                t0 = time.perf_counter()
                r = modeled(fmt, m, n, k, args.gpu, args.sgpr)
                rate = r["weight_bytes"] / (r["us"] * 1e-6)
                kernel_us = r["kernel_us"] if r["kernel_us"] is not None else r["us"] - r["launch_us"]
                print(f"{fmt:<6} {m:>3} {n:>6} {k:>6} {r['kernel']:<6} {r['plan']:<7} {r['us']:>8.1f} "
                      f"{rate / 1e9:>6.0f} {100 * rate / pin:>5.1f}% {100 * rate / ceiling:>5.1f}% "
                      f"{100 * r['weight_bytes'] / (kernel_us * 1e-6) / ceiling:>7.1f}% {r['vgprs']:>4} "
                      f"{time.perf_counter() - t0:>6.0f}", flush=True)
                if args.verbose:
                    print(f"    {r['where']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
