"""Test-session settings.

The repository keeps the driver in ./vlpc while dialects/, passes/ and runtime/
install into the vlpc package; a Python started with the repository root as its
working directory would find ./vlpc first and miss vlpc.dialects.  Subprocesses the
tests start therefore run with PYTHONSAFEPATH=1 (no current directory on sys.path),
so they use the installed package, as a user's would.
"""

import os
import shutil
import sys
import tempfile

import pytest

os.environ["PYTHONSAFEPATH"] = "1"

# The kernel cache (vlpc/cache.py): the suite neither reads nor fills the user's cache; it
# shares one of its own among its tests (and their subprocesses), deleted at the end.  Under
# pytest-xdist the controller makes it and its workers inherit it (a kernel one worker compiled
# is a hit in the others); the controller, or a run without workers, deletes it.
_WORKER = "PYTEST_XDIST_WORKER" in os.environ
_INHERITED = os.environ.get("VLPC_TEST_CACHE_DIR") if _WORKER else None
_CACHE_DIR = _INHERITED if _INHERITED and os.path.isdir(_INHERITED) else tempfile.mkdtemp(prefix="vlpc-test-cache-")
os.environ["VLPC_TEST_CACHE_DIR"] = _CACHE_DIR
os.environ["VLPC_CACHE_DIR"] = _CACHE_DIR
os.environ.pop("VLPC_CACHE", None)
os.environ.pop("VLPC_CACHE_MAX_SIZE", None)
# The tuning database (vlpc/tunedb.py) is off: no test's compile picks up another test's `vlpc
# tune` winner; the database's own tests give theirs (--db, VLPC_TUNE_DB).
os.environ["VLPC_TUNE_DB"] = "off"
# The IR is verified after every pass of a compile's own pipeline in the tests, and its launch-time
# variants' IR once, after their last pass (`main`: vlpc.compiler.verify_each_variant; the compiler's
# default: once, at the end);
# VLPC_VERIFY_EACH=0 in the environment turns that off for a quicker local run (CI keeps it on).
os.environ.setdefault("VLPC_VERIFY_EACH", "main")
# The emulator runs a launch of 512 waves or more in forked worker processes, one per core
# (runtime/emulator/core.py, VLPC_EMU_PROCS).  Under pytest-xdist the workers already keep every core
# busy, so the forks added their start-up and the merging of their results and no throughput
# (tests/timing/test_bench.py + test_energy.py with -n 2: 48.4 CPU-s, 44.6 with one process).  A
# worker runs launches in its own process (a value in the environment is kept); the tests of the
# forked path ask for worker processes themselves (test_emu_lds_hw.py, test_split_k.py).
if _WORKER:
    os.environ.setdefault("VLPC_EMU_PROCS", "1")


# Bytecode: with PYTHONDONTWRITEBYTECODE set (and no PYTHONPYCACHEPREFIX of the user's) every Python
# process the suite starts (its pytest-xdist workers, each `python -m vlpc.cli ...`, `lit` or nested
# pytest subprocess) would compile vlpc's modules from source again, and pytest would rewrite and
# compile every test module in each worker: 0.1 to 0.7 CPU-s per `vlpc` process (a `vlpc run` imports
# the emulator and the timing model), 5 per worker's collection.  (lit passes neither variable to its
# RUN lines, which write __pycache__ as they did.)  The suite keeps its processes' bytecode in a
# folder of pytest's cache instead (`.pytest_cache/d/bytecode`: never beside the sources; a temporary
# folder, deleted at the end, under `-p no:cacheprovider`), through PYTHONPYCACHEPREFIX (Python's
# bytecode-cache prefix; the files are validated against their source's size and modification time
# as in __pycache__), set before the workers start.
_OWN_BYTECODE_DIR: list[str] = []


def pytest_configure(config):
    if _WORKER or not sys.dont_write_bytecode or os.environ.get("PYTHONPYCACHEPREFIX"):
        return  # (a worker inherits the controller's setting)
    cache = getattr(config, "cache", None)
    if cache is not None:
        prefix = str(cache.mkdir("bytecode"))
    else:
        prefix = tempfile.mkdtemp(prefix="vlpc-test-bytecode-")
        _OWN_BYTECODE_DIR.append(prefix)
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.pycache_prefix = prefix  # (this process's own later imports too)
    sys.dont_write_bytecode = False


def pytest_sessionfinish(session, exitstatus):
    for d in _OWN_BYTECODE_DIR:
        shutil.rmtree(d, ignore_errors=True)
    if _CACHE_DIR != _INHERITED:  # (a worker leaves the shared cache to the controller)
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)


