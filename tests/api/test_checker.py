"""The product's own checker (``vlpc.run``'s verification and ``vlpc run``'s exit code 3),
tested against tests/reference.py.

The kernel's output is replaced by a *forged* C: the download of C returns a result made
from tests/reference.py (the BLAS reference rounded to the kernel's type, which a correct
kernel could return) or that result with a known fault.  So the checker is tested on its
own: it must accept every right answer (NaN/Inf in a C that beta = 0 does not read, NaN/Inf
in A/B that alpha = 0 does not read, NaN in C's padding, bias epilogues rounded at the
store, f64) and reject every wrong one (one element off by far more than the bound, NaN for
a number, a modified padding column, an f64 error that only an f32 bound would allow).
Issue 14 items 6-8 are false verdicts of this checker.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import vlpc
from vlpc.runtime import get_device

from reference import check_run, gemm_reference

SMALL = dict(macro_tile=(16, 64), micro_tile=(16, 1), k_step=8)


def source(m, n, k, dtype="f32", layout="NT", ldc=None, epilogue=(), bias_len=None):
    a = (m, k) if layout[0] == "N" else (k, m)
    b = (k, n) if layout[1] == "N" else (n, k)
    ta, tb = (f"memref<{x}x{y}x{dtype}>" for x, y in (a, b))
    tc = f"memref<{m}x{n}x{dtype}" + (f", strided<[{ldc}, 1]>>" if ldc else ">")
    attrs = f'layout = "{layout}"' + (", epilogue = [" + ", ".join(f'"{x}"' for x in epilogue) + "]" if epilogue else "")
    bias_arg = f", %bias: memref<{bias_len}x{dtype}>" if bias_len else ""
    bias_use = f" bias(%bias : memref<{bias_len}x{dtype}>)" if bias_len else ""
    return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {dtype}, %beta: {dtype}{bias_arg}) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta{bias_use} {{{attrs}}} : {ta}, {tb}, {tc}, {dtype}, {dtype}\n"
            "  func.return\n}\n")


@functools.lru_cache(maxsize=None)
def kernel(m, n, k, dtype="f32", layout="NT", ldc=None, epilogue=(), bias_len=None, small=True):
    return vlpc.compile(source(m, n, k, dtype, layout, ldc, epilogue, bias_len), **(SMALL if small else {})).kernel()


class ForgedDevice:
    """The emulator, except that downloading C returns a forged result.

    ``forge(inputs, c_before)`` gets the uploaded arrays in order (A, B, C, bias) and C as
    uploaded (full leading dimension) and returns C as the "kernel" left it."""

    def __init__(self, forge):
        self._dev = get_device("emulator")
        self._forge = forge
        self._uploaded: list = []

    def __getattr__(self, name):
        return getattr(self._dev, name)

    def upload(self, array):
        buf = self._dev.upload(array)
        self._uploaded.append((buf, np.array(array, copy=True)))
        return buf

    def download(self, buf, dtype=None, shape=None):
        got = self._dev.download(buf, dtype, shape)
        if len(self._uploaded) >= 3 and buf is self._uploaded[2][0]:
            inputs = [x for _, x in self._uploaded]
            out = self._forge(inputs, inputs[2].reshape(got.shape))
            assert out.shape == got.shape and out.dtype == got.dtype
            return out
        return got


def rows(flat: np.ndarray, nrows: int, ncols: int, ld: int) -> np.ndarray:
    """A writable (nrows, ncols) view of a row-major matrix with row stride ``ld`` (flat or 2-D)."""
    flat = flat.reshape(-1)
    assert flat.size >= (nrows - 1) * ld + ncols
    return np.lib.stride_tricks.as_strided(flat, (nrows, ncols), (ld * flat.itemsize, flat.itemsize))


def right_answer(alpha, beta, layout, m, n, k, epilogue=(), fault=None, ldc=None):
    """A forge: C = the reference rounded to C's type (padding kept bit for bit), then ``fault``
    (called with the M x N view of C, the reference and its bound).  A and B are unpadded."""
    ldc = ldc or n

    def forge(inputs, c_stored):
        a, b = inputs[:2]
        bias = inputs[3] if len(inputs) > 3 else None
        out = np.array(c_stored, copy=True)
        c0 = rows(c_stored.copy(), m, n, ldc)
        a2 = a.reshape(m if layout[0] == "N" else k, -1)
        b2 = b.reshape(k if layout[1] == "N" else n, -1)
        exp, bound = gemm_reference(a2, b2, c0, alpha, beta, layout=layout, m=m, n=n, k=k,
                                    epilogue=epilogue, bias=bias)
        view = rows(out, m, n, ldc)
        with np.errstate(over="ignore", invalid="ignore"):
            view[...] = exp.astype(out.dtype)
        if fault is not None:
            fault(view, exp, bound)
        return out

    return forge


def padding_modified(out, exp, bound):
    """The element just after row 0's last column (padding when ldc > N)."""
    flat = np.lib.stride_tricks.as_strided(out, (out.shape[1] + 1,), (out.strides[1],))
    flat[-1] = 12345.0


