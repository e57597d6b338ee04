"""Faults the emulator's checkers raise, and the uninitialised-read warning.

Every fault subclasses :class:`EmulatorFault` (itself a
:class:`vlpc.errors.DeviceError`, so the CLI maps it to exit code 4) and carries:

* ``kernel``: the kernel name;
* ``pc``: byte offset of the faulting instruction from the kernel entry, and
  ``address``: its absolute device address;
* ``wave``: ``(workgroup_id_xyz, wave_index_in_workgroup)`` of one faulting wave;
* ``instruction``: the decoded text (``v_fma_f32 v4, v68, s32, v4``);
* ``detail``: what was wrong (register, address, lanes...).

``str()`` gives one readable paragraph.
"""

from __future__ import annotations

from vlpc.errors import DeviceError


class EmulatorFault(DeviceError):
    """Base class of every fault the emulator reports while running a kernel."""

    what = "emulator fault"

    def __init__(self, detail: str = "", *, kernel: str | None = None, pc: int | None = None,
                 address: int | None = None, wave: tuple | None = None,
                 instruction: str | None = None, **extra):
        self.detail = detail
        self.kernel = kernel
        self.pc = pc
        self.address = address
        self.wave = wave
        self.instruction = instruction
        for k, v in extra.items():
            setattr(self, k, v)
        self.extra = extra
        super().__init__(self._format())

    def locate(self, *, kernel=None, pc=None, address=None, wave=None, instruction=None) -> "EmulatorFault":
        """Fill in location fields that are still unknown (used by the executor)."""
        for name, value in (("kernel", kernel), ("pc", pc), ("address", address), ("wave", wave),
                            ("instruction", instruction)):
            if getattr(self, name) is None:
                setattr(self, name, value)
        self.args = (self._format(),)
        return self

    def _format(self) -> str:
        parts = [f"{self.what}"]
        if self.kernel is not None:
            parts.append(f" in kernel '{self.kernel}'")
        if self.pc is not None:
            loc = f" at pc +0x{self.pc:x}"
            if self.address is not None:
                loc += f" (0x{self.address:x})"
            parts.append(loc)
        if self.wave is not None:
            wg, w = self.wave
            parts.append(f", workgroup {tuple(wg)} wave {w}")
        text = "".join(parts)
        if self.instruction:
            text += f": `{self.instruction}`"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return self._format()

    def __reduce__(self):  # picklable with all fields (faults cross worker processes)
        return (_rebuild_fault, (type(self), dict(self.__dict__)))


def _rebuild_fault(cls, state):
    e = cls.__new__(cls)
    e.__dict__.update(state)
    e.args = (e._format(),)
    return e


class WaitcntViolation(EmulatorFault):
    """A register was read or overwritten while a load into it may still be outstanding."""

    what = "s_waitcnt violation"


class OutOfBoundsAccess(EmulatorFault):
    """A memory access touched a byte outside every live allocation."""

    what = "out-of-bounds memory access"


class RegisterRangeError(EmulatorFault):
    """A register beyond what the kernel descriptor allocates was used."""

    what = "register out of allocated range"


class MisalignedRegisterTuple(EmulatorFault):
    """An SGPR pair at an odd register, or a 4+ dword SGPR tuple not at a multiple of 4."""

    what = "misaligned register tuple"


class LdsOutOfRange(EmulatorFault):
    """An LDS access beyond the workgroup's group-segment size (the hardware drops such a
    write and reads 0: a fault only under ``checks={"lds_range": "raise"}``, the default, or
    ``strict``)."""

    what = "LDS access out of range"


class BufferOutOfRange(EmulatorFault):
    """A MUBUF/MTBUF access outside its buffer resource's ``num_records`` (the hardware drops
    such a store and loads 0: a fault only under ``checks={"buffer_range": "raise"}`` or
    ``strict``)."""

    what = "buffer access out of range"


class RunawayKernel(EmulatorFault):
    """A wave executed more instructions than the budget allows."""

    what = "instruction budget exceeded"


class UnsupportedInstruction(EmulatorFault):
    """The emulator has no semantics (or no decoding) for an instruction."""

    what = "unsupported instruction"


class UninitializedRegisterRead(EmulatorFault):
    """A register was read before anything wrote it (strict mode)."""

    what = "read of uninitialised register"


class EmulatorFindingWarning(UserWarning):
    """A finding reported instead of raised: a check in ``"report"`` mode (non-strict); the
    message names kernel, PC, wave and instruction like the fault would."""


class WaitcntViolationWarning(EmulatorFindingWarning):
    """A missing s_waitcnt, reported instead of raised (``waitcnt="report"``, non-strict)."""


class LdsOutOfRangeWarning(EmulatorFindingWarning):
    """An out-of-range LDS access, reported (``checks={"lds_range": "report"}``): the write was
    dropped, the read returned 0, as on the hardware."""


class BufferOutOfRangeWarning(EmulatorFindingWarning):
    """A buffer access outside ``num_records``, reported (``buffer_range`` in ``"report"``
    mode, the default): the store was dropped, the load returned 0, as on the hardware."""


class UninitializedRegisterWarning(UserWarning):
    """A register was read before anything wrote it (non-strict mode)."""
