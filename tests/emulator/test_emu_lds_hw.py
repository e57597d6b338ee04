"""LDS behaviour the hardware defines, on assembler-built programs:

* a DS read whose destination overlaps its address VGPR reads every address set before it
  writes any result (LLVM emits ``ds_read2st64_b32 v[15:16], v15`` for Triton's kernels);
* an out-of-range LDS access (Vega ISA guide, "Data Share Operations": the write is dropped,
  the read returns 0) is an ``"lds_range"`` finding: LdsOutOfRange by default and under
  ``strict``, a warning and the hardware's result with ``checks={"lds_range": "report"}``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from vlpc.runtime.emulator.errors import LdsOutOfRange, LdsOutOfRangeWarning
from vlpc.runtime.emulator.testing import run_lanes

LANE = np.arange(64, dtype=np.int64)

#: LDS[lane] = lane + 100, LDS[64 + lane] = lane + 200, LDS[128 + lane] = lane + 300 (dwords)
FILL = """v_lshlrev_b32 v2, 2, v0
v_add_u32 v3, 100, v0
ds_write_b32 v2, v3
v_add_u32 v3, 200, v0
ds_write_b32 v2, v3 offset:256
v_add_u32 v3, 300, v0
ds_write_b32 v2, v3 offset:512
s_waitcnt lgkmcnt(0)
"""


def lanes(body, n_out=2, **cfg):
    outs, _ = run_lanes(FILL + body, [], n_out=n_out, lds_bytes=1024, **cfg)
    return [o.astype(np.int64) for o in outs]


@pytest.mark.parametrize("read, want", [
    # destination's first register is the address register
    ("ds_read2st64_b32 v[15:16], v15 offset1:1", (100, 200)),
    ("ds_read2st64_b32 v[15:16], v15 offset0:1 offset1:2", (200, 300)),
    ("ds_read2_b32 v[15:16], v15 offset1:64", (100, 200)),
    # destination's second register is the address register
    ("ds_read2_b32 v[14:15], v15 offset0:64 offset1:128", (200, 300)),
])
def test_read2_destination_overlapping_the_address(read, want):
    body = f"v_lshlrev_b32 v15, 2, v0\n{read}\ns_waitcnt lgkmcnt(0)\n"
    lo = "v15" if "v[15:16]" in read else "v14"
    hi = "v16" if "v[15:16]" in read else "v15"
    a, b = lanes(body + f"v_mov_b32 v20, {lo}\nv_mov_b32 v21, {hi}")
    np.testing.assert_array_equal(a, LANE + want[0])
    np.testing.assert_array_equal(b, LANE + want[1])


def test_read2st64_b64_overlap_and_read_b64_overlap():
    # ds_read2st64_b64: unit 512 bytes; v[16:19] <- (LDS bytes a, a + 512) with the address in v16
    body = ("v_lshlrev_b32 v16, 2, v0\nds_read2st64_b64 v[16:19], v16 offset1:1\ns_waitcnt lgkmcnt(0)\n"
            "v_mov_b32 v20, v16\nv_mov_b32 v21, v18\n"
            "v_lshlrev_b32 v12, 2, v0\nds_read_b64 v[12:13], v12 offset:256\ns_waitcnt lgkmcnt(0)\n"
            "v_mov_b32 v22, v12\nv_mov_b32 v23, v13")
    a, c, d, e = lanes(body, n_out=4)
    np.testing.assert_array_equal(a, LANE + 100)
    np.testing.assert_array_equal(c, LANE + 300)
    np.testing.assert_array_equal(d, LANE + 200)
    np.testing.assert_array_equal(e, np.where(LANE < 63, LANE + 201, 300))


#: Tensile-style idle lanes: lanes >= 32 point their LDS write and read at 0xF00000
OOR = """v_lshlrev_b32 v4, 2, v0
v_mov_b32 v5, 0xf00000
v_cmp_gt_u32 vcc, 32, v0
v_cndmask_b32 v4, v5, v4, vcc
v_mov_b32 v6, 7
ds_write_b32 v4, v6
s_waitcnt lgkmcnt(0)
v_lshlrev_b32 v7, 2, v0
ds_read_b32 v8, v7
ds_read_b32 v9, v4
ds_read2_b32 v[10:11], v4 offset1:64
s_waitcnt lgkmcnt(0)
v_mov_b32 v20, v8
v_mov_b32 v21, v9
v_add_u32 v22, v10, v11
"""


def test_out_of_range_lds_faults_by_default_and_strict():
    with pytest.raises(LdsOutOfRange, match="lane 32 accesses LDS bytes \\[15728640"):
        lanes(OOR, n_out=3)
    with pytest.raises(LdsOutOfRange):
        lanes(OOR, n_out=3, strict=True, checks={"lds_range": "report"})


def test_out_of_range_lds_reported_write_dropped_read_zero():
    with pytest.warns(LdsOutOfRangeWarning) as rec:
        own, idle, pair = lanes(OOR, n_out=3, checks={"lds_range": "report"})
    msgs = [str(w.message) for w in rec if issubclass(w.category, LdsOutOfRangeWarning)]
    assert any("ds_write_b32" in m and "lane 32" in m for m in msgs)
    assert any("ds_read_b32 v9" in m for m in msgs)
    # in-range lanes wrote 7; the idle lanes' write was dropped (LDS still holds FILL's lane + 100)
    np.testing.assert_array_equal(own, np.where(LANE < 32, 7, LANE + 100))
    np.testing.assert_array_equal(idle, np.where(LANE < 32, 7, 0))
    np.testing.assert_array_equal(pair, np.where(LANE < 32, 7 + LANE + 200, 0))


def test_atomic_out_of_range_reported_returns_zero():
    body = ("v_lshlrev_b32 v4, 2, v0\nv_mov_b32 v5, 0xf00000\nv_cmp_gt_u32 vcc, 32, v0\n"
            "v_cndmask_b32 v4, v5, v4, vcc\nv_mov_b32 v6, 5\nv_mov_b32 v9, 99\n"
            "ds_add_rtn_u32 v9, v4, v6\ns_waitcnt lgkmcnt(0)\nds_read_b32 v10, v2\ns_waitcnt lgkmcnt(0)\n"
            "v_mov_b32 v20, v9\nv_mov_b32 v21, v10")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LdsOutOfRangeWarning)
        old, now = lanes(body, checks={"lds_range": "report"})
    np.testing.assert_array_equal(old, np.where(LANE < 32, LANE + 100, 0))
    np.testing.assert_array_equal(now, np.where(LANE < 32, LANE + 105, LANE + 100))


@pytest.mark.parametrize("body, want_old, want_after", [
    # 64-bit atomic: old value returned in range, 0 out of range; no update out of range
    ("v_mov_b32 v7, 0\nds_add_rtn_u64 v[9:10], v4, v[6:7]", "v9", None),
    # d16 read into the high half, keeping the low half (0x63)
    ("v_mov_b32 v9, 0x63\nds_read_u16_d16_hi v9, v4", "v9", None),
    # add-TID read at M0[15:0] = 0xff00 for every lane: all out of range
    ("s_mov_b32 m0, 0xff00\nv_mov_b32 v9, 1\nds_read_addtid_b32 v9", "v9", None),
])
def test_other_ds_forms_out_of_range_reported(body, want_old, want_after):
    shift = 3 if "u64" in body else 2
    prog = (f"v_lshlrev_b32 v4, {shift}, v0\nv_mov_b32 v5, 0xf00000\nv_cmp_gt_u32 vcc, 32, v0\n"
            "v_cndmask_b32 v4, v5, v4, vcc\nv_mov_b32 v6, 5\n" + body +
            f"\ns_waitcnt lgkmcnt(0)\nv_mov_b32 v20, {want_old}")
    with pytest.raises(LdsOutOfRange):
        lanes(prog, n_out=1)
    with pytest.warns(LdsOutOfRangeWarning):
        (got,) = lanes(prog, n_out=1, checks={"lds_range": "report"})
    if "addtid" in body:
        np.testing.assert_array_equal(got, 0)
    elif "d16_hi" in body:
        np.testing.assert_array_equal(got, np.where(LANE < 32, ((LANE + 100) << 16) | 0x63, 0x63))
    else:  # lane l's qword is dwords 2l, 2l + 1 (FILL: 2l + 100 while 2l < 64)
        np.testing.assert_array_equal(got, np.where(LANE < 32, 2 * LANE + 100, 0))


def test_findings_from_forked_workers_reach_the_caller_once(monkeypatch):
    """A launch big enough for worker processes (>= 512 waves): each worker's finding is
    forwarded, and one finding per kernel and pc reaches the caller."""
    from vlpc.runtime.emulator.testing import run_program

    monkeypatch.setenv("VLPC_EMU_PROCS", "2")
    prog = "v_mov_b32 v4, 0xf00000\nv_mov_b32 v6, 7\nds_write_b32 v4, v6\ns_waitcnt lgkmcnt(0)\ns_endpgm\n"
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        run_program(prog, grid=(600, 1, 1), lds_bytes=256, checks={"lds_range": "report"})
    assert [w.category for w in rec] == [LdsOutOfRangeWarning]


def test_device_checks_option():
    from vlpc.errors import DeviceError
    from vlpc.runtime import get_device

    assert get_device("emulator").checks == {"waitcnt": "raise", "lds_range": "raise", "buffer_range": "report"}
    assert set(get_device("emulator", checks="report").checks.values()) == {"report"}
    d = get_device("emulator", checks={"lds_range": "report"}, waitcnt="report")
    assert d.checks == {"waitcnt": "report", "lds_range": "report", "buffer_range": "report"}
    with pytest.raises(DeviceError, match="unknown check 'lds': the checks are waitcnt, lds_range, buffer_range"):
        get_device("emulator", checks={"lds": "report"})
    with pytest.raises(DeviceError, match="checks must be one of"):
        get_device("emulator", checks="ignore")
    with pytest.raises(DeviceError, match="waitcnt must be 'raise' or 'report'"):
        get_device("emulator", waitcnt="warn")
