"""Issue 9, runtime side: bad code objects and bad launches are refused before anything
runs; emulator faults carry kernel, pc, wave, instruction and the offending address or
register, and leave the other device buffers intact."""

from __future__ import annotations

import struct
import warnings

import numpy as np
import pytest

from test_runtime_support import _kernel, build, hidden_v5
from vlpc.runtime import get_device, load_code_object
from vlpc.runtime.code_object import CodeObjectError
from vlpc.runtime.device import LaunchError
from vlpc.runtime.emulator.errors import (OutOfBoundsAccess, RegisterRangeError, RunawayKernel,
                                          WaitcntViolation)
from vlpc.runtime.toolchain import assemble_and_link

SMALL = """builtin.module {
  func.func @sgemm(%a: memref<64x16xf32>, %b: memref<256x16xf32>, %c: memref<64x256xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<64x16xf32>, memref<256x16xf32>, memref<64x256xf32>, f32, f32
    func.return
  }
}
"""


@pytest.fixture(scope="module")
def sgemm():
    import vlpc

    compiled = vlpc.compile(SMALL, filename="small.mlir")
    return compiled, load_code_object(compiled.code_object)


@pytest.fixture
def dev():
    return get_device("emulator")


def _sgemm_args(dev, m=64, n=256, k=16, a_rows=None):
    a = dev.upload(np.ones(((a_rows or m), k), np.float32))
    b = dev.upload(np.ones((n, k), np.float32))
    c = dev.upload(np.full((m, n), 7, np.float32))
    return [a, b, c, np.int32(m), np.int32(n), np.int32(k), np.int32(k), np.int32(k), np.int32(n),
            np.float32(1), np.float32(0.5)]


# -- code objects ----------------------------------------------------------------------------


def _patched(data: bytes, offset: int, value: bytes) -> bytes:
    d = bytearray(data)
    d[offset:offset + len(value)] = value
    return bytes(d)


