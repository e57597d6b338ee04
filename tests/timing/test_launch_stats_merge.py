"""``LaunchStats.merge`` keys ``by_pc`` by the byte offset in one code image: statistics of
launches from different code objects are refused instead of adding one instruction's counts
to another's."""

from __future__ import annotations

import copy

import pytest

import vlpc
from launch_support import nt_source


def _source(k: int) -> str:
    return nt_source(32, 256, k)


@pytest.fixture(scope="module")
def two_launches():
    r16 = vlpc.run(vlpc.compile(_source(16), split_k=1))
    r32 = vlpc.run(vlpc.compile(_source(32), split_k=1))
    return r16.stats, r32.stats


def test_stats_of_different_code_objects_are_refused(two_launches):
    a, b = two_launches
    assert a.code_id and b.code_id and a.code_id != b.code_id
    # the same offsets name different instructions in the two images: a silent merge would mix them
    assert set(a.by_pc) & set(b.by_pc)
    before = copy.deepcopy(a)
    with pytest.raises(ValueError, match="ran different code objects"):
        a.merge(b)
    assert a.instructions == before.instructions and a.by_pc == before.by_pc  # nothing added


def test_stats_of_one_code_object_merge_by_offset(two_launches):
    a, _ = two_launches
    total = copy.deepcopy(a)
    total.merge(a)
    assert total.code_id == a.code_id and total.instructions == 2 * a.instructions
    for pc, row in a.by_pc.items():
        assert total.by_pc[pc][0] == row[0] and total.by_pc[pc][1:] == [2 * x for x in row[1:]]


def test_a_split_k_plan_merges_its_kernels():
    """A plan's kernels (the split-K kernel and its reduce) share one code object: merged."""
    import math

    kernel = vlpc.compile(_source(32), split_k=2).kernel()
    steps = kernel.plan(32, 256, 32)
    assert len(steps) == 2, steps
    r = vlpc.run(kernel)
    assert r.stats.code_id is not None
    assert r.stats.workgroups == sum(math.prod(s.grid) for s in steps)
