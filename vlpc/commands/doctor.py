"""``vlpc doctor``: what this machine can run (toolchain, HIP, devices)."""

from __future__ import annotations


def add_parser(sub) -> None:
    from vlpc.doctor import add_parser as add
    add(sub)


def main(args) -> int:
    from vlpc.doctor import cmd_doctor
    return cmd_doctor(args)
