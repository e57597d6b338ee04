"""``vlpc compile --emit hip-launcher`` (issue 36 item 9): the C launcher built with gcc against
Debian's libamdhip64 headers, its plan and kernarg bytes compared with the Python runtime's
(:meth:`CompiledKernel.plan`, :meth:`~CompiledKernel.workspace_bytes`, ``pack_kernargs``), and run
to HIP's "no device" boundary (this machine has no GPU: hipErrorNoDevice, 100, not a crash).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import vlpc
from vlpc.errors import VlpcError
from vlpc.hip_launcher import c_identifier, generate, output_paths
from vlpc.runtime import load_code_object
from vlpc.runtime.kernargs import LaunchGeometry, pack_kernargs

ROOT = Path(__file__).resolve().parents[2]
HIP_HEADER = Path("/usr/include/hip/hip_runtime_api.h")
CC = shutil.which("gcc") or shutil.which("cc")
CXX = shutil.which("g++") or shutil.which("c++")

needs_hip = pytest.mark.skipif(CC is None or not HIP_HEADER.exists(),
                               reason="needs gcc and Debian's libamdhip64 headers (libamdhip64-dev)")

SGEMM_DYN = (ROOT / "examples" / "sgemm_dynamic.mlir").read_text()
HGEMM_LDA_ODD = """builtin.module {
  func.func @h(%a: memref<?x?xf16, strided<[641, 1]>>, %b: memref<?x?xf16>, %c: memref<?x?xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"}
        : memref<?x?xf16, strided<[641, 1]>>, memref<?x?xf16>, memref<?x?xf32>, f32, f32
    func.return
  }
}"""
DGEMM_NN = """builtin.module {
  func.func @d(%a: memref<?x?xf64>, %b: memref<?x?xf64>, %c: memref<?x?xf64>, %alpha: f64, %beta: f64) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NN"}
        : memref<?x?xf64>, memref<?x?xf64>, memref<?x?xf64>, f64, f64
    func.return
  }
}"""

QUANT_M8 = """func.func @q(%x: memref<8x2048xf16>, %w: memref<64x1152xi8>, %y: memref<8x64xf32>, %alpha: f32, %beta: f32) {
  gemm.matmul %x, %w, %y, %alpha, %beta {layout = "NT", b_format = "q4_0"}
      : memref<8x2048xf16>, memref<64x1152xi8>, memref<8x64xf32>, f32, f32
  func.return
}"""

#: (IR, options): split-K with a workspace and row-narrow companions; atomic split-K (scale
#: kernel first); f16 whose static odd lda makes the plan copy A first; an f64 NN GEMM; the
#: static int8 -> i32 GEMV (int alpha/beta, sizes fixed by the IR).
CASES = {
    "sgemm_workspace": (SGEMM_DYN, dict(split_k=4)),
    "sgemm_atomic": (SGEMM_DYN, dict(split_k=2, split_mode="atomic")),
    "hgemm_copy_a": (HGEMM_LDA_ODD, dict(split_k=2)),
    "dgemm_nn": (DGEMM_NN, {}),
    "gemv_int8": ((ROOT / "examples" / "gemv_int8.mlir").read_text(), {}),
    "quant_a_first": (QUANT_M8, {}),  # Q4_0 GEMV at M = 8: the activations' quantization pre-kernel first
}

#: M N K lda ldb ldc per line, valid and not (too small leading dimensions, M < 1, an odd f16 ldb).
SIZES = [(100, 300, 640), (8, 512, 64), (1, 40, 17), (31, 257, 33), (4, 1024, 4096), (64, 64, 641)]

DRIVER = r"""
#include <stdio.h>
#include <stdint.h>
#include "launch.h"

hipError_t dry(const char *kernel, const unsigned grid[3], const unsigned block[3],
               const unsigned char *kernargs, size_t size)
{
    size_t i;
    printf("launch %s %u %u %u %u %u %u ", kernel, grid[0], grid[1], grid[2], block[0], block[1], block[2]);
    for (i = 0; i < size; i++) printf("%02x", kernargs[i]);
    printf("\n");
    return hipSuccess;
}

