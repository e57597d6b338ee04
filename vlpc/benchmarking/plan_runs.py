"""The plan surrogate's timing-model runs, shared by ``benchmarks/plan_surrogate.py`` (the fit and
its report) and ``benchmarks/dot_split_k_auto.py``: the fit's variants and shapes, one GEMM source
per type (:func:`source`), one timing-only launch of an explicit or automatic plan (:func:`run`),
and the run cache in ``build/plan_surrogate`` keyed by a hash of vlpc's sources (:func:`run_all`,
:func:`code_version`).  Every figure is **modeled** by the timing model.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sys
from functools import lru_cache
from pathlib import Path

from vlpc.benchmarking import ROOT

CACHE = ROOT / "build" / "plan_surrogate"
BOARD, CUS = "mi60", 64

VARIANTS = [("f32", 32, 256, 16), ("f32", 32, 128, 16), ("f32", 32, 64, 16), ("f32", 32, 256, 8),
            ("f32", 64, 256, 16), ("f32", 32, 128, 8), ("f32", 32, 64, 8)]
#: 16-row f32 tiles (K step 16; issue 33: the tuner's best f32 256x256x8192 on MI60 is a 16-row tile): the
#: tuner orders its candidates by them; the automatic plan does not weigh them (passes/gemm_split_k.py
#: AUTO_MACRO_M_TYPES says why).
VARIANTS += [("f32", 16, mn, 16) for mn in (256, 128, 64)]
#: f64 variants (the default 16-row tiles, K step 8): not in VARIANTS, so f64 plans use the f32 fit
#: (plan_model.variant's fallback).  Fitted in issue 33 (about 2 minutes a variant on a loaded
#: 2-core machine, most of it the R-workgroup run): accurate where the leading dimensions are not
#: powers of two (1024x1024x1008 16x256: 314.1 us against the timing model's 316.6), but at 8 KiB
#: and 64 KiB rows the timing model's L2 set-index aliasing made their plans lose (f64 1024^3 MI60
#: 16x256 at 953.8 us against 16x64 L2's 324.6), and they move the DGEMM 4096x4096x640 plan to
#: 16x256 on a 0.6 % margin: add them to VARIANTS (and "f64" to LOCAL_TYPES) and run ``fit --missing``
#: once the surrogate has a leading-dimension feature (docs/plans.md).
F64_VARIANTS = [("f64", 16, 256, 8), ("f64", 16, 128, 8), ("f64", 16, 64, 8)]
#: The f16 and int8 dot kernels (passes/isel/dot.py; K step in dwords of packed K, 16 and 8:
#: their automatic plan weighs both): fitted on their own timing-model runs only, C f32 (f16
#: products) and i32 (int8).
DOT_VARIANTS = [(dt, 32, mn, ks) for ks in (16, 8) for dt in ("f16", "i8") for mn in (256, 128, 64)]
#: 16-row dot tiles (K step 16): the automatic plan weighs tile rows only where fitted
#: (passes/gemm_split_k.py AUTO_MACRO_M; issue 33: the tuner's best f16/int8 1024^3 on MI60 is 16x256 k16).
DOT_VARIANTS += [(dt, 16, mn, 16) for dt in ("f16", "i8") for mn in (256, 128, 64)]
#: The local split fit (macro M, macro N, L): one lone workgroup per CU at K1 with L groups
#: (``local_reduce_cycles_per_row``: plan_model.local_reduce_cycles), per type in LOCAL_TYPES
#: (f64: its default 16-row tile and K step 8, LOCAL_FIT_F64).
LOCAL_FIT = (32, 64, 8)
LOCAL_FIT_F64 = (16, 64, 8)
#: The types whose local split hand-over is fitted: the f32 sqc kernel (f64 takes it doubled unless
#: "f64" is added with F64_VARIANTS) and the dot kernels.
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


def source(m: int, n: int, k: int, dtype: str = "f32", beta: float = 0.0) -> str:
    """One NT ``gemm.matmul`` of ``dtype`` (kernel ``g``; f32/f64 with alpha 1 and ``beta`` (default 0)
    as constants)."""
    if dtype in DOT_C:  # alpha and beta as arguments (f32 for f16, i32 for int8), C f32 / i32
        ct, sc = DOT_C[dtype], ("i32" if dtype == "i8" else "f32")
        ta, tb, tc = f"memref<{m}x{k}x{dtype}>", f"memref<{n}x{k}x{dtype}>", f"memref<{m}x{n}x{ct}>"
        return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {sc}, %beta: {sc}) {{\n"
                f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"}} : {ta}, {tb}, {tc}, {sc}, {sc}\n"
                "  return\n}\n")
    return f"""
func.func @g(%a: memref<{m}x{k}x{dtype}>, %b: memref<{n}x{k}x{dtype}>, %c: memref<{m}x{n}x{dtype}>) {{
  %alpha = arith.constant 1.0 : {dtype}
  %beta = arith.constant {float(beta)!r} : {dtype}
  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "NT"}} : memref<{m}x{k}x{dtype}>, memref<{n}x{k}x{dtype}>, memref<{m}x{n}x{dtype}>, {dtype}, {dtype}
  return
}}
"""


def run(job):
    """(key, figures) of one timing-only launch of an explicit plan (or {} / {"gpu": ...} for the
    automatic plan): :func:`vlpc.tune.evaluate` without the check, alpha 1 and beta 0 (C not read;
    an option ``beta`` in the job's options: that beta, f32/f64 only;
    the dot kernels take them as arguments: f32 for f16, i32 for int8), on BOARD with CUS CUs."""
    key, (m, n, k, dtype), opts = job
    from vlpc import tune

    opts = dict(opts)
    beta = float(opts.pop("beta", 0.0))  # (a job's "beta": C read, for the reduce kernel's fit)
    r = tune.evaluate(tune.Problem(source(m, n, k, dtype, beta), f"{key}.mlir", None, None, None, alpha=1.0,
                                   beta=beta), opts, "gfx906", BOARD, None, CUS, check=False)
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
    # the plan choice (its surrogate and these runs' lists) does not change an explicit plan's timing-model
    # run: edits there keep the cached runs (a fit extended by a variant runs only the new one)
    skip = {"plan_model.py", "plan_runs.py", "launch_variants.py"}
    dirs = set()
    for name in ("vlpc", "vlpc.dialects", "vlpc.passes", "vlpc.runtime"):
        spec = importlib.util.find_spec(name)
        dirs.update(spec.submodule_search_locations or [])
    for d in sorted(dirs):
        for root, subdirs, files in os.walk(d):
            subdirs[:] = sorted(x for x in subdirs if x != "__pycache__")
            for f in sorted(x for x in files if x.endswith(".py") and x not in skip):
                h.update(f.encode() + b"\0" + Path(root, f).read_bytes())
    return h.hexdigest()[:16]


def run_all(jobs: list, procs: int) -> dict:
    """:func:`run` of every job not in the cache (``procs`` processes), the cache kept as runs finish:
    every job's figures by key (the cache is dropped when vlpc's sources changed)."""
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
    """``vlpc.compile`` options of an explicit plan (the macro tile one wavefront group wide)."""
    return dict(macro_tile=(macro_m, macro_n), micro_tile=(macro_m, 1), k_step=k_step, split_k=split,
                split_mode=mode)
