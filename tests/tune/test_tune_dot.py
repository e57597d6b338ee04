"""vlpc tune for f16 and int8 GEMMs and GEMVs (the dot kernels, passes/isel/dot.py): the
search space of what those kernels accept, each candidate checked on the emulator against
NumPy (vlpc/verify.py's reference: int8 -> i32 exact, W8A8 scales and bias), modeled as the sum
of its plan's kernels, TOP/s for int8, and the winner's options round-tripping through
`vlpc compile/run --options`.

Sizes are small (a few workgroups); the timing model's accuracy is measured by benchmarks/."""

import csv
import json
import os

import numpy as np

import vlpc
from vlpc import tune, verify
from vlpc.energy_report import host_buffers, record_launches
from vlpc.passes.gemm_split_k import k_per_split
from vlpc.runtime.emulator.device import EmulatorDevice
from vlpc.targets import GFX906, get_board
from vlpc.verify import launch_and_read

from dot_support import layout_source

#: f16 NT 64 x 128 x 512, C f32, alpha/beta kernel arguments (tune passes 1 and 1: C is read)
F16 = layout_source("NT", 64, 128, 512, 512, 512, 128, "f16", "f32")
#: int8 TT (A stored K x M) 64 x 128 x 256 -> i32
I8_TT = layout_source("TT", 64, 128, 256, 64, 256, 128, "i8", "i32")
#: W8A8: int8 NT dequantized into f16 C, then bias_col (f32) and relu
W8A8 = """func.func @g(%a: memref<64x256xi8>, %b: memref<128x256xi8>, %c: memref<64x128xf16>, %alpha: f32, %beta: f32,
             %bias: memref<128xf32>, %sr: memref<64xf32>, %sc: memref<128xf32>) {
  gemm.matmul %a, %b, %c, %alpha, %beta bias(%bias : memref<128xf32>) scales(%sr, %sc : memref<64xf32>, memref<128xf32>) {layout = "NT", epilogue = ["bias_col", "relu"]}
      : memref<64x256xi8>, memref<128x256xi8>, memref<64x128xf16>, f32, f32
  func.return
}
"""


def modeled_launches(text: str, options: dict, m=None, n=None, k=None, board: str = "mi60") -> tuple[list[str], float]:
    """The kernels ``options``' plan launches and the sum of their modeled times (us), each
    launch timed alone on a timing-only ``board`` (MI60 unless named; its CUs unless ``options``
    give them), alpha = beta = 1."""
    cus = options.get("cus") or get_board(board).compute_units
    mod = vlpc.compile(text, "gfx906", **{"cus": cus, **options})
    ck = mod.kernel()
    p = tune.resolve(ck, m, n, k)
    dev = EmulatorDevice(gpu=board, cus=cus, timing_only=True)
    launches = record_launches(dev)
    host, ct, scalar, _, _ = host_buffers(ck, p)
    launch_and_read(ck, dev, host, p, 1, 1, ct, scalar=scalar)
    return [x.kernel for x in launches], sum(x.stats.timing.time_us for x in launches)


