"""The activations' quantization pre-kernel: A (M x K f16) to int8 blocks of 32, once per launch.

The int8-activation lane GEMV (passes/isel/quant_lane.py, ``QuantLaneInt8Builder``) multiplies int8
activations with ``v_dot4_i32_i8``.  Quantizing A inside every workgroup of the GEMV (as it does below
``LANE_INT8_PRE_FROM_M`` = 8 rows) costs each workgroup about 60 VALU operations and 4
``ds_swizzle_b32`` per 8 activations for the whole of A, once per 32 weight rows.  This kernel does it
once: ``<name>_quant_a`` runs first in the plan (launch info ``plan``, role ``quantize_a``) and writes
a **workspace** that the GEMV's staging copies into LDS, as llama.cpp runs ``quantize_q8_1``
(ggml-cuda/quantize.cu) before its MMVQ kernels.  Modeled (MI50 @ 1725 MHz, 16 x 4096 x 4096, % of the
streaming ceiling): Q4_0 16.0 -> 22.0, Q8_0 33.6 -> 38.5; at M = 2 and 4 the second launch costs more
than it saves (docs/quantized.md, "int8 activations").

**Workspace layout** (the plan's last kernel argument, allocated by the runtime:
``CompiledKernel.workspace_bytes`` = M ceil(K / 32) 40 bytes, launch info ``pack_bytes``):

* M rows of K int8 activations, row m at byte m K (block b of the row at 32 b): ``q``;
* then per row and block of 32 (row-major, 8 bytes each, at M K + 8 (m K / 32 + b)): the f32 step
  ``d_a`` and the i32 sum of the block's 32 ``q``;
* for the prefill GEMM's plan only (``pair_steps``; passes/isel/quant_gemm.py, 44 bytes a row and
  block in all): the steps once more, pair-major, block pair p of row m at M K + 8 M K / 32 + 8 (p M +
  m), so that one scalar load brings 4 rows' steps of a pair (one cache line).

llama.cpp's ``block_q8_1`` (ggml-common.h: an f16 pair ``ds`` = (d, d sum q) and 32 int8 ``qs``) is the
public model; here the step and the integer sum are kept apart (the sum exact: the GEMV scales it by
-8 for Q4_0's unsigned nibbles, by the zero point for the int4 formats, per block) and the int8
rows are contiguous, so that a GEMV workgroup's staging reads whole cache lines of a row.

**The quantization** (the same as vlpc.quant_run.quantize_activations, bit for bit): per block of
32, the largest |a| (f16 bit patterns with the sign cleared are ordered as integers:
``v_pk_max_i16``, then over the block's 4 work-items by two ``ds_swizzle_b32``), E its exponent
field, e = E - 14 (frexp's exponent: |a| < 2^e; E at least 1, so e >= -13), ``q = rint(a 2^(7 -
e))`` clamped to 127: ``v_pk_mul_f16`` by 2^s1 then ``v_pk_fma_f16`` by 2^s2 plus 1536 (s1 + s2 = 7 -
e, each an f16 power of two; one rounding, to an integer, since 1536 + v has ulp 1),
``v_pk_min_i16`` with 1536 + 127, ``v_perm_b32`` packs the low bytes (the int8 two's complement);
``d_a = 2^(e - 7)``, NaN for a block holding an inf or NaN (``v_fma_f32 (max |a|), 0, d_a``); the
sum of q by two ``v_dot4_i32_i8`` with 0x01010101 and two swizzles.

**Geometry**: a workgroup of :data:`QUANT_A_THREADS` work-items quantizes :data:`QUANT_A_TILE_K`
activations of one row of A, 8 a work-item (one ``global_load_dwordx4``), 4 work-items a block;
grid (M, ceil(K / QUANT_A_TILE_K)).  K is a multiple of 32 (the GEMV's formats: whole blocks).
"""

from __future__ import annotations

from xdsl.ir import Block, Region, SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import MatmulOp
from vlpc.passes.isel.dot import dot_kernarg_layout
from vlpc.passes.isel.emit import Emitter, add_launch_facts, kernel_interface, set_launch_plan

