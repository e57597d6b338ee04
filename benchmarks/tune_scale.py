"""Wall time of ``vlpc tune`` at scale (issue 38): the default search of one shape, and a 20-shape
file locally and on a local 2-worker Ray cluster (identical results asserted).

    python benchmarks/tune_scale.py default     # 256x256x1024 f32 and a 16x4096x4096 f16 decode GEMV
    python benchmarks/tune_scale.py shapes      # 20 shapes: -j 2, then --ray auto (2 CPUs)
    python benchmarks/tune_scale.py all

Every run starts from an empty kernel cache and tuning database (temporary folders), so the
wall times include every compilation.  Times inside the tables are **modeled** by vlpc's timing
model (MI60, 64 CUs, 1700 MHz); the wall times are measured on this machine, whose load the
script prints (``os.getloadavg``): on a shared machine they are upper bounds, and the CPU seconds
(user + system of the command and its worker processes) over the cores bound an idle machine's
wall time.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vlpc.tune_shapes import Shape

#: The issue's two single-shape goals: vlpc's row-major M x N x K, type, layout.
DEFAULT_SHAPES = (Shape(256, 256, 1024, "f32", "NT"), Shape(16, 4096, 4096, "f16", "NT"))

#: 20 problems of a small model's serving mix (rocblas-bench lines, column-major: -m is vlpc's N).
SHAPES_FILE = "\n".join(
    [f"-f gemm -r f32_r --transposeA T --transposeB N -m {n} -n {m} -k {k}"
     for m, n, k in ((64, 256, 256), (128, 256, 512), (256, 256, 256), (64, 512, 512), (128, 128, 1024),
                     (256, 512, 256), (32, 512, 512), (192, 256, 512), (64, 1024, 256), (128, 512, 128))]
    + [f"-f gemm_ex --a_type f16_r --b_type f16_r --c_type f32_r --compute_type f32_r --transposeA T "
       f"--transposeB N -m {n} -n {m} -k {k}"
       for m, n, k in ((1, 1024, 1024), (4, 1024, 1024), (16, 1024, 1024), (1, 2048, 1024), (4, 2048, 1024),
                       (16, 512, 2048), (64, 512, 512), (128, 256, 512), (8, 1024, 512), (2, 2048, 512))]) + "\n"


def _run(argv: list[str], env: dict) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall seconds, CPU seconds (user + system of the command and the worker processes it
    waited for: not Ray's workers, which Ray starts) and the finished command."""
    import resource

    def cpu() -> float:
        u = resource.getrusage(resource.RUSAGE_CHILDREN)
        return u.ru_utime + u.ru_stime

    t0, c0 = time.monotonic(), cpu()
    r = subprocess.run([sys.executable, "-m", "vlpc.cli", *argv], capture_output=True, text=True, env=env)
    return time.monotonic() - t0, cpu() - c0, r


def _env(tmp: Path, name: str) -> dict:
    return dict(os.environ, PYTHONSAFEPATH="1", VLPC_CACHE_DIR=str(tmp / f"cache-{name}"),
                VLPC_TUNE_DB=str(tmp / f"{name}.sqlite3"))


def default() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for s in DEFAULT_SHAPES:
            f = tmp / f"{s.m}x{s.n}x{s.k}_{s.dtype}.mlir"
            f.write_text(s.mlir())
            load = os.getloadavg()[0]
            wall, cpu, r = _run(["tune", str(f), "--top", "5"], _env(tmp, f.stem))
            if r.returncode != 0:
                sys.exit(f"{s.name()}: vlpc tune failed:\n{r.stderr}")
            best = re.search(r"best \(modeled ([\d,.]+) us.*?\): (.*?); the automatic plan: ([\d,.]+) us", r.stdout)
            line = next((x for x in r.stderr.splitlines() if x.startswith("vlpc tune: [1/1]")), "")
            counts = re.search(r"(\d+) of (\d+) modeled.*?(\d+) checked", line)
            print(f"{s.name()}: wall {wall:.1f} s, CPU {cpu:.1f} s (load average {load:.1f} at the start); "
                  f"{counts[1]} of {counts[2]} candidates modeled, {counts[3]} checked; "
                  f"winner {best[2]} {best[1]} us vs the automatic plan {best[3]} us (modeled)")


def _entries(path: Path) -> list[tuple]:
    import sqlite3

    with sqlite3.connect(path) as c:
        return sorted(c.execute("SELECT m, n, k, types, layout, options, label, modeled_us, default_us FROM entries"))


def shapes() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        f = tmp / "shapes.txt"
        f.write_text(SHAPES_FILE)
        results = {}
        for name, extra in (("local", ["-j", "2"]), ("ray", ["-j", "2", "--ray", "auto"])):
            load = os.getloadavg()[0]
            wall, cpu, r = _run(["tune", "--shapes", str(f), *extra], _env(tmp, name))
            if r.returncode != 0:
                sys.exit(f"{name}: vlpc tune failed:\n{r.stderr[-3000:]}")
            results[name] = _entries(tmp / f"{name}.sqlite3")
            print(f"20 shapes, {name} ({' '.join(extra)}): wall {wall:.1f} s, CPU {cpu:.1f} s (without Ray's "
                  f"workers) (load average {load:.1f} at the start); {len(results[name])} entries")
        same = results["local"] == results["ray"]
        print(f"identical results (winner, options, modeled times of all 20): {same}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    if what in ("default", "all"):
        default()
    if what in ("shapes", "all"):
        shapes()
