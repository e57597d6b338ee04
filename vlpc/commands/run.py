"""``vlpc run FILE``: compile, execute on a device (the emulator by default) and verify against
NumPy; a code object FILE: run it on the emulator (vlpc/launch_cli.py)."""

from __future__ import annotations

from vlpc.cli_support import add_codegen_options, add_quiet, add_size_options
from vlpc.commands.common import add_speed_options


def add_parser(sub) -> None:
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
    add_speed_options(r, verify=False)


def main(args) -> int:
    from vlpc.run import cmd_run
    return cmd_run(args)
