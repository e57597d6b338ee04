"""vlpc's SGEMM against its peers on gfx906, in one run, on the same boards and clocks (modeled).

Issue 33, item 4.  For each size (default: the seed's sweep M = N = 256 .. 16384 step 256 at
K = 640, and 4096^3) and each board (``mi50`` @ 1725 MHz / HBM2 1000 MHz, ``mi60`` @ 1800 / 1000,
``seed``: the MI60 at the seed's 1700 / 800 MHz) the script compiles and models, through vlpc's
timing model on the timing-only emulator (:class:`vlpc.runtime.emulator.device.EmulatorDevice`),
the NT SGEMM ``C = A B^T`` (A: M x K, B: N x K, C: M x N, f32, row-major, exactly sized) by:

``vlpc``
    vlpc's default plan for the board (``vlpc.compile(text, gpu=...)``: the automatic tile and
    split-K choice; the seed board compiles with ``gpu="mi60"``).
``triton``
    a Triton matmul written for gfx906 (``tests/data/peers/triton_sgemm.py``), compiled ahead of
    time by Triton's AMD backend; every spill-free configuration committed under
    ``tests/data/peers/triton/`` is modeled and the fastest one per size and board is reported
    (the per-size configuration search an autotuner does; Triton does not run here).
``seed``
    vlpc's ``schedule="seed"`` with the seed's 64 x 256 tile, one kernel (the seed's kernel shape).
``hip``
    a plain LDS-tiled, register-blocked HIP GEMM (``tests/data/peers/hip_tiled_sgemm.hip``: 128 x 128
    tile, 8 x 8 per work-item), built with Debian's hipcc (ROCm 5.2) for gfx906.

How a point is modeled (every figure is **modeled**, none measured): a one-kernel plan is
traced once per (peer kernel, K) by a timing-only launch on MI60 (CU 0's workgroups only,
``EmulatorDevice.footprint_round = False``); each size and board then replays that trace with
the size's grid, the board's clocks and CU count and the L2 miss probability of the size's
first round of workgroups computed from the kernel's tile order (:func:`first_round_l2_miss`,
the rule of ``benchmarks/seed_sweep.py``'s ``l2_miss_estimate`` for any tile order and grid z), as
``seed_sweep.py`` replays the calibration's trace.  A plan of several kernels (vlpc's split-K
plans at small sizes: GEMM + reduce) runs whole, timing-only, at its own size on each board
(:func:`vlpc.verify.launch_and_read`, the first round's footprint recorded, as ``vlpc bench``
models it).  Results are cached per point in ``build/peers/results.json`` (``--fresh`` ignores
it), so an interrupted run resumes.  A cached point is reused only under the timing model it was
modeled with (:func:`model_version`, a hash of the model's sources), at the same clocks, and for the
same kernel (:func:`kernel_id`: the peer's code objects; vlpc's plan as compiled now); ``--reuse-csv``
takes the points of an earlier ``--csv`` the same way (a CSV without versions: the points of the
peers not modeled in this run), so a run of ``--peers vlpc`` keeps the other peers' figures.

    python benchmarks/peers.py --sizes 4096 --boards mi60           # one size, one board
    python benchmarks/peers.py --budget 30                          # stop starting work after 30 min
    python benchmarks/peers.py --csv docs/peers.csv --plot docs/peers.png
    python benchmarks/peers.py --check --sizes 4096                 # also verify each peer on a small size first
    python benchmarks/peers.py --peers vlpc --reuse-csv docs/peers.csv  # vlpc again, the other peers' figures kept
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import pickle
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from vlpc.benchmarking.seed import seed_source  # noqa: E402

DATA = ROOT / "tests" / "data" / "peers"
CACHE = ROOT / "build" / "peers"
K_SWEEP = 640
PEERS = ("vlpc", "triton", "seed", "hip")
#: name -> (board, engine MHz, HBM2 MHz, label)
BOARDS = {"mi50": ("mi50", 1725.0, 1000.0, "MI50 @ 1725/1000 MHz"),
          "mi60": ("mi60", 1800.0, 1000.0, "MI60 @ 1800/1000 MHz"),
          "seed": ("mi60", 1700.0, 800.0, "MI60 @ 1700/800 MHz (the seed's)")}
#: the size every one-kernel peer is traced at, per K (its per-workgroup work does not depend on M, N)
TRACE_MN = 4096


def default_sizes() -> list[tuple[int, int, int]]:
    """The seed's sweep (M = N = 256 .. 16384 step 256, K = 640), then 4096^3."""
    return [(m, m, K_SWEEP) for m in range(256, 16385, 256)] + [(4096, 4096, 4096)]


