"""The prefill GEMM of f16 activations and GGUF Q8_0 / Q4_0 weights on gfx906 (docs/quantized.md).

``gemm.matmul %x, %w, %y, %alpha, %beta {layout = "NT", b_format = "q8_0"}`` with M static and
above 16 rows (an LLM's prompt: M up to a few hundred tokens).  The kernel is the quantized GEMV's
(:class:`~vlpc.passes.gemm_to_gcn_quant.QuantGemvBuilder`: one lane per weight row, a column of C;
A in SGPRs as the scalar operand of ``v_dot2_f32_f16``; each block dequantized once, exactly, into
16 f16 pairs; per block and row 16 dots from 0 and one ``v_fma_f32`` with the block's scale; K over
wavefront groups with the LDS reduction; the output with alpha, beta and the fused epilogue) with
the GEMM's plan (``quant_gemm_rows`` and ``quant_plan`` in dialects/gemm.py):

* a macro tile of 64 rows of A (32 for M of 32..63) x 64 columns, so that every dequantized pair of
  weights feeds 64 dots (the dequantization, 2 to 2.5 VALU instructions a pair, is then about 4 % of
  the VALU work, the block FMAs 6 %); the grid covers M in tiles, a last tile past M moved up to end
  at row M;
* K over :data:`~vlpc.dialects.gemm.QUANT_GEMM_LOCAL` (8) wavefront groups: 64 accumulators, B two
  block pairs ahead and a block's 16 pairs take 104 (Q4_0) to 120 (Q8_0) VGPRs, 2 waves per SIMD,
  so a workgroup of 8 waves is the most that fits a CU (the GEMV's 16 groups would not);
* the error bound is the GEMV's: ``gamma_n(2^-24) sum_k |a_k| |w_k|``, n = 16 + K / 32 + L + 2
  (vlpc/quant_run.py).

Modeled (MI50 @ 1725 MHz, ``benchmarks/quant_prefill.py``), the scalar loads of A bound it: each
SGPR of A (two activations) feeds one ``v_dot2_f32_f16`` of a wave, and 64 rows of a block are 64
scalar-cache lines a wave, more than a CU's share of the 16 KiB scalar cache holds, so they come
from L2.  Tried and slower in the model: A in double-buffered batches of 2 rows, the next batch
loaded right after the current one's first dot (Q4_0 512 x 4096 x 4096: 2254 us against 1595).

Used for Q8_0 and Q4_0 with M static and above :data:`vlpc.dialects.gemm.GEMV_MAX_M`; an M given at
launch, Q4_K, the int4 group formats and the fused SwiGLU keep the GEMV's 16-row tiles
(passes/gemm_to_gcn_quant*.py).
"""

from __future__ import annotations

from vlpc.dialects import gcn
from vlpc.dialects.gemm import MatmulOp, quant_gemm_rows
from vlpc.passes.gemm_to_gcn_quant import QuantGemvBuilder, quant_kernels


def quant_gemm_kernels(mm: MatmulOp, name: str, strategy: str = "sqc", schedule: str = "default",
                       forwarding: bool = True) -> list[gcn.KernelOp] | None:
    """The kernels of a ``gemm.matmul`` with ``b_format`` planned as the prefill GEMM (a macro tile
    above 16 rows: ``quant_gemm_rows``), or None when the GEMVs' kernels apply
    (passes/gemm_to_gcn_quant_k.py's ``quant_format_kernels``)."""
    if not quant_gemm_rows(mm.shape(), "swiglu" in mm.epilogue_ops()) or mm.get_int_array("macro_tile")[0] <= 16:
        return None
    return quant_kernels(mm, name, strategy, schedule, forwarding, builder=QuantGemvBuilder)

