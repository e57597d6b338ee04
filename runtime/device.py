"""Devices that run code objects: the functional emulator and (when present) a real GPU through HIP.

:func:`vlpc.runtime.selection.get_device` picks one by name:

* ``"emulator"`` — :class:`vlpc.runtime.emulator.device.EmulatorDevice`, always available;
* ``"hip"`` — ``vlpc.runtime.hip`` (imported lazily; needs the ROCm HIP runtime and a GPU);
* ``"auto"`` — HIP when a gfx906-compatible GPU answers, otherwise the emulator;
  ``device.selection_reason`` says which was picked and why.

Every device shares :class:`Device`'s launch checks (all done before anything
runs, each a one-line :class:`LaunchError`) and the kernarg packer
(:func:`vlpc.runtime.kernargs.pack_kernargs`), so a launch behaves the same on
the emulator and on a GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from os import PathLike
from typing import Any, Mapping, Sequence

import numpy as np

from vlpc.errors import DeviceError, LaunchError  # noqa: F401  (LaunchError re-exported)
from vlpc.runtime.code_object import CodeObject, CodeObjectError, Kernel, load_code_object
from vlpc.runtime.kernargs import (MAX_GRID_SIZE, HiddenValues, KernargError, LaunchGeometry,
                                   pack_kernargs)
from vlpc.targets import GFX906, TargetId

#: LDS a workgroup may use on gfx906 (bytes).
MAX_LDS_BYTES = GFX906.lds_bytes_per_cu
#: Work-items a workgroup may have.
MAX_WORKGROUP_SIZE = GFX906.max_workitems_per_workgroup


@dataclass(eq=False)
class Buffer:
    """A device allocation.

    ``address`` is the device address of its first byte, ``nbytes`` its size in
    bytes, ``device`` the :class:`Device` that owns it.  ``dtype``/``shape``
    remember what :meth:`Device.upload` put there (``download`` defaults to
    them).  Pass a buffer as a ``global_buffer`` kernel argument.
    """

    address: int
    nbytes: int
    device: Device = field(repr=False)
    dtype: np.dtype | None = None
    shape: tuple[int, ...] | None = None
    freed: bool = False
    handle: Any = field(default=None, repr=False)

    def __int__(self) -> int:
        return self.address

    def __repr__(self) -> str:
        state = ", freed" if self.freed else ""
        return f"Buffer(0x{self.address:x}, {self.nbytes} B on {self.device.name}{state})"


def _dims(value: Any, what: str) -> tuple[int, int, int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (int(value),)
    try:
        t = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise LaunchError(f"{what} must be up to 3 integers, got {value!r}") from None
    if not 1 <= len(t) <= 3:
        raise LaunchError(f"{what} must have 1 to 3 dimensions, got {len(t)}")
    t = t + (1,) * (3 - len(t))
    for i, v in enumerate(t):
        if v <= 0:
            raise LaunchError(f"{what} dimension {'xyz'[i]} is {v}; every dimension must be >= 1")
    return t  # type: ignore[return-value]


class Device:
    """A place to allocate memory and launch kernels.

    Subclasses either implement the memory primitives (``_alloc``, ``_free``,
    ``_write``, ``_read``) and ``_run`` (one launch that passed
    :meth:`prepare_launch`) and inherit everything user-facing, or override the
    public methods themselves (then they should call :meth:`prepare_launch` and
    :meth:`pack` so launches are checked and packed the same way everywhere).
    Attributes: ``name`` (``"emulator"``/``"hip"``), ``target_id``
    (:class:`~vlpc.targets.TargetId` the device runs), ``selection_reason`` (set
    by :func:`get_device`).
    """

    name: str = "device"
    target_id: TargetId
    selection_reason: str = "requested by name"

    def __init__(self) -> None:
        self.selection_reason = f"{self.name} requested"

    # -- memory ---------------------------------------------------------------------------

    def _alloc(self, nbytes: int) -> tuple[int, Any]:
        """Allocate ``nbytes`` (>= 1); returns (device address, backend handle)."""
        raise NotImplementedError

    def _free(self, address: int, handle: Any) -> None:
        raise NotImplementedError

    def _write(self, address: int, data: bytes | np.ndarray) -> None:
        raise NotImplementedError

    def _read(self, address: int, nbytes: int) -> np.ndarray:
        """``nbytes`` bytes at ``address`` as a uint8 array."""
        raise NotImplementedError

    def alloc(self, nbytes: int) -> Buffer:
        """A zero-filled buffer of ``nbytes`` bytes (``nbytes`` >= 0)."""
        nbytes = int(nbytes)
        if nbytes < 0:
            raise DeviceError(f"cannot allocate {nbytes} bytes")
        addr, handle = self._alloc(max(nbytes, 1))
        return Buffer(addr, nbytes, self, handle=handle)

    def upload(self, array: Any) -> Buffer:
        """Copy a NumPy array (made C-contiguous) into a new buffer; remembers dtype/shape."""
        arr = np.ascontiguousarray(array)
        buf = self.alloc(arr.nbytes)
        buf.dtype, buf.shape = arr.dtype, arr.shape
        if arr.nbytes:
            self._write(buf.address, arr.reshape(-1).view(np.uint8))
        return buf

    def write(self, buf: Buffer, array: Any, offset: int = 0) -> None:
        """Copy a NumPy array's bytes into ``buf`` at byte ``offset``."""
        self._check_own(buf, "write to")
        data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        if offset < 0 or offset + data.nbytes > buf.nbytes:
            raise DeviceError(f"writing {data.nbytes} bytes at offset {offset} overflows a "
                              f"{buf.nbytes}-byte buffer")
        if data.nbytes:
            self._write(buf.address + offset, data)

    def download(self, buf: Buffer, dtype: Any = None, shape: Any = None) -> np.ndarray:
        """The buffer's contents as a new array of ``dtype`` and ``shape``.

        ``dtype``/``shape`` default to what was uploaded (else uint8, whole
        buffer); ``shape=None`` with an explicit dtype reads the whole buffer.
        Raises :class:`DeviceError` when the shape needs more bytes than the buffer has.
        """
        self._check_own(buf, "download")
        dt = np.dtype(dtype if dtype is not None else (buf.dtype if buf.dtype is not None else np.uint8))
        if shape is None:
            if dtype is None and buf.shape is not None:
                shape = buf.shape
            else:
                if buf.nbytes % dt.itemsize:
                    raise DeviceError(f"a {buf.nbytes}-byte buffer is not a whole number of {dt}")
                shape = (buf.nbytes // dt.itemsize,)
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        need = math.prod(shape) * dt.itemsize
        if need > buf.nbytes:
            raise DeviceError(f"downloading {shape} {dt} needs {need} bytes; the buffer has "
                              f"{buf.nbytes}")
        raw = self._read(buf.address, need) if need else np.zeros(0, np.uint8)
        return np.array(raw, dtype=np.uint8, copy=True).view(dt).reshape(shape)

    def free(self, buf: Buffer) -> None:
        """Release a buffer; freeing twice or another device's buffer is a DeviceError."""
        self._check_own(buf, "free")
        self._free(buf.address, buf.handle)
        buf.freed = True

    def _check_own(self, buf: Any, action: str) -> None:
        if not isinstance(buf, Buffer):
            raise DeviceError(f"cannot {action} {type(buf).__name__}: not a device Buffer")
        if buf.device is not self:
            raise DeviceError(f"cannot {action} a buffer of device '{buf.device.name}' on "
                              f"'{self.name}'")
        if buf.freed:
            raise DeviceError(f"cannot {action} a freed buffer (0x{buf.address:x})")

    # -- launching ------------------------------------------------------------------------

    def hidden_values(self) -> HiddenValues:
        """Device-provided hidden-argument values (service pointers, apertures)."""
        return HiddenValues()

    def prepare_launch(self, co: CodeObject | bytes | str | PathLike, kernel_name: str,
                       grid: Any, block: Any, args: Sequence[Any] | bytes,
                       dynamic_lds: int = 0,
                       buffer_sizes: Mapping[int | str, int] | None = None
                       ) -> tuple[CodeObject, Kernel, LaunchGeometry]:
        """Every check :meth:`launch` makes before running, in order; returns the
        parsed code object, the kernel and the geometry.  Raises :class:`LaunchError`:

        kernel not in the code object; code object target incompatible with the
        device (AMDGPUUsage "Target ID"); wave32 code; block dims < 1, over the
        metadata's ``.max_flat_workgroup_size`` or over 1024 work-items, or not
        ``.reqd_workgroup_size``; grid dims < 1 or over 2^32-1 work-items; LDS
        (static + dynamic) over 64 KiB; a buffer argument that is not this
        device's, or freed, or smaller than ``buffer_sizes`` declares (keys:
        explicit-argument index or name, values: bytes needed); arguments the
        packer rejects (wrong count or types, see :func:`pack_kernargs`).
        """
        if not isinstance(co, CodeObject):
            try:
                co = load_code_object(co)
            except CodeObjectError as e:
                raise LaunchError(str(e)) from None
        try:
            kernel = co.kernel(kernel_name)
        except CodeObjectError as e:
            raise LaunchError(str(e)) from None
        if not co.target_id.compatible_with(self.target_id):
            raise LaunchError(f"code object {co.source} is for {co.target_id}, which cannot run on "
                              f"this {self.name} device ({self.target_id})")
        d, md = kernel.descriptor, kernel.metadata
        if d.enable_wavefront_size32 or md.wavefront_size != 64:
            raise LaunchError(f"kernel '{kernel_name}' is wave32 code; {self.target_id.target.name} "
                              f"runs wave64 only")
        grid3 = _dims(grid, "grid")
        block3 = _dims(block, "block")
        wg = math.prod(block3)
        limit = min(md.max_flat_workgroup_size or MAX_WORKGROUP_SIZE, MAX_WORKGROUP_SIZE)
        if wg > limit:
            why = ("the kernel's .max_flat_workgroup_size" if limit < MAX_WORKGROUP_SIZE
                   else "the hardware limit")
            raise LaunchError(f"block {block3} has {wg} work-items, over {why} of {limit} "
                              f"(kernel '{kernel_name}')")
        if md.reqd_workgroup_size and tuple(md.reqd_workgroup_size) != block3:
            raise LaunchError(f"kernel '{kernel_name}' requires block "
                              f"{tuple(md.reqd_workgroup_size)}, got {block3}")
        for i in range(3):
            if grid3[i] * block3[i] > MAX_GRID_SIZE:
                raise LaunchError(f"grid dimension {'xyz'[i]} is {grid3[i]} x {block3[i]} = "
                                  f"{grid3[i] * block3[i]} work-items, over {MAX_GRID_SIZE}")
        dynamic_lds = int(dynamic_lds)
        if dynamic_lds < 0:
            raise LaunchError(f"dynamic LDS size {dynamic_lds} is negative")
        lds = d.group_segment_fixed_size + dynamic_lds
        if lds > MAX_LDS_BYTES:
            raise LaunchError(f"kernel '{kernel_name}' needs {lds} bytes of LDS "
                              f"({d.group_segment_fixed_size} static + {dynamic_lds} dynamic), "
                              f"over the {MAX_LDS_BYTES}-byte limit")
        if not isinstance(args, (bytes, bytearray, memoryview)):
            self._check_buffer_args(kernel, args, buffer_sizes)
        geometry = LaunchGeometry(grid3, block3, dynamic_lds)
        self.pack(kernel, args, geometry, HiddenValues())  # argument errors before anything runs
        return co, kernel, geometry

    def _check_buffer_args(self, kernel: Kernel, args: Sequence[Any],
                           buffer_sizes: Mapping[int | str, int] | None) -> None:
        explicit = kernel.explicit_args
        try:
            values = list(args)
        except TypeError:
            return  # pack_kernargs reports it
        for i, (a, v) in enumerate(zip(explicit, values)):
            if isinstance(v, Buffer):
                if v.device is not self:
                    raise LaunchError(f"argument {i} {a.label} of '{kernel.name}' is a buffer of "
                                      f"device '{v.device.name}', not of this {self.name} device")
                if v.freed:
                    raise LaunchError(f"argument {i} {a.label} of '{kernel.name}' is a freed buffer")
            elif hasattr(v, "address") and not isinstance(v, Buffer) and a.value_kind == "global_buffer":
                owner = getattr(v, "device", None)
                if owner is not None and owner is not self:
                    raise LaunchError(f"argument {i} {a.label} of '{kernel.name}' belongs to "
                                      f"another device")
        for key, need in (buffer_sizes or {}).items():
            idx = key if isinstance(key, int) else next(
                (j for j, a in enumerate(explicit) if a.name == key), None)
            if idx is None or not 0 <= idx < len(values):
                raise LaunchError(f"buffer_sizes names argument {key!r}, which kernel "
                                  f"'{kernel.name}' does not have")
            v = values[idx]
            have = getattr(v, "nbytes", None)
            if have is not None and have < need:
                raise LaunchError(f"argument {idx} {explicit[idx].label} of '{kernel.name}': "
                                  f"buffer has {have} bytes, the launch needs {need}")

    def pack(self, kernel: Kernel, args: Sequence[Any] | bytes, launch: LaunchGeometry,
             hidden: HiddenValues | None = None) -> bytes:
        """:func:`pack_kernargs` with this device's hidden values; KernargError -> LaunchError."""
        try:
            return pack_kernargs(kernel, args, launch, hidden=hidden or self.hidden_values())
        except KernargError as e:
            raise LaunchError(f"kernel '{kernel.name}': {e}") from None

    def launch(self, co: CodeObject | bytes | str | PathLike, kernel_name: str,
               grid: Any = (1, 1, 1), block: Any = (64, 1, 1),
               args: Sequence[Any] | bytes = (), dynamic_lds: int = 0, *,
               buffer_sizes: Mapping[int | str, int] | None = None) -> Any:
        """Run ``kernel_name`` of ``co`` once and wait for it.

        ``grid`` counts workgroups per dimension (``hipModuleLaunchKernel``'s
        gridDim), ``block`` work-items per workgroup; either may be an int or a
        1-3 tuple.  ``args`` are the explicit kernel arguments (see
        :func:`~vlpc.runtime.kernargs.pack_kernargs`) or the raw kernarg bytes;
        ``dynamic_lds`` bytes of LDS are added to the kernel's static LDS.
        Returns the device's launch statistics (the emulator's ``LaunchStats``).
        All checks of :meth:`prepare_launch` run first.
        """
        co, kernel, geometry = self.prepare_launch(co, kernel_name, grid, block, args,
                                                   dynamic_lds, buffer_sizes)
        return self._run(co, kernel, geometry, args)

    def _run(self, co: CodeObject, kernel: Kernel, launch: LaunchGeometry,
             args: Sequence[Any] | bytes) -> Any:
        """Launch a checked kernel (pack the kernargs with :meth:`pack`) and wait."""
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.name} ({self.target_id})"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


#: Options of the emulator's timing model (the board it models, its clock and CU count, and
#: timing-only launches).  A GPU is measured, not modeled: the HIP device accepts and ignores
#: them (``--device auto`` of ``vlpc bench`` passes them whichever device answers).
MODEL_OPTIONS = frozenset({"gpu", "clock_mhz", "memory_clock_mhz", "cus", "timing_only"})
