"""An env.id given under the other kind (or a game's bare name) is named for what it is,
through run's preflight (envs/check.py) on the real Gymnasium and PettingZoo."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_env_check import problem

from cosmic_curriculum.envs.kinds import gymnasium_id, is_module_name, pettingzoo_game

STAGE = (
    '[env]\nkind = "{kind}"\nid = "{id}"\n[defaults]\ntimesteps = 1000\n[[stages]]\nname = "a"\n'
)


@pytest.mark.parametrize(
    ("kind", "env_id", "needle"),
    [
        (
            "gymnasium",
            "pettingzoo.classic.connect_four_v3",
            "env.id 'pettingzoo.classic.connect_four_v3' is a PettingZoo game, not a Gymnasium "
            'id: set env.kind = "pettingzoo" (docs/GAMES.md)',
        ),
        (
            "gymnasium",
            "tictactoe_v3",
            'set env.kind = "pettingzoo", id = "pettingzoo.classic.tictactoe_v3"',
        ),
        (
            "pettingzoo",
            "CartPole-v1",
            "env.id 'CartPole-v1' is a Gymnasium id, not a PettingZoo game module: set "
            'env.kind = "gymnasium"',
        ),
        (
            "pettingzoo",
            "connect_four_v3",
            "env.id 'connect_four_v3': no such module; did you mean "
            "'pettingzoo.classic.connect_four_v3'?",
        ),
        ("pettingzoo", "my game", "env.id 'my game' is not a module name: a game's id is the"),
        (  # neither kind's: the usual messages
            "gymnasium",
            "NoSuchEnv-v0",
            "env.id 'NoSuchEnv-v0' is not a registered Gymnasium environment",
        ),
        ("pettingzoo", "nosuchpkg.game", "no module named 'nosuchpkg'; install it"),
    ],
)
def test_an_id_under_the_other_kind_is_named_for_what_it_is(
    tmp_path: Path, kind: str, env_id: str, needle: str
) -> None:
    pytest.importorskip("pettingzoo")
    message = problem(tmp_path, STAGE.format(kind=kind, id=env_id))
    assert f"stage 1 a: env.id '{env_id}'" in message and needle in message, message


def test_a_game_module_of_the_users_own_is_recognised_under_the_gymnasium_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_games").mkdir()
    (tmp_path / "my_games" / "__init__.py").write_text("")
    (tmp_path / "my_games" / "nim.py").write_text("def env():\n    raise RuntimeError\n")
    (tmp_path / "my_games" / "notes.py").write_text("x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert pettingzoo_game("my_games.nim") == "my_games.nim"
    assert pettingzoo_game("my_games.notes") is None  # no env() nor parallel_env()
    assert pettingzoo_game("my_games.absent") is None
    message = problem(tmp_path, STAGE.format(kind="gymnasium", id="my_games.nim"))
    assert "env.id 'my_games.nim' is a PettingZoo game, not a Gymnasium id" in message


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("connect_four_v3", "pettingzoo.classic.connect_four_v3"),
        ("pistonball_v6", "pettingzoo.butterfly.pistonball_v6"),
        ("pettingzoo.classic.go_v5", "pettingzoo.classic.go_v5"),
        ("pettingzoo.classic.go_v0", None),
        ("CartPole-v1", None),
        ("no_such_game_v1", None),
    ],
)
def test_pettingzoo_games_are_found_by_module_or_bare_name(name: str, module: str | None) -> None:
    pytest.importorskip("pettingzoo")
    assert pettingzoo_game(name) == module


def test_module_names_and_gymnasium_ids() -> None:
    assert is_module_name("a.b_c.d1") and not is_module_name("CartPole-v1")
    assert not is_module_name("a..b") and not is_module_name("1a")
    assert gymnasium_id("CartPole-v1") and not gymnasium_id("pettingzoo.classic.go_v5")
