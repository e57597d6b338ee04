"""``vlpc report``: the seed's section 2.11 rows measured for both strategies."""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET

import pytest

from launch_support import nt_source
from vlpc.cli import main
from vlpc.report import SEED, build_report

M, N, K = 64, 256, 128


def source(m=M, n=N, k=K):
    return nt_source(m, n, k)


@pytest.fixture(scope="module")
def report():
    return build_report(source(), "g.mlir", ["lds", "sqc"])


def test_both_verified_and_occupancy(report):
    lds, sqc = report.by("lds"), report.by("sqc")
    assert lds.verified and sqc.verified
    assert (lds.occupancy.waves_per_simd, lds.occupancy.limited_by) == (2, "VGPRs")
    assert lds.lds_bytes == 20480 and sqc.lds_bytes == 0
    assert sqc.occupancy.waves_per_simd == 3


def test_rows_that_must_match_the_seed(report):
    lds, sqc = report.by("lds"), report.by("sqc")
    # K loop only: exact per-k figures of the two schemes
    assert lds.phases["a_vgpr_r"]["loop"] == pytest.approx(16384 + 64)  # FMA operands + ds_write data
    assert lds.phases["b_vgpr_r"]["loop"] == pytest.approx(16384 + 256)
    assert lds.phases["a_lds_r"]["loop"] == lds.phases["b_lds_r"]["loop"] == pytest.approx(256 * 8)
    assert lds.phases["c_vgpr_rw"]["loop"] == pytest.approx(2 * 16384)  # no forwarding in the 8x8 order
    assert sqc.phases["b_vgpr_r"]["loop"] == pytest.approx(16384)
    assert sqc.phases["a_sgpr_r"]["loop"] == pytest.approx(256)  # one SGPR read per wave-FMA
    assert sqc.rows["a_vgpr_r"] == 0  # A is never read from VGPRs
    # ... and written to one only by the A touch: one global_load_dword per lane, wave and K step
    # (the next step's A lines into the L2; its value is dropped): 4 waves x 64 lanes / 16 k
    assert sqc.rows["a_vgpr_w"] == pytest.approx(4 * 64 / 16)
    # sqc: no LDS, no barrier; legacy: one barrier per LDS stage of 8 k (+1)
    assert sqc.rows["lds_rw"] == sqc.rows["barrier"] == 0
    assert lds.rows["barrier"] == pytest.approx((K // 8 + 1) / K)
    # memory: every A and B value once per workgroup (+ the clamped last prefetch)
    assert lds.phases["b_l2l1"]["loop"] == pytest.approx(256)
    assert sqc.phases["b_l2l1"]["loop"] == pytest.approx(256)
    # the attribution adds up to the emulator's totals (also checked inside the report)
    t = lds.traffic
    assert t.get("vgpr_r") == lds.stats.vgpr_reads
    assert t.get("lds_r") * 4 == lds.stats.lds_bytes_read


def test_ratio_and_forwarding(report):
    lds, sqc = report.by("lds"), report.by("sqc")
    r = report.ratio("vgpr_rw")
    assert r == pytest.approx(lds.rows["vgpr_rw"] / sqc.rows["vgpr_rw"])
    assert 1.5 < r < SEED["vgpr_rw"]["lds"] / SEED["vgpr_rw"]["sqc"]
    # sqc forwards most accumulator reads; the legacy order forwards (almost) none
    assert sqc.rows["vgpr_r_fwd"] > 0.8 * 16384
    assert lds.rows["vgpr_r_fwd"] < 0.01 * 16384


# *An Alternative SGEMM on VEGA* (the seed), section 2.11 "Theoretical Comparison of VGPR/L1 Cache/LDS Access", the table
# "Costs for Matrix Multiply 64x1x256" (legacy LDS, SQC), transcribed here from the seed's
# text independently of vlpc.report.SEED_ROWS.
SEED_002_TABLE = {
    "Matrix A L2-L1": (64, 64), "Matrix A VGPR write": (576, 64), "Matrix A VGPR read": (16384, 64),
    "Matrix A LDS write": (64, 0), "Matrix A LDS read": (512, 0), "Matrix B L2-L1": (256, 256),
    "Matrix B L1 read": (256, 256), "Matrix B VGPR write": (2304, 256), "Matrix B VGPR read": (16384, 16384),
    "Matrix B LDS write": (256, 0), "Matrix B LDS read": (2304, 0), "Matrix C VGPR read/write": (32768, 4096),
    "SUM L2-L1": (320, 320), "SUM L1 read": (320, 320), "VGPR read/write": (68416, 20864),
    "LDS read/write": (3136, 0), "Barrier": (1, 0),
}


def test_seed_columns_are_the_seeds_table(report):
    """Every seed cell of the CSV equals the seed's own table (transcribed above)."""
    rows = list(csv.reader(io.StringIO(report.csv())))
    head = rows[0]
    by_label = {r[1]: r for r in rows[1:] if len(r) == len(head) and r[head.index("seed_lds")] != ""}
    assert set(by_label) == set(SEED_002_TABLE)
    for label, (legacy, sqc) in SEED_002_TABLE.items():
        assert float(by_label[label][head.index("seed_lds")]) == legacy, label
        assert float(by_label[label][head.index("seed_sqc")]) == sqc, label


def test_markdown_prints_the_measurements(report):
    """The markdown's measured cells and ratio are the measurements' own numbers, formatted."""
    md = report.markdown()
    lds, sqc = report.by("lds"), report.by("sqc")
    line = next(ln for ln in md.splitlines() if ln.startswith("| VGPR read/write |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert "68,416" in cells and "20,864" in cells  # the seed's cells (see the CSV test)
    nums = [c for c in cells if re.fullmatch(r"[\d,.]+", c)]
    assert f"{lds.rows['vgpr_rw']:,.0f}" in nums and f"{sqc.rows['vgpr_rw']:,.0f}" in nums
    assert f"{lds.rows['vgpr_rw'] / sqc.rows['vgpr_rw']:.2f}" == cells[-1]


def test_outputs(report):
    md = report.markdown()
    assert "measured legacy/sqc" in md and "limited by VGPRs" in md
    assert "## Notes" in md and "Barrier, legacy (lds)" in md
    rows = list(csv.reader(io.StringIO(report.csv())))
    head = rows[0]
    assert head[:4] == ["key", "row", "seed_lds", "measured_lds"] and head[-1] == "ratio_lds_over_sqc"
    by_key = {r[0]: r for r in rows[1:]}
    assert float(by_key["lds_rw"][head.index("measured_sqc")]) == 0
    text = report.svg()
    svg = ET.fromstring(text)
    assert svg.tag.endswith("svg")
    bars = [g for g in svg.iter("{http://www.w3.org/2000/svg}g") if g.get("id", "").startswith("patch_")]
    assert len(bars) >= len(report.CHART_ROWS) * 2 * len(report.measurements)  # seed and measured per row
    # one renderer for SVG and PNG (matplotlib), with a title, axis labels and every bar's value
    assert "seed vs measured" in text and "log scale" in text and "16,384" in text


def test_cli(tmp_path, capsys):
    f = tmp_path / "g.mlir"
    f.write_text(source(64, 256, 32))
    prefix = tmp_path / "out"
    assert main(["report", str(f), "--strategies", "sqc,lds", "-o", str(prefix)]) == 0
    out = capsys.readouterr().out
    assert "Matrix B LDS read" in out and "measured legacy/sqc" in out
    for suffix in (".md", ".csv", ".svg"):
        assert (tmp_path / f"out{suffix}").stat().st_size > 0
    assert main(["report", str(f), "--strategies", "sqc,nope"]) == 1
    assert "unknown strategy 'nope'" in capsys.readouterr().err


def test_png_needs_matplotlib(tmp_path, capsys):
    try:
        import matplotlib  # noqa: F401
        pytest.skip("matplotlib is installed")
    except ImportError:
        pass
    f = tmp_path / "g.mlir"
    f.write_text(source(64, 256, 32))
    assert main(["report", str(f), "--strategies", "sqc", "-o", str(tmp_path / "o"),
                 "--chart", str(tmp_path / "c.png")]) == 1
    assert "matplotlib" in capsys.readouterr().err


def test_refuses_f64_and_split_plans(tmp_path, capsys):
    """The seed's table is in 32-bit units and compares one kernel per strategy."""
    from pathlib import Path

    src = (Path(__file__).parents[2] / "examples" / "sgemm_nt.mlir").read_text()
    f = tmp_path / "d.mlir"
    f.write_text(src.replace("f32", "f64"))
    assert main(["report", str(f), "--strategies", "sqc,lds", "-o", str(tmp_path / "r")]) == 1
    assert "must be f32" in capsys.readouterr().err
    g = tmp_path / "s.mlir"
    g.write_text(src)
    assert main(["report", str(g), "--split-k", "2", "-o", str(tmp_path / "r")]) == 1
    assert "--split-k 1" in capsys.readouterr().err