# pytest-xdist's scheduling: --dist worksteal when -n is given without --dist (each worker starts on
# a contiguous share of the tests, so a file's module fixtures and kernels are built once, and an
# idle worker takes pending tests from a busy one).  Set here rather than in pyproject's addopts,
# where it made `pytest -p no:xdist` an error (no such option without the plugin).  This runs
# before xdist's own pytest_cmdline_main, which would turn "-n N without --dist" into "load".
@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    if not config.pluginmanager.hasplugin("xdist") or getattr(config.option, "dist", "no") != "no":
        return
    if getattr(config.option, "numprocesses", None) and not _dist_given(config):
        config.option.dist = "worksteal"


def _dist_given(config) -> bool:
    """Whether the command line (or PYTEST_ADDOPTS, or the ini addopts) names a --dist mode."""
    args = list(config.invocation_params.args) + os.environ.get("PYTEST_ADDOPTS", "").split()
    args += config.getini("addopts")
    return any(a == "--dist" or a.startswith("--dist=") or a in ("-d", "--distload") for a in args)


# The shared kernel cache holds what vlpc compiles.  A test that patches vlpc (or xDSL) with
# monkeypatch.setattr may change what a compile builds (a pass switched off, a plan constant or
# chooser replaced): from that patch on, the test compiles into a private, empty cache of its own
# (VLPC_CACHE_DIR: a temporary folder, for its subprocesses too), so the shared cache never
# receives a kernel of patched code and the test never takes one of unpatched code.  Patches of
# the modules that run, check, report or tune kernels but never shape one (_NOT_COMPILING, e.g. a
# device wrapper that corrupts downloads), of other packages (os, sys, builtins) and environment
# variables keep the shared cache; a test that set VLPC_CACHE_DIR itself keeps its own.  Any
# patch of vlpc also empties the emulator's in-process program cache, at the patch and at the end
# of the test.
_PATCHED_PACKAGES = ("vlpc", "xdsl")
_NOT_COMPILING = ("vlpc.runtime", "vlpc.runtime.device", "vlpc.runtime.emulator", "vlpc.runtime.hip",
                  "vlpc.api", "vlpc.run", "vlpc.verify", "vlpc.report", "vlpc.energy_report", "vlpc.tune",
                  "vlpc.cli_support")


def _compiles(module: str) -> bool:
    """Whether a patch of ``module`` (a dotted name) may change what vlpc compiles."""
    if module.split(".")[0] not in _PATCHED_PACKAGES:
        return False
    # (the package vlpc.runtime itself, e.g. its get_device, but not vlpc.runtime.toolchain)
    return not any(module == m or (m != "vlpc.runtime" and module.startswith(m + ".")) for m in _NOT_COMPILING)


def _module_of(target) -> str:
    import types

    if isinstance(target, str):  # monkeypatch.setattr("pkg.mod.attr", value)
        return target
    if isinstance(target, types.ModuleType):
        return target.__name__
    if isinstance(target, type):
        return target.__module__ or ""
    return type(target).__module__ or ""


@pytest.fixture
def monkeypatch(monkeypatch, tmp_path_factory):
    """pytest's monkeypatch; its ``setattr`` on a vlpc or xDSL module, class or object that may
    shape a compile also gives the test a private kernel cache (see above)."""
    real_setattr = monkeypatch.setattr
    private, patched = [], []

    def setattr(target, *args, **kwargs):
        module = _module_of(target)
        if module.split(".")[0] == "vlpc":
            patched.append(True)
            _forget_emulator_programs()
        if _compiles(module) and not private and os.environ.get("VLPC_CACHE_DIR") == _CACHE_DIR:
            private.append(tmp_path_factory.mktemp("private-kernel-cache"))
            monkeypatch.setenv("VLPC_CACHE_DIR", str(private[0]))
        return real_setattr(target, *args, **kwargs)

    monkeypatch.setattr = setattr
    monkeypatch.private_kernel_cache = private  # (tests/docs/test_suite_settings.py)
    yield monkeypatch
    if patched:  # (before pytest's monkeypatch undoes the patches: nothing runs in between)
        _forget_emulator_programs()


def _forget_emulator_programs():
    """Empty the emulator's program cache (compiled instructions kept across launches,
    runtime/emulator/core.py): a patched instruction builder must neither find closures built
    before the patch nor leave its own to later tests."""
    core = sys.modules.get("vlpc.runtime.emulator.core")
    clear = getattr(core, "clear_program_cache", None)
    if clear is not None:
        clear()


def gfx906_device_or_skip():
    """A HIP device that is a gfx906, or a pytest skip saying why there is none."""
    try:
        from vlpc.runtime.hip import HipDevice, hip_available
    except Exception as e:  # noqa: BLE001 - the optional HIP extra may be missing or broken
        pytest.skip(f"HIP device code unavailable: {e}")
    ok, why = hip_available()
    if not ok:
        pytest.skip(f"no gfx906 through HIP: {why}")
    dev = HipDevice()
    if dev.target_id.target.name != "gfx906":
        dev.close()
        pytest.skip(f"HIP device is {dev.target_id}, not a gfx906")
    return dev
