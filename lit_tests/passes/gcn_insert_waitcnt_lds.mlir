// RUN: vlpc opt %s -p gcn-insert-waitcnt | filecheck %s
// LDS operations count in lgkmcnt and return in order among themselves.

// A write, then two reads: the first read's result is ready once at most one LDS
// operation (the younger read) is outstanding.
// CHECK: "gcn.ds_write_b32"
// CHECK-NEXT: "gcn.ds_read_b32"
// CHECK-NEXT: "gcn.ds_read_b128"
// CHECK-NEXT: "gcn.s_waitcnt"() <{lgkmcnt = 1 : i64}>
// CHECK-NEXT: "gcn.v_fma_f32"
// CHECK-NEXT: "gcn.subreg"
// CHECK-NEXT: "gcn.s_waitcnt"() <{lgkmcnt = 0 : i64}>
// CHECK-NEXT: "gcn.v_fma_f32"
// s_barrier: the LDS write before it is retired first, so the other waves see it.
// CHECK-NEXT: "gcn.ds_write_b32"
// CHECK-NEXT: "gcn.s_waitcnt"() <{lgkmcnt = 0 : i64}>
// CHECK-NEXT: "gcn.s_barrier"
// With a scalar load outstanding the counter mixes in- and out-of-order returns:
// only lgkmcnt(0) is used for the LDS result.
// CHECK-NEXT: "gcn.ds_read_b32"
// CHECK-NEXT: "gcn.s_load_dword"
// CHECK-NEXT: "gcn.ds_read_b32"
// CHECK-NEXT: "gcn.s_waitcnt"() <{lgkmcnt = 0 : i64}>
// CHECK-NEXT: "gcn.v_fma_f32"
// Nothing outstanding at a barrier: no wait.
// CHECK-NEXT: "gcn.s_barrier"
// CHECK-NEXT: "gcn.s_endpgm"
builtin.module {
  "gcn.kernel"() <{sym_name = "k"}> ({
  ^bb0(%kp: !gcn.sgpr<s[0:1]>, %tid: !gcn.vgpr<v0>):
    "gcn.ds_write_b32"(%tid, %tid) <{offset = 0 : i64}> : (!gcn.vgpr<v0>, !gcn.vgpr<v0>) -> ()
    %a = "gcn.ds_read_b32"(%tid) <{offset = 4 : i64}> : (!gcn.vgpr<v0>) -> !gcn.vgpr<v1>
    %b = "gcn.ds_read_b128"(%tid) <{offset = 16 : i64}> : (!gcn.vgpr<v0>) -> !gcn.vgpr<v[4:7]>
    %f = "gcn.v_fma_f32"(%a, %a, %a) : (!gcn.vgpr<v1>, !gcn.vgpr<v1>, !gcn.vgpr<v1>) -> !gcn.vgpr<v2>
    %b0 = "gcn.subreg"(%b) <{offset = 0 : i64}> : (!gcn.vgpr<v[4:7]>) -> !gcn.vgpr<v4>
    %g = "gcn.v_fma_f32"(%b0, %f, %f) : (!gcn.vgpr<v4>, !gcn.vgpr<v2>, !gcn.vgpr<v2>) -> !gcn.vgpr<v2>
    "gcn.ds_write_b32"(%tid, %g) <{offset = 0 : i64}> : (!gcn.vgpr<v0>, !gcn.vgpr<v2>) -> ()
    "gcn.s_barrier"() : () -> ()
    %c = "gcn.ds_read_b32"(%tid) <{offset = 8 : i64}> : (!gcn.vgpr<v0>) -> !gcn.vgpr<v8>
    %s = "gcn.s_load_dword"(%kp) <{offset = 0 : i64}> : (!gcn.sgpr<s[0:1]>) -> !gcn.sgpr<s4>
    %d = "gcn.ds_read_b32"(%tid) <{offset = 12 : i64}> : (!gcn.vgpr<v0>) -> !gcn.vgpr<v9>
    %h = "gcn.v_fma_f32"(%c, %c, %c) : (!gcn.vgpr<v8>, !gcn.vgpr<v8>, !gcn.vgpr<v8>) -> !gcn.vgpr<v10>
    "gcn.s_barrier"() : () -> ()
    "gcn.s_endpgm"() : () -> ()
  }) {arg_roles = ["kernarg_segment_ptr", "workitem_id_x"]} : () -> ()
}
