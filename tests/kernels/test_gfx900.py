"""gfx900 (Radeon Instinct MI25) as a second target.

Expected values come from outside vlpc: LLVM's assembler (what assembles for
``-mcpu=gfx900``, the ELF ``e_flags`` it writes), the MI25 spec sheet (64 CUs, 12.3
TFLOP/s f32, 768 GFLOP/s f64, 484 GB/s) and NumPy.
"""

from __future__ import annotations

import re
import struct
import subprocess
import tempfile
from pathlib import Path

import pytest

import vlpc.isa as isa
from vlpc.isa.availability import available, missing, unavailable_reason
from vlpc.runtime.toolchain import ToolchainError, assemble_and_link, find_toolchain
from vlpc.targets import GFX900, GFX906, TargetError, TargetId, get_board, get_target


@pytest.fixture(scope="module")
def toolchain():
    try:
        return find_toolchain()
    except ToolchainError as e:  # pragma: no cover - the ziglang wheel is a dependency
        pytest.skip(str(e))


def _assembler_error_lines(tc, lines: list[str], cpu: str) -> set[int]:
    """1-based line numbers LLVM's assembler refuses for ``-mcpu=cpu`` (one call)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "rows.s"
        src.write_text("\n".join(lines) + "\n")
        if tc.assembler_style == "cc1as":
            argv = [*tc.assembler, "-cc1as", "-triple", "amdgcn-amd-amdhsa", "-target-cpu", cpu,
                    "-filetype", "asm", str(src)]
        else:
            argv = [*tc.assembler, "-triple=amdgcn-amd-amdhsa", f"-mcpu={cpu}", str(src)]
        r = subprocess.run(argv, capture_output=True, text=True)
    return {int(m.group(1)) for m in re.finditer(r"rows\.s:(\d+):\d+: error:", r.stderr)}


# -- target facts --------------------------------------------------------------------------


def test_target_ids_parse_and_refuse_sramecc():
    assert str(TargetId.parse("gfx900")) == "gfx900"
    assert TargetId.parse("gfx900:xnack-").settings == {"xnack": False}
    assert TargetId.parse("gfx900:xnack+").settings == {"xnack": True}
    with pytest.raises(TargetError, match=r"bad feature 'sramecc\+'.*known: xnack\+/xnack-"):
        TargetId.parse("gfx900:sramecc+")
    # a gfx900 code object never runs on a gfx906 board and the other way round
    assert not TargetId.parse("gfx900").compatible_with(TargetId.parse("gfx906"))
    assert not TargetId.parse("gfx906").compatible_with(TargetId.parse("gfx900"))
    assert TargetId.parse("gfx900:xnack-").compatible_with(TargetId.parse("gfx900"))
    assert not TargetId.parse("gfx900:xnack-").compatible_with(TargetId.parse("gfx900:xnack+"))


def test_mi25_board_matches_the_spec_sheet():
    b = get_board("mi25")
    assert b.target is GFX900 and b.compute_units == 64
    assert b.peak_flops_f32 / 1e12 == pytest.approx(12.3, rel=0.01)        # 12.3 TFLOP/s f32
    assert b.peak_flops_f32 / GFX900.f64_rate_divisor / 1e9 == pytest.approx(768, rel=0.01)  # f64
    assert b.hbm_bytes_per_second / 1e9 == pytest.approx(484, rel=0.01)
    # the f64 issue time is the target's, from the ISA table (the board must not keep gfx906's 8)
    assert GFX900.valu_f64_cycles == 64 and GFX906.valu_f64_cycles == 8
    assert GFX900.f64_rate_divisor == 16 and GFX906.f64_rate_divisor == 2
    assert GFX900.compute_units == {"MI25": 64} and not GFX900.has_fmac_f32
    # instruction availability is the ISA table's (gfx900.json's missing list, from LLVM's decoder)
    assert GFX906.has_fmac_f32 and GFX906.has_dot_insts and not GFX900.has_dot_insts


def test_register_budgets_are_gfx9s_by_llvm(toolchain):
    """s101 is the last addressable SGPR and v255 the last VGPR on gfx900, as on gfx906."""
    t = get_target("gfx900")
    assert (t.addressable_sgprs, t.addressable_vgprs) == (GFX906.addressable_sgprs, GFX906.addressable_vgprs)
    lines = [f"s_mov_b32 s{t.addressable_sgprs - 1}, 0", f"s_mov_b32 s{t.addressable_sgprs}, 0",
             f"v_mov_b32 v{t.addressable_vgprs - 1}, 0", f"v_mov_b32 v{t.addressable_vgprs}, 0"]
    assert _assembler_error_lines(toolchain, lines, "gfx900") == {2, 4}


# -- ELF flags: what LLVM writes --------------------------------------------------------------

_EMPTY = """  .amdgcn_target "amdgcn-amd-amdhsa--{tid}"
  .text
  .globl empty
  .p2align 8
  .type empty,@function
