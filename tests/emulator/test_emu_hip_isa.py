"""hipcc-built kernels (tests/data/hip/isa_mix.hip, Debian's ROCm 5.2 hipcc, -O3, gfx906)
that use f16 arithmetic, fdot2/sdot4, float and double division, __shfl_xor/__shfl_up
(ds_bpermute), 8/16-bit integer arithmetic and libm sin/cos/exp/log, run on the strict
emulator and compared with NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vlpc.runtime.code_object import load_code_object
from vlpc.runtime.selection import get_device

from launch_support import run_elementwise

CO = Path(__file__).parents[1] / "data" / "hip" / "isa_mix.hsaco"
N = 100
GRID, BLOCK = (2,), (64,)


@pytest.fixture(scope="module")
def env():
    return get_device("emulator", strict=True), load_code_object(CO)


def _run(env, kernel, ins, outs):
    return run_elementwise(env, kernel, N, GRID, BLOCK, ins, outs)


RNG = np.random.default_rng(5)


def test_half_ops(env):
    a = (RNG.standard_normal(N) * 3).astype(np.float32)
    b = (RNG.standard_normal(N) * 3).astype(np.float32)
    (out,) = _run(env, "half_ops", [a, b], [np.float32])
    x, y = a.astype(np.float16), b.astype(np.float16)
    s = (x.astype(np.float64) + y).astype(np.float16)
    r = (x.astype(np.float64) * y + s).astype(np.float16)      # fma in f16: one rounding
    want = np.where(r > -y, r, -y).astype(np.float32)
    np.testing.assert_array_equal(out, want)


def test_dot_products(env):
    a = RNG.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    b = RNG.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    # keep the f16 halves finite: clear the top exponent bit of each half
    a16, b16 = a & np.uint32(0xBFFFBFFF), b & np.uint32(0xBFFFBFFF)
    c = RNG.standard_normal(N).astype(np.float32)
    fout, iout = _run(env, "dots", [a16, b16, c], [np.float32, np.int32])
    ha, hb = a16.view(np.float16).reshape(N, 2).astype(np.float64), b16.view(np.float16).reshape(N, 2).astype(np.float64)
    want = (ha * hb).sum(axis=1) + c
    np.testing.assert_allclose(fout, want, rtol=1e-6, atol=1e-30)
    sa = a16.view(np.int8).reshape(N, 4).astype(np.int64)
    sb = b16.view(np.int8).reshape(N, 4).astype(np.int64)
    np.testing.assert_array_equal(iout, ((sa * sb).sum(axis=1) + np.arange(N)).astype(np.int32))


def test_division_is_ieee(env):
    a = (RNG.standard_normal(N) * 10.0 ** RNG.integers(-30, 30, N)).astype(np.float32)
    b = (RNG.standard_normal(N) * 10.0 ** RNG.integers(-30, 30, N)).astype(np.float32)
    a[:4], b[:4] = [1, 0, 1e-40, 3e38], [3, 0, 3, 1e-3]
    da = RNG.standard_normal(N) * 10.0 ** RNG.integers(-200, 200, N)
    db = RNG.standard_normal(N) * 10.0 ** RNG.integers(-200, 200, N)
    dev, co = env
    # divide(n, a, b, q, da, db, dq): the outputs are not last here
    ba, bb, bda, bdb = (dev.upload(np.ascontiguousarray(x)) for x in (a, b, da, db))
    bq, bdq = dev.upload(np.zeros(N, np.float32)), dev.upload(np.zeros(N, np.float64))
    dev.launch(co, "divide", grid=GRID, block=BLOCK, args=[np.int32(N), ba, bb, bq, bda, bdb, bdq])
    outs = [dev.download(bq, np.float32, (N,)), dev.download(bdq, np.float64, (N,))]
    with np.errstate(all="ignore"):
        wq, wdq = a / b, da / db
    same = (outs[0].view(np.uint32) == wq.view(np.uint32)) | (np.isnan(outs[0]) & np.isnan(wq))
    assert same.all(), (a[~same], b[~same], outs[0][~same], wq[~same])
    np.testing.assert_array_equal(outs[1].view(np.uint64), wdq.view(np.uint64))


def test_shuffles(env):
    a = RNG.integers(-1000, 1000, N).astype(np.int32)
    x1, x5, up = _run(env, "shuffles", [a], [np.int32, np.int32, np.int32])
    full = np.zeros(128, np.int32)
    full[:N] = a
    i = np.arange(N)
    np.testing.assert_array_equal(x1, full[i ^ 1])
    np.testing.assert_array_equal(x5, full[i ^ 5])
    lane = i % 64
    np.testing.assert_array_equal(up, np.where(lane >= 3, full[i - 3], full[i]))


def test_small_integer_arithmetic(env):
    a = RNG.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    b = RNG.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    (out,) = _run(env, "small_ints", [a, b], [np.int32])
    s = (a >> 16).astype(np.int16)
    c = b.astype(np.int8)
    us = a.astype(np.uint16)
    want = ((s.astype(np.int32) * c.astype(np.int32)).astype(np.int16).astype(np.int32)
            + (us >> 3).astype(np.int32)
            + (s.astype(np.int32) - b.astype(np.int16).astype(np.int32)).astype(np.int16).astype(np.int32))
    np.testing.assert_array_equal(out, want.astype(np.int32))


def test_trig_exp_log(env):
    a = np.concatenate([RNG.uniform(-10, 10, N - 4), [0.0, 1e4, -123456.0, 3.0e5]]).astype(np.float32)
    s, c, e = _run(env, "trig", [a], [np.float32, np.float32, np.float32])
    x = a.astype(np.float64)
    # libm's sinf/cosf are within a few ulp (OpenCL allows 4); expf/logf within 3 ulp each
    np.testing.assert_allclose(s, np.sin(x), rtol=0, atol=4 * np.spacing(np.float32(1)))
    np.testing.assert_allclose(c, np.cos(x), rtol=0, atol=4 * np.spacing(np.float32(1)))
    with np.errstate(over="ignore"):
        want = np.exp(x * 0.25) + np.log(np.abs(x) + 1)      # exp overflows to inf for 3e5, as expf does
    np.testing.assert_allclose(e, want, rtol=1e-5)
