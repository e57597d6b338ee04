"""``ds_swizzle_b32``'s bit-mask offsets (passes/isel/emit.py ``swizzle_bitmask``, used by the
lane-exchange reduction of the decode GEMV): against LLVM's assembler, which encodes the
symbolic patterns ``swizzle(SWAP, d)`` and ``swizzle(BITMASK_PERM, "...")`` itself (AMDGPU
modifier syntax), and against the strict emulator's lane map (Vega ISA 12.13, DS_SWIZZLE_B32)."""

from __future__ import annotations

import numpy as np
import pytest

from vlpc.passes.isel.emit import swizzle_bitmask
from vlpc.runtime.emulator.semantics.ds import swizzle_lanes

from llvm_support import llvm_encodings


def test_swizzle_offsets_match_llvm():
    """The DS encoding's offset0 / offset1 bytes of LLVM's symbolic patterns equal ours: SWAP d
    (xor_mask d), BITMASK_PERM "01pi0" (and 0b10011... per character: 0 clear, 1 set, p keep,
    i invert; the first character is lane bit 4)."""
    cases = [(f"swizzle(SWAP,{d})", swizzle_bitmask(xor_mask=d)) for d in (16, 8, 4, 2, 1)]
    # "01pi0": bit 4 forced 0, bit 3 forced 1, bit 2 kept, bit 1 inverted, bit 0 forced 0
    cases.append(('swizzle(BITMASK_PERM,"01pi0")', swizzle_bitmask(and_mask=0b00110, or_mask=0b01000,
                                                                    xor_mask=0b00010)))
    enc = llvm_encodings([f"ds_swizzle_b32 v0, v1 offset:{p}" for p, _ in cases])
    assert len(enc) == len(cases)
    for (pattern, ours), code in zip(cases, enc):
        assert code[0] | code[1] << 8 == ours, pattern


@pytest.mark.parametrize("d", [16, 8, 4, 2, 1])
def test_swap_reads_the_partner_lane(d):
    """On the emulator, lane l of each half-wave reads lane l ^ d (the reduction's partner)."""
    lane = np.arange(64)
    assert (swizzle_lanes(swizzle_bitmask(xor_mask=d)) == lane ^ d).all()


@pytest.mark.parametrize("masks", [dict(and_mask=32), dict(or_mask=-1), dict(xor_mask=64)])
def test_swizzle_masks_are_five_bits(masks):
    with pytest.raises(ValueError, match="5-bit lane mask"):
        swizzle_bitmask(**masks)
