"""Calibrate the timing model on the seed's measured MI60 table, then predict the held-out clocks.

The seed (*An Alternative SGEMM on VEGA*, its section 3.1 table: docs/references.md) measured TFLOP/s of its 64x256 SQC
SGEMM on an MI60 (64 CUs, memory clock 800 MHz: :func:`vlpc.targets.seed_board`) at K = 640, M = N = 256..16384, at
engine clocks 1700, 1500, 1300 and 1100 MHz.  The protocol:

* the calibrated parameters (``TimingParams`` fields marked "calibrated" in
  ``vlpc/targets/``) are fitted on the **1700 MHz column only**;
* the 1500/1300/1100 MHz columns are **predictions**, reported, never fitted.

The kernel is vlpc's ``convert-gemm-to-gcn{schedule=seed}`` (the seed's loop in the
instruction order of its published ``sgemm_64x256_sqc.s``).  Steps (each cached under ``--cache``):

``collect``  compile the seed-schedule kernel for each size, run a timing-only launch on
             the emulator and keep its trace (the traced workgroups' streams and the first
             round's footprints, from which the "address" L2 rule finds each line's
             sharers) and its L2 miss probability (the earlier rules' input).
``fit``      a coordinate search on the calibrated parameters, minimising the MAPE of the
             1700 MHz column over ``FIT_SIZES`` (a subset of that column, for speed).
``report``   the model at every size and all four clocks with the parameters in
             ``vlpc/targets/`` (or ``--params FILE`` from ``fit``): predicted vs
             measured, MAPE per column, and a plot (``--plot``).

The model runs on the seed's conditions (:func:`vlpc.targets.seed_board`: MI60, the
column's engine clock, HBM2 at 800 MHz), each size on its own trace.  All figures are modeled.

Run:  ``python benchmarks/timing_calibration.py collect fit report --plot timing.png``
"""

from __future__ import annotations

import argparse
import csv
import json
import pickle
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from vlpc.benchmarking.seed import CLOCKS, K, load_measured, model_size, seed_source, seed_table, trace_size

ROOT = Path(__file__).resolve().parents[1]
#: The seed's table: beside the checkout (``../shared``), or two levels up from a worktree.
CSV = seed_table(ROOT)
#: The subset of the 1700 MHz column the fit sees (every regime: one workgroup per CU,
#: partial rounds, the 1792 dip, many rounds).
FIT_SIZES = (256, 512, 768, 1024, 1536, 1792, 2048, 2560, 3072, 4096, 6144, 8192, 12288, 16384)
#: The calibrated parameters and their search ranges.  ``hbm_latency_ns`` joins them under the
#: "address" (default) and "group" L2 rules, where single-round and many-round sizes wait on
#: it for different shares of their loads; under the "line" rule a latency in ns and one in
#: engine cycles on the same path cannot be told apart at one clock (TIMING_SOURCES).  The
#: "group" re-fit (``fit --rule group``) did not fit the 1700 MHz column better than the line
#: rule: 5.89 % against 4.60 % on the ``--fit-sizes stride4`` set (24 evaluations).
FIT_PARAMS = {
    "smem_hit_cycles": (10.0, 400.0),
    "l2_hit_cycles": (40.0, 800.0),
    "scalar_bytes_per_cycle": (1.0, 64.0),
    "launch_overhead_us": (0.0, 30.0),
}


def collect(cache: Path, sizes) -> None:
    from vlpc.targets import seed_board
    from vlpc.runtime.timing import gpu
    from tqdm import tqdm

    board = seed_board()
    cache.mkdir(parents=True, exist_ok=True)
    meta_path = cache / "sizes.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    for m in tqdm(sizes, desc="collect (emulator, timing-only launches)", file=sys.stderr):
        if str(m) in meta and (cache / f"trace_{m}.pkl").exists():
            continue
        tr, rep = trace_size(m, board)
        meta[str(m)] = {"grid": list(tr.grid), "p_l2_miss": gpu.l2_miss_probability(tr),
                        "wgs_per_cu": rep.wgs_per_cu}
        # the whole trace at every size: the L2 model decides per traced line whether
        # another CU's workgroup of the first round shares it (its own footprints)
        with open(cache / f"trace_{m}.pkl", "wb") as f:
            pickle.dump(tr, f)
        # merged with what another collect running meanwhile wrote (runs in parallel share the cache)
        meta = dict(json.loads(meta_path.read_text()) if meta_path.exists() else {}, **{str(m): meta[str(m)]})
        meta_path.write_text(json.dumps(meta, indent=1))


