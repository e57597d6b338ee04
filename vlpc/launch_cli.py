"""Launching any gfx906 code object from the command line (``vlpc run K.hsaco``, ``vlpc profile K.hsaco``).

A code object (hipcc's, Triton's, vlpc's, hand-assembled) carries in its ``.amdgpu_metadata``
each kernel's arguments: offset, size, ``value_kind`` (``global_buffer``, ``by_value``, the
``hidden_*`` ones the runtime fills) and, when the compiler kept them, name and type
(AMDGPUUsage "Code Object V3 Kernel Argument Metadata Map").  The command line gives a value
to every explicit argument with ``--arg KEY=VALUE``; KEY is the argument's metadata name or its
0-based position among the explicit arguments (hipcc drops the names: ``--arg 0=1000``):

* a **buffer** (``global_buffer``): ``zeros:BYTES`` (zero-filled), ``random:BYTES`` (uniform
  in [-1, 1) of the pointee type when the metadata names it -- ``float*`` float32, ``double*``
  float64, ``half*`` float16, integer pointees random integers in [0, 100) --, float32
  otherwise), ``nan:BYTES`` (quiet NaNs of a float pointee, float32 when untyped: padding that
  must be overwritten or never read), or ``FILE.npy`` (the array's bytes).  BYTES is a positive integer, optionally
  with a ``K``/``M`` suffix (KiB, MiB), a whole number of the pointee's elements;
* a **scalar** (``by_value``): an integer (``1024``, ``0x400``, ``-3``) or a real
  (``1.5``, ``1e-3``, ``nan``, ``inf``); a real for an argument without a type name fills a
  2-, 4- or 8-byte float, an integer a signed integer of the argument's size: write ``2.0``,
  not ``2``, for a ``float`` that hipcc left untyped.

``--grid X[,Y,Z]`` counts workgroups (HIP's gridDim), ``--block X[,Y,Z]`` work-items per
workgroup (blockDim).  Every mistake -- an unknown kernel or argument, a missing argument, a bad
size -- is a one-line :class:`~vlpc.errors.VlpcError` raised before anything runs.

The emulator's checks stay on: out of strict mode a read of an uninitialised register and a
register used while its load may be outstanding (a missing ``s_waitcnt``, a race) are
collected as :class:`Finding` s and the kernel goes on; an access outside every buffer stops
the launch (the emulator cannot continue past it) and is a finding too.  ``strict=True``
turns each of them into an error.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vlpc.cli_support import check_not_input, check_writable, counters_text, load_npy, write_atomic
from vlpc.errors import EXIT_DEVICE, VlpcError

if TYPE_CHECKING:  # NumPy loads with a launch, not with vlpc --help
    import numpy as np

#: What ``--arg`` accepts for a buffer (for messages).
BUFFER_SYNTAX = "zeros:BYTES, random:BYTES, nan:BYTES or FILE.npy"

_POINTEE = {
    "float": "float32", "double": "float64", "half": "float16", "_Float16": "float16",
    "__half": "float16", "int": "int32", "unsigned int": "uint32", "unsigned": "uint32",
    "uint32_t": "uint32", "int32_t": "int32", "long": "int64", "int64_t": "int64",
    "unsigned long": "uint64", "uint64_t": "uint64", "short": "int16", "int16_t": "int16",
    "unsigned short": "uint16", "uint16_t": "uint16", "char": "int8", "signed char": "int8",
    "int8_t": "int8", "unsigned char": "uint8", "uint8_t": "uint8",
}


def is_code_object(path: str) -> bool:
    """True when ``path`` is a readable file starting with the ELF magic (a code object)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def add_launch_arguments(p) -> None:
    """``--kernel``, ``--grid``, ``--block``, ``--arg``, ``--dynamic-lds`` (for a code object FILE)."""
    p.add_argument("--kernel", metavar="NAME",
                   help="code object FILE: the kernel to launch (default: its only kernel)")
    p.add_argument("--grid", metavar="X[,Y,Z]",
                   help="code object FILE: workgroups per dimension (HIP gridDim; default 1)")
    p.add_argument("--block", metavar="X[,Y,Z]",
                   help="code object FILE: work-items per workgroup (HIP blockDim; default 64)")
    p.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                   help="code object FILE: a kernel argument by metadata name or 0-based position: "
                        f"buffers {BUFFER_SYNTAX} (BYTES: integer, K/M suffix for KiB/MiB), scalars a "
                        "number (2.0 for an untyped float); repeat for each argument (docs/profile.md)")
    p.add_argument("--dynamic-lds", type=int, default=0, metavar="BYTES",
                   help="code object FILE: dynamic LDS bytes added to the kernel's static LDS (default 0)")


