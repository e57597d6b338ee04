"""Public gfx906 microbenchmark measurements against the timing model (all times **modeled**).

    python benchmarks/microbench/run.py [--gpu mi50] [--clock MHZ] [--only issue,lds] [--plot out.png]

(Not ``python -m benchmarks.microbench``: the xdsl wheel installs a top-level ``benchmarks``
package that shadows this folder.)

Discovers the suite modules in this folder (every ``*.py`` but ``run`` and ``__init__``:
:func:`vlpc.benchmarking.microbench.modules`, the suite's harness), calls each one's
``points(board)`` and prints, per point: the measured value or range, the modeled value, the
error (``Measurement.error``: 0 inside a measured range, else relative to its nearest end; relative to the value for a
single value) and the source.  Then the ratios between instruction classes (``ratios()``
of a module: means of measured and of modeled values; error = modeled ratio / measured
ratio - 1) and the goals: every point within +-10 %, every ratio within +-5 %.
``--plot`` writes a chart (modeled / measured per point, the measured range as a band).
Exit status 0 even when a goal is missed (the figures are the output).
"""

from __future__ import annotations

import argparse
import sys

from vlpc.benchmarking.microbench import (POINT_GOAL, RATIO_GOAL, SKIP, SUITE, Measurement, Point, Ratio,
                                          measurements, modules, ratio_rows)


def _row(meas: Measurement, pt: Point) -> str:
    err = meas.error(pt.modeled)
    flag = "" if abs(err) <= POINT_GOAL else "  MISS"
    return (f"{pt.id:<22} {meas.text():>12} {pt.modeled:>10.3f} {err:>+8.1%}{flag:<6} "
            f"{meas.unit}; {meas.source}")


def plot(path: str, rows: list[tuple[Measurement, Point]], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 0.42 * len(rows)), 4.2))
    xs = range(len(rows))
    for x, (m, p) in zip(xs, rows):
        ax.fill_between([x - 0.4, x + 0.4], m.low / m.mid, m.high / m.mid, color="0.85", lw=0)
        ax.plot([x], [p.modeled / m.mid], "o", color="C3" if abs(m.error(p.modeled)) > POINT_GOAL else "C0")
    ax.axhspan(0.9, 1.1, color="C2", alpha=0.12, lw=0)
    ax.axhline(1.0, color="0.4", lw=0.8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([p.id for _, p in rows], rotation=70, ha="right", fontsize=7)
    ax.set_ylabel("modeled / measured (midpoint)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", default="mi50", help="board (default mi50: the rows' device)")
    ap.add_argument("--clock", type=float, default=None, help="engine clock in MHz (default: the board's)")
    ap.add_argument("--only", default="", help="comma-separated suite modules (e.g. issue,lds)")
    ap.add_argument("--plot", default=None, help="write a chart (PNG/SVG) here")
    a = ap.parse_args(argv)
    from vlpc.targets import TargetError, get_board

    try:
        board = get_board(a.gpu, clock_mhz=a.clock)
    except TargetError as e:
        print(f"run.py: error: {e}", file=sys.stderr)
        return 2
    only = [s.strip() for s in a.only.split(",") if s.strip()] or None
    if only:
        unknown = sorted(set(only) - {p.stem for p in SUITE.glob("*.py")} | (set(only) & SKIP))
        if unknown:
            print(f"run.py: error: no suite module {', '.join(unknown)} in {SUITE.name}/", file=sys.stderr)
            return 2
    meas = measurements()
    print(f"board {board.name} at {board.engine_clock_mhz:g} MHz engine clock; modeled, not measured")
    print(f"{'id':<22} {'measured':>12} {'modeled':>10} {'error':>8}       unit; source")
    got: dict[str, Point] = {}
    rows: list[tuple[Measurement, Point]] = []
    ratios: list[Ratio] = []
    for mod in modules(only):
        for pt in mod.points(board):
            m = meas.get(pt.id)
            if m is None:
                print(f"run.py: error: {mod.__name__}.points returned {pt.id!r}, not a row of "
                      f"measurements.csv", file=sys.stderr)
                return 2
            got[pt.id] = pt
            rows.append((m, pt))
            print(_row(m, pt), flush=True)
        ratios += list(getattr(mod, "ratios", lambda: [])())
    misses = [p.id for m, p in rows if abs(m.error(p.modeled)) > POINT_GOAL]
    if ratios:
        print(f"\n{'ratio':<16} {'measured':>9} {'modeled':>9} {'error':>8}")
    rmiss = []
    for r in ratios:
        res = ratio_rows(r, meas, got)
        if res is None:
            continue
        print(f"{r.name:<16} {res[0]:>9.3f} {res[1]:>9.3f} {res[2]:>+8.1%}")
        if abs(res[2]) > RATIO_GOAL:
            rmiss.append(r.name)
    print(f"\ngoal: points within +-{POINT_GOAL:.0%}: {len(rows) - len(misses)}/{len(rows)}"
          + (f" (missed: {', '.join(misses)})" if misses else ""))
    if ratios:
        print(f"goal: class ratios within +-{RATIO_GOAL:.0%}: {len(ratios) - len(rmiss)}/{len(ratios)}"
              + (f" (missed: {', '.join(rmiss)})" if rmiss else ""))
    if a.plot and rows:
        plot(a.plot, rows, f"gfx906 microbenchmarks: modeled ({board.name}, "
                           f"{board.engine_clock_mhz:g} MHz) / measured")
        print(f"wrote {a.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
