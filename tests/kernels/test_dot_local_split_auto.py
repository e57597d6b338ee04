"""The automatic plan of the f16 / int8 dot kernels weighs local splits L and the macro tile N
(passes/gemm_tile.py, passes/gemm_split_k.py, the surrogate's local split terms in
vlpc/plan_model.py fitted by ``benchmarks/plan_surrogate.py fit-local``).

Times here are the timing model's (timing-only launches on MI60, 64 CUs), computed in the test:
the automatic plan of examples/hgemm_nt.mlir must model faster than the former automatic plan
(32x256, S = 2, L = 1), and a local-split plan chosen for a small shape must give NumPy's result."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import vlpc
from vlpc.runtime import load_code_object
from vlpc.runtime import get_device

from dot_support import PAD, check_general_and_beta0, exact, garbage_device, operands, source

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hgemm_nt.mlir"


def modeled_us(kern, m: int, n: int, k: int, lda: int, ldc: int) -> float:
    """Timing-model time (us) of one launch of the whole plan (reduce kernel included), beta = 0."""
    dev = get_device("emulator", gpu="mi60", cus=64, timing_only=True)
    bufs = [dev.upload(np.zeros(x, t)) for x, t in (((m, lda), np.float16), ((n, lda), np.float16),
                                                    ((m, ldc), np.float32))]
    try:
        args = [*bufs, *(np.int32(v) for v in (m, n, k, lda, lda, ldc)), np.float32(1), np.float32(0)]
        return kern.execute(dev, load_code_object(kern.code_object), args, m, n, k, ldc).timing.time_us
    finally:
        for b in bufs:
            dev.free(b)


def test_hgemm_example_gets_a_local_split_modeled_faster():
    """256x512x641 f16 (16 tiles of 32x256 for 64 CUs): the automatic plan splits K over the
    wavefront groups of a workgroup (and narrows the tile), modeled faster than 32x256 S = 2."""
    text = EXAMPLE.read_text()
    auto = vlpc.compile(text, gpu="mi60").kernel("hgemm")
    former = vlpc.compile(text, gpu="mi60", macro_tile=(32, 256), micro_tile=(32, 1), split_k=2).kernel("hgemm")
    li = auto.launch_info
    assert auto.local_split > 1 or li["macro_n"] < 256
    assert (former.split_k, former.local_split, former.launch_info["macro_n"]) == (2, 1, 256)
    t_auto = modeled_us(auto, 256, 512, 641, 642, 512)
    t_former = modeled_us(former, 256, 512, 641, 642, 512)
    assert t_auto < 0.6 * t_former, (t_auto, t_former)


def test_square_4096_keeps_its_plan():
    """A full GPU: no split, no local split.  The tile N is the modeled best (issue 33: the former
    rule kept 32x256 while -v listed 32x64 faster; tests/tune/test_plan_choice.py checks the choice)."""
    for ab, ct in (("f16", "f32"), ("i8", "i32")):
        kern = vlpc.compile(source(4096, 4096, 4096, 4096, 4096, 4096, ab, ct), gpu="mi60").kernel("g")
        assert (kern.split_k, kern.local_split) == (1, 1)


@pytest.mark.parametrize("m, n, k, lda, ldc, ab, ct", [
    (64, 128, 2045, 2048, 129, "f16", "f32"),   # K odd, C rows padded
    (64, 128, 4093, 4100, 128, "i8", "i32"),    # K = 4 x 1023 + 1
])
def test_automatic_local_split_matches_numpy(m, n, k, lda, ldc, ab, ct):
    """A small, deep shape whose automatic plan uses a local split: exact-size buffers with NaN /
    garbage padding and a workspace of 0xFF bytes, a general alpha/beta and beta = 0 over a
    NaN-filled C, against NumPy (int8 exact), C's padding kept."""
    kern = vlpc.compile(source(m, n, k, lda, lda, ldc, ab, ct)).kernel("g")
    assert kern.local_split > 1
    a, b, c, _, _ = operands(m, n, k, ab, ct, np.random.default_rng(5))
    af, bf = exact(a, lda, PAD[ab]), exact(b, lda, PAD[ab])
    check_general_and_beta0(kern, af, bf, a, b, c, ct, m, n, k, lda, lda, ldc, garbage_device())


_S2_L4_OFF = pytest.mark.xfail(
    reason="the surrogate, refitted on the current kernels (benchmarks/plan_surrogate.py fit), is 17 % below "
           "the timing model for 32x64 S2 L4 (its local split term is one coefficient per type, fitted on "
           "32x64 S1 L8; the cause of this plan's gap is not found yet)",
    strict=True)


@pytest.mark.parametrize("macro_n, split, local", [
    pytest.param(64, 2, 4, marks=_S2_L4_OFF), (64, 1, 8), (256, 1, 2)])
def test_surrogate_models_the_local_split_against_the_timing_model(macro_n, split, local):
    """512x512x4096 int8 (2 workgroups per CU): the surrogate's local split terms (the LDS hand-over
    and the occupancy the hand-over's LDS allows: 2 workgroups of 32x64 L4 per CU, not 4) within
    10 % of the timing model's time for the same explicit plan."""
    from vlpc.plan_model import estimate, plan_board

    m = n = 512
    k = 4096
    kern = vlpc.compile(source(m, n, k, k, k, n, "i8", "i32"), gpu="mi60", macro_tile=(32, macro_n),
                        micro_tile=(32, 1), k_step=16, split_k=split, local_split=local).kernel("g")
    dev = get_device("emulator", gpu="mi60", cus=64, timing_only=True)
    bufs = [dev.upload(np.zeros(x, t)) for x, t in (((m, k), np.int8), ((n, k), np.int8), ((m, n), np.int32))]
    try:
        args = [*bufs, *(np.int32(v) for v in (m, n, k, k, k, n)), np.int32(1), np.int32(0)]
        model = kern.execute(dev, load_code_object(kern.code_object), args, m, n, k, n).timing.time_us
    finally:
        for b in bufs:
            dev.free(b)
    est = estimate(m, n, k, "i8", 1, (32, macro_n), 16, split, local, "workspace", plan_board("gfx906", "mi60"),
                   beta_nonzero=False, c_esize=4).seconds * 1e6
    assert abs(est / model - 1) < 0.10, (est, model)
