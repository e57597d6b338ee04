"""vlpc bench: counters on the emulator (never GFLOP/s), clear errors elsewhere."""

from __future__ import annotations

from pathlib import Path

from vlpc.cli import main

DYN = str(Path(__file__).resolve().parent.parent / "examples" / "sgemm_dynamic.mlir")


def test_emulator_sweep_reports_counters_not_time(tmp_path, capsys):
    csv_path = tmp_path / "b.csv"
    rc = main(["bench", DYN, "--device", "emulator", "--sweep", "--start", "256", "--stop", "512",
               "--step", "256", "--k", "32", "--csv", str(csv_path)])
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


def test_emulator_refuses_huge_sweeps(capsys):
    assert main(["bench", DYN, "--device", "emulator", "--sweep"]) == 1
    assert "need --max-emulated" in capsys.readouterr().err


def test_hip_unavailable_is_one_line(capsys):
    rc = main(["bench", DYN, "--device", "hip", "--m", "256", "--n", "256"])
    err = capsys.readouterr().err
    assert rc == 4
    assert err.startswith("vlpc: HIP device unavailable") and len(err.strip().splitlines()) == 1
