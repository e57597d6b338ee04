"""The HIP device without a GPU: availability probing, error reporting, the
argument buffer, and the whole launch path against a fake ``hip`` module.

What is installed decides which tests run; each one that needs something
absent skips with the reason:

* no hip-python: ``hip_available()`` is False ("hip-python is not installed");
* hip-python but no ``libamdhip64``: False ("... cannot be loaded");
* hip-python + Debian's ``libamdhip64-5`` (ROCm 5.2) and no GPU: the runtime
  loads and ``hipGetDeviceCount`` answers ``hipErrorNoDevice``.

Tests that need a real gfx906 are in ``test_hip_gfx906.py``.
"""

from __future__ import annotations

import ctypes
import enum
import importlib.util
import json
import os
import re
import struct
import subprocess
import sys
import textwrap
import types
import weakref
from pathlib import Path

import numpy as np
import pytest

from vlpc.errors import EXIT_DEVICE, DeviceError
from vlpc.runtime import hip as hipmod
from vlpc.runtime.code_object import load_code_object
from vlpc.runtime.device import LaunchError
from vlpc.runtime.selection import get_device
from vlpc.runtime.hip import (HIP_LAUNCH_PARAM_BUFFER_POINTER, HIP_LAUNCH_PARAM_BUFFER_SIZE,
                              HIP_LAUNCH_PARAM_END, HipDevice, HipError, hip_available,
                              hip_kernarg_buffer, hip_launch_extra, parse_gcn_arch_name)
from vlpc.runtime.kernargs import LaunchGeometry

DATA = Path(__file__).parents[1] / "data" / "hip"
HAVE_HIP_PYTHON = importlib.util.find_spec("hip") is not None


def _loadable(name: str) -> bool:
    try:
        ctypes.CDLL(name)
        return True
    except OSError:
        return False


HAVE_RUNTIME = any(_loadable(n) for n in ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"))
HAVE_DEBIAN_ROCM52 = _loadable("libamdhip64.so.5")


def _run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (module caches and loaded libraries start clean)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=full_env, timeout=120)


_PROBE = """
    import json, sys
    {prelude}
    from vlpc.runtime.hip import hip_available
    from vlpc.runtime.selection import get_device
    from vlpc.errors import DeviceError
    ok, reason = hip_available()
    try:
        get_device("hip")
        err = None
    except DeviceError as e:
        err = str(e)
    print(json.dumps({{"ok": ok, "reason": reason, "error": err}}))
"""

_BLOCK_HIP_PYTHON = """
    import importlib.abc
    class _NoHip(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "hip" or name.startswith("hip."):
                raise ImportError(f"No module named {name!r}")
            return None
    sys.meta_path.insert(0, _NoHip())
"""


