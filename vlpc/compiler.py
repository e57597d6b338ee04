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
``macro_tile`` (default: 32 rows for f32, 16 for f64, the macro tile N of 64, 128 or 256
chosen by modeled time; ``passes/gemm_tile.py``), ``micro_tile`` (default: the macro tile's
rows x 1), ``k_step=16`` (f32; f64: ``8``), ``schedule`` (``"default"``, ``"cover"`` or
``"seed"``: the A schedule of ``convert-gemm-to-gcn``), ``gpu`` (the board the automatic
plan is modeled on: ``"mi50"`` (default), ``"mi60"``),
``waves_per_simd`` (sets the VGPR budget; default: the strategy's, automatic for sqc, 2 for
lds), ``strategy="sqc"`` (or ``"lds"``, the legacy LDS-tiled kernel), and split-K:
``split_k="auto"`` (or S >= 1, K slices across workgroups; auto chooses from the
shape and ``cus``), ``split_mode="workspace"`` (or ``"atomic"``), ``local_split=1``
(K slices across the wavefront groups of a workgroup), ``cus=None`` (compute units
the plan is for; None: 60, gfx906's MI50).  See ``passes/gemm_split_k.py``.
``wg_group`` (None: automatic; 1: the hardware's row-major workgroup order; G a power of two:
the grouped order of G tile rows, ``passes/gemm_tile.py``, docs/kernels.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.dialects.func import Func
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span

import vlpc._xdsl_fixes  # noqa: F401  (xDSL lexer hang on unterminated strings)
from vlpc.dialects.gcn import GCN, KernelOp, kind_and_width, metadata_json
from vlpc.dialects.gcn_asm import print_assembly
from vlpc.dialects.gemm import Gemm
from vlpc.cache import open_cache
from vlpc.errors import EXIT_INTERNAL, DiagnosticError, VlpcError, WorkgroupFitError
# The compiled kernel's launch planning and execution live in vlpc.kernel; importable from here too.
from vlpc.gc_pause import paused_gc
from vlpc.kernel import CompiledKernel, CompiledModule, LaunchConfig, PlanStep, _combine_stats  # noqa: F401
# Options and cache records need no xDSL (a cache hit imports neither it nor a pass); importable from here too.
from vlpc.options import Options, cache_key, module_from_record, parse_tile  # noqa: F401
from vlpc.passes import get_all_passes
from vlpc.passes.common import kernels
from vlpc.passes.gcn_emit_descriptor import kernel_resources
from vlpc.targets import TargetError, TargetId, get_target
from vlpc.tunedb import lookup_enabled, open_default, tuned_options
from vlpc.version import __version__

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


#: How many distinct signatures :func:`_remember_constraint_checks` keeps per operation class.
_CHECKED_LIMIT = 1 << 16


def _remember_constraint_checks(dialect) -> None:
    """Check each distinct signature of an operation's IRDL constraints once per process.

    xDSL's generated ``verify_`` checks an operation's IRDL definition (``OpDef.verify``:
    operand and result counts and type constraints, properties, attributes, traits) and then
    its own ``verify_``.  For an operation class without regions or successors whose traits
    check nothing, the definition's verdict is a function of the class, the operand and
    result types, the properties and the attributes (attributes are immutable values), so a
    signature that passed once passes again (a register type counts by its kind and width,
    ``gcn.kind_and_width``: no constraint names registers, and allocated signatures
    would otherwise all differ): this wraps each such ``OpDef.verify`` to skip a
    signature already accepted (a kernel holds thousands of ``gcn.subreg`` and
    ``v_fma_f32`` ops of a few signatures; the check was half of the final verification).
    Failures are never remembered (they raise every time, with xDSL's message); the
    structural checks of ``Operation.verify`` (terminators, erased operands, nesting) and
    each op's own ``verify_`` still run for every operation."""
    from xdsl.traits import OpTrait

    for cls in dialect.operations:
        od = cls.get_irdl_definition()
        if (od.regions or od.successors or "verify" in vars(od)
                or any(type(t).verify is not OpTrait.verify for t in od.traits)):
            continue
        check = od.verify
        accepted: set = set()

        def verify(op, check=check, accepted=accepted, sig=kind_and_width) -> None:
            operands = getattr(op, "_operands", None)  # (the pinned xDSL's tuple; else its view)
            try:
                key = (type(op), tuple([sig(v.type) for v in (op.operands if operands is None else operands)]),
                       tuple([sig(r.type) for r in op.results]), tuple(op.properties.items()), tuple(op.attributes.items()))
                if key in accepted:
                    return
            except TypeError:  # an unhashable attribute: check it every time
                check(op)
                return
            check(op)
            if len(accepted) < _CHECKED_LIMIT:
                accepted.add(key)

        od.verify = verify


_remember_constraint_checks(GCN)
_remember_constraint_checks(Gemm)


def _faster_isolated_from_above() -> None:
    """xDSL's ``IsolatedFromAbove`` check (``builtin.module`` has it) asks, for every operand
    of every operation inside, whether the operand's owner lies inside by walking up its
    parents: a quarter of verifying a compiled module.  This replaces it with the same check
    (same traversal, same first offender, same message) that first looks the operand up in
    the set of values defined inside and only asks xDSL's question for those that are not."""
    from xdsl.traits import IsolatedFromAbove
    from xdsl.utils.exceptions import VerifyException as _VerifyException

    if getattr(IsolatedFromAbove.verify, "_vlpc", False):
        return

    def verify(self, op: Operation) -> None:
        # the values defined at this level: not inside a nested IsolatedFromAbove operation, whose
        # operations the loop below leaves to that operation's own check (an operand outside the
        # set still gets xDSL's question, so the verdict is the same; a compiled module's kernels
        # were walked twice, once for the module and once for themselves)
        inside: set[int] = set()
        todo = list(op.regions)
        while todo:
            region = todo.pop()
            for block in region.blocks:
                inside.update(map(id, block.args))
                for o in block.ops:
                    inside.update(map(id, o.results))
                    if o.regions and not o.has_trait(IsolatedFromAbove):
                        todo += o.regions
        regions = list(op.regions)
        while regions:
            region = regions.pop()
            for block in region.blocks:
                for child_op in block.ops:
                    # (the pinned xDSL's operand tuple, iterated in C; its OpOperands view is a
                    # Python sequence)
                    operands = getattr(child_op, "_operands", None)
                    if operands is None:
                        operands = child_op.operands
                    if not inside.issuperset(map(id, operands)):
                        for operand in operands:
                            if id(operand) in inside:
                                continue
                            if not op.is_ancestor(operand.owner) or operand.owner is op:
                                raise _VerifyException("Operation using value defined out of its "
                                                       f"IsolatedFromAbove parent: {child_op}")
                    if child_op.regions and not child_op.has_trait(IsolatedFromAbove):
                        regions += child_op.regions

    verify._vlpc = True  # type: ignore[attr-defined]
    verify.xdsl_verify = IsolatedFromAbove.verify  # type: ignore[attr-defined]  (xDSL's own: the tests compare)
    IsolatedFromAbove.verify = verify  # type: ignore[method-assign]


_faster_isolated_from_above()


def _arith():
    from xdsl.dialects.arith import Arith
    return Arith


def _memref():
    from xdsl.dialects.memref import MemRef
    return MemRef


def _linalg():
    from vlpc.dialects.linalg import Linalg
    return Linalg


def make_context() -> Context:
    """An xDSL context with the dialects vlpc reads and writes: builtin, func, gemm and gcn
    loaded; arith, memref and linalg (vlpc's superset of xDSL's) registered, imported when
    the parser first meets one of their operations or types."""
    ctx = Context()
    for d in (Builtin, Func, Gemm, GCN):
        ctx.load_dialect(d)
    for name, factory in (("arith", _arith), ("memref", _memref), ("linalg", _linalg)):
        ctx.register_dialect(name, factory)
    return ctx


class _OpParseError(ParseError):
    """A parse error already located at the operation it concerns."""


class _LocatingParser(Parser):
    """xDSL's parser, recording each operation's ``file:line:col`` as its location, and the
    first use of each value not yet defined, so a value never defined is reported where it is
    used (xDSL reports it at the end of the module)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._first_use: dict[str, Span] = {}

    def resolve_operand(self, operand, type):
        if operand.operand_name not in self.ssa_values:
            self._first_use.setdefault(operand.operand_name, operand.span)
        return super().resolve_operand(operand, type)

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as e:
            undefined = [n for n in self.forward_ssa_references if n in self._first_use]
            if not (e.msg.startswith("values used but not defined") and undefined):
                raise
            undefined.sort(key=lambda n: self._first_use[n].start)
            first, rest = undefined[0], undefined[1:]
            more = f" (nor {', '.join('%' + n for n in rest)})" if rest else ""
            raise ParseError(self._first_use[first], f"value %{first} is used but never defined{more}") from None

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
    if all(not line.strip() or line.lstrip().startswith("//") for line in text.splitlines()):
        raise DiagnosticError("empty input: expected an MLIR module with a gemm.matmul or a linalg matrix product",
                              filename, 1, 1)
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
#: given: sqc 0, automatic (gcn-allocate-registers gives the kernel the most waves per SIMD,
#: up to 4, its register demand fits: 4 for the default 32-row tiles, 3 for the seed's
#: 64-row ones); the legacy LDS kernel's 64 accumulators and double-buffered 8+8 fragments
#: need more than 84, so 128 (2 waves).
DEFAULT_WAVES_PER_SIMD = {"sqc": 0, "lds": 2}


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
    >>> pipeline_spec(passes).split(",")[1]
    'gemm-tile{macro-m=64 macro-n=128}'
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
    if o.a_transpose not in ("auto", "pre", "in-kernel"):
        raise VlpcError(f"a_transpose must be 'auto', 'pre' or 'in-kernel', got {o.a_transpose!r}")
    if o.code_object_version not in (4, 5) or isinstance(o.code_object_version, bool):
        raise VlpcError(f"code_object_version must be 4 or 5, got {o.code_object_version!r}")
    passes = get_all_passes()
    proc = tid.target.name
    cfg: dict[str, dict] = {
        "convert-linalg-to-gemm": {},
        "gemm-tile": dict(macro_m=o.macro_tile[0] if o.macro_tile else 0,
                          macro_n=o.macro_tile[1] if o.macro_tile else 0,
                          micro_m=o.micro_tile[0] if o.micro_tile else 0,
                          micro_n=o.micro_tile[1] if o.micro_tile else 1, k_step=o.k_step or 0,
                          model=o.strategy == "sqc" and o.schedule in ("default", "cover"), target=proc, cus=o.cus or 0,
                          gpu=o.gpu or "", split_k=0 if o.split_k == "auto" else _split_k_option(o.split_k, o.strategy),
                          wg_group=o.wg_group or 0),
        "gemm-map-workgroups": dict(target=proc),
        "gemm-map-subgroups": dict(target=proc),
        "gemm-split-k": dict(split_k=(1 if o.schedule == "seed" and o.split_k == "auto"
                                      else _split_k_option(o.split_k, o.strategy)), mode=o.split_mode,
                             local_split=o.local_split, cus=o.cus or 0, gpu=o.gpu or "", target=proc),
        # gemv: a plan given by options (tile, K step, local split, split-K above 1) is the SGPR
        # decode GEMV's, which follows them; the lane-along-K GEMV is the automatic plan's (passes/isel/gemv.py)
        "convert-gemm-to-gcn": dict(strategy=o.strategy, target=proc, schedule=o.schedule, gpu=o.gpu or "",
                                    forwarding=bool(o.forwarding), a_transpose=o.a_transpose,
                                    gemv="sgpr" if (o.macro_tile or o.micro_tile or o.k_step
                                                    or o.local_split != 1 or o.split_k not in ("auto", 1))
                                    else "auto"),
        "gcn-allocate-registers": dict(waves_per_simd=(o.waves_per_simd if o.waves_per_simd is not None
                                                  else DEFAULT_WAVES_PER_SIMD.get(o.strategy, 3)),
                                       target=proc),
        "gcn-insert-waitcnt": dict(target=proc),
        "gcn-insert-hazard-nops": dict(target=proc),
        "gcn-emit-descriptor": dict(target=str(tid), code_object_version=o.code_object_version),
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
    (options equal to their defaults are left out unless ``include_default``).  Option names are
    spelled with hyphens (``macro-n``), as in ``--list-passes``, the README and MLIR."""
    return ",".join(hyphenate_options(str(p.pipeline_pass_spec(include_default=include_default))) for p in passes)


def hyphenate_options(text: str) -> str:
    """``gemm-tile{macro_n=128 k_step=8}`` -> ``gemm-tile{macro-n=128 k-step=8}`` (option names only;
    xDSL accepts both spellings and stores the Python field names)."""
    import re

    return re.sub(r"(?<=[{ ])([A-Za-z][A-Za-z0-9_]*)=", lambda m: m.group(1).replace("_", "-") + "=", text)


def pipeline_options(passes: Sequence[ModulePass]) -> list[tuple[str, dict]]:
    """Each pass's name and options (every option, as a dict), in order."""
    import dataclasses

    return [(p.name, {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}) for p in passes]


def verify_each_default() -> bool:
    """Whether :func:`run_passes` verifies the IR after every pass when not told: true when
    ``$VLPC_VERIFY_EACH`` is set to anything but ``""``/``0`` (the test suite sets ``main``)."""
    return os.environ.get("VLPC_VERIFY_EACH", "") not in ("", "0")


def verify_each_variant() -> bool:
    """Whether a launch-time variant's pipeline (:func:`_compile_variants`) verifies after every
    pass: as :func:`verify_each_default`, except that ``$VLPC_VERIFY_EACH=main`` (the test suite's
    setting) verifies the variants once, after their last pass.  A variant runs the same passes as
    the module's own pipeline with another tile, split or M; the suite checks every pass of that
    pipeline on the module itself, and the variants' IR is still verified whole."""
    return verify_each_default() and os.environ.get("VLPC_VERIFY_EACH", "") != "main"


def run_passes(module: ModuleOp, passes: Sequence[ModulePass], ctx: Context | None = None,
               after_each: Callable[[ModulePass, ModuleOp], None] | None = None,
               verify_each: bool | None = None,
               before_each: Callable[[ModulePass, ModuleOp], None] | None = None) -> ModuleOp:
    """Apply ``passes`` in order; user errors keep their location.

    The IR is verified once, after the last pass (as ``mlir-opt`` does without
    ``-verify-each``), or after every pass with ``verify_each=True`` (``None``:
    :func:`verify_each_default`, i.e. ``$VLPC_VERIFY_EACH``; ``vlpc compile/opt
    --verify-each``).  A verifier failure is an :class:`InternalError` naming the pass
    after which it was found (with one verification at the end: the last pass, and the
    message says to rerun with ``--verify-each`` to find the one that broke the IR).
    ``before_each(pass, module)`` and ``after_each(pass, module)`` are called around each
    pass (IR printing, plans)."""
    ctx = ctx or make_context()
    if verify_each is None:
        verify_each = verify_each_default()
    passes = list(passes)
    for i, p in enumerate(passes):
        if before_each is not None:
            before_each(p, module)
        try:
            p.apply(ctx, module)
        except VlpcError:
            raise
        except Exception as e:  # a bug in vlpc: say which pass
            raise InternalError(p.name, e) from e
        if verify_each or i == len(passes) - 1:
            try:
                module.verify()
            except VerifyException as e:
                name = p.name if verify_each or i == 0 else (f"{p.name}' or an earlier one ('--verify-each' "
                                                             f"or VLPC_VERIFY_EACH=1 names it")
                raise InternalError(name, e) from e
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


def header_lines(module: ModuleOp, target: str, resources: dict | None = None) -> list[str]:
    """The assembly's header comments (``resources``: :func:`kernel_resources` by kernel op, if known)."""
    lines = [f"Generated by vlpc {__version__} for {target}"]
    t = get_target(target)
    for k in kernels(module):
        nv, ns, vcc = resources[k] if resources is not None and k in resources else kernel_resources(k)
        meta = metadata_json(k)
        lds = meta.get(".group_segment_fixed_size", 0)
        occ = t.occupancy(nv, meta[".sgpr_count"], lds, meta[".max_flat_workgroup_size"])
        li = k.launch.data  # type: ignore[union-attr]
        lines.append(f"kernel {k.sym_name.data}: macro tile {li['macro_m'].value.data}x{li['macro_n'].value.data}, "
                     f"k-step {li['k_step'].value.data}, {meta['.max_flat_workgroup_size']} work-items per workgroup")
        lines.append(f"  VGPRs {nv}, SGPRs {ns} (+{meta['.sgpr_count'] - ns} reserved), LDS {lds} bytes; occupancy {occ}")
    return lines


def from_upstream(module: Any) -> str:
    """Generic-form MLIR text of an upstream module or operation (the bindings of :mod:`vlpc.interop`),
    for :func:`parse`/:func:`compile`."""
    op = getattr(module, "operation", module)
    get_asm = getattr(op, "get_asm", None)
    if get_asm is None:
        raise VlpcError(f"cannot compile a {type(module).__name__}: expected MLIR text, an xDSL ModuleOp, "
                        "or an upstream MLIR ir.Module")
    text = get_asm(print_generic_op_form=True, enable_debug_info=False)
    return text if isinstance(text, str) else text.decode()


def compile(module_or_text: ModuleOp | str, target: str = "gfx906", *, filename: str = "<input>",
            toolchain=None, cache: bool | None = None, tuned: bool | None = None, **options) -> CompiledModule:
    """Compile a gemm-dialect or linalg module (or its text) into a code object.

    ``module_or_text`` is MLIR text, an xDSL ``ModuleOp``, a module of the upstream
    MLIR Python bindings (``iree.compiler.ir`` / ``mlir.ir``), or the path of an MLIR
    file (a ``pathlib.Path``, or a one-line string naming an existing file or ending in
    ``.mlir``; as :func:`compile_file`).  ``options`` are those of :func:`pipeline`.

    Returns a :class:`CompiledModule`.  Raises :class:`~vlpc.errors.DiagnosticError`
    for bad IR (``file:line:col``), :class:`~vlpc.errors.VlpcError` for bad options,
    :class:`~vlpc.errors.AssemblerError` if LLVM rejects the output (a vlpc bug).

    ``cache``: look the result up in (and store it into) the kernel cache
    (:mod:`vlpc.cache`, ``$VLPC_CACHE_DIR``); ``None`` (default) uses it unless
    ``$VLPC_CACHE=0``, ``False`` bypasses it.  Text and upstream modules are cached; an
    xDSL ``ModuleOp`` is not (it is lowered in place, as before).

    ``tuned``: use the tuning database's exact match for the module's one GEMM (its static
    sizes; :mod:`vlpc.tunedb`, written by ``vlpc tune``) when no plan option is given; ``None``
    (default) does when the database exists, ``False`` never.  The result's ``tuned_entry`` and
    ``plan_notes`` say what was used, and which entries were not and why.
    """
    if isinstance(module_or_text, os.PathLike) or (isinstance(module_or_text, str) and _looks_like_path(module_or_text)):
        return compile_file(module_or_text, target, toolchain=toolchain, cache=cache, tuned=tuned, **options)
    if not isinstance(module_or_text, str | ModuleOp):
        module_or_text = from_upstream(module_or_text)  # (its generic-form text)
    if isinstance(module_or_text, ModuleOp):
        return _build(module_or_text, make_context(), target, filename, toolchain, options)[0]
    if tuned is not False:
        if lookup_enabled():
            options, notes, entry = resolve_options(module_or_text, target, filename, options, toolchain=toolchain,
                                                    cache=cache)
            result = compile(module_or_text, target, filename=filename, toolchain=toolchain, cache=cache,
                             tuned=False, **options)
            result.tuned_entry, result.plan_notes = entry, notes
            return result
    kc = open_cache(cache)
    if kc is None:
        return _build(None, None, target, filename, toolchain, options, module_or_text)[0]
    key, tc = cache_key(module_or_text, target, filename, toolchain, options)
    record = kc.get(key)
    if record is not None:
        try:
            return module_from_record(record)
        except (KeyError, TypeError, ValueError):  # a record of another layout: rebuild it
            pass
    result, record = _build(None, None, target, filename, tc, options, module_or_text)
    kc.put(key, record)
    return result


def _no_gc():
    """A context that pauses Python's cyclic garbage collector during a compilation
    (:func:`vlpc.gc_pause.paused_gc`)."""
    return paused_gc()


def _described_resources(kernel: KernelOp) -> tuple[int, int, bool]:
    """:func:`kernel_resources` (next free VGPR, next free SGPR, uses VCC) of a kernel that
    gcn-emit-descriptor has described, read from what it wrote (``.vgpr_count`` in the metadata,
    ``amdhsa_next_free_sgpr`` and ``amdhsa_reserve_vcc`` in the descriptor) instead of walking
    every operation again; a kernel without them (or using no SGPR) is walked."""
    desc = kernel.descriptor
    if desc is not None:
        d = desc.data  # type: ignore[union-attr]
        ns, vcc = d.get("amdhsa_next_free_sgpr"), d.get("amdhsa_reserve_vcc")
        nv = metadata_json(kernel).get(".vgpr_count")
        if ns is not None and vcc is not None and isinstance(nv, int) and ns.value.data > 1:
            return nv, ns.value.data, bool(vcc.value.data)
    return kernel_resources(kernel)


def _build(module: ModuleOp | None, ctx: Context | None, target: str, filename: str, toolchain, options: dict,
           text: str | None = None) -> tuple[CompiledModule, dict]:
    """Parse ``text`` (or take ``module``), run the pipeline, assemble and link: the compiled
    module and its cache record.

    A plan whose workgroup cannot be resident on one CU (gcn-emit-descriptor's
    :class:`~vlpc.errors.WorkgroupFitError`: its waves' VGPRs or SGPRs over the 4 SIMDs) with
    an automatic local split (no ``local_split`` option) is compiled again with half the
    wavefront groups, until it fits or has two groups (a split of 1 cannot be pinned: the
    option's 1 means automatic).  Why here: a kernel's register count is
    known only once it is allocated, so the plan choosers (``quant_plan``, ``gemv_plan``)
    cannot check the fit before building (the quantized GEMV of 16 rows at 16 groups: Q8_0
    72 VGPRs, 3 waves per SIMD, 12 < 16 waves: now 8 groups)."""
    ctx = ctx or make_context()
    if module is None:
        with _no_gc():
            module = parse(text, filename, ctx)
    auto = options.get("local_split", 1) == 1
    tried: set[int] = set()
    while True:
        retry = module.clone() if auto else None
        try:
            return _build_once(module, ctx, target, filename, toolchain, options)
        except WorkgroupFitError as e:
            # halve while the halved split can be pinned (a local split of 1 is the option's
            # "automatic", which would choose the refused plan again) and was not tried yet
            half = e.local_split // 2
            if retry is None or e.resource not in ("VGPRs", "SGPRs") or half < 2 or half in tried:
                raise
            tried.add(half)
            module, options = retry, {**options, "local_split": half}


def _build_once(module: ModuleOp, ctx: Context, target: str, filename: str, toolchain,
                options: dict) -> tuple[CompiledModule, dict]:
    """:func:`_build` for one plan: run the pipeline, assemble and link."""
    from vlpc.runtime.toolchain import find_toolchain

    with _no_gc():
        # convert-linalg-to-gemm raises linalg ops and leaves anything else alone: without
        # one it is a no-op, and neither it nor xDSL's linalg dialect need be imported.
        linalg = any(o.name.startswith("linalg.") for o in module.walk())
        passes = pipeline(target, linalg=linalg, **options)
        from vlpc import launch_variants

        pristine = module.clone() if launch_variants.wanted(options) else None
        run_passes(module, passes, ctx)
        variants = _add_launch_variants(module, pristine, ctx, target, linalg, options)
        resources = {k: _described_resources(k) for k in kernels(module)}
        header = header_lines(module, TargetId.parse(target).target.name, resources)
        asm = print_assembly(module, target, header)
        kernel_records = []
        for k in resources:
            nv = resources[k][0]
            li = {key: (a.value.data if hasattr(a, "value") else a.data) for key, a in k.launch.data.items()}  # type: ignore[union-attr]
            li.update(variants.get(k.sym_name.data, {}))
            kernel_records.append({"name": k.sym_name.data, "metadata": metadata_json(k), "launch_info": li, "vgprs": nv})
    tc = toolchain or find_toolchain()
    obj = tc.assemble(asm, TargetId.parse(target), filename)
    code = tc.link(obj)
    record = {"asm": asm, "code_object": code, "target_id": str(TargetId.parse(target)),
              "toolchain": tc.describe(), "header": header, "kernels": kernel_records}
    return module_from_record(record), record


def _add_launch_variants(module: ModuleOp, pristine: ModuleOp | None, ctx: Context, target: str, linalg: bool,
                         options: dict) -> dict[str, dict]:
    """Compile ``pristine`` (the module before the pipeline) again for each launch-time plan variant
    its kernels get (:mod:`vlpc.launch_variants`), its functions renamed ``<name>_var<i>``, and move
    the variants' kernels into ``module``.  Returns the launch information to add by kernel name: the
    first kernel's ``variants`` (names) and board (``plan_target``, ``plan_gpu``, ``plan_cus``), each
    variant's ``role``."""
    from xdsl.dialects.func import FuncOp

    from vlpc import launch_variants

    if pristine is None:
        return {}
    names = {k.sym_name.data for k in kernels(module)}
    plans: dict[tuple[str, int, int], list[str]] = {}
    for k in kernels(module):
        li = {key: (a.value.data if hasattr(a, "value") else a.data) for key, a in k.launch.data.items()}  # type: ignore[union-attr]
        for plan in launch_variants.plans_for(li):
            plans.setdefault(plan, []).append(k.sym_name.data)
    extra: dict[str, dict] = {}
    o = Options.from_kwargs(options)
    for i, (plan, firsts) in enumerate(sorted(plans.items()), 1):
        suffix = launch_variants.SUFFIX.format(i)
        if any(f + suffix in names for f in firsts):
            continue  # (a function of the module already has the name)
        var = pristine.clone()
        for fn in list(var.walk()):
            if isinstance(fn, FuncOp):
                if fn.sym_name.data not in firsts or (plan[0] == "rows" and not _fix_rows(fn, plan[1])):
                    fn.detach()  # (a kernel without this variant, or whose M cannot be fixed here)
                    continue
                fn.sym_name = StringAttr(fn.sym_name.data + suffix)
        try:
            run_passes(var, _variant_pipeline(target, linalg, options, plan), ctx,
                       verify_each=verify_each_variant())
        except VlpcError:  # a plan this GEMM refuses (e.g. its epilogue with a static M): no such variant
            continue
        built = {k.sym_name.data for k in kernels(var)}
        firsts = [f for f in firsts if f + suffix in built]
        for k in kernels(var):
            k.detach()
            module.body.block.add_op(k)
        for f in firsts:
            extra.setdefault(f, {"plan_target": TargetId.parse(target).target.name, "plan_gpu": o.gpu or "",
                                 "plan_cus": o.cus or 0, "variants": ""})
            extra[f]["variants"] = ",".join(x for x in (extra[f]["variants"], f + suffix) if x)
            extra[f + suffix] = {"role": "variant"}
    return extra


def _variant_pipeline(target: str, linalg: bool, options: dict, plan: tuple[str, int, int]) -> list[ModulePass]:
    """The pipeline of a launch-time variant: ``("tile", N, S)``: ``options`` with gemm-tile's macro
    tile N and gemm-split-k's S (macro tile M, K step: the automatic ones); ``("rows", M, 0)``: the
    automatic plan (of the static M :func:`_fix_rows` wrote); ``("tile", N, S, L)``: also local split L."""
    import dataclasses

    if plan[0] == "rows":
        return pipeline(target, linalg=linalg, **options)
    passes = pipeline(target, linalg=linalg, **dict(options, split_k=plan[2], local_split=plan[3] if len(plan) > 3 else 1))
    return [dataclasses.replace(p, macro_n=plan[1]) if p.name == "gemm-tile" else p for p in passes]


def _fix_rows(fn, m: int) -> bool:
    """Make M static (``m``) in the function ``fn``: the M extent of its gemm.matmul's A and C, which
    must be arguments of ``fn`` (the types of the arguments and of the function change).  False,
    changing nothing, when ``fn`` holds no such gemm.matmul."""
    from xdsl.dialects.builtin import FunctionType, MemRefType
    from xdsl.ir import BlockArgument
    from xdsl.rewriter import Rewriter

    from vlpc.dialects.gemm import MatmulOp

    ops = [o for o in fn.walk() if isinstance(o, MatmulOp)]
    if len(ops) != 1:
        return False
    mm = ops[0]
    lay = mm.layout.data
    fixes = []
    for val, dim in ((mm.a, 0 if lay[0] == "N" else 1), (mm.c, 0)):
        t = val.type
        if not isinstance(val, BlockArgument) or not isinstance(t, MemRefType) or len(t.get_shape()) != 2:
            return False
        shape = list(t.get_shape())
        shape[dim] = m
        fixes.append((val, MemRefType(t.element_type, shape, t.layout, t.memory_space)))
    for val, t in fixes:
        Rewriter.replace_value_with_new_type(val, t)
    block = fn.body.blocks.first
    fn.function_type = FunctionType.from_lists([a.type for a in block.args], list(fn.function_type.outputs.data))
    return True


def _looks_like_path(text: str) -> bool:
    """A string that names a file rather than holding MLIR: one line, no MLIR punctuation,
    and either an existing file (or directory: refused by name) or a ``.mlir`` suffix."""
    t = text.strip()
    if not t or "\n" in t or any(ch in t for ch in "{}()%=\"<>"):
        return False
    return os.path.exists(t) or t.lower().endswith(".mlir") or (len(t.split()) == 1 and ("/" in t or "\\" in t))


def compile_file(path: str | os.PathLike, target: str = "gfx906", *, toolchain=None, cache: bool | None = None,
                 tuned: bool | None = None, **options) -> CompiledModule:
    """Compile the MLIR file at ``path`` (like ``iree.compiler.compile_file``); diagnostics
    name the file.  Raises :class:`VlpcError` when it cannot be read, else as :func:`compile`."""
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise VlpcError(f"vlpc.compile: {name!r} looks like a file path, but there is no such file "
                        f"(from {os.getcwd()}); pass MLIR text or the path of an existing .mlir file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise VlpcError(f"vlpc.compile: cannot read {name}: {getattr(e, 'strerror', None) or e}") from None
    return compile(text, target, filename=name, toolchain=toolchain, cache=cache, tuned=tuned, **options)


def resolve_options(text: str, target: str, filename: str, options: dict, *, toolchain=None, cache=None,
                    m: int | None = None, n: int | None = None, k: int | None = None,
                    batch: int | None = None) -> tuple[dict, list[str], int | None]:
    """The options to compile MLIR ``text`` with: ``options`` merged with the tuned entry of its
    one GEMM (compiled first with ``options``, through the kernel cache, for its types, layout and
    sizes; dynamic sizes from ``m``/``n``/``k``/``batch``), the notes of :func:`vlpc.tunedb.tuned_options`,
    and the entry's number (None: not used)."""
    base = compile(text, target, filename=filename, toolchain=toolchain, cache=cache, tuned=False, **options)
    if len(base.kernels) != 1:
        return options, [], None
    db = open_default()
    if db is None:
        return options, [], None
    with db:
        opts, notes = tuned_options(base.kernel(), target, options, m, n, k, batch, db=db)
        entry = None
        if opts is not None:
            entry = int(notes[-1].split("#", 1)[1].split()[0])
    return ({**options, **opts} if opts is not None else options), notes, entry


def dynamic_sizes_entry(compiled, text: str, target: str, filename: str, options: dict, m: int, n: int, k: int,
                        batch: int | None = None):
    """For ``compiled`` (one GEMM whose sizes are dynamic in the IR, compiled without a tuned
    entry) launched at ``m x n x k``: the module compiled with the tuning database's entry for
    those sizes, or None (no entry, a plan option given, sizes static, or the database off); and
    the lookup's notes (:func:`vlpc.tunedb.tuned_options`).  ``vlpc run`` calls it once the sizes are known."""
    if compiled.tuned_entry is not None or len(compiled.kernels) != 1 or not lookup_enabled():
        return None, []
    li = compiled.kernel().launch_info
    if all(li.get(f"static_{x}", -1) >= 0 for x in "mnk") and int(li.get("batch", 0) or 0) >= 0:
        return None, []
    opts, notes, entry = resolve_options(text, target, filename, options, m=m, n=n, k=k, batch=batch)
    if entry is None:
        return None, notes
    result = compile(text, target, filename=filename, tuned=False, **opts)
    result.tuned_entry, result.plan_notes = entry, notes
    return result, notes
