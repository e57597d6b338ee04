"""The microbenchmark suite's harness: measured rows, modeled points, the error rule, kernels,
module discovery and the goals (the runner is ``benchmarks/microbench/run.py``), and the
modeled HBM streaming ceiling (:func:`stream_gbs`) other benchmark scripts compare with.

A suite module (any ``*.py`` in ``benchmarks/microbench/`` but the runner, :data:`SKIP`) exposes
``points(board) -> list[Point]``: for each measured row it reproduces (``measurements.csv``,
by ``id``), the **modeled** value in that row's unit.  It may also expose ``ratios() ->
list[Ratio]`` (ratios between groups of rows, e.g. half-rate over full-rate issue).
``board`` is a :class:`vlpc.targets.Board` at the engine clock the run asks for.

Error rule (:meth:`Measurement.error`): a single measured value ``v`` gives
``(modeled - v) / v``; a measured range ``lo-hi`` gives 0 when the modeled value lies
inside it, else the relative distance to the nearest end (``(m - hi) / hi`` above,
``(m - lo) / lo`` below).

Kernels are hand-written gfx906 assembly wrapped into a code object
(:func:`code_object`: vlpc's toolchain, ``vlpc.runtime.toolchain.assemble_and_link``) and
run on the emulator with the timing model, as a user would
(``get_device("emulator", gpu=board, timing_only=True)``); :func:`modeled_seconds` returns
the model's time of one launch.  Every time here is **modeled**, never measured.

Goals (:data:`POINT_GOAL`, :data:`RATIO_GOAL`): every point within +-10 % of its row, every
class ratio (:func:`ratio_rows`) within +-5 %.
"""

from __future__ import annotations

import csv
import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

from . import BENCHMARKS, load_script

#: The suite's folder: its modules, ``measurements.csv`` and ``kernels/``.
SUITE = BENCHMARKS / "microbench"
MEASUREMENTS = SUITE / "measurements.csv"
#: The files of :data:`SUITE` that are not suite modules.
SKIP = {"run", "__init__"}
#: The goals: a point's error (:meth:`Measurement.error`) and a class ratio's (:func:`ratio_rows`).
POINT_GOAL = 0.10
RATIO_GOAL = 0.05


@dataclass(frozen=True)
class Point:
    """One modeled point: ``id`` of its ``measurements.csv`` row, ``modeled`` value in that
    row's unit, ``note`` (the kernel and its conditions, one line)."""

    id: str
    modeled: float
    note: str = ""


@dataclass(frozen=True)
class Ratio:
    """A ratio between two groups of rows (means of their measured and modeled values):
    ``name`` (e.g. ``"half/full"``), ``numerator`` and ``denominator`` row ids."""

    name: str
    numerator: tuple[str, ...]
    denominator: tuple[str, ...]


@dataclass(frozen=True)
class Measurement:
    """One row of ``measurements.csv``: ``low == high`` for a single value."""

    id: str
    quantity: str
    device: str
    low: float
    high: float
    unit: str
    conditions: str
    source: str
    strength: str

    @property
    def mid(self) -> float:
        return (self.low + self.high) / 2

    def text(self) -> str:
        return f"{self.low:g}" if self.low == self.high else f"{self.low:g}-{self.high:g}"

    def error(self, modeled: float) -> float:
        """Relative error of ``modeled`` (the module docstring's rule): 0 inside a range."""
        if modeled > self.high:
            return (modeled - self.high) / self.high
        if modeled < self.low:
            return (modeled - self.low) / self.low
        return 0.0


def _range(text: str) -> tuple[float, float]:
    parts = text.replace("\u2013", "-").split("-")
    if len(parts) == 1:
        v = float(parts[0])
        return v, v
    lo, hi = (float(p) for p in parts)
    return lo, hi


@functools.lru_cache(maxsize=None)
def measurements(path: str | None = None) -> dict[str, Measurement]:
    """The measured rows by id (``measurements.csv``; ``conditions`` "as above" resolved)."""
    out: dict[str, Measurement] = {}
    prev = ""
    with open(path or MEASUREMENTS, newline="") as f:
        for r in csv.DictReader(f):
            cond = r["conditions"]
            if cond.startswith("as above"):
                cond = prev + cond[len("as above"):]
            else:
                prev = cond
            lo, hi = _range(r["value"])
            out[r["id"]] = Measurement(r["id"], r["quantity"], r["device"], lo, hi, r["unit"],
                                       cond, r["source"], r["strength"])
    return out


# -- kernels -------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def code_object(name: str, body: str, *, vgprs: int = 32, sgprs: int = 16, lds: int = 0) -> bytes:
    """A gfx906 code object (``.hsaco`` bytes) of one kernel without kernel arguments:
    ``body`` is its instructions (ending in ``s_endpgm``); the workgroup id x is in ``s0``;
    ``lds`` bytes of static LDS.  Assembled and linked by vlpc's toolchain."""
    from vlpc.runtime.emulator.testing import kernel_source
    from vlpc.runtime.toolchain import assemble_and_link

    asm = kernel_source(name, body, vgprs=vgprs, sgprs=sgprs, lds=lds,
                        directives="  .amdhsa_user_sgpr_kernarg_segment_ptr 0\n"
                                   "  .amdhsa_system_sgpr_workgroup_id_x 1")
    return assemble_and_link(asm, "gfx906", source_name=f"{name}.s")


