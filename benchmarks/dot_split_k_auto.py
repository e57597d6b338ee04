"""gemm-split-k's automatic S for the f16 and int8 dot kernels, against the timing model (all modeled).

    python benchmarks/dot_split_k_auto.py                # both tables (about 25 minutes on 2 cores)
    python benchmarks/dot_split_k_auto.py --no-square    # skip the 2048^3 / 4096^3 rows (a few minutes)
    python benchmarks/dot_split_k_auto.py --fresh        # drop the cached runs (after a timing-model change)
    python benchmarks/dot_split_k_auto.py a --k-step 8   # table a on the K step 8 variants

Re-fit the surrogate first when the timing model changed: ``python benchmarks/plan_surrogate.py fit
--fresh`` (its dot variants: ``DOT_VARIANTS`` there).  Runs are cached with the fit's in
build/plan_surrogate/runs.json (``--fresh`` drops them all).

(a) **Surrogate error**: the plan surrogate (vlpc/plan_model.py) against full timing-only launches
of explicit plans (tile 32x256 or 32x64, S = 1 or 4/8) on f16 and int8 shapes the fit did not use.

(b) **Automatic S**: for skinny and square shapes of each type, the modeled time of S = 1, of the
automatic plan (``vlpc.compile`` with ``gpu=mi60``: the plan is made for the board the model runs)
and of the best S the timing model finds among S in {1, 2, 4, 8, 16, 32} (square shapes: {1, 2}
or {1, 2, 4}: a full GPU gains nothing from more slices and each 4096^3 run takes minutes), the S runs
with the default tile (tile N the smallest of 64/128/256 covering N, else 256; K step 16; L = 1).
``auto / best`` is the automatic plan's time (its own tile N, K step and local split L) over the best
S run's.

(d) **Local split, tile N and K step**: the automatic plan (gemm-tile's tile N and K step, 16 or 8
dwords, and gemm-split-k's S and local split L by the surrogate, whose dot variants model L: its LDS
hand-over and occupancy) against the automatic plan with the K step kept at 16 (``k_step=16``: the
plan before the K step was weighed) and the former automatic plan (tile N the smallest of 64/128/256
covering N, S at L = 1, K step 16), all run on the timing model (``(same)``: the plan did not change;
the decode GEMVs keep their own plan).

(c) **Decode GEMV** (M = 1..16, the plan that splits K over the wavefront groups of a workgroup):
S = 1 (kept by gemm-split-k) against S = 2 and 4 with the same local split.

Every figure is modeled by vlpc's timing model on MI60 @ 1700 MHz, 64 CUs; none is measured.
"""

from __future__ import annotations

import argparse
from vlpc.benchmarking import plan_runs as ps  # the plan surrogate's board, plan helpers and run cache

CT = {"f16": "f32", "i8": "i32"}
#: (a) explicit plans on shapes outside the fit: (m, n, k, dtype, tile N, splits)
VALIDATE = [(1024, 1024, 2048, "f16", (256, 64), (1,)), (2048, 2048, 1024, "f16", (256,), (1,)),
            (256, 256, 16384, "f16", (256, 64), (1, 4)), (128, 4096, 8192, "f16", (256, 64), (1, 4)),
            (1024, 1024, 4096, "i8", (256, 64), (1,)), (128, 128, 32768, "i8", (256, 64), (1, 8)),
            (64, 2048, 16384, "i8", (256, 64), (1, 4)), (4096, 128, 8192, "i8", (256,), (1, 4))]
SKINNY = {"f16": [(256, 256, 32768), (128, 128, 65536), (64, 1024, 16384), (512, 512, 8192)],
          "i8": [(128, 128, 65536), (256, 256, 32768), (64, 1024, 32768), (512, 512, 16384)]}
SQUARE = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096)]
GEMV = [(1, 4096, 4096), (16, 4096, 4096)]