def parse_sizes(text: str) -> list[tuple[int, int, int]]:
    """``4096,8192`` (M = N, K = 640) or ``4096x4096x4096``; raises ValueError."""
    out = []
    for tok in text.split(","):
        tok = tok.strip()
        parts = [int(x) for x in tok.split("x")]
        if len(parts) == 1:
            parts = [parts[0], parts[0], K_SWEEP]
        if len(parts) != 3 or min(parts) < 1:
            raise ValueError(f"size '{tok}': give M (M = N, K = 640) or MxNxK with positive integers")
        out.append(tuple(parts))
    return out


#: the sources of the timing model (and of the occupancy and board figures it reads): a cached point is reused
#: only when their hash, :func:`model_version`, is the one it was modeled under
MODEL_SOURCES = ("runtime/timing/*.py", "vlpc/targets/timing.py", "vlpc/targets/boards.py",
                 "vlpc/targets/processors.py")


def _digest(chunks) -> str:
    import hashlib

    h = hashlib.sha256()
    for c in chunks:
        h.update(c)
    return h.hexdigest()[:12]


def model_version() -> str:
    """A short hash of the timing model's sources (:data:`MODEL_SOURCES`, in file-name order)."""
    files = sorted(f for pat in MODEL_SOURCES for f in ROOT.glob(pat))
    return _digest(x for f in files for x in (f.relative_to(ROOT).as_posix().encode(), f.read_bytes()))


def kernel_id(peer: str, m: int, n: int, k: int, board_name: str) -> str:
    """A short hash of what ``peer`` runs at M x N x K on the board: the code object(s) and the plan
    (vlpc, seed: compiled for the board), the committed code object (hip) or every committed
    configuration (triton: the fastest one is reported)."""
    if peer == "hip":
        return _digest([(DATA / "hip_tiled_sgemm.hsaco").read_bytes()])
    if peer == "triton":
        cfgs = triton_configs()
        return _digest([(TRITON_DIR / "configs.json").read_bytes(),
                        *((TRITON_DIR / c[f]).read_bytes() for c in cfgs for f in ("file", "even_k_file"))])
    mod = vlpc_module(m, n, k, peer, BOARDS[board_name][0])
    _, label = vlpc_kernel(mod, m, n, k, peer)
    return _digest([mod.kernel().code_object, label.encode()])


def get_board(name: str):
    """The :class:`vlpc.targets.Board` of a ``BOARDS`` entry."""
    from vlpc.targets import get_board as gb

    b, clk, mem, _ = BOARDS[name]
    return gb(b, clock_mhz=clk, memory_clock_mhz=mem)


# -- the L2 miss probability of a first round ---------------------------------------------------


