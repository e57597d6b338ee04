"""``vlpc profile``: where the time goes inside a gfx906 kernel, without a GPU (every figure *modeled*).

:func:`profile` runs a kernel on the functional emulator with the timing model on
(:mod:`vlpc.runtime.timing`) and replays the traced CU with an
:class:`~vlpc.runtime.timing.recorder.IssueRecorder`, which charges every cycle of every simulated
wave to an instruction: the turn it issued in and the stall before it, split by cause (the
recorder's module docstring gives the rules).  The input is a gemm/linalg MLIR file (compiled and
run as ``vlpc run`` does, sizes from ``m``/``n``/``k``) or any gfx906 code object with its
arguments described from the metadata (:mod:`vlpc.launch_cli`).

The result (:class:`Profile`) is formatted by :func:`format_text` (summary and annotated
assembly), :func:`format_html`, :func:`chrome_trace` (the wave timeline in the Chrome Trace Event
Format, for Perfetto UI or ``chrome://tracing``) and :func:`timeline_png` (matplotlib).
``docs/profile.md`` is the manual.
"""

from __future__ import annotations

import html
import math
import numbers
import os
from dataclasses import dataclass, field
from typing import Any


from vlpc.errors import VlpcError
from vlpc.launch_cli import Finding

#: What each stall cause means, in the limiter sentence.
CAUSE_TEXT = {
    "valu_busy": "VALU throughput (the SIMD's VALU busy with an earlier instruction)",
    "vmcnt": "vector-memory latency",
    "lgkmcnt_smem": "scalar-load latency",
    "lgkmcnt_lds": "LDS latency",
    "barrier": "barrier synchronisation",
    "port": "issue-port contention",
    "fetch": "instruction fetch (long instructions, taken branches, s_nop)",
}
#: Short column headings of the annotated assembly.
CAUSE_HEAD = {"valu_busy": "valu", "vmcnt": "vmcnt", "lgkmcnt_smem": "lgkm.smem", "lgkmcnt_lds": "lgkm.lds",
              "barrier": "barrier", "port": "port", "fetch": "fetch"}
#: An instruction is a hot spot when its stall cycles are at least this share of the wave-cycles.
HOT_SHARE = 0.05


@dataclass
class InstructionProfile:
    """One instruction of a kernel.  ``offset``: bytes from the kernel entry; ``pc``: byte offset in
    the code image; ``text``: disassembly (the emulator's decoder); ``executions``: wave executions
    over the whole launch (emulator counter, exact); ``issues``, ``issue_cycles`` and ``stalls``
    (cause -> cycles, :data:`~vlpc.runtime.timing.recorder.STALL_CAUSES`): on the simulated CU,
    modeled engine cycles summed over its waves; ``hot``: a hot spot (stalls >= 5 % of the
    wave-cycles, or the largest)."""

    offset: int
    pc: int
    text: str
    executions: int = 0
    issues: int = 0
    issue_cycles: float = 0.0
    stalls: dict = field(default_factory=dict)
    hot: bool = False

    @property
    def stall_cycles(self) -> float:
        return float(sum(self.stalls.values()))


@dataclass
class KernelProfile:
    """One launch.  ``grid``/``block``: workgroups and work-items per dimension; ``resources``:
    ``vgprs``, ``sgprs``, ``lds_bytes``, ``scratch_bytes`` (per work-item), ``workgroup_size``;
    ``occupancy``: ``waves_per_simd``, ``limited_by``, ``workgroups_per_cu``; ``timing``: the
    :class:`~vlpc.runtime.timing.TimingReport` (modeled ``time_us``, ``cycles`` at ``clock_mhz``);
    ``simulated``: what the CU model ran: ``workgroups``, ``waves``, ``cycles``, ``wave_cycles`` (sum
    of wave lifetimes), ``turn_cycles``; ``instructions``: :class:`InstructionProfile` in address
    order; ``waves``: the recorder's :class:`~vlpc.runtime.timing.recorder.WaveRecord` list and
    ``events`` its ``(wave, pc, issue cycle, stall start cycle, cause index, VALU busy cycles)`` tuples;
    ``stats``: the emulator's ``LaunchStats``; ``limiter``: one sentence."""

    name: str
    grid: tuple
    block: tuple
    resources: dict
    occupancy: dict
    timing: Any
    simulated: dict
    instructions: list
    waves: list = field(repr=False, default_factory=list)
    events: list = field(repr=False, default_factory=list)
    events_dropped: int = 0
    stats: Any = field(repr=False, default=None)
    limiter: str = ""
    entry_pc: int = 0

    @property
    def time_us(self) -> float:
        return float(self.timing.time_us)

    def totals(self) -> dict[str, float]:
        """Issue cycles and stall cycles per cause over every instruction (simulated CU)."""
        from vlpc.runtime.timing.recorder import STALL_CAUSES

        out = {"issue": sum(i.issue_cycles for i in self.instructions)}
        for c in STALL_CAUSES:
            out[c] = sum(i.stalls.get(c, 0.0) for i in self.instructions)
        return out


