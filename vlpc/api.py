"""The embedding API's execution half: :func:`run` compiles (if needed), launches and verifies.

:func:`run` is the one launch-and-verify path of every element type (``vlpc run`` calls it too):
f32/f64, the f16/int8 dot kernels (A/B and C typed apart, :func:`round_leading_dimensions`) through
:func:`launch_and_check`, and the GGUF-quantized GEMV (B the tensor's bytes, vlpc/quant_run.py);
each is checked by :func:`vlpc.verify.check` against the one reference, :func:`vlpc.verify.reference`.

``vlpc.run`` is this module's :func:`run` (re-exported by :mod:`vlpc`)::

    import numpy as np, vlpc
    a = np.ones((256, 640), np.float32); b = np.ones((512, 640), np.float32)
    r = vlpc.run(open("examples/sgemm_nt.mlir").read(), a, b, alpha=1.0, beta=0.0)
    r.c            # C (M x N), computed on the device (the emulator by default)
    r.launch       # LaunchConfig(grid=(2, 4, 1), block=(256, 1, 1))
    r.stats        # the emulator's counters (None on HIP)
    r.max_abs_error, r.tolerance   # against a float64 NumPy reference (fused epilogue included)
    r.error_ratio  # the worst |error| / bound (vlpc.verify: Higham's bound + epilogue and store roundings)

Operands are the matrices *as stored*, row-major: A is M x K (layout ``N?``) or
K x M (``T?``), B is K x N (``?N``) or N x K (``?T``), C is M x N; a leading
dimension larger than the row is given by a wider array; a strided batched kernel takes
3-D arrays (batch, rows, columns), 2-D for an operand shared by the batch.  Missing operands are
random (``seed``).  ``alpha``/``beta`` default to the values the IR fixed (linalg
input: 1 and 1, C += A*B; 0 for beta after a zero fill), else to 1 and 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlpc.errors import EXIT_VERIFY, VlpcError
from vlpc.compiler import CompiledKernel, CompiledModule, LaunchConfig, compile

_NP_DTYPE = {"f32": np.float32, "f64": np.float64}


class VerificationError(VlpcError):
    """:func:`run` computed a result outside the error bound (``RunResult`` in ``.result``)."""

    exit_code = EXIT_VERIFY

    def __init__(self, message: str, result: RunResult):
        super().__init__(message)
        self.result = result


from vlpc.verify import Problem  # noqa: E402  (one definition, shared with vlpc run)


class MissingBatchError(VlpcError):
    """:func:`resolve`: a strided batched kernel whose batch count is dynamic got none (no
    ``batch``, no 3-D operand); ``kernel``: its name.  The command line names its own option."""

    def __init__(self, kernel: str):
        super().__init__(f"{kernel} takes its batch count at launch: pass batch= (vlpc run: --batch) or 3-D "
                         "operand arrays")
        self.kernel = kernel


@dataclass
class RunResult:
    """What :func:`run` did: the output, the launch, and the check against NumPy."""

    c: np.ndarray                      #: C after the launch, M x N (batched: batch x M x N)
    kernel: CompiledKernel
    problem: Problem
    launch: LaunchConfig               #: the main kernel's grid and block (the first of ``plan`` it computes)
    alpha: float
    beta: float
    device: str                        #: the device's description, e.g. ``emulator (gfx906)``
    stats: Any = None                  #: emulator ``LaunchStats`` (instruction counters), else None
    wall_time: float = 0.0             #: best launch wall time in seconds (emulator: not hardware time)
    max_abs_error: float | None = None  #: vs. the float64 reference of vlpc.verify (None when not verified)
    tolerance: float | None = None     #: the largest element-wise bound used (vlpc.verify.error_bound)
    verified: bool | None = None       #: True when checked and within the bound
    #: the worst element's |error| / bound (what the bound judged: <= 1 passes; inf: a wrong NaN/Inf)
    error_ratio: float | None = None
    verdict: Any = field(default=None, repr=False)  #: the :class:`vlpc.verify.Verdict`
    #: A, B, C0 as launched, as stored: (rows, ld), batched (batch, rows, ld); and the bias
    inputs: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    #: every launch that ran, in order (:meth:`CompiledKernel.plan`: copies, the main kernel or its
    #: row-narrow companion, the split-K reduce or scale kernel)
    plan: list = field(default_factory=list)


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


def _as_array(name: str, arr: Any, dtype: type) -> np.ndarray | None:
    """``arr`` as a NumPy array: a list or other sequence becomes one of the kernel's dtype."""
    if arr is None or isinstance(arr, np.ndarray):
        return arr
    try:
        return np.asarray(arr, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise VlpcError(f"operand {name} is a {type(arr).__name__}, not convertible to a NumPy "
                        f"{np.dtype(dtype).name} array ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None


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


def check_batch_option(kernel, batch: int | None) -> None:
    """``--batch`` (a dynamic batch count) is for a strided batched kernel: given for another
    kernel it is a one-line :class:`VlpcError` (``vlpc run``, ``vlpc report/bench --energy``)."""
    if batch is not None and kernel.launch_info.get("batch", 0) == 0:
        raise VlpcError(f"--batch {batch}: kernel {kernel.name} is not batched (give A, B and C as 3-D memrefs)")


def resolve_launch(kernel, m: int | None, n: int | None, k: int | None, batch: int | None = None,
                   a=None, b=None, c=None) -> Problem:
    """The :class:`vlpc.verify.Problem` of one launch of ``kernel``, as ``vlpc run``, ``vlpc bench``
    and ``vlpc report/bench --energy`` resolve it: :func:`resolve_problem` (static sizes from the
    IR, dynamic ones from ``m``, ``n``, ``k``), :func:`check_batch_option`, :func:`resolve`
    (leading dimensions, the batch count (``batch`` when it is dynamic) and batch strides: from
    the IR, else from the operand arrays ``a``, ``b``, ``c`` if given, else rows x leading
    dimension) and, for the f16/int8 dot kernels, :func:`round_leading_dimensions`
    (leading dimensions given at launch: whole dwords of K).  Raises :class:`VlpcError` naming a
    missing or contradicting size; :class:`vlpc.api.MissingBatchError` for a dynamic batch count
    without ``batch``."""
    p = resolve_problem(kernel.launch_info, m, n, k)
    check_batch_option(kernel, batch)
    p = resolve(kernel, a, b, c, p.m, p.n, p.k, batch)
    if str(kernel.launch_info.get("dtype", "f32")) in ("f16", "i8"):
        round_leading_dimensions(kernel, p, a is not None, b is not None)
    return p


def round_leading_dimensions(kern, p: Problem, a_given: bool, b_given: bool) -> None:
    """Leading dimensions given at launch and not by arrays: A's (and for NT, B's) rows rounded
    up to whole dwords (2 f16 / 4 int8 values), as the dot kernels need (``offset_errors``);
    ``p`` is changed in place.  In a strided batch whose batch stride is also given at launch
    (rows x leading dimension) the stride follows the rounded leading dimension; a batch
    stride the IR fixes keeps the leading dimension as it is."""
    from vlpc.verify import types_of

    ab, _, _ = types_of(kern)
    pack = 2 if ab == "f16" else 4
    li = kern.launch_info
    lay = kern.layout
    rows = {"a": p.m if lay[0] == "N" else p.k, "b": p.k if lay[1] == "N" else p.n}
    for x, given in (("a", a_given), ("b", b_given or lay[1] != "T")):
        ld = getattr(p, f"ld{x}")
        if li[f"static_ld{x}"] >= 0 or given or ld % pack == 0:
            continue
        if p.batch:
            if li.get(f"static_stride_{x}", -1) >= 0:
                continue
            setattr(p, f"stride_{x}", rows[x] * (-(-ld // pack) * pack))
        setattr(p, f"ld{x}", -(-ld // pack) * pack)


def resolve(kernel: CompiledKernel, a: np.ndarray | None, b: np.ndarray | None, c: np.ndarray | None,
            m: int | None, n: int | None, k: int | None, batch: int | None = None) -> Problem:
    """Sizes: static from the kernel, else given, else from the arrays' shapes (see the module
    docstring).  A batched kernel takes 3-D arrays (batch, rows, leading dimension), or a 2-D
    array for an operand shared by the batch (stride 0); batch strides are the IR's, else
    rows x leading dimension (0 for a 2-D operand)."""
    li = kernel.launch_info
    lay = kernel.layout
    batched = li.get("batch", 0) != 0
    # (rows, cols) of each stored operand in terms of the logical sizes.
    a_dims = ("m", "k") if lay[0] == "N" else ("k", "m")
    b_dims = ("k", "n") if lay[1] == "N" else ("n", "k")
    from_arrays: dict[str, int] = {}
    batches: list[int] = []
    for name, arr, dims in (("A", a, a_dims), ("B", b, b_dims), ("C", c, ("m", "n"))):
        if arr is not None:
            if arr.ndim == 3 and batched:
                batches.append(arr.shape[0])
            elif arr.ndim != 2:
                raise VlpcError(f"operand {name} has shape {arr.shape}: operands must be 2-D arrays"
                                + (" (or 3-D, batch x rows x columns, for a batched kernel)" if batched else
                                   f"; kernel {kernel.name} is not batched (give 3-D memrefs in the IR for a "
                                   "strided batch)"))
            from_arrays.setdefault(dims[0], arr.shape[-2])
            from_arrays.setdefault(dims[1], arr.shape[-1])
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
        lds[op] = static if static >= 0 else (arr.shape[-1] if arr is not None else cols[op])
    p = Problem(sizes["m"], sizes["n"], sizes["k"], lds["A"], lds["B"], lds["C"])
    if not batched:
        if batch not in (None, 0, 1):
            raise VlpcError(f"kernel {kernel.name} is not batched (batch={batch}): give A, B and C as 3-D "
                            "memrefs (batch, rows, columns) for a strided batch")
        return p
    static_batch = li["batch"]
    nb = static_batch if static_batch > 0 else batch
    if nb is None:
        nb = batches[0] if batches else None
    if nb is None:
        raise MissingBatchError(kernel.name)
    if batch is not None and batch != nb:
        raise VlpcError(f"batch={batch} contradicts the static batch count {nb} in the IR")
    for name, arr in (("A", a), ("B", b), ("C", c)):
        if arr is not None and arr.ndim == 3 and arr.shape[0] != nb:
            raise VlpcError(f"operand {name} holds {arr.shape[0]} matrices, the batch is {nb}")
    rows = {"A": a_dims[0], "B": b_dims[0], "C": "m"}
    p.batch = nb
    for op, arr in (("A", a), ("B", b), ("C", c)):
        static = li.get(f"static_stride_{op.lower()}", -1)
        if static >= 0:
            stride = static
        elif arr is not None and arr.ndim == 2 and op != "C":
            stride = 0  # one matrix for the whole batch
        else:
            stride = sizes[rows[op]] * lds[op]
        setattr(p, f"stride_{op.lower()}", stride)
    return p


def _vector(name: str, arr: np.ndarray | None, length: int, dtype: type, rng: np.random.Generator,
            row: bool = False, dot: bool = False) -> np.ndarray:
    """The ``bias`` vector (``row``: bias_row, length M, else bias_col, length N): ``arr`` as an
    array of ``dtype``, random (standard normal) when omitted.  ``dot``: the dot kernels' wording."""
    if arr is None:
        return rng.standard_normal(length).astype(dtype)
    arr = _as_array(name, arr, dtype)
    if arr.dtype != dtype or arr.shape != (length,):
        if dot:
            raise VlpcError(f"{name} must be a vector of {length} {np.dtype(dtype).name} values "
                            f"({'bias_row' if row else 'bias_col'}), got {arr.dtype} {arr.shape}")
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


def operand_buffers(layout: str, p: Problem, types: dict[str, str], arrays: dict[str, np.ndarray | None],
                    rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Flat, exactly sized host buffers of A, B and C (``types``: each one's element type, ``f32``,
    ``f64``, ``f16``, ``i8``, ``i32``): a given array as stored (its padding kept), a missing one
    random (floats standard normal, i8 uniform in [-128, 127], i32 uniform over its range);
    elements outside the matrices are :data:`vlpc.verify.PAD` (NaN for floats, a garbage pattern
    for integers), so a kernel that reads or writes past the matrices is caught."""
    from vlpc.verify import NP, PAD, geometries, pack

    same = len(set(types.values())) == 1  # the f32/f64 kernels: one element type
    out = {}
    for name, geom in geometries(layout, p).items():
        t = types[name]
        dtype = NP[t]
        arr = arrays.get(name)
        if arr is None:
            flat = np.full(geom.size, PAD[t], dtype)
            nb = 1 if geom.stride == 0 else geom.batches
            offs = geom.offsets()[:nb].reshape(-1)
            if t in ("i8", "i32"):
                lo, hi = (-128, 128) if t == "i8" else (-2**31, 2**31)
                flat[offs] = rng.integers(lo, hi, offs.size).astype(dtype)
            else:
                flat[offs] = rng.standard_normal(offs.size).astype(dtype)
        else:
            if arr.dtype != dtype:
                raise VlpcError(f"operand {name} has dtype {arr.dtype}, the kernel "
                                + (f"computes in {np.dtype(dtype)}" if same else f"takes {np.dtype(dtype).name}"))
            if arr.ndim == 2 and p.batch and geom.stride != 0:
                raise VlpcError(f"operand {name} is 2-D but the batch stride of {name} is {geom.stride}: "
                                "give a 3-D array (batch, rows, columns)")
            if arr.shape[-2] != geom.rows or arr.shape[-1] != geom.ld:
                raise VlpcError(f"operand {name} has shape {arr.shape}, the kernel expects "
                                f"{(geom.rows, geom.ld)} (rows x leading dimension, as stored)"
                                + (f" per matrix of the batch of {p.batch}" if p.batch else ""))
            flat = pack(name, arr, geom, dtype, fill=PAD[t])
        out[name] = flat
    return out


def stored_arrays(layout: str, p: Problem, flat: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The operands as stored, (rows, ld) or for a batch (batch, rows, ld), from flat buffers
    (the last row's padding, absent from an exactly sized buffer, reads as NaN)."""
    from vlpc.verify import geometries

    out = {}
    for name, geom in geometries(layout, p).items():
        full = (geom.batches - 1) * geom.stride + geom.rows * geom.ld
        buf = np.full(full, np.nan, flat[name].dtype)
        buf[:geom.size] = flat[name][:geom.size]
        isz = buf.itemsize
        arr = np.lib.stride_tricks.as_strided(buf, (geom.batches, geom.rows, geom.ld),
                                              (geom.stride * isz, geom.ld * isz, isz)).copy()
        out[name] = arr if p.batch else arr[0]
    return out


def _device_for(kern, device, waitcnt: str, strict: bool):
    """``device`` itself, or (a name) a device of the kernel's target made with ``waitcnt`` /
    ``strict``; contradicting options are a :class:`VlpcError`."""
    from vlpc.runtime import get_device

    dev_opts = {"target": kern.target_id} if kern.target_id else {}
    if waitcnt != "raise":
        if not isinstance(device, str):
            raise VlpcError("waitcnt= applies to a device vlpc.run makes: pass get_device('emulator', "
                            "waitcnt=...) as device instead")
        if strict:
            raise VlpcError("waitcnt='report' goes on past a missing s_waitcnt, strict=True stops at it: give one")
        dev_opts["waitcnt"] = waitcnt
    return get_device(device, **dev_opts, **({"strict": True} if strict else {})) if isinstance(device, str) else device


def run(module: str | Any, a: np.ndarray | None = None, b: np.ndarray | None = None,
        c: np.ndarray | None = None, *, bias: np.ndarray | None = None, residual: np.ndarray | None = None,
        m: int | None = None, n: int | None = None, k: int | None = None, batch: int | None = None,
        alpha: float | None = None, beta: float | None = None, device: str | Any = "emulator",
        target: str = "gfx906", kernel: str | None = None, seed: int = 0, verify: bool = True,
        iterations: int = 1, strict: bool = False, waitcnt: str = "raise", scales: tuple | None = None,
        **options: Any) -> RunResult:
    """Compile ``module`` (unless already compiled), run it on ``device`` and check C.

    ``module``: MLIR text, an xDSL ``ModuleOp``, an upstream MLIR module, a
    :class:`~vlpc.compiler.CompiledModule` or a :class:`~vlpc.compiler.CompiledKernel`.
    ``a``, ``b``, ``c``: NumPy arrays (or nested lists) as stored (random when omitted);
    ``m``, ``n``, ``k`` for dynamic sizes not implied by the arrays; ``bias`` (length M or N)
    for a kernel with a fused ``bias_row``/``bias_col`` epilogue (of A's element type; f32 for
    an int8 kernel that dequantizes); ``residual`` (M x N, f16 or f32 as compiled; random when
    omitted) for a quantized-weight kernel with a ``residual(...)`` operand (docs/quantized.md).
    f16 and int8 kernels (the dot
    kernels) take A and B of their type (C f32/f16/i32 as compiled), f32 alpha/beta (i32 for
    int8 -> i32) and, when they dequantize, ``scales=(scale_row, scale_col)`` (random when
    omitted); their reference is the same, their bound :func:`vlpc.verify.dot_error_bound`.  A strided batched kernel
    takes 3-D arrays (batch, rows, leading dimension), a 2-D array for an operand every
    product shares (batch stride 0), and ``batch`` when the count is dynamic; ``r.c`` is
    then (batch, M, N).  Buffers are sized exactly to the data (the last row ends at its
    last element); elements outside the matrices hold the arrays' padding or NaN.
    ``device``: ``"emulator"`` (default), ``"hip"``, ``"auto"`` or a
    :class:`~vlpc.runtime.Device`; ``strict`` makes the emulator report reads of
    uninitialised registers; ``waitcnt="report"`` makes it warn
    (``WaitcntViolationWarning``) at a missing ``s_waitcnt`` and go on with the loaded value
    instead of raising (a device made here; not with ``strict``).  ``options`` go to :func:`vlpc.compile`.  With ``verify``
    (default) C is checked against the float64 reference and error bound of
    :mod:`vlpc.verify` (BLAS: alpha = 0 reads neither A nor B, beta = 0 does not read C;
    Higham's gamma_(K+2) bound plus the epilogue's and the store's roundings), and the
    elements outside the matrices must keep their bits; a failure raises
    :class:`VerificationError`.  The other errors are :class:`~vlpc.errors.VlpcError`
    (bad sizes, options, IR) and :class:`~vlpc.errors.DeviceError` (device faults).
    """
    from vlpc.verify import NP, check_before_allocating, scalar_type, types_of

    if isinstance(module, CompiledKernel):
        kern = module
    else:
        compiled = module if isinstance(module, CompiledModule) else compile(module, target, **options)
        kern = compiled.kernel(kernel)
    if not kern.code_object:
        raise VlpcError(f"kernel {kern.name} carries no code object (compile it with vlpc.compile)")
    ab, ct, _ = types_of(kern)
    dot = ab not in _NP_DTYPE  # the f16/int8 dot kernels (passes/isel/dot.py): C and scalars typed apart
    if kern.launch_info.get("b_format"):  # f16 x quantized weights (vlpc/quant_run.py): M and N from the operands
        p = _quant_problem(kern, a, b, c, m, n)
    else:
        if scales is not None and not dot:
            raise VlpcError(f"kernel {kern.name} computes {ab} products: scales are for int8 kernels that "
                            "dequantize (int8 x int8 -> f32/f16)")
        types = {"A": ab, "B": ab, "C": ct}
        a, b, c = (_as_array(name, x, NP[types[name]]) for name, x in (("A", a), ("B", b), ("C", c)))
        p = resolve(kern, a, b, c, m, n, k, batch)
        if dot:  # leading dimensions given at launch: whole dwords of K
            round_leading_dimensions(kern, p, a is not None, b is not None)
        kern.check_sizes(p.m, p.n, p.k)
        check_leading_dimensions(kern.layout, p)
        check_before_allocating(kern, p)  # 32-bit offsets etc. before operands are made or uploaded
    launch = kern.launch(p.m, p.n, p.k, p.batch or None)
    st = scalar_type(kern)
    al, be = _scalar("alpha", alpha, kern.alpha, 1.0), _scalar("beta", beta, kern.beta, 0.0)
    if st is np.int32:
        if al != int(al) or be != int(be) or not all(-2**31 <= x < 2**31 for x in (al, be)):
            raise VlpcError(f"alpha={al} beta={be}: kernel {kern.name} (int8 -> i32) takes 32-bit integer alpha "
                            "and beta")
        al, be = int(al), int(be)
    dev = _device_for(kern, device, waitcnt, strict)
    cm, stats, wall, v, inputs = launch_and_check(kern, a, b, c, p, al, be, dev, seed=seed, verify=verify,
                                                  iterations=iterations, scales=scales, bias=bias, stored=not dot,
                                                  residual=residual)
    return _checked_result(kern, p, launch, al, be, dev, cm if p.batch else cm[0], stats, wall, v, inputs)


def launch_and_check(kern, a, b, c, p: Problem, alpha, beta, device, *, seed: int = 0, verify: bool = True,
                     iterations: int = 1, scales: tuple | None = None, bias: np.ndarray | None = None,
                     stored: bool = False, residual: np.ndarray | None = None):
    """Launch ``kern`` (f32, f64, f16 or int8; or f16 x quantized weights, whose operands and verdict
    are vlpc/quant_run.py's ``quant_operands`` and ``quant_verdict``; sizes resolved in ``p``, alpha and beta of the
    kernel's :func:`vlpc.verify.scalar_type`) on ``device`` (a Device) and check C with
    :func:`vlpc.verify.check`.  ``a``, ``b``, ``c``: arrays as stored, or None (random:
    :func:`operand_buffers`); ``scales`` (W8A8, random when omitted) and ``bias`` (random when
    omitted) when the kernel takes them.  Returns ``(C (batches, M, N), the last launch's
    statistics, the best wall time in seconds, the verdict or None, the operands as launched)``:
    flat buffers, or with ``stored`` the arrays as stored (:func:`stored_arrays`).  Raises a
    one-line :class:`VlpcError` for operands, scales or bias of the wrong type or shape."""
    from vlpc.verify import NP, check, geometries, launch_and_read, scalar_type, types_of

    rng = np.random.default_rng(seed)
    if kern.launch_info.get("b_format"):  # B a quantized tensor's bytes (N x K layout, vlpc/quant_run.py)
        from vlpc.quant_run import quant_operands, quant_verdict

        if scales is not None:
            raise VlpcError(f"kernel {kern.name} ({kern.launch_info['b_format']} weights) takes no scales: its "
                            "blocks carry their own")
        host = quant_operands(kern, a, b, c, p, rng, bias)
        _add_residual(host, kern, p, residual, rng)
        out, stats, walls = launch_and_read(kern, device, host, p, alpha, beta,
                                            NP[str(kern.launch_info.get("c_dtype", "f32"))], iterations,
                                            scalar=np.float32)
        v = quant_verdict(kern, p, host, out, alpha, beta) if verify else None
        return np.ascontiguousarray(geometries("NT", p)["C"].matrices(out)), stats, min(walls), v, host
    ab, ct, dequant = types_of(kern)
    flat = operand_buffers(kern.layout, p, {"A": ab, "B": ab, "C": ct}, {"A": a, "B": b, "C": c}, rng)
    host = dict(flat)
    _add_residual(host, kern, p, residual, rng)
    if dequant:
        if scales is None:
            scales = (rng.uniform(1e-3, 2e-2, p.m).astype(np.float32), rng.uniform(1e-3, 2e-2, p.n).astype(np.float32))
        scales = tuple(np.ascontiguousarray(x, np.float32) for x in scales)
        if scales[0].shape != (p.m,) or scales[1].shape != (p.n,):
            raise VlpcError(f"scales must be f32 vectors of M = {p.m} and N = {p.n} values, got shapes "
                            f"{scales[0].shape} and {scales[1].shape}")
        host["scale_row"], host["scale_col"] = scales
    elif scales is not None:
        raise VlpcError(f"kernel {kern.name} does not dequantize (int8 with f32/f16 C): do not pass scales")
    epi = tuple(x for x in str(kern.launch_info.get("epilogue", "")).split(",") if x)
    if any(x.startswith("bias") for x in epi):
        length = p.m if "bias_row" in epi else p.n
        # A's element type; f32 for a dequantized int8 product, as the scales
        bias = _vector("bias", bias, length, np.float32 if dequant else NP[ab], rng, "bias_row" in epi,
                       ab not in _NP_DTYPE)
        host["bias"] = bias
    elif bias is not None:
        raise VlpcError(f"kernel {kern.name} has no bias epilogue; do not pass bias")
    out, stats, walls = launch_and_read(kern, device, host, p, alpha, beta, NP[ct], iterations,
                                        scalar=scalar_type(kern))
    cm = np.ascontiguousarray(geometries(kern.layout, p)["C"].matrices(out))
    inputs = stored_arrays(kern.layout, p, flat) if stored else {name: flat[name] for name in "ABC"}
    for name in ("scale_row", "scale_col", "bias", "residual"):
        if name in host:
            inputs[name] = host[name]
    v = None
    if verify:
        expected = None
        if "residual" in host:  # D = epilogue(...) + R: vlpc.verify's reference and bound in f32, then + R
            from vlpc.verify import op_matrices, reference_and_bound, with_residual

            g = geometries(kern.layout, p)
            op_a, op_b = op_matrices(kern.layout, p, flat["A"], flat["B"])
            expected = with_residual(reference_and_bound(op_a, op_b, g["C"].matrices(flat["C"]), alpha, beta, ab,
                                                         "f32", pieces=kern.split_k * kern.local_split,
                                                         epilogue=epi, bias=bias),
                                     g["C"].matrices(host["residual"]), ct)
        v = check(kern.layout, p, ab, flat["A"], flat["B"], flat["C"], out, alpha, beta, epi, bias, c_type=ct,
                  pieces=kern.split_k * kern.local_split, scales=scales if dequant else None, expected=expected)
    return cm, stats, min(walls), v, inputs


def _add_residual(host: dict, kern, p: Problem, residual: np.ndarray | None, rng: np.random.Generator) -> None:
    """``host["residual"]`` for a kernel with a residual operand R (launch fact ``residual``: f16 or
    f32): R laid out as C (M x ldc, the gaps NaN), ``residual`` (M x N, or M x ldc with C's gaps) or
    random values; a one-line :class:`VlpcError` for another type or shape, or an R given to a kernel
    without the operand."""
    from vlpc.verify import NP, geometries, pack

    rt = kern.launch_info.get("residual")
    if not rt:
        if residual is not None:
            raise VlpcError(f"kernel {kern.name} has no residual operand; do not pass residual")
        return
    rt = str(rt)
    g = geometries(kern.layout, p)["C"]
    if residual is None:
        flat = np.full(g.size, np.nan, NP[rt])
        flat[g.offsets().reshape(-1)] = rng.standard_normal(p.m * p.n).astype(NP[rt])
    else:
        residual = np.asarray(residual)
        if residual.dtype != NP[rt] or residual.ndim != 2 or residual.shape[0] != p.m or \
                residual.shape[1] not in (p.n, p.ldc):
            raise VlpcError(f"residual must be {rt} of shape ({p.m}, {p.n}) (or ({p.m}, {p.ldc}) with C's row "
                            f"gaps), got {residual.dtype} {residual.shape}")
        flat = pack("C", residual, g, NP[rt], fill=np.nan)
    host["residual"] = flat


def _quant_problem(kern, a, b, c, m, n) -> Problem:
    """The problem of a quantized-weight kernel's :func:`run`: ``a`` f16 (M x lda), ``b`` the tensor's
    bytes (uint8, N x row bytes; a SwiGLU's 2N rows), ``c`` f32/f16; M and N at launch from the arrays
    or ``m``, ``n``; ldb in bytes (the row bytes unless static)."""
    from vlpc.quant_run import row_bytes

    li = kern.launch_info
    m_arr, n_arr = (a if a is not None else c), b  # M and N at launch: from the operands if not given
    b_rows = 2 if "swiglu" in str(li.get("epilogue", "")) else 1  # (swiglu: B holds the gate's N rows, then up's)
    p = resolve_problem(li, m if m is not None or m_arr is None else np.asarray(m_arr).shape[0],
                        n if n is not None or n_arr is None else np.asarray(n_arr).shape[0] // b_rows, None)
    if li["static_ldb"] < 0:  # (resolve_problem's default is K: B's rows are bytes here)
        p.ldb = row_bytes(str(li["b_format"]), p.k)
    kern.check_sizes(p.m, p.n, p.k)
    return p


def _checked_result(kern, p, launch, al, be, dev, c, stats, wall, v, inputs) -> RunResult:
    """The :class:`RunResult` of a dot or quantized kernel's launch with its verdict ``v`` (None: not
    checked); a failed check raises :class:`VerificationError` carrying it."""
    result = RunResult(c, kern, p, launch, al, be, dev.describe(),
                       stats if getattr(dev, "name", "") == "emulator" else None, wall, inputs=inputs,
                       plan=kern.plan(p.m, p.n, p.k, p.batch or None))
    if v is None:
        return result
    result.max_abs_error, result.tolerance, result.error_ratio = v.max_abs_error, v.max_bound, v.worst
    result.verified, result.verdict = v.ok, v
    if not v.ok:
        raise VerificationError(f"{kern.name}: verification failed: {v.failure()}", result)
    return result


__all__ = ["MissingBatchError", "Problem", "RunResult", "VerificationError", "check_leading_dimensions", "launch_and_check",
           "operand_buffers", "resolve", "round_leading_dimensions", "run", "stored_shapes"]