def off_by_far(out, exp, bound):
    """One element off by 64 times the reference's bound (and at least 2^-10 relative)."""
    i, j = out.shape[0] // 2, 3
    out[i, j] = exp[i, j] + max(64 * bound[i, j], abs(exp[i, j]) * 2.0**-10, 1e-3)


def nan_for_a_number(out, exp, bound):
    out[1, 2] = np.nan


def api_verdict(kern, forge, **kw) -> bool:
    """vlpc.run's verdict on the forged C: True (verified) or False (VerificationError)."""
    try:
        r = vlpc.run(kern, device=ForgedDevice(forge), **kw)
    except vlpc.VerificationError as e:
        assert e.result.verified is False and e.exit_code == 3
        return False
    assert r.verified is True
    return True


# -- vlpc.run ------------------------------------------------------------------------------


@pytest.mark.parametrize("fill", [np.nan, np.inf, -np.inf])
def test_api_beta_zero_ignores_non_finite_c(fill):
    kern = kernel(16, 64, 8)
    c = np.full((16, 64), fill, np.float32)
    assert api_verdict(kern, right_answer(1.5, 0.0, "NT", 16, 64, 8), c=c, alpha=1.5, beta=0.0)
    assert not api_verdict(kern, right_answer(1.5, 0.0, "NT", 16, 64, 8, fault=off_by_far), c=c, alpha=1.5, beta=0.0)


def test_api_alpha_zero_ignores_non_finite_a_and_b():
    kern = kernel(16, 64, 8)
    a = np.full((16, 8), np.nan, np.float32)
    b = np.full((64, 8), np.inf, np.float32)
    assert api_verdict(kern, right_answer(0.0, 0.5, "NT", 16, 64, 8), a=a, b=b, alpha=0.0, beta=0.5)
    assert not api_verdict(kern, right_answer(0.0, 0.5, "NT", 16, 64, 8, fault=nan_for_a_number),
                           a=a, b=b, alpha=0.0, beta=0.5)


def test_api_rejects_wrong_results():
    kern = kernel(16, 64, 8)
    for fault in (off_by_far, nan_for_a_number):
        assert not api_verdict(kern, right_answer(1.0, 0.5, "NT", 16, 64, 8, fault=fault), alpha=1.0, beta=0.5)
    assert api_verdict(kern, right_answer(1.0, 0.5, "NT", 16, 64, 8), alpha=1.0, beta=0.5)


def test_api_nan_where_the_reference_is_nan_is_right():
    """NaN in a C that beta != 0 reads: the right answer is NaN there, a number is wrong."""
    kern = kernel(16, 64, 8)
    c = np.zeros((16, 64), np.float32)
    c[3, 5] = np.nan
    assert api_verdict(kern, right_answer(1.0, 1.0, "NT", 16, 64, 8), c=c, alpha=1.0, beta=1.0)

    def finite_instead(out, exp, bound):
        out[3, 5] = 0.0

    assert not api_verdict(kern, right_answer(1.0, 1.0, "NT", 16, 64, 8, fault=finite_instead),
                           c=c, alpha=1.0, beta=1.0)


