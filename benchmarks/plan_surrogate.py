"""Fit the plan surrogate (vlpc/plan_model.py) to the timing model, and measure its error and the auto plan's.

    python benchmarks/plan_surrogate.py fit       # timing-model runs per kernel variant -> vlpc/plan_model.json
    python benchmarks/plan_surrogate.py fit-dot   # only the f16/int8 dot variants (K steps 16 and 8), their
                                                  # reduce share and local split term; f32 kept
    python benchmarks/plan_surrogate.py fit-local # only the local split term (f32, f16, int8: 3 runs)
    python benchmarks/plan_surrogate.py report    # surrogate vs timing model on shapes it was not fitted on;
                                                  # auto plan vs the best tuned plan on the skinny shapes

``fit`` runs, for each kernel variant (element type, macro tile, K step), three timing-only
launches on MI60 at its default clocks (1800 MHz engine, 1000 MHz memory; 64 CUs): one workgroup per CU at K = 640 and K = 1280 (the
slope gives the lone wave's cost per K step, the intercept the prologue/epilogue) and R
workgroups per CU at K = 640 (the cost per step when waves compete).  It also fits the
reduce kernel's share of the HBM bandwidth on one split plan.  The f16 and int8 dot kernels
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
``report --quick``: MAPE 2.8 % (worst 6.8 %) over 10 plans on MI60, 3.2 % (worst 9.0 %) on MI50
(the fit before the A touch; not re-run on the committed refit).  After a kernel change the refit
is one command, ``python benchmarks/plan_surrogate.py fit`` (about 25 minutes on a loaded 2-core
machine); then the lit and test pins of automatic plans that move are updated with the reason.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "build" / "plan_surrogate"
OUT = ROOT / "vlpc" / "plan_model.json"
BOARD, CUS = "mi60", 64

#: f64 variants are not fitted: the emulator's exact f64 FMA makes their timing-only runs ~30x
#: slower; plan_model derives them from the f32 variant of the same macro N (see there).
VARIANTS = [("f32", 32, 256, 16), ("f32", 32, 128, 16), ("f32", 32, 64, 16), ("f32", 32, 256, 8),
            ("f32", 64, 256, 16)]
#: The f16 and int8 dot kernels (passes/isel/dot.py; K step in dwords of packed K, 16 and 8:
#: their automatic plan weighs both): fitted on their own timing-model runs only, C f32 (f16
#: products) and i32 (int8).
DOT_VARIANTS = [(dt, 32, mn, ks) for ks in (16, 8) for dt in ("f16", "i8") for mn in (256, 128, 64)]
#: The local split fit (macro M, macro N, L): one lone workgroup per CU at K1 with L groups
#: (``local_reduce_cycles_per_row``: plan_model.local_reduce_cycles), per type in LOCAL_TYPES.
LOCAL_FIT = (32, 64, 8)
#: The types whose local split hand-over is fitted: the f32 sqc kernel (f64 takes it doubled) and the dot kernels.
LOCAL_TYPES = ("f32", "f16", "i8")
#: K of the fit's runs in K units (values; dwords of packed K for f16/i8: 2 or 4 values each).
K1, K2 = 640, 1280
#: A and B element type -> C's for the dot kernels' runs, and values of K per dword.
DOT_C = {"f16": "f32", "i8": "i32"}
PACK = {"f16": 2, "i8": 4}
#: The fit's grids are square-ish (8 column tiles x 8 R row tiles), as a square C gives: each A
#: row tile is shared by 8 CUs, each B column tile by 8 R.
GX = 8

#: Validation shapes (not used by the fit): seed sizes, skinny shapes of issue 19.
VALIDATE = [(1024, 1024, 640, "f32"), (1792, 1792, 640, "f32"), (3072, 3072, 640, "f32"),
            (256, 256, 8192, "f32"), (128, 4096, 4096, "f32"), (4096, 128, 4096, "f32"),
            (32, 1024, 8192, "f32")]
SKINNY = [(256, 256, 8192), (32, 1024, 8192), (128, 4096, 4096), (4096, 128, 4096)]
#: ``report --quick``: the validation shapes of at most 2^30 FMAs (minutes, not an hour, on 2 cores).
QUICK = [x for x in VALIDATE if x[0] * x[1] * x[2] <= 2 ** 30]


def source(m: int, n: int, k: int, dtype: str = "f32") -> str:
    if dtype in DOT_C:  # alpha and beta as arguments (f32 for f16, i32 for int8), C f32 / i32
        ct, sc = DOT_C[dtype], ("i32" if dtype == "i8" else "f32")
        ta, tb, tc = f"memref<{m}x{k}x{dtype}>", f"memref<{n}x{k}x{dtype}>", f"memref<{m}x{n}x{ct}>"
        return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {sc}, %beta: {sc}) {{\n"
                f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"}} : {ta}, {tb}, {tc}, {sc}, {sc}\n"
                "  return\n}\n")
    return f"""
