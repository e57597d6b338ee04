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
from vlpc.runtime.device import LaunchError
from vlpc.runtime.selection import get_device

DATA = Path(__file__).parents[1] / "data" / "hip"

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


# -- timing, plans, limits, the module image, vlpc doctor --------------------------------------


def test_batched_timing_is_device_time(gpu):
    """A short kernel: events around one launch also count the host's launch call, events
    around 50 back-to-back launches count it once per batch, so the batch's per-launch median
    is not above the single launches' median."""
    co = load_code_object(DATA / "saxpy.hsaco")
    n = 4096
    x = gpu.upload(np.ones(n, np.float32))
    y = gpu.upload(np.zeros(n, np.float32))
    args = [np.int32(n), np.float32(0.0), x, y]
    single = gpu.launch(co, "saxpy", grid=n // 256, block=256, args=args, iterations=20, warmup=5,
                        back_to_back=1)
    batched = gpu.launch(co, "saxpy", grid=n // 256, block=256, args=args, iterations=20, warmup=5,
                         back_to_back=50)
    assert batched.back_to_back == 50 and len(batched.kernel_ms) == 20
    assert all(t > 0 for t in batched.kernel_ms + single.kernel_ms)
    assert batched.kernel_ms_min <= batched.kernel_ms_median <= max(batched.kernel_ms)
    assert batched.kernel_ms_median <= single.kernel_ms_median * 1.05, (batched.summary(), single.summary())
    np.testing.assert_array_equal(gpu.download(y, np.float32, (n,)), np.zeros(n, np.float32))
    gpu.free(x)
    gpu.free(y)


def test_split_plan_timed_whole_and_per_kernel(gpu):
    """A split-K SGEMM (main kernel + reduce) through CompiledKernel.execute: C is right after
    the timed repetitions (beta = 0), and the per-kernel times add up to the plan's."""
    import vlpc

    m, n, k = 64, 256, 4096
    text = f"""
func.func @g(%a: memref<{m}x{k}xf32>, %b: memref<{n}x{k}xf32>, %c: memref<{m}x{n}xf32>) {{
  %alpha = arith.constant 1.0 : f32
  %beta = arith.constant 0.0 : f32
  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "NT"}} : memref<{m}x{k}xf32>, memref<{n}x{k}xf32>, memref<{m}x{n}xf32>, f32, f32
  return
}}
"""
    kern = vlpc.compile(text, split_k=4).kernel()
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k)).astype(np.float32)
    bufs = [gpu.upload(a), gpu.upload(b), gpu.upload(np.full((m, n), np.nan, np.float32))]
    args = [*bufs, *(np.int32(v) for v in (m, n, k, k, k, n)), np.float32(1), np.float32(0)]
    st = kern.execute(gpu, load_code_object(kern.code_object), args, m, n, k, n, iterations=5, warmup=2)
    assert [s.kernel_name for s in st.kernels] == ["g", "g_reduce"] and len(st.kernel_ms) == 5
    for i in range(5):
        parts = sum(s.kernel_ms[i] for s in st.kernels)
        assert parts == pytest.approx(st.kernel_ms[i], rel=1e-3, abs=2e-3)
    c = gpu.download(bufs[2], np.float32, (m, n))
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3 * np.sqrt(k))
    for buf in bufs:
        gpu.free(buf)


def test_launch_over_hip_limits_is_refused_before_the_call(gpu):
    from vlpc.runtime.hip import HipLaunchLimitError

    co = load_code_object(DATA / "saxpy.hsaco")
    buf = gpu.alloc(64)
    with pytest.raises(HipLaunchLimitError, match="gridDimY <= 65536"):
        gpu.launch(co, "saxpy", grid=(1, 65537), block=64, args=[np.int32(16), np.float32(1), buf, buf])
    gpu.launch(co, "saxpy", grid=1, block=64, args=[np.int32(16), np.float32(1), buf, buf])  # still usable
    gpu.free(buf)


def test_module_images_live_with_their_modules(gpu):
    gpu.launch(DATA / "saxpy.hsaco", "saxpy", grid=1, block=64,
               args=[np.int32(0), np.float32(1), 0, 0])
    assert set(gpu._images) == set(gpu._modules)
    data = (DATA / "saxpy.hsaco").read_bytes()
    assert any(img.tobytes() == data for img in gpu._images.values())


def test_doctor_finds_the_gpu(gpu):
    from vlpc.doctor import diagnose

    rep = diagnose()
    assert rep.usable, rep.text()
    assert any(d["runs_vlpc"] and d["gcn_arch_name"].startswith("gfx906") for d in rep.devices)
    assert rep.runtime_version and rep.runtime_version.split(".")[0] in ("5", "6", "7")
