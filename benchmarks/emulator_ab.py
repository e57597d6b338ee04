#!/usr/bin/env python3
"""Same-run A/B of emulator speed: the working tree's emulator against the one of a git
revision, on benchmarks/emulator_sgemm.py's workload (vlpc's default SGEMM kernel,
examples/sgemm_dynamic.mlir, M = N = --size, K = 640, strict checkers on).

The revision's ``runtime/emulator`` is extracted (``git archive``) into a temporary
directory and imported as a separate package, so both emulators run in one process on
the same compiled kernel, alternating launch by launch (which one goes first alternates
too); C is checked against NumPy after every launch.  Reported: median and best wall
time and CPU time (the process's threads and its forked emulator workers) per launch, and
the after/before ratios.  ``--n`` gives N apart from M (a ragged N leaves lanes outside
EXEC at the right edge).  The machine is shared, so prefer the medians of several
repetitions.

Usage: python benchmarks/emulator_ab.py [--before REV] [--size 1024] [--n N] [--reps 8]
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import resource
import statistics as st
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "examples" / "sgemm_dynamic.mlir"


def load_revision(rev: str, tmp: Path):
    """The EmulatorDevice class of ``rev``'s runtime/emulator (package ``emu_before``)."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "runtime/emulator"],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(tmp, filter="data")
    pkg = tmp / "runtime" / "emulator"
    spec = importlib.util.spec_from_file_location("emu_before", pkg / "__init__.py",
                                                  submodule_search_locations=[str(pkg)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["emu_before"] = mod
    spec.loader.exec_module(mod)
    from emu_before.device import EmulatorDevice
    return EmulatorDevice


def _cpu() -> float:
    """CPU seconds of this process and of its reaped children (the forked emulator workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="HEAD", help="git revision of the 'before' emulator (default: HEAD)")
    ap.add_argument("--size", type=int, default=1024, help="M = N (default: %(default)s)")
    ap.add_argument("--n", type=int, default=None, help="N (default: --size)")
    ap.add_argument("-k", type=int, default=640)
    ap.add_argument("--reps", type=int, default=8, help="launches per emulator (default: %(default)s)")
    args = ap.parse_args()

    import vlpc
    from vlpc.runtime import load_code_object
    from vlpc.runtime.emulator.device import EmulatorDevice as After

    with tempfile.TemporaryDirectory(prefix="vlpc-ab-") as tmp:
        Before = load_revision(args.before, Path(tmp))
        compiled = vlpc.compile(SRC.read_text(), "gfx906")
        kern = compiled.kernel()
        co = load_code_object(compiled.code_object)
        m = args.size
        n = args.n or args.size
        k = args.k
        rng = np.random.default_rng(0)
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((n, k), dtype=np.float32)
        ref = a.astype(np.float64) @ b.astype(np.float64).T
        cpu: dict[str, list[float]] = {"before": [], "after": []}
        wall: dict[str, list[float]] = {"before": [], "after": []}
        for r in range(args.reps):
            order = (("before", Before), ("after", After)) if r % 2 else (("after", After), ("before", Before))
            for name, cls in order:
                dev = cls(strict=True)
                bufs = [dev.upload(x) for x in (a, b, np.zeros((m, n), np.float32))]
                cfg = kern.launch(m, n, k)
                t0, c0 = time.perf_counter(), _cpu()
                dev.launch(co, kern.name, grid=cfg.grid, block=cfg.block,
                           args=[*bufs, np.int32(m), np.int32(n), np.int32(k), np.int32(k), np.int32(k),
                                 np.int32(n), np.float32(1.0), np.float32(0.0)])
                c1, t1 = _cpu(), time.perf_counter()
                out = dev.download(bufs[2], np.float32, (m, n))
                err = np.abs(out - ref).max() / np.abs(ref).max()
                if not err < 1e-5:
                    raise SystemExit(f"{name}: wrong result (max error / max |C| = {err:.2e})")
                cpu[name].append(c1 - c0)
                wall[name].append(t1 - t0)
                print(f"{name:6s} SGEMM {m}x{n}x{k}: wall {t1 - t0:.2f} s, CPU {c1 - c0:.2f} s", flush=True)
    for label, d in (("wall", wall), ("CPU", cpu)):
        mb, ma = st.median(d["before"]), st.median(d["after"])
        print(f"{label}: median before {mb:.3f} s, after {ma:.3f} s, after/before {ma / mb:.3f} "
              f"(best: {min(d['after']) / min(d['before']):.3f})")


if __name__ == "__main__":
    main()
