"""The curriculum: pure rules (:mod:`.transitions`) in a small imperative shell.

:func:`run_curriculum` is `cosmic-curriculum run`. The shell's modules, each one concern:
:mod:`.context` (options, paths, state I/O), :mod:`.preflight` (checks before any training),
:mod:`.resume` (references and resume rules), :mod:`.training`, :mod:`.evaluation`,
:mod:`.persist` (review, curves, commit) and :mod:`.loop` (the loop, the lock, signals).
"""

from cosmic_curriculum.curriculum.context import RunOptions
from cosmic_curriculum.curriculum.loop import InterruptedRun, check_run, run_curriculum

__all__ = ["InterruptedRun", "RunOptions", "check_run", "run_curriculum"]