@dataclass
class Profile:
    """A profile: ``source`` (file name or ``<text>``), ``board`` (name), ``clock_mhz`` /
    ``memory_clock_mhz`` (engine and HBM clocks modeled), ``kernels`` (:class:`KernelProfile` per
    launch, in order), ``findings`` (:class:`~vlpc.launch_cli.Finding`), ``flops`` (the GEMM's
    2 M N K x batch, integer operations for int8; None for a code object without ``flops``),
    ``peak_flops`` (operations per second: the FP32 FMA peak, FP64's, or the f16/int8 dot
    instructions', :func:`vlpc.tune.peak_ops`), ``dtype`` (the GEMM's A/B type, else ``f32``) and
    ``hbm_bytes_per_second`` (the board's HBM peak, the pin rate) and
    ``streaming_bytes_per_second`` (the modeled streaming ceiling,
    :attr:`vlpc.targets.Board.streaming_ceiling_bytes_per_second`), bytes/s.  Every time is modeled."""

    source: str
    board: str
    clock_mhz: float
    memory_clock_mhz: float
    kernels: list
    findings: list
    flops: float | None = None
    peak_flops: float = 0.0
    hbm_bytes_per_second: float = 0.0
    problem: str = ""
    dtype: str = "f32"
    streaming_bytes_per_second: float = 0.0

    @property
    def time_us(self) -> float:
        """Modeled microseconds of all launches (launch overhead included)."""
        return float(sum(k.time_us for k in self.kernels))

    @property
    def global_bytes(self) -> int:
        """Bytes moved to and from global memory by the launches' memory instructions (emulator
        counters; with ``timing_only``, scaled from the executed workgroups to the grid)."""
        total = 0.0
        for k in self.kernels:
            moved = k.stats.global_bytes_read + k.stats.global_bytes_written
            executed = int(getattr(k.stats, "workgroups", 0) or 0)
            total += moved * (int(math.prod(k.grid)) / executed if executed else 1.0)
        return int(total)

    @property
    def hbm_bytes(self) -> float:
        """Bytes the timing model fetches from HBM (L2 misses; modeled)."""
        return float(sum(k.timing.hbm_bytes for k in self.kernels))

    @property
    def hbm_gbps(self) -> float | None:
        return self.hbm_bytes / (self.time_us * 1e-6) / 1e9 if self.time_us else None

    @property
    def tflops(self) -> float | None:
        if not self.flops or not self.time_us:
            return None
        return self.flops / (self.time_us * 1e-6) / 1e12

    @property
    def gbps(self) -> float | None:
        return self.global_bytes / (self.time_us * 1e-6) / 1e9 if self.time_us else None


# -- running -------------------------------------------------------------------------------------


def _board(gpu: str | None, target: str, clock_mhz, memory_clock_mhz, cus):
    from vlpc.targets import TargetError, board_for, get_board

    try:
        board = get_board(gpu or board_for(target.split(":")[0]), clock_mhz=clock_mhz,
                          memory_clock_mhz=memory_clock_mhz, cus=cus)
    except TargetError as e:
        raise VlpcError(str(e)) from None
    if memory_clock_mhz is not None and not 100 <= float(memory_clock_mhz) <= 3000:
        raise VlpcError(f"--memory-clock {memory_clock_mhz:g}: memory clock is outside 100..3000 MHz")
    return board


def _capturing_device(board, strict: bool, timing_only: bool):
    """An emulator with the timing model whose launches are kept (code object, kernel, geometry,
    stats) in ``device.profiled``."""
    from vlpc.runtime import get_device

    opts: dict = {"strict": True} if strict else {"waitcnt": "report"}
    dev = get_device("emulator", gpu=board, timing_only=timing_only, **opts)
    dev.profiled = []
    inner = dev._run

    def _run(co, kernel, launch, args):
        stats = inner(co, kernel, launch, args)
        dev.profiled.append((co, kernel, launch, stats))
        return stats

    dev._run = _run
    return dev


