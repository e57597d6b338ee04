"""A Triton matmul written for gfx906, compiled ahead of time by Triton's AMD backend (no GPU).

NT SGEMM ``C = alpha * A @ B.T + beta * C``: A is M x K (row stride ``lda``), B is N x K (``ldb``),
C is M x N (``ldc``), f32, row-major.  The kernel is the Triton tutorial's matmul (grouped program
order ``GROUP_M``, ``tl.dot`` with ``input_precision="ieee"``: gfx906 has no matrix cores, so the
backend lowers the dot to ``v_fma_f32``/``v_fmac_f32``) with BLAS rules added: ``beta == 0`` never
reads C (NaN C stays out), ``alpha == 0`` reads neither A nor B (the K loop runs zero times);
``EVEN_K`` drops the K masks when K is a multiple of ``BLOCK_K`` (the specialisation a launcher
makes).  Rows beyond M / N are read wrapped (``% M``, as the tutorial) and never stored.

Kernel arguments (the code object's metadata): A, B, C, M, N, K, lda, ldb, ldc, alpha, beta, then
the two pointers Triton 3.x appends (global and profile scratch; 0 here: the kernels use none).
Launch: grid ``(ceil(M / BLOCK_M) * ceil(N / BLOCK_N), 1, 1)``, block ``64 * num_warps``, dynamic
LDS ``shared`` bytes (``configs.json``).

    pip install 'vlpc[peers]'                        # triton (3.x; its AMD backend is in the wheel)
    python tests/data/peers/triton_sgemm.py --grid build/peers/triton_grid   # every configuration of GRID
    python tests/data/peers/triton_sgemm.py          # rebuild the committed ones (configs.json) here

``--grid`` writes the code objects of the grid's spill-free configurations (the EVEN_K variant,
which the benchmark models, has no VGPR/SGPR spill and no scratch; the masked variant, which
the tests run at odd K, may spill SGPRs and is kept with its counts) and their ``configs.json`` to a directory; ``benchmarks/peers.py --triton-dir DIR`` models
them all and reports each one's figures, which is how the committed ones were chosen.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
from pathlib import Path

import triton
import triton.language as tl

HERE = Path(__file__).resolve().parent
OUT = HERE / "triton"


@triton.jit
def sgemm_nt(A, B, C, M, N, K, lda, ldb, ldc, alpha, beta,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
             EVEN_K: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    gsize = min(num_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % gsize)
    pid_n = (pid % group) // gsize
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptr = A + rm[:, None] * lda + rk[None, :]
    b_ptr = B + rn[None, :] * ldb + rk[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    num_k = tl.cdiv(K, BLOCK_K) * (alpha != 0).to(tl.int32)
    for kk in range(0, num_k):
        if EVEN_K:
            a = tl.load(a_ptr)
            b = tl.load(b_ptr)
        else:
            a = tl.load(a_ptr, mask=rk[None, :] < K - kk * BLOCK_K, other=0.0)
            b = tl.load(b_ptr, mask=rk[:, None] < K - kk * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_ptr += BLOCK_K
        b_ptr += BLOCK_K
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptr = C + cm[:, None] * ldc + cn[None, :]
    mask = (cm[:, None] < M) & (cn[None, :] < N)
    out = acc * alpha
    if beta != 0:
        out += beta * tl.load(c_ptr, mask=mask, other=0.0)
    tl.store(c_ptr, out, mask=mask)


SIGNATURE = {"A": "*fp32", "B": "*fp32", "C": "*fp32", "M": "i32", "N": "i32", "K": "i32", "lda": "i32",
             "ldb": "i32", "ldc": "i32", "alpha": "fp32", "beta": "fp32", "BLOCK_M": "constexpr",
             "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "GROUP_M": "constexpr", "EVEN_K": "constexpr"}
#: what Triton's launcher assumes of its arguments when specialising (pointers 16-byte aligned,
#: leading dimensions multiples of 16): both hold for every buffer of the benchmark and the tests
#: (the tests' leading dimensions are the sizes, so they use the EVEN_K = False code objects,
#: compiled without the divisibility hints on M, N, K)
DIVISIBLE = (0, 1, 2, 6, 7, 8)
#: the grid ``--grid`` compiles: BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages
GRID = dict(BLOCK_M=(32, 64, 128), BLOCK_N=(32, 64, 128), BLOCK_K=(8, 16, 32), num_warps=(1, 2, 4, 8),
            num_stages=(1, 2))
GROUP_M = 8


def compile_config(bm: int, bn: int, bk: int, num_warps: int, num_stages: int, even_k: bool) -> tuple[bytes, dict]:
    """(hsaco bytes, facts) of one configuration for gfx906 (wave64), ahead of time."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    const = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": GROUP_M, "EVEN_K": even_k}
    attrs = {(i,): [["tt.divisibility", 16]] for i in (DIVISIBLE if even_k else (0, 1, 2))}
    k = triton.compile(ASTSource(fn=sgemm_nt, signature=SIGNATURE, constexprs=const, attrs=attrs),
                       target=GPUTarget("hip", "gfx906", 64),
                       options={"num_warps": num_warps, "num_stages": num_stages})
    asm = k.asm["amdgcn"]

    def field(key: str) -> int:
        m = re.search(r"\." + key + r":\s+(\d+)", asm)
        return int(m.group(1)) if m else 0

    return k.asm["hsaco"], {"shared": k.metadata.shared, "vgpr_count": field("vgpr_count"),
                            "vgpr_spill_count": field("vgpr_spill_count"),
                            "sgpr_spill_count": field("sgpr_spill_count"),
                            "private_segment_fixed_size": field("private_segment_fixed_size")}


