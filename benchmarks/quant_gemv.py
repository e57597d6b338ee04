"""Modeled weight bandwidth of the f16 x GGUF Q8_0 / Q4_0 / Q4_K and int4-group GEMVs (passes/isel/quant*.py).

Every figure is **modeled** by vlpc's timing model (runtime/timing/, docs/timing_model.md) on
MI50 @ 1725 MHz engine, HBM2 at 1000 MHz (4096-bit bus: 1,024 GB/s; the model's streaming
ceiling ``Board.streaming_ceiling_bytes_per_second``, 880 GB/s: the best a kernel reading every byte
once can do under the model), not measured: there is no AMD GPU here.  Each row is
one timing-only launch of the automatic plan: the lane-along-K kernel where it applies
(passes/isel/quant_lane.py: static M <= 16, Q4_K M <= 4; S = L = 1 in the table; with int8 activations
from M = 8 (Q4_K M = 2; K above 8192) the plan's pre-kernel, passes/isel/quant_act.py, is in the time), else the SGPR
kernel (macro tile M x 64, K over L wavefront groups and,
for few workgroups, S workgroups: ``quant_plan``, ``quant_split``; the reduce kernel included), with weights from
gguf's quantizer (Q4_K: vlpc.quant_run.quantize_q4_k; int4_g32/g64/g128: quantize_int4; the work does not depend on the values).  Printed: modeled time, weight traffic
(N x K / 32 blocks x block bytes) per modeled second, its share of the ceiling (with the modeled
launch overhead, and without it: ``kernel``), and where the model says the time went (``-v``).

Usage::

    python benchmarks/quant_gemv.py                       # 3 formats x 3 shapes x M = 1, 4, 16
    python benchmarks/quant_gemv.py --formats q4_0 --m 1 --shapes 4096x4096 -v
    python benchmarks/quant_gemv.py --formats int4_g128 --m 1 --shapes 4096x4096,14336x4096 -v
    python benchmarks/quant_gemv.py --llama                # one decode step of a Llama-3-8B-shaped stack
    python benchmarks/quant_gemv.py --prefill -v           # the prefill GEMM, M = 512: % of the f16 dot peak

``--llama``: the modeled time of one decode step's GEMVs (M = 1) of a Llama-3-8B-shaped model, 32 layers
of q and o (4096 x 4096), k and v (1024 x 4096: 8 KV heads of 128), gate and up (14336 x 4096) and
down (4096 x 14336), plus the output head (128256 x 4096), all in one format, as tokens per second of
the GEMV part alone (no attention, norms, activations or sampling; launches back to back, each with
the model's launch overhead).

``--prefill``: the prefill GEMM (passes/isel/quant_gemm.py; M static above 16, default
``--m 512`` and the formats Q8_0, Q4_0 and shapes 4096x4096, 14336x4096; on int8 activations, its
pre-kernel's time included) as modeled TFLOP/s and their share of the f16 dot peak (``v_dot2_f32_f16``:
2 x the board's f32 FMA peak; MI50 @ 1725 MHz: 26.5 TFLOP/s, the goal's yardstick) and of the int8 dot
peak (``v_dot4_i32_i8``: twice that, 53 TOPS), beside the weight columns.
"""

from __future__ import annotations

import argparse
import sys
import time

