"""The embedding API's execution half: :func:`run` compiles (if needed), launches and verifies.

``vlpc.run`` is this module's :func:`run` (re-exported by :mod:`vlpc`)::

    import numpy as np, vlpc
    a = np.ones((256, 640), np.float32); b = np.ones((512, 640), np.float32)
    r = vlpc.run(open("examples/sgemm_nt.mlir").read(), a, b, alpha=1.0, beta=0.0)
    r.c            # C (M x N), computed on the device (the emulator by default)
    r.launch       # LaunchConfig(grid=(2, 4, 1), block=(256, 1, 1))
    r.stats        # the emulator's counters (None on HIP)
    r.max_abs_error, r.tolerance   # against a float64 NumPy reference (fused epilogue included)

Operands are the matrices *as stored*, row-major: A is M x K (layout ``N?``) or
K x M (``T?``), B is K x N (``?N``) or N x K (``?T``), C is M x N; a leading
dimension larger than the row is given by a wider array.  Missing operands are
random (``seed``).  ``alpha``/``beta`` default to the values the IR fixed (linalg
input: 1 and 1, C += A*B; 0 for beta after a zero fill), else to 1 and 0.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlpc.errors import EXIT_VERIFY, VlpcError
from vlpc.pipeline import CompiledKernel, CompiledModule, LaunchConfig, compile

_NP_DTYPE = {"f32": np.float32, "f64": np.float64}


class VerificationError(VlpcError):
    """:func:`run` computed a result outside the error bound (``RunResult`` in ``.result``)."""

    exit_code = EXIT_VERIFY

    def __init__(self, message: str, result: RunResult):
        super().__init__(message)
        self.result = result


from vlpc.run import Problem  # noqa: E402  (one definition, shared with vlpc run)


@dataclass
class RunResult:
    """What :func:`run` did: the output, the launch, and the check against NumPy."""

    c: np.ndarray                      #: C after the launch, M x N
    kernel: CompiledKernel
    problem: Problem
    launch: LaunchConfig
    alpha: float
    beta: float
    device: str                        #: the device's description, e.g. ``emulator (gfx906)``
    stats: Any = None                  #: emulator ``LaunchStats`` (instruction counters), else None
    wall_time: float = 0.0             #: best launch wall time in seconds (emulator: not hardware time)
    max_abs_error: float | None = None  #: vs. the float64 reference (None when not verified)
    tolerance: float | None = None     #: the largest element-wise bound used
    verified: bool | None = None       #: True when checked and within the bound
    inputs: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  #: A, B, C0 as launched


def stored_shapes(layout: str, p: Problem) -> dict[str, tuple[int, int]]:
    """Row-major shapes (rows, leading dimension) of A, B and C as stored for ``layout``."""
    return {"A": (p.m if layout[0] == "N" else p.k, p.lda),
            "B": (p.k if layout[1] == "N" else p.n, p.ldb),
            "C": (p.m, p.ldc)}


def check_leading_dimensions(layout: str, p: Problem) -> None:
    """Each leading dimension covers its stored row (A: K or M, B: N or K, C: N, by ``layout``)."""
    rows = {"A": p.k if layout[0] == "N" else p.m, "B": p.n if layout[1] == "N" else p.k, "C": p.n}
    for name, ld in (("A", p.lda), ("B", p.ldb), ("C", p.ldc)):
        if ld < rows[name]:
            raise VlpcError(f"ld{name.lower()}={ld} is smaller than the row length {rows[name]} of {name} "
                            f"as stored for layout {layout}")


def resolve(kernel: CompiledKernel, a: np.ndarray | None, b: np.ndarray | None, c: np.ndarray | None,
            m: int | None, n: int | None, k: int | None) -> Problem:
    """Sizes: static from the kernel, else given, else from the arrays' shapes (see the module docstring)."""
    li = kernel.launch_info
    lay = kernel.layout
    # (rows, cols) of each stored operand in terms of the logical sizes.
    a_dims = ("m", "k") if lay[0] == "N" else ("k", "m")
    b_dims = ("k", "n") if lay[1] == "N" else ("n", "k")
    from_arrays: dict[str, int] = {}
    for arr, dims in ((a, a_dims), (b, b_dims), (c, ("m", "n"))):
        if arr is not None:
            if arr.ndim != 2:
                raise VlpcError(f"operands must be 2-D arrays, got shape {arr.shape}")
            from_arrays.setdefault(dims[0], arr.shape[0])
            from_arrays.setdefault(dims[1], arr.shape[1])
    sizes = {}
    for name, given in (("m", m), ("n", n), ("k", k)):
        static = li[f"static_{name}"]
        if static >= 0:
            if given is not None and given != static:
                raise VlpcError(f"{name.upper()}={given} contradicts the static size {name.upper()}={static} in the IR")
            sizes[name] = static
        elif given is not None:
            sizes[name] = given
        elif name in from_arrays:
            sizes[name] = from_arrays[name]
        else:
            raise VlpcError(f"{name.upper()} is dynamic ('?') in the IR: pass {name}= or the operand arrays")
    cols = {"A": sizes[a_dims[1]], "B": sizes[b_dims[1]], "C": sizes["n"]}
    lds = {}
    for op, arr in (("A", a), ("B", b), ("C", c)):
        static = li[f"static_ld{op.lower()}"]
        lds[op] = static if static >= 0 else (arr.shape[1] if arr is not None else cols[op])
    return Problem(sizes["m"], sizes["n"], sizes["k"], lds["A"], lds["B"], lds["C"])


