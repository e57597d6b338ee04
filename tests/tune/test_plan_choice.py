"""The automatic plan is the best plan the plan model knows (issue 33): over a grid of shapes and
element types, on MI50 (60 CUs) and MI60 (64 CUs), what gemm-tile and gemm-split-k choose is

* never listed slower than another candidate by their own ``vlpc compile -v`` / ``--print-plan``
  listing (``describe_plan``), and
* the minimum of the plan model over every candidate the passes weigh, found here by brute force
  (macro tile N 64/128/256, split S 1..32 with the slice bounds, the local split L, and for
  f16/int8 the K step 16/8).

Decode shapes (M = 1, 4, 16) are in the grid too: f16/int8 take the decode GEMV's own plan there
(``gemv_plan``: no surrogate choice, nothing listed), f32/f64 a tile of M rows.

Only the planning passes run (no code generation): the grid is fast."""

from __future__ import annotations

import itertools
import re

import pytest

from vlpc.dialects.gemm import DOT_PACK, ELEMENT_BYTES, MatmulOp, gemv_plan
from vlpc.passes.gemm_split_k import AUTO_LOCAL_SPLITS, MAX_AUTO_SPLIT, MIN_K_PER_SPLIT, describe_plan
from vlpc.passes.gemm_tile import AUTO_MACRO_N, DOT_AUTO_K_STEPS, SQC_DEFAULT_M
from vlpc.compiler import make_context, parse, pipeline, run_passes
from vlpc.plan_model import estimate, k_per_split, k_units, plan_board, variant
from vlpc.targets import get_target

C_TYPE = {"f32": "f32", "f64": "f64", "f16": "f32", "i8": "i32"}
SHAPES = [(256, 256, 1024), (512, 512, 512), (1024, 1024, 1024), (128, 4096, 4096), (4096, 128, 4096),
          (2048, 2048, 640), (64, 1024, 8192), (4096, 4096, 4096), (100, 300, 70), (768, 3072, 768),
          (256, 256, 8192), (512, 4096, 4096), (1, 4096, 4096), (4, 4096, 4096), (16, 11008, 4096)]


def source(m: int, n: int, k: int, dt: str) -> str:
    ct, sc = C_TYPE[dt], ("i32" if dt == "i8" else "f64" if dt == "f64" else "f32")
    ta, tb, tc = f"memref<{m}x{k}x{dt}>", f"memref<{n}x{k}x{dt}>", f"memref<{m}x{n}x{ct}>"
    return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {sc}, %beta: {sc}) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"}} : {ta}, {tb}, {tc}, {sc}, {sc}\n"
            "  func.return\n}\n")


def planned(m: int, n: int, k: int, dt: str, gpu: str):
    """The matmul op after gemm-split-k (the default options on ``gpu``) and its listing."""
    ctx = make_context()
    module = parse(source(m, n, k, dt), "g.mlir", ctx)
    passes = pipeline("gfx906", linalg=False, gpu=gpu)
    upto = [p.name for p in passes].index("gemm-split-k") + 1
    run_passes(module, passes[:upto], ctx)
    mm = next(o for o in module.walk() if isinstance(o, MatmulOp))
    return mm, describe_plan(mm, "g", get_target("gfx906"), 0, auto=True, gpu=gpu)


def brute_best(m: int, n: int, k: int, dt: str, gpu: str) -> float:
    """The smallest plan-model time (seconds) over every plan the automatic choice weighs."""
    board = plan_board("gfx906", gpu)
    mm = min(m, SQC_DEFAULT_M[dt])  # (a shorter matrix: a tile of exactly M rows)
    dot = dt in DOT_PACK
    ku, pack = k_units(k, dt), DOT_PACK.get(dt, 1)
    best = float("inf")
    for mn, ks, L, s in itertools.product(AUTO_MACRO_N, DOT_AUTO_K_STEPS if dot else (8 if dt == "f64" else 16,),
                                          AUTO_LOCAL_SPLITS, range(1, MAX_AUTO_SPLIT + 1)):
        if L > 1 and (mn * L > 1024 or ku < L * ks or L > variant(dt, (mm, mn), ks, board).wgs_per_cu):
            continue
        if s > 1 and (k_per_split(ku, s, ks) * pack < max(MIN_K_PER_SPLIT, ks * pack) or ku < s * L * ks):
            continue
        t = estimate(m, n, k, dt, ELEMENT_BYTES[dt], (mm, mn), ks, s, L, "workspace", board,
                     c_esize=ELEMENT_BYTES[C_TYPE[dt]]).seconds
        best = min(best, t)
    return best


@pytest.mark.parametrize("gpu", ["mi50", "mi60"])
@pytest.mark.parametrize("dt", ["f32", "f64", "f16", "i8"])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_automatic_plan_is_the_best_listed_and_modeled(m, n, k, dt, gpu):
    mm, lines = planned(m, n, k, dt, gpu)
    text = "\n".join(lines)
    gemv = gemv_plan(mm.shape())
    if gemv:  # f16/int8 decode: the decode GEMV's own plan, not weighed by the surrogate: nothing listed
        assert (mm.get_int_array("macro_tile")[1], mm.get_int("local_split"), mm.get_int("k_step")) == gemv
        assert (mm.get_int("split_k") or 1) == 1 and "<- chosen" not in text and "decode GEMV plan" in text, text
        return
    chosen = [float(x) for x in re.findall(r"= ([\d.]+) us  <- chosen", text)]
    assert len(chosen) == 1, text
    listed = [float(x) for x in re.findall(r"([\d.]+) us", text)]
    assert chosen[0] <= min(listed) + 0.05, text  # (the listing rounds to 0.1 us)
    macro = mm.get_int_array("macro_tile")
    split, local = mm.get_int("split_k") or 1, mm.get_int("local_split") or 1
    t = estimate(m, n, k, dt, ELEMENT_BYTES[dt], tuple(macro), mm.get_int("k_step"), split, local, "workspace",
                 plan_board("gfx906", gpu), c_esize=ELEMENT_BYTES[C_TYPE[dt]]).seconds
    assert t <= brute_best(m, n, k, dt, gpu) * (1 + 1e-9), (macro, split, local, text)
    # the workgroup fits one CU: its L x waves no more than the CU holds of the tile without a local split
    assert local <= variant(dt, tuple(macro), mm.get_int("k_step"), plan_board("gfx906", gpu)).wgs_per_cu, text
