"""Interoperation with the upstream MLIR Python bindings (optional: ``pip install 'vlpc[mlir]'``).

The PyPI name ``mlir-python-bindings`` is only a placeholder; the
``iree-base-compiler`` wheel ships the upstream bindings as ``iree.compiler.ir``
(with the ``linalg``, ``func``, ``arith`` and ``memref`` dialects).  A
self-built MLIR's ``mlir.ir`` works too.  Both directions go through MLIR's
*generic* operation form, which xDSL and MLIR print and parse alike:

* :func:`from_upstream` — an upstream ``ir.Module``/``ir.Operation`` -> text vlpc
  parses (``vlpc.compile`` calls it for you: pass the upstream module directly).
* :func:`to_upstream` — a vlpc/xDSL module (or its text) -> an upstream
  ``ir.Module``.  The ``gemm`` and ``gcn`` dialects are unknown to MLIR, so the
  context allows unregistered dialects; ``func``, ``arith``, ``memref`` and
  ``linalg`` operations are registered upstream and verified there.

Example (skipped unless the extra is installed)::

    from iree.compiler import ir
    from iree.compiler.dialects import func, linalg
    import vlpc
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        ...  # build a func.func with linalg.matmul on memrefs
        kernel = vlpc.compile(module).kernel()
"""

from __future__ import annotations

import importlib
import io
from types import ModuleType
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from vlpc.errors import VlpcError
from vlpc.compiler import from_upstream, parse  # noqa: F401  (from_upstream re-exported)

#: Where the upstream bindings may live, in order of preference.
UPSTREAM_MODULES = ("iree.compiler.ir", "mlir.ir")
INSTALL_HINT = "pip install 'vlpc[mlir]'  (iree-base-compiler: the upstream MLIR Python bindings)"


def upstream_ir() -> ModuleType | None:
    """The upstream ``ir`` module (``iree.compiler.ir`` or ``mlir.ir``), or None if neither imports."""
    for name in UPSTREAM_MODULES:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def upstream_available() -> tuple[bool, str]:
    """(available, reason): whether the upstream MLIR bindings import, and why not."""
    ir = upstream_ir()
    if ir is None:
        return False, f"the upstream MLIR Python bindings are not installed: {INSTALL_HINT}"
    return True, ir.__name__


def is_upstream_object(obj: Any) -> bool:
    """True for an upstream ``ir.Module``, ``ir.Operation`` or op view."""
    op = getattr(obj, "operation", obj)
    return hasattr(op, "get_asm") and type(op).__module__.split(".")[0] in ("iree", "mlir", "jaxlib")


def print_generic(module: ModuleOp) -> str:
    """An xDSL module in MLIR's generic form (what :func:`to_upstream` feeds to MLIR)."""
    from xdsl.printer import Printer

    buf = io.StringIO()
    Printer(stream=buf, print_generic_format=True).print_op(module)
    return buf.getvalue() + "\n"


def to_upstream(module_or_text: ModuleOp | str, context: Any = None) -> Any:
    """Parse a vlpc module (xDSL ``ModuleOp`` or text) into an upstream ``ir.Module``.

    ``context`` is an upstream ``ir.Context`` (a new one by default); it is set to
    allow unregistered dialects, since ``gemm`` and ``gcn`` are vlpc's own.
    Raises :class:`~vlpc.errors.VlpcError` if the bindings are missing.
    """
    ir = upstream_ir()
    if ir is None:
        raise VlpcError(f"the upstream MLIR Python bindings are not installed: {INSTALL_HINT}")
    if isinstance(module_or_text, str):
        module_or_text = parse(module_or_text)
    text = print_generic(module_or_text)
    ctx = context if context is not None else ir.Context()
    ctx.allow_unregistered_dialects = True
    with ctx:
        return ir.Module.parse(text)


__all__ = ["from_upstream", "is_upstream_object", "print_generic", "to_upstream", "upstream_available",
           "upstream_ir"]