def profile(source: str | bytes | os.PathLike, *, kernel: str | None = None, grid=None, block=None,
            args: list[str] | tuple = (), dynamic_lds: int = 0, m: int | None = None, n: int | None = None,
            k: int | None = None, batch: int | None = None, gpu: str | None = None,
            clock_mhz: float | None = None, memory_clock_mhz: float | None = None, strict: bool = False,
            timing_only: bool = False, seed: int = 0, max_events: int = 500_000,
            target: str = "gfx906", flops: float | None = None, **compile_options: Any) -> Profile:
    """Profile a kernel on the emulator and the timing model (modeled, not measured).

    ``source``: a gfx906 code object (a path to an ELF file, or its bytes), or a gemm/linalg MLIR
    file (path) or text.  For a code object: ``kernel`` (default: its only one), ``grid`` and
    ``block`` (1 to 3 ints, or ``"X,Y,Z"`` text; defaults 1 and 64), ``args`` the ``KEY=VALUE``
    texts of :mod:`vlpc.launch_cli` (``["0=1000", "1=2.0", "2=random:4000"]``), ``dynamic_lds``
    bytes.  For MLIR: ``m``, ``n``, ``k``, ``batch`` as :func:`vlpc.run` takes them and
    ``compile_options`` for :func:`vlpc.compile` (every kernel of the plan is profiled; C is
    verified unless ``timing_only``, a failed check is a finding).  ``gpu`` (``mi60``, ``mi50``,
    ``mi25``; default: the target's board, :data:`vlpc.targets.DEFAULT_BOARDS`), ``clock_mhz`` / ``memory_clock_mhz`` (engine
    and HBM clocks; default the board's), ``timing_only`` (execute only the workgroups the model
    traces: large grids fast, outputs not computed), ``max_events`` (timeline events kept per kernel),
    ``flops``: the floating-point operations a code object's launch performs, for its TFLOP/s (an
    MLIR GEMM's are 2 M N K x batch).

    The emulator's checks stay on: out of ``strict`` mode a race (a register used while its load
    may be outstanding) and an uninitialised read are :class:`~vlpc.launch_cli.Finding` s; an
    out-of-bounds access stops the launch and is a fatal finding (the profile then has no kernel
    for it); ``strict=True`` raises each (:class:`~vlpc.runtime.emulator.errors.EmulatorFault`).
    Raises :class:`VlpcError` for bad input (unknown kernel, missing or malformed argument).
    """
    from vlpc.launch_cli import FindingCollector, fault_finding, launch_code_object, parse_dims
    from vlpc.runtime.emulator.errors import EmulatorFault

    data: bytes | None = None
    name = "<text>"
    text: str | None = None
    if isinstance(source, (bytes, bytearray)):
        data, name = bytes(source), "<bytes>"
    else:
        path = os.fspath(source)
        if "\n" not in path and os.path.isfile(path):
            name = path
            with open(path, "rb") as f:
                raw = f.read()
            if raw[:4] == b"\x7fELF":
                data = raw
            else:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise VlpcError(f"{path} is neither a code object (ELF) nor UTF-8 MLIR text") from None
        elif "\n" not in path and path.endswith((".hsaco", ".co", ".o", ".elf", ".mlir")):
            raise VlpcError(f"cannot read {path}: no such file")
        else:
            text = path
    target = str(compile_options.pop("target", None) or target)
    if data is not None:  # the board defaults to the code object's processor's (mi25 for gfx900)
        from vlpc.runtime.code_object import CodeObjectError, load_code_object
        try:
            target = load_code_object(data).target_id.target.name
        except CodeObjectError:
            pass  # reported with the launch
    board = _board(gpu, target, clock_mhz, memory_clock_mhz, compile_options.get("cus"))
    if data is None and board.target.name != target.split(":")[0]:
        raise VlpcError(f"--gpu {board.name} is a {board.target.name} board; the kernel is compiled for {target} "
                        f"(give --target {board.target.name} or another --gpu)")
    dev = _capturing_device(board, strict, timing_only)
    findings: list[Finding] = []
    if flops is not None and not (flops > 0 and math.isfinite(flops)):
        raise VlpcError(f"--flops must be a positive number, got {flops:g}")
    problem = ""
    dtype = "f32"
    if data is not None:
        for what, given in (("m", m), ("n", n), ("k", k), ("batch", batch)):
            if given is not None:
                raise VlpcError(f"--{what} is for an MLIR FILE; a code object takes --grid, --block and --arg")
        g, b = (parse_dims(_dims_text(v), what, d) for v, what, d in ((grid, "grid", (1,)), (block, "block", (64,))))
        src = name if name != "<bytes>" else data
        run = launch_code_object(dev, src, kernel, g, b, list(args), dynamic_lds=dynamic_lds, seed=seed)
        findings += run.findings
    else:
        for what, given in (("kernel", kernel), ("grid", grid), ("block", block), ("arg", args or None),
                            ("flops", flops)):
            if given is not None:
                raise VlpcError(f"--{what} is for a code object FILE; an MLIR FILE takes -m, -n, -k")
        import vlpc
        from vlpc.api import VerificationError

        compiled = vlpc.compile(text, target, filename=name, **{k_: v for k_, v in compile_options.items() if v is not None})
        from vlpc.cli_support import single_kernel
        kern = single_kernel(compiled, "profile")
        dtype = str(kern.launch_info.get("dtype", "f32"))  # A/B's type (the dot kernels' too)
        with FindingCollector() as fc:
            try:
                r = vlpc.run(kern, m=m, n=n, k=k, batch=batch, device=dev, seed=seed, verify=not timing_only)
                p = r.problem
                flops = 2.0 * p.m * p.n * p.k * max(1, p.batch or 1)
                problem = f"M={p.m} N={p.n} K={p.k}" + (f" batch={p.batch}" if p.batch else "")
            except VerificationError as e:
                p = e.result.problem
                flops = 2.0 * p.m * p.n * p.k * max(1, p.batch or 1)
                problem = f"M={p.m} N={p.n} K={p.k}" + (f" batch={p.batch}" if p.batch else "")
                findings.append(Finding("verification", str(e)))
            except EmulatorFault as e:
                if strict:
                    raise
                findings.append(fault_finding(e))
        findings[:0] = fc.findings
    kernels = [profile_launch(co, kern_, geom, stats, board, dev, max_events)
               for co, kern_, geom, stats in dev.profiled if getattr(stats, "trace", None) is not None]
    from vlpc.tune import peak_ops
    return Profile(name, board.name, board.engine_clock_mhz, board.memory_clock_mhz, kernels, findings, flops,
                   peak_ops(board, dtype), board.hbm_bytes_per_second, problem, dtype,
                   board.streaming_ceiling_bytes_per_second)


