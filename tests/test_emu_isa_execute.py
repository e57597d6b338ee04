"""Every instruction form of the gfx906 table runs on the emulator without crashing: it
executes, or stops with a located EmulatorFault (unsupported, out of bounds, ...), never
with a Python error.  Alternate forms run under the IEEE default mode and under
FLOAT_DENORM flush-all (the float modes' slow paths)."""

from __future__ import annotations

import struct
import warnings

import numpy as np

import vlpc.isa as isa
from vlpc.runtime.emulator.core import DispatchConfig, run_dispatch
from vlpc.runtime.emulator.errors import EmulatorFault
from vlpc.runtime.emulator.memory import Memory

ENDPGM = struct.pack("<I", 0xBF810000)


def test_every_table_form_executes_or_faults_cleanly():
    bad = []
    k = 0
    for r in isa.table().values():
        for form, sample in (("base", r.sample), ("e64", r.sample_e64), ("sdwa", r.sample_sdwa),
                             ("dpp", r.sample_dpp)):
            if sample is None:
                continue
            k += 1
            code = sample + ENDPGM
            mem = Memory()
            buf = mem.alloc(4096, tag="buf")
            mem.write(buf, np.arange(1024, dtype=np.uint32))
            karg = mem.alloc(256, tag="kernargs")
            mem.write(karg, np.array([buf] * 8, np.uint64))
            ca = mem.alloc(len(code) + 64, tag="code")
            mem.write(ca, code)
            cfg = DispatchConfig("all", code, ca, ca, (1, 1, 1), (64, 1, 1), user_sgpr_kernarg_segment_ptr=True,
                                 kernarg_address=karg, lds_bytes=256, instruction_budget=50, vgpr_count=256,
                                 sgpr_count=102, mode=0x3F0 if k % 2 else 0x300)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    run_dispatch(mem, cfg)
                except EmulatorFault as e:
                    if e.kernel != "all" or e.pc is None:
                        bad.append((r.mnemonic, form, f"unlocated: {e}"))
                except Exception as e:  # noqa: BLE001 - any other exception is a bug
                    bad.append((r.mnemonic, form, repr(e)))
    assert k > 1800
    assert not bad, bad[:20]
