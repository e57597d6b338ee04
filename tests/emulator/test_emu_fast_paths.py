"""The emulator's fast paths give the bits of their exact definitions.

* ``v_fma_f32``: one rounding of the exact a*b+c to f32 (IEEE 754 fusedMultiplyAdd,
  round to nearest even, denormals kept), checked against exact rational arithmetic
  (``fractions.Fraction``) on lanes built to sit on f32 halfway points, with zeros and
  lanes outside EXEC; through :func:`ops.fma32` and through the emulator.
* ``fma64`` (``v_fma_f64``): the correctly rounded f64 fma, against ``Fraction`` on
  cancellations and near ties (the round-to-odd path of :func:`ops.fma64`).
* ``Memory.atomic``: lanes of one instruction hitting the same address apply in lane
  order, against a lane-by-lane Python loop.
* ``run_dispatch`` pauses the cyclic garbage collector and restores its state.
"""

from __future__ import annotations

import gc
from fractions import Fraction

import numpy as np
import pytest

from vlpc.runtime.emulator import ops as O
from vlpc.runtime.emulator.memory import Memory
from vlpc.runtime.emulator.testing import run_lanes

U32, U64 = np.uint32, np.uint64


def round_binary(x: Fraction, mant_bits: int, min_exp: int, max_exp: int) -> Fraction | float:
    """``x`` rounded to nearest even in a binary format with ``mant_bits`` significand bits,
    normal exponents ``min_exp..max_exp`` (gradual underflow); +-inf on overflow, a signed
    zero on underflow (an exact zero is +0: the cases here have no -0 addend)."""
    if x == 0:
        return Fraction(0)
    sign = -1 if x < 0 else 1
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, min_exp)
    ulp = Fraction(2) ** (e - mant_bits + 1)
    q, r = divmod(a, ulp)
    if r * 2 > ulp or (r * 2 == ulp and q % 2):
        q += 1
    y = q * ulp
    if y >= Fraction(2) ** (max_exp + 1):
        return sign * float("inf")
    if y == 0:
        return sign * 0.0
    return sign * y


def f32_of(x: Fraction) -> np.uint32:
    y = round_binary(x, 24, -126, 127)
    return np.float32(float(y)).view(U32)  # y is an f32 value: exact in float


def f64_of(x: Fraction) -> np.uint64:
    y = round_binary(x, 53, -1022, 1023)
    return np.float64(float(y)).view(U64)


def _fma32_cases(n, rng):
    """f32 a, b, c whose exact a*b+c lies within 2^-46 relative of an f32 halfway point
    (the f64 sum rounds onto it), plus zeros and random lanes."""
    k = rng.integers(1, 1000, n).astype(np.float64)
    c = np.ldexp(rng.integers(0x800000, 0x1000000, n).astype(float), rng.integers(-140, 60, n) - 23)
    c *= rng.choice([-1.0, 1.0], n)
    c = np.where(rng.integers(0, 4, n) == 0, np.ldexp(rng.integers(0, 0x800000, n).astype(float), -149), c)
    cf = c.astype(np.float32)
    e = np.floor(np.log2(np.abs(cf.astype(np.float64)) + 1e-300))
    half = np.ldexp(1.0, np.maximum(e - 23, -149).astype(int)) / 2
    ea = np.floor(np.log2(half) / 2).astype(int)
    eb = np.log2(half).astype(int) - ea
    a = (rng.choice([-1.0, 1.0], n) * np.ldexp(1 + k * 2.0 ** -23, ea)).astype(np.float32)
    b = (rng.choice([-1.0, 1.0], n) * np.ldexp(1 - k * 2.0 ** -23, eb)).astype(np.float32)
    a[rng.integers(0, 5, n) == 0] = 0
    cf[rng.integers(0, 5, n) == 0] = 0
    r = rng.integers(0, 6, n) == 0
    a[r] = rng.standard_normal(int(r.sum()))
    b[r] = rng.standard_normal(int(r.sum()))
    return a, b, cf


def _exact32(a, b, c):
    return np.array([f32_of(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))
                     for x, y, z in zip(a, b, c)], U32)


def test_fma32_matches_exact_rounding_on_halfway_lanes():
    rng = np.random.default_rng(1)
    a, b, c = _fma32_cases(3000, rng)
    want = _exact32(a, b, c)
    with np.errstate(all="ignore"):
        naive = (a.astype(np.float64) * b + c.astype(np.float64)).astype(np.float32).view(U32)
    assert (naive != want).sum() > 100  # the cases do need the double-rounding repair
    got = O.fma32(a.view(U32), b.view(U32), c.view(U32))
    assert np.array_equal(got, want)


