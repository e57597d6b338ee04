"""The HIP device: run code objects on a real AMD GPU through the HIP runtime.

Uses AMD's ``hip-python`` bindings (the optional extra ``pip install vlpc[hip]``),
which ``dlopen`` the ROCm HIP runtime library ``libamdhip64.so`` on first use.
Nothing here is imported unless ``get_device("hip")`` (or ``"auto"``) asks for it.

* :func:`hip_available` says whether a HIP device can be used, as
  ``(ok, one-line reason)``; it never raises and never prints.
* :class:`HipDevice` is a :class:`vlpc.runtime.device.Device`: device properties
  (``gcnArchName`` parsed into a :class:`~vlpc.targets.TargetId`), memory through
  ``hipMalloc``/``hipMemcpy``, modules loaded from the code object's bytes with
  ``hipModuleLoadData`` (cached per code object), launches with
  ``hipModuleLaunchKernel`` and the kernarg buffer passed through the
  ``HIP_LAUNCH_PARAM_BUFFER_POINTER``/``HIP_LAUNCH_PARAM_BUFFER_SIZE`` ``extra``
  array, and timing with HIP events.
* The kernarg bytes come from :func:`vlpc.runtime.kernargs.pack_kernargs`, the one
  packer every device uses; :func:`hip_kernarg_buffer` and :func:`hip_launch_extra`
  build what ``hipModuleLaunchKernel`` receives and are testable without a GPU.
* Every failing HIP call raises :class:`HipError` naming the call, the status
  name and its number.

Runtime library lookup: ``$VLPC_HIP_LIBRARY`` if set, else ``libamdhip64.so``,
else the versioned sonames (``libamdhip64.so.7``/``.6``/``.5``, e.g. Debian's
``libamdhip64-5`` package ships only ``libamdhip64.so.5``), else
``$ROCM_PATH/lib`` and ``/opt/rocm/lib``.  hip-python's loader is pointed at the
library found.  See ``docs/hip.md`` for matching hip-python to the ROCm version.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from vlpc.errors import DeviceError
from vlpc.targets import TargetError, TargetId

from vlpc.runtime.device import Device

#: ``HIP_LAUNCH_PARAM_*`` markers of the ``extra`` array (hip_runtime_api.h).
HIP_LAUNCH_PARAM_BUFFER_POINTER = 0x01
HIP_LAUNCH_PARAM_BUFFER_SIZE = 0x02
HIP_LAUNCH_PARAM_END = 0x03

#: hipErrorNoDevice: hipGetDeviceCount's answer when no GPU is visible.
HIP_ERROR_NO_DEVICE = 100

_LIBRARY_NAMES = ("libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5")


class HipError(DeviceError):
    """A HIP runtime call returned an error status.

    ``call`` is the API function (``hipModuleLoadData``), ``name`` the status name
    (``hipErrorNoBinaryForGpu``), ``code`` its number.
    """

    def __init__(self, call: str, code: int, name: str | None = None, detail: str | None = None):
        self.call = call
        self.code = int(code)
        self.status_name = name or f"hipError {self.code}"
        self.detail = detail
        msg = f"{call} failed: {self.status_name} ({self.code})"
        if detail and detail != self.status_name:
            msg += f": {detail}"
        super().__init__(msg)


# -- loading hip-python and the runtime library --------------------------------------------


@dataclass
class _HipModule:
    """hip-python's ``hip`` module plus what was learnt while loading it."""

    hip: Any
    library: str
    hip_python_version: str
    hip_python_rocm: str


_LOCK = threading.Lock()
_LOADED: _HipModule | None = None


def _hip_python_versions(hip_pkg: Any) -> tuple[str, str]:
    try:
        from importlib.metadata import version

        pkg_version = version("hip-python")
    except Exception:
        pkg_version = "unknown"
    rocm = str(getattr(hip_pkg, "ROCM_VERSION_NAME", "") or "unknown")
    return pkg_version, rocm