#: f16 1536 (x2): 1536 + v rounds v in [-512, 512] to an integer (ulp 1 in [1024, 2048)), its low byte
#: the int8 two's complement; 1536 + 127 the clamp; v_perm_b32 selector: the low bytes of 4 halves.
Q8_MAGIC, Q8_CLAMP, Q8_PACK = 0x66006600, 0x667F667F, 0x06040200
#: The launch fact ``a_quant`` of the kernels that multiply the quantized activations: A's blocks of 32
#: quantized to q = rint(a 2^(7 - e)) clamped to [-128, 127], e the exponent of the block's largest |a|
#: as frexp gives it (|a| < 2^e), at least -13 (vlpc.quant_run.quantize_activations bit for bit).
A_QUANT = "q8_pow2"
#: Work-items of a workgroup of the pre-kernel (4 waves) and the activations of a row it quantizes.
QUANT_A_THREADS = 256
QUANT_A_TILE_K = 8 * QUANT_A_THREADS
#: Bytes of the workspace per row of A and block of 32: 32 int8 values, f32 d_a, i32 sum q.
QUANT_A_BLOCK_BYTES = 40
#: ... and of the pair-major steps the prefill GEMM's plan adds (``build_quant_a``'s ``pair_steps``).
QUANT_A_PAIR_STEP_BYTES = 4


def int8_kernargs(shape, bias: bool = False, residual: str | None = None) -> list[dict]:
    """The kernel arguments of a kernel reading the pre-kernel's workspace (the int8 lane GEMV's, the
    prefill GEMM's): the dot layout (passes/isel/dot.py) with B the GGUF tensor's bytes and the
    workspace last."""
    out = dot_kernarg_layout(shape, workspace=True, bias=bias, residual=residual)
    for a in out:
        if a["name"] == "B":
            a["type"] = "char*"  # the GGUF tensor's bytes
    return out


def quant_a_plan(pre: gcn.KernelOp, kernels: list[gcn.KernelOp]) -> list[gcn.KernelOp]:
    """``[pre, *kernels]`` with the launch fact ``plan`` (their names in that order) on each: the
    pre-kernel runs first and the runtime allocates its workspace (``CompiledKernel.plan``)."""
    return set_launch_plan([pre, *kernels])


def with_a_quant(kernel: gcn.KernelOp) -> gcn.KernelOp:
    """``kernel`` with the launch fact ``a_quant`` (:data:`A_QUANT`: it multiplies the quantized
    activations; vlpc.quant_run.quant_verdict's reference)."""
    return add_launch_facts(kernel, a_quant=A_QUANT)


def quantize_pieces(e: Emitter, v: SSAValue, zero: SSAValue, k8: int | None
                    ) -> tuple[SSAValue, SSAValue, SSAValue | None]:
    """A work-item's 8 f16 activations ``v`` (4 dwords; 4 consecutive lanes a block of 32) as 8 int8
    q = rint(a 2^(7 - e)) clamped to 127, e the exponent of the block's largest |a| (module
    docstring): (the 2 dwords of q, the block's f32 step d_a (NaN where the block holds an inf or
    NaN), with ``k8`` the block's sum of q times the int8 ``k8`` byte (i32: 0x01010101 the sum, 0xF8F8F8F8
    -8 x it), else None).  ``zero``: a VGPR holding 0."""
    dws = [e.sub(v, t, 1) for t in range(4)]
    ab = [e(gcn.VAndB32Op(0x7FFF7FFF, x)).vdst for x in dws]  # |a| as bits: ordered as integers
    mx = e(gcn.VPkMaxI16Op(e(gcn.VPkMaxI16Op(ab[0], ab[1])).vdst, e(gcn.VPkMaxI16Op(ab[2], ab[3])).vdst)).vdst
    mx = e(gcn.VPkMaxI16Op(e.const(0x04000400), mx)).vdst  # at least 2^-14: e >= -13
    for d in (1, 2):
        mx = e(gcn.VPkMaxI16Op(e(gcn.DsSwizzleB32Op(mx, offset=0x1F | d << 10, comment=f"lane ^ {d}")).vdst,
                               mx)).vdst
    mx = e(gcn.VPkMaxI16Op(e(gcn.VLshrrevB32Op(16, mx)).vdst, mx)).vdst  # low half: the block's max |a|
    ex = e(gcn.VAndB32Op(31, e(gcn.VLshrrevB32Op(10, mx)).vdst)).vdst  # its f16 exponent field E
    # scale 2^s, s = 21 - E = s1 + s2 (each an f16 power of two): u = 31 - E, 2^s1 field (u >> 1) + 10,
    # 2^s2 field ((u + 1) >> 1) + 10
    u = e(gcn.VXorB32Op(31, ex)).vdst
    ten = e.const(10)

    def pk(field: SSAValue) -> SSAValue:
        x = e(gcn.VLshlrevB32Op(10, field)).vdst
        return e(gcn.VLshlAddU32Op(x, 16, x)).vdst

    p1 = pk(e(gcn.VAddU32Op(ten, e(gcn.VLshrrevB32Op(1, u)).vdst)).vdst)
    p2 = pk(e(gcn.VAddU32Op(ten, e(gcn.VLshrrevB32Op(1, e(gcn.VAddU32Op(e.const(1), u)).vdst)).vdst)).vdst)
    magic, clamp = e.const(Q8_MAGIC), e.const(Q8_CLAMP)
    ys = []
    for x in dws:
        y = e(gcn.VPkFmaF16Op(e(gcn.VPkMulF16Op(p1, x)).vdst, p2, magic)).vdst  # 1536 + rint(a 2^s)
        ys.append(e(gcn.VPkMinI16Op(clamp, y)).vdst)
    sel = e.const(Q8_PACK)
    q = [e(gcn.VPermB32Op(ys[1], ys[0], sel)).vdst, e(gcn.VPermB32Op(ys[3], ys[2], sel)).vdst]
    d_bits = e(gcn.VLshlAddU32Op(ex, 23, e.const(106 << 23))).vdst  # f32 2^(E - 21)
    d_a = e(gcn.VFmaF32Op(e(gcn.VCvtF32F16Op(mx)).vdst, zero, d_bits)).vdst  # (NaN for an inf / NaN max)
    c = None
    if k8 is not None:
        kc = e.const(k8)
        c = e(gcn.VDot4I32I8Op(q[1], kc, e(gcn.VDot4I32I8Op(q[0], kc, zero)).vdst)).vdst
        for d in (1, 2):
            c = e(gcn.VAddU32Op(e(gcn.DsSwizzleB32Op(c, offset=0x1F | d << 10, comment=f"lane ^ {d}")).vdst, c)).vdst
    return e(gcn.RegSequenceOp(q)).result, d_a, c


