"""vlpc bench: modeled times on the emulator (labelled modeled), counters with --no-model,
clear errors elsewhere."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import vlpc
from vlpc.bench import rocblas_problem
from vlpc.cli import build_parser, main

DYN = str(Path(__file__).resolve().parents[2] / "examples" / "sgemm_dynamic.mlir")


def test_emulator_sweep_reports_counters_not_time(tmp_path, capsys):
    csv_path = tmp_path / "b.csv"
    rc = main(["bench", DYN, "--device", "emulator", "--sweep", "--start", "256", "--stop", "512",
               "--step", "256", "--k", "32", "--csv", str(csv_path), "--no-model", "--split-k", "1"])
    # (--split-k 1: one kernel at every size; without a plan option the launch-time variants
    # (vlpc/launch_variants.py) may run another plan per size)
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "no hardware timing" in cap.err
    assert "TFLOP" not in cap.out and "GFLOP" not in cap.out
    lines = [l for l in cap.out.splitlines() if l.startswith("| M=N=")]
    assert [l.split("|")[1].strip() for l in lines] == ["M=N=256", "M=N=512"]
    rows = csv_path.read_text().splitlines()
    assert rows[0].startswith("M,N,K,instructions")
    # work scales with M*N: 4x the instructions for 2x the size (same K)
    i256, i512 = (int(r.split(",")[3]) for r in rows[1:])
    assert 3.5 < i512 / i256 < 4.5


def test_emulator_refuses_huge_full_sweeps(capsys):
    assert main(["bench", DYN, "--device", "emulator", "--sweep", "--no-model"]) == 1
    assert "need --max-emulated" in capsys.readouterr().err


def test_emulator_bench_reports_modeled_time(tmp_path, capsys):
    csv_path = tmp_path / "m.csv"
    rc = main(["bench", DYN, "--m", "256", "--n", "512", "--k", "64", "--gpu", "mi60", "--csv", str(csv_path)])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "MODELED" in cap.err and "not measured" in cap.err
    assert "modeled TFLOP/s" in cap.out
    head, row = (x.split(",") for x in csv_path.read_text().splitlines()[:2])
    us, tflops, share = float(row[3]), float(row[4]), float(row[5])
    # the row's own arithmetic: TFLOP/s = 2MNK / time, share = TFLOP/s / MI60's peak at its stock 1800 MHz
    assert tflops == pytest.approx(2 * 256 * 512 * 64 / (us * 1e-6) / 1e12, rel=1e-3)
    assert share == pytest.approx(tflops / 14.7456, rel=1e-3)
    # % of HBM: A and B read once, C written once (beta = 0), over MI60's 1,024 GB/s (HBM2 at its stock 1000 MHz)
    hbm = float(row[head.index("hbm_share")])
    moved = 4 * (256 + 512) * 64 + 4 * 256 * 512
    assert hbm == pytest.approx(moved / (us * 1e-6) / 1024e9, rel=1e-3, abs=6e-5)  # CSV: 4 decimals
    # a lower engine clock cannot make the same kernel faster
    rc = main(["bench", DYN, "--m", "256", "--n", "512", "--k", "64", "--gpu", "mi60", "--clock", "1100", "--csv",
                str(csv_path)])
    assert rc == 0
    slow = float(csv_path.read_text().splitlines()[1].split(",")[3])
    assert slow > us


def test_hip_unavailable_is_one_line(capsys):
    rc = main(["bench", DYN, "--device", "hip", "--m", "256", "--n", "256"])
    err = capsys.readouterr().err
    assert rc == 4
    assert err.startswith("vlpc: HIP device unavailable") and len(err.strip().splitlines()) == 1


def test_int8_bench_counts_ops_and_hbm(tmp_path, capsys):
    src = tmp_path / "g8.mlir"
    t = "memref<16x256xi8>", "memref<64x256xi8>", "memref<16x64xi32>"
    src.write_text(f"func.func @g(%a: {t[0]}, %b: {t[1]}, %c: {t[2]}, %alpha: i32, %beta: i32) {{\n"
                   f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"}} : {t[0]}, {t[1]}, {t[2]}, i32, i32\n"
                   "  func.return\n}\n")
    csv_path = tmp_path / "g8.csv"
    assert main(["bench", str(src), "--gpu", "mi60", "--csv", str(csv_path), "-q"]) == 0  # the MI60 figures below
    assert "modeled TOP/s" in capsys.readouterr().out
    head, row = (x.split(",") for x in csv_path.read_text().splitlines()[:2])
    us, hbm = float(row[3]), float(row[head.index("hbm_share")])
    moved = (16 + 64) * 256 + 4 * 16 * 64  # int8 A and B, i32 C written (beta = 0)
    assert hbm == pytest.approx(moved / (us * 1e-6) / 1024e9, rel=1e-3, abs=6e-5)  # CSV: 4 decimals


# -- rocblas-bench parity (issue 36 item 6) ---------------------------------------------------------

def _col_major(buf, rows, cols, ld):
    """Element (i, j) of a column-major rows x cols matrix at i + j * ld, as float64."""
    return buf.reshape(cols, ld)[:, :rows].T.astype(np.float64)


@pytest.mark.parametrize("flags, ab, ct", [
    (["-f", "gemm", "-r", "f16_r"], np.float16, np.float16),
    (["-f", "gemm_ex", "--a_type", "f16_r", "--b_type", "f16_r", "--c_type", "f32_r", "--d_type", "f32_r",
      "--compute_type", "f32_r"], np.float16, np.float32),
    (["-f", "gemm_ex", "-r", "i8_r", "--c_type", "i32_r", "--compute_type", "i32_r"], np.int8, np.int32),
])
@pytest.mark.parametrize("ta, tb", [("N", "T"), ("T", "N")])
def test_rocblas_f16_and_int8_problems_compute_blas_column_major(flags, ab, ct, ta, tb):
    """-r f16_r (hgemm), gemm_ex f16 -> f32 and i8 -> i32 build the dot kernels' IR of rocblas-bench's
    column-major C = alpha op(A) op(B) + beta C over the same bytes (NumPy: exact for int8)."""
    m, n, k = 40, 24, 20
    lda = (m if ta == "N" else k) + 4
    ldb = (k if tb == "N" else n) + 4
    ldc = m + 2
    alpha, beta = (3, -2) if ab is np.int8 else (1.5, 0.5)
    args = build_parser().parse_args(["bench", *flags, "--transposeA", ta, "--transposeB", tb, "-m", str(m),
                                      "-n", str(n), "-k", str(k), "--lda", str(lda), "--ldb", str(ldb),
                                      "--ldc", str(ldc), "--alpha", str(alpha), "--beta", str(beta)])
    rb = rocblas_problem(args)
    rng = np.random.default_rng(2)

    def rand(size, t):
        return (rng.integers(-128, 128, size) if t in (np.int8, np.int32) else rng.standard_normal(size)).astype(t)

    a_cm = rand(lda * (k if ta == "N" else m), ab)
    b_cm = rand(ldb * (n if tb == "N" else k), ab)
    c_cm = rand(ldc * n, ct)
    op_a = _col_major(a_cm, m, k, lda) if ta == "N" else _col_major(a_cm, k, m, lda).T
    op_b = _col_major(b_cm, k, n, ldb) if tb == "N" else _col_major(b_cm, n, k, ldb).T
    want = alpha * op_a @ op_b + beta * _col_major(c_cm, m, n, ldc)
    kernel = vlpc.compile(rb.mlir()).kernel()
    assert kernel.launch_info["dtype"] == np.dtype(ab).name.replace("float", "f").replace("int", "i")
    r = vlpc.run(kernel, b_cm.reshape(-1, ldb), a_cm.reshape(-1, lda), c_cm.reshape(n, ldc), alpha=alpha, beta=beta)
    got = r.c[:, :m].T.astype(np.float64)
    if ab is np.int8:
        assert np.array_equal(got, want)
    else:
        assert np.allclose(got, want, rtol=2e-3 if ct is np.float16 else 1e-5, atol=2e-2 if ct is np.float16 else 1e-4)


def test_rocblas_csv_on_the_emulator_has_the_modeled_times_labelled(capsys):
    argv = ["bench", "-f", "gemm", "-r", "f16_r", "--transposeA", "T", "--transposeB", "N", "-m", "256", "-n",
            "128", "-k", "64", "--rocblas-csv", "-q"]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("# modeled:") and "not measured" in out[0] and "mi50" in out[0]
    assert out[1] == "transA,transB,M,N,K,alpha,lda,beta,ldb,ldc,rocblas-Gflops,us"
    f = out[2].split(",")
    gflops, us = float(f[10]), float(f[11])
    assert us > 0 and gflops == pytest.approx(2 * 256 * 128 * 64 / (us * 1e-6) / 1e9, rel=2e-3)
    assert main([*argv, "--no-model"]) == 0  # no timing model: no time, said so
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("# no time:") and out[2].endswith(",,")


@pytest.mark.parametrize("flags, message", [
    (["-f", "gemm_ex", "--a_type", "f16_r", "--b_type", "f32_r"], "vlpc runs f32 and f64"),
    (["-f", "gemm_ex", "-r", "i8_r"], "i8 x i8 -> i32"),
    (["-f", "gemm_ex", "-r", "f16_r", "--c_type", "f32_r", "--d_type", "f16_r"], "D in place of C"),
    (["-f", "gemm", "-r", "f16_r", "--c_type", "f32_r"], "gemm_ex's flags"),
    (["-f", "gemm", "-r", "i8_r"], "no integer gemm"),
    (["-f", "gemm_ex", "-r", "i8_r", "--c_type", "i32_r", "--compute_type", "i32_r", "--alpha", "0.5"],
     "integer alpha and beta"),
    (["-f", "gemm_ex", "--ldd", "70"], "--ldd 70 differs from --ldc 64"),
])
def test_unsupported_rocblas_type_combinations_are_one_line(flags, message, capsys):
    assert main(["bench", *flags, "-m", "64", "-n", "64", "-k", "64"]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_unknown_rocblas_precision_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        main(["bench", "-f", "gemm", "-r", "bf16_r", "-m", "64", "-n", "64", "-k", "64"])
    assert e.value.code == 2
    assert "'bf16_r': known to rocblas-bench, not to vlpc" in capsys.readouterr().err


def test_bench_prints_the_solution_it_ran(capsys):
    """As rocblas-bench prints its solution: the plan's launches, macro tile, K step, split-K, VGPRs,
    SGPRs and occupancy of the kernel that computes."""
    from vlpc.targets import get_target

    assert main(["bench", DYN, "--m", "256", "--n", "512", "--k", "64", "--split-k", "2", "-q"]) == 0
    err = capsys.readouterr().err
    line = next(l for l in err.splitlines() if l.startswith("vlpc bench: solution: "))
    k = vlpc.compile((Path(DYN)).read_text(), split_k=2).kernel()
    li = k.launch_info
    occ = get_target("gfx906").occupancy(k.vgprs, k.metadata[".sgpr_count"], 0, li["workgroup_size"])
    steps = k.plan(256, 512, 64)
    assert [s.kernel for s in steps] == ["sgemm_dyn", "sgemm_dyn_reduce"]
    assert (f"plan sgemm_dyn {steps[0].grid[0]}x{steps[0].grid[1]}x2 -> sgemm_dyn_reduce "
            f"{steps[1].grid[0]}x{steps[1].grid[1]}x1") in line
    assert f"macro tile {li['macro_m']}x{li['macro_n']}, K step {li['k_step']}, split-K 2 (workspace)" in line
    assert f"{k.vgprs} VGPRs, {k.sgprs} SGPRs, occupancy {occ}" in line