def test_corrupt_code_objects(sgemm):
    data = sgemm[0].code_object
    note = data.find(b"AMDGPU\0\0")
    cases = {
        "wrong machine (x86-64)": (_patched(data, 18, struct.pack("<H", 62)), "not EM_AMDGPU"),
        "code object v3": (_patched(data, 8, b"\x01"), "unsupported code object version v3"),
        "unknown ABI version": (_patched(data, 8, b"\x09"), "unsupported code object version"),
        "not HSA": (_patched(data, 7, b"\x00"), "not AMDGPU_HSA"),
        "relocatable object": (_patched(data, 16, struct.pack("<H", 1)), "not ET_DYN"),
        "missing metadata note": (_patched(data, note, b"AMDGPX\0\0"), "missing AMDGPU metadata note"),
        "truncated": (data[: len(data) // 2], "truncated"),
        "big endian": (_patched(data, 5, b"\x02"), "not a little-endian ELF"),
    }
    for name, (bad, match) in cases.items():
        with pytest.raises(CodeObjectError, match=match):
            load_code_object(bad)
    with pytest.raises(LaunchError, match="not EM_AMDGPU"):  # the device refuses it the same way
        get_device("emulator").launch(cases["wrong machine (x86-64)"][0], "sgemm")


def test_huge_or_odd_program_headers(sgemm):
    """Mutated program headers used to reach bytearray(2**63) (MemoryError) or an odd alignment."""
    data = sgemm[0].code_object
    e_phoff, = struct.unpack_from("<Q", data, 32)
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 54)
    load = next(e_phoff + i * e_phentsize for i in range(e_phnum)
                if struct.unpack_from("<I", data, e_phoff + i * e_phentsize)[0] == 1)
    with pytest.raises(CodeObjectError, match="span"):
        load_code_object(_patched(data, load + 40, struct.pack("<Q", 2**62)))  # p_memsz
    with pytest.raises(CodeObjectError, match="p_memsz .* smaller than its p_filesz"):
        load_code_object(_patched(data, load + 40, struct.pack("<Q", 1)))
    with pytest.raises(CodeObjectError, match="p_align 4141 is not a power of two"):
        load_code_object(_patched(data, load + 48, struct.pack("<Q", 4141)))


def test_kernel_not_found(sgemm, dev):
    with pytest.raises(LaunchError, match=r"kernel 'sgem' not found .*available: sgemm"):
        dev.launch(sgemm[1], "sgem", args=_sgemm_args(dev))


# -- launches refused before anything runs ----------------------------------------------------


def test_bad_launches_of_a_good_kernel(sgemm, dev):
    compiled, co = sgemm
    cfg = compiled.kernel().launch(64, 256, 16)
    args = _sgemm_args(dev)
    before = [dev.download(b).copy() for b in args[:3]]

    def refused(match, **kw):
        kw.setdefault("grid", cfg.grid)
        kw.setdefault("block", cfg.block)
        kw.setdefault("args", args)
        n = dev.launches
        with pytest.raises(LaunchError, match=match) as e:
            dev.launch(co, "sgemm", **kw)
        assert "\n" not in str(e.value)
        assert dev.launches == n  # nothing ran ...
        for buf, old in zip(args[:3], before):  # ... and nothing was written
            np.testing.assert_array_equal(dev.download(buf), old)

    refused("grid dimension x is 0", grid=(0, 1, 1))
    refused(r"block \(2048, 1, 1\) has 2048 work-items, over the kernel's .max_flat_workgroup_size of "
            + str(compiled.kernel().launch_info["workgroup_size"]), block=(2048, 1, 1))
    refused("block dimension x is -256", block=(-256, 1, 1))
    refused("grid must be up to 3 integers", grid="x")
    refused(r"argument 0 'A' of 'sgemm': buffer has 4096 bytes, the launch needs 8192",
            buffer_sizes={0: 8192})
    refused(r"argument 2 'C' of 'sgemm': buffer has 65536 bytes, the launch needs 131072",
            buffer_sizes={"C": 131072})
    refused("takes 11 arguments", args=args[:10])
    refused("argument 'M': float32 given for int", args=args[:3] + [np.float32(64)] + args[4:])
    refused("argument 'alpha': int32 given for float", args=args[:9] + [np.int32(1), args[10]])
    refused("argument 'A': a NumPy array given for a buffer; upload it", args=[np.ones(4)] + args[1:])
    refused("argument 'M': 4294967296 does not fit in 4 bytes", args=args[:3] + [2**32] + args[4:])
    gone = dev.alloc(16)
    dev.free(gone)
    refused("is a freed buffer", args=[gone] + args[1:])
    # the same launch, correctly: runs, C = 16 + 0.5 * 7
    dev.launch(co, "sgemm", grid=cfg.grid, block=cfg.block, args=args,
               buffer_sizes={i: b.nbytes for i, b in enumerate(args[:3])})
    np.testing.assert_array_equal(dev.download(args[2]), np.full((64, 256), 19.5, np.float32))


def test_too_small_buffer_without_buffer_sizes_faults_and_keeps_other_buffers(sgemm, dev):
    """Without buffer_sizes the emulator's checker catches the overrun: a located fault,
    and the buffers the kernel does not write keep their contents."""
    compiled, co = sgemm
    cfg = compiled.kernel().launch(64, 256, 16)
    args = _sgemm_args(dev, a_rows=32)  # A has 32 of its 64 rows
    bystander = dev.upload(np.arange(1000, dtype=np.float32))
    a_before, b_before = dev.download(args[0]).copy(), dev.download(args[1]).copy()
    with pytest.raises(OutOfBoundsAccess) as ei:
        dev.launch(co, "sgemm", grid=cfg.grid, block=cfg.block, args=args)
    e = ei.value
    assert e.kernel == "sgemm" and e.pc is not None and e.wave is not None and e.instruction
    assert e.fault_address is not None and "s_load" in e.instruction
    assert "sgemm" in str(e) and f"pc +0x{e.pc:x}" in str(e)
    np.testing.assert_array_equal(dev.download(bystander), np.arange(1000, dtype=np.float32))
    np.testing.assert_array_equal(dev.download(args[0]), a_before)
    np.testing.assert_array_equal(dev.download(args[1]), b_before)


# -- emulator faults through the device ---------------------------------------------------------

ONE_BUFFER_ARGS = """\
      - { .name: p, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global, .type_name: 'uint*' }
      - { .name: q, .offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global, .type_name: 'uint*' }
"""
DIRECTIVES = """\
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1"""


def _faulty(name: str, body: str, vgprs: int = 8) -> bytes:
    hidden, size = hidden_v5(16)
    return assemble_and_link(_kernel(name, body, DIRECTIVES, ONE_BUFFER_ARGS + hidden, kernarg_size=size,
                                     vgprs=vgprs, sgprs=16), "gfx906", source_name=f"{name}.s")


# q[i] = i for the lanes, then read p[v0 + 4M] (16 MiB past p: in no allocation)
OOB = """\
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
  v_lshlrev_b32_e32 v1, 2, v0
  global_store_dword v1, v0, s[6:7]
  v_add_u32_e32 v2, 0x1000000, v1
  global_load_dword v3, v2, s[4:5]
  s_waitcnt vmcnt(0)
  s_endpgm"""
NO_WAIT = """\
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32_e32 v1, 2, v0
  global_load_dword v3, v1, s[4:5]
  s_endpgm"""
RUNAWAY = """\
.Lloop:
  s_branch .Lloop
  s_endpgm"""
REGISTER = """\
  v_mov_b32_e32 v40, 1
  s_endpgm"""


def test_out_of_bounds_fault_details_and_other_buffers_intact(dev):
    co = load_code_object(_faulty("oob", OOB))
    p = dev.upload(np.arange(64, dtype=np.uint32))
    q = dev.upload(np.full(64, 0xDEAD, np.uint32))
    others = [dev.upload(np.arange(n, dtype=np.float32) * 3) for n in (1, 1000, 4096)]
    with pytest.raises(OutOfBoundsAccess) as ei:
        dev.launch(co, "oob", grid=1, block=64, args=[p, q])
    e = ei.value
    assert e.kernel == "oob" and e.wave == ((0, 0, 0), 0)
    assert e.instruction.startswith("global_load_dword v3, v2, s[4:5]")
    assert e.pc == 32  # s_load (8) + s_waitcnt (4) + shift (4) + store (8) + add with a literal (8)
    assert e.fault_address == p.address + 0x1000000
    assert "bytes past the end of" in str(e) and "oob" in str(e)
    np.testing.assert_array_equal(dev.download(p), np.arange(64, dtype=np.uint32))
    for buf, n in zip(others, (1, 1000, 4096)):
        np.testing.assert_array_equal(dev.download(buf), np.arange(n, dtype=np.float32) * 3)
    # the device still works after the fault: the vadd support kernel runs
    vadd = load_code_object(build("vadd"))
    a, b, c = (dev.upload(np.full(64, v, np.float32)) for v in (1, 2, 0))
    dev.launch(vadd, "vadd", grid=1, block=64, args=[a, b, c, np.int32(64)])
    np.testing.assert_array_equal(dev.download(c), np.full(64, 3, np.float32))


@pytest.mark.parametrize("name,body,kind,opts,detail", [
    ("nowait", NO_WAIT, WaitcntViolation, {}, "s[4:5]"),
    ("runaway", RUNAWAY, RunawayKernel, {"instruction_budget": 5000}, "s_branch"),
    ("regs", REGISTER, RegisterRangeError, {}, "v40"),
])
def test_fault_kinds_carry_location(name, body, kind, opts, detail):
    dev = get_device("emulator", **opts)
    co = load_code_object(_faulty(name, body))
    p, q = dev.upload(np.arange(64, dtype=np.uint32)), dev.upload(np.arange(64, dtype=np.uint32))
    bystander = dev.upload(np.ones(100, np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(kind) as ei:
            dev.launch(co, name, grid=2, block=64, args=[p, q])
    e = ei.value
    assert e.kernel == name and e.pc is not None and e.wave is not None and e.instruction
    assert detail in str(e), str(e)
    np.testing.assert_array_equal(dev.download(bystander), np.ones(100, np.float32))
    np.testing.assert_array_equal(dev.download(p), np.arange(64, dtype=np.uint32))
