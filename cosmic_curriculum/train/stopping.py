"""SIGINT/SIGTERM/SIGUSR1 during a training: the trainer stops after the step, saves, and
exits 128 + the signal; a second signal a second later aborts at once. SIGUSR1 is what a
batch scheduler sends before a job's time limit (e.g. Slurm's `--signal`)."""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

# The signals that stop a training cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)


class StopFlag:
    """Set by SIGINT/SIGTERM/SIGUSR1: training stops at the next env step, saves and exports."""

    def __init__(self, saves: str = "a checkpoint") -> None:
        self.signum: int | None = None
        self.at = 0.0
        self.saves = saves  # what the trainer saves on the way out, for the message

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            # A terminal's Ctrl-C reaches both the wrapper (which forwards it) and us: a
            # repeat within a second is the same request. A later one means "abort now".
            if time.monotonic() - self.at > 1.0:
                raise KeyboardInterrupt
            return
        self.signum = signum
        self.at = time.monotonic()
        sys.stderr.write(
            f"{signal.Signals(signum).name}: stopping after this step and saving "
            f"{self.saves} (send again to abort)\n"
        )
        sys.stderr.flush()


@contextmanager
def signals_handled(flag: StopFlag) -> Iterator[None]:
    previous = {sig: signal.signal(sig, flag) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
