"""LDS streaming bandwidth per access width (the ``lds.*`` rows of ``measurements.csv``).

The measured figures (skyne98/wiki-gfx906, "gfx906 Latency-Hiding Ops") come from "pure LDS
streaming kernels" built with hipcc, each loop iteration reading and writing LDS with
``ds_read/ds_write_b32``, ``_b64`` or ``_b128`` (the source calls the b32 figure a
read/write kernel, weak as a read bandwidth).  It gives neither the grid nor the loop.
The kernel here is that read/write pattern as a compiler emits it for
``buf1[i] = buf0[i]`` in a loop: per iteration, ``UNROLL`` times ``ds_read_bW`` ->
``s_waitcnt lgkmcnt(0)`` -> ``ds_write_bW`` of the value read, each lane at consecutive
addresses (conflict-free), on the ``ips.*`` rows' launch shape (60 workgroups x 256
work-items: one wave per SIMD on MI50's 60 CUs) -- an assumption, stated here: the
source's occupancy is unknown, and a dependent read-then-write chain at one wave per SIMD
is latency-bound at b32 and b64, bandwidth-bound only at b128.
Bandwidth counts bytes read plus bytes written, whole GPU, in TB/s; the rate is the
difference between 2 and 6 loop iterations (:func:`vlpc.benchmarking.microbench.modeled_rate`).
"""

from __future__ import annotations

from vlpc.benchmarking.microbench import Point, code_object, modeled_rate

GRID, BLOCK, UNROLL = 60, 256, 16
WIDTHS = {"b32": 1, "b64": 2, "b128": 4}


def body(width: str, iterations: int) -> str:
    w = WIDTHS[width]
    half = BLOCK * 4 * w  # bytes of one buffer
    reg = "v2" if w == 1 else f"v[2:{1 + w}]"
    lines = ["s_mov_b32 m0, -1", f"v_lshlrev_b32 v1, {2 + (w.bit_length() - 1)}, v0"]
    lines += [f"v_mov_b32 v{r}, 0" for r in range(2, 2 + w)]
    lines += [f"ds_write_b{32 * w} v1, {reg}", "s_waitcnt lgkmcnt(0)", "s_barrier",
              f"s_mov_b32 s4, {iterations}", ".Lloop:"]
    for _ in range(UNROLL):
        lines += [f"ds_read_b{32 * w} {reg}, v1", "s_waitcnt lgkmcnt(0)",
                  f"ds_write_b{32 * w} v1, {reg} offset:{half}"]
    lines += ["s_sub_u32 s4, s4, 1", "s_cmp_lg_u32 s4, 0", "s_cbranch_scc1 .Lloop",
              "s_waitcnt lgkmcnt(0)", "s_endpgm"]
    return "\n".join("  " + x if not x.endswith(":") else x for x in lines)


def kernel(width: str, iterations: int) -> tuple[bytes, str]:
    name = f"lds_{width}"
    w = WIDTHS[width]
    return code_object(name, body(width, iterations), vgprs=8, sgprs=16, lds=2 * BLOCK * 4 * w), name


def points(board) -> list[Point]:
    out = []
    for width, w in WIDTHS.items():
        work = GRID * BLOCK * UNROLL * 2 * 4 * w  # bytes read + written per loop iteration
        rate = modeled_rate(lambda n, width=width: kernel(width, n), work, board, GRID, BLOCK)
        out.append(Point(f"lds.{width}", rate / 1e12,
                         f"{GRID}x{BLOCK}, read-wait-write ds_*_{width} x{UNROLL}, "
                         f"{board.engine_clock_mhz:g} MHz"))
    return out
