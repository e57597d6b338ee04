"""The automatic plan against the best plan `vlpc tune`'s search finds, at 20 shapes, on MI50 and MI60.

    python benchmarks/plan_choice.py                 # every shape, both boards (hours on 2 cores)
    python benchmarks/plan_choice.py --only 1,8,14   # shapes by number (the table's first column)
    python benchmarks/plan_choice.py --gpu mi60 --max-candidates 12 -j 2

For each board (MI50 @ 1725 MHz, 60 CUs; MI60 @ 1800 MHz, 64 CUs: the boards' defaults) the
shapes go through ``vlpc tune --shapes FILE --no-check`` (the search of docs/tuning.md: the plan
model orders the candidates, the timing model times them, the automatic plan is a candidate of
its own) with a fresh tuning database, and the table prints, per shape, the automatic plan's
modeled time, the best plan found and the gap (automatic / best - 1).  The goal (issue 33): the
automatic plan within 1 % of the best at every shape.  Every time is **modeled** (vlpc's timing
model), not measured.  ``--max-candidates`` bounds each search (the best found is then a lower
bound of what a full search finds: the gap is a lower bound too); the shapes are vlpc's row-major
``M x N x K``, layout NT (A M x K, B N x K), written as rocblas-bench lines (column-major: M and N
swapped, ``--transposeA T --transposeB N``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: (M, N, K, type): square, skinny and decode shapes of f32, f64, f16 (C f32) and int8 (C i32).
SHAPES = [
    (1024, 1024, 1024, "f32"), (2048, 2048, 640, "f32"), (4096, 4096, 640, "f32"), (4096, 4096, 4096, "f32"),
    (128, 4096, 4096, "f32"), (4096, 128, 4096, "f32"), (256, 256, 8192, "f32"),
    (1024, 1024, 1024, "f64"), (2048, 2048, 640, "f64"), (64, 1024, 8192, "f64"),
    (1024, 1024, 1024, "f16"), (4096, 4096, 4096, "f16"), (512, 4096, 4096, "f16"),
    (1, 4096, 4096, "f16"), (16, 4096, 4096, "f16"), (16, 11008, 4096, "f16"),
    (1024, 1024, 1024, "i8"), (4096, 4096, 4096, "i8"), (4, 4096, 4096, "i8"), (16, 11008, 4096, "i8"),
]
BOARDS = ("mi50", "mi60")
TYPES = {"f32": "-f gemm -r f32_r", "f64": "-f gemm -r f64_r",
         "f16": "-f gemm_ex --a_type f16_r --b_type f16_r --c_type f32_r --compute_type f32_r",
         "i8": "-f gemm_ex --a_type i8_r --b_type i8_r --c_type i32_r --compute_type i32_r"}
GOAL = 0.01


def rocblas_line(m: int, n: int, k: int, dt: str) -> str:
    """vlpc's NT M x N x K as rocblas-bench's column-major problem (docs/tuning.md, Many shapes)."""
    return f"{TYPES[dt]} --transposeA T --transposeB N -m {n} -n {m} -k {k}"


def tune(shapes: list, gpu: str, jobs: int, max_candidates: int | None) -> list[dict]:
    """``vlpc tune --shapes`` on ``shapes`` for ``gpu`` (no check, a fresh database): its JSON list."""
    with tempfile.TemporaryDirectory() as d:
        f, out = Path(d, "shapes.txt"), Path(d, "out.json")
        f.write_text("".join(rocblas_line(*s) + "\n" for s in shapes))
        cmd = [str(Path(sys.executable).with_name("vlpc")), "tune", "--shapes", str(f), "--gpu", gpu, "--no-check", "-o", str(out),
               "-j", str(jobs), "--db", str(Path(d, "tune.sqlite3"))]
        if max_candidates:
            cmd += ["--max-candidates", str(max_candidates)]
        r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "VLPC_EMU_PROCS": "1"})
        if r.returncode != 0:
            raise SystemExit(f"plan_choice: vlpc tune failed for {gpu}: {r.stderr.strip().splitlines()[-1:]}")
        data = json.loads(out.read_text()) if out.exists() else []
        return data if isinstance(data, list) else [data]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated shape numbers (1..20)")
    ap.add_argument("--gpu", choices=BOARDS, action="append", help="a board (default: both)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--max-candidates", type=int, default=None)
    a = ap.parse_args(argv)
    picked = [int(x) for x in a.only.split(",")] if a.only else list(range(1, len(SHAPES) + 1))
    shapes = [SHAPES[i - 1] for i in picked]
    print("| # | shape | type | board | automatic plan us | best found us | best plan | gap |")
    print("|---:|---|---|---|---:|---:|---|---:|")
    worst = 0.0
    for gpu in a.gpu or BOARDS:
        res = tune(shapes, gpu, a.jobs, a.max_candidates)
        by = {(r["problem"]["m"], r["problem"]["n"], r["problem"]["k"], r["problem"]["dtype"]): r for r in res}
        for i, (m, n, k, dt) in zip(picked, shapes):
            r = by.get((m, n, k, dt))
            if r is None:
                print(f"| {i} | {m}x{n}x{k} | {dt} | {gpu} | | | not tuned | |")
                continue
            auto, best = r["automatic_plan_us"], r["modeled_us"]
            gap = auto / best - 1 if auto and best else float("nan")
            worst = max(worst, gap)
            print(f"| {i} | {m}x{n}x{k} | {dt} | {gpu} | {auto:,.1f} | {best:,.1f} | {r['flags'] or 'automatic'} | "
                  f"{gap * 100:+.1f} %{'' if gap <= GOAL else ' (goal 1 % NOT met)'} |", flush=True)
    print(f"\nlargest gap: {worst * 100:.1f} % (goal: within {GOAL * 100:.0f} % at every shape; all modeled)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