def _find_library() -> tuple[str | None, str]:
    """The first loadable HIP runtime library and an explanation when none is."""
    env = os.environ.get("VLPC_HIP_LIBRARY")
    candidates: list[str] = [env] if env else []
    candidates += list(_LIBRARY_NAMES)
    for root in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if root:
            candidates += [os.path.join(root, "lib", n) for n in _LIBRARY_NAMES]
    errors: list[str] = []
    for name in candidates:
        try:
            ctypes.CDLL(name, mode=getattr(os, "RTLD_NOW", 2) | getattr(ctypes, "RTLD_GLOBAL", 0))
            return name, ""
        except OSError as e:
            errors.append(str(e))
        if env and name == env:
            return None, f"VLPC_HIP_LIBRARY={env} cannot be loaded: {errors[-1]}"
    first = errors[0] if errors else "not found"
    return None, (f"the HIP runtime library libamdhip64.so cannot be loaded ({first}); "
                  f"install ROCm's HIP runtime (Debian: apt-get install libamdhip64-5)")


def _load() -> _HipModule:
    """Import hip-python and point it at a loadable runtime; DeviceError if impossible."""
    global _LOADED
    with _LOCK:
        if _LOADED is not None:
            return _LOADED
        try:
            import hip as hip_pkg
            from hip import hip
        except ImportError as e:
            raise DeviceError(f"hip-python is not installed ({e}); install it with "
                              f"pip install 'vlpc[hip]' (see docs/hip.md for the version "
                              f"matching your ROCm)") from None
        except Exception as e:  # a broken install: report, never a traceback
            raise DeviceError(f"hip-python failed to import: {type(e).__name__}: {e}") from None
        library, why = _find_library()
        if library is None:
            raise DeviceError(why)
        try:
            from hip import chip

            # hip-python's generated loader dlopens chip.DLL (b"libamdhip64.so") on its
            # first call; a runtime installed only under its soname (Debian's
            # libamdhip64-5) needs the name it can actually be found under.
            if hasattr(chip, "DLL") and library != _LIBRARY_NAMES[0]:
                chip.DLL = library.encode()
        except Exception:
            pass
        pkg_version, rocm = _hip_python_versions(hip_pkg)
        _LOADED = _HipModule(hip, library, pkg_version, rocm)
        return _LOADED


def _status(err: Any) -> int:
    try:
        return int(err)
    except (TypeError, ValueError):
        return int(getattr(err, "value", -1))


def _status_name(hip: Any, code: int) -> str:
    try:
        return hip.hipError_t(code).name
    except Exception:
        return f"hipError {code}"


def _call(hip: Any, call: str, *args: Any) -> Any:
    """Call ``hip.<call>(*args)``; raise HipError on a bad status, return the outputs.

    hip-python returns a tuple ``(status, *outputs)``; this returns ``None`` for no
    output, the output itself for one, or the tuple of outputs.  hip-python raises
    ``RuntimeError`` when the runtime library lacks the symbol (an older ROCm than
    the bindings were generated for) -- that becomes a DeviceError naming both.
    """
    fn = getattr(hip, call, None)
    if fn is None:
        raise DeviceError(f"hip-python has no {call}")
    try:
        result = fn(*args)
    except RuntimeError as e:
        raise _runtime_mismatch(call, e) from None
    if not isinstance(result, tuple):
        result = (result,)
    code = _status(result[0])
    if code != 0:
        detail = None
        try:
            try:
                status = hip.hipError_t(code)
            except Exception:
                status = code
            s_err, text = hip.hipGetErrorString(status)
            if _status(s_err) == 0 and text:
                detail = text.decode() if isinstance(text, bytes) else str(text)
        except Exception:
            pass
        raise HipError(call, code, _status_name(hip, code), detail)
    outputs = result[1:]
    if not outputs:
        return None
    return outputs[0] if len(outputs) == 1 else outputs


def _runtime_mismatch(call: str, e: BaseException) -> DeviceError:
    loaded = _LOADED
    who = (f"hip-python {loaded.hip_python_version} (built for ROCm {loaded.hip_python_rocm})"
           if loaded else "hip-python")
    lib = loaded.library if loaded else "libamdhip64.so"
    text = str(e).replace("\n", " ")
    if "dlsym" in text:
        return DeviceError(f"{call}: the HIP runtime {lib} lacks a symbol {who} needs ({text}); "
                           f"install the hip-python version matching the ROCm runtime "
                           f"(docs/hip.md)")
    return DeviceError(f"{call}: {who} could not use the HIP runtime {lib}: {text}")