def parse_dims(text: str | None, what: str, default: tuple[int, ...]) -> tuple[int, int, int]:
    """``X[,Y,Z]`` (also ``XxY``) as three positive integers (missing ones are 1)."""
    if text is None:
        dims = tuple(default)
    else:
        parts = [x.strip() for x in re.split(r"[,x]", text.strip())]
        try:
            dims = tuple(int(x, 0) for x in parts)
        except ValueError:
            raise VlpcError(f"--{what} {text!r}: expected up to three positive integers X[,Y,Z]") from None
        if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
            raise VlpcError(f"--{what} {text!r}: expected up to three positive integers X[,Y,Z]")
    return tuple(dims) + (1,) * (3 - len(dims))  # type: ignore[return-value]


def arg_label(i: int, a) -> str:
    """How messages name explicit argument ``i``: ``'x' (#2, float*)`` or ``#2 (global_buffer, 8 B)``."""
    kind = a.type_name or ("buffer" if a.value_kind == "global_buffer" else f"{a.size}-byte {a.value_kind}")
    return f"'{a.name}' (#{i}, {kind})" if a.name else f"#{i} ({kind})"


def pointee_dtype(a) -> np.dtype | None:
    """The element type a buffer argument's metadata names (``.type_name`` ``float*``), or None."""
    import numpy as np
    t = (a.type_name or "").replace("const", "").replace("volatile", "").replace("__restrict__", "")
    t = t.replace("restrict", "").strip()
    if not t.endswith("*"):
        return None
    dt = _POINTEE.get(" ".join(t[:-1].split()))
    return None if dt is None else np.dtype(dt)


