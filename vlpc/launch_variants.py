"""Launch-time plan variants of a kernel whose sizes are given at launch (``?`` in the IR).

A kernel with static sizes gets the plan the model finds best for them (``gemm-tile`` and
``gemm-split-k``: macro tile N, split S); one compiled before its sizes are known cannot, so
:func:`vlpc.compile` builds it in a few **variants** of the same code object (macro tile N and
split-K S, :data:`VARIANT_PLANS`) and the host picks one per launch by the plan model
(:func:`choose`, :mod:`vlpc.plan_model`), as rocBLAS picks a solution per size from its logic
files.  Every variant computes the same product with the same arguments (a split variant adds the
workspace, allocated at launch); the first kernel (the plan ``vlpc compile`` built before variants
existed) is kept on ties, and for an M below its macro tile M (its row-narrow companions run).

Variants are built only when no plan option is given (macro/micro tile, K step, split-K, local
split, waves per SIMD; strategy ``sqc`` with the default schedule), for an unbatched GEMM with M,
N or K dynamic and plain (not quantized) B, whose plan copies neither A nor B first.  ``vlpc compile --emit hip-launcher`` launches the
first kernel (correct for every size; the per-launch choice is the Python host's).

Why these variants (modeled, timing model, MI60 @ 1800 MHz): the first kernel (32x256, S = 1)
leaves a 1024^3 SGEMM with 128 workgroups on 64 CUs, 5.39 TFLOP/s against 10.54 for the static
plan.  The plan surrogate refitted on the corrected timing model plans static f32/f64 GEMMs on
32x64 tiles with S from 1 (4096x4096x640, 4096^3) to 8 (skinny, deep K), so the variants are 32x64
with S = 1, 2, 4, 8 (S a power of two: a K known only at launch is divided by shifting,
``gemm-split-k``).  The f16/int8 dot kernels' automatic plan also weighs a local split L; the
surrogate refitted on the kernels with the A touch plans a few tiles of deep K with 32x64 L = 8
(S = 1: 512x512x4096, 128x4096x4096; S = 4: 256x256x8192, 64x1024x8192, MI60), 1.1x to 2x faster
than the best split-only variant (modeled), so those two are variants of f16/int8 kernels too; at
1024^3 and 4096x4096x640 the static plan is 32x64 S1 L1 (K step 8 for f16 1024^3 on MI60) and no
local-split variant wins.  A variant models within 1.5 % of its static twin: 1024^3 at 32x64 S = 2,
182.2 vs 179.8 us (``vlpc bench examples/sgemm_dynamic.mlir -m 1024 -n 1024 -k 1024 --gpu mi60
--macro-tile 32x64 --split-k 2`` against the same module with static sizes); 4096x4096x640 at
32x64 S = 1, 1,811.5 vs 1,789.7 us.
"""

from __future__ import annotations

#: Extra plans (macro tile N, split-K S[, local split L: 1 when not given]) per A/B element type,
#: besides the first kernel's.  The f16/int8 dot kernels also carry 32x64 with L = 8 (S = 1 and 4):
#: the plan surrogate, whose dot variants model L, plans static f16/int8 GEMMs of few tiles and
#: deep K so (512x512x4096, 128x4096x4096, 256x256x8192 on MI60), up to 2x faster than the best
#: split-only variant (modeled); f32/f64 get no L (their automatic plan never takes one).
VARIANT_PLANS = {
    "f32": ((64, 1), (64, 2), (64, 4), (64, 8)),
    "f64": ((64, 1), (64, 2), (64, 4), (64, 8)),
    "f16": ((64, 1), (64, 2), (64, 4), (64, 8), (64, 1, 8), (64, 4, 8)),
    "i8": ((64, 1), (64, 2), (64, 4), (64, 8), (64, 1, 8), (64, 4, 8)),
}
#: Rows M of the decode GEMV variants of an f16/int8 kernel whose M is given at launch (K static):
#: the module compiled again with this static M gets the decode GEMV plan (``gemv_plan``); a launch
#: of exactly that M runs it (the static kernel's own plan and code).
GEMV_ROWS = (1, 4, 16)
#: Options that fix a plan: given any, only the first kernel is built.
PLAN_OPTIONS = ("macro_tile", "micro_tile", "k_step", "waves_per_simd")
#: Kernel-name suffix of variant ``i`` (1, 2, ...).
SUFFIX = "_var{}"