def _dims_text(v) -> str | None:
    if v is None or isinstance(v, str):
        return v
    return str(v) if isinstance(v, numbers.Integral) else ",".join(map(str, v))


def _listing(co, kernel) -> list[tuple[int, str]]:
    """(pc, text) of every instruction of ``kernel`` (its symbol's bytes, decoded)."""
    from vlpc.runtime.emulator.decode import decode_at

    image = co.image
    sym = co.symbols.get(kernel.name)
    start = kernel.entry_offset
    end = start + sym.size if sym is not None and sym.size and sym.value == start else start
    out = []
    pc = start
    while pc < min(end, len(image)):
        try:
            ins = decode_at(image, pc)
        except Exception:
            break
        text = ins.text or ins.mnemonic
        if "target" in ins.f:  # a branch: where it goes, as an offset from the entry
            text += f"  ; -> +0x{ins.f['target'] - start:x}"
        out.append((pc, text))
        pc += max(4, int(ins.size))
    return out


def profile_launch(co, kernel, geometry, stats, board, device, max_events: int = 500_000) -> KernelProfile:
    """The :class:`KernelProfile` of one traced launch: the timing model re-run on its trace with
    an :class:`~vlpc.runtime.timing.recorder.IssueRecorder` (the same modeled time)."""
    from vlpc.runtime import timing
    from vlpc.runtime.emulator.decode import decode_at
    from vlpc.runtime.timing.recorder import STALL_CAUSES, IssueRecorder, recording

    d = kernel.descriptor
    wg_size = int(math.prod(geometry.block))
    lds = d.group_segment_fixed_size + geometry.dynamic_lds
    res = timing.residency(board, d.vgpr_count, d.sgpr_count, lds, wg_size)
    rec = IssueRecorder(max_events=max_events)
    with recording(rec):
        rep = timing.model_kernel(stats.trace, board, res, kernel.name, l2_miss=getattr(device, "l2_miss", None))
    listing = dict(_listing(co, kernel))
    pcs = set(listing) | set(rec.rows) | set(stats.by_pc)
    for pc in pcs - set(listing):
        try:
            listing[pc] = decode_at(co.image, pc).text
        except Exception:
            listing[pc] = stats.by_pc.get(pc, ["?"])[0]
    entry = kernel.entry_offset
    wave_cycles = rec.wave_cycles()
    instrs = []
    for pc in sorted(listing):
        row = rec.rows.get(pc)
        ip = InstructionProfile(pc - entry, pc, listing[pc], int(stats.by_pc.get(pc, [0, 0])[1]))
        if row is not None:
            ip.issues = int(row[0])
            ip.issue_cycles = float(row[1])
            ip.stalls = {c: float(v) for c, v in zip(STALL_CAUSES, row[2:])}
        else:
            ip.stalls = dict.fromkeys(STALL_CAUSES, 0.0)
        instrs.append(ip)
    worst = max(instrs, key=lambda i: i.stall_cycles, default=None)
    for ip in instrs:
        ip.hot = ip.stall_cycles > 0 and (ip is worst or ip.stall_cycles >= HOT_SHARE * wave_cycles)
    occ = board.target.occupancy(d.vgpr_count, d.sgpr_count, lds, wg_size)
    kp = KernelProfile(
        name=kernel.name, grid=tuple(geometry.grid), block=tuple(geometry.block),
        resources={"vgprs": d.vgpr_count, "sgprs": d.sgpr_count, "lds_bytes": lds,
                   "scratch_bytes": d.private_segment_fixed_size, "workgroup_size": wg_size},
        occupancy={"waves_per_simd": occ.waves_per_simd, "limited_by": occ.limited_by,
                   "workgroups_per_cu": res.wgs_per_cu},
        timing=rep,
        simulated={"workgroups": len({w.wg for w in rec.waves if w is not None}),
                   "waves": sum(1 for w in rec.waves if w is not None),
                   "cycles": max((w.end for w in rec.waves if w is not None), default=0.0),
                   "wave_cycles": wave_cycles, "turn_cycles": rec.turn},
        instructions=instrs, waves=rec.waves, events=rec.events, events_dropped=rec.events_dropped,
        stats=stats, entry_pc=entry)
    kp.limiter = limiter(kp)
    return kp


