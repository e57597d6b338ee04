"""Library code the benchmark scripts (``benchmarks/``) and their tests share.

The scripts import it as ``vlpc.benchmarking.<module>`` (never each other through ``sys.path``):
:mod:`vlpc.benchmarking.seed`, the seed's SGEMM problem and the modeled-launch shortcuts;
:mod:`vlpc.benchmarking.microbench`, the microbenchmark suite's harness, runner logic and
streaming ceiling; :mod:`vlpc.benchmarking.dot_figures`, the dot kernels' modeled launch;
:mod:`vlpc.benchmarking.quant_gemv`, the quantized-weight GEMV's; :func:`timed_launch`, one GEMM
launch with its buffers.  No script loads another: what two scripts share lives here
(:mod:`vlpc.benchmarking.plan_runs`, the plan surrogate's timing-model runs, among them).  The
microbenchmark suite's kernel modules and the tests of a script or a ``tools/`` program load a
file by path with :func:`load_script`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

def find_checkout() -> Path | None:
    """The vlpc checkout in use: the folder holding this package when vlpc runs from a checkout
    (an editable install), otherwise the current directory or the nearest of its parents that
    holds ``pyproject.toml`` and ``benchmarks/microbench/`` (a regular install run from the
    checkout, as CI does); None when there is none (the benchmark scripts, their data and the
    manual are not installed with the package)."""
    here = Path(__file__).resolve().parents[2]
    cwd = Path.cwd().resolve()
    for root in (here, cwd, *cwd.parents):
        if (root / "pyproject.toml").is_file() and (root / "benchmarks" / "microbench").is_dir():
            return root
    return None


def checkout_root() -> Path:
    """:func:`find_checkout`, or the current directory when there is none (where a script's
    missing file then names its path)."""
    return find_checkout() or Path.cwd().resolve()


#: The checkout's root (:func:`checkout_root`, resolved once on import).
ROOT = checkout_root()
#: The benchmark scripts' folder of the checkout.
BENCHMARKS = ROOT / "benchmarks"


def load_script(path: str | Path) -> ModuleType:
    """The Python script at ``path`` (a ``benchmarks/`` or ``tools/`` file) as a module named after
    its file: executed once per process (not as ``__main__``) and kept in ``sys.modules`` under
    that name (its dataclasses and pickled functions look their module up there); nothing is put
    on ``sys.path``.  Raises ``ImportError`` when a different module already has that name and
    ``OSError`` when the file cannot be read."""
    path = Path(path).resolve()
    name = path.stem
    known = sys.modules.get(name)
    if known is not None:
        if getattr(known, "__file__", None) and Path(known.__file__).resolve() == path:
            return known
        raise ImportError(f"cannot load {path} as module {name!r}: {known!r} has that name")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a Python script")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def timed_launch(kern, dev, a, b, c, m: int, n: int, k: int, ldb: int, alpha, beta):
    """One launch of the compiled GEMM ``kern`` (a :class:`vlpc.kernel.CompiledKernel`) on ``dev``
    (an emulator device, usually ``timing_only``) with A, B and C uploaded from the arrays ``a``,
    ``b``, ``c`` (lda = K, ldc = N, ``ldb`` in B's units) and the scalars ``alpha``, ``beta`` (NumPy
    scalars of the kernel's type): its launch statistics (``.timing`` the modeled time).  The
    buffers are freed whatever happens."""
    import numpy as np

    from vlpc.runtime import load_code_object

    bufs = [dev.upload(x) for x in (a, b, c)]
    try:
        args = [*bufs, *(np.int32(v) for v in (m, n, k, k, ldb, n)), alpha, beta]
        return kern.execute(dev, load_code_object(kern.code_object), args, m, n, k, n)
    finally:
        for x in bufs:
            dev.free(x)
