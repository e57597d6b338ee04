"""Fuzz the compiler's input: mutated gemm-dialect files must give a diagnostic, never a crash.

Each example takes a valid file, applies a few token- or character-level mutations
(vocabulary: sizes, ``?``, element and memref types, layouts, op and attribute
names, punctuation, stray bytes) and runs ``vlpc opt`` with the gemm-level passes
in-process.  The property: exit 0, or exit 1 with ``file:line:col: error: ...``
(or ``vlpc: ...``) on stderr; never exit 70 (internal error) or a traceback.  A few
examples go through the whole pipeline to assembly (``vlpc compile --emit asm``),
which costs ~1-2 s each.

CI runs a fixed, derandomized set; ``VLPC_FUZZ_EXAMPLES=N`` (see
``tests/fuzz_support.py`` and ``tools/fuzz.py``) runs N examples per test.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from fuzz_support import assert_clean_exit, fuzz_settings, record, run_cli

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"

GOOD = """builtin.module {
  func.func @sgemm(%a: memref<64x16xf32>, %b: memref<256x16xf32>, %c: memref<64x256xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<64x16xf32>, memref<256x16xf32>, memref<64x256xf32>, f32, f32
    func.return
  }
}
"""

DYNAMIC = """builtin.module {
  func.func @sgemm_dyn(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, f32, f32
    func.return
  }
}
"""

STRIDED = """builtin.module {
  func.func @sgemm_ld(%a: memref<64x16xf32, strided<[32, 1]>>, %b: memref<256x16xf32, strided<[?, 1]>>, %c: memref<64x256xf32, strided<[512, 1]>>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<64x16xf32, strided<[32, 1]>>, memref<256x16xf32, strided<[?, 1]>>, memref<64x256xf32, strided<[512, 1]>>, f32, f32
    func.return
  }
}
"""

# what gemm-tile .. gemm-split-k leave on the op: mutating it exercises the passes'
# checks of plans given in the input
PLANNED = GOOD.replace(
    '{layout = "NT"}',
    '{layout = "NT", macro_tile = array<i64: 64, 256>, micro_tile = array<i64: 64, 1>, k_step = 16 : i64, '
    'grid = array<i64: 1, 1, 1>, workgroup_size = array<i64: 256, 1, 1>, wg_tile = array<i64: 64, 256>, '
    'sg_tile = array<i64: 64, 64>, local_range = array<i64: 4, 1, 1>, split_k = 1 : i64}')

SEEDS = [GOOD, DYNAMIC, STRIDED, PLANNED] + [p.read_text() for p in sorted(EXAMPLES_DIR.glob("*.mlir"))]

GEMM_PASSES = "gemm-tile,gemm-map-workgroups,gemm-map-subgroups,gemm-split-k"

VOCAB = [
    # sizes and strides
    "0", "1", "-1", "-64", "16", "17", "63", "64", "100", "128", "256", "4096", "2147483648",
    "18446744073709551617", "?", "0x10", "1.5", "1e9",
    # types
    "f32", "f64", "f16", "bf16", "i32", "i1", "index", "i64", "memref<64x16xf32>", "memref<?x?xf32>",
    "memref<64xf32>", "memref<2x64x16xf32>", "memref<64x16xf64>", "memref<0x16xf32>", "memref<64x16xi32>",
    "tensor<64x16xf32>", "vector<4xf32>", "memref<64x16xf32, strided<[1, 64]>>",
    "memref<64x16xf32, strided<[8, 1]>>", "memref<64x16xf32, strided<[16, 1], offset: 4>>",
    "memref<64x16xf32, affine_map<(d0, d1) -> (d1, d0)>>", "memref<64x16xf32, 3>", "none", "!gcn.sgpr<x16>",
    # layouts and attributes
    '"NT"', '"NN"', '"TN"', '"TT"', '"nt"', '""', '"XY"', "layout", "macro_tile", "micro_tile", "k_step",
    "split_k", "grid", "workgroup_size", "local_range", "bogus_attr", "array<i64: 64, 256>", "array<i64: 0, 0>",
    "array<i64: 64>", "array<i64: -64, 256>", "array<i64: 64, 96>", "array<i32: 64, 256>", "0 : i64",
    "-1 : i64", "7 : i64", "unit", "dense<1.0> : tensor<2xf32>",
    # ops and symbols
    "gemm.matmul", "gemm.bogus", "func.func", "func.return", "func.call", "arith.constant", "memref.alloc",
    "builtin.module", "gcn.kernel", "linalg.matmul", "@sgemm", "@other", "%a", "%b", "%c", "%alpha", "%beta",
    "%0", "%x", "^bb0",
    # punctuation and junk
    "(", ")", "{", "}", "<", ">", "[", "]", ",", ":", "=", '"', "x", "->", "//", "\n", "\t", "\x00", "é",
    "\u202e", "\\", "#map", "loc(#loc)", 'loc("f.mlir":1:1)',
]

_TOKEN = re.compile(r"\w+|[^\w\s]|\s+")

mutation = st.tuples(
    st.sampled_from(["replace", "delete", "insert", "duplicate", "swap", "char", "truncate", "dup_line"]),
    st.floats(0, 1, exclude_max=True),
    st.floats(0, 1, exclude_max=True),
    st.sampled_from(VOCAB),
    st.characters(codec="utf-8"),
)


def mutate(text: str, mutations) -> str:
    toks = _TOKEN.findall(text)
    for kind, u, v, word, ch in mutations:
        if not toks:
            toks = [word]
            continue
        i, j = int(u * len(toks)), int(v * len(toks))
        if kind == "replace":
            toks[i] = word
        elif kind == "delete":
            del toks[i]
        elif kind == "insert":
            toks.insert(i, word)
        elif kind == "duplicate":
            toks.insert(i, toks[i])
        elif kind == "swap":
            toks[i], toks[j] = toks[j], toks[i]
        elif kind == "char":
            s = "".join(toks)
            k = int(u * (len(s) + 1))
            toks = _TOKEN.findall(s[:k] + ch + s[k:])
        elif kind == "truncate":
            toks = toks[:i]
        elif kind == "dup_line":
            lines = "".join(toks).splitlines(keepends=True)
            k = int(u * len(lines))
            toks = _TOKEN.findall("".join(lines[:k + 1] + lines[k:]))
    return "".join(toks)


_TMP = tempfile.TemporaryDirectory(prefix="vlpc-fuzz-mlir-")


def _write(text: str, name: str = "fuzz.mlir") -> str:
    path = Path(_TMP.name) / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return str(path)


def _check(argv, fuzzer, timeout=30):
    rc, _out, err = run_cli(argv, timeout=timeout)
    outcome = assert_clean_exit(rc, err, argv, allowed=(0, 1))
    if rc == 1:
        first = err.strip().splitlines()[0]
        # errors about the file's contents are located in it (file:line[:col]) or name it
        assert first.startswith(argv[1]) or first.startswith("vlpc: "), first
    record(fuzzer, outcome)
    return rc


@fuzz_settings(ci_examples=150)
@given(seed=st.sampled_from(SEEDS), mutations=st.lists(mutation, min_size=1, max_size=4))
def test_mutated_gemm_files_get_diagnostics(seed, mutations):
    path = _write(mutate(seed, mutations))
    _check(["opt", path, "-p", GEMM_PASSES], "mlir-mutation (gemm passes)")


@fuzz_settings(ci_examples=4, weight=0.01)
@given(seed=st.sampled_from([GOOD, DYNAMIC, PLANNED]), mutations=st.lists(mutation, min_size=1, max_size=2))
def test_mutated_gemm_files_full_pipeline(seed, mutations):
    """The whole pipeline (to assembly) on mutated files: slow, so few examples in CI."""
    path = _write(mutate(seed, mutations), "fuzz_full.mlir")
    _check(["compile", path, "--emit", "asm"], "mlir-mutation (full pipeline)", timeout=120)


def test_mutator_keeps_seeds_valid():
    """The seeds themselves compile through the gemm passes (the fuzzer starts from valid input)."""
    for i, text in enumerate(SEEDS):
        rc, _out, err = run_cli(["opt", _write(text, f"seed{i}.mlir"), "-p", GEMM_PASSES])
        assert rc == 0, err