def surrogate_us(m, n, k, dt, macro, split, local=1, k_step=16) -> float:
    from vlpc.plan_model import estimate
    from vlpc.targets import get_board

    board = get_board(ps.BOARD, cus=ps.CUS)
    esize = 2 if dt == "f16" else 1
    return estimate(m, n, k, dt, esize, macro, k_step, split, local, "workspace", board, beta_nonzero=False,
                    c_esize=4).seconds * 1e6


def table_a(procs: int, k_step: int = 16) -> None:
    jobs, plans = [], {}
    for m, n, k, dt, tiles, splits in VALIDATE:
        for mn in tiles:
            for s in splits:
                key = f"dotv-{m}x{n}x{k}-{dt}-32x{mn}-S{s}" + (f"-k{k_step}" if k_step != 16 else "")
                plans[key] = (m, n, k, dt, (32, mn), s)
                jobs.append((key, (m, n, k, dt), ps.explicit(32, mn, k_step, s)))
    cache = ps.run_all(jobs, procs)
    print(f"## (a) Surrogate vs timing model, dot kernels (explicit plans, K step {k_step}, shapes outside the fit; "
          "modeled)\n")
    print("| shape | plan | timing model us | surrogate us | error |")
    print("|---|---|---:|---:|---:|")
    errs = []
    for key, (m, n, k, dt, macro, s) in plans.items():
        r = cache[key]
        if r["us"] is None:
            print(f"| {m}x{n}x{k} {dt} | {macro[0]}x{macro[1]} k{k_step} S{s} | failed: {r['error']} | | |")
            continue
        est = surrogate_us(m, n, k, dt, macro, s, k_step=k_step)
        e = est / r["us"] - 1
        errs.append(abs(e))
        print(f"| {m}x{n}x{k} {dt}>{CT[dt]} | {macro[0]}x{macro[1]} k{k_step} S{s} | {r['us']:,.1f} | {est:,.1f} | "
              f"{e * 100:+.1f} % |")
    if errs:
        print(f"\ndot-kernel surrogate MAPE against the timing model: {100 * sum(errs) / len(errs):.1f} % over "
              f"{len(errs)} plans (max {100 * max(errs):.1f} %)\n")


def auto_plan(m, n, k, dt, **opts) -> tuple[int, int, int, int]:
    """(S, local split, tile N, K step) of the automatic plan for the model's board (``opts``: more
    vlpc.compile options, e.g. ``k_step=16``)."""
    import vlpc

    li = vlpc.compile(ps.source(m, n, k, dt), "gfx906", gpu=ps.BOARD, cus=ps.CUS, **opts).kernel("g").launch_info
    return li.get("split_k") or 1, li.get("local_split") or 1, li["macro_n"], li["k_step"]


def table_b(procs: int, square: bool) -> None:
    rows = []
    for dt in ("f16", "i8"):
        rows += [(m, n, k, dt, "skinny", (1, 2, 4, 8, 16, 32)) for m, n, k in SKINNY[dt]]
        rows += [(m, n, k, dt, "square", (1, 2, 4) if m <= 1024 else (1, 2)) for m, n, k in SQUARE
                 if square or m <= 1024]
    jobs, autos = [], {}
    for m, n, k, dt, _, splits in rows:
        autos[(m, n, k, dt)] = auto_plan(m, n, k, dt)
        s_auto = autos[(m, n, k, dt)][0]
        for s in sorted(set(splits) | {s_auto}):
            jobs.append((f"dots-{m}x{n}x{k}-{dt}-S{s}", (m, n, k, dt), {"split_k": s, "k_step": 16, "gpu": ps.BOARD}))
        jobs.append((f"dotauto-{m}x{n}x{k}-{dt}", (m, n, k, dt), {"gpu": ps.BOARD}))  # the automatic plan itself
    cache = ps.run_all(jobs, procs)
    print("## (b) Automatic plan vs S = 1 vs the best S of the timing model (S runs: the default tile, K step 16, "
          "L = 1; modeled, MI60, 64 CUs)\n")
    print("| shape | types | kind | S = 1 us | auto plan | auto us | best S (model) | best us | S1 / auto | "
          "auto / best |")
    print("|---|---|---|---:|---|---:|---|---:|---:|---:|")
    for m, n, k, dt, kind, splits in rows:
        s_auto, local, mn, ks = autos[(m, n, k, dt)]
        runs = {s: cache[f"dots-{m}x{n}x{k}-{dt}-S{s}"] for s in sorted(set(splits) | {s_auto})}
        ok = {s: r for s, r in runs.items() if r["us"] is not None}
        best = min(ok, key=lambda s: ok[s]["us"])
        one, auto = ok[1]["us"], cache[f"dotauto-{m}x{n}x{k}-{dt}"]["us"]  # (with its tile and local split)
        print(f"| {m}x{n}x{k} | {dt}>{CT[dt]} | {kind} | {one:,.1f} | 32x{mn} k{ks} S{s_auto} L{local} | {auto:,.1f} | "
              f"S{best} of {{{','.join(map(str, sorted(runs)))}}} | {ok[best]['us']:,.1f} | {one / auto:.2f}x | "
              f"{auto / ok[best]['us']:.3f} |", flush=True)
    print()