def test_api_padding_columns():
    kern = kernel(16, 64, 8, ldc=80)
    c = np.random.default_rng(0).standard_normal((16, 80)).astype(np.float32)
    c[:, 64:] = np.nan
    assert api_verdict(kern, right_answer(1.0, 1.0, "NT", 16, 64, 8, ldc=80), c=c, alpha=1.0, beta=1.0)
    assert not api_verdict(kern, right_answer(1.0, 1.0, "NT", 16, 64, 8, fault=padding_modified, ldc=80),
                           c=c, alpha=1.0, beta=1.0)


@pytest.mark.parametrize("epilogue", [("bias_col",), ("bias_row",), ("relu",), ("gelu",), ("bias_col", "gelu")],
                         ids="+".join)
def test_api_epilogue_results_rounded_at_the_store_are_right(epilogue):
    """Issue 14 item 8: 8x64x1 with a bias (the product of one term is exact; the bias add and
    the store round), the correctly rounded result must pass, for every seed tried."""
    m, n, k = 8, 64, 1
    bias_len = (m if "bias_row" in epilogue else n) if any(x.startswith("bias") for x in epilogue) else None
    kern = kernel(m, n, k, epilogue=epilogue, bias_len=bias_len, small=False)
    for seed in range(4):
        assert api_verdict(kern, right_answer(1.0, 0.5, "NT", m, n, k, epilogue), seed=seed, alpha=1.0, beta=0.5), seed
    assert not api_verdict(kern, right_answer(1.0, 0.5, "NT", m, n, k, epilogue, fault=off_by_far), alpha=1.0, beta=0.5)


def test_api_f64_bound_is_f64():
    kern = kernel(16, 64, 8, dtype="f64", layout="NN")
    assert api_verdict(kern, right_answer(1.25, -0.5, "NN", 16, 64, 8), alpha=1.25, beta=-0.5)

    def f32_sized_error(out, exp, bound):  # fine for an f32 result, far outside an f64 bound
        out[2, 2] = exp[2, 2] * (1 + 2.0**-20) + 2.0**-20

    assert not api_verdict(kern, right_answer(1.25, -0.5, "NN", 16, 64, 8, fault=f32_sized_error),
                           alpha=1.25, beta=-0.5)


def test_api_verdict_on_the_real_kernel_agrees_with_the_reference():
    """No forging: the emulated kernel's C over a NaN C with beta = 0 is right by the reference,
    and vlpc.run says so."""
    kern = kernel(16, 64, 8)
    c = np.full((16, 64), np.nan, np.float32)
    r = vlpc.run(kern, c=c, alpha=2.0, beta=0.0, verify=False)
    exp, bound = gemm_reference(r.inputs["A"], r.inputs["B"], None, 2.0, 0.0, layout="NT", m=16, n=64, k=8)
    assert np.all(np.abs(r.c - exp) <= bound)
    assert vlpc.run(kern, c=c, alpha=2.0, beta=0.0).verified


# -- vlpc run (the command) -------------------------------------------------------------------


def cli_run(tmp_path, monkeypatch, text, forge, arrays=None, extra=()):
    """``vlpc run`` in process on the forged device; returns the exit code."""
    import vlpc.runtime
    from vlpc.cli import main

    monkeypatch.setattr(vlpc.runtime, "get_device", lambda *a, **kw: ForgedDevice(forge))
    import vlpc.commands.run as run_mod

    if hasattr(run_mod, "get_device"):
        monkeypatch.setattr(run_mod, "get_device", lambda *a, **kw: ForgedDevice(forge))
    src = tmp_path / "g.mlir"
    src.write_text(text)
    args = ["run", str(src), *extra]
    if arrays is not None:
        names = []
        for name, arr in zip("abc", arrays):
            np.save(tmp_path / f"{name}.npy", arr)
            names.append(str(tmp_path / f"{name}.npy"))
        args += ["--inputs", *names]
    return main(args)


def cli_args(opts):
    return [f"--macro-tile={opts['macro_tile'][0]}x{opts['macro_tile'][1]}",
            f"--micro-tile={opts['micro_tile'][0]}x{opts['micro_tile'][1]}", f"--k-step={opts['k_step']}"]


