"""The ``vlpc`` command line.

Subcommands:

* ``vlpc compile FILE --target gfx906 [-o OUT] [--emit mlir|asm|obj|hsaco|hip-launcher]``:
  lower a gemm-dialect file to a code object (``--emit`` is inferred from the
  suffix of ``-o``: ``.mlir``, ``.s``, ``.o``, ``.hsaco``/``.co``).
* ``vlpc opt FILE -p 'pass{opt=val},...'``: run named passes and print the IR.
* ``vlpc run FILE``: compile, execute on a device (the emulator by default) and
  verify against NumPy (a code object FILE: run it on the emulator, vlpc/launch_cli.py).
* ``vlpc profile FILE``: per-instruction stalls and a wave timeline, modeled (vlpc/profile.py).

Exit codes: 0 success; 1 user error (bad input or options, unsupported sizes);
2 usage error; 3 verification failed; 4 device fault; 70 internal error (a bug in
vlpc).  Errors are printed as one line (``file:line:col: error: ...`` for IR),
never as a Python traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from vlpc.cli_support import (OneLineParser, add_codegen_options, add_output_prefix, add_quiet, add_size_options,
                              check_clock, check_not_input, codegen_options, parse_tile_arg, positive, read_input, split_k_arg,
                              write_atomic)
from vlpc.errors import EXIT_INTERNAL, EXIT_USER, VlpcError

EMIT_BY_SUFFIX = {".mlir": "mlir", ".s": "asm", ".asm": "asm", ".o": "obj", ".hsaco": "hsaco", ".co": "hsaco"}

# Names other code imported from here before vlpc.cli_support existed.
_read_input, _options, _tile, _positive, _split_k = read_input, codegen_options, parse_tile_arg, positive, split_k_arg
_add_codegen_options = add_codegen_options


def _plan_lines(module, args: argparse.Namespace) -> list[str]:
    """The plan of every gemm.matmul in ``module`` (after gemm-split-k), as text lines."""
    from xdsl.dialects import func

    from vlpc.dialects.gemm import MatmulOp
    from vlpc.passes.gemm_split_k import describe_plan
    from vlpc.targets import get_target

    opts = codegen_options(args)  # the flags and --options TUNED.json, as the module was compiled
    lines = []
    for op in module.walk():
        if isinstance(op, MatmulOp):
            fn = op.parent_op()
            name = fn.sym_name.data if isinstance(fn, func.FuncOp) else "?"
            lines += describe_plan(op, name, get_target(args.target.split(":")[0]), opts.get("cus") or 0,
                                   auto=opts.get("split_k") == "auto", gpu=opts.get("gpu") or "",
                                   a_transpose=opts.get("a_transpose") or "auto",
                                   auto_local=(opts.get("local_split") or 1) == 1)
    return lines


def _add_ir_printing(p: argparse.ArgumentParser) -> None:
    """mlir-opt's IR printing options (the dumps go to standard error with MLIR's header)."""
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass (to stderr)")
    p.add_argument("--print-ir-before-all", action="store_true", help="print the IR before every pass (to stderr)")
    p.add_argument("--print-ir-after", action="append", default=[], metavar="PASS",
                   help="print the IR after PASS (to stderr; repeat it or give a comma-separated list)")
    p.add_argument("--print-ir-before", action="append", default=[], metavar="PASS",
                   help="print the IR before PASS (to stderr; repeat it or give a comma-separated list)")


#: The subcommands, in the order ``vlpc --help`` lists them.
COMMANDS = ("compile", "opt", "run", "profile", "bench", "report", "doctor", "tune", "cache")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; ``only``: build that subcommand's parser alone (``main`` does
    when the first argument names one: the others' options, and the modules that define them,
    are then not needed; a twentieth of a cached compile)."""
    parser = OneLineParser(prog="vlpc", description="GEMM compiler for AMD GCN (gfx906) with A in SGPRs")
    from vlpc import __version__
    parser.add_argument("--version", action="version", version=f"vlpc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def want(name: str) -> bool:
        return only is None or only == name

    if want("compile"):
        _add_compile_parser(sub)
    if want("opt"):
        _add_opt_parser(sub)
    if want("run"):
        _add_run_parser(sub)
    if want("profile"):
        from vlpc.profile import add_parser as add_profile_parser
        add_profile_parser(sub)
    if want("bench"):
        _add_bench_parser(sub)
    if want("report"):
        _add_report_parser(sub)
    if want("doctor"):
        from vlpc.doctor import add_parser as add_doctor_parser
        add_doctor_parser(sub)
    if want("tune"):
        from vlpc.tune import add_parser as add_tune_parser
        add_tune_parser(sub)
    if want("cache"):
        ca = sub.add_parser("cache", help="the kernel cache: where it is and how full (info), or empty it (clear)")
        ca.add_argument("action", choices=("info", "clear"))
    return parser


def _add_compile_parser(sub) -> None:
    c = sub.add_parser("compile", help="compile a gemm-dialect or linalg MLIR file to a code object")
    c.add_argument("file", help="input MLIR file ('-' for standard input)")
    c.add_argument("-o", "--output", help="output file (default: standard output for text, FILE.hsaco otherwise)")
    c.add_argument("--emit", choices=("mlir", "asm", "obj", "hsaco", "hip-launcher"),
                   help="what to write (default: from the -o suffix, else hsaco); hip-launcher: a C header and "
                        "source, -o STEM writes STEM.h and STEM.c (default: FILE_launch), that embed the code object "
                        "and launch the whole plan through HIP (docs/hip.md)")
    _add_ir_printing(c)
    c.add_argument("--print-pipeline", action="store_true", help="print the pass pipeline with its options and exit")
    c.add_argument("--print-plan", action="store_true",
                   help="print the split-K plan (tiles, grid, split, kernels, workspace bytes; for --split-k auto "
                        "the cost model's candidates) and exit")
    c.add_argument("--code-object-version", type=int, choices=(4, 5), default=5,
                   help="HSA code object version (clang's -mcode-object-version): 5 (default; ROCm 5.3 and later "
                        "load it) or 4 (ROCm 4.x and 5.x load it; for older or distribution ROCm releases)")
    c.add_argument("-v", "--verbose", action="store_true", help="say which toolchain was used, the kernel resources and occupancy")
    _add_speed_options(c)
    add_codegen_options(c, strategy=True)


def _add_opt_parser(sub) -> None:
    o = sub.add_parser("opt", help="run passes on an MLIR file and print the result")
    o.add_argument("file", nargs="?", help="input MLIR file ('-' for standard input; not needed with --list-passes)")
    o.add_argument("-p", "--passes", "--pass-pipeline", dest="passes", default="", metavar="PIPELINE",
                   help="pass pipeline, e.g. 'gemm-tile{macro-n=128},gemm-map-workgroups'; mlir-opt's "
                        "'builtin.module(gemm-tile{macro-n=128},...)' is accepted too")
    o.add_argument("-o", "--output", help="output file ('-' or default: standard output)")
    o.add_argument("--emit", choices=("mlir", "asm"), default="mlir", help="print IR (default) or assembly")
    o.add_argument("--target", default="gfx906", help="target id for --emit asm (default: %(default)s)")
    o.add_argument("--list-passes", action="store_true", help="list the available passes with their options and exit")
    _add_speed_options(o, cache=False)
    _add_ir_printing(o)


def _add_run_parser(sub) -> None:
    r = sub.add_parser("run", help="compile, execute on a device and verify against NumPy; or run any gfx906 "
                                   "code object on the emulator (--kernel, --grid, --block, --arg)")
    r.add_argument("file", help="input MLIR file, or a gfx906 code object (docs/profile.md: arguments from its metadata)")
    r.add_argument("--device", default="emulator", choices=("emulator", "hip", "auto"),
                   help="where to execute (default: %(default)s)")
    add_size_options(r)
    r.add_argument("--batch", type=int, help="the batch count of a strided batched kernel, when dynamic")
    r.add_argument("--seed", type=int, default=0, help="random seed for the inputs (default: %(default)s)")
    r.add_argument("--alpha", type=float, default=None,
                   help="alpha (default: the value the IR fixes, e.g. 1 for linalg input, else 1.0)")
    r.add_argument("--beta", type=float, default=None,
                   help="beta (default: the value the IR fixes, e.g. 1 for linalg input, else 0.5; 2 for int8 -> i32)")
    r.add_argument("--iterations", type=int, default=1, help="launches (default: %(default)s)")
    r.add_argument("--no-verify", dest="verify", action="store_false", help="skip the NumPy comparison")
    r.add_argument("--inputs", nargs=3, metavar=("A.npy", "B.npy", "C.npy"), help="inputs instead of random ones")
    r.add_argument("--weights", metavar="FILE.gguf:TENSOR",
                   help="B of a b_format kernel: the named Q8_0/Q4_0 tensor of a GGUF file (a swiglu kernel: "
                        "FILE.gguf:GATE,UP; docs/quantized.md)")
    r.add_argument("--save-output", metavar="C_OUT.npy", help="save the computed C")
    r.add_argument("--strict", action="store_true", help="emulator: reading an uninitialised register is an error")
    r.add_argument("--waitcnt", default="raise", choices=("raise", "report"),
                   help="emulator: a register used while its load may be outstanding (a missing s_waitcnt) "
                        "stops the run (raise, default) or is reported once per kernel, pc and register while "
                        "execution goes on with the loaded value (report)")
    r.add_argument("-v", "--verbose", action="store_true", help="print the device choice and more detail")
    from vlpc.launch_cli import add_launch_arguments
    add_launch_arguments(r)
    add_quiet(r)
    add_codegen_options(r, strategy=True)
    _add_speed_options(r, verify=False)


def _add_bench_parser(sub) -> None:
    from vlpc.bench import add_bench_arguments
    b = sub.add_parser("bench", help="throughput of an MLIR file or of rocblas-bench's problem flags, optionally a "
                                     "sweep: measured on HIP, modeled by the timing model on the emulator (--no-model: "
                                     "the emulator's executed-instruction counters)")
    add_bench_arguments(b)
    add_quiet(b)
    add_codegen_options(b, strategy=True)
    _add_speed_options(b, verify=False)


def _add_report_parser(sub) -> None:
    rp = sub.add_parser("report", help="the seed's register/LDS/barrier traffic table, measured on the emulator "
                                       "for both strategies")
    rp.add_argument("file", help="input MLIR file (one gemm.matmul)")
    rp.add_argument("--strategies", default=None,
                    help="comma-separated strategies to compile, run and compare (default: sqc,lds; sqc alone "
                         "for f16/int8 products, which only the dot kernels compile)")
    add_size_options(rp)
    rp.add_argument("--batch", type=int,
                    help="the batch count of a strided batched kernel, when dynamic (as vlpc run), for --energy "
                         "(the traffic table refuses a strided batch)")
    rp.add_argument("--seed", type=int, default=None,
                    help="random seed for the traffic table's inputs (default: 0; not with --energy, whose buffers "
                         "are zero-filled)")
    rp.add_argument("--alpha", type=float, default=None,
                    help="alpha of the traffic table's run (default: 1.0; --energy prices alpha = 1)")
    rp.add_argument("--beta", type=float, default=None,
                    help="beta of the traffic table's run (default: 0.5, 2 for int8 -> i32; --energy prices beta = 0: C "
                         "is not read)")
    add_output_prefix(rp, "FILE-report, FILE-energy with --energy (gemm-report, gemm-energy for standard input)")
    rp.add_argument("--chart", metavar="FILE.svg|FILE.png",
                    help="where to write the chart (default: PREFIX.svg); the format follows the suffix")
    rp.add_argument("--energy", action="store_true",
                    help="instead of the traffic table: modeled joules per GEMM, average board watts, pJ/FLOP and "
                         "GFLOP/s per W by component for sqc, sqc without forwarding and legacy (lds; f32/f64 only), from the "
                         "timing and energy models (PREFIX default: FILE-energy)")
    from vlpc.targets import default_boards_text
    rp.add_argument("--gpu", default=None, choices=("mi60", "mi50", "mi25"),
                    help="the board the plan is made for and, with --energy, the board modeled (default: the "
                         f"target's default board: {default_boards_text()}; the MI50's and MI25's energy "
                         "coefficients are derived from the MI60's, not measured)")
    rp.add_argument("--clock", type=float, default=None, metavar="MHZ",
                    help="with --energy: engine clock in MHz (default: the board's stock clock; MI60 1800)")
    rp.add_argument("--memory-clock", type=float, default=None, metavar="MHZ",
                    help="with --energy: HBM2 clock in MHz (default: the board's; MI60/MI50 1000)")
    add_quiet(rp)
    add_codegen_options(rp)


def _pass_names(values: list[str]) -> list[str]:
    return [x.strip() for v in values for x in v.split(",") if x.strip()]


def _ir_printer(args: argparse.Namespace, pass_names: list[str]):
    """(before, after) callbacks that print MLIR's ``// -----// IR Dump Before/After <pass> //----- //``
    dumps to standard error as the options ask; unknown pass names are a one-line error."""
    from vlpc.pipeline import print_ir

    before, after = set(_pass_names(args.print_ir_before)), set(_pass_names(args.print_ir_after))
    for opt, names in (("--print-ir-before", before), ("--print-ir-after", after)):
        unknown = sorted(names - set(pass_names))
        if unknown:
            raise VlpcError(f"{opt}: {', '.join(unknown)} is not a pass of this pipeline "
                            f"(passes: {', '.join(pass_names)})")

    def dump(when: str, p, module) -> None:
        print(f"// -----// IR Dump {when} {p.name} //----- //\n{print_ir(module)}", file=sys.stderr)

    def on_before(p, module) -> None:
        if args.print_ir_before_all or p.name in before:
            dump("Before", p, module)

    def on_after(p, module) -> None:
        if args.print_ir_after_all or p.name in after:
            dump("After", p, module)

    return on_before, on_after


def _run_with_dumps(module, passes, ctx, on_before, on_after) -> None:
    from vlpc.pipeline import run_passes

    run_passes(module, passes, ctx, on_after, before_each=on_before)


def _add_speed_options(p: argparse.ArgumentParser, verify: bool = True, cache: bool = True) -> None:
    """--verify-each (mlir-opt's) and --no-cache (the kernel cache, vlpc/cache.py)."""
    if verify:
        p.add_argument("--verify-each", action="store_true",
                       help="verify the IR after every pass (default: once, after the last; VLPC_VERIFY_EACH=1)")
    if cache:
        p.add_argument("--no-cache", action="store_true",
                       help="neither read nor write the kernel cache ($VLPC_CACHE_DIR, default ~/.cache/vlpc; "
                            "VLPC_CACHE=0 does the same)")


class _CommandEnvironment:
    """--no-cache and --verify-each as the environment variables vlpc.compile reads, for the
    one command (restored afterwards: main() may run in-process several times)."""

    def __init__(self, args: argparse.Namespace):
        self.saved = {k: os.environ.get(k) for k in ("VLPC_CACHE", "VLPC_VERIFY_EACH")}
        if getattr(args, "no_cache", False):
            os.environ["VLPC_CACHE"] = "0"
        if getattr(args, "verify_each", False):
            os.environ["VLPC_VERIFY_EACH"] = "1"

    def restore(self) -> None:
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _cmd_cache(args: argparse.Namespace) -> int:
    from vlpc.cache import CacheError, KernelCache

    try:
        kc = KernelCache()
    except CacheError as e:
        raise VlpcError(str(e)) from None
    if kc.directory.exists() and not kc.directory.is_dir():  # compiles skip such a cache silently
        raise VlpcError(f"the kernel cache {kc.directory} is not a directory: compiles cannot use it "
                        "(set VLPC_CACHE_DIR to a directory)")
    if args.action == "info":
        print("\n".join(kc.info().lines()))
    else:
        print(f"removed {kc.clear()} entries from {kc.directory}")
    return 0


def _compile_from_cache(args: argparse.Namespace) -> int | None:
    """``vlpc compile FILE -o OUT.hsaco`` from the kernel cache before anything heavy is imported
    (vlpc.options needs no xDSL, dialect or pass): 0 when written, None to compile (not cached,
    the cache is off, or the command asks for more than the code object)."""
    if (args.emit not in (None, "hsaco") or args.file == "-" or args.print_pipeline or args.print_plan
            or args.verbose or args.print_ir_after_all or args.print_ir_before_all or args.print_ir_after
            or args.print_ir_before or not args.output
            or EMIT_BY_SUFFIX.get(Path(args.output).suffix.lower(), "hsaco") != "hsaco"):
        return None
    from vlpc.options import cached
    from vlpc.tunedb import lookup_enabled

    if lookup_enabled():  # the tuning database may change the options: the full path looks it up
        return None
    try:
        text = read_input(args.file)
        result = cached(text, args.target, args.file, codegen_options(args))
    except VlpcError:
        return None  # the full path reports it, in its order
    if result is None:
        return None
    if args.output != "-":
        write_atomic(args.output, result.code_object)
    else:
        sys.stdout.buffer.write(result.code_object)
    return 0


def _cmd_compile(args: argparse.Namespace) -> int:
    check_not_input(args.output, args.file)
    if _compile_from_cache(args) == 0:
        return 0
    from vlpc.dialects.gcn_asm import print_assembly
    from vlpc.pipeline import PASS_ORDER, header_lines, make_context, parse, pipeline, pipeline_spec, print_ir
    from vlpc.runtime.toolchain import find_toolchain
    from vlpc.targets import TargetId

    # The options are checked here, before the input is read; convert-linalg-to-gemm (and xDSL's
    # linalg, arith and math dialects it imports: a tenth of a cold compile) is only built when
    # printed, dumped or needed by linalg input.
    passes = pipeline(args.target, linalg=args.print_pipeline, **codegen_options(args))
    if args.print_pipeline:
        print(pipeline_spec(passes))
        return 0
    implied = EMIT_BY_SUFFIX.get(Path(args.output).suffix.lower()) if args.output else None
    if args.emit and implied and args.emit != implied:
        raise VlpcError(f"--emit {args.emit} conflicts with -o {args.output} (a {Path(args.output).suffix} "
                        f"file holds {implied}); drop --emit or change the output name")
    emit = args.emit or implied or "hsaco"
    if emit == "hip-launcher":
        return _emit_hip_launcher(args)
    if args.output is None and emit in ("obj", "hsaco"):
        stem = "out" if args.file == "-" else Path(args.file).stem
        args.output = f"{stem}.{'o' if emit == 'obj' else 'hsaco'}"
    on_before, on_after = _ir_printer(args, list(PASS_ORDER))
    text = read_input(args.file)
    filename = "<stdin>" if args.file == "-" else args.file
    opts = codegen_options(args)
    from vlpc.tunedb import lookup_enabled, print_notes, resolve_options

    if lookup_enabled():  # the tuning database's entry for this GEMM (vlpc tune), unless a plan option is given
        opts, notes, _ = resolve_options(text, args.target, filename, opts)
        print_notes(notes, args.verbose)
        passes = pipeline(args.target, linalg=False, **opts)
    dumps = args.print_ir_after_all or args.print_ir_before_all or args.print_ir_after or args.print_ir_before
    if emit == "hsaco" and not (dumps or args.print_plan or args.verbose):  # through the kernel cache
        from vlpc.pipeline import compile as compile_module

        code = compile_module(text, args.target, filename=filename, tuned=False, **opts).code_object
        if args.output != "-":
            write_atomic(args.output, code)
        else:
            sys.stdout.buffer.write(code)
        return 0
    ctx = make_context()
    module = parse(text, filename, ctx)
    if dumps or any(o.name.startswith("linalg.") for o in module.walk()):
        passes = pipeline(args.target, **opts)

    plan: list[str] = []

    def after(p, m):
        on_after(p, m)
        if p.name == "gemm-split-k":
            plan.extend(_plan_lines(m, args))

    if args.print_plan:
        _run_with_dumps(module, passes[:[p.name for p in passes].index("gemm-split-k") + 1], ctx, on_before, after)
        print("\n".join(plan))
        return 0
    _run_with_dumps(module, passes, ctx, on_before, after)
    if emit == "mlir":
        out: str | bytes = print_ir(module)
    else:
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


def _emit_hip_launcher(args: argparse.Namespace) -> int:
    """``--emit hip-launcher``: STEM.h and STEM.c (:mod:`vlpc.hip_launcher`)."""
    from vlpc.hip_launcher import output_paths, write_launcher
    from vlpc.pipeline import compile as compile_module

    if args.output == "-":
        raise VlpcError("--emit hip-launcher writes two files: give -o STEM (STEM.h and STEM.c), not -o -")
    stem = args.output or f"{'out' if args.file == '-' else Path(args.file).stem}_launch"
    for path in output_paths(stem):
        check_not_input(str(path), args.file)
    filename = "<stdin>" if args.file == "-" else args.file
    compiled = compile_module(read_input(args.file), args.target, filename=filename, **codegen_options(args))
    write_launcher(compiled, stem, Path(filename).name)
    return 0


def strip_builtin_module(spec: str) -> tuple[str, int]:
    """mlir-opt's ``builtin.module(p1,p2)`` -> (``p1,p2``, offset of ``p1`` in ``spec``); other
    specs unchanged (offset 0)."""
    text = spec.strip()
    lead = len(spec) - len(spec.lstrip())
    for prefix in ("builtin.module(", "module("):
        if text.startswith(prefix):
            if not text.endswith(")"):
                raise VlpcError(f"bad pass pipeline '{spec}': '{prefix}' is not closed by ')'")
            return text[len(prefix):-1], lead + len(prefix)
    return spec, 0


def pipeline_error(spec: str, error: BaseException, offset: int = 0) -> VlpcError:
    """A bad ``-p`` pipeline as one message line, then, for a syntax error, the pipeline and a
    caret under the column xDSL reports; option names are spelled with hyphens."""
    import re

    from vlpc.passes import get_all_passes
    from vlpc.pipeline import hyphenate_options

    text = str(error)
    m = re.search(r"pass-pipeline:(\d+):(\d+)\n[^\n]*\n[^\n]*\n\s*(.+)", text)
    available = ", ".join(get_all_passes())
    if m:
        col = int(m.group(2)) + offset
        hint = ""
        if re.search(r"target=[A-Za-z0-9]+:", spec):  # xDSL reads an unquoted option value up to the ':'
            hint = '\n  (a target id with features is quoted inside the braces: target="gfx906:xnack-")'
        return VlpcError(f"bad pass pipeline at column {col}: {m.group(3).strip()}\n  {spec}\n  {' ' * (col - 1)}^"
                         + hint)
    last = text.strip().splitlines()[-1] if text.strip() else type(error).__name__
    last = re.sub(r'"([a-z][a-z0-9_]*)"', lambda x: '"' + x.group(1).replace("_", "-") + '"', last)
    kinds = {"int": "an integer", "bool": "true or false", "str": "a name", "float": "a number"}
    bad = re.match(r"Incompatible types: given \((.*?),?\), expected <class '(\w+)'>", last)
    if bad:  # xDSL's words for an option value of the wrong type: name the option and what it takes
        value = bad.group(1).strip("'\"")
        names = re.findall(rf"([\w-]+)\s*=\s*['\"]?{re.escape(value)}['\"]?(?=[\s}}])", spec)
        option = f"option {names[0].replace('_', '-')}" if len(set(names)) == 1 else "an option"
        last = f"{option} takes {kinds.get(bad.group(2), bad.group(2))}, got {value}"
    where = f" (available: {available})" if "nrecognized pass" in last else ""
    return VlpcError(f"bad pass pipeline '{hyphenate_options(spec)}': {last}{where}")


def parse_pass_pipeline(spec: str):
    """The passes of a ``-p``/``--pass-pipeline`` text (plain or ``builtin.module(...)``)."""
    from xdsl.passes import PassPipeline
    from xdsl.utils.exceptions import ArgSpecParseError

    from vlpc.passes import get_all_passes

    inner, offset = strip_builtin_module(spec)
    if not inner.strip():
        return []
    try:
        return list(PassPipeline.parse_spec(get_all_passes(), inner).passes)
    except (ValueError, ArgSpecParseError, TypeError) as e:
        raise pipeline_error(spec, e, offset) from None


def list_passes() -> str:
    """Every pass with its options (hyphenated, with defaults) and the first paragraph of its
    documentation, as plain text."""
    import dataclasses
    import re
    import textwrap

    from vlpc.passes import get_all_passes

    out = []
    for name, get in get_all_passes().items():
        cls = get()
        opts = " ".join(f"{f.name.replace('_', '-')}={_option_default(f)}" for f in dataclasses.fields(cls))
        mod = sys.modules[cls.__module__].__doc__ or ""
        summary = mod.strip().split("\n\n")[0].split(": ", 1)[-1] if mod.strip().startswith("``") else ""
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        summary = summary[:1].upper() + summary[1:]
        if summary.split()[:3] == doc.split()[:3]:  # the class says it again, more precisely: once
            summary = ""
        doc = " ".join(x.rstrip(".") + "." for x in (summary, doc) if x)
        doc = re.sub(r"``([^`]*)``", r"\1", " ".join(doc.split()))
        doc = re.sub(r":\w+:`~?([^`]*)`", r"\1", doc)
        out.append(name)
        out += textwrap.wrap(doc, 96, initial_indent="    ", subsequent_indent="    ")
        if opts:
            out.append(f"    options (defaults): {opts}")
    return "\n".join(out) + "\n"


def _option_default(f) -> str:
    import dataclasses

    d = f.default if f.default is not dataclasses.MISSING else ""
    return str(d).lower() if isinstance(d, bool) else str(d)


def _cmd_opt(args: argparse.Namespace) -> int:
    from vlpc.dialects.gcn_asm import print_assembly
    from vlpc.pipeline import make_context, parse, print_ir

    if args.list_passes:
        sys.stdout.write(list_passes())
        return 0
    if args.file is None:
        raise VlpcError("opt needs an input file ('-' for standard input), or --list-passes")
    passes = parse_pass_pipeline(args.passes)
    from vlpc.targets import TargetError, TargetId
    try:
        TargetId.parse(args.target)
    except TargetError as e:
        raise VlpcError(str(e)) from None
    check_not_input(args.output, args.file)
    on_before, on_after = _ir_printer(args, [p.name for p in passes])
    text = read_input(args.file)
    ctx = make_context()
    module = parse(text, "<stdin>" if args.file == "-" else args.file, ctx)
    _run_with_dumps(module, passes, ctx, on_before, on_after)
    out = print_assembly(module, args.target) if args.emit == "asm" else print_ir(module)
    if args.output and args.output != "-":
        write_atomic(args.output, out)
    else:
        sys.stdout.write(out)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run one command (``argv``: the arguments; None: ``sys.argv``, i.e. the ``vlpc``
    program, which then exits); returns the exit code."""
    program = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    env = _CommandEnvironment(args)
    import gc

    # A compile is short and allocates hundreds of thousands of objects (xDSL's and vlpc's classes
    # as they are imported, then the IR) that live to its end: the cyclic collector's scans find
    # nothing to free and cost a twentieth of the command; reference counting frees as usual.
    gc_paused = args.command in ("compile", "opt") and gc.isenabled()
    if gc_paused:
        gc.disable()
    try:
        check_clock(getattr(args, "clock", None), getattr(args, "memory_clock", None))  # bench, report, tune: before any work
        for dest in ("output", "save_output", "csv", "chart", "options"):  # `-o ""` was skipped or misread
            if getattr(args, dest, None) == "":
                raise VlpcError(f"{'-o' if dest == 'output' else '--' + dest.replace('_', '-')}: empty file name")
        if args.command == "cache":
            return _cmd_cache(args)
        if args.command == "compile":
            return _cmd_compile(args)
        if args.command == "opt":
            return _cmd_opt(args)
        if args.command == "run":
            from vlpc.run import cmd_run
            return cmd_run(args)
        if args.command == "profile":
            from vlpc.profile import cmd_profile
            return cmd_profile(args)
        if args.command == "bench":
            from vlpc.bench import cmd_bench
            return cmd_bench(args)
        if args.command == "report":
            from vlpc.report import cmd_report
            return cmd_report(args)
        if args.command == "tune":
            from vlpc.tune import cmd_tune
            return cmd_tune(args)
        if args.command == "doctor":
            from vlpc.doctor import cmd_doctor
            return cmd_doctor(args)
        raise AssertionError(args.command)
    except VlpcError as e:
        from vlpc.errors import DiagnosticError

        code = getattr(e, "exit_code", EXIT_USER)
        # (a message that names its command already, "vlpc tune: ...", is not prefixed twice)
        text = str(e) if isinstance(e, DiagnosticError) or str(e).startswith("vlpc ") else f"vlpc: {e}"
        api = sys.modules.get("vlpc.api")  # (raised only once vlpc.api is imported: no import on other errors)
        if api is not None and isinstance(e, api.MissingBatchError) and args.command != "run":
            # the Python API's text names vlpc run's option: name this command's
            text = f"vlpc: {e.kernel} takes its batch count at launch: give it with vlpc {args.command} --batch N"
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
    finally:
        env.restore()
        if gc_paused:
            gc.enable()
        if program:
            # The process exits next: the interpreter's last cyclic collection would scan every
            # object still alive (xDSL's and vlpc's classes and tables) to free nothing: an eighth
            # of a cold `vlpc compile`.  Frozen objects are left to the exit's own teardown.
            gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
