"""The automatic lane-along-K decode GEMV (passes/isel/gemv.py) at every M the brief of issue 33
names -- 1, 2, 3, 4, 5, 15, 16 -- with N not a multiple of the rows a workgroup takes and K not
a multiple of the K step (1 KiB of a row), on the strict emulator: exactly sized, padded buffers
(NaN / garbage in the gaps, C's padding compared bit for bit), beta = 0 over a NaN C, then alpha
and beta nonzero; expected values from NumPy (tests/kernels/test_dot_gemm.py ``run_case``)."""

from __future__ import annotations

import numpy as np
import pytest

import vlpc
from vlpc.dialects.gemm import ELEMENT_BYTES

from dot_support import source
from test_dot_gemm import NP, run_case


@pytest.mark.parametrize("m, n, k, ab, ct", [
    (1, 7, 1000, "f16", "f32"),      # one row of A; 7 rows: a workgroup per row; 1 step and 976 bytes
    (2, 9, 1504, "i8", "i32"),       # one whole int8 step and 480 bytes
    (3, 5, 1096, "f16", "f16"),      # two whole f16 steps and 144 bytes; f16 C
    (4, 11, 2608, "i8", "i32"),      # two steps and 560 bytes
    (5, 6, 704, "f16", "f32"),       # one step and 384 bytes
    (15, 6, 1200, "f16", "f32"),     # M above 8, N / 4 not whole: two rows a workgroup
    (15, 13, 2112, "i8", "i32"),     # N odd: one row a workgroup
    (16, 12, 1496, "f16", "f32"),    # N not a multiple of 8: no A in LDS; 2 steps and 944 bytes
    (16, 24, 3008, "i8", "i32"),     # A in LDS (8 rows a workgroup), 2 steps and 960 bytes
])
def test_every_m_with_edges(m, n, k, ab, ct):
    pad = 16 // ELEMENT_BYTES[ab]  # (rows of A and B start on 16-byte boundaries)
    lda, ldb, ldc = k + pad, k + 2 * pad, n + 3
    kern = vlpc.compile(source(m, n, k, lda, ldb, ldc, ab, ct), cache=False).kernel("g")
    li = kern.launch_info
    assert li["macro_m"] == m and li["macro_n"] < 64 and kern.local_split == 1, "not the lane-along-K GEMV"
    assert n % li["macro_n"] == 0  # (N not a multiple of 8: a plan of fewer rows a workgroup)
    nan_c = np.full((m, n), np.nan, NP[ct]) if ct != "i32" else None
    run_case(kern, m, n, k, lda, ldb, ldc, ab, ct, 1 if ab == "i8" else 0.75, 0 if ab == "i8" else 0.0, c=nan_c)
    run_case(kern, m, n, k, lda, ldb, ldc, ab, ct, -3 if ab == "i8" else 1.25, 2 if ab == "i8" else -0.5, seed=3)
