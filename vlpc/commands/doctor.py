"""``vlpc doctor``: the HIP runtime, hip-python and the GPUs found, and whether they match
(:func:`vlpc.doctor.diagnose` does the work)."""

from __future__ import annotations

from typing import Any


def add_parser(sub: Any) -> None:
    """Register ``vlpc doctor`` on the CLI's subparsers."""
    sub.add_parser("doctor", help="report the HIP runtime, hip-python and the GPUs found, and whether they "
                                  "match (exit 0 only when a device can run vlpc's code objects)")


def main(args: Any) -> int:
    from vlpc.doctor import cmd_doctor
    return cmd_doctor(args)
