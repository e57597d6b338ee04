"""vlpc.runtime.kernargs: the one kernarg packer, hidden arguments and AQL packets."""

from __future__ import annotations

import struct
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from test_runtime_support import build
from vlpc.runtime import KernargError, LaunchGeometry, load_code_object, pack_kernargs
from vlpc.runtime.code_object import KernelArg, KernelMetadata
from vlpc.runtime.kernargs import (AMD_QUEUE_OFFSETS, DISPATCH_PACKET_OFFSETS, DispatchPacket,
                                   HiddenValues, build_dispatch_packet, build_queue_object,
                                   explicit_size, hidden_value)

HIP_DATA = Path(__file__).parents[1] / "data" / "hip"


@pytest.fixture(scope="module")
def vadd():
    return load_code_object(build("vadd")).kernel("vadd")


def _u(data: bytes, off: int, size: int) -> int:
    return int.from_bytes(data[off:off + size], "little")


def _md(args, size, name="k"):
    return KernelMetadata(name=name, symbol=f"{name}.kd", args=tuple(args), kernarg_segment_size=size,
                          kernarg_segment_align=8, group_segment_fixed_size=0,
                          private_segment_fixed_size=0, wavefront_size=64, sgpr_count=16,
                          vgpr_count=8, max_flat_workgroup_size=1024)


def test_vadd_layout_and_hidden(vadd):
    a, b, c = (SimpleNamespace(address=0x1_0000_1000 * (i + 1)) for i in range(3))
    launch = LaunchGeometry(grid=(3, 2, 1), block=(64, 2, 1), dynamic_lds=128)
    ka = pack_kernargs(vadd, [a, b, c, np.int32(-5)], launch,
                       hidden=HiddenValues(queue_ptr=0xABCDEF00))
    assert len(ka) == vadd.metadata.kernarg_segment_size == 288
    assert [_u(ka, o, 8) for o in (0, 8, 16)] == [a.address, b.address, c.address]
    assert struct.unpack_from("<i", ka, 24)[0] == -5
    assert ka[28:32] == bytes(4)  # padding stays zero
    assert [_u(ka, 32 + 4 * i, 4) for i in range(3)] == [3, 2, 1]       # hidden_block_count
    assert [_u(ka, 44 + 2 * i, 2) for i in range(3)] == [64, 2, 1]      # hidden_group_size
    assert [_u(ka, 50 + 2 * i, 2) for i in range(3)] == [0, 0, 0]       # hidden_remainder
    assert [_u(ka, 72 + 8 * i, 8) for i in range(3)] == [0, 0, 0]       # hidden_global_offset
    assert _u(ka, 96, 2) == 3                                          # hidden_grid_dims (HIP: 3)
    assert _u(ka, 152, 4) == 128                                       # hidden_dynamic_lds_size
    assert _u(ka, 232, 8) == 0xABCDEF00                                # hidden_queue_ptr


def test_python_scalars_and_raw_addresses(vadd):
    launch = LaunchGeometry((1, 1, 1), (64, 1, 1))
    ka = pack_kernargs(vadd, [0x1234, None, np.uint64(7), 100], launch)
    assert _u(ka, 0, 8) == 0x1234 and _u(ka, 8, 8) == 0 and _u(ka, 16, 8) == 7
    assert _u(ka, 24, 4) == 100


def test_wrong_count(vadd):
    launch = LaunchGeometry((1, 1, 1), (64, 1, 1))
    with pytest.raises(KernargError, match=r"takes 4 arguments \(a, b, c, n\), 3 given"):
        pack_kernargs(vadd, [1, 2, 3], launch)
    with pytest.raises(KernargError, match="must be a list"):
        pack_kernargs(vadd, "abc", launch)


def test_type_checks_name_the_argument(vadd):
    launch = LaunchGeometry((1, 1, 1), (64, 1, 1))
    bufs = [0, 0, 0]
    with pytest.raises(KernargError, match="argument 'n': int64 is 8 bytes, the kernel takes 4"):
        pack_kernargs(vadd, bufs + [np.int64(1)], launch)
    with pytest.raises(KernargError, match="argument 'n': float32 given for int"):
        pack_kernargs(vadd, bufs + [np.float32(1)], launch)
    with pytest.raises(KernargError, match="argument 'n': float 1.5 given for int"):
        pack_kernargs(vadd, bufs + [1.5], launch)
    with pytest.raises(KernargError, match="argument 'n': 4294967296 does not fit"):
        pack_kernargs(vadd, bufs + [2**32], launch)
    with pytest.raises(KernargError, match="argument 'a': a NumPy array given for a buffer"):
        pack_kernargs(vadd, [np.zeros(4), 0, 0, 1], launch)
    with pytest.raises(KernargError, match="argument 'b': expected a device buffer"):
        pack_kernargs(vadd, [0, "x", 0, 1], launch)
    with pytest.raises(KernargError, match="argument 'n': a buffer given"):
        pack_kernargs(vadd, [0, 0, 0, SimpleNamespace(address=4)], launch)
    with pytest.raises(KernargError, match="argument 'n': cannot pass list"):
        pack_kernargs(vadd, bufs + [[1]], launch)