empty:
  s_endpgm
  .rodata
  .p2align 6
  .amdhsa_kernel empty
    .amdhsa_next_free_vgpr 1
    .amdhsa_next_free_sgpr 1
    .amdhsa_reserve_xnack_mask {xnack}
  .end_amdhsa_kernel
"""


@pytest.mark.parametrize("tid", ["gfx900", "gfx900:xnack-", "gfx900:xnack+", "gfx906", "gfx906:sramecc+:xnack-"])
def test_e_flags_are_llvms(toolchain, tid):
    t = TargetId.parse(tid)
    xnack = int(t.settings.get("xnack") is not False)
    hsaco = assemble_and_link(_EMPTY.format(tid=tid, xnack=xnack), t)
    (e_flags,) = struct.unpack_from("<I", hsaco, 48)
    assert e_flags == t.e_flags(), (tid, hex(e_flags), hex(t.e_flags()))
    assert str(TargetId.from_e_flags(e_flags)) == tid
    if tid.startswith("gfx900"):
        assert e_flags & 0xFF == 0x2C and e_flags & 0xC00 == 0  # EF_AMDGPU_MACH_AMDGCN_GFX900, no sramecc


def test_e_flags_with_sramecc_bits_for_gfx900_are_refused():
    with pytest.raises(TargetError, match="gfx900, which has no sramecc"):
        TargetId.from_e_flags(0x2C | 0x100 | 0x400)


# -- instruction availability -----------------------------------------------------------------


def test_missing_list_matches_llvms_assembler(toolchain):
    """Every row of the gfx906 table assembles for gfx900 except exactly ``missing('gfx900')``."""
    rows = list(isa.table().values())
    err900 = _assembler_error_lines(toolchain, [r.asm for r in rows], "gfx900")
    err906 = _assembler_error_lines(toolchain, [r.asm for r in rows], "gfx906")
    assert not err906
    refused = {rows[i - 1].mnemonic for i in err900}
    assert refused == set(missing("gfx900"))
    # the issue's list, LLVM AMDGPU.td: FeatureDLInsts, FeatureFmaMixInsts, dot instructions
    assert {"v_fmac_f32", "v_xnor_b32", "v_dot2_f32_f16", "v_dot4_i32_i8", "v_fma_mix_f32"} <= refused
    assert missing("gfx906") == frozenset()


def test_available_api():
    assert available("v_fma_f32", "gfx900") and available("v_fma_f64", "gfx900:xnack-")
    assert available("s_load_dwordx16", "gfx900") and available("global_load_dwordx4", "gfx900")
    assert not available("v_fmac_f32_e32", "gfx900") and available("v_fmac_f32_e32", "gfx906")
    assert not available("v_fma_f32_sdwa", "gfx906")  # no such form anywhere
    assert not available("v_pk_fma_f32", "gfx906")     # gfx90a's
    assert "gfx900 has v_mad_mix_f32" in unavailable_reason("v_fma_mix_f32", "gfx900")
    with pytest.raises(TargetError, match="unknown target 'gfx908'"):
        available("v_fma_f32", "gfx908")


def _generator():
    """tools/gen_isa_table.py as a module (in this process: no Python subprocess to start)."""
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("gen_isa_table", root / "tools" / "gen_isa_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generator_reproduces_the_committed_data():
    """tools/gen_isa_table.py --target gfx900 (LLVM's disassembler) gives the committed file.

    It once failed under load: the generator ignored how llvm-mc ended, so a run that did not
    finish (or lost its output) read as "every instruction missing".  It now checks llvm-mc's
    exit status and that every candidate's marker came back (test below), feeds it through a
    pipe instead of a temporary file, and the test runs it in this process, with no time limit."""
    import json
    import shutil
    mc = shutil.which("llvm-mc-19") or shutil.which("llvm-mc")
    if mc is None:
        pytest.skip("no llvm-mc on PATH")
    root = Path(__file__).resolve().parents[2]
    gen = _generator()
    rows = json.loads((root / "vlpc" / "isa" / "gfx906.json").read_text())["instructions"]
    new = gen.target_availability(mc, rows, "gfx900")
    old = json.loads((root / "vlpc" / "isa" / "gfx900.json").read_text())
    assert {k: new[k] for k in ("missing", "missing_forms", "other_mnemonic")} == \
           {k: old[k] for k in ("missing", "missing_forms", "other_mnemonic")}


@pytest.mark.parametrize("script, why", [
    ("exit 0", "printed 0 of the 2 candidates' markers"),  # no output at all
    ("kill -9 $$", "exited with -9"),  # killed (out of memory, a limit)
    ("echo 'error: out of memory' >&2; exit 1", "exited with 1: error: out of memory"),
])
def test_generator_refuses_an_unfinished_disassembly(tmp_path, script, why):
    """An llvm-mc that did not answer for every candidate is an error, not "all missing"."""
    mc = tmp_path / "llvm-mc"
    mc.write_text(f"#!/bin/sh\ncat > /dev/null\n{script}\n")
    mc.chmod(0o755)
    with pytest.raises(RuntimeError, match=re.escape(why)):
        _generator().disassemble(str(mc), [[0xBE800080], [0xBE800081]], "gfx900")


# -- end to end on the strict emulator -------------------------------------------------------


def _gemm_source(m, n, k, lda, ldc, dtype):
    a = f"memref<{m}x{k}x{dtype}, strided<[{lda}, 1]>>"
    b = f"memref<{n}x{k}x{dtype}>"
    c = f"memref<{m}x{n}x{dtype}, strided<[{ldc}, 1]>>"
    return (f"builtin.module {{\n  func.func @sgemm(%a: {a}, %b: {b}, %c: {c}, %alpha: {dtype}, %beta: {dtype}) {{\n"
            f"    gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"}} : {a}, {b}, {c}, {dtype}, {dtype}\n"
            f"    func.return\n  }}\n}}\n")


@pytest.mark.parametrize("dtype,m,n,k", [("f32", 70, 80, 40), ("f64", 40, 70, 20)])
@pytest.mark.parametrize("alpha,beta", [(1.25, -0.75), (1.5, 0.0), (0.0, 2.0)])
def test_gemm_on_gfx900_strict_emulator(dtype, m, n, k, alpha, beta):
    """gfx900 code objects run on a gfx900 emulator; exactly sized, NaN-padded buffers; BLAS
    quick returns (beta = 0 over a NaN C, alpha = 0 over NaN A and B)."""
    import numpy as np

    import vlpc
    from vlpc.runtime import get_device, load_code_object
    from reference import assert_gemm_close, assert_padding_untouched, gemm_reference

    npt = np.float32 if dtype == "f32" else np.float64
    lda, ldc = k + 3, n + 5
    r = vlpc.compile(_gemm_source(m, n, k, lda, ldc, dtype), "gfx900:xnack-", split_k=1)
    asm = r.kernel().asm
    assert '.amdgcn_target "amdgcn-amd-amdhsa--gfx900:xnack-"' in asm
    assert ".amdhsa_reserve_xnack_mask 0" in asm
    lacks = missing("gfx900")
    used = {ln.split()[0] for ln in asm.splitlines() if re.match(r"\s+[vsgd][a-z_0-9]*\b", ln)}
    assert not used & lacks and ("v_fma_f32" if dtype == "f32" else "v_fma_f64") in used
    co = load_code_object(r.code_object)
    assert str(co.target_id) == "gfx900:xnack-"
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, lda)).astype(npt)
    a[:, k:] = np.nan                       # padding beyond K: never read
    b = rng.standard_normal((n, k)).astype(npt)
    c0 = rng.standard_normal((m, ldc)).astype(npt)
    c0[:, n:] = np.nan                      # padding beyond N: kept bit for bit
    if beta == 0:
        c0[::3, :n] = np.nan                # beta = 0 does not read C
    if alpha == 0:
        a[::2, :k] = np.nan                 # alpha = 0 reads neither A nor B
        b[::5] = np.inf
    dev = get_device("emulator", target="gfx900", strict=True)
    bufs = [dev.upload(x) for x in (a, b, c0)]
    kern = r.kernel()
    launch = kern.launch(m, n, k)
    dev.launch(co, "sgemm", grid=launch.grid, block=launch.block,
               args=[*bufs, np.int32(m), np.int32(n), np.int32(k), np.int32(lda), np.int32(k),
                     np.int32(ldc), npt(alpha), npt(beta)])
    out = dev.download(bufs[2], npt, (m, ldc))
    exp, bound = gemm_reference(a if alpha else None, b if alpha else None, c0 if beta else None, alpha, beta,
                                layout="NT", m=m, n=n, k=k, dtype=dtype)
    assert_gemm_close(out[:, :n], exp, bound)
    assert_padding_untouched(out, c0, n)


def test_vlpc_run_picks_a_gfx900_device():
    """vlpc.run on a gfx900 kernel uses a gfx900 emulator; a gfx906 one refuses it naming both ids."""
    import numpy as np

    import vlpc
    from vlpc.runtime import LaunchError, get_device

    kern = vlpc.compile(_gemm_source(64, 64, 16, 16, 64, "f32"), "gfx900", split_k=1).kernel()
    r = vlpc.run(kern, strict=True)
    assert "gfx900" in r.device and r.verified
    with pytest.raises(LaunchError, match=r"is for gfx900, which cannot run on this emulator device \(gfx906\)"):
        vlpc.run(kern, device=get_device("emulator"))
    assert np.isfinite(r.c).all()


# -- the emulator refuses what gfx900 lacks, by name -----------------------------------------


def _empty(tid: str, body: str | None = None) -> str:
    """tests/runtime/test_runtime_support.py's empty kernel (with metadata) for ``tid``; ``body``
    replaces its ``s_endpgm``."""
    from test_runtime_support import empty_source

    src = empty_source().replace("amdgcn-amd-amdhsa--gfx906", f"amdgcn-amd-amdhsa--{tid}")
    return src if body is None else src.replace("  s_endpgm\n", body, 1)


@pytest.mark.parametrize("line,name", [("v_fmac_f32 v3, v1, v2", "v_fmac_f32"),
                                       ("v_dot2_f32_f16 v3, v1, v2, v3", "v_dot2_f32_f16"),
                                       ("v_fma_mix_f32 v3, v1, v2, v3", "v_fma_mix_f32")])
def test_emulator_refuses_gfx906_only_instructions_on_gfx900(line, name):
    from vlpc.runtime.emulator.errors import UnsupportedInstruction
    from vlpc.runtime.emulator.testing import run_program

    body = f"v_mov_b32 v1, 1.0\nv_mov_b32 v2, 2.0\nv_mov_b32 v3, 0\n{line}\ns_endpgm\n"
    run_program(body, target="gfx906")  # gfx906 executes it
    with pytest.raises(UnsupportedInstruction, match=rf"{name} is not a gfx900 instruction") as e:
        run_program(body, target="gfx900")
    assert e.value.mnemonic == name


def test_gfx900_code_object_with_v_fmac_is_refused_by_name(toolchain):
    """LLVM will not assemble v_fmac_f32 for gfx900, so its gfx906 encoding goes in as data."""
    from vlpc.runtime import get_device, load_code_object
    from vlpc.runtime.emulator.errors import UnsupportedInstruction

    words = isa.lookup("v_fmac_f32").sample[:4]
    body = f"  v_mov_b32 v1, 0\n  .long 0x{int.from_bytes(words, 'little'):08x}\n  s_endpgm\n"
    co = load_code_object(assemble_and_link(_empty("gfx900", body), "gfx900"))
    dev = get_device("emulator", target="gfx900")
    with pytest.raises(UnsupportedInstruction, match=r"kernel 'empty' at pc \+0x4 .*v_fmac_f32 is not a gfx900 "
                                                     r"instruction"):
        dev.launch(co, "empty", grid=(1, 1, 1), block=(64, 1, 1), args=[])


def test_emulator_board_and_target_agree():
    from vlpc.errors import DeviceError
    from vlpc.runtime import get_device

    assert str(get_device("emulator", gpu="mi25").target_id) == "gfx900"
    assert str(get_device("emulator", gpu="mi60").target_id) == "gfx906"
    with pytest.raises(DeviceError, match="board mi60 is a gfx906, not gfx900"):
        get_device("emulator", gpu="mi60", target="gfx900")


# -- HIP: a code object must match the board's target id -------------------------------------


def test_hip_device_refuses_a_code_object_of_the_other_chip(toolchain):
    import numpy as np

    from test_hip_device import FakeHip
    from vlpc.runtime import LaunchError, load_code_object
    from vlpc.runtime.hip import HipDevice

    co900 = load_code_object(assemble_and_link(_empty("gfx900:xnack-"), "gfx900:xnack-"))
    co906 = load_code_object(assemble_and_link(_empty("gfx906"), "gfx906"))
    mi50 = HipDevice(_hip=FakeHip(arch="gfx906:sramecc+:xnack-"))
    with pytest.raises(LaunchError) as e:
        mi50.launch(co900, "empty", grid=1, block=64)
    assert "gfx900:xnack-" in str(e.value) and "gfx906:sramecc+:xnack-" in str(e.value)
    fake = FakeHip(arch="gfx900:xnack-")
    mi25 = HipDevice(_hip=fake)
    assert str(mi25.target_id) == "gfx900:xnack-"
    with pytest.raises(LaunchError) as e:
        mi25.launch(co906, "empty", grid=1, block=64)
    assert "is for gfx906" in str(e.value) and "(gfx900:xnack-)" in str(e.value)
    assert not fake.launches
    mi25.launch(co900, "empty", grid=1, block=64)
    assert len(fake.launches) == 1
    with pytest.raises(LaunchError):  # xnack+ code on an xnack- board
        co_on = load_code_object(assemble_and_link(_empty("gfx900:xnack+"), "gfx900:xnack+"))
        mi25.launch(co_on, "empty", grid=1, block=64)
    assert np.int32  # NumPy is the fake's memory


# -- instruction selection and LLVM's own code generation ---------------------------------------


def test_llvm_codegen_for_gfx900_agrees(toolchain, tmp_path):
    """clang -mcpu=gfx900 on an fma kernel: v_fma_f32 (gfx906: v_fmac_f32), nothing gfx900 lacks,
    and the same e_flags and metadata target as vlpc's gfx900 code object."""
    import sys

    import vlpc
    from vlpc.runtime import load_code_object

    if toolchain.kind != "zig":
        pytest.skip("uses the ziglang clang driver")
    cl = tmp_path / "k.cl"
    cl.write_text("__kernel void axpy(__global float* y, __global const float* x, float a) {\n"
                  "  int i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();\n"
                  "  y[i] = __builtin_fmaf(a, x[i], y[i]);\n}\n")
    asm = {}
    for cpu in ("gfx900", "gfx906"):
        r = subprocess.run([sys.executable, "-m", "ziglang", "clang", "-x", "cl", "-cl-no-stdinc", "-nogpulib",
                            "-target", "amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-O2", "-S", str(cl), "-o", "-"],
                           capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"clang cannot compile OpenCL here: {r.stderr.strip()[:200]}")
        asm[cpu] = {ln.split()[0] for ln in r.stdout.splitlines() if re.match(r"\s+v_", ln)}
    assert "v_fmac_f32_e32" in asm["gfx906"] and "v_fma_f32" in asm["gfx900"]
    assert not {isa.base_mnemonic(m) for m in asm["gfx900"]} & missing("gfx900")
    # e_flags and the metadata target of clang's object and of vlpc's
    obj = tmp_path / "k.o"
    subprocess.run([sys.executable, "-m", "ziglang", "clang", "-x", "cl", "-cl-no-stdinc", "-nogpulib", "-target",
                    "amdgcn-amd-amdhsa", "-mcpu=gfx900", "-O2", "-c", str(cl), "-o", str(obj)], check=True)
    theirs = toolchain.link(obj.read_bytes())
    ours = vlpc.compile(_gemm_source(64, 64, 16, 16, 64, "f32"), "gfx900", split_k=1).code_object
    assert struct.unpack_from("<I", theirs, 48) == struct.unpack_from("<I", ours, 48)
    assert load_code_object(theirs).metadata["amdhsa.target"] == load_code_object(ours).metadata["amdhsa.target"]


def test_dot_kernels_need_gfx906_located():
    """An f16 product selects v_dot2_f32_f16 (gfx906's dot path): on gfx900 a located error."""
    import vlpc
    from vlpc.errors import VlpcError

    src = ("builtin.module {\n  func.func @hgemm(%a: memref<64x32xf16>, %b: memref<64x32xf16>, "
           "%c: memref<64x64xf32>, %alpha: f32, %beta: f32) {\n"
           "    gemm.matmul %a, %b, %c, %alpha, %beta {layout = \"NT\"} : memref<64x32xf16>, memref<64x32xf16>, "
           "memref<64x64xf32>, f32, f32\n    func.return\n  }\n}\n")
    try:
        asm = vlpc.compile(src, "gfx906", filename="h.mlir", split_k=1).kernel().asm
    except VlpcError as e:  # pragma: no cover - a tree without the f16/int8 dot kernels
        pytest.skip(f"no f16 dot kernels here: {e}")
    assert "v_dot2_f32_f16" in asm
    with pytest.raises(VlpcError, match=r"^h\.mlir:3:5: error: kernel 'hgemm': v_dot2_f32_f16 is not a gfx900 "
                                        r"instruction .*it needs gfx906"):
        vlpc.compile(src, "gfx900", filename="h.mlir", split_k=1)


# -- f64 rate in the ISA table and the timing model ---------------------------------------------


def test_issue_cycles_follow_the_targets_f64_rate():
    from vlpc.isa.availability import issue_cycles

    assert issue_cycles("v_fma_f64", "gfx906") == isa.lookup("v_fma_f64").cycles == 8
    assert issue_cycles("v_fma_f64", "gfx900") == 4 * 16      # MI25: f64 at 1/16 of the f32 rate
    assert issue_cycles("v_fma_f32", "gfx900") == issue_cycles("v_fma_f32", "gfx906") == 4
    # every f64 VALU instruction at gfx900's rate (at least 64), nothing else differs
    for mn in ("v_add_f64", "v_mul_f64", "v_rcp_f64", "v_cvt_f32_f64", "v_cmp_lt_f64"):
        assert issue_cycles(mn, "gfx900") == 64, mn
    for mn in ("v_lshlrev_b64", "v_mul_lo_u32", "v_sin_f32"):
        assert issue_cycles(mn, "gfx900") == issue_cycles(mn, "gfx906") == isa.lookup(mn).cycles, mn
    with pytest.raises(KeyError, match="v_fmac_f32 is not a gfx900 instruction"):
        issue_cycles("v_fmac_f32", "gfx900")


def test_timing_model_runs_f64_fmas_at_the_boards_rate():
    """A dependent chain of n f64 FMAs in one wave: n x 8 cycles on mi60, n x 64 on mi25 (plus
    the 4 leading moves at 4 cycles each): the rule, not the model's answer."""
    from dataclasses import replace

    from vlpc.runtime.emulator.testing import run_program
    from vlpc.runtime.timing import TraceRequest
    from vlpc.runtime.timing.cu import simulate_cu

    n = 60
    body = ("v_mov_b32 v2, 0\nv_mov_b32 v3, 0\nv_mov_b32 v4, 0\nv_mov_b32 v5, 0\n"
            + "v_fma_f64 v[2:3], v[4:5], v[4:5], v[2:3]\n" * n + "s_endpgm\n")
    req = TraceRequest((0,), (0,))
    _, st = run_program(body, trace=req, target="gfx900")
    got = {}
    for name in ("mi60", "mi25"):
        b = get_board(name)
        b = b.at(timing=replace(b.timing, long_instruction_extra_cycles=0.0, branch_taken_extra_cycles=0))
        got[name] = simulate_cu(st.trace, [0], b)
    # the SIMD is busy 4 cycles per move and the f64 issue time per FMA; the wave ends when
    # its last instruction issues (s_endpgm does not wait for the last FMA to finish)
    assert got["mi60"].breakdown["valu"] == 4 * 4 + n * 8
    assert got["mi25"].breakdown["valu"] == 4 * 4 + n * 64
    assert got["mi60"].cycles == pytest.approx(4 * 4 + (n - 1) * 8, abs=12)
    assert got["mi25"].cycles == pytest.approx(4 * 4 + (n - 1) * 64, abs=12)


def test_cli_bench_and_run_model_the_mi25_for_gfx900(capsys):
    """vlpc bench/run --target gfx900 on the emulator: the timing model's board is the MI25."""
    from vlpc.cli import main

    dyn = str(Path(__file__).resolve().parents[2] / "examples" / "sgemm_dynamic.mlir")
    assert main(["bench", dyn, "--m", "128", "--n", "256", "--k", "32", "--target", "gfx900"]) == 0
    err = capsys.readouterr().err
    assert "timing model of mi25 (64 CUs, engine 1500 MHz, memory 945 MHz)" in err
    assert main(["bench", dyn, "--m", "128", "--n", "256", "--k", "32", "--target", "gfx900", "--gpu", "mi60"]) != 0
    err = capsys.readouterr().err
    assert "gfx906" in err and "gfx900" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    # --gpu mi25 with the default target: one line that names the fix
    assert main(["bench", dyn, "--m", "128", "--n", "256", "--k", "32", "--gpu", "mi25"]) != 0
    err = capsys.readouterr().err
    assert "--target gfx900" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


# -- DGEMM's plan and the modeled figures on MI25 ----------------------------------------------


def test_dgemm_plan_on_mi25_is_charged_the_f64_rate(capsys):
    """--print-plan for DGEMM 4096x4096x640 on mi25: the chosen plan's modeled time is at least
    the time at MI25's f64 peak (768 GFLOP/s, spec sheet) and near it (a compute-bound plan);
    the same plan on mi60 is bounded by its own f64 peak (half rate: 7.37 TFLOP/s at its stock 1800 MHz)."""
    from vlpc.cli import main

    from vlpc.benchmarking.seed import dgemm_source

    m, k = 4096, 640
    flops = 2.0 * m * m * k
    src = Path(tempfile.mkdtemp()) / "dgemm.mlir"
    src.write_text(dgemm_source(m, m, k))
    chosen = {}
    for target, gpu in (("gfx900", "mi25"), ("gfx906", "mi60")):
        assert main(["compile", str(src), "--target", target, "--gpu", gpu, "--print-plan"]) == 0
        out = capsys.readouterr().out
        line = next(ln for ln in out.splitlines() if "<- chosen" in ln)
        chosen[gpu] = float(re.search(r"= ([\d.]+) us", line).group(1)) * 1e-6
        assert re.search(r"^\s+1: ", line), out  # split-k 1: a reduction only adds time here
    at_peak_mi25 = flops / 768e9
    assert at_peak_mi25 <= chosen["mi25"] <= 1.25 * at_peak_mi25
    at_peak_mi60 = flops / (64 * 64 * 2 * 1.8e9 / 2)
    assert at_peak_mi60 <= chosen["mi60"] <= 1.25 * at_peak_mi60
    assert chosen["mi25"] > 7 * chosen["mi60"]  # 16 vs 2 cycles per f64 lane, 1500 vs 1800 MHz


def test_board_gemm_shortcut_matches_the_full_launch_for_dgemm_on_mi25():
    """benchmarks/board_gemm.py (CU 0 traced, L2 miss from the tile geometry) gives the full
    timing-only launch's modeled time for a gfx900 DGEMM on mi25 (the check of the 4096 figure)."""
    import numpy as np

    import vlpc
    from vlpc.runtime.emulator.device import EmulatorDevice

    from vlpc.benchmarking.seed import dgemm_source, gemm_fast

    m, n, k = 256, 512, 128
    fast = gemm_fast(m, n, k, dtype="f64", gpu="mi25", split_k=1)
    assert fast["target"] == "gfx900" and fast["peak_tflops"] == pytest.approx(0.768)
    mod = vlpc.compile(dgemm_source(m, n, k), "gfx900", gpu="mi25", split_k=1)
    ck = mod.kernel()
    dev = EmulatorDevice(gpu="mi25", timing_only=True)
    bufs = [dev.alloc(m * k * 8), dev.alloc(n * k * 8), dev.alloc(m * n * 8)]
    lc = ck.launch(m, n, k)
    st = dev.launch(mod.code_object, ck.name, grid=lc.grid, block=lc.block,
                    args=[*bufs, m, n, k, k, k, n, np.float64(1.0), np.float64(0.0)])
    assert fast["l2_miss"] == pytest.approx(st.timing.l2_miss, rel=1e-3)
    assert fast["modeled_us"] == pytest.approx(st.timing.time_us, rel=1e-3)
    assert fast["tflops"] == pytest.approx(2.0 * m * n * k / (st.timing.time_us * 1e-6) / 1e12, rel=1e-3)
    with pytest.raises(ValueError, match="splits K"):
        gemm_fast(256, 256, 4096, dtype="f64", gpu="mi25")  # the automatic plan splits a long K


# -- energy: mi25's coefficients, derived from gfx906's ----------------------------------------


def test_mi25_energy_coefficients_are_gfx906s_scaled_by_amds_statement():
    """Each die energy per event on mi25 at 1500 MHz is 2x gfx906's at 1500 MHz (AMD: the 7 nm
    Vega 20 needs half the power of the 14 nm Vega 10 at the same frequency); idle 2 x the seed's
    measured MI60 36 W at 1500 MHz; HBM2 unchanged; Vega 64's DPM voltages for other clocks."""
    from dataclasses import fields

    from vlpc.targets import ENERGY, MI25_ENERGY, energy_params

    assert energy_params("mi25") is MI25_ENERGY and energy_params(get_board("mi60")) is ENERGY
    assert energy_params("mi50") is ENERGY
    gfx906_at_1500 = ENERGY.scale(1500.0)
    die = [f.name for f in fields(ENERGY) if f.name.endswith(("_pj", "_pj_per_byte")) and f.name != "hbm_pj_per_byte"]
    assert len(die) == 20  # 17, plus the dot2/dot4/packed-f16 datapath coefficients (issue 20)
    for name in die:
        mi25 = getattr(MI25_ENERGY, name) * MI25_ENERGY.scale(1500.0)
        assert mi25 == pytest.approx(2.0 * getattr(ENERGY, name) * gfx906_at_1500, rel=1e-12), name
    assert MI25_ENERGY.hbm_pj_per_byte == ENERGY.hbm_pj_per_byte
    assert MI25_ENERGY.idle_ref_watts * (MI25_ENERGY.voltage(1500) / MI25_ENERGY.voltage(
        MI25_ENERGY.ref_clock_mhz)) ** 2 == pytest.approx(72.0)
    # Vega 64 DPM states 6 and 7: 1401 MHz 1100 mV, 1576 MHz 1150 mV (issue 681)
    assert MI25_ENERGY.voltage(1500.0) == pytest.approx(1.100 + 0.050 * (1500 - 1401) / (1576 - 1401))
    assert MI25_ENERGY.voltage(852.0) == pytest.approx(0.800)


def test_energy_of_one_launch_on_mi25_vs_mi60_at_the_same_clock():
    """The same events in the same time priced on mi25 and mi60 at 1500 MHz: every die component
    doubles, HBM does not, static power is 72 W (2 x 36 W) against the MI60's."""
    from vlpc.runtime.timing.energy import COMPONENTS, EnergyEvents, estimate, idle_watts

    ev = EnergyEvents(vgpr_reads=3e9, forwarded_reads=1e9, vgpr_writes=1e9, sgpr_reads=2e7, sgpr_writes=1e6,
                      fma_f32_lanes=1e9, fma_f64_lanes=2e8, valu_other_lanes=1e8, instructions=2e7, salu=1e6,
                      smem=1e6, scalar_cache_bytes=1e8, l1_bytes=1e9, l2_bytes=1e8, hbm_bytes=5e7,
                      lds_bytes=1e7, barriers=1e4)
    t_us = 1000.0
    mi25 = estimate(ev, get_board("mi25"), t_us)
    mi60 = estimate(ev, get_board("mi60", clock_mhz=1500.0), t_us)
    for c in COMPONENTS:
        if c == "hbm":
            assert mi25.joules[c] == pytest.approx(mi60.joules[c])
        elif c == "static":
            assert mi25.joules[c] == pytest.approx(72.0 * t_us * 1e-6)
        else:
            assert mi25.joules[c] == pytest.approx(2.0 * mi60.joules[c], rel=1e-9), c
    assert idle_watts(get_board("mi25")) == pytest.approx(72.0)
    # away from 1500 MHz idle follows Vega 10's curve: (V(1300) / V(1500))^2
    v1300 = 1.050 + 0.050 * (1300 - 1200) / (1401 - 1200)
    v1500 = 1.100 + 0.050 * (1500 - 1401) / (1576 - 1401)
    assert idle_watts(get_board("mi25", clock_mhz=1300.0)) == pytest.approx(72.0 * (v1300 / v1500) ** 2)


def test_cli_energy_on_mi25(capsys, tmp_path, monkeypatch):
    """vlpc report --energy / vlpc bench --energy on mi25: the board's derived coefficients
    (72 W idle at 1500 MHz), said to be derived; --gpu mi25 with the default gfx906 target is one
    line naming the fix; --target gfx900 alone models mi25."""
    from vlpc.cli import main

    monkeypatch.chdir(tmp_path)
    dyn = str(Path(__file__).resolve().parents[2] / "examples" / "sgemm_dynamic.mlir")
    size = ["--m", "64", "--n", "256", "--k", "16", "-q"]
    assert main(["report", dyn, "--energy", "--gpu", "mi25", "--target", "gfx900", "-o", "r25", *size]) == 0
    out = capsys.readouterr().out
    assert "mi25 @ 1500 MHz" in out and "idle power 72.0 W" in out and "DERIVED" in out
    assert "core voltage 1.128 V" in out  # Vega 64's DPM curve at 1500 MHz
    md = (tmp_path / "r25.md").read_text()
    assert "MI25_ENERGY_SOURCES" in md
    assert main(["report", dyn, "--energy", "--gpu", "mi25", "-o", "bad", *size]) != 0
    err = capsys.readouterr().err
    assert "add --target gfx900" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "bad.md").exists()
    size = ["-m", "64", "-n", "256", "-k", "16", "-q"]
    assert main(["bench", dyn, "--energy", "--target", "gfx900", *size]) == 0
    out = capsys.readouterr().out
    assert "mi25 @ 1500 MHz" in out and "idle power 72.0 W" in out and "DERIVED" in out


