"""Training settings: one-line errors for bad values, the PPO layout, game flags."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from train_helpers import tiny

from cosmic_curriculum import train
from cosmic_curriculum.errors import ConfigError

# --- settings ---------------------------------------------------------------------------


def test_bad_settings_are_one_line_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--opponent-mode='foo'"):
        tiny(tmp_path, opponent_mode="foo")
    with pytest.raises(ConfigError, match="--timesteps=0"):
        tiny(tmp_path, timesteps=0)
    with pytest.raises(ConfigError, match="experiment name"):
        tiny(tmp_path, name="../escape")
    with pytest.raises(ConfigError, match="needs --opponent-bot"):
        tiny(tmp_path, opponent_mode="bot")
    with pytest.raises(ConfigError, match="only used with --opponent-mode bot"):
        tiny(tmp_path, opponent_bot=Path("bots/x.json"))
    with pytest.raises(ConfigError, match="--reset-std"):
        tiny(tmp_path, reset_std=-1.0)


@pytest.mark.parametrize(("n_parallel", "rollout"), [(14, 16384), (256, 16384), (3, 100)])
def test_ppo_layout_minibatch_divides_the_rollout(n_parallel: int, rollout: int) -> None:
    s = train.TrainSettings(experiment="x", n_parallel=n_parallel, rollout_size=rollout)
    n_steps, batch = train.ppo_layout(s)
    assert n_steps * n_parallel >= rollout
    assert (n_steps * n_parallel) % batch == 0
    assert batch <= s.batch_size


def test_game_flags_reach_the_game(tmp_path: Path) -> None:
    default = train.game_settings(tiny(tmp_path))
    game = train.game_settings(
        tiny(
            tmp_path,
            speedup=4,
            attack_goal_bias=0.7,
            orb_approach_bias=0.2,
            draw_penalty=5.0,
            allow_vertical=False,
            allow_pitch_roll=False,
        )
    )
    assert (game.decision_ticks, game.attack_goal_bias, game.draw_penalty) == (4, 0.7, 5.0)
    assert game.orb_approach_bias == 0.2
    assert not game.allow_vertical and not game.allow_pitch_roll
    assert default.allow_vertical and default.allow_pitch_roll
    # the trainer shapes by default (the game's own default is goals only); 0 turns it off
    assert default.attack_goal_bias == 0.5 and default.orb_approach_bias == 0.5
    off = train.game_settings(tiny(tmp_path, attack_goal_bias=0.0, orb_approach_bias=0.0))
    assert off.attack_goal_bias == 0.0 and off.orb_approach_bias == 0.0
    # flags not given keep the game's defaults
    assert default.draw_penalty == type(default)().draw_penalty


def test_an_experiment_name_whose_files_would_not_fit_is_one_line(tmp_path: Path) -> None:
    """Both trainers check the name a user gives on their command line like the config
    checks a stage's: every file named after it must fit NAME_MAX (255 bytes)."""
    from cosmic_curriculum.train.env_run import parse_settings

    with pytest.raises(ConfigError, match="exceed the file system's limit of 255 bytes"):
        tiny(tmp_path, name="a" * 230)
    with pytest.raises(ConfigError, match=r"EXPERIMENT: .*at most 218 characters"):
        parse_settings(
            "a" * 230, timesteps=1, env="{}", resume=None, seed=0, algo="PPO",
            hyperparams=None, workspace=tmp_path,
        )  # fmt: skip


@pytest.mark.parametrize(
    ("option", "says"),
    [
        ({"checkpoint_every": 0}, "--checkpoint-every 0: must be >= 1 timestep"),
        ({"keep_checkpoints": 0}, "--keep-checkpoints 0: must be >= 1 (resume needs one)"),
    ],
)
def test_train_env_step_checkpoint_options_are_checked(
    tmp_path: Path, option: dict[str, int], says: str
) -> None:
    from cosmic_curriculum.train.env_run import parse_settings

    with pytest.raises(ConfigError, match=re.escape(says)):
        parse_settings(
            "x", timesteps=1, env='{"kind": "gymnasium", "id": "FrozenLake-v1"}', resume=None,
            seed=0, algo="PPO", hyperparams=None, workspace=tmp_path, **option,
        )  # fmt: skip
