"""Shared pieces of the fuzz tests (``tests/fuzz/test_fuzz_*.py``) and ``tools/fuzz.py``.

Budgets: by default (CI) every fuzz test runs a small, fixed number of inputs with
fixed seeds (Hypothesis ``derandomize=True``; ``random.Random(seed)`` loops), so a
run is reproducible and takes well under a minute.  Environment variables turn
them into long runs (``tools/fuzz.py`` sets them):

* ``VLPC_FUZZ_EXAMPLES=N``: about N inputs per fuzz test (Hypothesis ``max_examples``
  or loop iterations), scaled by a per-fuzzer weight that evens out their costs;
* ``VLPC_FUZZ_SEED=S``: a different seed (and random Hypothesis generation instead
  of the derandomized one);
* ``VLPC_FUZZ_REPORT=path.json``: write how many inputs each fuzzer tried, and how
  they ended, to ``path.json`` when the test process exits.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import re
from collections import Counter, defaultdict

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("VLPC_FUZZ_EXAMPLES", "0") or 0)
SEED = os.environ.get("VLPC_FUZZ_SEED")
LONG = bool(EXAMPLES or SEED)

#: fuzzer name -> outcome -> count (outcome: "ok", "user error", "usage error", ...)
COUNTS: dict[str, Counter] = defaultdict(Counter)


def record(fuzzer: str, outcome: str) -> None:
    COUNTS[fuzzer][outcome] += 1


def _write_report() -> None:
    path = os.environ.get("VLPC_FUZZ_REPORT")
    if not path or not COUNTS:
        return
    old = {}
    if os.path.exists(path):
        try:
            with open(path) as f:
                old = json.load(f)
        except (OSError, ValueError):
            old = {}
    for name, c in COUNTS.items():
        merged = Counter(old.get(name, {}))
        merged.update(c)
        old[name] = dict(merged)
    with open(path, "w") as f:
        json.dump(old, f, indent=1, sort_keys=True)


atexit.register(_write_report)


def scaled(ci_count: int, weight: float = 1.0) -> int:
    """``ci_count`` in CI; ``VLPC_FUZZ_EXAMPLES * weight`` (at least ``ci_count``) in long runs.

    ``weight`` evens out the cost of one input across fuzzers (a decoded word is
    cheap, a CLI run that reaches the emulator is not)."""
    return max(ci_count, int(EXAMPLES * weight)) if EXAMPLES else ci_count


def fuzz_settings(ci_examples: int, weight: float = 1.0) -> settings:
    """Hypothesis settings: ``ci_examples`` derandomized inputs, or the long-run budget."""
    return settings(
        max_examples=scaled(ci_examples, weight),
        derandomize=not LONG,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                               HealthCheck.data_too_large, HealthCheck.large_base_example,
                               HealthCheck.function_scoped_fixture],
    )


def loop_count(ci_count: int, weight: float = 1.0) -> int:
    """Iterations of a plain random loop (see :func:`scaled`)."""
    return scaled(ci_count, weight)


def loop_seed(default: int) -> int:
    return int(SEED) if SEED else default


# -- running the CLI in-process ----------------------------------------------------------------


class FuzzTimeout(BaseException):
    """An input took longer than the per-input limit (a hang is a bug too)."""


def run_cli(argv: list[str], stdin: bytes | None = None, timeout: float = 120) -> tuple[int, str, str]:
    """``vlpc.cli.main(argv)`` with stdout/stderr captured; argparse's SystemExit -> its code.

    An input that runs longer than ``timeout`` seconds raises :class:`FuzzTimeout`
    (a BaseException, so vlpc's own handlers cannot mistake it for an internal error).
    """
    import signal
    import sys

    from vlpc.cli import main

    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")

    def expired(signum, frame):
        raise FuzzTimeout(f"vlpc {' '.join(map(str, argv))} ran longer than {timeout} s")

    use_alarm = hasattr(signal, "setitimer")
    if use_alarm:
        old_handler = signal.signal(signal.SIGALRM, expired)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as e:  # argparse usage errors, --help, --version
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old_handler)
        sys.stdin = old_stdin
    return rc, out.getvalue(), err.getvalue()


_DIAG = re.compile(r"^(?:.+:\d+(?::\d+)?: error: .+|vlpc: .+|vlpc [a-z]+: error: .+|usage: vlpc.*)$")
OUTCOME = {0: "ok", 1: "user error", 2: "usage error", 3: "verification failed", 4: "device fault"}


def assert_clean_exit(rc: int, err: str, argv=None, allowed=(0, 1, 2)) -> str:
    """The property every fuzzed command must have: a documented exit code, never an
    internal error or a traceback, and (on failure) a diagnostic on stderr's first line."""
    where = f" for argv {argv!r}" if argv is not None else ""
    assert "Traceback" not in err, f"traceback{where}:\n{err}"
    assert rc != 70 and "internal error" not in err, f"internal error{where}:\n{err}"
    assert rc in allowed, f"exit code {rc}{where}:\n{err}"
    if rc != 0:
        first = err.strip().splitlines()[0] if err.strip() else ""
        assert _DIAG.match(first), f"no diagnostic{where} (exit {rc}): {err!r}"
    return OUTCOME.get(rc, f"exit {rc}")


# -- memoised compilation (for fuzzers that only vary options around the compiler) ---------------


@contextlib.contextmanager
def memoised_compiler():
    """Cache ``vlpc.compiler.run_passes`` and ``vlpc.compile`` results by their inputs.

    The passes are deterministic, so a cached result is what a fresh run would give;
    the CLI fuzzer then spends its time on the option handling it is testing instead
    of recompiling the same kernel (1-2 s each).
    """
    import importlib

    import vlpc

    pl = importlib.import_module("vlpc.compiler")

    real_run_passes, real_compile = pl.run_passes, pl.compile
    pass_cache: dict = {}
    compile_cache: dict = {}

    def run_passes(module, passes, ctx=None, after_each=None, **hooks):
        if after_each is not None or any(v is not None for v in hooks.values()):  # hooks see each pass: no cache
            return real_run_passes(module, passes, ctx, after_each, **hooks)
        key = (pl.print_ir(module), pl.pipeline_spec(passes))
        hit = pass_cache.get(key)
        if hit is None:
            try:
                real_run_passes(module, passes, ctx)
                hit = ("ok", module.clone())
            except Exception as e:  # cached and re-raised alike
                hit = ("error", e)
            pass_cache[key] = hit
            if hit[0] == "error":
                raise hit[1]
            return module
        if hit[0] == "error":
            raise hit[1]
        block = module.body.block
        for op in list(block.ops):
            op.detach()
            op.erase()
        clone = hit[1].clone()
        for op in list(clone.body.block.ops):
            op.detach()
            block.add_op(op)
        return module

    def compile_(module_or_text, target="gfx906", *, filename="<input>", toolchain=None, **options):
        if not isinstance(module_or_text, str) or toolchain is not None:
            return real_compile(module_or_text, target, filename=filename, toolchain=toolchain, **options)
        key = (module_or_text, target, filename, tuple(sorted(options.items())))
        hit = compile_cache.get(key)
        if hit is None:
            try:
                hit = ("ok", real_compile(module_or_text, target, filename=filename, **options))
            except Exception as e:
                hit = ("error", e)
            compile_cache[key] = hit
        if hit[0] == "error":
            raise hit[1]
        return hit[1]

    pl.run_passes, pl.compile, vlpc.compile = run_passes, compile_, compile_
    try:
        yield
    finally:
        pl.run_passes, pl.compile, vlpc.compile = real_run_passes, real_compile, real_compile


def code_in_memory(code: bytes):
    """A fresh emulator memory holding ``code`` and what a one-wave test dispatch reads: a 4 KiB buffer
    of 0..1023 (dwords) and a kernarg segment of 8 pointers to it.  Returns (memory, kernarg address,
    code address)."""
    import numpy as np

    from vlpc.runtime.emulator.memory import Memory

    mem = Memory()
    buf = mem.alloc(4096, tag="buf")
    mem.write(buf, np.arange(1024, dtype=np.uint32))
    karg = mem.alloc(256, tag="kernargs")
    mem.write(karg, np.array([buf] * 8, np.uint64))
    ca = mem.alloc(len(code) + 64, tag="code")
    mem.write(ca, code)
    return mem, karg, ca