# -- vlpc doctor: the assembler for each target ---------------------------------------------------


def test_doctor_reports_gfx900_readiness_and_a_gfx900_device(toolchain):
    """e_flags from AMDGPUUsage ("ELF Header": EF_AMDGPU_MACH_AMDGCN_GFX900 0x02c with xnack
    'any' 0x100; gfx906 0x02f with xnack and sramecc 'any' 0x500)."""
    from test_hip_device import FakeHip
    from vlpc.doctor import diagnose

    rep = diagnose(FakeHip(arch="gfx900:xnack-"), hip_python=("6.2.0.499.16", "6.2.0"))
    lines = {ln.label: ln for ln in rep.lines}
    assert not rep.problems and rep.usable and rep.exit_code == 0, rep.text()
    assert "e_flags 0x12c" in lines["gfx900"].text and "v_fmac_f32 refused" in lines["gfx900"].text
    assert "v_dot2_f32_f16" not in lines["gfx900"].text
    assert "e_flags 0x52f" in lines["gfx906"].text and "v_dot2_f32_f16" in lines["gfx906"].text
    assert "runs vlpc's gfx900 code objects (--target gfx900)" in lines["device 0"].text
    assert rep.devices[0]["runs_vlpc"]


def test_doctor_says_when_the_assembler_is_not_ready(toolchain):
    """An assembler that ignores the processor (builds gfx906 whatever it is asked) and one that
    is missing: '!' lines naming the target, exit 4, no exception."""
    from dataclasses import replace

    from test_hip_device import FakeHip
    from vlpc.doctor import diagnose
    from vlpc.errors import EXIT_DEVICE
    from vlpc.runtime.toolchain import Toolchain

    class AlwaysGfx906(Toolchain):
        def assemble(self, asm, target_id, source_name="kernel.s"):
            asm = asm.replace("amdgcn-amd-amdhsa--gfx900", "amdgcn-amd-amdhsa--gfx906")
            return super().assemble(asm, TargetId.parse("gfx906"), source_name)

    wrong = AlwaysGfx906(toolchain.kind, toolchain.assembler, toolchain.assembler_style, toolchain.linker)
    rep = diagnose(FakeHip(), hip_python=("6.2.0.499.16", "6.2.0"), toolchain=wrong)
    bad = {ln.label: ln.text for ln in rep.problems}
    assert set(bad) == {"gfx900"}, rep.text()
    assert "e_flags 0x52f, not gfx900's 0x12c" in bad["gfx900"]
    assert rep.exit_code == EXIT_DEVICE
    missing = replace(toolchain, assembler=("/nonexistent/clang",), linker=("/nonexistent/ld.lld",))
    rep = diagnose(FakeHip(), hip_python=("6.2.0.499.16", "6.2.0"), toolchain=missing)
    assert {ln.label for ln in rep.problems} == {"gfx906", "gfx900"}, rep.text()
    assert rep.exit_code == EXIT_DEVICE


