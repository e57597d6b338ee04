"""The compiler driver: parse, verify, run the pass pipeline, print, assemble and link.

Public API (also re-exported from :mod:`vlpc`):

* :func:`parse` — MLIR text -> ``ModuleOp`` with ``file:line:col`` locations on ops.
* :func:`pipeline` — the list of configured passes (xDSL ``ModulePass`` objects) for
  a target and options; another compiler can insert them into its own pipeline.
* :func:`compile` — module or text -> :class:`CompiledModule` (assembly, code
  object bytes, metadata, launch configuration per kernel).  The input may use
  ``gemm.matmul`` or linalg matrix products (raised by ``convert-linalg-to-gemm``,
  the first pass), or be a module of the upstream MLIR Python bindings.

Options of :func:`compile` / :func:`pipeline` (all optional):
``macro_tile=(64, 256)``, ``micro_tile=(64, 1)``, ``k_step=16`` (the f32 defaults; f64:
``(32, 256)``, ``(32, 1)``, ``8``),
``waves_per_simd`` (sets the VGPR budget; default: the strategy's, 3 for sqc, 2 for
lds), ``strategy="sqc"`` (or ``"lds"``, the legacy LDS-tiled kernel), and split-K:
``split_k="auto"`` (or S >= 1, K slices across workgroups; auto chooses from the
shape and ``cus``), ``split_mode="workspace"`` (or ``"atomic"``), ``local_split=1``
(K slices across the wavefront groups of a workgroup), ``cus=None`` (compute units
the plan is for; None: 60, gfx906's MI50).  See ``passes/gemm_split_k.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin, FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.dialects.func import Func
from xdsl.dialects.memref import MemRef
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import ParseError, VerifyException

import vlpc._xdsl_fixes  # noqa: F401  (xDSL lexer hang on unterminated strings)
from vlpc.dialects.gcn import GCN, KernelOp, metadata_json
from vlpc.dialects.gcn_asm import print_assembly
from vlpc.dialects.gemm import Gemm
from vlpc.dialects.linalg import Linalg
from vlpc.errors import EXIT_INTERNAL, DiagnosticError, VlpcError
from vlpc.passes import get_all_passes
from vlpc.passes.gcn_emit_descriptor import kernel_resources
from vlpc.targets import TargetError, TargetId

#: The default pipeline, in order (``vlpc compile --print-pipeline`` shows it with options).
PASS_ORDER = (
    "convert-linalg-to-gemm",  # a no-op on gemm-dialect input
    "gemm-tile", "gemm-map-workgroups", "gemm-map-subgroups", "gemm-split-k",
    "convert-gemm-to-gcn", "gcn-allocate-registers", "gcn-insert-waitcnt",
    "gcn-insert-hazard-nops", "gcn-emit-descriptor",
)


def print_ir(module: Operation) -> str:
    """The module as MLIR text (xDSL's printer)."""
    import io

    from xdsl.printer import Printer

    buf = io.StringIO()
    Printer(stream=buf).print_op(module)
    return buf.getvalue() + "\n"


def make_context() -> Context:
    """An xDSL context with the dialects vlpc reads and writes."""
    ctx = Context()
    for d in (Builtin, Func, Arith, MemRef, Linalg, Gemm, GCN):
        ctx.load_dialect(d)
    return ctx


class _OpParseError(ParseError):
    """A parse error already located at the operation it concerns."""


class _LocatingParser(Parser):
    """xDSL's parser, recording each operation's ``file:line:col`` as its location."""

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        loc = span.get_location()
        try:
            op = super().parse_operation()
        except _OpParseError:
            raise
        except ParseError as e:
            if "is not registered" in e.msg and e.span.start > span.start:
                raise _OpParseError(span, e.msg) from None  # point at the operation, not past it
            raise
        except (RecursionError, MemoryError):
            raise
        except Exception as e:  # xDSL's custom op parsers can fail on malformed input without a ParseError
            detail = str(e).splitlines()[0] if str(e) else ""
            raise _OpParseError(span, f"malformed operation: xDSL's parser failed "
                                      f"({type(e).__name__}{': ' + detail if detail else ''})") from None
        op.location = FileLineColLoc(StringAttr(self.lexer.input.name), IntAttr(loc.line), IntAttr(loc.col))
        return op


def _parse_error(e: ParseError, filename: str) -> DiagnosticError:
    loc = e.span.get_location()
    context = e.span.print_with_context().rstrip("\n")
    # xDSL's context starts with its own "file:line:col" line; keep the source lines.
    context_lines = context.splitlines()[1:]
    return DiagnosticError(e.msg, filename, loc.line, loc.col, "\n".join(context_lines) or None)


def parse(text: str, filename: str = "<input>", ctx: Context | None = None) -> ModuleOp:
    """Parse MLIR text into a verified module; errors are ``file:line:col`` diagnostics."""
    ctx = ctx or make_context()
    try:
        module = _LocatingParser(ctx, text, filename).parse_module()
    except ParseError as e:
        raise _parse_error(e, filename) from None
    except RecursionError:
        raise DiagnosticError("the input is nested too deeply to parse", filename) from None
    verify(module, filename)
    return module


def verify(module: ModuleOp, filename: str = "<input>") -> None:
    """Verify ``module``; the first failing operation is reported at its location."""
    try:
        module.verify()
    except VerifyException as e:
        for op in module.walk():
            try:
                op.verify(verify_nested_ops=False)
            except VerifyException as inner:
                raise _located(op, str(inner).splitlines()[0], filename) from None
        raise DiagnosticError(str(e).splitlines()[0], filename) from None


def _located(op: Operation, message: str, filename: str) -> DiagnosticError:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return DiagnosticError(message, loc.filename.data, loc.line.data, loc.column.data)
    return DiagnosticError(f"{message} (in {op.name})", filename)


#: The occupancy each strategy's VGPR budget is chosen for when ``waves_per_simd`` is not
#: given: sqc fits 84 VGPRs (3 waves per SIMD, as the seed); the legacy LDS kernel's 64
#: accumulators and double-buffered 8+8 fragments need more than 84, so 128 (2 waves).
DEFAULT_WAVES_PER_SIMD = {"sqc": 3, "lds": 2}


@dataclass
class Options:
    """Code generation options (see the module docstring)."""

    macro_tile: tuple[int, int] | None = None  # None: 64x256 for f32, 32x256 for f64
    micro_tile: tuple[int, int] | None = None  # None: 64x1 for f32, 32x1 for f64
    k_step: int | None = None  # None: 16 for f32, 8 for f64
    waves_per_simd: int | None = None  # None: DEFAULT_WAVES_PER_SIMD[strategy]
    split_k: int | str = "auto"
    strategy: str = "sqc"
    split_mode: str = "workspace"
    local_split: int = 1
    cus: int | None = None

    @staticmethod
    def from_kwargs(kwargs: dict) -> Options:
        known = {f for f in Options.__dataclass_fields__}
        unknown = set(kwargs) - known
        if unknown:
            raise VlpcError(f"unknown option(s): {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")
        return Options(**kwargs)


def pipeline(target: str = "gfx906", *, linalg: bool = True, **options) -> list[ModulePass]:
    """The configured passes of the default pipeline, in order.

    ``target`` is a target id (``gfx906``, ``gfx906:sramecc+``...).  ``linalg=False``
    leaves out the first pass, ``convert-linalg-to-gemm`` (for a pipeline whose input
    is already in the gemm dialect).  Raises :class:`~vlpc.errors.VlpcError` for
    unknown targets or options.  Each pass is an xDSL ``ModulePass`` (``p.name``,
    ``p.pipeline_pass_spec()``, ``p.apply(ctx, module)``), so another compiler can
    insert them into its own ``PassPipeline``; :func:`pipeline_spec` gives the text form.

    >>> [p.name for p in pipeline("gfx906")][:3]
    ['convert-linalg-to-gemm', 'gemm-tile', 'gemm-map-workgroups']
    >>> passes = pipeline("gfx906", macro_tile=(64, 128))
    >>> dict(pipeline_options(passes))["gemm-tile"]["macro_n"]
    128
    >>> pipeline_spec(passes).split(",")[1].startswith("gemm-tile{")
    True
    """
    try:
        tid = TargetId.parse(target)
    except TargetError as e:
        raise VlpcError(str(e)) from None
    o = Options.from_kwargs(options)
    for name in ("local_split", "cus"):
        value = getattr(o, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise VlpcError(f"{name} must be a positive integer, got {value!r}")
    if o.split_mode not in ("workspace", "atomic"):
        raise VlpcError(f"split_mode must be 'workspace' or 'atomic', got {o.split_mode!r}")
    passes = get_all_passes()
    proc = tid.target.name
    cfg: dict[str, dict] = {
        "convert-linalg-to-gemm": {},
        "gemm-tile": dict(macro_m=o.macro_tile[0] if o.macro_tile else 0,
                          macro_n=o.macro_tile[1] if o.macro_tile else 0,
                          micro_m=o.micro_tile[0] if o.micro_tile else 0,
                          micro_n=o.micro_tile[1] if o.micro_tile else 1, k_step=o.k_step or 0),
        "gemm-map-workgroups": dict(target=proc),
        "gemm-map-subgroups": dict(target=proc),
        "gemm-split-k": dict(split_k=_split_k_option(o.split_k, o.strategy), mode=o.split_mode,
                             local_split=o.local_split, cus=o.cus or 0, target=proc),
        "convert-gemm-to-gcn": dict(strategy=o.strategy, target=proc),
        "gcn-allocate-registers": dict(waves_per_simd=(o.waves_per_simd if o.waves_per_simd is not None
                                                  else DEFAULT_WAVES_PER_SIMD.get(o.strategy, 3)),
                                       target=proc),
        "gcn-insert-waitcnt": dict(target=proc),
        "gcn-insert-hazard-nops": dict(target=proc),
        "gcn-emit-descriptor": dict(target=str(tid)),
    }
    return [passes[name]()(**cfg[name]) for name in PASS_ORDER if linalg or name != "convert-linalg-to-gemm"]


def _split_k_option(value: int | str, strategy: str) -> int:
    """``split_k`` as gemm-split-k's option: "auto" is 0 (the lds strategy is never split)."""
    if value == "auto":
        return 0 if strategy == "sqc" else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise VlpcError(f"split_k must be 'auto' or a positive integer, got {value!r}")
    return value


def pipeline_spec(passes: Sequence[ModulePass], include_default: bool = False) -> str:
    """The textual pipeline (``name{opt=val ...},...``) ``vlpc opt -p`` and ``xdsl-opt -p`` accept
    (options equal to their defaults are left out unless ``include_default``)."""
    return ",".join(str(p.pipeline_pass_spec(include_default=include_default)) for p in passes)


def pipeline_options(passes: Sequence[ModulePass]) -> list[tuple[str, dict]]:
    """Each pass's name and options (every option, as a dict), in order."""
    import dataclasses

    return [(p.name, {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}) for p in passes]


@dataclass
class LaunchConfig:
    """How the host launches a kernel: ``grid`` in workgroups, ``block`` in work-items."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]


@dataclass
class PlanStep:
    """One launch of a kernel plan: the kernel's name, its grid (workgroups) and block (work-items)."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]


@dataclass
class CompiledKernel:
    """One kernel of a compiled module.

    ``launch(m, n, k)`` gives the grid and workgroup size for a problem (sizes in
    elements); it raises :class:`VlpcError` for sizes the kernel cannot handle.

    M given at launch below the macro tile's M: the sqc kernel moves its last row tile
    up to end at row M, which cannot work when the matrix is shorter than one tile, so
    ``convert-gemm-to-gcn`` also builds row-narrow companions ``<name>_rows8`` (an 8 x
    macro_n tile) and ``<name>_rows1`` (one row), listed in the launch info's
    ``small_m`` (role ``rows``; those with fewer rows than the macro tile).  For such
    an M, :meth:`plan` is the companion with the most rows <= M, alone and unsplit (it
    replaces a split-K plan as well: a short matrix gains nothing from slicing K), and
    :meth:`launch` gives its grid; :meth:`rows_kernel` says which one runs.
    """

    name: str
    metadata: dict
    launch_info: dict
    vgprs: int
    sgprs: int
    #: The assembly text of the module the kernel is in (``.s``).
    asm: str = field(default="", repr=False)
    #: The code object (ELF ``.hsaco``) bytes holding the kernel.
    code_object: bytes = field(default=b"", repr=False)
    #: The full target id the code object is for, e.g. ``gfx906:sramecc+:xnack-``.
    target_id: str = ""
    #: The other kernels of the plan, by name: of a split-K plan (``<name>_reduce`` or
    #: ``<name>_scale``), and the row-narrow kernels for a small M (``<name>_rows<R>``).
    companions: dict[str, CompiledKernel] = field(default_factory=dict, repr=False)

    @property
    def split_k(self) -> int:
        """S, the K slices across workgroups (1: no split; see ``gemm-split-k``)."""
        return int(self.launch_info.get("split_k", 1))

    @property
    def split_mode(self) -> str:
        """``workspace``, ``atomic``, or ``none`` when K is not split across workgroups."""
        return str(self.launch_info.get("split_mode", "none"))

    @property
    def local_split(self) -> int:
        """L, the K slices across the wavefront groups of a workgroup."""
        return int(self.launch_info.get("local_split", 1))

    def workspace_bytes(self, m: int, ldc: int) -> int:
        """Bytes of workspace a launch needs: S x M x ldc elements in workspace mode, else 0
        (also 0 when a row-narrow companion computes a small M: it is not split)."""
        if self.split_mode != "workspace" or self.rows_kernel(m) is not None:
            return 0
        esz = 4 if self.launch_info.get("dtype", "f32") == "f32" else 8
        return self.split_k * m * ldc * esz

    def rows_kernel(self, m: int) -> CompiledKernel | None:
        """The row-narrow companion that computes a problem of M rows alone (M given at
        launch and below the macro tile's M): the one with the most rows <= M.  None when
        the plan of this kernel runs (M static or at least the macro tile's M, or no
        companion: strategy lds, a kernel compiled before they existed)."""
        li = self.launch_info
        if li.get("static_m", 0) >= 0 or m >= li["macro_m"]:
            return None
        fits = [self.companions[x] for x in str(li.get("small_m", "")).split(",")
                if x in self.companions and 0 < self.companions[x].launch_info["macro_m"] <= m]
        return max(fits, key=lambda c: c.launch_info["macro_m"], default=None)

    def plan(self, m: int, n: int, k: int, batch: int | None = None) -> list[PlanStep]:
        """The launches, in order, that compute an M x N x K problem: this kernel alone, or
        with the reduce kernel after it (workspace mode) or the scale kernel before it (atomic);
        for an M (given at launch) below the macro tile's M, the row-narrow companion alone
        (:meth:`rows_kernel`; unsplit, whatever the split-K plan)."""
        main = self.launch(m, n, k, batch)
        rows = self.rows_kernel(m)
        if rows is not None:
            return [PlanStep(rows.name, main.grid, main.block)]
        steps = []
        for name in str(self.launch_info.get("plan", self.name)).split(","):
            if name == self.name:
                steps.append(PlanStep(name, main.grid, main.block))
            else:
                other = self.companions[name]
                steps.append(PlanStep(name, (main.grid[0], main.grid[1], 1),
                                      (other.launch_info["workgroup_size"], 1, 1)))
        return steps

    def execute(self, device, code_object, args: Sequence, m: int, n: int, k: int, ldc: int | None = None,
                batch: int | None = None, *, buffer_sizes: dict | None = None, iterations: int = 1,
                warmup: int = 0):
        """Run the plan on ``device``: allocate the workspace (appended to ``args``), launch each
        kernel in order, free the workspace.  ``args`` are the kernel arguments without it.

        Returns the launch statistics of the plan: the emulator's counters summed over its
        kernels, or HIP event times summed per iteration (``iterations``/``warmup`` apply to
        the whole plan, so an atomic plan's scale kernel runs once per iteration)."""
        steps = self.plan(m, n, k, batch)
        ws_bytes = self.workspace_bytes(m, ldc if ldc is not None else n)
        ws = device.alloc(ws_bytes) if ws_bytes else None
        full = [*args, ws] if ws is not None else list(args)
        sizes = dict(buffer_sizes or {})
        if ws is not None and buffer_sizes is not None:
            sizes[len(full) - 1] = ws_bytes
        kw: dict = {"buffer_sizes": sizes} if buffer_sizes is not None else {}
        per_iteration = []
        try:
            for it in range(warmup + iterations):
                stats = [device.launch(code_object, s.kernel, grid=s.grid, block=s.block, args=full, **kw)
                         for s in steps]
                if it >= warmup:
                    per_iteration.append(stats)
        finally:
            if ws is not None:
                device.free(ws)
        return _combine_stats(per_iteration)

    @property
    def layout(self) -> str:
        """BLAS ``transa``/``transb`` letters of the compiled product (``"NT"``...)."""
        return str(self.launch_info.get("layout", "NT"))

    @property
    def alpha(self) -> float | None:
        """alpha when the IR fixed it (an ``arith.constant``, e.g. 1.0 from linalg), else None."""
        v = self.launch_info.get("alpha")
        return None if v is None else float(v)

    @property
    def beta(self) -> float | None:
        """beta when the IR fixed it (1.0 for linalg's accumulate, 0.0 after a zero fill), else None."""
        v = self.launch_info.get("beta")
        return None if v is None else float(v)

    @property
    def kernargs(self) -> list[dict]:
        """The kernel arguments (``.args`` of the metadata): name, offset, size, value kind."""
        return list(self.metadata.get(".args", []))

    def check_sizes(self, m: int, n: int, k: int, lda: int | None = None, ldb: int | None = None,
                    ldc: int | None = None) -> None:
        """Refuse sizes the kernel cannot compute (raises :class:`VlpcError`)."""
        li = self.launch_info
        for dim, val in (("M", m), ("N", n), ("K", k), ("lda", lda), ("ldb", ldb), ("ldc", ldc)):
            static = li[f"static_{dim.lower()}"]
            if val is not None and static >= 0 and val != static:
                raise VlpcError(f"{self.name} was compiled for {dim}={static}, got {dim}={val}")
        for dim, val in (("M", m), ("N", n), ("K", k)):
            if val <= 0:
                raise VlpcError(f"{dim}={val}: sizes must be at least 1")
        if li["static_m"] < 0 and m < li["macro_m"] and self.rows_kernel(m) is None:
            raise VlpcError(f"M={m} is smaller than the macro tile's {li['macro_m']} rows and kernel "
                            f"{self.name} has no row-narrow companion for it (strategy "
                            f"{li.get('strategy', 'sqc')}): compile with a static M or a smaller macro tile")
        if li.get("full_tiles_only"):  # a kernel without edge handling (strategy lds)
            for dim, val, tile in (("M", m, li["macro_m"]), ("N", n, li["macro_n"]), ("K", k, li["k_step"])):
                if val % tile:
                    raise VlpcError(f"{dim}={val} is not a multiple of {tile}: kernel {self.name} (strategy "
                                    f"{li.get('strategy', '?')}) computes whole tiles only")
        layout = li.get("layout", "NT")
        lda_min = k if layout[0] == "N" else m  # A stored M x K, or K x M
        ldb_min = n if layout[1] == "N" else k  # B stored K x N, or N x K
        for name, ld, minimum in (("lda", lda, lda_min), ("ldb", ldb, ldb_min), ("ldc", ldc, n)):
            if ld is not None and ld < minimum:
                raise VlpcError(f"{name}={ld} is smaller than {minimum}")

    def launch(self, m: int, n: int, k: int, batch: int | None = None) -> LaunchConfig:
        """Grid (workgroups) and block (work-items) for an M x N x K problem; a strided
        batch runs its ``batch`` products in grid z (workgroup id z is the batch index).

        This is the launch of this kernel, the main one of its plan (a split plan's reduce
        or scale kernel runs with the same grid x and y, see :meth:`plan`), except for an M
        below the macro tile's M given at launch: then the row-narrow companion that
        replaces the plan (:meth:`rows_kernel`), grid ``(ceil(N/macro_n), ceil(M/R), batch)``."""
        self.check_sizes(m, n, k)
        rows = self.rows_kernel(m)
        if rows is not None:
            return rows.launch(m, n, k, batch)
        li = self.launch_info
        static_batch = li.get("batch", 0)
        if static_batch == 0:
            if batch not in (None, 1):
                raise VlpcError(f"{self.name} is not a batched kernel (batch={batch}): give A, B and C as "
                                "3-D memrefs (batch, rows, columns) for a strided batch")
            z = 1
        else:
            if batch is None:
                if static_batch < 0:
                    raise VlpcError(f"{self.name} takes its batch count at launch: give batch=")
                batch = static_batch
            if static_batch > 0 and batch != static_batch:
                raise VlpcError(f"{self.name} was compiled for batch={static_batch}, got batch={batch}")
            if batch < 1:
                raise VlpcError(f"batch={batch}: the batch count must be at least 1")
            z = batch
        z *= self.split_k  # workgroup id z is the K slice of a split-K plan
        return LaunchConfig((-(-n // li["macro_n"]), -(-m // li["macro_m"]), z), (li["workgroup_size"], 1, 1))


def _combine_stats(per_iteration: list[list]):
    """One statistics object for a plan: emulator counters summed over the kernels of the
    last iteration, or HIP kernel times summed over the kernels of each iteration."""
    import copy

    last = per_iteration[-1]
    if len(last) == 1 and len(per_iteration) == 1:
        return last[0]
    if hasattr(last[0], "merge"):
        total = copy.deepcopy(last[0])
        for st in last[1:]:
            total.merge(st)
        return total
    if hasattr(last[0], "kernel_ms"):
        ms = [sum(sum(st.kernel_ms) for st in its) for its in per_iteration]
        total = copy.copy(last[0])
        total.kernel_name = "+".join(st.kernel_name for st in last)
        total.kernel_ms = ms
        total.wall_s = sum(st.wall_s for its in per_iteration for st in its)
        return total
    return last[-1]


@dataclass
class CompiledModule:
    """The result of :func:`compile`: assembly, code object and per-kernel information."""

    asm: str
    code_object: bytes
    target_id: str
    kernels: dict[str, CompiledKernel] = field(default_factory=dict)
    toolchain: str = ""

    def kernel(self, name: str | None = None) -> CompiledKernel:
        if name is None:
            if len(self.kernels) != 1:
                raise VlpcError(f"the module has {len(self.kernels)} kernels; name one of {', '.join(self.kernels)}")
            return next(iter(self.kernels.values()))
        try:
            return self.kernels[name]
        except KeyError:
            raise VlpcError(f"no kernel '{name}' (have: {', '.join(self.kernels)})") from None


def run_passes(module: ModuleOp, passes: Sequence[ModulePass], ctx: Context | None = None,
               after_each: Callable[[ModulePass, ModuleOp], None] | None = None) -> ModuleOp:
    """Apply ``passes`` in order, verifying after each; user errors keep their location."""
    ctx = ctx or make_context()
    for p in passes:
        try:
            p.apply(ctx, module)
        except VlpcError:
            raise
        except Exception as e:  # a bug in vlpc: say which pass
            raise InternalError(p.name, e) from e
        try:
            module.verify()
        except VerifyException as e:
            raise InternalError(p.name, e) from e
        if after_each is not None:
            after_each(p, module)
    return module


class InternalError(VlpcError):
    """A bug in vlpc (not a user mistake); carries the failing pass."""

    exit_code = EXIT_INTERNAL

    def __init__(self, pass_name: str, error: BaseException):
        self.pass_name = pass_name
        self.error = error
        super().__init__(f"internal error in pass '{pass_name}': {type(error).__name__}: "
                         f"{str(error).splitlines()[0] if str(error) else ''} -- this is a bug in vlpc; "
                         "please report it with the input file and command line")


def header_lines(module: ModuleOp, target: str) -> list[str]:
    from vlpc import __version__
    from vlpc.targets import get_target

    lines = [f"Generated by vlpc {__version__} for {target}"]
    t = get_target(target)
    for k in [o for o in module.walk() if isinstance(o, KernelOp)]:
        nv, ns, vcc = kernel_resources(k)
        meta = metadata_json(k)
        lds = meta.get(".group_segment_fixed_size", 0)
        occ = t.occupancy(nv, meta[".sgpr_count"], lds, meta[".max_flat_workgroup_size"])
        li = k.launch.data  # type: ignore[union-attr]
        lines.append(f"kernel {k.sym_name.data}: macro tile {li['macro_m'].value.data}x{li['macro_n'].value.data}, "
                     f"k-step {li['k_step'].value.data}, {meta['.max_flat_workgroup_size']} work-items per workgroup")
        lines.append(f"  VGPRs {nv}, SGPRs {ns} (+{meta['.sgpr_count'] - ns} reserved), LDS {lds} bytes; occupancy {occ}")
    return lines


def compile(module_or_text: ModuleOp | str, target: str = "gfx906", *, filename: str = "<input>",
            toolchain=None, **options) -> CompiledModule:
    """Compile a gemm-dialect or linalg module (or its text) into a code object.

    ``module_or_text`` is MLIR text, an xDSL ``ModuleOp``, or a module of the
    upstream MLIR Python bindings (``iree.compiler.ir`` / ``mlir.ir``).  ``options``
    are those of :func:`pipeline`.

    Returns a :class:`CompiledModule`.  Raises :class:`~vlpc.errors.DiagnosticError`
    for bad IR (``file:line:col``), :class:`~vlpc.errors.VlpcError` for bad options,
    :class:`~vlpc.errors.AssemblerError` if LLVM rejects the output (a vlpc bug).
    """
    from vlpc.runtime.toolchain import find_toolchain

    ctx = make_context()
    if not isinstance(module_or_text, str | ModuleOp):
        from vlpc.interop import from_upstream
        module_or_text = from_upstream(module_or_text)
    module = parse(module_or_text, filename, ctx) if isinstance(module_or_text, str) else module_or_text
    passes = pipeline(target, **options)
    run_passes(module, passes, ctx)
    asm = print_assembly(module, target, header_lines(module, TargetId.parse(target).target.name))
    tc = toolchain or find_toolchain()
    code = tc.link(tc.assemble(asm, TargetId.parse(target), filename))
    result = CompiledModule(asm, code, str(TargetId.parse(target)), toolchain=tc.describe())
    companions: dict[str, CompiledKernel] = {}
    for k in [o for o in module.walk() if isinstance(o, KernelOp)]:
        nv, ns, _ = kernel_resources(k)
        li = {key: (a.value.data if hasattr(a, "value") else a.data) for key, a in k.launch.data.items()}  # type: ignore[union-attr]
        meta = metadata_json(k)
        ck = CompiledKernel(k.sym_name.data, meta, li, nv, meta[".sgpr_count"], asm, code, result.target_id)
        if "role" in li:  # a companion (split-K plan, small M): reached through its main kernel
            companions[k.sym_name.data] = ck
        else:
            result.kernels[k.sym_name.data] = ck
    for ck in result.kernels.values():
        names = [*str(ck.launch_info.get("plan", ck.name)).split(","),
                 *str(ck.launch_info.get("small_m", "")).split(",")]
        for name in names:
            if name and name != ck.name:
                ck.companions[name] = companions[name]
    return result