def test_search_space_of_the_dot_kernels():
    f16 = tune.search_space(256, 512, 641, "f16", "NT", modes=("workspace", "atomic"))
    assert len(f16) == len(set(f16))
    assert not any(c.split_mode == "atomic" or c.schedule == "seed" for c in f16)  # refused by the dot pass
    assert {c.schedule for c in f16} == {"default", "cover"} and {c.a_transpose for c in f16} == {"auto"}
    assert any(c.split_k > 1 for c in f16) and max(c.local_split for c in f16) > 4  # beyond f32's L <= 4
    for c in f16:
        pieces = c.split_k * c.local_split
        if pieces > 1:  # slices counted in dwords of packed K (321 for K = 641 f16), 4 K steps each at least
            assert k_per_split(321, pieces, c.k_step) >= 4 * c.k_step
        assert c.macro_n * c.local_split <= GFX906.max_workitems_per_workgroup
    # B stored K x N always runs the cover schedule: one schedule only
    assert {c.schedule for c in tune.search_space(64, 256, 512, "f16", "NN")} == {"default"}
    # A stored K x M: copied first or packed in the kernel (tiles of 4..32 rows for int8)
    tt = tune.search_space(64, 256, 512, "i8", "TT")
    assert {c.a_transpose for c in tt} == {"pre", "in-kernel"}
    assert all(c.macro_m <= 32 for c in tt if c.a_transpose == "in-kernel")
    assert any(c.macro_m == 64 and c.a_transpose == "pre" for c in tt)
    # the decode GEMV (static M = 4): tiles of exactly 4 rows, the GEMV's local splits up to 16
    gemv = tune.search_space(4, 1024, 4096, "i8", "NT")
    assert {c.macro_m for c in gemv} == {4} and len(gemv) == len(set(gemv))
    c = next(c for c in gemv if c.local_split == 16 and c.macro_n == 64 and c.split_k == 1)
    mod = vlpc.compile(open(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "gemv_int8.mlir")).read(),
                       cus=64, **c.options())
    li = mod.kernel().launch_info
    assert (li["macro_m"], li["macro_n"], li["local_split"], li["k_step"]) == (4, 64, 16, c.k_step)
    # M given at launch: the tiles keep their rows
    assert {c.macro_m for c in tune.search_space(4, 1024, 4096, "i8", "NT", static_m=False)} == {16, 32, 64}


def test_dot_candidates_are_checked_and_modeled_as_their_plans():
    p = tune.Problem(F16, "f16.mlir", None, None, None)
    cands = [tune.Candidate(32, 128, 16), tune.Candidate(32, 64, 16, split_k=2),
             tune.Candidate(16, 128, 8, local_split=2, waves_per_simd=6), tune.Candidate(32, 128, 16, schedule="cover"),
             tune.Candidate(32, 128, 16, split_k=2, split_mode="atomic")]  # the dot kernels refuse atomic mode
    res = tune.tune(p, cands, board="mi60", cus=64, jobs=1)
    good = [r for r in res if r.ok]
    assert len(good) == 4 and [r.modeled_us for r in good] == sorted(r.modeled_us for r in good)
    assert all(r.verified and 0 <= r.max_ratio <= 1 and not r.exact for r in good)
    assert not res[-1].ok and "workspace mode only" in res[-1].error
    split = next(r for r in good if r.candidate.split_k == 2)
    names, total = modeled_launches(F16, split.candidate.options())
    assert names == ["g", "g_reduce"] and len(split.parts_us) == 2
    assert abs(split.modeled_us - total) <= 1e-9 * total and abs(sum(split.parts_us) - total) <= 1e-9 * total
    # W8A8 into f16 C with bias and relu, split: the reduce kernel dequantizes and applies the epilogue
    w = tune.evaluate(tune.Problem(W8A8, "w.mlir", None, None, None), tune.Candidate(32, 64, 8, split_k=2),
                      "gfx906", "mi60", None, 64)
    assert w.error is None and w.verified and 0 <= w.max_ratio <= 1
    # int8 -> i32, A stored K x M copied first: exact, and the int8 dot peak (4 products per lane)
    i8 = tune.evaluate(tune.Problem(I8_TT, "t.mlir", None, None, None), tune.Candidate(32, 128, 16, a_transpose="pre"),
                       "gfx906", "mi60", None, 64)
    assert i8.error is None and i8.verified and i8.exact and i8.max_ratio == 0 and "A copied" in i8.plan
    names, total = modeled_launches(I8_TT, i8.candidate.options())
    assert names == ["g_transpose", "g"] and abs(i8.modeled_us - total) <= 1e-9 * total
    b = get_board("mi60")
    peak = 64 * 4 * 2 * b.compute_units * b.engine_clock_mhz * 1e6  # lanes x dot4 products x 2 ops
    assert abs(i8.peak_share - 2.0 * 64 * 128 * 256 / (i8.modeled_us * 1e-6) / peak) < 1e-9


