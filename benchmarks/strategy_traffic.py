"""The register/LDS/barrier traffic of the two strategies at larger sizes (the rows of `vlpc report`).

Usage: python benchmarks/strategy_traffic.py [--sizes 256x512x640,1024x1024x640] [--markdown DIR]

For each M x N x K both kernels (sqc and the legacy lds) are compiled, executed on
the strict emulator and verified; the table gives, per 64x256 macro tile and per k,
the VGPR read/write traffic (forwarded reads excluded), the ratio legacy/sqc, the
same ratio with the seed's accounting of forwarded accumulator chains, LDS traffic,
barriers and occupancy.  The seed's numbers: 68,416 / 20,864 = 3.28.  With
``--markdown DIR`` the full report of each size is written there too.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from vlpc.report import SEED, build_report


def source(m: int, n: int, k: int) -> str:
    a, b, c = f"memref<{m}x{k}xf32>", f"memref<{n}x{k}xf32>", f"memref<{m}x{n}xf32>"
    return f"""builtin.module {{
  func.func @sgemm(%a: {a}, %b: {b}, %c: {c}, %alpha: f32, %beta: f32) {{
    gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "NT"}} : {a}, {b}, {c}, f32, f32
    func.return
  }}
}}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="256x512x640,1024x1024x640")
    ap.add_argument("--markdown", help="directory for the full report of each size")
    args = ap.parse_args()
    seed_ratio = SEED["vgpr_rw"]["lds"] / SEED["vgpr_rw"]["sqc"]
    print("| M x N x K | VGPR r/w legacy | VGPR r/w sqc | legacy/sqc | with the seed's accounting | "
          "LDS r/w legacy | barriers legacy | occupancy legacy / sqc | verified | seconds |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|---:|")
    for size in args.sizes.split(","):
        m, n, k = (int(x) for x in size.lower().split("x"))
        t0 = time.perf_counter()
        rep = build_report(source(m, n, k), f"{size}.mlir", ["lds", "sqc"])
        lds, sqc = rep.by("lds"), rep.by("sqc")
        print(f"| {m} x {n} x {k} | {lds.rows['vgpr_rw']:,.0f} | {sqc.rows['vgpr_rw']:,.0f} | "
              f"{rep.ratio('vgpr_rw'):.2f} | {rep.ratio('vgpr_rw_elided'):.2f} | {lds.rows['lds_rw']:,.0f} | "
              f"{lds.rows['barrier']:.3f} | {lds.occupancy.waves_per_simd} / {sqc.occupancy.waves_per_simd} | "
              f"{'yes' if lds.verified and sqc.verified else 'NO'} | {time.perf_counter() - t0:.0f} |", flush=True)
        if args.markdown:
            Path(args.markdown).mkdir(parents=True, exist_ok=True)
            (Path(args.markdown) / f"report_{size}.md").write_text(rep.markdown())
    print(f"\nAn Alternative SGEMM on VEGA, section 2.11: 68,416 / 20,864 = {seed_ratio:.2f}")


if __name__ == "__main__":
    main()
