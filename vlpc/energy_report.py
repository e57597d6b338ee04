"""``vlpc report --energy`` / ``vlpc bench --energy``: modeled joules and watts of one GEMM for
sqc, sqc without forwarding and the legacy LDS strategy, side by side (the options, output
files and printing of the two commands: vlpc/commands/energy.py).

Each variant is compiled (``strategy=sqc`` with the command's options, the same with
``forwarding=false``, ``strategy=lds``), its plan run once on the emulator with the timing model
of a board (``EmulatorDevice(gpu=..., clock_mhz=..., timing_only=True)``: only the
workgroups the timing model needs are executed, so C is not computed or verified here),
and priced by the energy model (:mod:`vlpc.runtime.timing.energy`).  The plan is the one
``vlpc compile`` / ``vlpc run`` give for the same options (auto split-K and local split stay
auto; ``--split-k 1`` forces one kernel); a plan of several kernels (split-K and its reduce,
a copy pre-kernel) is priced launch by launch and added up (energy, modeled time with each
launch's overhead; watts = energy / time).  Every figure is
*modeled*: the time by the timing model, the energy by per-event energies (two of them
calibrated on the seed's measured MI60 power, ``benchmarks/energy_calibration.py``).

Element types: f32 and f64 (all three variants), f16 and int8 (the dot kernels,
passes/isel/dot.py: sqc with and without forwarding; the lds strategy does not exist
for them).  A variant the kernel's type or the command's options rule out is left out of the
table and named in one line with the compiler's reason; only when no variant compiles is the
refusal an error.  Operations are 2 M N K (times the batch count of a strided batched GEMM):
FLOPs, or integer ops ("op") for int8.  Sizes, leading dimensions, the batch count (``--batch``
when it is dynamic) and batch strides are resolved as ``vlpc run`` resolves them.

Outputs: a Markdown table (stdout and ``PREFIX.md``), ``PREFIX.csv`` and a stacked-bar
chart of the energy per FLOP by component (``PREFIX.svg``, or ``--chart F.svg|F.png``).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

import numpy as np

from vlpc.errors import VlpcError

#: variant -> (compile options overriding the command's, title)
VARIANTS: dict[str, tuple[dict, str]] = {
    "sqc": ({"strategy": "sqc", "forwarding": True}, "sqc"),
    "sqc-nofwd": ({"strategy": "sqc", "forwarding": False}, "sqc, no forwarding"),
    "lds": ({"strategy": "lds", "forwarding": True, "schedule": "default"}, "legacy (lds)"),
}

#: The CSV's ``figures`` column: every number of the report comes from the models.
MODELED = "modeled (vlpc timing and energy models), not measured"

COLORS = {"vgpr": "#08519c", "forwarded": "#6baed6", "sgpr": "#9ecae1", "fma": "#31a354",
          "valu_other": "#a1d99b", "valu_overhead": "#74c476", "issue": "#fdae6b", "salu": "#fd8d3c",
          "smem": "#e6550d", "l1": "#bcbddc", "l2": "#9e9ac8", "hbm": "#756bb1", "lds": "#de2d26",
          "barrier": "#fcbba1", "static": "#bdbdbd"}


@dataclass
class EnergyRow:
    variant: str
    title: str
    kernel: str
    m: int
    n: int
    k: int
    energy: object  # vlpc.runtime.timing.energy.EnergyReport
    #: Above the board's power limit: where the board would settle (vlpc.runtime.timing.energy.PowerLimited).
    limited: object = None
    #: Element types: ``f32``, ``f64``, ``f16 -> f32``, ``i8 -> i32``... (:func:`type_label`).
    dtype: str = "f32"
    #: How the plan splits the work (:func:`plan_label`): ``""`` for one kernel that does not split K.
    plan: str = ""
    #: The plan's launches as run, in order (:class:`Launch`), each priced alone.
    launches: list = field(default_factory=list)
    #: Products of a strided batched GEMM (:attr:`vlpc.verify.Problem.batch`); 0 for a plain GEMM.
    batch: int = 0

    @property
    def heading(self) -> str:
        """The variant's column title: its title, and the plan when it is not one plain kernel."""
        return f"{self.title} ({self.plan})" if self.plan else self.title

    @property
    def kernels(self) -> str:
        """The kernels run: each launch's name, grid (workgroups) and modeled time."""
        if not self.launches:
            return self.kernel
        return " + ".join(f"{x.kernel} (grid {'x'.join(map(str, x.grid))}, {x.stats.timing.time_us:,.1f} us)"
                          for x in self.launches)


