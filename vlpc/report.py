"""``vlpc report``: the seed's section 2.11 table, measured on the kernels vlpc generates.

*An Alternative SGEMM on VEGA* (the seed, docs/references.md) compares a legacy LDS-tiled SGEMM with
its A-in-SGPR scheme in a table of register-file, LDS and barrier traffic, per
64x256 macro tile and per k step (the cost of a 64 x 1 x 256 product), and argues
that the saving shows up as power.  This module compiles the same GEMM with both
strategies (``convert-gemm-to-gcn{strategy=lds}`` and ``{strategy=sqc}``), runs each
on the functional emulator with its checkers on, verifies C against NumPy, and
measures the same rows from the executed instructions:

* The emulator counts, per instruction address, wave executions, lane executions
  and the VGPR/SGPR dwords read and written (``LaunchStats.by_pc``); reads of a
  VGPR the wave's previous VALU instruction wrote are counted as *forwarded*
  (the seed's data-forwarding assumption, section 2.9).
* Each executed instruction is matched to its op in the compiled IR, and each of
  its register operands to the SSA value it carries.  A value's *role* comes from
  its provenance: data loaded through the A, B or C kernel argument (through SMEM,
  VMEM or an LDS tile written with such data), accumulators (the addend and result
  of ``v_fma_f32``, their zero initialisation, the epilogue's alpha/beta products),
  or "other" (addresses, offsets, loop counters, kernel arguments).
* A row such as "Matrix A VGPR read" is the sum over executed instructions of the
  VGPR dwords x lanes read through operands whose role is A; LDS traffic is the
  VGPR data moved by ``ds_*``; memory traffic the dwords VMEM and SMEM loads return.
  Sums are cross-checked against the emulator's totals.
* Everything is normalised per 64x256 macro tile and per k: total x 64*256 / (M*N*K),
  in elements of the GEMM's type (the seed writes "unit in FP64"; vlpc's kernels are
  SGEMM, so one unit is one f32 / one 32-bit register access), whatever the
  kernels' own macro tile.  Prologue and epilogue (amortised over K) are included,
  and each row's note says how much of it they are.

Outputs: the table on standard output (Markdown), ``PREFIX.md`` (table, notes,
occupancy), ``PREFIX.csv`` and a chart ``PREFIX.svg`` (``--chart F.svg|F.png``: the
format follows the suffix; drawn by matplotlib, as ``vlpc bench --chart``).  Every
output path is checked before the emulation starts.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from vlpc.cli_support import pyplot, save_figure
from vlpc.errors import VlpcError
from vlpc.isa.classes import EXECUTION_CLASSES

#: The normalisation tile of the seed's table (a 64 x 256 macro tile, one k).
NORM_M, NORM_N = 64, 256

#: *An Alternative SGEMM on VEGA*, section 2.11 ("Costs for Matrix Multiply 64x1x256"): key, label, legacy, sqc.
SEED_ROWS: list[tuple[str, str, float, float]] = [
    ("a_l2l1", "Matrix A L2-L1", 64, 64),
    ("a_vgpr_w", "Matrix A VGPR write", 576, 64),
    ("a_vgpr_r", "Matrix A VGPR read", 16384, 64),
    ("a_lds_w", "Matrix A LDS write", 64, 0),
    ("a_lds_r", "Matrix A LDS read", 512, 0),
    ("b_l2l1", "Matrix B L2-L1", 256, 256),
    ("b_l1_r", "Matrix B L1 read", 256, 256),
    ("b_vgpr_w", "Matrix B VGPR write", 2304, 256),
    ("b_vgpr_r", "Matrix B VGPR read", 16384, 16384),
    ("b_lds_w", "Matrix B LDS write", 256, 0),
    ("b_lds_r", "Matrix B LDS read", 2304, 0),
    ("c_vgpr_rw", "Matrix C VGPR read/write", 32768, 4096),
    ("sum_l2l1", "SUM L2-L1", 320, 320),
    ("sum_l1_r", "SUM L1 read", 320, 320),
    ("vgpr_rw", "VGPR read/write", 68416, 20864),
    ("lds_rw", "LDS read/write", 3136, 0),
    ("barrier", "Barrier", 1, 0),
]
SEED = {key: {"lds": legacy, "sqc": sqc} for key, _, legacy, sqc in SEED_ROWS}

#: Rows the seed does not have (measured only).
EXTRA_ROWS: list[tuple[str, str]] = [
    ("a_sgpr_w", "Matrix A SGPR write"),
    ("a_sgpr_r", "Matrix A SGPR read"),
    ("c_vgpr_rw_raw", "Matrix C VGPR read/write, forwarded reads included"),
    ("c_vgpr_rw_elided", "Matrix C VGPR read/write, writes a forwarded read consumes also elided"),
    ("other_vgpr_rw", "Address/other VGPR read/write"),
    ("vgpr_r_raw", "VGPR reads (all, raw)"),
    ("vgpr_r_fwd", "VGPR reads forwarded"),
    ("vgpr_w", "VGPR writes (all)"),
    ("vgpr_rw_raw", "VGPR read/write, forwarded reads included"),
    ("vgpr_rw_elided", "VGPR read/write, accumulator writes a forwarded read consumes also elided"),
    ("sgpr_r", "SGPR reads (per wave)"),
    ("c_mem_rw", "Matrix C memory read + write"),
]
#: The emulator's instruction classes (the ISA table's, vlpc.isa.classes) the report lists,
#: in its order; ``other`` (s_endpgm, messages) only counts in ``inst_all``.
INSTRUCTION_CLASSES = tuple(c for c in EXECUTION_CLASSES if c != "other")

STRATEGY_TITLE = {"lds": "legacy (lds)", "sqc": "sqc"}


# ---------------------------------------------------------------------------
# roles of values: provenance over the compiled IR


class DotKernelsOnly(VlpcError):
    """A strategy other than sqc asked for an f16/int8 product (only the dot kernels compile those)."""


def _tags_of_kernel(kernel) -> tuple[dict, set]:
    """Provenance tags of every SSA value of an allocated kernel, and the accumulators.

    Tags: ``ptr:X`` (a pointer into matrix X), ``data:X`` (values of X), ``acc``
    (floating-point results), ``const``, ``kernarg``, ``idx`` (anything else).
    Accumulators are the values used as the addend of ``v_fma_f32``, ``v_dot2_f32_f16`` or
    ``v_dot4_i32_i8`` (and, through loop arguments, their initial values).
    """
    from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr
    from xdsl.ir import BlockArgument, OpResult

    from vlpc.dialects import gcn

    tags: dict = {}
    roles = kernel.attributes.get("arg_roles")
    role_names = [s.data for s in roles.data] if isinstance(roles, ArrayAttr) else []
    for arg, role in zip(kernel.body.block.args, role_names):
        tags[arg] = frozenset({"kernarg"} if role == "kernarg_segment_ptr" else {"idx"})
    kernargs = {}
    if kernel.kernargs is not None:
        for d in kernel.kernargs.data:
            kernargs[d.data["offset"].value.data] = d.data["name"].data  # type: ignore[union-attr]
    regions = []
    attr = kernel.attributes.get("lds_regions")
    if isinstance(attr, DictionaryAttr):
        for name, rng in attr.data.items():
            start, size = (x.value.data for x in rng.data)  # type: ignore[union-attr]
            regions.append((name, start, start + size))

    def region(offset: int) -> str:
        for name, lo, hi in regions:
            if lo <= offset < hi:
                return name
        return "lds"

    lds_content: dict[str, frozenset] = defaultdict(frozenset)
    idx = frozenset({"idx"})

    def get(v) -> frozenset:
        return tags.get(v, idx)

    def data_tags(ts: frozenset) -> frozenset:
        return frozenset(t for t in ts if t.startswith("data:") or t == "acc")

    float_ops = tuple(c for c in (getattr(gcn, n, None) for n in ("VFmaF32Op", "VMulF32Op", "VFmaF64Op", "VMulF64Op",
                                                                 "VMaxF32Op", "VAddF32Op", "VDot2F32F16Op",
                                                                 "VDot4I32I8Op")) if c is not None)
    for _ in range(4):  # loops and LDS round trips settle quickly
        before = dict(tags), dict(lds_content)
        for op in kernel.body.walk():
            if isinstance(op, gcn.LoopOp):
                for arg, init in zip(op.body.block.args, op.iter_args):
                    tags[arg] = get(arg) | get(init) if arg in tags else get(init)
                continue
            if isinstance(op, gcn.LoopBackOp):
                loop = op.parent_op()
                for arg, y, res in zip(loop.body.block.args, op.yielded, loop.res):
                    tags[arg] = get(arg) | get(y)
                    tags[res] = tags[arg]
                continue
            ins = frozenset().union(*(get(o) for o in op.operands)) if op.operands else frozenset()
            if isinstance(op, gcn.SLoadBase):
                base = get(op.sbase)
                if "kernarg" in base and op.soffset is None:
                    name = kernargs.get(op.offset.value.data, "?")
                    out = frozenset({f"ptr:{name}"} if name in ("A", "B", "C") else {f"kernarg:{name}"})
                else:
                    out = frozenset(f"data:{t[4:]}" for t in base if t.startswith("ptr:")) or idx
            elif isinstance(op, gcn.GlobalLoadBase):
                out = frozenset(f"data:{t[4:]}" for t in get(op.saddr) | get(op.vaddr) if t.startswith("ptr:")) or idx
            elif isinstance(op, gcn.DsReadBase):
                out = lds_content[region(op.offset.value.data)] or idx
            elif isinstance(op, gcn.DsWriteBase | gcn.DsWrite2Base):
                if isinstance(op, gcn.DsWrite2Base):
                    off, datas = op.offset0.value.data * op.OFFSET_UNIT, [op.vdata0, op.vdata1]
                else:
                    off, datas = op.offset.value.data, [op.vdata]
                name = region(off)
                lds_content[name] = lds_content[name] | frozenset().union(*(data_tags(get(d)) for d in datas))
                continue
            elif float_ops and isinstance(op, float_ops):
                out = frozenset({"acc"})
            elif isinstance(op, gcn.VMovB32Op) and op.src is None:
                out = frozenset({"const"})
            else:
                out = ins or idx
            for r in op.results:
                tags[r] = out
        if (dict(tags), dict(lds_content)) == before:
            break

    # accumulators: FMA addends, back through loop arguments to their initial values
    acc: set = set()
    addend_ops = tuple(c for c in (getattr(gcn, n, None) for n in ("VFmaF32Op", "VDot2F32F16Op", "VDot4I32I8Op"))
                       if c is not None)  # the dot kernels (f16, int8) accumulate with v_dot2/v_dot4
    work = [op.src2 for op in kernel.body.walk() if isinstance(op, addend_ops)]
    while work:
        v = work.pop()
        if v in acc:
            continue
        acc.add(v)
        if isinstance(v, OpResult) and isinstance(v.op, gcn.LoopOp):  # a loop result: its block argument
            work.append(v.op.body.block.args[v.index])
        elif isinstance(v, BlockArgument) and isinstance(v.block.parent_op(), gcn.LoopOp):
            loop = v.block.parent_op()
            work.append(loop.iter_args[v.index])  # the initial value (the zeroing)
    return tags, acc


def role_of(v, tags: dict, acc: set) -> str:
    """A, B, C (accumulators and C data), or "other"."""
    t = tags.get(v, frozenset())
    if v in acc or "acc" in t or "data:C" in t:
        return "C"
    mats = sorted(x[5:] for x in t if x.startswith("data:"))
    if len(mats) == 1:
        return mats[0]
    return "other"


# ---------------------------------------------------------------------------
# per-instruction attribution


@dataclass
class Traffic:
    """Measured totals of one launch, by (counter, role, phase); counters in elements
    (32-bit dwords x lanes for VGPRs, per wave for SGPRs)."""

    counts: dict = field(default_factory=lambda: defaultdict(float))

    def add(self, counter: str, role: str, phase: str, value: float) -> None:
        if value:
            self.counts[(counter, role, phase)] += value

    def get(self, counter: str, role: str | None = None, phase: str | None = None) -> float:
        return sum(v for (c, r, p), v in self.counts.items()
                   if c == counter and (role is None or r == role) and (phase is None or p == phase))


def _instruction_ops(kernel) -> list:
    """(instruction op, phase) in code order; phase: prologue (before the first loop),
    loop (inside any loop), epilogue (after it)."""
    from vlpc.dialects import gcn

    out = []

    def is_instruction(op) -> bool:  # prints one machine instruction (not a label, not a pseudo op)
        if not isinstance(op, gcn.GCNInstruction) or isinstance(op, gcn.PseudoOp | gcn.LoopOp):
            return False
        line = op.assembly_line()
        return line is not None and not line.split(";")[0].strip().endswith(":")

    def walk(block) -> None:
        for op in block.ops:
            if isinstance(op, gcn.LoopOp):
                walk(op.body.block)
            elif is_instruction(op):
                out.append((op, "loop"))

    seen_loop = False
    for op in kernel.body.block.ops:
        if isinstance(op, gcn.LoopOp):
            walk(op.body.block)
            seen_loop = True
        elif is_instruction(op):
            out.append((op, "epilogue" if seen_loop else "prologue"))
    return out


def _norm_mnemonic(m: str) -> str:
    for suffix in ("_e64", "_e32", "_sdwa", "_dpp"):
        if m.endswith(suffix):
            m = m[: -len(suffix)]
    return m


def attribute(kernel, code_object, stats) -> Traffic:
    """Split the emulator's per-instruction counters by operand role (see the module docstring)."""
    from vlpc.dialects import gcn
    from vlpc.runtime.emulator.decode import Decoder

    tags, acc = _tags_of_kernel(kernel)
    ops = _instruction_ops(kernel)
    co_kernel = code_object.kernel(kernel.sym_name.data)
    dec = Decoder(code_object.image)
    pc = co_kernel.entry_offset
    traffic = Traffic()
    prev_valu_writes: set = set()
    prev_block = None
    for op, phase in ops:
        ins = dec(pc)
        expect = op.assembly_line().split()[0]
        if _norm_mnemonic(ins.mnemonic) != _norm_mnemonic(expect):
            raise VlpcError(f"report: cannot match the code to the IR at offset {pc:#x}: "
                            f"{ins.mnemonic} in the code, {expect} in the IR")
        row = stats.by_pc.get(pc)
        pc += ins.size
        block = op.parent_block()
        if block is not prev_block:
            prev_valu_writes = set()
            prev_block = block
        if row is None:
            continue
        _mn, waves, lanes, vr, vw, sr, sw, fwd = row

        def value_for(operand, values):
            regs = set(range(operand.reg, operand.reg + operand.width))
            for v in values:
                t = v.type
                if isinstance(t, gcn.GCNRegisterType) and t.PREFIX == operand.kind and regs & set(t.registers()):
                    return v
            return None

        reads = [(o, value_for(o, op.operands)) for o in ins.src if o.kind in ("v", "s")]
        writes = [(o, value_for(o, op.results)) for o in ins.dst if o.kind in ("v", "s")]
        unit = op.UNIT
        # register traffic
        fwd_ops = []
        for o, v in reads:
            role = role_of(v, tags, acc) if v is not None else "other"
            if o.kind == "v":
                traffic.add("vgpr_r", role, phase, o.width * lanes)
                if unit == "valu" and set(range(o.reg, o.reg + o.width)) & prev_valu_writes:
                    fwd_ops.append((o, role))
            else:
                traffic.add("sgpr_r", role, phase, o.width * waves)
        for o, v in writes:
            role = role_of(v, tags, acc) if v is not None else "other"
            if o.kind == "v":
                traffic.add("vgpr_w", role, phase, o.width * lanes)
            else:
                traffic.add("sgpr_w", role, phase, o.width * waves)
        if fwd:
            if not fwd_ops:  # the previous VALU was in another block (the loop head): the addend
                fwd_ops = [(o, role_of(v, tags, acc)) for o, v in reads
                           if o.kind == "v" and isinstance(op, gcn.VFmaF32Op) and v is op.src2]
            if not fwd_ops:
                fwd_ops = [(o, "other") for o, _ in reads if o.kind == "v"][:1]
            total = sum(o.width for o, _ in fwd_ops)
            for o, role in fwd_ops:
                traffic.add("vgpr_fwd", role, phase, fwd * o.width / total)
        if unit == "valu":
            prev_valu_writes = {r for o, _ in writes if o.kind == "v" for r in range(o.reg, o.reg + o.width)}
        # memory and LDS traffic (elements)
        if unit == "lds":
            if isinstance(op, gcn.DsReadBase):
                for o, v in writes:
                    traffic.add("lds_r", role_of(v, tags, acc) if v is not None else "other", phase, o.width * lanes)
            else:
                addr = op.operands[0]
                for o, v in reads:
                    if o.kind == "v" and v is not addr:
                        traffic.add("lds_w", role_of(v, tags, acc) if v is not None else "other", phase,
                                    o.width * lanes)
        elif unit == "vmem":
            if op.results:
                for o, v in writes:
                    traffic.add("mem_r", role_of(v, tags, acc) if v is not None else "other", phase, o.width * lanes)
            else:
                data = op.operands[1] if len(op.operands) > 1 else None
                for o, v in reads:
                    if o.kind == "v" and v is data:
                        traffic.add("mem_w", role_of(v, tags, acc), phase, o.width * lanes)
        elif unit == "smem":
            for o, v in writes:
                r = role_of(v, tags, acc) if v is not None else "other"
                traffic.add("mem_r", r if r in ("A", "B", "C") else "kernarg", phase, o.width * waves)
        if isinstance(op, gcn.SBarrierOp):
            traffic.add("barrier", "all", phase, waves)
    # cross-checks against the emulator's totals
    checks = {
        "vgpr_r": stats.vgpr_reads, "vgpr_w": stats.vgpr_writes, "vgpr_fwd": stats.vgpr_reads_forwarded,
        "sgpr_r": stats.sgpr_reads,
        "lds_r": stats.lds_bytes_read / 4, "lds_w": stats.lds_bytes_written / 4,
    }
    for counter, total in checks.items():
        got = traffic.get(counter)
        if not math.isclose(got, total, rel_tol=1e-9, abs_tol=1e-6):
            raise VlpcError(f"report: attributed {counter} = {got} differs from the emulator's total {total}")
    return traffic


