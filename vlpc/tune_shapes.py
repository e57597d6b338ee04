"""The problems of ``vlpc tune --shapes FILE`` and ``vlpc tune --model FILE.gguf``.

**A shapes file** holds one GEMM per line in rocblas-bench's flags (``#`` starts a comment;
blank lines are skipped), e.g.::

    -f gemm -r f32_r --transposeA N --transposeB T -m 4096 -n 16 -k 4096
    -f gemm_ex --a_type f16_r --b_type f16_r --c_type f32_r --compute_type f32_r --transposeA T --transposeB N -m 4096 -n 16 -k 4096

rocblas-bench's matrices are column-major; as ``vlpc bench`` does, each line is tuned as vlpc's
row-major transpose (M and N exchanged, A and B exchanged: vlpc's layout is
``transposeB transposeA``), stored without padding (leading dimensions are not read).
Precisions (``-r``, or ``--a_type`` of ``gemm_ex``): ``f32_r``/``s``, ``f64_r``/``d``,
``f16_r``/``h`` (C in f32, as ``--c_type f32_r``: the dot kernel accumulates in f32) and
``i8_r`` (C in i32).  ``--alpha``/``--beta`` default to 1 and 0.

**A GGUF model** (read with the ``gguf`` package, an optional extra: ``pip install
'vlpc[tune]'``): every 2-D ``*.weight`` tensor but the token embedding (a lookup, not a GEMM) is
a linear layer ``y = x W^T``: W stored N x K (GGML's ``ne0 = K`` input features, ``ne1 = N``
outputs), so for each batch size B of ``--batch`` the GEMM is ``B x N x K``, layout NT,
activations of the weights' type.  Layers of the same shape and type are tuned once.  Weight
types vlpc does not compile (quantized GGML blocks, bf16) are listed as skipped with the reason.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass

from vlpc.errors import VlpcError

#: rocblas-bench's precisions -> vlpc's A/B element type.
PRECISIONS = {"f32_r": "f32", "s": "f32", "f64_r": "f64", "d": "f64", "f16_r": "f16", "h": "f16", "i8_r": "i8"}
#: C's element type of each A/B type (the dot kernels: f16 -> f32, int8 -> i32).
C_TYPES = {"f32": "f32", "f64": "f64", "f16": "f32", "i8": "i32"}
#: GGML tensor types vlpc compiles as linear layers' weights.
GGML_TYPES = {"F32": "f32", "F16": "f16"}


@dataclass(frozen=True)
class Shape:
    """One GEMM to tune, in vlpc's row-major terms (``C = alpha op(A) op(B) + beta C``)."""

    m: int
    n: int
    k: int
    dtype: str = "f32"
    layout: str = "NT"
    alpha: float = 1.0
    beta: float = 0.0
    source: str = ""  #: where it came from (file:line, or the GGUF tensors)

    @property
    def c_dtype(self) -> str:
        return C_TYPES[self.dtype]

    def name(self) -> str:
        return f"{self.m}x{self.n}x{self.k} {self.dtype} {self.layout}"

    def mlir(self) -> str:
        """The gemm-dialect module of this problem, sizes static."""
        t, c = self.dtype, self.c_dtype
        a = (self.m, self.k) if self.layout[0] == "N" else (self.k, self.m)
        b = (self.k, self.n) if self.layout[1] == "N" else (self.n, self.k)
        ta, tb, tc = f"memref<{a[0]}x{a[1]}x{t}>", f"memref<{b[0]}x{b[1]}x{t}>", f"memref<{self.m}x{self.n}x{c}>"
        s = "f32" if t == "f16" else c  # alpha/beta: f32 for f16 products, i32 for int8, else the type
        return ("builtin.module {\n"
                f"  func.func @gemm(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {s}, %beta: {s}) {{\n"
                f"    gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"{self.layout}\"}}\n"
                f"        : {ta}, {tb}, {tc}, {s}, {s}\n"
                "    func.return\n  }\n}\n")


class _LineParser(argparse.ArgumentParser):
    def error(self, message: str):
        raise VlpcError(message)


def _line_parser() -> argparse.ArgumentParser:
    p = _LineParser(add_help=False, allow_abbrev=False)
    p.add_argument("-f", "--function", default="gemm", choices=("gemm", "gemm_ex"))
    p.add_argument("-r", "--precision", default=None)
    for name in ("a_type", "b_type", "c_type", "d_type", "compute_type"):
        p.add_argument(f"--{name}", default=None)
    p.add_argument("--transposeA", "--transpose-a", dest="ta", default="N", type=str.upper, choices=("N", "T", "C"))
    p.add_argument("--transposeB", "--transpose-b", dest="tb", default="N", type=str.upper, choices=("N", "T", "C"))
    for name in "mnk":
        p.add_argument(f"-{name}", f"--{name}", dest=name, type=int, required=True)
    for name in ("lda", "ldb", "ldc", "ldd"):
        p.add_argument(f"--{name}", type=int, default=None)
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--beta", type=float, default=0.0)
    p.add_argument("--batch_count", "--batch-count", dest="batch_count", type=int, default=1)
    return p


