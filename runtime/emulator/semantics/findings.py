"""Checks whose outcome the hardware defines: raise a fault, or report a finding and go on.

Some things the emulator's checkers catch are not undefined on the hardware, they have a
defined (if usually unintended) result, and foreign code relies on some of them on purpose:

* ``"waitcnt"``: a register read or overwritten while a load into it may be outstanding
  (:mod:`.race`); on the hardware the value depends on timing;
* ``"lds_range"``: an LDS access outside the workgroup's allocation: the hardware drops the
  write and returns 0 for the read (AMD "Vega" ISA guide, "Data Share Operations": LDS
  addresses are checked against the allocated size); Tensile's DGEMM kernels point idle
  lanes at 0xF00000 on purpose;
* ``"buffer_range"``: a MUBUF/MTBUF access outside the buffer resource's ``num_records``
  (Vega ISA guide, "Buffer Instructions", range checking): loads return 0, stores are
  dropped; LLVM's buffer fat pointers and Tensile's edge tiles rely on it.

Each check has a mode, ``DispatchConfig.checks[name]`` (:func:`mode`): ``"raise"`` (the
fault, an :class:`~..errors.EmulatorFault`) or ``"report"`` (an
:class:`~..errors.EmulatorFindingWarning` subclass naming kernel, PC, workgroup, wave and
instruction, once per kernel, PC and check key, and execution goes on with the hardware's
result).  ``strict`` raises for every check.  Defaults (:data:`DEFAULT_MODES`): vlpc's own
kernels never do any of these on purpose, so waitcnt and LDS range raise; buffer range
checking is the buffer resource's documented purpose, so it reports.
"""

from __future__ import annotations

import warnings

from ..errors import (BufferOutOfRangeWarning, EmulatorFault, LdsOutOfRangeWarning,
                      WaitcntViolationWarning)

#: the checks with a hardware-defined outcome -> the warning class of a reported finding
CHECKS = {"waitcnt": WaitcntViolationWarning, "lds_range": LdsOutOfRangeWarning,
          "buffer_range": BufferOutOfRangeWarning}
MODES = ("raise", "report")
#: the mode of each check when nothing else is asked for
DEFAULT_MODES = {"waitcnt": "raise", "lds_range": "raise", "buffer_range": "report"}


def resolve(checks=None, waitcnt: str | None = None) -> dict:
    """The full ``{check: mode}`` map from a user's ``checks`` (None, one mode for every
    check, or a partial dict) and the older ``waitcnt`` option; ValueError names a bad one."""
    out = dict(DEFAULT_MODES)
    if isinstance(checks, str):
        if checks not in MODES:
            raise ValueError(f"checks must be one of {MODES} or a dict {{check: mode}}, not {checks!r}")
        out = {k: checks for k in CHECKS}
    elif checks is not None:
        for k, v in dict(checks).items():
            if k not in CHECKS:
                raise ValueError(f"unknown check {k!r}: the checks are {', '.join(CHECKS)}")
            if v not in MODES:
                raise ValueError(f"check {k!r}: mode must be one of {MODES}, not {v!r}")
            out[k] = v
    if waitcnt is not None:
        if waitcnt not in MODES:
            raise ValueError(f"waitcnt must be 'raise' or 'report', not {waitcnt!r}")
        out["waitcnt"] = waitcnt
    return out


def mode(cfg, check: str) -> str:
    """``"raise"`` or ``"report"`` for ``check`` in a dispatch (``strict`` always raises)."""
    if cfg.strict:
        return "raise"
    checks = getattr(cfg, "checks", None) or {}
    if check in checks:
        return checks[check]
    if check == "waitcnt":
        return getattr(cfg, "waitcnt", "raise")
    return DEFAULT_MODES[check]


def finding(b, check: str, fault: EmulatorFault, key=None) -> None:
    """Raise ``fault`` (located: kernel, pc, wave, instruction) or warn once per kernel, pc,
    check and ``key`` and return, so the caller carries on with the hardware's result."""
    if mode(b.cfg, check) == "raise":
        raise fault
    ident = (check, b.cfg.kernel_name, fault.pc, key)
    with b.run.lock:
        first = ident not in b.run.warned
        b.run.warned.add(ident)
    if first:
        w = CHECKS[check](str(fault))
        w.ident = ident  # forked workers' warnings are merged by it (core._run_forked)
        warnings.warn(w, stacklevel=3)