#: (d) the automatic plan with local splits and tile N against the former one (tile N: the smallest of
#: 64/128/256 covering N, else 256; S by the surrogate at L = 1): (m, n, k, dtype)
LOCAL = [(256, 512, 640, "f16"), (256, 256, 16384, "f16"), (256, 256, 32768, "f16"), (64, 1024, 16384, "f16"),
         (512, 512, 8192, "f16"), (1024, 1024, 1024, "f16"), (2048, 2048, 2048, "f16"), (128, 4096, 4096, "f16"),
         (4096, 4096, 4096, "f16"), (128, 128, 32768, "i8"), (128, 128, 65536, "i8"), (512, 512, 16384, "i8"),
         (1024, 1024, 1024, "i8"), (128, 4096, 4096, "i8"), (4096, 4096, 4096, "i8"),
         (1, 4096, 4096, "f16"), (4, 4096, 4096, "i8"), (16, 4096, 4096, "f16"), (16, 11008, 4096, "i8")]


def former_plan(m, n, k, dt) -> tuple[int, int, int, int]:
    """(S, local split, tile N, K step) of the automatic plan before local splits were modeled (M > 16):
    tile N the smallest of 64/128/256 covering N (else 256), S the surrogate's best at L = 1, K step 16."""
    from vlpc.passes.gemm_split_k import MAX_AUTO_SPLIT, MIN_K_PER_SPLIT
    from vlpc.plan_model import choose, plan_board

    mn = next((w for w in (64, 128, 256) if n <= w), 256)
    best, _ = choose(m, n, k, dt, 2 if dt == "f16" else 1, 32, (mn,), 16, tuple(range(1, MAX_AUTO_SPLIT + 1)), 1,
                     "workspace", plan_board("gfx906", ps.BOARD, ps.CUS), min_k_per_split=MIN_K_PER_SPLIT, c_esize=4)
    return best.split_k, 1, mn, 16


def plan_label(p) -> str:
    s, local, mn, ks = p
    return f"32x{mn} k{ks} S{s} L{local}"