def build(cfgs: list[tuple[int, int, int, int, int]], out: Path, spill_free_only: bool = True) -> list[dict]:
    """Compile each (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), masked and EVEN_K, into ``out``;
    write ``out/configs.json``.  Returns the configurations kept."""
    out.mkdir(parents=True, exist_ok=True)
    kept = []
    for bm, bn, bk, nw, ns in cfgs:
        name = f"{bm}x{bn}x{bk}_w{nw}_s{ns}"
        entry = {"name": name, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": GROUP_M, "num_warps": nw,
                 "num_stages": ns}
        spills = False
        for even_k, suffix in ((True, ".even_k"), (False, "")):
            try:
                code, facts = compile_config(bm, bn, bk, nw, ns, even_k)
            except Exception as e:  # a configuration the backend refuses
                print(f"{name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
                spills = True
                break
            if even_k:  # the variant the benchmark models (K a multiple of BLOCK_K) must not spill
                spills = bool(facts["vgpr_spill_count"] or facts["sgpr_spill_count"]
                              or facts["private_segment_fixed_size"])
                if spills:
                    break
            pre = "even_k_" if even_k else "masked_"
            f = f"sgemm_nt_{name}{suffix}.hsaco"
            (out / f).write_bytes(code)
            entry["even_k_file" if even_k else "file"] = f
            entry[pre + "shared"] = facts["shared"]
            entry[pre + "vgprs"] = facts["vgpr_count"]
            entry[pre + "spills"] = [facts["vgpr_spill_count"], facts["sgpr_spill_count"],
                                     facts["private_segment_fixed_size"]]
            print(f"{f}: {facts}", file=sys.stderr)
        if spills and spill_free_only:
            for key in ("file", "even_k_file"):
                if key in entry:
                    (out / entry[key]).unlink(missing_ok=True)
            continue
        kept.append(entry)
    old = out / "configs.json"
    keep_keys = {k: v for k, v in json.loads(old.read_text()).items() if k == "search"} if old.exists() else {}
    (out / "configs.json").write_text(json.dumps({
        "triton_version": triton.__version__, "target": "hip gfx906 wave64", "source": "tests/data/peers/triton_sgemm.py",
        "note": "configurations whose EVEN_K code object (.even_k: EVEN_K = True, tt.divisibility 16 on the "
                "pointers and leading dimensions; what benchmarks/peers.py models) is spill-free (no VGPR/SGPR "
                "spill, no scratch); the masked one (any K; the tests) with its [VGPR spills, SGPR spills, "
                "scratch bytes]",
        **keep_keys, "configs": kept}, indent=1) + "\n")
    return kept


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", metavar="DIR", help="compile every spill-free configuration of GRID into DIR")
    ap.add_argument("--configs", help="with --grid: only these, e.g. 64x64x8_w4_s2,128x64x8_w8_s2")
    a = ap.parse_args(argv)
    if a.grid:
        cfgs = [c for c in itertools.product(*GRID.values()) if 4 <= c[0] * c[1] // (64 * c[3]) <= 64]
        if a.configs:
            want = set(a.configs.split(","))
            cfgs = [c for c in cfgs if f"{c[0]}x{c[1]}x{c[2]}_w{c[3]}_s{c[4]}" in want]
        kept = build(cfgs, Path(a.grid))
    else:
        committed = json.loads((OUT / "configs.json").read_text())["configs"]
        kept = build([(c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], c["num_warps"], c["num_stages"]) for c in committed],
                     OUT)
    print(f"{len(kept)} spill-free configurations written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