class Traces:
    """Each collected size's trace, loaded on first use and kept (``keep``) or not."""

    def __init__(self, cache: Path, keep: bool = True):
        self.cache, self.keep, self.d = cache, keep, {}

    def __getitem__(self, m: int):
        if m in self.d:
            return self.d[m]
        path = self.cache / f"trace_{m}.pkl"
        if not path.exists():
            path = self.cache / "trace_4096.pkl"
        tr = pickle.loads(path.read_bytes())
        if self.keep:
            self.d[m] = tr
        return tr


def predict(traces, meta, board, sizes, clock) -> dict[int, float]:
    b = board.at(engine_clock_mhz=clock)
    out = {}
    for m in sizes:
        r = model_size(traces[m], meta[str(m)], b)
        out[m] = r.tflops(2.0 * m * m * K)
    return out


def mape(pred: dict[int, float], meas: dict[int, dict[int, float]], clock: int) -> float:
    errs = [abs(pred[m] - meas[m][clock]) / meas[m][clock] for m in pred]
    return 100.0 * sum(errs) / len(errs)


def fit(cache: Path, out: Path, iters: int, fit_sizes=FIT_SIZES, rule: str | None = None,
        start: Path | None = None, first_round: int = 0) -> dict:
    """Coordinate search on :data:`FIT_PARAMS` (plus ``hbm_latency_ns`` under the "group"
    L2 rule, where the 1700 MHz column can tell it apart) minimising the 1700 MHz MAPE
    over ``fit_sizes``; writes ``out`` (JSON: the parameters, the rule, the sizes)."""
    from vlpc.targets import seed_board

    meas = load_measured(CSV)
    meta = json.loads((cache / "sizes.json").read_text())
    trace = Traces(cache)
    base = seed_board()
    if start is not None:  # start the search from an earlier fit's parameters
        base = base.at(timing=replace(base.timing, **json.loads(start.read_text())["params"]))
    if rule is not None:
        base = base.at(timing=replace(base.timing, l2_miss_rule=rule))
    space = dict(FIT_PARAMS)
    if base.timing.l2_miss_rule in ("group", "address"):
        space["hbm_latency_ns"] = (50.0, 2000.0)
    names = list(space)
    lo = np.array([space[n][0] for n in names])
    hi = np.array([space[n][1] for n in names])
    sizes = [m for m in fit_sizes if str(m) in meta]

    def unpack(x):
        return {n: float(v) for n, v in zip(names, np.clip(x, lo, hi))}

    seen = {}

    def cost(x):
        key = tuple(np.round(x, 3))
        if key in seen:
            return seen[key]
        params = unpack(x)
        b = base.at(timing=replace(base.timing, **params))
        pred = predict(trace, meta, b, sizes, 1700)
        c = mape(pred, meas, 1700)
        seen[key] = c
        print(f"  MAPE(1700) {c:6.2f}%  " + " ".join(f"{n}={v:.3g}" for n, v in params.items()),
              file=sys.stderr, flush=True)
        return c

    x0 = np.array([getattr(base.timing, n) for n in names], float)
    best = _coordinate(cost, x0, lo, hi, iters, first_round)
    params = unpack(best)
    params_out = dict(params, l2_miss_rule=base.timing.l2_miss_rule)
    out.write_text(json.dumps({"fitted_on": "1700 MHz column, sizes " + ",".join(map(str, sizes)),
                               "mape_1700_fit_sizes": cost(best), "params": params_out}, indent=1))
    print(json.dumps(params, indent=1))
    return params


def _coordinate(f, x0, lo, hi, rounds, first_round: int = 0):
    """Coordinate search: per parameter try x / s and x * s (clipped), keep the best;
    ``rounds`` passes over the parameters with s = 1.5, 1.5, 1.25, 1.125, ... (robust with
    few, slow evaluations), starting at pass ``first_round`` of that sequence (to refine
    an earlier fit given as the start)."""
    x = np.array(x0, float)
    fx = f(x)
    for r in range(first_round, first_round + max(1, rounds)):
        step = 1.0 + 0.5 / 2 ** max(0, r - 1)
        for i in range(len(x)):
            for factor in (step, 1 / step):
                y = x.copy()
                y[i] = float(np.clip(x[i] * factor, lo[i], hi[i]))
                if y[i] == x[i]:
                    continue
                fy = f(y)
                if fy < fx:
                    x, fx = y, fy
                    break
    return x


