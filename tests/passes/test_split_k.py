"""Split-K: the plan (gemm-split-k), the kernels it needs, and their results on the emulator.

Every kernel here runs on the strict emulator (waitcnt, bounds, LDS and uninitialised-
register checkers) and is checked against tests/reference.py (the BLAS definition in float64, Higham's
forward error bound gamma_(K+2)), not by vlpc's own checker.  The issue's full matrix (four skinny shapes x S in {2, 4, 8, 16} x
both modes) is ``python benchmarks/split_k_plans.py``; this file runs every shape in
every mode and every S on a smaller one.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import vlpc
from vlpc.errors import DiagnosticError, VlpcError
from vlpc.runtime import get_device, load_code_object

from reference import check_run


from seed_tile_support import compile_, run_  # noqa: E402  (the seed's tile: see there)


def gemm(m, n, k, dtype="f32", layout="NT", dynamic="", epilogue=None, bias=None):
    """A gemm.matmul module (``dynamic`` names the sizes given at launch, e.g. "k")."""
    dims = {"m": "?" if "m" in dynamic else m, "n": "?" if "n" in dynamic else n, "k": "?" if "k" in dynamic else k}
    a = (dims["m"], dims["k"]) if layout[0] == "N" else (dims["k"], dims["m"])
    b = (dims["k"], dims["n"]) if layout[1] == "N" else (dims["n"], dims["k"])
    t = [f"memref<{x}x{y}x{dtype}>" for x, y in (a, b, (dims["m"], dims["n"]))]
    attrs = f'layout = "{layout}"' + (f", epilogue = [{', '.join(repr(x).replace(chr(39), chr(34)) for x in epilogue)}]"
                                      if epilogue else "")
    extra_arg = f", %bias: memref<{bias}x{dtype}>" if bias else ""
    extra_use = f" bias(%bias : memref<{bias}x{dtype}>)" if bias else ""
    return (f"func.func @g(%a: {t[0]}, %b: {t[1]}, %c: {t[2]}, %alpha: {dtype}, %beta: {dtype}{extra_arg}) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta{extra_use} {{{attrs}}} : {t[0]}, {t[1]}, {t[2]}, {dtype}, {dtype}\n"
            "  func.return\n}\n")


def run(text, **kw):
    """vlpc.run on the strict emulator; C checked against tests/reference.py (BLAS definition,
    Higham's bound), not by vlpc's own checker (``verify=False``)."""
    kw.setdefault("strict", True)
    kw.setdefault("beta", 0.5)
    r = run_(text, verify=False, **kw)
    check_run(r)
    return r


# -- the plan ------------------------------------------------------------------------------


def _modeled_best(m, n, k, macro, k_step=16, cus=60, gpu="", locals_=()):
    from vlpc.passes.gemm_split_k import MAX_AUTO_SPLIT, MIN_K_PER_SPLIT
    from vlpc.plan_model import choose, plan_board

    board = plan_board("gfx906", gpu, cus)
    return choose(m, n, k, "f32", 4, macro[0], (macro[1],), k_step, tuple(range(1, MAX_AUTO_SPLIT + 1)), 1,
                  "workspace", board, min_k_per_split=MIN_K_PER_SPLIT, locals_=locals_,
                  max_workitems=board.target.max_workitems_per_workgroup)


def test_auto_plan_is_the_cheapest_modeled_split_and_fills_the_cus():
    """256x256x8192 (XeTLA's GEMM guide's example): 4 tiles of 64x256 would leave 56 of 60 CUs idle.  The
    automatic S and local split L are the candidate of least modeled time (the plan surrogate,
    vlpc.plan_model), they split K at least 8 ways, and all its workgroups fit in one round."""
    from vlpc.passes.gemm_split_k import AUTO_LOCAL_SPLITS

    for cus in (60, 64):
        k = vlpc.compile(gemm(256, 256, 8192), cus=cus).kernel()
        macro = (k.launch_info["macro_m"], k.launch_info["macro_n"])
        best, cands = _modeled_best(256, 256, 8192, macro, cus=cus, locals_=AUTO_LOCAL_SPLITS)
        local = k.launch_info["local_split"]
        assert (k.split_k, local) == (best.split_k, best.local_split) and k.split_k * local >= 8
        assert k.split_mode == "workspace"
        assert best.seconds < min(c.seconds for c in cands if c.split_k == 1 and c.local_split == 1)
        from vlpc.plan_model import plan_board, variant
        wgs = 256 // macro[0] * (256 // macro[1]) * k.split_k
        resident = variant("f32", macro, 16, plan_board("gfx906", "", cus)).wgs_per_cu // local
        assert k.launch(256, 256, 8192).grid[2] == k.split_k and wgs <= cus * resident  # one round
        assert best.rounds == 1
        assert k.launch_info["k_per_split"] * k.split_k * local >= 8192


def test_auto_plan_leaves_full_gpus_and_launch_sizes_alone():
    assert vlpc.compile(gemm(4096, 4096, 640)).kernel().split_k == 1  # 256 tiles
    assert vlpc.compile(gemm(256, 256, 8192, dynamic="k")).kernel().split_k == 1  # K at launch
    assert vlpc.compile(gemm(64, 64, 64)).kernel().split_k == 1  # K too short to split


def test_auto_macro_tile_n_is_modeled_and_follows_narrow_n():
    # the chosen N is the one of least modeled time over 64/128/256 (each with its best S)
    for m, n, k in ((4096, 1000, 64), (1024, 1024, 640), (128, 4096, 4096)):
        li = vlpc.compile(gemm(m, n, k)).kernel().launch_info
        times = {mn: _modeled_best(m, n, k, (li["macro_m"], mn))[0].seconds for mn in (64, 128, 256)}
        assert times[li["macro_n"]] == min(times.values())
    # outside the model (sizes at launch): the smallest tile covering N, else 256
    assert vlpc.compile(gemm(256, 256, 8192, dynamic="k")).kernel().launch_info["macro_n"] == 256


def test_plan_kernels_and_workspace():
    ws = compile_(gemm(256, 256, 8192), split_k=4).kernel()
    assert [s.kernel for s in ws.plan(256, 256, 8192)] == ["g", "g_reduce"]
    assert [s.grid for s in ws.plan(256, 256, 8192)] == [(1, 4, 4), (1, 4, 1)]
    assert ws.workspace_bytes(256, 256) == 4 * 256 * 256 * 4
    at = compile_(gemm(256, 256, 8192), split_k=4, split_mode="atomic").kernel()
    assert [s.kernel for s in at.plan(256, 256, 8192)] == ["g_scale", "g"]
    assert at.workspace_bytes(256, 256) == 0
    assert "workspace" not in [a[".name"] for a in at.kernargs]
    assert ws.kernargs[-1][".name"] == "workspace"
    local = compile_(gemm(256, 256, 8192), split_k=1, local_split=2).kernel()
    assert [s.kernel for s in local.plan(256, 256, 8192)] == ["g"]
    assert local.launch(256, 256, 8192).block == (512, 1, 1)
    assert local.metadata[".group_segment_fixed_size"] == 16384


def test_print_plan_cli(tmp_path, capsys):
    from vlpc.cli import main

    f = tmp_path / "g.mlir"
    f.write_text(gemm(256, 256, 8192))
    k = vlpc.compile(gemm(256, 256, 8192)).kernel()
    S = k.split_k
    assert main(["compile", str(f), "--print-plan"]) == 0
    out = capsys.readouterr().out
    assert f"split-k {S} (auto), mode workspace" in out
    wgs = k.launch(256, 256, 8192).grid
    assert f"{wgs[0] * wgs[1] * wgs[2]} workgroups" in out
    assert f"kernels: g (grid z {S}), then g_reduce (grid z 1)" in out
    assert f"workspace: {S * 256 * 256 * 4} bytes" in out
    assert re.search(rf"\n +{S}: 1 rounds, .* <- chosen", out)
    assert "modeled candidates on mi50 (60 CUs" in out and "other macro tiles (modeled)" in out
    assert main(["compile", str(f), "--print-plan", "--split-k", "4", "--split-mode", "atomic", "--cus", "64"]) == 0
    out = capsys.readouterr().out
    assert "g_scale (grid z 1), then g (grid z 4)" in out and "64 CUs" in out and "workspace: none" in out
    assert main(["compile", str(f), "--print-plan", "--gpu", "mi60"]) == 0
    assert "modeled candidates on mi60 (64 CUs, 1800 MHz" in capsys.readouterr().out


# -- results -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["workspace", "atomic"])
@pytest.mark.parametrize("shape", [(256, 256, 1024), (64, 64, 1024), (128, 4096, 512), (4096, 128, 512)],
                         ids=lambda s: "x".join(map(str, s)))
def test_issue_shapes(shape, mode, monkeypatch):
    """The issue's skinny shapes' M and N, S = 4 in both modes (S in {2, 8, 16}: test_every_split
    and the benchmark), with a shorter K: the same tiles and grids (1x4x4, 1x1x4 with an N edge,
    16x2x4, 1x64x4 with an N edge), forked emulator workers for the two 4096-wide ones, slices of
    16 or 8 K steps of 16 instead of 128, 256, 16, 16 (the issue's K = 8192, 16384, 4096, 4096 are in
    benchmarks/split_k_plans.py)."""
    monkeypatch.setenv("VLPC_EMU_PROCS", "2")  # (the suite's workers run launches in one process)
    r = run(gemm(*shape), split_k=4, split_mode=mode)
    assert r.kernel.split_k == 4


@pytest.mark.parametrize("mode", ["workspace", "atomic"])
@pytest.mark.parametrize("s", [2, 8, 16])
def test_every_split(s, mode):
    r = run(gemm(64, 256, 1024), split_k=s, split_mode=mode)
    assert r.kernel.split_k == s


@pytest.mark.parametrize("mode", ["workspace", "atomic"])
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_edges_layouts_and_uneven_slices(layout, mode):
    """M, N not multiples of the tile, K not a multiple of S x k-step (the last slice is
    shorter, the 7th of 7 empty: 7 x 160 > 1000 - 160), every layout."""
    r = run(gemm(65, 70, 1000, layout=layout), split_k=7, split_mode=mode)


@pytest.mark.parametrize("mode", ["workspace", "atomic"])
def test_f64(mode):
    r = run(gemm(40, 70, 300, dtype="f64", layout="NN"), split_k=3, split_mode=mode)
    assert r.kernel.split_k == 3


@pytest.mark.parametrize("mode", ["workspace", "atomic"])
def test_k_at_launch(mode):
    """K given at launch: the kernel divides it itself (S a power of two)."""
    r = run(gemm(128, 256, 0, dynamic="k"), k=3000, split_k=4, split_mode=mode)
    r = run(r.kernel, k=5, m=128, n=256)  # slices shorter than a K step, some empty


def test_beta_zero_does_not_read_c_and_alpha_applies():
    for mode in ("workspace", "atomic"):
        c = np.full((64, 256), np.nan, np.float32)
        r = run(gemm(64, 256, 512), c=c, alpha=-2.0, beta=0.0, split_k=4, split_mode=mode)
        assert np.isfinite(r.c).all()


def test_epilogues():
    r = run(gemm(64, 256, 512, epilogue=["bias_row", "relu"], bias=64), split_k=4)
    r = run(gemm(64, 256, 512, epilogue=["gelu"]), split_k=2)
    r = run(gemm(64, 256, 512, epilogue=["bias_col"], bias=256), split_k=4, split_mode="atomic")


@pytest.mark.parametrize("local,split,mode", [(2, 1, "workspace"), (4, 1, "workspace"), (2, 4, "workspace"),
                                              (4, 2, "atomic")])
def test_local_split(local, split, mode):
    # four groups of the seed's 64x256 tile (4 waves each) would be 16 waves at 84 VGPRs, more than
    # a CU holds (vlpc.workgroup_fit): four groups run a 64x128 tile (2 waves each)
    tile = {} if local < 4 else dict(macro_tile=(64, 128), micro_tile=(64, 1))
    r = run(gemm(130, 200, 1000), local_split=local, split_k=split, split_mode=mode, **tile)
    assert r.stats.barriers > 0 and r.stats.lds_bytes_written > 0


def test_local_split_f64_and_launch_k():
    run(gemm(32, 64, 200, dtype="f64"), local_split=2, split_k=1)
    run(gemm(32, 64, 200, dtype="f64"), local_split=2, split_k=2, split_mode="atomic")
    run(gemm(64, 256, 0, dynamic="k"), k=777, local_split=2, split_k=2)


def test_local_split_main_loop_has_no_lds_and_no_barrier():
    asm = compile_(gemm(256, 256, 8192), local_split=2, split_k=1).asm
    loop = asm.split(".Lg_k_loop:")[1].split("s_cbranch_scc1 .Lg_k_loop")[0]
    assert "v_fma_f32" in loop
    assert "ds_" not in loop and "s_barrier" not in loop
    after = asm.split("s_cbranch_scc1 .Lg_k_loop")[1]
    assert "ds_write_b32" in after and "ds_read_b32" in after and "s_barrier" in after


# -- determinism and the reduction's order ---------------------------------------------------


def _launch_manually(kern, a, b, c, alpha, beta, dev):
    """Run the split plan's kernels by hand, keeping the workspace to inspect the partials."""
    co = load_code_object(kern.code_object)
    m, n = c.shape
    k = a.shape[1]
    bufs = [dev.upload(x) for x in (a, b, c)]
    ws = dev.alloc(kern.workspace_bytes(m, n))
    args = [*bufs, *(np.int32(v) for v in (m, n, k, k, k, n)), np.float32(alpha), np.float32(beta), ws]
    for step in kern.plan(m, n, k):
        dev.launch(co, step.kernel, grid=step.grid, block=step.block, args=args)
    out = dev.download(bufs[2], np.float32, (m, n))
    parts = dev.download(ws, np.float32, (kern.split_k, m, n))
    return out, parts


def test_workspace_partials_and_fixed_summation_order():
    """Each partial is its K slice's product; C is the partials summed in slice order 0..S-1
    (then + beta*C, alpha = 1), bit for bit."""
    m, n, k, s = 64, 192, 1000, 3
    kern = compile_(gemm(m, n, k), split_k=s).kernel()
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k)).astype(np.float32)
    c = rng.standard_normal((m, n)).astype(np.float32)
    out, parts = _launch_manually(kern, a, b, c, 1.0, 0.5, get_device("emulator", strict=True))
    kc = kern.launch_info["k_per_split"]
    for j in range(s):
        sl = slice(j * kc, min((j + 1) * kc, k))
        ref = a[:, sl].astype(np.float64) @ b[:, sl].astype(np.float64).T
        assert np.allclose(parts[j], ref, rtol=1e-4, atol=1e-3), j
    total = parts[0]
    for j in range(1, s):
        total = (total + parts[j]).astype(np.float32)
    expected = (total + np.float32(0.5) * c).astype(np.float32)
    assert np.array_equal(out, expected)


