"""``vlpc tune``: search a GEMM's plan options by the timing model (modeled times), the finalists
checked on the emulator; the winners go to the tuning database (docs/tuning.md).  This module
holds the options, the problems a run tunes (a file, ``--shapes``, ``--model``), the database
actions, progress and the tables and files written; :mod:`vlpc.tune` does the search."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

from vlpc.errors import VlpcError
from vlpc.tune import (DOT_TYPES, MACRO_TILES, Candidate, Outcome, Problem, Result, _type_label, board_and_target,
                       ceiling, flags, label, pipeline_string, resolve, search_space, share, table, unit)


#: ``vlpc tune``'s database actions (the first argument; a file of that name is written ./NAME).
DB_ACTIONS = ("list", "show", "export", "import", "clear")


def add_parser(sub) -> None:
    """Register ``vlpc tune`` on the CLI's subparsers."""
    from vlpc.cli_support import add_size_options, positive

    t = sub.add_parser("tune", help="search macro tile, k-step, waves per SIMD and split-K options by the timing "
                                    "model (modeled times), the finalists checked on the emulator; the winners go "
                                    "to the tuning database that compile/run/bench use (docs/tuning.md)")
    t.add_argument("file", nargs="?", help="input MLIR file with one GEMM (static sizes, or '?' ones given by "
                                           "--m/--n/--k); or a database action: list, show N, export FILE, "
                                           "import FILE, clear (a file named like one: ./list)")
    t.add_argument("action_arg", nargs="?", metavar="N|FILE", help="show's entry number, export's or import's file")
    add_size_options(t)  # -m/--m, -n/--n, -k/--k, as run, bench and report
    t.add_argument("--batch", default=None, metavar="B|B1,B2,...",
                   help="the batch count of a strided batched GEMM, when dynamic (a batch is tuned whole, with "
                        "S = 1); with --model: the batch sizes (tokens) of every layer, e.g. 1,4,16,512 "
                        "(default: 1)")
    t.add_argument("--shapes", metavar="FILE", help="tune every GEMM of FILE: one rocblas-bench flags line each "
                                                    "(-f gemm -r f32_r --transposeA N --transposeB T -m M -n N -k K)")
    t.add_argument("--model", metavar="FILE.gguf", help="tune every linear layer of a GGUF model at each --batch "
                                                        "size (the gguf package: pip install 'vlpc[tune]')")
    t.add_argument("--target", default=None, help="target id (default: the --gpu board's processor: gfx900 for "
                                                  "mi25, else gfx906)")
    from vlpc.targets import default_boards_text
    t.add_argument("--gpu", default=None, choices=("mi60", "mi50", "mi25"), help="board the timing model predicts "
                   f"and the plans are made for (default: the target's default board: {default_boards_text()})")
    t.add_argument("--clock", type=float, default=None, metavar="MHZ", help="engine clock (default: the board's)")
    t.add_argument("--cus", type=int, default=None, help="compute units (default: the board's)")
    t.add_argument("-j", "--jobs", type=positive, default=None,
                   help="candidates evaluated in parallel (default: the machine's CPU count)")
    t.add_argument("--ray", metavar="auto|ADDRESS", default=None,
                   help="evaluate candidates as Ray tasks: auto (the running cluster, else one started on this "
                        "machine with --jobs CPUs) or a cluster's address; several problems at once on 8 CPUs or "
                        "more (pip install 'vlpc[distributed]')")
    t.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                   help="stop after SECONDS of wall time, keeping every result so far (as Ctrl-C does); no new "
                        "candidate is modeled after three quarters of it (the rest is for the checks)")
    t.add_argument("--db", metavar="FILE", default=None,
                   help="the tuning database (default: $VLPC_TUNE_DB, else tune.sqlite3 in the kernel cache's "
                        "folder; VLPC_TUNE_DB=off: none)")
    t.add_argument("--exhaustive", action="store_true", help="every split S from 1 to 32, not only powers of two")
    t.add_argument("--atomic", action="store_true", help="also try split-K mode atomic (not bit-reproducible)")
    t.add_argument("--all", dest="prune", action="store_false",
                   help="model every candidate (default: stop when the plan model's bound shows none left can win)")
    t.add_argument("--max-candidates", type=positive, default=None, metavar="N",
                   help="model at most N candidates besides the automatic plan (in the plan model's order)")
    t.add_argument("--finalists", type=positive, default=3, metavar="N",
                   help="the fastest N modeled are checked on the emulator (more while none passes; default: "
                        "%(default)s)")
    t.add_argument("--no-check", dest="check", action="store_false",
                   help="skip the emulator check (the ranking is then unverified)")
    t.add_argument("--top", type=positive, default=20, help="rows of the ranked table shown (default: %(default)s)")
    t.add_argument("-o", "--output", metavar="TUNED.json",
                   help="write the winner (options, flags, pipeline, modeled figures) as JSON (a list with "
                        "--shapes/--model); `vlpc compile FILE --options TUNED.json` compiles it")
    t.add_argument("--csv", metavar="FILE.csv", help="also write every candidate's figures as CSV")
    t.add_argument("-q", "--quiet", action="store_true",
                   help="no progress (a bar on a terminal, else one line per finished shape)")


