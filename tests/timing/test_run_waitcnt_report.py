"""``vlpc run --waitcnt report``: a missing s_waitcnt is reported (kernel, pc, wave, instruction,
register) and the run goes on with the loaded value, like compute-sanitizer's racecheck; the
default still stops.  The racy kernel is vlpc's own with gcn-insert-waitcnt disabled, so every
load result is used before any wait; C is checked against NumPy (float64)."""

from __future__ import annotations

import contextlib
import io

import pytest

from vlpc.cli import main

from launch_support import nt_source

SMALL = nt_source(64, 256, 32)  # C 64x256, K 32


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.mlir"
    path.write_text(SMALL)
    return str(path)


@pytest.fixture
def no_waits(monkeypatch):
    from vlpc.passes.gcn_insert_waitcnt import GcnInsertWaitcntPass
    monkeypatch.setenv("VLPC_CACHE", "0")  # the cached kernel has its waits
    monkeypatch.setattr(GcnInsertWaitcntPass, "apply", lambda self, ctx, op: None)


def _run(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


def test_missing_waits_stop_the_run_by_default(small, no_waits, capsys):
    code, _ = _run(["run", small, "-q"])
    assert code != 0
    assert "waitcnt" in capsys.readouterr().err.lower()


def test_report_mode_warns_and_goes_on(small, no_waits, capsys):
    code, out = _run(["run", small, "-q", "--waitcnt", "report"])
    err = capsys.readouterr().err
    assert code == 0, err
    lines = [ln for ln in err.splitlines() if ln.startswith("vlpc: warning: s_waitcnt violation in kernel")]
    assert lines, err
    assert all("pc" in ln.lower() for ln in lines)
    n = int(out.split("waitcnt report: ")[1].split()[0])
    assert n == len(lines) > 0
    assert "verification passed" in out  # the loads had completed: C matches NumPy


def test_report_mode_on_a_correct_kernel_reports_none(small, capsys):
    code, out = _run(["run", small, "-q", "--waitcnt", "report"])
    assert code == 0
    assert "waitcnt report: 0 missing s_waitcnt" in out
    assert "s_waitcnt violation" not in capsys.readouterr().err


@pytest.mark.parametrize("extra,message", [
    (["--device", "hip"], "emulator mode"),
    (["--strict"], "give one of them"),
])
def test_report_mode_refuses_contradictions(small, capsys, extra, message):
    code, _ = _run(["run", small, "-q", "--waitcnt", "report", *extra])
    assert code != 0
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_runtime_api_exposes_report_mode(no_waits):
    import warnings

    import numpy as np

    import vlpc
    from vlpc.runtime.emulator.errors import WaitcntViolation, WaitcntViolationWarning
    with pytest.raises(WaitcntViolation):
        vlpc.run(SMALL, seed=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = vlpc.run(SMALL, seed=1, waitcnt="report")
    assert any(issubclass(w.category, WaitcntViolationWarning) for w in caught)
    assert r.verdict.ok and np.isfinite(r.c).all()
