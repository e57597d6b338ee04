"""Each emulator checker fires with the right details; the corrected program does not."""

import warnings

import numpy as np
import pytest

from vlpc.runtime.emulator.errors import (EmulatorFault, LdsOutOfRange, MisalignedRegisterTuple,
                                          OutOfBoundsAccess, RegisterRangeError, RunawayKernel,
                                          UninitializedRegisterRead, UninitializedRegisterWarning,
                                          UnsupportedInstruction, WaitcntViolation)
from vlpc.runtime.emulator.memory import Memory
from vlpc.runtime.emulator.testing import run_program

U = np.uint32


def _setup(n=64):
    mem = Memory()
    buf = mem.alloc(4 * n, tag="buf")
    mem.write(buf, np.arange(n, dtype=U))
    karg = mem.alloc(16, tag="kernargs")
    mem.write(karg, np.array([buf], np.uint64))
    return mem, buf, karg


LOAD = """
s_load_dwordx2 s[4:5], s[0:1], 0x0
{wait1}
v_lshlrev_b32 v1, 2, v0
global_load_dword v2, v1, s[4:5]
{wait2}
v_add_u32 v3, v2, 1
global_store_dword v1, v3, s[4:5]
s_endpgm
"""


def test_waitcnt_violation_vmem_and_smem():
    mem, buf, karg = _setup()
    with pytest.raises(WaitcntViolation) as ei:
        run_program(LOAD.format(wait1="s_waitcnt lgkmcnt(0)", wait2=""), mem, kernarg=karg, name="k")
    e = ei.value
    assert e.kernel == "k" and "v2" in str(e) and e.instruction.startswith("v_add_u32")
    assert e.pc == 8 + 4 + 4 + 8 and e.wave == ((0, 0, 0), 0) and e.register == "v2"
    with pytest.raises(WaitcntViolation) as ei:
        run_program(LOAD.format(wait1="", wait2="s_waitcnt vmcnt(0)"), mem, kernarg=karg)
    assert "s[4:5]" in ei.value.instruction and ei.value.register in ("s4", "s5")
    # correct program
    run_program(LOAD.format(wait1="s_waitcnt lgkmcnt(0)", wait2="s_waitcnt vmcnt(0)"), mem, kernarg=karg)
    np.testing.assert_array_equal(mem.read(buf, 256).view(U), np.arange(64) + 1)


def test_waitcnt_violation_report_mode_warns_and_goes_on():
    from vlpc.runtime.emulator.errors import WaitcntViolationWarning
    mem, buf, karg = _setup()
    prog = LOAD.format(wait1="s_waitcnt lgkmcnt(0)", wait2="")
    with pytest.warns(WaitcntViolationWarning) as rec:
        run_program(prog, mem, kernarg=karg, name="k", waitcnt="report")
    msgs = [str(w.message) for w in rec if issubclass(w.category, WaitcntViolationWarning)]
    # reported once (kernel, pc, wave, instruction, register), not once per wave or lane
    assert len(msgs) == 1
    m = msgs[0]
    assert "'k'" in m and "pc +0x18" in m and "wave 0" in m and "v_add_u32" in m and "v2" in m
    # execution went on with the loaded value: every lane stored its element + 1
    np.testing.assert_array_equal(mem.read(buf, 256).view(U), np.arange(64) + 1)
    # strict still raises in report mode
    with pytest.raises(WaitcntViolation):
        run_program(prog, mem, kernarg=karg, waitcnt="report", strict=True)


def test_waitcnt_in_order_vmcnt_and_out_of_order_smem():
    mem, buf, karg = _setup()
    ok = """
    s_load_dwordx2 s[4:5], s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    v_mov_b32 v1, 0
    global_load_dword v2, v1, s[4:5]
    global_load_dword v3, v1, s[4:5] offset:4
    s_waitcnt vmcnt(1)
    v_mov_b32 v4, v2
    s_waitcnt vmcnt(0)
    v_mov_b32 v4, v3
    s_endpgm
    """
    run_program(ok, mem, kernarg=karg)
    bad = ok.replace("s_waitcnt vmcnt(1)\n    v_mov_b32 v4, v2", "s_waitcnt vmcnt(1)\n    v_mov_b32 v4, v3")
    with pytest.raises(WaitcntViolation):
        run_program(bad, mem, kernarg=karg)
    # two SMEM loads: lgkmcnt(1) proves nothing (out of order return)
    smem = """
    s_load_dwordx2 s[4:5], s[0:1], 0x0
    s_load_dwordx2 s[6:7], s[0:1], 0x8
    s_waitcnt lgkmcnt(1)
    s_mov_b32 s8, s4
    s_endpgm
    """
    with pytest.raises(WaitcntViolation):
        run_program(smem, mem, kernarg=karg)
    run_program(smem.replace("lgkmcnt(1)", "lgkmcnt(0)"), mem, kernarg=karg)