def _probe(prelude: str = "", env: dict[str, str] | None = None) -> dict:
    proc = _run_python(_PROBE.format(prelude=textwrap.indent(textwrap.dedent(prelude), "    ").strip()),
                       env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, f"the probe printed more than its answer: {proc.stdout!r}"
    return json.loads(lines[0])


def _one_line(text: str) -> None:
    assert text and "\n" not in text, repr(text)


# -- availability --------------------------------------------------------------------------


def test_hip_available_returns_a_pair_and_never_raises():
    ok, reason = hip_available()
    assert isinstance(ok, bool)
    _one_line(reason)


def test_no_hip_python_is_reported_in_one_line():
    """hip-python hidden from the import system (works whether or not it is installed)."""
    r = _probe(_BLOCK_HIP_PYTHON)
    assert r["ok"] is False
    assert "hip-python is not installed" in r["reason"]
    assert "vlpc[hip]" in r["reason"]
    _one_line(r["error"])
    assert r["error"].startswith("HIP device unavailable: hip-python is not installed")


@pytest.mark.skipif(HAVE_HIP_PYTHON, reason="hip-python is installed (the simulated case above covers it)")
def test_no_hip_python_really_installed():
    ok, reason = hip_available()
    assert not ok and "hip-python is not installed" in reason
    with pytest.raises(DeviceError, match="hip-python is not installed") as e:
        get_device("hip")
    _one_line(str(e.value))


@pytest.mark.skipif(not HAVE_HIP_PYTHON, reason="needs hip-python (pip install 'vlpc[hip]')")
def test_runtime_library_that_cannot_be_loaded():
    r = _probe(env={"VLPC_HIP_LIBRARY": "/nonexistent/libamdhip64.so"})
    assert r["ok"] is False
    assert "VLPC_HIP_LIBRARY=/nonexistent/libamdhip64.so cannot be loaded" in r["reason"]
    _one_line(r["error"])
    assert r["error"].startswith("HIP device unavailable:")


@pytest.mark.skipif(not HAVE_HIP_PYTHON, reason="needs hip-python (pip install 'vlpc[hip]')")
def test_no_runtime_library_anywhere():
    """No library under any name hip-python or vlpc would try (simulated in a subprocess)."""
    prelude = """
        import vlpc.runtime.hip as h
        h._LIBRARY_NAMES = ("libamdhip64-not-here.so",)
    """
    r = _probe(prelude, env={"ROCM_PATH": "/nonexistent-rocm"})
    assert r["ok"] is False
    assert "the HIP runtime library libamdhip64.so cannot be loaded" in r["reason"]
    assert "libamdhip64-5" in r["reason"]  # says what to install
    _one_line(r["error"])


@pytest.mark.skipif(not HAVE_HIP_PYTHON or HAVE_RUNTIME,
                    reason="needs hip-python without any libamdhip64 on the machine")
def test_no_runtime_library_really_absent():
    ok, reason = hip_available()
    assert not ok and "cannot be loaded" in reason
    with pytest.raises(DeviceError, match="cannot be loaded"):
        get_device("hip")


@pytest.mark.skipif(not (HAVE_HIP_PYTHON and HAVE_DEBIAN_ROCM52),
                    reason="needs hip-python and Debian's libamdhip64-5 (ROCm 5.2)")
def test_debian_rocm52_runtime_loads_and_reports_no_device():
    """The runtime loads (also when only the soname libamdhip64.so.5 exists) and
    hipGetDeviceCount answers hipErrorNoDevice on a machine without an AMD GPU."""
    if _gpu_present():
        pytest.skip("this machine has an AMD GPU")
    for env in ({}, {"VLPC_HIP_LIBRARY": "libamdhip64.so.5"}):
        r = _probe(env=env)
        assert r["ok"] is False
        assert "hipErrorNoDevice (100)" in r["reason"], r
        assert "HIP 5.2" in r["reason"]
        _one_line(r["error"])
        assert "hipErrorNoDevice" in r["error"]
    with pytest.raises(DeviceError, match="no HIP device"):
        HipDevice()


def _gpu_present() -> bool:
    return os.path.exists("/dev/kfd")


@pytest.mark.skipif(not (HAVE_HIP_PYTHON and HAVE_RUNTIME), reason="needs hip-python and a HIP runtime")
def test_auto_falls_back_to_the_emulator_with_the_reason():
    if _gpu_present():
        pytest.skip("this machine has an AMD GPU")
    dev = get_device("auto")  # the emulator is part of vlpc: an error here is a failure
    assert dev.name == "emulator"
    assert "HIP unavailable" in dev.selection_reason


# -- errors --------------------------------------------------------------------------------


def test_hip_error_names_call_status_and_code():
    e = HipError("hipModuleLoadData", 209, "hipErrorNoBinaryForGpu", "no kernel image is available")
    assert isinstance(e, DeviceError) and e.exit_code == EXIT_DEVICE
    assert str(e) == ("hipModuleLoadData failed: hipErrorNoBinaryForGpu (209): "
                      "no kernel image is available")
    assert (e.call, e.code, e.status_name) == ("hipModuleLoadData", 209, "hipErrorNoBinaryForGpu")
    # ROCm 5.2's hipGetErrorString answers with the name itself: not repeated
    assert str(HipError("hipMalloc", 2, "hipErrorOutOfMemory", "hipErrorOutOfMemory")) == \
        "hipMalloc failed: hipErrorOutOfMemory (2)"


def test_call_turns_statuses_into_hip_errors():
    fake = FakeHip()
    fake.fail["hipMalloc"] = FakeHip.hipError_t.hipErrorOutOfMemory
    with pytest.raises(HipError) as e:
        hipmod._call(fake, "hipMalloc", 64)
    assert str(e.value).startswith("hipMalloc failed: hipErrorOutOfMemory (2)")


def test_missing_runtime_symbol_is_a_device_error_not_a_crash():
    """hip-python raises RuntimeError when the runtime lacks a symbol it binds
    (hip-python >= 6 binds hipGetDevicePropertiesR0600, ROCm 5.2 has no such symbol)."""
    fake = FakeHip()

    def missing(*a):
        raise RuntimeError("failed to dlsym 'b'hipGetDevicePropertiesR0600'': undefined symbol")

    fake.hipGetDeviceProperties = missing
    with pytest.raises(DeviceError) as e:
        hipmod._call(fake, "hipGetDeviceProperties", object(), 0)
    assert "lacks a symbol" in str(e.value) and "hipGetDevicePropertiesR0600" in str(e.value)
    _one_line(str(e.value))


@pytest.mark.skipif(not (HAVE_HIP_PYTHON and HAVE_DEBIAN_ROCM52),
                    reason="needs hip-python and Debian's libamdhip64-5 (ROCm 5.2)")
def test_real_missing_symbol_on_rocm52():
    """hip-python's own hipGetDeviceProperties against ROCm 5.2: reported, not raised raw."""
    r = _run_python("""
        from vlpc.runtime import hip as h
        m = h._load()
        try:
            h._call(m.hip, "hipGetDeviceProperties", m.hip.hipDeviceProp_t(), 0)
            print("no error")
        except h.DeviceError as e:
            print("DeviceError:", e)
    """, env={"VLPC_HIP_LIBRARY": "libamdhip64.so.5"})
    assert r.returncode == 0, r.stderr
    out = r.stdout.strip()
    # hip-python >= 6 needs the R0600 symbol; an older runtime may also answer
    # hipErrorNoDevice/InvalidDevice first: either way a one-line DeviceError.
    assert out.startswith("DeviceError:"), out
    _one_line(out)


# -- target ids ----------------------------------------------------------------------------


def test_gcn_arch_name_parsing():
    assert str(parse_gcn_arch_name("gfx906:sramecc+:xnack-")) == "gfx906:sramecc+:xnack-"
    assert str(parse_gcn_arch_name(b"gfx906:xnack-:sramecc+\0\0\0garbage")) == "gfx906:sramecc+:xnack-"
    assert str(parse_gcn_arch_name("gfx906")) == "gfx906"
    with pytest.raises(DeviceError, match="'gfx1100' is not supported"):
        parse_gcn_arch_name("gfx1100")


def test_legacy_properties_layout_finds_the_arch_name(tmp_path):
    """The ROCm 5 hipDeviceProp_t reader, fed a fake libamdhip64 built from C."""
    cc = _which("cc") or _which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build a fake libamdhip64")
    src = tmp_path / "fake.c"
    src.write_text(textwrap.dedent("""
        #include <string.h>
        int hipGetDeviceProperties(char* p, int dev) {
            if (dev != 0) return 101;
            strcpy(p, "AMD Instinct MI60");
            *(unsigned long long*)(p + 256) = 34342961152ULL;
            *(int*)(p + 276) = 64; *(int*)(p + 280) = 1024; *(int*)(p + 308) = 1800000;
            *(int*)(p + 336) = 64;
            strcpy(p + 396, "gfx906:sramecc+:xnack-");
            return 0;
        }
    """))
    lib = tmp_path / "libfakehip.so"
    subprocess.run([cc, "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    p = hipmod._properties_legacy(str(lib), 0, "5.2.0")
    assert (p.name, p.gcn_arch_name, p.compute_units, p.clock_khz, p.warp_size) == \
        ("AMD Instinct MI60", "gfx906:sramecc+:xnack-", 64, 1800000, 64)
    assert p.total_memory == 34342961152
    with pytest.raises(HipError, match=r"hipGetDeviceProperties failed: .*\(101\)"):
        hipmod._properties_legacy(str(lib), 1, "5.2.0")


def _which(name: str) -> str | None:
    import shutil

    return shutil.which(name)


# -- the argument buffer ---------------------------------------------------------------------


def test_launch_extra_layout_and_round_trip():
    payload = bytes(range(37))
    extra = hip_launch_extra(payload)
    arr = extra.array
    assert len(arr) == 5
    assert arr[0] == HIP_LAUNCH_PARAM_BUFFER_POINTER == 1
    assert arr[2] == HIP_LAUNCH_PARAM_BUFFER_SIZE == 2
    assert arr[4] == HIP_LAUNCH_PARAM_END == 3
    assert arr[1] % 16 == 0
    assert ctypes.c_size_t.from_address(arr[3]).value == 37
    assert extra.kernarg_bytes() == payload
    assert hip_launch_extra(b"").kernarg_bytes() == b""


def _kernel(name: str, file: str):
    co = load_code_object(DATA / file)
    return co, co.kernel(name)


def _hand_kernargs(k, explicit: list[bytes], grid, block) -> dict[int, bytes]:
    """The bytes a kernarg segment must hold, written out with struct: the explicit arguments
    in order at their metadata offsets, and the geometry hidden arguments of code object v5
    (block counts in workgroups, group sizes, remainders 0 for whole workgroups, global
    offsets 0).  Offset -> bytes; other hidden arguments are not included."""
    grid, block = (tuple(grid) + (1, 1))[:3], (tuple(block) + (1, 1))[:3]
    hidden = {f"hidden_block_count_{d}": struct.pack("<I", grid[i]) for i, d in enumerate("xyz")}
    hidden.update({f"hidden_group_size_{d}": struct.pack("<H", block[i]) for i, d in enumerate("xyz")})
    hidden.update({f"hidden_remainder_{d}": struct.pack("<H", 0) for d in "xyz"})
    hidden.update({f"hidden_global_offset_{d}": struct.pack("<Q", 0) for d in "xyz"})
    by_value = [a for a in k.metadata.args if not a.value_kind.startswith("hidden_")]
    assert len(by_value) == len(explicit)
    want = {a.offset: b for a, b in zip(by_value, explicit)}
    for a in by_value:
        assert len(want[a.offset]) == a.size, a
    want.update({a.offset: hidden[a.value_kind] for a in k.metadata.args if a.value_kind in hidden})
    return want


def _assert_holds(buf: bytes, want: dict[int, bytes]) -> None:
    for off, b in want.items():
        assert buf[off:off + len(b)] == b, f"kernarg bytes at offset {off}: {buf[off:off + len(b)]!r}, expected {b!r}"


@pytest.mark.parametrize("file", ["saxpy.hsaco", "saxpy.v5.hsaco"])
def test_hip_argument_buffer_holds_the_hand_packed_bytes(file):
    co, k = _kernel("saxpy", file)
    args = [np.int32(1000), np.float32(2.5), 0x7F00_0000_1000, 0x7F00_0000_2000]
    hip_bytes = hip_kernarg_buffer(k, args, (16,), (64,))
    _assert_holds(hip_bytes, _hand_kernargs(k, [struct.pack("<i", 1000), struct.pack("<f", 2.5),
                                                struct.pack("<Q", 0x7F00_0000_1000),
                                                struct.pack("<Q", 0x7F00_0000_2000)], (16,), (64,)))
    assert len(hip_bytes) == k.metadata.kernarg_segment_size
    assert struct.unpack_from("<ifQQ", hip_bytes, 0) == (1000, 2.5, 0x7F00_0000_1000, 0x7F00_0000_2000)
    if file.endswith(".v5.hsaco"):  # hidden_block_count_x and hidden_group_size_x follow
        kinds = {a.value_kind: a for a in k.metadata.args}
        off = kinds["hidden_block_count_x"].offset
        assert struct.unpack_from("<III", hip_bytes, off) == (16, 1, 1)
        off = kinds["hidden_group_size_x"].offset
        assert struct.unpack_from("<HHH", hip_bytes, off) == (64, 1, 1)
    # raw bytes pass through untouched
    assert hip_kernarg_buffer(k, hip_bytes, (16,), (64,)) == hip_bytes


def test_emulator_and_hip_pack_the_same_bytes():
    """Both devices' packing for the same launch: the emulator's Device.pack and
    the HIP path's hip_kernarg_buffer / the extra array HipDevice hands HIP, each against
    bytes written out with struct (not one packer against the other)."""
    emu = get_device("emulator")  # part of vlpc: an error here is a failure, not a skip
    co, k = _kernel("dump_kernargs", "kernarg_dump.v5.hsaco")
    out = emu.alloc(4096)
    args = [out, np.int32(70), np.float32(-1.5), np.float64(3.25), np.uint64(2**40 + 7),
            np.int16(-3), np.int8(9)]
    geo = LaunchGeometry((3, 2, 1), (128, 1, 1), 0)
    emu_bytes = emu.pack(k, args, geo)
    hip_bytes = hip_kernarg_buffer(k, [out.address, *args[1:]], (3, 2, 1), (128, 1, 1))
    want = _hand_kernargs(k, [struct.pack("<Q", out.address), struct.pack("<i", 70), struct.pack("<f", -1.5),
                              struct.pack("<d", 3.25), struct.pack("<Q", 2**40 + 7), struct.pack("<h", -3),
                              struct.pack("<b", 9)], (3, 2, 1), (128, 1, 1))
    assert len(want) == 7 + 12
    _assert_holds(emu_bytes, want)
    _assert_holds(hip_bytes, want)
    assert emu_bytes == hip_bytes
    assert hip_launch_extra(hip_bytes).kernarg_bytes() == emu_bytes


# -- HipDevice end to end against a fake hip module ------------------------------------------


class _FakeEvent:
    """A HIP event of the stand-in: the device time (ms) at which its marker completed."""

    def __init__(self):
        self.t: float | None = None
        self.destroyed = False


class FakeHip:
    """Enough of hip-python's ``hip.hip`` API for HipDevice, backed by host memory.

    ``launches`` records each hipModuleLaunchKernel call with the kernarg bytes
    read back from the ``extra`` array; ``run`` (if set) is called with that
    record so a test can emulate the kernel in NumPy.

    Time is modelled like one in-order HIP stream: every HIP call costs the host
    ``host_ms`` (a launch's command is queued at the end of its call); a kernel starts
    when it is queued and the device is free, and runs ``duration(record)`` ms (0.25 unless a
    test sets it); an event's marker completes when every command queued before it
    has.  hipEventElapsedTime answers the difference of two markers' times, so a
    timing loop that waits for the host between launches measures the host too.

    Like clr (``hip_fatbin.cpp``, ``make_copy=false``), hipModuleLoadData keeps only
    the image's address: it holds a weak reference (the image object must allow one)
    and checks at every launch and at hipModuleUnload that the image still lives and
    still holds the code object.
    """

    class hipError_t(enum.IntEnum):
        hipSuccess = 0
        hipErrorInvalidValue = 1
        hipErrorOutOfMemory = 2
        hipErrorNoDevice = 100
        hipErrorInvalidDevice = 101
        hipErrorInvalidImage = 200
        hipErrorNoBinaryForGpu = 209
        hipErrorNotFound = 500

    class hipMemcpyKind(enum.IntEnum):
        hipMemcpyHostToHost = 0
        hipMemcpyHostToDevice = 1
        hipMemcpyDeviceToHost = 2

    def __init__(self, arch: str = "gfx906:sramecc+:xnack-", count: int = 1):
        self.arch, self.count = arch, count
        self.mem: dict[int, bytearray] = {}
        self.next_addr = 0x7F00_0000_0000
        self.calls: list[str] = []
        self.launches: list[dict] = []
        self.fail: dict[str, int] = {}
        self.modules: dict[int, object] = {}
        self.run = None
        self.current = 0
        self.host_ms = 0.0             # host time of every HIP call, ms
        self.duration = lambda rec: 0.25   # device time per kernel, ms
        self.host_t = 0.0              # the host's clock, ms
        self.device_free = 0.0         # when the device finishes what is queued, ms
        self.events: list[_FakeEvent] = []
        self.images: dict[int, tuple] = {}   # handle -> (weakref, address, size, bytes copy)
        self.unloaded: dict[int, bool] = {}  # handle -> image alive at hipModuleUnload

    def __getattribute__(self, name):
        if name.startswith("hip") and not name.startswith(("hipError_t", "hipMemcpyKind",
                                                            "hipDeviceProp_t")):
            calls = object.__getattribute__(self, "calls")
            calls.append(name)
            self.host_t = object.__getattribute__(self, "host_t") + \
                object.__getattribute__(self, "host_ms")
            fail = object.__getattribute__(self, "fail")
            if name in fail:
                code = fail[name]
                return lambda *a: (FakeHip.hipError_t(code),)
        return object.__getattribute__(self, name)

    S = hipError_t.hipSuccess

    # device
    def hipGetDeviceCount(self):
        if self.count == 0:
            return (self.hipError_t.hipErrorNoDevice, 0)
        return (self.S, self.count)

    def hipSetDevice(self, i):
        self.current = i
        return (self.S,)

    def hipRuntimeGetVersion(self):
        return (self.S, 60241133)

    def hipDriverGetVersion(self):
        return (self.S, 60241133)

    def hipGetErrorString(self, code):
        return (self.S, b"fake description")

    def hipDeviceProp_t(self):
        return types.SimpleNamespace()

    def hipGetDeviceProperties(self, p, i):
        p.name = b"Fake MI60"
        p.gcnArchName = (self.arch if isinstance(self.arch, str) else self.arch[i]).encode()
        p.multiProcessorCount, p.clockRate, p.totalGlobalMem = 64, 1800000, 32 << 30
        p.warpSize, p.maxThreadsPerBlock, p.sharedMemPerBlock, p.pciBusID = 64, 1024, 65536, 3
        return (self.S,)

    # memory
    def _find(self, addr: int) -> tuple[bytearray, int]:
        for base, buf in self.mem.items():
            if base <= addr < base + len(buf):
                return buf, addr - base
        raise AssertionError(f"fake HIP: bad device address 0x{addr:x}")

    def hipMalloc(self, n):
        addr = self.next_addr
        self.next_addr += (n + 255) // 256 * 256 + 256
        self.mem[addr] = bytearray(n)
        return (self.S, addr)

    def hipMemset(self, addr, value, n):
        buf, off = self._find(addr)
        buf[off:off + n] = bytes([value]) * n
        return (self.S,)

    def hipFree(self, addr):
        if addr not in self.mem:
            return (self.hipError_t.hipErrorInvalidValue,)
        del self.mem[addr]
        return (self.S,)

    def hipMemcpy(self, dst, src, n, kind):
        if kind == self.hipMemcpyKind.hipMemcpyHostToDevice:
            buf, off = self._find(dst)
            buf[off:off + n] = memoryview(src).cast("B")[:n]
        else:
            buf, off = self._find(src)
            memoryview(dst).cast("B")[:n] = buf[off:off + n]
        return (self.S,)

    # modules
    def hipModuleLoadData(self, image):
        if not bytes(image[:4]) == b"\x7fELF":
            return (self.hipError_t.hipErrorInvalidImage, None)
        handle = len(self.modules) + 1
        self.modules[handle] = load_code_object(bytes(image))
        view = np.frombuffer(image, np.uint8)
        self.images[handle] = (weakref.ref(image), view.ctypes.data, view.nbytes, bytes(view))
        del view  # a view would keep the image alive
        return (self.S, handle)

    def image_alive(self, handle) -> bool:
        ref, address, size, data = self.images[handle]
        return ref() is not None and ctypes.string_at(address, size) == data

    def hipModuleGetFunction(self, module, name):
        co = self.modules[module]
        if name.decode() not in co.kernels:
            return (self.hipError_t.hipErrorNotFound, None)
        return (self.S, (module, name.decode()))

    def hipModuleUnload(self, module):
        self.unloaded[module] = self.image_alive(module)
        return (self.S,)

    def hipModuleLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        assert params is None
        arr = (ctypes.c_void_p * 5).from_buffer(extra) if not isinstance(extra, int) else \
            (ctypes.c_void_p * 5).from_address(extra)
        assert (arr[0], arr[2], arr[4]) == (1, 2, 3)
        n = ctypes.c_size_t.from_address(arr[3]).value
        assert self.image_alive(f[0]), "the module's code object image was freed"
        rec = {"function": f, "grid": (gx, gy, gz), "block": (bx, by, bz), "shmem": shmem,
               "kernarg": ctypes.string_at(arr[1], n)}
        start = max(self.host_t, self.device_free)
        self.device_free = start + self.duration(rec)
        rec["start"], rec["end"] = start, self.device_free
        self.launches.append(rec)
        if self.run:
            self.run(self, rec)
        return (self.S,)

    # events
    def hipEventCreate(self):
        ev = _FakeEvent()
        self.events.append(ev)
        return (self.S, ev)

    def hipEventRecord(self, ev, stream):
        assert stream is None and not ev.destroyed
        ev.t = max(self.host_t, self.device_free)
        return (self.S,)

    def hipEventSynchronize(self, ev):
        self.host_t = max(self.host_t, ev.t)
        return (self.S,)

    def hipEventElapsedTime(self, a, b):
        if a.t is None or b.t is None or a.destroyed or b.destroyed:
            return (self.hipError_t.hipErrorInvalidValue, 0.0)
        return (self.S, b.t - a.t)

    def hipEventDestroy(self, ev):
        ev.destroyed = True
        return (self.S,)

    def hipDeviceSynchronize(self):
        self.host_t = max(self.host_t, self.device_free)
        return (self.S,)


def _fake_saxpy(fake: FakeHip, rec: dict) -> None:
    n, a, xaddr, yaddr = struct.unpack_from("<ifQQ", rec["kernarg"])
    xb, xo = fake._find(xaddr)
    yb, yo = fake._find(yaddr)
    x = np.frombuffer(bytes(xb[xo:xo + 4 * n]), np.float32)
    y = np.frombuffer(bytes(yb[yo:yo + 4 * n]), np.float32)
    yb[yo:yo + 4 * n] = (np.float32(a) * x + y).astype(np.float32).tobytes()


def test_fake_device_properties_and_describe():
    dev = HipDevice(_hip=FakeHip())
    assert str(dev.target_id) == "gfx906:sramecc+:xnack-"
    assert dev.properties.compute_units == 64
    assert "Fake MI60" in dev.describe() and "gfx906:sramecc+:xnack-" in dev.describe()
    with pytest.raises(DeviceError, match="no HIP device"):
        HipDevice(_hip=FakeHip(count=0))
    with pytest.raises(DeviceError, match="HIP device 3 does not exist"):
        HipDevice(3, _hip=FakeHip())
    with pytest.raises(DeviceError, match="not supported by vlpc"):
        HipDevice(_hip=FakeHip(arch="gfx90a:sramecc+:xnack-"))


def test_fake_device_memory_round_trip():
    fake = FakeHip()
    dev = HipDevice(_hip=fake)
    x = np.arange(100, dtype=np.float32)
    buf = dev.upload(x)
    np.testing.assert_array_equal(dev.download(buf), x)
    np.testing.assert_array_equal(dev.download(buf, np.float32, (10, 10)), x.reshape(10, 10))
    z = dev.alloc(64)
    assert not dev.download(z, np.uint8).any()  # zero filled
    dev.free(buf)
    with pytest.raises(DeviceError):
        dev.free(buf)
    dev.close()
    assert fake.mem == {}


def test_fake_device_launch_path():
    fake = FakeHip()
    fake.run = _fake_saxpy
    dev = HipDevice(_hip=fake)
    co = load_code_object(DATA / "saxpy.hsaco")
    n = 1000
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    y = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    bx, by = dev.upload(x), dev.upload(y)
    args = [np.int32(n), np.float32(2.0), bx, by]
    stats = dev.launch(co, "saxpy", grid=(16,), block=(64,), args=args, iterations=3, warmup=2,
                       back_to_back=1)
    # 2 warmups + 3 timed launches, each with the same argument bytes
    assert len(fake.launches) == 5
    assert stats.kernel_ms == [0.25] * 3 and stats.kernel_ms_mean == 0.25 and stats.iterations == 3
    expect = hip_kernarg_buffer(co.kernel("saxpy"), [np.int32(n), np.float32(2.0), bx.address,
                                                     by.address], (16,), (64,))
    assert all(r["kernarg"] == expect for r in fake.launches)
    assert fake.launches[0]["grid"] == (16, 1, 1) and fake.launches[0]["block"] == (64, 1, 1)
    got = dev.download(by, np.float32, (n,))
    ref = y.copy()
    for _ in range(5):
        ref = (np.float32(2.0) * x + ref).astype(np.float32)
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    # the module is loaded once per code object, also for a reloaded copy of the same bytes
    dev.launch(load_code_object((DATA / "saxpy.hsaco").read_bytes()), "saxpy", grid=16,
               block=64, args=args)
    assert fake.calls.count("hipModuleLoadData") == 1
    assert fake.calls.count("hipModuleGetFunction") == 1
    fake.run = None
    dev.launch(co, "scale_add_stride", grid=2, block=64,
               args=[np.int32(n), np.float32(1), np.float32(2), bx, by])
    assert fake.calls.count("hipModuleLoadData") == 1
    assert fake.calls.count("hipModuleGetFunction") == 2


def test_fake_device_refuses_a_mismatched_target_before_loading():
    """A sramecc- code object on an ECC-on board: refused naming both ids."""
    co = load_code_object(DATA / "saxpy.sramecc-off.hsaco")  # hipcc --offload-arch=gfx906:sramecc-:xnack-
    assert str(co.target_id) == "gfx906:sramecc-:xnack-"
    fake = FakeHip(arch="gfx906:sramecc+:xnack-")
    dev = HipDevice(_hip=fake)
    buf = dev.alloc(16)
    with pytest.raises(LaunchError) as e:
        dev.launch(co, "saxpy", grid=1, block=64, args=[np.int32(4), np.float32(1), buf, buf])
    assert "gfx906:sramecc-:xnack-" in str(e.value) and "gfx906:sramecc+:xnack-" in str(e.value)
    assert "hipModuleLoadData" not in fake.calls and not fake.launches
    # the same code object is fine on an ECC-off board
    dev2 = HipDevice(_hip=FakeHip(arch="gfx906:sramecc-:xnack-"))
    b2 = dev2.alloc(16)
    dev2.launch(co, "saxpy", grid=1, block=64, args=[np.int32(4), np.float32(1), b2, b2])


def test_fake_device_reports_hip_failures():
    fake = FakeHip()
    fake.fail["hipModuleLaunchKernel"] = FakeHip.hipError_t.hipErrorInvalidValue
    dev = HipDevice(_hip=fake)
    buf = dev.alloc(16)
    with pytest.raises(HipError) as e:
        dev.launch(DATA / "saxpy.hsaco", "saxpy", grid=1, block=64,
                   args=[np.int32(4), np.float32(1), buf, buf])
    assert str(e.value).startswith("hipModuleLaunchKernel failed: hipErrorInvalidValue (1)")
    with pytest.raises(LaunchError, match="kernel 'nope' not found"):
        dev.launch(DATA / "saxpy.hsaco", "nope", grid=1, block=64, args=[])
    with pytest.raises(DeviceError, match="iterations"):
        dev.launch(DATA / "saxpy.hsaco", "saxpy", grid=1, block=64,
                   args=[np.int32(4), np.float32(1), buf, buf], iterations=0)


# -- timing on the device, the module image, launch limits -----------------------------------


def _saxpy_on(fake: FakeHip):
    dev = HipDevice(_hip=fake)
    buf = dev.alloc(4 * 64)
    return dev, load_code_object(DATA / "saxpy.hsaco"), [np.int32(64), np.float32(1), buf, buf]


def test_timing_divides_a_batch_of_back_to_back_launches():
    """Every HIP call costs the host 0.02 ms, the kernel runs 0.03 ms.  Events around
    each launch (record, launch, record) leave the GPU idle while the host works, so each
    sample is host + kernel = 0.05 ms.  Events around 10 back-to-back launches count the
    host's call once: (0.02 + 10 x 0.03) / 10 while the GPU starts idle, then exactly 0.03
    once the queue runs ahead of the GPU."""
    fake = FakeHip()
    fake.host_ms, fake.duration = 0.02, (lambda rec: 0.03)
    dev, co, args = _saxpy_on(fake)
    single = dev.launch(co, "saxpy", grid=1, block=64, args=args, iterations=3, back_to_back=1)
    assert single.kernel_ms == pytest.approx([0.05] * 3)
    fake.launches.clear()
    st = dev.launch(co, "saxpy", grid=1, block=64, args=args, iterations=3, warmup=0)
    assert st.back_to_back == hipmod.DEFAULT_BACK_TO_BACK == 10
    assert len(fake.launches) == 3 * 10
    assert st.kernel_ms == pytest.approx([(0.02 + 10 * 0.03) / 10, 0.03, 0.03])
    assert st.kernel_ms_min == pytest.approx(0.03) and st.kernel_ms_median == pytest.approx(0.03)
    assert st.tflops(2 * 0.03e-3 * 1e12) == pytest.approx(2.0)  # from the median
    assert "median 0.0300 ms" in st.summary() and "10 back-to-back" in st.summary()
    # warmup: untimed launches first, and then the whole interval is device time
    fake.launches.clear()
    st = dev.launch(co, "saxpy", grid=1, block=64, args=args, iterations=2, warmup=3, back_to_back=4)
    assert len(fake.launches) == 3 + 2 * 4 and st.kernel_ms == pytest.approx([0.03, 0.03])
    # one launch by default when no timing is asked for; every event destroyed
    fake.launches.clear()
    assert dev.launch(co, "saxpy", grid=1, block=64, args=args).back_to_back == 1
    assert len(fake.launches) == 1
    assert fake.events and all(ev.destroyed for ev in fake.events)
    with pytest.raises(DeviceError, match="back_to_back must be >= 1"):
        dev.launch(co, "saxpy", grid=1, block=64, args=args, back_to_back=0)


def test_plan_times_the_whole_and_each_kernel():
    """Two kernels (0.05 and 0.02 ms) as a plan: events between them time each one, the
    events around the batch the whole; the kernels only ever run as the whole plan."""
    fake = FakeHip()
    fake.host_ms = 0.01
    fake.duration = lambda rec: 0.05 if rec["grid"][0] == 16 else 0.02
    dev, co, args = _saxpy_on(fake)
    st = dev.launch_plan(co, [("saxpy", 16, 64), ("saxpy", (2, 1, 1), (64, 1, 1))], args,
                         iterations=3, warmup=1, back_to_back=10)
    assert [r["grid"][0] for r in fake.launches] == [16, 2] * (1 + 3 * 10)
    assert st.kernel_name == "saxpy+saxpy" and len(st.kernels) == 2
    assert st.grid == (16, 1, 1) and st.kernels[1].grid == (2, 1, 1)
    first, second = st.kernels
    assert second.kernel_ms == pytest.approx([0.02] * 3)
    # the warmup's backlog keeps the GPU busy: no host time in any sample
    assert first.kernel_ms == pytest.approx([0.05] * 3)
    assert st.kernel_ms == pytest.approx([0.07] * 3)
    # without a warmup the first kernel's first sample holds the host's call once
    st = dev.launch_plan(co, [("saxpy", 16, 64), ("saxpy", 2, 64)], args, iterations=1,
                         back_to_back=10)
    assert st.kernels[0].kernel_ms == pytest.approx([(0.01 + 10 * 0.05) / 10])
    assert st.kernel_ms == pytest.approx([(0.01 + 10 * 0.07) / 10])
    assert sum(k.kernel_ms[0] for k in st.kernels) == pytest.approx(st.kernel_ms[0])
    assert "saxpy median" in st.summary()


def test_plan_executor_times_a_split_plan_on_hip():
    """CompiledKernel.execute hands a HIP device the whole plan (main kernel, then the
    reduce kernel), the workspace appended, and returns the plan's and each kernel's times."""
    import vlpc

    text = """
func.func @g(%a: memref<64x4096xf32>, %b: memref<256x4096xf32>, %c: memref<64x256xf32>) {
  %alpha = arith.constant 1.0 : f32
  %beta = arith.constant 0.0 : f32
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<64x4096xf32>, memref<256x4096xf32>, memref<64x256xf32>, f32, f32
  return
}
"""
    kern = vlpc.compile(text, split_k=4).kernel()
    assert [s.kernel for s in kern.plan(64, 256, 4096)] == ["g", "g_reduce"]
    fake = FakeHip()
    fake.duration = lambda rec: 0.4 if rec["function"][1] == "g" else 0.1
    dev = HipDevice(_hip=fake)
    bufs = [dev.alloc(64 * 4096 * 4), dev.alloc(256 * 4096 * 4), dev.alloc(64 * 256 * 4)]
    args = [*bufs, *(np.int32(v) for v in (64, 256, 4096, 4096, 4096, 256)), np.float32(1),
            np.float32(0)]
    co = load_code_object(kern.code_object)
    st = kern.execute(dev, co, args, 64, 256, 4096, 256, iterations=2, warmup=1)
    assert [r["function"][1] for r in fake.launches] == ["g", "g_reduce"] * (1 + 2 * 10)
    assert st.kernel_name == "g+g_reduce" and [k.kernel_name for k in st.kernels] == ["g", "g_reduce"]
    assert st.kernel_ms == pytest.approx([0.5, 0.5])
    assert st.kernels[0].kernel_ms == pytest.approx([0.4, 0.4])
    assert st.kernels[1].kernel_ms == pytest.approx([0.1, 0.1])
    assert len(fake.mem) == 3  # the workspace was freed
    (slot,) = [a[".offset"] for a in kern.kernargs if a[".name"] == "workspace"]
    ws = {struct.unpack_from("<Q", r["kernarg"], slot)[0] for r in fake.launches}
    assert len(ws) == 1 and ws.pop() not in fake.mem


def test_module_image_stays_alive_with_the_module():
    """The stand-in keeps only the image's address (as clr does): the image must live,
    unchanged, until hipModuleUnload, and be released after it."""
    import gc

    fake = FakeHip()
    dev, co, args = _saxpy_on(fake)
    dev.launch(co, "saxpy", grid=1, block=64, args=args)
    gc.collect()
    assert fake.image_alive(1)
    ref = fake.images[1][0]
    # a second code object with the same bytes reuses the module (and its image)
    dev.launch(load_code_object((DATA / "saxpy.hsaco").read_bytes()), "saxpy", grid=1, block=64,
               args=args)
    assert fake.calls.count("hipModuleLoadData") == 1 and len(fake.launches) == 2
    dev.close()
    assert fake.unloaded == {1: True}  # alive while the runtime still pointed at it
    gc.collect()
    assert ref() is None  # and not kept past the module


def test_hip_launch_limits_are_checked_before_the_call():
    from vlpc.errors import EXIT_USER
    from vlpc.runtime.hip import HipLaunchLimitError, check_hip_launch_limits

    check_hip_launch_limits((2**31 - 1, 65536, 65536), (1, 1, 1))  # clr's largest grid
    check_hip_launch_limits((2**22 - 1, 1, 1), (1024, 1, 1))
    cases = [((2**31, 1, 1), 1, "gridDimX <= 2^31 - 1"),
             ((1, 65537, 1), 1, "gridDimY <= 65536"),
             ((1, 1, 65537), 1, "gridDimZ <= 65536"),
             ((2**22, 1, 1), (1024, 1, 1), "gridDimX x blockDimX <= 2^32 - 1")]
    for grid, block, limit in cases:
        with pytest.raises(HipLaunchLimitError, match=re.escape(limit)) as e:
            check_hip_launch_limits(grid, block)
        assert e.value.exit_code == EXIT_USER
        _one_line(str(e.value))
    fake = FakeHip()
    dev, co, args = _saxpy_on(fake)
    with pytest.raises(HipLaunchLimitError, match="grid y is 65537 workgroups"):
        dev.launch(co, "saxpy", grid=(1, 65537), block=64, args=args)
    with pytest.raises(HipLaunchLimitError, match="grid x is 2147483648 workgroups"):
        dev.launch(co, "saxpy", grid=2**31, block=1, args=args)
    assert "hipModuleLaunchKernel" not in fake.calls and "hipModuleLoadData" not in fake.calls


# -- vlpc doctor ------------------------------------------------------------------------------


def test_doctor_version_matching():
    from vlpc.doctor import version_match

    problem, exact, text = version_match("6.2.0", "6.2.41133")
    assert (problem, exact) == (False, True) and text.startswith("match")
    # ROCm 5.x (5.7 is the last official gfx906 release): no hip-python exists, 6.2 is the closest
    for runtime in ("5.2.21153", "5.7.31921"):
        problem, exact, text = version_match("6.2.0", runtime)
        assert (problem, exact) == (False, False) and "no hip-python exists for ROCm 5." in text
        problem, _, text = version_match("7.0.2", runtime)
        assert problem and "pip install 'hip-python~=6.2.0'" in text
    problem, _, text = version_match("6.4.1", "6.2.41133")
    assert problem and "hip-python is built for ROCm 6.4 but the runtime is HIP 6.2.41133" in text
    assert "pip install 'hip-python~=6.2.0'" in text
    assert "pip install 'hip-python~=7.0.0'" in version_match("6.2.0", "7.0.51831")[2]
    assert version_match("unknown", "6.2.41133")[:2] == (False, False)


def test_doctor_reports_runtime_hip_python_and_devices():
    from vlpc.doctor import diagnose

    rep = diagnose(FakeHip(), hip_python=("6.2.0.499.16", "6.2.0"))
    text = rep.text()
    assert rep.usable and not rep.problems and rep.exit_code == 0, text
    assert "hip-python:   6.2.0.499.16 (built for ROCm 6.2.0)" in text
    assert "HIP runtime:  6.2.41133 (<injected>; driver 60241133)" in text
    assert "device 0:" in text and "target id gfx906:sramecc+:xnack-" in text
    assert "runs vlpc's gfx906 code objects" in text and "HIP is usable" in text
    assert rep.devices == [{"index": 0, "name": "Fake MI60", "gcn_arch_name": "gfx906:sramecc+:xnack-",
                            "compute_units": 64, "runs_vlpc": True}]


def test_doctor_says_what_does_not_match():
    from vlpc.doctor import diagnose

    rep = diagnose(FakeHip(arch=["gfx906:sramecc-:xnack-", "gfx90a:sramecc+:xnack-"], count=2),
                   hip_python=("6.4.1.552.39", "6.4.1"))
    bad = {ln.label: ln.text for ln in rep.problems}
    assert set(bad) == {"versions", "device 1"}, rep.text()
    assert "pip install 'hip-python~=6.2.0'" in bad["versions"]
    assert "target id gfx90a:sramecc+:xnack-, 64 CUs: not a gfx906" in bad["device 1"]
    assert rep.usable and rep.exit_code == EXIT_DEVICE  # device 0 runs, but the versions differ
    assert all(str(ln).startswith("! ") for ln in rep.problems)
    rep = diagnose(FakeHip(count=0), hip_python=("6.2.0.499.16", "6.2.0"))
    assert not rep.usable and rep.exit_code == EXIT_DEVICE
    assert "none: hipGetDeviceCount returned hipErrorNoDevice (100)" in rep.text()


def test_doctor_without_hip_python_in_one_process():
    """hip-python hidden: one line says so and what to install, exit 4, no traceback."""
    proc = _run_python(_BLOCK_HIP_PYTHON.replace("    import importlib.abc", "    import sys, importlib.abc")
                       + "\n    from vlpc.doctor import cmd_doctor\n    sys.exit(cmd_doctor(None))\n")
    assert proc.returncode == EXIT_DEVICE, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "! hip-python:   hip-python is not installed" in proc.stdout
    assert "vlpc[hip]" in proc.stdout and "emulator" in proc.stdout


@pytest.mark.skipif(not (HAVE_HIP_PYTHON and HAVE_DEBIAN_ROCM52),
                    reason="needs hip-python and Debian's libamdhip64-5 (ROCm 5.2)")
def test_doctor_on_debian_rocm52_without_a_gpu():
    if _gpu_present():
        pytest.skip("this machine has an AMD GPU")
    proc = _run_python("""
        import sys
        from vlpc.doctor import cmd_doctor
        sys.exit(cmd_doctor(None))
    """, env={"VLPC_HIP_LIBRARY": "libamdhip64.so.5"})
    assert proc.returncode == EXIT_DEVICE and "Traceback" not in proc.stderr, proc.stderr
    assert "HIP runtime:  5.2.21153 (libamdhip64.so.5; driver 50221153)" in proc.stdout
    assert "hipErrorNoDevice (100)" in proc.stdout
    if "built for ROCm 6.2" in proc.stdout:
        assert "closest pair: no hip-python exists for ROCm 5.2" in proc.stdout


def test_doctor_is_a_cli_command():
    from vlpc.cli import build_parser

    assert build_parser().parse_args(["doctor"]).command == "doctor"