def _db(args):
    """The tuning database of ``--db`` / ``$VLPC_TUNE_DB`` (None when off)."""
    from vlpc.tunedb import TuneDB, open_default

    return TuneDB(args.db) if args.db else open_default()


def _db_action(args) -> int:
    """``vlpc tune list|show N|export FILE|import FILE|clear``."""
    from vlpc.cli_support import read_input, write_atomic
    from vlpc.tunedb import iter_lines

    action, arg = args.file, args.action_arg
    db = _db(args)
    if db is None:
        raise VlpcError(f"vlpc tune {action}: the tuning database is off (VLPC_TUNE_DB=off); give --db FILE")
    needs = {"show": "an entry number (vlpc tune show 3)", "export": "a file (vlpc tune export tuned.json)",
             "import": "a file (vlpc tune import tuned.json)"}
    if action in needs and arg is None:
        raise VlpcError(f"vlpc tune {action} needs {needs[action]}")
    if action not in needs and arg is not None:
        raise VlpcError(f"vlpc tune {action} takes no argument (got {arg})")
    with db:
        if action == "list":
            entries = db.entries()
            if not entries:
                print(f"vlpc tune: no entries in {db.path}", file=sys.stderr)
                return 0
            print("\n".join(iter_lines(entries)))
            print(f"\n{len(entries)} entries in {db.path}; times MODELED by vlpc's timing model, not measured",
                  file=sys.stderr)
        elif action == "show":
            try:
                number = int(arg)
            except ValueError:
                raise VlpcError(f"vlpc tune show: expected an entry number, got {arg!r}") from None
            e = db.get(number)
            if e is None:
                raise VlpcError(f"vlpc tune show: no entry #{number} in {db.path} (vlpc tune list shows them)")
            import json

            print(json.dumps({"id": e.id, **e.as_dict(), "note": "times are modeled, not measured"}, indent=1))
        elif action == "export":
            write_atomic(arg, db.export())
            print(f"vlpc tune: {len(db.entries())} entries written to {arg}", file=sys.stderr)
        elif action == "import":
            n = db.import_text(read_input(arg), arg)
            print(f"vlpc tune: {n} entries imported into {db.path}", file=sys.stderr)
        else:
            print(f"vlpc tune: removed {db.clear()} entries from {db.path}", file=sys.stderr)
    return 0


@dataclass
class Job:
    """One problem of a ``vlpc tune`` run: MLIR text, its name and launch sizes."""

    text: str
    filename: str
    m: int | None = None
    n: int | None = None
    k: int | None = None
    batch: int | None = None
    alpha: float = 1.0
    beta: float = 1.0
    source: str = ""


@dataclass
class Tuned:
    """One problem's outcome in a ``vlpc tune`` run."""

    job: Job
    name: str = ""
    dtype: str = "f32"
    outcome: Outcome | None = None
    error: str | None = None
    p: object = None
    layout: str = "NT"