def test_workspace_mode_is_bit_identical_across_runs_and_schedules(monkeypatch):
    text = gemm(64, 256, 512)  # 8 slices of 64
    kern = compile_(text, split_k=8).kernel()
    monkeypatch.setenv("VLPC_EMU_PROCS", "2")  # worker processes (the suite's workers run launches in one)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 512)).astype(np.float32)
    b = rng.standard_normal((256, 512)).astype(np.float32)
    first = run(kern, a=a, b=b, c=np.zeros((64, 256), np.float32)).c
    again = run(kern, a=a, b=b, c=np.zeros((64, 256), np.float32)).c
    monkeypatch.setenv("VLPC_EMU_PROCS", "1")  # another workgroup order: one process, few waves in flight
    dev = get_device("emulator", strict=True, max_waves_in_flight=8)
    other = run(kern, a=a, b=b, c=np.zeros((64, 256), np.float32), device=dev).c
    assert np.array_equal(first, again) and np.array_equal(first, other)


def test_extra_traffic_is_counted():
    """The emulator's counters show what a split costs: the workspace round trip (workspace
    mode) or the compare-and-swap traffic (atomic mode) on top of the unsplit kernel."""
    text = gemm(64, 256, 256)  # (the traffic checked is C's, whatever K: slices of 4 K steps)
    base = run(text, split_k=1).stats
    ws = run(text, split_k=4).stats
    at = run(text, split_k=4, split_mode="atomic").stats
    c_bytes = 64 * 256 * 4
    assert ws.global_bytes_written >= base.global_bytes_written + 4 * c_bytes
    assert ws.workgroups == base.workgroups * 4 + base.workgroups  # 4 slices + the reduce kernel
    assert at.by_mnemonic["global_atomic_cmpswap"] > 0
    assert at.global_bytes_written >= base.global_bytes_written + 3 * c_bytes


