from __future__ import annotations

import json
from typing import Any

import pytest

from cosmic_curriculum.progress import ACTIVITY_MAX, format_progress, parse_progress_line
from cosmic_curriculum.workspace.live import progress_text


def test_roundtrip_drops_non_finite() -> None:
    line = format_progress(timesteps=10, total=100, fps=5.5, reward=float("nan"), win_rate=None)
    assert line.startswith("@progress ")
    assert parse_progress_line(line) == {"timesteps": 10, "total": 100, "fps": 5.5}


def test_other_lines_are_not_progress() -> None:
    for line in [
        "",
        "Using cpu device",
        "@progress {",
        "@progress []",
        '@progress {"total": 3}',
        '@progress {"timesteps": true, "total": 3}',
    ]:
        assert parse_progress_line(line) is None


def test_ignores_unknown_and_bad_optional_fields() -> None:
    got = parse_progress_line('@progress {"timesteps": 1, "total": 2, "reward": "x", "foo": 1}\n')
    assert got == {"timesteps": 1, "total": 2}


@pytest.mark.parametrize(
    ("activity", "kept"),
    [
        (
            "cloning search:2: 12,000 of 40,000 positions labelled",
            "cloning search:2: 12,000 of 40,000 positions labelled",
        ),
        (
            "  labelling \x1b[2J\x1b[31mred\x1b[0m\nnext line\r  ",
            "labelling [2J[31mred[0mnext line",
        ),
        ("x" * 500, "x" * ACTIVITY_MAX),
        ("", None),
        (" \n\t", None),
        (3, None),
        (None, None),
        (["cloning"], None),
    ],
)
def test_an_activity_is_one_printable_line_or_left_out(activity: Any, kept: str | None) -> None:
    """A trainer's activity reaches the terminal: no escape sequences, no line breaks."""
    payload = {"timesteps": 0, "total": 9, "activity": activity}
    got = parse_progress_line(f"@progress {json.dumps(payload)}")
    assert got is not None and got.get("activity") == kept
    if kept is not None:
        assert "\x1b" not in progress_text(got) and "\n" not in progress_text(got)
        assert progress_text(got) == f"0/9 steps (0%), {kept}"


def test_format_progress_writes_an_activity() -> None:
    line = format_progress(timesteps=0, total=5, activity="cloning search:2: epoch 1 of 15")
    assert parse_progress_line(line) == {
        "timesteps": 0, "total": 5, "activity": "cloning search:2: epoch 1 of 15"
    }  # fmt: skip
