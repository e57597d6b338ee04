"""vlpc.runtime.code_object: ELF validation, kernel descriptors and metadata."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from test_runtime_support import build, empty_source
from vlpc.runtime import CodeObjectError, load_code_object
from vlpc.runtime.code_object import KernelDescriptor
from vlpc.runtime.toolchain import assemble_and_link, find_toolchain
from vlpc.targets import TargetId

HIP_DATA = Path(__file__).parents[1] / "data" / "hip"


def test_vadd_descriptor_matches_directives():
    co = load_code_object(build("vadd"))
    assert co.code_object_version == 5
    assert str(co.target_id) == "gfx906"
    assert co.target_id.settings == {"sramecc": None, "xnack": None}
    k = co.kernel("vadd")
    d = k.descriptor
    assert d.vgpr_count == 72  # .amdhsa_next_free_vgpr 72 (already a multiple of 4)
    assert d.granulated_workitem_vgpr_count == 17
    # 24 SGPRs + VCC (2) + XNACK mask (4, xnack "any") = 30 -> 4 blocks of 8
    assert d.sgpr_count == 32 and d.granulated_wavefront_sgpr_count == 3
    assert d.kernarg_size == 288 and d.group_segment_fixed_size == 0
    assert d.enable_sgpr_kernarg_segment_ptr and not d.enable_sgpr_dispatch_ptr
    assert not d.enable_sgpr_queue_ptr and not d.enable_sgpr_private_segment_buffer
    assert d.user_sgpr_count == 2 == d.user_sgprs_enabled
    assert d.enable_sgpr_workgroup_id_x and not d.enable_sgpr_workgroup_id_y
    assert not d.enable_sgpr_workgroup_id_z and not d.enable_sgpr_workgroup_info
    assert d.enable_vgpr_workitem_id == 0
    assert not d.enable_wavefront_size32 and not d.enable_private_segment
    # LLVM defaults: IEEE mode and DX10 clamp on, f64/f16 denormals kept.
    assert d.enable_ieee_mode and d.enable_dx10_clamp
    assert d.float_denorm_mode_16_64 == 3 and d.float_round_mode_32 == 0
    # entry = descriptor address + kernel_code_entry_byte_offset = the function symbol
    assert k.entry_offset == co.symbols["vadd"].value
    assert k.descriptor_offset == co.symbols["vadd.kd"].value
    assert k.entry_offset == k.descriptor_offset + d.kernel_code_entry_byte_offset
    assert k.entry_offset % 256 == 0


def test_geometry_descriptor_system_sgprs():
    d = load_code_object(build("geometry")).kernel("geometry").descriptor
    assert d.enable_sgpr_dispatch_ptr and d.enable_sgpr_kernarg_segment_ptr
    assert d.user_sgpr_count == 4
    assert d.enable_sgpr_workgroup_id_x and d.enable_sgpr_workgroup_id_y
    assert not d.enable_sgpr_workgroup_id_z
    assert d.enable_vgpr_workitem_id == 1
    assert d.group_segment_fixed_size == 512
    assert d.vgpr_count == 12  # 10 rounded up to the granule of 4


def test_more_descriptor_directives():
    src = empty_source(directives="""\
  .amdhsa_user_sgpr_private_segment_buffer 1
  .amdhsa_user_sgpr_queue_ptr 1
  .amdhsa_user_sgpr_dispatch_id 1
  .amdhsa_system_sgpr_workgroup_id_z 1
  .amdhsa_system_sgpr_workgroup_info 1
  .amdhsa_system_vgpr_workitem_id 2
  .amdhsa_float_round_mode_32 3
  .amdhsa_float_denorm_mode_32 0
  .amdhsa_ieee_mode 0
  .amdhsa_exception_int_div_zero 1""")
    d = load_code_object(assemble_and_link(src, "gfx906")).kernel("empty").descriptor
    assert d.enable_sgpr_private_segment_buffer and d.enable_sgpr_queue_ptr
    assert d.enable_sgpr_dispatch_id and not d.enable_sgpr_kernarg_segment_ptr
    assert d.user_sgpr_count == 4 + 2 + 2 == d.user_sgprs_enabled
    assert d.enable_sgpr_workgroup_id_z and d.enable_sgpr_workgroup_info
    assert d.enable_vgpr_workitem_id == 2
    assert d.float_round_mode_32 == 3 and d.float_denorm_mode_32 == 0
    assert not d.enable_ieee_mode and d.enable_exception_int_divide_by_zero
    assert d.vgpr_count == 4 and "enable_vgpr_workitem_id" in d.summary()


def test_descriptor_decode_fields():
    raw = bytearray(64)
    struct.pack_into("<III", raw, 0, 1024, 16, 288)
    struct.pack_into("<q", raw, 16, -192)
    struct.pack_into("<III", raw, 44, 0, (5 << 6) | 20, (1 << 0) | (6 << 1) | (1 << 7) | (1 << 9) | (2 << 11))
    struct.pack_into("<H", raw, 56, 0b1011)
    d = KernelDescriptor.decode(bytes(raw))
    assert (d.group_segment_fixed_size, d.private_segment_fixed_size, d.kernarg_size) == (1024, 16, 288)
    assert d.kernel_code_entry_byte_offset == -192
    assert d.vgpr_count == 84 and d.sgpr_count == 48 and d.sgpr_count_allocated == 48
    assert d.enable_private_segment and d.user_sgpr_count == 6
    assert d.enable_sgpr_workgroup_id_x and d.enable_sgpr_workgroup_id_z
    assert not d.enable_sgpr_workgroup_id_y and d.enable_vgpr_workitem_id == 2
    assert d.enable_sgpr_private_segment_buffer and d.enable_sgpr_dispatch_ptr
    assert d.enable_sgpr_kernarg_segment_ptr and not d.enable_sgpr_queue_ptr
    with pytest.raises(CodeObjectError, match="expected 64"):
        KernelDescriptor.decode(bytes(10))


def test_vadd_metadata():
    co = load_code_object(build("vadd"))
    md = co.kernel("vadd").metadata
    assert (md.name, md.symbol) == ("vadd", "vadd.kd")
    assert md.kernarg_segment_size == 288 and md.kernarg_segment_align == 8
    assert md.wavefront_size == 64 and md.max_flat_workgroup_size == 256
    assert (md.sgpr_count, md.vgpr_count) == (24, 72)
    assert [(a.name, a.offset, a.size, a.value_kind) for a in md.explicit_args] == [
        ("a", 0, 8, "global_buffer"), ("b", 8, 8, "global_buffer"),
        ("c", 16, 8, "global_buffer"), ("n", 24, 4, "by_value")]
    assert md.explicit_args[0].address_space == "global"
    assert md.explicit_args[0].type_name == "float*" and md.explicit_args[3].type_name == "int"
    hidden = {a.value_kind: a.offset for a in md.hidden_args}
    assert hidden["hidden_block_count_x"] == 32 and hidden["hidden_group_size_x"] == 44
    assert md.raw[".name"] == "vadd" and co.metadata["amdhsa.version"] == [1, 2]
    assert co.kernel("vadd").args == md.args


def test_load_image_lays_out_segments():
    co = load_code_object(build("vadd"))
    img = co.load_image(0x1_0000_0000)
    assert len(img) == co.image_size == len(co.image)
    k = co.kernel("vadd")
    assert img[k.descriptor_offset:k.descriptor_offset + 64] == k.descriptor.raw
    # first instruction: s_load_dwordx4 s[4:7], s[0:1], 0x0 (SMEM, 8 bytes)
    enc = find_toolchain().disassemble_encodings("s_load_dwordx4 s[4:7], s[0:1], 0x0\n",
                                                 TargetId.parse("gfx906"))
    expected = bytes(int(x, 16) for x in enc.split("encoding: [")[1].split("]")[0].split(","))
    assert img[k.entry_offset:k.entry_offset + 8] == expected
    assert k.entry_address(0x1000) == 0x1000 + k.entry_offset
    assert co.load_alignment >= 256


def test_path_and_describe(tmp_path):
    p = tmp_path / "k.hsaco"
    p.write_bytes(build("vadd"))
    co = load_code_object(p)
    assert co.source == str(p) and "vadd" in co.describe()
    assert co.kernel_names == ["vadd"]


@pytest.mark.parametrize("name,version,kernels", [
    ("saxpy.hsaco", 4, {"saxpy", "scale_add_stride"}),
    ("saxpy.v5.hsaco", 5, {"saxpy", "scale_add_stride"}),
    ("grid2d.v5.hsaco", 5, {"transpose_naive", "add2d"}),
    ("lds.hsaco", 4, {"block_reduce_sum", "transpose_tiled", "reverse_block_dyn"}),
])
def test_hipcc_code_objects(name, version, kernels):
    path = HIP_DATA / name
    assert path.is_file(), f"{path} is committed to the repository and missing (rebuild: tests/data/hip/build.sh)"
    co = load_code_object(path)
    assert co.code_object_version == version
    assert co.target_id.target.name == "gfx906"
    assert set(co.kernels) == kernels
    for k in co.kernels.values():
        assert k.metadata.wavefront_size == 64
        assert k.descriptor.kernarg_size == k.metadata.kernarg_segment_size
        assert k.descriptor.enable_sgpr_kernarg_segment_ptr
        # hipcc reads blockDim from the dispatch packet in v4, from hidden args in v5
        if k.name == "saxpy":
            assert k.descriptor.enable_sgpr_dispatch_ptr == (version == 4)
        hidden = {a.value_kind for a in k.metadata.hidden_args}
        assert ("hidden_group_size_x" in hidden) == (version == 5)


def test_clang_opencl_code_objects_v4_v5():
    """Code objects clang compiles itself (OpenCL C, code object v4 and v5)."""
    import subprocess
    import sys
    import tempfile

    src = ("__kernel void scale(__global float* y, float a, int n) {\n"
           "  int i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();\n"
           "  if (i < n) y[i] *= a;\n}\n")
    if find_toolchain().kind != "zig":
        pytest.skip("uses the ziglang clang driver")
    with tempfile.TemporaryDirectory() as tmp:
        cl = Path(tmp) / "k.cl"
        cl.write_text(src)
        for v in (4, 5):
            obj, so = Path(tmp) / f"k{v}.o", Path(tmp) / f"k{v}.hsaco"
            r = subprocess.run([sys.executable, "-m", "ziglang", "clang", "-x", "cl", "-cl-no-stdinc",
                                "-nogpulib", "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx906",
                                f"-mcode-object-version={v}", "-O2", "-c", str(cl), "-o", str(obj)],
                               capture_output=True, text=True)
            if r.returncode:
                pytest.skip(f"clang cannot compile OpenCL here: {r.stderr.strip()[:200]}")
            so.write_bytes(find_toolchain().link(obj.read_bytes()))
            co = load_code_object(so)
            assert co.code_object_version == v
            k = co.kernel("scale")
            assert [a.type_name for a in k.explicit_args] == ["float*", "float", "int"]
            assert [a.offset for a in k.explicit_args] == [0, 8, 12]


# -- errors ---------------------------------------------------------------------------------


def _patched(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new):]


def test_not_an_elf():
    rng = random.Random(1234)
    junk = bytes(rng.randrange(256) for _ in range(4096))
    with pytest.raises(CodeObjectError, match="not an ELF"):
        load_code_object(junk)
    with pytest.raises(CodeObjectError, match="not an ELF"):
        load_code_object(b"")


@pytest.mark.parametrize("cut", [3, 20, 100, 1000])
def test_truncated(cut):
    data = build("vadd")
    with pytest.raises(CodeObjectError) as e:
        load_code_object(data[:cut])
    msg = str(e.value)
    assert "truncated" in msg or "not an ELF" in msg
    assert "\n" not in msg


def test_truncated_segment():
    data = build("vadd")
    co = load_code_object(data)
    last = max(s.offset + s.filesz for s in co.segments)
    # keep the headers but cut the last loadable segment short
    with pytest.raises(CodeObjectError, match="truncated"):
        load_code_object(data[:last - 8] + b"")


def test_x86_elf_rejected():
    ls = Path("/bin/ls")
    if not ls.exists():
        pytest.skip("/bin/ls missing")
    with pytest.raises(CodeObjectError, match="not EM_AMDGPU"):
        load_code_object(ls)


def test_wrong_class_osabi_version_type():
    data = build("vadd")
    with pytest.raises(CodeObjectError, match="not a 64-bit ELF"):
        load_code_object(_patched(data, 4, b"\x01"))
    with pytest.raises(CodeObjectError, match="OS/ABI is SYSV"):
        load_code_object(_patched(data, 7, b"\x00"))
    with pytest.raises(CodeObjectError, match="unsupported code object version v3"):
        load_code_object(_patched(data, 8, b"\x01"))
    with pytest.raises(CodeObjectError, match="unsupported code object version"):
        load_code_object(_patched(data, 8, b"\x09"))
    # v4 in the ELF header but v5 metadata
    with pytest.raises(CodeObjectError, match="metadata version 1.2 does not match"):
        load_code_object(_patched(data, 8, b"\x02"))
    with pytest.raises(CodeObjectError, match="ET_DYN"):
        load_code_object(find_toolchain().assemble(empty_source(), TargetId.parse("gfx906")))
    with pytest.raises(CodeObjectError, match="cannot read"):
        load_code_object("/nonexistent/k.hsaco")


def _note_offset(data: bytes) -> int:
    i = data.find(b"AMDGPU\x00\x00")
    assert i > 12
    return i - 12  # namesz, descsz, type precede the name


def test_missing_metadata_note():
    data = build("vadd")
    off = _note_offset(data)
    namesz, descsz, ntype = struct.unpack_from("<III", data, off)
    assert (namesz, ntype) == (7, 32)
    stripped = _patched(data, off + 8, struct.pack("<I", 33))  # not NT_AMDGPU_METADATA any more
    with pytest.raises(CodeObjectError, match="missing AMDGPU metadata note"):
        load_code_object(stripped)
    renamed = _patched(data, off + 12, b"XMDGPU")
    with pytest.raises(CodeObjectError, match="missing AMDGPU metadata note"):
        load_code_object(renamed)


def test_garbled_metadata_note():
    data = build("vadd")
    off = _note_offset(data)
    desc = off + 12 + 8
    garbled = _patched(data, desc, b"\xc1" * 16)  # 0xc1 is never valid msgpack
    with pytest.raises(CodeObjectError, match="garbled AMDGPU metadata"):
        load_code_object(garbled)
    huge = _patched(data, off + 4, struct.pack("<I", 0x7FFFFFF0))  # descsz past the section
    with pytest.raises(CodeObjectError, match="garbled"):
        load_code_object(huge)


def test_descriptor_symbol_missing():
    data = assemble_and_link(empty_source(symbol="nothere.kd"), "gfx906")
    with pytest.raises(CodeObjectError, match="descriptor symbol 'nothere.kd' of kernel 'empty' is missing"):
        load_code_object(data)


def test_kernel_not_found_lists_names():
    co = load_code_object(build("vadd"))
    with pytest.raises(CodeObjectError, match=r"kernel 'vad' not found .*\(available: vadd\)"):
        co.kernel("vad")


def test_metadata_missing_required_key():
    data = build("geometry")
    assert data.count(b".wavefront_size") == 1
    # same length, so the msgpack stays well-formed but the required key is gone
    data = data.replace(b".wavefront_size", b".wavefront_sizX")
    with pytest.raises(CodeObjectError, match="kernel 'geometry' lacks .wavefront_size"):
        load_code_object(data)


def test_target_from_e_flags():
    src = empty_source().replace('"amdgcn-amd-amdhsa--gfx906"', '"amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-"')
    src = src.replace("amdhsa.target: amdgcn-amd-amdhsa--gfx906", "amdhsa.target: amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-")
    co = load_code_object(assemble_and_link(src, "gfx906:sramecc+:xnack-"))
    assert str(co.target_id) == "gfx906:sramecc+:xnack-"
