"""The tuning database (vlpc/tunedb.py) and the tuner's run control (issue 38; issue 36 item 5):
entries recorded, listed, exported and imported; vlpc.compile / vlpc compile using an exact match
(explicit plan options win; an entry of another board or vlpc version is named and not used);
a re-run resumes; Ctrl-C and --budget keep what finished and still write the table and CSV; one
progress line per shape in a log; problems from a shapes file and from a GGUF model.

Problems are tiny (a few workgroups) and the searches capped (--max-candidates), so each tune
is a few seconds; no time is asserted."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

import vlpc
from vlpc import tune, tunedb
from vlpc.plan_model import plan_board

M, N, K = 64, 128, 256


def source(m=M, n=N, k=K, dtype="f32"):
    return f"""
func.func @g(%a: memref<{m}x{k}x{dtype}>, %b: memref<{n}x{k}x{dtype}>, %c: memref<{m}x{n}x{dtype}>, %alpha: {dtype}, %beta: {dtype}) {{
  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "NT"}} : memref<{m}x{k}x{dtype}>, memref<{n}x{k}x{dtype}>, memref<{m}x{n}x{dtype}>, {dtype}, {dtype}
  return
}}
"""


def _env(db):
    return dict(os.environ, PYTHONSAFEPATH="1", VLPC_TUNE_DB=str(db))


def _vlpc(*argv, db, **kw):
    return subprocess.run([sys.executable, "-m", "vlpc.cli", *map(str, argv)], capture_output=True, text=True,
                          env=_env(db), **kw)


def _table(stdout: str) -> list[str]:
    """The ranked table's rows of a ``vlpc tune`` output (without the header)."""
    return [x for x in stdout.splitlines() if x.startswith("| ") and not x.startswith("| rank")]


def _key(text=None, board=None):
    """The key vlpc.compile looks up for ``text`` by default (the target's default board)."""
    kernel = vlpc.compile(text or source(), tuned=False).kernel()
    b = board or plan_board("gfx906")
    return tunedb.key_of(kernel, M, N, K, 0, "gfx906", b)


# -- the database ----------------------------------------------------------------------------------

def test_record_lookup_replace_and_notes(tmp_path):
    db = tunedb.TuneDB(tmp_path / "sub" / "t.db")
    key = tunedb.Key("gfx906", "mi50", 1725.0, 60, "f32->f32", "NT", 64, 128, 256)
    assert db.lookup(key) == (None, [])  # no file yet: nothing, and nothing created
    assert not db.path.exists()
    n = db.record(key, {"macro_tile": [16, 64]}, "16x64 k16", 5.0, 9.0)
    assert db.record(key, {"macro_tile": [32, 64]}, "32x64 k16", 4.0, 9.0) == n  # replaced, same number
    hit, notes = db.lookup(key)
    assert hit.id == n and hit.options == {"macro_tile": [32, 64]} and notes == []
    other_board = tunedb.Key(**{**key.__dict__, "board": "mi60", "cus": 64, "clock_mhz": 1700.0})
    hit, notes = db.lookup(other_board)
    assert hit is None and len(notes) == 1 and f"#{n} not used" in notes[0] and "mi50 (60 CUs" in notes[0]
    old = db.record(tunedb.Key(**{**key.__dict__, "m": 65}), {}, "automatic plan", 1.0, 1.0, ver="0.0.1")
    hit, notes = db.lookup(tunedb.Key(**{**key.__dict__, "m": 65}))
    assert hit is None and f"#{old} not used: made by vlpc 0.0.1" in notes[0]
    # export -> clear -> import restores the entries; importing again changes nothing (not newer)
    text = db.export()
    assert db.clear() == 2 and db.entries() == []
    assert db.import_text(text) == 2 and db.import_text(text) == 0
    assert {e.label for e in db.entries()} == {"32x64 k16", "automatic plan"}
    with pytest.raises(tunedb.TuneDBError, match="not a `vlpc tune export` file"):
        db.import_text('{"entries": []}', "x.json")


