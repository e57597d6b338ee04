"""The test suite's own settings (tests/conftest.py, pyproject.toml's [tool.pytest.ini_options]):
it runs without pytest-xdist, chooses --dist worksteal under -n, and a test that patches vlpc
compiles into a private kernel cache, never into the one the suite's tests share."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import conftest

ROOT = Path(__file__).resolve().parents[2]


def test_the_suite_runs_without_xdist():
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider",
                           "--collect-only", "-q", "tests/isa/test_isa_classes.py"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "test_isa_classes.py::" in proc.stdout


def _config(args, dist="no", numprocesses=None, addopts=()):
    return SimpleNamespace(pluginmanager=SimpleNamespace(hasplugin=lambda name: name == "xdist"),
                           option=SimpleNamespace(dist=dist, numprocesses=numprocesses),
                           invocation_params=SimpleNamespace(args=tuple(args)),
                           getini=lambda name: list(addopts) if name == "addopts" else [])


def test_worksteal_is_the_default_distribution_under_n(monkeypatch):
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    cfg = _config(["-n", "auto"], numprocesses="auto")
    conftest.pytest_cmdline_main(cfg)
    assert cfg.option.dist == "worksteal"
    for given in (["-n", "2", "--dist", "load"], ["-n", "2", "--dist=loadfile"], ["-n", "2", "-d"]):
        cfg = _config(given, numprocesses=2)
        conftest.pytest_cmdline_main(cfg)
        assert cfg.option.dist == "no", given  # (xdist's own default then applies)
    cfg = _config([], numprocesses=None)  # no workers: nothing to distribute
    conftest.pytest_cmdline_main(cfg)
    assert cfg.option.dist == "no"
    monkeypatch.setenv("PYTEST_ADDOPTS", "--dist loadscope")
    cfg = _config(["-n", "2"], numprocesses=2)
    conftest.pytest_cmdline_main(cfg)
    assert cfg.option.dist == "no"


def test_patching_vlpc_gives_the_test_a_private_kernel_cache(monkeypatch):
    shared = os.environ["VLPC_CACHE_DIR"]
    assert shared == os.environ["VLPC_TEST_CACHE_DIR"]
    import vlpc.runtime
    import vlpc.runtime.toolchain

    monkeypatch.setattr(os, "sep", os.sep)  # not vlpc: the shared cache stays
    monkeypatch.setenv("VLPC_SOME_SETTING", "1")
    monkeypatch.setattr(vlpc.runtime, "get_device", vlpc.runtime.get_device)  # runs kernels, never builds one
    assert os.environ["VLPC_CACHE_DIR"] == shared and not monkeypatch.private_kernel_cache
    assert conftest._compiles("vlpc.runtime.toolchain") and conftest._compiles("vlpc.passes.gemm_tile")
    assert conftest._compiles("xdsl.ir.core") and not conftest._compiles("vlpc.runtime.emulator.core")

    from vlpc.passes.gcn_insert_waitcnt import GcnInsertWaitcntPass

    monkeypatch.setattr(GcnInsertWaitcntPass, "apply", lambda self, ctx, op: None)  # a class of vlpc
    private = os.environ["VLPC_CACHE_DIR"]
    assert private != shared and Path(private).is_dir() and not any(Path(private).iterdir())
    assert monkeypatch.private_kernel_cache == [Path(private)]


def test_patching_vlpc_empties_the_emulators_program_cache(monkeypatch):
    import numpy as np

    from vlpc.runtime.emulator import core
    from vlpc.runtime.emulator.semantics import vop3p
    from vlpc.runtime.emulator.testing import run_lanes

    for _ in range(2):  # (kept from its second launch on)
        run_lanes("v_add_u32 v20, v10, v0", [np.arange(64, dtype=np.uint32)])
    assert core._PROGRAMS
    monkeypatch.setattr(vop3p, "denorm_bits", vop3p.denorm_bits)
    assert not core._PROGRAMS


def test_a_kernel_of_patched_code_never_reaches_the_shared_cache(monkeypatch):
    import vlpc
    from launch_support import nt_source
    from vlpc.passes.gcn_insert_waitcnt import GcnInsertWaitcntPass

    shared = Path(os.environ["VLPC_CACHE_DIR"])
    monkeypatch.setattr("vlpc.passes.gcn_insert_waitcnt.GcnInsertWaitcntPass.apply", lambda self, ctx, op: None)
    private = Path(os.environ["VLPC_CACHE_DIR"])
    src = nt_source(64, 64, 24)
    asm = vlpc.compile(src).asm
    assert "s_waitcnt" not in asm.split(".amdgpu_metadata")[0].replace("s_waitcnt_", "")  # the patch took
    patched = {p.relative_to(private): p.read_bytes() for p in private.rglob("*.vlpck")}
    assert patched  # (it went to the private one)
    # Other xdist workers write the shared cache meanwhile: what matters is that no entry there
    # holds the patched kernel (it would be stored under the unpatched kernel's key).
    assert all(not (shared / rel).exists() or (shared / rel).read_bytes() != data for rel, data in patched.items())
    monkeypatch.undo()
    assert "s_waitcnt" in vlpc.compile(src).asm  # unpatched: a kernel with its waits, not the patched one
    assert GcnInsertWaitcntPass.apply is not None


def test_bytecode_off_keeps_the_suites_bytecode_in_pytests_cache(monkeypatch, tmp_path):
    """Under PYTHONDONTWRITEBYTECODE the suite's processes (workers, `vlpc` and `lit` subprocesses)
    share bytecode kept in pytest's cache folder (PYTHONPYCACHEPREFIX), never beside the sources;
    without the cache plugin in a temporary folder deleted at the end; a user's prefix is kept."""
    monkeypatch.setattr(conftest, "_WORKER", False)
    monkeypatch.setattr(sys, "pycache_prefix", sys.pycache_prefix)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    made = []
    cache = SimpleNamespace(mkdir=lambda name: made.append(name) or tmp_path / name)
    conftest.pytest_configure(SimpleNamespace(cache=cache))
    assert made == ["bytecode"] and os.environ["PYTHONPYCACHEPREFIX"] == str(tmp_path / "bytecode")
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ and sys.pycache_prefix == str(tmp_path / "bytecode")
    assert not sys.dont_write_bytecode

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.delenv("PYTHONPYCACHEPREFIX")
    monkeypatch.setattr(conftest, "_OWN_BYTECODE_DIR", [])
    conftest.pytest_configure(SimpleNamespace())  # -p no:cacheprovider: a temporary folder
    own = conftest._OWN_BYTECODE_DIR
    assert own == [os.environ["PYTHONPYCACHEPREFIX"]] and Path(own[0]).is_dir()
    for d in own:
        Path(d).rmdir()

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "mine"))
    conftest.pytest_configure(SimpleNamespace(cache=cache))  # the user's prefix stays
    assert os.environ["PYTHONPYCACHEPREFIX"] == str(tmp_path / "mine") and made == ["bytecode"]