def _jobs(args) -> tuple[list[Job], list[str]]:
    from vlpc.cli_support import read_input

    given = [x for x, v in (("FILE", args.file), ("--shapes", args.shapes), ("--model", args.model)) if v]
    if len(given) != 1:
        raise VlpcError("vlpc tune needs one of an MLIR file, --shapes FILE or --model FILE.gguf"
                        + (f" (got {' and '.join(given)})" if given else ""))
    if args.action_arg is not None:
        raise VlpcError(f"vlpc tune: unexpected argument {args.action_arg!r} (the database actions are "
                        f"{', '.join(DB_ACTIONS)})")
    if args.file:
        batch = None
        if args.batch is not None:
            try:
                batch = int(args.batch)
            except ValueError:
                raise VlpcError(f"--batch {args.batch}: one batch count for a file (a list is for --model)") from None
            if batch <= 0:
                raise VlpcError(f"--batch must be positive, got {batch}")
        return [Job(read_input(args.file), args.file, args.m, args.n, args.k, batch)], []
    if args.m is not None or args.n is not None or args.k is not None:
        raise VlpcError("--m/--n/--k size an MLIR file's dynamic dimensions; --shapes and --model give their own")
    from vlpc.tune_shapes import batch_list, model_shapes, read_shapes

    if args.shapes:
        if args.batch is not None:
            raise VlpcError("--batch is for a file's dynamic batch count or --model's batch sizes, not --shapes")
        shapes, notes = read_shapes(args.shapes), []
    else:
        import argparse

        try:
            batches = batch_list(args.batch) if args.batch is not None else [1]
        except argparse.ArgumentTypeError as e:
            raise VlpcError(f"--batch: {e}") from None
        shapes, notes = model_shapes(args.model, batches)
        if not shapes:
            raise VlpcError(f"--model {args.model}: no linear layer vlpc compiles"
                            + (f" ({'; '.join(notes)})" if notes else ""))
    return [Job(s.mlir(), f"<{s.name()}>", alpha=s.alpha, beta=s.beta, source=s.source) for s in shapes], notes


def _prepare(job: Job, args, cus: int):
    """Compile ``job``'s automatic plan's kernel, resolve its launch; its search space."""
    import vlpc
    from vlpc.cli_support import single_kernel

    base = vlpc.compile(job.text, args.target, filename=job.filename, cus=cus, split_k=1, tuned=False)
    kernel = single_kernel(base, "tune")  # (not the first of several functions, silently)
    li = kernel.launch_info
    p = resolve(kernel, job.m, job.n, job.k, job.batch)
    from vlpc.verify import check_before_allocating

    check_before_allocating(kernel, p)  # sizes and 32-bit offsets before any candidate's buffers
    dtype, layout = str(li.get("dtype", "f32")), li.get("layout", "NT")
    if dtype not in MACRO_TILES:
        raise VlpcError(f"vlpc tune supports f32, f64, f16 and int8 (i8) GEMMs, got {dtype}")
    cands = search_space(p.m, p.n, p.k, dtype, layout, dynamic_k=li["static_k"] < 0, exhaustive=args.exhaustive,
                         modes=("workspace", "atomic") if args.atomic else ("workspace",),
                         static_m=li.get("static_m", -1) >= 0, batched=li.get("batch", 0) != 0)
    return kernel, p, dtype, layout, cands


