"""What the ``vlpc`` commands share: reading inputs, checking and writing outputs, the code
generation options, charts and the progress bar.

The command modules (:mod:`vlpc.cli` for ``compile``/``opt``, :mod:`vlpc.commands.run`,
:mod:`vlpc.bench`, :mod:`vlpc.report`) import from here; nothing here imports them, so
the driver has no import cycle (``cli.py`` dispatches to the commands, the commands
depend on this module only).
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import tempfile
from pathlib import Path

from vlpc.errors import VlpcError

#: Chart formats by file suffix (rendered by matplotlib).
CHART_FORMATS = {".svg": "svg", ".png": "png"}


# -- inputs and outputs ---------------------------------------------------------------------

def read_input(path: str) -> str:
    """The text of ``path`` (``-``: standard input); a one-line :class:`VlpcError` when it
    cannot be read or is not UTF-8."""
    try:
        if path == "-":
            return sys.stdin.buffer.read().decode("utf-8") if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise VlpcError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        path = "standard input" if path == "-" else path
        raise VlpcError(f"cannot read {path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset "
                        f"{e.start}); expected an MLIR file") from None


def _through(path: str) -> Path:
    """The file an output named ``path`` lands in, as ``open()`` (and ``cc -o``) would reach it:
    a symbolic link is followed to its target (a dangling one to the file it names), so the
    link itself stays a link; anything else is ``path`` itself."""
    p = Path(path)
    return Path(os.path.realpath(p)) if p.is_symlink() else p


def _special(p: Path) -> bool:
    """``p`` exists and is not a regular file or directory: a character or block device (e.g.
    ``/dev/null``), a FIFO or a socket, which an output is written *into*, never replaced."""
    try:
        mode = p.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def write_atomic(path: str, data: str | bytes) -> None:
    """Write the output ``path`` as ``cc -o`` does, through whatever the path names.

    * a regular file or a new path: via a temporary file in the same directory and a rename,
      so a failure never leaves a partial file or clobbers an existing good one (the
      replaced file's permission bits are kept; a new one gets the umask's);
    * a character or block device (``/dev/null``) or a FIFO: opened and written in place
      (``open(2)`` without ``O_CREAT``), never replaced or unlinked; a FIFO blocks until a
      reader opens it, as any writer does;
    * a symbolic link: followed, and its target written by the rules above (the link stays).

    Nothing but the named output (and, for the rename, a ``.NAME.*`` temporary beside it,
    removed on failure) is created or changed.  Failures are one-line :class:`VlpcError` errors."""
    p = _through(path)
    if p.is_dir():
        raise VlpcError(f"cannot write {path}: it is a directory")
    if _special(p):
        payload = data.encode("utf-8") if isinstance(data, str) else data
        try:
            fd = os.open(p, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
        except OSError as e:
            raise VlpcError(f"cannot write {path}: {e.strerror or e}") from None
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
        except OSError as e:
            raise VlpcError(f"cannot write {path}: {e.strerror or e}") from None
        return
    mode = "wb" if isinstance(data, bytes) else "w"
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent if str(p.parent) else ".")
    except OSError as e:
        raise VlpcError(f"cannot write {path}: {e.strerror or e} (directory {p.parent})") from None
    try:
        with os.fdopen(fd, mode) as f:
            f.write(data)
        if p.exists():  # keep the permissions of the file being replaced
            try:
                os.chmod(tmp, p.stat().st_mode & 0o7777)
            except OSError:
                pass
        else:  # a new file gets the usual umask-derived mode, not mkstemp's 0600
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, p)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise VlpcError(f"cannot write {path}: {e.strerror or e}") from None
        raise


def check_writable(path: str, what: str = "") -> None:
    """Fail before a long run when ``path`` cannot be written (by :func:`write_atomic`'s rules:
    a device or FIFO, or a symbolic link to one, must be writable itself; a regular file or a
    new path needs a writable directory for the atomic rename)."""
    p = _through(path)
    parent = p.parent if str(p.parent) else Path(".")
    label = f"{what} " if what else ""
    if p.is_dir():
        raise VlpcError(f"cannot write {label}{path}: it is a directory")
    if _special(p):
        if not os.access(p, os.W_OK):
            raise VlpcError(f"cannot write {label}{path}: permission denied")
        return
    if not parent.is_dir():
        raise VlpcError(f"cannot write {label}{path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise VlpcError(f"cannot write {label}{path}: directory {parent} is not writable")
    try:  # what os.access cannot tell: a read-only file system, or root on one that refuses files
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as e:
        raise VlpcError(f"cannot write {label}{path}: {e.strerror or e} (directory {parent})") from None


def check_not_input(output: str | None, input_path: str | None, option: str = "-o") -> None:
    """Refuse an ``output`` that is the input file itself (under any spelling of its path):
    writing it would replace the user's MLIR with the command's output."""
    if not output or output == "-" or not input_path or input_path == "-":
        return
    try:
        same = os.path.samefile(output, input_path)
    except OSError:  # one of them does not exist (yet): not the same file
        return
    if same:
        raise VlpcError(f"{option} {output} is the input file: writing it would replace {input_path}; "
                        "choose another output name")


#: Suffixes of the files a report writes from one ``-o PREFIX`` (PREFIX.md, PREFIX.csv, PREFIX.svg).
PREFIX_SUFFIXES = (".md", ".csv", ".svg", ".png")


def output_prefix(given: str | None, default: str) -> str:
    """The PREFIX of a report's outputs (``vlpc report``, ``report --energy``, ``bench --energy``):
    ``given`` (``-o``) without a suffix of the files written from it (``-o out.md`` means
    ``out``, not ``out.md.md``), else ``default``."""
    prefix = given or default
    for suffix in PREFIX_SUFFIXES:
        if prefix.lower().endswith(suffix) and len(prefix) > len(suffix):
            return prefix[:-len(suffix)]
    return prefix


def add_output_prefix(p, default: str, when: str = "") -> None:
    """``-o/--output PREFIX`` of the commands that write a report as PREFIX.md, PREFIX.csv and a
    chart PREFIX.svg (``vlpc report``, ``report --energy``, ``bench --energy``; the rule:
    :func:`output_prefix`).  ``default``: the prefix's default as the help names it; ``when``:
    the mode the option belongs to (e.g. "with --energy: ")."""
    p.add_argument("-o", "--output", metavar="PREFIX",
                   help=f"{when}write PREFIX.md, PREFIX.csv and the chart PREFIX.svg (default: {default} in the "
                        f"current directory; a .md, .csv, .svg or .png suffix given is dropped)")


def check_chart(path: str, option: str = "--chart") -> str:
    """The chart format (``svg`` or ``png``) from ``path``'s suffix, checked before any work:
    a one-line :class:`VlpcError` for another suffix, an unwritable place or no matplotlib."""
    fmt = CHART_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise VlpcError(f"{option} {path}: the chart format comes from the suffix: .svg or .png "
                        f"(got '{Path(path).suffix or 'no suffix'}')")
    check_writable(path, "chart")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise VlpcError(f"{option} needs matplotlib (a dependency of vlpc): pip install matplotlib") from None
    return fmt


def save_figure(fig, path: str) -> None:
    """Save a matplotlib figure atomically in the format of ``path``'s suffix."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format=check_chart(path), dpi=120)
    write_atomic(path, buf.getvalue())


