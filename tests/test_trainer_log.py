"""`trainer_log.trainer_error`: a trainer's own one-line last word becomes the attempt's
error; anything else (a traceback, progress, nothing) is not taken for one."""

from __future__ import annotations

from pathlib import Path

import pytest

from cosmic_curriculum.workspace.trainer_log import slurm_job_line, trainer_error

TRACEBACK = 'Traceback (most recent call last):\n  File "x.py", line 1\nRuntimeError: boom\n'


@pytest.mark.parametrize(
    ("tail", "said"),
    [
        (
            "@progress {}\nerror: env 'X' raised (E: e) at episode step 3\n",
            "env 'X' raised (E: e) at episode step 3",
        ),
        ("error: out of memory\n\n  \n", "out of memory"),
        ("error: first\nerror: second", "second"),
        (TRACEBACK, None),
        ("error: early\n" + TRACEBACK, None),  # not its last word
        ("error:  \n", None),
        ("error:nospace\n", None),
        ("", None),
        ("Error: capitalised by someone else\n", None),
    ],
)
def test_trainer_error(tail: str, said: str | None) -> None:
    assert trainer_error(tail) == said


@pytest.mark.parametrize(
    ("log", "shown"),
    [
        ("# slurm job 7: submitted as x\n# slurm job 7: RUNNING on n3\n@progress {}\n",
         "job 7: RUNNING on n3"),
        ("# slurm job 7: PENDING (Priority)\n", "job 7: PENDING (Priority)"),
        # an earlier launch's job is not the latest launch's
        ("# slurm job 7: COMPLETED\n# 2026-01-02T03:04:05+00:00 python train.py\n", None),
        ("# 2026-01-02T03:04:05+00:00 python train.py\n# slurm job 8: RUNNING on n1\n",
         "job 8: RUNNING on n1"),
        ("fake trainer output\n", None),
    ],
)  # fmt: skip
def test_slurm_job_line(tmp_path: Path, log: str, shown: str | None) -> None:
    path = tmp_path / "x.log"
    path.write_text(log)
    assert slurm_job_line(path) == shown
    assert slurm_job_line(tmp_path / "missing.log") is None