def main(args) -> int:
    import json
    import time

    from vlpc.cli_support import _isatty, check_not_input, check_writable, write_atomic
    from vlpc.targets import get_board

    if args.file in DB_ACTIONS and not (args.shapes or args.model):
        return _db_action(args)
    for path, option, what in ((args.output, "-o", "tuned options"), (args.csv, "--csv", "CSV")):
        if path:  # before the search
            for given in (args.file, args.shapes, args.model):
                check_not_input(path, given, option)
            check_writable(path, what)
    from vlpc.cli_support import check_size_options

    check_size_options(args, ("m", "n", "k"))
    if args.budget is not None and not args.budget > 0:
        raise VlpcError(f"--budget must be a positive number of seconds, got {args.budget}")
    jobs, notes = _jobs(args)
    args.target, args.gpu = board_and_target(args.target, args.gpu)
    board = get_board(args.gpu)
    cus = args.cus or board.compute_units
    clock = args.clock or board.engine_clock_mhz
    for note in notes:
        print(f"vlpc tune: {note}", file=sys.stderr)
    db = _db(args)
    t0 = time.monotonic()
    deadline = None if args.budget is None else t0 + args.budget
    tty = _isatty(sys.stderr) and not args.quiet
    header = (f"vlpc tune: {len(jobs)} problem(s); times MODELED by the timing model of {board.name} ({cus} CUs, "
              f"{clock:.0f} MHz), not measured; the finalists "
              f"{'checked on the strict emulator (sampled tiles)' if args.check else 'NOT checked (--no-check)'}"
              f"{f'; results in {db.path}' if db is not None else '; no tuning database (off)'}")
    import contextlib
    import threading

    from vlpc.tune_run import Runner
    from vlpc.tunedb import TuneDB

    done: list[Tuned] = [Tuned(job, job.source or job.filename) for job in jobs]
    ctx = dict(args=args, cus=cus, clock=clock, board=board, tty=tty, n=len(jobs), t0=t0, deadline=deadline,
               header=[header], lock=threading.Lock())
    with Runner(args.jobs, args.ray, deadline) as runner:
        from vlpc.tune import shapes_in_flight  # (looked up at the call: tests replace it)

        parallel = shapes_in_flight(runner, len(jobs))
        try:
            if parallel <= 1:
                for i, tuned in enumerate(done, 1):
                    _tune_one(i, tuned, runner, db, ctx)
            else:  # Ray: several shapes' searches at once (each a thread submitting its candidates' tasks)
                from concurrent.futures import ThreadPoolExecutor, wait

                ctx["tty"] = False

                def one(i, tuned):
                    with TuneDB(db.path) if db is not None else contextlib.nullcontext() as own:
                        _tune_one(i, tuned, runner, own, ctx)

                with ThreadPoolExecutor(parallel) as ex:
                    futures = [ex.submit(one, i, t) for i, t in enumerate(done, 1)]
                    try:
                        while wait(futures, timeout=0.2).not_done:
                            pass
                    except KeyboardInterrupt:
                        runner.stopped = "interrupted"
                    for f in futures:
                        f.result()
        except KeyboardInterrupt:
            runner.stopped = "interrupted"
        interrupted = runner.stopped == "interrupted"
        stopped = runner.stopped
    if db is not None:
        db.close()
    single = len(jobs) == 1
    u = unit(done[0].dtype if done else "f32")
    if single and done and done[0].outcome is not None:
        print(table(done[0].outcome.results, args.top, u))
    elif not single:
        print(summary(done))
    if not stopped and args.budget is not None and any(t.outcome and t.outcome.pruned.startswith("the budget")
                                                       for t in done):
        stopped = "budget"
    if stopped:
        print(f"vlpc tune: stopped ({'Ctrl-C' if interrupted else f'--budget {args.budget:g} s'}) after "
              f"{time.monotonic() - t0:.1f} s; every result so far is kept"
              f"{' in the tuning database (a re-run resumes)' if db is not None else ''}", file=sys.stderr)
    _write_outputs(args, done, cus, clock, board)
    good = [t for t in done if t.outcome is not None and t.outcome.winner is not None]
    if single and good:
        t = good[0]
        win = t.outcome.winner
        pipe = pipeline_string(win.candidate, args.target, cus)
        ceil = ceiling(t.outcome.results)
        sh = share(win, ceil)
        what = f"of {board.name} HBM bandwidth, the streaming ceiling" if ceil == "HBM" else \
            f"of {board.name} {_type_label(t.dtype)}peak"
        print(f"\nbest (modeled {win.modeled_us:,.1f} us, {win.tflops:.3f} {u}, {sh * 100:.1f} % {what}): "
              f"{label(win.candidate, win.plan)}" + (f"; the automatic plan: {t.outcome.default.modeled_us:,.1f} us"
                                                     if t.outcome.default and t.outcome.default.ok else ""))
        print(f"  vlpc compile {args.file or '<file>'} --cus {cus} {flags(win.candidate)}".rstrip())
        print(f"  pipeline: {pipe}")
        if t.outcome.entry is not None:
            print(f"  tuning database entry #{t.outcome.entry} (compile/run/bench use it for this problem on "
                  f"{board.name}, {cus} CUs, {clock:.0f} MHz)")
        if args.output:
            print(f"  written to {args.output} (vlpc compile {args.file or '<file>'} --options {args.output})")
    if interrupted:
        return 130
    if single and not good:
        print("vlpc tune: no candidate passed (see the dropped rows above)", file=sys.stderr)
    return 0 if len(good) == len(done) else 1


