"""The kernarg segment packer and the AQL packets every vlpc device uses.

One packer (:func:`pack_kernargs`) serves the emulator and the HIP device, so a
kernel sees the same kernarg bytes on both.  It lays out the explicit arguments
at the offsets the code object's metadata gives (AMDGPUUsage "Code Object V3
Kernel Argument Metadata Map") and fills the hidden arguments the way the HIP
runtime (ROCclr ``VirtualGPU::submitKernelInternal``) fills them (AMDGPUUsage
"Code Object V5 Metadata", hidden argument table; "Code Object V4 Metadata"
for ``hidden_global_offset_*`` and the service pointers).

:func:`build_dispatch_packet` encodes the 64-byte ``hsa_kernel_dispatch_packet_t``
(HSA Platform System Architecture spec 2.9.6; AMDGPUUsage "Kernel Dispatch"):
code compiled by hipcc for code object v4 reads ``blockDim`` from its
``workgroup_size_*`` fields through the dispatch pointer, v5 code from the
``hidden_group_size_*`` kernargs, so both must agree.  :func:`build_queue_object`
encodes a minimal ``amd_queue_t`` for kernels that enable the queue pointer.

Errors are :class:`KernargError` naming the argument.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from vlpc.errors import VlpcError


class KernargError(VlpcError):
    """The arguments do not fit the kernel's metadata (names the argument)."""


#: Largest grid extent in work-items per dimension (``grid_size_*`` is a u32).
MAX_GRID_SIZE = 2**32 - 1


@dataclass(frozen=True)
class LaunchGeometry:
    """The shape of a launch.

    ``grid`` counts workgroups per dimension (like ``hipModuleLaunchKernel``'s
    ``gridDim``), ``block`` work-items per workgroup; ``dynamic_lds`` is the
    dynamic group segment in bytes (``sharedMemBytes``).  ``dims`` is the number
    of dimensions reported to the kernel (``setup`` of the dispatch packet and
    ``hidden_grid_dims``): HIP always launches 3-dimensional NDRanges.
    """

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_lds: int = 0
    dims: int = 3

    @property
    def grid_size(self) -> tuple[int, int, int]:
        """Work-items per dimension (the dispatch packet's ``grid_size_*``)."""
        return tuple(g * b for g, b in zip(self.grid, self.block))  # type: ignore[return-value]

    @property
    def workgroup_size(self) -> int:
        return math.prod(self.block)

    @property
    def workgroups(self) -> int:
        return math.prod(self.grid)

    def dim(self, i: int, value: int, default: int = 1) -> int:
        """ROCclr's rule: a dimension beyond ``dims`` reports ``default``."""
        return value if self.dims > i else default


@dataclass(frozen=True)
class HiddenValues:
    """Device-provided values of hidden arguments; all default to 0 (null).

    Pointers are device addresses.  ``private_aperture_base`` and
    ``shared_aperture_base`` are the 64-bit flat-address bases of the private
    and LDS apertures; ``hidden_private_base``/``hidden_shared_base`` receive
    their high 32 bits (AMDGPUUsage: only targets without aperture registers
    ask for them; gfx906 has the registers, so its code objects never do).
    """

    queue_ptr: int = 0
    hostcall_buffer: int = 0
    printf_buffer: int = 0
    default_queue: int = 0
    completion_action: int = 0
    multigrid_sync_arg: int = 0
    heap_v1: int = 0
    private_aperture_base: int = 0
    shared_aperture_base: int = 0
    global_offset: tuple[int, int, int] = (0, 0, 0)


