"""The grouped workgroup order (``wg_group``, passes/isel/emit.py ``grouped_workgroup_ids``).

Correctness on the strict emulator with exactly sized buffers whose row gaps hold NaN (f32/f64)
or NaN f16, against NumPy (tests/reference.py, tests/dot_support.py): M and N not multiples of
the macro tile nor of G tile rows (a last, partial group), static and given at launch, a split-K
plan, the f16 dot kernel; beta = 0 over NaN C and alpha = 0 over NaN A and B.  The order itself:
a grid of one row of workgroups (the first gx linear ids) writes a block of G tile rows x gx / G
tile columns of C when grouped and tile row 0 when not (Triton's matmul tutorial, "L2 Cache
Optimizations").  With G = 1 the kernel is the one built without the option.
"""

from __future__ import annotations

import numpy as np
import pytest
from dot_support import exact, pad_mask, rows_of
from launch_support import gemm_source
from reference import assert_gemm_close, gemm_reference

import vlpc
from vlpc.errors import VlpcError
from vlpc.runtime import get_device, load_code_object

NPT = {"f32": np.float32, "f64": np.float64}


def _run_flat(kern, a, b, c, alpha, beta, m, n, k, lda, ldb, ldc, pad=np.nan):
    """Launch the plan of ``kern`` with exactly sized flat buffers (row gaps = ``pad``); returns
    (C flat after, C flat before)."""
    dt = c.dtype.type
    af, bf, cf = exact(a, lda, dt(pad)), exact(b, ldb, dt(pad)), exact(c, ldc, dt(pad))
    dev = get_device("emulator", strict=True)
    bufs = [dev.upload(x) for x in (af, bf, cf)]
    try:
        args = [*bufs, *(np.int32(v) for v in (m, n, k, lda, ldb, ldc)), dt(alpha), dt(beta)]
        kern.execute(dev, load_code_object(kern.code_object), args, m, n, k, ldc,
                     buffer_sizes={i: x.nbytes for i, x in enumerate((af, bf, cf))})
        return dev.download(bufs[2], c.dtype, cf.shape), cf
    finally:
        for buf in bufs:
            dev.free(buf)


def _check(kern, m, n, k, lda, ldb, ldc, dtype, rng, alpha=1.5, beta=-0.75, nan_c=False, nan_ab=False):
    t = NPT[dtype]
    a = rng.standard_normal((m, k)).astype(t)
    b = rng.standard_normal((n, k)).astype(t)
    c = np.full((m, n), np.nan, t) if nan_c else rng.standard_normal((m, n)).astype(t)
    if nan_ab:
        a[:] = np.nan
        b[:] = np.nan
    out, cf = _run_flat(kern, a, b, c, alpha, beta, m, n, k, lda, ldb, ldc)
    exp, bound = gemm_reference(None if alpha == 0 else a, None if alpha == 0 else b, None if beta == 0 else c,
                                alpha, beta, layout="NT", m=m, n=n, k=k, dtype=dtype)
    assert_gemm_close(rows_of(out, m, n, ldc), exp, bound)
    pm = pad_mask(cf.size, m, n, ldc)
    assert np.array_equal(out[pm].view(np.uint8), cf[pm].view(np.uint8)), "C's row gaps changed"


def _gemm(m, n, k, lda, ldb, ldc, dtype="f32", dynamic=False, **options):
    src = gemm_source(m, n, k, lda, ldb, ldc, dynamic=dynamic, dtype=dtype)
    # (through the suite's kernel cache: test_sizes_at_launch's three launches share one kernel)
    return vlpc.compile(src, **options).kernel()


# M = 300 is 10 row tiles of 32 (the last one moved up: 300 % 32 != 0): groups of 4, 4 and a
# partial group of 2; N = 200 is 4 tile columns of 64, the last one 8 columns wide.
@pytest.mark.parametrize("dtype,tile,group", [("f32", (32, 64), 4), ("f32", (32, 64), 8), ("f64", (16, 64), 4)])
def test_static_sizes_with_a_last_partial_group(dtype, tile, group):
    m, n, k = (300, 200, 40) if dtype == "f32" else (150, 200, 24)
    lda, ldb, ldc = k + 3, k + 5, n + 7
    kern = _gemm(m, n, k, lda, ldb, ldc, dtype, macro_tile=tile, split_k=1, wg_group=group)
    assert "grouped tile row" in kern.asm and "s_cselect_b32" in kern.asm  # a partial group: compare and select
    rng = np.random.default_rng(33)
    _check(kern, m, n, k, lda, ldb, ldc, dtype, rng)
    _check(kern, m, n, k, lda, ldb, ldc, dtype, rng, beta=0.0, nan_c=True)      # beta = 0 over NaN C
    _check(kern, m, n, k, lda, ldb, ldc, dtype, rng, alpha=0.0, nan_ab=True)    # alpha = 0 over NaN A, B