#: The timing model's SIMD-time reasons (``runtime/timing/cu.py``) -> the stall cause they are.
_REASON_CAUSE = {"smem": "lgkmcnt_smem", "vmem": "vmcnt", "lds": "lgkmcnt_lds", "barrier": "barrier"}


def limiter(kp: KernelProfile) -> str:
    """The limiter in one sentence.  The cause is the largest loss of the SIMDs' time in the timing
    model's breakdown (cycles in which no VALU instruction issued because the waves waited on
    scalar loads, vector memory, LDS, a barrier, or issued other instructions), and the instruction
    named is the one whose waves stalled longest for that cause.  Prefixed "VALU-bound" when the
    VALUs are busy half the time or more; suffixed when launch overhead and idle SIMDs take half."""
    wc = kp.simulated["wave_cycles"] or 1.0
    tot = kp.totals()
    stalls = {c: v for c, v in tot.items() if c != "issue" and v > 0}
    bd = dict(kp.timing.breakdown_us)
    T = kp.time_us or 1.0
    valu = bd.get("valu", 0.0) / T
    if not stalls:
        return f"issue-bound: the waves never stall; VALUs busy {valu * 100:.0f} % of the time (modeled)"
    losses = {r: bd.get(r, 0.0) for r in ("smem", "vmem", "lds", "barrier", "issue")}
    reason = max(losses, key=losses.__getitem__)
    if losses[reason] <= 0:
        cause = max(stalls, key=stalls.__getitem__)
        lost = ""
    else:
        cause = _REASON_CAUSE.get(reason) or max(("port", "fetch", "valu_busy"), key=lambda c: tot.get(c, 0.0))
        lost = f"the SIMDs lose {losses[reason] / T * 100:.0f} % of the time to it; "
        if tot.get(cause, 0.0) <= 0:
            cause = max(stalls, key=stalls.__getitem__)
    ip = max(kp.instructions, key=lambda i: i.stalls.get(cause, 0.0))
    where = "after" if cause in ("fetch", "barrier") else "at"
    sentence = (f"{CAUSE_TEXT[cause].split(' (')[0]}: {lost}waves wait longest for it {where} `{ip.text}` at "
                f"+0x{ip.offset:x} ({ip.stalls[cause] / wc * 100:.0f} % of wave-cycles)")
    if valu >= 0.5:
        sentence = f"VALU-bound: VALUs busy {valu * 100:.0f} % of the time; the largest loss is {sentence}"
    overhead = (bd.get("launch", 0.0) + bd.get("idle", 0.0) + bd.get("tail", 0.0)) / T
    if overhead >= 0.5:
        sentence += f"; launch overhead and idle SIMDs take {overhead * 100:.0f} % (a small launch)"
    return sentence + " (modeled)"


