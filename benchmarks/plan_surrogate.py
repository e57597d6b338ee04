"""Fit the plan surrogate (vlpc/plan_model.py) to the timing model, and measure its error and the auto plan's.

    python benchmarks/plan_surrogate.py fit       # timing-model runs per kernel variant -> vlpc/plan_model.json
    python benchmarks/plan_surrogate.py fit --missing  # only the variants / local split types the file lacks
    python benchmarks/plan_surrogate.py fit-dot   # only the f16/int8 dot variants (K steps 16 and 8), their
                                                  # reduce share and local split term; f32 kept
    python benchmarks/plan_surrogate.py fit-local # only the local split term (f32, f16, int8: 3 runs)
    python benchmarks/plan_surrogate.py fit-reduce # only the f32/f64 reduce kernel's bandwidth share and
                                                  # load waits (3 runs, REDUCE_FIT)
    python benchmarks/plan_surrogate.py terms     # issue 33's busiest-SIMD term: timing model vs surrogate
    python benchmarks/plan_surrogate.py report    # surrogate vs timing model on shapes it was not fitted on;
                                                  # auto plan vs the best tuned plan on the skinny shapes

``fit`` runs, for each kernel variant (element type, macro tile, K step), three timing-only
launches on MI60 at its default clocks (1800 MHz engine, 1000 MHz memory; 64 CUs): one workgroup per CU at K = 640 and K = 1280 (the
slope gives the lone wave's cost per K step, the intercept the prologue/epilogue) and R
workgroups per CU at K = 640 (the cost per step when waves compete).  It also fits the
reduce kernel's share of the HBM bandwidth on one split plan and its load waits on two of few reduce
workgroups (``REDUCE_FIT``; ``fit-reduce`` alone).  The f16 and int8 dot kernels
(``DOT_VARIANTS``: C f32 / i32, K in dwords of packed K, so K = 640 and 1280 dwords are 1280 /
2560 f16 and 2560 / 5120 int8 values) get their own variants and reduce share
(``reduce_efficiency_dot``) from their own runs only; their error against the model and the
automatic S against the model's best: ``benchmarks/dot_split_k_auto.py``.  Results are cached in
build/plan_surrogate, stamped with a hash of vlpc's Python sources (:func:`code_version`):
runs from other code are run again (``--fresh`` forces it; the whole fit takes about 5
minutes on 2 cores).  Every figure is **modeled** (the timing model is the reference here;
its own accuracy against the seed's measurements is benchmarks/timing_calibration.py's).

``report`` prints (a) the surrogate's error against the timing model for explicit plans on
shapes outside the fit (MAPE), and (b) issue 19's skinny-shape goal: the automatic plan's
modeled time against the best of ``vlpc tune``'s candidates (all modeled), within 5 %.
``report --quick`` prints (a) on the small shapes only (``QUICK``); ``--gpu mi50`` reports on
the MI50 (1725 MHz, 60 CUs) with the MI60's fit.  Refit on the corrected timing model (issue 33),
``report --quick``: MAPE 4.3 % (worst 14.5 %) over 10 plans on MI60 with issue 33's terms (the
busiest SIMD, the reduce waits) on the current timing model; 3.2 % (worst 9.0 %) on MI50 (the fit
before the A touch, an earlier timing model; not re-run).  After a kernel change the refit
is one command, ``python benchmarks/plan_surrogate.py fit`` (about 25 minutes on a loaded 2-core
machine before issue 33's 16-row dot and f32 K step 8 variants, about 40 with them); then the lit and test pins of automatic plans that move are updated with
the reason.

Resumable: every timing-model run is kept in build/plan_surrogate/runs.json as it finishes, keyed by
a hash of vlpc's sources (the plan choice's own modules left out: an edit there does not drop the
runs), so an interrupted ``fit`` run again redoes only the runs it had not finished, and writes
vlpc/plan_model.json (which the plan model loads) at the end.  ``fit --missing`` fits only what
the file lacks (a variant added to ``VARIANTS`` / ``DOT_VARIANTS``, a local split type), the rest
kept.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "vlpc" / "plan_model.json"

# the fit's variants, shapes and timing-model runs (shared with dot_split_k_auto.py)
from vlpc.benchmarking.plan_runs import (  # noqa: E402,F401
    BOARD, CUS, CACHE, DOT_C, DOT_VARIANTS, GX, K1, K2, LOCAL_FIT, LOCAL_FIT_F64, LOCAL_TYPES, PACK, QUICK, SKINNY, VALIDATE,
    VARIANTS, code_version, explicit, run, run_all, source)


def fit(procs: int, dot_only: bool = False, missing: bool = False) -> dict:
    """Fit every variant (VARIANTS + DOT_VARIANTS), both reduce shares and the local split term,
    and write OUT; ``dot_only`` (step ``fit-dot``): only DOT_VARIANTS, ``reduce_efficiency_dot``
    and the local split term, the f32/f64 variants and ``reduce_efficiency`` kept from OUT;
    ``missing`` (``fit --missing``): only the variants and local split types OUT lacks (a list
    extended by a variant), everything else kept from OUT."""
    from vlpc.targets import get_board
    from vlpc.plan_model import valu_cycles, variant_key

    if missing:
        old = json.loads(OUT.read_text())
        todo = [v for v in VARIANTS + DOT_VARIANTS if variant_key(v[0], v[1:3], v[3]) not in old["variants"]]
        out = fit_variants(procs, todo, old, reduce=False)
        fit_local(procs, out, [t for t in LOCAL_TYPES if t not in out.get("local_reduce_cycles_per_row", {})
                               or t not in out.get("local_wave_scale", {})])
        OUT.write_text(json.dumps(out, indent=1) + "\n")
        print(json.dumps(out, indent=1))
        return out
    old = json.loads(OUT.read_text()) if dot_only else None
    out = fit_variants(procs, DOT_VARIANTS if dot_only else VARIANTS + DOT_VARIANTS, old, reduce=True, f32=not dot_only)
    fit_local(procs, out)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return out


def fit_variants(procs: int, variants: list, old: dict | None, reduce: bool = True, f32: bool = True) -> dict:
    """The fit of ``variants`` (and with ``reduce`` the reduce shares: ``f32`` the sqc kernel's as well
    as the dot kernels'), over ``old``'s (a fit's dict, or None): its other variants, reduce shares and
    local split term kept."""
    from vlpc.targets import get_board
    from vlpc.plan_model import valu_cycles, variant_key

    board = get_board(BOARD)
    mhz, launch = board.engine_clock_mhz, board.timing.launch_overhead_us
    # R comes from the first run of each variant (its occupancy), so run the lone-workgroup shapes first
    def key(dt, mm, mn, ks, m, n, k):
        return f"{dt}-{mm}x{mn}-k{ks}-{m}x{n}x{k}"

    def lone(dt, mm, mn, ks, k):  # one workgroup per CU; k in K units (dwords for f16/i8)
        return (mm * CUS // GX, mn * GX, k * PACK.get(dt, 1))

    first = []
    for dt, mm, mn, ks in variants:
        for kk in (K1, K2):
            shape = lone(dt, mm, mn, ks, kk)
            first.append((key(dt, mm, mn, ks, *shape), (*shape, dt), explicit(mm, mn, ks)))
    cache = run_all(first, procs)
    second, full = [], {}
    for dt, mm, mn, ks in variants:
        R = cache[key(dt, mm, mn, ks, *lone(dt, mm, mn, ks, K1))]["wgs_per_cu"]
        shape = (mm * R * CUS // GX, mn * GX, K1 * PACK.get(dt, 1))
        full[(dt, mm, mn, ks)] = key(dt, mm, mn, ks, *shape)
        second.append((full[(dt, mm, mn, ks)], (*shape, dt), explicit(mm, mn, ks)))
    # the reduce kernel (C read: beta 1): its bandwidth share on a split plan of 8 reduce workgroups per CU,
    # and its load waits (plan_model.reduce_waits) on two of one workgroup per CU or fewer
    if reduce and f32:
        second += [(key, shape, explicit(32, 64, 16, s) | {"beta": 1.0}) for key, shape, s in REDUCE_FIT]
    # the dot kernels' reduce (f32 partials summed into an f32 C): its own share
    if reduce:
        second.append(("reduce-dot-512x512x4096-f16-S4", (512, 512, 4096, "f16"), explicit(32, 256, 16, 4)))
    cache = run_all(second, procs)
    out = {"fitted_on": f"timing model, {BOARD} @ {mhz:.0f} MHz, {CUS} CUs (benchmarks/plan_surrogate.py fit)",
           "variants": {}}
    if old is not None:  # the variants not refitted, the reduce shares and the local split term as they are
        out = {k: v for k, v in old.items()}
        names = {variant_key(dt, (mm, mn), ks) for dt, mm, mn, ks in variants}
        out["variants"] = {k: v for k, v in old["variants"].items() if k not in names}
        if not f32:
            out["variants"] = {k: v for k, v in out["variants"].items() if k.split()[0] not in DOT_C}
        note = "; dot variants refitted by `fit-dot`" if not f32 else f"; {len(names)} variants added by `fit --missing`"
        if variants and note not in out["fitted_on"]:
            out["fitted_on"] += note
    for dt, mm, mn, ks in variants:
        a = cache[key(dt, mm, mn, ks, *lone(dt, mm, mn, ks, K1))]
        c = cache[key(dt, mm, mn, ks, *lone(dt, mm, mn, ks, K2))]
        b = cache[full[(dt, mm, mn, ks)]]
        if any(x["us"] is None for x in (a, b, c)):
            print(f"skipping {dt} {mm}x{mn} k{ks}: {a['error'] or b['error'] or c['error']}", file=sys.stderr)
            continue
        da, dc, db = ((x["us"] - launch) * mhz for x in (a, c, b))
        sa, sc = K1 // ks, K2 // ks
        slope = (dc - da) / (sc - sa)
        v = valu_cycles(dt, mm, ks, board)
        w = max(1, mn // 64) / 4  # waves of a workgroup per SIMD
        R = a["wgs_per_cu"]
        lat = max(0.0, slope - v)
        fixed = max(0.0, da - sa * slope)
        per_step_R = max(0.0, (db - fixed) / sa)
        per_wave = max(v, per_step_R / (R * w))
        out["variants"][variant_key(dt, (mm, mn), ks)] = {
            "macro_m": mm, "macro_n": mn, "fixed": round(fixed, 1), "latency": round(lat, 1),
            "per_wave_ratio": round(per_wave / v, 4), "wgs_per_cu": R}
    if reduce and f32:
        out.update(fit_reduce(cache, board))
    red = cache["reduce-dot-512x512x4096-f16-S4"] if reduce else {"us": None}
    if red["us"] is not None and len(red["parts_us"]) == 2:
        moved = (4 * 4 + 4) * 512 * 512  # beta = 0: 4 f32 partials read, f32 C written
        t = (red["parts_us"][1] - launch) * 1e-6
        out["reduce_efficiency_dot"] = round(min(1.0, moved / board.hbm_bytes_per_second / t), 4) if t > 0 else 1.0
    return out


#: The reduce kernel's fit runs (key, (M, N, K, type), S), 32x64 tiles, beta 1: the bandwidth share on
#: the first (512 reduce workgroups, 8 per CU), the load waits' cycles on the other two (32 workgroups).
REDUCE_FIT = [("reduce-bw-f32-1024x1024x1024-32x64-S4-beta1", (1024, 1024, 1024, "f32"), 4),
              ("reduce-lat-f32-256x256x4096-32x64-S4-beta1", (256, 256, 4096, "f32"), 4),
              ("reduce-lat-f32-256x256x4096-32x64-S16-beta1", (256, 256, 4096, "f32"), 16)]


def fit_reduce(cache: dict, board) -> dict:
    """``reduce_efficiency`` (the reduce kernel's share of the HBM bandwidth: S partials and C read, C
    written, on REDUCE_FIT's first run) and ``reduce_latency_cycles`` (``fixed`` + ``per_wait`` x
    :func:`vlpc.plan_model.reduce_waits`, engine cycles, from the other two) of the f32/f64 sqc kernel's
    reduce kernel, from the runs in ``cache``; {} for a run that failed."""
    from vlpc.plan_model import reduce_waits

    mhz, launch = board.engine_clock_mhz, board.timing.launch_overhead_us
    runs = [(cache.get(key, {"us": None}), shape, s) for key, shape, s in REDUCE_FIT]
    if any(r["us"] is None or len(r["parts_us"]) != 2 for r, _, _ in runs):
        print("skipping the reduce kernel's fit: a run failed", file=sys.stderr)
        return {}
    out = {}
    (r, (m, n, _, _), s) = runs[0]
    moved = (s + 2) * m * n * 4  # beta != 0: S partials and C read, C written
    t = (r["parts_us"][1] - launch) * 1e-6
    out["reduce_efficiency"] = round(min(1.0, moved / board.hbm_bytes_per_second / t), 4)
    (a, _, sa), (b, _, sb) = runs[1:]
    wa, wb = reduce_waits("f32", 32, sa), reduce_waits("f32", 32, sb)
    ca, cb = ((x["parts_us"][1] - launch) * mhz for x in (a, b))
    per_wait = (cb - ca) / (wb - wa)
    out["reduce_latency_cycles"] = {"fixed": round(max(0.0, ca - wa * per_wait), 1), "per_wait": round(per_wait, 1)}
    return out


def fit_local(procs: int, out: dict, types: tuple | list = LOCAL_TYPES) -> dict:
    """Fit the local split term into ``out`` (a fit's dict, its ``variants`` already
    fitted): one timing-only launch per type of LOCAL_TYPES of LOCAL_FIT's tile with L groups, one
    workgroup per CU at K1 K units (values; dwords for f16/i8); the cycles beyond the variant's prologue/epilogue and K steps (each group
    1/L of them, the workgroup's L x waves sharing the SIMDs) per extra group and macro row are
    ``local_reduce_cycles_per_row`` (the LDS hand-over, plan_model.local_reduce_cycles)."""
    from vlpc.targets import get_board
    from vlpc.plan_model import dot_local_lds_bytes, valu_cycles, variant_key

    board = get_board(BOARD)
    mhz, launch = board.engine_clock_mhz, board.timing.launch_overhead_us
    jobs, tiles = {}, {}
    for dt in types:
        mm, mn, ls = LOCAL_FIT_F64 if dt == "f64" else LOCAL_FIT
        ks = 8 if dt == "f64" else 16
        tiles[dt] = (mm, mn, ls, ks)
        shape = (mm * CUS // GX, mn * GX, K1 * PACK.get(dt, 1))
        jobs[dt] = (f"local-{dt}-{mm}x{mn}-k{ks}-L{ls}-{shape[0]}x{shape[1]}x{shape[2]}", (*shape, dt),
                    explicit(mm, mn, ks) | {"local_split": ls})
    cache = run_all(list(jobs.values()), procs)
    per_row = dict(out.get("local_reduce_cycles_per_row", {}))
    for dt, job in jobs.items():
        mm, mn, ls, ks = tiles[dt]
        r = cache[job[0]]
        var = out["variants"].get(variant_key(dt, (mm, mn), ks))
        if r["us"] is None or var is None:
            print(f"skipping the {dt} local split fit: {r['error'] or 'no variant'}", file=sys.stderr)
            continue
        v = valu_cycles(dt, mm, ks, board)
        steps = -(-K1 // (ks * ls))
        w = max(1, mn // 64) * ls / 4
        pred = var["fixed"] + steps * max(w * v * var["per_wave_ratio"], v + var["latency"])
        per_row[dt] = round(max(0.0, ((r["us"] - launch) * mhz - pred) / ((ls - 1) * mm)), 2)
    if per_row:
        out["local_reduce_cycles_per_row"] = per_row
    # the competing waves of resident local-split workgroups (issue 33: f16 512x4096x4096 32x64 L8 on
    # the MI50, two workgroups per CU, modeled 1.4x the surrogate): RL = R / L workgroups per CU at K1,
    # their K steps' cost over the competing-waves estimate -> local_wave_scale
    jobs2 = {}
    for dt in types:
        mm, mn, ls, ks = tiles[dt]
        var = out["variants"].get(variant_key(dt, (mm, mn), ks))
        if var is None or dt not in per_row:
            continue
        rl = var["wgs_per_cu"] // ls
        if dt in PACK:
            rl = min(rl, board.target.lds_bytes_per_cu // dot_local_lds_bytes((mm, mn), ls))
        if rl < 2:
            continue
        shape = (mm * rl * CUS // GX, mn * GX, K1 * PACK.get(dt, 1))
        jobs2[dt] = (f"local-{dt}-{mm}x{mn}-k{ks}-L{ls}-{shape[0]}x{shape[1]}x{shape[2]}", (*shape, dt),
                     explicit(mm, mn, ks) | {"local_split": ls}, rl)
    cache = run_all([j[:3] for j in jobs2.values()], procs)
    scale = dict(out.get("local_wave_scale", {}))
    for dt, (key, _, _, rl) in jobs2.items():
        mm, mn, ls, ks = tiles[dt]
        r = cache[key]
        if r["us"] is None:
            print(f"skipping the {dt} local split competing-waves fit: {r['error']}", file=sys.stderr)
            continue
        var = out["variants"][variant_key(dt, (mm, mn), ks)]
        v = valu_cycles(dt, mm, ks, board)
        steps = -(-K1 // (ks * ls))
        w = max(1, mn // 64) * ls / 4
        per_step = ((r["us"] - launch) * mhz - var["fixed"] - per_row[dt] * (ls - 1) * mm) / steps
        scale[dt] = round(max(1.0, per_step / (rl * w * v * var["per_wave_ratio"])), 4)
    if scale:
        out["local_wave_scale"] = scale
    return out


def terms(procs: int) -> None:
    """Issue 33's busiest-SIMD term against the timing model: 32x64 K step 16 f32 at K = 640 on BOARD, one
    round of r = 5, 13, 16 one-wave workgroups per CU in grids of 2, 8, 32 tile columns (the timing model's
    runs, keys ``geo-``, cached like the fit's); the surrogate's time now and with the average SIMD."""
    from vlpc.plan_model import estimate
    from vlpc.targets import get_board

    board = get_board(BOARD, cus=CUS)
    jobs = []
    for r in (13, 16, 5):
        for gx in (2, 8, 32):
            m, n, k = 32 * r * CUS // gx, 64 * gx, 640
            jobs.append((f"geo-f32-32x64-k16-{m}x{n}x{k}", (m, n, k, "f32"), explicit(32, 64, 16), r, gx))
    cache = run_all([j[:3] for j in jobs], procs)
    print(f"## The busiest SIMD: {BOARD}, {CUS} CUs, 32x64 k16 f32, K = 640, one round (modeled)\n")
    print("| workgroups per CU | tile columns | shape | timing model us | surrogate us |")
    print("|---:|---:|---|---:|---:|")
    for key, (m, n, k, dt), _, r, gx in jobs:
        est = estimate(m, n, k, dt, 4, (32, 64), 16, 1, 1, "workspace", board, beta_nonzero=False).seconds * 1e6
        print(f"| {r} | {gx} | {m}x{n}x{k} | {cache[key]['us']:,.1f} | {est:,.1f} |")


def report(procs: int, quick: bool = False) -> None:
    """``quick``: only QUICK's shapes of (a), no (b)."""
    from vlpc.plan_model import estimate, fitted
    from vlpc.targets import get_board

    if not fitted():
        raise SystemExit("no fit: run `python benchmarks/plan_surrogate.py fit` first")
    board = get_board(BOARD, cus=CUS)
    print(f"board: {BOARD} @ {board.engine_clock_mhz:.0f} MHz, memory {board.memory_clock_mhz:.0f} MHz, {CUS} CUs\n")
    # (a) explicit plans on validation shapes: surrogate vs timing model
    jobs = []
    plans = {}
    for m, n, k, dt in (QUICK if quick else VALIDATE):
        mm = 16 if dt == "f64" else 32
        ks = 8 if dt == "f64" else 16
        for mn in (256, 64):
            for s in (1, 4):
                if s > 1 and k < 2048:
                    continue
                key = f"v-{m}x{n}x{k}-{dt}-{mm}x{mn}-S{s}" + ("" if BOARD == "mi60" else f"-{BOARD}")
                plans[key] = (m, n, k, dt, (mm, mn), ks, s)
                jobs.append((key, (m, n, k, dt), explicit(mm, mn, ks, s)))
    cache = run_all(jobs, procs)
    print("## Surrogate vs timing model (explicit plans, shapes outside the fit; all modeled)\n")
    print("| shape | plan | timing model us | surrogate us | error |")
    print("|---|---|---:|---:|---:|")
    errs = []
    for key, (m, n, k, dt, macro, ks, s) in plans.items():
        r = cache[key]
        if r["us"] is None:
            continue
        est = estimate(m, n, k, dt, 8 if dt == "f64" else 4, macro, ks, s, 1, "workspace", board,
                       beta_nonzero=False).seconds * 1e6
        e = est / r["us"] - 1
        errs.append(abs(e))
        print(f"| {m}x{n}x{k} {dt} | {macro[0]}x{macro[1]} S{s} | {r['us']:,.1f} | {est:,.1f} | {e * 100:+.1f} % |")
    if errs:
        print(f"\nsurrogate MAPE against the timing model: {100 * sum(errs) / len(errs):.1f} % over {len(errs)} plans "
              f"(worst {100 * max(errs):.1f} %)")
    if quick:
        return
    # (b) skinny shapes: the auto plan vs the best tuned candidate
    from vlpc import tune

    print("\n## Skinny shapes: automatic plan vs the best `vlpc tune` candidate (modeled, MI60, 64 CUs)\n")
    print("| shape | auto plan | auto us | best tuned | best us | auto / best |")
    print("|---|---|---:|---|---:|---:|")
    for m, n, k in SKINNY:
        # the tile rows, K step, occupancy and A schedule of the default kernel; every tile N and split S
        # (tile N 64 and 256, S 1/2/4/8/16/32; the 2 G-FMA shapes only S 1/4/16: CPU time)
        splits = (1, 2, 4, 8, 16, 32) if m * n <= 256 * 256 else (1, 4, 16)
        cands = [c for c in tune.search_space(m, n, k) if c.waves_per_simd is None and c.local_split == 1
                 and c.schedule == "default" and c.macro_m == 32 and c.k_step == 16
                 and c.macro_n in (64, 256) and c.split_k in splits]
        jobs = [(f"t-{m}x{n}x{k}-{c.label()}", (m, n, k, "f32"), c.options()) for c in cands]
        jobs.append((f"auto-{m}x{n}x{k}", (m, n, k, "f32"), {"gpu": BOARD}))
        cache = run_all(jobs, procs)
        auto = cache[f"auto-{m}x{n}x{k}"]
        best = min((cache[j[0]] | {"label": j[0].split("-", 2)[2]} for j in jobs[:-1] if cache[j[0]]["us"]),
                   key=lambda r: r["us"])
        ratio = auto["us"] / best["us"]
        print(f"| {m}x{n}x{k} | {auto['plan']} | {auto['us']:,.1f} | {best['label']} | {best['us']:,.1f} | "
              f"{ratio:.3f}{'' if ratio <= 1.05 else '  (goal <= 1.05 NOT met)'} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("steps", nargs="+", choices=("fit", "fit-dot", "fit-local", "fit-reduce", "terms", "report"))
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--fresh", action="store_true", help="drop the cached timing-model runs")
    ap.add_argument("--missing", action="store_true",
                    help="fit: only the variants (and local split types) vlpc/plan_model.json lacks; the rest kept")
    ap.add_argument("--quick", action="store_true", help="report: the small validation shapes only (QUICK)")
    ap.add_argument("--gpu", choices=("mi50", "mi60"), default=None,
                    help="report on this board at its default clocks and CUs (the fit is always MI60's)")
    a = ap.parse_args(argv)
    if a.gpu:
        from vlpc.targets import get_board

        global BOARD, CUS
        BOARD, CUS = a.gpu, get_board(a.gpu).compute_units
    if a.fresh and (CACHE / "runs.json").exists():
        (CACHE / "runs.json").unlink()
    for step in a.steps:
        if step in ("fit", "fit-dot"):
            fit(a.jobs, dot_only=step == "fit-dot", missing=a.missing and step == "fit")
            from vlpc.plan_model import fitted
            fitted.cache_clear()
        elif step == "fit-local":  # only the local split term, on the variants in OUT
            out = fit_local(a.jobs, json.loads(OUT.read_text()))
            OUT.write_text(json.dumps(out, indent=1) + "\n")
            print(json.dumps(out.get("local_reduce_cycles_per_row"), indent=1))
            from vlpc.plan_model import fitted
            fitted.cache_clear()
        elif step == "fit-reduce":  # only the f32/f64 reduce kernel's bandwidth share and load waits (3 runs)
            from vlpc.targets import get_board

            cache = run_all([(key, shape, explicit(32, 64, 16, s) | {"beta": 1.0}) for key, shape, s in REDUCE_FIT],
                            a.jobs)
            out = json.loads(OUT.read_text()) | fit_reduce(cache, get_board(BOARD))
            OUT.write_text(json.dumps(out, indent=1) + "\n")
            print(json.dumps({k: out.get(k) for k in ("reduce_efficiency", "reduce_latency_cycles")}, indent=1))
            from vlpc.plan_model import fitted
            fitted.cache_clear()
        elif step == "terms":
            terms(a.jobs)
        else:
            if a.gpu and step != "report":
                raise SystemExit("--gpu is for report only (the fit is MI60's)")
            report(a.jobs, a.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