def pyplot():
    """matplotlib's pyplot on the non-interactive Agg backend (a one-line error without it)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise VlpcError("charts need matplotlib (a dependency of vlpc): pip install matplotlib") from None
    matplotlib.rcParams["svg.fonttype"] = "none"  # SVG text stays text (searchable, smaller)
    matplotlib.rcParams["svg.hashsalt"] = "vlpc"  # stable element ids: the same chart gives the same file
    return plt


# -- the parser -------------------------------------------------------------------------------

class OneLineParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose usage errors (a bad value, an unknown or missing
    argument) are one line on standard error, ``PROG: error: MESSAGE (see PROG --help)``, and
    exit code 2, instead of argparse's usage block and error line.  The subcommands' parsers
    (``add_subparsers().add_parser``) are of the same class, so every ``vlpc`` command answers
    a mistake the same way.  A long option is matched whole, as mlir-opt and LLVM tools do: a
    prefix (``--see`` for ``--seed``) is an unrecognized argument, not silently another option."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but unrecognized arguments are reported by the subcommand's parser
        (``vlpc run: error: unrecognized arguments: ...``), the one whose options were meant."""
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            target = self
            for action in self._actions:
                if isinstance(action, argparse._SubParsersAction):
                    target = action.choices.get(getattr(ns, action.dest, None), self)
            target.error(f"unrecognized arguments: {' '.join(extra)}")
        return ns


