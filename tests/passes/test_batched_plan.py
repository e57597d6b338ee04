"""``vlpc compile --print-plan`` on strided batched GEMMs: the grid and the workgroup count it
prints are those of the whole batch, as the host launches it (``CompiledKernel.plan`` of the
compiled kernel, computed here), and a batch count given at launch is said to multiply them."""

from __future__ import annotations

import re

import pytest

import vlpc
from vlpc.cli import main

from test_batched import batched_source

M, N, K = 64, 96, 32


def source(batch: int, dynamic_batch: bool = False) -> str:
    text = batched_source(batch, M, N, K, M * K, N * K, M * N)
    return text.replace(f"memref<{batch}x", "memref<?x") if dynamic_batch else text


def printed_plan(tmp_path, capsys, text: str) -> str:
    path = tmp_path / "g.mlir"
    path.write_text(text)
    assert main(["compile", str(path), "--print-plan"]) == 0
    return capsys.readouterr().out


def plan_workgroups(text: str, batch: int) -> int:
    kernel = vlpc.compile(text, "gfx906").kernel()
    return sum(s.grid[0] * s.grid[1] * s.grid[2] for s in kernel.plan(M, N, K, batch))


def grid_line(out: str) -> re.Match:
    m = re.search(r"^  grid (\d+)x(\d+)x(\d+)( x batch \(given at launch\))? = (\d+) workgroups", out, re.M)
    assert m, out
    return m


def test_static_batch_prints_the_whole_batch(tmp_path, capsys):
    """It printed grid z 1 and the workgroups of one batch entry (the IR's grid attribute holds
    only the split-K slices in z)."""
    one = grid_line(printed_plan(tmp_path, capsys, source(1)))
    out = printed_plan(tmp_path, capsys, source(3))
    three = grid_line(out)
    wg1, wg3 = plan_workgroups(source(1), 1), plan_workgroups(source(3), 3)
    assert wg1 > 1 and wg3 == 3 * wg1
    assert int(one.group(5)) == wg1
    assert int(three.group(5)) == wg3
    assert int(three.group(3)) == 3 and three.group(4) is None
    assert "kernels: bg (grid z 3)" in out


def test_dynamic_batch_says_it_multiplies(tmp_path, capsys):
    out = printed_plan(tmp_path, capsys, source(3, dynamic_batch=True))
    m = grid_line(out)
    assert m.group(4) == " x batch (given at launch)"
    assert int(m.group(5)) == plan_workgroups(source(3, dynamic_batch=True), 1)
    assert "kernels: bg (grid z batch)" in out
