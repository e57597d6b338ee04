"""How much the timing model's shortcuts cost: extrapolation and trace reuse, measured.

1. **Extrapolation.**  ``model_kernel`` simulates at most ``4 R`` of the ``ceil(W / C)``
   workgroups CU 0 receives and extrapolates the steady state.  Here the same sizes are
   also simulated in full (every workgroup CU 0 gets) and the two times compared.
2. **Speed.**  The wall time of one modeled bench point at M = N = 4096, K = 640
   (emulator timing-only launch + model), the issue's budget being 60 s.

Needs ``python benchmarks/timing_calibration.py collect`` first (it caches the seed
schedule's 4096 trace and the per-size L2 miss probabilities).  Figures are modeled.
Run: ``python benchmarks/timing_shortcut.py``
"""

from __future__ import annotations

import json
import pickle
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from vlpc.benchmarking.seed import K, model_size, trace_size  # noqa: E402

SIZES = (2048, 2560, 3072, 4096)


def main() -> int:
    from vlpc.targets import get_board

    cache = ROOT / "build" / "timing_calibration"
    meta = json.loads((cache / "sizes.json").read_text())
    trace = pickle.loads((cache / "trace_4096.pkl").read_bytes())
    board = get_board("mi60")
    print("| M = N | workgroups per CU | shortcut us | full us | error | shortcut s | full s |")
    print("|---|---|---|---|---|---|---|")
    for m in SIZES:
        if str(m) not in meta:
            continue
        md = meta[str(m)]
        n0 = -(-md["grid"][0] * md["grid"][1] // board.compute_units)
        t0 = time.time()
        short = model_size(trace, md, board)
        t1 = time.time()
        full = model_size(trace, md, board, max_simulated=n0)
        t2 = time.time()
        err = (short.time_us - full.time_us) / full.time_us * 100
        print(f"| {m} | {n0} | {short.time_us:.1f} | {full.time_us:.1f} | {err:+.2f} % | "
              f"{t1 - t0:.1f} | {t2 - t1:.1f} |", flush=True)
    t0 = time.time()
    _, rep = trace_size(4096, board)
    print(f"\none modeled bench point, 4096x4096x640 (timing-only launch + model): {time.time() - t0:.1f} s "
          f"wall; modeled {rep.time_us:.0f} us = {rep.tflops(2.0 * 4096 * 4096 * K):.2f} TFLOP/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