# -- code generation options -----------------------------------------------------------------

def parse_tile_arg(text: str) -> tuple[int, int]:
    """argparse type for ``MxN``."""
    try:
        a, b = text.lower().split("x")
        m, n = int(a), int(b)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected MxN (e.g. 64x256), got '{text}'") from None
    if m < 1 or n < 1:
        raise argparse.ArgumentTypeError(f"expected MxN with M and N at least 1 (e.g. 64x256), got '{text}'")
    return m, n


def positive(text: str) -> int:
    """argparse type for a positive integer."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return value


def check_clock(clock: float | None, memory_clock: float | None = None) -> None:
    """``--clock MHZ`` (bench, report, tune) or ``--memory-clock MHZ`` outside the range the
    boards' timing model accepts (:func:`vlpc.targets.get_board` holds it) is a one-line
    :class:`VlpcError` (exit 1) before any work, as ``--energy`` reports it."""
    from vlpc.targets import TargetError, get_board

    for opt, kw, value in (("--clock", "clock_mhz", clock), ("--memory-clock", "memory_clock_mhz", memory_clock)):
        if value is None:
            continue
        try:
            get_board("mi60", **{kw: value})
        except TargetError as e:
            raise VlpcError(f"{opt} {value:g}: {e}") from None


def split_k_arg(text: str) -> int | str:
    """argparse type for ``--split-k``: ``auto`` or a positive integer."""
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a positive integer, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a positive integer, got '{text}'")
    return value


STRATEGY_HELP = ("instruction selection: sqc (A in SGPRs, no LDS: the seed's scheme, default) or lds "
                 "(the legacy kernel: A and B tiles through LDS, 8x8 micro tile per work-item)")


class _Given(argparse.Action):
    """Mixin of the code generation options' actions: records the option's ``dest`` in the
    namespace's ``given_options`` set when it appears on the command line, so an options file
    (``--options TUNED.json``) fills only what the command line left out."""

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        given = set(getattr(namespace, "given_options", ()) or ())
        given.add(self.dest)
        namespace.given_options = given


class _StoreGiven(_Given, argparse._StoreAction):
    pass


class _StoreFalseGiven(_Given, argparse._StoreFalseAction):
    pass


def add_codegen_options(p: argparse.ArgumentParser, strategy: bool = False) -> None:
    """The code generation options shared by compile, run, bench and report."""
    if strategy:
        p.add_argument("--strategy", action=_StoreGiven, default="sqc", choices=("sqc", "lds"), help=STRATEGY_HELP)
    p.add_argument("--schedule", action=_StoreGiven, default="default", choices=("default", "cover", "seed"),
                   help="strategy sqc's loop: default (A in batches of 64 SGPRs, each loaded after the previous "
                        "batch's FMAs: one lgkmcnt(0) wait per 64 FMAs), cover (batches of 32 SGPRs, each loaded "
                        "while the previous one feeds 32 FMAs: twice the waits, each covered), or seed (the seed's hand-written 64x256 SGEMM loop: "
                        "s_load_dwordx8 groups, B double-buffered; f32, layout NT, M/N/K multiples of 64/256/8)")
    p.add_argument("--no-forwarding", dest="forwarding", action=_StoreFalseGiven,
                   help="order the FMAs K-major so no accumulator comes from the FMA just before it (the "
                        "seed's no-forwarding comparison kernel; C is bit-identical)")
    p.add_argument("--a-transpose", action=_StoreGiven, default="auto", choices=("auto", "pre", "in-kernel"),
                   help="f16/int8 with A stored K x M (layouts TN, TT): pre (a kernel copies A into an M x K "
                        "workspace first), in-kernel (the dot kernel packs A by SALU ops where it can) or auto "
                        "(default: the modeled faster one, passes/isel/transpose.py); in-kernel also keeps B "
                        "stored K x N (layouts NN, TN) gathered in the kernel, which auto transposes first for a static M >= 64 (int8) / 256 (f16)")
    p.add_argument("--target", action=_StoreGiven, default="gfx906",
                   help="target id: gfx906 (sramecc/xnack 'any'), or e.g. gfx906:sramecc+:xnack- (default: "
                        "%(default)s); inside a pass option it is quoted: 'gcn-asm{target=\"gfx906:xnack-\"}'")
    p.add_argument("--macro-tile", action=_StoreGiven, type=parse_tile_arg, default=None, metavar="MxN",
                   help="macro tile per workgroup (default for strategy sqc: 32 rows for f32/f16/int8, 16 for f64, "
                        "the columns (64/128/256) chosen by the timing-model surrogate for --gpu; strategy lds and "
                        "--schedule seed: 64x256 f32, 32x256 f64; the seed also uses 64x64, 64x128)")
    p.add_argument("--micro-tile", action=_StoreGiven, type=parse_tile_arg, default=None, metavar="MxN",
                   help="micro tile per work-item, Mx1 (default: the macro tile's rows x 1)")
    p.add_argument("--k-step", action=_StoreGiven, type=int, default=None, choices=(8, 16),
                   help="K values per A load step: 16 (f32 default: one s_load_dwordx16 per row) or 8 "
                        "(f64 default); f16/int8: dwords of packed K per step (16 or 8; default: the automatic "
                        "plan weighs both, the decode GEMV uses its own)")
    p.add_argument("--waves-per-simd", action=_StoreGiven, type=int, default=None,
                   help="occupancy the VGPR budget is chosen for (default: strategy sqc picks the most waves, "
                        "up to 4, whose register budget fits the kernel's demand; lds: 2 -> 128 VGPRs)")
    p.add_argument("--split-k", action=_StoreGiven, type=split_k_arg, default="auto", metavar="S|auto",
                   help="K slices across workgroups: auto (default: chosen from the shape and --cus by the cost "
                        "model of gemm-split-k), 1 (no split) or S > 1")
    p.add_argument("--split-mode", action=_StoreGiven, default="workspace", choices=("workspace", "atomic"),
                   help="how global K slices are summed: workspace (a reduce kernel sums partials in a fixed "
                        "order: deterministic, default) or atomic (global_atomic_cmpswap loops into C)")
    p.add_argument("--local-split", action=_StoreGiven, type=positive, default=1, metavar="L",
                   help="K slices across the wavefront groups of a workgroup, reduced through LDS (default: 1; "
                        "with --split-k auto, 1 lets the plan choose L for f16/int8 GEMMs and decode GEMVs: "
                        "give --split-k too to keep L = 1)")
    p.add_argument("--wg-group", action=_StoreGiven, type=positive, default=None, metavar="G",
                   help="the workgroup order: consecutive workgroups cover G tile rows of one tile column, then "
                        "the next column (G a power of two; 1: the hardware's row-major order; default: "
                        "automatic), so the workgroups in flight share B's lines in the L2 (docs/kernels.md)")
    p.add_argument("--cus", action=_StoreGiven, type=positive, default=None,
                   help="compute units of the device the split-K plan is for (default: the --gpu board's: 60 on "
                        "the MI50, 64 on the MI60)")
    if "--gpu" not in p._option_string_actions:  # vlpc bench and report have their own (the same board)
        from vlpc.targets import default_boards_text

        p.add_argument("--gpu", action=_StoreGiven, default=None, choices=("mi50", "mi60", "mi25"),
                       help="board the automatic plan (macro tile N, split-K) is made for, and `run -v` models "
                            f"(default: the target's default board: {default_boards_text()})")
    p.add_argument("--options", metavar="TUNED.json", default=None,
                   help="take the code generation options from a `vlpc tune -o` result; an option also given on "
                        "the command line wins over the file's")


def codegen_options(args: argparse.Namespace) -> dict:
    """Code generation options of :func:`vlpc.compile` from the command line (None: the
    element type's default)."""
    opts = dict(macro_tile=tuple(args.macro_tile) if args.macro_tile else None,
                micro_tile=tuple(args.micro_tile) if args.micro_tile else None, k_step=args.k_step,
                waves_per_simd=args.waves_per_simd, split_k=args.split_k, split_mode=args.split_mode,
                local_split=args.local_split, cus=args.cus,
                strategy=getattr(args, "strategy", "sqc"), schedule=getattr(args, "schedule", "default"),
                forwarding=getattr(args, "forwarding", True), gpu=getattr(args, "gpu", None),
                a_transpose=getattr(args, "a_transpose", "auto"))
    if getattr(args, "wg_group", None) is not None:
        opts["wg_group"] = args.wg_group
    if getattr(args, "code_object_version", None) not in (None, 5):
        opts["code_object_version"] = args.code_object_version
    if getattr(args, "options", None):  # the file fills what the command line left out
        given = set(getattr(args, "given_options", ()) or ())
        if getattr(args, "gpu", None) is not None:  # bench's own --gpu records nothing
            given.add("gpu")
        opts.update({k: v for k, v in tuned_options(args.options).items() if k not in given})
    return opts


def tuned_options(path: str) -> dict:
    """The ``options`` of a ``vlpc tune -o`` JSON file (a one-line error for anything else)."""
    import json

    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise VlpcError(f"--options {path}: {e.strerror}") from None
    except ValueError as e:
        raise VlpcError(f"--options {path}: not a JSON file written by `vlpc tune -o` ({e})") from None
    opts = data.get("options") if isinstance(data, dict) else None
    if not isinstance(opts, dict):
        raise VlpcError(f"--options {path}: no 'options' object (write it with `vlpc tune -o`)")
    out = dict(opts)
    for key in ("macro_tile", "micro_tile"):
        if isinstance(out.get(key), list):
            out[key] = tuple(out[key])
    from vlpc.options import Options

    try:  # names and tiles checked here, so an error names the file it came from
        Options.from_kwargs(out)
    except VlpcError as e:
        raise VlpcError(f"--options {path}: {e}") from None
    return out


#: The size options' help when a command does not give its own.
SIZE_HELP = {"m": "M, for a dynamic ('?') dimension", "n": "N, for a dynamic dimension",
             "k": "K, for a dynamic dimension"}


def add_size_options(p, **helps: str) -> None:
    """The problem size options of ``vlpc run``, ``bench``, ``report`` and ``tune``, spelled
    alike: ``-m/--m M``, ``-n/--n N``, ``-k/--k K`` (rocblas-bench's spelling and mlir-style
    long ones), integers stored as ``args.m``, ``args.n``, ``args.k`` (None when not given;
    :func:`check_size_options` refuses one below 1).  ``p``: a parser or an argument group;
    ``helps``: a command's own help for ``m``, ``n`` or ``k`` (default :data:`SIZE_HELP`)."""
    for name in "mnk":
        p.add_argument(f"-{name}", f"--{name}", dest=name, type=int, default=None, metavar=name.upper(),
                       help=helps.get(name, SIZE_HELP[name]))


def single_kernel(compiled, command: str):
    """The one kernel of ``compiled`` for ``vlpc run``, ``bench`` and ``tune``, which run one GEMM:
    a module of several (one per ``func.func``) is a one-line :class:`VlpcError` naming them
    (``vlpc compile`` builds them all; from Python, ``compiled.kernel(name)`` picks one)."""
    if len(compiled.kernels) != 1:
        raise VlpcError(f"vlpc {command} runs one GEMM, and the module has {len(compiled.kernels)} kernels "
                        f"({', '.join(compiled.kernels)}): give it a file with one func.func holding a gemm.matmul")
    kernel = compiled.kernel()
    fmt = kernel.launch_info.get("b_format")
    if fmt and command == "tune":  # the quantized GEMV: run, bench, profile, report --energy (docs/quantized.md)
        raise VlpcError(f"vlpc {command} does not take {fmt} weights yet (kernel {kernel.name}): run it with vlpc run, "
                        "model it with vlpc bench or benchmarks/quant_gemv.py (docs/quantized.md)")
    return kernel


def check_finite_scalars(args: argparse.Namespace, float32: bool = True) -> None:
    """``--alpha``/``--beta`` given as NaN or an infinity (``float32``: or beyond float32's range)
    is a one-line :class:`VlpcError` (exit 1) before any work, as ``vlpc run`` refuses them."""
    import math

    for name in ("alpha", "beta"):
        x = getattr(args, name, None)
        if x is not None and not (math.isfinite(x) and (not float32 or abs(x) <= 3.4028234663852886e38)):
            raise VlpcError(f"--{name} {x} is not a finite {'float32' if float32 else 'number'}")


def check_size_options(args: argparse.Namespace, names: tuple[str, ...] = ("m", "n", "k", "batch")) -> None:
    """A size option (``--m``, ``--n``, ``--k``, ``--batch``) below 1 is a one-line
    :class:`VlpcError` (exit 1), before anything is compiled."""
    for name in names:
        given = getattr(args, name, None)
        if given is not None and given <= 0:
            raise VlpcError(f"--{name} must be positive, got {given}")


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar (it is shown on standard error only when that is a terminal)")


# -- progress --------------------------------------------------------------------------------

def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class Progress:
    """A progress bar of workgroups done / total with elapsed time and an estimate of the rest
    (tqdm), on standard error when it is a terminal and not ``quiet``; otherwise nothing.

    Call it with the workgroups done so far (the ``progress`` callback of
    :meth:`vlpc.kernel.CompiledKernel.execute` and of the emulator's ``run_dispatch``);
    use it as a context manager so the bar is removed when the run ends."""

    def __init__(self, total: int, desc: str, quiet: bool = False, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.desc = desc
        self.enabled = not quiet and _isatty(self.stream)
        self.bar = None
        self.total = 0
        self.base = 0
        self._last = 0
        self.add_total(total)

    def add_total(self, workgroups: int) -> None:
        """Raise the total by ``workgroups`` (a command that learns its launches as it goes)."""
        self.total += max(0, int(workgroups))
        if not self.enabled or self.total <= 0:
            return
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, desc=self.desc, unit="wg", file=self.stream, leave=False,
                            dynamic_ncols=True, mininterval=0.2,
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} workgroups "
                                       "[{elapsed}<{remaining}]")
        else:
            self.bar.total = self.total
            self.bar.refresh()

    def __call__(self, done: int) -> None:
        """``done``: workgroups done in the current run; a smaller count than the last one
        starts the next run (the next iteration or size), counted after the previous ones."""
        if done < self._last:
            self.base += self._last
        self._last = done
        if self.bar is not None:
            n = min(self.base + done, self.bar.total)
            if n > self.bar.n:
                self.bar.update(n - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def load_npy(path: str, name: str):
    """A ``.npy`` input (``vlpc run --inputs``, ``--arg i=FILE.npy``) as a NumPy array; anything else
    (missing, not NumPy, pickled objects, an ``.npz`` archive) is a one-line :class:`VlpcError`."""
    import numpy as np  # (on first use: vlpc --help imports this module)

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


def counters_text(stats) -> list[str]:
    """What the emulator counted in the launch, as labelled lines a first-time reader can follow
    (the counts of :class:`vlpc.runtime.emulator.core.LaunchStats`; the ISA terms in brackets)."""
    c = stats.by_class
    return [
        "  emulator counts (what the kernel did, not how long it took; -v adds the modeled time):",
        f"    instructions: {stats.instructions:,} run, counted once per wavefront of 64 work-items "
        f"(vector ALU [VALU] {c.get('valu', 0):,}, scalar ALU [SALU] {c.get('salu', 0):,}, scalar loads [SMEM] "
        f"{c.get('smem', 0):,}, vector memory [VMEM] {c.get('vmem', 0):,}, local data share [LDS] {c.get('lds', 0):,}, "
        f"waits for memory [s_waitcnt] {c.get('waitcnt', 0):,})",
        f"    registers: vector [VGPR] reads {stats.vgpr_reads:,} ({stats.vgpr_reads_forwarded:,} of them straight "
        f"from the previous instruction's result), writes {stats.vgpr_writes:,}; scalar [SGPR] reads "
        f"{stats.sgpr_reads:,} (32-bit registers: a VGPR access counts once per active work-item, an SGPR "
        f"access once per wavefront)",
        f"    memory: local data share {stats.lds_bytes_read + stats.lds_bytes_written:,} bytes; global memory "
        f"{stats.global_bytes_read:,} bytes read, {stats.global_bytes_written:,} written; workgroup barriers "
        f"{stats.barriers:,}",
    ]