def modeled_seconds(co: bytes, name: str, board, grid: int, block: int) -> float:
    """Modeled seconds of one launch of kernel ``name`` (``grid`` workgroups of ``block``
    work-items) on ``board``: the timing model's time, launch overhead included."""
    from vlpc.runtime import get_device

    dev = get_device("emulator", gpu=board, timing_only=True)
    st = dev.launch(co, name, grid=(grid, 1, 1), block=(block, 1, 1))
    return float(st.time_us) * 1e-6


def modeled_rate(make, work_per_iteration: float, board, grid: int, block: int,
                 iterations: tuple[int, int] = (2, 6)) -> float:
    """Modeled steady-state rate (work per second) of a looping kernel: ``make(n)`` returns
    ``(code object, kernel name)`` of the kernel running ``n`` loop iterations, each doing
    ``work_per_iteration`` units of work over the whole grid.  The rate is the difference
    of work over the difference of modeled time between the two ``iterations`` counts,
    so the launch overhead and the loop's prologue and epilogue cancel (as a timed
    microbenchmark loop amortises them)."""
    n0, n1 = iterations
    t0 = modeled_seconds(*make(n0), board, grid, block)
    t1 = modeled_seconds(*make(n1), board, grid, block)
    return (n1 - n0) * work_per_iteration / (t1 - t0)


# -- the suite ----------------------------------------------------------------------------


def modules(only: list[str] | None = None) -> list:
    """The suite modules of :data:`SUITE` (sorted by name, loaded by path: :func:`load_script`),
    optionally only those named."""
    out = []
    for p in sorted(SUITE.glob("*.py")):
        if p.stem in SKIP or (only and p.stem not in only):
            continue
        m = load_script(p)
        if callable(getattr(m, "points", None)):
            out.append(m)
    return out


def ratio_rows(ratio: Ratio, meas: dict[str, Measurement], got: dict[str, Point]):
    """``(measured, modeled, error)`` of ``ratio`` over the rows ``got`` has (means of each
    group; error = modeled / measured - 1), or None when a group has none."""
    num = [i for i in ratio.numerator if i in got]
    den = [i for i in ratio.denominator if i in got]
    if not num or not den:
        return None
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    measured = mean([meas[i].mid for i in num]) / mean([meas[i].mid for i in den])
    modeled = mean([got[i].modeled for i in num]) / mean([got[i].modeled for i in den])
    return measured, modeled, modeled / measured - 1


# -- the memory kernels and the streaming ceiling ---------------------------------------------

#: The memory kernels' HIP source and its committed build (used when hipcc is not installed).
MEMORY_SOURCE = SUITE / "kernels" / "memory.hip"
MEMORY_PREBUILT = SUITE / "kernels" / "memory.hsaco"
#: The streaming kernels' loads per work-item, work-items per workgroup and buffer bytes
#: (64x the 4 MiB L2: nothing is reused).
UNROLL = 4
BLOCK = 256
STREAM_BYTES = 256 << 20


@functools.lru_cache(maxsize=None)
def memory_kernels():
    """The code object of ``kernels/memory.hip``: rebuilt by hipcc into ``build/microbench/``
    when hipcc is installed and the source is newer than the build, else the committed one."""
    from vlpc.runtime.code_object import load_code_object

    hipcc = shutil.which("hipcc")
    out = BENCHMARKS.parent / "build" / "microbench" / "memory.hsaco"
    if hipcc and (not out.exists() or out.stat().st_mtime < MEMORY_SOURCE.stat().st_mtime):
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([hipcc, "--offload-arch=gfx906", "--cuda-device-only", "--no-gpu-bundle-output",
                        "-O3", "-c", str(MEMORY_SOURCE), "-o", str(out)], check=True,
                       env=dict(os.environ, HIP_PLATFORM="amd"), capture_output=True)
    return load_code_object(out if out.exists() else MEMORY_PREBUILT)


def memory_device(board):
    """A timing-only emulator device on ``board`` for the memory kernels."""
    import warnings

    from vlpc.runtime import get_device

    # hipcc's loops test SCC after s_cmp_eq_u32 on a kernel argument: the emulator's
    # uninitialised-register check does not see that write yet (issue 32, emulator part)
    warnings.filterwarnings("ignore", message=".*scc is read before anything wrote it")
    return get_device("emulator", gpu=board, timing_only=True)


def stream_gbs(board, width_bytes: int) -> float:
    """Modeled streaming read bandwidth (GB/s) of ``stream_dword`` (4) or ``stream_dwordx4``
    (16) over a :data:`STREAM_BYTES` buffer on ``board``."""
    name = {4: "stream_dword", 16: "stream_dwordx4"}[width_bytes]
    grid = STREAM_BYTES // (UNROLL * BLOCK * width_bytes)
    dev = memory_device(board)
    a = dev.alloc(STREAM_BYTES)
    out = dev.alloc(4 * BLOCK * grid)
    st = dev.launch(memory_kernels(), name, grid=(grid, 1, 1), block=(BLOCK, 1, 1), args=[a, out])
    return STREAM_BYTES / (st.time_us * 1e-6) / 1e9


__all__ = ["BLOCK", "MEASUREMENTS", "Measurement", "POINT_GOAL", "Point", "RATIO_GOAL", "Ratio", "STREAM_BYTES",
           "SUITE", "UNROLL", "code_object", "measurements", "memory_device", "memory_kernels", "modeled_rate",
           "modeled_seconds", "modules", "ratio_rows", "stream_gbs"]
