"""vlpc's decode GEMVs against the streaming ceiling: f16, int8, GGUF Q8_0 / Q4_0 / Q4_K and int4_g128.

Every figure is **modeled** by vlpc's timing model (runtime/timing/, docs/timing_model.md), not
measured: there is no AMD GPU here.  Each row is one timing-only launch of the automatic plan
(f16/int8: made for the named board, ``vlpc.compile(..., gpu=)`` as ``vlpc bench --gpu``;
``y = x W^T``: M rows of f16 activations -- int8 for ``i8`` --, weights stored N x K) on the named
board at its stock clocks (MI50 @ 1725 MHz, MI60 @ 1800 MHz, HBM2 at 1000 MHz: pin rate 1,024 GB/s).
Printed: the modeled time (launch overhead included), the bytes that must move (weights -- f16 2
bytes a weight, int8 1, Q8_0 34 / Q4_0 18 bytes per block of 32, Q4_K 144 per 256, int4_g128 68 per
128 --, activations and the f32/i32 result) per modeled second, its share of the pin rate, of the
model's streaming ceiling (``Board.streaming_ceiling_bytes_per_second``: the HBM model's best for
a kernel that reads every byte once, one DRAM page activation per KiB) and of the **measured**
streaming ceiling, the top of the ``hbm.stream.dwordx4`` row of
``benchmarks/microbench/measurements.csv`` (867-873 GB/s, MI50, HBM2 at 1000 MHz; its source is
named there), and the same share of the model's ceiling without the modeled launch overhead
(``kernel``).  ``ABOVE`` flags a GEMV modeled above the measured ceiling (issue 32's goal: no
kernel above it; for another board or memory clock the model's ceiling is the bound).
``plan``: weight rows per workgroup / its waves (lane kernels), or the wavefront groups L and
workgroups S splitting K (SGPR kernels).  The kernels: ``lanes`` (passes/isel/gemv.py, f16/int8),
``qlanes`` (passes/isel/quant_lane.py), ``sgpr`` (passes/isel/dot.py's decode GEMV; ``--sgpr``
forces it with ``gemv = "sgpr"``) and ``quant`` (the quantized SGPR kernels).

The weights' values do not change a timing-only launch's work, so each launch quantizes 64
random rows and repeats them down the N rows (a 128256-row head in seconds, not gigabytes).

Usage::

    python benchmarks/gemv_ceiling.py --csv docs/gemv_ceiling.csv   # every format x M x shape, resumable
    python benchmarks/gemv_ceiling.py --formats f16,i8 --m 1,16 --shapes 4096x4096
    python benchmarks/gemv_ceiling.py --gpu mi60 --formats q8_0 --m 1 --shapes 128256x4096 -v
    python benchmarks/gemv_ceiling.py --sgpr --formats f16    # the SGPR decode GEMV, for comparison

Default shapes (N x K): 4096x4096, then 11008x4096 (f16/int8: issue 33's decode GEMVs) or
14336x4096 (GGUF / int4: Llama-3-8B's gate/up), and the 128256x4096 output head (Llama-3-8B).
``--csv FILE``: rows already in FILE (same board, format, M, N, K, ``--sgpr``) are printed from it,
not modeled again; each new row is appended as it comes.  One row takes 5-150 s on 2 shared cores
(the head's first round of workgroups dominates).  Exit status 0 whatever the verdict (the figures
are the output), 2 on bad input.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path


FORMATS = ("f16", "i8", "q8_0", "q4_0", "q4_k", "int4_g128")
DOT = {"f16": "f32", "i8": "i32"}  # activation / weight type -> result type
HEAD = (128256, 4096)
SHAPES = {"dot": ((4096, 4096), (11008, 4096), HEAD), "quant": ((4096, 4096), (14336, 4096), HEAD)}
FIELDS = ("gpu", "format", "m", "n", "k", "sgpr", "kernel", "plan", "us", "kernel_us", "moved_bytes",
          "weight_bytes", "gbs", "pct_pin", "pct_model_ceiling", "pct_measured_ceiling", "vgprs", "above")
TILE_ROWS = 64


def measured_ceiling(board) -> float | None:
    """The top of the measured ``hbm.stream.dwordx4`` row (bytes/s) when ``board`` runs at its
    condition (a 4096-bit HBM2 at 1000 MHz: MI50/MI60), else None."""
    from vlpc.benchmarking.microbench import measurements

    if board.hbm_bus_bits != 4096 or board.memory_clock_mhz != 1000.0:
        return None
    return measurements()["hbm.stream.dwordx4"].high * 1e9


def _weights(fmt: str, n: int, k: int):
    """N x K weights in ``fmt`` (f16 / int8 array, or the quantized rows' bytes): 64 random rows
    (quantized as vlpc.quant_run does) repeated down the N rows."""
    import numpy as np

    rng = np.random.default_rng(0)
    rows = min(n, TILE_ROWS)
    if fmt == "f16":
        tile = rng.standard_normal((rows, k)).astype(np.float16)
    elif fmt == "i8":
        tile = rng.integers(-128, 128, (rows, k)).astype(np.int8)
    else:
        from vlpc.quant_run import random_weights

        tile = random_weights(fmt, rows, k, rng)
    return np.ascontiguousarray(np.tile(tile, (-(-n // rows), 1))[:n])


def modeled(fmt: str, m: int, n: int, k: int, gpu: str = "mi50", sgpr: bool = False) -> dict:
    """One timing-only launch of the automatic plan: time, bytes moved and where the time went."""
    import numpy as np

    import vlpc
    from vlpc.benchmarking import timed_launch
    from vlpc.runtime import get_device

    dev = get_device("emulator", gpu=gpu, timing_only=True)
    rng = np.random.default_rng(1)
    w = _weights(fmt, n, k)
    if fmt in DOT:
        from vlpc.benchmarking.dot_figures import source

        ct = DOT[fmt]
        # the plan made for the board it is modeled on (as ``vlpc bench --gpu``): the M = 16 GEMV's
        # workgroups a CU follow its CUs (passes/isel/gemv.py, fewer_rounds_at_four)
        kern = vlpc.compile(source(m, n, k, fmt, ct, "sgpr" if sgpr else None), gpu=gpu).kernel("g")
        a = (rng.integers(-128, 128, (m, k)).astype(np.int8) if fmt == "i8"
             else rng.standard_normal((m, k)).astype(np.float16))
        c = np.zeros((m, n), np.int32 if fmt == "i8" else np.float32)
        scal = (np.int32(1), np.int32(0)) if fmt == "i8" else (np.float32(1), np.float32(0))
        ldb = k
        bbuf = w
    else:
        from vlpc.benchmarking.quant_gemv import source
        from vlpc.quant_run import b_buffer

        kern = vlpc.compile(source(m, n, k, fmt)).kernel("g")
        a = rng.standard_normal((m, k)).astype(np.float16)
        c = np.zeros((m, n), np.float32)
        scal = (np.float32(1), np.float32(0))
        ldb = w.shape[1]
        bbuf = b_buffer(w, n, ldb, ldb)
    st = timed_launch(kern, dev, a, bbuf, c, m, n, k, ldb, *scal)
    tm = st.timing
    li = kern.launch_info
    if fmt in DOT:
        lane = li.get("local_split", 1) == 1 and li["macro_n"] < 64
        kind = "lanes" if lane else "sgpr"
    else:
        lane = li["macro_n"] < 64 and kern.split_k == 1 and kern.local_split == 1
        kind = "qlanes" if lane else "quant"
    plan = f"{li['macro_n']}/{li['workgroup_size'] // 64}w" if lane else f"L{kern.local_split} S{kern.split_k}"
    return dict(us=tm.time_us, kernel_us=tm.time_us - tm.breakdown_us.get("launch", 0.0),
                moved_bytes=a.nbytes + w.nbytes + c.nbytes, weight_bytes=w.nbytes, kernel=kind, plan=plan,
                vgprs=kern.vgprs, where=tm.summary())


def _key(gpu: str, fmt: str, m: int, n: int, k: int, sgpr: bool) -> tuple:
    return (gpu, fmt, int(m), int(n), int(k), str(bool(sgpr)))


def _parse_shapes(text: str) -> list[tuple[int, int]]:
    out = []
    for s in text.split(","):
        try:
            n, k = (int(x) for x in s.lower().split("x"))
            if n < 1 or k < 1:
                raise ValueError
        except ValueError:
            raise ValueError(f"--shapes: {s!r} is not N x K (e.g. 4096x4096)") from None
        out.append((n, k))
    return out


def main(argv: list[str] | None = None) -> int:
    from vlpc.targets import get_board

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--formats", default=",".join(FORMATS), help=f"comma-separated among {', '.join(FORMATS)}")
    ap.add_argument("--m", default="1,4,16", help="activation rows, comma-separated")
    ap.add_argument("--shapes", help="N x K, comma-separated (default: the format's, module docstring)")
    ap.add_argument("--gpu", default="mi50", help="mi50 (1725 MHz) or mi60 (1800 MHz), HBM2 at 1000 MHz")
    ap.add_argument("--sgpr", action="store_true", help='f16/int8: the SGPR decode GEMV (gemv = "sgpr")')
    ap.add_argument("--csv", type=Path, help="append each row to this CSV; rows already there are not re-modeled")
    ap.add_argument("-v", "--verbose", action="store_true", help="also print where the modeled time goes")
    args = ap.parse_args(argv)
    try:
        formats = [f.strip() for f in args.formats.split(",") if f.strip()]
        bad = [f for f in formats if f not in FORMATS]
        if bad:
            raise ValueError(f"--formats: unknown {', '.join(bad)} (choose from {', '.join(FORMATS)})")
        try:
            ms = [int(x) for x in args.m.split(",")]
        except ValueError:
            raise ValueError(f"--m: {args.m!r} is not a comma-separated list of row counts") from None
        if min(ms) < 1:
            raise ValueError("--m: rows must be >= 1")
        shapes = _parse_shapes(args.shapes) if args.shapes else None
        board = get_board(args.gpu)
    except (ValueError, KeyError) as e:
        print(f"gemv_ceiling.py: error: {e}", file=sys.stderr)
        return 2
    pin, ceiling = board.hbm_bytes_per_second, board.streaming_ceiling_bytes_per_second
    measured = measured_ceiling(board)
    bound = measured if measured is not None else ceiling
    print(f"modeled (timing model, not measured) on {args.gpu} @ {board.engine_clock_mhz:g} MHz, HBM2 "
          f"{board.memory_clock_mhz:g} MHz: pin {pin / 1e9:.0f} GB/s, modeled streaming ceiling "
          f"{ceiling / 1e9:.0f} GB/s, measured streaming ceiling "
          + (f"{measured / 1e9:.0f} GB/s (hbm.stream.dwordx4)" if measured else "n/a on this board/clock")
          + f", launch overhead {board.timing.launch_overhead_us:g} us")
    print(f"{'format':<9} {'M':>3} {'N':>6} {'K':>6} {'kernel':<6} {'plan':<7} {'us':>8} {'GB/s':>6} {'% pin':>6} "
          f"{'% ceil':>6} {'% meas':>6} {'(kernel)':>8} {'VGPR':>4} {'wall s':>6}")
    done: dict[tuple, dict] = {}
    if args.csv and args.csv.exists():
        with open(args.csv) as f:
            for r in csv.DictReader(f):
                done[_key(r["gpu"], r["format"], r["m"], r["n"], r["k"], r["sgpr"] == "True")] = r
    out = None
    if args.csv:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        new = not args.csv.exists() or args.csv.stat().st_size == 0
        out = open(args.csv, "a", newline="")
        writer = csv.DictWriter(out, FIELDS)
        if new:
            writer.writeheader()
    above, total = [], 0
    try:
        for fmt in formats:
            for n, k in shapes or SHAPES["dot" if fmt in DOT else "quant"]:
                for m in ms:
                    key = _key(args.gpu, fmt, m, n, k, args.sgpr)
                    t0 = time.perf_counter()
                    if key in done:
                        r = done[key]
                        row = dict(r, wall="csv")
                    else:
                        r = modeled(fmt, m, n, k, args.gpu, args.sgpr)
                        rate = r["moved_bytes"] / (r["us"] * 1e-6)
                        row = dict(gpu=args.gpu, format=fmt, m=m, n=n, k=k, sgpr=args.sgpr, kernel=r["kernel"],
                                   plan=r["plan"], us=f"{r['us']:.2f}", kernel_us=f"{r['kernel_us']:.2f}",
                                   moved_bytes=r["moved_bytes"], weight_bytes=r["weight_bytes"],
                                   gbs=f"{rate / 1e9:.2f}", pct_pin=f"{100 * rate / pin:.2f}",
                                   pct_model_ceiling=f"{100 * rate / ceiling:.2f}",
                                   pct_measured_ceiling=f"{100 * rate / measured:.2f}" if measured else "",
                                   vgprs=r["vgprs"], above=rate > bound)
                        if out:
                            writer.writerow(row)
                            out.flush()
                        row["wall"] = f"{time.perf_counter() - t0:.0f}"
                    total += 1
                    rate = float(row["moved_bytes"]) / (float(row["us"]) * 1e-6)
                    kern_share = float(row["moved_bytes"]) / (float(row["kernel_us"]) * 1e-6) / ceiling
                    flag = rate > bound
                    if flag:
                        above.append(f"{fmt} {m}x{n}x{k} {rate / 1e9:.0f} GB/s")
                    meas = f"{100 * rate / measured:>5.1f}%" if measured else f"{'':>6}"
                    print(f"{fmt:<9} {m:>3} {n:>6} {k:>6} {row['kernel']:<6} {row['plan']:<7} {float(row['us']):>8.1f} "
                          f"{rate / 1e9:>6.0f} {100 * rate / pin:>5.1f}% {100 * rate / ceiling:>5.1f}% {meas} "
                          f"{100 * kern_share:>7.1f}% {row['vgprs']:>4} {row['wall']:>6}" + ("  ABOVE" if flag else ""),
                          flush=True)
                    if args.verbose and "where" in r:
                        print(f"    {r['where']}", flush=True)
    finally:
        if out:
            out.close()
    what = "measured" if measured else "modeled"
    print(f"{total - len(above)}/{total} GEMVs at or below the {what} streaming ceiling ({bound / 1e9:.0f} GB/s)"
          + (f"; ABOVE: {'; '.join(above)}" if above else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