def hidden_value(kind: str, launch: LaunchGeometry, hidden: HiddenValues) -> int:
    """The value the HIP runtime stores for hidden argument kind ``kind``.

    ``hidden_block_count_*`` = grid_size // block (whole workgroups),
    ``hidden_group_size_*`` = block, ``hidden_remainder_*`` = grid_size % block
    (0: vlpc launches whole workgroups), ``hidden_grid_dims`` = ``launch.dims``,
    ``hidden_dynamic_lds_size`` = dynamic LDS bytes; unknown kinds and
    ``hidden_none`` are 0.
    """
    gs, bl = launch.grid_size, launch.block
    axis = {"x": 0, "y": 1, "z": 2}
    if kind.startswith("hidden_block_count_") and kind[-1] in axis:
        i = axis[kind[-1]]
        return launch.dim(i, gs[i] // bl[i])
    if kind.startswith("hidden_group_size_") and kind[-1] in axis:
        i = axis[kind[-1]]
        return launch.dim(i, bl[i])
    if kind.startswith("hidden_remainder_") and kind[-1] in axis:
        i = axis[kind[-1]]
        return launch.dim(i, gs[i] % bl[i], 0)
    if kind.startswith("hidden_global_offset_") and kind[-1] in axis:
        i = axis[kind[-1]]
        return launch.dim(i, hidden.global_offset[i], 0)
    simple = {
        "hidden_grid_dims": launch.dims,
        "hidden_dynamic_lds_size": launch.dynamic_lds,
        "hidden_queue_ptr": hidden.queue_ptr,
        "hidden_hostcall_buffer": hidden.hostcall_buffer,
        "hidden_printf_buffer": hidden.printf_buffer,
        "hidden_default_queue": hidden.default_queue,
        "hidden_completion_action": hidden.completion_action,
        "hidden_multigrid_sync_arg": hidden.multigrid_sync_arg,
        "hidden_heap_v1": hidden.heap_v1,
        "hidden_private_base": (hidden.private_aperture_base >> 32) & 0xFFFFFFFF,
        "hidden_shared_base": (hidden.shared_aperture_base >> 32) & 0xFFFFFFFF,
    }
    return simple.get(kind, 0)


# -- explicit argument conversion --------------------------------------------------------

_FLOAT_TYPES = {"float": 4, "double": 8, "half": 2, "_Float16": 2, "__fp16": 2, "float16_t": 2,
                "float32_t": 4, "float64_t": 8}
_UNSIGNED_PREFIXES = ("unsigned", "uint", "u", "size_t", "uchar", "ushort", "ulong", "bool",
                      "_Bool")


def _scalar_class(type_name: str | None) -> str | None:
    """'float', 'signed', 'unsigned' or None (unknown/absent) for a metadata type name."""
    if not type_name:
        return None
    t = type_name.replace("const", "").replace("volatile", "").strip()
    if "*" in t or t.startswith("struct") or t.startswith("union") or "[" in t:
        return None
    if t in _FLOAT_TYPES:
        return "float"
    if t in ("char", "short", "int", "long", "long long", "signed char", "int8_t", "int16_t",
             "int32_t", "int64_t", "ptrdiff_t", "ssize_t", "signed", "signed int", "long int",
             "short int", "long long int", "intptr_t"):
        return "signed"
    if t.startswith(_UNSIGNED_PREFIXES) or t in ("uintptr_t",):
        return "unsigned"
    return None


def _pack_int(value: int, size: int, arg_label: str, unsigned: bool | None) -> bytes:
    if size not in (1, 2, 4, 8):
        raise KernargError(f"argument {arg_label}: an int cannot fill a {size}-byte value; "
                           f"pass {size} raw bytes")
    lo = 0 if unsigned else -(1 << (8 * size - 1))
    hi = (1 << (8 * size)) - 1 if unsigned is not False else (1 << (8 * size - 1)) - 1
    if not lo <= value <= hi:
        raise KernargError(f"argument {arg_label}: {value} does not fit in {size} bytes")
    return (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def _pack_float(value: float, size: int, arg_label: str) -> bytes:
    fmt = {2: "<e", 4: "<f", 8: "<d"}.get(size)
    if fmt is None:
        raise KernargError(f"argument {arg_label}: a float cannot fill a {size}-byte value")
    try:
        return struct.pack(fmt, value)
    except OverflowError:
        raise KernargError(f"argument {arg_label}: {value} overflows a {size}-byte float") from None


def _by_value(arg, value: Any) -> bytes:
    label = arg.label
    cls = _scalar_class(arg.type_name)
    if isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
        if len(b) != arg.size:
            raise KernargError(f"argument {label}: {len(b)} raw bytes given, the kernel takes "
                               f"{arg.size}")
        return b
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.generic):
        if value.dtype.itemsize != arg.size:
            raise KernargError(f"argument {label}: {value.dtype} is {value.dtype.itemsize} bytes, "
                               f"the kernel takes {arg.size}"
                               + (f" ({arg.type_name})" if arg.type_name else ""))
        kind = value.dtype.kind
        if cls == "float" and kind in "iub":
            raise KernargError(f"argument {label}: {value.dtype} given for {arg.type_name}")
        if cls in ("signed", "unsigned") and kind in "fc":
            raise KernargError(f"argument {label}: {value.dtype} given for {arg.type_name}")
        return value.tobytes()
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        if cls == "float":
            return _pack_float(float(value), arg.size, label)
        return _pack_int(value, arg.size, label,
                         True if cls == "unsigned" else (False if cls == "signed" else None))
    if isinstance(value, float):
        if cls == "float":
            return _pack_float(value, arg.size, label)
        if cls in ("signed", "unsigned"):
            raise KernargError(f"argument {label}: float {value} given for {arg.type_name}")
        if arg.type_name is None and arg.size in (2, 4, 8):
            # hipcc drops type names: a float argument of 2/4/8 bytes is half/float/double
            return _pack_float(value, arg.size, label)
        raise KernargError(f"argument {label}: a Python float is ambiguous for a {arg.size}-byte "
                           f"'{arg.type_name or 'untyped'}' value; pass a NumPy scalar or raw bytes")
    if hasattr(value, "address"):
        raise KernargError(f"argument {label}: a buffer given for a by-value argument")
    raise KernargError(f"argument {label}: cannot pass {type(value).__name__} by value")


def _pointer(arg, value: Any) -> bytes:
    label = arg.label
    if arg.size != 8:
        raise KernargError(f"argument {label}: {arg.size}-byte pointers are not supported")
    if value is None:
        return bytes(8)
    if isinstance(value, np.ndarray):
        raise KernargError(f"argument {label}: a NumPy array given for a buffer; upload it to "
                           f"the device first (device.upload)")
    addr = getattr(value, "address", value)
    if isinstance(addr, np.integer):
        addr = int(addr)
    if isinstance(addr, bool) or not isinstance(addr, int):
        raise KernargError(f"argument {label}: expected a device buffer or an address, got "
                           f"{type(value).__name__}")
    if not 0 <= addr < 2**64:
        raise KernargError(f"argument {label}: address {addr} is not a 64-bit address")
    return addr.to_bytes(8, "little")


def _metadata(kernel):
    return getattr(kernel, "metadata", kernel)


def explicit_size(kernel) -> int:
    """Bytes spanned by the explicit arguments (end of the last one)."""
    md = _metadata(kernel)
    return max((a.offset + a.size for a in md.explicit_args), default=0)


def pack_kernargs(kernel, args: Sequence[Any] | bytes | bytearray | memoryview,
                  launch: LaunchGeometry, *, hidden: HiddenValues | None = None) -> bytes:
    """The kernarg segment for one launch: ``kernarg_segment_size`` bytes.

    ``kernel`` is a :class:`~vlpc.runtime.code_object.Kernel` (or its
    :class:`KernelMetadata`).  ``args`` lists the explicit arguments in metadata
    order:

    * ``global_buffer`` (and ``dynamic_shared_pointer``): an object with an
      ``.address`` (a device :class:`Buffer`), an int address, or ``None`` (null);
    * ``by_value``: a NumPy scalar whose itemsize equals the argument's ``.size``
      (and whose kind agrees with ``.type_name`` when there is one), a Python int
      (range-checked; converted to a float when ``.type_name`` is floating), a
      Python float (an IEEE float of ``.size`` bytes when ``.type_name`` is
      floating or absent, an error when it names an integer type or the size is
      not 2/4/8), or raw ``bytes`` of exactly ``.size`` (structs).

    Alternatively ``args`` may be raw bytes: exactly ``kernarg_segment_size``
    bytes are passed through untouched; exactly the explicit part's size gets the
    hidden arguments filled in after it.  Hidden arguments are filled by
    :func:`hidden_value`.  Raises :class:`KernargError`.
    """
    md = _metadata(kernel)
    hidden = hidden or HiddenValues()
    size = md.kernarg_segment_size
    buf = bytearray(size)
    for a in md.args:
        if a.offset < 0 or a.size < 0 or a.offset + a.size > size:
            raise KernargError(f"kernel '{md.name}': metadata argument {a.label} "
                               f"({a.offset}+{a.size}) lies outside the {size}-byte kernarg segment")

    explicit = md.explicit_args
    if isinstance(args, (bytes, bytearray, memoryview)):
        raw = bytes(args)
        if len(raw) == size:
            return raw
        ex = explicit_size(md)
        if len(raw) != ex:
            raise KernargError(f"kernel '{md.name}': raw kernargs are {len(raw)} bytes; expected "
                               f"{size} (whole segment)" + (f" or {ex} (explicit part)"
                                                          if ex != size else ""))
        buf[:ex] = raw
    else:
        if isinstance(args, (str, dict)) or not hasattr(args, "__len__"):
            raise KernargError(f"kernel '{md.name}': args must be a list or raw bytes, "
                               f"not {type(args).__name__}")
        if len(args) != len(explicit):
            names = ", ".join(a.name or a.value_kind for a in explicit) or "none"
            raise KernargError(f"kernel '{md.name}' takes {len(explicit)} arguments ({names}), "
                               f"{len(args)} given")
        for a, v in zip(explicit, args):
            if a.value_kind in ("global_buffer", "dynamic_shared_pointer"):
                b = _pointer(a, v)
            elif a.value_kind == "by_value":
                b = _by_value(a, v)
            else:
                raise KernargError(f"argument {a.label}: value kind '{a.value_kind}' is not "
                                   f"supported")
            buf[a.offset:a.offset + a.size] = b

    for a in md.hidden_args:
        v = hidden_value(a.value_kind, launch, hidden)
        if a.size > 0:
            buf[a.offset:a.offset + a.size] = (v & ((1 << (8 * a.size)) - 1)).to_bytes(a.size, "little")
    return bytes(buf)


# -- AQL packets --------------------------------------------------------------------------

HSA_PACKET_TYPE_KERNEL_DISPATCH = 2
HSA_PACKET_HEADER_BARRIER = 8
HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE = 9
HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE = 11
HSA_FENCE_SCOPE_SYSTEM = 2
DISPATCH_PACKET_SIZE = 64
#: hsa_kernel_dispatch_packet_t: header u16, setup u16, workgroup_size_x/y/z u16,
#: reserved0 u16, grid_size_x/y/z u32, private_segment_size u32,
#: group_segment_size u32, kernel_object u64, kernarg_address u64, reserved2 u64,
#: completion_signal u64.
DISPATCH_PACKET_FORMAT = "<HHHHHHIIIIIQQQQ"
#: Byte offsets of the fields kernels read through the dispatch pointer.
DISPATCH_PACKET_OFFSETS = {
    "header": 0, "setup": 2, "workgroup_size_x": 4, "workgroup_size_y": 6,
    "workgroup_size_z": 8, "grid_size_x": 12, "grid_size_y": 16, "grid_size_z": 20,
    "private_segment_size": 24, "group_segment_size": 28, "kernel_object": 32,
    "kernarg_address": 40, "completion_signal": 56,
}
DEFAULT_DISPATCH_HEADER = (
    (HSA_PACKET_TYPE_KERNEL_DISPATCH)
    | (1 << HSA_PACKET_HEADER_BARRIER)
    | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE)
    | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE)
)


