#!/usr/bin/env python3
"""Emulator speed on vlpc's own default SGEMM kernel (64x256 macro tile, A in SGPRs).

Compiles examples/sgemm_dynamic.mlir, runs M=N in --sizes with K=640 on the
emulator through the public runtime API (strict checkers on), verifies C against
NumPy, and prints wall time and wave-instructions executed per second.
Targets (issue: runtime): 1024x1024x640 under 5 s and 4096x4096x640 under 60 s on
a 2-core machine.

Usage: python benchmarks/emulator_sgemm.py [--sizes 1024 4096] [-k 640]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import vlpc
from vlpc.runtime import get_device, load_code_object

SRC = Path(__file__).resolve().parent.parent / "examples" / "sgemm_dynamic.mlir"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1024, 4096], help="M = N values")
    ap.add_argument("-k", type=int, default=640)
    ap.add_argument("--no-check", action="store_true", help="skip the NumPy comparison")
    args = ap.parse_args()
    compiled = vlpc.compile(SRC.read_text(), "gfx906")
    kern = compiled.kernel()
    co = load_code_object(compiled.code_object)
    for mn in args.sizes:
        m = n = mn
        k = args.k
        rng = np.random.default_rng(0)
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((n, k), dtype=np.float32)
        c = np.zeros((m, n), np.float32)
        dev = get_device("emulator", strict=True)
        bufs = [dev.upload(x) for x in (a, b, c)]
        cfg = kern.launch(m, n, k)
        t = time.perf_counter()
        stats = dev.launch(co, kern.name, grid=cfg.grid, block=cfg.block,
                           args=[*bufs, np.int32(m), np.int32(n), np.int32(k), np.int32(k), np.int32(k),
                                 np.int32(n), np.float32(1.0), np.float32(0.0)])
        wall = time.perf_counter() - t
        out = dev.download(bufs[2], np.float32, (m, n))
        status = ""
        if not args.no_check:
            ref = a.astype(np.float64) @ b.astype(np.float64).T
            err = np.abs(out - ref).max() / np.abs(ref).max()
            status = f", max error / max |C| = {err:.2e}"
        print(f"SGEMM {m}x{n}x{k}: {wall:.2f} s wall, {stats.instructions:,} wave-instructions "
              f"({stats.instructions / wall / 1e6:.2f} M/s), {stats.workgroups} workgroups{status}", flush=True)


if __name__ == "__main__":
    main()
