"""vlpc bench and vlpc report on strided batched GEMMs (A, B, C as 3-D memrefs): the batch is
resolved as vlpc run resolves it, its FLOPs are batch x 2MNK, a full run's C is right (checked
here with tests/reference.py, not with vlpc's own checker) and the gaps between the matrices keep
their NaN; the errors are one line naming the command's own option."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import vlpc
import vlpc.verify
from vlpc.cli import main
from vlpc.errors import EXIT_VERIFY

from reference import assert_gemm_close, batch_view, gemm_reference
from test_batched import batched_source

#: whole 32x64 tiles of the default sqc kernel; the static strides leave gaps between the matrices
B, M, N, K = 3, 64, 64, 32
STATIC_STRIDES = (M * K + 3, N * K + 4, M * N + 5)
#: a dynamic batch's strides are rows x leading dimension (vlpc.api.resolve): no gaps
DYNAMIC_STRIDES = (M * K, N * K, M * N)
SIZES = ["--m", str(M), "--n", str(N), "--k", str(K)]
def default_hbm() -> float:
    """HBM bytes per second of the modeled bench's default board (MI50): a 4096-bit HBM2 bus,
    double data rate at the board's memory clock."""
    from vlpc.targets import board_for, get_board

    return 4096 / 8 * 2 * get_board(board_for("gfx906")).memory_clock_mhz * 1e6


def write(tmp_path, dynamic: bool):
    path = tmp_path / ("dyn.mlir" if dynamic else "static.mlir")
    path.write_text(batched_source(B, M, N, K, *STATIC_STRIDES, dynamic=dynamic))
    return str(path)


def sizes_for(dynamic: bool) -> list[str]:
    return [*SIZES, "--batch", str(B)] if dynamic else []


def bench(tmp_path, path, *extra) -> tuple[int, dict]:
    out = tmp_path / "bench.csv"
    rc = main(["bench", path, "--csv", str(out), "-q", *extra])
    rows = list(csv.DictReader(open(out))) if out.exists() else []
    assert len(rows) <= 1
    return rc, (rows[0] if rows else {})


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_modeled_bench_counts_the_whole_batch(tmp_path, capsys, dynamic):
    """It used to stop at "takes 14 arguments ... 11 given" (no batch strides packed).  The
    modeled row's FLOPs are batch x 2MNK, its TFLOP/s those FLOPs over the modeled time and its
    HBM share every matrix's A, B and C over it."""
    rc, row = bench(tmp_path, write(tmp_path, dynamic), *sizes_for(dynamic))
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert f"| M=N={M} batch={B} |" in cap.out
    assert f"a strided batch of {B} GEMMs" in cap.err
    flops = B * 2 * M * N * K
    assert int(row["batch"]) == B and float(row["flops"]) == flops
    us = float(row["modeled_us"])
    assert float(row["modeled_tflops"]) == pytest.approx(flops / (us * 1e-6) / 1e12, rel=1e-3, abs=6e-5)
    moved = B * (4 * (M + N) * K + 4 * M * N)  # f32 A and B read once, C written once (beta = 0)
    assert float(row["hbm_share"]) == pytest.approx(moved / (us * 1e-6) / default_hbm(), rel=1e-3, abs=6e-5)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_full_run_results_are_right_and_gaps_stay_nan(tmp_path, capsys, monkeypatch, dynamic):
    """--no-model runs every workgroup and checks C.  The launch is watched: its buffers are
    exactly sized for the batch strides, the gaps between matrices are NaN before and after, and
    each matrix of C matches tests/reference.py's float64 reference within its bound."""
    seen = []
    real = vlpc.verify.launch_and_read

    def spy(kernel, device, host, p, *args, **kwargs):
        before = {name: x.copy() for name, x in host.items()}
        out, stats, walls = real(kernel, device, host, p, *args, **kwargs)
        seen.append((before, out.copy(), p))
        return out, stats, walls

    monkeypatch.setattr(vlpc.verify, "launch_and_read", spy)
    rc, row = bench(tmp_path, write(tmp_path, dynamic), "--no-model", "--beta", "0.5", *sizes_for(dynamic))
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert row["verified"] == "True" and int(row["batch"]) == B and float(row["flops"]) == B * 2 * M * N * K
    assert "C verified at every size" in cap.err
    [(host, out, p)] = seen
    sa, sb, sc = DYNAMIC_STRIDES if dynamic else STATIC_STRIDES
    assert (p.batch, p.stride_a, p.stride_b, p.stride_c) == (B, sa, sb, sc)
    assert {x: host[x].size for x in "ABC"} == {"A": (B - 1) * sa + M * K, "B": (B - 1) * sb + N * K,
                                               "C": (B - 1) * sc + M * N}
    ref, bound = gemm_reference(batch_view(host["A"], B, M, K, sa), batch_view(host["B"], B, N, K, sb),
                                batch_view(host["C"], B, M, N, sc), 1.0, 0.5, layout="NT")
    assert np.isfinite(ref).all()
    assert_gemm_close(batch_view(out, B, M, N, sc), ref, bound)
    gaps = np.ones(out.size, bool)
    for z in range(B):
        gaps[z * sc:z * sc + M * N] = False
    assert gaps.sum() == (0 if dynamic else (B - 1) * (sc - M * N))
    assert np.isnan(host["C"][gaps]).all() and np.isnan(out[gaps]).all()


