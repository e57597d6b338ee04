"""How much the timing model's shortcuts cost: extrapolation and trace reuse, measured.

1. **Extrapolation.**  ``model_kernel`` simulates at most ``4 R`` of the ``ceil(W / C)``
   workgroups CU 0 receives and extrapolates the steady state.  Here the same sizes are
   also simulated in full (every workgroup CU 0 gets) and the two times compared.
2. **Speed.**  The wall time of one modeled bench point at M = N = 4096, K = 640
   (emulator timing-only launch + model), the issue's budget being 60 s.

3. **Loop sampling** (``--loop``, :mod:`vlpc.runtime.timing.sampling`).  vlpc's SGEMM at
   large K (default sizes ``LOOP_SIZES``, MI60 at its stock clocks) is traced once by a
   timing-only launch and modeled twice on that trace: whole (``loop_sample=False``) and from
   the two samples of its K loop; the error and the CPU seconds of each (``getrusage``, the emulator's workers included)
   are printed and kept in ``build/timing_shortcut/loop.json`` (resumable; ``--fresh``).

Parts 1-2 need ``python benchmarks/timing_calibration.py collect`` first (it caches the seed
schedule's 4096 trace and the per-size L2 miss probabilities).  Figures are modeled.
Run: ``python benchmarks/timing_shortcut.py`` or ``python benchmarks/timing_shortcut.py --loop``
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


#: (M, N, K) of the loop-sampling check: K loops of 128 to 512 iterations (K step 16).
LOOP_SIZES = ((512, 512, 2048), (256, 256, 8192), (512, 512, 4096), (1024, 1024, 4096), (2048, 2048, 4096),
              (4096, 4096, 4096))


def loop_point(m: int, n: int, k: int, gpu: str = "mi60") -> dict:
    """One SGEMM m x n x k of vlpc's automatic one-kernel plan on ``gpu``: its trace modeled whole
    and sampled (modeled us, CPU seconds of each model run and of the launch)."""
    import numpy as np

    import vlpc
    from vlpc.runtime.emulator.device import EmulatorDevice
    from vlpc.runtime.timing import gpu as tgpu
    from vlpc.runtime.timing import sampling
    from vlpc.targets import get_board

    from timing_calibration import seed_source  # the NT SGEMM's IR

    board = get_board(gpu)
    mod = vlpc.compile(seed_source(m, n, k), gpu=board.name, split_k=1)
    ck = mod.kernel()
    dev = EmulatorDevice(gpu=board, timing_only=True)
    bufs = [dev.alloc(m * k * 4), dev.alloc(n * k * 4), dev.alloc(m * n * 4)]
    lc = ck.launch(m, n, k)

    def cpu():  # this process's and its finished children's (the emulator's workers) CPU seconds
        import resource

        return sum(x.ru_utime + x.ru_stime for x in (resource.getrusage(resource.RUSAGE_SELF),
                                                      resource.getrusage(resource.RUSAGE_CHILDREN)))

    c0 = cpu()
    st = dev.launch(mod.code_object, ck.name, grid=lc.grid, block=lc.block,
                    args=[*bufs, m, n, k, k, k, n, np.float32(1.0), np.float32(0.0)])
    c1 = cpu()
    res = tgpu.Residency(st.timing.wgs_per_cu, st.trace.waves_per_wg, 0, "")
    loop = sampling.find_loop(st.trace)
    full = tgpu.model_kernel(st.trace, board, res, ck.name, loop_sample=False)
    c2 = cpu()
    fast = tgpu.model_kernel(st.trace, board, res, ck.name, loop_sample=True)
    c3 = cpu()
    return {"m": m, "n": n, "k": k, "board": board.name, "iterations": loop.iterations if loop else None,
            "sampled": sampling.plan(st.trace, True) is not None, "full_us": full.time_us, "sampled_us": fast.time_us,
            "error_pct": (fast.time_us / full.time_us - 1) * 100, "launch_cpu_s": c1 - c0,
            "full_cpu_s": c2 - c1, "sampled_cpu_s": c3 - c2, "samples": list(sampling.SAMPLES)}


def loop_check(sizes, fresh: bool = False) -> int:
    """Part 3 of the docstring: print the table, one row per size as it is modeled."""
    path = ROOT / "build" / "timing_shortcut" / "loop.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    done = {} if fresh or not path.exists() else json.loads(path.read_text())
    print("| M x N x K | K-loop iterations | whole model us | sampled us | error | launch CPU s | whole model CPU s "
          "| sampled CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    worst = 0.0
    for m, n, k in sizes:
        key = f"{m}x{n}x{k}"
        if key not in done:
            done[key] = loop_point(m, n, k)
            path.write_text(json.dumps(done, indent=1))
        d = done[key]
        worst = max(worst, abs(d["error_pct"]))
        print(f"| {key} | {d['iterations']} | {d['full_us']:.1f} | {d['sampled_us']:.1f} | {d['error_pct']:+.3f} % | "
              f"{d['launch_cpu_s']:.1f} | {d['full_cpu_s']:.1f} | {d['sampled_cpu_s']:.1f} |", flush=True)
    print(f"\nlargest |error| of loop sampling: {worst:.3f} % (bound 0.5 %: {'met' if worst <= 0.5 else 'NOT met'});"
          " all figures modeled")
    return 0


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loop", action="store_true", help="part 3 only: loop sampling against the whole model")
    ap.add_argument("--sizes", help="with --loop: MxNxK,... (default: LOOP_SIZES)")
    ap.add_argument("--fresh", action="store_true", help="with --loop: ignore the cached points")
    a = ap.parse_args(argv)
    if a.loop:
        sizes = ([tuple(int(v) for v in t.split("x")) for t in a.sizes.split(",")] if a.sizes else LOOP_SIZES)
        return loop_check(sizes, a.fresh)
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