def test_by_value_conversion_by_size_and_type_name():
    args = [KernelArg("f", 0, 4, "by_value", "float"), KernelArg("d", 8, 8, "by_value", "double"),
            KernelArg("h", 16, 2, "by_value", "half"), KernelArg("u", 20, 4, "by_value", "uint"),
            KernelArg("x", 24, 4, "by_value"), KernelArg("y", 32, 8, "by_value"),
            KernelArg("s", 40, 12, "by_value", "struct S")]
    md = _md(args, 56)
    launch = LaunchGeometry((1, 1, 1), (1, 1, 1))
    ka = pack_kernargs(md, [2, 0.1, 1.5, 2**32 - 1, -1, 0.25, b"abcdefghijkl"], launch)
    assert struct.unpack_from("<f", ka, 0)[0] == 2.0  # int converted for a float type
    assert struct.unpack_from("<d", ka, 8)[0] == 0.1
    assert struct.unpack_from("<e", ka, 16)[0] == 1.5
    assert _u(ka, 20, 4) == 2**32 - 1
    assert _u(ka, 24, 4) == 2**32 - 1  # -1 as two's complement
    assert struct.unpack_from("<d", ka, 32)[0] == 0.25  # float without type name: by size
    assert ka[40:52] == b"abcdefghijkl"
    launch_args = [np.float32(1), np.float64(2), np.float16(3), np.uint32(4), np.int32(5),
                   np.int64(6), np.zeros(3, np.int32).tobytes()]
    ka = pack_kernargs(md, launch_args, launch)
    assert struct.unpack_from("<f", ka, 0)[0] == 1.0 and struct.unpack_from("<d", ka, 8)[0] == 2.0
    with pytest.raises(KernargError, match="argument 'u': -1 does not fit"):
        pack_kernargs(md, [2, 0.1, 1.5, -1, -1, 0.25, bytes(12)], launch)
    with pytest.raises(KernargError, match="argument 's': 3 raw bytes given, the kernel takes 12"):
        pack_kernargs(md, [2, 0.1, 1.5, 1, -1, 0.25, b"abc"], launch)
    with pytest.raises(KernargError, match="argument 's': an int cannot fill a 12-byte value"):
        pack_kernargs(md, [2, 0.1, 1.5, 1, -1, 0.25, 5], launch)
    with pytest.raises(KernargError, match="argument 'f': int32 given for float"):
        pack_kernargs(md, [np.int32(1), 0.1, 1.5, 1, -1, 0.25, bytes(12)], launch)
    ambiguous = _md([KernelArg("z", 0, 16, "by_value")], 16)
    with pytest.raises(KernargError, match="a Python float is ambiguous"):
        pack_kernargs(ambiguous, [1.0], launch)


def test_unnamed_args_are_named_by_offset():
    md = _md([KernelArg(None, 0, 4, "by_value"), KernelArg(None, 8, 8, "global_buffer")], 16)
    with pytest.raises(KernargError, match="argument at offset 8: expected a device buffer"):
        pack_kernargs(md, [1, 2.5], LaunchGeometry((1, 1, 1), (1, 1, 1)))


def test_raw_bytes(vadd):
    launch = LaunchGeometry((2, 1, 1), (64, 1, 1))
    whole = bytes(range(256)) + bytes(32)
    assert pack_kernargs(vadd, whole, launch) == whole  # passed through untouched
    explicit = struct.pack("<QQQi", 1, 2, 3, 4)
    assert explicit_size(vadd) == 28 == len(explicit)
    ka = pack_kernargs(vadd, explicit, launch)  # explicit part only: hidden ones filled
    assert ka[:28] == explicit and _u(ka, 32, 4) == 2 and _u(ka, 44, 2) == 64
    with pytest.raises(KernargError, match="raw kernargs are 10 bytes; expected 288"):
        pack_kernargs(vadd, bytes(10), launch)


def test_metadata_outside_segment():
    md = _md([KernelArg("p", 8, 8, "global_buffer")], 12)
    with pytest.raises(KernargError, match="outside the 12-byte kernarg segment"):
        pack_kernargs(md, [0], LaunchGeometry((1, 1, 1), (1, 1, 1)))