# -- formatting ----------------------------------------------------------------------------------


def _fmt(v: float) -> str:
    return "." if v == 0 else (f"{v:.0f}" if v >= 10 or float(v).is_integer() else f"{v:.1f}")


def summary_lines(prof: Profile) -> list[str]:
    """The summary: time, throughput, % of peak, occupancy, resources and the limiter per kernel."""
    out = [f"vlpc profile: {prof.source}" + (f" ({prof.problem})" if prof.problem else "")
           + f" on {prof.board} @ {prof.clock_mhz:.0f} MHz engine, {prof.memory_clock_mhz:.0f} MHz memory "
           "-- every time below is MODELED by vlpc's timing model, not measured"]
    if prof.kernels:
        line = f"  time {prof.time_us:.2f} us modeled"
        if prof.tflops is not None:
            unit = "TOP/s" if prof.dtype == "i8" else "TFLOP/s"
            peak = {"f64": "FP64", "f16": "f16 dot", "i8": "int8 dot"}.get(prof.dtype, "FP32 FMA")
            line += (f"; {prof.tflops:.3f} {unit} modeled, {prof.tflops * 1e12 / prof.peak_flops * 100:.1f} % of "
                     f"the {peak} peak ({prof.peak_flops / 1e12:.2f} {unit})")
        out.append(line)
        if prof.gbps is not None:
            out.append(f"  memory: {prof.gbps:.1f} GB/s requested by memory instructions (emulator byte counters "
                       f"over the modeled time); {prof.hbm_gbps:.1f} GB/s read from HBM modeled "
                       "(L2 load misses; stores not modeled), "
                       f"{prof.hbm_gbps * 1e9 / prof.hbm_bytes_per_second * 100:.1f} % of the HBM peak "
                       f"({prof.hbm_bytes_per_second / 1e9:.0f} GB/s), "
                       f"{prof.hbm_gbps * 1e9 / prof.streaming_bytes_per_second * 100:.1f} % of the modeled "
                       f"streaming ceiling ({prof.streaming_bytes_per_second / 1e9:.0f} GB/s)")
    for kp in prof.kernels:
        r, o, s = kp.resources, kp.occupancy, kp.simulated
        out.append(f"  kernel {kp.name}: grid {kp.grid} x block {kp.block}; {kp.time_us:.2f} us modeled "
                   f"({kp.timing.cycles:.0f} cycles)")
        out.append(f"    resources: {r['vgprs']} VGPRs, {r['sgprs']} SGPRs, {r['lds_bytes']} B LDS, "
                   f"{r['scratch_bytes']} B scratch, workgroup {r['workgroup_size']} work-items")
        out.append(f"    occupancy: {o['waves_per_simd']} waves/SIMD (limited by {o['limited_by']}), "
                   f"{o['workgroups_per_cu']} workgroups/CU")
        bd = kp.timing.breakdown_us
        out.append(f"    simulated CU: {s['workgroups']} workgroups, {s['waves']} waves, {s['cycles']:.0f} cycles; SIMD "
                   "time: " + ", ".join(f"{c} {v / kp.time_us * 100:.0f}%" for c, v in bd.items()
                                        if v > 0.005 * kp.time_us))
        tot = kp.totals()
        wc = s["wave_cycles"] or 1.0
        out.append("    wave-cycles: " + ", ".join(f"{CAUSE_HEAD.get(c, c)} {v / wc * 100:.0f}%"
                                                   for c, v in tot.items() if v > 0))
        out.append(f"    limiter: {kp.limiter}")
    if prof.findings:
        out.append(f"  findings ({len(prof.findings)}):")
        out += [f"    {f}" for f in prof.findings]
    else:
        out.append("  findings: none (races, out-of-bounds accesses, uninitialised reads checked)")
    return out