def type_label(ab: str, ct: str) -> str:
    """The element types as the report names them: ``f32``, ``f16 -> f32``, ``i8 -> i32``."""
    return ab if ab == ct else f"{ab} -> {ct}"


def host_buffers(ck, p) -> tuple[dict, type, type | None, str, str]:
    """Zero-filled, exactly sized host buffers of ``ck``'s element types for the problem ``p``
    (:class:`vlpc.verify.Problem`): ``A``, ``B``, ``C`` (:func:`vlpc.verify.geometries`), the W8A8
    scales (f32, M and N values) and a fused bias (M or N values: f32 for W8A8, else A's type, as
    :func:`vlpc.api.launch_and_check` and :func:`vlpc.run` pass them).  Returns ``(buffers, C's NumPy type,
    alpha/beta's NumPy type (None: the kernel's element type), A/B type, C type)``.  Values do not
    matter to a timing-only launch: the kernels' work does not depend on them."""
    from vlpc.verify import NP_DTYPE, geometries

    ab = str(ck.launch_info.get("dtype", "f32"))
    if ab in ("f16", "i8"):  # the dot kernels: typed A/B and C, f32 or i32 alpha/beta (vlpc/verify.py)
        from vlpc.verify import NP, scalar_type, types_of

        ab, ct, dequant = types_of(ck)
        types, scalar = NP, scalar_type(ck)
    else:
        ct, dequant, types, scalar = ab, False, NP_DTYPE, None
    host = {name: np.zeros(g.size, types[ab if name in "AB" else ct])
            for name, g in geometries(ck.layout, p).items()}
    if dequant:
        host["scale_row"], host["scale_col"] = np.zeros(p.m, np.float32), np.zeros(p.n, np.float32)
    epi = str(ck.launch_info.get("epilogue", "")).split(",")
    if "bias_row" in epi or "bias_col" in epi:
        host["bias"] = np.zeros(p.m if "bias_row" in epi else p.n, np.float32 if dequant else types[ab])
    fmt = ck.launch_info.get("b_format")
    if fmt:  # B: a quantized tensor's bytes, N rows (a swiglu's 2N) of row_bytes every ldb bytes (vlpc/quant_run.py)
        from vlpc.quant_run import row_bytes

        rows = 2 * p.n if "swiglu" in epi else p.n
        host["B"] = np.zeros((rows - 1) * p.ldb + row_bytes(str(fmt), p.k), np.uint8)
    if ck.launch_info.get("residual"):  # R: C's geometry, its own element type (docs/quantized.md)
        host["residual"] = np.zeros(host["C"].size, types[str(ck.launch_info["residual"])])
    return host, types[ct], scalar, ab, ct


