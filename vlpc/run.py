"""``vlpc run``: compile a GEMM, execute it on a device and verify it against NumPy.

The reference is computed in float64.  The tolerance follows the standard
forward error bound of a dot product of length K in precision u (Higham,
"Accuracy and Stability of Numerical Algorithms", section 3.1):
``|C - C_ref| <= gamma_{K+2} * (|alpha| |A| |B|^T + |beta| |C0|)`` element-wise,
with ``gamma_n = n u / (1 - n u)`` and u = 2^-24 for f32 (the two extra terms cover
the scaling by alpha and the beta*C0 product).  A result outside the bound is a
failure (exit code 3).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from vlpc.errors import EXIT_VERIFY, VlpcError

UNIT_ROUNDOFF = {"f32": 2.0**-24, "f64": 2.0**-53}


@dataclass
class Problem:
    """Sizes (elements) and leading dimensions of one GEMM launch."""

    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int


def resolve_problem(launch_info: dict, m: int | None, n: int | None, k: int | None) -> Problem:
    """Static sizes from the kernel, dynamic ones from the command line (errors name what is missing)."""
    def pick(name: str, given: int | None) -> int:
        static = launch_info[f"static_{name}"]
        if static >= 0:
            if given is not None and given != static:
                raise VlpcError(f"--{name} {given} contradicts the static size {name.upper()}={static} in the IR")
            return static
        if given is None:
            raise VlpcError(f"{name.upper()} is dynamic ('?') in the IR: give it with --{name}")
        if given <= 0:
            raise VlpcError(f"--{name} must be positive, got {given}")
        return given

    mm, nn, kk = pick("m", m), pick("n", n), pick("k", k)

    def ld(name: str, default: int) -> int:
        static = launch_info[f"static_{name}"]
        return static if static >= 0 else default

    layout = launch_info.get("layout", "NT")
    return Problem(mm, nn, kk, ld("lda", kk if layout[0] == "N" else mm), ld("ldb", nn if layout[1] == "N" else kk),
                   ld("ldc", nn))


def storage_shapes(layout: str, p: Problem) -> dict[str, tuple[int, int]]:
    """(rows, row stride) of A, B and C as stored, for a layout ("NT": A is M x K, B is N x K)."""
    return {"A": (p.m if layout[0] == "N" else p.k, p.lda),
            "B": (p.k if layout[1] == "N" else p.n, p.ldb),
            "C": (p.m, p.ldc)}


def operands(layout: str, p: Problem, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """op(A) (M x K) and op(B) transposed (N x K), as float64 views of the stored arrays."""
    op_a = a[:, :p.k] if layout[0] == "N" else a[:, :p.m].T
    op_bt = b[:, :p.n].T if layout[1] == "N" else b[:, :p.k]
    return op_a.astype(np.float64), op_bt.astype(np.float64)


def tolerance(a: np.ndarray, b: np.ndarray, c0: np.ndarray, alpha: float, beta: float, k: int,
              dtype: str = "f32") -> np.ndarray:
    """Element-wise error bound for ``alpha * a @ b.T + beta * c0`` (see the module docstring)."""
    u = UNIT_ROUNDOFF[dtype]
    n = k + 2
    gamma = n * u / (1 - n * u)
    if dtype == "f64":  # the float64 reference has rounding errors of the same size
        gamma *= 2
    mag = abs(alpha) * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)).T) + abs(beta) * np.abs(c0)
    return gamma * mag + np.finfo(np.float32).tiny


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (what the kernel computes).

    Its largest difference from the erf form 0.5 x (1 + erf(x / sqrt(2))) is about 4.7e-4
    (near |x| = 2), as measured by tests/test_epilogue.py.
    """
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def apply_epilogue(d: np.ndarray, ops: tuple[str, ...] | list[str], bias: np.ndarray | None) -> np.ndarray:
    """The reference for a fused epilogue: ops in order on D = alpha*op(A)*op(B) + beta*C (float64)."""
    for x in ops:
        if x == "bias_row":
            d = d + bias[:, None]
        elif x == "bias_col":
            d = d + bias[None, :]
        elif x == "relu":
            d = np.maximum(d, 0.0)
        elif x == "gelu":
            d = gelu_tanh(d)
        elif x:
            raise VlpcError(f"unknown epilogue operation '{x}'")
    return d


