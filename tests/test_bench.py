"""vlpc bench: modeled times on the emulator (labelled modeled), counters with --no-model,
clear errors elsewhere."""

from __future__ import annotations

from pathlib import Path

from vlpc.cli import main

DYN = str(Path(__file__).resolve().parent.parent / "examples" / "sgemm_dynamic.mlir")


def test_emulator_sweep_reports_counters_not_time(tmp_path, capsys):
    csv_path = tmp_path / "b.csv"
    rc = main(["bench", DYN, "--device", "emulator", "--sweep", "--start", "256", "--stop", "512",
               "--step", "256", "--k", "32", "--csv", str(csv_path), "--no-model"])
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
    rc = main(["bench", DYN, "--m", "256", "--n", "512", "--k", "64", "--csv", str(csv_path)])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "MODELED" in cap.err and "not measured" in cap.err
    assert "modeled TFLOP/s" in cap.out
    head, row = (x.split(",") for x in csv_path.read_text().splitlines()[:2])
    us, tflops, share = float(row[3]), float(row[4]), float(row[5])
    # the row's own arithmetic: TFLOP/s = 2MNK / time, share = TFLOP/s / MI60's peak at its stock 1800 MHz
    assert tflops == __import__("pytest").approx(2 * 256 * 512 * 64 / (us * 1e-6) / 1e12, rel=1e-3)
    assert share == __import__("pytest").approx(tflops / 14.7456, rel=1e-3)
    # % of HBM: A and B read once, C written once (beta = 0), over MI60's 1,024 GB/s (HBM2 at its stock 1000 MHz)
    hbm = float(row[head.index("hbm_share")])
    moved = 4 * (256 + 512) * 64 + 4 * 256 * 512
    assert hbm == __import__("pytest").approx(moved / (us * 1e-6) / 1024e9, rel=1e-3, abs=6e-5)  # CSV: 4 decimals
    # a lower engine clock cannot make the same kernel faster
    rc = main(["bench", DYN, "--m", "256", "--n", "512", "--k", "64", "--clock", "1100", "--csv", str(csv_path)])
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
    assert main(["bench", str(src), "--csv", str(csv_path), "-q"]) == 0
    assert "modeled TOP/s" in capsys.readouterr().out
    head, row = (x.split(",") for x in csv_path.read_text().splitlines()[:2])
    us, hbm = float(row[3]), float(row[head.index("hbm_share")])
    moved = (16 + 64) * 256 + 4 * 16 * 64  # int8 A and B, i32 C written (beta = 0)
    assert hbm == __import__("pytest").approx(moved / (us * 1e-6) / 1024e9, rel=1e-3, abs=6e-5)  # CSV: 4 decimals