def test_compile_uses_an_exact_match_and_explicit_options_win(tmp_path, monkeypatch):
    path = tmp_path / "t.db"
    monkeypatch.setenv("VLPC_TUNE_DB", str(path))
    key = _key()
    db = tunedb.TuneDB(path)
    n = db.record(key, {"macro_tile": [16, 64], "micro_tile": [16, 1], "k_step": 8, "split_k": 1}, "16x64 k8",
                  3.0, 6.0)
    db.close()
    mod = vlpc.compile(source())
    li = mod.kernel().launch_info
    assert (li["macro_m"], li["macro_n"], li["k_step"]) == (16, 64, 8)
    assert mod.tuned_entry == n and any(f"plan: tuned entry #{n}" in x for x in mod.plan_notes)
    # an explicit plan option wins (the entry is named, not used); tuned=False never looks
    mine = vlpc.compile(source(), macro_tile=(32, 128))
    assert mine.kernel().launch_info["macro_n"] == 128 and mine.tuned_entry is None
    assert any("explicit plan option(s) macro-tile" in x for x in mine.plan_notes)
    assert vlpc.compile(source(), tuned=False).kernel().launch_info["macro_m"] == 32
    # another board: the entry is named and not used
    other = vlpc.compile(source(), gpu="mi60")
    assert other.tuned_entry is None and any("not used: for mi50" in x for x in other.plan_notes)
    # the command line: -v says which entry; an unused one is said without -v
    f = tmp_path / "g.mlir"
    f.write_text(source())
    r = _vlpc("compile", f, "-v", "-o", tmp_path / "g.hsaco", db=path)
    assert r.returncode == 0 and f"vlpc: plan: tuned entry #{n}" in r.stderr, r.stderr
    r = _vlpc("compile", f, "--gpu", "mi60", "-o", tmp_path / "g.hsaco", db=path)
    assert r.returncode == 0 and f"tuned entry #{n} not used" in r.stderr
    r = _vlpc("run", f, "-v", db=path)
    assert r.returncode == 0 and f"plan: tuned entry #{n}" in r.stderr and "verification passed" in r.stdout
    # the file compiled from the cache path gets the tuned plan too
    r = _vlpc("compile", f, "--emit", "asm", db=path)
    want = vlpc.compile(source(), macro_tile=(16, 64), micro_tile=(16, 1), k_step=8, split_k=1, tuned=False).asm
    assert r.stdout == want


def test_db_actions_and_their_errors(tmp_path):
    path = tmp_path / "t.db"
    r = _vlpc("tune", "list", db=path)
    assert r.returncode == 0 and "no entries" in r.stderr
    tunedb.TuneDB(path).record(_key(), {"k_step": 8}, "32x128 k8", 2.0, 3.0)
    r = _vlpc("tune", "list", db=path)
    assert r.returncode == 0 and "| 1 | 64x128x256 f32->f32 NT | mi50 (60 CUs, 1725 MHz) | 32x128 k8 |" in r.stdout
    r = _vlpc("tune", "show", "1", db=path)
    assert json.loads(r.stdout)["options"] == {"k_step": 8}
    out = tmp_path / "e.json"
    assert _vlpc("tune", "export", out, db=path).returncode == 0
    assert "1 entries" in _vlpc("tune", "clear", db=path).stderr
    assert "1 entries imported" in _vlpc("tune", "import", out, db=path).stderr
    for argv, want in ((("show", "9"), "no entry #9"), (("show",), "needs an entry number"),
                       (("show", "x"), "expected an entry number"), (("import", tmp_path / "no.json"), "No such"),
                       (("list", "x"), "takes no argument")):
        r = _vlpc("tune", *argv, db=path)
        assert r.returncode == 1 and want in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = _vlpc("tune", "list", db="off")
    assert r.returncode == 1 and "the tuning database is off" in r.stderr
    # --db names another database
    r = _vlpc("tune", "list", "--db", tmp_path / "other.db", db=path)
    assert "no entries" in r.stderr


# -- the tuner's run control --------------------------------------------------------------------------

def test_tune_records_resumes_and_logs_one_line_per_shape(tmp_path):
    path = tmp_path / "t.db"
    f = tmp_path / "g.mlir"
    f.write_text(source())
    args = ("tune", f, "-j", "1", "--max-candidates", "2", "--gpu", "mi50")
    r = _vlpc(*args, db=path)
    assert r.returncode == 0, r.stderr
    progress = [x for x in r.stderr.splitlines() if x.startswith("vlpc tune: [1/1]")]
    assert len(progress) == 1 and "(0 resumed)" in progress[0]  # never a flood
    # the automatic plan and 2 candidates modeled (more when the compiler refuses one: it counts too)
    modeled = int(re.search(r"(\d+) of \d+ modeled", progress[0]).group(1))
    assert modeled >= 3
    assert "automatic plan (" in r.stdout  # its row, for comparison
    assert "tuning database entry #1" in r.stdout
    entry = tunedb.TuneDB(path).get(1)
    assert entry.key.m == M and entry.default_us is not None and entry.modeled_us <= entry.default_us
    again = _vlpc(*args, db=path)  # a re-run measures nothing again, and gives the same table
    assert again.returncode == 0 and f"({modeled} resumed)" in again.stderr, again.stderr
    assert _table(again.stdout) == _table(r.stdout) and len(_table(r.stdout)) >= modeled


