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
    # the timing model's f64 issue time is the target's (the board must not keep gfx906's 8)
    assert b.timing.valu_f64_cycles == GFX900.valu_f64_cycles == 64
    assert get_board("mi60").timing.valu_f64_cycles == GFX906.valu_f64_cycles == 8
    assert GFX900.compute_units == {"MI25": 64} and not GFX900.has_fmac_f32


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
    # the list, LLVM AMDGPU.td: FeatureDLInsts, FeatureFmaMixInsts, dot instructions
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


def test_generator_reproduces_the_committed_data():
    """tools/gen_isa_table.py --target gfx900 (LLVM's disassembler) gives the committed file."""
    import json
    import shutil
    mc = shutil.which("llvm-mc-19") or shutil.which("llvm-mc")
    if mc is None:
        pytest.skip("no llvm-mc on PATH")
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "gfx900.json"
        subprocess.run([__import__("sys").executable, str(root / "tools" / "gen_isa_table.py"),
                        "--llvm-mc", mc, "--target", "gfx900", "-o", str(out)], check=True,
                       capture_output=True)
        new = json.loads(out.read_text())
    old = json.loads((root / "vlpc" / "isa" / "gfx900.json").read_text())
    assert {k: new[k] for k in ("missing", "missing_forms", "other_mnemonic")} == \
           {k: old[k] for k in ("missing", "missing_forms", "other_mnemonic")}