def test_out_of_bounds_global_access_names_lane_and_allocation():
    mem, buf, karg = _setup(16)   # 64 bytes only
    prog = LOAD.format(wait1="s_waitcnt lgkmcnt(0)", wait2="s_waitcnt vmcnt(0)")
    with pytest.raises(OutOfBoundsAccess) as ei:
        run_program(prog, mem, kernarg=karg)
    e = ei.value
    assert e.lanes[0] == 16 and "buf" in str(e) and "global_load_dword" in e.instruction
    # guarded by EXEC: fine
    guarded = prog.replace("global_load_dword v2, v1, s[4:5]",
                           "s_mov_b64 exec, 0xffff\nglobal_load_dword v2, v1, s[4:5]")
    run_program(guarded, mem, kernarg=karg)


def test_register_range_and_misaligned_tuple():
    mem, buf, karg = _setup()
    prog = "v_mov_b32 v40, 1\ns_endpgm\n"
    with pytest.raises(RegisterRangeError) as ei:
        run_program(prog, mem, kernarg=karg, vgpr_count=32)
    assert "v40" in str(ei.value)
    run_program(prog, mem, kernarg=karg, vgpr_count=44)
    with pytest.raises(RegisterRangeError):
        run_program("s_mov_b32 s50, 1\ns_endpgm\n", mem, kernarg=karg, sgpr_count=48)
    # a misaligned x4 tuple cannot be assembled: patch the encoding of s_load_dwordx4 s[4:7] -> s[6:9]
    from vlpc.runtime.emulator.core import DispatchConfig, run_dispatch
    from vlpc.runtime.emulator.testing import assemble_text
    code = bytearray(assemble_text("s_load_dwordx4 s[4:7], s[0:1], 0x0\ns_waitcnt lgkmcnt(0)\ns_endpgm\n"))
    w = int.from_bytes(code[0:4], "little")
    w = (w & ~(0x7F << 6)) | (6 << 6)
    code[0:4] = w.to_bytes(4, "little")
    addr = mem.alloc(len(code))
    mem.write(addr, bytes(code))
    cfg = DispatchConfig("mis", bytes(code), addr, addr, (1, 1, 1), (64, 1, 1),
                         user_sgpr_kernarg_segment_ptr=True, kernarg_address=karg)
    with pytest.raises(MisalignedRegisterTuple) as ei:
        run_dispatch(mem, cfg)
    assert "s[6:9]" in str(ei.value)


def test_lds_out_of_range():
    prog = """
    v_lshlrev_b32 v1, 2, v0
    v_mov_b32 v2, 5
    ds_write_b32 v1, v2 offset:{off}
    s_waitcnt lgkmcnt(0)
    s_endpgm
    """
    with pytest.raises(LdsOutOfRange) as ei:
        run_program(prog.format(off=4), lds_bytes=256)
    assert "lane 63" in str(ei.value)
    run_program(prog.format(off=0), lds_bytes=256)


def test_runaway_kernel():
    prog = "loop:\ns_branch loop\ns_endpgm\n"
    with pytest.raises(RunawayKernel):
        run_program(prog, instruction_budget=1000)


def test_unsupported_instruction_names_mnemonic():
    # an image instruction (decoded and named from the ISA table, not emulated)
    with pytest.raises(UnsupportedInstruction) as ei:
        run_program("s_nop 0\nimage_load v[0:3], v[4:5], s[8:15] dmask:0xf unorm\ns_endpgm\n",
                    vgpr_count=8, sgpr_count=16)
    assert "image_load" in str(ei.value) and ei.value.pc == 4
    with pytest.raises(UnsupportedInstruction) as ei:
        run_program("v_interp_p1_f32 v0, v1, attr0.x\ns_endpgm\n", vgpr_count=8)
    assert "v_interp_p1_f32" in str(ei.value) and ei.value.pc == 0


def test_uninitialized_register_read_warning_and_strict():
    prog = "v_add_u32 v3, v5, v0\ns_endpgm\n"
    with pytest.warns(UninitializedRegisterWarning, match="v5"):
        run_program(prog)
    with pytest.raises(UninitializedRegisterRead) as ei:
        run_program(prog, strict=True)
    assert ei.value.register == "v5"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_program("v_mov_b32 v5, 1\nv_add_u32 v3, v5, v0\ns_endpgm\n", strict=True)


def test_faults_share_a_base_and_pickle():
    import pickle
    e = WaitcntViolation("x", kernel="k", pc=4, address=0x100, wave=((0, 0, 0), 1), instruction="s_nop 0")
    assert isinstance(e, EmulatorFault)
    e2 = pickle.loads(pickle.dumps(e))
    assert str(e2) == str(e) and e2.wave == e.wave