int main(void)
{
    int M, N, K, lda, ldb, ldc, n, i;
    vlpc_plan_step steps[VLPC_MAX_STEPS];
    size_t ws;
    while (scanf("%d %d %d %d %d %d", &M, &N, &K, &lda, &ldb, &ldc) == 6) {
        hipError_t e = vlpc_NAME_plan(M, N, K, lda, ldb, ldc, steps, &n, &ws);
        printf("plan %d %d %d %d %d %d: %d", M, N, K, lda, ldb, ldc, (int)e);
        if (e == hipSuccess) {
            printf(" ws %zu", ws);
            for (i = 0; i < n; i++)
                printf(" | %s %u %u %u %u", steps[i].kernel, steps[i].grid[0], steps[i].grid[1], steps[i].grid[2],
                       steps[i].block[0]);
        }
        printf("\n");
        if (e == hipSuccess) {
            e = vlpc_NAME_launch_workspace((const void *)0x100000, (const void *)0x200000, (void *)0x300000,
                                           M, N, K, lda, ldb, ldc, (T)ALPHA, (T)BETA, (void *)0x400000, ws, NULL);
            printf("done %d\n", (int)e);
        }
    }
    return 0;
}
"""

NO_DEVICE = r"""
#include <stdio.h>
#include "launch.h"

