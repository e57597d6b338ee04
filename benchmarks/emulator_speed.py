"""Emulator speed on an A-in-SGPR SGEMM kernel (hand-written GFX9 assembly).

C[M,N] = A[M,K] @ B[K,N] in f32.  A workgroup of 256 work-items computes a
64 x 256 tile of C: work-item t owns column n = 256*wg_x + t and 64 accumulators
(rows 64*wg_y .. +63).  Per k, A's 64 values of column k come to SGPRs with four
``s_load_dwordx16`` (A is stored K-major, ``At[k, m]``), and every 4 k one
``global_load_dwordx4`` brings B[k:k+4, n] (B stored as ``Bt[n, k]``); then 64
``v_fma_f32 vC, vB, sA, vC``.  Kernel arguments: s[0:1] kernarg pointer
(At, Bt, C, M, N, K), s2/s3 workgroup ids, v0 work-item id.

Usage::

    python benchmarks/emulator_speed.py            # 1024x1024x640 and 4096x4096x640
    python benchmarks/emulator_speed.py --sizes 1024
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from vlpc.runtime.emulator.core import DispatchConfig, run_dispatch
from vlpc.runtime.emulator.memory import Memory
from vlpc.runtime.emulator.testing import assemble_text

TILE_M, TILE_N = 64, 256


def sgemm_asm() -> str:
    L = []
    a = L.append
    a("s_load_dwordx4 s[4:7], s[0:1], 0x0")      # At, Bt
    a("s_load_dwordx4 s[8:11], s[0:1], 0x10")    # C, M, N
    a("s_load_dword s12, s[0:1], 0x20")          # K
    a("s_waitcnt lgkmcnt(0)")
    a("s_lshl_b32 s13, s2, 8")
    a("v_add_u32 v1, s13, v0")                   # n
    a("s_lshl_b32 s14, s12, 2")                  # K*4
    a("v_mul_lo_u32 v2, v1, s14")
    a("v_mul_hi_u32 v3, v1, s14")
    a("v_mov_b32 v72, s7")
    a("v_add_co_u32 v2, vcc, s6, v2")
    a("v_addc_co_u32 v3, vcc, v72, v3, vcc")     # &Bt[n, 0]
    a("s_lshl_b32 s15, s3, 8")
    a("s_add_u32 s16, s4, s15")
    a("s_addc_u32 s17, s5, 0")                   # &At[0, m0]
    a("s_lshl_b32 s18, s10, 2")                  # M*4 (row stride of At)
    for i in range(64):
        a(f"v_mov_b32 v{4 + i}, 0")
    a("s_lshr_b32 s19, s12, 2")
    a("loop:")
    a("global_load_dwordx4 v[68:71], v[2:3], off")
    a("v_add_co_u32 v2, vcc, 16, v2")
    a("v_addc_co_u32 v3, vcc, 0, v3, vcc")
    a("s_waitcnt vmcnt(0)")
    for j in range(4):
        for q in range(4):
            a(f"s_load_dwordx16 s[{20 + 16 * q}:{35 + 16 * q}], s[16:17], 0x{64 * q:x}")
        a("s_add_u32 s16, s16, s18")
        a("s_addc_u32 s17, s17, 0")
        a("s_waitcnt lgkmcnt(0)")
        for i in range(64):
            a(f"v_fma_f32 v{4 + i}, v{68 + j}, s{20 + i}, v{4 + i}")
    a("s_sub_u32 s19, s19, 1")
    a("s_cmp_lg_u32 s19, 0")
    a("s_cbranch_scc1 loop")
    a("v_lshlrev_b32 v72, 2, v1")                # n*4
    a("s_lshl_b32 s20, s3, 6")
    a("s_mul_i32 s20, s20, s11")
    a("s_lshl_b32 s20, s20, 2")                  # m0*N*4
    a("s_add_u32 s22, s8, s20")
    a("s_addc_u32 s23, s9, 0")
    a("s_lshl_b32 s21, s11, 2")                  # N*4
    for i in range(64):
        a(f"global_store_dword v72, v{4 + i}, s[22:23]")
        a("s_add_u32 s22, s22, s21")
        a("s_addc_u32 s23, s23, 0")
    a("s_endpgm")
    return "\n".join(L) + "\n"


def run_sgemm(M: int, N: int, K: int, seed: int = 0, check: bool = True, **cfg_over):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    code = assemble_text(sgemm_asm())
    mem = Memory()
    at = mem.alloc(A.nbytes, tag="At")
    bt = mem.alloc(B.nbytes, tag="Bt")
    c = mem.alloc(4 * M * N, tag="C")
    mem.write(at, np.ascontiguousarray(A.T))
    mem.write(bt, np.ascontiguousarray(B.T))
    karg = mem.alloc(64, tag="kernargs")
    mem.write(karg, np.array([at, bt, c], np.uint64).tobytes() + np.array([M, N, K], np.uint32).tobytes())
    code_addr = mem.alloc(len(code), tag="code")
    mem.write(code_addr, code)
    cfg = DispatchConfig(kernel_name="sgemm_a_in_sgpr", code=code, code_address=code_addr,
                         entry_address=code_addr, grid=(N // TILE_N, M // TILE_M, 1), block=(256, 1, 1),
                         user_sgpr_kernarg_segment_ptr=True, kernarg_address=karg,
                         sgpr_workgroup_id_x=True, sgpr_workgroup_id_y=True,
                         vgpr_count=76, sgpr_count=88, **cfg_over)
    t0 = time.perf_counter()
    stats = run_dispatch(mem, cfg)
    wall = time.perf_counter() - t0
    err = None
    if check:
        got = mem.read(c, 4 * M * N).view(np.float32).reshape(M, N)
        ref = A.astype(np.float64) @ B.astype(np.float64)
        err = float(np.max(np.abs(got - ref)) / max(1.0, float(np.max(np.abs(ref)))))
    return stats, wall, err


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1024, 4096], help="M = N values")
    ap.add_argument("-k", type=int, default=640)
    ap.add_argument("--max-waves", type=int, default=None, help="max_waves_in_flight")
    args = ap.parse_args(argv)
    for n in args.sizes:
        stats, wall, err = run_sgemm(n, n, args.k, max_waves_in_flight=args.max_waves)
        per_wave = stats.instructions / max(1, stats.waves)
        print(f"SGEMM {n}x{n}x{args.k}: {wall:.2f} s wall, {stats.instructions:,} wave-instructions "
              f"({per_wave:,.0f} per wave, {stats.waves} waves), "
              f"{stats.instructions / wall / 1e6:.2f} M wave-instr/s, "
              f"{stats.by_class['valu'] * 64 / wall / 1e9:.2f} G lane-VALU/s, rel. error {err:.2e}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