def table_d(procs: int, square: bool) -> None:
    jobs, rows = [], []
    for m, n, k, dt in LOCAL:
        if not square and m * n * k >= 2048 ** 3:
            continue
        new = auto_plan(m, n, k, dt)
        # the automatic plan with the K step kept at 16 (before it was weighed), the former one; the decode
        # GEMV plan (M <= 16) chooses its own K step (gemv_plan) and is unchanged
        k16 = new if m <= 16 else auto_plan(m, n, k, dt, k_step=16)
        old = new if m <= 16 else former_plan(m, n, k, dt)
        rows.append((m, n, k, dt, old, k16, new))
        jobs.append((f"dotauto-{m}x{n}x{k}-{dt}", (m, n, k, dt), {"gpu": ps.BOARD}))
        for p in {old, k16} - {new}:
            s, local, mn, ks = p
            jobs.append((f"dotplan-{m}x{n}x{k}-{dt}-{plan_label(p).replace(' ', '-')}", (m, n, k, dt),
                         ps.explicit(32, mn, ks, s) | {"local_split": local}))
    cache = ps.run_all(jobs, procs)

    def us(m, n, k, dt, p, new):
        return cache[f"dotauto-{m}x{n}x{k}-{dt}" if p == new else
                     f"dotplan-{m}x{n}x{k}-{dt}-{plan_label(p).replace(' ', '-')}"]["us"]

    print("## (d) Automatic plan (tile N, K step 16 or 8, S, local split L) vs the automatic plan with the K step "
          "kept at 16 and the former one (L = 1, K step 16; modeled, MI60)\n")
    print("| shape | types | former plan | former us | K step 16 plan | k16 us | automatic plan | auto us | "
          "surrogate us | auto / k16 | auto / former |")
    print("|---|---|---|---:|---|---:|---|---:|---:|---:|---:|")
    for m, n, k, dt, old, k16, new in rows:
        r = cache[f"dotauto-{m}x{n}x{k}-{dt}"]
        uo, u16 = us(m, n, k, dt, old, new), us(m, n, k, dt, k16, new)
        est = surrogate_us(m, n, k, dt, (32, new[2]), new[0], new[1], new[3]) if m > 16 else float("nan")
        fo = plan_label(old) if old != new else "(same)"
        f16 = plan_label(k16) if k16 != new else "(same)"
        print(f"| {m}x{n}x{k} | {dt}>{CT[dt]} | {fo} | {uo:,.1f} | {f16} | {u16:,.1f} | {r['plan']} | {r['us']:,.1f} | "
              f"{est:,.1f} | {r['us'] / u16:.3f} | {r['us'] / uo:.3f} |", flush=True)
    print()


def table_c(procs: int) -> None:
    jobs, plans = [], {}
    for m, n, k in GEMV:
        for dt in ("f16", "i8"):
            s_auto, local, mn, _ = auto_plan(m, n, k, dt)
            plans[(m, n, k, dt)] = (s_auto, local)
            for s in (1, 2, 4):
                jobs.append((f"dotg-{m}x{n}x{k}-{dt}-S{s}-L{local}", (m, n, k, dt),
                             {"split_k": s, "local_split": local, "gpu": ps.BOARD}))
    cache = ps.run_all(jobs, procs)
    print("## (c) Decode GEMV: S = 1 (automatic) vs S = 2, 4 at the plan's local split (modeled, MI60)\n")
    print("| shape | types | auto plan | S = 1 us | S = 2 us | S = 4 us |")
    print("|---|---|---|---:|---:|---:|")
    for (m, n, k, dt), (s_auto, local) in plans.items():
        us = [cache[f"dotg-{m}x{n}x{k}-{dt}-S{s}-L{local}"]["us"] for s in (1, 2, 4)]
        cells = " | ".join("failed" if u is None else f"{u:,.1f}" for u in us)
        print(f"| {m}x{n}x{k} | {dt}>{CT[dt]} | S{s_auto} L{local} | {cells} |", flush=True)
    print()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="*", choices=("a", "b", "c", "d"), default=["a", "b", "c", "d"])
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--no-square", action="store_true", help="skip the 2048^3 and 4096^3 rows")
    ap.add_argument("--k-step", type=int, choices=(16, 8), default=16, help="table a's K step (dwords)")
    ap.add_argument("--fresh", action="store_true", help="drop the cached timing-model runs")
    a = ap.parse_args(argv)
    if a.fresh and (ps.CACHE / "runs.json").exists():
        (ps.CACHE / "runs.json").unlink()
    print(f"modeled on {ps.BOARD} @ 1700 MHz, {ps.CUS} CUs (timing model; plan surrogate "
          f"vlpc/plan_model.json: {__import__('vlpc.plan_model').plan_model.fitted().get('fitted_on', 'no fit')})\n")
    for t in a.tables:
        {"a": lambda: table_a(a.jobs, a.k_step), "b": lambda: table_b(a.jobs, not a.no_square), "c": lambda: table_c(a.jobs),
         "d": lambda: table_d(a.jobs, not a.no_square)}[t]()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
