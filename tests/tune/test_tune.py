"""vlpc tune (issue 19): the search space, the sampled emulator check, ranking by the timing model,
and the round trip of the winner's options into `vlpc compile`.

Sizes are small (a few workgroups) so each candidate is modeled and checked in seconds; the
timing model's accuracy is measured by benchmarks/, not here."""

import json
import os
import subprocess
import sys

import pytest

import vlpc
from vlpc import tune
from vlpc.passes.gemm_split_k import k_per_split


def source(m, n, k, dtype="f32", alpha="1.0", beta="0.0"):
    return f"""
func.func @g(%a: memref<{m}x{k}x{dtype}>, %b: memref<{n}x{k}x{dtype}>, %c: memref<{m}x{n}x{dtype}>) {{
  %alpha = arith.constant {alpha} : {dtype}
  %beta = arith.constant {beta} : {dtype}
  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "NT"}} : memref<{m}x{k}x{dtype}>, memref<{n}x{k}x{dtype}>, memref<{m}x{n}x{dtype}>, {dtype}, {dtype}
  return
}}
"""


DYNAMIC = """
func.func @g(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>, %alpha: f32, %beta: f32) {
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, f32, f32
  return
}
"""


def test_search_space_respects_slices_and_dynamic_k():
    cands = tune.search_space(256, 512, 1024, "f32", "NT")
    assert any(c.split_k > 1 for c in cands) and any(c.local_split > 1 for c in cands)
    for c in cands:
        pieces = c.split_k * c.local_split
        if pieces > 1:  # every slice keeps at least 4 K steps
            assert k_per_split(1024, pieces, c.k_step) >= 4 * c.k_step
        if c.local_split > 1:
            assert c.macro_n & (c.macro_n - 1) == 0
    assert any(c.schedule == "seed" for c in cands)  # NT f32, M % 64, N % 256, K % 8
    # K known only at launch: only power-of-two slice counts
    dyn = tune.search_space(256, 512, 1000, "f32", "NT", dynamic_k=True, exhaustive=True)
    assert all((c.split_k * c.local_split) & (c.split_k * c.local_split - 1) == 0 for c in dyn)
    assert not any(c.schedule == "seed" for c in tune.search_space(250, 512, 1024))  # M % 64 != 0
    assert not any(c.schedule == "seed" for c in tune.search_space(256, 512, 1024, "f64"))
    with pytest.raises(vlpc.VlpcError, match="f32, f64, f16 and int8"):
        tune.search_space(64, 64, 64, "i32")


def test_candidate_options_compile_as_printed():
    c = tune.Candidate(32, 128, 8, split_k=2, local_split=2, waves_per_simd=4)
    mod = vlpc.compile(source(96, 300, 512), cus=64, **c.options())
    li = mod.kernel().launch_info
    assert (li["macro_m"], li["macro_n"], li["k_step"], li["split_k"], li["local_split"]) == (32, 128, 8, 2, 2)
    assert "--split-k 2" in c.flags() and "--local-split 2" in c.flags() and "--waves-per-simd 4" in c.flags()


def test_evaluate_models_and_checks_a_split_plan():
    p = tune.Problem(source(130, 300, 256, beta="0.5"), "t.mlir", None, None, None)
    r = tune.evaluate(p, tune.Candidate(64, 128, 16, split_k=2), "gfx906", "mi60", None, 64)
    assert r.error is None, r.error
    assert r.verified is True and 0 <= r.max_ratio <= 1
    assert r.modeled_us > 0 and r.tflops > 0 and 0 < r.peak_share < 1
    assert r.plan.startswith("64x128 k16 S2")
    assert r.vgprs > 0