def test_whole_groups_need_no_select():
    """M a multiple of G tile rows: no partial group, so no compare and select."""
    kern = _gemm(256, 200, 32, 35, 33, 203, macro_tile=(32, 64), split_k=1, wg_group=4)
    assert "grouped tile row" in kern.asm and "s_cselect_b32" not in kern.asm
    _check(kern, 256, 200, 32, 35, 33, 203, "f32", np.random.default_rng(1))


@pytest.mark.parametrize("m,n", [(300, 200), (70, 130), (20, 330)])
def test_sizes_at_launch(m, n):
    """M, N, K and the leading dimensions given at launch: tiles counted from M and N by shifts;
    M = 20 < 32 runs the row-narrow companion (8 rows a tile: 3 row tiles, a partial group)."""
    kern = _gemm(None, None, None, dynamic=True, macro_tile=(32, 64), split_k=1, wg_group=4, lda=1, ldb=1, ldc=1)
    assert "tiles along M" in kern.asm and "tiles along N" in kern.asm
    k = 24
    lda, ldb, ldc = k + 1, k + 2, n + 3
    rng = np.random.default_rng(m)
    _check(kern, m, n, k, lda, ldb, ldc, "f32", rng)
    _check(kern, m, n, k, lda, ldb, ldc, "f32", rng, beta=0.0, nan_c=True)
    _check(kern, m, n, k, lda, ldb, ldc, "f32", rng, alpha=0.0, nan_ab=True)


def test_split_k_plan():
    """A split-K plan (workspace): the main kernel's K slices and the reduce kernel, both grouped."""
    m, n, k = 200, 330, 96
    kern = _gemm(m, n, k, k + 1, k + 1, n + 1, macro_tile=(32, 64), split_k=2, wg_group=4)
    assert len(kern.plan(m, n, k)) == 2
    rng = np.random.default_rng(5)
    _check(kern, m, n, k, k + 1, k + 1, n + 1, "f32", rng)
    _check(kern, m, n, k, k + 1, k + 1, n + 1, "f32", rng, beta=0.0, nan_c=True)


def test_f16_dot_kernel():
    """The f16 dot kernel (passes/isel/dot.py) grouped: M = 200 (7 row tiles of 32: groups of 4
    and 3), N = 200, against float64 NumPy on the f16 inputs."""
    from dot_support import check_c, launch_dot, reference, source

    m, n, k, lda, ldb, ldc = 200, 200, 64, 67, 66, 203
    kern = vlpc.compile(source(m, n, k, lda, ldb, ldc), macro_tile=(32, 64), split_k=1, local_split=1,
                        wg_group=4, cache=False).kernel()
    assert "grouped tile row" in kern.asm
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16)
    for alpha, beta, c0 in ((1.25, 0.5, rng.standard_normal((m, n)).astype(np.float32)),
                            (1.0, 0.0, np.full((m, n), np.nan, np.float32))):
        af, bf, cf = exact(a, lda, np.float16(np.nan)), exact(b, ldb, np.float16(np.nan)), exact(c0, ldc, np.float32(np.nan))
        out, _ = launch_dot(kern, af, bf, cf, alpha, beta, m, n, k, lda, ldb, ldc)
        exp, bound = reference(a, b, c0, alpha, beta)
        check_c(out, exp, bound, "f32", m, n, ldc, cf)


