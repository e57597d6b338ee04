"""tools/difftest.py on the f16 / int8 dot kernels: a short fixed-seed session, and the tool's
checks seeing a wrong element of C, a changed padding element and a changed input (a device
wrapper corrupts the buffers it downloads, so the expected verdicts come from outside vlpc)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vlpc.benchmarking import load_script

difftest = load_script(Path(__file__).resolve().parents[2] / "tools" / "difftest.py")


def test_short_session_f16_int8(capsys):
    """A few random f16 / int8 cases (types, layouts, sizes, splits, epilogues) all pass."""
    assert difftest.main(["--seed", "5", "--cases", "10", "--types", "f16,i8", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "10 cases" in out and "passed: " in out and "FAIL" not in out


def test_float_draws_unchanged_by_types():
    """--types f32,f64 draws the cases the tool drew before the dot types existed."""
    for i in range(20):
        assert difftest.draw(1, i, ("f32", "f64")) == difftest.draw_case(1, i)
    assert all(difftest.draw(1, i, ("f32",)).dtype == "f32" for i in range(20))
    assert {difftest.draw(1, i, ("i8",)).ab for i in range(20)} == {"i8"}


def test_bad_types_option():
    with pytest.raises(SystemExit) as e:
        difftest.main(["--types", "f32,bf16", "--cases", "1"])
    assert e.value.code == 2


class _Corrupting:
    """The strict emulator, but the download of upload number ``which`` has ``change`` applied."""

    def __init__(self, dev, which: int, change):
        self.dev, self.which, self.change, self.uploads = dev, which, change, []

    def upload(self, arr):
        buf = self.dev.upload(arr)
        self.uploads.append(buf)
        return buf

    def download(self, buf, *a, **kw):
        out = self.dev.download(buf, *a, **kw)
        if buf is self.uploads[self.which]:
            out = out.copy()
            self.change(out)
        return out

    def __getattr__(self, name):
        return getattr(self.dev, name)


def _case(**kw) -> difftest.Case:
    base = dict(seed=0, index=0, form="gemm", layout="TN", m=5, n=7, k=7, pads=(1, 2, 3), alpha=1.0, beta=0.5,
                options={"a_transpose": "pre"}, ab="f16", ct="f32", dtype="f16")
    base.update(kw)
    return difftest.Case(**base)


def _run(monkeypatch, c: difftest.Case, which: int | None = None, change=None):
    import vlpc.runtime

    real = vlpc.runtime.get_device
    if which is not None:
        monkeypatch.setattr(vlpc.runtime, "get_device", lambda *a, **kw: _Corrupting(real(*a, **kw), which, change))
    return difftest.run_case(c)


def _last_of_c(c: difftest.Case) -> int:
    return int(difftest.offsets(c, "C").max())


@pytest.mark.parametrize("c", [_case(), _case(ab="i8", ct="i32", layout="NN", alpha=-3.0, beta=7.0, pads=(1, 0, 1),
                                             options={"split_k": 2}),
                               _case(ab="i8", ct="f16", layout="NT", m=3, n=64, k=9, pads=(3, 3, 2), options={},
                                     epilogue=("bias_col", "gelu"))],
                         ids=["f16-TN-pre", "i8-i32-NN-splitk", "i8-f16-dequant-gemv-gelu"])
def test_checks_see_corruption(monkeypatch, c):
    assert c.pads[2] > 0
    assert _run(monkeypatch, c) == ("", "")
    last = _last_of_c(c)
    if c.ct == "i32":
        def bump(out):
            out[last] = out[last] + np.int32(1)  # one unit: int8 results are exact
    else:
        def bump(out):
            out[last] = out[last] * (1 + 2.0**-8) + 2.0**-8  # far over the f32/f16 bound at this size
    cat, detail = _run(monkeypatch, c, 2, bump)
    assert cat == "wrong result" and f"C[0][{c.m - 1},{c.n - 1}]" in detail

    monkeypatch.undo()
    pad = c.n  # the first element past row 0 of C (ldc > N)

    def touch(out):
        out[pad] = 0
    assert _run(monkeypatch, c, 2, touch)[0] == "padding modified"

    monkeypatch.undo()

    def flip_b(out):
        out.view(np.uint8)[0] ^= 1
    assert _run(monkeypatch, c, 1, flip_b) == ("input modified", "buffer B changed")



def test_every_compile_option_is_drawn():
    """Every option of vlpc.compile (vlpc.options.Options) and every target family is drawn by
    the generator over a few thousand cases, with the values docs/inputs.md lists as supported."""
    from vlpc.options import Options

    seen: dict = {}
    targets, forms = set(), set()
    for i in range(3000):
        c = difftest.draw(3, i)
        for k, v in c.options.items():
            seen.setdefault(k, set()).add(v if not isinstance(v, tuple) else v[0])
        targets.add(c.target.split(":")[0])
        forms.add((c.plain, bool(c.dyn_dims), c.batch > 0, c.alpha == 0 and str(c.alpha) == "-0.0"))
    assert set(Options.__dataclass_fields__) <= set(seen)
    assert seen["strategy"] == {"lds"} and seen["schedule"] == {"cover", "seed"}
    assert seen["forwarding"] == {False} and seen["code_object_version"] == {4}
    assert seen["k_step"] == {8, 16} and {8, 16} <= seen["local_split"] and seen["split_mode"] == {"atomic"}
    assert {8, 16, 32, 64} <= seen["macro_tile"] and {1, 2, 3, 4} <= seen["waves_per_simd"]
    assert seen["a_transpose"] == {"auto", "pre", "in-kernel"} and {"mi25", "mi50", "mi60"} <= seen["gpu"]
    assert targets == {"gfx906", "gfx900"}
    assert any(f[0] for f in forms) and any(f[1] for f in forms) and any(f[3] for f in forms)


class _Recording:
    """The strict emulator, recording the bytes of every buffer it allocated (not uploaded)
    as they are when the first kernel of a plan is launched."""

    def __init__(self, dev):
        self.dev, self.allocated, self.seen = dev, [], []

    def alloc(self, nbytes):
        buf = self.dev.alloc(nbytes)
        self.allocated.append(buf)
        return buf

    def upload(self, arr):
        buf = self.dev.upload(arr)
        return buf

    def launch(self, *a, **kw):
        if not self.seen:
            self.seen = [self.dev.download(b, np.uint8, (b.nbytes,)) for b in self.allocated]
        return self.dev.launch(*a, **kw)

    def __getattr__(self, name):
        return getattr(self.dev, name)


def test_float_workspace_is_garbage(monkeypatch):
    """An f32 split-K plan (K = 20 in three slices of 16: the last slice is empty and must
    still write its zeros) runs with a workspace full of garbage, as hipMalloc gives it; the
    emulator's own alloc zero-fills."""
    import vlpc.runtime

    real = vlpc.runtime.get_device
    devs = []
    monkeypatch.setattr(vlpc.runtime, "get_device", lambda *a, **kw: devs.append(_Recording(real(*a, **kw))) or devs[-1])
    c = difftest.Case(seed=0, index=0, dtype="f32", layout="NT", m=9, n=70, k=20, pads=(1, 0, 2), alpha=1.0, beta=0.5,
                      options={"split_k": 3, "macro_tile": (32, 64)})
    assert difftest.run_case(c) == ("", "")
    ws = [b for b in devs[0].seen if b.size >= 3 * 9 * 72 * 4]
    assert ws and all(np.count_nonzero(b) > b.size // 2 for b in ws)


def test_short_session_float_new_options(capsys):
    """A fixed-seed f32/f64 session over the options the generator added (gfx900, schedules,
    tiles, local splits, partly dynamic sizes, identity layouts) passes."""
    assert difftest.main(["--seed", "424242", "--cases", "12", "--types", "f32,f64", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "12 cases" in out and "FAIL" not in out


def _float_case(**kw) -> difftest.Case:
    base = dict(seed=0, index=0, form="gemm", dtype="f32", layout="TN", m=5, n=7, k=9, pads=(1, 2, 3), alpha=-1.5,
                beta=0.5, options={"macro_tile": (32, 64)})
    base.update(kw)
    return difftest.Case(**base)


@pytest.mark.parametrize("c", [_float_case(), _float_case(dtype="f64", layout="NN", options={"split_k": 2}),
                               _float_case(epilogue=("bias_col", "gelu"), options={"local_split": 2})],
                         ids=["f32-TN", "f64-NN-splitk", "f32-bias-gelu-local"])
def test_float_checks_see_corruption(monkeypatch, c):
    """The f32/f64 path's checks: an element of C off by far more than the bound, an element
    of C's padding and a bit of B changed by a corrupting device are each reported."""
    assert _run(monkeypatch, c) == ("", "")
    last = _last_of_c(c)

    def bump(out):
        out[last] = out[last] * (1 + 2.0**-8) + 2.0**-8
    cat, detail = _run(monkeypatch, c, 2, bump)
    assert cat == "wrong result" and f"C[0][{c.m - 1},{c.n - 1}]" in detail
    monkeypatch.undo()

    def touch(out):
        out[c.n] = 0
    assert _run(monkeypatch, c, 2, touch)[0] == "padding modified"
    monkeypatch.undo()

    def flip_b(out):
        out.view(np.uint8)[0] ^= 1
    assert _run(monkeypatch, c, 1, flip_b) == ("input modified", "buffer B changed")


def test_api_check(monkeypatch):
    """vlpc.run on the case's matrices (a batch of 2: A's stride with a gap the IR fixes, B
    shared with stride 0) gives C bit for bit; a different C is reported."""
    monkeypatch.setattr(difftest, "API_SHARE", 1.0)
    c = _float_case(layout="NT", m=6, n=5, k=4, pads=(1, 0, 2), batch=2, strides=(6 * 5 + 3, 0, 6 * 7),
                    epilogue=("bias_row",))
    assert difftest.run_case(c) == ("", "")
    kern = difftest.compile_case(c, difftest.source(c))
    bufs = difftest.buffers(c, np.random.default_rng(1))
    arrays = difftest.api_arrays(c, bufs)
    assert arrays["A"].shape == (2, 6, 5) and arrays["B"].shape == (5, 4) and arrays["C"].shape == (2, 6, 7)
    import vlpc
    got = vlpc.run(kern, arrays["A"], arrays["B"], arrays["C"], alpha=c.alpha, beta=c.beta, bias=bufs["bias"]).c
    assert difftest.api_check(c, kern, bufs, got, c.alpha, c.beta) == ("", "")
    bad = got.copy()
    bad[1, 5, 4] = np.nextafter(bad[1, 5, 4], np.float32(np.inf))
    cat, detail = difftest.api_check(c, kern, bufs, bad, c.alpha, c.beta)
    assert cat == "wrong result" and "C[1][5,4]" in detail


@pytest.mark.parametrize("dtype", ["f32", "f64", "f16"])
def test_flushed_subnormals_are_wrong(monkeypatch, dtype):
    """A tiny case (C subnormal) passes; the same C with its subnormals flushed to zero, as a
    kernel in flush mode would write it, is a wrong result for difftest and for vlpc.verify
    (before, both bounds had an absolute term of the smallest normal number per operation:
    "missed by vlpc.verify", and difftest itself accepted it).  f16: f16 products into an f16
    C (vlpc.verify.dot_error_bound, no absolute term but half the f16 subnormal step)."""
    if dtype == "f16":
        c = _case(layout="NT", ct="f16", pads=(0, 0, 3), options={"split_k": 2}, tiny=True)
    else:
        c = _float_case(dtype=dtype, layout="NN", options={"split_k": 2}, tiny=True)
    assert _run(monkeypatch, c) == ("", "")
    small = np.finfo(np.float16 if dtype == "f16" else difftest.NPT[dtype]).tiny

    def flush(out):
        out[np.isfinite(out) & (np.abs(out) < small)] = 0
    cat, detail = _run(monkeypatch, c, 2, flush)
    assert cat == "wrong result" and (dtype == "f16" or "35 of 35" in detail)


def test_overflow_keeps_the_sign():
    """A result past the largest f32 may be the infinity of the reference's sign, not the other."""
    c = difftest.Case(seed=0, index=0)
    big = float(np.finfo(np.float32).max)
    ref, bound = np.array([[[big, -big, 1.0]]]), np.array([[[1e32, 1e32, 1e-7]]])
    assert difftest.compare(c, np.array([[[np.inf, -np.inf, 1.0]]]), ref, bound) == ""
    assert difftest.compare(c, np.array([[[-np.inf, -np.inf, 1.0]]]), ref, bound).startswith("1 of 3 elements wrong")
