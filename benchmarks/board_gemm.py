"""SGEMM and DGEMM M x N x K (default 4096 x 4096 x 640, NT) on one board, modeled: TFLOP/s and share of peak.

The shortcut of ``benchmarks/seed_sweep.py --dgemm`` (:func:`seed_sweep.dgemm_fast`) for any
board and target: vlpc's automatic plan for ``--gpu`` is compiled for ``--target`` (default: the
board's processor, gfx900 for ``mi25``), one timing-only launch traces CU 0's workgroups only
(``EmulatorDevice.footprint_round = False``) and the L2 miss probability comes from the tile
geometry (:func:`seed_sweep.l2_miss_estimate`) instead of the first round's recorded footprint
(``tests/test_timing_fast_path.py`` checks that the two agree).  The emulator's exact f64 FMA makes
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
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from seed_sweep import dgemm_source, l2_miss_estimate  # noqa: E402
from timing_calibration import seed_source  # noqa: E402


def gemm_fast(m: int = 4096, n: int | None = None, k: int = 640, *, dtype: str = "f64", gpu: str = "mi25",
              target: str | None = None, split_k: int | None = None) -> dict:
    """Modeled figures of vlpc's automatic plan for an NT GEMM ``m x n x k`` of ``dtype`` (``f32`` or
    ``f64``) on board ``gpu`` compiled for ``target`` (default: the board's processor); ``split_k``
    1 forces one kernel (default: the automatic plan).

    Returns a dict: ``modeled_us`` (microseconds), ``tflops``, ``peak_share`` (of the f32 peak,
    or of the f64 peak for ``f64``), ``peak_tflops``, ``plan``, ``vgprs``, ``l2_miss`` (the
    estimated L2 miss probability), ``board``, ``clock_mhz``, ``target``, ``wall_s`` (host
    seconds the launch took).  Raises ``ValueError`` when the plan splits K (the shortcut
    models one kernel)."""
    import numpy as np

    import vlpc
    from vlpc.runtime.emulator.device import EmulatorDevice
    from vlpc.runtime.timing import residency
    from vlpc.targets import get_board

    n = m if n is None else n
    board = get_board(gpu)
    target = target or board.target.name
    esize, npt = (8, np.float64) if dtype == "f64" else (4, np.float32)
    text = dgemm_source(m, n, k) if dtype == "f64" else seed_source(m, n, k)
    mod = vlpc.compile(text, target, gpu=board.name, **({"split_k": split_k} if split_k else {}))
    if len(mod.kernels) != 1 or (mod.kernel().launch_info.get("split_k") or 1) != 1:
        raise ValueError(f"the plan of {m}x{n}x{k} on {board.name} splits K: the shortcut models one kernel "
                         "(split_k=1 forces it)")
    ck = mod.kernel()
    li = ck.launch_info
    dev = EmulatorDevice(gpu=board, target=target, timing_only=True)
    dev.footprint_round = False
    res = residency(board, ck.vgprs, ck.sgprs, 0, li["workgroup_size"])
    dev.l2_miss = l2_miss_estimate(m, n, k, (li["macro_m"], li["macro_n"]), esize,
                                   board.compute_units * res.wgs_per_cu)
    bufs = [dev.alloc(m * k * esize), dev.alloc(n * k * esize), dev.alloc(m * n * esize)]
    lc = ck.launch(m, n, k)
    t0 = time.time()
    st = dev.launch(mod.code_object, ck.name, grid=lc.grid, block=lc.block,
                    args=[*bufs, m, n, k, k, k, n, npt(1.0), npt(0.0)])
    wall = time.time() - t0
    flops = 2.0 * m * n * k
    tf = st.timing.tflops(flops)
    peak = board.peak_flops_f32 / (board.target.f64_rate_divisor if dtype == "f64" else 1)
    return {"m": m, "n": n, "k": k, "dtype": dtype, "board": board.name, "clock_mhz": board.engine_clock_mhz,
            "target": str(target), "modeled_us": st.timing.time_us, "tflops": tf, "peak_tflops": peak / 1e12,
            "peak_share": tf * 1e12 / peak,
            "plan": f"{li['macro_m']}x{li['macro_n']} k{li['k_step']} S1 L1", "vgprs": ck.vgprs,
            "l2_miss": dev.l2_miss, "wall_s": wall, "method": "CU 0 traced, L2 miss from tile geometry (modeled)"}


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