def measure_energy(text: str, filename: str, variant: str, *, target: str = "gfx906", m: int | None = None,
                   n: int | None = None, k: int | None = None, gpu: str = "mi60", clock: float | None = None,
                   memory_clock: float | None = None,
                   options: dict | None = None, progress=None, batch: int | None = None) -> EnergyRow:
    """Compile ``text`` as ``variant`` (a key of :data:`VARIANTS`) with the command's options,
    run its plan once on the emulator with ``gpu``'s timing model at ``clock`` MHz (timing-only
    launches) and price it.  ``gpu`` None: the target's default board (:func:`vlpc.targets.board_for`,
    as ``report --energy`` passes it); the plan is made for that board unless ``options`` name one.

    The plan priced is the one :func:`vlpc.compile` gives for those options (``split_k="auto"``
    stays auto; ``split_k=1`` forces one kernel): every kernel of it (the split-K kernel and its
    reduce or scale kernel, the A-transpose / B-copy pre-kernels, a row-narrow kernel for a small
    M), each launched in order by :meth:`vlpc.kernel.CompiledKernel.execute` and priced alone
    (:func:`vlpc.runtime.timing.energy.launch_energy`, its own modeled time with the launch
    overhead), then added up (:func:`~vlpc.runtime.timing.energy.combine_energy`).

    Every element type vlpc compiles: f32 and f64 (the sqc/lds kernels), f16 and int8 (the dot
    kernels, with their W8A8 scales and fused bias if any; the small-M/GEMV plans too).  Buffers
    are sized from the kernel's element types (:func:`host_buffers`) and the arguments packed by
    :func:`vlpc.verify.launch_and_read` (alpha = 1, beta = 0 of the kernel's scalar type).

    The problem is resolved as ``vlpc run`` resolves it (:func:`vlpc.api.resolve_launch`): static
    sizes, leading dimensions and batch strides from the IR, the others from ``m``, ``n``, ``k``
    and ``batch`` (the batch count of a strided batched kernel when it is dynamic; batch strides
    given at launch are rows x leading dimension), so a batched kernel's buffers hold its whole
    batch (:func:`vlpc.verify.geometries`).
    The operations counted are 2 M N K x the batch count (FLOPs; integer ops for int8).  Raises
    :class:`VlpcError` for sizes or options the variant cannot compile or run, and for ``batch``
    given to a kernel that is not batched or contradicting a static batch count."""
    import vlpc
    from vlpc.api import resolve_launch
    from vlpc.runtime.emulator.device import EmulatorDevice
    from vlpc.verify import check_before_allocating, launch_and_read

    over, title = VARIANTS[variant]
    opts = dict(options or {})
    opts.update(over)
    if gpu is None:  # the target's default board (vlpc.targets.DEFAULT_BOARDS)
        from vlpc.targets import board_for

        gpu = board_for(target)
    opts["gpu"] = opts.get("gpu") or gpu  # the plan is made for the board it is priced on
    if opts["strategy"] == "lds":
        opts.pop("schedule", None)
    mod = vlpc.compile(text, target, filename=filename, **opts)
    from vlpc.cli_support import single_kernel
    ck = single_kernel(mod, "bench/report --energy")
    p = resolve_launch(ck, m, n, k, batch)  # as vlpc run and vlpc bench resolve it, without operand arrays
    check_before_allocating(ck, p)  # sizes and 32-bit offsets, before any buffer (vlpc/verify.py)
    batch = p.batch or None
    steps = ck.plan(p.m, p.n, p.k, batch)
    try:
        dev = EmulatorDevice(gpu=gpu, clock_mhz=clock, memory_clock_mhz=memory_clock, timing_only=True)
    except Exception as e:  # DeviceError: unknown board, clock out of range
        raise VlpcError(str(e)) from None
    host, c_type, scalar, ab, ct = host_buffers(ck, p)
    if progress is not None:
        if hasattr(progress, "add_total"):
            progress.add_total(ck.plan_workgroups(p.m, p.n, p.k, batch))
        dev.progress = progress
    launches = record_launches(dev)
    launch_and_read(ck, dev, host, p, 1, 0, c_type, scalar=scalar)
    if [x.kernel for x in launches] != [s.kernel for s in steps]:  # execute runs the plan, in order
        raise AssertionError(f"{ck.name}: launched {[x.kernel for x in launches]}, planned {steps}")
    ops = 2.0 * p.m * p.n * p.k * p.batches
    rep, limited = price_launches([x.stats for x in launches], dev.board, ops)
    return EnergyRow(variant, title, "+".join(s.kernel for s in steps), p.m, p.n, p.k, rep, limited,
                     type_label(ab, ct), plan=plan_label(ck, p.m, steps), launches=launches, batch=p.batch)