def test_check_fails_on_a_wrong_or_stray_element(monkeypatch):
    mod = vlpc.compile(source(128, 512, 64), cus=64, split_k=1)
    from vlpc.verify import Problem

    p = Problem(128, 512, 64, 64, 64, 512)
    ok, worst, why = tune.check_candidate(mod, p, 1.0, 0.0)
    assert ok and worst <= 1 and why is None
    real = tune._launch
    # grid 2x2 of 64x256 tiles: all four are sampled corners, so make M taller to leave tiles out
    p = Problem(256, 768, 64, 64, 64, 768)
    mod = vlpc.compile(source(256, 768, 64), cus=64, split_k=1)
    tiles = tune.sample_tiles(mod.kernel(), p)
    assert (1, 1) not in tiles  # the grid is 3x4: (1, 1) is neither a corner nor the middle (1, 2)

    def corrupt(where):
        def launch(*args):
            st, out = real(*args)
            out = out.copy()
            i, j = where
            out[i * p.ldc + j] += 1.0
            return st, out
        return launch

    monkeypatch.setattr(tune, "_launch", corrupt((3, 5)))  # inside tile (0, 0)
    ok, worst, why = tune.check_candidate(mod, p, 1.0, 0.0)
    assert not ok and worst > 1 and why.startswith("C[3, 5]")
    monkeypatch.setattr(tune, "_launch", corrupt((64 + 3, 256 + 5)))  # tile (1, 1): not run
    ok, worst, why = tune.check_candidate(mod, p, 1.0, 0.0)
    assert not ok and "outside the sampled tiles" in why


def test_tune_ranks_by_modeled_time_and_drops_failures():
    p = tune.Problem(DYNAMIC, "d.mlir", 96, 256, 128)
    cands = [tune.Candidate(64, 256, 16), tune.Candidate(64, 64, 16),
             tune.Candidate(64, 256, 16, split_k=3)]  # 3 slices of a K known at launch: refused
    seen = []
    res = tune.tune(p, cands, board="mi60", cus=64, jobs=1, progress=seen.append)
    assert len(seen) == 3
    good = [r for r in res if r.ok]
    assert len(good) == 2 and good[0].modeled_us <= good[1].modeled_us
    assert all(r.verified for r in good)
    bad = res[-1]
    assert not bad.ok and "power of two" in bad.error
    text = tune.table(res)
    assert "dropped" in text and text.count("| 1 |") == 1


def test_cli_tune_writes_options_that_compile_accepts(tmp_path):
    f = tmp_path / "g.mlir"
    f.write_text(source(128, 256, 256))
    out = tmp_path / "tuned.json"
    env = dict(os.environ, PYTHONSAFEPATH="1")
    r = subprocess.run([sys.executable, "-m", "vlpc.cli", "tune", str(f), "--max-candidates", "3", "-j", "1", "-q",
                        "-o", str(out), "--csv", str(tmp_path / "t.csv")], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "MODELED" in r.stderr and "modeled" in r.stdout
    data = json.loads(out.read_text())
    assert data["modeled_us"] > 0 and data["board"] == "mi50"  # the default board (vlpc.targets.DEFAULT_BOARDS)
    # compiling with --options gives exactly what compiling with the printed flags gives
    a = subprocess.run([sys.executable, "-m", "vlpc.cli", "compile", str(f), "--options", str(out), "--emit", "asm"],
                       capture_output=True, text=True, env=env)
    b = subprocess.run([sys.executable, "-m", "vlpc.cli", "compile", str(f), *data["flags"].split(), "--emit", "asm"],
                       capture_output=True, text=True, env=env)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert a.stdout == b.stdout
    # the header, the automatic plan and the 3 candidates modeled
    assert (tmp_path / "t.csv").read_text().count("\n") == 5


def test_cli_options_file_errors_are_one_line(tmp_path):
    f = tmp_path / "g.mlir"
    f.write_text(source(64, 256, 64))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    env = dict(os.environ, PYTHONSAFEPATH="1")
    for path, want in ((bad, "not a JSON file"), (tmp_path / "missing.json", "No such file")):
        r = subprocess.run([sys.executable, "-m", "vlpc.cli", "compile", str(f), "--options", str(path)],
                           capture_output=True, text=True, env=env)
        assert r.returncode != 0 and want in r.stderr and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
