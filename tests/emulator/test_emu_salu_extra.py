"""Scalar ALU instructions added by semantics/salu_extra.py, against the Vega ISA guide's
definitions (values worked out by hand)."""

from __future__ import annotations

import pytest

from vlpc.runtime.emulator.testing import run_lanes


def scalar(body, reg="s40"):
    (out,), _ = run_lanes(body + f"\nv_mov_b32 v20, {reg}", [])
    return int(out[0])


@pytest.mark.parametrize("body, reg, want", [
    ("s_mov_b32 s42, 1\ns_mov_b32 s43, 0\ns_brev_b64 s[40:41], s[42:43]", "s41", 0x80000000),
    ("s_mov_b32 s40, 0\ns_bitset1_b32 s40, 5", "s40", 32),
    ("s_mov_b32 s40, -1\ns_bitset0_b32 s40, 31", "s40", 0x7FFFFFFF),
    ("s_mov_b32 s42, -1\ns_mov_b32 s43, 0xfffffffe\ns_ff0_i32_b64 s40, s[42:43]", "s40", 32),
    ("s_mov_b32 s42, 0\ns_mov_b32 s43, 0x100\ns_flbit_i32_b64 s40, s[42:43]", "s40", 23),
    ("s_mov_b32 s42, 0xffff0000\ns_flbit_i32 s40, s42", "s40", 16),
    ("s_mov_b32 s42, -1\ns_flbit_i32 s40, s42", "s40", 0xFFFFFFFF),
    ("s_mov_b32 s42, 0x0000f010\ns_quadmask_b32 s40, s42", "s40", 0b1010),
    ("s_mov_b32 s42, 0x00000120\ns_wqm_b32 s40, s42", "s40", 0x00000FF0),
    ("s_mov_b32 s42, 0x5\ns_bitreplicate_b64_b32 s[40:41], s42", "s40", 0x33),
    ("s_bfm_b64 s[40:41], 4, 30", "s41", 0x3),
    ("s_mov_b32 s50, 77\ns_mov_b32 m0, 8\ns_movrels_b32 s40, s42", "s40", 77),
    ("s_mov_b32 m0, 2\ns_movreld_b32 s38, 99", "s40", 99),
])
def test_salu(body, reg, want):
    assert scalar(body, reg) == want


def test_andn2_wrexec():
    # EXEC = S0 & ~EXEC with EXEC = all 64 lanes -> 0; D = new EXEC; restore and read D
    body = ("s_mov_b64 s[44:45], exec\ns_mov_b32 s42, -1\ns_mov_b32 s43, -1\n"
            "s_andn2_wrexec_b64 s[40:41], s[42:43]\ns_cselect_b32 s46, 1, 2\n"
            "s_mov_b64 exec, s[44:45]\ns_add_u32 s40, s40, s46")
    assert scalar(body) == 2          # new EXEC 0 -> D = 0, SCC = 0