@dataclass
class Launch:
    """One kernel launch of a plan as run: its name, grid (workgroups), block (work-items) and
    the emulator's ``LaunchStats`` (with its own ``timing`` report)."""

    kernel: str
    grid: tuple
    block: tuple
    stats: object


def record_launches(device) -> list[Launch]:
    """Record each ``device.launch`` (in order, with its own statistics) from now on: the list
    returned fills as the device launches.  ``execute`` merges a plan's counters into one
    ``LaunchStats`` whose timing report has no cache counters, which the energy model cannot
    price; each launch's own statistics can be."""
    launches: list[Launch] = []
    inner = device.launch

    def launch(code_object, kernel, grid=(1, 1, 1), block=(64, 1, 1), *args, **kwargs):
        st = inner(code_object, kernel, grid, block, *args, **kwargs)
        launches.append(Launch(kernel, tuple(grid), tuple(block), st))
        return st

    device.launch = launch
    return launches


def price_launches(stats: list, board, flops: float):
    """``(EnergyReport, PowerLimited or None)`` of a plan's launches (``LaunchStats`` in order,
    each with its timing report): one launch is priced by
    :func:`~vlpc.runtime.timing.energy.launch_energy`; several are each priced alone and added
    (:func:`~vlpc.runtime.timing.energy.combine_energy`).  Above the board's power limit, the clock where the board would
    settle: :func:`~vlpc.runtime.timing.energy.power_limited` for one launch, the same bisection
    over the whole plan's power for several (None when it cannot be found)."""
    from vlpc.runtime.timing.energy import EnergyError, combine_energy, launch_energy, power_limited

    if len(stats) == 1:
        rep = launch_energy(stats[0], board, flops=flops)
    else:
        rep = combine_energy([launch_energy(st, board) for st in stats], flops)
    limited = None
    if rep.over_power_limit:  # where PowerTune would settle: the timing model re-run at lower clocks
        try:
            limited = power_limited(stats, board, flops=flops)
        except EnergyError:
            limited = None
    return rep, limited


def plan_label(ck, m: int, steps: list) -> str:
    """How the plan splits the work, for the table's header: ``""`` for one kernel that does
    not split K; else e.g. ``split-K 4: 2 kernels``, ``local split 16``, ``A copied first: 2
    kernels`` (``ck``: the compiled main kernel; ``m``: M at launch; ``steps``: its plan)."""
    ck = next((ck.companions[s.kernel] for s in steps if s.kernel in ck.companions
               and ck.companions[s.kernel].launch_info.get("role") == "variant"), ck)  # a launch-time variant
    rows = ck.rows_kernel(m)
    run = rows if rows is not None else ck
    parts = []
    if ck.transpose_kernel() is not None:  # (or the quantized GEMV's int8 activations: passes/isel/quant_act.py)
        parts.append("A quantized first" if ck.transpose_kernel().launch_info.get("role") == "quantize_a"
                     else "A copied first")
    if ck.b_copy_kernel() is not None:
        parts.append("B copied first")
    if rows is None and ck.split_k > 1:
        parts.append(f"split-K {ck.split_k}" + (" atomic" if ck.split_mode == "atomic" else ""))
    if run.local_split > 1:
        parts.append(f"local split {run.local_split}")
    label = ", ".join(parts)
    if len(steps) > 1:
        label = f"{label}: {len(steps)} kernels" if label else f"{len(steps)} kernels"
    return label


def vf_range_note(board: str, clock_mhz: float, voltage: float) -> str | None:
    """A sentence when ``clock_mhz`` is outside the points of ``board``'s V/f curve
    (:attr:`vlpc.targets.EnergyParams.vf_curve`), where the core voltage, and with it every dynamic
    energy and the idle power, is extrapolated; ``None`` inside it."""
    from vlpc.targets import energy_params

    pts = sorted(energy_params(board).vf_curve)
    lo, hi = pts[0][0], pts[-1][0]
    if lo <= clock_mhz <= hi:
        return None
    return (f"{clock_mhz:.0f} MHz is outside the {board} V/f curve's {lo:.0f}..{hi:.0f} MHz: the core voltage "
            f"({voltage:.3f} V) is extrapolated beyond its last point, and with it every dynamic energy and the "
            f"idle power, so these figures are outside the energy model's range")