@pytest.mark.parametrize("body", [
    "v_fma_f32 v20, v10, v11, v12",
    "v_mov_b32 v20, v12\nv_fmac_f32 v20, v10, v11",
    # odd lanes outside EXEC keep the 0 written before (their zero sums are not results)
    "v_and_b32 v2, 1, v0\nv_mov_b32 v20, 0\nv_cmpx_eq_u32 vcc, 0, v2\nv_fma_f32 v20, v10, v11, v12",
])
def test_emulated_v_fma_f32_matches_exact_rounding(body):
    rng = np.random.default_rng(2)
    grid, block = 6, 256
    a, b, c = _fma32_cases(grid * block, rng)
    (got,), _ = run_lanes(body, (a, b, c), 1, block=block, grid=grid, strict=True)
    want = _exact32(a, b, c)
    if "cmpx" in body:
        odd = np.arange(grid * block) % 2 == 1
        want[odd] = 0
    assert np.array_equal(got, want)


def test_fma64_matches_exact_rounding_on_cancellations_and_near_ties():
    rng = np.random.default_rng(3)
    n = 1500

    def mant(m):
        return 1 + rng.integers(0, 2 ** 52, m, dtype=np.int64).astype(np.float64) * 2.0 ** -52

    ea, eb = rng.integers(-300, 300, n), rng.integers(-300, 300, n)
    a = np.ldexp(mant(n), ea) * rng.choice([-1.0, 1.0], n)
    b = np.ldexp(mant(n), eb) * rng.choice([-1.0, 1.0], n)
    p = a * b
    kind = np.arange(n) % 3
    c = np.where(kind == 0, -p * (1 + rng.integers(-4, 5, n) * 2.0 ** -52),          # cancellation
                 np.where(kind == 1, np.ldexp(mant(n), ea + eb + 53) * rng.choice([-1.0, 1.0], n),  # c >> a*b
                          p * rng.standard_normal(n)))                                # comparable
    with np.errstate(all="ignore"):
        got = O.fma64(a.view(U64), b.view(U64), c.view(U64))
        naive = (p + c).view(U64)
    want = np.array([f64_of(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))
                     for x, y, z in zip(a, b, c)], U64)
    assert (naive != want).sum() > 100  # a*b+c rounded twice is wrong on these lanes
    assert np.array_equal(got, want)


def _atomic_reference(op, mem, widx, d, c, bits):
    mask = (1 << bits) - 1
    old = []
    for i, w in enumerate(widx):
        o = mem[w]
        old.append(o)
        x = int(d[i])
        if op == "add":
            mem[w] = (o + x) & mask
        elif op == "cmpswap":
            mem[w] = x if o == int(c[i]) else o
        elif op == "umax":
            mem[w] = max(o, x)
        elif op == "inc":
            mem[w] = 0 if o >= x else o + 1
    return old


@pytest.mark.parametrize("width", [1, 2])
@pytest.mark.parametrize("op", ["add", "cmpswap", "umax", "inc"])
@pytest.mark.parametrize("words", [5, 200])
def test_atomic_with_repeated_addresses_applies_in_lane_order(op, width, words):
    rng = np.random.default_rng(4)
    n = 1024
    bits = 32 * width
    dt = U32 if width == 1 else U64
    init = rng.integers(0, 8, words).astype(dt)
    widx = rng.integers(0, words, n)
    d = rng.integers(0, 8, n).astype(dt)
    c = rng.integers(0, 8, n).astype(dt)
    m = Memory()
    base = m.alloc(words * 8)
    m.write(base, init)
    addrs = (np.uint64(base) + (widx * 4 * width).astype(U64))
    old = m.atomic(op, addrs, d.view(U32).reshape(n, width),
                   c.view(U32).reshape(n, width) if op == "cmpswap" else None, width)
    ref_mem = [int(x) for x in init]
    ref_old = _atomic_reference(op, ref_mem, widx, d, c, bits)
    assert old.view(dt).reshape(-1).tolist() == ref_old
    assert m.read(base, words * 4 * width).view(dt).tolist() == ref_mem


def test_dispatch_restores_the_garbage_collector_state():
    a = np.arange(64, dtype=np.float32)
    was = gc.isenabled()
    try:
        gc.enable()
        run_lanes("v_mov_b32 v20, v10", (a,), 1)
        assert gc.isenabled()
        gc.disable()
        run_lanes("v_mov_b32 v20, v10", (a,), 1)
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
