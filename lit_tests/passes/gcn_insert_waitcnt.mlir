// RUN: vlpc opt %s -p gcn-insert-waitcnt | filecheck %s
// A hand-allocated kernel: two scalar loads, a vector load, uses in between.

// The first use of s[4:5] waits for all scalar loads (they return out of order).
// CHECK: "gcn.s_load_dwordx2"
// CHECK-NEXT: "gcn.s_load_dwordx2"
// CHECK-NEXT: "gcn.global_load_dwordx4"
// CHECK-NEXT: "gcn.global_load_dword"
// CHECK-NEXT: "gcn.subreg"
// CHECK-NEXT: "gcn.s_waitcnt"() <{lgkmcnt = 0 : i64}>
// CHECK-NEXT: "gcn.s_add_u32"
// CHECK-NEXT: "gcn.subreg"
// Vector loads return in order: the older load is ready after vmcnt(1).
// CHECK-NEXT: "gcn.s_waitcnt"() <{vmcnt = 1 : i64}>
// CHECK-NEXT: "gcn.v_fma_f32"
// CHECK-NEXT: "gcn.s_waitcnt"() <{vmcnt = 0 : i64}>
// CHECK-NEXT: "gcn.v_fma_f32"
// CHECK-NEXT: "gcn.s_endpgm"
builtin.module {
  "gcn.kernel"() <{sym_name = "k"}> ({
  ^bb0(%kp: !gcn.sgpr<s[0:1]>, %tid: !gcn.vgpr<v0>):
    %a = "gcn.s_load_dwordx2"(%kp) <{offset = 0 : i64}> : (!gcn.sgpr<s[0:1]>) -> !gcn.sgpr<s[4:5]>
    %b = "gcn.s_load_dwordx2"(%kp) <{offset = 8 : i64}> : (!gcn.sgpr<s[0:1]>) -> !gcn.sgpr<s[6:7]>
    %q = "gcn.global_load_dwordx4"(%tid, %kp) <{offset = 0 : i64}> : (!gcn.vgpr<v0>, !gcn.sgpr<s[0:1]>) -> !gcn.vgpr<v[4:7]>
    %d = "gcn.global_load_dword"(%tid, %kp) <{offset = 16 : i64}> : (!gcn.vgpr<v0>, !gcn.sgpr<s[0:1]>) -> !gcn.vgpr<v8>
    %lo = "gcn.subreg"(%a) <{offset = 0 : i64}> : (!gcn.sgpr<s[4:5]>) -> !gcn.sgpr<s4>
    %x = "gcn.s_add_u32"(%lo) <{imm = 1 : i64}> : (!gcn.sgpr<s4>) -> !gcn.sgpr<s9>
    %q0 = "gcn.subreg"(%q) <{offset = 0 : i64}> : (!gcn.vgpr<v[4:7]>) -> !gcn.vgpr<v4>
    %f = "gcn.v_fma_f32"(%q0, %x, %q0) : (!gcn.vgpr<v4>, !gcn.sgpr<s9>, !gcn.vgpr<v4>) -> !gcn.vgpr<v10>
    %g = "gcn.v_fma_f32"(%d, %x, %f) : (!gcn.vgpr<v8>, !gcn.sgpr<s9>, !gcn.vgpr<v10>) -> !gcn.vgpr<v10>
    "gcn.s_endpgm"() : () -> ()
  }) {arg_roles = ["kernarg_segment_ptr", "workitem_id_x"]} : () -> ()
}