from vlpc.benchmarking.quant_gemv import SHAPES, modeled, source  # noqa: F401  (the launch, shared with gemv_ceiling.py and model_goals.py)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--formats", default="q8_0,q4_0,q4_k")
    ap.add_argument("--m", default="1,4,16", help="activation rows, comma-separated")
    ap.add_argument("--shapes", default=",".join(f"{n}x{k}" for n, k in SHAPES), help="N x K, comma-separated")
    ap.add_argument("--gpu", default="mi50")
    ap.add_argument("--clock", type=float, default=1725.0)
    ap.add_argument("-v", "--verbose", action="store_true", help="also print where the modeled time goes")
    ap.add_argument("--pad", type=int, default=0, help="bytes of padding after each weight row (ldb = row bytes + pad)")
    ap.add_argument("--llama", action="store_true", help="the modeled GEMV time of a Llama-3-8B-shaped decode step")
    ap.add_argument("--prefill", action="store_true",
                    help="the prefill GEMM: M = 512, Q8_0 and Q4_0 at 4096x4096 and 14336x4096, TFLOP/s and %% of the "
                         "f16 dot peak (unless --m, --formats, --shapes say otherwise)")
    args = ap.parse_args(argv)
    if args.prefill:
        defaults = {"formats": "q8_0,q4_0,q4_k", "m": "1,4,16", "shapes": ",".join(f"{n}x{k}" for n, k in SHAPES)}
        prefill = {"formats": "q8_0,q4_0", "m": "512", "shapes": "4096x4096,14336x4096"}
        for key, value in prefill.items():
            if getattr(args, key) == defaults[key]:
                setattr(args, key, value)
    import subprocess

    from vlpc.targets import get_board

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    board = get_board(args.gpu)
    print(f"modeled (timing model, not measured) on {args.gpu} @ {args.clock:g} MHz, HBM "
          f"{board.hbm_bytes_per_second / 1e9:.0f} GB/s, streaming ceiling "
          f"{board.streaming_ceiling_bytes_per_second / 1e9:.0f} GB/s, launch overhead {board.timing.launch_overhead_us:g} us; "
          f"vlpc commit {commit or '?'}")
    if args.llama:
        return llama(args)
    peak = 2 * board.peak_flops_f32 / board.engine_clock_mhz * args.clock  # the f16 dot peak at --clock
    print(f"{'format':<9} {'M':>3} {'N':>6} {'K':>6} {'S':>2} {'L':>3} {'us':>9} {'weight GB/s':>11} {'% ceiling':>9} "
          f"{'(kernel)':>8} {'VGPR':>4} {'SGPR':>4} {'wall s':>6}"
          + ("  TFLOP/s  % dot peak  % i8 peak" if args.prefill else ""))
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    for fmt in args.formats.split(","):
        for n, k in shapes:
            for m in (int(x) for x in args.m.split(",")):
                t0 = time.perf_counter()
                r = modeled(fmt, m, n, k, args.gpu, args.clock, args.pad)
                print(f"{fmt:<9} {m:>3} {n:>6} {k:>6} {r['split']:>2} {r['local']:>3} {r['us']:>9.1f} {r['gbs']:>11.1f} "
                      f"{100 * r['share']:>8.1f}% {100 * r['share_kernel']:>7.1f}% {r['vgprs']:>4} {r['sgprs']:>4} "
                      f"{time.perf_counter() - t0:>6.0f}"
                      + (f"  {2 * m * n * k / r['us'] / 1e6:>7.2f}  {200 * m * n * k / (r['us'] * 1e-6) / peak:>9.1f}%"
                         f"  {100 * m * n * k / (r['us'] * 1e-6) / peak:>8.1f}%" if args.prefill else ""), flush=True)
                if args.verbose:
                    print(f"    {r['where']}", flush=True)
    return 0


#: A Llama-3-8B decode step's GEMVs: (N, K) -> how many per token.
LLAMA3_8B = {(4096, 4096): 2 * 32, (1024, 4096): 2 * 32, (14336, 4096): 2 * 32, (4096, 14336): 32,
             (128256, 4096): 1}


def llama(args) -> int:
    for fmt in args.formats.split(","):
        total = wbytes = 0.0
        for (n, k), count in LLAMA3_8B.items():
            t0 = time.perf_counter()
            r = modeled(fmt, 1, n, k, args.gpu, args.clock)
            total += count * r["us"]
            wbytes += count * r["bytes"]
            print(f"{fmt:<6} 1 x {n:>6} x {k:<6} S {r['split']} L {r['local']:>2}: {r['us']:8.1f} us x {count:>2} "
                  f"({r['gbs']:.0f} GB/s; {time.perf_counter() - t0:.0f} s)", flush=True)
        print(f"{fmt}: {total:.0f} us of GEMVs per token: {1e6 / total:.1f} tokens/s (modeled, GEMVs only); "
              f"{wbytes / 1e9:.2f} GB of weights: {wbytes / (total * 1e-6) / 1e9:.0f} GB/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
