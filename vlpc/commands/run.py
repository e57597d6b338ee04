"""``vlpc run``: compile a GEMM, execute it on a device and verify it against NumPy; a code object
FILE: run it on the emulator (vlpc/launch_cli.py).

The reference and the error bound are :mod:`vlpc.verify`'s, shared with ``vlpc.run``:
float64 NumPy with BLAS's quick returns (alpha = 0 reads neither A nor B, beta = 0 does
not read C), and Higham's forward error bound ``gamma_(K+2) (|alpha||A||B| + |beta||C|)``
("Accuracy and Stability of Numerical Algorithms", section 3.1) plus the roundings of the
fused epilogue and of the store.  Elements of C outside the M x N matrices must keep
their bit patterns.  A result outside the bound is a failure (exit code 3).

Random inputs are laid out in exactly sized buffers (the last row of each matrix ends
its buffer) whose padding is NaN, so a kernel that reads or writes past the matrices is
caught.  A strided batched kernel runs its batch (``--batch`` for a dynamic count; batch
strides from the IR, else rows x leading dimension).
"""

from __future__ import annotations

import sys
import time

from vlpc.commands.common import add_speed_options
from vlpc.cli_support import (Progress, add_codegen_options, add_quiet, add_size_options, check_not_input,
                              check_size_options, check_writable, codegen_options, counters_text, load_npy,
                              read_input, single_kernel, write_atomic)
from vlpc.errors import EXIT_VERIFY, VlpcError


