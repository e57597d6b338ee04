"""Operand widths the decoder uses come from the gfx906 table's operands (vlpc.isa), not from
a suffix rule: the mixed-width instructions (Vega ISA guide operand descriptions) decode with
their real widths, and every VALU/SALU mnemonic of the table has widths."""

from __future__ import annotations

import pytest

from vlpc import isa as table
from vlpc.runtime.emulator import isa


@pytest.mark.parametrize("mnemonic, nsrc, want", [
    ("v_mad_u64_u32", 3, (2, 1, 1, 2)),      # D.u64 = S0.u32 * S1.u32 + S2.u64
    ("v_lshlrev_b64", 2, (2, 1, 2)),         # shift amount 32-bit, value 64-bit
    ("v_ldexp_f64", 2, (2, 2, 1)),
    ("v_cmp_class_f64", 2, (2, 2, 1)),       # VOPC: a 64-bit lane mask
    ("v_div_scale_f64", 3, (2, 2, 2, 2)),    # VOP3b: the carry-out pair is not a source
    ("v_cvt_f64_i32", 1, (2, 1)),
    ("v_frexp_exp_i32_f64", 1, (1, 2)),
    ("v_readlane_b32", 2, (1, 1, 1)),
    ("v_add_co_u32", 2, (1, 1, 1)),          # e32: VCC carry out not a source
    ("v_addc_co_u32", 3, (1, 1, 1, 1)),      # e32: VCC carry in implicit
    ("v_madmk_f32", 2, (1, 1, 1)),           # the K literal is not a source here
    ("s_lshl_b64", 2, (2, 2, 1)),
    ("s_bfe_u64", 2, (2, 2, 1)),
    ("s_bfm_b64", 2, (2, 1, 1)),
    ("s_bcnt1_i32_b64", 1, (1, 2)),
    ("s_bitcmp1_b64", 2, (0, 2, 1)),         # SOPC: no destination (SCC)
    ("s_cmp_lg_u64", 2, (0, 2, 2)),
    ("s_getpc_b64", 0, (2,)),
    ("s_setpc_b64", 1, (0, 2)),
    ("s_swappc_b64", 1, (2, 2)),
    ("s_bitset1_b64", 1, (2, 1)),
    ("s_quadmask_b64", 1, (2, 2)),
])
def test_mixed_width_operands(mnemonic, nsrc, want):
    assert isa.widths(mnemonic, nsrc) == want


def test_every_alu_mnemonic_has_widths():
    for mn, row in table.table().items():
        if row.encoding in ("SOP1", "SOP2", "SOPC", "VOP1", "VOP2", "VOPC", "VOP3a", "VOP3b"):
            w = isa.widths(mn, 2)
            assert len(w) == 3 and all(x in (0, 1, 2, 3, 4) for x in w), (mn, w)
