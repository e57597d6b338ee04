"""Load and validate AMDGPU HSA code objects (``.hsaco``): ELF, kernel descriptors, metadata.

:func:`load_code_object` takes a path or the bytes of a linked code object (as
produced by :func:`vlpc.runtime.toolchain.assemble_and_link`, ``clang -x hip
--cuda-device-only`` or ``hipcc --genco``) and returns a :class:`CodeObject`
holding everything a device needs to launch its kernels:

* the target id from the ELF ``e_flags`` (AMDGPUUsage "ELF Header"),
* the code object version from ``e_ident[EI_ABIVERSION]`` (AMDGPUUsage "ELF
  Header": ``ELFABIVERSION_AMDGPU_HSA_V4 = 2``, ``_V5 = 3``, ``_V6 = 4``),
  cross-checked with the metadata's ``amdhsa.version``,
* one :class:`Kernel` per entry of the metadata note's ``amdhsa.kernels``
  (AMDGPUUsage "Code Object V4 Metadata" / "Code Object V5 Metadata"), with the
  64-byte kernel descriptor found at its ``<name>.kd`` symbol decoded into a
  :class:`KernelDescriptor` (AMDGPUUsage "Kernel Descriptor"),
* the loadable image: ``PT_LOAD`` segments laid out by ``p_vaddr`` (AMDGPUUsage
  "Loading"), with the dynamic relocations the loader applies.

Every problem with the input raises :class:`CodeObjectError` with a one-line
message; nothing here touches a device.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from io import BytesIO
from os import PathLike
from pathlib import Path
from typing import Any

from vlpc.errors import VlpcError
from vlpc.targets import TargetError, TargetId


class CodeObjectError(VlpcError):
    """The input is not a loadable AMDGPU HSA code object (one-line message)."""


# -- ELF constants (AMDGPUUsage "ELF Header", "Note Records", "Relocation Records") ---------

EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64
ELFOSABI_NAMES = {0: "SYSV", 3: "Linux", 64: "AMDGPU_HSA", 65: "AMDGPU_PAL", 66: "AMDGPU_MESA3D"}
#: e_ident[EI_ABIVERSION] -> code object version (for ELFOSABI_AMDGPU_HSA).
ABI_VERSION_TO_CODE_OBJECT = {0: 2, 1: 3, 2: 4, 3: 5, 4: 6}
#: Code object versions this loader accepts.
SUPPORTED_CODE_OBJECT_VERSIONS = (4, 5, 6)
#: ``amdhsa.version`` [major, minor] -> code object version.
METADATA_VERSION_TO_CODE_OBJECT = {(1, 0): 3, (1, 1): 4, (1, 2): 5, (1, 3): 6}
NT_AMDGPU_METADATA = 32
#: Kernel machine code starts on a 256-byte boundary (AMDGPUUsage "Kernel Descriptor").
KERNEL_CODE_ALIGN = 256
#: Largest PT_LOAD alignment the loader accepts (64 KiB pages at most in practice).
MAX_SEGMENT_ALIGN = 1 << 20
#: Largest image (``max(p_vaddr + p_memsz)``) the loader maps; a larger span is a garbled header.
MAX_IMAGE_BYTES = 1 << 30
KERNEL_DESCRIPTOR_SIZE = 64

PT_LOAD = 1
PT_DYNAMIC = 2
PT_NOTE = 4
SHT_NOTE = 7

# Relocation types the loader resolves (AMDGPUUsage "Relocation Records").
R_AMDGPU_NONE = 0
R_AMDGPU_ABS32_LO = 1
R_AMDGPU_ABS32_HI = 2
R_AMDGPU_ABS64 = 3
R_AMDGPU_ABS32 = 6
R_AMDGPU_RELATIVE64 = 13


# -- Kernel descriptor ----------------------------------------------------------------------


def _bits(value: int, lo: int, width: int) -> int:
    return (value >> lo) & ((1 << width) - 1)


@dataclass(frozen=True)
class KernelDescriptor:
    """The 64-byte kernel descriptor (AMDGPUUsage "Kernel Descriptor", code object v3+).

    Byte layout: ``group_segment_fixed_size`` u32 @0, ``private_segment_fixed_size``
    u32 @4, ``kernarg_size`` u32 @8, ``kernel_code_entry_byte_offset`` i64 @16 (from
    the descriptor's own address to the first instruction), ``compute_pgm_rsrc3``
    u32 @44 (reserved on gfx906), ``compute_pgm_rsrc1`` u32 @48,
    ``compute_pgm_rsrc2`` u32 @52, ``kernel_code_properties`` u16 @56,
    ``kernarg_preload`` u16 @58.  Sizes are bytes.

    The decoded properties follow the tables "compute_pgm_rsrc1 for GFX6-GFX12",
    "compute_pgm_rsrc2 for GFX6-GFX12" and "Kernel Code Properties" of the same
    section.  Register counts are what the descriptor *allocates*:
    ``vgpr_count = (GRANULATED_WORKITEM_VGPR_COUNT + 1) * 4`` (wave64 granule on
    GFX9) and ``sgpr_count = (GRANULATED_WAVEFRONT_SGPR_COUNT + 1) * 8`` (LLVM's
    SGPR encoding granule; it includes VCC, XNACK mask and flat scratch when
    reserved; the hardware then rounds to 16, see ``sgpr_count_allocated``).
    """

    group_segment_fixed_size: int
    private_segment_fixed_size: int
    kernarg_size: int
    kernel_code_entry_byte_offset: int
    compute_pgm_rsrc3: int
    compute_pgm_rsrc1: int
    compute_pgm_rsrc2: int
    kernel_code_properties: int
    kernarg_preload: int
    raw: bytes = field(repr=False)

    @staticmethod
    def decode(raw: bytes) -> KernelDescriptor:
        """Decode 64 descriptor bytes; raises :class:`CodeObjectError` when too short."""
        if len(raw) < KERNEL_DESCRIPTOR_SIZE:
            raise CodeObjectError(f"kernel descriptor is {len(raw)} bytes, expected 64")
        raw = bytes(raw[:KERNEL_DESCRIPTOR_SIZE])
        group, private, kernarg = struct.unpack_from("<III", raw, 0)
        (entry,) = struct.unpack_from("<q", raw, 16)
        rsrc3, rsrc1, rsrc2 = struct.unpack_from("<III", raw, 44)
        props, preload = struct.unpack_from("<HH", raw, 56)
        return KernelDescriptor(group, private, kernarg, entry, rsrc3, rsrc1, rsrc2, props,
                                preload, raw)

    # compute_pgm_rsrc1 -------------------------------------------------------------------

    @property
    def granulated_workitem_vgpr_count(self) -> int:
        return _bits(self.compute_pgm_rsrc1, 0, 6)

    @property
    def granulated_wavefront_sgpr_count(self) -> int:
        return _bits(self.compute_pgm_rsrc1, 6, 4)

    @property
    def vgpr_count(self) -> int:
        """VGPRs allocated per work-item: (granulated + 1) * 4 (GFX9, wave64)."""
        return (self.granulated_workitem_vgpr_count + 1) * 4

    @property
    def sgpr_count(self) -> int:
        """SGPRs encoded for the wave: (granulated + 1) * 8 (LLVM encoding granule)."""
        return (self.granulated_wavefront_sgpr_count + 1) * 8

    @property
    def sgpr_count_allocated(self) -> int:
        """SGPRs the GFX9 hardware allocates: ``sgpr_count`` rounded up to 16."""
        return -(-self.sgpr_count // 16) * 16

    @property
    def priority(self) -> int:
        return _bits(self.compute_pgm_rsrc1, 10, 2)

    @property
    def float_round_mode_32(self) -> int:
        """0 nearest even, 1 +inf, 2 -inf, 3 toward zero."""
        return _bits(self.compute_pgm_rsrc1, 12, 2)

    @property
    def float_round_mode_16_64(self) -> int:
        return _bits(self.compute_pgm_rsrc1, 14, 2)

    @property
    def float_denorm_mode_32(self) -> int:
        """0 flush src+dst, 1 flush dst, 2 flush src, 3 no flush."""
        return _bits(self.compute_pgm_rsrc1, 16, 2)

    @property
    def float_denorm_mode_16_64(self) -> int:
        return _bits(self.compute_pgm_rsrc1, 18, 2)

    @property
    def priv(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc1, 20, 1))

    @property
    def enable_dx10_clamp(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc1, 21, 1))

    @property
    def debug_mode(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc1, 22, 1))

    @property
    def enable_ieee_mode(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc1, 23, 1))

    @property
    def bulky(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc1, 24, 1))

    @property
    def cdbg_user(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc1, 25, 1))

    @property
    def fp16_ovfl(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc1, 26, 1))

    # compute_pgm_rsrc2 -------------------------------------------------------------------

    @property
    def enable_private_segment(self) -> bool:
        """ENABLE_PRIVATE_SEGMENT: also enables the private segment wave byte offset SGPR."""
        return bool(_bits(self.compute_pgm_rsrc2, 0, 1))

    @property
    def enable_sgpr_private_segment_wave_byte_offset(self) -> bool:
        return self.enable_private_segment

    @property
    def user_sgpr_count(self) -> int:
        return _bits(self.compute_pgm_rsrc2, 1, 5)

    @property
    def enable_trap_handler(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 6, 1))

    @property
    def enable_sgpr_workgroup_id_x(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 7, 1))

    @property
    def enable_sgpr_workgroup_id_y(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 8, 1))

    @property
    def enable_sgpr_workgroup_id_z(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 9, 1))

    @property
    def enable_sgpr_workgroup_info(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 10, 1))

    @property
    def enable_vgpr_workitem_id(self) -> int:
        """0: v0 = x; 1: also v1 = y; 2: also v2 = z."""
        return _bits(self.compute_pgm_rsrc2, 11, 2)

    @property
    def enable_exception_address_watch(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 13, 1))

    @property
    def enable_exception_memory(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 14, 1))

    @property
    def granulated_lds_size(self) -> int:
        """Must be 0 in a descriptor (the CP fills it from the dispatch packet)."""
        return _bits(self.compute_pgm_rsrc2, 15, 9)

    @property
    def enable_exception_ieee_754_fp_invalid_operation(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 24, 1))

    @property
    def enable_exception_fp_denormal_source(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 25, 1))

    @property
    def enable_exception_ieee_754_fp_division_by_zero(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 26, 1))

    @property
    def enable_exception_ieee_754_fp_overflow(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 27, 1))

    @property
    def enable_exception_ieee_754_fp_underflow(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 28, 1))

    @property
    def enable_exception_ieee_754_fp_inexact(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 29, 1))

    @property
    def enable_exception_int_divide_by_zero(self) -> bool:
        return bool(_bits(self.compute_pgm_rsrc2, 30, 1))

    # kernel_code_properties --------------------------------------------------------------

    @property
    def enable_sgpr_private_segment_buffer(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 0, 1))

    @property
    def enable_sgpr_dispatch_ptr(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 1, 1))

    @property
    def enable_sgpr_queue_ptr(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 2, 1))

    @property
    def enable_sgpr_kernarg_segment_ptr(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 3, 1))

    @property
    def enable_sgpr_dispatch_id(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 4, 1))

    @property
    def enable_sgpr_flat_scratch_init(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 5, 1))

    @property
    def enable_sgpr_private_segment_size(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 6, 1))

    @property
    def enable_wavefront_size32(self) -> bool:
        """Reserved (0) on GFX6-GFX9: gfx906 runs wave64 only."""
        return bool(_bits(self.kernel_code_properties, 10, 1))

    @property
    def uses_dynamic_stack(self) -> bool:
        return bool(_bits(self.kernel_code_properties, 11, 1))

    @property
    def kernarg_preload_spec_length(self) -> int:
        """GFX90A+ kernarg preloading (0 on gfx906)."""
        return _bits(self.kernarg_preload, 0, 7)

    @property
    def kernarg_preload_spec_offset(self) -> int:
        return _bits(self.kernarg_preload, 7, 9)

    @property
    def user_sgprs_enabled(self) -> int:
        """User SGPRs implied by the kernel_code_properties enables (AMDGPUUsage
        "Initial Kernel Execution State": 4 + 2 + 2 + 2 + 2 + 2 + 1)."""
        widths = ((self.enable_sgpr_private_segment_buffer, 4), (self.enable_sgpr_dispatch_ptr, 2),
                  (self.enable_sgpr_queue_ptr, 2), (self.enable_sgpr_kernarg_segment_ptr, 2),
                  (self.enable_sgpr_dispatch_id, 2), (self.enable_sgpr_flat_scratch_init, 2),
                  (self.enable_sgpr_private_segment_size, 1))
        return sum(n for on, n in widths if on)

    def summary(self) -> dict[str, Any]:
        """The decoded fields as a plain dict (for ``describe``/debug output)."""
        names = [n for n, v in vars(type(self)).items() if isinstance(v, property)]
        out: dict[str, Any] = {
            "group_segment_fixed_size": self.group_segment_fixed_size,
            "private_segment_fixed_size": self.private_segment_fixed_size,
            "kernarg_size": self.kernarg_size,
            "kernel_code_entry_byte_offset": self.kernel_code_entry_byte_offset,
            "compute_pgm_rsrc1": self.compute_pgm_rsrc1,
            "compute_pgm_rsrc2": self.compute_pgm_rsrc2,
            "compute_pgm_rsrc3": self.compute_pgm_rsrc3,
            "kernel_code_properties": self.kernel_code_properties,
        }
        for n in names:
            out[n] = getattr(self, n)
        return out


# -- Metadata -------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelArg:
    """One entry of a kernel's ``.args`` (AMDGPUUsage "Code Object V3 Kernel Argument
    Metadata Map" and the V5 additions).  ``offset``/``size`` are bytes within the
    kernarg segment; ``value_kind`` is e.g. ``global_buffer``, ``by_value`` or one of
    the ``hidden_*`` kinds."""

    name: str | None
    offset: int
    size: int
    value_kind: str
    type_name: str | None = None
    address_space: str | None = None
    access: str | None = None
    actual_access: str | None = None
    is_const: bool = False
    is_restrict: bool = False
    is_volatile: bool = False
    is_pipe: bool = False
    pointee_align: int | None = None
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_hidden(self) -> bool:
        return self.value_kind.startswith("hidden_")

    @property
    def label(self) -> str:
        """How error messages name this argument."""
        return f"'{self.name}'" if self.name else f"at offset {self.offset}"


@dataclass(frozen=True)
class KernelMetadata:
    """One entry of ``amdhsa.kernels`` (AMDGPUUsage "Code Object V3 Kernel Metadata Map",
    V4/V5 changes).  Sizes in bytes; register counts as reported by the compiler."""

    name: str
    symbol: str
    args: tuple[KernelArg, ...]
    kernarg_segment_size: int
    kernarg_segment_align: int
    group_segment_fixed_size: int
    private_segment_fixed_size: int
    wavefront_size: int
    sgpr_count: int
    vgpr_count: int
    max_flat_workgroup_size: int
    agpr_count: int | None = None
    sgpr_spill_count: int | None = None
    vgpr_spill_count: int | None = None
    reqd_workgroup_size: tuple[int, ...] | None = None
    workgroup_size_hint: tuple[int, ...] | None = None
    uses_dynamic_stack: bool = False
    uniform_work_group_size: bool = False
    kind: str = "normal"
    language: str | None = None
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def explicit_args(self) -> tuple[KernelArg, ...]:
        """The arguments a caller passes (not ``hidden_*``), in metadata order."""
        return tuple(a for a in self.args if not a.is_hidden)

    @property
    def hidden_args(self) -> tuple[KernelArg, ...]:
        return tuple(a for a in self.args if a.is_hidden)


_REQUIRED_KERNEL_KEYS = (".name", ".symbol", ".kernarg_segment_size", ".kernarg_segment_align",
                         ".group_segment_fixed_size", ".private_segment_fixed_size",
                         ".wavefront_size", ".sgpr_count", ".vgpr_count")


def _parse_arg(i: int, kname: str, d: Any) -> KernelArg:
    if not isinstance(d, dict):
        raise CodeObjectError(f"metadata of kernel '{kname}': argument {i} is not a map")
    for key in (".offset", ".size", ".value_kind"):
        if key not in d:
            raise CodeObjectError(f"metadata of kernel '{kname}': argument {i} has no {key}")
    try:
        return KernelArg(
            name=d.get(".name"), offset=int(d[".offset"]), size=int(d[".size"]),
            value_kind=str(d[".value_kind"]), type_name=d.get(".type_name"),
            address_space=d.get(".address_space"), access=d.get(".access"),
            actual_access=d.get(".actual_access"), is_const=bool(d.get(".is_const", False)),
            is_restrict=bool(d.get(".is_restrict", False)),
            is_volatile=bool(d.get(".is_volatile", False)), is_pipe=bool(d.get(".is_pipe", False)),
            pointee_align=d.get(".pointee_align"), raw=dict(d))
    except (TypeError, ValueError) as e:
        raise CodeObjectError(f"metadata of kernel '{kname}': argument {i} is garbled ({e})") from None


def _parse_kernel_metadata(d: Any) -> KernelMetadata:
    if not isinstance(d, dict):
        raise CodeObjectError("AMDGPU metadata: an entry of amdhsa.kernels is not a map")
    kname = str(d.get(".name", "?"))
    missing = [k for k in _REQUIRED_KERNEL_KEYS if k not in d]
    if missing:
        raise CodeObjectError(f"metadata of kernel '{kname}' lacks {', '.join(missing)}")
    args_raw = d.get(".args", [])
    if not isinstance(args_raw, list):
        raise CodeObjectError(f"metadata of kernel '{kname}': .args is not a list")

    def opt_tuple(key: str) -> tuple[int, ...] | None:
        v = d.get(key)
        return tuple(int(x) for x in v) if isinstance(v, list) else None

    try:
        return KernelMetadata(
            name=kname, symbol=str(d[".symbol"]),
            args=tuple(_parse_arg(i, kname, a) for i, a in enumerate(args_raw)),
            kernarg_segment_size=int(d[".kernarg_segment_size"]),
            kernarg_segment_align=int(d[".kernarg_segment_align"]),
            group_segment_fixed_size=int(d[".group_segment_fixed_size"]),
            private_segment_fixed_size=int(d[".private_segment_fixed_size"]),
            wavefront_size=int(d[".wavefront_size"]), sgpr_count=int(d[".sgpr_count"]),
            vgpr_count=int(d[".vgpr_count"]),
            # Optional in the metadata; AMDGPUUsage gives 1024 as the default.
            max_flat_workgroup_size=int(d.get(".max_flat_workgroup_size", 1024)),
            agpr_count=d.get(".agpr_count"), sgpr_spill_count=d.get(".sgpr_spill_count"),
            vgpr_spill_count=d.get(".vgpr_spill_count"),
            reqd_workgroup_size=opt_tuple(".reqd_workgroup_size"),
            workgroup_size_hint=opt_tuple(".workgroup_size_hint"),
            uses_dynamic_stack=bool(d.get(".uses_dynamic_stack", False)),
            uniform_work_group_size=bool(d.get(".uniform_work_group_size", False)),
            kind=str(d.get(".kind", "normal")), language=d.get(".language"), raw=dict(d))
    except (TypeError, ValueError) as e:
        raise CodeObjectError(f"metadata of kernel '{kname}' is garbled ({e})") from None


# -- Code object ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Symbol:
    """An ELF symbol: ``value`` is its virtual address in the image, ``size`` bytes."""

    name: str
    value: int
    size: int
    type: str
    bind: str
    defined: bool


@dataclass(frozen=True)
class LoadSegment:
    """A ``PT_LOAD`` program header: file bytes ``[offset, offset+filesz)`` map to
    ``[vaddr, vaddr+filesz)``; the rest up to ``memsz`` is zero."""

    vaddr: int
    memsz: int
    offset: int
    filesz: int
    flags: int
    align: int


@dataclass(frozen=True)
class Relocation:
    """A dynamic relocation (``.rela.dyn``): patch at ``offset`` (a vaddr)."""

    offset: int
    type: int
    symbol: str | None
    symbol_value: int | None
    addend: int


@dataclass(frozen=True)
class Kernel:
    """A kernel of a code object.

    ``descriptor_offset`` is the virtual address of ``<name>.kd`` in the image
    (the HSA ``kernel_object`` is ``image base + descriptor_offset``);
    ``entry_offset`` the virtual address of the first instruction
    (``descriptor_offset + kernel_code_entry_byte_offset``).  ``args`` are all
    metadata arguments in order, hidden ones included; ``explicit_args`` those a
    caller supplies.
    """

    name: str
    symbol: str
    descriptor: KernelDescriptor
    metadata: KernelMetadata
    descriptor_offset: int
    entry_offset: int

    @property
    def args(self) -> tuple[KernelArg, ...]:
        return self.metadata.args

    @property
    def explicit_args(self) -> tuple[KernelArg, ...]:
        return self.metadata.explicit_args

    @property
    def kernarg_segment_size(self) -> int:
        return self.metadata.kernarg_segment_size

    def entry_address(self, base_address: int) -> int:
        """Device address of the first instruction when the image is mapped at ``base_address``."""
        return base_address + self.entry_offset

    def descriptor_address(self, base_address: int) -> int:
        """Device address of the kernel descriptor (the AQL packet's ``kernel_object``)."""
        return base_address + self.descriptor_offset


class CodeObject:
    """A parsed HSA code object.  Build it with :func:`load_code_object`.

    Attributes: ``data`` (the ELF bytes), ``source`` (path or ``"<bytes>"``),
    ``target_id`` (:class:`~vlpc.targets.TargetId`), ``code_object_version`` (4, 5
    or 6), ``metadata`` (the whole decoded msgpack map), ``kernels`` (name ->
    :class:`Kernel`), ``symbols`` (name -> :class:`Symbol`), ``segments``
    (``PT_LOAD`` headers), ``relocations``, ``image_size`` (bytes spanned by the
    loaded segments from vaddr 0).
    """

    def __init__(self, data: bytes, source: str, target_id: TargetId, code_object_version: int,
                 metadata: dict, kernels: dict[str, Kernel], symbols: dict[str, Symbol],
                 segments: tuple[LoadSegment, ...], relocations: tuple[Relocation, ...]):
        self.data = data
        self.source = source
        self.target_id = target_id
        self.code_object_version = code_object_version
        self.metadata = metadata
        self.kernels = kernels
        self.symbols = symbols
        self.segments = segments
        self.relocations = relocations
        self.image_size = max((s.vaddr + s.memsz for s in segments), default=0)
        self._image: bytes | None = None

    def __repr__(self) -> str:
        return (f"CodeObject({self.source}, {self.target_id}, v{self.code_object_version}, "
                f"kernels={sorted(self.kernels)})")

    @property
    def kernel_names(self) -> list[str]:
        return list(self.kernels)

    @property
    def load_alignment(self) -> int:
        """Alignment the image base needs: the largest ``p_align`` (at least 256)."""
        return max([256, *(s.align for s in self.segments)])

    def kernel(self, name: str) -> Kernel:
        """The kernel called ``name``; :class:`CodeObjectError` lists the names there are."""
        try:
            return self.kernels[name]
        except KeyError:
            have = ", ".join(sorted(self.kernels)) or "none"
            raise CodeObjectError(f"kernel '{name}' not found in code object {self.source} "
                                  f"(available: {have})") from None

    @property
    def image(self) -> bytes:
        """The image for base address 0 (``load_image(0)``), cached."""
        if self._image is None:
            self._image = self.load_image(0)
        return self._image

    def load_image(self, base_address: int = 0) -> bytes:
        """Bytes of the loaded code object: every ``PT_LOAD`` segment copied to its
        ``p_vaddr`` (zero filled to ``p_memsz``), ``image_size`` bytes in all, and
        the dynamic relocations resolved for a mapping at ``base_address``
        (AMDGPUUsage "Relocation Records": ``R_AMDGPU_RELATIVE64`` = B + A,
        ``R_AMDGPU_ABS64`` = S + A, ``ABS32``/``ABS32_LO``/``ABS32_HI``).  Map the
        result at ``base_address`` (aligned to :attr:`load_alignment`); a kernel's
        entry is then at ``base_address + kernel.entry_offset``.
        """
        buf = bytearray(self.image_size)
        for s in self.segments:
            buf[s.vaddr:s.vaddr + s.filesz] = self.data[s.offset:s.offset + s.filesz]
        for r in self.relocations:
            if r.type == R_AMDGPU_NONE:
                continue
            if r.type == R_AMDGPU_RELATIVE64:
                value, width = base_address + r.addend, 8
            else:
                if r.symbol_value is None:
                    raise CodeObjectError(f"relocation at 0x{r.offset:x} refers to undefined "
                                          f"symbol '{r.symbol}'")
                s_plus_a = base_address + r.symbol_value + r.addend
                if r.type == R_AMDGPU_ABS64:
                    value, width = s_plus_a, 8
                elif r.type in (R_AMDGPU_ABS32, R_AMDGPU_ABS32_LO):
                    value, width = s_plus_a & 0xFFFFFFFF, 4
                elif r.type == R_AMDGPU_ABS32_HI:
                    value, width = (s_plus_a >> 32) & 0xFFFFFFFF, 4
                else:
                    raise CodeObjectError(f"unsupported relocation type {r.type} at 0x{r.offset:x}")
            if r.offset + width > len(buf):
                raise CodeObjectError(f"relocation at 0x{r.offset:x} is outside the loaded image")
            buf[r.offset:r.offset + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
        return bytes(buf)

    def describe(self) -> str:
        lines = [f"code object {self.source}: {self.target_id}, code object v{self.code_object_version}"]
        for k in self.kernels.values():
            d, m = k.descriptor, k.metadata
            lines.append(f"  kernel {k.name}: {len(m.explicit_args)} args, kernarg "
                         f"{m.kernarg_segment_size} B, LDS {d.group_segment_fixed_size} B, "
                         f"VGPRs {d.vgpr_count}, SGPRs {d.sgpr_count}, max workgroup "
                         f"{m.max_flat_workgroup_size}")
        return "\n".join(lines)


# -- Loading --------------------------------------------------------------------------------


def _read_notes(data: bytes, align: int):
    """Yield (name, type, desc) from a note section/segment's bytes (ELF note format)."""
    a = 8 if align == 8 else 4
    pos = 0
    while pos + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
        pos += 12
        name_end = pos + namesz
        desc_start = pos + (-(-namesz // a) * a)
        desc_end = desc_start + descsz
        if desc_end > len(data):
            raise CodeObjectError("AMDGPU metadata note is garbled (a note runs past its section)")
        name = data[pos:name_end].rstrip(b"\0").decode("latin-1")
        yield name, ntype, data[desc_start:desc_end]
        pos = desc_start + (-(-descsz // a) * a)


def load_code_object(source: str | PathLike | bytes | bytearray | memoryview) -> CodeObject:
    """Parse and validate a code object from a path or its bytes.

    Checks (each failure is a one-line :class:`CodeObjectError`): ELF magic,
    ``ELFCLASS64``, little endian, ``EM_AMDGPU`` (224), ``ET_DYN``,
    ``ELFOSABI_AMDGPU_HSA`` (64), the code object version (4, 5 or 6; from
    ``EI_ABIVERSION``, AMDGPUUsage "ELF Header") and its agreement with the
    metadata's ``amdhsa.version``, the target in ``e_flags``, that the file is not
    truncated, that exactly one readable ``NT_AMDGPU_METADATA`` note (owner
    ``AMDGPU``, msgpack) is present, and that every kernel's ``.kd`` symbol exists
    and lies inside a loadable segment.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, where = bytes(source), "<bytes>"
    else:
        path = Path(source)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise CodeObjectError(f"cannot read code object {path}: {e.strerror}") from None
        where = str(path)
    return _parse(data, where)


def _parse(data: bytes, where: str) -> CodeObject:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    def fail(msg: str) -> CodeObjectError:
        return CodeObjectError(f"{where}: {msg}")

    if len(data) < 4 or data[:4] != b"\x7fELF":
        raise fail("not an ELF file (bad magic); expected an AMDGPU code object (.hsaco)")
    if len(data) < 64:
        raise fail(f"truncated ELF file ({len(data)} bytes, shorter than the ELF header)")
    if data[4] != 2:
        raise fail(f"not a 64-bit ELF (EI_CLASS={data[4]}); AMDGPU code objects are ELFCLASS64")
    if data[5] != 1:
        raise fail("not a little-endian ELF; AMDGPU code objects are ELFDATA2LSB")
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    if e_machine != EM_AMDGPU:
        raise fail(f"ELF machine is {e_machine}, not EM_AMDGPU (224): not a GPU code object")
    osabi, abiversion = data[7], data[8]
    if osabi != ELFOSABI_AMDGPU_HSA:
        name = ELFOSABI_NAMES.get(osabi, str(osabi))
        raise fail(f"ELF OS/ABI is {name}, not AMDGPU_HSA (64): not an HSA code object")
    version = ABI_VERSION_TO_CODE_OBJECT.get(abiversion)
    if version not in SUPPORTED_CODE_OBJECT_VERSIONS:
        what = f"v{version}" if version else f"ABI version {abiversion}"
        raise fail(f"unsupported code object version {what} (supported: "
                   f"{', '.join(f'v{v}' for v in SUPPORTED_CODE_OBJECT_VERSIONS)})")
    if e_type != 3:
        raise fail(f"ELF type is {e_type}, not ET_DYN (3): link the object with ld.lld -shared")
    e_phoff, e_shoff = struct.unpack_from("<QQ", data, 32)
    (e_flags,) = struct.unpack_from("<I", data, 48)
    e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from("<HHHH", data, 54)
    if e_phoff + e_phnum * e_phentsize > len(data) or e_shoff + e_shnum * e_shentsize > len(data):
        raise fail(f"truncated ELF file ({len(data)} bytes; its headers reach past the end)")
    try:
        target_id = TargetId.from_e_flags(e_flags)
    except (TargetError, KeyError) as e:
        raise fail(f"unsupported target: {e}") from None

    try:
        elf = ELFFile(BytesIO(data))
        segments = []
        note_blobs: list[tuple[bytes, int]] = []
        for seg in elf.iter_segments():
            h = seg.header
            if h.p_type in ("PT_LOAD", PT_LOAD):
                if h.p_offset + h.p_filesz > len(data):
                    raise fail(f"truncated ELF file ({len(data)} bytes; a loadable segment "
                               f"ends at {h.p_offset + h.p_filesz})")
                segments.append(LoadSegment(h.p_vaddr, h.p_memsz, h.p_offset, h.p_filesz,
                                            h.p_flags, max(1, h.p_align)))
        for sec in elf.iter_sections():
            if sec.header.sh_type in ("SHT_NOTE", SHT_NOTE):
                h = sec.header
                if h.sh_offset + h.sh_size > len(data):
                    raise fail("truncated ELF file (the note section runs past the end)")
                note_blobs.append((data[h.sh_offset:h.sh_offset + h.sh_size], h.sh_addralign))
        if not note_blobs:  # section headers stripped: fall back to PT_NOTE segments
            for seg in elf.iter_segments():
                h = seg.header
                if h.p_type in ("PT_NOTE", PT_NOTE) and h.p_offset + h.p_filesz <= len(data):
                    note_blobs.append((data[h.p_offset:h.p_offset + h.p_filesz], h.p_align))
        symbols: dict[str, Symbol] = {}
        for secname in (".dynsym", ".symtab"):
            sec = elf.get_section_by_name(secname)
            if sec is None:
                continue
            for sym in sec.iter_symbols():
                if not sym.name or sym.name in symbols:
                    continue
                e = sym.entry
                symbols[sym.name] = Symbol(sym.name, e.st_value, e.st_size, e.st_info.type,
                                           e.st_info.bind, e.st_shndx != "SHN_UNDEF")
        relocations = _read_relocations(elf)
    except CodeObjectError:
        raise
    except (ELFError, struct.error, ValueError, KeyError, IndexError, AssertionError) as e:
        raise fail(f"garbled ELF file ({type(e).__name__}: {e})") from None
    except Exception as e:  # pyelftools' stream errors when a table is cut short
        raise fail(f"truncated or garbled ELF file ({type(e).__name__}: {e})") from None

    if not segments:
        raise fail("no loadable (PT_LOAD) segment")
    for s in segments:
        if s.align & (s.align - 1) or s.align > MAX_SEGMENT_ALIGN:
            raise fail(f"garbled program header: p_align {s.align} is not a power of two up to "
                       f"{MAX_SEGMENT_ALIGN}")
        if s.memsz < s.filesz:
            raise fail(f"garbled program header: a loadable segment's p_memsz ({s.memsz}) is "
                       f"smaller than its p_filesz ({s.filesz})")
    span = max(s.vaddr + s.memsz for s in segments)
    if span > MAX_IMAGE_BYTES:
        raise fail(f"garbled program header: the loadable segments span {span} bytes "
                   f"(p_vaddr + p_memsz), more than the {MAX_IMAGE_BYTES >> 20} MiB a code object "
                   "may map")

    # -- metadata note
    import msgpack

    descs = [desc for blob, align in note_blobs for name, t, desc in _read_notes(blob, align)
             if name == "AMDGPU" and t == NT_AMDGPU_METADATA]
    if not descs:
        raise fail("missing AMDGPU metadata note (NT_AMDGPU_METADATA, owner 'AMDGPU')")
    if len(descs) > 1:
        raise fail("more than one AMDGPU metadata note")
    try:
        metadata = msgpack.unpackb(descs[0], raw=False, strict_map_key=False)
    except Exception as e:
        raise fail(f"garbled AMDGPU metadata note (msgpack: {e})") from None
    if not isinstance(metadata, dict) or "amdhsa.kernels" not in metadata:
        raise fail("garbled AMDGPU metadata note (no amdhsa.kernels)")
    md_version = metadata.get("amdhsa.version")
    if (not isinstance(md_version, list) or len(md_version) < 2
            or not all(isinstance(x, int) for x in md_version[:2])):
        raise fail("garbled AMDGPU metadata note (amdhsa.version missing)")
    md_co = METADATA_VERSION_TO_CODE_OBJECT.get((md_version[0], md_version[1]))
    # LLVM (clang 22's default code object v6, e.g. for gfx900) writes the v5 metadata version
    # 1.2 into a v6 object: the v6 metadata is v5's (AMDGPUUsage "Code Object V6 Metadata")
    if md_co != version and not (version == 6 and md_co == 5):
        raise fail(f"metadata version {md_version[0]}.{md_version[1]} does not match the ELF's "
                   f"code object v{version}")
    kernels_md = metadata["amdhsa.kernels"]
    if not isinstance(kernels_md, list):
        raise fail("garbled AMDGPU metadata note (amdhsa.kernels is not a list)")
    md_target = metadata.get("amdhsa.target")
    if isinstance(md_target, str) and md_target:
        tid_text = md_target.rsplit("--", 1)[-1]
        try:
            md_tid = TargetId.parse(tid_text)
        except TargetError:
            md_tid = None
        conflict = md_tid is not None and (
            md_tid.target.name != target_id.target.name
            or any(v is not None and target_id.settings.get(f) not in (None, v)
                   for f, v in md_tid.settings.items()))
        if conflict:
            raise fail(f"metadata target {tid_text} does not match the ELF's {target_id}")

    # -- kernels
    def vaddr_in_image(addr: int, size: int) -> bool:
        return any(s.vaddr <= addr and addr + size <= s.vaddr + s.filesz for s in segments)

    def read_vaddr(addr: int, size: int) -> bytes:
        for s in segments:
            if s.vaddr <= addr and addr + size <= s.vaddr + s.filesz:
                off = s.offset + (addr - s.vaddr)
                return data[off:off + size]
        raise fail(f"address 0x{addr:x} is not inside a loadable segment")

    kernels: dict[str, Kernel] = {}
    for entry in kernels_md:
        md = _parse_kernel_metadata(entry)
        if md.name in kernels:
            raise fail(f"kernel '{md.name}' appears twice in the metadata")
        sym = symbols.get(md.symbol)
        if sym is None or not sym.defined:
            raise fail(f"kernel descriptor symbol '{md.symbol}' of kernel '{md.name}' is missing")
        if not vaddr_in_image(sym.value, KERNEL_DESCRIPTOR_SIZE):
            raise fail(f"kernel descriptor '{md.symbol}' lies outside the loadable segments")
        desc = KernelDescriptor.decode(read_vaddr(sym.value, KERNEL_DESCRIPTOR_SIZE))
        entry_off = sym.value + desc.kernel_code_entry_byte_offset
        if not vaddr_in_image(entry_off, 4):
            raise fail(f"kernel '{md.name}': entry point 0x{entry_off:x} lies outside the image")
        if entry_off % KERNEL_CODE_ALIGN:
            raise fail(f"kernel '{md.name}': entry point 0x{entry_off:x} is not "
                       f"{KERNEL_CODE_ALIGN}-byte aligned (AMDGPUUsage \"Kernel Descriptor\")")
        kernels[md.name] = Kernel(md.name, md.symbol, desc, md, sym.value, entry_off)
    return CodeObject(data, where, target_id, version, metadata, kernels, symbols,
                      tuple(segments), relocations)


def _read_relocations(elf) -> tuple[Relocation, ...]:
    from elftools.elf.relocation import RelocationSection

    out: list[Relocation] = []
    for sec in elf.iter_sections():
        if not isinstance(sec, RelocationSection) or sec.header.sh_flags & 0x2 == 0:
            continue  # only allocated (dynamic) relocation sections matter to the loader
        symtab = None
        if sec.header.sh_link:
            symtab = elf.get_section(sec.header.sh_link)
        for rel in sec.iter_relocations():
            e = rel.entry
            name, value = None, None
            if e.r_info_sym and symtab is not None:
                s = symtab.get_symbol(e.r_info_sym)
                name = s.name
                if s.entry.st_shndx != "SHN_UNDEF":
                    value = s.entry.st_value
            out.append(Relocation(e.r_offset, e.r_info_type, name, value,
                                  e.get("r_addend", 0) if hasattr(e, "get") else 0))
    return tuple(out)
