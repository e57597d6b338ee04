"""A hipcc-built code object whose descriptor flushes f32 denormals (tests/data/hip/ftz.hip,
built with -fgpu-flush-denormals-to-zero: FLOAT_DENORM_MODE_32 = 0, FLOAT_DENORM_MODE_16_64
= 3), run on the strict emulator and compared with NumPy: f32 sources and results flushed
to a signed zero (AMDGPUUsage: "Denormal flushing is sign respecting"), f16 results of
v_cvt_pkrtz_f16_f32 and f64 arithmetic keep their denormals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vlpc.isa.modes import FloatMode
from vlpc.runtime.code_object import load_code_object
from vlpc.runtime.selection import get_device

from launch_support import run_elementwise

CO = Path(__file__).parents[1] / "data" / "hip" / "ftz.hsaco"
N = 96
GRID, BLOCK = (2,), (64,)
TINY32 = np.float32(2.0 ** -126)


@pytest.fixture(scope="module")
def env():
    return get_device("emulator", strict=True), load_code_object(CO)


def _run(env, kernel, ins, outs):
    return run_elementwise(env, kernel, N, GRID, BLOCK, ins, outs)


def ftz(x):
    x = np.asarray(x, np.float32)
    return np.where((np.abs(x) < TINY32) & (x != 0), np.copysign(np.float32(0), x), x).astype(np.float32)


def same_bits(got, want):
    assert got.view(np.uint32).tolist() == np.asarray(want, np.float32).view(np.uint32).tolist()


RNG = np.random.default_rng(16)


def _values():
    # f32 denormals of both signs, tiny normals whose products/sums are denormal, ordinary values
    den = (RNG.integers(1, 1 << 23, N).astype(np.uint32) | (RNG.integers(0, 2, N).astype(np.uint32) << 31))
    tiny = (RNG.uniform(1, 4, N) * 2.0 ** -120 * RNG.choice([-1, 1], N)).astype(np.float32)
    ordinary = RNG.standard_normal(N).astype(np.float32)
    pick = RNG.integers(0, 3, N)
    return np.where(pick == 0, den.view(np.float32), np.where(pick == 1, tiny, ordinary)).astype(np.float32)


def test_descriptor_flushes_f32_only(env):
    _, co = env
    for name in ("mul_add", "pack_rtz", "dmul"):
        m = FloatMode.from_rsrc1(co.kernel(name).descriptor.compute_pgm_rsrc1)
        assert (m.denorm_32, m.denorm_16_64) == (0, 3)


def test_f32_mul_and_add_flush(env):
    a, b, c = _values(), _values(), _values()
    b[:8] = np.float32(2.0 ** -10)                   # tiny * 2^-10: denormal products
    prod, total = _run(env, "mul_add", [a, b, c], [np.float32, np.float32])
    with np.errstate(all="ignore"):
        same_bits(prod, ftz(ftz(a) * ftz(b)))
        same_bits(total, ftz(ftz(a) + ftz(c)))
    assert (np.abs(prod[prod != 0]) >= TINY32).all()   # no denormal left


def f16_rtz_bits(x):
    """f32 -> f16 bits rounded toward zero (NumPy nearest, stepped back toward 0 if it grew)."""
    x = np.asarray(x, np.float32).astype(np.float64)
    with np.errstate(over="ignore"):
        r = x.astype(np.float16)
    grew = np.isfinite(x) & (np.abs(r.astype(np.float64)) > np.abs(x))
    r = np.where(grew, np.nextafter(r, np.float16(0)), r).astype(np.float16)
    return r.view(np.uint16).astype(np.uint32)


def test_pkrtz_keeps_f16_denormals(env):
    a = _values()
    b = (RNG.uniform(-1, 1, N) * 2.0 ** RNG.integers(-26, -12, N)).astype(np.float32)  # f16 denormal range
    (out,) = _run(env, "pack_rtz", [a, b], [np.uint32])
    want = f16_rtz_bits(ftz(a)) | (f16_rtz_bits(ftz(b)) << np.uint32(16))
    assert out.tolist() == want.tolist()
    assert ((out >> 16) & 0x7C00 == 0).sum() > N // 4 and ((out >> 16) & 0x3FF).any()   # f16 denormals kept


def test_f64_denormals_kept(env):
    a = RNG.standard_normal(N) * 2.0 ** -1000
    b = RNG.standard_normal(N) * 2.0 ** -60                   # products down to the f64 denormal range
    (out,) = _run(env, "dmul", [a, b], [np.float64])
    want = a * b
    assert out.view(np.uint64).tolist() == want.view(np.uint64).tolist()
    assert (np.abs(want) < 2.0 ** -1022).any()
