"""Memory microbenchmarks: HBM streaming per load width, and latency chains (all **modeled**).

Streaming (rows ``hbm.stream.dwordx4``, ``hbm.stream.dword`` of ``measurements.csv``:
MI50, whole GPU, a large buffer, HBM2 at 1000 MHz): ``kernels/memory.hip`` (built by
Debian's hipcc for gfx906, :func:`kernels`), ``stream_dwordx4`` / ``stream_dword``: every
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

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from harness import Point  # noqa: E402

SOURCE = HERE / "kernels" / "memory.hip"
#: The committed build of SOURCE (used when hipcc is not installed).
PREBUILT = HERE / "kernels" / "memory.hsaco"
UNROLL = 4
BLOCK = 256
STREAM_BYTES = 256 << 20


@functools.lru_cache(maxsize=None)
def kernels():
    """The code object of ``kernels/memory.hip``: rebuilt by hipcc into ``build/`` when
    hipcc is installed and the source is newer than the build, else the committed one."""
    from vlpc.runtime.code_object import load_code_object

    hipcc = shutil.which("hipcc")
    out = HERE.parents[1] / "build" / "microbench" / "memory.hsaco"
    if hipcc and (not out.exists() or out.stat().st_mtime < SOURCE.stat().st_mtime):
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([hipcc, "--offload-arch=gfx906", "--cuda-device-only", "--no-gpu-bundle-output",
                        "-O3", "-c", str(SOURCE), "-o", str(out)], check=True,
                       env=dict(os.environ, HIP_PLATFORM="amd"), capture_output=True)
    return load_code_object(out if out.exists() else PREBUILT)


def _device(board):
    import warnings

    from vlpc.runtime import get_device

    # hipcc's loops test SCC after s_cmp_eq_u32 on a kernel argument: the emulator's
    # uninitialised-register check does not see that write yet (issue 32, emulator part)
    warnings.filterwarnings("ignore", message=".*scc is read before anything wrote it")
    return get_device("emulator", gpu=board, timing_only=True)


def stream_gbs(board, width_bytes: int) -> float:
    """Modeled streaming read bandwidth (GB/s) of ``stream_dword`` (4) or ``stream_dwordx4``
    (16) over a ``STREAM_BYTES`` buffer on ``board``."""
    name = {4: "stream_dword", 16: "stream_dwordx4"}[width_bytes]
    grid = STREAM_BYTES // (UNROLL * BLOCK * width_bytes)
    dev = _device(board)
    a = dev.alloc(STREAM_BYTES)
    out = dev.alloc(4 * BLOCK * grid)
    st = dev.launch(kernels(), name, grid=(grid, 1, 1), block=(BLOCK, 1, 1), args=[a, out])
    return STREAM_BYTES / (st.time_us * 1e-6) / 1e9


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
        dev = _device(board)
        nxt = _chain(dev, span_bytes, step_bytes)
        out = dev.alloc(4)
        args = [nxt, np.uint32(n)] + ([] if kernel == "chase_scalar" else [np.uint32(0)]) + [out]
        st = dev.launch(kernels(), kernel, grid=(1, 1, 1), block=(64, 1, 1), args=args)
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