@dataclass(frozen=True)
class DispatchPacket:
    """A decoded ``hsa_kernel_dispatch_packet_t`` (sizes: work-items and bytes)."""

    header: int
    setup: int
    workgroup_size: tuple[int, int, int]
    grid_size: tuple[int, int, int]
    private_segment_size: int
    group_segment_size: int
    kernel_object: int
    kernarg_address: int
    completion_signal: int

    @property
    def dimensions(self) -> int:
        return self.setup & 0x3

    def pack(self) -> bytes:
        return struct.pack(DISPATCH_PACKET_FORMAT, self.header, self.setup, *self.workgroup_size,
                           0, *self.grid_size, self.private_segment_size,
                           self.group_segment_size, self.kernel_object, self.kernarg_address, 0,
                           self.completion_signal)

    @staticmethod
    def unpack(data: bytes) -> DispatchPacket:
        f = struct.unpack_from(DISPATCH_PACKET_FORMAT, bytes(data[:DISPATCH_PACKET_SIZE]))
        return DispatchPacket(f[0], f[1], (f[2], f[3], f[4]), (f[6], f[7], f[8]), f[9], f[10],
                              f[11], f[12], f[14])


def build_dispatch_packet(launch: LaunchGeometry, *, kernel_object: int, kernarg_address: int,
                          private_segment_size: int = 0, group_segment_size: int = 0,
                          completion_signal: int = 0, header: int = DEFAULT_DISPATCH_HEADER) -> bytes:
    """The 64 bytes of an AQL kernel dispatch packet for ``launch``.

    ``workgroup_size_*`` = block, ``grid_size_*`` = grid x block (work-items),
    ``setup`` = dimensions (dimensions beyond ``launch.dims`` report 1, as ROCclr
    does); ``kernel_object`` is the kernel descriptor's device address;
    ``group_segment_size`` should be the static plus dynamic LDS bytes and
    ``private_segment_size`` the per-work-item scratch bytes.
    """
    gs = launch.grid_size
    for i, g in enumerate(gs):
        if g > MAX_GRID_SIZE:
            raise KernargError(f"grid dimension {'xyz'[i]} is {g} work-items, over {MAX_GRID_SIZE}")
    for i, b in enumerate(launch.block):
        if not 0 < b <= 0xFFFF:
            raise KernargError(f"workgroup dimension {'xyz'[i]} is {b}, outside 1..65535")
    wg = tuple(launch.dim(i, launch.block[i]) for i in range(3))
    grid = tuple(launch.dim(i, gs[i]) for i in range(3))
    return DispatchPacket(header, launch.dims, wg, grid, private_segment_size,  # type: ignore[arg-type]
                          group_segment_size, kernel_object, kernarg_address,
                          completion_signal).pack()