def _bytes_of(text: str, spec: str, label: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([kKmM]?)\s*", text)
    if not m:
        raise VlpcError(f"--arg {spec}: buffer size {text!r} of argument {label} is not a number of bytes "
                        "(an integer, optionally with K or M)")
    n = int(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]
    if n <= 0:
        raise VlpcError(f"--arg {spec}: buffer size of argument {label} must be positive, got {n}")
    return n


def _scalar(text: str, spec: str, label: str):
    t = text.strip()
    try:
        return int(t, 0)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        raise VlpcError(f"--arg {spec}: argument {label} is passed by value: give a number, not {text!r}") from None


@dataclass
class HostBuffer:
    """The host side of one buffer argument: ``key`` (name or position), ``data`` (its initial
    contents, ``nbytes`` bytes), ``dtype`` (the element type it is saved and shown as)."""

    key: str
    data: np.ndarray
    dtype: np.dtype


def plan_arguments(kernel, specs: list[str], seed: int = 0) -> tuple[list[Any], dict[int, HostBuffer]]:
    """The explicit arguments of ``kernel`` from ``--arg`` texts: a list with a Python number for each
    scalar and None for each buffer, and the buffers' host contents by position.  Raises
    :class:`VlpcError` (before any allocation) for an unknown key, a repeated one, a missing argument,
    a malformed value or a buffer size that is not a whole number of the pointee's elements."""
    import numpy as np
    explicit = list(kernel.explicit_args)
    by_key: dict[str, int] = {}
    for i, a in enumerate(explicit):
        by_key[str(i)] = i
        if a.name:
            by_key[a.name] = i
    given: dict[int, tuple[str, str]] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        key = key.strip()
        if not sep or not key:
            raise VlpcError(f"--arg {spec!r}: expected KEY=VALUE (KEY: argument name or 0-based position)")
        if key not in by_key:
            have = ", ".join(arg_label(i, a) for i, a in enumerate(explicit)) or "none"
            raise VlpcError(f"--arg {spec}: kernel '{kernel.name}' has no argument {key!r} (arguments: {have})")
        i = by_key[key]
        if i in given:
            raise VlpcError(f"--arg {spec}: argument {arg_label(i, explicit[i])} is given twice "
                            f"(also --arg {given[i][0]})")
        given[i] = (spec, value)
    missing = [i for i in range(len(explicit)) if i not in given]
    if missing:
        names = ", ".join(arg_label(i, explicit[i]) for i in missing)
        raise VlpcError(f"kernel '{kernel.name}' needs argument{'s' if len(missing) > 1 else ''} {names}: "
                        f"give --arg KEY=VALUE for each (buffers {BUFFER_SYNTAX}; scalars a number)")
    rng = np.random.default_rng(seed)
    values: list[Any] = []
    buffers: dict[int, HostBuffer] = {}
    for i, a in enumerate(explicit):
        spec, value = given[i]
        label = arg_label(i, a)
        key = a.name or str(i)
        if a.value_kind == "global_buffer":
            dt = pointee_dtype(a)
            kind, colon, size_text = value.partition(":")
            if colon and kind in ("zeros", "random", "nan"):
                n = _bytes_of(size_text, spec, label)
                el = dt if dt is not None else np.dtype(np.float32 if n % 4 == 0 else np.uint8)
                if kind == "nan":  # NaNs of the float pointee (float32 when untyped)
                    if dt is not None and dt.kind != "f":
                        raise VlpcError(f"--arg {spec}: argument {label} points to {dt.name}, which has no NaN")
                    el = dt if dt is not None else np.dtype(np.float32)
                if n % el.itemsize:
                    raise VlpcError(f"--arg {spec}: {n} bytes is not a whole number of {el.name} elements "
                                    f"({el.itemsize} bytes each) for argument {label}")
                count = n // el.itemsize
                if kind == "zeros":
                    data = np.zeros(count, el)
                elif kind == "nan":
                    data = np.full(count, np.nan, el)
                elif el.kind == "f":
                    data = rng.uniform(-1.0, 1.0, count).astype(el)
                else:
                    data = rng.integers(0, 100, count).astype(el)
            elif value.endswith(".npy") or Path(value).suffix == ".npy":
                data = np.ascontiguousarray(load_npy(value, f"{label} (--arg {spec})"))
                if data.nbytes == 0:
                    raise VlpcError(f"--arg {spec}: {value} is empty; a buffer needs at least one byte")
                if dt is not None and data.dtype != dt:
                    raise VlpcError(f"--arg {spec}: {value} holds {data.dtype}, argument {label} points to {dt.name}")
                el = data.dtype
            else:
                raise VlpcError(f"--arg {spec}: argument {label} takes {BUFFER_SYNTAX}")
            buffers[i] = HostBuffer(key, data.reshape(-1) if data.ndim != 1 else data, np.dtype(el))
            values.append(None)
        elif a.value_kind == "by_value":
            if value.startswith(("zeros:", "random:", "nan:")) or value.endswith(".npy"):
                raise VlpcError(f"--arg {spec}: argument {label} is passed by value ({a.size} bytes): give a number")
            values.append(_scalar(value, spec, label))
        else:
            raise VlpcError(f"argument {label} of kernel '{kernel.name}' has value kind {a.value_kind}, "
                            "which the command line cannot fill")
    return values, buffers


@dataclass
class Finding:
    """Something the emulator's checks reported: ``kind`` (``race`` for a register used while its
    load may be outstanding, ``uninitialised-read``, ``out-of-bounds``, ``fault`` for the other
    faults), ``message`` (one paragraph: kernel, pc, wave, instruction, detail), ``fatal`` (the
    launch stopped there)."""

    kind: str
    message: str
    fatal: bool = False

    def __str__(self) -> str:
        return f"{self.kind}{' (launch stopped)' if self.fatal else ''}: {self.message}"


class FindingCollector:
    """A context manager collecting the emulator's warnings as :class:`Finding` s (each distinct
    message once); other warnings pass through."""

    def __enter__(self) -> "FindingCollector":
        self.findings: list[Finding] = []
        self._cm = warnings.catch_warnings(record=True)
        self._caught = self._cm.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc) -> None:
        self._cm.__exit__(*exc)
        from vlpc.runtime.emulator.errors import UninitializedRegisterWarning, WaitcntViolationWarning

        seen = set()
        for w in self._caught:
            kind = ("race" if issubclass(w.category, WaitcntViolationWarning) else
                    "uninitialised-read" if issubclass(w.category, UninitializedRegisterWarning) else None)
            if kind is None:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
                continue
            text = str(w.message)
            if text not in seen:
                seen.add(text)
                self.findings.append(Finding(kind, text))