def cmd_run(args) -> int:
    import vlpc
    from vlpc.runtime import get_device, load_code_object

    from vlpc.cli import _read_input

    if args.iterations < 1:
        raise VlpcError(f"--iterations must be at least 1, got {args.iterations}")
    if args.seed < 0:
        raise VlpcError(f"--seed must be a non-negative integer, got {args.seed}")
    for name in ("m", "n", "k"):
        given = getattr(args, name, None)
        if given is not None and given <= 0:
            raise VlpcError(f"--{name} must be positive, got {given}")
    if args.save_output:
        _check_writable(args.save_output)
    text = _read_input(args.file)
    from vlpc.cli import _options

    opts = _options(args)
    t0 = time.perf_counter()
    compiled = vlpc.compile(text, args.target, filename=args.file, **opts)
    t_compile = time.perf_counter() - t0
    kernel = compiled.kernel()
    p = resolve_problem(kernel.launch_info, args.m, args.n, args.k)
    kernel.check_sizes(p.m, p.n, p.k, p.lda, p.ldb, p.ldc)
    launch = kernel.launch(p.m, p.n, p.k)

    layout = kernel.launch_info.get("layout", "NT")
    dtype = np.float32 if kernel.launch_info.get("dtype", "f32") == "f32" else np.float64
    epi = tuple(x for x in str(kernel.launch_info.get("epilogue", "")).split(",") if x)
    shapes = storage_shapes(layout, p)
    rng = np.random.default_rng(args.seed)
    if args.inputs:
        a, b, c0 = (_load_npy(x, name) for x, name in zip(args.inputs, "ABC"))
        for name, arr in (("A", a), ("B", b), ("C", c0)):
            rows, ld = shapes[name]
            if arr.dtype != dtype:
                raise VlpcError(f"input {name} has dtype {arr.dtype}, expected {np.dtype(dtype).name}")
            if arr.ndim != 2 or arr.shape[0] != rows or arr.shape[1] < ld:
                raise VlpcError(f"input {name} has shape {arr.shape}, expected ({rows}, {ld})")
        a, b, c0 = (np.ascontiguousarray(x[:, :shapes[name][1]]) for x, name in ((a, "A"), (b, "B"), (c0, "C")))
    else:
        a, b, c0 = (rng.standard_normal(shapes[name]).astype(dtype) for name in "ABC")
    bias = None
    if any(x.startswith("bias") for x in epi):
        bias = rng.standard_normal(p.m if "bias_row" in epi else p.n).astype(dtype)
    scalars = {}
    for name, given, default in (("alpha", args.alpha, 1.0), ("beta", args.beta, 0.5)):
        fixed = getattr(kernel, name)  # a value the IR fixes (linalg accumulates: alpha = beta = 1)
        if fixed is not None and given is not None and given != fixed:
            raise VlpcError(f"--{name} {given} contradicts {name}={fixed} fixed by the IR")
        scalars[name] = fixed if fixed is not None else (given if given is not None else default)
    args.alpha, args.beta = scalars["alpha"], scalars["beta"]
    for name in ("alpha", "beta"):
        if not np.isfinite(scalars[name]) or abs(scalars[name]) > float(np.finfo(dtype).max):
            raise VlpcError(f"--{name} {scalars[name]} is not a finite {np.dtype(dtype).name}")
    alpha, beta = dtype(args.alpha), dtype(args.beta)

    dev_opts = {"strict": True} if (args.strict and args.device == "emulator") else {}
    dev = get_device(args.device, **dev_opts)
    if args.verbose:
        reason = getattr(dev, "selection_reason", "")
        print(f"vlpc: device {dev.describe()}{f' ({reason})' if reason else ''}", file=sys.stderr)
        print(f"vlpc: toolchain {compiled.toolchain}", file=sys.stderr)
    co = load_code_object(compiled.code_object)
    bufs = [dev.upload(x) for x in ((a, b, c0) if bias is None else (a, b, c0, bias))]
    try:
        kargs = [*bufs[:3], np.int32(p.m), np.int32(p.n), np.int32(p.k), np.int32(p.lda), np.int32(p.ldb),
                 np.int32(p.ldc), alpha, beta, *bufs[3:]]
        sizes = {i: x.nbytes for i, x in enumerate((a, b, c0))}
        walls = []
        stats = None
        for it in range(args.iterations):
            if it:
                dev.write(bufs[2], c0)
            t = time.perf_counter()
            stats = kernel.execute(dev, co, kargs, p.m, p.n, p.k, p.ldc, buffer_sizes=sizes)
            walls.append(time.perf_counter() - t)
        out = dev.download(bufs[2], dtype, (p.m, p.ldc))
    finally:
        for buf in bufs:
            dev.free(buf)

    print(f"{kernel.name}: M={p.m} N={p.n} K={p.k} (lda={p.lda} ldb={p.ldb} ldc={p.ldc}) alpha={args.alpha} beta={args.beta}")
    steps = kernel.plan(p.m, p.n, p.k)
    if len(steps) > 1 or steps[0].kernel != kernel.name:
        print("  plan: " + ", then ".join(f"{st.kernel} grid {st.grid}" for st in steps)
              + f"; workspace {kernel.workspace_bytes(p.m, p.ldc)} bytes")
    print(f"  grid {launch.grid} x block {launch.block} on {dev.name}; compile {t_compile:.2f} s, "
          f"launch wall time {min(walls):.3f} s (best of {len(walls)})")
    if dev.name == "emulator" and stats is not None:
        print("  emulator counters (not hardware time): " + _counters(stats))
    if args.save_output:
        import io

        from vlpc.cli import write_atomic

        data = io.BytesIO()
        np.save(data, out)
        write_atomic(args.save_output, data.getvalue())
    if not args.verify:
        return 0
    op_a, op_bt = operands(layout, p, a, b)
    d = float(alpha) * (op_a @ op_bt.T) + float(beta) * c0[:, :p.n].astype(np.float64)
    ref = apply_epilogue(d, epi, None if bias is None else bias.astype(np.float64))
    got = out[:, :p.n].astype(np.float64)
    tol = tolerance(op_a, op_bt, c0[:, :p.n], float(alpha), float(beta), p.k,
                    "f32" if dtype == np.float32 else "f64")
    if "gelu" in epi:  # v_exp_f32 and v_rcp_f32 are 1-ULP approximations
        tol = tol + 8 * np.finfo(np.float32).eps * np.abs(ref)
    err = np.abs(got - ref)
    rel = err / np.maximum(np.abs(ref), np.finfo(np.float32).tiny)
    bad = ~(err <= tol)
    print(f"  max abs error {err.max():.3e}, max rel error {rel.max():.3e}; tolerance gamma_(K+2)*(|alpha||A||B|^T+|beta||C|), "
          f"max {tol.max():.3e}")
    untouched = p.ldc > p.n and not np.array_equal(out[:, p.n:], c0[:, p.n:])
    if bad.any() or untouched:
        i, j = np.argwhere(bad)[0] if bad.any() else (0, p.n)
        what = (f"C[{i},{j}] = {out[i, j]!r}, expected {ref[i, j]!r} (tolerance {tol[i, j]:.3e})" if bad.any()
                else "columns beyond N were modified")
        print(f"vlpc: verification FAILED: {int(bad.sum())} of {bad.size} elements outside the tolerance; {what}",
              file=sys.stderr)
        return EXIT_VERIFY
    print("  verification passed")
    return 0


