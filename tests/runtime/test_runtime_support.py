"""Hand-written gfx906 kernels (assembly + code object v5 metadata) shared by the runtime tests.

``build(name)`` assembles and links one of them (cached per session) with
:func:`vlpc.runtime.toolchain.assemble_and_link`.
"""

from __future__ import annotations

import functools

from vlpc.runtime.emulator.testing import kernel_source
from vlpc.runtime.toolchain import assemble_and_link

def hidden_v5(start: int) -> tuple[str, int]:
    """Metadata lines for the standard v5 hidden block at ``start`` (8-aligned) and the
    kernarg segment size (start + 256), as clang lays them out."""
    rows = []
    for i, axis in enumerate("xyz"):
        rows.append((start + 4 * i, 4, f"hidden_block_count_{axis}"))
    for i, axis in enumerate("xyz"):
        rows.append((start + 12 + 2 * i, 2, f"hidden_group_size_{axis}"))
    for i, axis in enumerate("xyz"):
        rows.append((start + 18 + 2 * i, 2, f"hidden_remainder_{axis}"))
    for i, axis in enumerate("xyz"):
        rows.append((start + 40 + 8 * i, 8, f"hidden_global_offset_{axis}"))
    rows.append((start + 64, 2, "hidden_grid_dims"))
    rows.append((start + 120, 4, "hidden_dynamic_lds_size"))
    rows.append((start + 200, 8, "hidden_queue_ptr"))
    text = "".join(f"      - {{ .offset: {o}, .size: {s}, .value_kind: {k} }}\n" for o, s, k in rows)
    return text, start + 256


def _kernel(name: str, body: str, directives: str, args_md: str, *, kernarg_size: int,
            vgprs: int, sgprs: int, lds: int = 0, max_wg: int = 256, extra_md: str = "") -> str:
    return kernel_source(name, body, vgprs=vgprs, sgprs=sgprs, lds=lds, kernarg_size=kernarg_size,
                         directives=directives, args_md=args_md, extra_md=extra_md, max_wg=max_wg)


def vadd_source() -> str:
    """c[i] = a[i] + b[i] for i < n; i = workgroup_id.x * hidden_group_size_x + v0.

    User SGPRs: kernarg pointer s[0:1]; system SGPR: workgroup id x in s2.
    """
    hidden, size = hidden_v5(32)
    body = """\
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  s_load_dwordx2 s[8:9], s[0:1], 0x10
  s_load_dword s10, s[0:1], 0x18
  s_load_dword s11, s[0:1], 0x2c
  s_waitcnt lgkmcnt(0)
  s_and_b32 s11, s11, 0xffff
  s_mul_i32 s12, s2, s11
  v_add_u32_e32 v1, s12, v0
  v_cmp_gt_i32_e32 vcc, s10, v1
  s_and_saveexec_b64 s[14:15], vcc
  s_cbranch_execz .Lvadd_done
  v_lshlrev_b32_e32 v2, 2, v1
  global_load_dword v3, v2, s[4:5]
  global_load_dword v4, v2, s[6:7]
  s_waitcnt vmcnt(0)
  v_add_f32_e32 v3, v3, v4
  global_store_dword v2, v3, s[8:9]
.Lvadd_done:
  s_endpgm"""
    args = """\
      - { .name: a, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global, .type_name: 'float*' }
      - { .name: b, .offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global, .type_name: 'float*' }
      - { .name: c, .offset: 16, .size: 8, .value_kind: global_buffer, .address_space: global, .type_name: 'float*' }
      - { .name: n, .offset: 24, .size: 4, .value_kind: by_value, .type_name: int }
""" + hidden
    directives = """\
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1"""
    return _kernel("vadd", body, directives, args, kernarg_size=size, vgprs=72, sgprs=24)


