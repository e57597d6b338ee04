"""AWQ and GPTQ checkpoints as stored (vlpc/quant_run.py ``read_int4_checkpoint``, docs/quantized.md).

The tensors are packed here with NumPy from the formats' public descriptions (AutoGPTQ: ``qweight``
int32 K / 8 x N, weight k of output n in bits 4 (k % 8) of row k / 8; ``qzeros`` int32 K / G x N / 8,
output n's zero point in bits 4 (n % 8), stored minus one by the "gptq" checkpoint format; ``scales``
f16 K / G x N.  AutoAWQ's GEMM layout: ``qweight`` int32 K x N / 8 and ``qzeros`` K / G x N / 8 with
output 8j + [0, 2, 4, 6, 1, 3, 5, 7][i] in nibble i of word j), written with safetensors' NumPy API,
read back by name, and compared with a float64 dequantization ``(q - z) s`` of the unpacked values."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

st = pytest.importorskip("safetensors.numpy")

from vlpc.errors import VlpcError  # noqa: E402
from vlpc.quant_run import dequantize_int4, read_int4_checkpoint, row_bytes  # noqa: E402

from test_quant_gemv import source  # noqa: E402


def random_layer(n, k, group, rng, zmin=0):
    q = rng.integers(0, 16, (n, k))
    z = rng.integers(zmin, 16, (n, -(-k // group)))  # (a last partial group when G does not divide K)
    s = (rng.random((n, -(-k // group))) * 0.02 + 1e-3).astype(np.float16)
    return q, z, s


def reference(q, z, s, group=None):
    """float64 weights (q - z) s, N x K (groups of ``group``, the last one partial when it does not divide K)."""
    k = q.shape[1]
    group = group or k // z.shape[1]
    return (q - np.repeat(z, group, 1)[:, :k]) * np.repeat(s.astype(np.float64), group, 1)[:, :k]


def pack_words(nib: np.ndarray) -> np.ndarray:
    """int32 words from (..., 8) nibbles, nibble i in bits 4i."""
    w = np.zeros(nib.shape[:-1], np.uint64)
    for i in range(8):
        w |= (nib[..., i].astype(np.uint64) & 15) << np.uint64(4 * i)
    return w.astype(np.uint32).view(np.int32)


def pack_gptq(q, z, s, zero_offset=1):
    n, k = q.shape
    qweight = pack_words(q.T.reshape(k // 8, 8, n).transpose(0, 2, 1))  # [k/8, n]: nibble k % 8
    zs = (z - zero_offset).T  # [groups, n], stored minus one
    qzeros = pack_words(zs.reshape(zs.shape[0], n // 8, 8))
    return qweight, qzeros, np.ascontiguousarray(s.T)


AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def pack_awq(q, z, s):
    n, k = q.shape
    qt = q.T.reshape(k, n // 8, 8)[..., AWQ_ORDER]  # nibble i: column 8j + AWQ_ORDER[i]
    zt = z.T.reshape(z.shape[1], n // 8, 8)[..., AWQ_ORDER]
    return pack_words(qt), pack_words(zt), np.ascontiguousarray(s.T)


@pytest.mark.parametrize("kind, n, k, group", [("gptq", 64, 256, 128), ("gptq", 16, 128, 32),
                                               ("awq", 64, 256, 128), ("awq", 24, 192, 64),
                                               ("gptq", 16, 320, 128), ("awq", 24, 224, 64)])  # partial groups
def test_checkpoint_layers_against_float64(kind, n, k, group, tmp_path):
    rng = np.random.default_rng(n + k)
    q, z, s = random_layer(n, k, group, rng, zmin=1 if kind == "gptq" else 0)
    qw, qz, sc = pack_gptq(q, z, s) if kind == "gptq" else pack_awq(q, z, s)
    tensors = {"model.layers.0.mlp.up_proj.qweight": qw, "model.layers.0.mlp.up_proj.qzeros": qz,
               "model.layers.0.mlp.up_proj.scales": sc}
    if kind == "gptq":
        tensors["model.layers.0.mlp.up_proj.g_idx"] = (np.arange(k) // group).astype(np.int32)
    path = tmp_path / "ckpt.safetensors"
    st.save_file(tensors, str(path))
    fmt, rows = read_int4_checkpoint(str(path), "model.layers.0.mlp.up_proj")
    assert fmt == f"int4_g{group}" and rows.shape == (n, row_bytes(fmt, k))
    assert np.array_equal(dequantize_int4(rows, group), reference(q, z, s, group))


def test_gptq_v2_zero_points(tmp_path):
    """zero_offset 0 (AutoGPTQ's "gptq_v2": zero points stored as they are), and the stored-minus-one
    format's zero point 16 (stored 15) refused: vlpc's zero points are 4-bit."""
    rng = np.random.default_rng(5)
    q, z, s = random_layer(16, 128, 32, rng)
    path = tmp_path / "v2.safetensors"
    qw, qz, sc = pack_gptq(q, z, s, zero_offset=0)
    st.save_file({"l.qweight": qw, "l.qzeros": qz, "l.scales": sc}, str(path))
    fmt, rows = read_int4_checkpoint(str(path), "l", gptq_zero_offset=0)
    assert np.array_equal(dequantize_int4(rows, 32), reference(q, z, s))
    if (z == 15).any():
        with pytest.raises(VlpcError, match="zero point of 16"):
            read_int4_checkpoint(str(path), "l")


def test_bad_checkpoints(tmp_path):
    rng = np.random.default_rng(6)
    q, z, s = random_layer(16, 128, 32, rng, zmin=1)
    qw, qz, sc = pack_gptq(q, z, s)
    path = tmp_path / "c.safetensors"
    st.save_file({"l.qweight": qw, "l.qzeros": qz, "l.scales": sc,
                  "act.qweight": qw, "act.qzeros": qz, "act.scales": sc,
                  "act.g_idx": rng.permutation(128).astype(np.int32) // 32,
                  "odd.qweight": qw, "odd.qzeros": qz, "odd.scales": sc[:, :8].copy(),
                  "g16.qweight": qw, "g16.qzeros": np.zeros((8, 2), np.int32),
                  "g16.scales": np.ones((8, 16), np.float16)}, str(path))
    for where, match in (("nope", "no tensor 'nope.qweight'"), ("act", "act-order"),
                         ("odd", "fits neither"), ("g16", "group size 16")):
        with pytest.raises(VlpcError, match=match):
            read_int4_checkpoint(str(path), where)
    with pytest.raises(VlpcError, match="no such checkpoint"):
        read_int4_checkpoint(str(tmp_path / "missing.safetensors"), "l")
    (tmp_path / "bad.safetensors").write_bytes(path.read_bytes()[:40])
    with pytest.raises(VlpcError, match="not a readable safetensors"):
        read_int4_checkpoint(str(tmp_path / "bad.safetensors"), "l")


def test_cli_weights_from_a_checkpoint(tmp_path):
    """vlpc run --weights ckpt.safetensors:LAYER runs an AWQ layer's weights through the int4 GEMV
    on the strict emulator and verifies C; a format mismatch is one line, exit 1."""
    n, k = 64, 256
    rng = np.random.default_rng(7)
    q, z, s = random_layer(n, k, 128, rng)
    path = tmp_path / "awq.safetensors"
    qw, qz, sc = pack_awq(q, z, s)
    st.save_file({"model.layers.0.mlp.up_proj.qweight": qw, "model.layers.0.mlp.up_proj.qzeros": qz,
                  "model.layers.0.mlp.up_proj.scales": sc}, str(path))
    src = tmp_path / "up.mlir"
    src.write_text(source(None, n, k, "int4_g128"))
    cmd = [sys.executable, "-m", "vlpc.cli", "run", str(src), "--m", "2", "--strict", "--weights"]
    p = subprocess.run([*cmd, f"{path}:model.layers.0.mlp.up_proj"], capture_output=True, text=True)
    assert p.returncode == 0 and "verification passed" in p.stdout, p.stdout + p.stderr
    src.write_text(source(None, n, k, "int4_g64"))
    p = subprocess.run([*cmd, f"{path}:model.layers.0.mlp.up_proj"], capture_output=True, text=True)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "INT4_G128" in p.stderr, p.stderr
