"""What compare refuses in stages.toml before an arm is made, and the arena's and a game's
reference."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_helpers import write

from cosmic_curriculum.compare.checks import arena_reference, game_reference, trainer_problem
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.workspace.config_file import load_config

GYM = """\
reference_bot = {builtin = "random"}
[env]
kind = "gymnasium"
id = "FrozenLake-v1"
[[stages]]
name = "one"
timesteps = 10
[[stages]]
name = "two"
timesteps = 10
"""
GAME = """\
reference_bot = {builtin = "random"}
[env]
kind = "pettingzoo"
id = "pettingzoo.classic.tictactoe_v3"
[[stages]]
name = "vs-random"
timesteps = 10
[[stages]]
name = "self-play"
timesteps = 10
"""
ARENA = """\
reference_bot = "bots/rookie.json"
[[stages]]
name = "planar"
flags = ["--no-allow-vertical"]
timesteps = 10
[[stages]]
name = "full"
timesteps = 10
"""


@pytest.mark.parametrize(
    ("text", "kind", "says"),
    [
        (GYM, "gymnasium", None),
        (ARENA, "arena", None),
        (
            'training_command = ["./train.sh"]\n' + ARENA,
            "arena",
            "training_command ['./train.sh']: compare reads the checkpoints of the built-in arena",
        ),
        (
            'training_command = ["./train.sh"]\n' + GYM,
            "gymnasium",
            "is trained by training_command ['./train.sh']; compare reads the checkpoints of the "
            "built-in train-env only",
        ),
        (GYM, "arena", "stage 'one' is of kind gymnasium and the last stage of kind arena"),
        (GAME, "pettingzoo", None),
        (
            'training_command = ["./train.sh"]\n' + GAME,
            "pettingzoo",
            "stage 'vs-random' is trained by training_command ['./train.sh']; compare reads the "
            "checkpoints of the built-in train-env only",
        ),
        (GAME, "gymnasium", "stage 'vs-random' is of kind pettingzoo and the last stage of kind"),
    ],
)
def test_stages_whose_checkpoints_compare_reads(
    tmp_path: Path, text: str, kind: str, says: str | None
) -> None:
    config = load_config(write(tmp_path, text))
    problem = trainer_problem(config, 0, kind)
    assert problem is None if says is None else says in (problem or "")


@pytest.mark.parametrize(
    ("reference", "says"),
    [
        ('"bots/rookie.json"', None),
        ('"bots/none.json"', "reference_bot 'bots/none.json': no such bot file"),
        ('{exec = ["./bot"]}', "compare plays an arena arm's checkpoints against a bot file"),
    ],
)
def test_the_arena_reference_is_a_bot_file(
    tmp_path: Path, reference: str, says: str | None
) -> None:
    (tmp_path / "bots").mkdir()
    (tmp_path / "bots" / "rookie.json").write_text("{}")
    text = ARENA.replace('"bots/rookie.json"', reference)
    config = load_config(write(tmp_path, text))
    if says is None:
        assert arena_reference(config, tmp_path, 1) == tmp_path / "bots" / "rookie.json"
    else:
        with pytest.raises(ConfigError, match=says):
            arena_reference(config, tmp_path, 1)


def test_the_last_stages_own_reference_comes_first(tmp_path: Path) -> None:
    (tmp_path / "bots").mkdir()
    (tmp_path / "bots" / "veteran.json").write_text("{}")
    text = ARENA + 'reference_bot = "bots/veteran.json"\n'
    config = load_config(write(tmp_path, text))
    assert arena_reference(config, tmp_path, 1) == tmp_path / "bots" / "veteran.json"


@pytest.mark.parametrize(
    ("root", "last", "want"),
    [
        ('{builtin = "random"}', None, "random"),
        ('{builtin = "random"}', '{builtin = "search", depth = 3}', "search:3"),
        ('{builtin = "search", depth = 2}', None, "search:2"),
        ('"bots/c4.json"', None, Path("bots/c4.json")),
        ('{builtin = "random"}', '"bots/c4.json"', Path("bots/c4.json")),
        ('"bots/none.json"', None, "reference_bot 'bots/none.json': no such bot file"),
        (
            '{exec = ["./bot"]}',
            None,
            "compare plays a game arm's checkpoints against a bot file, random or search:N",
        ),
    ],
)
def test_a_games_reference_is_the_last_stages_else_the_curriculums(
    tmp_path: Path, root: str, last: str | None, want: str | Path
) -> None:
    (tmp_path / "bots").mkdir()
    (tmp_path / "bots" / "c4.json").write_text("{}")
    text = GAME.replace('{builtin = "random"}', root, 1)
    if last is not None:
        text += f"reference_bot = {last}\n"
    config = load_config(write(tmp_path, text))
    if isinstance(want, Path):
        assert game_reference(config, tmp_path, 1) == tmp_path / want
    elif want.startswith(("random", "search:")):
        assert game_reference(config, tmp_path, 1) == want
    else:
        with pytest.raises(ConfigError, match=want):
            game_reference(config, tmp_path, 1)
