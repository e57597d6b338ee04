#!/usr/bin/env python3
"""Differential testing of vlpc: random GEMMs compiled, run on the strict emulator and
checked against a float64 NumPy reference written here (independent of vlpc/verify.py).

Each case draws a problem: f32 or f64; layout NN/NT/TN/TT; M, N, K; leading dimensions
(minimal or padded); sizes and leading dimensions static or given at launch ('?');
alpha and beta (0 included: BLAS says A/B, resp. C, are then not read, so those buffers
hold NaN); fused epilogues (bias_row, bias_col, relu, gelu); split-K plans (S, workspace
or atomic mode, local split); strided batches (batch strides with gaps, stride 0 for A
or B, a batch count given at launch); linalg forms (named ops, indexing-map forms,
linalg.generic, a zero fill before); strategies sqc and lds.  Buffers are sized exactly
to the data or have a tail, and everything outside the matrices is NaN or finite
garbage.  With ``--types`` including f16 or i8 (the default), cases of the dot kernels too
(``draw_dot_case``): A/B f16 with C f32 or f16, A/B i8 with C i32 (exact, two's complement
wrap of i32 alpha/beta) or dequantized f32/f16 C (scale_row, scale_col), every layout, odd M,
N, K (K % 2, K % 4 leftovers), the A-transpose pre-kernel (``a_transpose``), the decode GEMV
plan (static M 1..16 and K), split-K in workspace mode (auto or explicit S), local splits,
epilogues (not for i32 C) and linalg.generic (extf / extsi bodies); the reference is
float64 (int8: int64) math on the inputs with docs/kernels.md's bounds (``dot_expected``) and the
cross-check is ``vlpc.verify.check``.  On top of either draw, ``draw_extras`` (a random stream of
its own) adds what the base draws never pick: targets gfx900 and ids with features (the
emulator runs the same target), code object v4, waves per SIMD, the other K step, schedules
cover and seed, no forwarding, the default and other macro tiles, micro tiles, local splits 8
and 16, --gpu/--cus, a deep K that the automatic plan splits (or S up to 32), some but not all
sizes at launch, K at launch off the K step, identity memref layouts, alpha/beta -0.0, and tiny
values (subnormal C: the bound allows gradual underflow only, so a flush is a wrong result).
A case is compiled with vlpc, launched on the strict emulator through
``CompiledKernel.execute`` (its workspace full of garbage, as hipMalloc gives it) and checked;
a fifth of the passing cases run again through ``vlpc.run`` (``api_check``: C bit for bit):

* ``wrong result``: an element of C outside this tool's error bound (a loose
  Higham-style bound, 2 (K+4) u (|alpha||A||B| + |beta||C| + |bias|) plus epilogue terms),
  or NaN/Inf where the reference has none (or the reverse);
* ``padding modified`` / ``input modified``: a bit of C outside the matrices, or of A, B
  or the bias, changed;
* ``false verdict`` / ``missed by vlpc.verify``: vlpc's own check (``vlpc.verify.check``,
  what ``vlpc run`` and ``vlpc.run`` use) disagrees with this tool;
* ``refused`` (compile or launch; a one-line VlpcError), ``device fault`` (the emulator's
  checkers), ``internal error`` / ``crash`` (a traceback: always a bug).

Usage::

    python tools/difftest.py --minutes 10 --seed 1        # a session; prints a summary
    python tools/difftest.py --seed 1 --case 17 --show    # reproduce case 17 of seed 1

Each failure is printed with its category, what was wrong and the command reproducing it.
Exit status: 0 when no case failed (refusals are counted, not failures), 1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field

import numpy as np

U = {"f32": 2.0**-24, "f64": 2.0**-53}
NPT = {"f32": np.float32, "f64": np.float64}
UINT = {"f32": np.uint32, "f64": np.uint64}
#: share of the passing cases run again through vlpc.run (api_check)
API_SHARE = 0.2
FAILURES = ("wrong result", "padding modified", "input modified", "false verdict", "missed by vlpc.verify",
            "device fault", "internal error", "crash")


@dataclass
class Case:
    """One random problem (everything needed to rebuild it)."""

    seed: int
    index: int
    form: str = "gemm"            # gemm | linalg-named | linalg-generic
    dtype: str = "f32"
    layout: str = "NT"
    m: int = 1
    n: int = 1
    k: int = 1
    pads: tuple = (0, 0, 0)       # leading dimension minus the row length, A B C
    dyn_sizes: bool = False
    dyn_ld: bool = False
    alpha: float = 1.0
    beta: float = 0.0
    epilogue: tuple = ()
    batch: int = 0                # 0: not batched
    dyn_batch: bool = False
    strides: tuple = (0, 0, 0)
    options: dict = field(default_factory=dict)
    exact: bool = True            # buffers end at the last element of the last matrix
    fill: str = "nan"             # what is outside the matrices: nan | garbage
    special: str = ""             # "", nan_c (beta != 0: NaN reaches C), inf_a (an Inf in A)
    fill_zero: bool = False       # linalg: a zero fill before the product (beta = 0)
    ab: str = ""                  # the dot kernels: A/B type f16 | i8 ("": f32/f64, dtype)
    ct: str = ""                  # the dot kernels: C type f32 | f16 | i32 (i8 with f32/f16: dequantized)
    target: str = "gfx906"        # vlpc.compile's target id (the emulator runs the same one)
    dyn_dims: str = ""            # with dyn_sizes: which of M, N, K are '?' ("": all three)
    plain: bool = False           # identity memref layouts (no strided<>) where pads and strides allow
    tiny: bool = False            # f32/f64: A, B scaled by 2^-TINY_EXP, C and bias by 2^-2 TINY_EXP (C subnormal);
    #                               f16: A, B by 2^-8, C and bias by 2^-16 (f16 C subnormal)

    def is_dyn(self, dim: str) -> bool:
        """Whether size ``dim`` (M, N or K) is '?' in the IR (given at launch)."""
        return self.dyn_sizes and (not self.dyn_dims or dim in self.dyn_dims)

    def dim_names(self) -> dict:
        lay = self.layout
        return {"A": ("M", "K") if lay[0] == "N" else ("K", "M"), "B": ("K", "N") if lay[1] == "N" else ("N", "K"),
                "C": ("M", "N")}

    def rows_cols(self) -> dict:
        m, n, k, lay = self.m, self.n, self.k, self.layout
        return {"A": (m, k) if lay[0] == "N" else (k, m), "B": (k, n) if lay[1] == "N" else (n, k), "C": (m, n)}

    def lds(self) -> tuple:
        rc = self.rows_cols()
        return tuple(rc[x][1] + p for x, p in zip("ABC", self.pads))


TYPES = ("f32", "f64", "f16", "i8")


def draw(seed: int, index: int, types: tuple = TYPES) -> Case:
    """The case ``index`` of session ``seed`` over the element types ``types`` (A/B's: f32,
    f64, or the dot kernels' f16 and i8; deterministic for the same ``types``)."""
    fam = types[int(np.random.default_rng([seed, index, 9]).integers(len(types)))]
    if fam in ("f16", "i8"):
        return draw_dot_case(seed, index, fam)
    floats = tuple(x for x in types if x in ("f32", "f64"))
    return draw_case(seed, index, None if len(floats) == 2 else fam)


def draw_case(seed: int, index: int, dtype: str | None = None) -> Case:
    """The f32/f64 case ``index`` of session ``seed`` (deterministic; ``dtype`` forces the type)."""
    rng = np.random.default_rng([seed, index])

    def pick(seq, p=None):
        return seq[int(rng.choice(len(seq), p=p))]

    c = Case(seed, index)
    c.form = pick(["gemm", "linalg-named", "linalg-generic"], [0.7, 0.15, 0.15])
    c.dtype = pick(["f32", "f64"], [0.7, 0.3])
    c.dtype = dtype or c.dtype
    c.layout = pick(["NN", "NT", "TN", "TT"])
    strategy = "lds" if (c.form == "gemm" and c.dtype == "f32" and rng.random() < 0.1) else "sqc"
    mt_m = 64 if c.dtype == "f32" else 32
    mt_n = pick([64, 128, 256], [0.5, 0.3, 0.2])
    k_step = 16 if c.dtype == "f32" else 8
    opts: dict = {"macro_tile": (mt_m, mt_n)}
    if strategy == "lds":
        c.layout = "NT"
        opts["strategy"] = "lds"
        c.m, c.n, c.k = mt_m * int(rng.integers(1, 3)), mt_n * int(rng.integers(1, 3)), k_step * int(rng.integers(1, 5))
    else:
        c.m = int(pick([rng.integers(1, 9), rng.integers(1, 70), rng.integers(60, 200)], [0.2, 0.5, 0.3]))
        c.n = int(pick([rng.integers(1, 9), rng.integers(1, 80), rng.integers(60, 300)], [0.15, 0.55, 0.3]))
        c.k = int(pick([rng.integers(1, 9), rng.integers(1, 64), rng.integers(64, 200)], [0.2, 0.5, 0.3]))
    c.pads = tuple(int(pick([0, 0, 1, 3, 17])) for _ in range(3))
    if strategy == "lds":
        c.pads = (0, 0, 0)
    c.dyn_sizes = strategy == "sqc" and rng.random() < 0.35
    c.dyn_ld = c.dyn_sizes or (strategy == "sqc" and rng.random() < 0.2)
    if c.dyn_sizes:
        c.k = max(k_step, -(-c.k // k_step) * k_step)  # a multiple of the K step here; draw_extras draws others
    # alpha, beta (BLAS quick returns at 0)
    if c.form == "gemm":
        c.alpha = float(pick([1.0, -1.5, 0.5, 0.0], [0.45, 0.25, 0.15, 0.15]))
        c.beta = float(pick([0.0, 1.0, 0.5, -2.0], [0.4, 0.2, 0.2, 0.2]))
    else:
        c.fill_zero = rng.random() < 0.4
        c.alpha, c.beta = 1.0, (0.0 if c.fill_zero else 1.0)
    # epilogue
    if c.form == "gemm" and strategy == "sqc" and rng.random() < 0.35:
        ops = ["bias_row", "bias_col", "relu"] + (["gelu"] if c.dtype == "f32" else [])
        chain = [pick(ops) for _ in range(int(rng.integers(1, 3)))]
        biases = [x for x in chain if x.startswith("bias")]
        c.epilogue = tuple([x for x in chain if not x.startswith("bias")] + biases[:1]) if rng.random() < 0.5 \
            else tuple(biases[:1] + [x for x in chain if not x.startswith("bias")])
    # batches
    if c.form == "gemm" and strategy == "sqc" and rng.random() < 0.25:
        c.batch = int(rng.integers(1, 4))
        c.dyn_batch = c.dyn_sizes and rng.random() < 0.5
        rc, lds = c.rows_cols(), c.lds()
        strides = []
        for x, ld in zip("ABC", lds):
            rows, cols = rc[x]
            if x != "C" and rng.random() < 0.25:
                strides.append(0)
            else:
                gap = int(pick([0, 0, 3, 64]))  # C: at least M x ldc, so the matrices never overlap (rocBLAS)
                strides.append(rows * ld + gap)
        c.strides = tuple(strides)
    # split plans
    if strategy == "sqc" and rng.random() < 0.4:
        if not c.batch:
            s = int(pick([1, 2, 3, 4, 8]))
            if c.dyn_sizes and s & (s - 1):
                s = 4
            opts["split_k"] = s
            if s > 1 and rng.random() < 0.3 and not any(x in ("relu", "gelu") for x in c.epilogue):
                opts["split_mode"] = "atomic"
        else:
            opts["split_k"] = 1
        if rng.random() < 0.3:
            opts["local_split"] = int(pick([2, 4]))
            if mt_n * opts["local_split"] > 1024:
                opts["local_split"] = 2
    if c.form != "gemm":
        c.epilogue, c.batch = (), 0
    c.options = opts
    c.exact = rng.random() < 0.7
    c.fill = pick(["nan", "garbage"])
    # NaN/Inf that the result must carry (no epilogue: relu/gelu of NaN is a semantic choice)
    if not c.epilogue and rng.random() < 0.1:
        if c.beta != 0:
            c.special = "nan_c"
        elif c.alpha != 0:
            c.special = "inf_a"
    draw_extras(c, np.random.default_rng([seed, index, 3]))
    return c


#: the scale of tiny cases (Case.tiny): products and C near 2^-140 (f32) / 2^-1060 (f64), subnormal
#: results with about 10 significant bits: a kernel flushing subnormals (or an emulator doing so
#: against the descriptor's FLOAT_DENORM_MODE) returns 0 there, far outside the bound
TINY_EXP = {"f32": 70, "f64": 530}

#: local splits beyond the base draw's 2 and 4 (docs/plans.md: L x macro N work-items, at most 1024)
WIDE_LOCAL = (8, 16)


def draw_extras(c: Case, rng: np.random.Generator, gemv: bool = False) -> None:
    """Add to case ``c`` (in place) the options and forms the base draws never pick, from a
    stream of its own (``rng``) so the base draw is unchanged: target gfx900 and a target id
    with features, code object v4, ``--waves-per-simd``, the other ``--k-step``, ``--schedule
    cover`` and ``seed`` (rebuilding the problem as the seed's kernel needs it: f32 NT, whole
    64x256 tiles, K a multiple of 8, no split, epilogue or batch), ``--no-forwarding``, the
    default and other macro tiles (rows 8/16/32, N automatic), an explicit micro tile, local
    splits 8 and 16, ``--gpu`` and ``--cus`` (the automatic plan), ``--wg-group``, some but not all sizes given
    at launch, a K given at launch that is not a multiple of the K step (docs/inputs.md: an unrolled
    tail), and identity memref layouts (no ``strided<>``).  ``gemv``: a dot case drawn for the
    decode GEMV plan (M and K stay static)."""

    def pick(seq, p=None):
        return seq[int(rng.choice(len(seq), p=p))]

    o = c.options
    lds = o.get("strategy") == "lds"
    dot = bool(c.ab)
    if rng.random() < 0.04 and not dot and c.form == "gemm" and c.dtype == "f32":
        # the seed's hand-written loop (docs/kernels.md: f32, layout NT, M/N/K multiples of 64/256/8)
        c.layout, c.epilogue, c.batch, c.dyn_batch, c.strides = "NT", (), 0, False, (0, 0, 0)
        c.m, c.n, c.k = 64 * int(rng.integers(1, 3)), 256 * int(rng.integers(1, 3)), 8 * int(rng.integers(1, 25))
        c.dyn_sizes = False
        o.clear()
        o.update(schedule="seed", macro_tile=(64, 256), split_k=1)
        lds = True  # below: waves per SIMD 1 or 2, then nothing that changes the seed's tile or split
        if rng.random() < 0.3:
            o["forwarding"] = False
    # a deep K (small M, N): the automatic split-K plan splits (slices of at least
    # gemm_split_k.MIN_K_PER_SPLIT values, S up to 32, uneven last slices), or an explicit large S
    if rng.random() < 0.08 and not lds and not gemv and not c.batch and not c.dyn_sizes:
        c.k = int(rng.integers(300, 1500)) * DOT_PACK.get(c.ab, 1)
        c.m, c.n = min(c.m, 40), min(c.n, 70)
        if rng.random() < 0.5:
            o.pop("split_k", None)
            o.pop("split_mode", None)
        else:
            o["split_k"] = int(pick([3, 5, 7, 13, 32]))
    # sizes: some of M, N, K at launch; a K at launch that is not a multiple of the K step
    if c.dyn_sizes and rng.random() < 0.35:
        dims = pick(["M", "N", "K", "MN", "MK", "NK"])
        if not ("K" in dims and any(isinstance(o.get(x), int) and o.get(x, 1) & (o.get(x, 1) - 1)
                                    for x in ("split_k", "local_split"))):
            c.dyn_dims = dims
    if gemv and rng.random() < 0.2:  # the GEMV plan keeps M and K static; N may come at launch
        c.dyn_sizes, c.dyn_dims = True, "N"
    if not dot and c.is_dyn("K") and rng.random() < 0.5:
        c.k = max(1, c.k - int(rng.integers(1, 16)))
    if rng.random() < 0.3:
        c.plain = True
    if (not dot or c.ab == "f16") and rng.random() < 0.06:
        c.tiny = True
    # BLAS compares alpha and beta with zero: -0.0 is zero too (A and B, resp. C, not read)
    if c.form == "gemm" and (not dot or _dot_scalar(c) == "f32"):
        if c.alpha == 0 and rng.random() < 0.3:
            c.alpha = -0.0
        if c.beta == 0 and rng.random() < 0.3:
            c.beta = -0.0
    # target, code object
    r = rng.random()
    if r < (0.03 if dot else 0.15):
        c.target = "gfx900"  # dot: a located error naming v_dot2_f32_f16 (a refusal)
    elif r < (0.08 if dot else 0.2):
        c.target = pick(["gfx906:sramecc+:xnack-", "gfx906:xnack+"] if c.target == "gfx906" else ["gfx900:xnack-"])
    if rng.random() < 0.1:
        o["code_object_version"] = 4
    if rng.random() < 0.15:
        o["waves_per_simd"] = int(pick([1, 2, 3, 4, 6, 8] if not lds else [1, 2]))
    if o.get("schedule") == "seed":
        return
    if rng.random() < 0.2:
        o["k_step"] = int(pick([8, 16]))
    if lds:
        return
    if rng.random() < 0.2:
        o["schedule"] = "cover"
    if rng.random() < 0.15:
        o["forwarding"] = False
    if rng.random() < 0.3 and not gemv:
        rows = {"f32": [8, 16, 32], "f64": [8, 16], "f16": [8, 16, 32], "i8": [8, 16, 32]}[c.dtype]
        o["macro_tile"] = pick([None, None, (pick(rows), pick([64, 128, 256]))])
        if o["macro_tile"] is None:
            del o["macro_tile"]
    if "macro_tile" in o and rng.random() < 0.15:
        o["micro_tile"] = (o["macro_tile"][0], 1)
    if rng.random() < 0.08 and not gemv:
        mt_n = o["macro_tile"][1] if "macro_tile" in o else 64
        o["macro_tile"] = o.get("macro_tile", (32 if c.dtype != "f64" else 16, 64))
        local = int(pick([x for x in WIDE_LOCAL if x * mt_n <= 1024] or [2]))
        if not (c.is_dyn("K") and o.get("split_k", 1) not in (1, 2, 4, 8, "auto")):
            o["local_split"] = local
    if rng.random() < 0.1:
        o["gpu"] = "mi25" if c.target.startswith("gfx900") else pick(["mi50", "mi60"])
    if rng.random() < 0.1:
        o["cus"] = int(pick([1, 4, 16, 120]))
    if rng.random() < 0.1:  # the grouped workgroup order (docs/kernels.md), last partial groups included
        o["wg_group"] = int(pick([1, 2, 4, 8]))


# -- the MLIR text --------------------------------------------------------------------------------

def _memref(c: Case, x: str, dt: str) -> str:
    """The memref type of operand ``x`` (A, B or C) of case ``c`` with element type ``dt``:
    '?' for the sizes given at launch, strided<[stride, ld, 1]>, or the identity layout
    (``c.plain``) when it means the same (no row padding, batch stride rows x ld)."""
    i = "ABC".index(x)
    rows, cols = c.rows_cols()[x]
    names = c.dim_names()[x]
    ld, stride = c.lds()[i], c.strides[i]
    dyn = any(c.is_dyn(nm) for nm in names)
    r, cc = ("?" if c.is_dyn(nm) else v for nm, v in zip(names, (rows, cols)))
    ldt = "?" if c.dyn_ld else ld
    plain = c.plain and c.pads[i] == 0 and (not c.batch or stride == rows * ld)
    if c.batch:
        b = "?" if c.dyn_batch else c.batch
        if plain:
            return f"memref<{b}x{r}x{cc}x{dt}>"
        st = "?" if (c.dyn_ld or c.dyn_batch or dyn) else stride
        return f"memref<{b}x{r}x{cc}x{dt}, strided<[{st}, {ldt}, 1]>>"
    if plain:
        return f"memref<{r}x{cc}x{dt}>"
    return f"memref<{r}x{cc}x{dt}, strided<[{ldt}, 1]>>"


LINALG_MAPS = {"NN": ("(d0, d2)", "(d2, d1)"), "NT": ("(d0, d2)", "(d1, d2)"),
               "TN": ("(d2, d0)", "(d2, d1)"), "TT": ("(d2, d0)", "(d1, d2)")}


def source(c: Case) -> str:
    """The MLIR module of case ``c``."""
    if c.ab:
        return dot_source(c)
    dt = c.dtype
    t = {x: _memref(c, x, dt) for x in "ABC"}
    if c.form == "gemm":
        has_bias = any(x.startswith("bias") for x in c.epilogue)
        blen = c.m if "bias_row" in c.epilogue else c.n
        bt = f"memref<{'?' if c.is_dyn('M' if 'bias_row' in c.epilogue else 'N') else blen}x{dt}>"
        bias_arg = f", %bias: {bt}" if has_bias else ""
        bias_use = f" bias(%bias : {bt})" if has_bias else ""
        epi = (", epilogue = [" + ", ".join(f'"{x}"' for x in c.epilogue) + "]") if c.epilogue else ""
        return f"""builtin.module {{
  func.func @d(%a: {t['A']}, %b: {t['B']}, %c: {t['C']}, %alpha: {dt}, %beta: {dt}{bias_arg}) {{
    gemm.matmul %a, %b, %c, %alpha, %beta{bias_use} {{layout = "{c.layout}"{epi}}} : {t['A']}, {t['B']}, {t['C']}, {dt}, {dt}
    func.return
  }}
}}
"""
    fill = (f"    %zero = arith.constant 0.0 : {dt}\n    linalg.fill ins(%zero : {dt}) outs(%c : {t['C']})\n"
            if c.fill_zero else "")
    am, bm = LINALG_MAPS[c.layout]
    maps = (f"[affine_map<(d0, d1, d2) -> {am}>, affine_map<(d0, d1, d2) -> {bm}>, "
            "affine_map<(d0, d1, d2) -> (d0, d1)>]")
    ins = f"ins(%a, %b : {t['A']}, {t['B']}) outs(%c : {t['C']})"
    if c.form == "linalg-named":
        named = {"NN": "linalg.matmul", "NT": "linalg.matmul_transpose_b", "TN": "linalg.matmul_transpose_a",
                 "TT": f"linalg.matmul indexing_maps = {maps}"}[c.layout]
        op = f"    {named} {ins}\n"
    else:
        op = (f"""    linalg.generic {{indexing_maps = {maps}, iterator_types = ["parallel", "parallel", "reduction"]}}
      {ins} {{
    ^bb0(%x: {dt}, %y: {dt}, %z: {dt}):
      %p = arith.mulf %x, %y : {dt}
      %s = arith.addf %z, %p : {dt}
      linalg.yield %s : {dt}
    }}
""")
    return f"""builtin.module {{
  func.func @d(%a: {t['A']}, %b: {t['B']}, %c: {t['C']}) {{
{fill}{op}    func.return
  }}
}}
"""


# -- buffers and the reference ---------------------------------------------------------------------

def offsets(c: Case, x: str) -> np.ndarray:
    """Element offsets (batches, rows, cols) of operand ``x``'s matrices in its buffer."""
    rows, cols = c.rows_cols()[x]
    ld = c.lds()["ABC".index(x)]
    nb = max(1, c.batch)
    stride = c.strides["ABC".index(x)] if c.batch else 0
    return (np.arange(nb)[:, None, None] * stride + np.arange(rows)[None, :, None] * ld
            + np.arange(cols)[None, None, :])


def _matrix_buffers(c: Case, rng: np.random.Generator, types: dict) -> dict:
    """Flat host buffers A, B, C of case ``c``: the matrices random, the rest NaN (integers: a
    fixed pattern) or random garbage; BLAS says unread operands (alpha = 0: A and B, beta = 0:
    C) may hold anything, so floats there are NaN; then ``c.special``'s NaN in C / Inf in A.
    ``types``: operand -> (NumPy type, integer range (lo, hi) or None for floats, padding value)."""
    out = {}
    for x in "ABC":
        t, irange, pad = types[x]
        offs = offsets(c, x)
        size = int(offs.max()) + 1 + (0 if c.exact else int(rng.integers(1, 40)))
        if c.fill == "nan":
            buf = np.full(size, pad, t)
        elif irange is None:
            buf = (rng.standard_normal(size) * 1e3).astype(t)
        else:
            buf = rng.integers(*irange, size).astype(t)
        vals = rng.standard_normal(offs.shape).astype(t) if irange is None else rng.integers(*irange, offs.shape).astype(t)
        unread = (x in "AB" and c.alpha == 0) or (x == "C" and c.beta == 0)
        if unread and irange is None:
            vals[...] = np.nan
        buf[offs.reshape(-1)] = vals.reshape(-1)  # stride 0: the last matrix written is the one read
        out[x] = buf
    if c.special == "nan_c":
        oc = offsets(c, "C").reshape(-1)
        out["C"][oc[int(rng.integers(0, oc.size))]] = np.nan
    elif c.special == "inf_a":
        oa = offsets(c, "A").reshape(-1)
        out["A"][oa[int(rng.integers(0, oa.size))]] = np.inf
    return out


def buffers(c: Case, rng: np.random.Generator) -> dict:
    """Host buffers A, B, C (flat) and bias of an f32/f64 case (:func:`_matrix_buffers`)."""
    t = NPT[c.dtype]
    out = _matrix_buffers(c, rng, dict.fromkeys("ABC", (t, None, np.nan)))
    if any(x.startswith("bias") for x in c.epilogue):
        out["bias"] = rng.standard_normal(c.m if "bias_row" in c.epilogue else c.n).astype(t)
    if c.tiny:  # exact power-of-two scaling of the matrices' elements (the padding keeps its values)
        e = TINY_EXP[c.dtype]
        for x in out:
            offs = offsets(c, x).reshape(-1) if x != "bias" else np.arange(out[x].size)
            with np.errstate(invalid="ignore"):
                out[x][offs] = np.ldexp(out[x][offs], -e if x in "AB" else -2 * e)
    return out


def expected(c: Case, bufs: dict) -> tuple[np.ndarray, np.ndarray]:
    """(reference, bound), float64 (batches, M, N): epilogue(alpha op(A) op(B) + beta C) with
    BLAS quick returns, every product summed in IEEE arithmetic (NaN/Inf propagate)."""
    u = U[c.dtype]
    A = bufs["A"][offsets(c, "A")].astype(np.float64)
    B = bufs["B"][offsets(c, "B")].astype(np.float64)
    C = bufs["C"][offsets(c, "C")].astype(np.float64)
    opa = A if c.layout[0] == "N" else np.swapaxes(A, 1, 2)   # batches x M x K
    opb = B if c.layout[1] == "N" else np.swapaxes(B, 1, 2)   # batches x K x N
    nb = max(1, c.batch)
    d = np.zeros((nb, c.m, c.n))
    mag = np.zeros_like(d)
    with np.errstate(invalid="ignore", over="ignore"):
        if c.alpha != 0:
            prod = np.zeros_like(d)
            aprod = np.zeros_like(d)
            for kk in range(c.k):
                prod += opa[:, :, kk, None] * opb[:, None, kk, :]
                aprod += np.abs(opa[:, :, kk, None]) * np.abs(opb[:, None, kk, :])
            d += c.alpha * prod
            mag += abs(c.alpha) * aprod
        if c.beta != 0:
            d += c.beta * C
            mag += abs(c.beta) * np.abs(C)
        e = 2 * (c.k + 4) * u * mag
        for op in c.epilogue:
            if op.startswith("bias"):
                v = bufs["bias"].astype(np.float64)
                v = v[None, :, None] if op == "bias_row" else v[None, None, :]
                d = d + v
                e = e * (1 + u) + 2 * u * (np.abs(d) + np.abs(v))
            elif op == "relu":
                d = np.where(d > 0, d, 0.0)
            elif op == "gelu":
                g = 0.5 * d * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (d + 0.044715 * d**3)))
                e = 1.13 * e + 64 * 2.0**-24 * (np.abs(d) + np.abs(g))
                d = g
        # underflow: the kernels keep subnormals (docs/kernels.md "Float modes", FLOAT_DENORM_MODE 3), so an operation's
        # absolute error is at most half the smallest subnormal (Higham eq. (2.8) with gradual
        # underflow); an epilogue's transcendental may flush: the smallest normal per operation
        fi = np.finfo(NPT[c.dtype])
        e = e + 2 * u * np.abs(d) + (c.k + 10) * float(fi.smallest_subnormal) + len(c.epilogue) * float(fi.tiny)
    return d, e


def compare(c: Case, got: np.ndarray, ref: np.ndarray, bound: np.ndarray, big: float | None = None) -> str:
    """'' when ``got`` matches, else a one-line description of the worst element (``big``: the
    largest finite value of C's type, default ``c.dtype``'s)."""
    big = float(np.finfo(NPT[c.dtype]).max) if big is None else big
    with np.errstate(invalid="ignore", over="ignore"):
        fin = np.isfinite(ref)
        err = np.abs(got - ref)
        ok = np.where(fin, (err <= bound) | (np.isinf(got) & (np.abs(ref) + bound > big) & (np.sign(got) == np.sign(ref))),
                      (got == ref) | (np.isnan(got) & np.isnan(ref)))
    if ok.all():
        return ""
    bad = np.argwhere(~ok)
    z, i, j = (int(v) for v in bad[0])
    return (f"{len(bad)} of {ok.size} elements wrong; first C[{z}][{i},{j}] = {got[z, i, j]!r}, expected "
            f"{ref[z, i, j]!r} (bound {bound[z, i, j]:.3e})")


# -- the f16 / int8 dot kernels (passes/isel/dot.py, passes/isel/transpose.py) --------

#: NumPy types of the dot kernels' element types.
DOT_NP = {"f16": np.float16, "i8": np.int8, "f32": np.float32, "i32": np.int32}
#: bit views of those types (padding compared bit for bit).
DOT_UINT = {"f16": np.uint16, "i8": np.uint8, "f32": np.uint32, "i32": np.uint32}
#: values of K per dword (docs/kernels.md: rows read by dwords need lda, ldb and batch strides multiples of it).
DOT_PACK = {"f16": 2, "i8": 4}
#: "nan" padding of the integer types (a NaN does not exist there: a fixed garbage pattern).
DOT_INT_PAD = {"i8": -77, "i32": 0x5A5A5A5A}


def _dot_dequant(c: Case) -> bool:
    return c.ab == "i8" and c.ct != "i32"


def _dot_scalar(c: Case) -> str:
    return "i32" if c.ab == "i8" and c.ct == "i32" else "f32"


def draw_dot_case(seed: int, index: int, ab: str) -> Case:
    """The case ``index`` of session ``seed`` for A/B of type ``ab`` (f16 or i8; deterministic).

    docs/kernels.md "f16 and int8 through the dot instructions": C f32/f16 for f16 products, i32 or
    (dequantized with scale_row/scale_col) f32/f16 for int8; any M, N, K (K % 2, K % 4
    leftovers); all four layouts; the A-transpose pre-kernel for TN/TT; the decode GEMV
    plan for a static M of 1..16 and static K; split-K in workspace mode (atomic is refused);
    epilogues for every C but i32; linalg.generic with extf / extsi bodies."""
    rng = np.random.default_rng([seed, index, 2])

    def pick(seq, p=None):
        return seq[int(rng.choice(len(seq), p=p))]

    c = Case(seed, index)
    c.ab = c.dtype = ab
    c.ct = pick(["f32", "f16"]) if ab == "f16" else pick(["i32", "f32", "f16"], [0.5, 0.25, 0.25])
    # linalg.generic raises f16 x f16 -> f32 (extf) and i8 x i8 -> i32 (extsi) (docs/kernels.md)
    c.form = "linalg-generic" if c.ct == {"f16": "f32", "i8": "i32"}[ab] and rng.random() < 0.12 else "gemm"
    c.layout = pick(["NN", "NT", "TN", "TT"])
    pk = DOT_PACK[ab]
    opts: dict = {}
    gemv = c.form == "gemm" and rng.random() < 0.25
    if gemv:  # the decode GEMV plan: static M 1..16 and K (16 groups need K >= 128 dwords from M = 4)
        c.m = int(rng.integers(1, 17))
        c.n = int(rng.integers(64, 129))
        c.k = int(pick([rng.integers(1, 131), rng.integers(130, 160 * pk)]))
    else:
        c.m = int(pick([rng.integers(1, 9), rng.integers(1, 65)], [0.3, 0.7]))
        c.n = int(pick([rng.integers(1, 9), rng.integers(1, 80)], [0.25, 0.75]))
        c.k = int(pick([rng.integers(1, 9), rng.integers(1, 64), rng.integers(64, 131)], [0.25, 0.45, 0.3]))
    pads = [int(pick([0, 0, 1, 2, 3, 5, 17])) for _ in range(3)]
    rc = c.rows_cols()
    # A stored M x K (and B stored N x K) is read by dwords: a leading dimension (batch stride)
    # not a multiple of 2 (f16) / 4 (i8) is copied into the workspace first when static (the
    # copy kernels of passes/isel/transpose.py) and refused when given at launch
    aligned = rng.random() < 0.75
    for i, x in ((0, "A"), (1, "B")):
        if ((x == "A" and c.layout[0] == "N") or (x == "B" and c.layout[1] == "T")) and aligned:
            cols = rc[x][1]
            pads[i] = -(-(cols + pads[i]) // pk) * pk - cols
    c.pads = tuple(pads)
    c.dyn_sizes = not gemv and rng.random() < 0.3
    c.dyn_ld = c.dyn_sizes or rng.random() < 0.2
    if c.form == "gemm":
        if _dot_scalar(c) == "i32":  # two's complement wrap (docs/kernels.md)
            c.alpha = float(pick([1, -3, 2, 0, 98765], [0.4, 0.2, 0.1, 0.15, 0.15]))
            c.beta = float(pick([0, 1, -2, 7, 0x12345], [0.4, 0.2, 0.15, 0.1, 0.15]))
        else:
            c.alpha = float(pick([1.0, -1.5, 0.5, 0.0], [0.45, 0.25, 0.15, 0.15]))
            c.beta = float(pick([0.0, 1.0, 0.5, -2.0], [0.4, 0.2, 0.2, 0.2]))
    else:
        c.fill_zero = rng.random() < 0.5
        c.alpha, c.beta = 1.0, (0.0 if c.fill_zero else 1.0)
    if c.form == "gemm" and c.ct != "i32" and rng.random() < 0.35:  # int8 -> i32 fuses none
        chain = [pick(["bias_row", "bias_col", "relu", "gelu"]) for _ in range(int(rng.integers(1, 3)))]
        biases = [x for x in chain if x.startswith("bias")]
        rest = [x for x in chain if not x.startswith("bias")]
        c.epilogue = tuple(rest + biases[:1]) if rng.random() < 0.5 else tuple(biases[:1] + rest)
    if c.form == "gemm" and not gemv and rng.random() < 0.2:
        c.batch = int(rng.integers(1, 4))
        c.dyn_batch = c.dyn_sizes and rng.random() < 0.5
        lds = c.lds()
        strides = []
        for x, ld in zip("ABC", lds):
            rows, _ = rc[x]
            if x != "C" and rng.random() < 0.25:
                strides.append(0)
            else:
                gaps = [0, 0, pk, 16 * pk] + ([] if aligned else [3])  # unaligned: copied first, or refused
                strides.append(rows * ld + int(pick(gaps) if x != "C" else pick([0, 0, 3, 64])))
        c.strides = tuple(strides)
    if rng.random() < 0.45:
        if c.batch:
            opts["split_k"] = 1
        else:
            s = pick([1, 2, 3, 4, "auto"])
            if c.dyn_sizes and s not in (1, 2, 4, "auto"):
                s = 4
            opts["split_k"] = s
        if not gemv and rng.random() < 0.25:
            opts["local_split"] = int(pick([2, 4]))
    if not gemv and rng.random() < 0.15:
        opts["macro_tile"] = pick([(8, 64), (16, 64), (32, 64), (32, 128)])  # 64 rows: over the SGPR budget
    if c.layout[0] == "T" and rng.random() < 0.7:
        opts["a_transpose"] = pick(["auto", "pre", "in-kernel"])
    c.options = opts
    c.exact = rng.random() < 0.7
    c.fill = pick(["nan", "garbage"])
    if not c.epilogue and c.ct != "i32" and rng.random() < 0.1:
        if c.beta != 0:
            c.special = "nan_c"
        elif c.alpha != 0 and ab == "f16":
            c.special = "inf_a"
    draw_extras(c, np.random.default_rng([seed, index, 3]), gemv)
    return c


def dot_source(c: Case) -> str:
    """The MLIR module of dot case ``c``."""
    tys = {"A": c.ab, "B": c.ab, "C": c.ct}
    t = {x: _memref(c, x, tys[x]) for x in "ABC"}
    st = _dot_scalar(c)
    if c.form == "gemm":
        args, extra = "", ""
        if any(x.startswith("bias") for x in c.epilogue):
            blen = c.m if "bias_row" in c.epilogue else c.n
            bdim = "M" if "bias_row" in c.epilogue else "N"
            bt = f"memref<{'?' if c.is_dyn(bdim) else blen}x{'f32' if _dot_dequant(c) else c.ab}>"
            args += f", %bias: {bt}"
            extra += f" bias(%bias : {bt})"
        if _dot_dequant(c):
            sr = f"memref<{'?' if c.is_dyn('M') else c.m}xf32>"
            sc = f"memref<{'?' if c.is_dyn('N') else c.n}xf32>"
            args += f", %sr: {sr}, %sc: {sc}"
            extra += f" scales(%sr, %sc : {sr}, {sc})"
        epi = (", epilogue = [" + ", ".join(f'"{x}"' for x in c.epilogue) + "]") if c.epilogue else ""
        return f"""builtin.module {{
  func.func @d(%a: {t['A']}, %b: {t['B']}, %c: {t['C']}, %alpha: {st}, %beta: {st}{args}) {{
    gemm.matmul %a, %b, %c, %alpha, %beta{extra} {{layout = "{c.layout}"{epi}}} : {t['A']}, {t['B']}, {t['C']}, {st}, {st}
    func.return
  }}
}}
"""
    zero = "0.0" if c.ct == "f32" else "0"
    fill = (f"    %zero = arith.constant {zero} : {c.ct}\n    linalg.fill ins(%zero : {c.ct}) outs(%c : {t['C']})\n"
            if c.fill_zero else "")
    am, bm = LINALG_MAPS[c.layout]
    maps = (f"[affine_map<(d0, d1, d2) -> {am}>, affine_map<(d0, d1, d2) -> {bm}>, "
            "affine_map<(d0, d1, d2) -> (d0, d1)>]")
    ext, mul, add = ("arith.extf", "arith.mulf", "arith.addf") if c.ab == "f16" else ("arith.extsi", "arith.muli",
                                                                                    "arith.addi")
    return f"""builtin.module {{
  func.func @d(%a: {t['A']}, %b: {t['B']}, %c: {t['C']}) {{
{fill}    linalg.generic {{indexing_maps = {maps}, iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%a, %b : {t['A']}, {t['B']}) outs(%c : {t['C']}) {{
    ^bb0(%x: {c.ab}, %y: {c.ab}, %z: {c.ct}):
      %xe = {ext} %x : {c.ab} to {c.ct}
      %ye = {ext} %y : {c.ab} to {c.ct}
      %p = {mul} %xe, %ye : {c.ct}
      %s = {add} %z, %p : {c.ct}
      linalg.yield %s : {c.ct}
    }}
    func.return
  }}
}}
"""


def dot_buffers(c: Case, rng: np.random.Generator) -> dict:
    """Flat host buffers A, B, C (and bias, scale_row, scale_col) of dot case ``c``: f16
    standard normal, i8 uniform over [-128, 127], i32 C over all 32-bit values; outside the
    matrices NaN (integers: a fixed pattern) or random garbage; unread operands (alpha = 0:
    A and B, beta = 0: C) NaN (integers: garbage)."""
    ranges = {"i8": (-128, 128), "i32": (-2**31, 2**31)}
    out = _matrix_buffers(c, rng, {x: (DOT_NP[ty], ranges.get(ty), DOT_INT_PAD.get(ty, np.nan)) for x, ty in
                                   (("A", c.ab), ("B", c.ab), ("C", c.ct))})
    if any(x.startswith("bias") for x in c.epilogue):
        length = c.m if "bias_row" in c.epilogue else c.n
        out["bias"] = rng.standard_normal(length).astype(np.float32 if _dot_dequant(c) else DOT_NP[c.ab])
    if _dot_dequant(c):
        out["scale_row"] = rng.uniform(-2e-2, 2e-2, c.m).astype(np.float32)
        out["scale_col"] = rng.uniform(-2e-2, 2e-2, c.n).astype(np.float32)
    if c.tiny and c.ab == "f16":  # A, B near 2^-8 (some f16 subnormal), C and bias near 2^-16: f16 C subnormal
        for x in out:
            offs = offsets(c, x).reshape(-1) if x != "bias" else np.arange(out[x].size)
            with np.errstate(invalid="ignore", under="ignore"):
                out[x][offs] = np.ldexp(out[x][offs].astype(np.float64), -8 if x in "AB" else -16).astype(out[x].dtype)
    return out


def dot_expected(c: Case, bufs: dict, pieces: int) -> tuple[np.ndarray, np.ndarray]:
    """(reference, bound) of dot case ``c``, (batches, M, N), from docs/kernels.md's rules: int8 ->
    i32 exact (int64 math wrapped to 32 bits, bound 0); f16 products float64 math on the f16
    inputs with gamma_n(2^-24) (|alpha| |A||B| + |beta| |C|), n = ceil(K/2) + ``pieces`` + 2
    (``pieces``: the partial sums split-K, a local split or the GEMV's groups add); dequantized
    int8 the exact sum then gamma_5(2^-24); each epilogue operation in f32 (bias ``e (1 + u) +
    u |y|``, relu ``e`` with relu(NaN) = 0, gelu ``1.13 e + u |y| (8 + 4 |z|)``, plus 2^-126);
    f16 C its final rounding ``2^-11 |y| + 2^-25``."""
    u = 2.0**-24
    A = bufs["A"][offsets(c, "A")]
    B = bufs["B"][offsets(c, "B")]
    C = bufs["C"][offsets(c, "C")]
    opa = A if c.layout[0] == "N" else np.swapaxes(A, 1, 2)
    opb = B if c.layout[1] == "N" else np.swapaxes(B, 1, 2)
    nb = max(1, c.batch)
    shape = (nb, c.m, c.n)
    if c.ab == "i8" and c.ct == "i32":
        res = np.zeros(shape, np.int64)
        if c.alpha != 0:
            res += np.int64(c.alpha) * np.einsum("zmk,zkn->zmn", opa.astype(np.int64), opb.astype(np.int64))
        if c.beta != 0:
            res += np.int64(c.beta) * C.astype(np.int64)
        return (res + 2**31) % 2**32 - 2**31, np.zeros(shape)
    d = np.zeros(shape)
    mag = np.zeros(shape)
    with np.errstate(invalid="ignore", over="ignore"):
        if c.alpha != 0:
            if c.ab == "i8":
                prod = np.einsum("zmk,zkn->zmn", opa.astype(np.int64), opb.astype(np.int64)).astype(np.float64)
                prod = prod * bufs["scale_row"].astype(np.float64)[None, :, None] \
                    * bufs["scale_col"].astype(np.float64)[None, None, :]
                aprod = np.abs(prod)
            else:
                a64, b64 = opa.astype(np.float64), opb.astype(np.float64)
                prod = np.zeros(shape)
                aprod = np.zeros(shape)
                for kk in range(c.k):  # IEEE: NaN/Inf propagate as they would in any order
                    prod += a64[:, :, kk, None] * b64[:, None, kk, :]
                    aprod += np.abs(a64[:, :, kk, None]) * np.abs(b64[:, None, kk, :])
            d += c.alpha * prod
            mag += abs(c.alpha) * aprod
        if c.beta != 0:
            d += c.beta * C.astype(np.float64)
            mag += abs(c.beta) * np.abs(C.astype(np.float64))
        n_round = 5 if c.ab == "i8" else -(-c.k // 2) + pieces + 2
        e = n_round * u / (1 - n_round * u) * mag
        for op in c.epilogue:
            if op.startswith("bias"):
                v = bufs["bias"].astype(np.float64)
                d = d + (v[None, :, None] if op == "bias_row" else v[None, None, :])
                e = e * (1 + u) + u * np.abs(d)
            elif op == "relu":
                d = np.where(np.isnan(d), 0.0, np.maximum(d, 0.0))
            elif op == "gelu":
                inner = d + 0.044715 * d**3
                g = 0.5 * d * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * inner))
                z = -2.0 * np.log2(np.e) * np.sqrt(2.0 / np.pi) * inner
                e = 1.13 * e + u * np.abs(g) * (8 + 4 * np.abs(z))
                d = g
            e = e + 2.0**-126
        if c.ct == "f16":
            e = e * (1 + 2.0**-11) + 2.0**-11 * np.abs(d) + 2.0**-25
    return d, e


def compile_or_classify(c: Case, text: str):
    """(kernel, None), or (None, (category, detail)) when compiling ``text`` fails: an internal
    error, a refusal (a located one-line VlpcError) or a crash (any other exception: what the
    tool looks for)."""
    from vlpc.errors import VlpcError
    from vlpc.compiler import InternalError

    try:
        return compile_case(c, text), None
    except InternalError as e:
        return None, ("internal error", str(e).splitlines()[0])
    except VlpcError as e:
        return None, ("refused at compile", str(e).splitlines()[0])
    except Exception as e:  # noqa: BLE001 - a crash is what the tool looks for
        return None, ("crash", f"compile: {type(e).__name__}: {e}".splitlines()[0])


def run_dot_case(c: Case) -> tuple[str, str]:
    """:func:`run_case` for an f16 / int8 case: launched through the machinery ``vlpc.run``
    uses for these kernels (:func:`vlpc.verify.kernel_arguments` with
    :func:`vlpc.verify.scalar_type`, ``CompiledKernel.execute``), checked against
    :func:`dot_expected` and cross-checked with :func:`vlpc.verify.check`."""
    from vlpc.verify import check as dot_check
    from vlpc.verify import scalar_type, types_of
    from vlpc.runtime import get_device, load_code_object
    from vlpc.verify import Problem, kernel_arguments

    text = dot_source(c)
    kern, failed = compile_or_classify(c, text)
    if failed:
        return failed
    if types_of(kern) != (c.ab, c.ct, _dot_dequant(c)):
        return "wrong result", f"kernel types {types_of(kern)}, the source's ({c.ab}, {c.ct}, {_dot_dequant(c)})"
    rng = np.random.default_rng([c.seed, c.index, 1])
    bufs = dot_buffers(c, rng)
    lds = c.lds()
    p = Problem(c.m, c.n, c.k, *lds, c.batch, *c.strides)
    st = scalar_type(kern)
    alpha, beta = (int(c.alpha), int(c.beta)) if st is np.int32 else (c.alpha, c.beta)
    dev = get_device("emulator", strict=True, target=c.target)
    garbage_allocs(dev, rng)
    dbufs = {}
    try:
        for x, arr in bufs.items():
            dbufs[x] = dev.upload(arr)
        try:
            args = kernel_arguments(kern, dbufs, p, alpha, beta, scalar=st)
            sizes = {i: bufs[name].nbytes for i, a in enumerate(args) for name, b in dbufs.items() if a is b}
            kern.check_sizes(c.m, c.n, c.k, *lds)
            kern.execute(dev, load_code_object(kern.code_object), args, c.m, c.n, c.k, lds[2], c.batch or None,
                         buffer_sizes=sizes)
        except Exception as e:  # noqa: BLE001
            return launch_failure(e)
        after = {x: dev.download(b, bufs[x].dtype.type, bufs[x].shape) for x, b in dbufs.items()}
    finally:
        del dev.alloc
        for b in dbufs.values():
            dev.free(b)
    pieces = kern.split_k * kern.local_split
    ref, bound = dot_expected(c, bufs, pieces)
    got = after["C"][offsets(c, "C")]
    if c.ct == "i32":
        bad = np.argwhere(got.astype(np.int64) != ref)
        wrong = "" if not bad.size else (
            f"{len(bad)} of {got.size} elements wrong; first C[{bad[0][0]}][{bad[0][1]},{bad[0][2]}] = "
            f"{int(got[tuple(bad[0])])}, expected {int(ref[tuple(bad[0])])} (exact)")
    else:
        wrong = compare(c, got.astype(np.float64), ref, bound, big=float(np.finfo(DOT_NP[c.ct]).max))
    category, detail = ("wrong result", wrong) if wrong else ("", "")
    if not category:
        category, detail = untouched(c, bufs, after, DOT_UINT[c.ct])
    if not category and np.random.default_rng([c.seed, c.index, 4]).random() < API_SHARE:
        category, detail = api_check(c, kern, bufs, got, alpha, beta)
    if category in ("", "wrong result"):
        a_k = kern.alpha if kern.alpha is not None else alpha
        b_k = kern.beta if kern.beta is not None else beta
        scales = (bufs["scale_row"], bufs["scale_col"]) if _dot_dequant(c) else None
        v = dot_check(kern.layout, p, c.ab, bufs["A"], bufs["B"], bufs["C"], after["C"], a_k, b_k, c.epilogue,
                      bufs.get("bias"), c_type=c.ct, pieces=pieces, scales=scales)
        if not category and not v.ok:
            category, detail = "false verdict", f"vlpc.verify.check: {v.failure()}"
        elif category and v.ok:
            category, detail = "missed by vlpc.verify", f"{detail}; vlpc.verify.check: {v.summary()}"
    return category, detail


# -- one case --------------------------------------------------------------------------------------

def garbage_allocs(dev, rng: np.random.Generator) -> None:
    """Make ``dev.alloc`` hand out buffers full of random bytes, as hipMalloc does not clear
    (the emulator's are zero-filled): the plan's workspace (split-K partials, A's or B's copy)
    must be written before it is read.  ``del dev.alloc`` undoes it."""
    alloc = dev.alloc

    def garbage_alloc(nbytes: int):
        buf = alloc(nbytes)
        if int(nbytes) > 0:
            dev.write(buf, rng.integers(0, 256, int(nbytes)).astype(np.uint8))
        return buf
    dev.alloc = garbage_alloc


_CACHE: collections.OrderedDict = collections.OrderedDict()


def untouched(c: Case, bufs: dict, after: dict, uint: type) -> tuple[str, str]:
    """("", "") when every element of C outside its matrices kept its bits (compared as
    ``uint``) and every other buffer (A, B, bias, scales) is unchanged, else the first finding:
    ("padding modified", ...) or ("input modified", ...)."""
    outside = np.ones(bufs["C"].size, bool)
    outside[offsets(c, "C").reshape(-1)] = False
    changed = outside & (after["C"].view(uint) != bufs["C"].view(uint))
    if changed.any():
        off = int(np.argmax(changed))
        return "padding modified", (f"{int(changed.sum())} elements of C outside the matrices changed; "
                                    f"first at element {off}: {bufs['C'][off]!r} -> {after['C'][off]!r}")
    for x in bufs:
        if x != "C" and bufs[x].tobytes() != after[x].tobytes():
            return "input modified", f"buffer {x} changed"
    return "", ""


def launch_failure(e: Exception) -> tuple[str, str]:
    """(category, first line) of an exception raised while a case is launched: refused before
    it ran (``LaunchError``: CompiledKernel.check_offsets, or a VlpcError), a device fault, or
    a crash of vlpc itself."""
    from vlpc.errors import DeviceError, VlpcError
    from vlpc.runtime.device import LaunchError

    first = str(e).splitlines()[0] if str(e) else type(e).__name__
    if isinstance(e, LaunchError):
        return "refused at launch", first
    if isinstance(e, DeviceError):
        return "device fault", first
    if isinstance(e, VlpcError):
        return "refused at launch", first
    return "crash", f"launch: {type(e).__name__}: {e}".splitlines()[0]


def compile_case(c: Case, text: str):
    import vlpc

    key = (text, c.target, json.dumps(c.options, sort_keys=True))
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    kern = vlpc.compile(text, c.target, filename=f"case{c.index}.mlir", **c.options).kernel()
    _CACHE[key] = kern
    if len(_CACHE) > 32:
        _CACHE.popitem(last=False)
    return kern


def run_case(c: Case) -> tuple[str, str]:
    """(category, detail): category '' for a pass, 'refused at compile/launch', or one of FAILURES."""
    if c.ab:
        return run_dot_case(c)
    from vlpc.runtime import get_device, load_code_object

    text = source(c)
    kern, failed = compile_or_classify(c, text)
    if failed:
        return failed
    rng = np.random.default_rng([c.seed, c.index, 1])
    bufs = buffers(c, rng)
    lds = c.lds()
    values = {"M": c.m, "N": c.n, "K": c.k, "lda": lds[0], "ldb": lds[1], "ldc": lds[2],
              "stride_a": c.strides[0], "stride_b": c.strides[1], "stride_c": c.strides[2]}
    t = NPT[c.dtype]
    dev = get_device("emulator", strict=True, target=c.target)
    dbufs = {}
    try:
        for x, arr in bufs.items():
            dbufs[x] = dev.upload(arr)
        args = []
        for a in kern.kernargs:
            name = a.get(".name", "")
            if name == "workspace" or str(a.get(".value_kind", "")).startswith("hidden"):
                continue
            if name in dbufs:
                args.append(dbufs[name])
            elif name in ("alpha", "beta"):
                args.append(t(c.alpha if name == "alpha" else c.beta))
            elif name in values:
                args.append(np.int32(values[name]))
            else:
                return "crash", f"unknown kernel argument {name}"
        try:
            kern.check_sizes(c.m, c.n, c.k, *lds)
            garbage_allocs(dev, rng)
            kern.execute(dev, load_code_object(kern.code_object), args, c.m, c.n, c.k, lds[2], c.batch or None)
        except Exception as e:  # noqa: BLE001
            return launch_failure(e)
        after = {x: dev.download(b, t if x != "bias" else t, bufs[x].shape) for x, b in dbufs.items()}
    finally:
        dev.__dict__.pop("alloc", None)
        for b in dbufs.values():
            dev.free(b)
    ref, bound = expected(c, bufs)
    got = after["C"][offsets(c, "C")].astype(np.float64)
    wrong = compare(c, got, ref, bound)
    if wrong:
        category, detail = "wrong result", wrong
    else:
        category, detail = "", ""
    if not category:
        category, detail = untouched(c, bufs, after, UINT[c.dtype])
    if not category and np.random.default_rng([c.seed, c.index, 4]).random() < API_SHARE:
        category, detail = api_check(c, kern, bufs, after["C"][offsets(c, "C")], c.alpha, c.beta)
    # vlpc's own verdict on the same buffers
    if category in ("", "wrong result"):
        from vlpc.verify import Problem, check

        p = Problem(c.m, c.n, c.k, *lds, c.batch, *c.strides)
        v = check(kern.layout, p, c.dtype, bufs["A"], bufs["B"], bufs["C"], after["C"],
                  float(kern.alpha if kern.alpha is not None else c.alpha),
                  float(kern.beta if kern.beta is not None else c.beta), c.epilogue, bufs.get("bias"))
        if not category and not v.ok:
            category, detail = "false verdict", f"vlpc.verify: {v.failure()}"
        elif category and v.ok:
            category, detail = "missed by vlpc.verify", f"{detail}; vlpc.verify: {v.summary()}"
    return category, detail


def api_arrays(c: Case, bufs: dict) -> dict | None:
    """A, B and C as ``vlpc.run`` takes them (rows x leading dimension, 3-D for a batch, 2-D
    for a batch stride of 0, padding as in difftest's buffers), or None when ``vlpc.run``
    cannot express the case's geometry (a batch stride with a gap that the IR does not fix:
    ``vlpc.run`` then takes rows x leading dimension)."""
    out = {}
    rc, lds = c.rows_cols(), c.lds()
    for i, x in enumerate("ABC"):
        rows, ld = rc[x][0], lds[i]
        stride = c.strides[i]
        buf = bufs[x]
        if not c.batch or stride == 0:
            flat = np.concatenate([buf, np.zeros(rows * ld, buf.dtype)])
            out[x] = flat[:rows * ld].reshape(rows, ld).copy()
            continue
        static_stride = not (c.dyn_ld or c.dyn_batch or any(c.is_dyn(d) for d in c.dim_names()[x])) or (
            c.plain and c.pads[i] == 0 and stride == rows * ld)
        if stride != rows * ld and not static_stride:
            return None
        flat = np.concatenate([buf, np.zeros(c.batch * max(stride, rows * ld), buf.dtype)])
        out[x] = np.stack([flat[z * stride:z * stride + rows * ld].reshape(rows, ld) for z in range(c.batch)])
    return out


def api_check(c: Case, kern, bufs: dict, got: np.ndarray, alpha, beta) -> tuple[str, str]:
    """Run the case again through ``vlpc.run`` (its argument resolution, buffer packing and
    verdict; the padding its own, NaN) on the same matrices: ("", "") when it verifies and its
    C is bit-identical to ``got`` (atomic split mode: within vlpc's verdict only), else a
    failure ("false verdict" for a VerificationError on a C difftest accepted, "wrong result"
    for other bits)."""
    import vlpc
    from vlpc.api import VerificationError
    from vlpc.runtime import get_device

    arrays = api_arrays(c, bufs)
    if arrays is None:
        return "", ""
    kw = {}
    if kern.alpha is None:
        kw["alpha"], kw["beta"] = alpha, beta
    if "bias" in bufs:
        kw["bias"] = bufs["bias"]
    if "scale_row" in bufs:
        kw["scales"] = (bufs["scale_row"], bufs["scale_col"])
    dev = get_device("emulator", strict=True, target=c.target)
    try:
        r = vlpc.run(kern, arrays["A"], arrays["B"], arrays["C"], m=c.m, n=c.n, k=c.k, batch=c.batch or None,
                     device=dev, **kw)
    except VerificationError as e:
        return "false verdict", f"vlpc.run: {str(e).splitlines()[0]}"
    except Exception as e:  # noqa: BLE001
        cat, detail = launch_failure(e)
        return ("crash" if cat.startswith("refused") else cat), f"vlpc.run: {detail}"
    rc = np.asarray(r.c).reshape(got.shape)
    if kern.split_mode != "atomic" and rc.tobytes() != got.tobytes():
        bad = np.argwhere((rc != got) & ~(np.isnan(rc.astype(np.float64)) & np.isnan(got.astype(np.float64))))
        if bad.size:
            z, i, j = (int(v) for v in bad[0])
            return "wrong result", (f"vlpc.run's C differs from the same launch through CompiledKernel.execute at "
                                    f"{len(bad)} elements; first C[{z}][{i},{j}]: {rc[z, i, j]!r} vs {got[z, i, j]!r}")
    return "", ""


def describe(c: Case) -> str:
    d = asdict(c)
    return ", ".join(f"{k}={v}" for k, v in d.items() if k not in ("seed", "index"))


def _normalise(msg: str) -> str:
    return re.sub(r"\d+", "N", re.sub(r"^[^:]*\.mlir:\d+:\d+: ", "", msg))[:110]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="time budget (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=None, help="session seed (default: random)")
    ap.add_argument("--case", type=int, default=None, help="run only this case of the seed (a reproduction)")
    ap.add_argument("--cases", type=int, default=0, help="stop after this many cases (0: until the budget)")
    ap.add_argument("--types", default=",".join(TYPES),
                    help="A/B element types to draw, comma-separated from f32, f64, f16 (C f32/f16), "
                         "i8 (C i32, or f32/f16 dequantized) (default: %(default)s)")
    ap.add_argument("--show", action="store_true", help="print each case's MLIR and parameters")
    ap.add_argument("--list-refusals", action="store_true", help="print each refused case (not only the counts)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    if args.minutes <= 0:
        ap.error("--minutes must be positive")
    types = tuple(x.strip() for x in args.types.split(",") if x.strip())
    if not types or any(x not in TYPES for x in types) or len(set(types)) != len(types):
        ap.error(f"--types must list some of {', '.join(TYPES)} once each, got {args.types!r}")
    types_opt = "" if types == TYPES else f" --types {','.join(types)}"
    seed = args.seed if args.seed is not None else int(np.random.default_rng().integers(1, 2**31))
    from tqdm import tqdm

    budget = 60 * args.minutes
    t0 = time.monotonic()
    counts: collections.Counter = collections.Counter()
    by_form: collections.Counter = collections.Counter()
    refusals: collections.Counter = collections.Counter()
    failures: list[tuple[str, Case, str]] = []
    indices = [args.case] if args.case is not None else None
    bar = None if (args.no_progress or indices) else tqdm(total=int(budget), unit="s", desc=f"difftest seed {seed}",
                                                         bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} s {postfix}")
    i = 0
    while True:
        if indices is not None:
            if not indices:
                break
            idx = indices.pop()
        else:
            if time.monotonic() - t0 >= budget or (args.cases and i >= args.cases):
                break
            idx = i
        i += 1
        c = draw(seed, idx, types)
        if args.show:
            print(f"case {idx}: {describe(c)}\n{source(c)}")
        try:
            cat, detail = run_case(c)
        except Exception as e:  # noqa: BLE001 - the tool itself must not stop a long run
            cat, detail = "crash", f"difftest: {type(e).__name__}: {e} | " + traceback.format_exc().splitlines()[-2]
        counts[cat or "passed"] += 1
        by_form[f"{c.form} {c.ab}->{c.ct}" if c.ab else f"{c.form} {c.dtype}"] += 1
        if cat.startswith("refused"):
            refusals[_normalise(detail)] += 1
            if args.list_refusals:
                (bar.write if bar else print)(f"refused case {idx}{types_opt}: {detail}\n  {describe(c)}")
        elif cat:
            failures.append((cat, c, detail))
            msg = (f"\nFAIL [{cat}] case {idx}: {detail}\n  {describe(c)}\n"
                   f"  reproduce: python tools/difftest.py --seed {seed} --case {idx}{types_opt} --show")
            (bar.write if bar else print)(msg)
        if args.show or indices is not None:
            print(f"case {idx}: {cat or 'passed'}{': ' + detail if detail else ''}")
        if bar:
            bar.n = min(int(time.monotonic() - t0), int(budget))
            bar.set_postfix(cases=i, failures=len(failures), refused=sum(refusals.values()))
    if bar:
        bar.close()
    elapsed = time.monotonic() - t0
    print(f"\ndifftest seed {seed}{types_opt}: {i} cases in {elapsed / 60:.1f} min")
    for cat in ("passed", "refused at compile", "refused at launch", *FAILURES):
        if counts[cat]:
            print(f"  {cat}: {counts[cat]}")
    print("  forms: " + ", ".join(f"{k} {v}" for k, v in sorted(by_form.items())))
    if refusals:
        print("  refusals (message, digits as N):")
        for msg, n in refusals.most_common():
            print(f"    {n:4d}  {msg}")
    if failures:
        print("  failures by category: " + ", ".join(f"{k} {v}" for k, v in
                                                     collections.Counter(f[0] for f in failures).most_common()))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