def _runtime_version(hip: Any) -> str:
    try:
        v = int(_call(hip, "hipRuntimeGetVersion"))
    except DeviceError:
        return "unknown"
    return f"{v // 10_000_000}.{(v // 100_000) % 100}.{v % 100_000}"


def hip_available() -> tuple[bool, str]:
    """Whether a HIP device can be used: ``(True, summary)`` or ``(False, reason)``.

    False when hip-python is not installed, when the HIP runtime library cannot be
    loaded or lacks a symbol, or when no device is visible (``hipErrorNoDevice``).
    Never raises, never prints.
    """
    try:
        mod = _load()
        hip = mod.hip
        try:
            count = _call(hip, "hipGetDeviceCount")
        except HipError as e:
            if e.code == HIP_ERROR_NO_DEVICE:
                return False, (f"no HIP device: hipGetDeviceCount returned hipErrorNoDevice "
                               f"({HIP_ERROR_NO_DEVICE}) (runtime {mod.library}, HIP "
                               f"{_runtime_version(hip)})")
            return False, f"HIP runtime unusable: {e}"
        if not count:
            return False, f"no HIP device: hipGetDeviceCount reports 0 (runtime {mod.library})"
        return True, (f"{count} HIP device(s), runtime {mod.library} (HIP {_runtime_version(hip)}), "
                      f"hip-python {mod.hip_python_version}")
    except DeviceError as e:
        return False, str(e)
    except Exception as e:  # never raise: this is a probe
        return False, f"HIP probe failed: {type(e).__name__}: {e}".replace("\n", " ")


# -- target ids and properties -------------------------------------------------------------

_ARCH_RE = re.compile(rb"gfx[0-9a-f]{3,4}(?::[a-z0-9_]+[+-])*")


