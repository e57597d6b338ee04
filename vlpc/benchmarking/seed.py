"""The seed's SGEMM problem and the modeled-launch helpers several benchmark scripts share.

"The seed" is *An Alternative SGEMM on VEGA* (github.com/fsword73/SGEMM_on_VEGA): NT SGEMM
M = N, K = 640, measured on an MI60 (section 3.1's table, columns 1700/1500/1300/1100 MHz).
``benchmarks/timing_calibration.py``, ``seed_sweep.py``, ``board_gemm.py``, ``peers.py``,
``timing_shortcut.py`` and ``dot_layout_shortcut.py`` import these (and the tests that check
them), instead of importing each other through ``sys.path``.  Every time figure is *modeled*
(the timing model on the emulator's trace), never measured.
"""

from __future__ import annotations

import csv
import time
from dataclasses import replace
from pathlib import Path

#: The seed's K (its table's problems are M = N, K = 640).
K = 640
#: The engine clocks (MHz) of the seed's table columns (*An Alternative SGEMM on VEGA* section 3.1).
CLOCKS = (1700, 1500, 1300, 1100)


#: The file name of the seed's measured table (section 3.1; not part of this repository).
SEED_TABLE_NAME = "seed_mi60_sgemm_64x256.csv"


def seed_table(root: Path) -> Path:
    """Where the seed's table is looked for, for a checkout at ``root``: ``shared/reference/`` beside the
    checkout or one level further up (the first that exists; else the first)."""
    places = [p / "shared" / "reference" / SEED_TABLE_NAME for p in (root.parent, root.parent.parent)]
    return next((p for p in places if p.exists()), places[0])


def load_measured(path: Path) -> dict[int, dict[int, float]]:
    """The seed's table (a CSV file with columns ``m`` and ``tflops_<clock>mhz``): TFLOP/s by M, then by
    engine clock (MHz, :data:`CLOCKS`).  Raises ``OSError`` when ``path`` cannot be read."""
    out: dict[int, dict[int, float]] = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            m = int(row["m"])
            out[m] = {c: float(row[f"tflops_{c}mhz"]) for c in CLOCKS}
    return out


def seed_source(m: int, n: int, k: int = K) -> str:
    """The seed's problem as a ``gemm.matmul`` module: NT SGEMM ``m x n x k``, alpha 1, beta 0."""
    return f"""
func.func @sgemm_seed(%a: memref<{m}x{k}xf32>, %b: memref<{n}x{k}xf32>, %c: memref<{m}x{n}xf32>) {{
  %alpha = arith.constant 1.0 : f32
  %beta = arith.constant 0.0 : f32
  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "NT"}} : memref<{m}x{k}xf32>, memref<{n}x{k}xf32>, memref<{m}x{n}xf32>, f32, f32
  return
}}
"""


def dgemm_source(m: int, n: int, k: int = K) -> str:
    """:func:`seed_source` in f64 (kernel ``dgemm``)."""
    return seed_source(m, n, k).replace("f32", "f64").replace("sgemm_seed", "dgemm")


def trace_size(m: int, board, schedule: str = "seed"):
    """Compile and run one timing-only launch; returns (trace, timing report)."""
    import vlpc
    from vlpc.runtime.emulator.device import EmulatorDevice

    mod = vlpc.compile(seed_source(m, m), schedule=schedule, split_k=1)
    ck = mod.kernel()
    dev = EmulatorDevice(gpu=board, timing_only=True)
    a = dev.alloc(m * K * 4)
    b = dev.alloc(m * K * 4)
    c = dev.alloc(m * m * 4)
    lc = ck.launch(m, m, K)
    st = dev.launch(mod.code_object, ck.name, grid=lc.grid, block=lc.block,
                    args=[a, b, c, m, m, K, K, K, m, 1.0, 0.0])
    return st.trace, st.timing


def model_size(trace, meta: dict, board, max_simulated: int | None = None):
    """The model at one size: ``trace`` is that size's own (``collect`` keeps each), or the
    4096 trace replayed with the size's grid.  Under the "line" and "group" L2 rules the
    size's recorded miss probability is used; under "address" the trace's own footprints."""
    from vlpc.runtime.timing import gpu

    own = tuple(trace.grid) == tuple(meta["grid"])
    tr = trace if own else replace(trace, grid=tuple(meta["grid"]))
    res = gpu.Residency(meta["wgs_per_cu"], tr.waves_per_wg, 0, "")
    by_address = own and board.timing.l2_miss_rule == "address"
    return gpu.model_kernel(tr, board, res, "seed", max_simulated=max_simulated,
                            l2_miss=None if by_address else meta["p_l2_miss"])


