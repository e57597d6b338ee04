"""The emulator as a :class:`~vlpc.runtime.device.Device`.

:class:`EmulatorDevice` owns a flat device address space
(:class:`vlpc.runtime.emulator.memory.Memory`) and launches kernels on the
functional GCN emulator (:func:`vlpc.runtime.emulator.core.run_dispatch`) the way
the HSA runtime and the command processor would (AMDGPUUsage "Kernel
Dispatch", "Initial Kernel Execution State"):

1. the code object's image (``PT_LOAD`` segments by ``p_vaddr``, relocated) is
   written to device memory once per code object;
2. the kernarg segment is packed by the shared packer
   (:func:`vlpc.runtime.kernargs.pack_kernargs`) into a fresh allocation;
3. an AQL dispatch packet (``dispatch_ptr``) is written into a one-slot queue
   ring and a minimal ``amd_queue_t`` (``queue_ptr``) next to it;
4. a :class:`~vlpc.runtime.emulator.core.DispatchConfig` is built from the kernel
   descriptor: user SGPR enables from ``kernel_code_properties``, workgroup-id /
   workgroup-info / private-segment-offset SGPRs and the work-item-id VGPRs from
   ``compute_pgm_rsrc2``, VGPR/SGPR counts from ``compute_pgm_rsrc1``, LDS =
   ``group_segment_fixed_size`` + dynamic LDS;
5. ``run_dispatch`` runs the grid; the kernarg, packet and queue allocations are
   freed afterwards, also when the launch fails.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from vlpc.errors import DeviceError
from vlpc.isa.modes import FloatMode
from vlpc.runtime.code_object import CodeObject, Kernel
from vlpc.runtime.device import Device
from vlpc.runtime.kernargs import (AMD_QUEUE_SIZE, DISPATCH_PACKET_SIZE, HiddenValues,
                                   LaunchGeometry, build_dispatch_packet, build_queue_object)
from vlpc.targets import GFX906, TargetError, TargetId

#: Allocation granule for kernarg segments (bytes); the slack past the segment
#: lets kernels load a few dwords past the end the way they may on hardware.
KERNARG_GRANULE = 256


def _memory_class():
    try:
        from vlpc.runtime.emulator.memory import Memory
    except ImportError as e:
        raise DeviceError(f"emulator unavailable: vlpc.runtime.emulator.memory cannot be "
                          f"imported ({e})") from None
    return Memory


def _core():
    try:
        from vlpc.runtime.emulator import core
    except ImportError as e:
        raise DeviceError(f"emulator unavailable: vlpc.runtime.emulator.core cannot be "
                          f"imported ({e})") from None
    return core


class EmulatorDevice(Device):
    """A gfx906 emulated in Python.

    Options: ``target`` (target id the device claims; default ``"gfx906"``,
    i.e. sramecc and xnack "any", so code objects built for either setting
    load; ``gfx900`` for the ``mi25`` board; an instruction the target lacks is refused
    by name when it runs), ``strict`` (the core's checkers turn suspicious behaviour into
    errors), ``instruction_budget`` (per launch; the core stops a runaway
    kernel), ``max_waves_in_flight`` (core scheduling), ``memory`` (share an
    existing :class:`Memory`), ``waitcnt`` (``"raise"``: a missing s_waitcnt is a
    WaitcntViolation; ``"report"``, non-strict: a WaitcntViolationWarning naming kernel,
    PC, wave, instruction and register, and the kernel goes on with the loaded value),
    ``checks`` (the mode of every check whose outcome the hardware defines: ``"raise"`` or
    ``"report"`` for all of them, or a dict ``{"waitcnt" | "lds_range" | "buffer_range":
    mode}``; defaults: waitcnt and LDS range raise, buffer range reports; ``strict`` raises
    for all; :mod:`vlpc.runtime.emulator.semantics.findings`).  Foreign code objects that
    rely on the hardware's out-of-range LDS or buffer behaviour run with ``checks="report"``.

    Timing (modeled, not measured): ``gpu`` (``"mi50"``, ``"mi60"`` or a
    :class:`vlpc.targets.Board`) turns on the timing model, ``clock_mhz`` sets the
    engine clock and ``memory_clock_mhz`` the HBM2 clock (MHz; default: the board's stock
    clocks, :data:`vlpc.targets.BOARDS`), ``cus`` the CU count; each launch's
    ``LaunchStats`` then carries ``timing`` (a
    :class:`vlpc.runtime.timing.TimingReport`), ``cycles`` and ``time_us``.
    ``timing_only=True`` executes only the workgroups the model traces (large
    grids in seconds; C is then not fully computed).
    """

    name = "emulator"
    #: Called with the workgroups done during each launch (see ``core.run_dispatch``), or None.
    progress = None

    def __init__(self, *, target: str | TargetId | None = None, strict: bool = False,
                 instruction_budget: int = 10**9, max_waves_in_flight: int | None = None,
                 memory: Any = None, gpu: Any = None, clock_mhz: float | None = None,
                 memory_clock_mhz: float | None = None, cus: int | None = None, timing_only: bool = False,
                 waitcnt: str | None = None, checks: str | dict | None = None):
        super().__init__()
        self.board = None
        if gpu is not None:
            from vlpc.targets import get_board
            try:
                self.board = get_board(gpu, clock_mhz=clock_mhz, memory_clock_mhz=memory_clock_mhz, cus=cus)
            except TargetError as e:
                raise DeviceError(str(e)) from None
        elif clock_mhz is not None or memory_clock_mhz is not None or timing_only:
            raise DeviceError("clock_mhz/memory_clock_mhz/timing_only need a board for the timing model (gpu='mi50' or 'mi60')")
        self.timing_only = bool(timing_only)
        #: None, or the workgroup ids ``(x, y, z)`` every launch runs (the rest are skipped):
        #: a sampled functional check of a large launch (``vlpc tune``)
        self.only_workgroups: set | None = None
        #: False: a timing-only launch traces CU 0's workgroups only, not the first round's
        #: footprint, and the model takes ``l2_miss`` (the L2 miss probability) as given
        self.footprint_round = True
        self.l2_miss: float | None = None
        if target is None:  # the board's processor (gfx900 for mi25), else gfx906
            target = self.board.target.name if self.board is not None else GFX906.name
        try:
            self.target_id = target if isinstance(target, TargetId) else TargetId.parse(str(target))
        except TargetError as e:
            raise DeviceError(str(e)) from None
        if self.board is not None and self.board.target.name != self.target_id.target.name:
            raise DeviceError(f"board {self.board.name} is a {self.board.target.name}, not {self.target_id}")
        self.strict = bool(strict)
        from vlpc.runtime.emulator.semantics.findings import resolve
        try:
            self.checks = resolve(checks, waitcnt)
        except ValueError as e:
            raise DeviceError(str(e)) from None
        self.waitcnt = self.checks["waitcnt"]
        self.instruction_budget = int(instruction_budget)
        self.max_waves_in_flight = max_waves_in_flight
        self.memory = memory if memory is not None else _memory_class()()
        # id(code object) -> (code object, base address, image bytes)
        self._loaded: dict[int, tuple[CodeObject, int, bytes]] = {}
        self.launches = 0

    # -- memory primitives ----------------------------------------------------------------

    def _alloc(self, nbytes: int, align: int = 256, tag: str = "buffer") -> tuple[int, Any]:
        """Memory.alloc zero-fills; ``tag`` names the allocation in fault messages."""
        try:
            addr = self.memory.alloc(nbytes, align=align, tag=tag)
        except TypeError:  # a Memory without tags
            addr = self.memory.alloc(nbytes, align=align)
        return addr, None

    def _free(self, address: int, handle: Any) -> None:
        self.memory.free(address)

    def _write(self, address: int, data: bytes | np.ndarray) -> None:
        self.memory.write(address, data)

    def _read(self, address: int, nbytes: int) -> np.ndarray:
        return self.memory.read(address, nbytes)

    # -- code objects ---------------------------------------------------------------------

    def load(self, co: CodeObject) -> int:
        """Map ``co``'s image into device memory (once); returns its base address."""
        hit = self._loaded.get(id(co))
        if hit is not None and hit[0] is co:
            return hit[1]
        size = max(co.image_size, 1)
        base, _ = self._alloc(size, align=co.load_alignment, tag=f"code object {co.source}")
        try:
            image = co.load_image(base)
            self._write(base, image)
        except BaseException:
            self.memory.free(base)
            raise
        self._loaded[id(co)] = (co, base, image)
        return base

    def unload(self, co: CodeObject) -> None:
        """Free ``co``'s image (a later launch loads it again)."""
        hit = self._loaded.pop(id(co), None)
        if hit is not None:
            self.memory.free(hit[1])

    def hidden_values(self, queue_ptr: int = 0) -> HiddenValues:
        core = _core_or_none()
        return HiddenValues(
            queue_ptr=queue_ptr,
            shared_aperture_base=getattr(core, "SHARED_APERTURE_BASE", 0) if core else 0,
            private_aperture_base=getattr(core, "PRIVATE_APERTURE_BASE", 0) if core else 0,
        )

    # -- launching ------------------------------------------------------------------------

    def dispatch_config(self, kernel: Kernel, launch: LaunchGeometry, *, code: bytes,
                        code_address: int, kernarg_address: int, dispatch_ptr: int,
                        queue_ptr: int):
        """The core's ``DispatchConfig`` for ``kernel`` (see the module docstring, step 4)."""
        core = _core()
        d = kernel.descriptor
        return core.DispatchConfig(
            kernel_name=kernel.name,
            code=code,
            code_address=code_address,
            entry_address=code_address + kernel.entry_offset,
            grid=launch.grid,
            block=launch.block,
            user_sgpr_private_segment_buffer=d.enable_sgpr_private_segment_buffer,
            user_sgpr_dispatch_ptr=d.enable_sgpr_dispatch_ptr,
            user_sgpr_queue_ptr=d.enable_sgpr_queue_ptr,
            user_sgpr_kernarg_segment_ptr=d.enable_sgpr_kernarg_segment_ptr,
            user_sgpr_dispatch_id=d.enable_sgpr_dispatch_id,
            user_sgpr_flat_scratch_init=d.enable_sgpr_flat_scratch_init,
            user_sgpr_private_segment_size=d.enable_sgpr_private_segment_size,
            user_sgpr_count=d.user_sgpr_count,
            sgpr_workgroup_id_x=d.enable_sgpr_workgroup_id_x,
            sgpr_workgroup_id_y=d.enable_sgpr_workgroup_id_y,
            sgpr_workgroup_id_z=d.enable_sgpr_workgroup_id_z,
            sgpr_workgroup_info=d.enable_sgpr_workgroup_info,
            sgpr_private_segment_wave_offset=d.enable_private_segment,
            vgpr_workitem_id=d.enable_vgpr_workitem_id,
            vgpr_count=min(d.vgpr_count, GFX906.addressable_vgprs),
            sgpr_count=min(d.sgpr_count, GFX906.addressable_sgprs),
            lds_bytes=d.group_segment_fixed_size + launch.dynamic_lds,
            kernarg_address=kernarg_address,
            dispatch_ptr=dispatch_ptr,
            queue_ptr=queue_ptr,
            strict=self.strict,
            instruction_budget=self.instruction_budget,
            max_waves_in_flight=self.max_waves_in_flight,
            mode=FloatMode.from_rsrc1(d.compute_pgm_rsrc1).register,
            waitcnt=self.waitcnt,
            checks=dict(self.checks, waitcnt=self.waitcnt),
            private_segment_size=max(d.private_segment_fixed_size,
                                     kernel.metadata.private_segment_fixed_size),
            target=self.target_id.target.name,
        )

    def _run(self, co: CodeObject, kernel: Kernel, launch: LaunchGeometry,
             args: Sequence[Any] | bytes) -> Any:
        core = _core()
        base = self.load(co)
        code = self._loaded[id(co)][2]
        temps: list[int] = []
        try:
            md, d = kernel.metadata, kernel.descriptor
            ring, _ = self._alloc(DISPATCH_PACKET_SIZE, align=64, tag="AQL dispatch packet")
            temps.append(ring)
            queue, _ = self._alloc(AMD_QUEUE_SIZE, align=64, tag="AQL queue (amd_queue_t)")
            temps.append(queue)
            kernargs = self.pack(kernel, args, launch, self.hidden_values(queue_ptr=queue))
            if hasattr(self.memory, "name_arguments") and not isinstance(args, bytes | bytearray):
                self.memory.name_arguments({a.name or a.label: getattr(v, "address", None) or 0
                                            for a, v in zip(kernel.explicit_args, args)
                                            if a.value_kind == "global_buffer"})
            kn = -(-max(len(kernargs), 1) // KERNARG_GRANULE) * KERNARG_GRANULE
            karg, _ = self._alloc(kn, align=max(256, md.kernarg_segment_align),
                                  tag=f"kernargs of {kernel.name}")
            temps.append(karg)
            if kernargs:
                self._write(karg, kernargs)
            packet = build_dispatch_packet(
                launch, kernel_object=kernel.descriptor_address(base), kernarg_address=karg,
                private_segment_size=max(d.private_segment_fixed_size,
                                         md.private_segment_fixed_size),
                group_segment_size=d.group_segment_fixed_size + launch.dynamic_lds)
            self._write(ring, packet)
            self._write(queue, build_queue_object(
                ring_address=ring, ring_packets=1,
                shared_aperture_base=self.hidden_values().shared_aperture_base,
                private_aperture_base=self.hidden_values().private_aperture_base))
            cfg = self.dispatch_config(kernel, launch, code=code, code_address=base,
                                       kernarg_address=karg, dispatch_ptr=ring, queue_ptr=queue)
            if self.only_workgroups is not None:
                cfg.workgroups = frozenset(tuple(int(v) for v in w) for w in self.only_workgroups)
            res = None
            if self.board is not None:
                from vlpc.runtime import timing
                res = timing.residency(self.board, d.vgpr_count, d.sgpr_count,
                                       d.group_segment_fixed_size + launch.dynamic_lds,
                                       int(np.prod(launch.block)))
                cfg.trace = timing.trace_request(self.board, tuple(launch.grid), res,
                                                 only=self.timing_only)
                if not self.footprint_round:
                    import dataclasses
                    cfg.trace = dataclasses.replace(cfg.trace, footprint=cfg.trace.workgroups)
            stats = core.run_dispatch(self.memory, cfg, **({"progress": self.progress} if self.progress else {}))
            self.launches += 1
            if res is not None and stats.trace is not None:
                from vlpc.runtime import timing
                stats.timing = timing.model_kernel(stats.trace, self.board, res, kernel.name, l2_miss=self.l2_miss)
            return stats
        finally:
            for addr in reversed(temps):
                try:
                    self.memory.free(addr)
                except Exception:
                    pass

    def describe(self) -> str:
        extra = ", strict" if self.strict else ""
        if self.board is not None:
            extra += (f", timing model {self.board.name} @ {self.board.engine_clock_mhz:.0f} MHz"
                      f"{' (timing only)' if self.timing_only else ''}")
        return (f"emulator ({self.target_id}, functional GCN emulator{extra}, "
                f"instruction budget {self.instruction_budget})")


def _core_or_none():
    try:
        from vlpc.runtime.emulator import core
    except ImportError:
        return None
    return core
