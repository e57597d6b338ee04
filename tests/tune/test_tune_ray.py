"""vlpc tune --ray (vlpc/tune_run.py): the candidates as Ray tasks on a local 2-CPU cluster give
the results of a local run, and a worker killed mid-run costs only its task (Ray retries it).
Skipped only when Ray (the optional extra '.[distributed]') is not installed."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from vlpc import tune
from vlpc.tune_run import Runner

from test_tune_db import K, M, N, source

ray = pytest.importorskip("ray")

CANDIDATES = [tune.Candidate(32, 128, 16), tune.Candidate(16, 128, 8), tune.Candidate(32, 64, 8, split_k=2),
              tune.Candidate(16, 64, 16, local_split=2)]


@pytest.fixture(scope="module")
def cluster():
    os.environ["VLPC_EMU_PROCS"] = "1"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()
    os.environ.pop("VLPC_EMU_PROCS", None)


def _search(runner):
    p = tune.Problem(source(), "g.mlir", None, None, None)
    out = tune.search(p, CANDIDATES, runner, target="gfx906", board="mi60", clock_mhz=None, cus=64,
                      shape=(M, N, K, "f32", "f32", 0), prune=False, check=False)
    return {tune.candidate_key(r.candidate): (r.modeled_us, r.vgprs, r.error) for r in out.results}, out


@pytest.fixture(scope="module")
def local():
    with Runner(1) as runner:
        return _search(runner)[0]


def _task_pids() -> list[int]:
    """Ray workers running a tune task now (Ray titles a worker's process ``ray::<function>``)."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if f.read().startswith(b"ray::_star"):
                        pids.append(int(d))
            except OSError:
                continue
    return pids


def test_ray_gives_the_local_results(cluster, local):
    with Runner(ray_address="auto") as runner:
        assert runner.width == 2
        got, out = _search(runner)
    assert got == local and out.stopped is None
    assert out.winner is not None and len(got) == len(CANDIDATES) + 1


def test_a_worker_killed_mid_run_costs_only_its_task(cluster, local):
    killed = []

    def killer():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            pids = _task_pids()
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.05)

    t = threading.Thread(target=killer)
    t.start()
    with Runner(ray_address="auto") as runner:
        got, out = _search(runner)
    t.join()
    assert killed, "no Ray worker was seen running a task"
    assert got == local and out.stopped is None  # the lost task ran again elsewhere: same results


def test_shapes_in_flight_at_once_give_the_sequential_results(cluster, tmp_path, monkeypatch, capsys):
    """Several problems' searches at once on Ray (as on a cluster of 8 CPUs or more) record what
    one after another records."""
    import sqlite3

    from vlpc.cli import main

    shapes = tmp_path / "shapes.txt"
    shapes.write_text("-f gemm -r f32_r --transposeA T --transposeB N -m 128 -n 64 -k 256\n"
                      "-f gemm -r f32_r --transposeA T --transposeB N -m 64 -n 64 -k 128\n")

    def entries(db):
        with sqlite3.connect(db) as c:
            return sorted(c.execute("SELECT m, n, k, options, modeled_us, default_us FROM entries"))

    argv = ["tune", "--shapes", str(shapes), "--max-candidates", "2", "-q"]
    assert main([*argv, "-j", "1", "--db", str(tmp_path / "one.db")]) == 0
    capsys.readouterr()
    monkeypatch.setattr(tune, "shapes_in_flight", lambda runner, problems: problems)
    assert main([*argv, "--ray", "auto", "--db", str(tmp_path / "ray.db")]) == 0
    assert capsys.readouterr().out.count("| 64x") == 2
    assert entries(tmp_path / "one.db") == entries(tmp_path / "ray.db") and len(entries(tmp_path / "one.db")) == 2