def annotated_lines(kp: KernelProfile, top: int | None = None) -> list[str]:
    """The annotated assembly of one kernel (``top``: only the ``top`` instructions with most
    issue + stall cycles, in address order)."""
    from vlpc.runtime.timing.recorder import STALL_CAUSES

    rows = kp.instructions
    if top is not None:
        keep = set(id(i) for i in sorted(rows, key=lambda i: -(i.issue_cycles + i.stall_cycles))[:top])
        rows = [i for i in rows if id(i) in keep]
    heads = ["offset", "execs", "issues", "issue"] + [CAUSE_HEAD[c] for c in STALL_CAUSES]
    executed = int(getattr(kp.stats, "workgroups", 0) or 0)
    whole = int(math.prod(kp.grid))
    scope = ("in the whole launch" if executed >= whole else
             f"in the {executed} of {whole} workgroups executed (--timing-only)")
    out = [f"  annotated assembly of {kp.name} (execs: wave executions {scope}; issues and cycles: "
           f"the simulated CU's {kp.simulated['waves']} waves, modeled; '*' hot spot)",
           "  " + " ".join(f"{h:>9}" for h in heads) + "   instruction"]
    for ip in rows:
        cells = [f"+0x{ip.offset:x}", str(ip.executions), str(ip.issues), _fmt(ip.issue_cycles)]
        cells += [_fmt(ip.stalls.get(c, 0.0)) for c in STALL_CAUSES]
        out.append("  " + " ".join(f"{c:>9}" for c in cells) + f" {'*' if ip.hot else ' '} {ip.text}")
    return out


def format_text(prof: Profile, top: int | None = None) -> str:
    """Summary then each kernel's annotated assembly, as plain text."""
    lines = summary_lines(prof)
    for kp in prof.kernels:
        lines.append("")
        lines += annotated_lines(kp, top)
    return "\n".join(lines) + "\n"


def format_html(prof: Profile) -> str:
    """A standalone HTML page: the summary and each kernel's annotated assembly (hot spots
    highlighted, a bar per row for its share of the wave-cycles)."""
    from vlpc.runtime.timing.recorder import STALL_CAUSES

    e = html.escape
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>vlpc profile: "
             f"{e(prof.source)}</title><style>body{{font-family:sans-serif}} table{{border-collapse:collapse;"
             "font-family:monospace;font-size:12px}} td,th{{padding:1px 6px;text-align:right}} td.i{{text-align:left;"
             "white-space:pre}} tr.hot{{background:#fdd}} .bar{{background:#c33;height:8px;display:inline-block}}"
             "</style></head><body>",
             "<h1>vlpc profile (modeled, not measured)</h1><pre>"
             + e("\n".join(summary_lines(prof))) + "</pre>"]
    for kp in prof.kernels:
        wc = kp.simulated["wave_cycles"] or 1.0
        parts.append(f"<h2>{e(kp.name)}</h2><table><tr><th>offset</th><th>execs</th><th>issues</th><th>issue</th>"
                     + "".join(f"<th>{e(CAUSE_HEAD[c])}</th>" for c in STALL_CAUSES)
                     + "<th>share</th><th style='text-align:left'>instruction</th></tr>")
        for ip in kp.instructions:
            share = (ip.issue_cycles + ip.stall_cycles) / wc
            parts.append(f"<tr{' class=hot' if ip.hot else ''}><td>+0x{ip.offset:x}</td><td>{ip.executions}</td>"
                         f"<td>{ip.issues}</td><td>{_fmt(ip.issue_cycles)}</td>"
                         + "".join(f"<td>{_fmt(ip.stalls.get(c, 0.0))}</td>" for c in STALL_CAUSES)
                         + f"<td><span class=bar style='width:{min(200, share * 400):.0f}px'></span> "
                         f"{share * 100:.1f}%</td><td class=i>{e(ip.text)}</td></tr>")
        parts.append("</table>")
    parts.append("</body></html>\n")
    return "".join(parts)