int main(void)
{
    int count = 0;
    hipError_t e;
    if (hipGetDeviceCount(&count) == hipSuccess && count > 0) {  /* a GPU: the null pointers below must not run */
        printf("skip\n");
        return 0;
    }
    e = vlpc_NAME_launch((const void *)0, (const void *)0, (void *)0, SIZES, (T)1, (T)0, NULL);
    hipError_t bad = vlpc_NAME_launch((const void *)0, (const void *)0, (void *)0, 0, 1, 1, 1, 1, 1, (T)1, (T)0, NULL);
    printf("%d %s %d\n", (int)e, hipGetErrorName(e), (int)bad);
    return 0;
}
"""


def _compile(name: str):
    text, opts = CASES[name]
    return vlpc.compile(text, "gfx906", **opts)


def _build(tmp_path: Path, module, main: str, *defines: str, cxx: bool = False) -> Path:
    """The launcher and ``main`` built with gcc as C11 (or g++ as C++17) with every warning an error."""
    header, source = generate(module, str(tmp_path / "launch"), "test")
    (tmp_path / "launch.h").write_text(header)
    (tmp_path / "launch.c").write_text(source)
    (tmp_path / "main.c").write_text(main)
    exe = tmp_path / ("dry" if defines else "run")
    lang = ["-x", "c++", "-std=c++17"] if cxx else ["-std=c11"]
    r = subprocess.run([CXX if cxx else CC, *lang, "-Wall", "-Wextra", "-Werror", "-D__HIP_PLATFORM_AMD__",
                        "-I/usr/include", *defines, "-o", str(exe), str(tmp_path / "launch.c"), str(tmp_path / "main.c"),
                        "-x", "none", "-lamdhip64"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return exe


def _problem(k, m, n, kk):
    """Leading dimensions as stored (the minimum; the IR's when static)."""
    li = k.launch_info
    lay = k.layout
    lda = li["static_lda"] if li["static_lda"] >= 0 else (kk if lay[0] == "N" else m)
    ldb = li["static_ldb"] if li["static_ldb"] >= 0 else (n if lay[1] == "N" else kk)
    ldc = li["static_ldc"] if li["static_ldc"] >= 0 else n
    return m, n, kk, lda, ldb, ldc


def _expected(k, m, n, kk, lda, ldb, ldc):
    """(steps, workspace bytes) of the Python runtime, or None where it refuses the sizes; of the first
    kernel of a module with launch-time plan variants (the C launcher runs it: vlpc/launch_variants.py)."""
    if "variants" in k.launch_info:
        import dataclasses
        k = dataclasses.replace(k, launch_info={x: v for x, v in k.launch_info.items() if x != "variants"})
    try:
        k.check_sizes(m, n, kk, lda, ldb, ldc)
        steps = k.plan(m, n, kk)
        ws = k.workspace_bytes(m, ldc, kk, None, n=n)
        vals = dict(A=1, B=2, C=3, M=m, N=n, K=kk, lda=lda, ldb=ldb, ldc=ldc, alpha=1.0, beta=0.0)
        k.check_offsets([vals.get(a[".name"]) for a in k.kernargs], m, n, kk, None, ws)
    except VlpcError:
        return None
    return steps, ws


@needs_hip
@pytest.mark.parametrize("name", list(CASES))
def test_plan_and_kernargs_match_the_python_runtime(tmp_path, name):
    module = _compile(name)
    k = module.kernel()
    t = {"f64": "double", "i8": "int"}.get(k.launch_info["dtype"], "float")
    alpha, beta = (3, -2) if t == "int" else (1.5, -0.25)
    ident = c_identifier(k.name)
    main = DRIVER.replace("NAME", ident).replace("(T)", f"({t})").replace("ALPHA", str(alpha)).replace("BETA", str(beta))
    exe = _build(tmp_path, module, main, "-DVLPC_LAUNCHER_DRY_RUN=dry")
    sizes = [_problem(k, *s) for s in SIZES]
    if k.launch_info["static_m"] >= 0:  # a static kernel: its own sizes, and one it must refuse
        li = k.launch_info
        sizes = [_problem(k, li["static_m"], li["static_n"], li["static_k"]),
                 _problem(k, li["static_m"], li["static_n"] + 1, li["static_k"])]
    m0, n0, k0, lda0, ldb0, ldc0 = sizes[0]
    sizes += [(m0, n0, k0, lda0 - 1 if k.launch_info["static_lda"] < 0 else lda0, ldb0, ldc0),
              (m0, n0, k0, lda0, ldb0, ldc0 - 1), (0, n0, k0, lda0, ldb0, ldc0)]
    if k.launch_info["dtype"] == "f16" and k.layout[1] == "T":
        sizes.append((m0, n0, k0, lda0, k0 | 1, ldc0))  # an odd f16 ldb: rows not 4-byte aligned
    out = subprocess.run([str(exe)], input="\n".join(" ".join(map(str, s)) for s in sizes) + "\n",
                         capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    co = load_code_object(module.code_object)
    lines = iter(out)
    valid = 0
    for s in sizes:
        m, n, kk, lda, ldb, ldc = s
        plan_line = next(lines)
        exp = _expected(k, *s)
        if exp is None:
            assert plan_line.endswith(": 1"), (s, plan_line)  # hipErrorInvalidValue
            continue
        valid += 1
        steps, ws = exp
        want = f"plan {' '.join(map(str, s))}: 0 ws {ws}" + "".join(
            f" | {st.kernel} {st.grid[0]} {st.grid[1]} {st.grid[2]} {st.block[0]}" for st in steps)
        assert plan_line == want
        vals = dict(A=0x100000, B=0x200000, C=0x300000, workspace=0x400000, M=m, N=n, K=kk, lda=lda, ldb=ldb,
                    ldc=ldc)
        for st in steps:
            launch = next(lines).split()
            assert launch[1:8] == [st.kernel, *map(str, st.grid), *map(str, st.block)]
            kern = co.kernel(st.kernel)
            scalar = np.int32 if t == "int" else np.float64 if t == "double" else np.float32
            args = [vals[a[".name"]] if a[".name"] in vals else scalar({"alpha": alpha, "beta": beta}[a[".name"]])
                    for a in k.companions.get(st.kernel, k).kernargs]
            want_bytes = pack_kernargs(kern, args, LaunchGeometry(st.grid, st.block))
            assert bytes.fromhex(launch[8]) == want_bytes, st.kernel
        assert next(lines) == "done 0"
    assert valid >= 1
    assert next(lines, None) is None


@needs_hip
@pytest.mark.parametrize("cxx", [False, True], ids=["c11", "c++17"])
def test_launch_without_a_device_returns_hip_error_no_device(tmp_path, cxx):
    """The whole path (split-K workspace plan) linked against libamdhip64 and run: no GPU here, so
    the launch returns hipErrorNoDevice (100) cleanly; bad sizes return hipErrorInvalidValue (1)
    before HIP is asked anything."""
    module = _compile("sgemm_workspace")
    main = NO_DEVICE.replace("NAME", "sgemm_dyn").replace("(T)", "(float)").replace("SIZES", "100, 300, 640, 640, 640, 300")
    if cxx and CXX is None:
        pytest.skip("no C++ compiler")
    exe = _build(tmp_path, module, main, cxx=cxx)
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    if r.stdout.strip() == "skip":
        pytest.skip("a HIP device is present: the no-device path cannot be reached")
    assert r.stdout.split() == ["100", "hipErrorNoDevice", "1"]


def test_cli_writes_header_and_source(tmp_path):
    """vlpc compile --emit hip-launcher -o STEM: STEM.h and STEM.c, nothing else."""
    from fuzz_support import run_cli

    stem = tmp_path / "gemm_launch"
    code, out, err = run_cli(["compile", str(ROOT / "examples" / "sgemm_dynamic.mlir"), "--emit", "hip-launcher",
                              "-o", str(stem) + ".h", "--split-k", "4"])
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gemm_launch.c", "gemm_launch.h"]
    header = (tmp_path / "gemm_launch.h").read_text()
    assert "hipError_t vlpc_sgemm_dyn_launch(const void *A, const void *B, void *C, int M, int N, int K, int lda, " \
           "int ldb, int ldc, float alpha, float beta, hipStream_t stream);" in header
    source = (tmp_path / "gemm_launch.c").read_text()
    assert '"sgemm_dyn_reduce"' in source and "hipModuleLoadData" in source and "hipMalloc" in source


BIAS = """builtin.module {
  func.func @b(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %c: memref<64x64xf32>, %alpha: f32, %beta: f32,
               %bias: memref<64xf32>) {
    gemm.matmul %a, %b, %c, %alpha, %beta bias(%bias : memref<64xf32>) {layout = "NT", epilogue = ["bias_col"]}
        : memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>, f32, f32
    func.return
  }
}"""
BATCHED = SGEMM_DYN.replace("memref<?x?xf32>", "memref<3x64x64xf32>")


@pytest.mark.parametrize("text, message", [(BIAS, "takes argument 'bias'"), (BATCHED, "strided batched")])
def test_cli_refuses_what_the_launcher_cannot_run(tmp_path, text, message):
    """One line, exit 1, nothing written: kernels with more arguments than the launcher passes."""
    from fuzz_support import run_cli

    src = tmp_path / "k.mlir"
    src.write_text(text)
    code, _, err = run_cli(["compile", str(src), "--emit", "hip-launcher", "-o", str(tmp_path / "x")])
    assert code == 1 and err.count("\n") == 1 and message in err, err
    code, _, err = run_cli(["compile", str(src), "--emit", "hip-launcher", "-o", "-"])
    assert code == 1 and "-o STEM" in err
    assert [p.name for p in tmp_path.iterdir()] == ["k.mlir"]


def test_output_paths():
    assert output_paths("out/gemm_launch") == (Path("out/gemm_launch.h"), Path("out/gemm_launch.c"))
    assert output_paths("g.c") == (Path("g.h"), Path("g.c"))
    with pytest.raises(VlpcError):
        output_paths("")


@needs_hip
def test_alpha_and_beta_the_ir_fixes_must_match(tmp_path):
    """linalg accumulates (alpha = beta = 1 in the IR): another value would be silently ignored by the
    kernel, so the launcher refuses it (hipErrorInvalidValue), as vlpc.run does."""
    module = vlpc.compile((ROOT / "examples" / "linalg_matmul_transpose_b.mlir").read_text())
    main = r"""
#include <stdio.h>
#include "launch.h"
hipError_t dry(const char *k, const unsigned g[3], const unsigned b[3], const unsigned char *a, size_t n)
{ (void)k; (void)g; (void)b; (void)a; (void)n; return hipSuccess; }
int main(void)
{
    const void *p = (const void *)0x1000;
    printf("%d %d %d\n",
           (int)vlpc_matmul_tb_launch_workspace(p, p, (void *)0x2000, 128, 256, 64, 64, 64, 256, 1.f, 1.f, NULL, 0, NULL),
           (int)vlpc_matmul_tb_launch_workspace(p, p, (void *)0x2000, 128, 256, 64, 64, 64, 256, 2.f, 1.f, NULL, 0, NULL),
           (int)vlpc_matmul_tb_launch_workspace(p, p, (void *)0x2000, 128, 256, 64, 64, 64, 256, 1.f, 0.f, NULL, 0, NULL));
    return 0;
}
"""
    exe = _build(tmp_path, module, main, "-DVLPC_LAUNCHER_DRY_RUN=dry")
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.split() == ["0", "1", "1"]
