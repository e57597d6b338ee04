"""``vlpc profile FILE``: per-instruction stalls and a wave timeline, modeled."""

from __future__ import annotations


def add_parser(sub) -> None:
    from vlpc.profile import add_parser as add
    add(sub)


def main(args) -> int:
    from vlpc.profile import cmd_profile
    return cmd_profile(args)