@dataclass
class EnergyComparison:
    rows: list[EnergyRow]
    #: Variants that do not exist for the kernel's element type or the command's options:
    #: (title, the compiler's or the kernel's one-line reason).
    left_out: list[tuple[str, str]] = field(default_factory=list)
    #: Sentences printed under the header (e.g. how rocblas-bench's problem maps to vlpc's).
    notes: list[str] = field(default_factory=list)

    @property
    def dtype(self) -> str:
        return self.rows[0].dtype

    @property
    def batch_text(self) -> str:
        """``", batch of 3"`` for a strided batched GEMM (the figures are of the whole batch), else ``""``."""
        b = self.rows[0].batch
        return f", batch of {b}" if b else ""

    @property
    def op(self) -> str:
        """The unit counted: ``FLOP``, or ``op`` for integer (int8) products."""
        return "op" if self.dtype.startswith("i") else "FLOP"

    def by(self, variant: str) -> EnergyRow | None:
        return next((r for r in self.rows if r.variant == variant), None)

    def table(self) -> list[tuple[str, list[str]]]:
        """(label, one cell per variant) rows of the comparison."""
        from vlpc.runtime.timing.energy import COMPONENTS

        out = []
        es = [r.energy for r in self.rows]
        op = self.op
        out.append(("modeled time (us)", [f"{e.time_us:,.1f}" for e in es]))
        out.append((f"modeled T{op.upper() if op == 'op' else op}/s", [f"{e.tflops:.3f}" for e in es]))
        out.append(("energy per GEMM (mJ)", [f"{e.total_joules * 1e3:,.3f}" for e in es]))
        out.append(("average board power (W)", [f"{e.watts:.1f}" + (" (above the limit)" if e.over_power_limit else "")
                                                for e in es]))
        out.append((f"pJ per {op}", [f"{e.pj_per_flop:.2f}" for e in es]))
        out.append((f"G{op.upper() if op == 'op' else op}/s per W", [f"{e.gflops_per_watt:.1f}" for e in es]))
        for c in COMPONENTS:
            out.append((f"{self.component_title(c)} (pJ/{op})", [f"{e.joules[c] / e.flops * 1e12:.3f}" for e in es]))
        return out

    def component_title(self, c: str) -> str:
        """:data:`COMPONENT_TITLE`'s, with "FMA/dot datapath" when a kernel ran dot or packed-f16
        instructions (priced in the same component, each with its own coefficient)."""
        from vlpc.runtime.timing.energy import COMPONENT_TITLE

        if c == "fma" and any(r.energy.events is not None and (r.energy.events.dot2_f32_f16_lanes
                                                               or r.energy.events.dot4_i32_i8_lanes
                                                               or r.energy.events.pk_fma_f16_lanes)
                              for r in self.rows):
            return "FMA/dot datapath"
        return COMPONENT_TITLE[c]

    def savings_lines(self) -> list[str]:
        lines = []
        for r in self.rows:
            e = r.energy
            if e.over_power_limit:
                lines.append(f"{r.title}: modeled {e.watts:.0f} W is above the {e.board} board's "
                             f"{e.power_limit_watts:.0f} W power limit: the board would lower its engine clock "
                             f"(PowerTune), so this variant's modeled time is optimistic and its watts are "
                             f"not what the board would draw"
                             + (f"; {r.limited.summary()}" if r.limited is not None else ""))
        sqc, nof, lds = self.by("sqc"), self.by("sqc-nofwd"), self.by("lds")
        op = self.op
        if sqc and lds:
            a, b = sqc.energy, lds.energy
            d = b.pj_per_flop - a.pj_per_flop
            lines.append(f"sqc uses {abs(d):.2f} pJ/{op} {'less' if d >= 0 else 'more'} than legacy (lds) "
                         f"({100 * abs(d) / b.pj_per_flop:.1f}%); average power {a.watts:.1f} W vs "
                         f"{b.watts:.1f} W (modeled times {a.time_us:,.1f} us vs {b.time_us:,.1f} us)")
        if sqc and nof and sqc.energy.events is not None and sqc.energy.events == nof.energy.events:
            lines.append("forwarding: no difference here: sqc with and without it execute the same event counts "
                         "(the FMA/dot order of this kernel is the same either way), so the same modeled energy")
        elif sqc and nof:
            a, b = sqc.energy, nof.energy
            dyn = (b.dynamic_joules - a.dynamic_joules) / a.flops * 1e12
            lines.append(f"forwarding: {dyn:.2f} pJ/{op} less dynamic energy than without it "
                         f"({b.pj_per_flop - a.pj_per_flop:.2f} pJ/{op} in total, with idle power x modeled time); "
                         f"average power {a.watts:.1f} W vs {b.watts:.1f} W")
        for title, why in self.left_out:
            lines.append(f"{title} left out: {why}")
        return lines

    def markdown(self) -> str:
        r0 = self.rows[0]
        e0 = r0.energy
        out = io.StringIO()
        w = out.write
        w(f"# Modeled energy per GEMM: M={r0.m} N={r0.n} K={r0.k}{self.batch_text}, {r0.dtype}, {e0.board} @ "
          f"{e0.clock_mhz:.0f} MHz\n\n")
        w(f"All figures are modeled (vlpc's timing and energy models on the emulator's counts), not measured: "
          f"core voltage {e0.voltage:.3f} V from the assumed V/f curve, idle power {e0.idle_watts:.1f} W; "
          f"coefficients and sources in vlpc/targets/energy.py (EnergyParams, ENERGY_SOURCES).\n\n")
        for note in self.notes:
            w(f"{note}\n\n")
        if r0.batch:
            w(f"A strided batch of {r0.batch} GEMMs: every figure is of the whole batch "
              f"({r0.batch} x 2 M N K operations).\n\n")
        note = vf_range_note(e0.board, e0.clock_mhz, e0.voltage)
        if note:
            w(f"**{note}.**\n\n")
        from vlpc.targets import BOARD_ENERGY_NOTE
        if e0.board in BOARD_ENERGY_NOTE:
            w(f"**{BOARD_ENERGY_NOTE[e0.board]}.**\n\n")
        head = ["figure"] + [r.heading for r in self.rows]
        w("| " + " | ".join(head) + " |\n")
        w("|" + "|".join(["---"] + ["---:"] * len(self.rows)) + "|\n")
        for label, cells in self.table():
            w("| " + " | ".join([label] + cells) + " |\n")
        lines = self.savings_lines()
        if lines:
            w("\n")
            for line in lines:
                w(f"- {line}\n")
        w("\n| variant | kernel |\n|---|---|\n")
        for r in self.rows:
            w(f"| {r.title} | {r.kernels} |\n")
        return out.getvalue()

    def csv(self) -> str:
        """One row per variant: the table's figures unrounded (joules, not pJ/FLOP, per component),
        ``batch`` (0 for a plain GEMM, as ``vlpc bench --csv``), ``flops``, the operations the
        per-FLOP figures divide by (2 M N K x the batch count; integer ops for int8), and
        ``figures``: :data:`MODELED` (nothing in the file is measured)."""
        from vlpc.runtime.timing.energy import COMPONENTS

        out = io.StringIO()
        wr = csv.writer(out)
        wr.writerow(["variant", "kernel", "board", "clock_mhz", "voltage", "m", "n", "k", "time_us", "tflops",
                     "joules", "watts", "pj_per_flop", "gflops_per_watt"] + [f"joules_{c}" for c in COMPONENTS]
                    + ["dtype", "plan", "launches", "batch", "flops", "figures"])
        for r in self.rows:
            e = r.energy
            wr.writerow([r.variant, r.kernel, e.board, f"{e.clock_mhz:.0f}", f"{e.voltage:.4f}", r.m, r.n, r.k,
                         f"{e.time_us:.3f}", f"{e.tflops:.4f}", f"{e.total_joules:.6g}", f"{e.watts:.3f}",
                         f"{e.pj_per_flop:.4f}", f"{e.gflops_per_watt:.3f}"]
                        + [f"{e.joules[c]:.6g}" for c in COMPONENTS] + [r.dtype, r.plan, max(1, len(r.launches)),
                                                                         r.batch, f"{e.flops:.0f}", MODELED])
        return out.getvalue()

    def figure(self):
        """A stacked bar per variant: pJ per FLOP by component (matplotlib)."""
        from vlpc.cli_support import pyplot
        from vlpc.runtime.timing.energy import COMPONENTS

        plt = pyplot()
        fig, ax = plt.subplots(figsize=(8, 6))
        xs = list(range(len(self.rows)))
        bottom = [0.0] * len(self.rows)
        for c in COMPONENTS:
            vals = [r.energy.joules[c] / r.energy.flops * 1e12 for r in self.rows]
            if not any(vals):
                continue
            ax.bar(xs, vals, bottom=bottom, color=COLORS[c], label=self.component_title(c), width=0.6)
            bottom = [b + v for b, v in zip(bottom, vals)]
        for x, r, top in zip(xs, self.rows, bottom):
            ax.text(x, top * 1.01, f"{top:.1f} pJ/{self.op}\n{r.energy.watts:.0f} W", ha="center", va="bottom",
                    fontsize=8)
        ax.set_xticks(xs, [f"{r.title}\n{r.plan}" if r.plan else r.title for r in self.rows])
        ax.set_ylabel(f"modeled energy per {self.op} (pJ)")
        ax.set_ylim(0, max(bottom) * 1.18 if bottom else 1)
        r0 = self.rows[0]
        ax.set_title(f"Modeled energy by component, M={r0.m} N={r0.n} K={r0.k}{self.batch_text} {r0.dtype}\n"
                     f"{r0.energy.board} @ {r0.energy.clock_mhz:.0f} MHz (timing + energy model, not measured)",
                     fontsize=10)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
        fig.tight_layout()
        return fig

    def write_chart(self, path: str) -> None:
        from vlpc.cli_support import pyplot, save_figure

        plt = pyplot()
        fig = self.figure()
        save_figure(fig, path)
        plt.close(fig)