def _wrong_reference(where):
    real = verify.reference_and_bound

    def reference(*args, **kwargs):
        exp, bound = real(*args, **kwargs)
        exp = exp.copy()
        exp[(0, *where)] += 1  # one element of each tile's expected C
        return exp, bound
    return reference


def test_a_wrong_answer_is_caught(monkeypatch):
    for text in (F16, I8_TT):
        mod = vlpc.compile(text, cus=64, macro_tile=(32, 64), split_k=1)
        p = tune.resolve(mod.kernel(), None, None, None)
        ok, worst, why = tune.check_candidate(mod, p, 1, 1)
        assert ok and worst <= 1 and why is None
        with monkeypatch.context() as mp:
            mp.setattr(verify, "reference_and_bound", _wrong_reference((3, 5)))
            ok, worst, why = tune.check_candidate(mod, p, 1, 1)
        assert not ok and worst > 1 and why.startswith("C[3, 5] = "), why
    # through evaluate: the candidate is dropped as a wrong result, not ranked
    monkeypatch.setattr(verify, "reference_and_bound", _wrong_reference((0, 0)))
    r = tune.evaluate(tune.Problem(F16, "f.mlir", None, None, None), tune.Candidate(32, 64, 16), "gfx906", "mi60",
                      None, 64)
    assert not r.ok and r.error.startswith("wrong result: C[0, 0]")


def _vlpc(capsys, *argv) -> str:
    """``vlpc ARGV`` in this process (exit code 0 asserted): its standard output."""
    from vlpc.cli import main

    capsys.readouterr()
    code = main([str(x) for x in argv])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def _tune_cli(capsys, tmp_path, name, text, *extra):
    f = tmp_path / name
    f.write_text(text)
    out, table = tmp_path / f"{name}.json", tmp_path / f"{name}.csv"
    # every candidate modeled is a finalist: all are checked
    stdout = _vlpc(capsys, "tune", f, "-j", "1", "-q", "--finalists", "9", "-o", out, "--csv", table, *extra)
    rows = list(csv.DictReader(table.open()))
    for row in rows:  # every candidate passed the check or was refused by the compiler
        assert row["verified"] == "True" or (row["error"] and not row["error"].startswith("wrong result")), row
    return f, stdout, json.loads(out.read_text()), rows, out


def _same_asm(capsys, f, data, path):
    """`vlpc compile --options TUNED.json` gives the code the printed flags give."""
    a = _vlpc(capsys, "compile", f, "--options", path, "--emit", "asm")
    b = _vlpc(capsys, "compile", f, *data["flags"].split(), "--emit", "asm")
    assert a == b and "v_dot" in a


def test_cli_tune_f16_and_int8(tmp_path, capsys):
    f, stdout, data, rows, path = _tune_cli(capsys, tmp_path, "h.mlir", F16, "--max-candidates", "3")
    # the automatic plan and at most 3 candidates modeled (fewer when the plan model's bound stops the
    # search; any the compiler refuses listed besides), whatever the plan model ranks first; the winner
    # is never slower than the automatic plan
    assert 2 <= len([r for r in rows if r["modeled_us"]]) <= 4 and "modeled TFLOP/s" in stdout
    assert sum(r["candidate"].startswith("automatic plan") for r in rows) == 1
    assert data["modeled_us"] <= data["automatic_plan_us"]
    best = next(line for line in stdout.splitlines() if line.startswith("| 1 |"))
    # the winner's options compile to a plan whose kernels' modeled times add up to the table's
    names, total = modeled_launches(F16, data["options"], board=data["board"])  # the default board (MI50)
    assert abs(data["modeled_us"] - total) <= 1e-9 * total and len(data["modeled_parts_us"]) == len(names)
    assert best.split("|")[3].strip() == f"{total:,.1f}"
    _same_asm(capsys, f, data, path)
    assert "verification passed" in _vlpc(capsys, "run", f, "--options", path, "-q")  # the tuned plan, C checked
    # int8 TT: TOP/s, exact checks, and the A transpose choice in the options and flags
    f, stdout, data, rows, path = _tune_cli(capsys, tmp_path, "t.mlir", I8_TT, "--max-candidates", "2")
    assert "modeled TOP/s" in stdout and "ok (exact)" in stdout and data["unit"] == "TOP/s"
    # every candidate names its A transpose (whichever the plan model ranks first); a winning candidate
    # carries it in its options and flags, and no winner is slower than the automatic plan
    others = [r for r in rows if not r["candidate"].startswith("automatic")]
    assert others and {r["candidate"].split()[-1] for r in others} <= {"A:pre", "A:in-kernel"}
    assert data["modeled_us"] <= data["automatic_plan_us"]
    if data["options"].keys() - {"cus"}:
        assert data["options"]["a_transpose"] in ("pre", "in-kernel") and "--a-transpose" in data["flags"]
    names, total = modeled_launches(I8_TT, data["options"], board=data["board"])
    assert abs(data["modeled_us"] - total) <= 1e-9 * total
    _same_asm(capsys, f, data, path)


