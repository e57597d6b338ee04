#!/usr/bin/env python3
"""Long fuzzing sessions for vlpc (issue 9: bad input never crashes).

The fuzzers are the pytest tests ``tests/fuzz/test_fuzz_*.py``; CI runs them briefly with
fixed seeds (``pytest -q``).  This driver runs them longer, in rounds with a new seed
each round, until a time budget is spent, and prints how many inputs each fuzzer
tried and how they ended (usage errors, user errors, faults, crashes)::

    # 10 minutes in all, 2000 inputs per fuzz test per round
    python tools/fuzz.py --minutes 10 --examples 2000

    # one fuzzer, a given seed (to reproduce a reported failure)
    python tools/fuzz.py --tests tests/fuzz/test_fuzz_mlir.py --seed 1234 --rounds 1

Equivalent by hand: ``VLPC_FUZZ_EXAMPLES=5000 VLPC_FUZZ_SEED=7 pytest -q tests/fuzz/test_fuzz_*.py``
(``VLPC_FUZZ_REPORT=counts.json`` writes the counts).  A failing round prints pytest's
report, with Hypothesis' minimal failing example and how to reproduce it; the driver
stops at the first failing round and exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ["tests/fuzz/test_fuzz_mlir.py", "tests/fuzz/test_fuzz_cli.py", "tests/fuzz/test_fuzz_runtime.py"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="time budget (default: %(default)s)")
    ap.add_argument("--examples", type=int, default=2000,
                    help="inputs per fuzz test per round (VLPC_FUZZ_EXAMPLES; default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=0, help="stop after this many rounds (0: until the budget)")
    ap.add_argument("--seed", type=int, help="seed of the first round (default: random)")
    ap.add_argument("--tests", nargs="+", default=TESTS, help="fuzz test files or node ids")
    ap.add_argument("--report", help="write the merged counts to this JSON file")
    args = ap.parse_args(argv)
    if args.examples < 1 or args.minutes <= 0:
        ap.error("--examples and --minutes must be positive")

    seed = args.seed if args.seed is not None else random.randrange(1, 2**31)
    deadline = time.monotonic() + 60 * args.minutes
    report = Path(args.report) if args.report else Path(tempfile.mkdtemp(prefix="vlpc-fuzz-")) / "counts.json"
    report.unlink(missing_ok=True)
    rounds, rc = 0, 0
    while time.monotonic() < deadline and (not args.rounds or rounds < args.rounds):
        env = dict(os.environ, VLPC_FUZZ_EXAMPLES=str(args.examples), VLPC_FUZZ_SEED=str(seed + rounds),
                   VLPC_FUZZ_REPORT=str(report))
        left = max(60.0, deadline - time.monotonic())
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.tests]
        print(f"round {rounds + 1}: seed {seed + rounds}, {args.examples} examples per test "
              f"({left / 60:.1f} min left)", flush=True)
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=env, timeout=left + 600)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            print("round timed out", flush=True)
            rc = 1
        rounds += 1
        print(f"round {rounds} took {time.monotonic() - t0:.0f} s, exit {rc}", flush=True)
        if rc != 0:
            break
    counts = json.loads(report.read_text()) if report.exists() else {}
    total = 0
    print(f"\n{rounds} round(s), seeds {seed}..{seed + rounds - 1}")
    for name, outcomes in sorted(counts.items()):
        n = sum(outcomes.values())
        total += n
        detail = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items(), key=lambda kv: -kv[1]))
        print(f"  {name}: {n} inputs ({detail})")
    print(f"  total: {total} inputs; {'FAILED' if rc else 'no crash, hang or internal error found'}")
    return 1 if rc else 0


if __name__ == "__main__":
    sys.exit(main())