def test_cli_beta_zero_ignores_nan_in_c(tmp_path, monkeypatch):
    """Issue 14 item 6."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((16, 8)).astype(np.float32), rng.standard_normal((64, 8)).astype(np.float32)
    c = np.full((16, 64), np.nan, np.float32)
    c[::2] = np.inf
    text = source(16, 64, 8)
    extra = [*cli_args(SMALL), "--beta", "0"]
    assert cli_run(tmp_path, monkeypatch, text, right_answer(1.0, 0.0, "NT", 16, 64, 8), (a, b, c), extra) == 0
    assert cli_run(tmp_path, monkeypatch, text, right_answer(1.0, 0.0, "NT", 16, 64, 8, fault=off_by_far),
                   (a, b, c), extra) == 3


def test_cli_nan_in_padding_columns(tmp_path, monkeypatch):
    """Issue 14 item 7."""
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((16, 8)).astype(np.float32), rng.standard_normal((64, 8)).astype(np.float32)
    c = rng.standard_normal((16, 80)).astype(np.float32)
    c[:, 64:] = np.nan
    text = source(16, 64, 8, ldc=80)
    extra = [*cli_args(SMALL), "--beta", "1"]
    assert cli_run(tmp_path, monkeypatch, text, right_answer(1.0, 1.0, "NT", 16, 64, 8, ldc=80), (a, b, c), extra) == 0
    assert cli_run(tmp_path, monkeypatch, text, right_answer(1.0, 1.0, "NT", 16, 64, 8, fault=padding_modified, ldc=80),
                   (a, b, c), extra) == 3


def test_cli_bias_col_rounded_result_passes(tmp_path, monkeypatch):
    """Issue 14 item 8: plain ``vlpc run bias.mlir`` (8x64x1, random data, default options)."""
    text = source(8, 64, 1, epilogue=("bias_col",), bias_len=64)
    forge = right_answer(1.0, 0.5, "NT", 8, 64, 1, ("bias_col",))
    assert cli_run(tmp_path, monkeypatch, text, forge) == 0
    forge = right_answer(1.0, 0.5, "NT", 8, 64, 1, ("bias_col",), fault=off_by_far)
    assert cli_run(tmp_path, monkeypatch, text, forge) == 3


def test_cli_alpha_zero_and_f64(tmp_path, monkeypatch):
    a = np.full((16, 8), np.nan, np.float64)
    b = np.full((8, 64), np.inf, np.float64)
    c = np.random.default_rng(3).standard_normal((16, 64))
    text = source(16, 64, 8, dtype="f64", layout="NN")
    extra = [*cli_args(dict(macro_tile=(16, 64), micro_tile=(16, 1), k_step=8)), "--alpha", "0", "--beta", "0.5"]
    assert cli_run(tmp_path, monkeypatch, text, right_answer(0.0, 0.5, "NN", 16, 64, 8), (a, b, c), extra) == 0

    def f32_sized_error(out, exp, bound):
        out[2, 2] = exp[2, 2] * (1 + 2.0**-20) + 2.0**-20

    assert cli_run(tmp_path, monkeypatch, text, right_answer(0.0, 0.5, "NN", 16, 64, 8, fault=f32_sized_error),
                   (a, b, c), extra) == 3


def test_batched_run_agrees_with_the_reference():
    """A strided batch with B shared (stride 0) and beta = 0 over a NaN C: vlpc.run's result is
    right by tests/reference.py, and vlpc.run's own verdict says so."""
    t = "memref<?x?x?xf32, strided<[?, ?, 1]>>"
    text = (f"func.func @bg(%a: {t}, %b: {t}, %c: {t}, %alpha: f32, %beta: f32) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"}} : {t}, {t}, {t}, f32, f32\n"
            "  func.return\n}\n")
    kern = vlpc.compile(text, **SMALL).kernel()
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 16, 24)).astype(np.float32)
    b = rng.standard_normal((64, 24)).astype(np.float32)
    c = np.full((3, 16, 64), np.nan, np.float32)
    r = vlpc.run(kern, a, b, c, alpha=1.5, beta=0.0, verify=False)
    assert r.c.shape == (3, 16, 64)
    check_run(r)
    assert vlpc.run(kern, a, b, c, alpha=1.5, beta=0.0).verified
