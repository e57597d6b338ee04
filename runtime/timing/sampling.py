"""Loop sampling: a long main loop modeled from two short samples of it (a timing-model shortcut).

A GEMM kernel's waves spend almost all their instructions in one loop (the K loop) whose body is
the same instruction sequence at every iteration; the CU model's cost grows with the length of
the streams.  When every traced wave runs such a loop for many iterations, the model is run on
two *truncated* traces instead of the whole one: each wave keeps its prologue, the first ``J``
iterations of the loop and the last iteration with the epilogue (``J = J1`` and ``J = J2``), the
memory lines of the kept instructions unchanged.  Every modeled quantity (cycles, the breakdown,
the counters) is taken as linear in the number of iterations and extrapolated from the two
samples to the trace's ``N`` iterations, as sampled simulation does for a periodic region
(Accel-Sim and SimPoint-style sampling; here the period is found in the trace itself).

When it applies: every traced wave's stream has the same most frequent backward-branch target
(the loop head), reached ``N`` times at a constant distance ``L`` (the body), the ``N - 1`` full
bodies identical, and ``N - 1 > MIN_ITERATIONS``; otherwise (no loop, nested or data-dependent
loops, few iterations) the trace is modeled whole.  ``MIN_ITERATIONS`` keeps every launch of up to
``MIN_ITERATIONS`` iterations (K <= 1536 for vlpc's SGEMM at K step 16, the seed's table at K = 640)
exact.  The error against the whole model is measured by ``benchmarks/timing_shortcut.py --loop``
and tested in ``tests/timing/test_timing_sampling.py``.

**Off by default**: on vlpc's SGEMM 1024x1024x4096 (one partial round of 8 workgroups per CU)
the shortcut models 9.0 % faster than the whole model, beyond the 0.5 % it must keep: the loop is
not stationary where the samples are (after about 64 bodies the CU's share of the simulated L2
is full and the cost per body rises by 9 %: docs/timing_model.md).  ``VLPC_TIMING_SAMPLE=1`` in the environment (or
``model_kernel(..., loop_sample=True)``) turns it on.  All figures are modeled.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from .trace import KernelTrace

#: The two samples' iteration counts (J1, J2) and the fewest iterations sampling applies to.
SAMPLES = (16, 32)
MIN_ITERATIONS = 96


@dataclass(frozen=True)
class Loop:
    """The loop every traced wave runs: ``first[key]`` the stream index of the head's first
    occurrence, ``body`` its length in instructions, ``iterations`` the head's occurrences
    (``iterations - 1`` full bodies, then the last iteration and the epilogue)."""

    first: dict
    body: int
    iterations: int


def enabled() -> bool:
    """True when ``VLPC_TIMING_SAMPLE`` is set to anything but ``""`` or ``0`` (off by default)."""
    return os.environ.get("VLPC_TIMING_SAMPLE", "") not in ("", "0")


def find_loop(trace: KernelTrace) -> Loop | None:
    """The common main loop of ``trace``'s waves (see the module docstring), or None."""
    heads = None
    first: dict = {}
    body = iters = None
    for key, st in trace.streams.items():
        st = np.asarray(st)
        back = np.flatnonzero(st[1:] < st[:-1])
        if back.size == 0:
            return None
        if heads is None:
            targets, counts = np.unique(st[back + 1], return_counts=True)
            heads = int(targets[np.argmax(counts)])
        occ = np.flatnonzero(st == heads)
        if occ.size < 2:
            return None
        step = np.diff(occ)
        length = int(step[0])
        n = int(occ.size)
        if (body is not None and (length != body or n != iters)) or np.any(step != length):
            return None
        seg = st[occ[0]:occ[-1]].reshape(n - 1, length)
        if not np.array_equal(seg, np.broadcast_to(seg[0], seg.shape)):
            return None
        body, iters = length, n
        first[key] = int(occ[0])
    if body is None:
        return None
    return Loop(first, body, iters)


def truncate(trace: KernelTrace, loop: Loop, keep: int) -> KernelTrace:
    """``trace`` with each wave's loop cut to its first ``keep`` bodies and its last iteration
    (the footprints, static facts and grid are the trace's own objects)."""
    streams, mem = {}, {}
    for key, st in trace.streams.items():
        st = np.asarray(st)
        f = loop.first[key]
        cut = f + keep * loop.body                 # first index dropped
        last = f + (loop.iterations - 1) * loop.body  # first index of the last iteration
        shift = last - cut
        streams[key] = np.concatenate([st[:cut], st[last:]])
        ev = trace.mem.get(key, {})
        mem[key] = {(i if i < cut else i - shift): e for i, e in ev.items() if i < cut or i >= last}
    return replace(trace, streams=streams, mem=mem)


def plan(trace: KernelTrace, on: bool | None = None) -> Loop | None:
    """The loop to sample, when sampling applies to ``trace`` (``on``, or by default
    :func:`enabled`; a loop found with more than ``MIN_ITERATIONS`` full bodies), else None."""
    if not (enabled() if on is None else on):
        return None
    loop = find_loop(trace)
    if loop is None or loop.iterations - 1 <= max(MIN_ITERATIONS, SAMPLES[1]):
        return None
    return loop


def extrapolate(a: float, b: float, loop: Loop) -> float:
    """The value at the trace's ``iterations - 1`` bodies, linear through ``a`` (at J1) and ``b`` (J2)."""
    j1, j2 = SAMPLES
    return a + (b - a) * (loop.iterations - 1 - j1) / (j2 - j1)
