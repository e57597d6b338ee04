"""Fused epilogues (bias per row or column, ReLU, GELU tanh form) lowered into the store phase."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vlpc
from vlpc.errors import DiagnosticError
from vlpc.runtime import get_device, load_code_object

from reference import assert_gemm_close, gelu_tanh, gemm_reference


def source(m, n, k, epilogue, dtype="f32", layout="NT"):
    a = f"memref<{m}x{k}x{dtype}>" if layout[0] == "N" else f"memref<{k}x{m}x{dtype}>"
    b = f"memref<{k}x{n}x{dtype}>" if layout[1] == "N" else f"memref<{n}x{k}x{dtype}>"
    c = f"memref<{m}x{n}x{dtype}>"
    bias_len = m if "bias_row" in epilogue else n
    has_bias = any(x.startswith("bias") for x in epilogue)
    bias_arg = f", %bias: memref<{bias_len}x{dtype}>" if has_bias else ""
    bias_use = f" bias(%bias : memref<{bias_len}x{dtype}>)" if has_bias else ""
    epi = ", ".join(f'"{x}"' for x in epilogue)
    return f"""builtin.module {{
  func.func @g(%a: {a}, %b: {b}, %c: {c}, %alpha: {dtype}, %beta: {dtype}{bias_arg}) {{
    gemm.matmul %a, %b, %c, %alpha, %beta{bias_use} {{layout = "{layout}", epilogue = [{epi}]}} : {a}, {b}, {c}, {dtype}, {dtype}
    func.return
  }}
}}
"""


def run(m, n, k, epilogue, dtype="f32", layout="NT", alpha=1.5, beta=0.5):
    r = vlpc.compile(source(m, n, k, epilogue, dtype, layout), "gfx906", macro_tile=(32 if dtype == "f64" else 64, 64))
    npt = np.float32 if dtype == "f32" else np.float64
    rng = np.random.default_rng(2)
    a = rng.standard_normal((m, k) if layout[0] == "N" else (k, m)).astype(npt)
    b = rng.standard_normal((k, n) if layout[1] == "N" else (n, k)).astype(npt)
    c0 = rng.standard_normal((m, n)).astype(npt)
    bias = rng.standard_normal(m if "bias_row" in epilogue else n).astype(npt)
    dev = get_device("emulator", strict=True)
    bufs = [dev.upload(x) for x in (a, b, c0)]
    extra = [dev.upload(bias)] if any(x.startswith("bias") for x in epilogue) else []
    launch = r.kernel().launch(m, n, k)
    stats = dev.launch(load_code_object(r.code_object), "g", grid=launch.grid, block=launch.block,
                       args=[*bufs, np.int32(m), np.int32(n), np.int32(k), np.int32(a.shape[1]), np.int32(b.shape[1]),
                             np.int32(n), npt(alpha), npt(beta), *extra])
    out = dev.download(bufs[2], npt, (m, n)).astype(np.float64)
    ref, bound = gemm_reference(a, b, c0, alpha, beta, layout=layout, epilogue=epilogue, bias=bias)
    assert_gemm_close(out, ref, bound)
    return out, ref, r, stats


@pytest.mark.parametrize("epilogue", [["bias_row"], ["bias_col"], ["relu"], ["gelu"], ["bias_col", "relu"],
                                      ["relu", "bias_row"], ["bias_row", "gelu"]],
                         ids=lambda e: "+".join(e))
def test_f32_epilogues(epilogue):
    out, ref, r, _ = run(65, 70, 21, epilogue)
    if "relu" in epilogue[-1:]:
        assert (out >= 0).all() and (out > 0).any()


@pytest.mark.parametrize("epilogue", [["bias_row", "relu"], ["bias_col"]], ids=lambda e: "+".join(e))
def test_f64_epilogues(epilogue):
    out, ref, _, _ = run(33, 40, 9, epilogue, dtype="f64", layout="TN")
    assert np.count_nonzero(out) > out.size // 3


def test_order_matters():
    # relu then bias differs from bias then relu: the chain is applied in the order written
    a, _, _, _ = run(64, 64, 16, ["relu", "bias_col"])
    b, _, _, _ = run(64, 64, 16, ["bias_col", "relu"])
    assert not np.allclose(a, b)


def test_epilogue_instructions_in_store_phase():
    r = vlpc.compile(source(64, 64, 16, ["bias_col", "gelu"]), "gfx906", macro_tile=(64, 64))
    asm = r.asm
    loop_end = asm.index("s_cbranch_scc1")
    for ins in ("v_exp_f32", "v_rcp_f32", "v_add_f32"):
        assert ins in asm[loop_end:] and ins not in asm[:loop_end]


def test_gelu_tanh_error_against_erf_is_documented():
    x = np.linspace(-8, 8, 200001)
    erf_form = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    diff = np.abs(gelu_tanh(x) - erf_form).max()
    assert 4.6e-4 < diff < 4.8e-4  # docs/inputs.md: "about 4.7e-4, near |x| = 2.7"
    assert 2.6 < abs(x[np.argmax(np.abs(gelu_tanh(x) - erf_form))]) < 2.8


@pytest.mark.parametrize("src,msg", [
    (source(64, 64, 16, ["gelu"], dtype="f64"), "the gelu epilogue computes in f32 .*, not f64: gfx906 has no f64 exponential"),
    (source(64, 64, 16, ["bias_row"]).replace("bias(%bias : memref<64xf32>) ", ""), "needs a bias operand"),
    (source(64, 64, 16, ["softmax"]), "unknown epilogue operation 'softmax'"),
    (source(64, 64, 16, ["bias_row"]).replace("memref<64xf32>", "memref<63xf32>"), "bias_row needs 64 values"),
])
def test_epilogue_errors(src, msg):
    with pytest.raises(DiagnosticError, match=msg):
        vlpc.compile(src, "gfx906", filename="e.mlir")
