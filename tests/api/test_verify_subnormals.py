"""vlpc.verify (what ``vlpc run`` and ``vlpc.run`` check C with) sees a kernel that flushes
subnormals.  Every vlpc kernel keeps f32/f64 subnormals (docs/kernels.md "Float modes":
``.amdhsa_float_denorm_mode_32 3``), so a GEMM over tiny values has subnormal results; the
same code object with the descriptor's FLOAT_DENORM_MODE_32 set to 0 (flush, run so by the
emulator) returns zeros there, and the bound must not accept them (it did: its underflow term
was the smallest *normal* number per operation, the flush-to-zero model).  Expected values
come from NumPy on the same inputs, not from vlpc."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import vlpc
from vlpc.api import VerificationError
from vlpc.runtime.toolchain import assemble_and_link

GEMM = """builtin.module {
  func.func @g(%a: memref<5x9xf32>, %b: memref<7x9xf32>, %c: memref<5x7xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<5x9xf32>, memref<7x9xf32>, memref<5x7xf32>, f32, f32
    func.return
  }
}"""


@pytest.fixture(scope="module")
def kernels():
    k = vlpc.compile(GEMM, split_k=1).kernel()
    assert ".amdhsa_float_denorm_mode_32 3" in k.asm
    ftz = assemble_and_link(k.asm.replace(".amdhsa_float_denorm_mode_32 3", ".amdhsa_float_denorm_mode_32 0"), "gfx906")
    return k, dataclasses.replace(k, code_object=ftz)


def _tiny_inputs():
    rng = np.random.default_rng(0)
    a = np.ldexp(rng.standard_normal((5, 9)), -70).astype(np.float32)  # products near 2^-140: subnormal
    b = np.ldexp(rng.standard_normal((7, 9)), -70).astype(np.float32)
    c = np.ldexp(rng.standard_normal((5, 7)), -140).astype(np.float32)
    return a, b, c


def test_subnormal_results_verified(kernels):
    a, b, c = _tiny_inputs()
    r = vlpc.run(kernels[0], a, b, c, alpha=1.0, beta=0.5)
    expected = a.astype(np.float64) @ b.T.astype(np.float64) + 0.5 * c.astype(np.float64)
    assert np.all(np.abs(expected) < np.finfo(np.float32).tiny) and np.count_nonzero(r.c) == r.c.size
    # each of the 9 FMAs and the beta term rounds to the subnormal grid: at most half its step each
    step = float(np.finfo(np.float32).smallest_subnormal)
    assert r.verified and np.all(np.abs(r.c - expected) <= 11 * step / 2 + 2.0**-20 * np.abs(expected))


def test_flushing_kernel_is_caught(kernels):
    a, b, c = _tiny_inputs()
    flushed = vlpc.run(kernels[1], a, b, c, alpha=1.0, beta=0.5, verify=False).c
    assert not flushed.any()  # the emulator honours the descriptor's flush mode
    with pytest.raises(VerificationError, match="outside the error bound"):
        vlpc.run(kernels[1], a, b, c, alpha=1.0, beta=0.5)
