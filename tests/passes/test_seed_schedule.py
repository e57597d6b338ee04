"""convert-gemm-to-gcn{schedule=seed} (the loop of the seed's hand-written 64x256 SGEMM) and
forwarding=false (the seed's no-forwarding comparison kernel): correctness on the strict
emulator, the loop's instruction figures against the seed's description, the FMA order's
effect on forwarded VGPR reads, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import vlpc
from vlpc.analysis import loop_figures
from vlpc.cli import main
from vlpc.errors import DiagnosticError, VlpcError
from vlpc.verify import tolerance
from vlpc.runtime import get_device, load_code_object
from vlpc.targets import get_target

from launch_support import gemm_source as source

#: The seed's loop per 1024 v_fma_f32 (*An Alternative SGEMM on VEGA* section 2 and its
#: published sgemm_64x256_sqc.s, docs/references.md): 128 s_load_dwordx8, about 135 s_add_u32, 18 s_waitcnt,
#: 4 global_load_dwordx4; 84 VGPRs (3 waves per SIMD).
SEED_LOOP = {"s_load_dwordx8": 128, "s_waitcnt": 18, "global_load_dwordx4": 4}
SEED_S_ADD = 135


_COMPILED: dict = {}


def compiled(m, n, k, lda=None, ldb=None, ldc=None, dynamic=False, **opts):
    key = (m, n, k, lda, ldb, ldc, dynamic, tuple(sorted(opts.items())))
    if key not in _COMPILED:
        opts.setdefault("schedule", "seed")
        _COMPILED[key] = vlpc.compile(source(m, n, k, lda, ldb, ldc, dynamic), "gfx906", **opts)
    return _COMPILED[key]


def run_seed(m, n, k, lda=None, ldb=None, ldc=None, alpha=1.25, beta=-0.75, dynamic=False, seed=0,
             c_fill=None, a_fill=None, **opts):
    """Run on the strict emulator with exactly-sized buffers, NaN in every padding column of A
    and B (never read) and garbage in C's padding (never written); check against float64 NumPy."""
    lda_, ldb_, ldc_ = lda or k, ldb or k, ldc or n
    r = compiled(m, n, k, lda, ldb, ldc, dynamic, **opts)
    kern = r.kernel()
    launch = kern.launch(m, n, k)
    rng = np.random.default_rng(seed)
    a = np.full((m, lda_), np.nan, np.float32)
    a[:, :k] = rng.standard_normal((m, k))
    b = np.full((n, ldb_), np.nan, np.float32)
    b[:, :k] = rng.standard_normal((n, k))
    c0 = rng.standard_normal((m, ldc_)).astype(np.float32)
    if a_fill is not None:
        a[0, 0] = b[0, 0] = a_fill
    if c_fill is not None:
        c0[:, :n] = c_fill
    dev = get_device("emulator", strict=True)
    bufs = [dev.upload(x) for x in (a, b, c0)]
    stats = dev.launch(load_code_object(r.code_object), "sgemm", grid=launch.grid, block=launch.block,
                       args=[*bufs, np.int32(m), np.int32(n), np.int32(k), np.int32(lda_), np.int32(ldb_),
                             np.int32(ldc_), np.float32(alpha), np.float32(beta)])
    out = dev.download(bufs[2], np.float32, (m, ldc_))
    prod = a[:, :k].astype(np.float64) @ b[:, :k].astype(np.float64).T
    c_used = np.zeros((m, n)) if beta == 0 else c0[:, :n].astype(np.float64)
    ref = beta * c_used if alpha == 0 else alpha * prod + beta * c_used  # BLAS quick returns
    tol = tolerance(np.nan_to_num(a[:, :k]), np.nan_to_num(b[:, :k]), np.nan_to_num(c0[:, :n]), alpha, beta, k, "f32")
    err = np.abs(out[:, :n] - ref)
    assert np.all(err <= tol), np.nanmax(err)
    np.testing.assert_array_equal(out[:, n:], c0[:, n:])  # padding columns untouched
    return stats, r, out[:, :n]