def l2_miss_estimate(m: int, n: int, k: int, tile: tuple[int, int], esize: int, first_round: int,
                     line: int | None = None) -> float:
    """The L2 miss probability the timing model derives from the first round's footprints
    (unique lines / the sum of each workgroup's lines, ``runtime/timing/gpu.py``), computed
    from the tile geometry of an NT GEMM instead of recorded: the first ``first_round``
    workgroups (x fastest) read their A rows and B rows (K x esize bytes each) and write
    their C tile.  ``line``: cache line bytes (default: the timing model's ``TimingParams.line_bytes``)."""
    gx = -(-n // tile[1])
    wgs = min(first_round, gx * -(-m // tile[0]))
    rows_a = -(-wgs // gx) * tile[0]
    cols_b = min(gx, wgs) * tile[1]
    if line is None:
        from vlpc.targets import TimingParams

        line = TimingParams().line_bytes
    per_row = -(-k * esize // line)
    c_lines = tile[0] * -(-tile[1] * esize // line)
    total = wgs * ((tile[0] + tile[1]) * per_row + c_lines)
    unique = (rows_a + cols_b) * per_row + wgs * c_lines
    return unique / total


def gemm_fast(m: int = 4096, n: int | None = None, k: int = 640, *, dtype: str = "f64", gpu: str = "mi25",
              target: str | None = None, split_k: int | None = None) -> dict:
    """Modeled figures of vlpc's automatic plan for an NT GEMM ``m x n x k`` of ``dtype`` (``f32`` or
    ``f64``) on board ``gpu`` compiled for ``target`` (default: the board's processor); ``split_k``
    1 forces one kernel (default: the automatic plan).

    Returns a dict: ``modeled_us`` (microseconds), ``tflops``, ``peak_share`` (of the f32 peak,
    or of the f64 peak for ``f64``), ``peak_tflops``, ``plan``, ``vgprs``, ``l2_miss`` (the
    estimated L2 miss probability), ``board``, ``clock_mhz``, ``target``, ``wall_s`` (host
    seconds the launch took).  Raises ``ValueError`` when the plan splits K (the shortcut
    models one kernel)."""
    import numpy as np

    import vlpc
    from vlpc.runtime.emulator.device import EmulatorDevice
    from vlpc.runtime.timing import residency
    from vlpc.targets import get_board

    n = m if n is None else n
    board = get_board(gpu)
    target = target or board.target.name
    esize, npt = (8, np.float64) if dtype == "f64" else (4, np.float32)
    text = dgemm_source(m, n, k) if dtype == "f64" else seed_source(m, n, k)
    mod = vlpc.compile(text, target, gpu=board.name, **({"split_k": split_k} if split_k else {}))
    if len(mod.kernels) != 1 or (mod.kernel().launch_info.get("split_k") or 1) != 1:
        raise ValueError(f"the plan of {m}x{n}x{k} on {board.name} splits K: the shortcut models one kernel "
                         "(split_k=1 forces it)")
    ck = mod.kernel()
    li = ck.launch_info
    dev = EmulatorDevice(gpu=board, target=target, timing_only=True)
    dev.footprint_round = False
    res = residency(board, ck.vgprs, ck.sgprs, 0, li["workgroup_size"])
    dev.l2_miss = l2_miss_estimate(m, n, k, (li["macro_m"], li["macro_n"]), esize,
                                   board.compute_units * res.wgs_per_cu)
    bufs = [dev.alloc(m * k * esize), dev.alloc(n * k * esize), dev.alloc(m * n * esize)]
    lc = ck.launch(m, n, k)
    t0 = time.time()
    st = dev.launch(mod.code_object, ck.name, grid=lc.grid, block=lc.block,
                    args=[*bufs, m, n, k, k, k, n, npt(1.0), npt(0.0)])
    wall = time.time() - t0
    flops = 2.0 * m * n * k
    tf = st.timing.tflops(flops)
    peak = board.peak_flops_f32 / (board.target.f64_rate_divisor if dtype == "f64" else 1)
    return {"m": m, "n": n, "k": k, "dtype": dtype, "board": board.name, "clock_mhz": board.engine_clock_mhz,
            "target": str(target), "modeled_us": st.timing.time_us, "tflops": tf, "peak_tflops": peak / 1e12,
            "peak_share": tf * 1e12 / peak,
            "plan": f"{li['macro_m']}x{li['macro_n']} k{li['k_step']} S1 L1", "vgprs": ck.vgprs,
            "l2_miss": dev.l2_miss, "wall_s": wall, "method": "CU 0 traced, L2 miss from tile geometry (modeled)"}