# ---------------------------------------------------------------------------
# one strategy: compile, run, verify, measure


@dataclass
class Measurement:
    strategy: str
    m: int
    n: int
    k: int
    kernel_name: str
    vgprs: int
    sgprs: int
    lds_bytes: int
    workgroup_size: int
    macro_tile: tuple[int, int]
    k_step: int
    occupancy: object
    stats: object
    traffic: Traffic
    max_error: float
    verified: bool
    rows: dict = field(default_factory=dict)
    phases: dict = field(default_factory=dict)  # row -> {phase: value}
    #: the products' types: "f32", or for the dot kernels "f16" (C f32), "f16>f16", "i8>i32", ...
    dtype: str = "f32"

    @property
    def scale(self) -> float:
        """Factor from launch totals to 'per 64x256 macro tile and per k'."""
        return NORM_M * NORM_N / (self.m * self.n * self.k)


def compile_for_report(text: str, filename: str, target: str, strategy: str, options: dict,
                       batch: int | None = None):
    """(module after the pipeline, code object bytes, launch info) for one strategy.  A strided
    batched GEMM is refused (one line), and so is ``batch`` (``--batch``) for a GEMM that is not
    batched (the one line of ``vlpc run``, :func:`vlpc.api.check_batch_option`)."""
    from vlpc.dialects.gcn import KernelOp
    from vlpc.dialects.gcn_asm import print_assembly
    from vlpc.compiler import header_lines, make_context, parse, pipeline, run_passes
    from vlpc.runtime.toolchain import find_toolchain
    from vlpc.targets import TargetId

    options = dict(options)
    # The report compares one kernel per strategy (traffic per macro tile and k): no split-K plan.
    if options.get("split_k", "auto") == "auto":
        options["split_k"] = 1
    if options["split_k"] != 1 or options.get("local_split", 1) != 1:
        from vlpc.errors import VlpcError
        raise VlpcError("vlpc report compares single kernels per strategy: use --split-k 1 --local-split 1 "
                        "(split-K plans: vlpc compile --print-plan, vlpc run)")
    ctx = make_context()
    module = parse(text, filename, ctx)
    from vlpc.dialects.gemm import MatmulOp
    shapes = [o.shape() for o in module.walk() if isinstance(o, MatmulOp)]
    dtypes = {sh.dtype for sh in shapes}
    if batch is not None:  # --batch for a plain GEMM: vlpc run's line (before the element type's refusal)
        from types import SimpleNamespace

        from xdsl.dialects.func import FuncOp

        from vlpc.api import check_batch_option
        funcs = [f.sym_name.data for f in module.walk() if isinstance(f, FuncOp)]
        check_batch_option(SimpleNamespace(launch_info={"batch": max((sh.batch for sh in shapes), default=0)},
                                           name=funcs[0] if funcs else "?"), batch)
    fmts = sorted({sh.b_format for sh in shapes if sh.b_format})
    if fmts:
        from vlpc.errors import VlpcError
        raise VlpcError(f"vlpc report does not take {fmts[0]} weights yet: run the GEMV with vlpc run, model it with "
                        "benchmarks/quant_gemv.py (docs/quantized.md)")
    if any(sh.batch != 0 for sh in shapes):
        from vlpc.errors import VlpcError
        raise VlpcError("report: the traffic table (one GEMM per 64x256 macro tile and k) does not support a strided "
                        "batched GEMM (3-D memrefs): report one matrix of it (2-D memrefs), or use vlpc report "
                        "--energy, vlpc bench or vlpc run, which run the whole batch")
    if dtypes - {"f32", "f16", "i8"}:
        from vlpc.errors import VlpcError
        raise VlpcError("vlpc report reproduces the seed's SGEMM table (units of 32-bit elements): the input "
                        "must be f32 (or f16 / int8: the dot kernels); run an f64 kernel with vlpc run or vlpc bench")
    if dtypes & {"f16", "i8"} and strategy != "sqc":
        raise DotKernelsOnly(f"report: {'/'.join(sorted(dtypes))} products are compiled by the dot kernels (strategy "
                             f"sqc) only; use --strategies sqc")
    # The seed's SGEMM table is per 64x1x256 micro/macro tile: an f32 sqc kernel is built on that
    # tile unless one is given (vlpc's own default is half as tall, see passes/gemm_tile.py).  The
    # f16/int8 dot kernels have no seed figures: they are measured as vlpc compiles them (its plan's
    # macro tile, with one kernel).
    if (strategy == "sqc" and dtypes == {"f32"} and not options.get("macro_tile")
            and not options.get("micro_tile")):
        options["macro_tile"], options["micro_tile"] = (64, 256), (64, 1)
    run_passes(module, pipeline(target, strategy=strategy, **options), ctx)
    tid = TargetId.parse(target)
    asm = print_assembly(module, tid, header_lines(module, tid.target.name))
    tc = find_toolchain()
    code = tc.link(tc.assemble(asm, tid, filename))
    kernels = [o for o in module.walk() if isinstance(o, KernelOp)]
    if len(kernels) != 1:
        from vlpc.errors import VlpcError
        copies = [k.sym_name.data for k in kernels if k.sym_name.data.endswith(("_transpose", "_copy_b"))]
        if copies:  # the copy pre-kernels (passes/isel/transpose.py) and the dot kernel
            raise VlpcError(f"vlpc report compares single kernels per strategy: this plan copies its operands into "
                            f"a padded workspace first ({', '.join(copies)}; `vlpc compile --print-plan` says why); "
                            "where the dot kernel can read them in place (A stored K x M: --a-transpose in-kernel "
                            "with M and lda static multiples of 2 / 4; B stored K x N: --a-transpose in-kernel; rows of K: "
                            "lda/ldb multiples of 2 / 4) "
                            "report that, or use vlpc run / vlpc bench")
        raise VlpcError(f"report: the module has {len(kernels)} kernels; give a file with one gemm.matmul")
    return module, kernels[0], code, asm


