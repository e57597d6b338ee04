"""Running and checking the quantized-weight GEMV (passes/isel/quant.py, quant_k.py; docs/quantized.md).

B is the bytes of a GGUF tensor (Q8_0, Q4_0 or Q4_K): N rows of K / 32 blocks (Q4_K: K / 256
super-blocks), as :mod:`gguf` writes and reads them; or vlpc's AWQ/GPTQ-style int4 group formats
(:func:`quantize_int4`, :func:`dequantize_int4`: NumPy from the format's definition, not gguf).  The `gguf` package (PyPI; the ``quant`` extra)
is the oracle: its quantizer makes random test weights (:func:`random_weights`; Q4_K, which it cannot
quantize: :func:`quantize_q4_k`) and its dequantizer gives the weights of the float64 reference
(:func:`dequantize`; Q4_K's bound: :func:`split_reference`).  :func:`read_gguf_tensor` reads one tensor of a ``.gguf`` file by
name with ``gguf.GGUFReader`` (``vlpc run --weights model.gguf:blk.0.ffn_up.weight``).

Buffers are exactly sized as for the other dot kernels (vlpc/api.py, vlpc/verify.py): A's row gaps NaN, B's
gaps after each row's last block a garbage byte pattern (0xB5), C's NaN, compared bit for bit
after the launch.

**Bound.** Each block's 32 exact f16 products are summed by 16 ``v_dot2_f32_f16`` from 0 (one
rounding each), the block sum is added to the row's accumulator by one FMA with the block's scale
(whose product with a quantized value is exact in f32: GGUF's weight d * q), the L wavefront
groups' sums (and S split-K slices') are added (at most S L roundings) and the epilogue's ``beta * C`` and FMA round
twice: recursive summation (Higham 2002, eq. 3.4) bounds every element of C by
``gamma_n(2^-24) (|alpha| sum_k |a_k| |w_k| + |beta| |c|)``, n = 16 + K / 32 + S L + 2, plus f16 C's
final rounding and the epilogue's terms as in vlpc.verify.dot_error_bound.
"""

from __future__ import annotations

import numpy as np

from vlpc.errors import VlpcError
from vlpc.verify import Problem, geometries, pack

#: The garbage byte in B's row gaps (after each row's last block).
B_PAD = 0xB5


def _int4_groups() -> dict:
    """dialects/gemm.py's int4 group formats (name -> group size), imported when needed."""
    from vlpc.dialects.gemm import INT4_GROUP_FORMATS

    return INT4_GROUP_FORMATS


def _gguf():
    try:
        import gguf
    except ImportError:
        raise VlpcError("the quantized-weight formats need the gguf package: pip install 'vlpc[quant]' "
                        "(or pip install gguf)") from None
    return gguf


def ggml_type(fmt: str):
    """gguf's GGMLQuantizationType of a ``b_format`` name ("q8_0", "q4_0")."""
    return getattr(_gguf().GGMLQuantizationType, fmt.upper())


def row_bytes(fmt: str, k: int) -> int:
    """Bytes of one row of K weights in ``fmt`` (``B_FORMATS``: 32 weights per block, as gguf's
    GGML_QUANT_SIZES, which tests/quant/test_quant_gemv.py compares; an int4 group format's last
    partial group: dialects/gemm.py's ``quant_row_bytes``)."""
    from vlpc.dialects.gemm import quant_row_bytes

    return quant_row_bytes(fmt, k)


