"""Strided batched GEMM: A, B and C as 3-D memrefs (batch, rows, columns); batch in grid z."""

from __future__ import annotations

import numpy as np
import pytest

import vlpc
from vlpc.errors import DiagnosticError, VlpcError
from vlpc.runtime import get_device, load_code_object

from reference import assert_gemm_close, batch_view, gemm_reference


def batched_source(batch, m, n, k, sa, sb, sc, dynamic=False, dtype="f32"):
    if dynamic:
        ta = tb = tc = f"memref<?x?x?x{dtype}, strided<[?, ?, 1]>>"
    else:
        ta = f"memref<{batch}x{m}x{k}x{dtype}, strided<[{sa}, {k}, 1]>>"
        tb = f"memref<{batch}x{n}x{k}x{dtype}, strided<[{sb}, {k}, 1]>>"
        tc = f"memref<{batch}x{m}x{n}x{dtype}, strided<[{sc}, {n}, 1]>>"
    return f"""builtin.module {{
  func.func @bg(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {dtype}, %beta: {dtype}) {{
    gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "NT"}} : {ta}, {tb}, {tc}, {dtype}, {dtype}
    func.return
  }}
}}
"""


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_strided_batch(dynamic):
    batch, m, n, k = 3, 65, 70, (32 if dynamic else 21)  # K given at launch must be a multiple of the K step
    sa, sb, sc = m * k + 3, n * k + 4, m * n + 5  # gaps between the matrices stay untouched
    r = vlpc.compile(batched_source(batch, m, n, k, sa, sb, sc, dynamic), "gfx906", macro_tile=(64, 64))
    rng = np.random.default_rng(0)
    a = rng.standard_normal((batch - 1) * sa + m * k).astype(np.float32)
    b = rng.standard_normal((batch - 1) * sb + n * k).astype(np.float32)
    c = rng.standard_normal((batch - 1) * sc + m * n).astype(np.float32)
    dev = get_device("emulator", strict=True)
    bufs = [dev.upload(x) for x in (a, b, c)]  # exactly sized: the last matrix ends the buffer
    cfg = r.kernel().launch(m, n, k, batch=batch)
    assert cfg.grid[2] == batch
    dev.launch(load_code_object(r.code_object), "bg", grid=cfg.grid, block=cfg.block,
               args=[*bufs, np.int32(m), np.int32(n), np.int32(k), np.int32(k), np.int32(k), np.int32(n),
                     np.float32(1.5), np.float32(-0.5), np.int32(sa), np.int32(sb), np.int32(sc)])
    out = dev.download(bufs[2], np.float32, c.shape)
    ref, bound = gemm_reference(batch_view(a, batch, m, k, sa), batch_view(b, batch, n, k, sb),
                                batch_view(c, batch, m, n, sc), 1.5, -0.5, layout="NT")
    assert_gemm_close(batch_view(out, batch, m, n, sc), ref, bound)
    for z in range(batch):
        if z + 1 < batch:
            np.testing.assert_array_equal(out[z * sc + m * n:(z + 1) * sc], c[z * sc + m * n:(z + 1) * sc])


def test_batch_launch_checks():
    r = vlpc.compile(batched_source(4, 64, 64, 16, 64 * 16, 64 * 16, 64 * 64), "gfx906", macro_tile=(64, 64))
    assert r.kernel().launch(64, 64, 16).grid == (1, 1, 4)
    with pytest.raises(VlpcError, match="compiled for batch=4"):
        r.kernel().launch(64, 64, 16, batch=2)
    t2 = "memref<64x16xf32>"
    plain = vlpc.compile(f"""builtin.module {{
  func.func @g(%a: {t2}, %b: {t2}, %c: memref<64x64xf32>, %alpha: f32, %beta: f32) {{
    gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "NT"}} : {t2}, {t2}, memref<64x64xf32>, f32, f32
    func.return
  }}
}}""", "gfx906")
    with pytest.raises(VlpcError, match="not a batched kernel"):
        plain.kernel().launch(64, 64, 16, batch=2)


def test_inconsistent_batch_counts():
    src = batched_source(4, 64, 64, 16, 1024, 1024, 4096).replace("memref<4x64x64xf32", "memref<3x64x64xf32")
    with pytest.raises(DiagnosticError, match="inconsistent batch counts"):
        vlpc.compile(src, "gfx906", filename="b.mlir")