#: Size of ``amd_queue_t`` (ROCr ``amd_hsa_queue.h``), 64-byte aligned.
AMD_QUEUE_SIZE = 256
AMD_QUEUE_OFFSETS = {
    # hsa_queue_t
    "type": 0, "features": 4, "base_address": 8, "doorbell_signal": 16, "size": 24, "id": 32,
    # amd_queue_t
    "write_dispatch_id": 56, "group_segment_aperture_base_hi": 64,
    "private_segment_aperture_base_hi": 68, "max_cu_id": 72, "max_wave_id": 76,
    "read_dispatch_id": 128,
}


def build_queue_object(*, ring_address: int, ring_packets: int = 1, queue_id: int = 0,
                       write_dispatch_id: int = 1, read_dispatch_id: int = 0,
                       shared_aperture_base: int = 0, private_aperture_base: int = 0,
                       max_cu_id: int = 59, max_wave_id: int = 39) -> bytes:
    """A minimal ``amd_queue_t`` (256 bytes) whose ring holds the dispatch packet.

    Kernels that enable the queue pointer read the aperture bases from it (GFX8
    and older) or pass it to device-side enqueue; everything not listed is 0.
    ``hsa_queue_t.type`` is ``HSA_QUEUE_TYPE_MULTIPLE`` (0), ``features``
    ``HSA_QUEUE_FEATURE_KERNEL_DISPATCH`` (1), ``size`` counts packets.
    """
    q = bytearray(AMD_QUEUE_SIZE)
    o = AMD_QUEUE_OFFSETS
    struct.pack_into("<II", q, o["type"], 0, 1)
    struct.pack_into("<Q", q, o["base_address"], ring_address)
    struct.pack_into("<I", q, o["size"], ring_packets)
    struct.pack_into("<Q", q, o["id"], queue_id)
    struct.pack_into("<Q", q, o["write_dispatch_id"], write_dispatch_id)
    struct.pack_into("<II", q, o["group_segment_aperture_base_hi"],
                     (shared_aperture_base >> 32) & 0xFFFFFFFF,
                     (private_aperture_base >> 32) & 0xFFFFFFFF)
    struct.pack_into("<II", q, o["max_cu_id"], max_cu_id, max_wave_id)
    struct.pack_into("<Q", q, o["read_dispatch_id"], read_dispatch_id)
    return bytes(q)
