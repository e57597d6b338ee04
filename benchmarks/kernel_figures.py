#!/usr/bin/env python3
"""Figures of vlpc's default f32 kernel (64x256 macro tile, 256 work-items, 64x1 micro tile).

Prints, for the kernel vlpc generates for SGEMM M=N=4096, K=640 (and for the
other macro tiles / K steps): VGPRs, SGPRs, LDS, occupancy, the K loop's
instruction mix, non-FMA instructions per 1024 FMAs, whether every VALU in the
loop is a v_fma_f32 with one SGPR source, and the latency cover of A (VALU
instructions between an A s_load and the s_waitcnt that retires it).  The seed's
hand-written loop has 293 non-FMA instructions per 1024 FMAs and an A cover of 0.

Usage: python benchmarks/kernel_figures.py [--all] [--asm OUT.s]
"""

from __future__ import annotations

import argparse

import vlpc
from vlpc.analysis import loop_figures
from vlpc.targets import GFX906

SRC = """builtin.module {
  func.func @sgemm(%a: memref<4096x640xf32>, %b: memref<4096x640xf32>, %c: memref<4096x4096xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<4096x640xf32>, memref<4096x640xf32>, memref<4096x4096xf32>, f32, f32
    func.return
  }
}
"""
DYN = SRC.replace("4096x640xf32", "?x?xf32").replace("4096x4096xf32", "?x?xf32")


def report(label: str, src: str, **opts) -> str:
    r = vlpc.compile(src, "gfx906", **opts)
    k = r.kernel()
    f = loop_figures(r.asm, fma="v_fma_f64" if "xf64" in src else "v_fma_f32")
    occ = GFX906.occupancy(k.vgprs, k.sgprs, 0, k.launch_info["workgroup_size"])
    mix = ", ".join(f"{m} {c}" for m, c in sorted(f.counts.items(), key=lambda x: -x[1]) if not m.startswith("v_fma"))
    li = k.launch_info
    plan = f"macro tile {li['macro_m']}x{li['macro_n']}, k-step {li['k_step']}, split-k {k.split_k}"
    return (f"{label} ({plan})\n"
            f"  VGPRs {k.vgprs}, SGPRs {k.sgprs} (incl. reserved), LDS 0, occupancy {occ}\n"
            f"  K loop: {f.fma} FMAs; other: {mix}\n"
            f"  non-FMA per 1024 FMAs: {f.non_fma_per_1024:.1f} (seed: 293)\n"
            f"  every loop VALU is an FMA with one SGPR (pair) source: {f.valu_all_fma_with_one_sgpr}\n"
            f"  A latency cover: {f.a_cover} VALU instructions (over {f.a_loads} A loads; seed: 0)\n"), r.asm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="also the 64x64/64x128 tiles, k-step 8 and dynamic sizes")
    ap.add_argument("--asm", help="write the default kernel's assembly here")
    args = ap.parse_args()
    text, asm = report("default: SGEMM 4096x4096x640, the automatic plan", SRC)
    print(text)
    if args.asm:
        with open(args.asm, "w") as f:
            f.write(asm)
    print(report("DGEMM 4096x4096x640, the automatic plan", SRC.replace("xf32", "xf64").replace(": f32", ": f64").replace("f32, f32", "f64, f64"))[0])
    if args.all:
        for mt in ((64, 256), (32, 128), (32, 256)):
            print(report(f"macro tile {mt[0]}x{mt[1]}", SRC, macro_tile=mt)[0])
        print(report("k-step 8 (s_load_dwordx8)", SRC, k_step=8)[0])
        print(report("schedule cover (A batches of 32 SGPRs, each load covered by 32 FMAs)", SRC,
                     schedule="cover")[0])
        print(report("dynamic M, N, K and leading dimensions (lda in an SGPR: one s_add per A row)", DYN)[0])


if __name__ == "__main__":
    main()