def parse_line(line: str, where: str = "") -> Shape:
    """One rocblas-bench flags line as vlpc's row-major problem.  Raises :class:`VlpcError`."""
    try:
        a = _line_parser().parse_args(shlex.split(line))
    except VlpcError as e:
        raise VlpcError(f"{where}: {e}") from None
    except ValueError as e:
        raise VlpcError(f"{where}: {e}") from None
    prec = a.a_type or a.precision or "f32_r"
    if prec not in PRECISIONS:
        raise VlpcError(f"{where}: precision {prec} is not one vlpc compiles ({', '.join(PRECISIONS)})")
    dtype = PRECISIONS[prec]
    want_c = a.c_type or a.d_type
    if want_c and PRECISIONS.get(want_c, want_c) != C_TYPES[dtype] and not (dtype == "i8" and want_c == "i32_r"):
        raise VlpcError(f"{where}: C of {prec} is {C_TYPES[dtype]} in vlpc (got --c_type {want_c})")
    if a.batch_count != 1:
        raise VlpcError(f"{where}: --batch_count is not tuned from a shapes file (tune the batched MLIR file)")
    for name in "mnk":
        if getattr(a, name) <= 0:
            raise VlpcError(f"{where}: -{name} must be positive")
    ta, tb = ("T" if x == "C" else x for x in (a.ta, a.tb))
    return Shape(a.n, a.m, a.k, dtype, tb + ta, a.alpha, a.beta, where)


def read_shapes(path: str) -> list[Shape]:
    """The problems of a shapes file (see the module docstring).  Raises :class:`VlpcError`
    naming ``file:line`` for a bad line, or when the file holds none."""
    from vlpc.cli_support import read_input

    text = read_input(path)
    out = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line:
            out.append(parse_line(line, f"{path}:{i}"))
    if not out:
        raise VlpcError(f"{path}: no GEMM lines (one rocblas-bench flags line per problem, e.g. "
                        "-f gemm -r f32_r --transposeA N --transposeB T -m 1024 -n 1024 -k 1024)")
    return out


def model_shapes(path: str, batches: list[int]) -> tuple[list[Shape], list[str]]:
    """The linear layers of the GGUF file at ``path`` as GEMMs, one per batch size in
    ``batches`` and distinct (N, K, type); and notes on the tensors skipped (the reason, and
    how many layers share it).  Raises :class:`VlpcError` for an unreadable file or without
    the ``gguf`` package."""
    try:
        from gguf import GGUFReader
    except ImportError:
        raise VlpcError("--model needs the gguf package: pip install 'vlpc[tune]' (or pip install gguf)") from None
    try:
        reader = GGUFReader(path)
    except (OSError, ValueError, KeyError) as e:
        raise VlpcError(f"--model {path}: not a readable GGUF file ({e})") from None
    layers: dict[tuple, list[str]] = {}
    skipped: dict[str, list[str]] = {}
    for t in reader.tensors:
        name = t.name
        dims = [int(x) for x in t.shape]
        if not name.endswith(".weight") or len([d for d in dims if d > 1]) != 2 or name.startswith("token_embd"):
            continue
        gtype = t.tensor_type.name
        if gtype not in GGML_TYPES:
            skipped.setdefault(f"GGML type {gtype}: vlpc tune does not tune these weights yet (f32 and f16 only)",
                               []).append(name)
            continue
        k, n = dims[0], dims[1]  # GGML's ne0 (input features, contiguous) and ne1 (outputs)
        layers.setdefault((n, k, GGML_TYPES[gtype]), []).append(name)
    shapes = []
    for (n, k, dtype), names in layers.items():
        src = f"{names[0]}" + (f" and {len(names) - 1} more" if len(names) > 1 else "")
        for b in batches:
            shapes.append(Shape(b, n, k, dtype, "NT", 1.0, 0.0, src))
    notes = [f"skipped {len(v)} tensor(s) ({v[0]}{', ...' if len(v) > 1 else ''}): {why}" for why, v in skipped.items()]
    return shapes, notes


def batch_list(text: str) -> list[int]:
    """``"1,4,16,512"`` -> ``[1, 4, 16, 512]`` (argparse type of ``--batch`` with ``--model``)."""
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected batch sizes like 1,4,16,512, got {text!r}") from None
    if not out or any(x <= 0 for x in out):
        raise argparse.ArgumentTypeError(f"batch sizes must be positive integers, got {text!r}")
    return out


__all__ = ["Shape", "batch_list", "model_shapes", "parse_line", "read_shapes"]