@pytest.mark.parametrize("group", [1, 4])
def test_the_first_ids_cover_a_block_of_group_rows(group):
    """A grid of only the first gx workgroups (one grid row, the first gx linear ids) writes tile
    row 0 in the row-major order, and G tile rows x gx / G tile columns grouped."""
    m, n, k = 256, 512, 16  # 8 x 8 tiles of 32 x 64
    mod = vlpc.compile(gemm_source(m, n, k), macro_tile=(32, 64), split_k=1, wg_group=group, cache=False)
    kern = mod.kernel()
    gx, gy = kern.launch(m, n, k).grid[:2]
    assert (gx, gy) == (8, 8)
    dev = get_device("emulator", strict=True)
    a = np.ones((m, k), np.float32)
    bufs = [dev.upload(a), dev.upload(np.ones((n, k), np.float32)), dev.upload(np.full((m, n), np.nan, np.float32))]
    dev.launch(mod.code_object, kern.name, grid=(gx, 1, 1), block=kern.launch(m, n, k).block,
               args=[*bufs, *(np.int32(v) for v in (m, n, k, k, k, n)), np.float32(1), np.float32(0)])
    written = ~np.isnan(dev.download(bufs[2], np.float32, (m, n)))
    tiles = written.reshape(gy, 32, gx, 64).all(axis=(1, 3))
    expect = np.zeros((gy, gx), bool)
    expect[:group, :gx // group] = True
    np.testing.assert_array_equal(tiles, expect)
    assert written.sum() == gx * 32 * 64  # whole tiles, nothing else


def test_group_one_is_the_kernel_without_the_option():
    src = gemm_source(300, 200, 40)
    plain = vlpc.compile(src, macro_tile=(32, 64), split_k=1, wg_group=1, cache=False).kernel().asm
    assert "grouped" not in plain
    assert plain == vlpc.compile(src, macro_tile=(32, 64), split_k=1, cache=False).kernel().asm


def test_grid_of_one_group_is_left_row_major():
    """Static sizes with G tile rows or fewer: the grouped order is the row-major one, no ops."""
    kern = _gemm(128, 512, 16, 16, 16, 512, macro_tile=(32, 64), split_k=1, wg_group=4)
    assert "grouped" not in kern.asm


@pytest.mark.parametrize("options,message", [
    (dict(wg_group=3), "wg-group 3"),
    (dict(wg_group=128), "wg-group 128"),
    (dict(wg_group=0), "wg_group must be a positive integer"),
    (dict(wg_group=4, strategy="lds", split_k=1), "grouped workgroup order is the sqc and dot"),
    (dict(wg_group=4, schedule="seed"), "grouped workgroup order is the sqc and dot"),
])
def test_refused_options(options, message):
    with pytest.raises(VlpcError, match=message):
        vlpc.compile(gemm_source(256, 512, 64), cache=False, **options)


def test_launch_sizes_need_power_of_two_tiles():
    with pytest.raises(VlpcError, match="power-of-two macro tile extent"):
        vlpc.compile(gemm_source(None, None, None, dynamic=True), macro_tile=(24, 64), split_k=1, wg_group=4,
                     cache=False)


def test_cli_flag(tmp_path, capsys):
    from vlpc.cli import main

    src = tmp_path / "g.mlir"
    src.write_text(gemm_source(300, 200, 40))
    assert main(["compile", str(src), "--emit", "asm", "--macro-tile", "32x64", "--split-k", "1",
                 "--wg-group", "4", "-o", str(tmp_path / "g.s")]) == 0
    assert "grouped tile row" in (tmp_path / "g.s").read_text()
    assert main(["compile", str(src), "--wg-group", "3", "-o", str(tmp_path / "h.hsaco")]) != 0
    err = capsys.readouterr().err
    assert "error:" in err and "wg-group 3" in err and "Traceback" not in err
    assert not (tmp_path / "h.hsaco").exists()


def test_automatic_group():
    """The automatic plan (passes/gemm_tile.py ``auto_wg_group``): G = 4 for a static f32 sqc plan
    whose grid has more tiles than one round of workgroups in flight and more than 4 tile rows, and
    whose tile columns gx number at least twice the CUs and share a factor of at least half the CU
    count with it; the row-major order for one round (the bundled 256x512 example, every golden
    kernel), sizes at launch, the lds strategy; an explicit wg_group=1 wins."""
    from vlpc.compiler import parse
    from vlpc.passes.common import matmuls
    from vlpc.passes.gemm_tile import AUTO_WG_GROUP, auto_wg_group

    def grouped(src, **options):
        return "grouped tile row" in vlpc.compile(src, cache=False, **options).kernel().asm

    def shape(m, n):
        return next(iter(matmuls(parse(gemm_source(m, n, 64))))).shape()

    assert AUTO_WG_GROUP == 4
    assert grouped(gemm_source(512, 8192, 64), gpu="mi60")                  # 128 tile columns, 16 rows
    assert not grouped(gemm_source(512, 8192, 64), gpu="mi60", wg_group=1)
    assert not grouped(gemm_source(256, 512, 640))                           # one round
    assert not grouped(gemm_source(None, None, None, dynamic=True))          # sizes at launch
    assert not grouped(gemm_source(512, 8192, 64), gpu="mi60", strategy="lds", split_k=1)
    # tile columns (64 wide) vs 64 CUs: 128, 160, 192, 224, 256 group; 32, 48, 64, 96 (< 2 x 64) and
    # 108, 204 (gcd 4 < 32) do not
    for n, want in ((8192, 4), (10240, 4), (12288, 4), (14336, 4), (16384, 4), (2048, 1), (3072, 1),
                    (4096, 1), (6144, 1), (6912, 1), (13056, 1)):
        assert auto_wg_group(shape(4096, n), (32, 64), True, 64, 4) == want, n
    assert auto_wg_group(shape(4096, 11520), (32, 64), True, 60, 4) == 4    # gx 180 on 60 CUs: gcd 60
    assert auto_wg_group(shape(4096, 12288), (32, 64), True, 60, 4) == 1    # gx 192 on 60 CUs: gcd 12
    assert auto_wg_group(shape(4096, 12288), (32, 64), False, 64, 4) == 1   # not the sqc kernel's model plan
    assert auto_wg_group(shape(128, 12288), (32, 64), True, 64, 4) == 1     # 4 tile rows: one group at most
    assert auto_wg_group(shape(288, 8192), (32, 64), True, 64, 4) == 4      # 9 rows x 128 columns > 1,024
    assert auto_wg_group(shape(256, 8192), (32, 64), True, 64, 4) == 1      # 8 x 128 = 1,024: one round