def _tune_one(i: int, tuned: Tuned, runner, db, ctx: dict) -> None:
    """Search the ``i``-th problem of a run (``tuned``: filled in) with ``runner``, recording in
    ``db``; ``ctx``: the run's settings (:func:`main`)."""
    from vlpc.tunedb import key_of

    args, cus, board, tty, n = ctx["args"], ctx["cus"], ctx["board"], ctx["tty"], ctx["n"]
    job = tuned.job
    if runner.stopped:
        tuned.error = f"not tuned ({runner.stopped})"
        return
    try:
        kernel, p, dtype, layout, cands = _prepare(job, args, cus)
    except VlpcError as e:
        if n == 1:
            raise
        tuned.error = str(e).splitlines()[0]
        return
    c_dtype = str(kernel.launch_info.get("c_dtype", "") or dtype)
    tuned.name = f"{p.m}x{p.n}x{p.k}{f' batch {p.batch}' if p.batch else ''} " \
                 f"{dtype}{'' if dtype == 'f32' else '->' + c_dtype} {layout}"
    tuned.dtype, tuned.p, tuned.layout = dtype, p, layout
    with ctx["lock"]:
        if ctx["header"][0]:  # (once a problem is ready: a bad one's error stays one line)
            print(ctx["header"][0], file=sys.stderr)
            ctx["header"][0] = ""
            if args.atomic and dtype in DOT_TYPES:
                print(f"vlpc tune: --atomic ignored: the dot kernels ({dtype}) split K in workspace mode only",
                      file=sys.stderr)
        if n == 1:
            print(f"vlpc tune: {tuned.name}: {len(cands) + 1} candidates (the automatic plan included)",
                  file=sys.stderr)
    key = key_of(kernel, p.m, p.n, p.k, p.batch, args.target,
                 board.at(compute_units=cus) if cus != board.compute_units else board, ctx["clock"], cus)
    bar = None
    if tty:
        from tqdm import tqdm

        bar = tqdm(total=len(cands) + 1, desc=f"[{i}/{n}] {tuned.name}", unit="cand", file=sys.stderr,
                   leave=False, dynamic_ncols=True, mininterval=0.2)

    def progress(r: Result) -> None:
        if bar is not None:
            bar.update(1)
            if r.modeled_us is not None:
                bar.set_postfix_str(f"{label(r.candidate, r.plan)} {r.modeled_us:,.1f} us (modeled)")

    from vlpc.tune import search  # (looked up at the call: tests replace it)

    try:
        tuned.outcome = search(
            Problem(job.text, job.filename, job.m, job.n, job.k, job.alpha, job.beta, job.batch),
            cands, runner, target=args.target, board=args.gpu, clock_mhz=args.clock, cus=cus,
            shape=(p.m, p.n, p.k, dtype, c_dtype, p.batch or 0), check=args.check, finalists=args.finalists,
            max_modeled=args.max_candidates, prune=args.prune, db=db, key=key, progress=progress,
            model_deadline=None if ctx["deadline"] is None else ctx["t0"] + 0.75 * args.budget)
    finally:
        if bar is not None:
            bar.close()
    if not args.quiet and (not tty or n > 1):
        with ctx["lock"]:
            print(f"vlpc tune: [{i}/{n}] {_line(tuned, dtype)}", file=sys.stderr)


