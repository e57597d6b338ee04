// RUN: vlpc opt %s -p gcn-insert-hazard-nops | filecheck %s
// A VALU instruction writes an SGPR (v_readfirstlane_b32) and a VMEM instruction
// then reads it as its address: 5 wait states are needed (GCNHazardRecognizer),
// the s_mov in between provides one, so s_nop 3 (4 wait states) is inserted.
// Without the VALU producer nothing is inserted.
// CHECK: "gcn.v_readfirstlane_b32"
// CHECK-NEXT: "gcn.s_mov_b32"
// CHECK-NEXT: "gcn.reg_sequence"
// CHECK-NEXT: "gcn.s_nop"() <{count = 3 : i64}> {comment = "hazard valu-sgpr-then-vmem"}
// CHECK-NEXT: "gcn.global_load_dword"
builtin.module {
  "gcn.kernel"() <{sym_name = "k"}> ({
  ^bb0(%kp: !gcn.sgpr<s[0:1]>, %tid: !gcn.vgpr<v0>):
    %lo = "gcn.v_readfirstlane_b32"(%tid) : (!gcn.vgpr<v0>) -> !gcn.sgpr<s2>
    %hi = "gcn.s_mov_b32"() <{imm = 0 : i64}> : () -> !gcn.sgpr<s3>
    %s = "gcn.reg_sequence"(%lo, %hi) : (!gcn.sgpr<s2>, !gcn.sgpr<s3>) -> !gcn.sgpr<s[2:3]>
    %d = "gcn.global_load_dword"(%tid, %s) <{offset = 0 : i64}> : (!gcn.vgpr<v0>, !gcn.sgpr<s[2:3]>) -> !gcn.vgpr<v8>
    // The second load reads s[0:1], which no VALU wrote: no s_nop between the two loads.
    // CHECK-NOT: gcn.s_nop
    // CHECK: "gcn.global_load_dword"
    // CHECK-NOT: gcn.s_nop
    // CHECK: "gcn.s_endpgm"
    %e = "gcn.global_load_dword"(%tid, %kp) <{offset = 0 : i64}> : (!gcn.vgpr<v0>, !gcn.sgpr<s[0:1]>) -> !gcn.vgpr<v9>
    "gcn.s_endpgm"() : () -> ()
  }) {arg_roles = ["kernarg_segment_ptr", "workitem_id_x"]} : () -> ()
}