def _operand(name: str, arr: np.ndarray | None, shape: tuple[int, int], dtype: type,
             rng: np.random.Generator) -> np.ndarray:
    if arr is None:
        return rng.standard_normal(shape).astype(dtype)
    arr = np.asarray(arr)
    if arr.dtype != dtype:
        raise VlpcError(f"operand {name} has dtype {arr.dtype}, the kernel computes in {np.dtype(dtype)}")
    if arr.shape != shape:
        raise VlpcError(f"operand {name} has shape {arr.shape}, the kernel expects {shape} "
                        "(rows x leading dimension, as stored)")
    return np.ascontiguousarray(arr)


def _vector(name: str, arr: np.ndarray | None, length: int, dtype: type,
            rng: np.random.Generator) -> np.ndarray:
    if arr is None:
        return rng.standard_normal(length).astype(dtype)
    arr = np.asarray(arr)
    if arr.dtype != dtype or arr.shape != (length,):
        raise VlpcError(f"{name} must be a {np.dtype(dtype).name} vector of length {length}, "
                        f"got {arr.dtype} {arr.shape}")
    return np.ascontiguousarray(arr)


def _scalar(name: str, given: float | None, fixed: float | None, default: float) -> float:
    if fixed is not None:
        if given is not None and float(given) != fixed:
            raise VlpcError(f"{name}={given} contradicts the IR, which fixes {name} = {fixed} "
                            "(an arith.constant, e.g. from linalg's accumulate)")
        return fixed
    return default if given is None else float(given)


