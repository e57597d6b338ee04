"""The GEMV of f16 activations and GGUF Q4_K weights on gfx906 (docs/quantized.md).

``gemm.matmul %x, %w, %y, %alpha, %beta {layout = "NT", b_format = "q4_k"}``: B holds the bytes of
a GGUF Q4_K tensor, N rows of K / 256 super-blocks, each ggml's ``block_q4_K`` (144 bytes, the
layout of ggml-common.h and of the ``gguf`` package's ``Q4_K`` (de)quantizer):

* bytes 0..1 ``d`` (f16), 2..3 ``dmin`` (f16);
* bytes 4..15 ``scales``: the 6-bit scale ``sc_j`` and minimum ``m_j`` of the 8 sub-blocks of 32
  weights: for j < 4, ``sc_j = s[j] & 63``, ``m_j = s[j + 4] & 63``; for j >= 4,
  ``sc_j = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4`` and ``m_j = (s[j + 4] >> 4) | (s[j] >> 6) << 4``
  (ggml's ``get_scale_min_k4``);
* bytes 16..143 ``qs``: chunk c (0..3) of 64 weights in bytes 32c..32c + 31, weight l of sub-block
  2c in the low nibble of byte l, weight l of sub-block 2c + 1 in its high nibble;
* weight ``d * sc_j * q - dmin * m_j``.

The kernel is :class:`~vlpc.passes.isel.quant.QuantGemvBuilder`'s (one lane per weight row,
A in SGPRs, K over wavefront groups of a workgroup and optionally over workgroups, the LDS
reduction, output, epilogues and the fused SwiGLU) with another K loop, one super-block an
iteration, B two super-blocks ahead:

* a lane loads its row's 36 dwords of a super-block with 9 ``global_load_dwordx4`` (every weight
  byte read once); at the super-block's start its 8 scales ``d * sc_j`` and negated minimums
  ``-dmin * m_j`` are decoded (``v_lshrrev_b32``, ``v_and_b32``, ``v_lshl_add_u32``,
  ``v_cvt_f32_i32``, ``v_mul_f32``: exact in f32, 11 x 6 bits) and the first load's registers are
  reloaded for the super-block two ahead, each chunk's two loads once its two sub-blocks are done;
* nibbles are dequantized as Q4_0's (``v_and_b32 0x0F0F0F0F`` / after ``v_lshrrev_b32 4``, then
  ``v_perm_b32`` into the f16 pattern 0x6400 + q and ``v_pk_add_f16`` of -1024: exact small integers);
* per sub-block and row, 16 ``v_dot2_f32_f16`` sum ``a * q`` from 0 and 16 more sum ``a`` (the dot
  with the pair (1, 1): the minimum's term, the same for every lane), then ``acc += (d sc_j) s_q``
  and ``acc += (-dmin m_j) s_a`` (two ``v_fma_f32``).  So the error is f32 accumulation's on the
  exact terms: ``gamma_n(2^-24) sum_k |a_k| (|d sc q| + |dmin m|)``, n = 16 + 2 K / 32 + S L + 2
  (vlpc/quant_run.py), against the gguf weight's one f32 rounding.

A: one or two rows are loaded one sub-block ahead (16 or 32 SGPRs, double-buffered and carried
round the loop); more rows are loaded per sub-block in batches of 4 rows (64 SGPRs).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import INT4_GROUP_FORMATS, MatmulOp
from vlpc.passes.isel.emit import SMEM_IMM_MAX, Emitter, RowStepper
from vlpc.passes.isel.quant import (A_BATCH_ROWS, F16_MAGIC_BYTES, PERM_SELECT, QUANT_B_AHEAD,
                                           QuantGemvBuilder, a_row_loads, pipelined_k_loop,
                                           quant_kernels)

#: Bytes and dwords of a ``block_q4_K`` super-block of 256 weights; dwords of A (f16 pairs) per super-block.
Q4K_BYTES, Q4K_DWORDS, Q4K_A_DWORDS = 144, 36, 128
#: -1024 in both f16 halves (a nibble q in the pattern 0x6400 + q is 1024 + q); the f16 pair (1, 1).
F16_MINUS_1024, F16_ONES = 0xE400E400, 0x3C003C00




def q4k_scales(e: Emitter, dw) -> tuple[list[SSAValue], list[SSAValue]]:
    """(d sc_j, -dmin m_j) for j = 0..7 of a Q4_K super-block whose dword i is ``dw(i)``, f32
    (exact: 11 x 6 bits; ggml's ``get_scale_min_k4``, module docstring)."""
    d = e(gcn.VCvtF32F16Op(dw(0))).vdst
    dmin = e(gcn.VCvtF32F16Op(e(gcn.VLshrrevB32Op(16, dw(0))).vdst)).vdst
    ndmin = e(gcn.VMulF32Op(e.const(0xBF800000), dmin)).vdst  # -dmin (exact)

    def field(i: int, shift: int, mask: int) -> SSAValue:
        v = dw(i) if not shift else e(gcn.VLshrrevB32Op(shift, dw(i))).vdst
        return e(gcn.VAndB32Op(mask, v)).vdst

    dsc, ndm = [], []
    for j in range(8):
        if j < 4:  # scales[j] & 63, scales[j + 4] & 63
            sc, m = field(1, 8 * j, 63), field(2, 8 * j, 63)
        else:  # (scales[j + 4] & 15 | scales[j - 4] >> 6 << 4), (scales[j + 4] >> 4 | scales[j] >> 6 << 4)
            b = 8 * (j - 4)
            sc = e(gcn.VLshlAddU32Op(field(1, b + 6, 3), 4, field(3, b, 15))).vdst
            m = e(gcn.VLshlAddU32Op(field(2, b + 6, 3), 4, field(3, b + 4, 15))).vdst
        dsc.append(e(gcn.VMulF32Op(d, e(gcn.VCvtF32I32Op(sc)).vdst)).vdst)
        ndm.append(e(gcn.VMulF32Op(ndmin, e(gcn.VCvtF32I32Op(m)).vdst)).vdst)
    return dsc, ndm


class Q4KGemvBuilder(QuantGemvBuilder):
    """:class:`QuantGemvBuilder` with B in GGUF Q4_K (module docstring): one super-block per iteration."""

    def _b_slice_bytes(self, e: Emitter, k_begin: SSAValue, kb4: SSAValue) -> SSAValue:
        sb = e(gcn.SLshrB32Op(k_begin, 7, comment="first super-block of the slice")).sdst  # 128 dwords of A each
        return e.mul(sb, Q4K_BYTES)

    def _k_loop_override(self, e: Emitter, acc: list[SSAValue], a_tile: SSAValue, b_tile: SSAValue,
                         voff_b: SSAValue, k_val: SSAValue | int, lda4: SSAValue | int) -> list[SSAValue]:
        assert isinstance(k_val, int) and k_val % Q4K_A_DWORDS == 0, k_val  # whole super-blocks (quant_kernels)
        iters = k_val // Q4K_A_DWORDS
        rows = len(acc)
        nsets = 2 if self.swiglu else 1  # the gate's and the up projection's rows (same A)
        acc, up_off = self.swiglu_accumulators(e, acc)
        magic = e(gcn.VMovB32Op(F16_MAGIC_BYTES)).vdst
        ones = e(gcn.VMovB32Op(F16_ONES)).vdst
        select = {pos: e.const(v) for pos, v in PERM_SELECT.items()}
        offset = e.const(F16_MINUS_1024)
        zero = e(gcn.VMovB32Op(0)).vdst
        imm_rows = isinstance(lda4, int) and (rows - 1) * lda4 + 64 * 8 <= SMEM_IMM_MAX
        stepped = RowStepper(e, lda4)
        ahead = rows <= 2  # A one unit ahead (2 x 32 SGPRs)
        a_unit = 2 if rows == 1 else 1  # sub-blocks of A per unit: 32 SGPRs
        sb_a = 4 * Q4K_A_DWORDS  # bytes of a row of A per super-block

        def load_b(ptr: SSAValue, loads=range(9)) -> list[SSAValue]:
            return [e(gcn.GlobalLoadDwordx4Op(voff_b, ptr, offset=16 * q, comment=f"B super-block, dwords {4 * q}..")).vdst
                    for q in loads]

        def a_rows(koff: SSAValue, sub: int, r0: int, r1: int) -> list[SSAValue]:
            """Rows r0..r1 - 1 of A's 16 dwords of sub-block ``sub`` of the super-block at ``koff``."""
            return a_row_loads(e, a_tile, lda4, imm_rows, stepped, koff, sub, range(r0, r1), f"sub-block {sub}")

        def a_fetch(koff: SSAValue, u: int) -> list[SSAValue]:
            """A of unit ``u`` (sub-blocks a_unit u ..), all rows: sub-block by sub-block."""
            return [v for sub in range(a_unit * u, a_unit * (u + 1)) for v in a_rows(koff, sub, 0, rows)]

        def scales(loaded: list[SSAValue]) -> tuple[list[SSAValue], list[SSAValue]]:
            """(d sc_j, -dmin m_j) for j = 0..7, f32 (exact: 11 x 6 bits)."""
            return q4k_scales(e, lambda i: e.sub(loaded[i // 4], i % 4, 1))

        def compute(koff: SSAValue, loaded: list[SSAValue], acc: list[SSAValue], nxt: SSAValue | None,
                    a_cur: list[SSAValue] | None, a_koff: SSAValue | None):
            """acc += the super-block at ``koff`` (B in ``loaded``: nsets x 9 loads); ``nxt``: reload
            ``loaded``'s registers with the super-block there (the up rows' at up_off further);
            ``a_cur``: sub-block 0's A (``ahead``); ``a_koff``: the next super-block's (for its
            sub-block 0's A, ``ahead``).  Returns (acc, the reloaded B, the next super-block's A)."""
            acc = list(acc)
            per = [loaded[9 * w:9 * (w + 1)] for w in range(nsets)]
            sc = [scales(ld) for ld in per]
            reloaded: list[list] = [[None] * 9 for _ in range(nsets)]
            nptr = [nxt if w == 0 or nxt is None else e.add64(nxt, up_off, 0) for w in range(nsets)]

            def reload(w: int, loads) -> None:
                if nptr[w] is not None:
                    for q, v in zip(loads, load_b(nptr[w], loads)):
                        reloaded[w][q] = v

            for w in range(nsets):
                reload(w, [0])  # d, dmin and the scales are decoded
            a_next = None
            words: dict = {}
            for j in range(8):
                c, hi = divmod(j, 2)
                # A of sub-block j: carried (ahead); the next sub-block's asked for after the first
                # dot on this one (scalar loads return out of order: a wait covers all in flight)
                prefetch = None
                if ahead:
                    if j % a_unit == 0:
                        unit, u = a_cur, j // a_unit
                        if u + 1 < 8 // a_unit:
                            prefetch = (koff, u + 1)
                        elif a_koff is not None:
                            prefetch = (a_koff, 0)
                    cur = unit[(j % a_unit) * rows:(j % a_unit + 1) * rows]
                s_a: dict = {}
                for w in range(nsets):
                    def dw(i, w=w):
                        return e.sub(per[w][i // 4], i % 4, 1)

                    pairs = []
                    for p in range(16):
                        i = 4 + 8 * c + p // 2
                        if (w, hi, i) not in words:
                            v = dw(i) if not hi else e(gcn.VLshrrevB32Op(4, dw(i))).vdst
                            words[(w, hi, i)] = e(gcn.VAndB32Op(0x0F0F0F0F, v)).vdst
                        halves = e(gcn.VPermB32Op(magic, words[(w, hi, i)], select[(2 * p) % 4])).vdst
                        pairs.append(e(gcn.VPkAddF16Op(offset, halves)).vdst)
                    if hi:  # the chunk's two loads are free
                        reload(w, [1 + 2 * c, 2 + 2 * c])
                    for r0 in range(0, rows, A_BATCH_ROWS):
                        batch = cur[r0:r0 + A_BATCH_ROWS] if ahead else (
                            s_a.get(("batch", r0)) or a_rows(koff, j, r0, min(r0 + A_BATCH_ROWS, rows)))
                        s_a[("batch", r0)] = batch
                        for i_r, a_row in enumerate(batch):
                            r = r0 + i_r
                            sq = zero
                            for t in range(16):
                                sq = e(gcn.VDot2F32F16Op(pairs[t], e.sub(a_row, t, 1), sq)).vdst
                                if prefetch is not None:
                                    got = a_fetch(*prefetch)
                                    if prefetch[1]:
                                        a_cur = got
                                    else:
                                        a_next = got
                                    prefetch = None
                            if r not in s_a:  # the sum of the sub-block's activations (shared by gate and up)
                                sa = zero
                                for t in range(16):
                                    sa = e(gcn.VDot2F32F16Op(ones, e.sub(a_row, t, 1), sa)).vdst
                                s_a[r] = sa
                            ra = w * rows + r
                            acc[ra] = e(gcn.VFmaF32Op(sc[w][0][j], sq, acc[ra], comment=f"row {r} += d sc{j} * sum a q")).vdst
                            acc[ra] = e(gcn.VFmaF32Op(sc[w][1][j], s_a[r], acc[ra], comment=f"row {r} -= dmin m{j} * sum a")).vdst
            flat = [v for w in range(nsets) for v in reloaded[w]] if nxt is not None else []
            return acc, flat, a_next

        # B D super-blocks ahead as the Q8_0/Q4_0 loop (passes/isel/quant.py): the loop body takes D
        # super-blocks, each reloading its registers for the one D later; (iters - D) % D before
        # the loop; the last D after it load nothing past the slice.
        depth = QUANT_B_AHEAD
        koff = e.const(0)
        bptr = e.add64(b_tile, 0, 0, comment="B of the first super-block")
        a_cur = a_fetch(koff, 0) if ahead else None
        left = [iters]

        def load_set(ptr: SSAValue) -> list[SSAValue]:
            if not self.swiglu:
                return load_b(ptr)
            return [*load_b(ptr), *load_b(e.add64(ptr, up_off, 0, comment="the up projection's rows"))]

        def step(koff, loaded, acc, nxt, a_cur):
            left[0] -= 1
            nkoff = e(gcn.SAddU32Op(koff, sb_a, comment="A of the next super-block")).sdst if left[0] else None
            acc, reloaded, a_next = compute(koff, loaded, acc, nxt, a_cur, nkoff if ahead else None)
            return acc, reloaded, a_next, nkoff

        return pipelined_k_loop(e, step, load_set, bptr, iters, depth, Q4K_BYTES, sb_a, koff, a_cur, acc, left,
                                f".L{self.name}_super_blocks", "super-block")
