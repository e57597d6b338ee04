"""What several command modules share: mlir-opt's IR printing options and their dumps, and
--verify-each/--no-cache."""

from __future__ import annotations

import argparse
import sys

from vlpc.errors import VlpcError


def add_ir_printing(p: argparse.ArgumentParser) -> None:
    """mlir-opt's IR printing options (the dumps go to standard error with MLIR's header)."""
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass (to stderr)")
    p.add_argument("--print-ir-before-all", action="store_true", help="print the IR before every pass (to stderr)")
    p.add_argument("--print-ir-after", action="append", default=[], metavar="PASS",
                   help="print the IR after PASS (to stderr; repeat it or give a comma-separated list)")
    p.add_argument("--print-ir-before", action="append", default=[], metavar="PASS",
                   help="print the IR before PASS (to stderr; repeat it or give a comma-separated list)")


def _pass_names(values: list[str]) -> list[str]:
    return [x.strip() for v in values for x in v.split(",") if x.strip()]


def ir_printer(args: argparse.Namespace, pass_names: list[str]):
    """(before, after) callbacks that print MLIR's ``// -----// IR Dump Before/After <pass> //----- //``
    dumps to standard error as the options ask; unknown pass names are a one-line error."""
    from vlpc.compiler import print_ir

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


def run_with_dumps(module, passes, ctx, on_before, on_after) -> None:
    from vlpc.compiler import run_passes

    run_passes(module, passes, ctx, on_after, before_each=on_before)


def add_speed_options(p: argparse.ArgumentParser, verify: bool = True, cache: bool = True) -> None:
    """--verify-each (mlir-opt's) and --no-cache (the kernel cache, vlpc/cache.py)."""
    if verify:
        p.add_argument("--verify-each", action="store_true",
                       help="verify the IR after every pass (default: once, after the last; VLPC_VERIFY_EACH=1)")
    if cache:
        p.add_argument("--no-cache", action="store_true",
                       help="neither read nor write the kernel cache ($VLPC_CACHE_DIR, default ~/.cache/vlpc; "
                            "VLPC_CACHE=0 does the same)")
