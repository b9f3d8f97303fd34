"""How a game study plays (pure rules): whole seat-swapped pairs, what a cached game result
depends on, and the last stage's action choice, the curriculum's own."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_helpers import write

from cosmic_curriculum.compare.game_measure import GameProbe, game_probe, games_of
from cosmic_curriculum.compare.results import reference_label
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.env_config import EnvSpec

GAME = """\
reference_bot = {builtin = "random"}
[env]
kind = "pettingzoo"
id = "pettingzoo.classic.tictactoe_v3"
[trainer]
algo = "MaskablePPO"
[[stages]]
name = "one"
timesteps = 10
[[stages]]
name = "two"
timesteps = 10
"""


@pytest.mark.parametrize(("episodes", "games"), [(0, 2), (1, 2), (2, 2), (7, 8), (40, 40)])
def test_games_are_whole_seat_swapped_pairs(episodes: int, games: int) -> None:
    assert games_of(episodes) == games


@pytest.mark.parametrize(
    ("gate", "deterministic"),
    [
        ("", False),  # a game samples unless its gate says otherwise
        ("[gate]\ndeterministic = true\n", True),
        ("[gate]\ndeterministic = false\n", False),
        (
            '[gate]\ndeterministic = true\n[[stages]]\nname = "three"\ntimesteps = 5\n'
            "gate = {deterministic = false}\n",
            False,
        ),
    ],
)
def test_the_last_stages_gate_chooses_sampled_or_greedy_moves(
    tmp_path: Path, gate: str, deterministic: bool
) -> None:
    config = load_config(write(tmp_path, GAME + gate))
    probe = game_probe(config, "random", 2026, tmp_path)
    assert probe.deterministic is deterministic
    assert probe.deterministic is config.stage_gate(len(config.stages) - 1).game_deterministic()
    assert (probe.algo, probe.spec.id) == ("MaskablePPO", "pettingzoo.classic.tictactoe_v3")


def test_the_algorithm_defaults_to_train_envs_choice_for_the_game(tmp_path: Path) -> None:
    pytest.importorskip("pettingzoo")
    config = load_config(write(tmp_path, GAME.replace('[trainer]\nalgo = "MaskablePPO"\n', "")))
    assert game_probe(config, "random", 2026, tmp_path).algo == "MaskablePPO"  # masked moves


def test_a_cached_game_result_depends_on_the_game_reference_and_action_choice(
    tmp_path: Path,
) -> None:
    spec = EnvSpec(kind="pettingzoo", id="pettingzoo.classic.tictactoe_v3")
    bot = tmp_path / "ref.json"
    bot.write_text("{}")

    def tag(reference: str | Path = "random", deterministic: bool = False, **env: str) -> str:
        game = spec.model_copy(update=env)
        return GameProbe(game, "PPO", reference, 1, deterministic, tmp_path).tag()

    tags = {
        tag(),
        tag("search:2"),
        tag(deterministic=True),
        tag(id="pettingzoo.classic.connect_four_v3"),
        tag(bot),
    }
    assert len(tags) == 5 and tag() == tag()
    bot.write_text('{"changed": 1}')  # a reference file by its content
    assert tag(bot) not in tags


@pytest.mark.parametrize(
    ("reference", "label"),
    [("search:4", "search:4"), (Path("WS/bots/c4.json"), "bots/c4.json")],
)
def test_a_reference_is_named_in_the_workspace(
    tmp_path: Path, reference: str | Path, label: str
) -> None:
    if isinstance(reference, Path):
        reference = tmp_path / reference.relative_to("WS")
    assert reference_label(reference, tmp_path) == label
    assert reference_label(Path("/elsewhere/bot.json"), tmp_path) == "/elsewhere/bot.json"