# -- refusals ---------------------------------------------------------------------------------


def test_refusals():
    batched = ("func.func @g(%a: memref<2x64x64xf32>, %b: memref<2x64x64xf32>, %c: memref<2x64x64xf32>, "
               "%alpha: f32, %beta: f32) {\n  gemm.matmul %a, %b, %c, %alpha, %beta {layout = \"NT\"} : "
               "memref<2x64x64xf32>, memref<2x64x64xf32>, memref<2x64x64xf32>, f32, f32\n  func.return\n}\n")
    with pytest.raises(DiagnosticError, match="strided batch"):
        compile_(batched, split_k=2)
    assert compile_(batched).kernel().split_k == 1  # auto does not split batches
    with pytest.raises(DiagnosticError, match="relu epilogue needs the complete sum"):
        compile_(gemm(64, 256, 2048, epilogue=["relu"]), split_k=2, split_mode="atomic")
    with pytest.raises(DiagnosticError, match="power of two"):
        compile_(gemm(64, 256, 0, dynamic="k"), split_k=3)
    with pytest.raises(DiagnosticError, match="lds strategy does not split K"):
        compile_(gemm(64, 256, 2048), split_k=2, strategy="lds")
    with pytest.raises(DiagnosticError, match="1024"):
        compile_(gemm(64, 256, 2048), local_split=8)
    with pytest.raises(VlpcError, match="split_k must be"):
        compile_(gemm(64, 256, 2048), split_k=0)