def chrome_trace(prof: Profile) -> dict:
    """The wave timeline of the simulated CU(s) in the Chrome Trace Event Format (a JSON object with
    ``traceEvents``): one process per SIMD (``pid``), one thread per wave (``tid`` >= 1), an ``"X"``
    (complete) event per issued instruction (``cat`` ``issue``) and per stall before one (``cat``
    ``stall``, named by its largest cause), and a thread ``tid`` 0 per SIMD with its VALU's busy
    spans (``cat`` ``valu``); ``ts``/``dur`` in microseconds (modeled engine cycles / MHz),
    non-decreasing and not overlapping per track.  A plan's kernels follow each other in time."""
    from vlpc.runtime.timing.recorder import STALL_CAUSES

    ev: list[dict] = []
    offset_us = 0.0
    mhz = prof.clock_mhz
    for ki, kp in enumerate(prof.kernels):
        texts = {ip.pc: ip.text for ip in kp.instructions}
        turn_us = kp.simulated["turn_cycles"] / mhz
        for simd in range(4):
            pid = ki * 4 + simd + 1
            ev.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                       "args": {"name": f"{kp.name} SIMD {simd}"}})
            ev.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        for w, wr in enumerate(kp.waves):
            if wr is None:
                continue
            ev.append({"ph": "M", "name": "thread_name", "pid": ki * 4 + wr.simd + 1, "tid": w + 1,
                       "args": {"name": f"wave {w} (workgroup {wr.wg}, traced {wr.key[0]}.{wr.key[1]})"}})
        for simd in range(4):
            ev.append({"ph": "M", "name": "thread_name", "pid": ki * 4 + simd + 1, "tid": 0,
                       "args": {"name": f"SIMD {simd} VALU busy"}})
        for (w, pc, t, since, cause, busy) in kp.events:
            pid = ki * 4 + kp.waves[w].simd + 1
            if busy:
                ev.append({"ph": "X", "cat": "valu", "name": "VALU", "pid": pid, "tid": 0,
                           "ts": offset_us + t / mhz, "dur": busy / mhz, "args": {"wave": w}})
            if t > since:
                ev.append({"ph": "X", "cat": "stall", "name": f"stall: {STALL_CAUSES[cause]}", "pid": pid,
                           "tid": w + 1, "ts": offset_us + since / mhz, "dur": (t - since) / mhz,
                           "args": {"before": f"+0x{pc - kp.entry_pc:x}"}})
            text = texts.get(pc, "?")
            ev.append({"ph": "X", "cat": "issue", "name": text.split()[0] if text else "?", "pid": pid,
                       "tid": w + 1, "ts": offset_us + t / mhz, "dur": turn_us,
                       "args": {"offset": f"+0x{pc - kp.entry_pc:x}", "instruction": text}})
        offset_us += kp.simulated["cycles"] / mhz
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"source": prof.source, "board": prof.board, "clock_mhz": prof.clock_mhz,
                          "note": "modeled by vlpc's timing model (simulated CU 0), not measured",
                          "events_dropped": sum(k.events_dropped for k in prof.kernels)}}


#: Colours of the timeline picture: issue, then stall causes.
_COLOURS = {"issue": "#1f77b4", "valu_busy": "#9467bd", "vmcnt": "#d62728", "lgkmcnt_smem": "#ff7f0e",
            "lgkmcnt_lds": "#bcbd22", "barrier": "#2ca02c", "port": "#7f7f7f", "fetch": "#17becf"}


def timeline_figure(prof: Profile):
    """A matplotlib figure of the wave timeline (one row per wave, per kernel; x in modeled µs)."""
    from vlpc.cli_support import pyplot
    from vlpc.runtime.timing.recorder import STALL_CAUSES

    plt = pyplot()
    rows = sum(sum(1 for w in kp.waves if w is not None) for kp in prof.kernels) or 1
    fig, ax = plt.subplots(figsize=(12, max(2.5, min(0.25 * rows + 1.5, 30))))
    mhz = prof.clock_mhz
    y = 0
    offset = 0.0
    labels = []
    for kp in prof.kernels:
        first_row = y
        rows_of = {}
        for w, wr in enumerate(kp.waves):
            if wr is not None:
                rows_of[w] = y
                labels.append(f"{kp.name[:16]} s{wr.simd} w{w}")
                y += 1
        bars: dict[tuple[int, str], list] = {}
        for (w, pc, t, since, cause, _busy) in kp.events:
            if t > since:
                bars.setdefault((rows_of[w], STALL_CAUSES[cause]), []).append((offset + since / mhz, (t - since) / mhz))
            bars.setdefault((rows_of[w], "issue"), []).append((offset + t / mhz, kp.simulated["turn_cycles"] / mhz))
        for (row, kind), spans in bars.items():
            ax.broken_barh(spans, (row - 0.4, 0.8), facecolors=_COLOURS[kind], linewidth=0)
        offset += kp.simulated["cycles"] / mhz
        del first_row
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("time (µs, modeled)")
    ax.set_title(f"vlpc profile: {os.path.basename(prof.source)} on {prof.board} @ {prof.clock_mhz:.0f} MHz "
                 "(modeled wave timeline of the simulated CU)", fontsize=9)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=c, label=k) for k, c in _COLOURS.items()], fontsize=7, ncol=8,
              loc="upper center", bbox_to_anchor=(0.5, -0.22))
    fig.tight_layout()
    return fig


def timeline_png(prof: Profile) -> bytes:
    """:func:`timeline_figure` as PNG bytes."""
    import io

    fig = timeline_figure(prof)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    from vlpc.cli_support import pyplot
    pyplot().close(fig)
    return buf.getvalue()
