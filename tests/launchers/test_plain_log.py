"""The detached run's log is plain text: what a pty and Rich write (``\\r\\n``, colours,
bold, redraws, titles) reaches `logs/curriculum.log` as plain lines, through the real
filter process tmux runs; and a workspace made by `init` ignores that log in git."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from gitutil import git

from cosmic_curriculum.launchers.plain_log import plain_line
from cosmic_curriculum.workspace.init import init_workspace

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        (b"curriculum done\r\n", b"curriculum done\n"),
        (b"\x1b[1mcommitted:\x1b[0m chore(training)\r\n", b"committed: chore(training)\n"),
        (b"\x1b[38;2;255;0;0mred\x1b[39m text\n", b"red text\n"),
        (b"\x1b]0;my title\x07after the title\r\n", b"after the title\n"),
        (b"\x1b[?25l\x1b[2K\r\n", b""),  # only escapes: nothing to read
        (b"\r\n", b"\n"),  # a blank line stays
        (b"step 1\rstep 2\r\n", b"step 1\nstep 2\n"),
        (b"bell\x07 and tab\tkept\r\n", b"bell and tab\tkept\n"),
        (b"no end", b"no end\n"),
    ],
)
def test_a_terminal_line_becomes_plain(raw: bytes, plain: bytes) -> None:
    assert plain_line(raw) == plain


def test_the_filter_appends_plain_lines(tmp_path: Path) -> None:
    log = tmp_path / "curriculum.log"
    log.write_bytes(b"earlier run\n")
    feed = b"\x1b[1mstarted\x1b[0m\r\n\x1b[32mpassed\x1b[0m curric-s1\r\n"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum.launchers.plain_log", str(log)],
        input=feed,
        env=env,
        check=True,
        timeout=60,
    )
    assert log.read_bytes() == b"earlier run\nstarted\npassed curric-s1\n"


def test_a_workspace_from_init_ignores_the_detached_log(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws", "quick").workspace
    (ws / "logs" / "curriculum.log").write_text("a detached run\n")
    (ws / ".cosmic-curriculum.commit").write_text("chore(training): x\n")
    assert git(ws, "status", "--porcelain") == ""
