"""vlpc.runtime.device / EmulatorDevice: memory API, launch checks, get_device and
end-to-end launches on the emulator."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

import numpy as np
import pytest

import vlpc.runtime
from test_runtime_support import build
from vlpc.errors import DeviceError
from vlpc.runtime import Buffer, Device, LaunchError, get_device, load_code_object, pack_kernargs
from vlpc.runtime.kernargs import HiddenValues, LaunchGeometry
from vlpc.runtime.toolchain import assemble_and_link

HIP_DATA = Path(__file__).parents[1] / "data" / "hip"
HAVE_CORE = importlib.util.find_spec("vlpc.runtime.emulator.core") is not None
needs_core = pytest.mark.skipif(not HAVE_CORE, reason="emulator core (runtime/emulator/core.py) "
                                "has not landed yet")


@pytest.fixture
def dev():
    return get_device("emulator", strict=True)


@pytest.fixture(scope="module")
def vadd_co():
    return load_code_object(build("vadd"))


@pytest.fixture(scope="module")
def geometry_co():
    return load_code_object(build("geometry"))


# -- memory -------------------------------------------------------------------------------


def test_upload_download_free(dev):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    buf = dev.upload(x)
    assert isinstance(buf, Buffer) and buf.device is dev and buf.nbytes == 96
    assert buf.address >= 2**32  # the emulator's addresses need all 64 bits
    np.testing.assert_array_equal(dev.download(buf), x)  # dtype/shape remembered
    np.testing.assert_array_equal(dev.download(buf, np.float32, (2, 12)), x.reshape(2, 12))
    np.testing.assert_array_equal(dev.download(buf, np.uint32, 3), x.reshape(-1)[:3].view(np.uint32))
    with pytest.raises(DeviceError, match="needs 400 bytes; the buffer has 96"):
        dev.download(buf, np.float32, 100)
    z = dev.alloc(64)
    assert not dev.download(z, np.uint8).any()  # zero-filled
    dev.write(z, np.array([7], np.int32), offset=4)
    assert dev.download(z, np.int32, 2).tolist() == [0, 7]
    dev.free(buf)
    with pytest.raises(DeviceError, match="freed buffer"):
        dev.free(buf)
    with pytest.raises(DeviceError, match="freed buffer"):
        dev.download(buf)
    other = get_device("emulator")
    with pytest.raises(DeviceError, match="buffer of device 'emulator'"):
        other.download(z)
    empty = dev.alloc(0)
    assert empty.nbytes == 0 and dev.download(empty, np.float32).shape == (0,)


def test_describe_and_target(dev):
    assert dev.name == "emulator" and str(dev.target_id) == "gfx906"
    assert "emulator" in dev.describe()
    d2 = get_device("emulator", target="gfx906:sramecc+", strict=True, instruction_budget=1000)
    assert str(d2.target_id) == "gfx906:sramecc+" and d2.strict and d2.instruction_budget == 1000
    with pytest.raises(DeviceError, match="unknown target"):
        get_device("emulator", target="gfx1100")


# -- selection ----------------------------------------------------------------------------


def test_get_device_names():
    with pytest.raises(DeviceError, match="unknown device 'cuda'"):
        get_device("cuda")
    assert get_device("emulator").selection_reason == "emulator requested"
    auto = get_device("auto")
    assert auto.name in ("emulator", "hip")
    assert auto.selection_reason.startswith("auto:")
    if auto.name == "emulator":
        assert "emulator" in auto.selection_reason
    assert get_device().name == auto.name  # "auto" is the default


def test_hip_unavailable_is_one_line():
    try:
        dev = get_device("hip")
    except DeviceError as e:
        msg = str(e)
        assert msg.startswith("HIP device unavailable: ") and "\n" not in msg
    else:  # a real GPU answered
        assert dev.name == "hip"


def test_hip_missing_module(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kw):
        if name == "vlpc.runtime.hip":
            err = ModuleNotFoundError("No module named 'vlpc.runtime.hip'")
            err.name = "vlpc.runtime.hip"
            raise err
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(DeviceError, match="HIP device unavailable: vlpc.runtime.hip is not installed"):
        get_device("hip")
    auto = get_device("auto")
    assert auto.name == "emulator" and "HIP unavailable" in auto.selection_reason


def test_runtime_exports():
    for name in ("load_code_object", "get_device", "CodeObject", "Device", "Buffer", "pack_kernargs"):
        assert hasattr(vlpc.runtime, name)
    if HAVE_CORE:
        from vlpc.runtime.emulator.core import LaunchStats

        assert vlpc.runtime.LaunchStats is LaunchStats


# -- launch checks (all before anything runs) ------------------------------------------


class _Recorder(Device):
    """A device whose _run records the call: the checks are Device's."""

    name = "recorder"

    def __init__(self, target="gfx906"):
        super().__init__()
        from vlpc.targets import TargetId

        self.target_id = TargetId.parse(target)
        self.runs = []
        self._next = 0x1000

    def _alloc(self, nbytes):
        self._next += 0x1000
        return self._next, None

    def _free(self, address, handle):
        pass

    def _write(self, address, data):
        pass

    def _read(self, address, nbytes):
        return np.zeros(nbytes, np.uint8)

    def _run(self, co, kernel, launch, args):
        self.runs.append((kernel.name, launch, self.pack(kernel, args, launch)))
        return "ran"


