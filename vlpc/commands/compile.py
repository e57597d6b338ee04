"""``vlpc compile FILE --target gfx906 [-o OUT] [--emit mlir|asm|obj|hsaco|hip-launcher]``: lower a
gemm-dialect file to a code object (``--emit`` is inferred from the suffix of ``-o``: ``.mlir``,
``.s``, ``.o``, ``.hsaco``/``.co``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vlpc.cli_support import add_codegen_options, check_not_input, codegen_options, read_input, write_atomic
from vlpc.commands.common import add_ir_printing, add_speed_options, ir_printer, run_with_dumps
from vlpc.errors import VlpcError

EMIT_BY_SUFFIX = {".mlir": "mlir", ".s": "asm", ".asm": "asm", ".o": "obj", ".hsaco": "hsaco", ".co": "hsaco"}


def add_parser(sub) -> None:
    c = sub.add_parser("compile", help="compile a gemm-dialect or linalg MLIR file to a code object")
    c.add_argument("file", help="input MLIR file ('-' for standard input)")
    c.add_argument("-o", "--output", help="output file (default: standard output for text, FILE.hsaco otherwise)")
    c.add_argument("--emit", choices=("mlir", "asm", "obj", "hsaco", "hip-launcher"),
                   help="what to write (default: from the -o suffix, else hsaco); hip-launcher: a C header and "
                        "source, -o STEM writes STEM.h and STEM.c (default: FILE_launch), that embed the code object "
                        "and launch the whole plan through HIP (docs/hip.md)")
    add_ir_printing(c)
    c.add_argument("--print-pipeline", action="store_true", help="print the pass pipeline with its options and exit")
    c.add_argument("--print-plan", action="store_true",
                   help="print the split-K plan (tiles, grid, split, kernels, workspace bytes; for --split-k auto "
                        "the cost model's candidates) and exit")
    c.add_argument("--code-object-version", type=int, choices=(4, 5), default=5,
                   help="HSA code object version (clang's -mcode-object-version): 5 (default; ROCm 5.3 and later "
                        "load it) or 4 (ROCm 4.x and 5.x load it; for older or distribution ROCm releases)")
    c.add_argument("-v", "--verbose", action="store_true", help="say which toolchain was used, the kernel resources and occupancy")
    add_speed_options(c)
    add_codegen_options(c, strategy=True)


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


def main(args: argparse.Namespace) -> int:
    check_not_input(args.output, args.file)
    if _compile_from_cache(args) == 0:
        return 0
    from vlpc.dialects.gcn_asm import print_assembly
    from vlpc.compiler import PASS_ORDER, header_lines, make_context, parse, pipeline, pipeline_spec, print_ir
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
    on_before, on_after = ir_printer(args, list(PASS_ORDER))
    text = read_input(args.file)
    filename = "<stdin>" if args.file == "-" else args.file
    opts = codegen_options(args)
    from vlpc.compiler import resolve_options
    from vlpc.tunedb import lookup_enabled, print_notes

    if lookup_enabled():  # the tuning database's entry for this GEMM (vlpc tune), unless a plan option is given
        opts, notes, _ = resolve_options(text, args.target, filename, opts)
        print_notes(notes, args.verbose)
        passes = pipeline(args.target, linalg=False, **opts)
    dumps = args.print_ir_after_all or args.print_ir_before_all or args.print_ir_after or args.print_ir_before
    if emit == "hsaco" and not (dumps or args.print_plan or args.verbose):  # through the kernel cache
        from vlpc.compiler import compile as compile_module

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
        run_with_dumps(module, passes[:[p.name for p in passes].index("gemm-split-k") + 1], ctx, on_before, after)
        print("\n".join(plan))
        return 0
    run_with_dumps(module, passes, ctx, on_before, after)
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
    from vlpc.compiler import compile as compile_module

    if args.output == "-":
        raise VlpcError("--emit hip-launcher writes two files: give -o STEM (STEM.h and STEM.c), not -o -")
    stem = args.output or f"{'out' if args.file == '-' else Path(args.file).stem}_launch"
    for path in output_paths(stem):
        check_not_input(str(path), args.file)
    filename = "<stdin>" if args.file == "-" else args.file
    compiled = compile_module(read_input(args.file), args.target, filename=filename, **codegen_options(args))
    write_launcher(compiled, stem, Path(filename).name)
    return 0