def wanted(options: dict) -> bool:
    """Whether ``options`` (of :func:`vlpc.compile`) leave the plan to vlpc, so variants may be built."""
    if any(options.get(x) is not None for x in PLAN_OPTIONS):
        return False
    return (options.get("split_k", "auto") == "auto" and options.get("local_split", 1) == 1
            and options.get("strategy", "sqc") == "sqc" and options.get("schedule", "default") == "default")


def plans_for(launch_info: dict) -> tuple[tuple, ...]:
    """The extra plans for the first kernel of ``launch_info`` (the compiled IR's facts): ``("tile",
    macro N, S, L)`` (without the first kernel's own) and ``("rows", M, 0)`` (the decode GEMV at a static
    M: :data:`GEMV_ROWS`, f16/int8 with M given at launch and K static); () when it gets none (static
    sizes, a batch, quantized B, no listed type)."""
    from vlpc.dialects.gemm import DOT_PACK

    li = launch_info
    if li.get("role") or li.get("b_format") or li.get("batch", 0) != 0:
        return ()
    if min(li.get(f"static_{x}", 0) for x in "mnk") >= 0:
        return ()
    if any(x.endswith(("_transpose", "_copy_b")) for x in str(li.get("plan", "")).split(",")):
        return ()  # (a plan copying A or B first: not varied yet)
    own = (li.get("macro_n"), li.get("split_k", 1), li.get("local_split", 1))
    dtype = str(li.get("dtype"))
    plans = [("tile", *p) for p in (x + (1,) * (3 - len(x)) for x in VARIANT_PLANS.get(dtype, ())) if p != own]
    if dtype in DOT_PACK and li.get("static_m", 0) < 0 and li.get("static_k", -1) >= 0:
        plans += [("rows", m, 0) for m in GEMV_ROWS]
    return tuple(plans)


def choose(first, variants: list, m: int, n: int, k: int):
    """The kernel among ``first`` and ``variants`` (:class:`vlpc.kernel.CompiledKernel`) the plan
    model (:func:`vlpc.plan_model.estimate`, beta != 0 assumed) finds fastest for ``m x n x k`` on
    the board the module was compiled for (``plan_gpu``, ``plan_cus`` in the first kernel's launch
    information); ties keep the earlier one (the first kernel first).  A decode GEMV variant runs
    a launch of exactly its static M; an M below the first kernel's macro tile M otherwise keeps the
    first kernel (its row-narrow companions)."""
    from vlpc.dialects.gemm import ELEMENT_BYTES
    from vlpc.plan_model import estimate, plan_board

    li = first.launch_info
    board = plan_board(str(li.get("plan_target", "gfx906")), str(li.get("plan_gpu", "")), int(li.get("plan_cus", 0)))
    dtype = str(li.get("dtype", "f32"))
    c_type = str(li.get("c_type", "")) or {"f16": "f32", "i8": "i32"}.get(dtype, dtype)

    def seconds(kern) -> float:
        x = kern.launch_info
        return estimate(m, n, k, dtype, ELEMENT_BYTES[dtype], (int(x["macro_m"]), int(x["macro_n"])),
                        int(x["k_step"]), int(x.get("split_k", 1)), int(x.get("local_split", 1)),
                        str(x.get("split_mode", "workspace")), board, c_esize=ELEMENT_BYTES[c_type]).seconds

    for v in variants:  # a decode GEMV variant compiled for exactly this M
        if v.launch_info.get("static_m", -1) == m:
            return v
    cands = [first, *(v for v in variants if v.launch_info.get("static_m", -1) < 0)]
    if m < int(li["macro_m"]):  # the first kernel's row-narrow companions
        return first
    return min(cands, key=lambda c: round(seconds(c), 12))


__all__ = ["GEMV_ROWS", "PLAN_OPTIONS", "SUFFIX", "VARIANT_PLANS", "choose", "plans_for", "wanted"]
