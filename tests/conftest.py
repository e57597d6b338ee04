"""Test-session settings.

The repository keeps the driver in ./vlpc while dialects/, passes/ and runtime/
install into the vlpc package; a Python started with the repository root as its
working directory would find ./vlpc first and miss vlpc.dialects.  Subprocesses the
tests start therefore run with PYTHONSAFEPATH=1 (no current directory on sys.path),
so they use the installed package, as a user's would.
"""

import os
import shutil
import tempfile

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
# The IR is verified after every pass in the tests (the compiler's default: once, at the end);
# VLPC_VERIFY_EACH=0 in the environment turns that off for a quicker local run (CI keeps it on).
os.environ.setdefault("VLPC_VERIFY_EACH", "1")


def pytest_sessionfinish(session, exitstatus):
    if _CACHE_DIR != _INHERITED:  # (a worker leaves the shared cache to the controller)
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)


def gfx906_device_or_skip():
    """A HIP device that is a gfx906, or a pytest skip saying why there is none."""
    import pytest

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
