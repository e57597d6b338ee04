"""The microbenchmark suite's harness (vlpc.benchmarking.microbench): the measured rows, the error
rule and module discovery, and its runner's errors (no kernel is run here: the suite's figures
come from its runner, benchmarks/microbench/run.py, not from tests)."""

from __future__ import annotations

import pytest

from vlpc.benchmarking import load_script
from vlpc.benchmarking import microbench as harness

run = load_script(harness.SUITE / "run.py")


def test_rows_parse_with_sources_and_ranges():
    rows = harness.measurements()
    assert rows["ips.v_mul_lo_u32"].low == rows["ips.v_mul_lo_u32"].high == 3.205
    b128 = rows["lds.b128"]
    assert (b128.low, b128.high, b128.unit) == (9.5, 11.2, "TB/s (whole GPU)")
    # "as above" resolves to the previous row's conditions
    assert rows["lds.b64"].conditions.startswith("pure LDS streaming kernel")
    assert all(r.source and r.unit for r in rows.values())


def test_error_rule():
    one = harness.Measurement("x", "", "", 2.0, 2.0, "u", "", "s", "")
    rng = harness.Measurement("y", "", "", 4.0, 8.0, "u", "", "s", "")
    assert one.error(2.2) == pytest.approx(0.1) and one.error(1.8) == pytest.approx(-0.1)
    assert rng.error(4.0) == rng.error(6.5) == rng.error(8.0) == 0.0   # inside the range
    assert rng.error(8.8) == pytest.approx(0.1)                         # vs the nearest end
    assert rng.error(3.0) == pytest.approx(-0.25)


def test_discovery_finds_the_suite_modules_and_their_points_name_rows():
    mods = {m.__name__: m for m in harness.modules()}
    assert {"issue", "lds"} <= set(mods)
    rows = harness.measurements()
    ids = [f"ips.{m}" for m in mods["issue"].OPERANDS] + [f"lds.{w}" for w in mods["lds"].WIDTHS]
    assert set(ids) <= set(rows)
    assert {i for i in rows if i.startswith(("ips.", "lds."))} == set(ids)


def test_unknown_module_and_board_are_one_line_errors(capsys):
    assert run.main(["--only", "nosuch"]) == 2
    assert run.main(["--gpu", "mi99"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(e.startswith("run.py: error: ") for e in err)


def test_load_script_once_per_file_and_no_name_clash(tmp_path):
    """vlpc.benchmarking.load_script: a script loads once (the same module again), by its file's name,
    and a different file of a name already taken is refused rather than shadowing that module."""
    import sys

    one = tmp_path / "vlpc_probe_script.py"
    one.write_text("from dataclasses import dataclass\n\n@dataclass\nclass P:\n    x: int\n\nLOADS = [1]\n")
    try:
        mod = load_script(one)
        assert mod.P(3).x == 3 and load_script(one) is mod and sys.modules["vlpc_probe_script"] is mod
        other = tmp_path / "sub"
        other.mkdir()
        (other / "vlpc_probe_script.py").write_text("LOADS = [2]\n")
        with pytest.raises(ImportError, match="vlpc_probe_script"):
            load_script(other / "vlpc_probe_script.py")
        with pytest.raises(ImportError, match="'json'"):
            load_script(tmp_path / "json.py")  # the standard library's json is loaded already
    finally:
        sys.modules.pop("vlpc_probe_script", None)
