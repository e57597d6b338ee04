"""MUBUF addressing and range checking against the Vega ISA guide's rules ("Buffer
Addressing", "Range Checking"), on assembler-built programs:

* a raw buffer (stride 0) checks offset + size <= num_records, per dword for
  ``buffer_load/store_dwordx{2,3,4}``; a structured one (stride != 0, ``idxen``) checks
  index < num_records; the scratch form (ADD_TID_ENABLE, no ``idxen``) is not checked;
* out of range: loads return 0, stores are dropped, judged by num_records and not by the
  allocation (an exactly sized buffer, num_records past its end, never faults);
* swizzled (SWIZZLE_ENABLE, ADD_TID_ENABLE, INDEX_STRIDE 64, 4-byte elements): the byte at
  offset o of lane l is at base + (o / 4) * 256 + l * 4 + o % 4;
* out-of-range accesses are "buffer_range" findings: a BufferOutOfRangeWarning by default,
  BufferOutOfRange with ``checks={"buffer_range": "raise"}`` or ``strict``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from vlpc.runtime.emulator.errors import BufferOutOfRange, BufferOutOfRangeWarning
from vlpc.runtime.emulator.memory import Memory
from vlpc.runtime.emulator.testing import run_program

U = np.uint32
LANE = np.arange(64)


def _run(body: str, buf_words: int, out_words: int, w1: int, nrec: int, w3: int = 0x27000,
         fill=None, **cfg):
    """``s[8:11]`` = the V# (base = the buffer, word1 = ``w1`` | base hi, ``nrec``, ``w3``),
    ``s[6:7]`` = the output buffer; returns (buffer, output) after the run."""
    mem = Memory()
    buf = mem.alloc(4 * buf_words, tag="buf")
    mem.write(buf, np.arange(buf_words, dtype=U) + 1 if fill is None else fill)
    out = mem.alloc(4 * out_words, tag="out")
    mem.write(out, np.full(out_words, 0xDEADBEEF, U))
    karg = mem.alloc(16, tag="kernargs")
    mem.write(karg, np.array([buf, out], np.uint64))
    asm = f"""
    s_load_dwordx4 s[4:7], s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    s_mov_b32 s8, s4
    s_and_b32 s9, s5, 0xffff
    s_or_b32 s9, s9, {w1:#x}
    s_mov_b32 s10, {nrec:#x}
    s_mov_b32 s11, {w3:#x}
    {body}
    s_endpgm
    """
    run_program(asm, mem, kernarg=karg, **cfg)
    return mem.read(buf, 4 * buf_words).view(U).copy(), mem.read(out, 4 * out_words).view(U).copy()


def test_raw_dwordx4_is_checked_per_dword():
    # 25 dwords exactly sized; lane l loads dwords 4l..4l+3 (offset 16 l): num_records 100 bytes
    body = """v_lshlrev_b32 v1, 4, v0
    buffer_load_dwordx4 v[2:5], v1, s[8:11], 0 offen
    s_waitcnt vmcnt(0)
    global_store_dwordx4 v1, v[2:5], s[6:7]"""
    with pytest.warns(BufferOutOfRangeWarning, match="num_records 100"):
        _, out = _run(body, 25, 256, 0, 100)
    want = np.arange(256) + 1
    want[np.arange(256) >= 25] = 0
    np.testing.assert_array_equal(out, want)


def test_raw_store_dropped_past_num_records_not_the_allocation():
    # 64-dword buffer, num_records 40 bytes: only dwords 0..9 are stored
    body = """v_lshlrev_b32 v1, 2, v0
    v_add_u32 v2, 1000, v0
    buffer_store_dword v2, v1, s[8:11], 0 offen"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BufferOutOfRangeWarning)
        buf, _ = _run(body, 64, 1, 0, 40)
    np.testing.assert_array_equal(buf, np.where(LANE < 10, 1000 + LANE, LANE + 1))


def test_structured_buffer_checks_the_index():
    # stride 16 bytes, index = lane, instruction offset 4: dword 4 i + 1; num_records 10 records
    body = """v_mov_b32 v1, v0
    buffer_load_dword v2, v1, s[8:11], 0 idxen offset:4
    s_waitcnt vmcnt(0)
    v_lshlrev_b32 v3, 2, v0
    global_store_dword v3, v2, s[6:7]"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BufferOutOfRangeWarning)
        _, out = _run(body, 40, 64, 16 << 16, 10)
    np.testing.assert_array_equal(out, np.where(LANE < 10, 4 * LANE + 2, 0))


SWIZZLED_W1 = 1 << 31                          # SWIZZLE_ENABLE, stride 0
SWIZZLED_W3 = (4 << 15) | (3 << 21) | (1 << 23)  # INDEX_STRIDE 64, ADD_TID_ENABLE


def test_swizzled_scratch_form_addresses_and_no_range_check():
    # every lane stores lane + 500 at offset 8 and a dwordx2 (lane, lane + 1000) at offset 16;
    # num_records 0: the ADD_TID form without idxen is never range-checked
    body = """v_add_u32 v2, 500, v0
    v_mov_b32 v1, 0
    buffer_store_dword v2, off, s[8:11], 0 offset:8
    v_mov_b32 v4, v0
    v_add_u32 v5, 1000, v0
    buffer_store_dwordx2 v[4:5], off, s[8:11], 0 offset:16
    s_waitcnt vmcnt(0)
    buffer_load_dwordx2 v[6:7], off, s[8:11], 0 offset:16
    s_waitcnt vmcnt(0)
    v_lshlrev_b32 v3, 3, v0
    global_store_dwordx2 v3, v[6:7], s[6:7]"""
    with warnings.catch_warnings():
        warnings.simplefilter("error", BufferOutOfRangeWarning)
        buf, out = _run(body, 6 * 64, 128, SWIZZLED_W1, 0, SWIZZLED_W3, fill=np.zeros(6 * 64, U),
                        strict=True)
    # byte o of lane l at (o / 4) * 256 + 4 l + o % 4: dword index (o / 4) * 64 + l
    np.testing.assert_array_equal(buf[2 * 64 + LANE], 500 + LANE)
    np.testing.assert_array_equal(buf[4 * 64 + LANE], LANE)
    np.testing.assert_array_equal(buf[5 * 64 + LANE], 1000 + LANE)
    np.testing.assert_array_equal(out.reshape(64, 2), np.stack([LANE, 1000 + LANE], axis=1))


LOAD_OOR = """v_lshlrev_b32 v1, 2, v0
buffer_load_dword v2, v1, s[8:11], 0 offen
s_waitcnt vmcnt(0)
global_store_dword v1, v2, s[6:7]"""


def test_out_of_range_is_a_finding_raised_on_request_and_strict():
    with pytest.raises(BufferOutOfRange, match="lane 16: offset 64"):
        _run(LOAD_OOR, 64, 64, 0, 64, checks={"buffer_range": "raise"})
    with pytest.raises(BufferOutOfRange):
        _run(LOAD_OOR, 64, 64, 0, 64, strict=True)
    with pytest.warns(BufferOutOfRangeWarning) as rec:
        _, out = _run(LOAD_OOR, 64, 64, 0, 64)
    assert sum(issubclass(w.category, BufferOutOfRangeWarning) for w in rec) == 1
    np.testing.assert_array_equal(out, np.where(LANE < 16, LANE + 1, 0))


def test_loads_whose_destination_overlaps_the_address():
    """Every lane's address is taken before any loaded dword is written: ``buffer_load_dwordx2
    v[1:2], v1`` (swizzled per dword too) and ``global_load_dwordx4 v[12:15], v[12:13]``."""
    body = """v_lshlrev_b32 v1, 3, v0
    buffer_load_dwordx2 v[1:2], v1, s[8:11], 0 offen
    s_waitcnt vmcnt(0)
    v_lshlrev_b32 v3, 3, v0
    global_store_dwordx2 v3, v[1:2], s[6:7]
    v_lshlrev_b32 v12, 4, v0
    v_mov_b32 v13, s5
    v_add_co_u32 v12, vcc, s4, v12
    v_addc_co_u32 v13, vcc, v13, 0, vcc
    global_load_dwordx4 v[12:15], v[12:13], off
    s_waitcnt vmcnt(0)
    v_lshlrev_b32 v3, 4, v0
    v_add_u32 v3, 0x200, v3
    global_store_dwordx4 v3, v[12:15], s[6:7]"""
    _, out = _run(body, 256, 128 + 256, 0, 1024)
    np.testing.assert_array_equal(out[:128], np.arange(128) + 1)
    np.testing.assert_array_equal(out[128:], np.arange(256) + 1)


def test_typed_loads_are_checked_all_or_nothing():
    # buffer_load_format_xyzw (32-bit float components): lane 6's four dwords straddle
    # num_records 100 (offset 96): all four read 0, unlike buffer_load_dwordx4's per-dword rule
    w3 = (14 << 15) | (7 << 12) | 0xFAC  # DATA_FORMAT 32_32_32_32, NUM_FORMAT float, dst_sel xyzw
    body = """v_lshlrev_b32 v1, 4, v0
    buffer_load_format_xyzw v[2:5], v1, s[8:11], 0 offen
    s_waitcnt vmcnt(0)
    global_store_dwordx4 v1, v[2:5], s[6:7]"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BufferOutOfRangeWarning)
        _, out = _run(body, 25, 256, 0, 100, w3)
    want = np.arange(256) + 1
    want[np.arange(256) >= 24] = 0
    np.testing.assert_array_equal(out, want)