def parse_gcn_arch_name(text: str | bytes) -> TargetId:
    """A device's ``gcnArchName`` (``gfx906:sramecc+:xnack-``) as a TargetId.

    Features the name omits stay "any".  :class:`DeviceError` for an architecture
    vlpc has no target for.
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).split(b"\0", 1)[0].decode("ascii", "replace")
    text = text.strip()
    try:
        return TargetId.parse(text)
    except TargetError as e:
        raise DeviceError(f"device architecture '{text}' is not supported by vlpc: {e}") from None


@dataclass
class HipDeviceProperties:
    """What vlpc uses of ``hipDeviceProp_t``.  Clock in kHz, memory in bytes."""

    index: int
    name: str
    gcn_arch_name: str
    compute_units: int
    clock_khz: int
    total_memory: int
    warp_size: int
    max_threads_per_block: int
    lds_per_block: int
    runtime_version: str
    pci_bus_id: int = -1


def _text(v: Any) -> str:
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).split(b"\0", 1)[0].decode("utf-8", "replace")
    return str(v)


def _properties_from_props(index: int, p: Any, runtime: str) -> HipDeviceProperties:
    return HipDeviceProperties(
        index=index, name=_text(p.name), gcn_arch_name=_text(p.gcnArchName),
        compute_units=int(p.multiProcessorCount), clock_khz=int(p.clockRate),
        total_memory=int(p.totalGlobalMem), warp_size=int(p.warpSize),
        max_threads_per_block=int(p.maxThreadsPerBlock),
        lds_per_block=int(p.sharedMemPerBlock), runtime_version=runtime,
        pci_bus_id=int(getattr(p, "pciBusID", -1)))


#: ROCm 5.x ``hipDeviceProp_t`` (before the R0600 layout): offsets of the fields
#: vlpc reads, from ROCm 5.2's hip_runtime_api.h (offsetof, x86-64).
_PROPS_R0000 = {"name": 0, "totalGlobalMem": 256, "sharedMemPerBlock": 264, "warpSize": 276,
                "maxThreadsPerBlock": 280, "clockRate": 308, "multiProcessorCount": 336,
                "pciBusID": 368, "gcnArchName": 396}


def _properties_legacy(library: str, index: int, runtime: str) -> HipDeviceProperties:
    """Properties on a pre-6.0 runtime, whose ``hipGetDeviceProperties`` hip-python >= 6
    cannot call (it binds ``hipGetDevicePropertiesR0600``): call the old symbol with
    ctypes into a generous buffer and read the ROCm 5 layout."""
    lib = ctypes.CDLL(library)
    fn = lib.hipGetDeviceProperties
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int]
    buf = ctypes.create_string_buffer(8192)
    code = fn(buf, index)
    if code != 0:
        raise HipError("hipGetDeviceProperties", code, None)
    raw = buf.raw

    def i32(off: int) -> int:
        return int.from_bytes(raw[off:off + 4], "little", signed=True)

    def u64(off: int) -> int:
        return int.from_bytes(raw[off:off + 8], "little")

    o = _PROPS_R0000
    arch = raw[o["gcnArchName"]:o["gcnArchName"] + 256].split(b"\0", 1)[0]
    if not _ARCH_RE.fullmatch(arch):
        m = _ARCH_RE.search(raw)  # another layout: find the gfx name anywhere
        if m is None:
            raise DeviceError("cannot find gcnArchName in hipGetDeviceProperties' answer")
        arch = m.group(0)
    return HipDeviceProperties(
        index=index, name=_text(raw[0:256]), gcn_arch_name=arch.decode(),
        compute_units=i32(o["multiProcessorCount"]), clock_khz=i32(o["clockRate"]),
        total_memory=u64(o["totalGlobalMem"]), warp_size=i32(o["warpSize"]),
        max_threads_per_block=i32(o["maxThreadsPerBlock"]),
        lds_per_block=u64(o["sharedMemPerBlock"]), runtime_version=runtime,
        pci_bus_id=i32(o["pciBusID"]))


# -- argument buffer -------------------------------------------------------------------------


def hip_kernarg_buffer(kernel: Any, args: Sequence[Any] | bytes | bytearray,
                       grid: Sequence[int], block: Sequence[int], dynamic_lds: int = 0) -> bytes:
    """The kernarg segment bytes the HIP device passes for a launch.

    Packed by :func:`vlpc.runtime.kernargs.pack_kernargs`, the same packer the
    emulator uses (explicit arguments at their metadata offsets, hidden arguments
    as ROCclr fills them; the HIP runtime reads the explicit ones from this buffer
    and fills the hidden ones itself).  ``args`` is a list of values or raw bytes
    (the whole segment, or its explicit part).
    """
    from vlpc.runtime.kernargs import LaunchGeometry, pack_kernargs

    geometry = LaunchGeometry(grid=_dims(grid, "grid"), block=_dims(block, "block"),
                              dynamic_lds=int(dynamic_lds))
    if isinstance(args, memoryview):
        args = bytes(args)
    elif not isinstance(args, (bytes, bytearray)):
        args = list(args)
    return bytes(pack_kernargs(kernel, args, geometry))


@dataclass
class LaunchExtra:
    """The ``extra`` array for ``hipModuleLaunchKernel`` and the memory it points to.

    Keep the object alive until the launch call returns (HIP copies the arguments
    at launch).  ``array`` is ``void*[5]``: ``BUFFER_POINTER, &buffer, BUFFER_SIZE,
    &size, END``.
    """

    array: Any
    buffer: Any
    size: Any

    @property
    def address(self) -> int:
        return ctypes.addressof(self.array)

    def kernarg_bytes(self) -> bytes:
        """Read back what the array points to (what HIP will copy)."""
        arr = self.array
        assert arr[0] == HIP_LAUNCH_PARAM_BUFFER_POINTER and arr[2] == HIP_LAUNCH_PARAM_BUFFER_SIZE
        assert arr[4] == HIP_LAUNCH_PARAM_END
        n = ctypes.c_size_t.from_address(arr[3]).value
        return ctypes.string_at(arr[1], n)


def hip_launch_extra(kernarg: bytes) -> LaunchExtra:
    """Build the ``HIP_LAUNCH_PARAM_BUFFER_POINTER``/``SIZE``/``END`` array for ``kernarg``.

    The buffer is 16-byte aligned (kernarg segments need 8 at least; HIP copies it
    into its own kernarg memory).
    """
    n = len(kernarg)
    buf = (ctypes.c_uint64 * max(2, -(-n // 8) + 1))()  # 8-byte aligned storage
    addr = ctypes.addressof(buf)
    if addr % 16:
        buf = (ctypes.c_uint64 * (len(buf) + 2))()
        addr = ctypes.addressof(buf)
    start = addr + (-addr % 16)
    ctypes.memmove(start, kernarg, n)
    size = ctypes.c_size_t(n)
    arr = (ctypes.c_void_p * 5)(HIP_LAUNCH_PARAM_BUFFER_POINTER, start,
                                HIP_LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(size),
                                HIP_LAUNCH_PARAM_END)
    return LaunchExtra(arr, buf, size)


def _dims(v: Sequence[int] | int, what: str) -> tuple[int, int, int]:
    if isinstance(v, int):
        v = (v,)
    t = tuple(int(x) for x in v)
    if not 1 <= len(t) <= 3 or any(x < 1 for x in t):
        raise DeviceError(f"{what} must be 1 to 3 positive sizes, got {tuple(v)}")
    return t + (1,) * (3 - len(t))  # type: ignore[return-value]


# -- the device ------------------------------------------------------------------------------


@dataclass
class HipLaunchStats:
    """What a HIP launch measured.

    ``kernel_ms`` holds one HIP-event time per timed iteration (milliseconds,
    between events recorded just before and after each launch on the null
    stream); ``warmup`` untimed launches ran first.  ``wall_s`` is the host time
    for all launches including synchronisation.
    """

    kernel_name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    kernel_ms: list[float]
    warmup: int = 0
    wall_s: float = 0.0
    kernarg_size: int = 0
    dynamic_lds: int = 0
    device: str = "hip"

    @property
    def iterations(self) -> int:
        return len(self.kernel_ms)

    @property
    def kernel_ms_mean(self) -> float:
        return sum(self.kernel_ms) / len(self.kernel_ms) if self.kernel_ms else 0.0

    @property
    def kernel_ms_min(self) -> float:
        return min(self.kernel_ms) if self.kernel_ms else 0.0

    @property
    def mean_ms(self) -> float:
        return self.kernel_ms_mean

    def tflops(self, flops: float) -> float:
        """Throughput for a kernel doing ``flops`` operations, from the mean time."""
        return flops / (self.kernel_ms_mean * 1e-3) / 1e12 if self.kernel_ms_mean else 0.0


#: Options get_device() may pass that belong to the emulator; a HipDevice ignores them.
_EMULATOR_ONLY_OPTIONS = frozenset({"strict", "instruction_budget", "max_waves_in_flight"})


class HipDevice(Device):
    """A GPU driven through the HIP runtime (hip-python).

    ``HipDevice(index=0)`` selects device ``index``; ``target`` (a target id
    text) refuses a device it is not compatible with.  Raises
    :class:`DeviceError` with one line when hip-python, the runtime or a device
    is missing.  ``_hip`` substitutes a fake ``hip`` module (the API of
    ``hip.hip``) for tests without a GPU.
    """

    name = "hip"

    def __init__(self, index: int = 0, *, target: str | None = None, _hip: Any = None,
                 **options: Any):
        unknown = set(options) - _EMULATOR_ONLY_OPTIONS
        if unknown:
            raise DeviceError(f"HipDevice got unknown option(s): {', '.join(sorted(unknown))}")
        super().__init__()
        self._closed = True
        if _hip is None:
            mod = _load()
            self._hip, self._library, self._hip_python = mod.hip, mod.library, mod.hip_python_version
        else:
            self._hip, self._library, self._hip_python = _hip, "<injected>", "test"
        hip = self._hip
        try:
            count = _call(hip, "hipGetDeviceCount")
        except HipError as e:
            if e.code == HIP_ERROR_NO_DEVICE:
                raise DeviceError(f"no HIP device: hipGetDeviceCount returned hipErrorNoDevice "
                                  f"({HIP_ERROR_NO_DEVICE}) (runtime {self._library})") from None
            raise
        if not count:
            raise DeviceError("no HIP device: hipGetDeviceCount reports 0")
        if not 0 <= int(index) < count:
            raise DeviceError(f"HIP device {index} does not exist ({count} device(s))")
        self.index = int(index)
        _call(hip, "hipSetDevice", self.index)
        self.properties = self._query_properties(self.index)
        self.target_id = parse_gcn_arch_name(self.properties.gcn_arch_name)
        if target is not None:
            want = TargetId.parse(str(target))
            if not want.compatible_with(self.target_id):
                raise DeviceError(f"HIP device {self.index} is {self.target_id}, not compatible "
                                  f"with the requested {want}")
        self._modules: dict[str, Any] = {}
        self._functions: dict[tuple[str, str], Any] = {}
        self._live: dict[int, Any] = {}
        self._closed = False

    # -- properties --------------------------------------------------------------------------

    def _query_properties(self, index: int) -> HipDeviceProperties:
        hip = self._hip
        runtime = _runtime_version(hip)
        try:
            props = hip.hipDeviceProp_t()
            _call(hip, "hipGetDeviceProperties", props, index)
            return _properties_from_props(index, props, runtime)
        except DeviceError as e:
            if isinstance(e, HipError) or self._library == "<injected>":
                raise
            # hip-python >= 6 on a ROCm 5 runtime: hipGetDevicePropertiesR0600 is missing.
            return _properties_legacy(self._library, index, runtime)

    @property
    def gcn_arch_name(self) -> str:
        return self.properties.gcn_arch_name

    def describe(self) -> str:
        p = self.properties
        return (f"hip:{p.index} {p.name} ({p.gcn_arch_name}), {p.compute_units} CUs @ "
                f"{p.clock_khz / 1000:.0f} MHz, {p.total_memory / 2**30:.1f} GiB; HIP runtime "
                f"{p.runtime_version} ({self._library}), hip-python {self._hip_python}")

    # -- memory primitives (Device builds alloc/upload/write/download/free on them) -----------

    def _select(self) -> None:
        if self._closed:
            raise DeviceError("HIP device is closed")
        _call(self._hip, "hipSetDevice", self.index)

    def _alloc(self, nbytes: int) -> tuple[int, Any]:
        self._select()
        ptr = _call(self._hip, "hipMalloc", int(nbytes))
        addr = _address(ptr)
        self._live[addr] = ptr
        _call(self._hip, "hipMemset", addr, 0, int(nbytes))
        return addr, ptr

    def _free(self, address: int, handle: Any) -> None:
        self._select()
        if self._live.pop(address, None) is None:
            raise DeviceError(f"HIP buffer 0x{address:x} was already freed")
        _call(self._hip, "hipFree", address)

    def _write(self, address: int, data: bytes | np.ndarray) -> None:
        self._select()
        host = np.frombuffer(bytes(data), np.uint8) if isinstance(data, (bytes, bytearray)) \
            else np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        if host.nbytes:
            _call(self._hip, "hipMemcpy", address, host, host.nbytes,
                  self._hip.hipMemcpyKind.hipMemcpyHostToDevice)

    def _read(self, address: int, nbytes: int) -> np.ndarray:
        self._select()
        out = np.empty(int(nbytes), np.uint8)
        if nbytes:
            _call(self._hip, "hipMemcpy", out, address, int(nbytes),
                  self._hip.hipMemcpyKind.hipMemcpyDeviceToHost)
        return out

    # -- modules -----------------------------------------------------------------------------

    def _function(self, co: Any, kernel_name: str) -> Any:
        """``hipModuleLoadData`` once per code object (by content), then the function."""
        key = hashlib.sha256(co.data).hexdigest()
        module = self._modules.get(key)
        if module is None:
            module = _call(self._hip, "hipModuleLoadData", bytes(co.data))
            self._modules[key] = module
        fkey = (key, kernel_name)
        fn = self._functions.get(fkey)
        if fn is None:
            fn = _call(self._hip, "hipModuleGetFunction", module, kernel_name.encode())
            self._functions[fkey] = fn
        return fn

    # -- launching ---------------------------------------------------------------------------

    def launch(self, co: Any, kernel_name: str, grid: Any = (1, 1, 1), block: Any = (64, 1, 1),
               args: Sequence[Any] | bytes = (), dynamic_lds: int = 0, *,
               buffer_sizes: Any = None, iterations: int = 1, warmup: int = 0) -> HipLaunchStats:
        """Launch ``kernel_name`` of ``co`` (a CodeObject, path or bytes) and wait.

        ``grid`` counts workgroups, ``block`` work-items per workgroup (HIP's
        convention).  All of :meth:`Device.prepare_launch`'s checks run first
        (including the target id check: a ``sramecc-`` code object is refused on
        an ECC-on board, naming both ids).  Runs ``warmup`` untimed launches, then
        ``iterations`` launches each timed with a pair of HIP events.
        """
        if int(iterations) < 1 or int(warmup) < 0:
            raise DeviceError(f"iterations must be >= 1 and warmup >= 0 (got {iterations}, {warmup})")
        self._select()
        co, kernel, geometry = self.prepare_launch(co, kernel_name, grid, block, args,
                                                   dynamic_lds, buffer_sizes)
        return self._run(co, kernel, geometry, args, iterations=int(iterations),
                         warmup=int(warmup))

    def _run(self, co: Any, kernel: Any, launch: Any, args: Sequence[Any] | bytes, *,
             iterations: int = 1, warmup: int = 0) -> HipLaunchStats:
        kernarg = self.pack(kernel, args, launch)
        extra = hip_launch_extra(kernarg)
        fn = self._function(co, kernel.name)
        hip = self._hip
        g, b = launch.grid, launch.block

        def once() -> None:
            _call(hip, "hipModuleLaunchKernel", fn, g[0], g[1], g[2], b[0], b[1], b[2],
                  int(launch.dynamic_lds), None, None, extra.array)

        t0 = time.perf_counter()
        for _ in range(warmup):
            once()
        events: list[tuple[Any, Any]] = []
        times: list[float] = []
        try:
            for _ in range(iterations):
                start = _call(hip, "hipEventCreate")
                events.append((start, None))
                stop = _call(hip, "hipEventCreate")
                events[-1] = (start, stop)
                _call(hip, "hipEventRecord", start, None)
                once()
                _call(hip, "hipEventRecord", stop, None)
            _call(hip, "hipDeviceSynchronize")
            for start, stop in events:
                _call(hip, "hipEventSynchronize", stop)
                times.append(float(_call(hip, "hipEventElapsedTime", start, stop)))
        finally:
            for pair in events:
                for ev in pair:
                    if ev is not None:
                        try:
                            hip.hipEventDestroy(ev)
                        except Exception:
                            pass
        return HipLaunchStats(kernel_name=kernel.name, grid=tuple(g), block=tuple(b),
                              kernel_ms=times, warmup=warmup, wall_s=time.perf_counter() - t0,
                              kernarg_size=len(kernarg), dynamic_lds=int(launch.dynamic_lds),
                              device=f"hip:{self.index}")

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Free every live buffer and unload the modules (the device is unusable after)."""
        if getattr(self, "_closed", True):
            return
        hip = self._hip
        for addr in list(self._live):
            try:
                hip.hipFree(addr)
            except Exception:
                pass
        self._live.clear()
        for module in self._modules.values():
            try:
                hip.hipModuleUnload(module)
            except Exception:
                pass
        self._modules.clear()
        self._functions.clear()
        self._closed = True

    def __enter__(self) -> HipDevice:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _address(ptr: Any) -> int:
    if isinstance(ptr, int):
        return ptr
    try:
        return int(ptr)
    except TypeError:
        return int(ptr.as_c_void_p().value or 0)
