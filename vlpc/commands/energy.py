"""``--energy`` of ``vlpc report`` and ``vlpc bench``: the options it refuses, the output files
(``PREFIX.md``, the CSV, the chart) and the table on standard output.  The figures are modeled
(:func:`vlpc.energy_report.build_comparison`: the timing and energy models), not measured."""

from __future__ import annotations

import sys
from pathlib import Path

from vlpc.errors import VlpcError

#: (argument, value that --energy contradicts or ignores, the flag as typed, why): refused in one line.
_ENERGY_REFUSED = (
    ("device", lambda v: v not in (None, "emulator"), "--device {v}",
     "--energy models the GEMM (emulator counts, timing and energy models); nothing is measured"),
    ("no_model", lambda v: v, "--no-model", "--energy needs the timing model"),
    ("rocblas_csv", lambda v: v, "--rocblas-csv", "--energy writes its own table and CSV"),
    ("strategy", lambda v: v not in (None, "sqc"), "--strategy {v}",
     "--energy compares sqc, sqc without forwarding and legacy (lds) itself"),
    ("forwarding", lambda v: v is False, "--no-forwarding",
     "--energy compares sqc, sqc without forwarding and legacy (lds) itself"),
    ("strategies", lambda v: v is not None, "--strategies {v}",
     "--energy compares sqc, sqc without forwarding and legacy (lds) itself"),
    ("iterations", lambda v: v is not None, "--iterations {v}",
     "--energy runs each variant's plan once, as a timing-only launch on the emulator (nothing is timed)"),
    ("warmup", lambda v: v is not None, "--warmup {v}",
     "--energy runs each variant's plan once, as a timing-only launch on the emulator (nothing is timed)"),
    ("max_emulated", lambda v: v is not None, "--max-emulated {v}",
     "--energy's timing-only launches run any size (only the workgroups the timing model traces)"),
)


def check_energy_options(args) -> None:
    """Refuse, in one line naming the flag, an option of ``vlpc bench`` / ``vlpc report`` that
    ``--energy`` would otherwise ignore (:data:`_ENERGY_REFUSED`); warn when ``vlpc bench``'s
    ``--alpha``/``--beta`` differ from the alpha = 1, beta = 0 every variant is priced with."""
    for name, bad, flag, why in _ENERGY_REFUSED:
        v = getattr(args, name, None)
        if bad(v):
            flag = flag.format(v=v)
            raise VlpcError(f"{flag}: {why}: drop {flag}")
    if hasattr(args, "sweep"):  # vlpc bench, whose --alpha/--beta default to None (report's are its table's)
        alpha, beta = getattr(args, "alpha", None), getattr(args, "beta", None)
        if (alpha is not None and alpha != 1.0) or (beta is not None and beta != 0.0):
            print("vlpc: warning: --energy prices every variant with alpha = 1, beta = 0 (C is not read): "
                  "--alpha/--beta are ignored", file=sys.stderr)


def run_energy_command(args, text: str, prefix: str, *, m=None, n=None, k=None) -> int:
    """The shared body of ``vlpc report --energy`` and ``vlpc bench --energy``: outputs are
    checked first, then the variants run (:func:`build_comparison`: those the type or options
    rule out are left out); the table goes to stdout and ``PREFIX.md``.  ``args.batch`` (``--batch``,
    if the command has it) is the batch count of a strided batched kernel when it is dynamic."""
    from vlpc.cli_support import Progress, check_chart, check_writable, codegen_options, output_prefix, write_atomic
    from vlpc.energy_report import build_comparison, vf_range_note

    batch = getattr(args, "batch", None)
    if batch is not None and batch <= 0:
        raise VlpcError(f"--batch must be positive, got {batch}")
    check_energy_options(args)
    prefix = output_prefix(prefix, prefix)  # -o out.md means out, not out.md.md
    chart = getattr(args, "chart", None) or f"{prefix}.svg"
    csv_path = getattr(args, "csv", None) or f"{prefix}.csv"  # vlpc bench's --csv FILE.csv
    for path, what, flag in ((f"{prefix}.md", "report", "-o PREFIX"), (csv_path, "CSV", "--csv"),
                             (chart, "chart", "--chart")):
        try:
            check_writable(path, what)
        except VlpcError as e:  # name the option that moves the file
            given = {"report": getattr(args, "output", None), "CSV": getattr(args, "csv", None),
                     "chart": getattr(args, "chart", None)}[what]
            hint = f"choose another {flag}" if given else "give -o PREFIX in a writable directory"
            raise VlpcError(f"{e}: {hint}") from None
    check_chart(chart)
    options = codegen_options(args)
    for key in ("strategy", "forwarding"):
        options.pop(key, None)
    gpu = getattr(args, "gpu", None)
    clock = getattr(args, "clock", None)
    from vlpc.targets import TargetError, TargetId, board_for, get_board
    try:
        proc = TargetId.parse(args.target).target
        gpu = gpu or board_for(proc)  # the target's default board (vlpc.targets.DEFAULT_BOARDS)
        board = get_board(gpu)
    except TargetError as e:
        raise VlpcError(str(e)) from None
    try:
        board = get_board(gpu, clock_mhz=clock)  # a bad clock fails before any compilation
    except TargetError as e:
        raise VlpcError(f"--clock {clock:g}: {e}") from None
    if board.target.name != proc.name:
        raise VlpcError(f"--energy: --gpu {gpu} is a {board.target.name} board but --target is {args.target}: "
                        f"add --target {board.target.name}")
    quiet = getattr(args, "quiet", False)
    with Progress(0, "vlpc --energy", quiet=quiet) as bar:
        rep = build_comparison(text, getattr(args, "file", None) or "<input>", target=args.target, m=m, n=n,
                               k=k, gpu=gpu, clock=clock, memory_clock=getattr(args, "memory_clock", None),
                               options=options, progress=None if quiet else bar,
                               batch=batch)
    if getattr(args, "function", None) is not None and args.m is not None and args.n is not None:
        # vlpc bench's rocblas-bench flags: the header's M and N are vlpc's row-major problem
        layout = (args.transpose_b or "N") + (args.transpose_a or "N")
        rep.notes.append(f"rocblas-bench's column-major {args.m} x {args.n} problem (-m {args.m} -n {args.n}) runs as "
                         f"vlpc's row-major M={args.n} N={args.m} (layout {layout}, A and B exchanged).")
    e0 = rep.rows[0].energy
    note = vf_range_note(e0.board, e0.clock_mhz, e0.voltage)
    if note:
        print(f"vlpc: warning: --clock {e0.clock_mhz:g}: {note}", file=sys.stderr)
    md = rep.markdown()
    sys.stdout.write(md)
    write_atomic(f"{prefix}.md", md)
    write_atomic(csv_path, rep.csv())
    rep.write_chart(chart)
    print(f"\nvlpc: wrote {prefix}.md, {csv_path}, {chart}", file=sys.stderr)
    return 0


def default_prefix(file: str | None) -> str:
    return f"{Path(file).stem if file and file != '-' else 'gemm'}-energy"
