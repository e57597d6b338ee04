"""The ``vlpc`` command line: the top-level parser and the dispatch table.

Each subcommand is a module of :mod:`vlpc.commands` (``vlpc/commands/<name>.py``) with
``add_parser(subparsers)`` and ``main(args) -> int``; it parses its options, calls the library
and formats the output.  This module builds the top-level parser, picks the command and turns
errors into exit codes:

* ``vlpc compile FILE --target gfx906 [-o OUT] [--emit mlir|asm|obj|hsaco|hip-launcher]``:
  lower a gemm-dialect file to a code object (``--emit`` is inferred from the
  suffix of ``-o``: ``.mlir``, ``.s``, ``.o``, ``.hsaco``/``.co``).
* ``vlpc opt FILE -p 'pass{opt=val},...'``: run named passes and print the IR.
* ``vlpc run FILE``: compile, execute on a device (the emulator by default) and
  verify against NumPy (a code object FILE: run it on the emulator, vlpc/launch_cli.py).
* ``vlpc profile FILE``: per-instruction stalls and a wave timeline, modeled (vlpc/profiler.py).
* ``vlpc bench``, ``vlpc report``, ``vlpc doctor``, ``vlpc tune``, ``vlpc cache``: see
  ``docs/cli.md``.

Exit codes: 0 success; 1 user error (bad input or options, unsupported sizes);
2 usage error; 3 verification failed; 4 device fault; 70 internal error (a bug in
vlpc).  Errors are printed as one line (``file:line:col: error: ...`` for IR),
never as a Python traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from vlpc.cli_support import OneLineParser, check_clock
from vlpc.errors import EXIT_INTERNAL, EXIT_USER, VlpcError
from vlpc.version import __version__

#: The subcommands, in the order ``vlpc --help`` lists them: the dispatch table (each names the
#: module ``vlpc.commands.<name>``, imported only when its command is built or run).
COMMANDS = ("compile", "opt", "run", "profile", "bench", "report", "doctor", "tune", "cache")


def command_module(name: str):
    """The module of subcommand ``name`` (``vlpc.commands.<name>``: ``add_parser``, ``main``)."""
    return importlib.import_module(f"vlpc.commands.{name}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; ``only``: build that subcommand's parser alone (``main`` does
    when the first argument names one: the others' options, and the modules that define them,
    are then not needed; a twentieth of a cached compile)."""
    parser = OneLineParser(prog="vlpc", description="GEMM compiler for AMD GCN (gfx906) with A in SGPRs")
    parser.add_argument("--version", action="version", version=f"vlpc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is None or only == name:
            command_module(name).add_parser(sub)
    return parser


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
        return command_module(args.command).main(args)
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
