"""The HIP device on a real gfx906 (MI50/MI60).  Every test here is marked
``gfx906`` and skips, with the reason, unless hip-python, a HIP runtime and a
gfx906 GPU are all present.  Run them alone with ``pytest -m gfx906``.

The foreign-kernel cases of ``test_foreign_kernels.py`` also run on the GPU
when one is present (their ``hip`` parameter carries the same mark).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import gfx906_device_or_skip

from vlpc.errors import DeviceError
from vlpc.runtime.code_object import load_code_object
from vlpc.runtime.device import LaunchError, get_device

DATA = Path(__file__).parent / "data" / "hip"

pytestmark = pytest.mark.gfx906


@pytest.fixture(scope="module")
def gpu():
    dev = gfx906_device_or_skip()
    yield dev
    dev.close()


def test_properties_and_target_id(gpu):
    p = gpu.properties
    assert gpu.target_id.target.name == "gfx906"
    assert p.gcn_arch_name.startswith("gfx906")
    assert str(gpu.target_id) == str(load_code_object(DATA / "saxpy.hsaco").target_id) or \
        load_code_object(DATA / "saxpy.hsaco").target_id.compatible_with(gpu.target_id)
    assert p.compute_units in (60, 64), p
    assert p.warp_size == 64 and p.max_threads_per_block >= 1024
    text = gpu.describe()
    assert "gfx906" in text and "\n" not in text


def test_memory_round_trip(gpu):
    x = np.random.default_rng(0).standard_normal((37, 41)).astype(np.float32)
    buf = gpu.upload(x)
    np.testing.assert_array_equal(gpu.download(buf), x)
    z = gpu.alloc(1000)
    assert not gpu.download(z, np.uint8).any()
    gpu.write(z, np.arange(10, dtype=np.int32), offset=8)
    np.testing.assert_array_equal(gpu.download(z, np.int32, (12,)), [0, 0, *range(10)])
    gpu.free(buf)
    gpu.free(z)


def test_launch_timing_and_module_cache(gpu):
    co = load_code_object(DATA / "grid2d.hsaco")
    rows, cols = 512, 384
    a = np.random.default_rng(1).standard_normal((rows, cols)).astype(np.float32)
    out = gpu.alloc(a.nbytes)
    args = [gpu.upload(a), out, np.int32(rows), np.int32(cols)]
    stats = gpu.launch(co, "transpose_naive", grid=(cols // 16, rows // 16), block=(16, 16),
                       args=args, iterations=5, warmup=2)
    assert len(stats.kernel_ms) == 5 and all(t > 0 for t in stats.kernel_ms)
    assert stats.kernel_ms_mean > 0
    np.testing.assert_array_equal(gpu.download(out, np.float32, (cols, rows)), a.T)
    modules = len(gpu._modules)
    gpu.launch(load_code_object((DATA / "grid2d.hsaco").read_bytes()), "add2d", grid=(1, 1),
               block=(8, 8), args=[args[0], args[0], out, np.int32(4), np.int32(4), np.int32(cols)])
    assert len(gpu._modules) == modules  # same bytes: the cached module


def test_mismatched_target_is_refused_before_launch(gpu):
    sramecc = gpu.target_id.settings.get("sramecc")
    if sramecc is None:
        pytest.skip(f"the device reports no sramecc setting ({gpu.target_id})")
    wrong = DATA / ("saxpy.sramecc-off.hsaco" if sramecc else "saxpy.sramecc-on.hsaco")
    right = DATA / ("saxpy.sramecc-on.hsaco" if sramecc else "saxpy.sramecc-off.hsaco")
    co = load_code_object(wrong)
    buf = gpu.alloc(64)
    with pytest.raises(LaunchError) as e:
        gpu.launch(co, "saxpy", grid=1, block=64, args=[np.int32(16), np.float32(1), buf, buf])
    assert str(co.target_id) in str(e.value) and str(gpu.target_id) in str(e.value)
    gpu.launch(load_code_object(right), "saxpy", grid=1, block=64,
               args=[np.int32(16), np.float32(1), buf, buf])


def test_hip_errors_are_named(gpu):
    from vlpc.runtime.hip import HipError

    with pytest.raises(HipError) as e:
        gpu.alloc(1 << 60)  # an exabyte: hipErrorOutOfMemory
    assert str(e.value).startswith("hipMalloc failed: hipError")
    assert f"({e.value.code})" in str(e.value) and e.value.call == "hipMalloc"


def test_auto_picks_the_gpu(gpu):
    dev = get_device("auto")
    try:
        assert dev.name == "hip", dev.selection_reason
    finally:
        close = getattr(dev, "close", None)
        if close:
            close()


def test_hip_device_unavailable_message_is_one_line_even_here():
    """get_device("hip", index=99) fails with a one-line DeviceError."""
    ok = False
    try:
        from vlpc.runtime.hip import hip_available

        ok, _ = hip_available()
    except Exception:  # noqa: BLE001
        pass
    if not ok:
        pytest.skip("no HIP device")
    with pytest.raises(DeviceError) as e:
        get_device("hip", index=99)
    assert "\n" not in str(e.value) and "does not exist" in str(e.value)
