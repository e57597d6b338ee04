"""Modeled figures of the f16 / int8 dot kernels (passes/isel/dot.py) on MI60 at its stock clocks.

Every figure is **modeled** by vlpc's timing model (runtime/timing/, docs/timing_model.md),
not measured: there is no AMD GPU here.  Peaks (spec sheets, vlpc/targets/ Board):

* f16 dot peak: 64 lanes x 4 FLOP (``v_dot2_f32_f16``: 2 multiply-adds) x CUs x clock
  = 29.5 TFLOP/s on 64 CUs at 1800 MHz (twice the f32 FMA peak);
* int8 dot peak: 64 lanes x 8 ops (``v_dot4_i32_i8``) x CUs x clock = 59.0 TOP/s;
* HBM bandwidth: the board's pin rate (bus bits x 2 x memory clock / 8: 1,024 GB/s at
  the stock 1000 MHz) and, ``% ceil``, the modeled streaming ceiling (the
  ``global_load_dwordx4`` stream of ``benchmarks/microbench/memory.py`` on the same board,
  which reproduces the measured 867-873 GB/s on MI50).

Usage::

    python benchmarks/dot_gemm_figures.py               # all rows (about 10 minutes on 2 cores)
    python benchmarks/dot_gemm_figures.py --only gemv   # the decode GEMVs only (about a minute)
    python benchmarks/dot_gemm_figures.py -v --csv out.csv  # -v: where the modeled time goes

Every row is one full timing-only launch (the first round's footprints give the L2 miss
probability; CU 0's workgroups are replayed by the CU model): about 2.5 minutes for a 4096^3
GEMM, so the CU-0 shortcut of ``benchmarks/seed_sweep.py`` (``dgemm_fast``) is not needed.

GEMV rows: the automatic decode plan (M = 1..16 activations x a weight matrix stored N x K,
``vlpc.dialects.gemm.gemv_plan``): macro tile M x 64, K split over 4 (M < 4) or 16 wavefront
groups of a workgroup (``local_split``, partial sums reduced through LDS), so every weight
byte is read once by N / 64 workgroups; % of HBM counts the bytes that must move (weights +
activations + C) over the modeled time; ``(kernel)`` is the same over the time without the modeled
launch overhead (``TimingParams.launch_overhead_us`` in vlpc/targets/, calibrated on the seed's
SGEMM; the header line prints the value in force).
"""

from __future__ import annotations

import argparse
import csv
import sys

from vlpc.benchmarking.dot_figures import Row, modeled

def rows(only: str | None) -> list[tuple]:
    out = []
    if only in (None, "gemm"):
        out += [("HGEMM", 4096, 4096, 4096, "f16", "f32", {}),
                ("HGEMM f16 out", 4096, 4096, 4096, "f16", "f16", {}),
                ("int8 GEMM", 4096, 4096, 4096, "i8", "i32", {})]
    if only in (None, "gemv"):
        for m, n, k in ((1, 4096, 4096), (4, 4096, 4096), (16, 4096, 4096), (16, 4096, 11008)):
            for ab, ct in (("f16", "f32"), ("i8", "i32")):
                out.append((f"GEMV {ab}", m, n, k, ab, ct, {}))  # the automatic decode GEMV plan
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("gemm", "gemv"))
    ap.add_argument("--csv")
    ap.add_argument("--gpu", default="mi60")
    ap.add_argument("--clock", type=float, default=None, help="engine clock (default: the board's stock clock)")
    ap.add_argument("--memory-clock", type=float, default=None, help="HBM2 clock (default: the board's, 1000 MHz)")
    ap.add_argument("-v", "--verbose", action="store_true", help="also print where the modeled time goes")
    args = ap.parse_args(argv)
    results = []
    from vlpc.targets import get_board

    board = get_board(args.gpu, clock_mhz=args.clock, memory_clock_mhz=args.memory_clock)
    from vlpc.benchmarking.microbench import stream_gbs  # the modeled dwordx4 streaming ceiling of this board

    ceiling = stream_gbs(board, 16) * 1e9
    pin = board.hbm_bytes_per_second
    print(f"modeled on {args.gpu} @ {board.engine_clock_mhz:g} MHz, HBM2 {board.memory_clock_mhz:g} MHz "
          f"(pin {pin / 1e9:.0f} GB/s; modeled streaming ceiling, global_load_dwordx4, {ceiling / 1e9:.0f} GB/s) "
          f"(timing model, not measured; launch overhead {board.timing.launch_overhead_us:g} us)")
    print(f"{'kernel':<14} {'M':>5} {'N':>6} {'K':>6} {'types':<9} {'us':>9} {'T(FL)OP/s':>9} "
          f"{'% peak':>7} {'% HBM':>6} {'(kernel)':>8} {'% ceil':>6} {'VGPR':>4} {'SGPR':>4}")
    for name, m, n, k, ab, ct, opts in rows(args.only):
        r = modeled(name, m, n, k, ab, ct, args.gpu, args.clock, args.memory_clock, **opts)
        results.append(r)
        print(f"{r.name:<14} {m:>5} {n:>6} {k:>6} {ab + '>' + ct:<9} {r.us:>9.1f} {r.rate:>9.2f} "
              f"{100 * r.peak_share:>6.1f}% {100 * r.hbm_share:>5.1f}% {100 * r.hbm_share_kernel:>7.1f}% "
              f"{100 * r.hbm_share * pin / ceiling:>5.1f}% {r.vgprs:>4} {r.sgprs:>4}", flush=True)
        if args.verbose:
            print(f"    {r.where}", flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(list(Row.__dataclass_fields__))
            for r in results:
                w.writerow(list(vars(r).values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
