"""The prefill GEMM of GGUF Q8_0 / Q4_0 weights on gfx906, on int8 or f16 activations (docs/quantized.md).

``gemm.matmul %x, %w, %y, %alpha, %beta {layout = "NT", b_format = "q8_0"}`` with M above 16 rows and
at least a tile's (an LLM's prompt: M up to a few hundred tokens).  Both kernels are the quantized
GEMV's (:class:`~vlpc.passes.isel.quant.QuantGemvBuilder`: one lane per weight row, a column of C; A
in SGPRs; K over wavefront groups with the LDS reduction; the output with alpha, beta and the fused
epilogue) with the GEMM's plan (``quant_gemm_rows`` and ``quant_plan`` in dialects/gemm.py: a macro tile
of R rows x 64 columns, the last row tile moved up to end at row M) and a K loop of their own:

* :class:`QuantGemmInt8Builder` (M static, and the companion for an M given at launch): the plan's
  pre-kernel (passes/isel/quant_act.py) quantizes A to int8 blocks of 32 once into the workspace, then
  per block pair of B (one pair ahead) each block's weights become 8 int8 dwords once for the tile's
  32 rows, and per row 8 ``v_dot4_i32_i8`` with A's int8 as SGPRs (``s_load_dwordx16`` a row and
  pair), ``v_cvt_f32_i32``, ``v_mul_f32 d_a, d_w`` and one ``v_fma_f32``; 8 wavefront groups; the
  grouped workgroup order (:data:`INT8_WG_GROUP`).  Modeled 112.5 - 122.8 % of the f16 dot peak at
  M = 512 (MI50 @ 1725 MHz; the plan's reasons: docs/quantized.md, "Prefill").
* :class:`QuantGemmBuilder` (a split of K across workgroups, whose workspace holds its partials; the
  companion where lda is given at launch): f16 A as the scalar operand of ``v_dot2_f32_f16``, each
  block dequantized once, exactly, into 16 f16 pairs (the GEMV's ``v_perm_b32`` / ``v_pk_add_f16``),
  per row 16 dots from 0 and one ``v_fma_f32`` with the block's scale; A per block in batches of 4
  rows; R = 32 (Q4_0) or 28 (Q8_0) rows (:data:`~vlpc.dialects.gemm.QUANT_GEMM_F16_TILE_ROWS`), 16
  groups (63 / 64 VGPRs: 4 waves a SIMD).  Modeled 58.9 % (Q4_0) and 48.3 % (Q8_0) of the f16 dot peak
  at 512 x 4096 x 4096; its results stay within f32 accumulation of the exact weights.

Bounds: the f16 kernel's is the GEMV's, ``gamma_n(2^-24) sum_k |a_k| |w_k|`` with n = 16 + K / 32 +
L + 2 (vlpc/quant_run.py); the int8 kernel's the same against A quantized as the pre-kernel does
(launch fact ``a_quant``, ``vlpc.quant_run.quantize_activations``).  Q4_K, the int4 group formats and
the fused SwiGLU keep the GEMV's 16-row tiles (passes/isel/quant*.py).
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import (QUANT_GEMM_F16_LOCAL, QUANT_GEMM_F16_TILE_ROWS, QUANT_GEMM_LOCAL, QUANT_GEMM_TILE_ROWS,
                                QUANT_K_PAIR, MatmulOp, quant_gemm_rows)
from vlpc.passes.isel.emit import SMEM_IMM_MAX, Emitter, RowStepper, add_launch_facts, rows_kernel
from vlpc.passes.isel.quant_act import build_quant_a, int8_kernargs, quant_a_plan, with_a_quant
from vlpc.passes.isel.quant import (A_BATCH_ROWS, QuantGemvBuilder,
                                           a_row_loads, b_row_loads, block_pairs, dequant_constants, pipelined_k_loop, quant_kernels)

#: Block pairs of B in flight per lane ahead of the one computed.
QUANT_GEMM_B_AHEAD = 1


def quant_gemm_kernels(mm: MatmulOp, name: str, strategy: str = "sqc", schedule: str = "default",
                       forwarding: bool = True) -> list[gcn.KernelOp] | None:
    """The kernels of a ``gemm.matmul`` with ``b_format`` planned as the prefill GEMM (the macro
    tile of ``quant_gemm_rows``), or None when the GEMVs' kernels apply
    (passes/isel/dispatch.py's ``quant_format_kernels``)."""
    rows = quant_gemm_rows(mm.shape(), "swiglu" in mm.epilogue_ops())
    if not rows or mm.get_int_array("macro_tile")[0] != rows:
        return None
    if (mm.get_int("split_k") or 1) > 1:  # (the split's workspace is its partials': f16 activations)
        return quant_kernels(mm, name, strategy, schedule, forwarding, builder=QuantGemmBuilder)
    if INT8_WG_GROUP > 1:  # the grouped workgroup order (passes/isel/emit.py grouped_workgroup_ids)
        mm.set_int("wg_group", INT8_WG_GROUP)
    return with_quant_a(mm, name, quant_kernels(mm, name, strategy, schedule, forwarding, builder=QuantGemmInt8Builder))


def with_quant_a(mm: MatmulOp, name: str, kernels: list[gcn.KernelOp]) -> list[gcn.KernelOp]:
    """The plan ``<name>_quant_a`` (passes/isel/quant_act.py: A to int8 blocks in the workspace) then
    ``kernels`` (the int8 GEMM, :class:`QuantGemmInt8Builder`), launch fact ``plan`` on each."""
    return quant_a_plan(build_quant_a(mm, f"{name}_quant_a", QuantGemmInt8Builder(mm, name).kernargs(), pair_steps=True),
                        kernels)


def with_gemm_companion(mm: MatmulOp, name: str, kernels: list[gcn.KernelOp], schedule: str = "default",
                        forwarding: bool = True) -> list[gcn.KernelOp]:
    """``kernels`` (the GEMV's, M given at launch) and the prefill GEMM's companion ``<name>_rows<R>``,
    listed with the row-narrow companions (launch fact ``small_m``): the runtime runs it for an M of at
    least R (``CompiledKernel.rows_kernel``).  With K and lda static, the int8 GEMM (R =
    :data:`~vlpc.dialects.gemm.QUANT_GEMM_TILE_ROWS`) and its own plan, its pre-kernel
    ``<name>_rows<R>_quant_a`` first (M read from the kernel arguments); else the f16 GEMM (R =
    :data:`~vlpc.dialects.gemm.QUANT_GEMM_F16_TILE_ROWS`).  Unchanged when the GEMM does not apply (M
    static, another format, the fused SwiGLU, a split of K across workgroups)."""
    s = mm.shape()
    if s.m >= 0 or s.b_format not in QUANT_GEMM_TILE_ROWS or "swiglu" in mm.epilogue_ops() \
            or (mm.get_int("split_k") or 1) > 1:
        return kernels
    int8 = s.k > 0 and s.k % QUANT_K_PAIR == 0 and s.lda > 0
    rows = (QUANT_GEMM_TILE_ROWS if int8 else QUANT_GEMM_F16_TILE_ROWS)[s.b_format]

    def build(clone: MatmulOp, kname: str) -> gcn.KernelOp:
        groups, pairs = QUANT_GEMM_LOCAL if int8 else QUANT_GEMM_F16_LOCAL, max(1, s.k // QUANT_K_PAIR)
        while groups > 1 and pairs % groups:
            groups //= 2
        clone.set_int("local_split", groups)
        clone.set_int_array("workgroup_size", (64 * groups, 1, 1))
        if int8 and INT8_WG_GROUP > 1:
            clone.set_int("wg_group", INT8_WG_GROUP)
        builder = QuantGemmInt8Builder if int8 else QuantGemmBuilder
        return builder(clone, kname, forwarding=forwarding, schedule=schedule).build()

    gemm = rows_kernel(mm, name, rows, build)
    main = kernels[0]
    listed = [x for x in str(main.attributes["launch"].data.get("small_m", StringAttr("")).data).split(",") if x]
    add_launch_facts(main, small_m=",".join([gemm.sym_name.data, *listed]))
    return [*kernels, *(with_quant_a(mm, gemm.sym_name.data, [gemm]) if int8 else [gemm])]


class QuantGemmBuilder(QuantGemvBuilder):
    """:class:`QuantGemvBuilder` with the prefill GEMM's K loop (module docstring)."""

    def _k_loop_override(self, e: Emitter, acc: list[SSAValue], a_tile: SSAValue, b_tile: SSAValue,
                         voff_b: SSAValue, k_val: SSAValue | int, lda4: SSAValue | int) -> list[SSAValue]:
        assert self.fmt in QUANT_GEMM_TILE_ROWS and not self.swiglu, (self.fmt, self.swiglu)
        assert isinstance(k_val, int) and k_val % 32 == 0, k_val  # whole block pairs (quant_kernels)
        iters = k_val // 32  # block pairs of the slice: 32 dwords of A (128 bytes) each
        pair_bytes = 2 * self.block_bytes
        n_dw = pair_bytes // 4  # 17 (Q8_0) or 9 (Q4_0) dwords per lane and pair
        n_loads = n_dw // 4 + 1
        rows = len(acc)
        magic, select, offset, zero, imm_rows, stepped = dequant_constants(e, self.fmt, lda4, rows)
        first = (self.block_bytes // 4) // 4  # the loads block 0 alone reads
        units = [(blk, r0) for blk in range(2) for r0 in range(0, rows, A_BATCH_ROWS)]
        # Q8_0: the next pair's B reloaded after each block's dots, not after its dequantization (its
        # 17 dwords a pair would otherwise keep 28 rows above 64 VGPRs: 4 waves a SIMD)
        late = self.fmt == "q8_0"

        def load_b(ptr: SSAValue, loads=range(n_loads)) -> list[SSAValue]:
            return b_row_loads(e, voff_b, ptr, n_dw, loads, "blocks")

        def a_batch(koff: SSAValue, unit: tuple[int, int]) -> list[SSAValue]:
            blk, r0 = unit
            return a_row_loads(e, a_tile, lda4, imm_rows, stepped, koff, blk,
                               range(r0, min(r0 + A_BATCH_ROWS, rows)), f"block {blk}")

        def dequantize(loaded: list[SSAValue], blk: int) -> tuple[SSAValue, list[SSAValue]]:
            """The block's scale (f32, exact) and its 16 f16 pairs of exact integers (module docstring)."""
            o = blk * self.block_bytes

            def dw(i: int) -> SSAValue:
                return e.sub(loaded[i // 4], i % 4, 1) if i // 4 < n_dw // 4 else loaded[-1]

            words: dict = {}

            def word(kind: str, i: int) -> SSAValue:
                if (kind, i) not in words:
                    if kind == "x":  # Q8_0: b ^ 0x80 = b + 128 as an unsigned byte
                        words[(kind, i)] = e(gcn.VXorB32Op(0x80808080, dw(i))).vdst
                    elif kind == "lo":  # Q4_0: the low nibbles
                        words[(kind, i)] = e(gcn.VAndB32Op(0x0F0F0F0F, dw(i))).vdst
                    else:  # Q4_0: the high nibbles
                        words[(kind, i)] = e(gcn.VAndB32Op(0x0F0F0F0F, e(gcn.VLshrrevB32Op(4, dw(i))).vdst)).vdst
                return words[(kind, i)]

            scale = dw(o // 4)
            if o % 4:
                scale = e(gcn.VLshrrevB32Op(16, scale)).vdst
            pairs = block_pairs(e, self.fmt, o, word, magic, offset, select)
            return e(gcn.VCvtF32F16Op(scale)).vdst, pairs

        def step(koff: SSAValue, loaded: list[SSAValue], acc: list[SSAValue], nxt: SSAValue | None,
                 a_cur: list[SSAValue] | None):
            """acc += the block pair at ``koff`` (B in ``loaded``, its first batch of A ``a_cur``);
            ``nxt``: reload ``loaded``'s registers with the pair there, each block's as soon as it
            is dequantized (Q8_0: once its dots are done).  Returns (acc, the reloaded B, the next pair's first batch of A or
            None, the next pair's koff or None)."""
            left[0] -= 1
            nkoff = e(gcn.SAddU32Op(koff, 128, comment="A of the next block pair")).sdst if left[0] else None
            acc = list(acc)
            reloaded: list[SSAValue] = []
            batch = a_cur if a_cur is not None else a_batch(koff, units[0])
            a_next = None
            for i, (blk, r0) in enumerate(units):
                if r0 == 0:
                    d, pairs = dequantize(loaded, blk)
                    if nxt is not None and not late:  # the next pair's B, into the registers this block frees
                        reloaded += load_b(nxt, range(first) if blk == 0 else range(first, n_loads))
                for j_row, a_row in enumerate(batch):
                    s = zero
                    for j in range(16):
                        s = e(gcn.VDot2F32F16Op(pairs[j], e.sub(a_row, j, 1), s)).vdst
                    r = r0 + j_row
                    acc[r] = e(gcn.VFmaF32Op(d, s, acc[r], comment=f"row {r} += d * block sum")).vdst
                if late and nxt is not None and (i + 1 == len(units) or units[i + 1][0] != blk):
                    reloaded += load_b(nxt, range(first) if blk == 0 else range(first, n_loads))
                if i + 1 < len(units):  # the next batch, after this one's dots
                    batch = a_batch(koff, units[i + 1])
                elif nkoff is not None:  # the next pair's first batch (carried)
                    a_next = a_batch(nkoff, units[0])
            return acc, reloaded, a_next, nkoff

        koff = e.const(0)
        bptr = e.add64(b_tile, 0, 0, comment="B of the first block pair")
        left = [iters]
        return pipelined_k_loop(e, step, load_b, bptr, iters, QUANT_GEMM_B_AHEAD, pair_bytes, 128, koff,
                                a_batch(koff, units[0]), acc, left, f".L{self.name}_gemm_block_pairs", "block pair")


#: Rows of A per batch of the int8 GEMM's scalar loads (each row: ``s_load_dwordx16`` of a block pair's 64
#: int8 activations; the batch's steps, 8 bytes a row, in one load of the pair-major steps), loaded after
#: the previous batch's dots; with :data:`INT8_A_AHEAD` right after the previous batch's first dot
#: instead (two buffers; modeled slower: SMEM returns out of order, docs/quantized.md "Prefill").
INT8_A_BATCH_ROWS = 4
INT8_A_AHEAD = False
#: Tile rows per group of the int8 GEMM's grouped workgroup order (1: the hardware's row-major order):
#: the workgroups in flight share B's lines in L2 across 8 row tiles (docs/quantized.md, "Prefill").
INT8_WG_GROUP = 8
#: The int8 GEMM's loads of a block pair of B per lane (first dword, dwords): the first three before
#: the rest (:class:`QuantGemmInt8Builder`).
INT8_B_LOADS = {"q8_0": ((0, 4), (4, 4), (8, 1), (9, 4), (13, 4)), "q4_0": ((0, 4), (4, 4), (8, 1))}
#: v_perm_b32 selector: bytes 2..5 of {src0, src1} (a Q8_0 / Q4_0 block 0's quants start 2 bytes into a dword).
PERM_SKIP2 = 0x05040302
#: f32 1/16: Q4_0's signed nibbles are multiplied as 16 (q - 8) (module docstring of QuantGemmInt8Builder).
F32_SIXTEENTH = 0x3D800000


class QuantGemmInt8Builder(QuantGemmBuilder):
    """The prefill GEMM on int8 activations (docs/quantized.md, "Prefill"): the plan's pre-kernel
    ``<name>_quant_a`` (passes/isel/quant_act.py) quantizes A once into the workspace (row m's K int8
    at m K, per row and block of 32 the f32 step d_a and the i32 sum q at M K + 8 (m K / 32 + b)), then
    this kernel: one lane per weight row (column of C), a macro tile of R rows of A, K over the
    wavefront groups, per block pair of B (Q8_0 68 bytes, Q4_0 36, one pair ahead):

    * the lane's weights as int8 dwords, once per block for the tile's R rows: Q8_0 as stored (block
      0's quants start 2 bytes into a dword: 8 ``v_perm_b32``; block 1's are whole dwords); Q4_0 the
      nibbles as signed bytes 16 (q - 8) (``v_xor_b32 0x88888888`` makes each nibble's q - 8 a
      two's complement nibble, ``v_and_b32 0xF0F0F0F0`` keeps the high ones, ``v_lshlrev_b32 4`` and
      the same mask the low ones: 4 VALU a dword, no per-row offset term), the block's scale times 1/16;
    * per row of A and block: the block's 32 int8 activations as 8 SGPRs (``s_load_dwordx16`` for a
      pair), 8 ``v_dot4_i32_i8 v, w, s, v`` from 0 (one SGPR: the constant bus), ``v_cvt_f32_i32``
      (exact: |sum| < 2^24), ``v_mul_f32 d_a, d_w`` (exact: a power of two times an f16) and one
      ``v_fma_f32`` into the row's f32 accumulator: 11 VALU instructions for 32 multiply-adds.

    Exactly ``sum_b d_w d_a (sum q_w q_a)`` rounded once per block's FMA: the lane int8 kernel's bound
    against gguf's weights times ``vlpc.quant_run.quantize_activations``' activations (launch fact
    ``a_quant``)."""

    def kernargs(self) -> list[dict]:
        return int8_kernargs(self.shape, self.mm.bias is not None, self.residual_type())

    def _finish(self, entry, lds_bytes: int) -> gcn.KernelOp:
        return with_a_quant(super()._finish(entry, lds_bytes))

    def _a_base(self, e: Emitter, kp: SSAValue, kargs: dict, wg_z, batch_base) -> SSAValue:
        """The workspace (the pre-kernel's int8 A) in place of A."""
        self.ws = e(gcn.SLoadDwordx2Op(kp, kargs["workspace"], comment="kernarg workspace (int8 A)")).sdst
        return self.ws

    def _dot_prologue(self, f):
        ops = super()._dot_prologue(f)
        self.row0, self.piece = f.row0, (ops.piece if self.local > 1 else None)
        self.m_arg = self._arg(f.e, f.kp, "M", self.shape.m)  # (M given at launch: the companion's)
        return ops

    def _k_loop_override(self, e: Emitter, acc: list[SSAValue], a_tile: SSAValue, b_tile: SSAValue,
                         voff_b: SSAValue, k_val: SSAValue | int, lda4: SSAValue | int) -> list[SSAValue]:
        s = self.shape
        assert self.fmt in QUANT_GEMM_TILE_ROWS and not self.swiglu, (self.fmt, self.swiglu)
        assert isinstance(k_val, int) and k_val % 32 == 0, k_val  # whole block pairs (quant_kernels)
        iters = k_val // 32  # block pairs of the slice (64 int8 bytes of A a row each)
        kq = s.k  # bytes of an int8 row of A in the workspace
        pair_bytes = 2 * self.block_bytes  # 68 (Q8_0) or 36 (Q4_0) bytes per lane and pair
        rows = len(acc)
        # the tile's int8 rows in the workspace from the slice's first pair; the pair-major steps (8 bytes a
        # row and pair, passes/isel/quant_act.py's pair_steps) of the tile's row 0 and the slice's first pair
        m_arg = self.m_arg

        def m_times(x: int) -> SSAValue | int:
            return m_arg * x if isinstance(m_arg, int) else e(gcn.SMulI32Op(m_arg, x)).sdst

        q_off = e.mul(self.row0, kq)
        p_off = e(gcn.SAddU32Op(e.mul(self.row0, 8), m_times(kq + 8 * (kq // 32)))).sdst
        if self.piece is not None:
            q_off = e(gcn.SAddU32Op(q_off, e.mul(self.piece, 2 * k_val), comment="+ the slice's first pair")).sdst
            p_off = e(gcn.SAddU32Op(p_off, e(gcn.SMulI32Op(self.piece, m_times(8 * iters))).sdst)).sdst
        q_tile = e.add64(self.ws, q_off, 0, comment="int8 A, the tile's row 0")
        p_tile = e.add64(self.ws, p_off, 0, comment="d_a of the tile's row 0, pair-major")
        imm_rows = (rows - 1) * kq + 64 <= SMEM_IMM_MAX
        q_step = RowStepper(e, kq)
        zero = e(gcn.VMovB32Op(0)).vdst
        units = [range(r0, min(r0 + INT8_A_BATCH_ROWS, rows)) for r0 in range(0, rows, INT8_A_BATCH_ROWS)]

        # B's loads of a pair (first dword, dwords): Q8_0 block 0 and block 1's scale (dwords 0..8), then
        # block 1's quants (9..16: its weights as they are); Q4_0 dwords 0..8
        parts = INT8_B_LOADS[self.fmt]
        n_early = 3

        def load_b(ptr: SSAValue, loads=None) -> list[SSAValue]:
            out = []
            for q in (range(len(parts)) if loads is None else loads):
                at, width = parts[q]
                op = gcn.GlobalLoadDwordx4Op if width == 4 else gcn.GlobalLoadDwordOp
                out.append(e(op(voff_b, ptr, offset=4 * at, comment=f"B blocks, dwords {at}..{at + width - 1}")).vdst)
            return out

        pair_off: dict = {}

        def a_batch(koff: SSAValue, rs) -> tuple[list[SSAValue], list[SSAValue]]:
            """Rows ``rs`` of A for the pair at ``koff``: each row's 16 dwords of int8 (``s_load_dwordx16``),
            and the rows' two steps d_a each, consecutive (loads of 16, 8, 4, 2 dwords): (q per row, the
            step dwords: row rs[i] block b at 2 i + b)."""
            if koff not in pair_off:  # 8 M bytes a pair
                pair_off[koff] = e(gcn.SMulI32Op(e(gcn.SLshrB32Op(koff, 6)).sdst, m_times(8))).sdst
            qs = [e(gcn.SLoadDwordx16Op(q_tile, offset=r * kq, soffset=koff, comment=f"A row {r}, int8")).sdst
                  if imm_rows else
                  e(gcn.SLoadDwordx16Op(q_tile, offset=0, soffset=q_step(koff, r), comment=f"A row {r}, int8")).sdst
                  for r in rs]
            steps: list[SSAValue] = []
            left, at = 2 * len(rs), 8 * rs[0]
            while left:
                width = 1 << min(4, left.bit_length() - 1)
                ld = gcn.S_LOADS[width](p_tile, offset=at, soffset=pair_off[koff],
                                        comment=f"A rows {rs[0] + (at - 8 * rs[0]) // 8}.., d_a x {width}")
                v = e(ld).sdst
                steps += [e.sub(v, i, 1) for i in range(width)]
                left, at = left - width, at + 4 * width
            return qs, steps

        def weights(loaded: list[SSAValue], blk: int) -> tuple[SSAValue, list[SSAValue]]:
            """Block ``blk``'s scale (f32; Q4_0 / 16) and its 32 weights as 8 int8 dwords in K order."""
            o = blk * self.block_bytes

            def dw(i: int) -> SSAValue:
                q = max(q for q, (at, _) in enumerate(parts) if at <= i)
                return loaded[q] if parts[q][1] == 1 else e.sub(loaded[q], i - parts[q][0], 1)

            scale = dw(o // 4)
            if o % 4:
                scale = e(gcn.VLshrrevB32Op(16, scale)).vdst
            d = e(gcn.VCvtF32F16Op(scale)).vdst
            nq = 8 if self.fmt == "q8_0" else 4  # dwords of quants
            q0 = (o + 2) // 4
            if (o + 2) % 4:
                qs = [e(gcn.VPermB32Op(dw(q0 + j + 1), dw(q0 + j), e.const(PERM_SKIP2))).vdst for j in range(nq)]
            else:
                qs = [dw(q0 + j) for j in range(nq)]
            if self.fmt == "q8_0":
                return d, qs
            t = [e(gcn.VXorB32Op(0x88888888, x)).vdst for x in qs]  # nibble ^ 8: q - 8 as a signed nibble
            lo = [e(gcn.VAndB32Op(0xF0F0F0F0, e(gcn.VLshlrevB32Op(4, x)).vdst)).vdst for x in t]
            hi = [e(gcn.VAndB32Op(0xF0F0F0F0, x)).vdst for x in t]
            return e(gcn.VMulF32Op(e.const(F32_SIXTEENTH), d)).vdst, [*lo, *hi]

        def step(koff: SSAValue, loaded: list[SSAValue], acc: list[SSAValue], nxt: SSAValue | None,
                 a_cur: list[SSAValue] | None):
            """acc += the block pair at ``koff`` (B in ``loaded``, its first batch of A ``a_cur``);
            ``nxt``: reload ``loaded``'s registers with the pair there.  Returns (acc, the reloaded B,
            the next pair's first batch of A or None, the next pair's koff or None)."""
            left[0] -= 1
            nkoff = e(gcn.SAddU32Op(koff, 64, comment="A of the next block pair")).sdst if left[0] else None
            acc = list(acc)
            reloaded: list[SSAValue] = []
            w = [weights(loaded, 0), weights(loaded, 1)]
            late = len(parts) > n_early  # Q8_0: block 1's quants are its weights, reloaded after its last dots
            if nxt is not None:  # the registers the weights freed
                reloaded += load_b(nxt, range(n_early))
            batch = unflat(a_cur, units[0]) if a_cur is not None else a_batch(koff, units[0])
            a_next = None
            for i, rs in enumerate(units):
                pending = None
                issued = not INT8_A_AHEAD
                qs, steps = batch
                # Q8_0: block 1 first in the pair's last batch (its registers then reloaded), last in the first
                for blk in ((1, 0) if late and i + 1 == len(units) else (0, 1)):
                    if late and nxt is not None and i + 1 == len(units) and blk == 0:
                        reloaded += load_b(nxt, range(n_early, len(parts)))
                    d, ws = w[blk]
                    for j_row, r in enumerate(rs):
                        x = zero
                        for j in range(8):
                            x = e(gcn.VDot4I32I8Op(ws[j], e.sub(qs[j_row], 8 * blk + j, 1), x)).vdst
                            if not issued:  # the next batch (or the next pair's first) after this one's wait
                                issued = True
                                if i + 1 < len(units):
                                    pending = a_batch(koff, units[i + 1])
                                elif nkoff is not None:
                                    a_next = a_batch(nkoff, units[0])
                        sc = e(gcn.VMulF32Op(steps[2 * j_row + blk], d)).vdst
                        acc[r] = e(gcn.VFmaF32Op(sc, e(gcn.VCvtF32I32Op(x)).vdst, acc[r],
                                                 comment=f"row {r} += d_a d_w * block dot")).vdst
                if not INT8_A_AHEAD:
                    if i + 1 < len(units):
                        pending = a_batch(koff, units[i + 1])
                    elif nkoff is not None:
                        a_next = a_batch(nkoff, units[0])
                batch = pending
            return acc, reloaded, (flat(a_next) if a_next is not None else None), nkoff

        def flat(batch) -> list[SSAValue]:
            return [*batch[0], *batch[1]]

        def unflat(regs: list[SSAValue], rs) -> tuple[list[SSAValue], list[SSAValue]]:
            return list(regs[:len(rs)]), list(regs[len(rs):])

        koff = e.const(0)
        bptr = e.add64(b_tile, 0, 0, comment="B of the first block pair")
        left = [iters]
        return pipelined_k_loop(e, step, load_b, bptr, iters, QUANT_GEMM_B_AHEAD, pair_bytes, 64, koff,
                                flat(a_batch(koff, units[0])), acc, left, f".L{self.name}_int8_block_pairs",
                                "block pair")
