"""The ``vlpc`` command line.

Subcommands:

* ``vlpc compile FILE --target gfx906 [-o OUT] [--emit mlir|asm|obj|hsaco]``:
  lower a gemm-dialect file to a code object (``--emit`` is inferred from the
  suffix of ``-o``: ``.mlir``, ``.s``, ``.o``, ``.hsaco``/``.co``).
* ``vlpc opt FILE -p 'pass{opt=val},...'``: run named passes and print the IR.
* ``vlpc run FILE``: compile, execute on a device (the emulator by default) and
  verify against NumPy.

Exit codes: 0 success; 1 user error (bad input or options, unsupported sizes);
2 usage error; 3 verification failed; 4 device fault; 70 internal error (a bug in
vlpc).  Errors are printed as one line (``file:line:col: error: ...`` for IR),
never as a Python traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from vlpc.errors import EXIT_INTERNAL, EXIT_USER, VlpcError

EMIT_BY_SUFFIX = {".mlir": "mlir", ".s": "asm", ".asm": "asm", ".o": "obj", ".hsaco": "hsaco", ".co": "hsaco"}


def write_atomic(path: str, data: str | bytes) -> None:
    """Write ``path`` via a temporary file in the same directory and a rename, so a
    failure never leaves a partial file or clobbers an existing good one."""
    p = Path(path)
    mode = "wb" if isinstance(data, bytes) else "w"
    if p.is_dir():
        raise VlpcError(f"cannot write {path}: it is a directory")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent if str(p.parent) else ".")
    except OSError as e:
        raise VlpcError(f"cannot write {path}: {e.strerror or e} (directory {p.parent})") from None
    try:
        with os.fdopen(fd, mode) as f:
            f.write(data)
        if p.exists():  # keep the permissions of the file being replaced
            try:
                os.chmod(tmp, p.stat().st_mode & 0o7777)
            except OSError:
                pass
        else:  # a new file gets the usual umask-derived mode, not mkstemp's 0600
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, p)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise VlpcError(f"cannot write {path}: {e.strerror or e}") from None
        raise


def _tile(text: str) -> tuple[int, int]:
    try:
        a, b = text.lower().split("x")
        return int(a), int(b)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected MxN (e.g. 64x256), got '{text}'") from None


def _read_input(path: str) -> str:
    try:
        if path == "-":
            return sys.stdin.buffer.read().decode("utf-8") if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise VlpcError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        path = "standard input" if path == "-" else path
        raise VlpcError(f"cannot read {path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset "
                        f"{e.start}); expected an MLIR file") from None


def _add_codegen_options(p: argparse.ArgumentParser, strategy: bool = False) -> None:
    if strategy:
        p.add_argument("--strategy", default="sqc", choices=("sqc", "lds"),
                       help="instruction selection: sqc (A in SGPRs, no LDS: the seed's scheme, default) or lds "
                            "(the legacy kernel: A and B tiles through LDS, 8x8 micro tile per work-item)")
    p.add_argument("--schedule", default="default", choices=("default", "seed"),
                   help="strategy sqc's loop: default, or seed (the seed's hand-written 64x256 SGEMM loop: "
                        "s_load_dwordx8 groups, B double-buffered; f32, layout NT, M/N/K multiples of 64/256/8)")
    p.add_argument("--no-forwarding", dest="forwarding", action="store_false",
                   help="order the FMAs K-major so no accumulator comes from the FMA just before it (the "
                        "seed's no-forwarding comparison kernel; C is bit-identical)")
    p.add_argument("--target", default="gfx906",
                   help="target id: gfx906 (sramecc/xnack 'any'), or e.g. gfx906:sramecc+:xnack- (default: %(default)s)")
    p.add_argument("--macro-tile", type=_tile, default=None, metavar="MxN",
                   help="macro tile per workgroup (default: 64x256 for f32, 32x256 for f64; the seed also "
                        "uses 64x64, 64x128)")
    p.add_argument("--micro-tile", type=_tile, default=None, metavar="MxN",
                   help="micro tile per work-item (default: 64x1 for f32, 32x1 for f64)")
    p.add_argument("--k-step", type=int, default=None, choices=(8, 16),
                   help="K values per A load step: 16 (f32 default: one s_load_dwordx16 per row) or 8 "
                        "(f64 default)")
    p.add_argument("--waves-per-simd", type=int, default=None,
                   help="occupancy the VGPR budget is chosen for (default: the strategy's: 3 -> 84 VGPRs "
                        "for sqc, 2 -> 128 VGPRs for lds)")
    p.add_argument("--split-k", type=_split_k, default="auto", metavar="S|auto",
                   help="K slices across workgroups: auto (default: chosen from the shape and --cus by the cost "
                        "model of gemm-split-k), 1 (no split) or S > 1")
    p.add_argument("--split-mode", default="workspace", choices=("workspace", "atomic"),
                   help="how global K slices are summed: workspace (a reduce kernel sums partials in a fixed "
                        "order: deterministic, default) or atomic (global_atomic_cmpswap loops into C)")
    p.add_argument("--local-split", type=_positive, default=1, metavar="L",
                   help="K slices across the wavefront groups of a workgroup, reduced through LDS (default: 1)")
    p.add_argument("--cus", type=_positive, default=None,
                   help="compute units of the device the split-K plan is for (default: 60, MI50; MI60 has 64)")


def _plan_lines(module, args: argparse.Namespace) -> list[str]:
    """The plan of every gemm.matmul in ``module`` (after gemm-split-k), as text lines."""
    from xdsl.dialects import func

    from vlpc.dialects.gemm import MatmulOp
    from vlpc.passes.gemm_split_k import describe_plan
    from vlpc.targets import get_target

    lines = []
    for op in module.walk():
        if isinstance(op, MatmulOp):
            fn = op.parent_op()
            name = fn.sym_name.data if isinstance(fn, func.FuncOp) else "?"
            lines += describe_plan(op, name, get_target(args.target), args.cus or 0, auto=args.split_k == "auto")
    return lines


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return value


def _split_k(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a positive integer, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a positive integer, got '{text}'")
    return value


def _options(args: argparse.Namespace) -> dict:
    """Code generation options from the command line (None: the element type's default)."""
    return dict(macro_tile=tuple(args.macro_tile) if args.macro_tile else None,
                micro_tile=tuple(args.micro_tile) if args.micro_tile else None, k_step=args.k_step,
                waves_per_simd=args.waves_per_simd, split_k=args.split_k, split_mode=args.split_mode,
                local_split=args.local_split, cus=args.cus,
                strategy=getattr(args, "strategy", "sqc"), schedule=args.schedule, forwarding=args.forwarding)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vlpc", description="GEMM compiler for AMD GCN (gfx906) with A in SGPRs")
    from vlpc import __version__
    parser.add_argument("--version", action="version", version=f"vlpc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    c = sub.add_parser("compile", help="compile a gemm-dialect or linalg MLIR file to a code object")
    c.add_argument("file", help="input MLIR file ('-' for standard input)")
    c.add_argument("-o", "--output", help="output file (default: standard output for text, FILE.hsaco otherwise)")
    c.add_argument("--emit", choices=("mlir", "asm", "obj", "hsaco"),
                   help="what to write (default: from the -o suffix, else hsaco)")
    c.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass (to stderr)")
    c.add_argument("--print-pipeline", action="store_true", help="print the pass pipeline with its options and exit")
    c.add_argument("--print-plan", action="store_true",
                   help="print the split-K plan (tiles, grid, split, kernels, workspace bytes; for --split-k auto "
                        "the cost model's candidates) and exit")
    c.add_argument("-v", "--verbose", action="store_true", help="say which toolchain was used, the kernel resources and occupancy")
    _add_codegen_options(c, strategy=True)

    o = sub.add_parser("opt", help="run passes on an MLIR file and print the result")
    o.add_argument("file", help="input MLIR file ('-' for standard input)")
    o.add_argument("-p", "--passes", default="", help="pass pipeline, e.g. 'gemm-tile{macro-n=128},gemm-map-workgroups'")
    o.add_argument("-o", "--output", help="output file (default: standard output)")
    o.add_argument("--emit", choices=("mlir", "asm"), default="mlir", help="print IR (default) or assembly")
    o.add_argument("--target", default="gfx906", help="target id for --emit asm (default: %(default)s)")
    o.add_argument("--list-passes", action="store_true", help="list the available passes and exit")

    r = sub.add_parser("run", help="compile, execute on a device and verify against NumPy")
    r.add_argument("file", help="input MLIR file")
    r.add_argument("--device", default="emulator", choices=("emulator", "hip", "auto"),
                   help="where to execute (default: %(default)s)")
    r.add_argument("--m", type=int, help="M, for dynamic ('?') dimensions")
    r.add_argument("--n", type=int, help="N, for dynamic dimensions")
    r.add_argument("--k", type=int, help="K, for dynamic dimensions")
    r.add_argument("--batch", type=int, help="the batch count of a strided batched kernel, when dynamic")
    r.add_argument("--seed", type=int, default=0, help="random seed for the inputs (default: %(default)s)")
    r.add_argument("--alpha", type=float, default=None,
                   help="alpha (default: the value the IR fixes, e.g. 1 for linalg input, else 1.0)")
    r.add_argument("--beta", type=float, default=None,
                   help="beta (default: the value the IR fixes, e.g. 1 for linalg input, else 0.5)")
    r.add_argument("--iterations", type=int, default=1, help="launches (default: %(default)s)")
    r.add_argument("--no-verify", dest="verify", action="store_false", help="skip the NumPy comparison")
    r.add_argument("--inputs", nargs=3, metavar=("A.npy", "B.npy", "C.npy"), help="inputs instead of random ones")
    r.add_argument("--save-output", metavar="C_OUT.npy", help="save the computed C")
    r.add_argument("--strict", action="store_true", help="emulator: reading an uninitialised register is an error")
    r.add_argument("-v", "--verbose", action="store_true", help="print the device choice and more detail")
    _add_codegen_options(r, strategy=True)

    b = sub.add_parser("bench", help="throughput (HIP) or executed-instruction counters (emulator), optionally a sweep")
    b.add_argument("file", help="input MLIR file (dynamic '?' sizes for a sweep)")
    b.add_argument("--device", default="auto", choices=("emulator", "hip", "auto"),
                   help="where to run (default: %(default)s: a gfx906 through HIP if present, else the emulator)")
    b.add_argument("--m", type=int, help="M for a single measurement")
    b.add_argument("--n", type=int, help="N for a single measurement")
    b.add_argument("--k", type=int, default=640, help="K (default: %(default)s, the seed's)")
    b.add_argument("--sweep", action="store_true", help="M = N from --start to --stop in steps of --step")
    b.add_argument("--start", type=int, default=256)
    b.add_argument("--stop", type=int, default=16384)
    b.add_argument("--step", type=int, default=256)
    b.add_argument("--iterations", type=int, default=10, help="timed launches per size on HIP (default: %(default)s)")
    b.add_argument("--warmup", type=int, default=1, help="untimed launches first (default: %(default)s)")
    b.add_argument("--max-emulated", type=int, default=1024,
                   help="largest M or N the emulator is asked to run (default: %(default)s)")
    b.add_argument("--csv", help="also write the table as CSV")
    b.add_argument("--plot", help="also write a PNG plot (needs matplotlib: pip install 'vlpc[plot]')")
    b.add_argument("-v", "--verbose", action="store_true", help="print the device choice")
    _add_codegen_options(b)

    rp = sub.add_parser("report", help="the seed's register/LDS/barrier traffic table, measured on the emulator "
                                       "for both strategies")
    rp.add_argument("file", help="input MLIR file (one gemm.matmul)")
    rp.add_argument("--strategies", default="sqc,lds",
                    help="comma-separated strategies to compile, run and compare (default: %(default)s)")
    rp.add_argument("--m", type=int, help="M, for dynamic ('?') dimensions")
    rp.add_argument("--n", type=int, help="N, for dynamic dimensions")
    rp.add_argument("--k", type=int, help="K, for dynamic dimensions")
    rp.add_argument("--seed", type=int, default=0, help="random seed for the inputs (default: %(default)s)")
    rp.add_argument("--alpha", type=float, default=1.0, help="alpha (default: %(default)s)")
    rp.add_argument("--beta", type=float, default=0.5, help="beta (default: %(default)s)")
    rp.add_argument("-o", "--output", metavar="PREFIX",
                    help="write PREFIX.md, PREFIX.csv and PREFIX.svg (default: FILE-report in the current directory)")
    rp.add_argument("--chart", metavar="FILE.svg|FILE.png",
                    help="where to write the chart (default: PREFIX.svg; .png needs matplotlib: pip install 'vlpc[plot]')")
    _add_codegen_options(rp)
    from vlpc.doctor import add_parser as add_doctor_parser
    add_doctor_parser(sub)
    return parser


def _cmd_compile(args: argparse.Namespace) -> int:
    from vlpc.pipeline import header_lines, make_context, parse, pipeline, pipeline_spec, print_ir, run_passes
    from vlpc.dialects.gcn_asm import print_assembly
    from vlpc.runtime.toolchain import find_toolchain
    from vlpc.targets import TargetId

    passes = pipeline(args.target, **_options(args))
    if args.print_pipeline:
        print(pipeline_spec(passes))
        return 0
    implied = EMIT_BY_SUFFIX.get(Path(args.output).suffix.lower()) if args.output else None
    if args.emit and implied and args.emit != implied:
        raise VlpcError(f"--emit {args.emit} conflicts with -o {args.output} (a {Path(args.output).suffix} "
                        f"file holds {implied}); drop --emit or change the output name")
    emit = args.emit or implied or "hsaco"
    if args.output is None and emit in ("obj", "hsaco"):
        stem = "out" if args.file == "-" else Path(args.file).stem
        args.output = f"{stem}.{'o' if emit == 'obj' else 'hsaco'}"
    text = _read_input(args.file)
    filename = "<stdin>" if args.file == "-" else args.file
    ctx = make_context()
    module = parse(text, filename, ctx)

    def dump(p, m):
        if args.print_ir_after_all:
            print(f"// -----// IR after {p.name} //----- //\n{print_ir(m)}", file=sys.stderr)

    plan: list[str] = []

    def after(p, m):
        dump(p, m)
        if p.name == "gemm-split-k":
            plan.extend(_plan_lines(m, args))

    if args.print_plan:
        run_passes(module, passes[:[p.name for p in passes].index("gemm-split-k") + 1], ctx, after)
        print("\n".join(plan))
        return 0
    if emit == "mlir":
        run_passes(module, passes, ctx, after)
        out: str | bytes = print_ir(module)
    else:
        run_passes(module, passes, ctx, after)
        tid = TargetId.parse(args.target)
        asm = print_assembly(module, tid, header_lines(module, tid.target.name))
        if emit == "asm":
            out = asm
        else:
            tc = find_toolchain()
            if args.verbose:
                print(f"vlpc: toolchain {tc.describe()}", file=sys.stderr)
            obj = tc.assemble(asm, tid, filename)
            out = obj if emit == "obj" else tc.link(obj)
        if args.verbose:
            for line in header_lines(module, tid.target.name)[1:]:
                print(f"vlpc: {line.strip()}", file=sys.stderr)
    if args.verbose:
        for line in plan:
            print(f"vlpc: {line}", file=sys.stderr)
    if args.output and args.output != "-":
        write_atomic(args.output, out)
    elif isinstance(out, bytes):
        sys.stdout.buffer.write(out)
    else:
        sys.stdout.write(out)
    return 0


def _cmd_opt(args: argparse.Namespace) -> int:
    from xdsl.passes import PassPipeline
    from xdsl.utils.exceptions import ArgSpecParseError

    from vlpc.dialects.gcn_asm import print_assembly
    from vlpc.passes import get_all_passes
    from vlpc.pipeline import make_context, parse, print_ir, run_passes

    available = get_all_passes()
    if args.list_passes:
        for name in available:
            cls = available[name]()
            print(f"{name}: {(cls.__doc__ or '').strip().splitlines()[0]}")
        return 0
    try:
        pipe = PassPipeline.parse_spec(available, args.passes) if args.passes else PassPipeline(())
    except (ValueError, ArgSpecParseError, TypeError) as e:
        raise VlpcError(f"bad pass pipeline '{args.passes}': {str(e).splitlines()[-1]} "
                        f"(available: {', '.join(available)})") from None
    from vlpc.targets import TargetError, TargetId
    try:
        TargetId.parse(args.target)
    except TargetError as e:
        raise VlpcError(str(e)) from None
    text = _read_input(args.file)
    ctx = make_context()
    module = parse(text, "<stdin>" if args.file == "-" else args.file, ctx)
    run_passes(module, pipe.passes, ctx)
    out = print_assembly(module, args.target) if args.emit == "asm" else print_ir(module)
    if args.output:
        write_atomic(args.output, out)
    else:
        sys.stdout.write(out)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "compile":
            return _cmd_compile(args)
        if args.command == "opt":
            return _cmd_opt(args)
        if args.command == "run":
            from vlpc.run import cmd_run
            return cmd_run(args)
        if args.command == "bench":
            from vlpc.bench import cmd_bench
            return cmd_bench(args)
        if args.command == "report":
            from vlpc.report import cmd_report
            return cmd_report(args)
        if args.command == "doctor":
            from vlpc.doctor import cmd_doctor
            return cmd_doctor(args)
        raise AssertionError(args.command)
    except VlpcError as e:
        from vlpc.errors import DiagnosticError

        code = getattr(e, "exit_code", EXIT_USER)
        text = str(e) if isinstance(e, DiagnosticError) else f"vlpc: {e}"
        if code == EXIT_INTERNAL:  # a bug in vlpc (a pass failed, LLVM rejected the output)
            if os.environ.get("VLPC_DEBUG"):
                import traceback
                traceback.print_exception(e)
            elif e.__cause__ is not None:
                text += " (set VLPC_DEBUG=1 for a traceback)"
        print(text, file=sys.stderr)
        return code
    except KeyboardInterrupt:
        print("vlpc: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug in vlpc
        import traceback
        if os.environ.get("VLPC_DEBUG"):
            traceback.print_exc()
        print(f"vlpc: internal error: {type(e).__name__}: {e} -- this is a bug in vlpc; please report it "
              "with the input and command line (set VLPC_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
