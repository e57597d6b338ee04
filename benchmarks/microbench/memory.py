"""Memory microbenchmarks: HBM streaming per load width, and latency chains (all **modeled**).

Streaming (rows ``hbm.stream.dwordx4``, ``hbm.stream.dword`` of ``measurements.csv``:
MI50, whole GPU, a large buffer, HBM2 at 1000 MHz): ``kernels/memory.hip`` (built by
Debian's hipcc for gfx906, :func:`vlpc.benchmarking.microbench.memory_kernels`),
``stream_dwordx4`` / ``stream_dword`` (:func:`vlpc.benchmarking.microbench.stream_gbs`): every
work-item issues 4 loads (``global_load_dwordx4`` / ``global_load_dword``) strided by the
whole grid, then one ``s_waitcnt``; 256 work-items per workgroup and enough workgroups
for a 256 MiB buffer (64x the 4 MiB L2: nothing is reused).  Bandwidth = bytes read /
modeled time of one launch (launch overhead included, as a timed launch sees it).

Latency chains (:func:`latencies`; no public gfx906 measurement was found to compare
with, so they are printed, not added to ``measurements.csv``): one work-item follows a
pointer chain (each load's address is the previous load's result) through the scalar
cache (``s_load_dword``), the vector L1 (a chain of 64 lines inside 4 KiB), the L2 (512
lines inside 32 KiB, twice the L1: every step misses L1; the measured steps are the
second pass, in L2), HBM (a 256 MiB chain, 4 KiB steps) and with
``global_atomic_add ... glc``; modeled ns per step = (time of 2n steps - time of n
steps) / n.

Run: ``python benchmarks/microbench/run.py --only memory`` (points) or
``python benchmarks/microbench/memory.py`` (points and latencies).
"""

from __future__ import annotations

from vlpc.benchmarking.microbench import (BLOCK, STREAM_BYTES, UNROLL, Point, memory_device, memory_kernels,
                                          stream_gbs)


def points(board) -> list[Point]:
    """The streaming rows at ``board``'s clocks (the rows' own condition: MI50, HBM2 at
    1000 MHz: run with ``--gpu mi50``)."""
    out = []
    for width, rid, mn in ((16, "hbm.stream.dwordx4", "global_load_dwordx4"),
                           (4, "hbm.stream.dword", "global_load_dword")):
        grid = STREAM_BYTES // (UNROLL * BLOCK * width)
        out.append(Point(rid, stream_gbs(board, width),
                         f"{mn} x{UNROLL} per work-item, {grid} x {BLOCK} work-items, 256 MiB "
                         f"(hipcc -O3, kernels/memory.hip)"))
    return out


def _chain(dev, span_bytes: int, step_bytes: int):
    """A pointer chain of ``span_bytes`` (dword indices, ``step_bytes`` apart, wrapping)."""
    import numpy as np

    n = span_bytes // 4
    step = step_bytes // 4
    nxt = (np.arange(n, dtype=np.uint64) + step) % n
    return dev.upload(nxt.astype(np.uint32))


def chase_ns(board, kernel: str, span_bytes: int, step_bytes: int, steps: int = 64) -> float:
    """Modeled ns per step of a one-work-item pointer chain (``chase_vector``,
    ``chase_scalar`` or ``chase_atomic``): (time of 2 ``steps`` - time of ``steps``) / ``steps``."""
    import numpy as np

    times = []
    for n in (steps, 2 * steps):
        dev = memory_device(board)
        nxt = _chain(dev, span_bytes, step_bytes)
        out = dev.alloc(4)
        args = [nxt, np.uint32(n)] + ([] if kernel == "chase_scalar" else [np.uint32(0)]) + [out]
        st = dev.launch(memory_kernels(), kernel, grid=(1, 1, 1), block=(64, 1, 1), args=args)
        times.append(st.time_us * 1e3)
    return (times[1] - times[0]) / steps


def latencies(board) -> dict[str, float]:
    """Modeled load-to-use latency per step (ns) of each chain (the module docstring)."""
    return {
        "smem (scalar cache hit)": chase_ns(board, "chase_scalar", 4096, 64),
        "vector L1 hit": chase_ns(board, "chase_vector", 4096, 64),
        "L2 hit (L1 miss)": chase_ns(board, "chase_vector", 32 << 10, 64, steps=512),
        "HBM (L2 miss)": chase_ns(board, "chase_vector", 256 << 20, 4096),
        "global atomic (L2)": chase_ns(board, "chase_atomic", 4096, 64),
    }


def main() -> int:
    from vlpc.targets import get_board

    board = get_board("mi50")
    print(f"modeled on {board.name} @ {board.engine_clock_mhz:.0f} MHz, HBM2 {board.memory_clock_mhz:.0f} MHz "
          f"(pin {board.hbm_bytes_per_second / 1e9:.0f} GB/s)")
    for p in points(board):
        print(f"{p.id:<22} {p.modeled:8.1f} GB/s modeled  ({p.note})")
    for k, v in latencies(board).items():
        print(f"latency {k:<26} {v:7.1f} ns modeled ({v * board.engine_clock_mhz / 1e3:.0f} cycles)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