def cmd_run(args) -> int:
    # numpy, the verifier and the code-object path load here, not for `vlpc --help` (tests/runtime/test_kernel_cache.py)
    import numpy as np

    from vlpc.launch_cli import cmd_run_code_object, is_code_object
    from vlpc.verify import check_before_allocating

    import vlpc
    from vlpc.api import VerificationError, check_batch_option, resolve_launch, resolve_problem, run, stored_shapes
    from vlpc.runtime import get_device
    if is_code_object(args.file):  # any gfx906 code object, arguments from its metadata
        return cmd_run_code_object(args)
    for opt in ("kernel", "grid", "block", "arg", "dynamic_lds"):
        if getattr(args, opt, None):
            opt = "--" + opt.replace("_", "-")
            raise VlpcError(f"{opt} is for a code object FILE; {args.file} is MLIR (sizes: -m, -n, -k)")
    if args.iterations < 1:
        raise VlpcError(f"--iterations must be at least 1, got {args.iterations}")
    if args.seed < 0:
        raise VlpcError(f"--seed must be a non-negative integer, got {args.seed}")
    check_size_options(args)
    if args.save_output:
        for given in (args.file, *(getattr(args, "inputs", None) or ()),  # C.npy of --inputs is the user's
                      *([args.residual] if getattr(args, "residual", None) else [])):
            check_not_input(args.save_output, given, "--save-output")
        check_writable(args.save_output)
    text = read_input(args.file)
    opts = codegen_options(args)
    t0 = time.perf_counter()
    compiled = vlpc.compile(text, args.target, filename=args.file, **opts)
    from vlpc.tunedb import print_notes

    print_notes(compiled.plan_notes, args.verbose)  # the tuning database's entry (vlpc tune), if any
    t_compile = time.perf_counter() - t0
    kernel = single_kernel(compiled, "run")
    weights = None
    if getattr(args, "weights", None):  # a GGUF tensor as B (vlpc/quant_run.py)
        from vlpc.quant_run import weights_option
        weights, args.n = weights_option(kernel, args.weights, args.n)
    p = resolve_problem(kernel.launch_info, args.m, args.n, args.k)
    from vlpc.compiler import dynamic_sizes_entry

    # a kernel of '?' sizes: the tuning database's entry for the sizes given
    tuned, notes = dynamic_sizes_entry(compiled, text, args.target, args.file, opts, p.m, p.n, p.k,
                                       getattr(args, "batch", None))
    print_notes(notes, args.verbose)
    if tuned is not None:
        compiled, kernel = tuned, single_kernel(tuned, "run")
    batched = kernel.launch_info.get("batch", 0) != 0
    batch = getattr(args, "batch", None)
    check_batch_option(kernel, batch)

    layout = kernel.launch_info.get("layout", "NT")
    from vlpc.verify import NP, scalar_type, types_of
    ab, ct, _ = types_of(kernel)  # every element type: A, B and C typed as vlpc.run takes them
    op_dtypes = {"A": NP[ab], "B": NP[ab], "C": NP[ct]}
    if kernel.launch_info.get("b_format"):  # B: the GGUF tensor's bytes
        op_dtypes["B"] = np.uint8
    int_scalars = scalar_type(kernel) is np.int32
    dtype = np.float32 if int_scalars else scalar_type(kernel)  # alpha/beta's range (f16, int8: f32 or i32)
    shapes = stored_shapes(layout, p)
    arrays: dict[str, np.ndarray | None] = {"A": None, "B": weights, "C": None}
    if args.inputs and weights is not None:
        raise VlpcError("--weights gives B: with it, give A and C by --inputs of a kernel without --weights, not both")
    if args.inputs:
        for x, name in zip(args.inputs, "ABC"):
            arr = load_npy(x, name)
            rows, ld = shapes[name]
            static_ld = kernel.launch_info[f"static_ld{name.lower()}"]
            if arr.dtype != op_dtypes[name]:
                raise VlpcError(f"input {name} has dtype {arr.dtype}, expected {np.dtype(op_dtypes[name]).name}")
            if (arr.ndim not in ((2, 3) if batched else (2,)) or arr.shape[-2] != rows
                    or (arr.shape[-1] != ld if static_ld >= 0 else arr.shape[-1] < ld)):
                want = f"({rows}, {ld})" if not batched else f"(batch, {rows}, {ld}) or ({rows}, {ld})"
                raise VlpcError(f"input {name} has shape {arr.shape}, expected {want}"
                                + (f" (ld{name.lower()}={ld} is static in the IR)" if static_ld >= 0
                                   and arr.ndim >= 2 and arr.shape[-1] > ld else ""))
            arrays[name] = arr
    residual = None
    if getattr(args, "residual", None):  # R of a kernel with a residual operand (docs/quantized.md)
        rt = kernel.launch_info.get("residual")
        if not rt:
            raise VlpcError(f"--residual: kernel {kernel.name} has no residual operand (gemm.matmul ... residual(...))")
        residual = load_npy(args.residual, "R")
        if residual.dtype != np.dtype(NP[str(rt)]):
            raise VlpcError(f"--residual has dtype {residual.dtype}, expected {np.dtype(NP[str(rt)]).name}")
    p = resolve_launch(kernel, p.m, p.n, p.k, batch, arrays["A"], arrays["B"], arrays["C"])
    check_before_allocating(kernel, p)  # sizes and 32-bit offsets before the operands are made (vlpc/verify.py)
    launch = kernel.launch(p.m, p.n, p.k, p.batch or None)
    scalars = {}
    # beta's default exercises the C term; an int8 -> i32 kernel takes integers (2)
    for name, given, default in (("alpha", args.alpha, 1.0), ("beta", args.beta, 2 if int_scalars else 0.5)):
        fixed = getattr(kernel, name)  # a value the IR fixes (linalg accumulates: alpha = beta = 1)
        if fixed is not None and given is not None and given != fixed:
            raise VlpcError(f"--{name} {given} contradicts {name}={fixed} fixed by the IR")
        scalars[name] = fixed if fixed is not None else (given if given is not None else default)
    args.alpha, args.beta = scalars["alpha"], scalars["beta"]
    if int_scalars:
        for name in ("alpha", "beta"):
            x = scalars[name]
            if x != int(x) or not -2**31 <= x < 2**31:
                raise VlpcError(f"--{name} {x}: kernel {kernel.name} (int8 -> i32) takes 32-bit integer alpha and beta")
        args.alpha, args.beta = int(scalars["alpha"]), int(scalars["beta"])
    for name in ("alpha", "beta"):
        if not np.isfinite(scalars[name]) or abs(scalars[name]) > float(np.finfo(dtype).max):
            raise VlpcError(f"--{name} {scalars[name]} is not a finite {np.dtype(dtype).name}")

    waitcnt = getattr(args, "waitcnt", "raise")
    if waitcnt != "raise" and args.device != "emulator":
        raise VlpcError(f"--waitcnt {waitcnt} is an emulator mode (the hardware does not check waits); "
                        "use --device emulator")
    if waitcnt == "report" and args.strict:
        raise VlpcError("--waitcnt report goes on past a missing s_waitcnt, --strict stops at it: give one of them")
    dev_opts = {"strict": True} if (args.strict and args.device == "emulator") else {}
    if waitcnt != "raise":
        dev_opts["waitcnt"] = waitcnt
    dev_opts["target"] = args.target  # the device must be (compatible with) the compile target
    if args.verbose and args.device == "emulator":
        # -v on the emulator: also the timing model's modeled time, on the board (and CUs) the plan
        # was made for: --gpu / --cus / --options, else the target's default board
        from vlpc.targets import board_for
        plan = codegen_options(args)
        dev_opts["gpu"] = plan.get("gpu") or board_for(args.target)
        dev_opts["cus"] = plan.get("cus")
    dev = get_device(args.device, **dev_opts)
    if args.verbose:
        reason = getattr(dev, "selection_reason", "")
        print(f"vlpc: device {dev.describe()}{f' ({reason})' if reason else ''}", file=sys.stderr)
        print(f"vlpc: toolchain {compiled.toolchain}", file=sys.stderr)
    batch_text = f" batch={p.batch} (strides {p.stride_a}, {p.stride_b}, {p.stride_c})" if p.batch else ""
    print(f"{kernel.name}: M={p.m} N={p.n} K={p.k} (lda={p.lda} ldb={p.ldb} ldc={p.ldc}){batch_text} "
          f"alpha={args.alpha} beta={args.beta}", flush=True)
    steps = kernel.plan(p.m, p.n, p.k, p.batch or None)
    if len(steps) > 1 or steps[0].kernel != kernel.name:
        print("  plan: " + ", then ".join(f"{st.kernel} grid {st.grid}" for st in steps)
              + f"; workspace {kernel.workspace_bytes(p.m, p.ldc, p.k, p.batch or None, n=p.n)} bytes", flush=True)
    # The header first, then a progress bar on stderr (a terminal only) while the kernel runs.
    bar = Progress(kernel.plan_workgroups(p.m, p.n, p.k, p.batch or None) * args.iterations, "vlpc run",
                   quiet=getattr(args, "quiet", False))
    if hasattr(dev, "progress"):
        dev.progress = bar
    # One launch path and one check for `vlpc run` and `vlpc.run` (vlpc/api.py, vlpc/verify.py).
    import warnings

    from vlpc.runtime.emulator.errors import WaitcntViolationWarning
    with warnings.catch_warnings(record=True) as caught:
        # --waitcnt report: each missing s_waitcnt once (kernel, pc, wave, instruction, register)
        warnings.simplefilter("always", WaitcntViolationWarning)
        try:
            r = run(kernel, arrays["A"], arrays["B"], arrays["C"], m=p.m, n=p.n, k=p.k, batch=p.batch or None,
                    alpha=args.alpha if int_scalars else float(dtype(args.alpha)),
                    beta=args.beta if int_scalars else float(dtype(args.beta)), device=dev, seed=args.seed,
                    verify=args.verify, iterations=args.iterations, residual=residual)
            failure = None
        except VerificationError as e:
            r, failure = e.result, e
        finally:
            bar.close()
    races = [w for w in caught if issubclass(w.category, WaitcntViolationWarning)]
    for w in caught:
        if w in races:
            print(f"vlpc: warning: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)

    print(f"  grid {launch.grid} x block {launch.block} on {dev.name}; compile {t_compile:.2f} s, "
          f"launch wall time {r.wall_time:.3f} s (best of {args.iterations})")
    if dev.name == "emulator" and r.stats is not None:
        print("\n".join(counters_text(r.stats)))
    if waitcnt == "report":
        print(f"  waitcnt report: {len(races)} missing s_waitcnt" + (
            " (execution went on with the loaded values)" if races else ""))
    timing = getattr(r.stats, "timing", None)  # -v on the emulator: the timing model's modeled time
    if timing is not None:
        flops = 2.0 * p.m * p.n * p.k * max(1, p.batch or 1)
        from vlpc.tune import unit  # TOP/s for int8 products (integer operations), else TFLOP/s

        print(f"  {timing.summary()}; {timing.tflops(flops):.3f} {unit(kernel.launch_info.get('dtype', 'f32'))} "
              "modeled")
    if args.save_output:
        import io
        data = io.BytesIO()
        np.save(data, r.c)
        write_atomic(args.save_output, data.getvalue())
    if not args.verify:
        return 0
    print("  " + r.verdict.summary())
    if failure is not None:
        print(f"vlpc: verification FAILED: {r.verdict.failure()}", file=sys.stderr)
        return EXIT_VERIFY
    print("  verification passed")
    return 0


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
                   help="B of a b_format kernel: the named Q8_0/Q4_0/Q4_K tensor of a GGUF file (a swiglu kernel: "
                        "FILE.gguf:GATE,UP; docs/quantized.md)")
    r.add_argument("--residual", metavar="R.npy",
                   help="R of a kernel with a residual operand (C's shape, f16 or f32 as the IR; random when "
                        "omitted; docs/quantized.md)")
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
    return cmd_run(args)