def measure(text: str, filename: str, strategy: str, *, target: str = "gfx906", m: int | None = None,
            n: int | None = None, k: int | None = None, seed: int = 0, alpha: float = 1.0, beta: float | None = None,
            options: dict | None = None, progress=None, batch: int | None = None) -> Measurement:
    """Compile ``text`` with ``strategy``, run it on the strict emulator, verify, attribute.
    ``beta`` None: 0.5, or 2 for an int8 -> i32 kernel (its beta is an integer), as ``vlpc run``.

    ``progress``: called with the workgroups done during the launch (a
    :class:`vlpc.cli_support.Progress` also gets the launch's workgroups added to its total).
    A strided batched GEMM (3-D memrefs) is refused with a one-line :class:`VlpcError` (the
    table is the traffic of one product per macro tile and k: report one matrix of the batch);
    ``batch`` (``--batch``) given for a kernel that is not batched is the one line of ``vlpc run``."""
    from vlpc.api import resolve_problem
    from vlpc.verify import reference, tolerance

    _module, kernel, code, _asm = compile_for_report(text, filename, target, strategy, dict(options or {}), batch)
    li = {key: (a.value.data if hasattr(a, "value") else a.data) for key, a in kernel.launch.data.items()}
    p = resolve_problem(li, m, n, k)
    for dim, val, tile in (("M", p.m, li["macro_m"]), ("N", p.n, li["macro_n"]), ("K", p.k, li["k_step"])):
        if val % tile:
            raise VlpcError(f"report: {dim}={val} is not a multiple of {tile} (the {strategy} kernel's tile)")
    rng = np.random.default_rng(seed)
    dtype = str(li.get("dtype", "f32"))
    if dtype in ("f16", "i8"):  # the dot kernels: typed operands, f32 or i32 alpha/beta, W8A8 scales
        return _measure_dot(strategy, kernel, code, li, p, rng, alpha, beta, target, progress)
    beta = 0.5 if beta is None else beta
    a = rng.standard_normal((p.m, p.lda), dtype=np.float32)
    b = rng.standard_normal((p.n, p.ldb), dtype=np.float32)
    c0 = rng.standard_normal((p.m, p.ldc), dtype=np.float32)
    co, stats, out = _launch_strict(kernel, code, li, p, {"A": a, "B": b, "C": c0}, np.float32(alpha),
                                    np.float32(beta), np.float32, progress)
    ref = reference(a[:, :p.k], b[:, :p.k].T, c0[:, :p.n], np.float32(alpha), np.float32(beta))
    tol = tolerance(a[:, :p.k], b[:, :p.k], c0[:, :p.n], alpha, beta, p.k)
    err = np.abs(out[:, :p.n].astype(np.float64) - ref)
    verified = bool(np.all(err <= tol))
    return _measurement(strategy, kernel, co, stats, li, p, target, float(err.max()), verified)


