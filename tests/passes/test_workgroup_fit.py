"""A workgroup that cannot be resident on one CU is refused, never modeled (vlpc/workgroup_fit.py).

The rule, from the GCN whitepaper ("Compute Unit": a workgroup's waves on one CU, over its 4
SIMDs) and LLVM AMDGPUUsage (256 VGPRs per lane per SIMD, allocated in granules of 4 on GFX9;
64 KiB of LDS; at most 1024 work-items): the expected numbers below are worked out by hand.
"""

from __future__ import annotations

import pytest

import vlpc
from vlpc.cli import main
from vlpc.errors import WorkgroupFitError
from vlpc.runtime.timing import gpu
from vlpc.targets import get_board, get_target
from vlpc.workgroup_fit import check_workgroup_fits, workgroup_misfit

from test_quant_gemv import source

T = get_target("gfx906")


@pytest.mark.parametrize("items, vgprs, sgprs, lds, short", [
    (1024, 64, 32, 0, None),         # 16 waves: 4 per SIMD; 256 // 64 = 4
    (1024, 61, 32, 0, None),         # 61 -> 64 allocated: still 4
    (1024, 65, 32, 0, "VGPRs"),      # 65 -> 68 allocated: 256 // 68 = 3 < 4
    (1024, 68, 32, 0, "VGPRs"),      # 68 (a granule already): 3 per SIMD, 12 per CU < 16
    (1024, 72, 32, 0, "VGPRs"),      # the Q8_0 16-row GEMV at 16 groups: 3 per SIMD
    (768, 84, 32, 0, None),          # 12 waves: 3 per SIMD; 256 // 84 = 3
    (768, 86, 32, 0, "VGPRs"),       # 86 -> 88: 256 // 88 = 2 < 3
    (512, 128, 32, 0, None),         # 8 waves: 2 per SIMD; 256 // 128 = 2
    (512, 129, 32, 0, "VGPRs"),      # 129 -> 132: 1 < 2
    (256, 256, 32, 0, None),         # 4 waves, one per SIMD at the 256 VGPRs maximum
    (64 * 33, 32, 32, 0, "work-items"),  # 2112 > 1024 work-items
    (64, 32, 32, 65536, None),       # all 64 KiB of LDS
    (64, 32, 32, 65537, "LDS"),
])
def test_fit_rule(items, vgprs, sgprs, lds, short):
    got = workgroup_misfit(T, vgprs, sgprs, lds, items)
    assert (got.resource if got else None) == short
    if short is None:
        check_workgroup_fits(T, vgprs, sgprs, lds, items)  # no raise
    else:
        with pytest.raises(WorkgroupFitError, match=r"does not fit on one CU \(" + short):
            check_workgroup_fits(T, vgprs, sgprs, lds, items)


def test_fit_rule_sgprs():
    """SGPRs: GFX9 holds 7 waves per SIMD at 102 SGPRs (AMDGPUBaseInfo getMaxWavesPerEU): 16 waves
    (4 per SIMD) fit; the VGPR side at 28 (-> 28): 256 // 28 = 9, not the limit."""
    assert workgroup_misfit(T, 28, 102, 0, 1024) is None
    assert T.occupancy(28, 102, 0, 1024).by_sgprs == 7


@pytest.mark.parametrize("sgprs, waves", [(80, 10), (81, 9), (88, 9), (100, 8), (101, 7), (104, 7), (112, 7),
                                          (113, 0)])
def test_sgpr_count_with_vcc_and_xnack_mask(sgprs, waves):
    """The descriptor's SGPR count includes VCC and the XNACK mask (6 above the 102 addressable on
    GFX9 with XNACK: LLVM AMDGPUBaseInfo getNumExtraSGPRs), so up to 112 SGPRs a wave are legal and
    hold 7 waves per SIMD (getOccupancyWithNumSGPRs: > 100 -> 7); 113 cannot be allocated."""
    assert T.occupancy(32, sgprs, 0, 64).by_sgprs == waves
    got = workgroup_misfit(T, 32, sgprs, 0, 64)
    assert (got.resource if got else None) == (None if waves else "SGPRs")