def test_full_run_fails_when_a_gap_is_written(tmp_path, capsys, monkeypatch):
    """The bench's check is not a formality: a C whose gap between matrices 0 and 1 was written
    fails (exit code 3, one line naming the size and the modified element)."""
    real = vlpc.verify.launch_and_read

    def corrupt(*args, **kwargs):
        out, stats, walls = real(*args, **kwargs)
        out[M * N] = 0.0  # the first element after matrix 0: a gap of the static strides
        return out, stats, walls

    monkeypatch.setattr(vlpc.verify, "launch_and_read", corrupt)
    rc, row = bench(tmp_path, write(tmp_path, False), "--no-model")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == EXIT_VERIFY and row["verified"] == "False"
    assert err[-1].startswith(f"vlpc: verification FAILED at M=N={M} batch={B}: 1 elements of C outside")


def test_batch_on_a_plain_kernel_is_one_line(tmp_path, capsys):
    """--batch for a kernel that is not batched: vlpc run's one line, exit code 1, from bench
    and from report (its traffic table), without --energy."""
    t = "memref<64x32xf32>", "memref<256x32xf32>", "memref<64x256xf32>"
    path = tmp_path / "plain.mlir"
    path.write_text(f"func.func @g(%a: {t[0]}, %b: {t[1]}, %c: {t[2]}, %alpha: f32, %beta: f32) {{\n"
                    f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"}} : {t[0]}, {t[1]}, {t[2]}, f32, f32\n"
                    "  func.return\n}\n")
    want = ["vlpc: --batch 2: kernel g is not batched (give A, B and C as 3-D memrefs)"]
    for cmd in (["bench", str(path), "--batch", "2"], ["bench", str(path), "--batch", "2", "--no-model"],
                ["report", str(path), "--batch", "2", "-q", "-o", str(tmp_path / "r")]):
        assert main(cmd) == 1, cmd
        assert capsys.readouterr().err.strip().splitlines() == want, cmd


def test_missing_dynamic_batch_names_the_commands_option(tmp_path, capsys):
    """A '?' batch count without --batch: bench and report --energy name their own --batch; vlpc
    run and the Python API keep theirs."""
    path = write(tmp_path, True)
    for cmd in (["bench", path, *SIZES], ["bench", path, *SIZES, "--no-model"],
                ["report", path, *SIZES, "--energy", "-q", "-o", str(tmp_path / "e")]):
        assert main(cmd) == 1, cmd
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"vlpc: bg takes its batch count at launch: give it with vlpc {cmd[0]} --batch N"], cmd
    assert main(["run", path, *SIZES, "-q"]) == 1
    assert "pass batch= (vlpc run: --batch)" in capsys.readouterr().err
    from vlpc.api import MissingBatchError, resolve

    with pytest.raises(MissingBatchError, match=r"pass batch= \(vlpc run: --batch\) or 3-D operand arrays"):
        resolve(vlpc.compile(open(path).read()).kernel(), None, None, None, M, N, K)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_report_traffic_table_refuses_a_batch_in_one_line(tmp_path, capsys, dynamic):
    """The traffic table is one GEMM's per macro tile and k: a strided batch (static, or dynamic
    with --batch) is refused in one line naming it and where a batch runs, for every strategy."""
    path = write(tmp_path, dynamic)
    for strategies in ("sqc,lds", "lds"):
        rc = main(["report", path, *sizes_for(dynamic), "--strategies", strategies, "-q", "-o", str(tmp_path / "r")])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 1 and len(err) == 1, err
        assert "does not support a strided batched GEMM" in err[0] and "vlpc report --energy, vlpc bench" in err[0]
    assert not (tmp_path / "r.md").exists()


def test_modeled_time_grows_with_the_batch_past_the_cus(tmp_path, capsys):
    """The timing model runs the batch's workgroups (grid z): 128 matrices of 2 workgroups each
    put at least 4 workgroups on each of the default MI50's 60 CUs, which cannot finish sooner than the 2 workgroups
    of one matrix; the FLOPs are 128x."""
    path = write(tmp_path, True)
    rows = {}
    for nb in (1, 128):
        rc, rows[nb] = bench(tmp_path, path, *SIZES, "--batch", str(nb))
        assert rc == 0, capsys.readouterr().err
    assert float(rows[128]["flops"]) == 128 * float(rows[1]["flops"]) == 128 * 2 * M * N * K
    assert float(rows[128]["modeled_us"]) > float(rows[1]["modeled_us"])


def test_plan_surrogate_and_print_plan_on_a_batch(tmp_path, capsys):
    """The plan surrogate (vlpc.plan_model.estimate) counts batch x the tiles as workgroups, and
    the automatic split-K leaves a batch unsplit, saying so."""
    from vlpc.plan_model import estimate, plan_board

    board = plan_board("gfx906")
    one, three = (estimate(M, N, K, "f32", 4, (32, 64), 16, 1, 1, "workspace", board, batch=nb) for nb in (0, B))
    assert three.workgroups == B * one.workgroups == B * (M // 32) * (N // 64)
    assert main(["compile", write(tmp_path, False), "--print-plan", "-o", str(tmp_path / "k.hsaco")]) == 0
    assert "(not split across workgroups automatically: a strided batch)" in capsys.readouterr().out