def _load_npy(path: str, name: str) -> np.ndarray:
    """A ``.npy`` input; anything else (missing, not NumPy, pickled objects) is a one-line error."""
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
        if magic != b"\x93NUMPY" and magic[:4] != b"PK\x03\x04":
            raise VlpcError(f"cannot read input {name} from {path}: not a NumPy .npy file "
                            "(no \\x93NUMPY header); save arrays with numpy.save")
        arr = np.load(path, allow_pickle=False)
    except OSError as e:
        raise VlpcError(f"cannot read input {name} from {path}: {e.strerror or e}") from None
    except (ValueError, EOFError) as e:
        raise VlpcError(f"cannot read input {name} from {path}: not a NumPy .npy array "
                        f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    if not isinstance(arr, np.ndarray):  # an .npz archive
        raise VlpcError(f"input {name}: {path} is an .npz archive; save one array with numpy.save")
    return arr


def _check_writable(path: str) -> None:
    """Fail before a long run when ``path`` cannot be written (the write itself is atomic)."""
    import os
    from pathlib import Path

    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise VlpcError(f"cannot write {path}: it is a directory")
    if not parent.is_dir():
        raise VlpcError(f"cannot write {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise VlpcError(f"cannot write {path}: directory {parent} is not writable")


def _counters(stats) -> str:
    c = stats.by_class
    return (f"{stats.instructions} wave-instructions (VALU {c.get('valu', 0)}, SALU {c.get('salu', 0)}, "
            f"SMEM {c.get('smem', 0)}, VMEM {c.get('vmem', 0)}, LDS {c.get('lds', 0)}, waitcnt {c.get('waitcnt', 0)}), "
            f"VGPR reads {stats.vgpr_reads} ({stats.vgpr_reads_forwarded} forwarded), VGPR writes {stats.vgpr_writes}, "
            f"SGPR reads {stats.sgpr_reads}, LDS bytes {stats.lds_bytes_read + stats.lds_bytes_written}, "
            f"global bytes read {stats.global_bytes_read} written {stats.global_bytes_written}, barriers {stats.barriers}")