def test_retry_stops_where_the_split_cannot_be_pinned(monkeypatch):
    """The automatic plan's retry halves the local split while it can be pinned (>= 2): a misfit
    at 2 groups is raised, not retried for ever with the option's 1 (automatic)."""
    from vlpc import compiler
    from vlpc.errors import WorkgroupFitError as E

    calls = []

    def refuse(module, ctx, target, filename, toolchain, options):
        calls.append(options.get("local_split", 1))
        raise E("kernel 'g': workgroup does not fit on one CU (SGPRs)", resource="SGPRs",
                local_split=max(2, calls[-1]))

    monkeypatch.setattr(compiler, "_build_once", refuse)
    with pytest.raises(E):
        vlpc.compile(Q8_16, split_k=1, cache=False)
    assert calls == [1]
    calls.clear()

    def refuse16(module, ctx, target, filename, toolchain, options):
        calls.append(options.get("local_split", 1))
        raise E("no", resource="VGPRs", local_split=16 if calls[-1] == 1 else calls[-1])

    monkeypatch.setattr(compiler, "_build_once", refuse16)
    with pytest.raises(E):
        vlpc.compile(Q8_16, split_k=1, cache=False)
    assert calls == [1, 8, 4, 2]


def test_message_names_the_numbers():
    got = workgroup_misfit(T, 72, 32, 0, 1024)
    assert str(got) == ("a workgroup of 16 waves needs 4 waves per SIMD, but at 72 VGPRs (72 allocated) "
                        "a SIMD holds 256 // 72 = 3 (12 waves per CU)")


def test_timing_model_refuses_instead_of_modeling_one():
    board = get_board("mi60")
    with pytest.raises(WorkgroupFitError, match=r"timing model: workgroup does not fit on one CU \(VGPRs\)"):
        gpu.residency(board, 72, 32, 0, 1024)
    assert gpu.residency(board, 64, 32, 0, 1024).wgs_per_cu == 1  # 16 slots / 16 waves
    assert gpu.residency(board, 72, 32, 0, 512).wgs_per_cu == 1   # 12 slots / 8 waves


# The quantized GEMV of 16 rows at 16 wavefront groups (1024 work-items) needs 72 VGPRs (Q8_0).
Q8_16 = source(16, 64, 4096, "q8_0").replace("b_format = ", 'gemv = "sgpr", b_format = ')  # the SGPR GEMV
# (not the int8 lane kernel of passes/isel/quant_lane.py, which splits nothing)


def test_compiler_refuses_a_given_plan_that_does_not_fit():
    """An explicit local split of 16 is the user's plan: refused, located, naming the limit."""
    with pytest.raises(WorkgroupFitError) as e:
        vlpc.compile(Q8_16, split_k=1, local_split=16, cache=False)
    assert e.value.resource == "VGPRs" and e.value.local_split == 16
    assert str(e.value).startswith("<input>:2:3: error: kernel 'g': workgroup does not fit on one CU (VGPRs): "
                                   "a workgroup of 16 waves needs 4 waves per SIMD")


def test_cli_refuses_with_one_line_and_writes_nothing(tmp_path, capsys):
    src = tmp_path / "q.mlir"
    src.write_text(Q8_16)
    out = tmp_path / "q.s"
    code = main(["compile", str(src), "--emit", "asm", "--split-k", "1", "--local-split", "16", "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and not out.exists()
    assert len(err) == 1 and "error: kernel 'g': workgroup does not fit on one CU (VGPRs)" in err[0], err
    assert "Traceback" not in "".join(err)


def test_automatic_plan_falls_back_to_fewer_groups():
    """Without a local split the plan halves its groups until the workgroup fits (8 groups, 512
    work-items: 2 waves per SIMD, which 72 VGPRs allow)."""
    k = vlpc.compile(Q8_16, split_k=1, cache=False).kernel("g")
    assert k.local_split == 8 and k.launch_info["workgroup_size"] == 512
    assert workgroup_misfit(T, k.vgprs, 32, 0, 512) is None
