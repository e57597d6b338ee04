"""SCC as an implicit operand: every scalar instruction the Vega ISA guide says sets SCC is
recorded as writing it (the uninitialised-register check), and the semantics agree with the
table (:data:`vlpc.runtime.emulator.isa.SCC_WRITERS`): a writer's SCC does not depend on the
SCC before it (unless it reads it: carry-in), a non-writer leaves SCC alone."""

from __future__ import annotations

import pytest

from vlpc import isa as table
from vlpc.runtime.emulator import isa
from vlpc.runtime.emulator import semantics
from vlpc.runtime.emulator.errors import UninitializedRegisterRead
from vlpc.runtime.emulator.testing import run_lanes, run_program

#: control flow, trap-handler and hardware-register instructions: no SCC to compare
_SKIP = {"s_setpc_b64", "s_swappc_b64", "s_getpc_b64", "s_call_b64", "s_rfe_b64", "s_rfe_restore_b64",
         "s_cbranch_g_fork", "s_cbranch_i_fork", "s_cbranch_join", "s_setvskip", "s_set_gpr_idx_on",
         "s_set_gpr_idx_idx", "s_getreg_b32", "s_setreg_b32", "s_setreg_imm32_b32",
         "s_movreld_b32", "s_movreld_b64", "s_movrels_b32", "s_movrels_b64"}


def _scalar_rows():
    rows = []
    for row in table.table().values():
        if row.encoding in ("SOP1", "SOP2", "SOPK", "SOPC") and row.mnemonic not in _SKIP \
                and semantics.builder(row.mnemonic) is not None:
            rows.append((row.mnemonic, row.asm))
    return sorted(rows)


_ROWS = _scalar_rows()


def test_table_covers_compares_and_skips_moves():
    assert {"s_cmp_lg_u64", "s_cmp_eq_u64", "s_cmpk_lg_u32", "s_bitcmp1_b64", "s_and_saveexec_b64",
            "s_addk_i32", "s_abs_i32"} <= isa.SCC_WRITERS
    assert not {"s_mov_b64", "s_cselect_b64", "s_mul_i32", "s_bfm_b32", "s_movk_i32", "s_mulk_i32",
                "s_setvskip", "s_pack_ll_b32_b16"} & isa.SCC_WRITERS
    assert len(_ROWS) > 100


def _scc_after(asm: str, before: int, operands: tuple[int, int]) -> int:
    a, c = operands
    body = "\n".join([
        "s_mov_b64 s[30:31], exec",
        f"s_mov_b32 s4, {a}", f"s_mov_b32 s5, {c}", f"s_mov_b32 s8, {c}", f"s_mov_b32 s9, {a}",
        "s_mov_b32 s12, 0x10",
        f"s_cmp_eq_u32 {before}, 1",
        asm,
        "s_cselect_b32 s40, 1, 0",
        "s_mov_b64 exec, s[30:31]",
        "v_mov_b32 v20, s40"])
    (out,), _ = run_lanes(body, [])
    return int(out[0])


@pytest.mark.parametrize("mnemonic, asm", _ROWS, ids=[r[0] for r in _ROWS])
def test_semantics_match_the_scc_table(mnemonic, asm):
    operand_sets = [(0, 0), (5, 7), (-1, 3), (0x80000000, 0x7FFFFFFF)]
    writes = mnemonic in isa.SCC_WRITERS
    carry_in = mnemonic in ("s_addc_u32", "s_subb_u32")
    for ops in operand_sets:
        after = [_scc_after(asm, before, ops) for before in (0, 1)]
        if not writes:
            assert after == [0, 1], f"{mnemonic} changed SCC but is not in SCC_WRITERS"
        elif not carry_in:
            assert after[0] == after[1], f"{mnemonic} kept the old SCC but is in SCC_WRITERS"


@pytest.mark.parametrize("writer", ["s_cmp_lg_u64 s[0:1], 0", "s_cmp_eq_u64 s[0:1], s[0:1]",
                                    "s_cmp_lt_i32 s2, 1", "s_cmpk_lg_u32 s2, 0x0", "s_bitcmp1_b32 s2, 0",
                                    "s_and_saveexec_b64 s[6:7], exec", "s_addk_i32 s2, 0x1"])
def test_scc_writer_then_cselect_strict(writer):
    """llama.cpp's hipcc-built MMVQ kernel: ``s_cmp_lg_u64`` then ``s_cselect_b64`` (a strict
    launch used to fault: "scc is read before anything wrote it")."""
    run_program(f"s_mov_b32 s8, 0\n{writer}\ns_cselect_b64 s[4:5], -1, 0\ns_cmovk_i32 s8, 0x1\ns_endpgm\n",
                strict=True)


def test_scc_read_before_any_writer_still_faults():
    with pytest.raises(UninitializedRegisterRead, match="scc"):
        run_program("s_mul_i32 s3, s2, 2\ns_cselect_b64 s[4:5], -1, 0\ns_endpgm\n", strict=True)
    with pytest.raises(UninitializedRegisterRead, match="scc"):
        run_program("s_mov_b32 s3, 0\ns_cmovk_i32 s3, 0x1\ns_endpgm\n", strict=True)
