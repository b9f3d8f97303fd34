"""Loading PettingZoo games (envs/pettingzoo.py): the classic games we play, a parallel
game through parallel_to_aec, and every bad game as one line naming env.id."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pettingzoo")

from cosmic_curriculum.envs.pettingzoo import game_info, make_game
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.workspace.env_config import EnvSpec

# Games that are not what a pettingzoo stage plays, each a real PettingZoo env.
FAKE_GAMES = """
from gymnasium import spaces
from pettingzoo import AECEnv


class Game(AECEnv):
    metadata = {"name": "fake"}

    def __init__(self, agents=("a", "b"), box=False, obs=None, start=0):
        self.possible_agents = list(agents)
        self.action_spaces = {
            a: spaces.Box(0, 1, (2,)) if box else spaces.Discrete(3, start=start) for a in agents
        }
        self.observation_spaces = {a: obs or spaces.Discrete(2) for a in agents}

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]


def three_players():
    return Game(("a", "b", "c"))


def one_player():
    return Game(("a",))


def continuous():
    return Game(box=True)


def not_a_game():
    return object()

def multibinary():
    return Game(obs=spaces.MultiBinary(4))

def text_part():
    return Game(obs=spaces.Dict({"board": spaces.Box(0, 1, (3,)), "name": spaces.Text(8)}))

def shifted_moves():
    return Game(start=1)
"""


def spec(env_id: str, **kwargs: Any) -> EnvSpec:
    return EnvSpec(kind="pettingzoo", id=env_id, kwargs=kwargs)


@pytest.mark.parametrize(
    ("env_id", "kwargs", "agents", "moves", "masked"),
    [
        ("pettingzoo.classic.tictactoe_v3", {}, ("player_1", "player_2"), 9, True),
        ("pettingzoo.classic.connect_four_v3", {}, ("player_0", "player_1"), 7, True),
        ("pettingzoo.classic.go_v5", {"board_size": 5}, ("black_0", "white_0"), 26, True),
        ("pettingzoo.classic.rps_v2", {"num_actions": 5}, ("player_0", "player_1"), 5, False),
    ],
)
def test_two_player_games_load(
    env_id: str, kwargs: dict[str, Any], agents: tuple[str, str], moves: int, masked: bool
) -> None:
    info = game_info(spec(env_id, **kwargs))
    assert info.agents == agents and info.action_space.n == moves and info.masked is masked
    game = make_game(spec(env_id, **kwargs))
    game.reset(seed=0)
    raw = game.observe(game.agent_selection)
    seen = raw["observation"] if masked else raw
    assert info.observation_space.contains(seen)
    game.close()


@pytest.mark.parametrize(
    ("env_id", "kwargs", "expected"),
    [
        (
            "pettingzoo.classic.conect_four_v3",
            {},
            "no such module; did you mean 'pettingzoo.classic.connect_four_v3'",
        ),
        ("no_such_games.chess", {}, "no module named 'no_such_games'; install it"),
        ("json", {}, "is not a PettingZoo game module (it has no env() nor parallel_env())"),
        (
            "pettingzoo.classic.connect_four_v3",
            {"bogus": 1},
            "env.kwargs {'bogus': 1} are refused by pettingzoo.classic.connect_four_v3.env()",
        ),
    ],
)
def test_a_bad_module_is_one_line(env_id: str, kwargs: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        game_info(spec(env_id, **kwargs))
    message = str(caught.value)
    assert expected in message and "\n" not in message and message.startswith("env.")


@pytest.mark.parametrize(
    ("factory", "expected"),
    [
        ("three_players", "has 3 agents ['a', 'b', 'c']; a pettingzoo stage takes two-player"),
        ("one_player", "has 1 agents ['a']"),
        ("continuous", "the action space is Box(0.0, 1.0, (2,), float32), not Discrete"),
        ("not_a_game", "its env() returned a 'object', not a PettingZoo AECEnv or ParallelEnv"),
        # what no bot can hold: refused before SB3 trains on it and the bot cannot be saved
        ("multibinary", "the observation space is MultiBinary(4); a game's bot reads Box"),
        ("text_part", "the observation space's part 'name' is Text; a game's bot"),
        ("shifted_moves", "the action space is Discrete with start 1; a game's bot"),
    ],
)
def test_a_game_a_stage_cannot_play_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, factory: str, expected: str
) -> None:
    module = f"fake_games_{factory}"
    text = FAKE_GAMES + f"\nenv = {factory}\n"
    (tmp_path / f"{module}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(ConfigError) as caught:
        game_info(spec(module))
    assert expected in str(caught.value) and "\n" not in str(caught.value)