def build_quant_a(mm: MatmulOp, name: str, kernargs: list[dict] | None = None,
                  pair_steps: bool = False) -> gcn.KernelOp:
    """``<name>_quant_a`` (module docstring) for the GEMV ``mm`` (static M, K a multiple of 32, static
    lda): the same kernel arguments as the GEMV (``kernargs``; default the dot layout with the
    workspace last), grid (M, ceil(K / QUANT_A_TILE_K)), QUANT_A_THREADS work-items.  ``pair_steps``
    (the prefill GEMM's plan, K a multiple of 64): the steps d_a once more after the (d_a, sum q)
    words, pair-major: block pair p of row m at M K + 8 M K / 32 + 8 (p M + m), its two blocks' f32
    d_a (:data:`QUANT_A_PAIR_STEP_BYTES` more a row and block), so that the steps of consecutive rows
    of A for one pair share scalar-cache lines."""
    s = mm.shape()
    assert (s.m >= 1 or pair_steps) and s.k >= 1 and s.k % 32 == 0 and s.lda >= s.k, (s.m, s.k, s.lda)
    assert not pair_steps or s.k % 64 == 0, s.k
    kargs_list = kernargs if kernargs is not None else dot_kernarg_layout(s, workspace=True)
    kargs = {a["name"]: a["offset"] for a in kargs_list}
    types = [gcn.SGPRType.at(0, 2), gcn.SGPRType.at(2), gcn.SGPRType.at(3)]
    roles = ["kernarg_segment_ptr", "workgroup_id_x", "workgroup_id_y"]
    entry = Block(arg_types=[*types, gcn.VGPRType.at(0), gcn.exec_type()])
    kp, wg_x, wg_y = entry.args[:3]  # (x: the row of A, y: its tile of K)
    tid, exec0 = entry.args[-2:]
    e = Emitter(entry)
    ptr_a = e(gcn.SLoadDwordx2Op(kp, kargs["A"], comment="kernarg A")).sdst
    ws = e(gcn.SLoadDwordx2Op(kp, kargs["workspace"], comment="kernarg workspace")).sdst
    nblk = s.k // 32
    # M static, or given at launch (the prefill GEMM's companion: passes/isel/quant_gemm.py)
    m_arg = s.m if s.m >= 1 else e(gcn.SLoadDwordOp(kp, kargs["M"], comment="kernarg M")).sdst

    def m_times(x: int) -> SSAValue:
        return e.const(m_arg * x) if isinstance(m_arg, int) else e(gcn.SMulI32Op(m_arg, x)).sdst
    # the row's tile: A at m lda + k0 (f16), q at m K + k0, meta at M K + 8 (m K / 32 + k0 / 32)
    k0 = e.mul(wg_y, QUANT_A_TILE_K)
    a_off = e(gcn.SAddU32Op(e.mul(wg_x, 2 * s.lda), e.mul(k0, 2))).sdst
    a_tile = e.add64(ptr_a, a_off, 0, comment="A row m, tile k0")
    q_off = e(gcn.SAddU32Op(e.mul(wg_x, s.k), k0)).sdst
    q_tile = e.add64(ws, q_off, 0, comment="workspace q row m, tile k0")
    m_off = e(gcn.SAddU32Op(e.mul(wg_x, 8 * nblk), e(gcn.SLshrB32Op(k0, 2)).sdst)).sdst
    m_tile = e.add64(ws, e(gcn.SAddU32Op(m_times(s.k), m_off)).sdst, 0, comment="workspace meta row m")
    lanes = e(gcn.SAndB64Op(exec0, -1)).sdst
    if s.k % QUANT_A_TILE_K:  # the last tile: work-items past K / 8 idle (whole blocks: K % 32 == 0)
        left = e(gcn.SSubU32Op(e.const(s.k // 8), e.mul(wg_y, QUANT_A_THREADS), comment="pieces left")).sdst
        lanes = e(gcn.SAndB64Op(lanes, e(gcn.VCmpGtU32Op(left, tid)).sdst)).sdst
        e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))
    zero = e(gcn.VMovB32Op(0)).vdst
    voff = e(gcn.VLshlrevB32Op(4, tid)).vdst
    v = e(gcn.GlobalLoadDwordx4Op(voff, a_tile, comment="8 f16 activations")).vdst
    q, d_a, c = quantize_pieces(e, v, zero, 0x01010101)
    e(gcn.GlobalStoreDwordx2Op(e(gcn.VLshlrevB32Op(3, tid)).vdst, q, q_tile, comment="8 int8 activations"))
    # work-item 4b + j of block b: j = 0 d_a at 8 b, j = 1 the sum at 8 b + 4
    j = e(gcn.VAndB32Op(3, tid)).vdst
    lead = e(gcn.SAndB64Op(lanes, e(gcn.VCmpGtU32Op(e.const(2), j)).sdst)).sdst
    e(gcn.SAndB64Op(lead, -1, result_type=gcn.exec_type()))
    val = e(gcn.VCndmaskB32Op(c, d_a, e(gcn.VCmpGtU32Op(e.const(1), j)).sdst)).vdst  # j = 0: d_a
    m_at = e(gcn.VLshlAddU32Op(j, 2, e(gcn.VLshlrevB32Op(1, e(gcn.VAndB32Op(~3 & 0xFFFFFFFF, tid)).vdst)).vdst)).vdst
    e(gcn.GlobalStoreDwordOp(m_at, val, m_tile, comment="the block's d_a (j = 0), sum q (j = 1)"))
    if pair_steps:  # work-item 4b of block kb = k0 / 32 + b: d_a at 8 ((kb >> 1) M + m) + 4 (kb & 1) of the region
        first = e(gcn.SAndB64Op(lanes, e(gcn.VCmpGtU32Op(e.const(1), j)).sdst)).sdst
        e(gcn.SAndB64Op(first, -1, result_type=gcn.exec_type()))
        kb = e(gcn.VAddU32Op(e(gcn.SLshrB32Op(k0, 5)).sdst, e(gcn.VLshrrevB32Op(2, tid)).vdst)).vdst
        row = e(gcn.VMulLoU32Op(e(gcn.VLshrrevB32Op(1, kb)).vdst, e.reg(m_arg))).vdst
        at = e(gcn.VLshlAddU32Op(e(gcn.VAndB32Op(1, kb)).vdst, 2,
                                 e(gcn.VLshlrevB32Op(3, e(gcn.VAddU32Op(wg_x, row)).vdst)).vdst)).vdst
        p_tile = e.add64(ws, m_times(s.k + 8 * nblk), 0, comment="workspace: the pair-major steps")
        e(gcn.GlobalStoreDwordOp(at, d_a, p_tile, comment="the block's d_a, pair-major"))
    e(gcn.SEndpgmOp())
    kernel = gcn.KernelOp(name, Region(entry))
    kernel_interface(kernel, mm, [*roles, "workitem_id_x", "exec"], kargs_list, QUANT_A_THREADS,
                     (1, QUANT_A_TILE_K), 1, role="quantize_a", batch=0, c_dtype=s.c_type, k_pack=32,
                     pack_bytes=QUANT_A_BLOCK_BYTES + (QUANT_A_PAIR_STEP_BYTES if pair_steps else 0), ws_split=1, tile_m=1, tile_k=QUANT_A_TILE_K,
                     a_quant=A_QUANT)
    return kernel


__all__ = ["A_QUANT", "QUANT_A_BLOCK_BYTES", "QUANT_A_PAIR_STEP_BYTES", "build_quant_a", "int8_kernargs", "quant_a_plan",
           "quantize_pieces", "with_a_quant"]
