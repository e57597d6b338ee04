"""Prints a gemm-dialect module: python gemm_template.py LAYOUT DTYPE M N K [EPILOGUE...]."""
import sys

layout, dtype, m, n, k, *epi = sys.argv[1:]
m, n, k = int(m), int(n), int(k)
a = f"memref<{m}x{k}x{dtype}>" if layout[0] == "N" else f"memref<{k}x{m}x{dtype}>"
b = f"memref<{k}x{n}x{dtype}>" if layout[1] == "N" else f"memref<{n}x{k}x{dtype}>"
c = f"memref<{m}x{n}x{dtype}>"
has_bias = any(x.startswith("bias") for x in epi)
blen = m if "bias_row" in epi else n
bias_arg = f", %bias: memref<{blen}x{dtype}>" if has_bias else ""
bias_use = f" bias(%bias : memref<{blen}x{dtype}>)" if has_bias else ""
epi_attr = f", epilogue = [{', '.join(repr(x).replace(chr(39), chr(34)) for x in epi)}]" if epi else ""
print(f"""builtin.module {{
  func.func @g(%a: {a}, %b: {b}, %c: {c}, %alpha: {dtype}, %beta: {dtype}{bias_arg}) {{
    gemm.matmul %a, %b, %c, %alpha, %beta{bias_use} {{layout = "{layout}"{epi_attr}}} : {a}, {b}, {c}, {dtype}, {dtype}
    func.return
  }}
}}""")
