"""`run`'s first moves of each stage's game: a game that fails in reset, observe or step,
or does not fit its own spaces, is one line naming the call and where; real games pass."""

from __future__ import annotations

import pytest

from cosmic_curriculum.envs.game_check import check_first_moves
from cosmic_curriculum.envs.gymnasium import EnvSpecError
from cosmic_curriculum.envs.pettingzoo import game_info
from cosmic_curriculum.workspace.env_config import EnvSpec

pytest.importorskip("pettingzoo")


def _faulty(fault: str) -> EnvSpec:
    return EnvSpec(kind="pettingzoo", id="tests.envs.fake_games", kwargs={"fault": fault})


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("reset_fails", "the game's reset() failed in a random game's first moves (KeyError: "),
        (
            "step_fails",
            "the game's step(1) by a failed in a random game's first moves "
            "(IndexError: list index out of range at fake_games.py:",
        ),
        ("wide", "a's observation has shape (2,), but the game declares Box("),
        ("short_mask", "a's action mask has shape (1,), not (2,) for its 2 moves"),
        ("stuck", "the action mask allows no move for a while the game goes on"),
    ],
)
def test_a_game_that_goes_wrong_in_its_first_moves_is_one_line(fault: str, said: str) -> None:
    spec = _faulty(fault)
    with pytest.raises(EnvSpecError) as caught:
        check_first_moves(spec, game_info(spec))
    message = str(caught.value)
    assert said in message and "\n" not in message
    assert message.startswith("env.id 'tests.envs.fake_games': ")


@pytest.mark.parametrize(
    ("game", "kwargs"),
    [
        ("pettingzoo.classic.connect_four_v3", {}),
        ("pettingzoo.classic.tictactoe_v3", {}),
        ("pettingzoo.classic.go_v5", {"board_size": 5}),
        ("pettingzoo.classic.rps_v2", {}),  # a parallel game, converted
    ],
)
def test_real_games_pass(game: str, kwargs: dict[str, object]) -> None:
    spec = EnvSpec(kind="pettingzoo", id=game, kwargs=kwargs)
    check_first_moves(spec, game_info(spec))


def test_a_game_that_never_ends_passes_here() -> None:
    spec = _faulty("endless")  # the evaluation's move cap is what stops it
    check_first_moves(spec, game_info(spec), moves=50)
