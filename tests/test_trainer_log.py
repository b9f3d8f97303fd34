"""`trainer_log.trainer_error`: a trainer's own one-line last word becomes the attempt's
error; anything else (a traceback, progress, nothing) is not taken for one."""

from __future__ import annotations

import pytest

from cosmic_curriculum.workspace.trainer_log import trainer_error

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
