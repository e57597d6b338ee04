"""``vlpc cache info|clear``: where the kernel cache is and how full, or empty it."""

from __future__ import annotations

import argparse

from vlpc.errors import VlpcError


def add_parser(sub) -> None:
    ca = sub.add_parser("cache", help="the kernel cache: where it is and how full (info), or empty it (clear)")
    ca.add_argument("action", choices=("info", "clear"))


def main(args: argparse.Namespace) -> int:
    from vlpc.cache import CacheError, KernelCache

    try:
        kc = KernelCache()
    except CacheError as e:
        raise VlpcError(str(e)) from None
    if kc.directory.exists() and not kc.directory.is_dir():  # compiles skip such a cache silently
        raise VlpcError(f"the kernel cache {kc.directory} is not a directory: compiles cannot use it "
                        "(set VLPC_CACHE_DIR to a directory)")
    if args.action == "info":
        print("\n".join(kc.info().lines()))
    else:
        print(f"removed {kc.clear()} entries from {kc.directory}")
    return 0
