"""Error classes shared by the compiler, the runtime and the CLI.

Exit codes (documented in docs/cli_conventions.md, "Exit codes"):

* 0  success
* 1  user error: bad input, bad options, a kernel the target cannot run
* 2  command-line usage error (argparse)
* 3  verification failed (``vlpc run`` computed a wrong result)
* 4  device error: the emulator's checkers or the HIP runtime reported a fault
* 70 internal error: a bug in vlpc (``EX_SOFTWARE``)
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_USER = 1
EXIT_USAGE = 2
EXIT_VERIFY = 3
EXIT_DEVICE = 4
EXIT_INTERNAL = 70


class VlpcError(Exception):
    """A user-facing error: printed as one line (or a located diagnostic), no traceback."""

    exit_code = EXIT_USER


class DiagnosticError(VlpcError):
    """An error located in an input file: printed as ``file:line:col: error: message``."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 col: int | None = None, context: str | None = None):
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.context = context
        super().__init__(self.format())

    def format(self) -> str:
        loc = self.file or "<input>"
        if self.line is not None:
            loc += f":{self.line}"
            if self.col is not None:
                loc += f":{self.col}"
        text = f"{loc}: error: {self.message}"
        if self.context:
            text += "\n" + self.context
        return text


class WorkgroupFitError(DiagnosticError):
    """A kernel's workgroup cannot be resident on one CU (``vlpc.workgroup_fit``): the hardware
    would never launch it.  Located (``file:line:col: error:``) when the compiler refuses the
    kernel, ``vlpc: error: ...`` otherwise (the timing model).  ``resource`` is the short one
    (``"VGPRs"``, ``"SGPRs"``, ``"LDS"``, ``"work-items"``), ``local_split`` the kernel's
    wavefront groups per workgroup (1 when not known)."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 col: int | None = None, *, resource: str = "", local_split: int = 1):
        self.resource = resource
        self.local_split = local_split
        super().__init__(message, file, line, col)

    def format(self) -> str:
        return super().format() if self.file else f"vlpc: error: {self.message}"


class AssemblerError(VlpcError):
    """LLVM's assembler or linker rejected the generated code (shows the offending line)."""

    exit_code = EXIT_INTERNAL


class ToolchainError(VlpcError):
    """No usable AMDGPU assembler/linker was found, or it failed to run."""


class DeviceError(VlpcError):
    """A device refused or faulted on a launch."""

    exit_code = EXIT_DEVICE


class LaunchError(DeviceError):
    """A launch was refused before it ran (bad geometry, arguments or code object); raised by
    :mod:`vlpc.runtime`'s devices and :meth:`vlpc.kernel.CompiledKernel.check_offsets`."""


class TargetError(ValueError):
    """An unknown target or a malformed target id (a user error; :mod:`vlpc.targets`, :mod:`vlpc.isa`)."""
