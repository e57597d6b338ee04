"""VALU issue throughput per instruction (the ``ips.*`` rows of ``measurements.csv``).

The measured kernels (carlushuang/gcnasm ``measure_ips_bench``): 60 workgroups x 256
work-items on MI50's 60 CUs (one wave per SIMD), a loop of 256 unrolled independent
instructions; whole-GPU lane-instructions per second.  The kernel here is the same shape:
256 copies of the instruction with rotating destinations ``v[16:47]`` over sources that
no copy writes, then ``s_sub_u32``/``s_cmp``/``s_cbranch`` back.  The modeled rate is the
difference of work over the difference of modeled time between 2 and 6 loop iterations
(:func:`vlpc.benchmarking.microbench.modeled_rate`).

Clock condition: the source does not state the engine clock.  The model runs at the
board's stock clock (MI50: 1725 MHz, or ``--clock``); the measured full-rate rows
(6.2-6.3e12 = 60 CUs x 64 lanes x f) imply an effective f of about 1.62 GHz (a board
under load below its peak DPM state), so full-rate points model about 6 % high at
1725 MHz.  That clock is not fitted: the class ratios (half/full, quarter/full) do not
depend on it.
"""

from __future__ import annotations

from vlpc.benchmarking.microbench import Point, Ratio, code_object, modeled_rate

GRID, BLOCK, UNROLL = 60, 256, 256

#: id suffix -> operand template ({d}: destination VGPR, {a} {b} {c}: sources)
OPERANDS = {
    "v_add_co_u32": "v{d}, vcc, v{a}, v{b}",
    "v_addc_co_u32": "v{d}, vcc, v{a}, v{b}, vcc",
    "v_or_b32": "v{d}, v{a}, v{b}",
    "v_lshl_or_b32": "v{d}, v{a}, v{b}, v{c}",
    "v_mul_lo_u32": "v{d}, v{a}, v{b}",
    "v_mul_hi_u32": "v{d}, v{a}, v{b}",
    "v_mad_u32_u24": "v{d}, v{a}, v{b}, v{c}",
    "v_mul_i32_i24": "v{d}, v{a}, v{b}",
    "v_add_lshl_u32": "v{d}, v{a}, v{b}, v{c}",
    "v_dot2_f32_f16": "v{d}, v{a}, v{b}, v{c}",
    "v_dot4_i32_i8": "v{d}, v{a}, v{b}, v{c}",
    "v_pk_fma_f16": "v{d}, v{a}, v{b}, v{c}",
    "v_swap_b32": "v{d}, v{e}",
    "v_fmac_f32": "v{d}, v{a}, v{b}",
    "v_mac_f32": "v{d}, v{a}, v{b}",
    "v_mad_f32": "v{d}, v{a}, v{b}, v{c}",
    "v_mac_f16": "v{d}, v{a}, v{b}",
    "v_pk_mul_f16": "v{d}, v{a}, v{b}",
    "v_sin_f32": "v{d}, v{a}",
    "v_cos_f16": "v{d}, v{a}",
    "v_sqrt_f32": "v{d}, v{a}",
}

#: rows by the class their measured rate puts them in (full: ~6.2e12, half: ~3.2e12,
#: quarter: ~1.6e12 lane-instructions/s)
HALF = ("v_mul_lo_u32", "v_mul_hi_u32", "v_swap_b32")
QUARTER = ("v_sin_f32", "v_cos_f16", "v_sqrt_f32")
FULL = tuple(m for m in OPERANDS if m not in HALF + QUARTER)


def body(mnemonic: str, iterations: int) -> str:
    lines = [f"v_mov_b32 v{r}, {1 + r}" for r in range(1, 48)] + ["s_mov_b64 vcc, 0"]
    lines += [f"s_mov_b32 s4, {iterations}", ".Lloop:"]
    tmpl = OPERANDS[mnemonic]
    for i in range(UNROLL):
        d = 16 + (2 * i) % 32 if mnemonic == "v_swap_b32" else 16 + i % 32
        lines.append(f"{mnemonic} " + tmpl.format(d=d, e=d + 1, a=1 + i % 4, b=5 + i % 4, c=9 + i % 4))
    lines += ["s_sub_u32 s4, s4, 1", "s_cmp_lg_u32 s4, 0", "s_cbranch_scc1 .Lloop", "s_endpgm"]
    return "\n".join("  " + x if not x.endswith(":") else x for x in lines)


def kernel(mnemonic: str, iterations: int) -> tuple[bytes, str]:
    name = f"ips_{mnemonic}"
    return code_object(name, body(mnemonic, iterations), vgprs=48, sgprs=16), name


def points(board) -> list[Point]:
    out = []
    for mn in OPERANDS:
        work = GRID * BLOCK * UNROLL  # lane-instructions per loop iteration, whole GPU
        rate = modeled_rate(lambda n, mn=mn: kernel(mn, n), work, board, GRID, BLOCK)
        out.append(Point(f"ips.{mn}", rate / 1e12,
                         f"{GRID}x{BLOCK}, {UNROLL} unrolled {mn}, {board.engine_clock_mhz:g} MHz"))
    return out


def ratios() -> list[Ratio]:
    full = tuple(f"ips.{m}" for m in FULL)
    return [Ratio("half/full", tuple(f"ips.{m}" for m in HALF), full),
            Ratio("quarter/full", tuple(f"ips.{m}" for m in QUARTER), full)]
