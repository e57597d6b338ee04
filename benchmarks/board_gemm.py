"""SGEMM and DGEMM M x N x K (default 4096 x 4096 x 640, NT) on one board, modeled: TFLOP/s and share of peak.

The shortcut of ``benchmarks/seed_sweep.py --dgemm`` (:func:`seed_sweep.dgemm_fast`) for any
board and target: vlpc's automatic plan for ``--gpu`` is compiled for ``--target`` (default: the
board's processor, gfx900 for ``mi25``), one timing-only launch traces CU 0's workgroups only
(``EmulatorDevice.footprint_round = False``) and the L2 miss probability comes from the tile
geometry (:func:`seed_sweep.l2_miss_estimate`) instead of the first round's recorded footprint
(``tests/timing/test_timing_fast_path.py`` checks that the two agree).  The emulator's exact f64 FMA makes
the footprint round of a DGEMM (every workgroup of the first round) take most of an hour on this
machine; the shortcut runs CU 0's workgroups only.

Every figure is **modeled** by vlpc's timing model (``runtime/timing``), never measured: MI25
(gfx900) has no measurement at all in the seeds; the model's parameters were calibrated on the
seed's MI60 at 1700 MHz.  The f64 peak is the f32 peak / ``Target.f64_rate_divisor`` (16 on
gfx900: 768 GFLOP/s on MI25 at 1500 MHz, AMD's MI25 spec sheet; 2 on gfx906).

    python benchmarks/board_gemm.py --gpu mi25                 # SGEMM and DGEMM 4096x4096x640 on MI25
    python benchmarks/board_gemm.py --gpu mi25 --dtype f64 --json build/mi25_dgemm.json
    python benchmarks/board_gemm.py --gpu mi60 --target gfx906 --dtype f64   # seed_sweep's d4096
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from vlpc.benchmarking.seed import gemm_fast  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="mi25", choices=("mi25", "mi50", "mi60"),
                    help="board of the timing model (default: %(default)s)")
    ap.add_argument("--target", default=None, help="target id (default: the board's processor)")
    ap.add_argument("--dtype", default="both", choices=("f32", "f64", "both"))
    ap.add_argument("-m", type=int, default=4096)
    ap.add_argument("-n", type=int, default=None, help="default: M")
    ap.add_argument("-k", type=int, default=640)
    ap.add_argument("--split-k", type=int, default=None, help="1: one kernel (default: the automatic plan)")
    ap.add_argument("--json", help="also write the figures as JSON")
    a = ap.parse_args(argv)
    out = []
    for dt in (("f32", "f64") if a.dtype == "both" else (a.dtype,)):
        r = gemm_fast(a.m, a.n, a.k, dtype=dt, gpu=a.gpu, target=a.target, split_k=a.split_k)
        out.append(r)
        name = "DGEMM" if dt == "f64" else "SGEMM"
        print(f"{name} {r['m']}x{r['n']}x{r['k']} on {r['board']} @ {r['clock_mhz']:.0f} MHz ({r['target']}, plan "
              f"{r['plan']}, {r['vgprs']} VGPRs): modeled {r['modeled_us']:,.1f} us, {r['tflops']:.3f} TFLOP/s, "
              f"{r['peak_share'] * 100:.1f} % of the {dt} peak {r['peak_tflops']:.3f} TFLOP/s "
              f"(L2 miss {r['l2_miss']:.4f}; {r['wall_s']:.0f} s host)", flush=True)
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