def test_peaks_are_the_dot_instructions():
    b = get_board("mi60")
    per_lane = {"f16": 2 * 2, "i8": 4 * 2}  # v_dot2_f32_f16: 2 products, v_dot4_i32_i8: 4 (2 ops each)
    for t, ops in per_lane.items():
        want = 64 * ops * b.compute_units * b.engine_clock_mhz * 1e6
        assert np.isclose(tune.peak_ops(b, t), want)
    assert tune.unit("i8") == "TOP/s" and tune.unit("f16") == "TFLOP/s"


def test_rank_orders_ties_of_automatic_and_given_waves():
    """Equal modeled times (a 16-row tile runs as many waves automatically as with 6 given):
    the automatic one first, and failures of both kinds sort too (no None < int comparison)."""
    res = [tune.Result(tune.Candidate(16, 256, 8, waves_per_simd=w), modeled_us=5.0) for w in (6, None)]
    res += [tune.Result(tune.Candidate(16, 256, 8, waves_per_simd=w), error="refused") for w in (6, None)]
    ranked = tune.rank(res)
    assert [(r.candidate.waves_per_simd, r.ok) for r in ranked] == [(None, True), (6, True), (None, False), (6, False)]


def test_copy_pre_kernels_run_the_rows_the_sampled_tiles_read():
    """A and B with odd leading dimensions (f16 NT, lda = ldb = K = 255) are copied first
    (``g_transpose``, ``g_copy_b``, tiles of 64 rows); with 32 x 64 tiles of a 320 x 320 C the
    sampled tiles (rows 0, 5, 9 and columns 0, 2, 4 of the 10 x 5 grid) read rows 0-31,
    160-191, 288-319 of A and 0-63, 128-191, 256-319 of B: copy tiles 0, 2 and 4 of 5, all of K."""
    text = layout_source("NT", 320, 320, 255, 255, 255, 320, "f16", "f32")
    mod = vlpc.compile(text, cus=64, macro_tile=(32, 64), split_k=1)
    ck = mod.kernel()
    p = tune.resolve(ck, None, None, None)
    assert [s.kernel for s in ck.plan(p.m, p.n, p.k)] == ["g_transpose", "g_copy_b", "g"]

    class Device:
        only_workgroups = None

        def launch(self, code_object, name, *args, **kwargs):
            return self.only_workgroups

    dev = Device()
    tiles = tune.sample_tiles(ck, p)
    tune._sample_workgroups(dev, ck, p, tiles, (32, 64), 1)
    k_tiles = -(-255 // 64)
    for name in ("g_transpose", "g_copy_b"):
        assert dev.launch(None, name) == {(i, j, 0) for i in (0, 2, 4) for j in range(k_tiles)}
    assert dev.launch(None, "g") == {(x, y, 0) for x, y in tiles}
    ok, worst, why = tune.check_candidate(mod, p, 1, 1)
    assert ok and worst <= 1, why
