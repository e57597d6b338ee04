"""The lane-along-K decode GEMV for f16 and int8 (``y = x W^T``, M = 1..16 rows of activations).

The dot kernels' decode GEMV (passes/isel/dot.py) puts A in SGPRs and gives each lane
one weight row (a column of C).  Every ``global_load_dwordx4`` of a wave then reads 16 bytes of
64 different rows, 64 DRAM pages (rows are K x 2 bytes apart: 8 KiB at K = 4096), and the HBM
model charges one page activation per page an instruction's misses open
(``TimingParams.hbm_activate_ns``; docs/timing_model.md, "HBM"): 16 times the activations per
byte of a stream whose waves read 1 KiB of one page (the modeled streaming ceiling,
``Board.streaming_ceiling_bytes_per_second``), which caps that kernel near 74 % of it.

This kernel turns the lanes along K instead: a wavefront owns R consecutive weight rows and walks
K in steps of 1 KiB per row, lane l reading bytes 16 l .. 16 l + 15 of the step of each row
(``global_load_dwordx4``: a whole 1 KiB of one row, one page, per instruction) and the same 16
bytes of the step of every row of A (``global_load_dwordx4`` from A, M rows; A is small and
re-read by every wave from the caches).  (With ``span`` < 64 lanes per row a load reads 16 x span
bytes of 64 / span rows instead.)  Each lane keeps R x M partial sums (``v_dot2_f32_f16`` with two
f16 products per dword, ``v_dot4_i32_i8`` with four int8 products into i32) in a ``gcn.loop`` over
the K steps, U steps an iteration (then a partial last step, if K x element bytes is not a whole
number of steps, in which the lanes past K load nothing and keep zeros): B one batch of U steps
ahead (each step's registers reload the next batch's step right after its dots), A in groups of G
rows, one group ahead (the next iteration's first group loaded during the last group's dots).  A
workgroup holds W waves, each its own rows, kept in step by one ``s_barrier`` per iteration.

With A in LDS (the plan's ``a_lds`` E > 0; M = 12 and 16): A's M rows of a K step are loaded
once per workgroup, M / W rows by each wave (``global_load_dwordx4``, E steps ahead), written to
LDS (``ds_write_b128``) and read by every wave (``ds_read_b128``, lane l the bytes 16 l ..
16 l + 15 of each row, in groups of G rows one group ahead); B goes U steps ahead, each step's
registers reloaded after its dots.  One LDS buffer (two barriers a step: every wave's reads
done, then the writes done; 16 KiB at M = 16, three workgroups a CU) or two (one barrier a
step).  Per K step a wave then issues R + M / W loads instead of R + M: the texture path (64
bytes a clock, one cache line) moves (R W + M) KiB per R W KiB of weights instead of (R + M) W,
and the LDS (128 bytes a clock: a ``ds_read_b128`` of a wave in 8) serves the M W row reads.
In half rows (``a_ahead`` 2, M = 16 where four workgroups a CU take fewer rounds) the kernel
fits 64 VGPRs: A is read in ``ds_read_b64`` halves, two ahead, from two 8-byte planes a row,
and B in two ``global_load_dwordx2`` halves, the next step's low halves loaded between the step's
two passes (every row's low half, then every row's high half: ``b_split``).

After the loop the 64 lanes' partials of each of the R x M sums are added through LDS in
chunks of 8 sums (2,304 bytes per wave): every lane writes its 8 partials (``ds_write_b32``),
lane l adds the 8 partials of lanes 8 j .. 8 j + 7 of sum l / 8 (two ``ds_read_b128``, seven
adds, one write), lane l < 8 adds the 8 results of sum l (two ``ds_read_b128``, seven adds; span
/ 8 results of a row's lanes with ``span`` < 64).  The order is fixed, so a result is the same
on every run; each sum of the f16 kernel is rounded at most ``K / 128 + 14`` times in f32 (a
lane's dots, then two levels of 8), within the dot kernels' ``gamma_n`` bound
(tests/dot_support.py).  Lane l < 8 of chunk c holds the sum v = 8 c + l, v = m R + r:
C[m, n0 + r] = alpha * sum + beta * C (BLAS: beta = 0 does not read C, alpha = 0 drops the
products, as the dot kernels: :func:`~vlpc.passes.isel.dot.blas_quick_returns`), stored
by those lanes.  With A in LDS the sums are added by lane exchanges instead
(:meth:`LaneGemvBuilder._reduce_butterfly`: five halvings through ``ds_swizzle_b32``, then the
two half-waves through LDS; a tree of depth 6, lane l left with sum l), their lanes' C is loaded
right after the K loop, before the reduction (its latency under it), and the sums are zeroed
while the kernel arguments load.

Applies (:func:`lane_gemv_plan`) to an NT f16/int8 ``gemm.matmul`` with M static in 1..16, N
static, K static with K x element bytes a multiple of 16, lda / ldb / ldc static with rows of
A and B starting on 16-byte boundaries, C f32 (f16 inputs), f16 (f16 inputs) or i32 (int8), no
batch, no split-K, no fused epilogue and no W8A8 scales; anything else, and a matmul with
``gemv = "sgpr"``, keeps the dot kernels' decode GEMV.  Why few rows a workgroup: the grid has
N / (R W) workgroups, many per CU, so the last round of workgroups leaves few CUs idle (N = 4096
on MI50's 60 CUs: 64 workgroups of 64 rows run two rounds on 4 CUs while 56 idle in the second;
4,096 of one row 69 rounds on 16 CUs and 68 on the others).  Modeled figures and the choice of
the plan: ``benchmarks/gemv_ceiling.py``, :func:`lane_gemv_plan` and docs/kernels.md ("Decode GEMVs").
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Block, Region, SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import DOT_PACK, ELEMENT_BYTES, GEMV_MAX_M, MatmulOp
from vlpc.passes.common import op_error
from vlpc.targets import BOARDS
from vlpc.passes.isel.emit import Emitter, add_launch_facts, kernel_entry, lane_sums_by_exchange, zero_if_alpha_zero
from vlpc.passes.isel.dot import DotKernelBuilder, blas_quick_returns

#: LDS bytes of one wave's reduction: 8 sums x 64 lanes, then 8 x 8 partials, 4 bytes each.
REDUCE_BYTES = 8 * 64 * 4 + 8 * 8 * 4
#: Values of gemm.matmul's optional ``gemv`` attribute: ``"sgpr"`` keeps the dot kernels' decode
#: GEMV (A in SGPRs, a lane per weight row) where this kernel would apply; ``"auto"`` (as no
#: attribute) takes this kernel wherever it applies; ``"persistent"`` takes it with persistent
#: row blocks (:func:`persistent_blocks`; the quantized lane GEMV treats it as ``"auto"``).
GEMV_KERNELS = ("auto", "sgpr", "persistent")
#: Bytes of one weight row a wave reads per K step: 64 lanes x 16 (one ``global_load_dwordx4``),
#: one DRAM page (HBM2's 2 KiB pages, JESD235A) when the row is 1 KiB aligned.
LANE_STEP_BYTES = 1024
#: Partial sums added per pass of the LDS reduction (module docstring): 8 x 64 lanes x 4 bytes
#: plus 8 x 8 x 4.
REDUCE_CHUNK = 8


def lane_gemv_plan(mm: MatmulOp, gpu: str = "") -> tuple[int, ...] | None:
    """``(rows, unroll, group, span, waves[, a_lds, a_buffers[, a_ahead[, b_split]]])`` of the lane-along-K GEMV for
    ``mm`` (module docstring), or None when it does not apply.  ``rows`` R: weight rows per wave
    and load slot; ``unroll`` U: K steps per loop iteration (their B loaded one batch ahead; with
    A in LDS: B's steps in flight); ``group`` G: rows of A loaded together, one group ahead;
    ``span``: lanes per weight row in a load (64: a load reads 1 KiB of one row; 32, 16: 2 or 4
    rows); ``waves`` W: waves per workgroup, kept in step by one barrier per iteration;
    ``a_lds`` E: A staged in LDS, E steps ahead (0: each wave loads A itself); ``a_buffers``: A's
    LDS buffers (1 or 2); ``a_ahead``: A's rows read from LDS a group ahead (1, the default), right
    before their dots (0) or in half rows, two halves ahead (2: :meth:`_StagedA._step_halves`, 64
    VGPRs); ``b_split`` (half rows only): B's rows loaded in two ``global_load_dwordx2`` halves,
    the next step's low halves issued once every A row's low half met them (its HBM fetch half a
    step earlier: :meth:`_StagedA._step_halves`).  M <= 8: (1, 2, min(M, 4), 64, 1); M = 12, 16
    with N a multiple of 8 and two K steps or more: (2, 1, 2, 64, 4, 1, 1), M = 16 without a
    partial step where :func:`fewer_rounds_at_four` (four workgroups a CU): (2, 1, 1, 64, 4, 1, 1,
    2, True) (B split, modeled MI50 / MI60: int8 16 x 11008 x 4096 60.35 / 60.91 us against 60.98
    / 62.0 whole, f16 112.98 / 114.86 against 113.2 / 114.7; before the split, modeled f16
    16 x 11008 x 4096 112.2 us on MI50 against 117.4, 114.6 on MI60 against 117.1; int8 60.3
    and 61.4 against 65.4 and 64.0; a_ahead 0, 61 VGPRs: 116.0 on MI50); other M above 8:
    (2, 1, 8, 64, 2).  Why
    A in LDS (modeled, MI50, f16 16 x 4096 x 4096; the figures below it are from before): (2, 1,
    2, 64, 4, 1, 1) 49.3 us, G = 1 49.5, U = 2 55.4, W = 8 70.7, W = 2 52.8; two buffers (one
    barrier a step, 32 KiB, two workgroups a CU) (2, 2, 2, 64, 4, 2, 2) 52.5, E = 1 58.3; int8
    16 x 4096 x 4096 28.7 (G = 1 29.5, two buffers 32.4); f16 16 x 11008 x 4096 121.7 (G = 1 122.9,
    two buffers 135.2); since C is read before the reduction and the sums are zeroed under the
    kernel arguments (:meth:`LaneGemvBuilder._epilogue`, :meth:`LaneGemvBuilder._prologue`) the
    plan models 48.3, 27.8 and 119.2 us.  Earlier plans (each wave loading A itself), why
    (modeled, timing-only launches as benchmarks/gemv_ceiling.py; MI50 @ 1725 MHz unless named):
    f16 1 x 4096 x 4096 41.3 us with R, U, G = (1, 2, 1), 41.8 (2, 2, 1), 42.9 (4, 2, 1), 44.5
    (1, 4, 1); 4 x 4096 x 4096 41.4 (1, 2, 4), 42.0 (2, 1, 4), 46.1 (4, 1, 4); 16 x 4096 x 4096 with
    W = 1: 58.4 (2, 1, 8), 65.2 (2, 2, 8), 85.1 (4, 1, 4), 102.2 (1, 2, 8), span 32 61.1, span 16
    75.5; (2, 1, 8) with W = 2 60.9, W = 4 62.3; on MI60 @ 1800 MHz W = 1 167.3, W = 2 54.2, W = 4
    67.8 (waves out of step read A's 128 KiB from HBM again: the model's L2 share of a CU does not
    hold it); int8 1 x 4096 x 4096 22.0 (1, 2, 1), 22.2 (2, 1, 1); 16 x 4096 x 4096 (2, 1, 8)
    W = 1 35.3, W = 2 36.7, MI60 32.1 and 32.2."""
    s = mm.shape()
    choice = mm.attributes.get("gemv")
    if choice is not None:
        if not (isinstance(choice, StringAttr) and choice.data in GEMV_KERNELS):
            raise op_error(mm, f"gemv = {choice}: the decode GEMV kernel is one of "
                           f"{', '.join(repr(x) for x in GEMV_KERNELS)}")
        if choice.data == "sgpr":
            return None
    if s.dtype not in DOT_PACK or mm.layout.data != "NT" or s.batch or mm.epilogue_ops() or mm.bias is not None:
        return None
    if getattr(mm, "scale_row", None) is not None or getattr(s, "b_format", None):
        return None
    if (mm.get_int("split_k") or 1) > 1:
        return None
    eb = ELEMENT_BYTES[s.dtype]
    if not (1 <= s.m <= GEMV_MAX_M) or min(s.n, s.k, s.lda, s.ldb, s.ldc) < 0:
        return None
    want_c = {"f16": ("f32", "f16"), "i8": ("i32",)}[s.dtype]
    if s.c_type not in want_c:
        return None
    if (s.k * eb) % 16 or (s.lda * eb) % 16 or (s.ldb * eb) % 16:
        return None
    steps = s.k * eb // LANE_STEP_BYTES
    if s.m <= 8:  # the weight stream alone matters: the most workgroups, B two steps ahead
        return 1, 2 if steps % 2 == 0 else 1, min(s.m, 4), 64, 1
    # A's loads (M per step) dominate: A staged in LDS once per workgroup of four waves (one buffer,
    # one step ahead), two rows a wave, B one step ahead, A read from LDS in pairs of rows
    if s.m % 4 == 0 and s.n % 8 == 0 and steps >= 2:
        # M = 16 without a partial step: A read in half rows (64 VGPRs: four workgroups a CU) where
        # that takes fewer rounds of workgroups on every gfx906 board (:func:`fewer_rounds_at_four`)
        if s.m == 16 and s.k * eb % LANE_STEP_BYTES == 0 and fewer_rounds_at_four(s.n // 8, gpu):
            return 2, 1, 1, 64, 4, 1, 1, 2, True
        return 2, 1, 2, 64, 4, 1, 1
    # else two rows share A's loads, A in double-buffered groups of 8, two waves a workgroup in step
    if s.n % 4 == 0:
        return 2, 1, 8, 64, 2
    return (2 if s.n % 2 == 0 else 1), 1, 8, 64, 1


def persistent_blocks(mm: MatmulOp) -> bool:
    """Whether the lane GEMV of ``mm`` loops over row blocks with the grid's stride
    (:meth:`LaneGemvBuilder._persistent_blocks`; its grid chosen at launch,
    :func:`vlpc.kernel.persistent_grid`): only where the matmul asks (``gemv = "persistent"``).
    The rule is "never unasked" because the model finds it slower at every point measured but
    one (timing-only launches as benchmarks/gemv_ceiling.py, MI50 / MI60): f16 16 x 4096 x 4096
    64.2 / 62.8 us against 47.3 / 44.5 (MI50: 180 workgroups of about three blocks; the model
    charges CU 0 an HBM fetch for each of A's lines it evicted and reads again, 854 KB from HBM
    against 596, where every round of the plain grid finds them shared with the other CUs),
    int8 16 x 4096 x 4096 35.0 / 34.0 against 26.9 / 25.2, int8 1 x 4096 x 4096 22.7 / 22.3
    against 22.0 / 21.7 (one-wave workgroups, 24 a CU: their starts were already under the
    others' loads), int8 4 x 4096 x 4096 22.0 / 24.8 against 22.5 / 22.0; docs/kernels.md
    ("Persistent row blocks")."""
    choice = mm.attributes.get("gemv")
    return isinstance(choice, StringAttr) and choice.data == "persistent"


def fewer_rounds_at_four(workgroups: int, gpu: str = "") -> bool:
    """Whether ``workgroups`` take fewer rounds on CU 0 with four resident a CU than with three on
    the board ``gpu`` (a name in :data:`vlpc.targets.BOARDS`, the compile's ``gpu`` option), or
    where no board is named on every gfx906 board (MI50's 60 CUs, MI60's 64): the
    dispatcher hands the CUs the workgroups breadth-first, so CU 0 runs ceil(W / C) of them in
    ceil(ceil(W / C) / slots) rounds (runtime/timing/gpu.py, "Dispatch"), each round paying the
    start and the reduction (docs/kernels.md, "What bounds M = 16").  With no board named, four a
    CU only where no board ends in a shorter last round than with three: N = 4096 (512
    workgroups of 8 rows) keeps three (MI50: 9 a CU, rounds of 4, 4 and a lone one whose weights
    stream at a fraction of the CU's share; modeled f16 16 x 4096 x 4096 50.6 us against 47.3),
    N = 11008 (1,376) takes four (MI50 23 a CU: 6 rounds instead of 8); compiled for MI60
    (``gpu = "mi60"``, 8 a CU: two rounds of four, not 3 + 3 + 2) N = 4096 takes four (modeled,
    with B split: f16 43.9 us against 45.0, int8 24.4 against 25.4).  The board's CU count
    only: a ``cus`` option is not read here."""
    boards = [BOARDS[gpu]] if gpu in BOARDS else [b for b in BOARDS.values() if b.target.name == "gfx906"]
    counts = [math.ceil(workgroups / b.compute_units) for b in boards]
    return bool(counts) and all(-(-w // 4) < -(-w // 3) for w in counts)


def lane_gemv_kernels(mm: MatmulOp, name: str, gpu: str = "") -> list[gcn.KernelOp] | None:
    """The kernel of ``mm`` when :func:`lane_gemv_plan` applies (for the board ``gpu``, empty:
    every gfx906 board), else None."""
    plan = lane_gemv_plan(mm, gpu) if gpu else lane_gemv_plan(mm)
    if plan is None:
        return None
    return [LaneGemvBuilder(mm, name, *plan, persistent=persistent_blocks(mm)).build()]


class LaneGemvBuilder(DotKernelBuilder):
    """Builds the lane-along-K GEMV (module docstring); the dot kernels' kernel arguments and
    launch facts (macro tile M x R, one wave per workgroup)."""

    def __init__(self, mm: MatmulOp, name: str, rows: int, unroll: int, a_group: int, span: int = 64,
                 waves: int = 1, a_lds: int = 0, a_buffers: int = 2, a_ahead: int = 1, b_split: bool = False,
                 persistent: bool = False):
        super().__init__(mm, name)
        # persistent row blocks (:meth:`_persistent_blocks`): workgroup g computes blocks g, g + G,
        # ... with G the dispatch's workgroups (the hidden kernel argument hidden_block_count_x)
        self.persistent = bool(persistent)
        self.rows, self.unroll, self.a_group, self.span, self.waves = rows, unroll, a_group, span, waves
        # A staged in LDS once per workgroup and K step (:meth:`_whole_steps_lds`): every wave
        # stages M / W rows; span 64 and one K step an iteration
        self.a_lds, self.a_buffers = int(a_lds), a_buffers
        # A's rows read from LDS one group ahead of their dots (1), or each group right before its
        # dots (0: G x 4 VGPRs fewer)
        self.a_ahead = int(a_ahead)
        # half rows only: B's rows loaded in two ``global_load_dwordx2`` halves, the next step's low
        # half issued once every A row's low half met it (:meth:`_StagedA._step_halves`)
        self.b_split = bool(b_split) and self.a_ahead == 2
        if self.a_lds and (span != 64 or self.shape.m % waves):
            raise ValueError(f"A in LDS needs span 64 and M a multiple of the waves, not span {span}, "
                             f"M {self.shape.m}, {waves} waves")
        self.mt_m, self.mt_n = self.shape.m, rows * (64 // span) * waves
        self.wg_size = (64 * waves, 1, 1)
        self.local, self.split = 1, 1

    def build(self) -> gcn.KernelOp:
        """The kernel: :meth:`_prologue` (kernel arguments, the wave's rows, the lanes' offsets),
        :meth:`_k_loop` (the whole K steps, then a partial last one), :meth:`_epilogue` (the
        reduction of the lanes' partials and C)."""
        p = self._prologue()
        if self.persistent:
            self._persistent_blocks(p)
        else:
            acc = self._k_loop(p)
            self._epilogue(p, acc)
        lds = self.waves * self.reduce_bytes()
        if self.a_lds:
            lds = max(lds, self.a_buffers * self.a_lds_buffer())
        kernel = self._finish(p.entry, lds)
        if self.persistent:  # the launch may choose a grid of fewer workgroups (vlpc.kernel.persistent_grid)
            add_launch_facts(kernel, persistent=1)
        return kernel

    def kernargs(self) -> list[dict]:
        """The dot kernels' arguments; persistent, then the hidden ``hidden_block_count_x`` (the
        dispatch's workgroups in x, filled by the runtime: AMDGPUUsage "Code Object V5 Metadata")
        after them, 8-byte aligned."""
        args = super().kernargs()
        if self.persistent:
            end = -(-max(a["offset"] + a["size"] for a in args) // 8) * 8
            args.append(dict(name="hidden_block_count_x", offset=end, size=4,
                             value_kind="hidden_block_count_x", type="int"))
        return args

    def _rows_of(self, e: Emitter, block: SSAValue, wave: SSAValue | None, ptr_b: SSAValue
                 ) -> tuple[SSAValue, SSAValue]:
        """(the wave's first weight row n0, B's row n0) in row block ``block`` (an SGPR)."""
        slots = 64 // self.span
        n0 = e.mul(block, self.rows * slots * self.waves)
        if wave is not None:
            n0 = e(gcn.SAddU32Op(n0, e.mul(wave, self.rows * slots))).sdst
        return n0, e.add64(ptr_b, *e.mul64(n0, self.shape.ldb * self.eb), comment="B row n0")

    def _persistent_blocks(self, p: _Lanes) -> None:
        """The row blocks of the workgroup: block g (its workgroup id), then g + G, g + 2 G, ...
        below N / rows a workgroup, G the dispatch's workgroups (``hidden_block_count_x``; N / rows
        where the host left it 0), each one :meth:`_k_loop` and :meth:`_epilogue` in a
        ``gcn.loop``, a barrier between one block's reduction (LDS) and the next block's A in LDS.
        The kernel start (the kernel arguments, the lanes' offsets) is paid once a workgroup, and
        a grid of the board's CUs x resident workgroups (:func:`vlpc.kernel.persistent_grid`)
        runs one round.  A workgroup past the blocks (a grid larger than them) ends at once."""
        e, nblk = p.e, self.shape.n // self.mt_n
        end = f".L{self.name}_blocks_done"
        e(gcn.SCmpLtU32Op(p.wg, e.const(nblk)))
        e(gcn.SCbranchForwardOp("scc0", end))
        # G, or N / rows for a 0 (min(G - 1, N / rows - 1) + 1: a grid larger than the blocks does one each)
        stride = e(gcn.SAddU32Op(e(gcn.SMinU32Op(e(gcn.SSubU32Op(p.count, 1)).sdst, e.const(nblk - 1))).sdst, 1,
                                 comment="workgroups of the grid: the blocks' stride")).sdst
        first = e(gcn.SAddU32Op(p.wg, 0, comment="the workgroup's first row block")).sdst
        body = Block(arg_types=[first.type])
        outer, e.block = e.block, body
        try:
            blk = body.args[0]
            n0, b_rows = self._rows_of(e, blk, p.wave, p.ptr_b)
            acc0 = [e(gcn.VMovB32Op(0)).vdst for _ in range(self.shape.m * self.rows)] if self.a_lds else None
            q = dataclasses.replace(p, n0=n0, b_rows=b_rows, acc0=acc0)
            self._epilogue(q, self._k_loop(q), end_kernel=False)
            e(gcn.SAndB64Op(p.lanes, -1, result_type=gcn.exec_type()))  # the whole wave for the next block
            if self.waves > 1:
                e(gcn.SBarrierOp(comment="the reduction's LDS read: the next block's A"))
            nxt = e(gcn.SAddU32Op(blk, stride, comment="the next row block")).sdst
            e(gcn.SCmpLtU32Op(nxt, e.const(nblk)))
            e(gcn.LoopBackOp([nxt], "scc1"))
        finally:
            e.block = outer
        e(gcn.LoopOp([first], Region(body), label=f".L{self.name}_blocks"))
        e(gcn.LabelOp(end))
        e(gcn.SEndpgmOp())

    def _prologue(self) -> _Lanes:
        """The entry block up to the K loop: the kernel arguments' loads, (A in LDS) the sums'
        zeros (issued while those are in flight), the wave's first weight row n0, B's row base,
        and each lane's byte offsets in B's R rows and A's G rows."""
        s, R, W = self.shape, self.rows, self.waves
        span = self.span  # lanes per weight row; 64 / span rows ("slots") per load
        slots = 64 // span
        lda_b, ldb_b = s.lda * self.eb, s.ldb * self.eb
        ke = kernel_entry(False, 1, R)
        e, tid = ke.e, ke.tid
        wave = None
        if W > 1:  # waves per workgroup, in step: one barrier per loop iteration
            wave = e(gcn.VReadfirstlaneB32Op(e(gcn.VLshrrevB32Op(6, tid)).vdst)).sdst
            tid = e(gcn.VAndB32Op(63, tid)).vdst  # the lane
        kargs = {a["name"]: a["offset"] for a in self.kernargs()}
        lanes = e(gcn.SAndB64Op(ke.exec0, -1)).sdst  # a copy of the full EXEC
        kp = ke.kp
        ptr_a = e(gcn.SLoadDwordx2Op(kp, kargs["A"], comment="kernarg A")).sdst
        ptr_b = e(gcn.SLoadDwordx2Op(kp, kargs["B"], comment="kernarg B")).sdst
        ptr_c = e(gcn.SLoadDwordx2Op(kp, kargs["C"], comment="kernarg C")).sdst
        alpha = e(gcn.SLoadDwordOp(kp, kargs["alpha"], comment="kernarg alpha")).sdst
        beta = e(gcn.SLoadDwordOp(kp, kargs["beta"], comment="kernarg beta")).sdst
        # A in LDS: the sums' zeros while the kernel arguments are in flight (the first use of B's
        # address waits; modeled, int8 16 x 4096 x 4096 on MI50: 28.4 -> 27.8 us; one wave's M <= 8
        # kernel models slower so, and zeroes them after)
        count = None
        if self.persistent:  # the grid's workgroups; the block's rows and sums come in the blocks' loop
            count = e(gcn.SLoadDwordOp(kp, kargs["hidden_block_count_x"], comment="kernarg: the grid")).sdst
            acc = n0 = b_rows = None
        else:
            acc = [e(gcn.VMovB32Op(0)).vdst for _ in range(s.m * R)] if self.a_lds else None
            n0, b_rows = self._rows_of(e, ke.wg_x, wave, ptr_b)
        kl = tid if slots == 1 else e(gcn.VAndB32Op(span - 1, tid)).vdst  # the lane's place in its row
        lane16 = e(gcn.VLshlrevB32Op(4, kl)).vdst

        def offsets(ld_b: int, count: int, first: SSAValue) -> list[SSAValue]:
            return [first if i == 0 else e(gcn.VAddU32Op(e.const(i * ld_b), first)).vdst for i in range(count)]

        slot_b = lane16  # row i slots + slot of B: (i slots + slot) x ldb bytes
        if slots > 1:
            slot = e(gcn.VLshrrevB32Op(span.bit_length() - 1, tid)).vdst
            slot_b = e(gcn.VAddU32Op(e(gcn.VMulLoU32Op(slot, e.const(ldb_b))).vdst, lane16)).vdst
        voff_b = offsets(slots * ldb_b, R, slot_b)
        voff_a = offsets(lda_b, self.a_group, lane16)  # row m0 + i of A (A's SGPR base at row m0)
        return _Lanes(ke.block, e, tid, wave, lanes, ptr_a, ptr_c, alpha, beta, n0, b_rows, kl, voff_b, voff_a, acc,
                      ke.wg_x, ptr_b, count)

    def _dots(self, e: Emitter, acc: list[SSAValue], b_rows: list[SSAValue], a_m: SSAValue, m: int) -> None:
        """acc[m R + r] += B row r x A row m over a lane's 16 bytes (four ``v_dot2_f32_f16`` /
        ``v_dot4_i32_i8``, one per dword), in place, r = 0 .. R - 1."""
        dot_op = gcn.VDot4I32I8Op if self.shape.dtype == "i8" else gcn.VDot2F32F16Op
        for r in range(self.rows):
            x = acc[m * self.rows + r]
            for q in range(4):
                x = e(dot_op(e.sub(b_rows[r], q, 1), e.sub(a_m, q, 1), x)).vdst
            acc[m * self.rows + r] = x

    def _k_loop(self, p: _Lanes) -> list[SSAValue]:
        """The R x M partial sums of each lane after all of K: zeros, the whole K steps
        (:meth:`_whole_steps_lds` with A in LDS, else :meth:`_whole_steps`), then a partial last
        step (:meth:`_partial_step`)."""
        s, e = self.shape, p.e
        STEP = 16 * self.span
        steps = s.k * self.eb // STEP
        # B one batch of U steps ahead: the loop's body computes U steps while the next U steps' B
        # loads are in flight; the last batch, after the loop, loads nothing past the rows
        acc = p.acc0 or [e(gcn.VMovB32Op(0)).vdst for _ in range(s.m * self.rows)]
        tail = s.k * self.eb - steps * STEP  # bytes of a last, partial K step (lanes 16 x kl < tail)
        if tail:  # (before the loop: its carried bases take the registers of their first values)
            a_t = e.add64(p.ptr_a, steps * STEP, 0, comment="A: the partial last step")
            b_t = e.add64(p.b_rows, steps * STEP, 0, comment="B: the partial last step")
        if steps and self.a_lds:
            acc = self._whole_steps_lds(e, acc, steps, p.ptr_a, p.b_rows, p.voff_b, p.tid, p.wave)
        elif steps:
            acc = self._whole_steps(p, acc, steps)
        if tail:
            self._partial_step(p, acc, tail, a_t, b_t)
        return acc

    def _partial_step(self, p: _Lanes, acc: list[SSAValue], tail: int, a_t: SSAValue, b_t: SSAValue) -> None:
        """acc (in place) += the last ``tail`` bytes of K (fewer than a step) from A at ``a_t`` and
        B at ``b_t``: lanes 16 kl >= tail load nothing and keep zeros (the loads' merge operand),
        so their dots add 0 x 0."""
        e, M, R, G = p.e, self.shape.m, self.rows, self.a_group

        def zero4() -> SSAValue:
            return e(gcn.RegSequenceOp([e(gcn.VMovB32Op(0)).vdst for _ in range(4)])).result

        merges = [zero4() for _ in range(R + M)]
        e(gcn.SAndB64Op(p.lanes, e(gcn.VCmpGtU32Op(e.const(tail // 16), p.kl)).sdst, result_type=gcn.exec_type()))
        bt = [e(gcn.GlobalLoadDwordx4Op(p.voff_b[r], b_t, comment=f"B row {r}, partial step", merge=merges[r])).vdst
              for r in range(R)]
        at, a_grp = [], a_t  # rows m of A in groups of G (voff_a: G rows from a group's base)
        for m in range(M):
            if m % G == 0 and m:
                a_grp = e.add64(a_t, m * self.shape.lda * self.eb, 0)
            at.append(e(gcn.GlobalLoadDwordx4Op(p.voff_a[m % G], a_grp, comment=f"A row {m}, partial step",
                                                merge=merges[R + m])).vdst)
        e(gcn.SAndB64Op(p.lanes, -1, result_type=gcn.exec_type()))
        for m in range(M):
            self._dots(e, acc, bt, at[m], m)

    def _epilogue(self, p: _Lanes, acc: list[SSAValue], end_kernel: bool = True) -> None:
        """After the K loop: (A in LDS) C loaded first (:meth:`_load_c_first`: its latency under the
        barrier and the reduction; modeled, f16 16 x 4096 x 4096 on MI50: 49.3 -> 48.7 us; the
        one-wave M <= 8 kernel models no faster so and reads C after its reduction), (A in LDS,
        several waves) a barrier, every wave's last reads of A's LDS done before the reduction
        writes there; then :meth:`_reduce_and_store`."""
        is_int = self.shape.dtype == "i8"
        tid = p.tid
        if self.a_ahead == 2:  # the lane again from its offset (16 x lane, live in the loop): its VGPR free in the loop
            tid = p.e(gcn.VLshrrevB32Op(4, p.voff_b[0])).vdst
        c_first = self._load_c_first(p.e, tid, p.lanes, p.ptr_c, p.n0, p.beta, is_int) if self.a_lds else None
        if self.a_lds and self.waves > 1 and self.shape.k * self.eb >= 16 * self.span:
            p.e(gcn.SBarrierOp(comment="A's LDS read: the reduction's now"))
        self._reduce_and_store(p.e, acc, p.lanes, tid, p.wave, p.ptr_c, p.n0, p.alpha, p.beta, is_int, c_first,
                               end_kernel)

    def reduce_chunk(self) -> int:
        """Sums added per pass of the LDS reduction (module docstring): :data:`REDUCE_CHUNK`, or
        with A in LDS (span 64) as many multiples of 8 as A's two buffers hold (8 x 64 x 4
        bytes each per wave): fewer round trips through LDS."""
        if not self.a_lds:
            return REDUCE_CHUNK
        fit = self.a_buffers * self.a_lds_buffer() // (self.waves * 64 * 4) // REDUCE_CHUNK * REDUCE_CHUNK
        need = -(-self.shape.m * self.rows // REDUCE_CHUNK) * REDUCE_CHUNK
        return max(REDUCE_CHUNK, min(64, fit, need))

    def reduce_bytes(self) -> int:
        """LDS bytes of one wave's reduction: :data:`REDUCE_BYTES`, or 64 x 4 per sum of a larger
        chunk (its second level written over the first's)."""
        c = self.reduce_chunk()
        return REDUCE_BYTES if c == REDUCE_CHUNK else c * 64 * 4

    def a_lds_buffer(self) -> int:
        """Bytes of one of the two LDS buffers of A (one K step of its M rows), a power of two: a
        lane's address switches buffers with one ``v_xor_b32``."""
        need = self.shape.m * 16 * self.span
        return 1 << (need - 1).bit_length()

    def _whole_steps_lds(self, e: Emitter, acc: list[SSAValue], steps: int, ptr_a: SSAValue, b_rows: SSAValue,
                         voff_b: list[SSAValue], tid: SSAValue, wave: SSAValue | None) -> list[SSAValue]:
        """acc after the ``steps`` whole K steps, A read from LDS.  Each K step's M rows of A are
        loaded once per workgroup, M / W rows by each wave (``global_load_dwordx4``, one step
        ahead), written to one of two LDS buffers (``ds_write_b128``) while the waves read the other
        (``ds_read_b128``: lane l reads bytes 16 l .. 16 l + 15 of each row's step, in groups of G
        rows, one group ahead), one ``s_barrier`` per step between the writes and the reads (the
        waitcnt pass puts lgkmcnt(0) before it).  Per step a wave loads R rows of B (for the next
        step, after its dots) and M / W of A, instead of R + M rows: the texture path moves
        (R W + M) KiB per R W KiB of weights instead of (R + M) W, and the LDS (128 bytes a clock:
        a conflict-free ``ds_read_b128`` takes 8 clocks) serves A's M W reads.  The steps:
        :meth:`_StagedA.prologue` (B's first D steps, A's first E + 1, step 0 in LDS),
        :meth:`_StagedA.loop` (L steps an iteration while every load is inside K), then the last
        steps peeled (:meth:`_StagedA.iteration` with the loads past K left out)."""
        k = _StagedA(self, e, steps, ptr_a, b_rows, voff_b, tid, wave)
        st = k.prologue()
        j0 = 0
        if k.iters >= 2:
            st = k.loop(st, acc)
            j0 = k.iters * k.L
        else:
            st = (*st, acc)
        for j in range(j0, steps):
            st = k.iteration(*st, k.flags(j), j)
        return st[-1]

    def _load_b(self, p: _Lanes, b_base: SSAValue, count: int) -> list[list[SSAValue]]:
        """B's R rows of ``count`` K steps from ``b_base``."""
        e, STEP = p.e, 16 * self.span
        return [[e(gcn.GlobalLoadDwordx4Op(p.voff_b[r], e.add64(b_base, j * STEP, 0) if j else b_base,
                                           comment=f"B row {r}, step +{j}")).vdst
                 for r in range(self.rows)] for j in range(count)]

    def _load_a_group(self, p: _Lanes, a_base: SSAValue, j: int, m0: int) -> list[SSAValue]:
        """Rows m0 .. m0 + G - 1 of A's step j from ``a_base``."""
        e, G = p.e, self.a_group
        base = a_base
        if j or m0:
            base = e.add64(a_base, j * 16 * self.span + m0 * self.shape.lda * self.eb, 0)
        return [e(gcn.GlobalLoadDwordx4Op(p.voff_a[i], base, comment=f"A row {m0 + i}, step +{j}")).vdst
                for i in range(min(G, self.shape.m - m0))]

    def _steps_of(self, p: _Lanes, a_base: SSAValue, acc: list[SSAValue], bv: list[list[SSAValue]],
                  b_next: SSAValue | None, a_first: list[SSAValue], a_next: SSAValue | None
                  ) -> tuple[list[SSAValue], list[list[SSAValue]], list[SSAValue]]:
        """acc[m R + r] += the K steps whose B is ``bv`` (loaded before), A from ``a_base`` in groups
        of G rows, each group loaded before the dots of the group before it; with ``b_next``, the
        B of the next as many steps from there, step j's loads right after step j's dots (into
        the registers those free: returned, carried around the loop without copies)."""
        e, M, R, G, STEP = p.e, self.shape.m, self.rows, self.a_group, 16 * self.span
        count = len(bv)
        groups = [(j, m0) for j in range(count) for m0 in range(0, M, G)]
        acc = list(acc)
        nbv: list[list[SSAValue]] = []
        nxt, a_after = a_first, []
        for gi, (j, m0) in enumerate(groups):
            av = nxt
            if gi + 1 < len(groups):
                nxt = self._load_a_group(p, a_base, *groups[gi + 1])
            elif a_next is not None and gi:  # (a single group: after its dots, into its registers)
                a_after = self._load_a_group(p, a_next, 0, 0)
            for i, a_m in enumerate(av):
                self._dots(e, acc, bv[j], a_m, m0 + i)
            if m0 + G >= M and b_next is not None:  # step j's B is used up: its registers load the next
                base = e.add64(b_next, j * STEP, 0) if j else b_next
                nbv.append([e(gcn.GlobalLoadDwordx4Op(p.voff_b[r], base, comment=f"next B row {r}, step +{j}")).vdst
                            for r in range(R)])
        if a_next is not None and not a_after:
            a_after = self._load_a_group(p, a_next, 0, 0)
        return acc, nbv, a_after

    def _whole_steps(self, p: _Lanes, acc: list[SSAValue], steps: int) -> list[SSAValue]:
        """acc after the ``steps`` whole K steps (the loop of U steps an iteration, then the last U)."""
        e = p.e
        M, R, U, W = self.shape.m, self.rows, self.unroll, self.waves
        STEP = 16 * self.span
        iters = steps // U
        bv = self._load_b(p, p.b_rows, U)
        a_first = self._load_a_group(p, p.ptr_a, 0, 0)
        a_cur = p.ptr_a
        ng = len(a_first)
        sizes = [1, 1, 1, *([R] * U), ng, M * R]  # loop-carried: steps done, A, B, B of U steps, A group, sums

        def cut(values) -> list[list[SSAValue]]:
            """``values`` (the carried list) in the pieces of ``sizes``."""
            out, i = [], 0
            for n in sizes:
                out.append(list(values[i:i + n]))
                i += n
            return out

        if iters > 1:
            carried = [e.const(0), a_cur, p.b_rows, *(v for st in bv for v in st), *a_first, *acc]
            body = Block(arg_types=[v.type for v in carried])
            outer, e.block = e.block, body
            try:
                (k_i,), (a_i,), (b_i,), *pieces = cut(body.args)
                b_n = e.add64(b_i, U * STEP, 0, comment="B: next steps")
                a_pre = e.add64(a_i, U * STEP, 0, comment="A: next steps' first group")
                acc_i, nbv, naf = self._steps_of(p, a_i, pieces[-1], pieces[:U], b_n, pieces[U], a_pre)
                a_n = e.add64(a_i, U * STEP, 0, comment="A: next steps")  # (a_i's registers)
                if W > 1:  # the workgroup's waves in step: A's lines read by all of them at once
                    e(gcn.SBarrierOp())
                k_n = e(gcn.SAddU32Op(k_i, U, comment="steps done")).sdst
                e(gcn.SCmpLgU32Op(k_n, e.const(steps - U)))
                e(gcn.LoopBackOp([k_n, a_n, b_n, *(v for st in nbv for v in st), *naf, *acc_i], "scc1"))
            finally:
                e.block = outer
            loop = e(gcn.LoopOp(carried, Region(body), label=f".L{self.name}_k_steps"))
            _, (a_cur,), _, *pieces = cut(loop.res)
            bv, a_first, acc = pieces[:U], pieces[U], pieces[-1]
        acc, _, _ = self._steps_of(p, a_cur, acc, bv, None, a_first, None)
        return acc

    def _reduce_and_store(self, e: Emitter, acc: list[SSAValue], lanes: SSAValue, tid: SSAValue,
                          wave: SSAValue | None, ptr_c: SSAValue, n0: SSAValue, alpha: SSAValue, beta: SSAValue,
                          is_int: bool, c_first=None, end_kernel: bool = True) -> None:
        """The lanes' partials of each sum added (:meth:`_reduce_butterfly` where
        :meth:`butterfly` says so, else :meth:`_reduce_lds`), then C (module docstring);
        ``c_first``: C already loaded (:meth:`_load_c_first`), else C is read here, after the
        reduction."""
        s = self.shape
        if self.butterfly():
            sums = [(0, len(acc), self._reduce_butterfly(e, acc, lanes, tid, wave, is_int))]
        else:
            sums = self._reduce_lds(e, acc, lanes, tid, wave, is_int)
        c_esz = ELEMENT_BYTES[s.c_type]

        # ---- output: lane l of a chunk stores C[m, n0 + r] for sum v = c0 + l = m R + r ----
        if c_first is None:
            c_base = e.add64(ptr_c, e.mul(n0, c_esz), 0, comment="C + n0")
        totals = [t for _, _, t in sums]
        e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))
        if c_first is None:
            totals, read_c = blas_quick_returns(e, alpha, beta, lanes, totals, is_int, self.name)
        elif not is_int:  # (C read before the reduction: :meth:`_load_c_first`)
            totals = zero_if_alpha_zero(e, alpha, 1, totals, f".L{self.name}_alpha_nonzero")
        c_store = gcn.GlobalStoreShortOp if s.c_type == "f16" else gcn.GlobalStoreDwordOp
        for i, ((c0, cv, _), total) in enumerate(zip(sums, totals)):  # (the sums after the alpha = 0 quick return)
            if c_first is None:
                voff_c, mask = self._c_of_chunk(e, tid, c0, cv)
                c = self._c_load(e, voff_c, c_base, c0, read_c, mask)
            else:
                c_base, (voff_c, mask, c) = c_first[0], c_first[1][i]
            e(gcn.SAndB64Op(lanes, mask, result_type=gcn.exec_type()))
            if is_int:
                out = e(gcn.VAddU32Op(e(gcn.VMulLoU32Op(c, beta)).vdst, e(gcn.VMulLoU32Op(total, alpha)).vdst)).vdst
            else:
                if s.c_type == "f16":
                    c = e(gcn.VCvtF32F16Op(c)).vdst
                out = e(gcn.VFmaF32Op(total, alpha, e(gcn.VMulF32Op(beta, c)).vdst)).vdst
                if s.c_type == "f16":
                    out = e(gcn.VCvtF16F32Op(out)).vdst
            e(c_store(voff_c, out, c_base))
        if end_kernel:
            e(gcn.SEndpgmOp())

    def _reduce_lds(self, e: Emitter, acc: list[SSAValue], lanes: SSAValue, tid: SSAValue,
                    wave: SSAValue | None, is_int: bool) -> list[tuple[int, int, SSAValue]]:
        """The lanes' partials of each sum added through LDS in chunks (module docstring):
        [(first sum c0, count cv, the sums: lane l holds sum c0 + l / slots)]."""
        s = self.shape
        M, R, span = s.m, self.rows, self.span
        slots = 64 // span

        # ---- the 64 lanes' partials of each sum, through LDS in chunks of REDUCE_CHUNK sums ----
        add = gcn.VAddU32Op if is_int else gcn.VAddF32Op
        chunk = self.reduce_chunk()
        per_wave = self.reduce_bytes()

        def lds_addr(shift: int) -> SSAValue:
            v = e(gcn.VLshlrevB32Op(shift, tid)).vdst
            return v if wave is None else e(gcn.VAddU32Op(e.mul(wave, per_wave), v)).vdst

        lane4, lane32 = lds_addr(2), lds_addr(5)
        # the second level's partials after the lanes' partials; a chunk of more than 8 sums writes
        # them over its first 8 sums' partials, read before (a wave's LDS operations run in order)
        level2 = REDUCE_CHUNK * 64 * 4 if chunk == REDUCE_CHUNK else 0

        def sum_of(addr: SSAValue, offset: int, count: int) -> SSAValue:
            """The sum of ``count`` (8, 4 or 2) dwords at LDS[addr + offset], in order."""
            if count == 2:
                parts = [e(gcn.DsReadB64Op(addr, offset=offset)).vdst]
            else:
                parts = [e(gcn.DsReadB128Op(addr, offset=offset + 16 * h)).vdst for h in range(count // 4)]
            w = 2 if count == 2 else 4
            x = e.sub(parts[0], 0, 1)
            for q in range(1, count):
                x = e(add(x, e.sub(parts[q // w], q % w, 1))).vdst
            return x

        lane_l2 = lane32 if span == 64 else lds_addr((span // 2).bit_length() - 1)

        def first_lanes(count: int) -> None:
            if count >= 64:
                e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))
            else:
                mask = e(gcn.VCmpGtU32Op(e.const(count), tid)).sdst
                e(gcn.SAndB64Op(lanes, mask, result_type=gcn.exec_type()))

        sums = []  # (first sum, count, the sums in lanes 0 .. count - 1)
        V = M * R
        for c0 in range(0, V, chunk):
            cv = min(chunk, V - c0)
            e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))
            for i in range(cv):
                e(gcn.DsWriteB32Op(lane4, acc[c0 + i], offset=i * 256, comment=f"partial of sum {c0 + i}"))
            for p in range(0, cv, REDUCE_CHUNK):  # 8 sums a pass
                first_lanes(8 * min(REDUCE_CHUNK, cv - p))  # lane l: sum p + l / 8, lanes 8 (l % 8) ..
                e(gcn.DsWriteB32Op(lane4, sum_of(lane32, p * 256, 8), offset=level2 + p * 32,
                                   comment="8 lanes' partials"))
            first_lanes(cv * slots)  # lane l: sum c0 + l / slots of slot l % slots
            sums.append((c0, cv, sum_of(lane_l2, level2, span // 8)))

        return sums

    def butterfly(self) -> bool:
        """Whether the sums are added by :meth:`_reduce_butterfly`: A in LDS (the plan of M = 12,
        16), 64 lanes a row, at most 32 sums a lane."""
        return bool(self.a_lds) and self.span == 64 and self.shape.m * self.rows <= 32

    def _reduce_butterfly(self, e: Emitter, acc: list[SSAValue], lanes: SSAValue, tid: SSAValue,
                          wave: SSAValue | None, is_int: bool) -> SSAValue:
        """The 64 lanes' partials of each of the V <= 32 sums ``acc`` added by lane exchanges
        (:func:`~vlpc.passes.isel.emit.lane_sums_by_exchange`: five halvings through
        ``ds_swizzle_b32``, then the half-waves through the wave's LDS), lane l < V left holding
        sum l.  Per wave 31 swizzles and ~95 VALU instructions, against the LDS reduction's ~20 KiB
        through the CU's one LDS pipe (modeled: ``lds_bank_cycles``)."""
        return lane_sums_by_exchange(e, acc, lanes, tid, wave, self.reduce_bytes(), is_int)

    def _c_of_chunk(self, e: Emitter, tid: SSAValue, c0: int, cv: int) -> tuple[SSAValue, SSAValue]:
        """(byte offset of the lane's C element from C + n0, the lanes holding one of the chunk's
        ``cv`` sums) for the reduction's chunk of sums c0 .. c0 + cv - 1: lane l holds the sum
        v = c0 + l / slots = m R + r, C[m, n0 + r] (r: i slots + slot with several rows a load)."""
        R, slots = self.rows, 64 // self.span
        c_esz = ELEMENT_BYTES[self.shape.c_type]
        lv = tid if slots == 1 else e(gcn.VLshrrevB32Op(slots.bit_length() - 1, tid)).vdst
        v = e(gcn.VAddU32Op(e.const(c0), lv)).vdst if c0 else lv
        m_of = e(gcn.VLshrrevB32Op(R.bit_length() - 1, v)).vdst
        r_of = e(gcn.VAndB32Op(R - 1, v)).vdst
        if slots > 1:  # the row: i slots + slot
            r_of = e(gcn.VLshlAddU32Op(r_of, slots.bit_length() - 1, e(gcn.VAndB32Op(slots - 1, tid)).vdst)).vdst
        voff_c = e(gcn.VMulLoU32Op(m_of, e.const(self.shape.ldc * c_esz))).vdst
        voff_c = e(gcn.VLshlAddU32Op(r_of, c_esz.bit_length() - 1, voff_c)).vdst
        return voff_c, e(gcn.VCmpGtU32Op(e.const(cv * slots), tid)).sdst

    def _c_load(self, e: Emitter, voff_c: SSAValue, c_base: SSAValue, c0: int, read_c: SSAValue,
                mask: SSAValue) -> SSAValue:
        """C at ``c_base + voff_c`` in the lanes ``read_c & mask`` (``global_load_dword`` /
        ``_ushort``; EXEC left so), 0 in every other lane: the zero is written before EXEC narrows
        (under beta = 0 no lane reads C, and ``beta * C`` must not meet the register's old bits)."""
        c_load = gcn.GlobalLoadUshortOp if self.shape.c_type == "f16" else gcn.GlobalLoadDwordOp
        zero = e(gcn.VMovB32Op(0)).vdst
        e(gcn.SAndB64Op(read_c, mask, result_type=gcn.exec_type()))
        return e(c_load(voff_c, c_base, comment=f"C of sums {c0}..", merge=zero)).vdst

    def _load_c_first(self, e: Emitter, tid: SSAValue, lanes: SSAValue, ptr_c: SSAValue, n0: SSAValue,
                      beta: SSAValue, is_int: bool) -> tuple[SSAValue, list[tuple[SSAValue, SSAValue, SSAValue]]]:
        """C of every chunk of the reduction loaded before it (its latency under the reduction's LDS
        round trips; BLAS: beta = 0 reads no C, as :func:`~vlpc.passes.isel.dot.blas_quick_returns`):
        (C + n0, [(offset, lanes, C) per chunk]); EXEC the full wave after it."""
        c_base = e.add64(ptr_c, e.mul(n0, ELEMENT_BYTES[self.shape.c_type]), 0, comment="C + n0")
        if is_int:
            e(gcn.SCmpLgU32Op(beta, 0))  # SCC = (beta != 0)
        else:
            e(gcn.SAndB32Op(beta, 0x7FFFFFFF, comment="SCC = (beta != 0)"))
        read_c = e(gcn.SCselectB64Op(lanes, 0)).sdst  # BLAS: beta == 0 does not read C
        V = self.shape.m * self.rows
        chunk = V if self.butterfly() else self.reduce_chunk()  # (the reduction's chunks)
        out = []
        for c0 in range(0, V, chunk):
            voff_c, mask = self._c_of_chunk(e, tid, c0, min(chunk, V - c0))
            out.append((voff_c, mask, self._c_load(e, voff_c, c_base, c0, read_c, mask)))
            e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))  # (the next chunk's offsets in every lane)
        return c_base, out


@dataclass
class _Lanes:
    """What :meth:`LaneGemvBuilder._prologue` leaves for the K loop and the epilogue: the entry
    block and its emitter, the lane (``tid``, 0..63) and the wave in its workgroup (an SGPR, None
    for one wave), a copy of the full EXEC, the kernel arguments (A, C, alpha, beta), the wave's
    first weight row n0, B's row n0, the lane's place in its row (``kl``), its byte offsets in
    B's R rows and A's G rows, and (A in LDS) the R x M sums' zeros."""

    entry: Block
    e: Emitter
    tid: SSAValue
    wave: SSAValue | None
    lanes: SSAValue
    ptr_a: SSAValue
    ptr_c: SSAValue
    alpha: SSAValue
    beta: SSAValue
    n0: SSAValue
    b_rows: SSAValue
    kl: SSAValue
    voff_b: list[SSAValue]
    voff_a: list[SSAValue]
    acc0: list[SSAValue] | None
    wg: SSAValue | None = None  # the workgroup id, B's base and (persistent) the grid's workgroups
    ptr_b: SSAValue | None = None
    count: SSAValue | None = None


class _StagedA:
    """The whole K steps with A staged in LDS (:meth:`LaneGemvBuilder._whole_steps_lds`): B D
    steps ahead (step j's registers load step j + D), A's staged rows E steps ahead (step j + 1 + E
    loaded after step j + 1's write), L = lcm(D, E) steps a loop iteration so that every slot is
    reloaded in place.  Constructing it emits the lane's LDS offset and the wave's A rows."""

    def __init__(self, b: LaneGemvBuilder, e: Emitter, steps: int, ptr_a: SSAValue, b_rows: SSAValue,
                 voff_b: list[SSAValue], tid: SSAValue, wave: SSAValue | None):
        s = b.shape
        self.b, self.e, self.steps, self.b_rows, self.voff_b, self.tid = b, e, steps, b_rows, voff_b, tid
        self.M, self.R, self.W, self.G = s.m, b.rows, b.waves, b.a_group
        self.STEP = 16 * b.span
        self.lda_b = s.lda * b.eb
        self.per = self.M // self.W  # rows of A each wave stages
        self.buf = b.a_lds_buffer()
        self.ldb_b = s.ldb * b.eb
        # half rows (a_ahead 2; :meth:`_step_halves`): the kernel in 64 VGPRs (four waves a SIMD).  A
        # row's step sits in LDS as two planes of 8 bytes a lane (dwords 0-1 of every lane, then
        # dwords 2-3): ds_read_b64 / ds_write_b64 at 8 bytes a lane meet no bank conflict (at 16,
        # lanes l and l + 8 of a 16-lane pass share a bank).  B's rows from SGPR bases with the
        # lane's one offset, LDS's offset not loop-carried, the lane recomputed after the loop.
        self.halves = b.a_ahead == 2
        # B in two halves (dwords 0-1, 2-3 of the lane's 16 bytes; ``global_load_dwordx2``): a step's
        # B is [low of rows 0 .. R - 1, high of rows 0 .. R - 1], ``nb`` values
        self.split = self.halves and b.b_split
        self.nb = self.R * (2 if self.split else 1)
        if self.halves:
            self.lane16 = voff_b[0]  # the lane's 16 bytes of a row's step (span 64: B's row 0 offset)
            self.lds_lane = e(gcn.VLshrrevB32Op(1, self.lane16)).vdst  # its 8 bytes of a plane
        else:
            self.lane16 = e(gcn.VLshlrevB32Op(4, tid)).vdst  # the lane's 16 bytes of a row's step (buffer 0)
        self.a_stage = ptr_a if wave is None else e.add64(ptr_a, e.mul(wave, self.per * self.lda_b), 0,
                                                          comment="A: the wave's rows")
        # (the rows' offsets in SGPRs, lane16 the only VGPR offset: fewer VGPRs, more waves a SIMD)
        self.w_off = None if wave is None else e.mul(wave, self.per * self.STEP)  # the wave's rows in a buffer
        self.D = max(1, b.unroll)  # B's K steps in flight: step j's registers load step j + D
        self.E = max(1, int(b.a_lds))  # A's staged steps in flight: step j + 1 + E loaded after step j + 1's write
        self.L = self.D * self.E // math.gcd(self.D, self.E)  # steps a loop iteration
        self.iters = max(0, steps - max(self.D, self.E + 1)) // self.L  # loop iterations: every load inside K

    def load_b(self, base: SSAValue, what: str) -> list[SSAValue]:
        """B's R rows of the K step at ``base`` (row 0's address): row r from the SGPR base
        ``base + r ldb`` with the lane's one VGPR offset (one VGPR fewer than an offset a row)."""
        e = self.e
        if not self.halves:  # (a VGPR offset a row)
            return [e(gcn.GlobalLoadDwordx4Op(self.voff_b[r], base, comment=what.format(r=r))).vdst
                    for r in range(self.R)]
        if self.split:
            return self.load_b_half(base, 0, what) + self.load_b_half(base, 1, what)
        return [e(gcn.GlobalLoadDwordx4Op(self.lane16, e.add64(base, r * self.ldb_b, 0) if r else base,
                                          comment=what.format(r=r))).vdst for r in range(self.R)]

    def load_b_half(self, base: SSAValue, h: int, what: str) -> list[SSAValue]:
        """Half ``h`` (dwords 2 h, 2 h + 1 of the lane's 16 bytes) of B's R rows of the K step at
        ``base`` (``global_load_dwordx2``, offset 8 h).  The wave's two halves of a row cover the same
        16 cache lines of one DRAM page: the first load's misses fetch them, the second meets those
        fills (the model's hit-on-miss, as an L2 in flight)."""
        e = self.e
        return [e(gcn.GlobalLoadDwordx2Op(self.lane16, e.add64(base, r * self.ldb_b, 0) if r else base, offset=8 * h,
                                          comment=what.format(r=r) + f", dwords {2 * h}..")).vdst
                for r in range(self.R)]

    def stage_load(self, base: SSAValue) -> list[SSAValue]:
        """The wave's M / W rows of A's step at ``base`` (``global_load_dwordx4``)."""
        e = self.e
        return [e(gcn.GlobalLoadDwordx4Op(self.lane16, e.add64(base, i * self.lda_b, 0) if i else base,
                                          comment=f"A: staged row +{i}")).vdst for i in range(self.per)]

    def stage_write(self, rd: SSAValue, regs: list[SSAValue]) -> None:
        """The wave's staged rows ``regs`` to the LDS buffer at ``rd`` (``ds_write_b128``)."""
        e = self.e
        wr = rd if self.w_off is None else e(gcn.VAddU32Op(self.w_off, rd)).vdst
        for i, v in enumerate(regs):
            if self.halves:  # the two planes (8 bytes a lane each)
                for h in range(2):
                    e(gcn.DsWriteB64Op(wr, e.sub(v, 2 * h, 2), offset=i * self.STEP + h * self.STEP // 2,
                                       comment=f"A: staged row +{i}, dwords {2 * h}.. to LDS"))
            else:
                e(gcn.DsWriteB128Op(wr, v, offset=i * self.STEP, comment=f"A: staged row +{i} to LDS"))

    def step(self, rd: SSAValue, bv: list[SSAValue], acc: list[SSAValue], b_next: SSAValue | None
             ) -> tuple[list[SSAValue], list[SSAValue]]:
        """The dots of one K step (A from the LDS buffer at ``rd``, read in groups of G rows, one
        group ahead); with ``b_next``, B's next step loaded after them into the registers they
        free."""
        e, M, G = self.e, self.M, self.G

        def group(m0: int) -> list[SSAValue]:
            return [e(gcn.DsReadB128Op(rd, offset=(m0 + i) * self.STEP, comment=f"A row {m0 + i}")).vdst
                    for i in range(min(G, M - m0))]

        acc = list(acc)
        ahead = self.b.a_ahead
        if ahead == 2:  # half rows (two dwords, ``ds_read_b64``), two halves ahead: 6 VGPRs for A
            return self._step_halves(rd, bv, acc, b_next)
        nxt = group(0) if ahead else []
        for m0 in range(0, M, G):
            av = nxt if ahead else group(m0)
            if ahead and m0 + G < M:
                nxt = group(m0 + G)
            for i, a_m in enumerate(av):
                self.b._dots(e, acc, bv, a_m, m0 + i)
        nbv = []
        if b_next is not None:
            nbv = self.load_b(b_next, "next B row {r}")
        return acc, nbv

    def _step_halves(self, rd: SSAValue, bv: list[SSAValue], acc: list[SSAValue], b_next: SSAValue | None
                     ) -> tuple[list[SSAValue], list[SSAValue]]:
        """:meth:`step` with A read in half rows: half k (row k / 2, dwords 2 (k mod 2) and the next,
        ``ds_read_b64``) read right before the dots of half k - 2, into the registers half k - 3's
        dots freed: the lead of a whole row with 6 VGPRs of A instead of 8.  Each sum still adds
        its dots in the order of :meth:`LaneGemvBuilder._dots` (dwords 0 .. 3 of row m, then row
        m + 1): the same results.  B split (``b_split``): the halves go every row's low half, then
        every row's high half (a sum still adds dwords 0 .. 3 of its row in order), and the next
        step's low halves of B load between the two passes, into the registers the first freed:
        the weights' HBM fetch goes out half a step earlier (the high halves meet those lines'
        fills)."""
        e, M, R = self.e, self.M, self.R
        dot_op = gcn.VDot4I32I8Op if self.b.shape.dtype == "i8" else gcn.VDot2F32F16Op
        H = 2 * M

        def half(k: int) -> SSAValue:
            return e(gcn.DsReadB64Op(rd, offset=(k // 2) * self.STEP + (k % 2) * self.STEP // 2,
                                     comment=f"A row {k // 2}, dwords {2 * (k % 2)}..")).vdst

        acc = list(acc)
        # the halves in order: (row, half) = (k / 2, k mod 2); B split: every row's low half, then
        # every row's high half, the next step's low B loaded between them
        order = ([(m, h) for h in range(2) for m in range(M)] if self.split
                 else [(k // 2, k % 2) for k in range(H)])
        ring = {k: half(2 * order[k][0] + order[k][1]) for k in range(min(2, H))}
        nbv: list[SSAValue] = []
        for k in range(H):
            if k + 2 < H:
                ring[k + 2] = half(2 * order[k + 2][0] + order[k + 2][1])
            a, (m, h) = ring.pop(k), order[k]
            for r in range(R):
                x = acc[m * R + r]
                for q in range(2):
                    b_q = e.sub(bv[h * R + r], q, 1) if self.split else e.sub(bv[r], 2 * h + q, 1)
                    x = e(dot_op(b_q, e.sub(a, q, 1), x)).vdst
                acc[m * R + r] = x
            if self.split and k == M - 1 and b_next is not None:  # B's low halves used up
                nbv = self.load_b_half(b_next, 0, "next B row {r}")
        if b_next is not None:
            nbv = nbv + self.load_b_half(b_next, 1, "next B row {r}") if self.split else \
                self.load_b(b_next, "next B row {r}")
        return acc, nbv

    def iteration(self, rd, a_i, b_i, bq, sq, acc, flags, j):
        """K step j (B ``bq[j mod D]``, A in the buffer at ``rd``; ``sq[(j + 1) mod E]``: A's
        staged rows of step j + 1, ``a_i`` the base of the last staged step, ``b_i`` B's base
        of step j): the dots, then as ``flags`` say B of step j + D into ``bq[j mod D]``'s
        registers, A's step j + 1 into the other buffer, A's step j + 1 + E into its
        registers, the barrier."""
        e, D, E, W, STEP = self.e, self.D, self.E, self.W, self.STEP
        load_b, write_a, load_a = flags
        d, es = j % D, (j + 1) % E
        b_n = e.add64(b_i, STEP, 0, comment="B: next step")
        acc, nbv = self.step(rd, bq[d], acc, (e.add64(b_n, (D - 1) * STEP, 0) if D > 1 else b_n) if load_b else None)
        bq, sq = list(bq), list(sq)
        bq[d] = nbv if load_b else []
        rd_n, a_n = rd, a_i
        if write_a:
            if self.b.a_buffers == 1:  # one buffer: every wave's reads of step j done first
                if W > 1:
                    e(gcn.SBarrierOp(comment="A's step read"))
            else:
                rd_n = e(gcn.VXorB32Op(self.buf, rd)).vdst  # the other buffer
            self.stage_write(rd_n, sq[es])
            sq[es] = []
            if load_a:
                a_n = e.add64(a_i, STEP, 0, comment="A: a step ahead")
                sq[es] = self.stage_load(a_n)
            if W > 1:
                e(gcn.SBarrierOp(comment="A's next step in LDS"))
        return rd_n, a_n, b_n, bq, sq, acc

    def flags(self, j: int) -> tuple[bool, bool, bool]:
        """(B of step j + D, A's step j + 1 to LDS, A's step j + 1 + E loaded): those inside K."""
        return j + self.D < self.steps, j + 1 < self.steps, j + 1 + self.E < self.steps

    def prologue(self):
        """A's step 0 loaded and written to LDS, B's first D steps and A's steps 1 .. E loaded, the
        barrier: (rd, a_i, b_i, bq, sq) for step 0."""
        e, D, E, R, STEP = self.e, self.D, self.E, self.R, self.STEP
        st0 = self.stage_load(self.a_stage)
        bq = [self.load_b(e.add64(self.b_rows, d * STEP, 0) if d else self.b_rows, f"B row {{r}}, step {d}")
              for d in range(min(D, self.steps))]
        # one buffer: the lane's offset itself; two: a copy (a loop-carried value has its own registers)
        if self.halves and self.b.a_buffers == 1:
            rd = self.lds_lane
        else:  # (not lane16: a loop-carried value has its own registers)
            rd = e(gcn.VLshlrevB32Op(3 if self.halves else 4, self.tid)).vdst
        self.stage_write(rd, st0)
        a_i = self.a_stage
        sq: list[list[SSAValue]] = [[] for _ in range(E)]
        for x in range(1, min(E, self.steps - 1) + 1):  # A's steps 1 .. E, step x in slot x mod E
            a_i = e.add64(self.a_stage, x * STEP, 0, comment=f"A: step {x}")
            sq[x % E] = self.stage_load(a_i)
        if self.W > 1:
            e(gcn.SBarrierOp(comment="A's first step in LDS"))
        return rd, a_i, self.b_rows, bq, sq

    def loop(self, st, acc):
        """The ``gcn.loop`` of ``iters`` iterations of L steps from the state ``st`` of
        :meth:`prologue`: (rd, a_i, b_i, bq, sq, acc) after it.  Half rows with one LDS buffer:
        ``rd`` never changes and is not carried (the lane's offset register serves inside the loop)."""
        e, D, E, R, L, per = self.e, self.D, self.E, self.R, self.L, self.per
        rd, a_i, b_i, bq, sq = st
        fixed = self.halves and self.b.a_buffers == 1
        head = 3 if fixed else 4  # steps done, (rd,) A's base, B's base
        carried = [e.const(0), *([] if fixed else [rd]), a_i, b_i, *(v for b in bq for v in b),
                   *(v for q in sq for v in q), *acc]
        body = Block(arg_types=[v.type for v in carried])
        outer, e.block = e.block, body
        nb = self.nb
        xs = head + D * nb

        def cut(vals):
            vals = list(vals)
            first = vals[:head] if not fixed else [vals[0], rd, *vals[1:head]]
            return (first, [vals[head + d * nb:head + (d + 1) * nb] for d in range(D)],
                    [vals[xs + q * per:xs + (q + 1) * per] for q in range(E)], vals[xs + E * per:])

        try:
            (k_i, rd_b, a_b, b_b), bq_b, sq_b, acc_b = cut(body.args)
            for j in range(L):
                rd_b, a_b, b_b, bq_b, sq_b, acc_b = self.iteration(rd_b, a_b, b_b, bq_b, sq_b, acc_b,
                                                                   (True, True, True), j)
            k_n = e(gcn.SAddU32Op(k_i, L, comment="steps done")).sdst
            e(gcn.SCmpLgU32Op(k_n, e.const(self.iters * L)))
            e(gcn.LoopBackOp([k_n, *([] if fixed else [rd_b]), a_b, b_b, *(v for b in bq_b for v in b),
                              *(v for q in sq_b for v in q), *acc_b], "scc1"))
        finally:
            e.block = outer
        loop = e(gcn.LoopOp(carried, Region(body), label=f".L{self.b.name}_k_steps"))
        (_, rd, a_i, b_i), bq, sq, acc = cut(loop.res)
        return rd, a_i, b_i, bq, sq, acc


__all__ = ["LANE_STEP_BYTES", "LaneGemvBuilder", "lane_gemv_kernels", "lane_gemv_plan"]