def model_key(board) -> str:
    """A digest of ``board``'s parameters and the timing model's source (``runtime/timing``,
    ``vlpc/targets/``, ``vlpc/isa``): what a cached prediction depends on besides its trace."""
    import hashlib

    h = hashlib.sha256(repr(board).encode())
    for pat in ("runtime/timing/*.py", "vlpc/targets/*.py", "vlpc/isa/*.py", "vlpc/isa/*.json"):
        for f in sorted(ROOT.glob(pat)):
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def report(cache: Path, params_file: Path | None, plot: Path | None, csv_out: Path | None,
           only: set[int] | None = None, earlier: Path | None = None) -> None:
    """Model every collected size (or ``only`` those) at the four clocks.  ``earlier``: a CSV an
    earlier ``report --csv`` wrote; its sizes this run does not model join the table with their
    modeled values as written there, and a size in both is compared (the earlier run's model must
    be this one: the comparison says whether it is)."""
    from vlpc.targets import seed_board
    from tqdm import tqdm

    meas = load_measured(CSV)
    meta = json.loads((cache / "sizes.json").read_text())
    traces = Traces(cache, keep=False)
    board = seed_board()
    if params_file is not None:
        params = json.loads(params_file.read_text())["params"]
        board = board.at(timing=replace(board.timing, **params))
    sizes = sorted(int(m) for m in meta if int(m) in meas and (only is None or int(m) in only))
    pred = {c: {} for c in CLOCKS}
    # each size's four predictions are kept in CACHE/report.json under a key of the parameters and
    # the timing model's source (a run over many sizes can be stopped and resumed; any change to
    # the model or its parameters makes new keys)
    done_path = cache / "report.json"
    done = json.loads(done_path.read_text()) if done_path.exists() else {}
    key = model_key(board)
    t0 = time.time()
    for m in tqdm(sizes, desc="model at 4 clocks", file=sys.stderr):
        got = done.get(key, {}).get(str(m))
        if got is None:
            tr = traces[m]  # one size's trace at a time (each is tens of MB)
            got = [model_size(tr, meta[str(m)], board.at(engine_clock_mhz=c)).tflops(2.0 * m * m * K) for c in CLOCKS]
            done = json.loads(done_path.read_text()) if done_path.exists() else {}
            done.setdefault(key, {})[str(m)] = got
            done_path.write_text(json.dumps(done, indent=1))
        for clock, tf in zip(CLOCKS, got):
            pred[clock][m] = tf
    secs = time.time() - t0
    taken = []
    if earlier is not None:
        with open(earlier) as f:
            rows = {int(r["m"]): r for r in csv.DictReader(f)}
        both = [m for m in sizes if m in rows]
        for m in both:
            worst = max(abs(float(rows[m][f"modeled_{c}mhz"]) - round(pred[c][m], 4)) for c in CLOCKS)
            print(f"size {m} in this run and in {earlier.name}: largest difference {worst:.4f} TFLOP/s "
                  f"({'the same model' if worst < 2e-4 else 'NOT the same model'})")
        taken = sorted(m for m in rows if m not in pred[CLOCKS[0]] and m in meas)
        for m in taken:
            for c in CLOCKS:
                pred[c][m] = float(rows[m][f"modeled_{c}mhz"])
        sizes = sorted(set(sizes) | set(taken))
        print(f"{len(taken)} sizes from {earlier.name} (an earlier run of this report), {len(sizes) - len(taken)} "
              "modeled by this run\n")
    print("Modeled (vlpc timing model, seed schedule) vs measured (An Alternative SGEMM on VEGA section 3.1) TFLOP/s,")
    print("MI60, K = 640; calibrated on the 1700 MHz column only, the other clocks are predictions.\n")
    print("| M = N | " + " | ".join(f"{c} meas | {c} model" for c in CLOCKS) + " |")
    print("|---|" + "---|" * (2 * len(CLOCKS)))
    for m in sizes:
        cells = " | ".join(f"{meas[m][c]:.3f} | {pred[c][m]:.3f}" for c in CLOCKS)
        print(f"| {m} | {cells} |")
    print()
    for c in CLOCKS:
        role = "fitted" if c == 1700 else "held out (prediction)"
        print(f"MAPE @ {c} MHz ({role}): {mape(pred[c], meas, c):.2f} %")
    print(f"\nmodel time for {len(sizes)} sizes x {len(CLOCKS)} clocks: {secs:.0f} s (sizes modeled earlier "
          f"under the same parameters and model source are read from {done_path.name})")
    if csv_out:
        with open(csv_out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["m", "n", "k"] + [f"{k}_{c}mhz" for c in CLOCKS for k in ("measured", "modeled")])
            for m in sizes:
                w.writerow([m, m, K] + [x for c in CLOCKS for x in (meas[m][c], round(pred[c][m], 4))])
    if plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(10, 5.5))
        colors = {1700: "tab:red", 1500: "tab:orange", 1300: "tab:green", 1100: "tab:blue"}
        for c in CLOCKS:
            ax.plot(sizes, [meas[m][c] for m in sizes], "o-", ms=3, color=colors[c], label=f"{c} MHz measured (seed)")
            ax.plot(sizes, [pred[c][m] for m in sizes], "--", color=colors[c],
                    label=f"{c} MHz modeled ({'fitted' if c == 1700 else 'predicted'})")
        ax.set_xlabel("M = N (K = 640)")
        ax.set_ylabel("TFLOP/s")
        ax.set_title("SGEMM 64x256 (seed schedule) on MI60: measured vs vlpc timing model (modeled)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, ncol=2)
        fig.tight_layout()
        fig.savefig(plot)
        print(f"plot: {plot}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("steps", nargs="+", choices=("collect", "fit", "report"))
    ap.add_argument("--cache", type=Path, default=ROOT / "build" / "timing_calibration")
    ap.add_argument("--params", type=Path, default=None, help="fitted parameters (JSON from fit): what report models, where fit starts")
    ap.add_argument("--iters", type=int, default=1, help="coordinate-search rounds over the parameters")
    ap.add_argument("--first-round", type=int, default=0,
                    help="start the search's step sequence (1.5, 1.5, 1.25, 1.125 ...) at this round (refining --params)")
    ap.add_argument("--sizes", default="all", help="'all' (the CSV's), 'fit' or a comma list, for collect and report")
    ap.add_argument("--plot", type=Path, default=None)
    ap.add_argument("--csv", type=Path, default=None)
    ap.add_argument("--rule", choices=("address", "line", "group"), default=None,
                    help="TimingParams.l2_miss_rule for fit (default: the one in vlpc/targets/)")
    ap.add_argument("--fit-sizes", default="fit",
                    help="sizes fit sees: 'fit' (FIT_SIZES), 'stride4' (every 4th size of the 1700 MHz "
                         "column, from 256: spread like the whole column) or a comma list")
    ap.add_argument("--out", type=Path, default=None, help="where fit writes (default CACHE/fitted.json)")
    ap.add_argument("--earlier", type=Path, default=None,
                    help="report: also the sizes of this earlier report's CSV that this run does not model")
    a = ap.parse_args(argv)
    meas = load_measured(CSV)
    if a.sizes == "all":
        sizes = sorted(meas)
    elif a.sizes == "fit":
        sizes = list(FIT_SIZES)
    else:
        sizes = [int(x) for x in a.sizes.split(",")]
    if 4096 not in sizes:
        sizes.append(4096)
    out = a.out or a.cache / "fitted.json"
    if a.fit_sizes == "fit":
        fit_sizes = FIT_SIZES
    elif a.fit_sizes == "stride4":
        fit_sizes = tuple(sorted(meas)[::4])
    else:
        fit_sizes = tuple(int(x) for x in a.fit_sizes.split(","))
    for step in a.steps:
        if step == "collect":
            collect(a.cache, sizes)
        elif step == "fit":
            fit(a.cache, out, a.iters, fit_sizes, a.rule, a.params, a.first_round)
        elif step == "report":
            report(a.cache, a.params, a.plot, a.csv, None if a.sizes == "all" else set(sizes), a.earlier)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