# ---- the loop against the seed's description ---------------------------------


def test_loop_figures_match_the_seed():
    kern = compiled(128, 256, 64).kernel()
    fig = loop_figures(kern.asm)
    per1024 = {m: fig.counts[m] * 1024 / fig.fma for m in fig.counts}
    for mnemonic, want in SEED_LOOP.items():
        assert per1024[mnemonic] == want, (mnemonic, per1024[mnemonic])
    assert abs(per1024["s_add_u32"] - SEED_S_ADD) <= 0.05 * SEED_S_ADD, per1024["s_add_u32"]
    # every VALU instruction of the loop is v_fma_f32 with one SGPR (A) source
    assert fig.valu_all_fma_with_one_sgpr
    # the last load of each group meets the next group's s_waitcnt lgkmcnt(0) at once (0 VALU of cover)
    assert fig.a_cover == 0
    assert fig.a_loads == 2 * 64  # two 8-k steps per iteration, one load per row
    # no LDS, no barrier anywhere in the kernel
    assert not any(x in kern.asm for x in ("ds_read", "ds_write", "s_barrier"))
    assert kern.metadata[".group_segment_fixed_size"] == 0
    # VGPRs: the seed's 84 (3 waves per SIMD); the allocator gives 82 (no 64-bit lane address)
    assert kern.vgprs <= 84
    occ = get_target("gfx906").occupancy(kern.vgprs, kern.metadata[".sgpr_count"], 0, 256)
    assert occ.waves_per_simd == 3
    launch = compiled(64, 256, 16, dynamic=True).kernel().launch(128, 512, 64)
    assert (launch.grid, launch.block) == ((2, 2, 1), (256, 1, 1))  # grid (N/256, M/64), workgroup 256


@pytest.mark.parametrize("forwarding", [True, False])
def test_loop_refills_each_row_after_its_fmas(forwarding):
    """Inside the loop, as in the seed's published kernels (github.com/fsword73/SGEMM_on_VEGA,
    ``sgemm_64x256_sqc.s`` and ``sgemm_64x256_sqc_sum_no_reuse.s``): each group of 8 rows starts
    with one s_waitcnt lgkmcnt(0); with forwarding, each row's 8 v_fma_f32 are followed by the
    s_load_dwordx8 that refills the SGPRs they read (the same row of the next group); without,
    the FMAs of a pair of rows alternate and the pair's two loads follow them."""
    asm = compiled(64, 256, 32, forwarding=forwarding).kernel().asm
    body = asm[asm.index(".Lsgemm_k_loop:"):asm.index("s_cbranch_scc1 .Lsgemm_k_loop")]
    lines = [x.split(";")[0].strip() for x in body.splitlines()[1:] if x.strip()]
    kinds = "".join("L" if x.startswith("s_load_dwordx8") else "W" if x.startswith("s_waitcnt lgkmcnt(0)")
                    else "F" if x.startswith("v_fma_f32") else "" for x in lines)
    group = ("F" * 8 + "L") * 8 if forwarding else ("F" * 16 + "LL") * 4
    assert kinds == ("W" + group) * 16  # two 8-k steps of 8 groups per iteration
    # every load writes exactly the SGPRs that the FMAs since the previous load read
    read: set[str] = set()
    for x in lines:
        if x.startswith("v_fma_f32"):
            read.add(x.replace(",", " ").split()[3])
        elif x.startswith("s_load_dwordx8"):
            lo, hi = (int(v) for v in x.split()[1].strip("s[],").split(":"))
            assert {f"s{i}" for i in range(lo, hi + 1)} <= read, x
            read -= {f"s{i}" for i in range(lo, hi + 1)}
    assert not read


# ---- correctness on the strict emulator ---------------------------------------