func.func @g(%a: memref<{m}x{k}x{dtype}>, %b: memref<{n}x{k}x{dtype}>, %c: memref<{m}x{n}x{dtype}>) {{
  %alpha = arith.constant 1.0 : {dtype}
  %beta = arith.constant 0.0 : {dtype}
  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "NT"}} : memref<{m}x{k}x{dtype}>, memref<{n}x{k}x{dtype}>, memref<{m}x{n}x{dtype}>, {dtype}, {dtype}
  return
}}
"""


def run(job):
    """(key, figures) of one timing-only launch of an explicit plan (or {} / {"gpu": ...} for the
    automatic plan): :func:`vlpc.tune.evaluate` without the check, alpha 1 and beta 0 (C not read;
    the dot kernels take them as arguments: f32 for f16, i32 for int8), on BOARD with CUS CUs."""
    key, (m, n, k, dtype), opts = job
    from vlpc import tune

    r = tune.evaluate(tune.Problem(source(m, n, k, dtype), f"{key}.mlir", None, None, None, alpha=1.0, beta=0.0),
                      opts, "gfx906", BOARD, None, CUS, check=False)
    return key, {"us": r.modeled_us, "parts_us": r.parts_us, "wgs_per_cu": r.wgs_per_cu, "plan": r.plan,
                 "error": r.error}


@lru_cache(maxsize=1)
def code_version() -> str:
    """A hash of the contents of vlpc's Python sources (the kernels, the emulator, the timing
    model and its parameters): cached runs from other code are dropped (plan_model.json, which
    the fit writes, is not part of it).  Taken once per invocation, so the runs of one fit share
    it (an edit of vlpc during a fit does not drop its first runs)."""
    import hashlib
    import importlib.util

    h = hashlib.sha256()
    dirs = set()
    for name in ("vlpc", "vlpc.dialects", "vlpc.passes", "vlpc.runtime"):
        spec = importlib.util.find_spec(name)
        dirs.update(spec.submodule_search_locations or [])
    for d in sorted(dirs):
        for root, subdirs, files in os.walk(d):
            subdirs[:] = sorted(x for x in subdirs if x != "__pycache__")
            for f in sorted(x for x in files if x.endswith(".py")):
                h.update(f.encode() + b"\0" + Path(root, f).read_bytes())
    return h.hexdigest()[:16]


def run_all(jobs: list, procs: int) -> dict:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / "runs.json"
    cache = json.loads(path.read_text()) if path.exists() else {}
    version = code_version()
    if cache and cache.get("_code") != version:
        print(f"plan_surrogate: cached runs are from other code ({cache.get('_code')} != {version}): "
              "running them again", file=sys.stderr)
        cache = {}
    cache["_code"] = version
    todo = [j for j in jobs if j[0] not in cache]
    if todo:
        from tqdm import tqdm

        os.environ["VLPC_EMU_PROCS"] = "1"
        with mp.get_context("fork").Pool(procs) as pool:
            for key, fig in tqdm(pool.imap_unordered(run, todo), total=len(todo), desc="timing model", file=sys.stderr):
                cache[key] = fig
                path.write_text(json.dumps(cache, indent=1))
    return cache


def explicit(macro_m, macro_n, k_step, split=1, mode="workspace"):
    return dict(macro_tile=(macro_m, macro_n), micro_tile=(macro_m, 1), k_step=k_step, split_k=split,
                split_mode=mode)


def fit(procs: int, dot_only: bool = False) -> dict:
    """Fit every variant (VARIANTS + DOT_VARIANTS), both reduce shares and the local split term,
    and write OUT; ``dot_only`` (step ``fit-dot``): only DOT_VARIANTS, ``reduce_efficiency_dot``
    and the local split term, the f32 variants and ``reduce_efficiency`` kept from OUT."""
    from vlpc.targets import get_board
    from vlpc.plan_model import valu_cycles, variant_key

    board = get_board(BOARD)
    mhz, launch = board.engine_clock_mhz, board.timing.launch_overhead_us
    # R comes from the first run of each variant (its occupancy), so run the lone-workgroup shapes first
    def key(dt, mm, mn, ks, m, n, k):
        return f"{dt}-{mm}x{mn}-k{ks}-{m}x{n}x{k}"

    def lone(dt, mm, mn, ks, k):  # one workgroup per CU; k in K units (dwords for f16/i8)
        return (mm * CUS // GX, mn * GX, k * PACK.get(dt, 1))

    variants = DOT_VARIANTS if dot_only else VARIANTS + DOT_VARIANTS
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
    # the reduce kernel's bandwidth share: one workspace split plan
    if not dot_only:
        second.append(("reduce-512x512x2048-S4", (512, 512, 2048, "f32"), explicit(64, 256, 16, 4)))
    # the dot kernels' reduce (f32 partials summed into an f32 C): its own share
    second.append(("reduce-dot-512x512x4096-f16-S4", (512, 512, 4096, "f16"), explicit(32, 256, 16, 4)))
    cache = run_all(second, procs)
    out = {"fitted_on": f"timing model, {BOARD} @ {mhz:.0f} MHz, {CUS} CUs (benchmarks/plan_surrogate.py fit)",
           "variants": {}}
    if dot_only:  # the f32 variants and the f32 reduce share as they are
        old = json.loads(OUT.read_text())
        out["variants"] = {k: v for k, v in old["variants"].items() if k.split()[0] not in DOT_C}
        out["reduce_efficiency"] = old["reduce_efficiency"]
        out["fitted_on"] += "; dot variants refitted by `benchmarks/plan_surrogate.py fit-dot`"
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
    red = cache.get("reduce-512x512x2048-S4", {"us": None})
    if red["us"] is not None and len(red["parts_us"]) == 2:
        m = n = 512
        moved = (4 + 1) * m * n * 4  # beta = 0: S partials read, C written
        t = (red["parts_us"][1] - launch) * 1e-6
        out["reduce_efficiency"] = round(min(1.0, moved / board.hbm_bytes_per_second / t), 4) if t > 0 else 1.0
    red = cache["reduce-dot-512x512x4096-f16-S4"]
    if red["us"] is not None and len(red["parts_us"]) == 2:
        moved = (4 * 4 + 4) * 512 * 512  # beta = 0: 4 f32 partials read, f32 C written
        t = (red["parts_us"][1] - launch) * 1e-6
        out["reduce_efficiency_dot"] = round(min(1.0, moved / board.hbm_bytes_per_second / t), 4) if t > 0 else 1.0
    fit_local(procs, out)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return out


def fit_local(procs: int, out: dict) -> dict:
    """Fit the local split term into ``out`` (a fit's dict, its ``variants`` already
    fitted): one timing-only launch per type of LOCAL_TYPES of LOCAL_FIT's tile with L groups, one
    workgroup per CU at K1 K units (values; dwords for f16/i8); the cycles beyond the variant's prologue/epilogue and K steps (each group
    1/L of them, the workgroup's L x waves sharing the SIMDs) per extra group and macro row are
    ``local_reduce_cycles_per_row`` (the LDS hand-over, plan_model.local_reduce_cycles)."""
    from vlpc.targets import get_board
    from vlpc.plan_model import valu_cycles, variant_key

    board = get_board(BOARD)
    mhz, launch = board.engine_clock_mhz, board.timing.launch_overhead_us
    mm, mn, ls = LOCAL_FIT
    jobs = {}
    for dt in LOCAL_TYPES:
        shape = (mm * CUS // GX, mn * GX, K1 * PACK.get(dt, 1))
        jobs[dt] = (f"local-{dt}-{mm}x{mn}-k16-L{ls}-{shape[0]}x{shape[1]}x{shape[2]}", (*shape, dt),
                    explicit(mm, mn, 16) | {"local_split": ls})
    cache = run_all(list(jobs.values()), procs)
    per_row = {}
    for dt, job in jobs.items():
        r = cache[job[0]]
        var = out["variants"].get(variant_key(dt, (mm, mn), 16))
        if r["us"] is None or var is None:
            print(f"skipping the {dt} local split fit: {r['error'] or 'no variant'}", file=sys.stderr)
            continue
        v = valu_cycles(dt, mm, 16, board)
        steps = -(-K1 // (16 * ls))
        w = max(1, mn // 64) * ls / 4
        pred = var["fixed"] + steps * max(w * v * var["per_wave_ratio"], v + var["latency"])
        per_row[dt] = round(max(0.0, ((r["us"] - launch) * mhz - pred) / ((ls - 1) * mm)), 2)
    if per_row:
        out["local_reduce_cycles_per_row"] = per_row
    return out


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
    ap.add_argument("steps", nargs="+", choices=("fit", "fit-dot", "fit-local", "report"))
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--fresh", action="store_true", help="drop the cached timing-model runs")
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
            fit(a.jobs, dot_only=step == "fit-dot")
            from vlpc.plan_model import fitted
            fitted.cache_clear()
        elif step == "fit-local":  # only the local split term, on the variants in OUT
            out = fit_local(a.jobs, json.loads(OUT.read_text()))
            OUT.write_text(json.dumps(out, indent=1) + "\n")
            print(json.dumps(out.get("local_reduce_cycles_per_row"), indent=1))
            from vlpc.plan_model import fitted
            fitted.cache_clear()
        else:
            if a.gpu and step != "report":
                raise SystemExit("--gpu is for report only (the fit is MI60's)")
            report(a.jobs, a.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
