"""Functional GCN (gfx906 / GFX9, wave64) emulator.

Modules (import them directly; this package imports nothing eagerly):

* :mod:`.memory` — :class:`~.memory.Memory`, the flat device address space.
* :mod:`.isa`, :mod:`.decode` — opcode tables and the instruction decoder.
* :mod:`.ops` — NumPy semantics of ALU operations (correctly rounded f32/f64 FMA).
* :mod:`.core` — :class:`~.core.DispatchConfig`, :func:`~.core.run_dispatch`,
  :class:`~.core.LaunchStats`: waves, scheduling, checkers, counters.
* :mod:`.errors` — :class:`~.errors.EmulatorFault` and its subclasses.
* :mod:`.testing` — assemble-and-run helpers for tests and benchmarks.
* :mod:`.device` — the Device API on top (maintained separately).
"""