def random_weights(fmt: str, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """N x K standard normal weights quantized by gguf (Q4_K, which gguf cannot quantize: by
    :func:`quantize_q4_k`): uint8 (N, row bytes)."""
    w = rng.standard_normal((n, k)).astype(np.float32)
    if fmt in _int4_groups():
        return quantize_int4(w, _int4_groups()[fmt])
    if fmt == "q4_k":
        return quantize_q4_k(w)
    return np.ascontiguousarray(_gguf().quants.quantize(w, ggml_type(fmt)))


#: Bytes of a GGUF ``block_q4_K`` and its weights (ggml-common.h: QK_K = 256).
Q4K_BLOCK, Q4K_BYTES = 256, 144


def quantize_q4_k(w: np.ndarray) -> np.ndarray:
    """Weights ``w`` (N x K, K a multiple of 256) in GGUF Q4_K: uint8 (N, K / 256 x 144).  A plain
    min/max quantizer (not llama.cpp's search: the gguf package has no Q4_K quantizer), valid
    ``block_q4_K`` layout: per sub-block of 32 the scale (max - min) / 15 and minimum -min (min <= 0)
    quantized to 6 bits against the super-block's ``d = max scale / 63``, ``dmin = max minimum / 63``
    (f16), then q = round((x + dmin m) / (d sc)) in 0..15.  Weight ``d sc q - dmin m``, as
    ``gguf.quants.dequantize`` reads it back."""
    w = np.asarray(w, np.float32)
    n, k = w.shape
    if k % Q4K_BLOCK:
        raise VlpcError(f"Q4_K rows are whole super-blocks of {Q4K_BLOCK} weights, got K={k}")
    step = max(1, (1 << 22) // k)  # rows at a time: float64 work arrays of 32 MiB, not the whole tensor's
    if n > step:
        return np.concatenate([quantize_q4_k(w[i:i + step]) for i in range(0, n, step)])
    x = w.reshape(-1, 8, 32).astype(np.float64)  # super-blocks x sub-blocks x weights
    lo = np.minimum(x.min(-1), 0.0)
    scale = (x.max(-1) - lo) / 15.0
    mins = -lo
    d = (scale.max(-1) / 63.0).astype(np.float16)
    dmin = (mins.max(-1) / 63.0).astype(np.float16)
    d64, dm64 = d.astype(np.float64)[:, None], dmin.astype(np.float64)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.clip(np.rint(np.where(d64 > 0, scale / d64, 0)), 0, 63).astype(np.uint8)
        m = np.clip(np.rint(np.where(dm64 > 0, mins / dm64, 0)), 0, 63).astype(np.uint8)
        step = (d64 * sc)[..., None]
        q = np.where(step > 0, (x + (dm64 * m)[..., None]) / step, 0)
    q = np.clip(np.rint(q), 0, 15).astype(np.uint8)
    blocks = np.zeros((x.shape[0], Q4K_BYTES), np.uint8)
    blocks[:, 0:2] = d.reshape(-1, 1).view(np.uint8)
    blocks[:, 2:4] = dmin.reshape(-1, 1).view(np.uint8)
    s = np.zeros((x.shape[0], 12), np.uint8)  # ggml's get_scale_min_k4 packing
    s[:, 0:4] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
    s[:, 4:8] = (m[:, 0:4] & 63) | ((m[:, 4:8] >> 4) << 6)
    s[:, 8:12] = (sc[:, 4:8] & 15) | ((m[:, 4:8] & 15) << 4)
    blocks[:, 4:16] = s
    q = q.reshape(-1, 4, 2, 32)  # chunks of 64: sub-block 2c in the low nibbles, 2c + 1 in the high
    blocks[:, 16:] = (q[:, :, 0] | (q[:, :, 1] << 4)).reshape(-1, 128)
    return blocks.reshape(n, -1)


def quantize_int4(w: np.ndarray, group: int) -> np.ndarray:
    """Weights ``w`` (N x K) in vlpc's int4 group format ``int4_g<group>`` (docs/quantized.md): uint8
    (N, row bytes): K // group groups of 4 + group / 2 bytes, then for K % group != 0 (an even count)
    the last, partial group of K % group weights (4 + (K % group) / 2 bytes).  Asymmetric min/max
    quantization as GPTQ's and AWQ's (per group ``s = (max - min) / 15`` as f16, ``z = round(-min / s)``
    clipped to 0..15, ``q = clip(round(x / s) + z, 0, 15)``); weight ``(q - z) s`` (:func:`dequantize_int4`)."""
    w = np.asarray(w, np.float32)
    n, k = w.shape
    if k % 2:
        raise VlpcError(f"int4_g{group} rows hold an even number of weights (two a byte), got K={k}")
    full = k - k % group
    if k % group:  # the whole groups, then the partial one (its own header)
        return np.concatenate([quantize_int4(w[:, :full], group) if full else np.zeros((n, 0), np.uint8),
                               quantize_int4(w[:, full:], k % group)], axis=1)
    x = w.reshape(n, k // group, group).astype(np.float64)
    lo, hi = np.minimum(x.min(-1), 0.0), np.maximum(x.max(-1), 0.0)
    s = ((hi - lo) / 15.0).astype(np.float16)
    s64 = s.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.clip(np.rint(np.where(s64 > 0, -lo / s64, 0)), 0, 15)
        q = np.where(s64[..., None] > 0, np.rint(x / s64[..., None]) + z[..., None], 0)
    q = np.clip(q, 0, 15).astype(np.uint8)
    out = np.zeros((n, k // group, 4 + group // 2), np.uint8)
    out[..., 0:2] = s.reshape(n, -1, 1).view(np.uint8)
    out[..., 2] = z.astype(np.uint8)
    out[..., 4:] = q[..., 0::2] | (q[..., 1::2] << 4)
    return out.reshape(n, -1)


def dequantize_int4(rows: np.ndarray, group: int) -> np.ndarray:
    """The N x K weights ``(q - z) s`` of ``rows`` (uint8, N x row bytes) in the int4 group format
    (docs/quantized.md: per group an f16 scale, a u8 zero point, an ignored byte, then the nibbles,
    weight 2j in the low nibble of byte j; row bytes not a whole number of groups: the last group is
    partial, its 4-byte header then 2 weights a byte), float64; a zero point above 15 is a VlpcError."""
    b = np.ascontiguousarray(rows, np.uint8)
    n = b.shape[0]
    size = 4 + group // 2
    full = b.shape[1] // size * size
    if full < b.shape[1]:  # the last, partial group: K % G = 2 (bytes - 4) weights
        rest = b.shape[1] - full
        if rest < 5:
            raise VlpcError(f"int4_g{group}: rows of {b.shape[1]} bytes are neither whole groups of {size} bytes nor "
                            "end in a partial group (a 4-byte header and its nibbles)")
        head = dequantize_int4(b[:, :full], group) if full else np.zeros((n, 0))
        return np.concatenate([head, dequantize_int4(b[:, full:], 2 * (rest - 4))], axis=1)
    g = b.reshape(n, -1, size)
    s = g[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float64)
    z = g[..., 2].astype(np.float64)
    if (z > 15).any():
        raise VlpcError(f"int4_g{group}: a zero point above 15 ({int(z.max())}): zero points are 4-bit")
    nib = g[..., 4:]
    q = np.stack([nib & 15, nib >> 4], -1).reshape(n, g.shape[1], group).astype(np.float64)
    return ((q - z[..., None]) * s[..., None]).reshape(n, -1)


def weight_magnitudes(fmt: str, rows: np.ndarray) -> np.ndarray | None:
    """For Q4_K (weight d sc q - dmin m, which the kernel sums as two terms): |d sc q| + |dmin m| per
    weight, float64 N x K, both terms dequantized by gguf from the blocks with dmin or d zeroed; None
    for the other formats (their |weight|)."""
    if fmt != "q4_k":
        return None
    b = np.ascontiguousarray(rows, np.uint8).reshape(-1, Q4K_BYTES).copy()
    scaled, minimum = b.copy(), b.copy()
    scaled[:, 2:4] = 0  # dmin = 0: d sc q
    minimum[:, 0:2] = 0  # d = 0: -dmin m
    n = rows.shape[0]
    return (np.abs(dequantize(fmt, scaled.reshape(n, -1))) + np.abs(dequantize(fmt, minimum.reshape(n, -1))))


def dequantize(fmt: str, rows: np.ndarray) -> np.ndarray:
    """The N x K weights of ``rows`` (uint8, N x row bytes) as gguf dequantizes them (the int4 group
    formats: :func:`dequantize_int4`), float64."""
    if fmt in _int4_groups():
        return dequantize_int4(rows, _int4_groups()[fmt])
    return _gguf().quants.dequantize(np.ascontiguousarray(rows, np.uint8), ggml_type(fmt)).astype(np.float64)


def read_gguf_tensor(path: str, name: str) -> tuple[str, np.ndarray]:
    """``(format, rows)``: tensor ``name`` of the GGUF file ``path`` (Q8_0 or Q4_0; rows uint8, N x row
    bytes, as stored).  A missing, truncated or corrupted file, an unknown tensor name or another
    tensor type is a one-line :class:`VlpcError`."""
    gguf = _gguf()
    try:
        reader = gguf.GGUFReader(path)
    except FileNotFoundError:
        raise VlpcError(f"{path}: no such GGUF file") from None
    except (ValueError, IndexError, KeyError, OSError, OverflowError, UnicodeDecodeError) as e:
        # gguf raises ValueError for a bad magic or version; a truncated file ends in numpy's
        # memmap/frombuffer errors while the reader walks the header and tensor table
        raise VlpcError(f"{path}: not a readable GGUF file, truncated or corrupted ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'truncated'})") from None
    tensors = {t.name: t for t in reader.tensors}
    if name not in tensors:
        some = ", ".join(list(tensors)[:6])
        raise VlpcError(f"{path}: no tensor '{name}' (it has {len(tensors)}: {some}{', ...' if len(tensors) > 6 else ''})")
    t = tensors[name]
    from vlpc.dialects.gemm import B_FORMATS

    fmt = t.tensor_type.name.lower()
    if fmt not in B_FORMATS or fmt in _int4_groups():
        raise VlpcError(f"{path}: tensor '{name}' is {t.tensor_type.name}; vlpc's quantized GEMV takes "
                        f"{', '.join(x.upper() for x in B_FORMATS if x not in _int4_groups())}")
    shape = [int(x) for x in t.shape]  # GGUF order: K (the row) first, then N
    if len(shape) != 2:
        raise VlpcError(f"{path}: tensor '{name}' has shape {shape}: a weight matrix is 2-D")
    k, n = shape
    want = row_bytes(fmt, k)
    data = np.asarray(t.data)
    if data.size != n * want:
        raise VlpcError(f"{path}: tensor '{name}' holds {data.size} bytes, {n} rows of {want} expected (truncated?)")
    return fmt, data.reshape(n, want).view(np.uint8)


#: AutoAWQ's GEMM packing: nibble i (bits 4i..4i + 3) of a packed int32 holds column AWQ_ORDER[i] of
#: its 8 columns (AutoAWQ's ``pack``: ``order_map = [0, 2, 4, 6, 1, 3, 5, 7]``).
AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)


def _nibbles(packed: np.ndarray) -> np.ndarray:
    """(..., 8) uint8: nibble i = bits 4i..4i + 3 of each int32 of ``packed``."""
    u = np.ascontiguousarray(packed).astype(np.int64) & 0xFFFFFFFF
    return ((u[..., None] >> (4 * np.arange(8))) & 15).astype(np.uint8)


def _group_size(k: int, groups: int) -> int:
    """G of a checkpoint with ``groups`` groups along K: K / groups, or when ``groups`` does not divide
    K the format's G (32, 64, 128) of ``groups`` = ceil(K / G) whole groups and a last partial one."""
    if k % groups == 0 and k // groups in _int4_groups().values():
        return k // groups
    return next((g for g in _int4_groups().values() if -(-k // g) == groups and k > g), k // groups)


def int4_rows(q: np.ndarray, z: np.ndarray, s: np.ndarray) -> np.ndarray:
    """vlpc's int4 group rows (docs/quantized.md; uint8 N x row bytes: K / G groups of 4 + G / 2 bytes,
    a last partial group when G does not divide K) of the unpacked weights ``q`` (N x K, 0..15), zero
    points ``z`` (N x groups, 0..15) and f16 scales ``s`` (N x groups): weight ``(q - z) s``
    (:func:`dequantize_int4`); a zero point outside 0..15 is a :class:`VlpcError`."""
    n, k = q.shape
    groups = s.shape[1]
    group = _group_size(k, groups)
    if k % group:  # the whole groups, then the partial one
        full = k - k % group
        return np.concatenate([int4_rows(q[:, :full], z[:, :-1], s[:, :-1]),
                               int4_rows(q[:, full:], z[:, -1:], s[:, -1:])], axis=1)
    if (np.asarray(z) > 15).any() or (np.asarray(z) < 0).any():
        raise VlpcError(f"a zero point of {int(np.max(z))} (or below 0): vlpc's int4 group format takes zero points "
                        "0..15")
    out = np.zeros((n, groups, 4 + group // 2), np.uint8)
    out[..., 0:2] = np.ascontiguousarray(s, np.float16).reshape(n, groups, 1).view(np.uint8)
    out[..., 2] = np.asarray(z, np.uint8)
    qg = np.asarray(q, np.uint8).reshape(n, groups, group)
    out[..., 4:] = qg[..., 0::2] | (qg[..., 1::2] << 4)
    return out.reshape(n, -1)


def gptq_to_int4(qweight: np.ndarray, qzeros: np.ndarray, scales: np.ndarray, g_idx: np.ndarray | None = None,
                 zero_offset: int = 1) -> tuple[str, np.ndarray]:
    """``(format, rows)``: a GPTQ checkpoint's 4-bit linear layer (AutoGPTQ's layout) repacked into
    vlpc's int4 group rows.  ``qweight`` int32 (K / 8, N): weight k of output n in bits 4 (k % 8) of
    ``qweight[k // 8, n]``; ``qzeros`` int32 (K / G, N / 8): the zero point of group g and output n in
    bits 4 (n % 8) of ``qzeros[g, n // 8]``, stored minus ``zero_offset`` (1: AutoGPTQ's
    ``checkpoint_format`` "gptq", whose dequantization adds 1; 0: "gptq_v2"); ``scales`` f16 (K / G, N);
    ``g_idx`` (K), if present, must be k // G (act-order checkpoints, whose groups are permuted, are
    refused).  Weight ``(q - (z_stored + zero_offset)) s``."""
    kq, n = qweight.shape
    k = 8 * kq
    groups = scales.shape[0]
    if scales.shape != (groups, n) or qzeros.shape != (groups, n // 8) or n % 8 or not groups or \
            -(-k // _group_size(k, groups)) != groups:
        raise VlpcError(f"GPTQ tensors do not match: qweight {tuple(qweight.shape)} (K/8 x N), qzeros "
                        f"{tuple(qzeros.shape)} (K/G x N/8), scales {tuple(scales.shape)} (K/G x N)")
    group = _group_size(k, groups)
    if g_idx is not None and not np.array_equal(np.asarray(g_idx), np.arange(k) // group):
        raise VlpcError("GPTQ g_idx is not k // group_size (an act-order checkpoint): its permuted groups are "
                        "not supported")
    q = _nibbles(qweight).transpose(1, 0, 2).reshape(n, k)  # [n, k]: nibble k % 8 of qweight[k // 8, n]
    z = _nibbles(qzeros).reshape(groups, n).T.astype(np.int64) + zero_offset
    return _int4_format(group), int4_rows(q, z, np.asarray(scales, np.float16).T)


def awq_to_int4(qweight: np.ndarray, qzeros: np.ndarray, scales: np.ndarray) -> tuple[str, np.ndarray]:
    """``(format, rows)``: an AWQ checkpoint's 4-bit linear layer (AutoAWQ's GEMM layout) repacked
    into vlpc's int4 group rows.  ``qweight`` int32 (K, N / 8): weight k of output 8j + AWQ_ORDER[i]
    in bits 4i of ``qweight[k, j]`` (:data:`AWQ_ORDER`); ``qzeros`` int32 (K / G, N / 8), packed the
    same way; ``scales`` f16 (K / G, N).  Weight ``(q - z) s``."""
    k, nq = qweight.shape
    n = 8 * nq
    groups = scales.shape[0]
    if scales.shape != (groups, n) or qzeros.shape != (groups, nq) or not groups or -(-k // _group_size(k, groups)) != groups:
        raise VlpcError(f"AWQ tensors do not match: qweight {tuple(qweight.shape)} (K x N/8), qzeros "
                        f"{tuple(qzeros.shape)} (K/G x N/8), scales {tuple(scales.shape)} (K/G x N)")
    inverse = np.argsort(AWQ_ORDER)  # column c of 8 is nibble inverse[c]
    q = _nibbles(qweight)[..., inverse].reshape(k, n).T
    z = _nibbles(qzeros)[..., inverse].reshape(groups, n).T
    return _int4_format(_group_size(k, groups)), int4_rows(q, z, np.asarray(scales, np.float16).T)


def _int4_format(group: int) -> str:
    fmt = f"int4_g{group}"
    if fmt not in _int4_groups():
        raise VlpcError(f"group size {group}: vlpc's int4 formats have groups of "
                        f"{', '.join(str(g) for g in _int4_groups().values())}")
    return fmt


def read_int4_checkpoint(path: str, prefix: str, gptq_zero_offset: int = 1) -> tuple[str, np.ndarray]:
    """``(format, rows)``: the 4-bit linear layer ``prefix`` (e.g. ``model.layers.0.mlp.up_proj``) of
    the safetensors checkpoint ``path``, its ``prefix.qweight``, ``.qzeros``, ``.scales`` (and GPTQ's
    ``.g_idx``) read with safetensors' NumPy API and repacked into vlpc's int4 group rows (N x K / G
    groups): GPTQ (qweight K / 8 x N, :func:`gptq_to_int4`, zero points stored minus
    ``gptq_zero_offset``) or AWQ (qweight K x N / 8, :func:`awq_to_int4`), told apart by the shapes.
    A missing file or tensor, or tensors that do not fit either layout, is a one-line
    :class:`VlpcError`."""
    try:
        from safetensors import safe_open
    except ImportError:
        raise VlpcError("reading AWQ/GPTQ checkpoints needs the safetensors package: pip install 'vlpc[quant]'") from None
    try:
        with safe_open(path, framework="np") as f:
            names = set(f.keys())
            missing = [x for x in ("qweight", "qzeros", "scales") if f"{prefix}.{x}" not in names]
            if missing:
                some = ", ".join(sorted({x.rsplit(".", 1)[0] for x in names if x.endswith(".qweight")})[:4])
                raise VlpcError(f"{path}: no tensor '{prefix}.{missing[0]}' (4-bit layers: {some or 'none'})")
            t = {x: f.get_tensor(f"{prefix}.{x}") for x in ("qweight", "qzeros", "scales", "g_idx")
                 if f"{prefix}.{x}" in names}
    except FileNotFoundError:
        raise VlpcError(f"{path}: no such checkpoint file") from None
    except (OSError, ValueError) as e:  # safetensors' SafetensorError is an OSError / a header it cannot parse
        raise VlpcError(f"{path}: not a readable safetensors file ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    except Exception as e:
        if type(e).__name__ != "SafetensorError":
            raise
        raise VlpcError(f"{path}: not a readable safetensors file ({str(e).splitlines()[0]})") from None
    qw, qz, sc = t["qweight"], t["qzeros"], t["scales"]
    if qw.dtype != np.int32 or qz.dtype != np.int32 or sc.dtype != np.float16 or qw.ndim != 2 or sc.ndim != 2:
        raise VlpcError(f"{path}: '{prefix}': qweight and qzeros must be 2-D int32, scales 2-D f16; got "
                        f"{qw.dtype} {qw.shape}, {qz.dtype} {qz.shape}, {sc.dtype} {sc.shape}")
    if qw.shape[1] == sc.shape[1]:
        return gptq_to_int4(qw, qz, sc, t.get("g_idx"), gptq_zero_offset)
    if 8 * qw.shape[1] == sc.shape[1]:
        return awq_to_int4(qw, qz, sc)
    raise VlpcError(f"{path}: '{prefix}': qweight {qw.shape} fits neither GPTQ's K/8 x N nor AWQ's K x N/8 with "
                    f"scales {sc.shape}")


def b_buffer(rows: np.ndarray, n: int, ldb: int, rb: int) -> np.ndarray:
    """An exactly sized flat uint8 buffer of N rows of ``rb`` bytes every ``ldb`` bytes, the gaps
    :data:`B_PAD`; ``rows`` is (N, rb) or (N, >= ldb) (its gaps then kept)."""
    rows = np.asarray(rows)
    if rows.dtype == np.int8:
        rows = rows.view(np.uint8)
    if rows.dtype != np.uint8 or rows.ndim != 2 or rows.shape[0] != n or (rows.shape[1] != rb and rows.shape[1] < ldb):
        raise VlpcError(f"B must be the tensor's bytes, uint8 of shape ({n}, {rb}) (or ({n}, {ldb}) with the row "
                        f"gaps), got {rows.dtype} {rows.shape}")
    flat = np.full((n - 1) * ldb + rb, B_PAD, np.uint8)
    for i in range(n):
        width = rb if i == n - 1 or rows.shape[1] == rb else ldb
        flat[i * ldb:i * ldb + width] = rows[i, :width]
    return flat


def quant_operands(kern, a, b, c, p: Problem, rng: np.random.Generator,
                   bias: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The exactly sized flat buffers of a quantized-weight kernel's launch (sizes in ``p``; ldb in
    bytes): A f16 (M x lda, row gaps NaN), B the tensor's bytes (:func:`b_buffer`; random weights
    from the format's quantizer when omitted), C f32/f16 (random when omitted, gaps NaN) and, for a
    ``bias_row``/``bias_col`` epilogue, the f16 bias (random when omitted).  One-line
    :class:`VlpcError` for operands of the wrong type or shape.  (vlpc.api.launch_and_check's
    operands for these kernels.)"""
    from vlpc.verify import NP, PAD

    fmt = str(kern.launch_info["b_format"])
    ct = str(kern.launch_info.get("c_dtype", "f32"))
    epi = tuple(x for x in str(kern.launch_info.get("epilogue", "")).split(",") if x)
    nb = 2 * p.n if "swiglu" in epi else p.n  # B's rows (swiglu: the gate's N, then the up projection's)
    rb = row_bytes(fmt, p.k)
    if p.ldb < rb or p.ldb % 4:
        raise VlpcError(f"ldb={p.ldb}: a {fmt} row of K={p.k} is {rb} bytes; ldb must be at least that and a multiple of 4")
    g = geometries("NT", p)
    if a is None:
        a = rng.standard_normal((p.m, p.lda)).astype(np.float16)
    if np.asarray(a).dtype != np.float16:
        raise VlpcError(f"A must be f16 activations, got {np.asarray(a).dtype}")
    flat_a = pack("A", np.asarray(a), g["A"], np.float16, fill=np.nan)
    if b is None:
        b = random_weights(fmt, nb, p.k, rng)
    flat_b = b_buffer(b, nb, p.ldb, rb)
    if c is None:
        flat_c = np.full(g["C"].size, PAD[ct], NP[ct])
        flat_c[g["C"].offsets().reshape(-1)] = rng.standard_normal(p.m * p.n).astype(NP[ct])
    else:
        flat_c = pack("C", np.asarray(c), g["C"], NP[ct], fill=np.nan)
    host = {"A": flat_a, "B": flat_b, "C": flat_c}
    wants_bias = [x for x in epi if x.startswith("bias")]
    if wants_bias:
        length = p.m if wants_bias[0] == "bias_row" else p.n
        bias = rng.standard_normal(length).astype(np.float16) if bias is None else np.ascontiguousarray(bias)
        if bias.dtype != np.float16 or bias.shape != (length,):
            raise VlpcError(f"bias must be a vector of {length} float16 values ({wants_bias[0]}), got {bias.dtype} "
                            f"{bias.shape}")
        host["bias"] = bias
    elif bias is not None:
        raise VlpcError(f"kernel {kern.name} has no bias epilogue; do not pass bias")
    return host

def quantize_activations(a: np.ndarray) -> np.ndarray:
    """A (..., K) f16, K a multiple of 32, as the int8-activation lane kernel quantizes it
    (passes/isel/quant_lane.py, ``a_quant = "q8_pow2"``), dequantized: float64 ``q d_a`` per block
    of 32, d_a = 2^(e - 7) with e the exponent of the block's largest |a| as frexp gives it (|a| <
    2^e; at least -13) and q = rint(a / d_a) (ties to even) clamped to [-128, 127]; a block holding an
    inf or NaN is NaN.  Exact (a power of two times an f16), so the kernel's value bit for bit; each
    activation within d_a of a (half of it unless clamped at 127)."""
    a64 = np.asarray(a, np.float16).astype(np.float64)
    blocks = a64.reshape(*a64.shape[:-1], -1, 32)
    with np.errstate(invalid="ignore"):
        amax = np.abs(blocks).max(axis=-1, keepdims=True)
        finite = np.isfinite(amax)
        e = np.maximum(np.frexp(np.where(finite, amax, 1.0))[1], -13)
        q = np.clip(np.rint(np.ldexp(np.where(np.isfinite(blocks), blocks, 0.0), 7 - e)), -128, 127)
        out = np.where(finite, np.ldexp(q, e - 7), np.nan)
    return out.reshape(a64.shape)


def activation_step(a: np.ndarray) -> np.ndarray:
    """The step d_a (float64, per activation: its block's) of :func:`quantize_activations`."""
    a64 = np.asarray(a, np.float16).astype(np.float64)
    blocks = a64.reshape(*a64.shape[:-1], -1, 32)
    amax = np.abs(blocks).max(axis=-1, keepdims=True)
    e = np.maximum(np.frexp(np.where(np.isfinite(amax), amax, 1.0))[1], -13)
    return np.broadcast_to(np.ldexp(1.0, e - 7), blocks.shape).reshape(a64.shape)


def quant_verdict(kern, p: Problem, host: dict[str, np.ndarray], out: np.ndarray, alpha: float, beta: float):
    """The verdict (:func:`vlpc.verify.check`) of a quantized-weight kernel's output ``out`` (flat C after
    the launch) for the operands ``host`` (:func:`quant_operands`): vlpc.verify's one reference on the
    format's dequantized weights (gguf's; the int4 formats' :func:`dequantize_int4`), the bound of the
    module docstring (Q4_K: :func:`split_reference`; SwiGLU: :func:`swiglu_reference`)."""
    from vlpc.verify import check, reference_and_bound, with_residual

    fmt = str(kern.launch_info["b_format"])
    ct_out = str(kern.launch_info.get("c_dtype", "f32"))
    res = host.get("residual")
    ct = "f32" if res is not None else ct_out  # (with R: f32 until R is added, then C's rounding)
    epi = tuple(x for x in str(kern.launch_info.get("epilogue", "")).split(",") if x)
    nb = 2 * p.n if "swiglu" in epi else p.n
    rb = row_bytes(fmt, p.k)
    flat_a, flat_b, flat_c, bias = host["A"], host["B"], host["C"], host.get("bias")
    g = geometries("NT", p)
    rows = np.stack([flat_b[i * p.ldb:i * p.ldb + rb] for i in range(nb)])
    w = dequantize(fmt, rows)
    pieces = kern.split_k * kern.local_split  # partial sums added: split-K slices x wavefront groups
    # per 32 weights one FMA (Q4_K: two, its scale's and its minimum's)
    # (int4 groups of G: G / 2 dots and one FMA per group, a last partial group included)
    group = _int4_groups().get(fmt)
    rounds = (group // 2 + -(-p.k // group) if group else 16 + (2 if fmt == "q4_k" else 1) * (p.k // 32)) + pieces + 2
    mag = weight_magnitudes(fmt, rows)
    expected = None
    ran = kern.rows_kernel(p.m) or kern  # (M given at launch: the companion that ran, e.g. the prefill GEMM's)
    if ran.launch_info.get("a_quant") == "q8_pow2":  # A quantized to int8 blocks in the kernel: exact
        # products of its values, one f32 rounding per block and the partials' sums (rounds covers them)
        aq = quantize_activations(g["A"].matrices(flat_a))
        expected = split_reference(aq, w, np.abs(w) if mag is None else mag, g["C"].matrices(flat_c), alpha, beta,
                                   ct, rounds, epi, bias)  # (Q4_K: its two terms' magnitudes)
    elif "swiglu" in epi:
        expected = swiglu_reference(g["A"].matrices(flat_a), w, g["C"].matrices(flat_c), alpha, beta, ct,
                                    rounds, epi[1:], bias, mag)
    elif mag is not None:
        expected = split_reference(g["A"].matrices(flat_a), w, mag, g["C"].matrices(flat_c), alpha, beta, ct,
                                   rounds, epi, bias)
    if res is not None:  # D = epilogue(...) + R
        if expected is None:
            expected = reference_and_bound(g["A"].matrices(flat_a), w.T[None], g["C"].matrices(flat_c), alpha, beta,
                                           "f16", "f32", pieces=pieces, epilogue=epi, bias=bias, rounds=rounds)
        expected = with_residual(expected, g["C"].matrices(res), ct_out)
    return check("NT", p, "f16", flat_a, flat_b, flat_c, out, alpha, beta, epi, bias, c_type=ct_out,
                 pieces=pieces, op_b=w.T[None], rounds=rounds, expected=expected)


def split_reference(a: np.ndarray, w: np.ndarray, mag: np.ndarray, c0: np.ndarray, alpha: float, beta: float,
                    ct: str, rounds: int, epilogue=(), bias: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(expected, bound) of ``C = alpha * A W^T + beta * C``, then ``epilogue``, when the kernel sums
    each weight as two exact terms whose magnitudes add to ``mag`` (N x K; Q4_K: :func:`weight_magnitudes`):
    ``a`` (1, M, K), ``w`` gguf's N x K weights (each one f32 rounding of the exact ones, u |w|),
    ``c0`` (1, M, N).  Bound ``gamma_rounds(u) (|alpha| |A| mag^T + |beta| |C|) + u |alpha| |A| |W|^T``,
    then each epilogue step's (vlpc.verify.epilogue_step) and f16 C's rounding."""
    from vlpc.verify import U32, gamma, reference

    exp = reference(a, w.T[None], c0, alpha, beta)  # vlpc.verify's: the one reference
    with np.errstate(all="ignore"):
        a64 = a.astype(np.float64)
        bound = (gamma(rounds, U32) * abs(alpha) * (np.abs(a64) @ mag.T) + U32 * abs(alpha) * (np.abs(a64) @ np.abs(w).T)
                 if alpha != 0 else np.zeros(c0.shape))
        if beta != 0:
            bound = bound + gamma(rounds, U32) * abs(beta) * np.abs(c0.astype(np.float64))
        return _epilogue_bound(exp, bound, epilogue, bias, ct)


def _epilogue_bound(exp: np.ndarray, bound: np.ndarray, epilogue, bias, ct: str) -> tuple[np.ndarray, np.ndarray]:
    """(expected, bound) after ``epilogue`` (vlpc.verify.epilogue_step's each, in f32, plus a flushed
    subnormal) and f16 C's rounding."""
    from vlpc.verify import TINY32, U16, U32, epilogue_step

    with np.errstate(all="ignore"):
        for x in epilogue:
            exp, bound = epilogue_step(x, exp, bound, U32, bias)
            bound = bound + TINY32
        if ct == "f16":
            bound = bound * (1 + U16) + U16 * np.abs(exp) + 2.0 ** -25
    return exp, bound


def swiglu_reference(a: np.ndarray, w: np.ndarray, c0: np.ndarray, alpha: float, beta: float, ct: str,
                     rounds: int, epilogue=(), bias: np.ndarray | None = None,
                     mag: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(expected, bound) of ``C = alpha * silu(A Wg^T) * (A Wu^T) + beta * C``, then ``epilogue``, for
    ``a`` (1, M, K), ``w`` the 2N x K dequantized weights (gate rows, then up rows), ``c0`` (1, M, N).
    Each product's bound is f32 accumulation's (vlpc.verify.dot_error_bound's ``rounds``); silu's is
    vlpc/verify.py's (1.1 e + u |s| (8 + 4 log2 e |g|)); the product s u adds |s| e_u + |u| e_s +
    e_s e_u and one rounding; alpha * . + beta * C two (gamma_2)."""
    from vlpc.verify import TINY32, U32, epilogue_step, gamma
    from vlpc.verify import reference_and_bound as reference

    n = w.shape[0] // 2
    zero = np.zeros(c0.shape)
    if mag is None:
        g, eg = reference(a, w[:n].T[None], zero, 1.0, 0.0, "f16", "f32", rounds=rounds)
        u, eu = reference(a, w[n:].T[None], zero, 1.0, 0.0, "f16", "f32", rounds=rounds)
    else:  # each weight two exact terms (Q4_K): split_reference's bound
        g, eg = split_reference(a, w[:n], mag[:n], zero, 1.0, 0.0, "f32", rounds)
        u, eu = split_reference(a, w[n:], mag[n:], zero, 1.0, 0.0, "f32", rounds)
    with np.errstate(all="ignore"):
        s, es = epilogue_step("silu", g, eg, U32, None)
        es = es + TINY32
        prod = s * u
        ep = np.abs(s) * eu + np.abs(u) * es + es * eu + U32 * np.abs(prod)
        exp = alpha * prod if alpha != 0 else zero
        mag = np.abs(exp)
        bound = abs(alpha) * ep if alpha != 0 else zero
        if beta != 0:
            exp = exp + beta * c0.astype(np.float64)
            mag = mag + abs(beta) * np.abs(c0.astype(np.float64))
        bound = bound * (1 + gamma(2, U32)) + gamma(2, U32) * mag
    return _epilogue_bound(exp, bound, epilogue, bias, ct)


def weights_option(kernel, spec: str, n: int | None) -> tuple[np.ndarray, int]:
    """``vlpc run --weights FILE.gguf:TENSOR`` (a swiglu kernel: ``FILE.gguf:GATE,UP``), or
    ``FILE.safetensors:LAYER`` (an AWQ/GPTQ checkpoint's 4-bit layer, :func:`read_int4_checkpoint`, for
    the int4 group formats): the rows of the tensor(s) (uint8, N x row bytes; swiglu: the gate's N rows,
    then the up projection's) and N, checked against ``kernel`` (a ``b_format`` kernel of the same
    format and K; N the IR's, or ``n``)."""
    fmt = kernel.launch_info.get("b_format")
    if not fmt:
        raise VlpcError(f"--weights: kernel {kernel.name} has no quantized B (gemm.matmul ... "
                        "{b_format = \"q8_0\"}, docs/quantized.md)")
    path, sep, names = spec.rpartition(":")
    swiglu = "swiglu" in str(kernel.launch_info.get("epilogue", ""))
    want = "FILE.gguf:GATE,UP (e.g. model.gguf:blk.0.ffn_gate.weight,blk.0.ffn_up.weight)" if swiglu else \
        "FILE.gguf:TENSOR (e.g. model.gguf:blk.0.ffn_up.weight) or FILE.safetensors:LAYER (e.g. " \
        "model.safetensors:model.layers.0.mlp.up_proj)"
    parts = names.split(",")
    if not sep or not path or not all(parts) or len(parts) != (2 if swiglu else 1):
        raise VlpcError(f"--weights {spec}: expected {want}")
    k = int(kernel.launch_info["static_k"])
    blocks = []
    for name in parts:
        got, rows = read_int4_checkpoint(path, name) if path.endswith(".safetensors") else read_gguf_tensor(path, name)
        if got != fmt:
            raise VlpcError(f"--weights: tensor '{name}' is {got.upper()}, kernel {kernel.name} takes {str(fmt).upper()}")
        if rows.shape[1] != row_bytes(fmt, k):
            raise VlpcError(f"--weights: tensor '{name}' has rows of {rows.shape[1] // row_bytes(fmt, 32) * 32} "
                            f"weights, kernel {kernel.name} has K={k}")
        static_n = int(kernel.launch_info["static_n"])
        for given, what in ((static_n, "the IR's"), (n if n is not None else -1, "--n")):
            if given >= 0 and given != rows.shape[0]:
                raise VlpcError(f"--weights: tensor '{name}' has {rows.shape[0]} rows, {what} N is {given}")
        blocks.append(rows)
    if len(blocks) == 2 and blocks[0].shape != blocks[1].shape:
        raise VlpcError(f"--weights: the gate and up tensors differ in shape: {blocks[0].shape[0]} and "
                        f"{blocks[1].shape[0]} rows")
    return np.concatenate(blocks), blocks[0].shape[0]


__all__ = ["B_PAD", "b_buffer", "dequantize", "dequantize_int4", "quantize_int4", "ggml_type", "AWQ_ORDER", "awq_to_int4", "gptq_to_int4", "int4_rows", "read_int4_checkpoint", "quantize_q4_k", "random_weights", "read_gguf_tensor",
           "quant_operands", "quant_verdict", "row_bytes", "split_reference", "weight_magnitudes", "weights_option"]