def fault_finding(e: Exception) -> Finding:
    """An :class:`~vlpc.runtime.emulator.errors.EmulatorFault` as a fatal :class:`Finding`."""
    from vlpc.runtime.emulator.errors import OutOfBoundsAccess, UninitializedRegisterRead, WaitcntViolation

    kind = ("out-of-bounds" if isinstance(e, OutOfBoundsAccess) else "race" if isinstance(e, WaitcntViolation)
            else "uninitialised-read" if isinstance(e, UninitializedRegisterRead) else "fault")
    return Finding(kind, str(e), fatal=True)


@dataclass
class CodeObjectLaunch:
    """One command-line launch of a code object: ``code_object``, ``kernel``, ``grid``/``block``,
    ``args`` (what was passed), ``buffers`` (position -> (:class:`HostBuffer`, device buffer)),
    ``stats`` (the emulator's ``LaunchStats``; None when a fault stopped the launch), ``findings``."""

    code_object: Any
    kernel: Any
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: list
    buffers: dict
    stats: Any = None
    findings: list = field(default_factory=list)
    dynamic_lds: int = 0

    def outputs(self, device) -> dict[str, np.ndarray]:
        """Every buffer's contents after the launch, keyed by argument name or position."""
        return {hb.key: device.download(buf, hb.dtype, (buf.nbytes // hb.dtype.itemsize,))
                for hb, buf in self.buffers.values()}


def load_kernel(path: str, kernel_name: str | None):
    """(code object, kernel) of ``path``; the kernel is ``kernel_name`` or the only one there is."""
    from vlpc.runtime.code_object import CodeObjectError, load_code_object

    try:
        co = load_code_object(path)
    except CodeObjectError as e:
        raise VlpcError(str(e)) from None
    if kernel_name is None:
        if len(co.kernels) != 1:
            raise VlpcError(f"{path} holds {len(co.kernels)} kernels ({', '.join(sorted(co.kernels)) or 'none'}): "
                            "name one with --kernel")
        kernel_name = next(iter(co.kernels))
    try:
        return co, co.kernel(kernel_name)
    except CodeObjectError as e:
        raise VlpcError(str(e).replace("kernel '", "--kernel: kernel '", 1)) from None


def launch_code_object(device, path: str, kernel_name: str | None, grid: tuple, block: tuple,
                       specs: list[str], *, dynamic_lds: int = 0, seed: int = 0) -> CodeObjectLaunch:
    """Load ``path``, build the arguments from ``specs`` (:func:`plan_arguments`), check the launch
    (:meth:`~vlpc.runtime.device.Device.prepare_launch`) and run it on ``device``, collecting the
    emulator's findings; a fault stops the launch and is a fatal finding unless the device is strict
    (then it is raised)."""
    from vlpc.runtime.device import LaunchError
    from vlpc.runtime.emulator.errors import EmulatorFault

    co, kernel = load_kernel(path, kernel_name)
    values, host = plan_arguments(kernel, specs, seed)
    if dynamic_lds < 0:
        raise VlpcError(f"--dynamic-lds must not be negative, got {dynamic_lds}")
    # geometry and argument checks before any buffer exists
    probe = [0 if v is None else v for v in values]
    try:
        device.prepare_launch(co, kernel.name, grid, block, probe, dynamic_lds)
    except LaunchError as e:
        raise VlpcError(str(e)) from None
    buffers = {}
    for i, hb in host.items():
        buf = device.upload(hb.data)
        buffers[i] = (hb, buf)
        values[i] = buf
    run = CodeObjectLaunch(co, kernel, tuple(grid), tuple(block), values, buffers, dynamic_lds=dynamic_lds)
    with FindingCollector() as fc:
        try:
            run.stats = device.launch(co, kernel.name, grid=grid, block=block, args=values,
                                      dynamic_lds=dynamic_lds)
        except EmulatorFault as e:
            if getattr(device, "strict", False):
                raise
            fault = fault_finding(e)
    run.findings = fc.findings
    if run.stats is None:
        run.findings.append(fault)
    return run


def global_bytes(stats) -> int:
    """Bytes the launch moved between VGPRs/SGPRs and global memory (emulator counters)."""
    return int(stats.global_bytes_read + stats.global_bytes_written)


def cmd_run_code_object(args) -> int:
    """``vlpc run K.hsaco --kernel NAME --grid ... --block ... --arg ...``: launch on the emulator and
    print the counters and the findings (exit 4 when a fault stopped the launch)."""
    import numpy as np
    import io
    import sys
    from vlpc.runtime import get_device

    for opt, bad in (("--device hip", args.device == "hip"),
                     ("--inputs", args.inputs), ("--iterations", args.iterations != 1),
                     ("-m/-n/-k/--batch", any(getattr(args, x, None) is not None for x in ("m", "n", "k", "batch")))):
        if bad:
            raise VlpcError(f"{opt} is for an MLIR FILE; a code object runs once on the emulator "
                            "(it takes --grid, --block and --arg)")
    if args.seed < 0:
        raise VlpcError(f"--seed must be a non-negative integer, got {args.seed}")
    if args.save_output:
        check_not_input(args.save_output, args.file, "--save-output")
        check_writable(args.save_output)
    grid = parse_dims(args.grid, "grid", (1,))
    block = parse_dims(args.block, "block", (64,))
    opts: dict = {"strict": True} if args.strict else {"waitcnt": "report"}
    if args.verbose:  # the modeled time on the code object's processor's board (MI60 for gfx906)
        from vlpc.targets import board_for
        opts["gpu"] = board_for(load_kernel(args.file, args.kernel)[0].target_id.target.name)
    dev = get_device("emulator", **opts)
    run = launch_code_object(dev, args.file, args.kernel, grid, block, args.arg,
                             dynamic_lds=args.dynamic_lds, seed=args.seed)
    k = run.kernel
    print(f"{k.name} ({args.file}): grid {grid} x block {block} on the emulator "
          f"({k.descriptor.vgpr_count} VGPRs, {k.descriptor.sgpr_count} SGPRs, "
          f"{k.descriptor.group_segment_fixed_size + args.dynamic_lds} B LDS)")
    if run.stats is not None:
        print("\n".join(counters_text(run.stats)))
        timing = getattr(run.stats, "timing", None)
        if timing is not None:
            gb = global_bytes(run.stats) / (timing.time_us * 1e-6) / 1e9
            print(f"  {timing.summary()}; {gb:.1f} GB/s of global traffic modeled")
    print(f"  findings: {len(run.findings) or 'none'}")
    for f in run.findings:
        print(f"    {f}")
    if run.stats is None:
        return EXIT_DEVICE
    if args.save_output:
        data = io.BytesIO()
        np.savez(data, **run.outputs(dev))
        write_atomic(args.save_output, data.getvalue())
        print(f"  saved {len(run.buffers)} buffer(s) to {args.save_output} (.npz, one array per buffer argument)",
              file=sys.stderr)
    return 0

