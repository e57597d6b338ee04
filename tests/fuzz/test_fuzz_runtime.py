"""Fuzz the runtime's input: random and mutated bytes to the code object loader, the
decoder, the emulator and the emulator device.

Properties:

* ``load_code_object`` returns a :class:`CodeObject` (whose descriptors, image and
  description can be computed) or raises :class:`CodeObjectError`; nothing else;
* ``decode_at`` decodes any bytes at any pc into an instruction with a text
  (unsupported encodings are marked, never raised);
* the emulator runs any code until ``s_endpgm``, a fault (:class:`EmulatorFault`)
  or its instruction budget, and never fails with a Python error;
* ``EmulatorDevice.launch`` of a mutated code object raises only
  :class:`~vlpc.errors.VlpcError` subclasses (load, launch and emulator faults).

CI runs fixed seeds and a few thousand inputs (a few seconds); ``VLPC_FUZZ_EXAMPLES``
and ``VLPC_FUZZ_SEED`` (``tools/fuzz.py``) scale and vary them.
"""

from __future__ import annotations

import random
import struct
import traceback
import warnings
from pathlib import Path

import numpy as np
import pytest

from fuzz_support import code_in_memory, loop_count, loop_seed, record
from vlpc.errors import VlpcError
from vlpc.runtime.code_object import CodeObjectError, load_code_object

HIP_DATA = Path(__file__).parents[1] / "data" / "hip"
SEEDS = {p.name: p.read_bytes() for p in sorted(HIP_DATA.glob("*.hsaco"))}

#: load_image is only exercised for images up to this size (a mutated p_memsz may ask
#: for up to the loader's 1 GiB limit, which is legal but slow to zero-fill).
IMAGE_LIMIT = 16 << 20


def _mutate_elf(rng: random.Random, data: bytes) -> bytes:
    d = bytearray(data)
    kind = rng.randrange(7)
    if kind == 0:  # random bytes anywhere
        for _ in range(rng.randint(1, 16)):
            d[rng.randrange(len(d))] = rng.randrange(256)
    elif kind == 1:  # truncation
        d = d[:rng.randrange(len(d))]
    elif kind == 2:  # the ELF header and program headers
        i = rng.randrange(0, min(len(d), 64 + 56 * 6))
        d[i:i + 8] = rng.randbytes(8)
    elif kind == 3:  # interesting 32-bit values
        i = rng.randrange(len(d) - 4)
        d[i:i + 4] = rng.choice([b"\xff\xff\xff\xff", b"\0\0\0\0", b"\0\0\0\x80", b"\xff\xff\xff\x7f",
                                 b"\x01\0\0\0", b"\0\x10\0\0"])
    elif kind == 4:  # a 64-bit field of a header to a huge or odd value
        i = rng.randrange(0, min(len(d) - 8, 64 + 56 * 6)) & ~7
        d[i:i + 8] = struct.pack("<Q", rng.choice([2**63, 2**64 - 1, 2**40, 4095, 3]))
    elif kind == 5:  # random bytes with or without an ELF magic
        d = bytearray(rng.randbytes(rng.randrange(256)))
        if rng.random() < 0.7:
            d[:4] = b"\x7fELF"
    else:  # splice two code objects
        other = rng.choice(list(SEEDS.values()))
        cut = rng.randrange(min(len(d), len(other)))
        d = d[:cut] + other[cut:]
    return bytes(d)


def _exercise(co) -> None:
    co.describe()
    for k in co.kernels.values():
        k.descriptor.summary()
        k.metadata.explicit_args
    if co.image_size <= IMAGE_LIMIT:
        co.load_image(0x7F00_0000_0000)


def test_loader_fuzz():
    rng = random.Random(loop_seed(1))
    failures = []
    for i in range(loop_count(1500)):
        data = _mutate_elf(rng, rng.choice(list(SEEDS.values())))
        try:
            co = load_code_object(data)
            _exercise(co)
            record("code object loader", "loaded")
        except CodeObjectError as e:
            assert str(e) and "\n" not in str(e)
            record("code object loader", "CodeObjectError")
        except Exception:
            failures.append((i, data.hex()[:200], traceback.format_exc(limit=3)))
            record("code object loader", "crash")
    assert not failures, f"{len(failures)} crashes; first: {failures[0]}"


def test_loader_rejects_foreign_files(tmp_path):
    """Foreign or hopeless inputs: one-line CodeObjectErrors naming the problem."""
    import sys

    cases = {
        "empty": (b"", "not an ELF"),
        "text": (b"builtin.module {}", "not an ELF"),
        "truncated header": (SEEDS["saxpy.hsaco"][:40], "truncated"),
        "host executable": (Path(sys.executable).resolve().read_bytes()[:4096], "not EM_AMDGPU"),
        "32-bit": (b"\x7fELF\x01\x01\x01" + bytes(57), "not a 64-bit ELF"),
    }
    for name, (data, match) in cases.items():
        with pytest.raises(CodeObjectError, match=match):
            load_code_object(data)
    with pytest.raises(CodeObjectError, match="cannot read code object"):
        load_code_object(tmp_path)  # a directory
    with pytest.raises(CodeObjectError, match="cannot read code object"):
        load_code_object(tmp_path / "missing.hsaco")