def geometry_source() -> str:
    """Work-item 0 of every workgroup writes 8 dwords to out[wg_linear * 8 ...]:
    dispatch packet workgroup_size_x, _y, _z, grid_size_x, setup, then the kernargs'
    hidden_block_count_x, hidden_group_size_x, and its workgroup id x + 1000 * y.

    User SGPRs: dispatch ptr s[0:1], kernarg ptr s[2:3]; system SGPRs: workgroup
    id x in s4, y in s5.
    """
    hidden, size = hidden_v5(8)
    body = """\
  s_load_dwordx2 s[6:7], s[2:3], 0x0
  s_load_dword s8, s[0:1], 0x4
  s_load_dword s9, s[0:1], 0x8
  s_load_dword s10, s[0:1], 0xc
  s_load_dword s11, s[0:1], 0x0
  s_load_dword s12, s[2:3], 0x8
  s_load_dword s13, s[2:3], 0x14
  s_waitcnt lgkmcnt(0)
  v_cmp_eq_u32_e32 vcc, 0, v0
  s_and_saveexec_b64 s[18:19], vcc
  s_cbranch_execz .Lgeometry_done
  s_mul_i32 s16, s5, s12
  s_add_u32 s16, s16, s4
  s_lshl_b32 s16, s16, 5
  v_mov_b32_e32 v9, s16
  s_and_b32 s14, s8, 0xffff
  v_mov_b32_e32 v1, s14
  s_lshr_b32 s14, s8, 16
  v_mov_b32_e32 v2, s14
  s_and_b32 s14, s9, 0xffff
  v_mov_b32_e32 v3, s14
  v_mov_b32_e32 v4, s10
  s_lshr_b32 s14, s11, 16
  v_mov_b32_e32 v5, s14
  v_mov_b32_e32 v6, s12
  s_and_b32 s14, s13, 0xffff
  v_mov_b32_e32 v7, s14
  s_mul_i32 s14, s5, 1000
  s_add_u32 s14, s14, s4
  v_mov_b32_e32 v8, s14
  global_store_dword v9, v1, s[6:7]
  global_store_dword v9, v2, s[6:7] offset:4
  global_store_dword v9, v3, s[6:7] offset:8
  global_store_dword v9, v4, s[6:7] offset:12
  global_store_dword v9, v5, s[6:7] offset:16
  global_store_dword v9, v6, s[6:7] offset:20
  global_store_dword v9, v7, s[6:7] offset:24
  global_store_dword v9, v8, s[6:7] offset:28
.Lgeometry_done:
  s_endpgm"""
    args = """\
      - { .name: out, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global, .type_name: 'uint*' }
""" + hidden
    directives = """\
  .amdhsa_user_sgpr_dispatch_ptr 1
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1
  .amdhsa_system_sgpr_workgroup_id_y 1
  .amdhsa_system_vgpr_workitem_id 1"""
    return _kernel("geometry", body, directives, args, kernarg_size=size, vgprs=10, sgprs=24,
                   lds=512, max_wg=1024)


def empty_source(name: str = "empty", *, symbol: str | None = None, directives: str = "",
                 args_md: str = "      []\n", kernarg_size: int = 0) -> str:
    """A kernel that only ends; ``symbol`` overrides the metadata's ``.symbol``."""
    src = _kernel(name, "  s_endpgm", directives, args_md, kernarg_size=kernarg_size,
                  vgprs=1, sgprs=1)
    if symbol is not None:
        src = src.replace(f".symbol: {name}.kd", f".symbol: {symbol}")
    return src


SOURCES = {
    "vadd": vadd_source,
    "geometry": geometry_source,
    "empty": empty_source,
}


@functools.cache
def build(name: str) -> bytes:
    """The linked code object (bytes) of kernel source ``name`` in :data:`SOURCES`."""
    return assemble_and_link(SOURCES[name](), "gfx906", source_name=f"{name}.s")


def test_support_kernels_assemble():
    for name in SOURCES:
        assert build(name)[:4] == b"\x7fELF"