def _line(t: Tuned, dtype: str) -> str:
    """One finished shape, for a log (no terminal)."""
    o = t.outcome
    if o is None:
        return f"{t.name}: {t.error}"
    w, d = o.winner, o.default
    head = (f"{t.name}: {o.modeled} of {o.space} modeled ({o.resumed} resumed), {o.checked} checked, "
            f"{o.seconds:.1f} s{f' (modeling stopped by {o.pruned})' if o.pruned else ''}")
    if w is None:
        return head + f"; no winner{f' ({o.stopped})' if o.stopped else ''}"
    auto = f", automatic plan {d.modeled_us:,.1f} us" if d is not None and d.modeled_us is not None else ""
    return head + f"; best {label(w.candidate, w.plan)} {w.modeled_us:,.1f} us (modeled){auto}"


def summary(done: Sequence[Tuned]) -> str:
    """A many-shape run's table: each problem's winner beside its automatic plan (modeled)."""
    lines = ["| problem | from | winner | modeled us | automatic plan us | speed-up | % of ceiling | entry |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for t in done:
        o = t.outcome
        if o is None or o.winner is None:
            why = t.error or (f"no winner ({o.stopped})" if o and o.stopped else "no candidate passed")
            lines.append(f"| {t.name} | {t.job.source} | {why} | | | | | |")
            continue
        w, d = o.winner, o.default
        ceil = ceiling(o.results)
        sh = share(w, ceil)
        du = d.modeled_us if d is not None and d.ok else None
        lines.append(f"| {t.name} | {t.job.source} | {label(w.candidate, w.plan)} | {w.modeled_us:,.1f} | "
                     f"{'' if du is None else f'{du:,.1f}'} | {'' if du is None else f'{du / w.modeled_us:.2f}x'} | "
                     f"{'' if sh is None else f'{sh * 100:.1f} ({ceil})'} | {o.entry or ''} |")
    return "\n".join(lines)


def _write_outputs(args, done: Sequence[Tuned], cus: int, clock: float, board) -> None:
    import csv
    import io
    import json

    from vlpc.cli_support import write_atomic

    if args.csv:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["problem", "candidate", "flags", "modeled_us", "modeled_tflops", "peak_share", "hbm_share",
                    "vgprs", "sgprs", "verified", "error"])
        for t in done:
            for r in (t.outcome.results if t.outcome else []):
                w.writerow([t.name, label(r.candidate, r.plan), flags(r.candidate), r.modeled_us, r.tflops,
                            r.peak_share, r.hbm_share, r.vgprs, r.sgprs, r.verified, r.error or ""])
        write_atomic(args.csv, buf.getvalue())
    if args.output:
        out = []
        for t in done:
            o = t.outcome
            if o is None or o.winner is None:
                continue
            win, p = o.winner, t.p
            opts = win.candidate.options() if isinstance(win.candidate, Candidate) else dict(win.candidate)
            out.append({
                "problem": {"file": t.job.filename if args.file else t.job.source, "m": p.m, "n": p.n, "k": p.k,
                            "batch": p.batch, "dtype": t.dtype, "layout": t.layout},
                "board": board.name, "cus": cus, "clock_mhz": clock,
                "options": {**opts, "cus": cus}, "flags": f"--cus {cus} {flags(win.candidate)}".rstrip(),
                "pipeline": pipeline_string(win.candidate, args.target, cus), "modeled_us": win.modeled_us,
                "modeled_tflops": win.tflops, "unit": unit(t.dtype), "modeled_parts_us": win.parts_us,
                "automatic_plan_us": o.default.modeled_us if o.default else None, "entry": o.entry,
                "note": "times are modeled by vlpc's timing model, not measured"})
        if out:
            write_atomic(args.output, json.dumps(out[0] if len(done) == 1 else out, indent=1) + "\n")
