"""The Python API as users call it: tiles as "MxN" or pairs, a path instead of MLIR text,
a readable LaunchStats repr (issue 17)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import vlpc
from vlpc.compiler import compile_file, parse_tile

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "sgemm_nt.mlir"


@pytest.mark.parametrize("tile", ["64x128", "64X128", (64, 128), [64, 128], (np.int64(64), np.int32(128))])
def test_macro_tile_spellings_give_the_same_kernel(tile):
    li = vlpc.compile(EXAMPLE.read_text(), macro_tile=tile).kernel().launch_info
    assert (li["macro_m"], li["macro_n"]) == (64, 128)


@pytest.mark.parametrize("tile", ["64*128", "64x", (64,), (64, 128, 1), (0, 128), (True, 128), 64, "axb"])
def test_bad_macro_tile_is_a_user_error(tile):
    with pytest.raises(vlpc.VlpcError, match="macro_tile must be 'MxN'"):
        vlpc.compile(EXAMPLE.read_text(), macro_tile=tile)


def test_bad_micro_tile_and_k_step_are_user_errors():
    with pytest.raises(vlpc.VlpcError, match="micro_tile"):
        vlpc.pipeline("gfx906", micro_tile="64")
    with pytest.raises(vlpc.VlpcError, match="k_step must be a positive integer"):
        vlpc.pipeline("gfx906", k_step="16")
    assert parse_tile(None) is None


def test_compile_accepts_a_path(monkeypatch):
    monkeypatch.chdir(ROOT)
    by_text = vlpc.compile(EXAMPLE.read_text())
    for given in ("examples/sgemm_nt.mlir", Path("examples/sgemm_nt.mlir"), str(EXAMPLE)):
        got = vlpc.compile(given)
        assert got.code_object == by_text.code_object
    assert compile_file(EXAMPLE).kernel().name == by_text.kernel().name
    assert vlpc.compile_file is compile_file  # as iree.compiler.compile_file


@pytest.mark.parametrize("given", ["examples/no_such.mlir", "examples/sgemm_nt", Path("nowhere.mlir")])
def test_compile_of_a_missing_path_says_so(given, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(vlpc.VlpcError, match="looks like a file path, but there is no such file"):
        vlpc.compile(given)


def test_compile_diagnostics_name_the_file(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("builtin.module {\n  gemm.nothing\n}\n")
    with pytest.raises(vlpc.DiagnosticError) as e:
        vlpc.compile(bad)
    assert str(e.value).startswith(f"{bad}:2:")


def test_mlir_text_on_one_line_is_still_text():
    with pytest.raises(vlpc.DiagnosticError, match="<input>:1:"):
        vlpc.compile("builtin.module { gemm.nothing }")


def test_launch_stats_repr_is_short():
    # The README's 128x256x64 problem: its per-PC table made repr() 94,809 characters.
    text = (ROOT / "examples" / "linalg_matmul_transpose_b.mlir").read_text()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 64), dtype=np.float32)
    b = rng.standard_normal((256, 64), dtype=np.float32)
    r = vlpc.run(text, a, b, np.zeros((128, 256), np.float32))
    st = r.stats
    shown = repr(st)
    assert len(st.by_pc) > 100 and len(shown) < 500, shown
    assert f"by_pc=<{len(st.by_pc)} PCs>" in shown
    assert f"instructions={st.instructions}," in shown and f"workgroups={st.workgroups}," in shown
    assert st.workgroups == vlpc.compile(text).kernel().plan_workgroups(128, 256, 64)


@pytest.mark.parametrize("example, sizes", [("sgemm_dynamic.mlir", dict(m=70000, n=70000, k=64))])
def test_run_refuses_32_bit_offsets_before_making_operands(example, sizes, monkeypatch):
    """vlpc.run checks the launch's limits (a 19.6 GB C: over the kernels' 32-bit byte offsets)
    before it builds or uploads any operand: the refusal must not depend on allocating them."""
    import vlpc.api as api
    from vlpc.errors import VlpcError

    def no_alloc(*a, **k):
        raise AssertionError("operands were built before the limit check")

    monkeypatch.setattr(api, "operand_buffers", no_alloc)
    root = Path(__file__).resolve().parents[2]
    with pytest.raises(VlpcError, match="32-bit byte offset"):
        vlpc.run(str(root / "examples" / example), **sizes)
