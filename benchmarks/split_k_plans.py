"""Split-K plans on the issue's skinny shapes: verification, workgroups against the CU count,
and the extra traffic each mode costs, measured by the emulator's counters.

For each shape the automatic plan is printed, then every S in {1, 2, 4, 8, 16} runs in
both modes (S = 1 once) on the strict emulator against NumPy (``vlpc.run``); workspace
mode runs twice and the two results must be bit-identical.

    python benchmarks/split_k_plans.py                   # all four shapes (about 15 minutes)
    python benchmarks/split_k_plans.py --shapes 256x256x8192 --splits 2 4
    python benchmarks/split_k_plans.py --cus 64          # the plan for an MI60

Columns: workgroups launched by the plan (all kernels) and per CU; global bytes read and
written (the emulator's VMEM+SMEM counters); the extra bytes against S = 1; the maximum
error relative to the tolerance of ``vlpc run``.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import vlpc
from vlpc.verify import tolerance

SHAPES = ((256, 256, 8192), (64, 64, 16384), (128, 4096, 4096), (4096, 128, 4096))


def source(m: int, n: int, k: int) -> str:
    t = f"memref<{m}x{k}xf32>", f"memref<{n}x{k}xf32>", f"memref<{m}x{n}xf32>"
    return (f"func.func @sgemm(%a: {t[0]}, %b: {t[1]}, %c: {t[2]}, %alpha: f32, %beta: f32) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"}} : {t[0]}, {t[1]}, {t[2]}, f32, f32\n"
            "  func.return\n}\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="*", default=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
    ap.add_argument("--splits", nargs="*", type=int, default=[2, 4, 8, 16])
    ap.add_argument("--cus", type=int, default=60)
    args = ap.parse_args()
    print("| shape | plan | S | workgroups (per CU) | global bytes read | written | extra vs S=1 | "
          "max err / tolerance | emulator s |")
    print("|---|---|---|---|---|---|---|---|---|")
    failures = 0
    for text in args.shapes:
        m, n, k = (int(x) for x in text.split("x"))
        src = source(m, n, k)
        auto = vlpc.compile(src, cus=args.cus).kernel()
        print(f"| {text} | auto on {args.cus} CUs | {auto.split_k} | "
              f"{sum(np.prod(s.grid) for s in auto.plan(m, n, k))} | | | | | |", flush=True)
        rng = np.random.default_rng(0)
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((n, k)).astype(np.float32)
        c = rng.standard_normal((m, n)).astype(np.float32)
        base = None
        plans = [(1, "none")] + [(s, mode) for mode in ("workspace", "atomic") for s in args.splits]
        for s, mode in plans:
            kern = vlpc.compile(src, split_k=s, split_mode=mode if s > 1 else "workspace", cus=args.cus).kernel()
            t0 = time.perf_counter()
            r = vlpc.run(kern, a=a, b=b, c=c, alpha=1.0, beta=0.5, strict=True, verify=False)
            wall = time.perf_counter() - t0
            ref = (a.astype(np.float64) @ b.astype(np.float64).T) + 0.5 * c
            tol = tolerance(a, b, c, 1.0, 0.5, k, "f32")
            ratio = float((np.abs(r.c.astype(np.float64) - ref) / tol).max())
            ok = ratio <= 1.0
            note = ""
            if mode == "workspace" and s > 1:
                again = vlpc.run(kern, a=a, b=b, c=c, alpha=1.0, beta=0.5, strict=True, verify=False)
                same = np.array_equal(r.c, again.c)
                note = ", bit-identical rerun" if same else ", RERUN DIFFERS"
                ok = ok and same
            failures += not ok
            st = r.stats
            wgs = sum(int(np.prod(step.grid)) for step in kern.plan(m, n, k))
            total = st.global_bytes_read + st.global_bytes_written
            if base is None:
                base = total
            print(f"| {text} | {mode if s > 1 else 'unsplit'} | {s} | {wgs} ({wgs / args.cus:.2f}) | "
                  f"{st.global_bytes_read:,} | {st.global_bytes_written:,} | {total - base:+,} | "
                  f"{ratio:.1e}{'' if ok else ' FAIL'}{note} | {wall:.1f} |", flush=True)
    if failures:
        print(f"{failures} plan(s) failed", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
