"""The prefill GEMM of f16 activations and GGUF Q8_0 / Q4_0 weights on gfx906 (docs/quantized.md).

``gemm.matmul %x, %w, %y, %alpha, %beta {layout = "NT", b_format = "q8_0"}`` with M static and
above 16 rows (an LLM's prompt: M up to a few hundred tokens).  The kernel is the quantized GEMV's
(:class:`~vlpc.passes.isel.quant.QuantGemvBuilder`: one lane per weight row, a column of C;
A in SGPRs as the scalar operand of ``v_dot2_f32_f16``; K over wavefront groups with the LDS
reduction; the output with alpha, beta and the fused epilogue) with the GEMM's plan
(``quant_gemm_rows`` and ``quant_plan`` in dialects/gemm.py) and its own K loop:

* a macro tile of R rows of A x 64 columns (R = 32 for Q4_0, 28 for Q8_0:
  :data:`~vlpc.dialects.gemm.QUANT_GEMM_TILE_ROWS`), so that every dequantized pair of weights
  feeds R dots; the grid covers M in row tiles, a last tile past M moved up to end at row M;
* per block pair (64 weights) a lane's 68 (Q8_0) or 36 (Q4_0) bytes with ``global_load_dwordx4`` /
  ``global_load_dword``, one pair ahead (:data:`QUANT_GEMM_B_AHEAD`; the GEMV's two pairs ahead
  cost the VGPRs that keep 4 waves per SIMD; Q8_0 reloads each block's registers after the block's
  dots, not after its dequantization); each block dequantized once, exactly, into 16 f16
  pairs (``v_perm_b32`` of 0x64646464 and ``v_pk_add_f16`` of the offset: the GEMV's
  dequantization), then per row 16 ``v_dot2_f32_f16`` from 0 and one ``v_fma_f32`` with the
  block's scale;
* A per block in batches of 4 rows (``s_load_dwordx16`` each: 64 SGPRs), each batch loaded after
  the previous batch's dots, the next pair's first batch after the pair's last dots (carried round
  the loop);
* K over 16 wavefront groups (:data:`~vlpc.dialects.gemm.QUANT_GEMM_LOCAL`, halved until it
  divides the block pairs): at 63 (Q4_0) and 64 (Q8_0) VGPRs 4 waves a SIMD, so the 16-wave
  workgroup fits a CU
  (``tests/quant/test_quant_gemm.py`` checks the occupancy against the workgroup).

The error bound is the GEMV's, ``gamma_n(2^-24) sum_k |a_k| |w_k|`` with n = 16 + K / 32 + L + 2
(vlpc/quant_run.py): exact products, f32 sums.

Why these plans (modeled, MI50 @ 1725 MHz, HBM2 1000 MHz, 512 x 4096 x 4096,
``benchmarks/quant_gemv.py --prefill``): the VGPR count decides.  Q4_0 with 32 rows and 16 groups
at 63 VGPRs: 1100 us (58.9 % of the f16 dot peak; 36 and 40 rows take 65 and 69 VGPRs); at 64 rows the 104 VGPRs leave 2 waves a SIMD (8
groups: 1595 us), and the scalar loads of A, which a wave's other waves no longer hide, take
about half the time.  Q8_0 (17 dwords of B a pair) needs 71 VGPRs at 32 rows, 3 waves a SIMD (8
groups: 1772 us); 28 rows with the late reload 64 VGPRs and 16 groups: 1342 us (48.3 %; 24 rows
with the early one: 1496 us, 43.3 %).  Tried and
slower in the model: A double-buffered in batches of 2 rows, the next batch loaded right after
the current one's first dot (Q4_0, 64 rows: 2254 us against 1595); a vector-load touch of the
next pair's A lines (the dense kernels' ``a_touch``: 1735 against 1613 us); 64 rows x 256 or 512
columns, one group (2765, 3654 us).

Used for Q8_0 and Q4_0 with M static and at least R rows; an M given at launch, Q4_K, the int4
group formats and the fused SwiGLU keep the GEMV's 16-row tiles (passes/isel/quant*.py).
"""

from __future__ import annotations

import dataclasses

from xdsl.dialects.builtin import DictionaryAttr, StringAttr
from xdsl.ir import SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import QUANT_GEMM_TILE_ROWS, MatmulOp, quant_gemm_rows, quant_plan
from vlpc.passes.isel.emit import Emitter, rows_kernel
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
    return quant_kernels(mm, name, strategy, schedule, forwarding, builder=QuantGemmBuilder)


def with_gemm_companion(mm: MatmulOp, name: str, kernels: list[gcn.KernelOp], schedule: str = "default",
                        forwarding: bool = True) -> list[gcn.KernelOp]:
    """``kernels`` (the GEMV's, M given at launch) and the prefill GEMM's companion ``<name>_rows<R>``
    (R = :data:`~vlpc.dialects.gemm.QUANT_GEMM_TILE_ROWS` of the format), listed with the row-narrow
    companions (launch fact ``small_m``): the runtime runs it for an M of at least R
    (``CompiledKernel.rows_kernel``).  Unchanged when the GEMM does not apply (M static, another
    format, the fused SwiGLU, a split of K across workgroups)."""
    s = mm.shape()
    rows = QUANT_GEMM_TILE_ROWS.get(s.b_format, 0)
    if s.m >= 0 or not rows or "swiglu" in mm.epilogue_ops() or (mm.get_int("split_k") or 1) > 1:
        return kernels

    def build(clone: MatmulOp, kname: str) -> gcn.KernelOp:
        groups = quant_plan(dataclasses.replace(s, m=rows))[1]
        clone.set_int("local_split", groups)
        clone.set_int_array("workgroup_size", (64 * groups, 1, 1))
        return QuantGemmBuilder(clone, kname, forwarding=forwarding, schedule=schedule).build()

    gemm = rows_kernel(mm, name, rows, build)
    main = kernels[0]
    listed = [x for x in str(main.attributes["launch"].data.get("small_m", StringAttr("")).data).split(",") if x]
    main.attributes["launch"] = DictionaryAttr({**main.attributes["launch"].data,
                                                "small_m": StringAttr(",".join([gemm.sym_name.data, *listed]))})
    return [*kernels, gemm]


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