def _measure_dot(strategy, kernel, code, li, p, rng, alpha, beta, target, progress) -> Measurement:
    """:func:`measure` for an f16/int8 dot kernel: operands of its types (f16 standard normal,
    int8 uniform), checked with :mod:`vlpc.verify`'s reference and bound (int8 exact)."""
    from vlpc.verify import NP
    from vlpc.verify import reference_and_bound as reference

    ab, ct = str(li["dtype"]), str(li.get("c_dtype", "f32"))
    dequant = ab == "i8" and ct != "i32"

    def draw(shape, t):
        return (rng.integers(-128, 128, shape) if t in ("i8", "i32") else rng.standard_normal(shape)).astype(NP[t])
    a, b, c0 = draw((p.m, p.lda), ab), draw((p.n, p.ldb), ab), draw((p.m, p.ldc), ct)
    scales = ((rng.uniform(1e-3, 2e-2, p.m).astype(np.float32), rng.uniform(1e-3, 2e-2, p.n).astype(np.float32))
              if dequant else None)
    if beta is None:
        beta = 2 if ab == "i8" and not dequant else 0.5
    if ab == "i8" and not dequant:
        if alpha != int(alpha) or beta != int(beta):
            raise VlpcError(f"--alpha {alpha} --beta {beta}: an int8 -> i32 kernel takes integer alpha and beta")
        al, be = np.int32(alpha), np.int32(beta)
    else:
        al, be = np.float32(alpha), np.float32(beta)
    host = {"A": a, "B": b, "C": c0}
    if scales:
        host["scale_row"], host["scale_col"] = scales
    co, stats, out = _launch_strict(kernel, code, li, p, host, al, be, NP[ct], progress, scalar=type(al))
    ref, bound = reference(a[None, :, :p.k], b[None, :, :p.k].transpose(0, 2, 1), c0[None, :, :p.n], al, be, ab, ct,
                           int(li.get("local_split", 1)), scales)
    err = np.abs(out[:, :p.n].astype(np.float64) - ref[0])
    verified = bool(np.all(err <= bound[0]))
    return _measurement(strategy, kernel, co, stats, li, p, target, float(err.max()), verified, dtype=f"{ab}>{ct}")