def _vadd_args(d, n=64):
    return [d.alloc(4 * n), d.alloc(4 * n), d.alloc(4 * n), np.int32(n)]


def test_launch_checks(vadd_co):
    d = _Recorder()
    args = _vadd_args(d)
    assert d.launch(vadd_co, "vadd", grid=2, block=64, args=args) == "ran"
    name, launch, ka = d.runs[-1]
    assert launch.grid == (2, 1, 1) and launch.block == (64, 1, 1) and len(ka) == 288

    def refused(match, **kw):
        kw.setdefault("args", args)
        n = len(d.runs)
        with pytest.raises(LaunchError, match=match) as e:
            d.launch(kw.pop("co", vadd_co), kw.pop("kernel", "vadd"), **kw)
        assert "\n" not in str(e.value) and len(d.runs) == n  # nothing ran
        return e.value

    refused(r"kernel 'vad' not found .*available: vadd", kernel="vad")
    refused(r"block \(512, 1, 1\) has 512 work-items, over the kernel's "
            r".max_flat_workgroup_size of 256", block=512)
    refused("block dimension y is 0", block=(64, 0, 1))
    refused("grid dimension x is -1", grid=(-1, 1, 1))
    refused("grid must have 1 to 3 dimensions", grid=(1, 1, 1, 1))
    refused(r"grid dimension x is 67108864 x 64 = 4294967296 work-items, over 4294967295",
            grid=(2**26, 1, 1), block=64)
    refused(r"needs 65600 bytes of LDS \(0 static \+ 65600 dynamic\)", dynamic_lds=65600)
    refused("dynamic LDS size -1 is negative", dynamic_lds=-1)
    refused("takes 4 arguments", args=args[:3])
    refused("argument 'n': float32 given for int", args=args[:3] + [np.float32(1)])
    other = get_device("emulator")
    refused("argument 1 'b' of 'vadd' is a buffer of device 'emulator', not of this recorder",
            args=[args[0], other.alloc(4), args[2], 1])
    gone = d.alloc(8)
    d.free(gone)
    refused("argument 2 'c' of 'vadd' is a freed buffer", args=[args[0], args[1], gone, 1])
    refused(r"argument 0 'a' of 'vadd': buffer has 256 bytes, the launch needs 1024",
            buffer_sizes={"a": 1024})
    refused("buffer_sizes names argument 'q'", buffer_sizes={"q": 4})
    d.launch(vadd_co, "vadd", grid=1, block=64, args=args, buffer_sizes={0: 256, "c": 256})
    # the hardware limit applies to kernels that allow more
    geometry = load_code_object(build("geometry"))
    out = d.alloc(64)
    e = refused("over the hardware limit of 1024", co=geometry, kernel="geometry",
                block=(32, 33, 1), args=[out])
    assert "geometry" in str(e)
    d.launch(build("geometry"), "geometry", grid=(1, 1, 1), block=(32, 32, 1), args=[out])
    assert geometry.kernel("geometry").metadata.max_flat_workgroup_size == 1024