@pytest.mark.parametrize("m,n,k", [(64, 256, 8), (64, 256, 16), (64, 512, 24), (128, 256, 32)])
def test_static_sizes(m, n, k):
    # K/8 = 1 (no loop), 2 (a prefetching step, no loop), 3 (loop, no odd step), 4 (loop and odd step)
    run_seed(m, n, k)


def test_leading_dimensions_with_nan_padding():
    run_seed(64, 256, 40, lda=44, ldb=48, ldc=260, alpha=0.5, beta=2.0)


@pytest.mark.parametrize("k", [16, 48])
def test_sizes_at_launch(k):
    run_seed(128, 512, k, lda=k + 4, ldb=k + 8, ldc=520, dynamic=True)


def test_beta_zero_does_not_read_c():
    _, _, out = run_seed(64, 256, 16, beta=0.0, c_fill=np.nan)
    assert np.isfinite(out).all()


@pytest.mark.parametrize("fill", [np.nan, np.inf])
def test_alpha_zero_over_nan_inputs(fill):
    _, _, out = run_seed(64, 256, 16, alpha=0.0, beta=2.0, a_fill=fill)
    assert np.isfinite(out).all()


# ---- forwarding=false: K-major FMA order -------------------------------------------


def _loop_fma_forwarded(stats, executions: int) -> tuple[int, int]:
    """(forwarded VGPR reads, lane executions) of the v_fma_f32 the K loop ran ``executions`` times."""
    fwd = lanes = 0
    for mnemonic, waves, lane_execs, *_rest, f in stats.by_pc.values():
        if mnemonic == "v_fma_f32" and waves == executions:
            fwd += f
            lanes += lane_execs
    return fwd, lanes


