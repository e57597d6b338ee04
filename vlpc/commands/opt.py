"""``vlpc opt FILE -p 'pass{opt=val},...'``: run named passes and print the IR (or the assembly);
``--list-passes``: every pass with its options."""

from __future__ import annotations

import argparse
import sys

from vlpc.cli_support import check_not_input, read_input, write_atomic
from vlpc.commands.common import add_ir_printing, add_speed_options, ir_printer, run_with_dumps
from vlpc.errors import VlpcError


def add_parser(sub) -> None:
    o = sub.add_parser("opt", help="run passes on an MLIR file and print the result")
    o.add_argument("file", nargs="?", help="input MLIR file ('-' for standard input; not needed with --list-passes)")
    o.add_argument("-p", "--passes", "--pass-pipeline", dest="passes", default="", metavar="PIPELINE",
                   help="pass pipeline, e.g. 'gemm-tile{macro-n=128},gemm-map-workgroups'; mlir-opt's "
                        "'builtin.module(gemm-tile{macro-n=128},...)' is accepted too")
    o.add_argument("-o", "--output", help="output file ('-' or default: standard output)")
    o.add_argument("--emit", choices=("mlir", "asm"), default="mlir", help="print IR (default) or assembly")
    o.add_argument("--target", default="gfx906", help="target id for --emit asm (default: %(default)s)")
    o.add_argument("--list-passes", action="store_true", help="list the available passes with their options and exit")
    add_speed_options(o, cache=False)
    add_ir_printing(o)


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
    from vlpc.compiler import hyphenate_options

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


def main(args: argparse.Namespace) -> int:
    from vlpc.dialects.gcn_asm import print_assembly
    from vlpc.compiler import make_context, parse, print_ir

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
    on_before, on_after = ir_printer(args, [p.name for p in passes])
    text = read_input(args.file)
    ctx = make_context()
    module = parse(text, "<stdin>" if args.file == "-" else args.file, ctx)
    run_with_dumps(module, passes, ctx, on_before, on_after)
    out = print_assembly(module, args.target) if args.emit == "asm" else print_ir(module)
    if args.output and args.output != "-":
        write_atomic(args.output, out)
    else:
        sys.stdout.write(out)
    return 0