def test_the_winner_is_never_slower_than_the_automatic_plan(monkeypatch):
    """The automatic plan is a candidate: with only slower candidates, and a faster one that fails
    its check, it wins (the search logic alone: evaluate is replaced by fixed figures)."""
    from vlpc.tune_run import Runner

    slow, wrong = tune.Candidate(16, 64, 8), tune.Candidate(32, 64, 8)
    times = {"auto": 10.0, slow: 20.0, wrong: 5.0}
    checked = []

    def fake(problem, cand, target, board, clock_mhz, cus, check=True, model=True):
        r = tune.Result(cand, plan="32x128 k16 S1 L1")
        if model:
            r.modeled_us = times["auto" if tune.is_auto(cand) else cand]
            r.tflops = r.peak_share = r.hbm_share = 0.1
        if check:
            checked.append(cand)
            r.verified, r.max_ratio = cand != wrong, 0.5
            r.error = None if r.verified else "wrong result: C[0, 0]"
        return r

    monkeypatch.setattr(tune, "evaluate", fake)
    p = tune.Problem(source(), "g.mlir", None, None, None)
    with Runner(1) as runner:
        out = tune.search(p, [slow, wrong], runner, target="gfx906", board="mi60", clock_mhz=None, cus=64,
                          shape=(M, N, K, "f32", "f32", 0), prune=False, finalists=1)
    assert tune.is_auto(out.winner.candidate) and out.winner.verified and out.default is out.winner
    assert checked == [wrong, tune.AUTO]  # the fastest first; then the next, until one passes
    assert "automatic plan (32x128 k16 S1 L1)" in tune.table(out.results)
    assert "dropped: wrong result" in tune.table(out.results)


