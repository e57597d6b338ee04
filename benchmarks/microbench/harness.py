"""The microbenchmark suite's harness: measured rows, modeled points, the error rule, kernels.

A suite module (any ``*.py`` in this folder other than the harness and the runner) exposes
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
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MEASUREMENTS = HERE / "measurements.csv"


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

_TEMPLATE = """\
.amdgcn_target "amdgcn-amd-amdhsa--gfx906"
.amdhsa_code_object_version 5
.text
.globl {name}
.p2align 8
.type {name},@function
{name}:
{body}
.L{name}_end:
.size {name}, .L{name}_end-{name}

.rodata
.p2align 6
.amdhsa_kernel {name}
  .amdhsa_next_free_vgpr {vgprs}
  .amdhsa_next_free_sgpr {sgprs}
  .amdhsa_kernarg_size 0
  .amdhsa_group_segment_fixed_size {lds}
  .amdhsa_reserve_flat_scratch 0
  .amdhsa_user_sgpr_kernarg_segment_ptr 0
  .amdhsa_system_sgpr_workgroup_id_x 1
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--gfx906
amdhsa.kernels:
  - .name: {name}
    .symbol: {name}.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: {lds}
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: {sgprs}
    .vgpr_count: {vgprs}
    .max_flat_workgroup_size: 256
    .args: []
...
.end_amdgpu_metadata
"""


@functools.lru_cache(maxsize=None)
def code_object(name: str, body: str, *, vgprs: int = 32, sgprs: int = 16, lds: int = 0) -> bytes:
    """A gfx906 code object (``.hsaco`` bytes) of one kernel without kernel arguments:
    ``body`` is its instructions (ending in ``s_endpgm``); the workgroup id x is in ``s0``;
    ``lds`` bytes of static LDS.  Assembled and linked by vlpc's toolchain."""
    from vlpc.runtime.toolchain import assemble_and_link

    asm = _TEMPLATE.format(name=name, body=body, vgprs=vgprs, sgprs=sgprs, lds=lds)
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


__all__ = ["MEASUREMENTS", "Measurement", "Point", "Ratio", "code_object", "measurements",
           "modeled_rate", "modeled_seconds"]
