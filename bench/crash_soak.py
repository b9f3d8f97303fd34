"""Crash soak: SIGKILL `cosmic-curriculum run` N times at random moments, count mismatches.

Usage: python bench/crash_soak.py --iterations 300 [--seed S] [--mode both|orchestrator|group]

Runs the harness of tests/crash (scripted fake trainer and evaluator, temp git
workspaces): half the kills hit only the orchestrator, half everything in the workspace.
Prints the kills survived, where they landed, and the mismatches against a clean run
(exit 1 if there is any).
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from crash import harness  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300, help="number of SIGKILLs")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    parser.add_argument("--mode", choices=["both", *harness.MODES], default="both")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    args = parser.parse_args()
    # SIGTERM unwinds like Ctrl-C, so the harness stops the processes it started.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    modes = list(harness.MODES) if args.mode == "both" else [args.mode]
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="crash-soak-"))
    total = harness.Report()
    try:
        reference = harness.baseline(root / "clean")
        for k, mode in enumerate(modes):
            share = args.iterations // len(modes) + (1 if k < args.iterations % len(modes) else 0)
            report = harness.crash_series(root, reference, seed + k, mode, share)
            print(
                f"{mode:>12}: {report.kills} kills survived in {report.curricula} curricula "
                f"({report.runs} runs, {report.refused} refused while an orphan held the "
                f"workspace), mismatches {len(report.mismatches)}",
                flush=True,
            )
            total.add(report)
            if total.mismatches:
                break
        elapsed = time.monotonic() - started
        where = ", ".join(f"{k} {v}" for k, v in sorted(total.kills_at.items()))
        print(f"kill points: {where}")
        print(
            f"seed {seed}: kills survived {total.kills}, mismatches {len(total.mismatches)}, "
            f"curricula {total.curricula}, {elapsed:.0f}s"
        )
        for problem in total.mismatches:
            print(f"MISMATCH {problem}")
    finally:
        if args.keep or total.mismatches:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 1 if total.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
