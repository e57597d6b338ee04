"""Every instruction form of the gfx906 table runs on the emulator without crashing: it
executes, or stops with a located EmulatorFault (unsupported, out of bounds, ...), never
with a Python error.  Alternate forms run under the IEEE default mode and under
FLOAT_DENORM flush-all (the float modes' slow paths).  One case per encoding and form
(base, e64, sdwa, dpp), so pytest-xdist spreads the sweep over its workers."""

from __future__ import annotations

import functools
import struct
import warnings

import pytest

import vlpc.isa as isa
from vlpc.runtime.emulator.core import DispatchConfig, run_dispatch
from vlpc.runtime.emulator.errors import EmulatorFault

from fuzz_support import code_in_memory

ENDPGM = struct.pack("<I", 0xBF810000)
FORMS = ("base", "e64", "sdwa", "dpp")


@functools.cache
def _samples():
    """(encoding, form) -> [(mnemonic, machine code, k)], k numbering every form of the table in order."""
    groups: dict[tuple[str, str], list] = {}
    k = 0
    for r in isa.table().values():
        for form, sample in zip(FORMS, (r.sample, r.sample_e64, r.sample_sdwa, r.sample_dpp)):
            if sample is not None:
                k += 1
                groups.setdefault((r.encoding, form), []).append((r.mnemonic, sample, k))
    return groups


def test_the_sweep_covers_the_table():
    assert sum(len(v) for v in _samples().values()) > 1800


@pytest.mark.parametrize("encoding,form", sorted(_samples()), ids=[f"{e}-{f}" for e, f in sorted(_samples())])
def test_every_table_form_executes_or_faults_cleanly(encoding, form):
    bad = []
    for mnemonic, sample, k in _samples()[encoding, form]:
        code = sample + ENDPGM
        mem, karg, ca = code_in_memory(code)
        cfg = DispatchConfig("all", code, ca, ca, (1, 1, 1), (64, 1, 1), user_sgpr_kernarg_segment_ptr=True,
                             kernarg_address=karg, lds_bytes=256, instruction_budget=50, vgpr_count=256,
                             sgpr_count=102, mode=0x3F0 if k % 2 else 0x300)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                run_dispatch(mem, cfg)
            except EmulatorFault as e:
                if e.kernel != "all" or e.pc is None:
                    bad.append((mnemonic, form, f"unlocated: {e}"))
            except Exception as e:  # noqa: BLE001 - any other exception is a bug
                bad.append((mnemonic, form, repr(e)))
    assert not bad, bad[:20]
