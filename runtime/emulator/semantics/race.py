"""Latent races: a register read (or overwritten) while the load that writes it may still
be outstanding, i.e. an insufficient ``s_waitcnt``.

Real kernels sometimes rely on timing instead of a sufficient wait (the seed's epilogue
waits ``vmcnt(30)`` where some rows need less).  The ``"waitcnt"`` check's mode
(:mod:`.findings`; ``DispatchConfig.waitcnt`` or ``checks["waitcnt"]``) chooses:

* ``"raise"`` (default) and any ``strict`` run: :class:`~..errors.WaitcntViolation`;
* ``"report"``: a :class:`~..errors.WaitcntViolationWarning` naming the kernel, PC,
  workgroup and wave, instruction and register (once per kernel, PC and register, like
  compute-sanitizer's racecheck), and execution goes on with the value the hardware
  would most likely deliver: the load has completed (the emulator performs loads at
  issue), so the register is no longer pending.
"""

from __future__ import annotations

from .findings import finding


def waitcnt_violation(b, g, key, fault) -> None:
    finding(b, "waitcnt", fault, key)
    g.pending.pop(key, None)