def test_hidden_values_rocclr_rules():
    launch = LaunchGeometry((5, 3, 2), (16, 4, 2), dynamic_lds=64)
    hv = HiddenValues(hostcall_buffer=11, heap_v1=12, printf_buffer=13, multigrid_sync_arg=14,
                      shared_aperture_base=0x1_0000_0000_0000, private_aperture_base=0x2_0000_0000_0000,
                      global_offset=(1, 2, 3))
    assert [hidden_value(f"hidden_block_count_{a}", launch, hv) for a in "xyz"] == [5, 3, 2]
    assert [hidden_value(f"hidden_group_size_{a}", launch, hv) for a in "xyz"] == [16, 4, 2]
    assert [hidden_value(f"hidden_remainder_{a}", launch, hv) for a in "xyz"] == [0, 0, 0]
    assert [hidden_value(f"hidden_global_offset_{a}", launch, hv) for a in "xyz"] == [1, 2, 3]
    assert hidden_value("hidden_grid_dims", launch, hv) == 3
    assert hidden_value("hidden_dynamic_lds_size", launch, hv) == 64
    assert hidden_value("hidden_hostcall_buffer", launch, hv) == 11
    assert hidden_value("hidden_heap_v1", launch, hv) == 12
    assert hidden_value("hidden_printf_buffer", launch, hv) == 13
    assert hidden_value("hidden_multigrid_sync_arg", launch, hv) == 14
    assert hidden_value("hidden_shared_base", launch, hv) == 0x10000
    assert hidden_value("hidden_private_base", launch, hv) == 0x20000
    assert hidden_value("hidden_none", launch, hv) == 0
    assert hidden_value("hidden_something_new", launch, hv) == 0
    # fewer dimensions: the missing ones report 1 (counts, sizes) or 0 (remainders, offsets)
    one_d = LaunchGeometry((5, 3, 2), (16, 4, 2), dims=1)
    assert [hidden_value(f"hidden_block_count_{a}", one_d, hv) for a in "xyz"] == [5, 1, 1]
    assert [hidden_value(f"hidden_group_size_{a}", one_d, hv) for a in "xyz"] == [16, 1, 1]
    assert hidden_value("hidden_global_offset_y", one_d, hv) == 0


def test_hipcc_v5_hidden_layout():
    path = HIP_DATA / "saxpy.v5.hsaco"
    assert path.is_file(), f"{path} is committed to the repository and missing (rebuild: tests/data/hip/build.sh)"
    k = load_code_object(path).kernel("saxpy")  # (int n, float a, const float* x, float* y)
    launch = LaunchGeometry((4, 1, 1), (256, 1, 1))
    ka = pack_kernargs(k, [1000, np.float32(2.5), 0x1000, 0x2000], launch,
                       hidden=HiddenValues(queue_ptr=0x5000, hostcall_buffer=0x6000))
    assert len(ka) == 280
    assert _u(ka, 0, 4) == 1000 and struct.unpack_from("<f", ka, 4)[0] == 2.5
    assert _u(ka, 8, 8) == 0x1000 and _u(ka, 16, 8) == 0x2000
    assert _u(ka, 24, 4) == 4 and _u(ka, 28, 4) == 1 and _u(ka, 32, 4) == 1
    assert _u(ka, 36, 2) == 256 and _u(ka, 38, 2) == 1 and _u(ka, 40, 2) == 1
    assert _u(ka, 88, 2) == 3
    assert _u(ka, 104, 8) == 0x6000 and _u(ka, 224, 8) == 0x5000


def test_dispatch_packet_layout():
    launch = LaunchGeometry((3, 2, 1), (64, 4, 1))
    raw = build_dispatch_packet(launch, kernel_object=0x1_0000_05C0, kernarg_address=0x1_0000_2000,
                                private_segment_size=16, group_segment_size=4096,
                                completion_signal=0x77)
    assert len(raw) == 64
    o = DISPATCH_PACKET_OFFSETS
    header = _u(raw, o["header"], 2)
    assert header & 0xFF == 2  # HSA_PACKET_TYPE_KERNEL_DISPATCH
    assert _u(raw, o["setup"], 2) == 3
    assert [_u(raw, o[f"workgroup_size_{a}"], 2) for a in "xyz"] == [64, 4, 1]
    assert [_u(raw, o[f"grid_size_{a}"], 4) for a in "xyz"] == [192, 8, 1]
    assert _u(raw, o["private_segment_size"], 4) == 16
    assert _u(raw, o["group_segment_size"], 4) == 4096
    assert _u(raw, o["kernel_object"], 8) == 0x1_0000_05C0
    assert _u(raw, o["kernarg_address"], 8) == 0x1_0000_2000
    assert _u(raw, o["completion_signal"], 8) == 0x77
    p = DispatchPacket.unpack(raw)
    assert p.workgroup_size == (64, 4, 1) and p.grid_size == (192, 8, 1) and p.dimensions == 3
    assert p.pack() == raw
    with pytest.raises(KernargError, match="over 4294967295"):
        build_dispatch_packet(LaunchGeometry((2**31, 1, 1), (4, 1, 1)), kernel_object=0,
                              kernarg_address=0)


def test_queue_object():
    q = build_queue_object(ring_address=0x1234000, shared_aperture_base=0x1_0000_0000_0000,
                           private_aperture_base=0x2_0000_0000_0000)
    assert len(q) == 256
    o = AMD_QUEUE_OFFSETS
    assert _u(q, o["base_address"], 8) == 0x1234000 and _u(q, o["size"], 4) == 1
    assert _u(q, o["features"], 4) == 1
    assert _u(q, o["group_segment_aperture_base_hi"], 4) == 0x10000
    assert _u(q, o["private_segment_aperture_base_hi"], 4) == 0x20000
    assert _u(q, o["write_dispatch_id"], 8) == 1