def test_decoder_fuzz():
    from vlpc.runtime.emulator.decode import decode_at

    rng = random.Random(loop_seed(2))
    words = _code_words()
    failures = []
    for i in range(loop_count(8000, 10)):
        n = rng.choice([0, 1, 3, 4, 8, 12, 16])
        code = b"".join(rng.choice(words) if rng.random() < 0.5 else rng.randbytes(4)
                        for _ in range((n + 3) // 4))[:n]
        for pc in (0, 4, -4, len(code) - 4, len(code), 2):
            try:
                ins = decode_at(code, pc)
                assert isinstance(ins.text, str) and ins.size in (4, 8, 12)
                record("decoder", "supported" if ins.supported else "unsupported")
            except Exception:
                failures.append((i, code.hex(), pc, traceback.format_exc(limit=3)))
                record("decoder", "crash")
    assert not failures, f"{len(failures)} crashes; first: {failures[0]}"


def _code_words() -> list[bytes]:
    """32-bit words of the bundled hipcc kernels' machine code (realistic encodings)."""
    words = []
    for data in SEEDS.values():
        co = load_code_object(data)
        img = co.image
        for k in co.kernels.values():
            e = k.entry_offset
            words += [img[i:i + 4] for i in range(e, min(len(img), e + 4096), 4)]
    return words


ENDPGM = struct.pack("<I", 0xBF810000)


def test_emulator_random_code_fuzz():
    """Random instruction streams (real encodings mixed with random words) on one or two
    waves: they end, fault with an EmulatorFault, or exhaust the instruction budget."""
    from vlpc.runtime.emulator.core import DispatchConfig, run_dispatch
    from vlpc.runtime.emulator.errors import EmulatorFault

    rng = random.Random(loop_seed(3))
    words = _code_words()
    failures = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(loop_count(300, 0.5)):
            code = b"".join(rng.choice(words) if rng.random() < 0.7 else rng.randbytes(4)
                            for _ in range(rng.randint(1, 16))) + ENDPGM
            mem, karg, ca = code_in_memory(code)
            cfg = DispatchConfig("fuzz", code, ca, ca, (rng.choice([1, 2]), 1, 1),
                                 (rng.choice([1, 64, 65, 128]), 1, 1),
                                 user_sgpr_kernarg_segment_ptr=True, kernarg_address=karg,
                                 lds_bytes=rng.choice([0, 256]), instruction_budget=300,
                                 vgpr_count=rng.choice([8, 256]), sgpr_count=rng.choice([16, 102]),
                                 strict=rng.random() < 0.3, max_waves_in_flight=4)
            try:
                run_dispatch(mem, cfg)
                record("emulator (random code)", "ended")
            except EmulatorFault as e:
                assert e.kernel == "fuzz" and e.pc is not None, str(e)
                record("emulator (random code)", type(e).__name__)
            except Exception:
                failures.append((i, code.hex(), traceback.format_exc(limit=4)))
                record("emulator (random code)", "crash")
    assert not failures, f"{len(failures)} crashes; first: {failures[0]}"


def test_emulator_device_mutated_code_objects():
    """Launch every kernel of mutated hipcc code objects: only VlpcErrors come out."""
    from vlpc.runtime import get_device

    rng = random.Random(loop_seed(4))
    dev = get_device("emulator", instruction_budget=20000, max_waves_in_flight=4)
    bufs = [dev.upload(np.arange(256, dtype=np.float32)) for _ in range(4)]
    failures = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(loop_count(120, 0.1)):
            name = rng.choice(list(SEEDS))
            d = bytearray(SEEDS[name])
            for _ in range(rng.randint(1, 6)):
                d[rng.randrange(len(d))] = rng.randrange(256)
            try:
                co = load_code_object(bytes(d))
            except CodeObjectError:
                record("emulator device (mutated code objects)", "CodeObjectError")
                continue
            for k in co.kernels.values():
                args = []
                for a in k.metadata.explicit_args:
                    if a.value_kind == "global_buffer":
                        args.append(bufs[len(args) % 4])
                    else:
                        args.append({4: np.int32(16), 8: np.int64(16)}.get(a.size, bytes(max(0, a.size))))
                try:
                    dev.launch(co, k.name, grid=(rng.choice([1, 2]), 1, 1),
                               block=(rng.choice([64, 128]), 1, 1), args=args)
                    record("emulator device (mutated code objects)", "ran")
                except VlpcError as e:
                    assert str(e)
                    record("emulator device (mutated code objects)", type(e).__name__)
                except Exception:
                    failures.append((i, name, traceback.format_exc(limit=4)))
                    record("emulator device (mutated code objects)", "crash")
            dev.unload(co)
    assert not failures, f"{len(failures)} crashes; first: {failures[0]}"
