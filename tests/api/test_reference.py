"""tests/reference.py, the tests' GEMM oracle, checked against hand-computed values and
element-by-element loops written from the BLAS definition (no vlpc)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reference import assert_gemm_close, assert_padding_untouched, batch_view, gamma, gelu_tanh, gemm_reference


def loops(a, b, c, alpha, beta, layout, m, n, k):
    """C = alpha op(A) op(B) + beta C, element by element with math.fsum (exact sums, rounded once)."""
    out = np.empty((m, n))
    for i in range(m):
        for j in range(n):
            terms = []
            if alpha != 0:
                for p in range(k):
                    x = a[i, p] if layout[0] == "N" else a[p, i]
                    y = b[p, j] if layout[1] == "N" else b[j, p]
                    terms.append(alpha * float(x) * float(y))
            if beta != 0:
                terms.append(beta * float(c[i, j]))
            out[i, j] = math.fsum(terms)
    return out


def test_hand_computed_2x2():
    a = np.array([[1, 2], [3, 4]], np.float32)
    b = np.array([[5, 6], [7, 8]], np.float32)
    c = np.array([[1, 1], [1, 1]], np.float32)
    exp, bound = gemm_reference(a, b, c, 2.0, -1.0, layout="NN")
    assert exp.tolist() == [[37.0, 43.0], [85.0, 99.0]]  # 2*[[19,22],[43,50]] - 1
    exp, _ = gemm_reference(a, b, c, 1.0, 0.0, layout="TN")  # A^T B = [[26,30],[38,44]]
    assert exp.tolist() == [[26.0, 30.0], [38.0, 44.0]]
    exp, _ = gemm_reference(a, b, c, 1.0, 0.0, layout="NT")  # A B^T = [[17,23],[39,53]]
    assert exp.tolist() == [[17.0, 23.0], [39.0, 53.0]]
    exp, _ = gemm_reference(a, b, c, 1.0, 0.0, layout="TT")  # A^T B^T = [[23,31],[34,46]]
    assert exp.tolist() == [[23.0, 31.0], [34.0, 46.0]]
    assert np.all(bound > 0)


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_layouts_and_leading_dimensions_match_loops(layout):
    rng = np.random.default_rng(7)
    m, n, k = 5, 7, 9
    a = rng.standard_normal((m if layout[0] == "N" else k, (k if layout[0] == "N" else m) + 3)).astype(np.float32)
    b = rng.standard_normal((k if layout[1] == "N" else n, (n if layout[1] == "N" else k) + 2)).astype(np.float32)
    c = rng.standard_normal((m, n + 4)).astype(np.float32)
    exp, bound = gemm_reference(a, b, c, 1.5, -0.25, layout=layout, m=m, n=n, k=k)
    want = loops(a, b, c, 1.5, -0.25, layout, m, n, k)
    assert np.abs(exp - want).max() <= 1e-12 * np.abs(want).max()
    assert_gemm_close(want.astype(np.float32), exp, bound)


def test_quick_return_rules():
    nan = np.full((3, 4), np.nan, np.float32)
    a = np.ones((3, 4), np.float32)
    b = np.ones((4, 5), np.float32)
    c = np.full((3, 5), 2.0, np.float32)
    exp, _ = gemm_reference(a, b, np.full((3, 5), np.nan, np.float32), 1.0, 0.0)  # beta = 0: C unread
    assert (exp == 4.0).all()
    exp, _ = gemm_reference(nan, np.full((4, 5), np.inf, np.float32), c, 0.0, 3.0)  # alpha = 0: A, B unread
    assert (exp == 6.0).all()
    exp, _ = gemm_reference(None, None, c, 0.0, 0.0, m=3, n=5, k=4)
    assert (exp == 0.0).all()
    exp, _ = gemm_reference(nan, b, c, 1.0, 1.0)  # otherwise NaN propagates
    assert np.isnan(exp).all()


def test_epilogues_in_order():
    a = np.array([[1.0, -2.0]], np.float32)  # 1 x 2
    b = np.array([[1.0, 1.0], [1.0, 1.0]], np.float32)  # 2 x 2 -> D = [[-1, -1]]
    c = np.zeros((1, 2), np.float32)
    col = np.array([0.5, 3.0], np.float32)
    assert gemm_reference(a, b, c, 1, 0, epilogue=["bias_col", "relu"], bias=col)[0].tolist() == [[0.0, 2.0]]
    assert gemm_reference(a, b, c, 1, 0, epilogue=["relu", "bias_col"], bias=col)[0].tolist() == [[0.5, 3.0]]
    row = np.array([4.0], np.float32)
    assert gemm_reference(a, b, c, 1, 0, epilogue=["bias_row"], bias=row)[0].tolist() == [[3.0, 3.0]]
    g = gemm_reference(a, b, c, 1, 0, epilogue=["gelu"])[0]
    # gelu(-1) = -0.5 (1 + tanh(-sqrt(2/pi) 1.044715)) = -0.15880800939172324 (tanh form)
    assert abs(g[0, 0] - (-0.15880800939172324)) < 1e-15
    assert abs(gelu_tanh(np.float64(1.0)) - 0.8411919906082768) < 1e-15


def test_batch_view_with_stride_zero():
    buf = np.arange(12, dtype=np.float32)
    v = batch_view(buf, 3, 2, 3, 0)
    assert v.shape == (3, 2, 3) and (v[2] == buf[:6].reshape(2, 3)).all()
    a = batch_view(buf, 2, 2, 2, 4)  # matrices at 0 and 4
    b = np.eye(2, dtype=np.float32)[None].repeat(2, 0)
    c = np.zeros((2, 2, 2), np.float32)
    exp, _ = gemm_reference(a, b, c, 1, 0)
    assert exp[1].tolist() == [[4.0, 5.0], [6.0, 7.0]]
    with pytest.raises(ValueError):
        batch_view(buf, 3, 2, 3, 4)


def test_bound_is_higham_and_assert_reports_the_worst_element():
    a = np.ones((1, 10), np.float32)
    b = np.ones((10, 1), np.float32)
    exp, bound = gemm_reference(a, b, None, 1.0, 0.0)
    u = 2.0**-24
    assert bound[0, 0] >= gamma(12, u) * 10 and bound[0, 0] < gamma(12, u) * 10 + 2 * u * 10 + 1e-36
    assert_gemm_close(np.array([[10.0]]), exp, bound)
    got = np.array([[10.0 + 1e-3]])
    with pytest.raises(AssertionError, match=r"1 of 1 elements.*C\[0,0\] = 10.001"):
        assert_gemm_close(got, exp, bound)
    with pytest.raises(AssertionError, match=r"worst C\[1,0\]"):
        assert_gemm_close(np.array([[1.0], [5.0], [np.nan]]), np.array([[1.0], [3.0], [np.nan]]),
                          np.array([[0.0], [0.1], [0.0]]))
    with pytest.raises(AssertionError, match="outside"):  # NaN where a number is expected
        assert_gemm_close(np.array([[np.nan]]), np.array([[1.0]]), 1.0)
    with pytest.raises(AssertionError, match="outside"):  # a number where NaN is expected
        assert_gemm_close(np.array([[1.0]]), np.array([[np.nan]]), 1.0)
    assert_gemm_close(np.array([[np.inf, np.nan]]), np.array([[np.inf, np.nan]]), 0.0)


def test_padding_check_compares_bits():
    before = np.array([[1.0, np.nan, np.nan]], np.float32)
    assert_padding_untouched(before.copy(), before, 1)
    after = before.copy()
    after.view(np.uint32)[0, 2] ^= 1  # another NaN payload
    with pytest.raises(AssertionError, match="first at"):
        assert_padding_untouched(after, before, 1)


def test_relu_of_nan_is_zero_as_v_max_computes():
    c = np.array([[np.nan, -1.0, 2.0]], np.float32)
    exp, _ = gemm_reference(None, None, c, 0.0, 1.0, m=1, n=3, k=1, epilogue=["relu"])
    assert exp.tolist() == [[0.0, 0.0, 2.0]]


def test_an_operand_shared_by_the_batch():
    a = np.arange(12, dtype=np.float32).reshape(3, 2, 2)  # 3 matrices
    b = np.eye(2, dtype=np.float32)  # one B for the whole batch (stride 0)
    c = np.ones((3, 2, 2), np.float32)
    exp, bound = gemm_reference(a, b, c, 2.0, 1.0)
    assert exp.shape == bound.shape == (3, 2, 2) and (exp == 2 * a + 1).all()
    exp, _ = gemm_reference(a, b, c, 0.0, 3.0)
    assert exp.shape == (3, 2, 2) and (exp == 3.0).all()


@pytest.mark.parametrize("dtype,scale", [("f32", 2.0**-70), ("f64", 2.0**-530)])
def test_bound_rejects_a_flushed_subnormal_result(dtype, scale):
    """vlpc's kernels keep subnormals (FLOAT_DENORM_MODE 3), so a product in the subnormal range
    must not verify as 0 (a kernel that flushed it): the underflow term is the smallest
    subnormal per operation (Higham (2.8), gradual underflow), not the smallest normal."""
    np_dt = {"f32": np.float32, "f64": np.float64}[dtype]
    a = np.full((2, 4), scale, np_dt)  # NT: A 2 x 4, B 3 x 4
    b = np.full((3, 4), scale, np_dt)
    expected, bound = gemm_reference(a, b, None, 1.0, 0.0, layout="NT")
    fi = np.finfo(np_dt)
    assert np.all((0 < expected) & (expected < fi.tiny))  # 4 scale^2: subnormal in the kernel's type
    assert np.all(expected > bound)  # so 0 (flushed) is outside the bound ...
    flushed = np.zeros_like(expected)
    with pytest.raises(AssertionError):
        assert_gemm_close(flushed, expected, bound)
    assert_gemm_close(expected.astype(np_dt), expected, bound)  # ... and the exact subnormal inside