@pytest.mark.parametrize("schedule", ["seed", "default"])
def test_no_forwarding_is_bit_identical_and_forwards_nothing(schedule):
    m, n, k = 64, 256, 48 if schedule == "seed" else 64
    opts = dict(schedule=schedule, split_k=1, macro_tile=(64, 256), micro_tile=(64, 1))  # one 4-wave workgroup
    s_fwd, r_fwd, c_fwd = run_seed(m, n, k, seed=3, **opts)
    s_nof, r_nof, c_nof = run_seed(m, n, k, seed=3, forwarding=False, **opts)
    # only the order changed: the same instructions, and C bit for bit
    assert np.array_equal(c_fwd.view(np.uint32), c_nof.view(np.uint32))
    assert loop_figures(r_fwd.kernel().asm).counts == loop_figures(r_nof.kernel().asm).counts
    assert r_fwd.kernel().asm != r_nof.kernel().asm
    waves = 4  # one workgroup of 256 work-items
    # K-loop iterations per wave: seed 2 steps of 8 k (the last two steps are outside the loop);
    # default one K step of 16 (every step in the loop)
    iters = (k // 8 - 1) // 2 if schedule == "seed" else k // 16
    assert iters >= 2
    fwd, lanes = _loop_fma_forwarded(s_fwd, waves * iters)
    assert lanes > 0
    if schedule == "seed":
        # row by row: in each group of 8 rows x 8 k, every FMA but a row's first reads the
        # accumulator the FMA just before wrote
        assert fwd == lanes * 7 // 8
    else:
        assert fwd >= lanes // 2
    fwd_nof, lanes_nof = _loop_fma_forwarded(s_nof, waves * iters)
    assert lanes_nof == lanes
    assert fwd_nof == 0
    assert s_nof.vgpr_reads_forwarded < s_fwd.vgpr_reads_forwarded


def test_no_forwarding_order_in_the_assembly():
    asm = compiled(64, 256, 32, forwarding=False).kernel().asm
    body = asm[asm.index(".Lsgemm_k_loop:"):asm.index("s_cbranch_scc1 .Lsgemm_k_loop")]
    fmas = [x.split(";")[0].split() for x in body.splitlines() if "v_fma_f32" in x]
    dsts = [f[1].rstrip(",") for f in fmas]
    assert all(a != b for a, b in zip(dsts, dsts[1:]))  # consecutive FMAs: different accumulators
    for f in fmas:  # and each still reads the accumulator it writes
        assert f[1].rstrip(",") == f[4]


# ---- refusals --------------------------------------------------------------------


@pytest.mark.parametrize("text,opts,message", [
    (source(64, 256, 12), {}, "K=12 is not a multiple of 8"),
    (source(100, 256, 16), {}, "M=100 is not a multiple of 64"),
    (source(64, 200, 16), {}, "N=200 is not a multiple of 256"),
    (source(64, 256, 16, layout="NN"), {}, "layout 'NN' is not supported"),
    (source(64, 256, 16, dtype="f64"), {}, "element type f64 is not supported"),
    (source(64, 256, 16), {"macro_tile": (64, 128)}, "macro tile 64x128"),
    (source(64, 256, 16), {"split_k": 2}, "split-k=2"),
    (source(64, 256, 16), {"strategy": "lds"}, "the lds strategy has one schedule"),
])
def test_refused_with_a_located_error(text, opts, message):
    with pytest.raises(DiagnosticError) as e:
        vlpc.compile(text, "gfx906", filename="seed.mlir", **{"schedule": "seed", **opts})
    assert message in str(e.value)
    assert str(e.value).startswith("seed.mlir:3:")
    assert ": error: " in str(e.value)


def test_unknown_schedule():
    with pytest.raises(DiagnosticError, match="unknown schedule 'fast'"):
        vlpc.compile(source(64, 256, 16), "gfx906", schedule="fast")


@pytest.mark.parametrize("m,n,k,message", [(64, 256, 24, "K=24 is not a multiple of 16"),
                                           (64, 300, 16, "N=300 is not a multiple of 256"),
                                           (32, 256, 16, "M=32 is smaller than the macro tile")])
def test_sizes_at_launch_refused(m, n, k, message):
    kern = compiled(64, 256, 16, dynamic=True).kernel()
    with pytest.raises(VlpcError, match=message):
        kern.launch(m, n, k)


def test_default_schedule_unchanged_by_the_options():
    """schedule=default forwarding=true is today's kernel: the same assembly as without options."""
    text = source(64, 256, 32)
    a = vlpc.compile(text, "gfx906", split_k=1).kernel().asm
    b = vlpc.compile(text, "gfx906", split_k=1, schedule="default", forwarding=True).kernel().asm
    assert a == b


# ---- command line --------------------------------------------------------------------


def test_cli(tmp_path, capsys):
    f = tmp_path / "seed.mlir"
    f.write_text(source(64, 256, 16))
    assert main(["compile", str(f), "--schedule", "seed", "--no-forwarding", "--emit", "asm", "-o",
                 str(tmp_path / "k.s")]) == 0
    asm = (tmp_path / "k.s").read_text()
    assert "s_load_dwordx8" in asm and "s_load_dwordx16" not in asm
    assert main(["compile", str(f), "--schedule", "seed", "--print-pipeline"]) == 0
    out = capsys.readouterr().out
    assert 'schedule="seed"' in out or "schedule=seed" in out
    assert main(["compile", str(f), "--no-forwarding", "--print-pipeline"]) == 0
    assert "forwarding=false" in capsys.readouterr().out


def test_lds_strategy_forwards_nothing_either_way():
    """strategy lds: consecutive FMAs write different accumulators of the 8x8 micro tile, so
    forwarding=false is already true of it (the same kernel); schedule=seed is refused."""
    text = source(64, 256, 16)
    a = vlpc.compile(text, "gfx906", strategy="lds").kernel().asm
    b = vlpc.compile(text, "gfx906", strategy="lds", forwarding=False).kernel().asm
    assert a == b
    body = a[a.index(".Lsgemm_k_loop:"):a.index("s_cbranch_scc1 .Lsgemm_k_loop")]
    dsts = [x.split()[1].rstrip(",") for x in body.splitlines() if x.strip().startswith("v_fma_f32")]
    assert len(dsts) > 64 and all(x != y for x, y in zip(dsts, dsts[1:]))