def _launch_strict(kernel, code, li, p, host, alpha, beta, c_type, progress, scalar=None):
    """Run ``kernel`` (a ``gcn.kernel`` op; :func:`compile_for_report` allows no other kernel in
    the plan) once on a strict emulator, through the run path every launch takes:
    :func:`vlpc.verify.launch_and_read` (arguments packed by :func:`vlpc.verify.kernel_arguments`
    in the order of the kernel's metadata; sizes, leading dimensions and 32-bit offsets checked by
    :meth:`vlpc.kernel.CompiledKernel.execute`).  ``host``: ``A``, ``B``, ``C`` as stored (rows x
    leading dimension) and any W8A8 ``scale_row``/``scale_col``; ``alpha``, ``beta`` of the NumPy
    type ``scalar`` (default: the kernel's element type).  Returns (loaded code object,
    LaunchStats, C as ``c_type``, rows x ldc)."""
    from vlpc.dialects.gcn import metadata_json
    from vlpc.kernel import CompiledKernel
    from vlpc.runtime import get_device, load_code_object
    from vlpc.verify import launch_and_read

    meta = metadata_json(kernel)
    ck = CompiledKernel(kernel.sym_name.data, meta, li, int(meta.get(".vgpr_count", 0)), meta[".sgpr_count"],
                        code_object=code)
    dev = get_device("emulator", strict=True)
    if progress is not None:
        if hasattr(progress, "add_total"):
            progress.add_total(ck.plan_workgroups(p.m, p.n, p.k))
        dev.progress = progress
    flat = {name: np.ascontiguousarray(x).reshape(-1) for name, x in host.items()}
    out, stats, _walls = launch_and_read(ck, dev, flat, p, alpha, beta, c_type, scalar=scalar)
    return load_code_object(code), stats, out.reshape(p.m, p.ldc)


def _measurement(strategy, kernel, co, stats, li, p, target, max_error, verified, dtype="f32") -> Measurement:
    """The :class:`Measurement` of one launch: traffic by phase, resources, occupancy."""
    from vlpc.dialects.gcn import metadata_json
    from vlpc.passes.gcn_emit_descriptor import kernel_lds_bytes, kernel_resources
    from vlpc.targets import get_target

    traffic = attribute(kernel, co, stats)
    nv, _, _ = kernel_resources(kernel)
    meta = metadata_json(kernel)
    lds = kernel_lds_bytes(kernel)
    occ = get_target(target).occupancy(nv, meta[".sgpr_count"], lds, li["workgroup_size"])
    ms = Measurement(strategy, p.m, p.n, p.k, kernel.sym_name.data, nv, meta[".sgpr_count"], lds,
                     li["workgroup_size"], (li["macro_m"], li["macro_n"]), li["k_step"], occ, stats, traffic,
                     max_error, verified, dtype=dtype)
    _rows(ms)
    return ms


