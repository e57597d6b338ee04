"""Issue 33's GEMM goals at 4096^3 and 4096 x 4096 x 640, one ``vlpc bench`` point per row, every
figure **modeled** by the timing model (no GPU here).

Each point is one ``vlpc bench`` process with rocblas-bench's flags (layout NN: rocblas-bench's
column-major problem as vlpc's row-major one), or ``examples/sgemm_dynamic.mlir`` for SGEMM with
its sizes given at launch, on a board at its stock clocks (MI60 @ 1800 MHz, MI50 @ 1725 MHz,
HBM2 1000 MHz) or at the seed's condition (``--gpu mi60 --clock 1700 --memory-clock 800``).  A
point at 4096^3 takes 5-30 minutes on a shared 2-core machine, so the script is resumable: each
point is appended to the CSV as it finishes and points already there are skipped.  Goals
(% of the board's peak: f32 / f64 FMA, the f16 ``v_dot2_f32_f16`` and int8 ``v_dot4_i32_i8``
dot peaks): SGEMM and DGEMM >= 90 % at 4096^3 and >= 85 % at 4096 x 4096 x 640, HGEMM >= 85 %
and int8 >= 80 % at 4096^3.

Run::

    nice -n 10 python benchmarks/gemm_goals.py --csv gemm_goals.csv                # every point
    python benchmarks/gemm_goals.py --csv gemm_goals.csv --only h,i8 --k 640 --gpu mi60
    python benchmarks/gemm_goals.py --csv gemm_goals.csv --report                  # print the table

Exit status 0 (the figures are the output); 2 on bad input.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: kernel -> (vlpc bench arguments, the goal in % of peak at 4096^3, at K = 640)
KERNELS = {
    "s": (["-f", "gemm", "-r", "s"], 90.0, 85.0),
    "s_launch": ([str(ROOT / "examples" / "sgemm_dynamic.mlir")], 90.0, 85.0),
    "d": (["-f", "gemm", "-r", "d"], 90.0, 85.0),
    "h": (["-f", "gemm", "-r", "h"], 85.0, None),
    "i8": (["-f", "gemm_ex", "--a_type", "i8_r", "--b_type", "i8_r", "--c_type", "i32_r", "--d_type", "i32_r",
            "--compute_type", "i32_r"], 80.0, None),
}
#: board name -> vlpc bench flags
BOARDS = {
    "mi60": ["--gpu", "mi60"],
    "mi50": ["--gpu", "mi50"],
    "mi60@1700/800": ["--gpu", "mi60", "--clock", "1700", "--memory-clock", "800"],
}
FIELDS = ["kernel", "board", "m", "n", "k", "time_us", "rate", "pct_peak", "goal_pct", "where", "wall_s"]


def vlpc_command() -> str:
    """The ``vlpc`` console script of this Python (a venv's), else the one on PATH."""
    here = Path(sys.executable).parent / "vlpc"
    return str(here) if here.exists() else (shutil.which("vlpc") or "vlpc")


def parse_row(out: str) -> tuple[float, float, float, str] | None:
    """(time us, TFLOP/s or TOP/s, % of peak, where the time goes) from ``vlpc bench``'s table."""
    for line in reversed(out.splitlines()):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4:
            try:
                return float(cells[1]), float(cells[2]), float(cells[3]), cells[-1]
            except ValueError:
                continue
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", required=True, help="results file (appended; points already there are skipped)")
    ap.add_argument("--only", default=",".join(KERNELS), help=f"kernels, comma-separated ({', '.join(KERNELS)})")
    ap.add_argument("--gpu", default=",".join(BOARDS), help=f"boards, comma-separated ({', '.join(BOARDS)})")
    ap.add_argument("--k", default="4096,640", help="values of K (M = N = 4096), comma-separated")
    ap.add_argument("--report", action="store_true", help="only print the table of the CSV")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per point (default 3600)")
    args = ap.parse_args(argv)
    kernels = [x for x in args.only.split(",") if x]
    boards = [x for x in args.gpu.split(",") if x]
    bad = [x for x in kernels if x not in KERNELS] + [x for x in boards if x not in BOARDS]
    try:
        ks = [int(x) for x in args.k.split(",") if x]
    except ValueError:
        ks, bad = [], bad + [args.k]
    if bad or not ks or min(ks) < 1:
        print(f"gemm_goals.py: error: unknown kernel, board or K: {', '.join(bad) or args.k}", file=sys.stderr)
        return 2
    path = Path(args.csv)
    done = {}
    if path.exists():
        with path.open() as f:
            for row in csv.DictReader(f):
                done[(row["kernel"], row["board"], int(row["k"]))] = row
    if not args.report:
        new = not path.exists()
        for k in ks:
            for kern in kernels:
                for board in boards:
                    if (kern, board, k) in done:
                        continue
                    flags, goal_cube, goal_640 = KERNELS[kern]
                    cmd = [vlpc_command(), "bench", *flags, "-m", "4096", "-n", "4096", "-k", str(k),
                           *BOARDS[board], "-q"]
                    t0 = time.time()
                    try:
                        run = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                        got = parse_row(run.stdout) if run.returncode == 0 else None
                    except subprocess.TimeoutExpired:
                        got = None
                    if got is None:
                        print(f"{kern} {board} K={k}: no figure ({' '.join(cmd)})", file=sys.stderr)
                        continue
                    goal = goal_cube if k == 4096 else goal_640
                    row = dict(kernel=kern, board=board, m=4096, n=4096, k=k, time_us=got[0], rate=got[1],
                               pct_peak=got[2], goal_pct="" if goal is None else goal, where=got[3],
                               wall_s=round(time.time() - t0))
                    with path.open("a", newline="") as f:
                        w = csv.DictWriter(f, FIELDS)
                        if new:
                            w.writeheader()
                            new = False
                        w.writerow(row)
                    done[(kern, board, k)] = row
                    print(f"{kern} {board} 4096x4096x{k}: {got[0]} us, {got[2]} % of peak (modeled)", flush=True)
    print("| kernel | board | M x N x K | modeled us | modeled T(FL)OP/s | % of peak | goal | where the time goes |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for (kern, board, k), r in sorted(done.items(), key=lambda t: (-t[0][2], t[0][0], t[0][1])):
        goal = f">= {r['goal_pct']} %" if r["goal_pct"] else ""
        print(f"| {kern} | {board} | 4096x4096x{k} | {r['time_us']} | {r['rate']} | {r['pct_peak']} | {goal} | "
              f"{r['where']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