def first_round_l2_miss(tiles, tile_m: int, tile_n: int, k_slice: int, esize: int = 4,
                        line: int | None = None) -> float:
    """Unique cache lines over the sum of each workgroup's lines for the workgroups ``tiles``
    (``(tile row, tile column, K slice)`` of each workgroup of the first round): every workgroup
    reads ``tile_m`` rows of A and ``tile_n`` rows of B, ``k_slice`` elements of ``esize`` bytes
    each (NT: both K-contiguous), and writes its ``tile_m x tile_n`` C tile.  The timing model's
    rule (``runtime/timing/gpu.py``: ``l2_miss_probability``), from the tile order instead of a
    recorded footprint; for ``K slice`` 0 and x-fastest tiles it is ``seed_sweep.l2_miss_estimate``.
    ``line``: cache line bytes (default ``TimingParams.line_bytes``)."""
    if line is None:
        from vlpc.targets import TimingParams

        line = TimingParams().line_bytes
    tiles = list(tiles)
    per_row = -(-k_slice * esize // line)
    c_lines = tile_m * -(-tile_n * esize // line)
    total = len(tiles) * ((tile_m + tile_n) * per_row + c_lines)
    a = {(t[0], t[2]) for t in tiles}
    b = {(t[1], t[2]) for t in tiles}
    c = {(t[0], t[1]) for t in tiles}
    return (len(a) * tile_m * per_row + len(b) * tile_n * per_row + len(c) * c_lines) / total


def xfast_tiles(gx: int, gy: int, gz: int, count: int):
    """(row = y, column = x, slice = z) of the first ``count`` workgroups, x fastest."""
    for w in range(min(count, gx * gy * gz)):
        yield (w // gx) % gy, w % gx, w // (gx * gy)


def grouped_tiles(num_m: int, num_n: int, group_m: int, count: int):
    """(row, column, 0) of the first ``count`` programs of Triton's grouped order (the tutorial's
    ``GROUP_SIZE_M`` swizzle, as ``triton_sgemm.py`` computes it)."""
    for pid in range(min(count, num_m * num_n)):
        group = group_m * num_n
        first = (pid // group) * group_m
        gsize = min(num_m - first, group_m)
        yield first + (pid % group) % gsize, (pid % group) // gsize, 0


# -- peer kernels --------------------------------------------------------------------------------


@dataclass
class Kernel:
    """One code object kernel and how to launch it for an M x N x K NT SGEMM."""

    peer: str
    config: str                      # the plan or configuration, as reported
    code_object: object              # vlpc.runtime.code_object.CodeObject
    name: str
    tile: tuple[int, int]            # (M, N) of a workgroup's C tile
    block: tuple[int, int, int]
    dynamic_lds: int = 0
    order: str = "xfast"             # "xfast": grid (N tiles, M tiles, 1); "grouped:G": Triton's 1-D grouped order
    extra_args: tuple = ()
    vgprs: int = 0
    key: str = ""                    # the trace cache key
    meta: dict = field(default_factory=dict)

    def grid(self, m: int, n: int, k: int) -> tuple[int, int, int]:
        gm, gn = -(-m // self.tile[0]), -(-n // self.tile[1])
        return (gm * gn, 1, 1) if self.order.startswith("grouped") else (gn, gm, 1)

    def args(self, a, b, c, m: int, n: int, k: int, alpha: float = 1.0, beta: float = 0.0) -> list:
        import numpy as np

        return [a, b, c, np.int32(m), np.int32(n), np.int32(k), np.int32(k), np.int32(k), np.int32(n),
                np.float32(alpha), np.float32(beta), *self.extra_args]

    def l2_miss(self, m: int, n: int, k: int, first_round: int) -> float:
        gm, gn = -(-m // self.tile[0]), -(-n // self.tile[1])
        if self.order.startswith("grouped"):
            tiles = grouped_tiles(gm, gn, int(self.order.split(":")[1]), first_round)
        else:
            tiles = xfast_tiles(gn, gm, 1, first_round)
        return first_round_l2_miss(tiles, self.tile[0], self.tile[1], k)


def hip_kernel(hsaco: Path | None = None) -> Kernel:
    """The plain HIP tiled GEMM: the committed code object (``tests/data/peers/build.sh`` rebuilds it)."""
    from vlpc.runtime.code_object import load_code_object

    co = load_code_object(hsaco or DATA / "hip_tiled_sgemm.hsaco")
    md = co.kernels["sgemm_nt_tiled"].descriptor
    return Kernel("hip", "128x128 k8, 8x8 per work-item", co, "sgemm_nt_tiled", (128, 128), (256, 1, 1),
                  vgprs=md.vgpr_count, key="hip")


#: where the Triton configurations are (``--triton-dir``)
TRITON_DIR = DATA / "triton"


def triton_configs() -> list[dict]:
    """The Triton configurations of :data:`TRITON_DIR` (default: the committed ones,
    ``tests/data/peers/triton/configs.json``)."""
    return json.loads((TRITON_DIR / "configs.json").read_text())["configs"]


def triton_kernel(cfg: dict, even_k: bool = True) -> Kernel:
    """One committed Triton configuration (``even_k``: the variant without K masks, for K a multiple of
    BLOCK_K, as a launcher specialises on K; else the masked one)."""
    from vlpc.runtime.code_object import load_code_object

    f = cfg["even_k_file" if even_k else "file"]
    co = load_code_object(TRITON_DIR / f)
    md = co.kernels["sgemm_nt"].descriptor
    return Kernel("triton", cfg["name"], co, "sgemm_nt", (cfg["BLOCK_M"], cfg["BLOCK_N"]),
                  (64 * cfg["num_warps"], 1, 1), dynamic_lds=cfg["even_k_shared" if even_k else "masked_shared"], order=f"grouped:{cfg['GROUP_M']}",
                  extra_args=(0, 0), vgprs=md.vgpr_count, key=f"triton:{f}", meta=cfg)


def vlpc_module(m: int, n: int, k: int, peer: str, gpu: str):
    """vlpc's module for the size: the default plan for ``gpu`` (``vlpc``) or the seed's schedule (``seed``)."""
    import vlpc

    text = seed_source(m, n, k)
    if peer == "seed":
        return vlpc.compile(text, schedule="seed", split_k=1, macro_tile=(64, 256), gpu=gpu)
    return vlpc.compile(text, gpu=gpu)


def vlpc_kernel(mod, m: int, n: int, k: int, peer: str) -> tuple[Kernel | None, str]:
    """(a :class:`Kernel` when the plan is one kernel (else None), the plan's label)."""
    from vlpc.runtime.code_object import load_code_object

    ck = mod.kernel()
    li = ck.launch_info
    steps = ck.plan(m, n, k)
    label = (f"{li['macro_m']}x{li['macro_n']} k{li['k_step']} S{li.get('split_k') or 1}"
             f" L{li.get('local_split') or 1}" + (" seed" if peer == "seed" else ""))
    if len(steps) != 1 or ck.split_k != 1:
        return None, label
    kern = Kernel(peer, label, load_code_object(ck.code_object), ck.name, (li["macro_m"], li["macro_n"]),
                  tuple(steps[0].block), vgprs=ck.vgprs, key=f"{peer}:{label}")
    kern.meta["size"] = (m, n, k)
    return kern, label


# -- modeling ------------------------------------------------------------------------------------

_TRACES: dict = {}


def trace_of(kern: Kernel, k: int):
    """The trace of ``kern`` at M = N = ``TRACE_MN`` (CU 0's workgroups, timing-only, on MI60; cached in
    memory and in ``build/peers/traces``); a vlpc plan the trace size would not choose is traced at its
    own size."""
    m = n = TRACE_MN
    ref = None
    if kern.peer in ("vlpc", "seed"):  # the same plan compiled at the trace size, else the kernel at its own size
        ref, _ = vlpc_kernel(vlpc_module(m, n, k, kern.peer, kern.meta["gpu"]), m, n, k, kern.peer)
        if ref is None or ref.config != kern.config:
            ref, (m, n, _) = kern, kern.meta["size"]
    key = f"{kern.key}|k{k}" + ("" if m == TRACE_MN and n == TRACE_MN else f"|at{m}x{n}")
    if key in _TRACES:
        return _TRACES[key]
    path = CACHE / "traces" / (key.replace(":", "_").replace("|", "_").replace(" ", "_") + ".pkl")
    if path.exists():
        try:
            _TRACES[key] = pickle.loads(path.read_bytes())
            return _TRACES[key]
        except Exception:
            pass
    from vlpc.runtime.emulator.device import EmulatorDevice

    dev = EmulatorDevice(gpu=get_board("mi60"), timing_only=True)
    dev.footprint_round = False
    dev.l2_miss = 0.0  # unused: the replay sets each point's own
    bufs = [dev.alloc(m * k * 4), dev.alloc(n * k * 4), dev.alloc(m * n * 4)]
    kern_t = ref or kern
    t0 = time.time()
    st = dev.launch(kern_t.code_object, kern_t.name, grid=kern_t.grid(m, n, k), block=kern_t.block,
                    args=kern_t.args(*bufs, m, n, k), dynamic_lds=kern_t.dynamic_lds)
    _TRACES[key] = st.trace
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps(st.trace))
        tmp.replace(path)  # atomic: runs in parallel share the traces
    except Exception:
        pass
    print(f"  traced {kern.peer} {kern.config} at {m}x{n}x{k} in {time.time() - t0:.0f} s", file=sys.stderr)
    return st.trace


def model_point(kern: Kernel, m: int, n: int, k: int, board_name: str) -> dict:
    """Modeled figures of ``kern`` at M x N x K on a board of ``BOARDS`` by replaying its trace."""
    from dataclasses import replace

    from vlpc.runtime import timing
    from vlpc.runtime.timing import gpu

    board = get_board(board_name)
    tr = trace_of(kern, k)
    co_md = kern.code_object.kernels[kern.name].descriptor
    res = timing.residency(board, co_md.vgpr_count, co_md.sgpr_count,
                           co_md.group_segment_fixed_size + kern.dynamic_lds, int(math.prod(kern.block)))
    p_miss = kern.l2_miss(m, n, k, board.compute_units * res.wgs_per_cu)
    rep = gpu.model_kernel(replace(tr, grid=kern.grid(m, n, k)), board, res, kern.name, l2_miss=p_miss)
    return {"modeled_us": rep.time_us, "config": kern.config, "vgprs": co_md.vgpr_count,
            "wgs_per_cu": res.wgs_per_cu, "l2_miss": p_miss, "method": "replay"}


def model_plan(mod, m: int, n: int, k: int, board_name: str, label: str) -> dict:
    """A plan of several kernels, whole, timing-only at its own size (first round's footprint recorded)."""
    from vlpc.energy_report import host_buffers
    from vlpc.runtime.emulator.device import EmulatorDevice
    from vlpc.api import resolve_launch as resolve
    from vlpc.verify import launch_and_read

    ck = mod.kernel()
    p = resolve(ck, m, n, k)
    alpha, beta = 1.0, 0.0
    dev = EmulatorDevice(gpu=get_board(board_name), timing_only=True)
    host, c_type, scalar, _, _ = host_buffers(ck, p)
    _, st, _ = launch_and_read(ck, dev, host, p, alpha, beta, c_type, scalar=scalar)
    return {"modeled_us": st.timing.time_us, "config": label, "vgprs": ck.vgprs,
            "wgs_per_cu": st.timing.wgs_per_cu, "l2_miss": st.timing.l2_miss, "method": "whole plan"}


def point(peer: str, m: int, n: int, k: int, board_name: str) -> dict:
    """Modeled figures of one peer at one size and board (the best Triton configuration)."""
    board = get_board(board_name)
    flops = 2.0 * m * n * k
    kid = None
    if peer == "hip":
        r = model_point(hip_kernel(), m, n, k, board_name)
    elif peer == "triton":
        best, each = None, {}
        for cfg in triton_configs():
            # the EVEN_K code object assumes K % BLOCK_K == 0 and leading dimensions (K, K, N) % 16 == 0
            kern = triton_kernel(cfg, even_k=k % cfg["BLOCK_K"] == 0 and k % 16 == 0 and n % 16 == 0)
            r = model_point(kern, m, n, k, board_name)
            each[cfg["name"]] = round(r["modeled_us"], 2)
            if best is None or r["modeled_us"] < best["modeled_us"]:
                best = r
        r = dict(best, configs_us=each)
    else:
        gpu_name = BOARDS[board_name][0]
        mod = vlpc_module(m, n, k, peer, gpu_name)
        kern, label = vlpc_kernel(mod, m, n, k, peer)
        if kern is not None:
            kern.meta["gpu"] = gpu_name
        r = model_plan(mod, m, n, k, board_name, label) if kern is None else model_point(kern, m, n, k, board_name)
        kid = _digest([mod.kernel().code_object, label.encode()])  # as kernel_id(), without compiling again
    tf = flops / (r["modeled_us"] * 1e-6) / 1e12
    return dict(r, peer=peer, board=board_name, m=m, n=n, k=k, tflops=tf,
                peak_share=tf * 1e12 / board.peak_flops_f32, clock_mhz=board.engine_clock_mhz,
                memory_clock_mhz=board.memory_clock_mhz, model_version=model_version(),
                kernel_id=kid or kernel_id(peer, m, n, k, board_name))


def reusable(row: dict, peer: str, m: int, n: int, k: int, board_name: str, ids: dict) -> bool:
    """Whether a cached point still stands: modeled under this :func:`model_version`, at the board's clocks,
    of the kernel ``peer`` runs now (:func:`kernel_id`, memoized in ``ids``).  A point recorded without a
    model version (a CSV written before versions were kept, ``--reuse-csv``) is taken as it is."""
    if row.get("error"):
        return False
    if "model_version" not in row:
        return "reused_from" in row
    _, clk, mem, _ = BOARDS[board_name]
    if (row["model_version"] != model_version() or abs(float(row["clock_mhz"]) - clk) > 0.5
            or abs(float(row["memory_clock_mhz"]) - mem) > 0.5):
        return False
    key = (peer, m, n, k, board_name) if peer in ("vlpc", "seed") else (peer,)
    if key not in ids:
        ids[key] = kernel_id(peer, m, n, k, board_name)
    return row.get("kernel_id") == ids[key]


CSV_FIELDS = ["board", "clock_mhz", "memory_clock_mhz", "m", "n", "k", "peer", "config", "modeled_us",
              "tflops_modeled", "peak_share_modeled", "vgprs", "l2_miss", "method", "model_version", "kernel_id"]


def read_csv_rows(path: Path, skip_peers) -> dict:
    """The points of a CSV this script wrote (``--csv``) as cache rows, for ``--reuse-csv``; the points of
    ``skip_peers`` (the peers being modeled in this run) only when the CSV recorded their model version and
    kernel (older CSVs did not: those points are modeled again)."""
    out = {}
    with path.open(newline="") as fh:
        for c in csv.DictReader(fh):
            if c["peer"] in skip_peers and not c.get("model_version"):
                continue
            m, n, k = int(c["m"]), int(c["n"]), int(c["k"])
            row = {"peer": c["peer"], "board": c["board"], "m": m, "n": n, "k": k, "config": c["config"],
                   "modeled_us": float(c["modeled_us"]), "tflops": float(c["tflops_modeled"]),
                   "peak_share": float(c["peak_share_modeled"]), "vgprs": int(c["vgprs"]),
                   "l2_miss": float(c["l2_miss"]), "method": c["method"], "clock_mhz": float(c["clock_mhz"]),
                   "memory_clock_mhz": float(c["memory_clock_mhz"]), "reused_from": str(path)}
            if c.get("model_version"):
                row.update(model_version=c["model_version"], kernel_id=c["kernel_id"])
            out[key_of(c["peer"], m, n, k, c["board"])] = row
    return out


# -- checks --------------------------------------------------------------------------------------


def check_peer(peer: str) -> float:
    """Max |error| / max |reference| of one peer's kernel on the strict emulator against NumPy
    (exactly sized buffers, C full of NaN, beta = 0) at 70x45x13 (the seed's schedule, which
    computes whole 64 x 256 tiles and K steps only: 128x256x48)."""
    import numpy as np

    m, n, k = (128, 256, 48) if peer == "seed" else (70, 45, 13)
    from vlpc.runtime import get_device

    dev = get_device("emulator", strict=True)
    r = np.random.default_rng(m * n + k)
    A = r.standard_normal((m, k)).astype(np.float32)
    B = r.standard_normal((n, k)).astype(np.float32)
    ref = A.astype(np.float64) @ B.T.astype(np.float64)
    if peer in ("vlpc", "seed"):
        import vlpc

        mod = vlpc_module(m, n, k, peer, "mi60")
        got = np.asarray(vlpc.run(mod, A, B, np.full((m, n), np.nan, np.float32), device=dev).c)
    else:
        kerns = [hip_kernel()] if peer == "hip" else [triton_kernel(c, even_k=False) for c in triton_configs()]
        worst = 0.0
        for kern in kerns:
            a, b, c = dev.upload(A), dev.upload(B), dev.upload(np.full((m, n), np.nan, np.float32))
            dev.launch(kern.code_object, kern.name, grid=kern.grid(m, n, k), block=kern.block,
                       args=kern.args(a, b, c, m, n, k), dynamic_lds=kern.dynamic_lds)
            got = dev.download(c, np.float32, (m, n))
            worst = max(worst, float(np.nanmax(np.abs(got - ref)) if np.isfinite(got).all() else np.inf))
        return worst / float(np.abs(ref).max())
    return float(np.abs(got - ref).max() / np.abs(ref).max())


# -- output --------------------------------------------------------------------------------------


def table(rows: dict, sizes, boards, peers) -> list[str]:
    """The Markdown tables (one per board) and a last line: where vlpc is ahead of every peer."""
    out, behind, compared = [], [], 0
    for bn in boards:
        board = get_board(bn)
        out.append(f"\n{BOARDS[bn][3]}, f32 peak {board.peak_flops_f32 / 1e12:.2f} TFLOP/s -- TFLOP/s (% of peak), "
                   "all MODELED\n")
        out.append("| M x N x K | " + " | ".join(peers) + " | fastest peer | vlpc ahead |")
        out.append("|---|" + "---:|" * len(peers) + "---|---|")
        for m, n, k in sizes:
            cells, figs = [], {}
            for p in peers:
                r = rows.get(key_of(p, m, n, k, bn))
                if r is None:
                    cells.append("not run")
                elif r.get("error"):
                    cells.append("error")
                else:
                    figs[p] = r["tflops"]
                    cells.append(f"{r['tflops']:.2f} ({r['peak_share'] * 100:.1f} %)")
            others = {p: v for p, v in figs.items() if p != "vlpc"}
            best = max(others, key=others.get) if others else ""
            ahead = ("" if "vlpc" not in figs or not others else
                     "yes" if figs["vlpc"] > others[best] else f"NO ({best} {others[best] / figs['vlpc']:.2f}x)")
            out.append(f"| {m}x{n}x{k} | " + " | ".join(cells) + f" | {best} | {ahead} |")
            if ahead:
                compared += 1
                if ahead != "yes":
                    behind.append(f"{m}x{n}x{k} on {bn}")
    out.append(f"\nvlpc (modeled) ahead of every peer run at {compared - len(behind)} of {compared} points"
               + (f"; behind at: {', '.join(behind)}" if behind else ""))
    return out


def key_of(peer: str, m: int, n: int, k: int, board: str) -> str:
    return f"{peer}|{board}|{m}x{n}x{k}"


def plot(rows: dict, sizes, boards, peers, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(boards), figsize=(5.2 * len(boards), 4.3), sharey=True, squeeze=False)
    marks = {"vlpc": "s-", "triton": "^-", "seed": "o-", "hip": "d-"}
    for ax, bn in zip(axes[0], boards):
        for p in peers:
            pts = [(m, rows[key_of(p, m, n, k, bn)]["tflops"]) for m, n, k in sizes
                   if k == K_SWEEP and m == n and key_of(p, m, n, k, bn) in rows
                   and not rows[key_of(p, m, n, k, bn)].get("error")]
            if pts:
                ax.plot(*zip(*pts), marks.get(p, "-"), ms=2.5, lw=1, label=p)
        peak = get_board(bn).peak_flops_f32 / 1e12
        ax.axhline(peak, ls=":", c="gray", lw=1, label="f32 peak")
        ax.set_title(BOARDS[bn][3], fontsize=9)
        ax.set_xlabel("M = N (K = 640)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("TFLOP/s (MODELED)")
    axes[0][0].legend(loc="lower right", fontsize=8)
    fig.suptitle("NT SGEMM on gfx906: vlpc and its peers, vlpc's timing model (modeled, not measured)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", help="comma-separated M (M = N, K = 640) or MxNxK (default: the seed's sweep and "
                    "4096x4096x4096)")
    ap.add_argument("--boards", default=",".join(BOARDS), help="comma-separated, of: %(default)s")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated, of: %(default)s")
    ap.add_argument("--fresh", action="store_true", help="ignore the cache (build/peers/results.json)")
    ap.add_argument("--budget", type=float, default=None, help="minutes: start no new point after this")
    ap.add_argument("--report", action="store_true", help="model nothing: print (and write) what the cache holds")
    ap.add_argument("--check", action="store_true", help="first verify each peer on the strict emulator (70x45x13; seed 128x256x48)")
    ap.add_argument("--triton-dir", help="model the Triton configurations of this directory (its configs.json; "
                    "default: tests/data/peers/triton); with --cache")
    ap.add_argument("--cache", help="the results file (default: build/peers/results.json); a comma-separated "
                    "list also reads the others (the first one wins and is written): runs in parallel merged")
    ap.add_argument("--reuse-csv", help="also take the points of this CSV (a --csv of this script, e.g. "
                    "docs/peers.csv) that still stand: the other peers' points, and the modeled peers' ones "
                    "recorded under this model version and kernel; the cache wins")
    ap.add_argument("--csv", help="write every point as CSV")
    ap.add_argument("--plot", help="write the chart (PNG/SVG)")
    a = ap.parse_args(argv)
    try:
        sizes = parse_sizes(a.sizes) if a.sizes else default_sizes()
        boards = [b.strip() for b in a.boards.split(",")]
        peers = [p.strip() for p in a.peers.split(",")]
        for b in boards:
            if b not in BOARDS:
                raise ValueError(f"unknown board '{b}' (have: {', '.join(BOARDS)})")
        for p in peers:
            if p not in PEERS:
                raise ValueError(f"unknown peer '{p}' (have: {', '.join(PEERS)})")
    except ValueError as e:
        print(f"peers.py: error: {e}", file=sys.stderr)
        return 2
    os.environ.setdefault("VLPC_EMU_PROCS", "1")
    if a.check:
        for p in peers:
            err = check_peer(p)
            print(f"check {p}: max relative error {err:.2e} against NumPy on the strict emulator "
                  f"({'ok' if err < 1e-5 else 'WRONG'})", flush=True)
    global TRITON_DIR
    if a.triton_dir:
        TRITON_DIR = Path(a.triton_dir)
    CACHE.mkdir(parents=True, exist_ok=True)
    caches = [Path(c) for c in a.cache.split(",")] if a.cache else [CACHE / "results.json"]
    cache_file = caches[0]
    rows = {}
    for c in ([] if a.fresh else reversed(caches)):  # the first file wins (and is the one written)
        if c.exists():
            rows.update(json.loads(c.read_text()))
    shown = list(peers)
    if a.reuse_csv:
        try:
            reused = read_csv_rows(Path(a.reuse_csv), peers)
        except (OSError, KeyError, ValueError) as e:
            print(f"peers.py: error: --reuse-csv {a.reuse_csv}: {e}", file=sys.stderr)
            return 2
        for key, r in reused.items():
            rows.setdefault(key, r)
        shown = [p for p in PEERS if p in peers or any(r["peer"] == p for r in reused.values())]
    ids: dict = {}
    todo = [] if a.report else [(p, m, n, k, b) for (m, n, k) in sizes for b in boards for p in peers
                                if key_of(p, m, n, k, b) not in rows
                                or not reusable(rows[key_of(p, m, n, k, b)], p, m, n, k, b, ids)]
    t0 = time.time()
    done = 0
    for p, m, n, k, b in todo:
        if a.budget is not None and time.time() - t0 > a.budget * 60:
            print(f"budget of {a.budget:g} min spent: {len(todo) - done} points left (rerun to resume)",
                  file=sys.stderr)
            break
        try:
            r = point(p, m, n, k, b)
        except Exception as e:  # a peer that fails to compile or model: recorded, the run goes on
            r = {"peer": p, "board": b, "m": m, "n": n, "k": k, "error": f"{type(e).__name__}: {e}"}
        rows[key_of(p, m, n, k, b)] = r
        cache_file.write_text(json.dumps(rows, indent=1))
        done += 1
        el = time.time() - t0
        fig = "error" if r.get("error") else f"{r['tflops']:.2f} TFLOP/s modeled"
        print(f"[{done}/{len(todo)} {el / 60:.1f} min, ~{el / done * (len(todo) - done) / 60:.1f} min left] "
              f"{p} {m}x{n}x{k} {b}: {fig}", file=sys.stderr, flush=True)
    sizes = sorted(sizes, key=lambda s: (s[2], s[0], s[1]))  # worked in the order given, shown by K, M, N
    print("\n".join(table(rows, sizes, boards, shown)))
    if a.csv:
        with open(a.csv, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(CSV_FIELDS)
            for (m, n, k) in sizes:
                for b in boards:
                    for p in shown:
                        r = rows.get(key_of(p, m, n, k, b))
                        if r and not r.get("error"):
                            w.writerow([b, f"{r['clock_mhz']:.0f}", f"{r['memory_clock_mhz']:.0f}", m, n, k, p,
                                        r["config"], f"{r['modeled_us']:.2f}", f"{r['tflops']:.4f}",
                                        f"{r['peak_share']:.4f}", r["vgprs"], f"{r['l2_miss']:.4f}", r["method"],
                                        r.get("model_version", ""), r.get("kernel_id", "")])
        print(f"csv: {a.csv}")
    if a.plot:
        plot(rows, sizes, boards, shown, a.plot)
        print(f"chart: {a.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