def test_cli_refuses_bad_split_options(tmp_path, capsys):
    from vlpc.cli import main

    f = tmp_path / "g.mlir"
    f.write_text(gemm(64, 256, 2048))
    for bad in (["--split-k", "0"], ["--split-k", "two"], ["--split-mode", "fast"], ["--cus", "0"]):
        with pytest.raises(SystemExit) as e:
            main(["compile", str(f), *bad])
        assert e.value.code != 0, bad


class _RecordingDevice:
    """A device that records what the plan executor does (stands in for HIP, which needs a GPU)."""

    name = "recording"

    def __init__(self):
        self.calls = []

    def alloc(self, nbytes):
        self.calls.append(("alloc", nbytes))
        return f"buffer{nbytes}"

    def free(self, buf):
        self.calls.append(("free", buf))

    def launch(self, co, kernel, grid, block, args, **kw):
        from types import SimpleNamespace

        self.calls.append(("launch", kernel, grid, block, args[-1]))
        return SimpleNamespace(kernel_name=kernel, kernel_ms=[1.5], wall_s=0.1)


def test_execute_allocates_launches_in_order_and_frees():
    kern = compile_(gemm(256, 256, 8192), split_k=4).kernel()
    dev = _RecordingDevice()
    stats = kern.execute(dev, None, ["A", "B", "C"], 256, 256, 8192, 256, iterations=2, warmup=1)
    ws = 4 * 256 * 256 * 4
    launches = [c for c in dev.calls if c[0] == "launch"]
    assert dev.calls[0] == ("alloc", ws) and dev.calls[-1] == ("free", f"buffer{ws}")
    assert [c[1] for c in launches] == ["g", "g_reduce"] * 3  # warmup + 2 iterations, plan order each time
    assert launches[0][2] == (1, 4, 4) and launches[1][2] == (1, 4, 1)
    assert all(c[4] == f"buffer{ws}" for c in launches)  # the workspace is the last argument
    assert stats.kernel_ms == [3.0, 3.0] and stats.kernel_name == "g+g_reduce"
    atomic = compile_(gemm(256, 256, 8192), split_k=4, split_mode="atomic").kernel()
    dev = _RecordingDevice()
    atomic.execute(dev, None, ["A", "B", "C"], 256, 256, 8192, 256)
    assert [c[1] for c in dev.calls] == ["g_scale", "g"] and dev.calls[0][4] == "C"  # no workspace