def test_ctrl_c_keeps_results_writes_the_table_and_resumes(tmp_path):
    path = tmp_path / "t.db"
    f = tmp_path / "g.mlir"
    f.write_text(source(128, 256, 512))
    csv = tmp_path / "t.csv"
    # Ctrl-C as at a terminal: a suite started in the background of a non-interactive shell (`pytest &`)
    # has SIGINT ignored, which a child inherits, and Python then installs no KeyboardInterrupt handler
    # (POSIX, "Signals and Error Handling" of the Shell Command Language): restore the default first
    proc = subprocess.Popen([sys.executable, "-m", "vlpc.cli", "tune", str(f), "-j", "1", "--all", "--csv", str(csv)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(path),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 240
    measured = 0
    while time.monotonic() < deadline and proc.poll() is None:  # until two candidates are in the database
        time.sleep(0.5)
        if path.exists():
            try:
                with sqlite3.connect(path) as c:
                    measured = c.execute("SELECT COUNT(*) FROM candidates").fetchone()[0]
            except sqlite3.OperationalError:
                continue
            if measured >= 2:
                break
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "stopped (Ctrl-C)" in err and "Traceback" not in err
    assert "| rank | candidate |" in out and "automatic plan (" in out
    rows = csv.read_text().splitlines()
    assert len(rows) >= 3  # header + the measured candidates
    with sqlite3.connect(path) as c:
        kept = c.execute("SELECT COUNT(*) FROM candidates").fetchone()[0]
    assert kept >= len(rows) - 1
    r = _vlpc("tune", f, "-j", "1", "--max-candidates", "1", db=path)  # resumes: nothing modeled again
    assert r.returncode == 0 and f"({min(kept, 2)} resumed)" in r.stderr, r.stderr


def test_budget_stops_and_still_writes_the_outputs(tmp_path):
    f = tmp_path / "g.mlir"
    f.write_text(source(128, 256, 512))
    csv = tmp_path / "t.csv"
    r = _vlpc("tune", f, "-j", "1", "--all", "--budget", "8", "--csv", csv, db=tmp_path / "t.db")
    assert "stopped (--budget 8 s)" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "| rank | candidate |" in r.stdout and csv.read_text().count("\n") >= 2
    assert r.returncode in (0, 1)  # 0 when a finalist passed its check within the budget
    r = _vlpc("tune", f, "--budget", "0", db=tmp_path / "t.db")
    assert r.returncode == 1 and "--budget must be a positive number" in r.stderr


# -- many problems ----------------------------------------------------------------------------------

def test_shapes_lines_are_rocblas_column_major_problems(tmp_path):
    from vlpc.tune_shapes import parse_line, read_shapes

    s = parse_line("-f gemm -r f32_r --transposeA N --transposeB T -m 256 -n 64 -k 512 --beta 1")
    assert (s.m, s.n, s.k, s.dtype, s.layout, s.beta) == (64, 256, 512, "f32", "TN", 1.0)
    h = parse_line("-f gemm_ex --a_type f16_r --b_type f16_r --c_type f32_r --compute_type f32_r "
                   "--transposeA T --transposeB N -m 4096 -n 16 -k 4096")
    assert (h.m, h.n, h.k, h.dtype, h.c_dtype, h.layout) == (16, 4096, 4096, "f16", "f32", "NT")
    kernel = vlpc.compile(h.mlir(), tuned=False).kernel()
    assert str(kernel.launch_info["dtype"]) == "f16" and kernel.launch_info["layout"] == "NT"
    bad = tmp_path / "bad.txt"
    bad.write_text("# two problems\n-f gemm -m 64 -n 64 -k 64\n-f gemm -r c_r -m 1 -n 1 -k 1\n")
    with pytest.raises(vlpc.VlpcError, match=r"bad.txt:3: precision c_r"):
        read_shapes(str(bad))
    bad.write_text("-f gemm -m 64 -n 64\n")
    with pytest.raises(vlpc.VlpcError, match=r"bad.txt:1: .*-k"):
        read_shapes(str(bad))


def test_cli_tunes_a_shapes_file(tmp_path):
    shapes = tmp_path / "shapes.txt"
    shapes.write_text("-f gemm -r f32_r --transposeA T --transposeB N -m 128 -n 64 -k 256\n"
                      "-f gemm -r f32_r --transposeA T --transposeB N -m 64 -n 64 -k 128  # another\n")
    out = tmp_path / "w.json"
    r = _vlpc("tune", "--shapes", shapes, "-j", "1", "--max-candidates", "1", "-o", out, db=tmp_path / "t.db")
    assert r.returncode == 0, r.stderr
    assert len([x for x in r.stderr.splitlines() if x.startswith("vlpc tune: [")]) == 2
    assert "| 64x128x256 f32 NT |" in r.stdout and "| 64x64x128 f32 NT |" in r.stdout
    data = json.loads(out.read_text())
    assert len(data) == 2 and all(d["modeled_us"] <= d["automatic_plan_us"] for d in data)
    assert len(tunedb.TuneDB(tmp_path / "t.db").entries()) == 2


def test_model_layers_from_a_gguf_file(tmp_path):
    gguf = pytest.importorskip("gguf")
    import numpy as np

    from vlpc.tune_shapes import model_shapes

    path = tmp_path / "m.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tensor("token_embd.weight", np.zeros((32, 64), np.float16))  # a lookup: not a GEMM
    for i in range(2):  # two layers of the same shapes: tuned once
        w.add_tensor(f"blk.{i}.attn_q.weight", np.zeros((64, 64), np.float16))  # numpy (N, K)
        w.add_tensor(f"blk.{i}.ffn_up.weight", np.zeros((128, 64), np.float32))
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.zeros((64,), np.float32))  # 1-D: not a layer
    q = np.zeros((64, 64 // 32 * 34), np.uint8)  # Q8_0: 34 bytes per block of 32
    w.add_tensor("blk.0.ffn_down.weight", q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    shapes, notes = model_shapes(str(path), [1, 4])
    got = sorted((s.m, s.n, s.k, s.dtype, s.layout) for s in shapes)
    assert got == [(1, 64, 64, "f16", "NT"), (1, 128, 64, "f32", "NT"), (4, 64, 64, "f16", "NT"),
                   (4, 128, 64, "f32", "NT")]
    assert len(notes) == 1 and "Q8_0" in notes[0] and "blk.0.ffn_down.weight" in notes[0]
    r = _vlpc("tune", "--model", path, "--batch", "1,x", db="off")
    assert r.returncode == 1 and "batch sizes like 1,4,16,512" in r.stderr
    r = _vlpc("tune", "--model", tmp_path / "none.gguf", db="off")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_run_matches_a_dynamic_kernel_at_the_sizes_given(tmp_path):
    from pathlib import Path

    dyn = Path(__file__).resolve().parents[2] / "examples" / "sgemm_dynamic.mlir"
    path = tmp_path / "t.db"
    kernel = vlpc.compile(dyn.read_text(), tuned=False).kernel()
    n = tunedb.TuneDB(path).record(tunedb.key_of(kernel, 64, 128, 256, 0, "gfx906", plan_board("gfx906")),
                                   {"macro_tile": [16, 64], "micro_tile": [16, 1], "k_step": 8, "split_k": 1},
                                   "16x64 k8 S1", 3.0, 6.0)
    r = _vlpc("run", dyn, "-m", "64", "-n", "128", "-k", "256", "-v", db=path)
    assert r.returncode == 0 and f"plan: tuned entry #{n}" in r.stderr and "verification passed" in r.stdout
    r = _vlpc("run", dyn, "-m", "64", "-n", "128", "-k", "512", "-v", db=path)  # other sizes: no entry
    assert r.returncode == 0 and "tuned entry" not in r.stderr
