"""``vlpc tune FILE``: search the plan options of a GEMM on the timing model."""

from __future__ import annotations


def add_parser(sub) -> None:
    from vlpc.tune import add_parser as add
    add(sub)


def main(args) -> int:
    from vlpc.tune import cmd_tune
    return cmd_tune(args)
