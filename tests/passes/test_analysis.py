"""vlpc.analysis.loop_figures on hand-written assembly, figures counted by hand."""

from __future__ import annotations

import pytest

from vlpc.analysis import loop_figures

# The loop body, from the instruction after .Lloop to the branch back (15 instructions):
#  1 s_load A0  2 global_load  3 fma(s32)  4 fma(s33)  5 waitcnt lgkmcnt(0)  6-8 fma(s16..s18)
#  9 s_load A1  10 v_add  11 fma(s19)  12 waitcnt vmcnt(0)  13 s_sub  14 s_cmp  15 s_cbranch
LOOP = """
sgemm:
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
.Lloop:
  s_load_dwordx16 s[16:31], s[4:5], 0x0     ; A rows (batch 0)
  global_load_dword v1, v[2:3], off
  v_fma_f32 v10, v1, s32, v10
  v_fma_f32 v11, v1, s33, v11
  s_waitcnt lgkmcnt(0)
  v_fma_f32 v12, v1, s16, v12
  v_fma_f32 v13, v1, s17, v13
  v_fma_f32 v14, v1, s18, v14
  s_load_dwordx16 s[32:47], s[4:5], 0x40    ; A rows (batch 1)
  v_add_u32 v2, 4, v2
  v_fma_f32 v15, v1, s19, v15
  s_waitcnt vmcnt(0)
  s_sub_u32 s6, s6, 1
  s_cmp_lg_u32 s6, 0
  s_cbranch_scc1 .Lloop
  s_endpgm
"""


def test_counts_and_non_fma_rate():
    f = loop_figures(LOOP)
    assert f.label == ".Lloop"
    assert f.fma == 6 and f.non_fma == 9
    assert f.non_fma_per_1024 == 9 * 1024 / 6 == 1536
    assert f.counts["s_load_dwordx16"] == 2 and f.counts["s_waitcnt"] == 2 and f.counts["v_add_u32"] == 1
    assert sum(f.counts.values()) == 15


def test_a_cover_follows_the_back_edge():
    """Load 1 (s[16:31]): 2 FMAs before lgkmcnt(0).  Load 2 (s[32:47]): v_add, one FMA, then
    around the back edge two more FMAs before the wait: 4.  The cover is the smaller."""
    f = loop_figures(LOOP)
    assert f.a_loads == 2 and f.a_cover == 2


def test_valu_other_than_fma_or_two_sgprs_is_noticed():
    assert loop_figures(LOOP).valu_all_fma_with_one_sgpr is False  # the v_add_u32
    only_fma = LOOP.replace("  v_add_u32 v2, 4, v2\n", "")
    assert loop_figures(only_fma).valu_all_fma_with_one_sgpr is True
    two = only_fma.replace("v_fma_f32 v12, v1, s16, v12", "v_fma_f32 v12, s20, s16, v12")
    assert loop_figures(two).valu_all_fma_with_one_sgpr is False


def test_f64_pairs_and_the_loop_with_most_fmas():
    asm = """
k:
.Ltail:
  v_fma_f64 v[0:1], v[2:3], s[8:9], v[0:1]
  s_cbranch_scc1 .Ltail
.Lmain:
  s_load_dwordx16 s[8:23], s[4:5], 0x0
  s_waitcnt lgkmcnt(0)
  v_fma_f64 v[0:1], v[2:3], s[8:9], v[0:1]
  v_fma_f64 v[4:5], v[2:3], s[10:11], v[4:5]
  s_cbranch_scc1 .Lmain
"""
    f = loop_figures(asm, fma="v_fma_f64")
    assert f.label == ".Lmain" and f.fma == 2 and f.non_fma == 3 and f.valu_all_fma_with_one_sgpr
    assert f.a_loads == 1 and f.a_cover == 0  # the wait comes right after the load


def test_no_loop_is_an_error():
    with pytest.raises(ValueError, match="no loop"):
        loop_figures("k:\n  v_fma_f32 v0, v1, s2, v0\n  s_endpgm\n")
