"""The grouped workgroup order (``wg_group``) against the hardware's row-major order, modeled.

Each point compiles an NT GEMM M x N x K (the seed's problem, K = 640: ``seed_source``, or
``dgemm_source`` for f64) with a given macro tile, one kernel (split_k=1) and a group height G
(1: the row-major order, the kernel as before), and runs one timing-only launch of the whole
grid on the MI60 model with 64 CUs (``--gpu mi50``: 60 CUs, 1725 MHz) (:func:`vlpc.tune.evaluate`, the conditions of
``benchmarks/seed_sweep.py`` and of ``docs/seed_sweep.csv``'s vlpc column: MI60 stock clocks,
1800 MHz engine, HBM2 1000 MHz).  Every figure is **modeled** (the timing model's hashed L2
index, ``runtime/timing``), none measured.  Results are appended to
``build/wg_order/results.jsonl`` as they come, so an interrupted run resumes where it stopped.

    python benchmarks/wg_order.py --sizes 4096,12288 --groups 1,4,8,16
    python benchmarks/wg_order.py --sizes 4096 --dtype f64 --tile 16x64 --groups 1,8
    python benchmarks/wg_order.py --table          # the table of what is recorded (no runs)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "wg_order" / "results.jsonl"


def key(dtype: str, m: int, n: int, k: int, tile: tuple[int, int], group: int, gpu: str = "mi60") -> str:
    return f"{dtype} {m}x{n}x{k} {tile[0]}x{tile[1]} G{group}" + ("" if gpu == "mi60" else f" {gpu}")


def probe(dtype: str, m: int, n: int, k: int, tile: tuple[int, int], group: int, gpu: str = "mi60") -> dict:
    """One modeled point: TFLOP/s, microseconds and share of peak (``vlpc.tune.evaluate``)."""
    from vlpc import tune
    from vlpc.benchmarking.seed import dgemm_source, seed_source

    text = dgemm_source(m, n, k) if dtype == "f64" else seed_source(m, n, k)
    r = tune.evaluate(tune.Problem(text, f"{dtype}_{m}x{n}.mlir", None, None, None),
                      {"gpu": gpu, "macro_tile": tile, "split_k": 1, "wg_group": group},
                      "gfx906", gpu, None, None, check=False)
    return {"key": key(dtype, m, n, k, tile, group, gpu), "gpu": gpu, "dtype": dtype, "m": m, "n": n, "k": k,
            "tile": f"{tile[0]}x{tile[1]}", "group": group, "modeled_us": r.modeled_us, "tflops": r.tflops,
            "peak_share": r.peak_share, "plan": r.plan, "error": r.error}


def load() -> dict[str, dict]:
    if not OUT.exists():
        return {}
    rows = [json.loads(line) for line in OUT.read_text().splitlines() if line.strip()]
    return {r["key"]: r for r in rows}


def table(rows: dict[str, dict]) -> str:
    """Modeled TFLOP/s per (type, size, tile) and G, with the best G's gain over G = 1."""
    groups = sorted({r["group"] for r in rows.values()})
    def shape(r):
        return r.get("gpu", "mi60"), r["dtype"], r["m"], r["n"], r["k"], r["tile"]

    out = ["board type  M x N x K              tile   " + "".join(f"{'G' + str(g):>8}" for g in groups)
           + "    G4/G1"]
    for s in sorted({shape(r) for r in rows.values()}):
        figs = {r["group"]: r["tflops"] for r in rows.values() if shape(r) == s and not r["error"]}
        cells = "".join(f"{figs[g]:8.2f}" if g in figs else f"{'-':>8}" for g in groups)
        gain = f"{figs[4] / figs[1]:9.3f}" if 1 in figs and 4 in figs else ""
        gpu, dtype, m, n, k, tile = s
        out.append(f"{gpu:5} {dtype:5} {f'{m}x{n}x{k}':22} {tile:6} {cells}{gain}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4096,8192,10240,12288,14336,16384",
                    help="comma-separated M (= N unless -n) values (default: %(default)s)")
    ap.add_argument("--groups", default="1,4,8,16", help="group heights G (default: %(default)s)")
    ap.add_argument("--dtype", default="f32", choices=("f32", "f64"))
    ap.add_argument("--gpu", default="mi60", choices=("mi60", "mi50"), help="board, at its stock clocks and CUs")
    ap.add_argument("--tile", default="32x64", help="macro tile MxN (default: %(default)s)")
    ap.add_argument("-k", type=int, default=640, help="K (default: the seed's %(default)s)")
    ap.add_argument("-n", type=int, default=0, help="N (default: N = M, each size of --sizes)")
    ap.add_argument("--fresh", action="store_true", help="run the points again even when recorded")
    ap.add_argument("--table", action="store_true", help="print the recorded table and stop")
    a = ap.parse_args(argv)
    rows = load()
    if a.table:
        print(table(rows) if rows else "nothing recorded yet")
        return 0
    tile = tuple(int(x) for x in a.tile.lower().split("x"))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    for m in (int(x) for x in a.sizes.split(",")):
        for g in (int(x) for x in a.groups.split(",")):
            n = a.n or m
            kk = key(a.dtype, m, n, a.k, tile, g, a.gpu)
            if kk in rows and not a.fresh:
                continue
            r = probe(a.dtype, m, n, a.k, tile, g, a.gpu)  # type: ignore[arg-type]
            rows[kk] = r
            with OUT.open("a") as f:
                f.write(json.dumps(r) + "\n")
            print(f"{kk}: {r['tflops']:.2f} TFLOP/s modeled ({r['modeled_us']:.0f} us)"
                  + (f" error: {r['error']}" if r["error"] else ""), file=sys.stderr, flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