# -- vlpc tune: the board implies the target ------------------------------------------------------


def test_tune_gpu_mi25_implies_gfx900(capsys):
    from vlpc.cli import main
    from vlpc.tune import board_and_target

    assert board_and_target(None, "mi25") == ("gfx900", "mi25")
    assert board_and_target("gfx900:xnack-", None) == ("gfx900:xnack-", "mi25")
    assert board_and_target(None, None) == ("gfx906", "mi50")  # the default board (vlpc.targets.DEFAULT_BOARDS)
    assert board_and_target("gfx906", "mi60") == ("gfx906", "mi60")
    dyn = str(Path(__file__).resolve().parents[2] / "examples" / "sgemm_dynamic.mlir")
    args = ["tune", dyn, "--m", "256", "--n", "256", "--k", "64", "--max-candidates", "1", "-j", "1", "-q"]
    assert main([*args, "--gpu", "mi25", "--target", "gfx906"]) != 0
    err = capsys.readouterr().err
    assert "--target gfx900" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert main([*args, "--gpu", "mi25"]) == 0
    out = capsys.readouterr().out
    # (256x256x64 is memory-bound: the share is of mi25's HBM bandwidth, else of its peak)
    assert 'target="gfx900"' in out and ("of mi25 peak" in out or "of mi25 HBM bandwidth" in out)
