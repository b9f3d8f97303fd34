"""An evaluation command's streamed episodes: the lines, their counts, and when the gate
has decided on them."""

from __future__ import annotations

import pytest

from cosmic_curriculum.evaluation.stream import Streamed, counts, decided, parse_episode
from cosmic_curriculum.workspace.config import GateSettings


@pytest.mark.parametrize(
    ("line", "episode"),
    [
        ('{"result": 1, "success": true, "return": 1.5}', Streamed(1, True, 1.5)),
        ('{"success": false}', Streamed(None, False, None)),
        ('{"result": -1}', Streamed(-1, None, None)),
        ('{"return": 3}', Streamed(None, None, 3.0)),
    ],
)
def test_lines(line: str, episode: Streamed) -> None:
    assert parse_episode(line) == episode


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("win", "not JSON: 'win'; write one JSON object a line"),
        ("[1]", "expected a JSON object, got list"),
        ('{"result": 2}', "'result' must be 1 (won), 0 (draw) or -1 (lost), got 2"),
        ('{"result": true}', "'result' must be 1 (won), 0 (draw) or -1 (lost), got True"),
        ('{"success": 1}', "'success' must be true or false, got 1"),
        ('{"return": "x"}', "'return' must be a finite number, got 'x'"),
    ],
)
def test_bad_lines_say_what_is_wrong(line: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_episode(line)
    assert str(caught.value) == message


def test_counts_keep_only_what_every_episode_gave() -> None:
    got = counts([Streamed(1, True, 1.0), Streamed(0, False, 0.0), Streamed(-1, True, 2.0)])
    assert got == {
        "episodes": 3,
        "wins_a": 1,
        "wins_b": 1,
        "draws": 1,
        "successes": 2,
        "returns": [1.0, 0.0, 2.0],
    }
    assert counts([Streamed(1, True), Streamed(None, False)]) == {"episodes": 2, "successes": 1}


THRESHOLD = GateSettings(rule="threshold", target=0.9)
BOTH = GateSettings(rule=["threshold", "sprt"], target=0.9)


@pytest.mark.parametrize(
    ("settings", "episodes", "planned", "stops"),
    [
        (THRESHOLD, [Streamed(success=False)] * 2, 20, False),  # LLR −2.20: not yet
        (THRESHOLD, [Streamed(success=False)] * 3, 20, True),  # LLR −3.30 ≤ −2.94
        (THRESHOLD, [Streamed(success=True)] * 5, 5, True),  # the cap
        (THRESHOLD, [Streamed(result=1)] * 5, 5, False),  # no 'success': cannot decide
        (BOTH, [Streamed(success=False)] * 3, 20, False),  # sprt needs 'result'
        (BOTH, [Streamed(1, False)] * 3, 20, True),  # threshold failed: decided
        (BOTH, [Streamed(1, True)] * 27, 400, True),  # both passed
        (BOTH, [Streamed(-1, True)] * 12, 400, False),  # sprt: LLR −2.68, not yet
        (BOTH, [Streamed(-1, True)] * 14, 400, True),  # sprt failed: LLR −3.12
    ],
)
def test_when_the_gate_has_decided(
    settings: GateSettings, episodes: list[Streamed], planned: int, stops: bool
) -> None:
    assert decided(settings, episodes, planned) is stops
