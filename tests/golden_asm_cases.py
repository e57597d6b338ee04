"""The compilations whose output must not change when the compiler is made faster (issue 18).

Each case is ``(name, source, options)``: ``source`` is a path relative to the repository
root or a ``gemm:LAYOUT:DTYPE:M:N:K[:EPILOGUE...]`` template (the module
``lit_tests/Inputs/gemm_template.py`` prints); ``options`` are those of
:func:`vlpc.compiler.pipeline` plus ``target`` and, for a single pass run as
``vlpc opt -p`` does, ``passes`` (then the output is the IR text, not assembly).

``python tests/golden_asm_cases.py OUTDIR [--all] [--gzip]`` writes ``OUTDIR/<name>.s``
(or ``.mlir``; ``.gz`` compressed with ``--gzip``) for the committed golden subset
(``GOLDEN``) or every case.  The golden files under ``tests/data/golden_asm/`` were
written before the pipeline was sped up (issue 18: verification once, the allocator's
interference summary, the cache), and ``tests/passes/test_golden_asm.py`` compiles the same
cases and compares byte for byte.  A deliberate change to the generated code
regenerates them: ``python tests/golden_asm_cases.py tests/data/golden_asm --gzip``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def template(layout: str, dtype: str, m: int, n: int, k: int, *epi: str) -> str:
    """The gemm-dialect module of ``lit_tests/Inputs/gemm_template.py`` (same text)."""
    a = f"memref<{m}x{k}x{dtype}>" if layout[0] == "N" else f"memref<{k}x{m}x{dtype}>"
    b = f"memref<{k}x{n}x{dtype}>" if layout[1] == "N" else f"memref<{n}x{k}x{dtype}>"
    c = f"memref<{m}x{n}x{dtype}>"
    has_bias = any(x.startswith("bias") for x in epi)
    blen = m if "bias_row" in epi else n
    bias_arg = f", %bias: memref<{blen}x{dtype}>" if has_bias else ""
    bias_use = f" bias(%bias : memref<{blen}x{dtype}>)" if has_bias else ""
    epi_attr = f", epilogue = [{', '.join(chr(34) + x + chr(34) for x in epi)}]" if epi else ""
    return f"""builtin.module {{
  func.func @g(%a: {a}, %b: {b}, %c: {c}, %alpha: {dtype}, %beta: {dtype}{bias_arg}) {{
    gemm.matmul %a, %b, %c, %alpha, %beta{bias_use} {{layout = "{layout}"{epi_attr}}} : {a}, {b}, {c}, {dtype}, {dtype}
    func.return
  }}
}}
"""


def source_text(source: str) -> str:
    if source.startswith("gemm:"):
        _, layout, dtype, m, n, k, *epi = source.split(":")
        return template(layout, dtype, int(m), int(n), int(k), *epi)
    return (ROOT / source).read_text()


def _cases() -> list[tuple[str, str, dict]]:
    cases: list[tuple[str, str, dict]] = []
    # The bundled examples, at the defaults.
    for ex in ("sgemm_nt", "sgemm_dynamic", "linalg_matmul_transpose_b"):
        cases.append((f"example_{ex}", f"examples/{ex}.mlir", {}))
    # The lit inputs, with the options of their RUN lines.
    big = "lit_tests/Inputs/sgemm_256x512x640.mlir"
    cases += [
        ("lit_sgemm_default", big, dict(split_k=1)),
        ("lit_sgemm_default_tid", big, dict(split_k=1, target="gfx906:sramecc+:xnack-")),
        ("lit_sgemm_lds", big, dict(strategy="lds")),
        ("lit_sgemm_sqc_auto", big, {}),
        ("lit_dynamic_small_m", "lit_tests/asm/dynamic_small_m.mlir", {}),
        ("lit_dynamic_small_m_lds", "lit_tests/asm/dynamic_small_m.mlir", dict(strategy="lds")),
        ("lit_split_k_ws4", "lit_tests/asm/split_k_kernels.mlir", dict(split_k=4)),
        ("lit_split_k_atomic4", "lit_tests/asm/split_k_kernels.mlir", dict(split_k=4, split_mode="atomic")),
        ("lit_split_k_local2", "lit_tests/asm/split_k_kernels.mlir", dict(split_k=1, local_split=2)),
        ("lit_epilogue_row_relu", "gemm:NT:f32:64:256:32:bias_row:relu", {}),
        ("lit_epilogue_col_gelu", "gemm:NT:f32:64:256:32:bias_col:gelu", {}),
        ("lit_epilogue_relu64", "gemm:NT:f64:32:256:32:relu", {}),
        ("lit_layout_nt", "gemm:NT:f32:128:256:64", {}),
        ("lit_layout_nn", "gemm:NN:f32:128:256:64", {}),
        ("lit_layout_tn", "gemm:TN:f32:128:256:64", {}),
        ("lit_layout_tt64", "gemm:TT:f64:128:256:64", {}),
        ("lit_lds_f64", "gemm:NT:f64:64:512:640", dict(strategy="lds")),
        ("lit_plugin_small_tile", "lit_tests/plugin/xdsl_opt_gcn_asm.mlir",
         dict(macro_tile=(16, 64), micro_tile=(16, 1), k_step=8)),
    ]
    # Single passes on hand-written GCN IR (output: IR text).
    for f in ("gcn_insert_waitcnt", "gcn_insert_waitcnt_lds"):
        cases.append((f"opt_{f}", f"lit_tests/passes/{f}.mlir", dict(passes="gcn-insert-waitcnt")))
    cases.append(("opt_gcn_insert_hazard_nops", "lit_tests/passes/gcn_insert_hazard_nops.mlir",
                  dict(passes="gcn-insert-hazard-nops")))
    # A grid of options: strategies, element types, layouts, split-K modes, an edge shape.
    for dtype in ("f32", "f64"):
        for layout in ("NN", "NT", "TN", "TT"):
            for shape in ((128, 512, 96), (100, 300, 70)):
                src = f"gemm:{layout}:{dtype}:{shape[0]}:{shape[1]}:{shape[2]}"
                tag = f"{layout.lower()}_{dtype}_{shape[0]}x{shape[1]}x{shape[2]}"
                for split, mode in ((1, "workspace"), (2, "workspace"), (2, "atomic"), (4, "workspace"),
                                    (4, "atomic")):
                    cases.append((f"grid_sqc_{tag}_s{split}_{mode}", src, dict(split_k=split, split_mode=mode)))
                cases.append((f"grid_sqc_{tag}_local2", src, dict(split_k=1, local_split=2)))
                if shape == (128, 512, 96) and layout == "NT":  # strategy lds: NT only
                    cases.append((f"grid_lds_{tag}", src, dict(strategy="lds")))
    return cases


CASES = _cases()

#: The subset committed under tests/data/golden_asm/ and compared by the test suite.
GOLDEN = ("example_sgemm_nt", "example_sgemm_dynamic", "example_linalg_matmul_transpose_b",
          "lit_sgemm_lds", "lit_split_k_ws4", "lit_split_k_atomic4",
          "lit_split_k_local2", "lit_epilogue_col_gelu", "lit_epilogue_relu64", "lit_layout_tt64",
          "opt_gcn_insert_waitcnt", "opt_gcn_insert_waitcnt_lds", "opt_gcn_insert_hazard_nops",
          "grid_sqc_tn_f64_100x300x70_s2_atomic", "grid_sqc_nn_f32_100x300x70_s4_workspace",
          "grid_lds_nt_f64_128x512x96")


def compile_case(source: str, options: dict) -> tuple[str, str]:
    """(suffix, text): the assembly ``vlpc compile --emit asm`` prints, or the IR of ``vlpc opt -p``."""
    from vlpc.dialects.gcn_asm import print_assembly
    from vlpc.compiler import header_lines, make_context, parse, pipeline, print_ir, run_passes
    from vlpc.targets import TargetId

    options = dict(options)
    target = options.pop("target", "gfx906")
    spec = options.pop("passes", None)
    ctx = make_context()
    module = parse(source_text(source), source, ctx)
    if spec is not None:
        from xdsl.passes import PassPipeline

        from vlpc.passes import get_all_passes

        run_passes(module, PassPipeline.parse_spec(get_all_passes(), spec).passes, ctx)
        return ".mlir", print_ir(module)
    run_passes(module, pipeline(target, **options), ctx)
    tid = TargetId.parse(target)
    return ".s", print_assembly(module, tid, header_lines(module, tid.target.name))


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    argv = argv[1:]
    out.mkdir(parents=True, exist_ok=True)
    names = None if "--all" in argv else set(GOLDEN)
    for name, source, options in CASES:
        if names is not None and name not in names:
            continue
        suffix, text = compile_case(source, options)
        if "--gzip" in argv:
            import gzip

            (out / f"{name}{suffix}.gz").write_bytes(gzip.compress(text.encode(), 9, mtime=0))
        else:
            (out / f"{name}{suffix}").write_text(text)
        print(name, len(text), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