def test_target_mismatch_names_both_ids(vadd_co):
    from test_runtime_support import SOURCES

    text = SOURCES["empty"]().replace("amdgcn-amd-amdhsa--gfx906", "amdgcn-amd-amdhsa--gfx906:sramecc+")
    co = load_code_object(assemble_and_link(text, "gfx906:sramecc+"))
    d = _Recorder("gfx906:sramecc-")
    with pytest.raises(LaunchError, match=r"is for gfx906:sramecc\+, which cannot run on this "
                                          r"recorder device \(gfx906:sramecc-\)"):
        d.launch(co, "empty", grid=1, block=64)
    assert d.runs == []
    _Recorder("gfx906").launch(co, "empty", grid=1, block=64)  # "any" device: fine
    assert vadd_co.target_id.compatible_with(d.target_id)  # "any" code runs anywhere


def test_bad_code_object_is_a_launch_error():
    with pytest.raises(LaunchError, match="not an ELF"):
        _Recorder().launch(b"nope", "k")


# -- end to end on the emulator ------------------------------------------------------------


@needs_core
@pytest.mark.parametrize("n,block", [(1000, 64), (256, 256), (77, 128)])
def test_vadd_end_to_end(dev, vadd_co, n, block):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    # pad the output so out-of-bounds writes past n would be visible
    sentinel = np.full(n + 64, -7.0, np.float32)
    da, db, dc = dev.upload(a), dev.upload(b), dev.upload(sentinel)
    grid = -(-n // block)
    live_before = len(dev.memory.allocations())
    stats = dev.launch(vadd_co, "vadd", grid=(grid, 1, 1), block=(block, 1, 1),
                       args=[da, db, dc, np.int32(n)])
    assert stats is not None
    out = dev.download(dc)
    np.testing.assert_array_equal(out[:n], a + b)
    assert (out[n:] == -7.0).all()  # the bounds check held
    # kernargs, packet and queue were freed; the code image stays loaded (cached)
    assert len(dev.memory.allocations()) == live_before + (1 if live_before == 3 else 0)
    dev.launch(vadd_co, "vadd", grid=grid, block=block, args=[da, db, dc, n])
    assert len(dev.memory.allocations()) == live_before + (1 if live_before == 3 else 0)


@needs_core
def test_geometry_from_dispatch_packet_and_hidden_args(dev, geometry_co):
    grid, block = (3, 2, 1), (16, 4, 1)
    out = dev.alloc(8 * 4 * 6)
    dev.launch(geometry_co, "geometry", grid=grid, block=block, args=[out])
    rows = dev.download(out, np.uint32, (6, 8))
    for y in range(2):
        for x in range(3):
            row = rows[y * 3 + x]
            # packet workgroup_size_x/y/z, grid_size_x (work-items), setup (dims)
            assert row[:5].tolist() == [16, 4, 1, 48, 3]
            # hidden_block_count_x, hidden_group_size_x, workgroup id
            assert row[5:].tolist() == [3, 16, x + 1000 * y]


@needs_core
def test_launch_failure_frees_temporaries(dev, vadd_co):
    a = dev.alloc(16)  # far too small: the kernel faults on it
    live = {al.address for al in dev.memory.allocations()}
    with pytest.raises(DeviceError):
        dev.launch(vadd_co, "vadd", grid=1, block=64, args=[a, a, a, 64])
    after = {al.address for al in dev.memory.allocations()}
    assert after - live <= {dev._loaded[id(vadd_co)][1]}  # only the cached code image is new


def _hip_co(name):
    path = HIP_DATA / name
    assert path.is_file(), f"{path} is committed to the repository and missing (rebuild: tests/data/hip/build.sh)"
    return load_code_object(path)


@needs_core
@pytest.mark.parametrize("name", ["saxpy.hsaco", "saxpy.v5.hsaco"])
def test_hipcc_saxpy_end_to_end(dev, name):
    """hipcc's saxpy reads blockDim from the dispatch packet (v4) or hidden args (v5)."""
    co = _hip_co(name)
    n = 1000
    x = np.linspace(-1, 1, n, dtype=np.float32)
    y = np.arange(n, dtype=np.float32)
    dx, dy = dev.upload(x), dev.upload(y)
    dev.launch(co, "saxpy", grid=(4, 1, 1), block=(256, 1, 1), args=[n, np.float32(2.5), dx, dy])
    np.testing.assert_allclose(dev.download(dy), np.float32(2.5) * x + y, rtol=1e-6)


@needs_core
@pytest.mark.parametrize("name", ["kernarg_dump.hsaco", "kernarg_dump.v5.hsaco"])
def test_kernarg_bytes_seen_by_kernel(dev, name):
    """The kernel copies its own kernarg segment out: it must equal the shared packer's
    bytes (hidden_queue_ptr aside, which points at the per-launch queue)."""
    co = _hip_co(name)
    k = co.kernel("dump_kernargs")
    size = k.metadata.kernarg_segment_size
    nd = size // 4
    out = dev.alloc(4 * nd)
    args = [out, nd, 1.5, 2.25, 2**40 + 3, -2, 65]
    dev.launch(co, "dump_kernargs", grid=(2, 1, 1), block=(max(64, nd), 1, 1), args=args)
    seen = dev.download(out, np.uint8, 4 * nd).tobytes()
    expected = pack_kernargs(k, args, LaunchGeometry((2, 1, 1), (max(64, nd), 1, 1)),
                             hidden=HiddenValues())
    qp = [a for a in k.metadata.hidden_args if a.value_kind == "hidden_queue_ptr"]
    for a in qp:  # the queue lives at a per-launch address
        assert int.from_bytes(seen[a.offset:a.offset + 8], "little") != 0
        seen = seen[:a.offset] + bytes(8) + seen[a.offset + 8:]
    assert seen == expected[:4 * nd]
    assert struct.unpack_from("<f", seen, 12)[0] == 1.5


# -- EmulatorDevice plumbing against a stand-in core (runs with or without the real one) ---


def _fake_core(monkeypatch, seen):
    """Install a stand-in ``vlpc.runtime.emulator.core`` (the real DispatchConfig) whose
    run_dispatch records the config and what memory holds at its pointers."""
    import sys
    import types
    from dataclasses import dataclass

    import vlpc.runtime.emulator as emu_pkg

    from vlpc.runtime.emulator.core import DispatchConfig  # the real interface the device fills in

    @dataclass
    class LaunchStats:
        instructions: int = 0

    def run_dispatch(memory, cfg):
        seen["cfg"] = cfg
        seen["code"] = memory.read(cfg.code_address, len(cfg.code)).tobytes()
        seen["packet"] = memory.read(cfg.dispatch_ptr, 64).tobytes()
        seen["queue"] = memory.read(cfg.queue_ptr, 256).tobytes()
        seen["live"] = {a.address for a in memory.allocations()}
        n = seen.get("kernarg_size", 0)
        seen["kernargs"] = memory.read(cfg.kernarg_address, n).tobytes() if n else b""
        if seen.get("fail"):
            raise DeviceError("stand-in fault")
        return LaunchStats(42)

    fake = types.ModuleType("vlpc.runtime.emulator.core")
    fake.DispatchConfig, fake.LaunchStats, fake.run_dispatch = DispatchConfig, LaunchStats, run_dispatch
    monkeypatch.setitem(sys.modules, "vlpc.runtime.emulator.core", fake)
    monkeypatch.setattr(emu_pkg, "core", fake, raising=False)
    return fake


def test_emulator_device_builds_dispatch(monkeypatch, geometry_co):
    from vlpc.runtime.kernargs import DispatchPacket

    seen = {}
    _fake_core(monkeypatch, seen)
    dev = get_device("emulator", strict=True, instruction_budget=1234, max_waves_in_flight=3)
    out = dev.alloc(256)
    k = geometry_co.kernel("geometry")
    seen["kernarg_size"] = k.metadata.kernarg_segment_size
    stats = dev.launch(geometry_co, "geometry", grid=(3, 2, 1), block=(16, 4, 1), args=[out],
                       dynamic_lds=1024)
    assert stats.instructions == 42
    cfg = seen["cfg"]
    base = cfg.code_address
    assert base % geometry_co.load_alignment == 0
    assert seen["code"] == cfg.code == geometry_co.load_image(base)
    assert cfg.entry_address == base + k.entry_offset and cfg.kernel_name == "geometry"
    assert (cfg.grid, cfg.block) == ((3, 2, 1), (16, 4, 1))
    assert cfg.user_sgpr_dispatch_ptr and cfg.user_sgpr_kernarg_segment_ptr
    assert not cfg.user_sgpr_queue_ptr and not cfg.user_sgpr_private_segment_buffer
    assert cfg.user_sgpr_count == 4
    assert cfg.sgpr_workgroup_id_x and cfg.sgpr_workgroup_id_y and not cfg.sgpr_workgroup_id_z
    assert cfg.vgpr_workitem_id == 1 and cfg.vgpr_count == 12
    assert cfg.sgpr_count == k.descriptor.sgpr_count
    assert cfg.lds_bytes == 512 + 1024
    assert cfg.strict and cfg.instruction_budget == 1234 and cfg.max_waves_in_flight == 3
    packet = DispatchPacket.unpack(seen["packet"])
    assert packet.workgroup_size == (16, 4, 1) and packet.grid_size == (48, 8, 1)
    assert packet.kernel_object == base + k.descriptor_offset
    assert packet.kernarg_address == cfg.kernarg_address
    assert packet.group_segment_size == 1536 and packet.dimensions == 3
    assert int.from_bytes(seen["queue"][8:16], "little") == cfg.dispatch_ptr  # ring base
    expected = pack_kernargs(k, [out], LaunchGeometry((3, 2, 1), (16, 4, 1), 1024),
                             hidden=HiddenValues(queue_ptr=cfg.queue_ptr))
    assert seen["kernargs"] == expected
    # temporaries are gone, the image stays cached for the next launch
    live = {a.address for a in dev.memory.allocations()}
    assert cfg.kernarg_address not in live and cfg.dispatch_ptr not in live
    assert cfg.queue_ptr not in live and base in live
    dev.launch(geometry_co, "geometry", grid=1, block=64, args=[out])
    assert seen["cfg"].code_address == base
    assert {a.address for a in dev.memory.allocations()} == live


def test_emulator_device_frees_on_fault(monkeypatch, vadd_co):
    seen = {"fail": True}
    _fake_core(monkeypatch, seen)
    dev = get_device("emulator")
    a = dev.alloc(64)
    with pytest.raises(DeviceError, match="stand-in fault"):
        dev.launch(vadd_co, "vadd", grid=1, block=64, args=[a, a, a, 16])
    cfg = seen["cfg"]
    assert {cfg.kernarg_address, cfg.dispatch_ptr, cfg.queue_ptr} <= seen["live"]
    live = {x.address for x in dev.memory.allocations()}
    assert live == {a.address, cfg.code_address}
    dev.unload(vadd_co)
    assert {x.address for x in dev.memory.allocations()} == {a.address}


def test_auto_picks_an_available_hip_even_with_timing_model_options(monkeypatch):
    """`vlpc bench --device auto` passes the timing model's options (board, clock, CUs,
    timing-only); a GPU that answers must still be chosen, and say what it ignored."""
    import functools

    import vlpc.runtime.hip as hip_mod
    from test_hip_device import FakeHip

    monkeypatch.setattr(hip_mod, "HipDevice", functools.partial(hip_mod.HipDevice, _hip=FakeHip()))
    dev = get_device("auto", target="gfx906", gpu="mi50", clock_mhz=1500.0, cus=60, timing_only=True)
    assert dev.name == "hip", dev.selection_reason
    assert dev.selection_reason.startswith("auto: HIP device gfx906")
    assert "clock_mhz, cus, gpu, timing_only ignored" in dev.selection_reason
    # the HIP device itself takes them too (and ignores them), as it does the emulator's checks
    assert hip_mod.HipDevice(gpu="mi60", clock_mhz=1700.0, strict=True).name == "hip"
    # an emulator-only mode it cannot honour still keeps the emulator, and says why
    dev = get_device("auto", target="gfx906", waitcnt="report")
    assert dev.name == "emulator" and "HIP unavailable" in dev.selection_reason and "waitcnt" in dev.selection_reason
