"""vlpc tune on strided batched GEMMs (3-D memrefs): the problem is resolved by
vlpc.api.resolve_launch (batch count and strides), the search keeps S = 1 (gemm-split-k refuses
a split batch), the model times the whole batch and counts its FLOPs, and the emulator check runs
and compares the sampled tiles of every batch entry."""

from __future__ import annotations

import pytest

import vlpc
from vlpc import tune
from vlpc.cli import main
from vlpc.verify import Problem

from test_batched import batched_source
from test_tune import source as plain_source

M, N, K = 64, 64, 32


def source(batch: int, dynamic: bool = False, m: int = M, n: int = N, k: int = K) -> str:
    return batched_source(batch, m, n, k, m * k, n * k, m * n, dynamic=dynamic)


def test_search_space_of_a_batch_keeps_one_slice_of_k():
    cands = tune.search_space(256, 512, 1024, "f32", "NT", batched=True)
    assert cands and all(c.split_k == 1 for c in cands)
    assert any(c.local_split > 1 for c in cands)  # the slices inside a workgroup stay
    assert not any(c.schedule == "seed" for c in cands)  # the seed's kernel computes one product
    assert any(c.split_k > 1 for c in tune.search_space(256, 512, 1024, "f32", "NT"))


def test_resolve_is_run_s_resolution_with_the_batch():
    kernel = vlpc.compile(source(3, dynamic=True)).kernel()
    p = tune.resolve(kernel, M, N, K, 3)
    assert (p.m, p.n, p.k, p.batch) == (M, N, K, 3)
    assert (p.stride_a, p.stride_b, p.stride_c) == (M * p.lda, N * p.ldb, M * p.ldc)  # rows x leading dimension
    with pytest.raises(vlpc.VlpcError, match="batch count at launch"):
        tune.resolve(kernel, M, N, K)
    plain = vlpc.compile(plain_source(M, N, K)).kernel()
    with pytest.raises(vlpc.VlpcError, match="not batched"):
        tune.resolve(plain, None, None, None, 3)


def test_evaluate_models_the_whole_batch():
    cand = tune.Candidate(32, 64, 16)
    one = tune.evaluate(tune.Problem(source(1), "b1.mlir", None, None, None), cand, "gfx906", "mi60", None, 64)
    three = tune.evaluate(tune.Problem(source(3), "b3.mlir", None, None, None), cand, "gfx906", "mi60", None, 64)
    for r in (one, three):
        assert r.error is None, r.error
        assert r.verified is True and 0 <= r.max_ratio <= 1
    assert three.modeled_us > one.modeled_us
    flops = 3 * 2 * M * N * K
    assert three.tflops == pytest.approx(flops / (three.modeled_us * 1e-6) / 1e12, rel=1e-9)


def test_check_compares_every_batch_entry(monkeypatch):
    """Entry 2's sampled tile is compared (a wrong element there fails, named C[2][i, j]), and an
    element of entry 1 outside the sampled tiles must keep its bits."""
    b, m, n, k = 3, 256, 768, 32
    mod = vlpc.compile(source(b, m=m, n=n, k=k), macro_tile=(64, 256), split_k=1)
    p = Problem(m, n, k, k, k, n, batch=b, stride_a=m * k, stride_b=n * k, stride_c=m * n)
    ok, worst, why = tune.check_candidate(mod, p, 1.0, 0.0)
    assert ok and worst <= 1 and why is None, why
    assert (1, 1) not in tune.sample_tiles(mod.kernel(), p)  # grid 3x4: (1, 1) is neither a corner nor the middle
    real = tune._launch

    def corrupt(z, i, j):
        def launch(*args):
            st, out = real(*args)
            out = out.copy()
            out[z * p.stride_c + i * p.ldc + j] += 1.0
            return st, out
        return launch

    monkeypatch.setattr(tune, "_launch", corrupt(2, 3, 5))  # inside tile (0, 0) of the last entry
    ok, worst, why = tune.check_candidate(mod, p, 1.0, 0.0)
    assert not ok and worst > 1 and why.startswith("C[2][3, 5]"), why
    monkeypatch.setattr(tune, "_launch", corrupt(1, 64 + 3, 256 + 5))  # tile (1, 1) of entry 1: not run
    ok, worst, why = tune.check_candidate(mod, p, 1.0, 0.0)
    assert not ok and why == "C[1][67, 261] outside the sampled tiles was written"


def test_cli_tunes_a_dynamic_batch(tmp_path, capsys):
    f = tmp_path / "bd.mlir"
    f.write_text(source(3, dynamic=True))
    size = ["--m", str(M), "--n", str(N), "--k", str(K)]
    assert main(["tune", str(f), *size, "--batch", "3", "--max-candidates", "2", "-j", "1", "-q"]) == 0
    cap = capsys.readouterr()
    assert f"{M}x{N}x{K} batch 3 f32" in cap.err
    assert "best (modeled" in cap.out and "ok (" in cap.out and "dropped" not in cap.out
    assert main(["tune", str(f), *size, "-q"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "batch count at launch" in err[0] and "--batch" in err[0]
    assert main(["tune", str(f), *size, "--batch", "0", "-q"]) == 1
    assert capsys.readouterr().err.strip() == "vlpc: --batch must be positive, got 0"