def describe(progress, text: str) -> None:
    """Set the description of a :class:`vlpc.cli_support.Progress` bar (shown or not yet created)."""
    if progress is None or not hasattr(progress, "desc"):
        return
    progress.desc = text
    bar = getattr(progress, "bar", None)
    if bar is not None:
        bar.set_description_str(text)


def build_comparison(text: str, filename: str, variants=tuple(VARIANTS), progress=None, **kwargs) -> EnergyComparison:
    """:func:`measure_energy` of each variant.  A variant the compiler or the kernel refuses with a
    user error (:class:`VlpcError` of exit code 1: the lds strategy for f16/int8, a tile or size the
    variant cannot take under the command's options) is left out with its reason
    (:attr:`EnergyComparison.left_out`); when every variant is refused, the first refusal is raised.
    Device faults and internal errors are raised as they are."""
    from vlpc.errors import EXIT_USER, DiagnosticError

    rows, left, first = [], [], None
    for i, v in enumerate(variants):
        # the bar's total grows by each variant's workgroups as it starts: say which one runs
        describe(progress, f"vlpc --energy: {VARIANTS[v][1]} ({i + 1}/{len(variants)})")
        try:
            rows.append(measure_energy(text, filename, v, progress=progress, **kwargs))
        except VlpcError as e:
            if getattr(e, "exit_code", EXIT_USER) != EXIT_USER:
                raise
            first = first or e
            left.append((VARIANTS[v][1], e.message if isinstance(e, DiagnosticError) else str(e)))
    if not rows:
        raise first
    return EnergyComparison(rows, left)