def run(module: str | Any, a: np.ndarray | None = None, b: np.ndarray | None = None,
        c: np.ndarray | None = None, *, bias: np.ndarray | None = None,
        m: int | None = None, n: int | None = None, k: int | None = None,
        alpha: float | None = None, beta: float | None = None, device: str | Any = "emulator",
        target: str = "gfx906", kernel: str | None = None, seed: int = 0, verify: bool = True,
        iterations: int = 1, strict: bool = False, **options: Any) -> RunResult:
    """Compile ``module`` (unless already compiled), run it on ``device`` and check C.

    ``module``: MLIR text, an xDSL ``ModuleOp``, an upstream MLIR module, a
    :class:`~vlpc.pipeline.CompiledModule` or a :class:`~vlpc.pipeline.CompiledKernel`.
    ``a``, ``b``, ``c``: NumPy arrays as stored (random when omitted); ``m``, ``n``,
    ``k`` for dynamic sizes not implied by the arrays; ``bias`` (length M or N) for a
    kernel with a fused ``bias_row``/``bias_col`` epilogue.  ``device``: ``"emulator"``
    (default), ``"hip"``, ``"auto"`` or a :class:`~vlpc.runtime.Device`;
    ``strict`` makes the emulator report reads of uninitialised registers.
    ``options`` go to :func:`vlpc.compile`.  With ``verify`` (default) a result
    outside the forward error bound of the ``vlpc run`` command (``gamma_(K+2)``
    times the magnitudes) raises :class:`VerificationError`; the other errors are
    :class:`~vlpc.errors.VlpcError` (bad sizes, options, IR) and
    :class:`~vlpc.errors.DeviceError` (device faults).
    """
    from vlpc.run import apply_epilogue, tolerance
    from vlpc.runtime import get_device, load_code_object

    if isinstance(module, CompiledKernel):
        kern = module
    else:
        compiled = module if isinstance(module, CompiledModule) else compile(module, target, **options)
        kern = compiled.kernel(kernel)
    if not kern.code_object:
        raise VlpcError(f"kernel {kern.name} carries no code object (compile it with vlpc.compile)")
    p = resolve(kern, a, b, c, m, n, k)
    kern.check_sizes(p.m, p.n, p.k)
    check_leading_dimensions(kern.layout, p)
    launch = kern.launch(p.m, p.n, p.k)
    dtype = _NP_DTYPE[str(kern.launch_info.get("dtype", "f32"))]
    rng = np.random.default_rng(seed)
    shapes = stored_shapes(kern.layout, p)
    a0, b0, c0 = (_operand(name, arr, shapes[name], dtype, rng) for name, arr in (("A", a), ("B", b), ("C", c)))
    epi = tuple(x for x in str(kern.launch_info.get("epilogue", "")).split(",") if x)
    bias0 = None
    if any(x.startswith("bias") for x in epi):
        length = p.m if "bias_row" in epi else p.n
        bias0 = _vector("bias", bias, length, dtype, rng)
    elif bias is not None:
        raise VlpcError(f"kernel {kern.name} has no bias epilogue; do not pass bias")
    al = _scalar("alpha", alpha, kern.alpha, 1.0)
    be = _scalar("beta", beta, kern.beta, 0.0)

    dev = get_device(device, **({"strict": True} if strict else {})) if isinstance(device, str) else device
    co = load_code_object(kern.code_object)
    bufs = [dev.upload(x) for x in ((a0, b0, c0) if bias0 is None else (a0, b0, c0, bias0))]
    stats = None
    walls = []
    try:
        args = [*bufs[:3], *(np.int32(v) for v in (p.m, p.n, p.k, p.lda, p.ldb, p.ldc)), dtype(al), dtype(be),
                *bufs[3:]]
        for it in range(max(1, iterations)):
            if it:
                dev.write(bufs[2], c0)
            t0 = time.perf_counter()
            stats = kern.execute(dev, co, args, p.m, p.n, p.k, p.ldc)
            walls.append(time.perf_counter() - t0)
        out = dev.download(bufs[2], dtype, (p.m, p.ldc))
    finally:
        for buf in bufs:
            dev.free(buf)
    result = RunResult(np.ascontiguousarray(out[:, :p.n]), kern, p, launch, al, be, dev.describe(),
                       stats if getattr(dev, "name", "") == "emulator" else None, min(walls),
                       inputs={"A": a0, "B": b0, "C": c0, **({} if bias0 is None else {"bias": bias0})})
    if not verify:
        return result
    op_a = a0[:, :p.k] if kern.layout[0] == "N" else a0[:, :p.m].T   # M x K
    op_b = b0[:, :p.n] if kern.layout[1] == "N" else b0[:, :p.k].T   # K x N
    # BLAS: with beta == 0, C is not read (it may hold NaN), so the reference leaves it out too.
    c_in = c0[:, :p.n].astype(np.float64) if be != 0 else np.zeros((p.m, p.n))
    ref = al * (op_a.astype(np.float64) @ op_b.astype(np.float64)) + be * c_in
    ref = apply_epilogue(ref, epi, None if bias0 is None else bias0.astype(np.float64))
    tol = tolerance(op_a, np.ascontiguousarray(op_b.T), c_in, al, be, p.k, str(kern.launch_info.get("dtype", "f32")))
    if "gelu" in epi:  # as `vlpc run`: v_exp_f32 and v_rcp_f32 are 1-ULP approximations
        tol = tol + 8 * np.finfo(np.float32).eps * np.abs(ref)
    err = np.abs(result.c.astype(np.float64) - ref)
    result.max_abs_error = float(err.max())
    result.tolerance = float(tol.max())
    bad = ~(err <= tol)
    untouched = p.ldc > p.n and not np.array_equal(out[:, p.n:], c0[:, p.n:], equal_nan=True)
    result.verified = not bad.any() and not untouched
    if not result.verified:
        if bad.any():
            i, j = (int(x) for x in np.argwhere(bad)[0])
            what = (f"{int(bad.sum())} of {bad.size} elements outside the error bound; C[{i},{j}] = "
                    f"{result.c[i, j]!r}, expected {ref[i, j]!r} (bound {tol[i, j]:.3e})")
        else:
            what = "columns of C beyond N were modified"
        raise VerificationError(f"{kern.name}: verification failed: {what}", result)
    return result


__all__ = ["Problem", "RunResult", "VerificationError", "check_leading_dimensions", "resolve", "run", "stored_shapes"]
