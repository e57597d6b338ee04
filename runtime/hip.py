"""The HIP device: run code objects on a real AMD GPU through the HIP runtime.

Uses AMD's ``hip-python`` bindings (the optional extra ``pip install vlpc[hip]``),
which ``dlopen`` the ROCm HIP runtime library ``libamdhip64.so`` on first use.
Nothing here is imported unless ``get_device("hip")`` (or ``"auto"``) asks for it.

* :func:`hip_available` says whether a HIP device can be used, as
  ``(ok, one-line reason)``; it never raises and never prints.
* :class:`HipDevice` is a :class:`vlpc.runtime.device.Device`: device properties
  (``gcnArchName`` parsed into a :class:`~vlpc.targets.TargetId`), memory through
  ``hipMalloc``/``hipMemcpy``, modules loaded from the code object's bytes with
  ``hipModuleLoadData`` (cached per code object; the image stays alive with
  the module handle, since the runtime keeps the pointer without copying), launches with
  ``hipModuleLaunchKernel`` and the kernarg buffer passed through the
  ``HIP_LAUNCH_PARAM_BUFFER_POINTER``/``HIP_LAUNCH_PARAM_BUFFER_SIZE`` ``extra``
  array, HIP's launch limits checked before the call (:func:`check_hip_launch_limits`),
  and device timing: HIP events around a batch of back-to-back launches, divided by
  the batch (:meth:`HipDevice.launch`, :meth:`HipDevice.launch_plan`).
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
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from vlpc.errors import EXIT_USER, DeviceError
from vlpc.targets import TargetError, TargetId

from vlpc.runtime.device import MODEL_OPTIONS, Device, LaunchError

#: ``HIP_LAUNCH_PARAM_*`` markers of the ``extra`` array (hip_runtime_api.h).
HIP_LAUNCH_PARAM_BUFFER_POINTER = 0x01
HIP_LAUNCH_PARAM_BUFFER_SIZE = 0x02
HIP_LAUNCH_PARAM_END = 0x03

#: hipErrorNoDevice: hipGetDeviceCount's answer when no GPU is visible.
HIP_ERROR_NO_DEVICE = 100

#: HIP's launch limits, as clr's ``hipModuleLaunchKernel`` checks them (hip_module.cpp):
#: grid in workgroups, ``gridDimX <= INT32_MAX``, ``gridDimY, gridDimZ <= UINT16_MAX + 1``
#: (hipErrorInvalidValue otherwise), and ``gridDimX * blockDimX <= UINT32_MAX`` work-items
#: (hipErrorInvalidConfiguration).
HIP_MAX_GRID_X = 2**31 - 1
HIP_MAX_GRID_YZ = 65536
HIP_MAX_WORK_ITEMS_X = 2**32 - 1

#: Launches back to back per timed sample when timing is asked for (``iterations > 1`` or
#: ``warmup > 0``): rocblas-bench's default number of hot calls (``--iters 10``).
DEFAULT_BACK_TO_BACK = 10

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


def device_properties(hip: Any, library: str, index: int) -> HipDeviceProperties:
    """Properties of device ``index`` through hip-python's ``hip`` module, whatever its
    architecture (:class:`HipDevice` refuses the ones vlpc has no target for; ``vlpc
    doctor`` lists them).  With hip-python >= 6 on a ROCm 5 runtime (no
    ``hipGetDevicePropertiesR0600``) the ROCm 5 symbol of ``library`` is read instead.
    ``library`` ``"<injected>"`` (a stand-in ``hip`` module) never falls back."""
    runtime = _runtime_version(hip)
    try:
        props = hip.hipDeviceProp_t()
        _call(hip, "hipGetDeviceProperties", props, index)
        return _properties_from_props(index, props, runtime)
    except DeviceError as e:
        if isinstance(e, HipError) or library == "<injected>":
            raise
        # hip-python >= 6 on a ROCm 5 runtime: hipGetDevicePropertiesR0600 is missing.
        return _properties_legacy(library, index, runtime)


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


class HipLaunchLimitError(LaunchError):
    """A launch over one of HIP's grid limits, refused before the HIP call (a user
    error, exit code 1): the message names the limit, its value and where it comes from."""

    exit_code = EXIT_USER


def check_hip_launch_limits(grid: Sequence[int] | int, block: Sequence[int] | int) -> None:
    """Refuse a launch that ``hipModuleLaunchKernel`` would refuse for its size.

    ``grid`` counts workgroups, ``block`` work-items per workgroup.  The limits are clr's
    (ROCm's HIP runtime, ``hip_module.cpp``): ``gridDimX`` at most 2^31 - 1
    (:data:`HIP_MAX_GRID_X`), ``gridDimY`` and ``gridDimZ`` at most 65536
    (:data:`HIP_MAX_GRID_YZ`), ``gridDimX x blockDimX`` at most 2^32 - 1 work-items
    (:data:`HIP_MAX_WORK_ITEMS_X`).  Raises :class:`HipLaunchLimitError` naming the limit;
    without this check HIP answers hipErrorInvalidValue/InvalidConfiguration after the fact.
    """
    g, b = _dims(grid, "grid"), _dims(block, "block")
    if g[0] > HIP_MAX_GRID_X:
        raise HipLaunchLimitError(
            f"grid x is {g[0]} workgroups, over HIP's limit gridDimX <= 2^31 - 1 "
            f"({HIP_MAX_GRID_X}; hipModuleLaunchKernel would return hipErrorInvalidValue)")
    for axis, n in (("y", g[1]), ("z", g[2])):
        if n > HIP_MAX_GRID_YZ:
            raise HipLaunchLimitError(
                f"grid {axis} is {n} workgroups, over HIP's limit gridDim{axis.upper()} <= "
                f"{HIP_MAX_GRID_YZ} (hipModuleLaunchKernel would return hipErrorInvalidValue)")
    if g[0] * b[0] > HIP_MAX_WORK_ITEMS_X:
        raise HipLaunchLimitError(
            f"grid x is {g[0]} x {b[0]} = {g[0] * b[0]} work-items, over HIP's limit "
            f"gridDimX x blockDimX <= 2^32 - 1 ({HIP_MAX_WORK_ITEMS_X}; hipModuleLaunchKernel "
            f"would return hipErrorInvalidConfiguration)")


# -- the device ------------------------------------------------------------------------------


@dataclass
class HipLaunchStats:
    """What a HIP launch (or a plan of launches) measured on the device.

    ``kernel_ms`` holds one sample per timed repetition (``iterations`` of them): the
    time between two HIP events recorded on the null stream around ``back_to_back``
    launches issued without waiting, divided by ``back_to_back`` -- milliseconds per
    launch.  While the GPU runs the first launch the host queues the next ones, so
    the host's launch overhead is paid once per batch rather than once per launch (with
    ``back_to_back == 1`` a sample includes that overhead: the start event completes at
    once on an idle GPU).  For a kernel shorter than the host's launch overhead (a few
    microseconds) the batch is host-bound and the sample is an upper bound.
    ``warmup`` untimed launches (of the whole plan) ran first.  ``wall_s`` is the host
    time of everything, synchronisation included.

    For a plan (:meth:`HipDevice.launch_plan`), ``kernel_name`` joins the kernels'
    names with ``+``, ``kernel_ms`` times the whole plan, and ``kernels`` holds one
    :class:`HipLaunchStats` per kernel, timed by events recorded between the kernels of
    the same batches (the per-kernel samples add up to the plan's).
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
    back_to_back: int = 1
    kernels: list[HipLaunchStats] = field(default_factory=list)

    @property
    def iterations(self) -> int:
        """The number of samples (timed repetitions)."""
        return len(self.kernel_ms)

    @property
    def kernel_ms_mean(self) -> float:
        return sum(self.kernel_ms) / len(self.kernel_ms) if self.kernel_ms else 0.0

    @property
    def kernel_ms_min(self) -> float:
        return min(self.kernel_ms) if self.kernel_ms else 0.0

    @property
    def kernel_ms_median(self) -> float:
        """The median sample (milliseconds per launch): the figure vlpc reports."""
        if not self.kernel_ms:
            return 0.0
        xs = sorted(self.kernel_ms)
        mid = len(xs) // 2
        return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2

    @property
    def mean_ms(self) -> float:
        return self.kernel_ms_mean

    def tflops(self, flops: float) -> float:
        """Throughput for a launch doing ``flops`` operations, from the median time (TFLOP/s)."""
        ms = self.kernel_ms_median
        return flops / (ms * 1e-3) / 1e12 if ms else 0.0

    def summary(self) -> str:
        """One line: median and min per launch, the samples and the batch, per kernel of a plan."""
        text = (f"{self.kernel_name}: median {self.kernel_ms_median:.4f} ms, min "
                f"{self.kernel_ms_min:.4f} ms per launch over {self.iterations} sample(s) of "
                f"{self.back_to_back} back-to-back launch(es)")
        if self.kernels:
            text += " (" + ", ".join(f"{k.kernel_name} median {k.kernel_ms_median:.4f} ms"
                                     for k in self.kernels) + ")"
        return text


@dataclass
class _Prepared:
    """One launch, ready to enqueue: the function handle and the ``extra`` array."""

    name: str
    function: Any
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_lds: int
    extra: LaunchExtra
    kernarg_size: int


#: Options get_device() may pass that belong to the emulator (its checks, and its timing
#: model's :data:`vlpc.runtime.device.MODEL_OPTIONS`: a GPU is measured); a HipDevice ignores them.
_EMULATOR_ONLY_OPTIONS = frozenset({"strict", "instruction_budget", "max_waves_in_flight"}) | MODEL_OPTIONS


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
        self._images: dict[str, np.ndarray] = {}  # kept alive with each module (see _function)
        self._functions: dict[tuple[str, str], Any] = {}
        self._live: dict[int, Any] = {}
        self._closed = False

    # -- properties --------------------------------------------------------------------------

    def _query_properties(self, index: int) -> HipDeviceProperties:
        return device_properties(self._hip, self._library, index)

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
        """``hipModuleLoadData`` once per code object (by content), then the function.

        The image handed to the runtime is kept in ``self._images`` for as long as the
        module is loaded: clr records the pointer without copying the bytes
        (``hip_fatbin.cpp``, ``addDeviceProgram(..., make_copy=false)``), and whatever reads
        the image later (profilers, debuggers, a lazily loaded kernel) must not find freed
        memory.  :meth:`close` unloads the modules, then drops the images."""
        key = hashlib.sha256(co.data).hexdigest()
        module = self._modules.get(key)
        if module is None:
            image = np.frombuffer(bytes(co.data), np.uint8).copy()  # owned, writable, stable address
            module = _call(self._hip, "hipModuleLoadData", image)
            self._modules[key] = module
            self._images[key] = image
        fkey = (key, kernel_name)
        fn = self._functions.get(fkey)
        if fn is None:
            fn = _call(self._hip, "hipModuleGetFunction", module, kernel_name.encode())
            self._functions[fkey] = fn
        return fn

    # -- launching ---------------------------------------------------------------------------

    def launch(self, co: Any, kernel_name: str, grid: Any = (1, 1, 1), block: Any = (64, 1, 1),
               args: Sequence[Any] | bytes = (), dynamic_lds: int = 0, *,
               buffer_sizes: Any = None, iterations: int = 1, warmup: int = 0,
               back_to_back: int | None = None) -> HipLaunchStats:
        """Launch ``kernel_name`` of ``co`` (a CodeObject, path or bytes) and wait.

        ``grid`` counts workgroups, ``block`` work-items per workgroup (HIP's
        convention).  All of :meth:`Device.prepare_launch`'s checks run first
        (including the target id check: a ``sramecc-`` code object is refused on
        an ECC-on board, naming both ids), then HIP's grid limits
        (:func:`check_hip_launch_limits`).  Runs ``warmup`` untimed launches, then
        ``iterations`` samples of ``back_to_back`` launches each, timed with a pair of HIP
        events around the batch (:class:`HipLaunchStats`); ``back_to_back`` defaults to 1
        for a single launch (``iterations == 1``, ``warmup == 0``) and to
        :data:`DEFAULT_BACK_TO_BACK` otherwise.  The kernel runs
        ``warmup + iterations x back_to_back`` times in all.
        """
        return self.launch_plan(co, [(kernel_name, grid, block)], args, dynamic_lds,
                                buffer_sizes=buffer_sizes, iterations=iterations, warmup=warmup,
                                back_to_back=back_to_back)

    def launch_plan(self, co: Any, steps: Sequence[Any], args: Sequence[Any] | bytes = (),
                    dynamic_lds: int = 0, *, buffer_sizes: Any = None, iterations: int = 1,
                    warmup: int = 0, back_to_back: int | None = None) -> HipLaunchStats:
        """Launch the kernels of a plan in order, with the same arguments, and time it.

        ``steps`` are :class:`vlpc.kernel.PlanStep` objects or ``(kernel_name, grid,
        block)`` tuples.  Every step is checked (as in :meth:`launch`) before anything is
        enqueued.  ``warmup`` untimed executions of the whole plan, then ``iterations``
        samples, each ``back_to_back`` executions of the whole plan with no wait in
        between: events around the batch time the plan, events recorded between its
        kernels time each kernel (``HipLaunchStats.kernels``); every time is divided by
        ``back_to_back``.  The kernels only ever run as the whole plan, in order, so the
        results are those of complete plans.  One launch (``iterations == 1``,
        ``warmup == 0``, the default) runs the plan exactly once.
        """
        iterations, warmup = int(iterations), int(warmup)
        if back_to_back is None:
            back_to_back = 1 if iterations == 1 and warmup == 0 else DEFAULT_BACK_TO_BACK
        back_to_back = int(back_to_back)
        if iterations < 1 or warmup < 0 or back_to_back < 1:
            raise DeviceError(f"iterations and back_to_back must be >= 1 and warmup >= 0 (got "
                              f"{iterations}, {back_to_back}, {warmup})")
        if not steps:
            raise DeviceError("a plan needs at least one kernel")
        self._select()
        launches = []
        for step in steps:
            name, grid, block = ((step.kernel, step.grid, step.block) if hasattr(step, "kernel")
                                 else step)
            co_, kernel, geometry = self.prepare_launch(co, name, grid, block, args, dynamic_lds,
                                                        buffer_sizes)
            check_hip_launch_limits(geometry.grid, geometry.block)
            kernarg = self.pack(kernel, args, geometry)
            launches.append(_Prepared(kernel.name, self._function(co_, kernel.name),
                                      tuple(geometry.grid), tuple(geometry.block),
                                      int(geometry.dynamic_lds), hip_launch_extra(kernarg),
                                      len(kernarg)))
        t0 = time.perf_counter()
        whole, per_kernel = self._timed(launches, iterations, warmup, back_to_back)
        wall = time.perf_counter() - t0
        where = f"hip:{self.index}"

        def stats(name: str, ls: list[_Prepared], ms: list[float]) -> HipLaunchStats:
            first = ls[0]
            return HipLaunchStats(kernel_name=name, grid=first.grid, block=first.block,
                                  kernel_ms=ms, warmup=warmup, wall_s=wall,
                                  kernarg_size=first.kernarg_size, dynamic_lds=first.dynamic_lds,
                                  device=where, back_to_back=back_to_back)

        if len(launches) == 1:
            return stats(launches[0].name, launches, whole)
        total = stats("+".join(p.name for p in launches), launches, whole)
        total.kernels = [stats(p.name, [p], ms) for p, ms in zip(launches, per_kernel)]
        return total

    def _enqueue(self, p: _Prepared) -> None:
        g, b = p.grid, p.block
        _call(self._hip, "hipModuleLaunchKernel", p.function, g[0], g[1], g[2], b[0], b[1], b[2],
              p.dynamic_lds, None, None, p.extra.array)

    def _timed(self, launches: list[_Prepared], iterations: int, warmup: int,
               back_to_back: int) -> tuple[list[float], list[list[float]]]:
        """Enqueue and time; returns the per-launch milliseconds of the whole sequence and of
        each of its kernels, one sample per iteration.

        Per sample: two events for one kernel (before and after the batch), or one before
        and one after every kernel of every execution for a plan.  Every event is created
        before the warmup and all samples are enqueued before the one wait, so once the
        queue runs ahead of the GPU no host time falls inside a sample."""
        hip = self._hip
        n = len(launches)
        marks = 2 if n == 1 else n * back_to_back + 1
        events: list[Any] = []
        chains: list[list[Any]] = []
        try:
            for _ in range(iterations):  # every event before the first launch: none in a sample
                chain = []
                for _ in range(marks):
                    ev = _call(hip, "hipEventCreate")
                    events.append(ev)
                    chain.append(ev)
                chains.append(chain)
            for _ in range(warmup):
                for p in launches:
                    self._enqueue(p)
            for chain in chains:
                _call(hip, "hipEventRecord", chain[0], None)
                j = 1
                for _ in range(back_to_back):
                    for p in launches:
                        self._enqueue(p)
                        if n > 1:
                            _call(hip, "hipEventRecord", chain[j], None)
                            j += 1
                if n == 1:
                    _call(hip, "hipEventRecord", chain[1], None)
            _call(hip, "hipEventSynchronize", chains[-1][-1])
            _call(hip, "hipDeviceSynchronize")

            def elapsed(a: Any, b: Any) -> float:
                return float(_call(hip, "hipEventElapsedTime", a, b))

            whole = [elapsed(c[0], c[-1]) / back_to_back for c in chains]
            if n == 1:
                return whole, [whole]
            per_kernel = [[sum(elapsed(c[r * n + i], c[r * n + i + 1]) for r in range(back_to_back))
                           / back_to_back for c in chains] for i in range(n)]
            return whole, per_kernel
        finally:
            for ev in events:
                try:
                    hip.hipEventDestroy(ev)
                except Exception:
                    pass

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
        self._images.clear()  # only after hipModuleUnload: the runtime pointed into them
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