def _rows(ms: Measurement) -> None:
    """Fill ``ms.rows`` (normalised) and ``ms.phases`` (normalised, by phase)."""
    t, st = ms.traffic, ms.stats
    phases = ("prologue", "loop", "epilogue")

    def by_phase(fn):
        return {ph: fn(ph) * ms.scale for ph in phases}

    defs = {
        "a_l2l1": lambda ph: t.get("mem_r", "A", ph),
        "a_vgpr_w": lambda ph: t.get("vgpr_w", "A", ph),
        "a_vgpr_r": lambda ph: t.get("vgpr_r", "A", ph),
        "a_lds_w": lambda ph: t.get("lds_w", "A", ph),
        "a_lds_r": lambda ph: t.get("lds_r", "A", ph),
        "b_l2l1": lambda ph: t.get("mem_r", "B", ph),
        "b_l1_r": lambda ph: t.get("mem_r", "B", ph),
        "b_vgpr_w": lambda ph: t.get("vgpr_w", "B", ph),
        "b_vgpr_r": lambda ph: t.get("vgpr_r", "B", ph),
        "b_lds_w": lambda ph: t.get("lds_w", "B", ph),
        "b_lds_r": lambda ph: t.get("lds_r", "B", ph),
        "c_vgpr_rw": lambda ph: t.get("vgpr_r", "C", ph) - t.get("vgpr_fwd", "C", ph) + t.get("vgpr_w", "C", ph),
        "sum_l2l1": lambda ph: t.get("mem_r", "A", ph) + t.get("mem_r", "B", ph),
        "sum_l1_r": lambda ph: t.get("mem_r", "A", ph) + t.get("mem_r", "B", ph),
        "vgpr_rw": lambda ph: t.get("vgpr_r", None, ph) - t.get("vgpr_fwd", None, ph) + t.get("vgpr_w", None, ph),
        "lds_rw": lambda ph: t.get("lds_r", None, ph) + t.get("lds_w", None, ph),
        "barrier": lambda ph: t.get("barrier", None, ph) / max(1, ms.workgroup_size // 64),
        "a_sgpr_w": lambda ph: t.get("sgpr_w", "A", ph),
        "a_sgpr_r": lambda ph: t.get("sgpr_r", "A", ph),
        "c_vgpr_rw_raw": lambda ph: t.get("vgpr_r", "C", ph) + t.get("vgpr_w", "C", ph),
        # the seed's accounting of a forwarded accumulator chain: the intermediate
        # results are neither read from nor written to the register file
        "c_vgpr_rw_elided": lambda ph: (t.get("vgpr_r", "C", ph) + t.get("vgpr_w", "C", ph)
                                        - 2 * t.get("vgpr_fwd", "C", ph)),
        "vgpr_rw_elided": lambda ph: (t.get("vgpr_r", None, ph) - t.get("vgpr_fwd", None, ph)
                                      + t.get("vgpr_w", None, ph) - t.get("vgpr_fwd", "C", ph)),
        "other_vgpr_rw": lambda ph: (t.get("vgpr_r", "other", ph) - t.get("vgpr_fwd", "other", ph)
                                     + t.get("vgpr_w", "other", ph)),
        "vgpr_r_raw": lambda ph: t.get("vgpr_r", None, ph),
        "vgpr_r_fwd": lambda ph: t.get("vgpr_fwd", None, ph),
        "vgpr_w": lambda ph: t.get("vgpr_w", None, ph),
        "vgpr_rw_raw": lambda ph: t.get("vgpr_r", None, ph) + t.get("vgpr_w", None, ph),
        "sgpr_r": lambda ph: t.get("sgpr_r", None, ph),
        "c_mem_rw": lambda ph: t.get("mem_r", "C", ph) + t.get("mem_w", "C", ph),
    }
    for key, fn in defs.items():
        ms.phases[key] = by_phase(fn)
        ms.rows[key] = sum(ms.phases[key].values())
    for cls in INSTRUCTION_CLASSES:
        ms.rows[f"inst_{cls}"] = st.by_class.get(cls, 0) * ms.scale
    ms.rows["inst_all"] = st.instructions * ms.scale


# ---------------------------------------------------------------------------
# notes: why a measured row differs from the seed's


def _pct(meas: float, seed: float) -> str:
    if seed == 0:
        return "n/a" if meas == 0 else "+inf"
    return f"{100.0 * (meas - seed) / seed:+.1f}%"


def _fmt(x: float | None) -> str:
    if x is None:
        return "—"
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 1:
        return f"{x:.2f}".rstrip("0").rstrip(".")
    return f"{x:.3f}"


def note(key: str, ms: Measurement) -> str:
    """Why ``ms``'s row ``key`` differs from the seed's number (with the measured parts)."""
    seed = SEED.get(key, {}).get(ms.strategy)
    val = ms.rows[key]
    ph = ms.phases.get(key, {})
    loop, pro, epi = ph.get("loop", 0.0), ph.get("prologue", 0.0), ph.get("epilogue", 0.0)
    outer = f"K loop {_fmt(loop)}, prologue {_fmt(pro)}, epilogue {_fmt(epi)} (amortised over K={ms.k})"
    waves = ms.workgroup_size // 64
    items = ms.workgroup_size * NORM_M * NORM_N // (ms.macro_tile[0] * ms.macro_tile[1])
    stages = ms.k_step // 2
    if seed is not None and math.isclose(val, seed, rel_tol=1e-9, abs_tol=1e-9):
        return "matches"
    if key.startswith("inst_"):
        return ""
    lds = ms.strategy == "lds"
    r = ms.rows
    vgpr_parts = (f"A {_fmt(r['a_vgpr_r'] + r['a_vgpr_w'])} + B {_fmt(r['b_vgpr_r'] + r['b_vgpr_w'])} + "
                  f"C {_fmt(r['c_vgpr_rw'])} + addresses and indices {_fmt(r['other_vgpr_rw'])}")
    text = {
        ("a_l2l1", "lds"): "A is loaded once per workgroup and stage; the excess is the clamped prefetch of the "
                           "last K step, which re-loads the last stages instead of reading past K",
        ("a_l2l1", "sqc"): f"each of the {waves} waves of a workgroup issues its own s_load of the A rows "
                           f"(the scalar cache serves the later ones), so the requests are {waves} x 64 per k; "
                           "the seed counts the 64 values once; the rest is the clamped prefetch of the last step",
        ("a_vgpr_w", "lds"): f"{items} work-items each read their 8 A values from LDS per k ({8 * items}) plus "
                             "the values staged from memory; the seed's 512 is 64 work-items x 8 (its 64x64 "
                             "example tile)",
        ("a_vgpr_w", "sqc"): "A never enters VGPRs: s_load writes SGPRs (row 'Matrix A SGPR write'); the seed's "
                             "64 counts those register writes",
        ("a_vgpr_r", "lds"): "16384 FMA operand reads as the seed, plus the staged A values read by ds_write",
        ("a_vgpr_r", "sqc"): "the FMAs read A as a scalar operand (row 'Matrix A SGPR read', counted once per "
                             "wave-instruction); the seed's 64 counts those reads",
        ("a_lds_w", "lds"): "one LDS write per A value and stage; the excess is the last step's re-loaded stage",
        ("a_lds_r", "lds"): f"{items} work-items x 8 A values per k; the seed's 512 is 64 work-items x 8",
        ("b_l2l1", "lds"): "B is loaded once per workgroup and stage; the excess is the clamped prefetch of the "
                           "last K step",
        ("b_l2l1", "sqc"): "one B value per work-item and k; the excess is the clamped prefetch of the last K step",
        ("b_l1_r", "lds"): "the emulator has no cache model: this is the same count as 'Matrix B L2-L1' "
                           "(vector memory requests)",
        ("b_l1_r", "sqc"): "the emulator has no cache model: this is the same count as 'Matrix B L2-L1' "
                           "(vector memory requests)",
        ("b_vgpr_w", "lds"): f"{items} work-items x 8 B values per k read from LDS, plus the B values loaded "
                             "from memory (including the last step's re-loaded stages)",
        ("b_vgpr_w", "sqc"): "the B values loaded from memory, plus the clamped prefetch of the last step",
        ("b_vgpr_r", "lds"): "16384 FMA operand reads as the seed, plus the staged B values read by ds_write",
        ("b_vgpr_r", "sqc"): "16384 FMA operand reads as the seed",
        ("b_lds_w", "lds"): "one LDS write per B value and stage; the excess is the last step's re-loaded stage",
        ("b_lds_r", "lds"): f"{items} work-items x 8 B values per k = {8 * items}; the seed's 2304 adds the 256 "
                            "values loaded from memory (it equals its 'B VGPR write' row)",
        ("c_vgpr_rw", "lds"): "every FMA reads and writes its accumulator (consecutive FMAs of the 8x8 tile "
                              "update different accumulators, so nothing is forwarded), as the seed; the rest "
                              "is the zeroing of the accumulators and the epilogue (C loads, beta*C, "
                              "alpha*acc, stores)",
        ("c_vgpr_rw", "sqc"): f"the FMAs go row by row, so {_fmt(ms.phases['vgpr_r_fwd'].get('loop', 0))} of "
                              "the 16384 addend reads per k come from the FMA just before and are excluded, but "
                              "every FMA still writes its accumulator (16384 per k).  The seed's 4096 is one "
                              "read and one write per chain of 8 FMAs on an accumulator (its s_load_dwordx8 "
                              "step): it also drops the writes a forwarded read consumes; counted that way "
                              f"this kernel gives {_fmt(ms.rows['c_vgpr_rw_elided'])} (chains of 16 k values; "
                              "the last batch of a step goes K-major and forwards nothing); plus the epilogue",
        ("sum_l2l1", "lds"): "A + B rows above",
        ("sum_l2l1", "sqc"): "A + B rows above (A requested by every wave)",
        ("sum_l1_r", "lds"): "A + B memory requests (no cache model)",
        ("sum_l1_r", "sqc"): "A + B memory requests (no cache model)",
        ("vgpr_rw", "lds"): f"{vgpr_parts} (the LDS and global addresses of ds_read/ds_write/global_load), "
                            "forwarded reads excluded; the seed counts FMA operands and load results only",
        ("vgpr_rw", "sqc"): f"{vgpr_parts}, forwarded reads excluded; the difference to the seed is the "
                            "accumulator writes (see 'Matrix C VGPR read/write')",
        ("lds_rw", "lds"): f"reads: A {_fmt(r['a_lds_r'])} + B {_fmt(r['b_lds_r'])} (8 values of each per "
                           f"work-item and k, where the seed has 512 and 2304), writes: A {_fmt(r['a_lds_w'])} "
                           f"+ B {_fmt(r['b_lds_w'])}",
        ("barrier", "lds"): f"one s_barrier per workgroup and LDS stage of {stages} k values (double-buffered "
                            f"LDS), plus one in the prologue: about 1/{stages} per k; the seed counts one per k",
    }.get((key, ms.strategy))
    if text is None:
        text = "measured only" if seed is None else ""
    if seed is not None and not (lds and key == "barrier"):
        text = f"{text}; {outer}" if text else outer
    return text


# ---------------------------------------------------------------------------
# the table


@dataclass
class Report:
    measurements: list[Measurement]

    def by(self, strategy: str) -> Measurement | None:
        return next((x for x in self.measurements if x.strategy == strategy), None)

    def ratio(self, key: str) -> float | None:
        lds, sqc = self.by("lds"), self.by("sqc")
        if lds is None or sqc is None or not sqc.rows.get(key):
            return None
        return lds.rows[key] / sqc.rows[key]

    def table_rows(self) -> list[dict]:
        """One dict per row: key, label, per strategy seed/measured/deviation/note, ratio."""
        rows = []
        keys = [(k, label, True) for k, label, _, _ in SEED_ROWS] + [(k, label, False) for k, label in EXTRA_ROWS]
        keys += [(f"inst_{c}", f"Instructions: {c.upper() if c in ('valu', 'salu', 'smem', 'vmem', 'lds') else c}"
                  " (wave-instructions)", False) for c in INSTRUCTION_CLASSES]
        keys.append(("inst_all", "Instructions: all (wave-instructions)", False))
        for key, label, seeded in keys:
            row = {"key": key, "label": label}
            for ms in self.measurements:
                # the seed's figures are SGEMM's: no comparison for f16/int8 (per k, a dword holds 2 / 4 values)
                seed = SEED[key][ms.strategy] if seeded and ms.strategy in SEED[key] and ms.dtype == "f32" else None
                meas = ms.rows[key]
                row[ms.strategy] = {
                    "seed": seed, "measured": meas,
                    "deviation": None if seed is None else meas - seed,
                    "deviation_pct": None if seed is None else _pct(meas, seed),
                    "note": note(key, ms) if not key.startswith("inst_") else "",
                }
            row["ratio"] = self.ratio(key)
            rows.append(row)
        return rows

    # -- text outputs ---------------------------------------------------------------

    def markdown(self) -> str:
        ms0 = self.measurements[0]
        out = io.StringIO()
        w = out.write
        w("# Register, LDS and barrier traffic per 64x256 macro tile and per k "
          "(*An Alternative SGEMM on VEGA*, section 2.11)\n\n")
        units = ("32-bit elements" if ms0.dtype == "f32" else
                 f"32-bit registers per k value: one register holds {2 if ms0.dtype.startswith('f16') else 4} values "
                 "of K, so A and B move half (a quarter) of f32's per k; no seed columns")
        w(f"Problem: M={ms0.m} N={ms0.n} K={ms0.k}, {ms0.dtype} (units: {units}; VGPR counts are "
          "dwords x lanes, SGPR counts are per wave-instruction).  Measured on vlpc's functional GCN "
          "emulator from the executed kernels, normalised by 64*256/(M*N*K); prologue and epilogue included.  "
          "Forwarded VGPR reads (the previous VALU instruction of the wave wrote the register) are excluded "
          "where the seed assumes forwarding and listed separately.\n\n")
        strategies = [m.strategy for m in self.measurements]
        rows = self.table_rows()
        # a strategy's seed and deviation columns only where the seed has figures (f32, not f16/int8)
        seeded = {s: any(row[s]["seed"] is not None for row in rows) for s in strategies}
        head = ["row"]
        for s in strategies:
            head += ([f"seed {STRATEGY_TITLE[s]}", f"measured {STRATEGY_TITLE[s]}", "deviation"] if seeded[s]
                     else [f"measured {STRATEGY_TITLE[s]}"])
        ratio = "lds" in strategies and "sqc" in strategies
        if ratio:
            head.append("measured legacy/sqc")
        w("| " + " | ".join(head) + " |\n")
        w("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|\n")
        for row in rows:
            cells = [row["label"]]
            for s in strategies:
                c = row[s]
                cells += ([_fmt(c["seed"]), _fmt(c["measured"]),
                           "" if c["seed"] is None else f"{_fmt(c['deviation'])} ({c['deviation_pct']})"]
                          if seeded[s] else [_fmt(c["measured"])])
            if ratio:
                cells.append("—" if row["ratio"] is None else f"{row['ratio']:.2f}")
            w("| " + " | ".join(cells) + " |\n")
        w("\n## Summary\n\n")
        for line in self.summary_lines():
            w(f"- {line}\n")
        w("\n## Kernels and occupancy\n\n")
        w("| strategy | macro tile | k-step | work-items | VGPRs | SGPRs | LDS bytes | occupancy | C verified |\n")
        w("|---|---|---:|---:|---:|---:|---:|---|---|\n")
        for ms in self.measurements:
            w(f"| {STRATEGY_TITLE[ms.strategy]} | {ms.macro_tile[0]}x{ms.macro_tile[1]} | {ms.k_step} | "
              f"{ms.workgroup_size} | {ms.vgprs} | {ms.sgprs} | {ms.lds_bytes} | {ms.occupancy} | "
              f"{'yes' if ms.verified else 'NO'} (max abs error {ms.max_error:.2e}) |\n")
        notes = [f"- **{row['label']}, {STRATEGY_TITLE[ms.strategy]}** ({_fmt(c['measured'])} vs "
                 f"{_fmt(c['seed'])}, {c['deviation_pct']}): {c['note']}.\n"
                 for row in rows if not row["key"].startswith("inst_")
                 for ms in self.measurements
                 for c in [row[ms.strategy]] if c["note"] and c["note"] != "matches" and c["seed"] is not None]
        if notes:  # no heading without a note (f16/int8: no seed figures to differ from)
            w("\n## Notes: why a measured row differs from the seed's\n\n")
            w("".join(notes))
        return out.getvalue()

    def summary_lines(self) -> list[str]:
        lines = []
        lds, sqc = self.by("lds"), self.by("sqc")
        if lds and sqc:
            r = lds.rows["vgpr_rw"] / sqc.rows["vgpr_rw"]
            r_raw = lds.rows["vgpr_rw_raw"] / sqc.rows["vgpr_rw_raw"]
            seed = SEED["vgpr_rw"]["lds"] / SEED["vgpr_rw"]["sqc"]
            lines.append(f"VGPR read/write, legacy / sqc: measured {r:.2f} ({_fmt(lds.rows['vgpr_rw'])} / "
                         f"{_fmt(sqc.rows['vgpr_rw'])}, forwarded reads excluded), {r_raw:.2f} counting every "
                         f"read; the seed's {SEED['vgpr_rw']['lds']:,.0f} / {SEED['vgpr_rw']['sqc']:,.0f} = "
                         f"{seed:.2f}")
            r_el = lds.rows["vgpr_rw_elided"] / sqc.rows["vgpr_rw_elided"]
            lines.append(f"with the seed's accounting of forwarded accumulator chains (their intermediate writes "
                         f"dropped too): {r_el:.2f} ({_fmt(lds.rows['vgpr_rw_elided'])} / "
                         f"{_fmt(sqc.rows['vgpr_rw_elided'])})")
            lines.append(f"VGPR traffic saved by sqc: measured {100 * (1 - 1 / r):.0f}% "
                         f"({100 * (1 - 1 / r_el):.0f}% with the seed's accounting; seed: {100 * (1 - 1 / seed):.0f}%)")
        for ms in self.measurements:
            lines.append(f"{STRATEGY_TITLE[ms.strategy]}: LDS read/write {_fmt(ms.rows['lds_rw'])} per k, "
                         f"barriers {_fmt(ms.rows['barrier'])} per k per workgroup, occupancy {ms.occupancy}")
        return lines

    def csv(self) -> str:
        out = io.StringIO()
        wr = csv.writer(out)
        strategies = [m.strategy for m in self.measurements]
        head = ["key", "row"]
        for s in strategies:
            head += [f"seed_{s}", f"measured_{s}", f"deviation_{s}", f"deviation_pct_{s}", f"note_{s}"]
        head.append("ratio_lds_over_sqc")
        wr.writerow(head)
        for row in self.table_rows():
            cells = [row["key"], row["label"]]
            for s in strategies:
                c = row[s]
                cells += ["" if c["seed"] is None else c["seed"], f"{c['measured']:.4f}",
                          "" if c["deviation"] is None else f"{c['deviation']:.4f}", c["deviation_pct"] or "",
                          c["note"]]
            cells.append("" if row["ratio"] is None else f"{row['ratio']:.4f}")
            wr.writerow(cells)
        for ms in self.measurements:
            wr.writerow([f"occupancy_{ms.strategy}", str(ms.occupancy)])
        return out.getvalue()

    # -- chart --------------------------------------------------------------------------

    CHART_ROWS = ("vgpr_rw", "c_vgpr_rw", "a_vgpr_r", "b_vgpr_r", "a_vgpr_w", "b_vgpr_w", "lds_rw",
                  "sum_l2l1", "barrier")

    def chart_series(self) -> tuple[list[str], list[tuple[str, str, list[float | None]]]]:
        labels = {k: label for k, label, _, _ in SEED_ROWS}
        names = [labels[k] for k in self.CHART_ROWS]
        colors = {("lds", "seed"): "#f4a582", ("lds", "measured"): "#ca0020",
                  ("sqc", "seed"): "#92c5de", ("sqc", "measured"): "#0571b0"}
        series = []
        for ms in self.measurements:
            if ms.dtype == "f32":  # the seed's figures are SGEMM's: no seed bars for f16/int8 (as the table)
                series.append((f"{STRATEGY_TITLE[ms.strategy]}, seed", colors[(ms.strategy, "seed")],
                               [SEED[k][ms.strategy] for k in self.CHART_ROWS]))
            series.append((f"{STRATEGY_TITLE[ms.strategy]}, measured", colors[(ms.strategy, "measured")],
                           [ms.rows[k] for k in self.CHART_ROWS]))
        return names, series

    def figure(self):
        """The chart as a matplotlib figure: a horizontal grouped bar chart on a log scale, with
        every bar's value written next to it (a zero is written at the axis)."""
        plt = pyplot()
        names, series = self.chart_series()
        fig, ax = plt.subplots(figsize=(11, 7))
        h = 0.8 / len(series)
        vals = [v for _, _, vs in series for v in vs if v]
        floor = 10 ** math.floor(math.log10(min(vals))) if vals else 0.1
        for si, (label, color, vs) in enumerate(series):
            ys = [gi + si * h for gi in range(len(names))]
            ax.barh(ys, [v if v else floor for v in vs], height=h, color=color, label=label, left=0)
            for y, v in zip(ys, vs):
                ax.text((v if v else floor) * 1.08, y, _fmt(v or 0), va="center", fontsize=6)
        ax.set_xscale("log")
        ax.set_xlim(left=floor)
        ax.set_yticks([gi + 0.4 - h / 2 for gi in range(len(names))], names)
        ax.invert_yaxis()
        ax.set_xlabel("elements per 64x256 macro tile and per k (log scale; 32-bit elements)")
        ax.set_ylabel("traffic (An Alternative SGEMM on VEGA, section 2.11 rows)")
        ms0 = self.measurements[0]
        versus = "seed vs measured" if any(label.endswith(", seed") for label, _, _ in series) else "measured"
        ax.set_title(f"Register, LDS and barrier traffic: {versus}\n"
                     f"M={ms0.m} N={ms0.n} K={ms0.k}, {ms0.dtype}, vlpc emulator; forwarded VGPR reads excluded",
                     fontsize=10)
        ax.grid(True, axis="x", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        return fig

    def svg(self) -> str:
        """The chart as SVG text (matplotlib)."""
        plt = pyplot()
        fig = self.figure()
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
        plt.close(fig)
        return buf.getvalue()

    def write_chart(self, path: str) -> None:
        """Write the chart to ``path``: SVG or PNG by its suffix (see :func:`vlpc.cli_support.check_chart`)."""
        plt = pyplot()
        fig = self.figure()
        save_figure(fig, path)
        plt.close(fig)

    def png(self, path: str) -> None:
        """Write the chart as PNG to ``path``."""
        self.write_chart(path)


def build_report(text: str, filename: str, strategies: list[str], progress=None, dot_sqc_only: bool = False,
                 **kwargs) -> Report:
    """Measure each strategy of ``strategies``.  ``dot_sqc_only``: strategies other than sqc are
    left out for f16/int8 products (the dot kernels exist for sqc only) instead of refused with
    :class:`DotKernelsOnly` (``vlpc report`` without ``--strategies``)."""
    out = []
    for s in strategies:
        try:
            out.append(measure(text, filename, s, progress=progress, **kwargs))
        except DotKernelsOnly:
            if not (dot_sqc_only and out):
                raise
    return Report(out)
