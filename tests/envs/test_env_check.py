"""Preflight's check of each stage's env, with real Gymnasium environments: every problem
is one line naming the stage, the key, its value and the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium
import pytest

from cosmic_curriculum.envs.check import check_stage_envs
from cosmic_curriculum.envs.gymnasium import make_env
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.workspace.config_file import load_config

LAKE = '[env]\nkind = "gymnasium"\nid = "FrozenLake-v1"\n[defaults]\ntimesteps = 1000\n'


def problem(tmp_path: Path, text: str, first: int = 0, timesteps_given: bool = False) -> str:
    (tmp_path / "stages.toml").write_text(text)
    config = load_config(tmp_path / "stages.toml")
    with pytest.raises(ConfigError) as info:
        check_stage_envs(config, first, timesteps_given)
    message = str(info.value)
    assert "\n" not in message and str(tmp_path / "stages.toml") in message
    return message


def passes(tmp_path: Path, text: str) -> None:
    (tmp_path / "stages.toml").write_text(text)
    check_stage_envs(load_config(tmp_path / "stages.toml"), 0, False)


def test_a_good_curriculum_passes(tmp_path: Path) -> None:
    passes(
        tmp_path,
        LAKE + '[[stages]]\nname = "a"\nenv = {kwargs = {is_slippery = false}}\n'
        '[[stages]]\nname = "b"\nenv = {kwargs = {is_slippery = true}, wrappers = '
        '[{call = "gymnasium.wrappers:TimeLimit", kwargs = {max_episode_steps = 50}}]}\n',
    )


def test_an_unknown_id_names_the_close_matches(tmp_path: Path) -> None:
    text = LAKE.replace("FrozenLake-v1", "FrozenLak-v1") + '[[stages]]\nname = "a"\n'
    message = problem(tmp_path, text)
    assert "stage 1 a: env.id 'FrozenLak-v1' is not a registered" in message
    assert "did you mean 'FrozenLake-v1'" in message and "fix env.id" in message


def test_an_id_of_a_family_gymnasium_does_not_register_names_its_module(
    tmp_path: Path,
) -> None:
    text = LAKE.replace("FrozenLake-v1", "ALE/Pong-v5") + '[[stages]]\nname = "a"\n'
    message = problem(tmp_path, text)
    assert "env.id 'ALE/Pong-v5' is not a registered Gymnasium environment; its ids are " in message
    assert """registered by 'ale_py': env.imports = ["ale_py"]?""" in message


class _NeedsAPackage(gymnasium.Env[Any, Any]):
    def __init__(self, error: str = "DependencyNotInstalled") -> None:
        if error == "ImportError":
            raise ImportError("No module named 'Box2D'")
        raise gymnasium.error.DependencyNotInstalled("Box2D is not installed: pip install box2d")


@pytest.mark.parametrize("error", ["DependencyNotInstalled", "ImportError"])
def test_an_env_whose_package_is_missing_is_not_blamed_on_its_kwargs(
    tmp_path: Path, error: str
) -> None:
    if "NeedsAPackage-v0" not in gymnasium.registry:
        gymnasium.register(id="NeedsAPackage-v0", entry_point=_NeedsAPackage)
    text = LAKE.replace("FrozenLake-v1", "NeedsAPackage-v0").replace(
        "[defaults]", f'kwargs = {{error = "{error}"}}\n[defaults]'
    )
    message = problem(tmp_path, text + '[[stages]]\nname = "a"\n')
    assert "stage 1 a: env.id 'NeedsAPackage-v0' needs a package that is not installed (" in message
    assert "Box2D" in message and "install it, or choose another env.id" in message
    assert "env.kwargs" not in message


def test_a_missing_module_names_the_package_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "minigrid", None)  # as if it were not installed
    text = LAKE.replace("[defaults]", 'imports = ["minigrid"]\n[defaults]')
    message = problem(tmp_path, text + '[[stages]]\nname = "a"\n')
    assert "env.imports 'minigrid': no module named 'minigrid'" in message
    assert "pip install 'cosmic-curriculum[minigrid]'" in message
    absent = LAKE.replace("[defaults]", 'imports = ["no_such_envs"]\n[defaults]')
    assert "pip install no_such_envs" in problem(tmp_path, absent + '[[stages]]\nname = "a"\n')


def test_a_module_that_fails_to_import_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_envs.py").write_text("raise RuntimeError('needs a display')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    text = LAKE.replace("[defaults]", 'imports = ["broken_envs"]\n[defaults]')
    message = problem(tmp_path, text + '[[stages]]\nname = "a"\n')
    assert "env.imports 'broken_envs' failed to import (RuntimeError: needs a display)" in message


def test_kwargs_the_env_refuses(tmp_path: Path) -> None:
    text = LAKE.replace("[defaults]", "kwargs = {slippery = true}\n[defaults]")
    message = problem(tmp_path, text + '[[stages]]\nname = "a"\n')
    assert "env.kwargs {'slippery': True} are refused by 'FrozenLake-v1' (TypeError" in message
    assert "fix env.kwargs" in message


def test_a_wrapper_that_fails(tmp_path: Path) -> None:
    stage = '[[stages]]\nname = "a"\nenv = {wrappers = ["gymnasium.wrappers:TimeLimit"]}\n'
    message = problem(tmp_path, LAKE + stage)
    assert "env.wrappers[0] 'gymnasium.wrappers:TimeLimit' with kwargs {} failed" in message
    stage = '[[stages]]\nname = "a"\nenv = {wrappers = ["gymnasium.wrappers:NoSuchWrapper"]}\n'
    message = problem(tmp_path, LAKE + stage)
    assert "module 'gymnasium.wrappers' has no 'NoSuchWrapper'" in message


def test_spaces_that_differ_between_stages(tmp_path: Path) -> None:
    text = (
        LAKE + '[[stages]]\nname = "small"\nenv = {kwargs = {map_name = "4x4"}}\n'
        '[[stages]]\nname = "large"\nenv = {kwargs = {map_name = "8x8"}}\n'
    )
    message = problem(tmp_path, text)
    expected = "stage 2 large: env observation space Discrete(64) differs from stage 1 small's"
    assert f"{expected} Discrete(16)" in message
    assert "warm-starts from the previous stage's checkpoint" in message
    # Checked from the stage before the current one: stage 2 alone is still compared.
    assert "Discrete(64)" in problem(tmp_path, text, first=1)


def test_a_kind_that_changes_between_stages(tmp_path: Path) -> None:
    text = (
        '[[stages]]\nname = "a"\n[[stages]]\nname = "b"\ntimesteps = 9\n'
        'env = {kind = "gymnasium", id = "FrozenLake-v1"}\n'
    )
    message = problem(tmp_path, text)
    assert "stage 2 b: env.kind 'gymnasium' follows stage 1 a's 'arena'" in message


def test_a_pettingzoo_game_is_built_and_checked_before_training(tmp_path: Path) -> None:
    pytest.importorskip("pettingzoo")
    game = '[env]\nkind = "pettingzoo"\nid = "pettingzoo.classic.tictactoe_v3"\n'
    game += "[defaults]\ntimesteps = 1000\n"
    passes(tmp_path, game + '[[stages]]\nname = "a"\n[[stages]]\nname = "b"\n')
    typo = game.replace("tictactoe_v3", "tictactoe_v2") + '[[stages]]\nname = "a"\n'
    message = problem(tmp_path, typo)
    assert "stage 1 a: env.id 'pettingzoo.classic.tictactoe_v2': no such module" in message
    assert "did you mean 'pettingzoo.classic.tictactoe_v3'" in message
    other = '[[stages]]\nname = "b"\nenv = {id = "pettingzoo.classic.connect_four_v3"}\n'
    message = problem(tmp_path, game + '[[stages]]\nname = "a"\n' + other)
    assert "stage 2 b: env observation space Box(0, 1, (6, 7, 2), int8) differs" in message
    broken = '[[stages]]\nname = "b"\nenv = {id = "tests.envs.fake_games", kwargs = {fault = '
    broken += '"step_fails"}}\n'  # builds, then fails in its first moves: before any training
    message = problem(tmp_path, game + '[[stages]]\nname = "a"\n' + broken)
    assert "stage 2 b: env.id 'tests.envs.fake_games': the game's step(1) by a failed" in message


def test_a_non_arena_stage_needs_its_own_budget(tmp_path: Path) -> None:
    text = LAKE.replace("[defaults]\ntimesteps = 1000\n", "") + '[[stages]]\nname = "a"\n'
    message = problem(tmp_path, text)
    assert "stage 1 a: timesteps is not set and the default (20,000,000) is the arena's" in message
    (tmp_path / "stages.toml").write_text(text)
    check_stage_envs(load_config(tmp_path / "stages.toml"), 0, timesteps_given=True)


def test_make_env_builds_the_wrapped_env(tmp_path: Path) -> None:
    (tmp_path / "stages.toml").write_text(
        LAKE + '[[stages]]\nname = "a"\nenv = {kwargs = {is_slippery = false}, wrappers = '
        '[{call = "gymnasium.wrappers:TimeLimit", kwargs = {max_episode_steps = 7}}]}\n'
    )
    env = make_env(load_config(tmp_path / "stages.toml").stage_env(0))
    try:
        assert env.spec is not None and env.spec.max_episode_steps == 7
        assert env.unwrapped.spec is not None
    finally:
        env.close()


def test_the_config_and_status_never_import_gymnasium() -> None:
    probe = (
        "import sys; import cosmic_curriculum.workspace.config_file, "
        "cosmic_curriculum.status.show, cosmic_curriculum.curriculum.preflight, "
        "cosmic_curriculum.envs.check; print('gymnasium' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- the trainers of train-env's stages ---------------------------------------------------

PENDULUM = '[env]\nkind = "gymnasium"\nid = "Pendulum-v1"\n[defaults]\ntimesteps = 1000\n'


def trainer_problem(tmp_path: Path, text: str) -> str:
    (tmp_path / "stages.toml").write_text(text)
    config = load_config(tmp_path / "stages.toml")
    with pytest.raises(ConfigError) as info:
        check_stage_envs(config, 0, False, tmp_path)
    message = str(info.value)
    assert "\n" not in message and str(tmp_path / "stages.toml") in message
    return message


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            PENDULUM + '[trainer]\nalgo = "DQN"\n[[stages]]\nname = "a"\n',
            "stage 1 a: trainer.algo DQN acts in Discrete action spaces, but the env's is Box",
        ),
        (
            LAKE + '[[stages]]\nname = "a"\ntrainer = {algo = "TD3"}\n',
            "stage 1 a: trainer.algo TD3 acts in Box action spaces",
        ),
        (
            LAKE + '[trainer]\nhyperparams = {n_stepz = 16}\n[[stages]]\nname = "a"\n',
            "stage 1 a: trainer.hyperparams.n_stepz: not an argument of PPO",
        ),
        (
            LAKE + '[trainer]\nhyperparams_file = "gone.yml"\n[[stages]]\nname = "a"\n',
            "stage 1 a: trainer.hyperparams_file 'gone.yml': file not found",
        ),
        (
            PENDULUM + '[[stages]]\nname = "a"\ntrainer = {algo = "SAC"}\n'
            '[[stages]]\nname = "b"\ntrainer = {algo = "TD3"}\n',
            "stage 2 b: trainer.algo 'TD3' differs from stage 1 a's 'SAC'",
        ),
        (
            PENDULUM + '[trainer]\nnormalize = true\n[[stages]]\nname = "a"\n'
            '[[stages]]\nname = "b"\ntrainer = {normalize = false}\n',
            "stage 2 b: trainer.normalize (norm_obs) False differs",
        ),
        (
            PENDULUM + "[trainer]\nhyperparams = {policy_kwargs = {net_arch = [64]}}\n"
            '[[stages]]\nname = "a"\n[[stages]]\nname = "b"\n'
            "trainer = {hyperparams = {policy_kwargs = {net_arch = [32]}}}\n",
            "stage 2 b: trainer.hyperparams.policy_kwargs",
        ),
        (  # no hyperparams of the user's: the algo, the policy or the env is at fault
            LAKE + '[trainer]\npolicy = "CnnPolicy"\n[[stages]]\nname = "a"\n',
            "stage 1 a: trainer.algo: PPO CnnPolicy refuses the env (NatureCNN must be used "
            "with a gym.spaces.Box observation space, not Discrete(16)); change trainer.algo "
            "or trainer.policy, or [env] wrappers",
        ),
        (
            LAKE + '[trainer]\nhyperparams = {batch_size = 1}\n[[stages]]\nname = "a"\n',
            'stage 1 a: trainer.hyperparams {"batch_size": 1} are refused by PPO with '
            "MlpPolicy (`batch_size` must be greater",
        ),
        (
            PENDULUM + '[trainer]\nhyperparams = {use_sde = true}\n[[stages]]\nname = "a"\n',
            "stage 1 a: trainer: the trained bot could not be saved: cannot export a PPO "
            "policy with use_sde",
        ),
        (
            LAKE + '[trainer]\nhyperparams = {policy_kwargs = {activation_fn = "nn.GELU"}}\n'
            '[[stages]]\nname = "a"\n',
            "(GELU): env bots hold Linear layers",
        ),
    ],
)
def test_a_trainer_that_cannot_train_the_stage_is_refused(
    tmp_path: Path, text: str, needle: str
) -> None:
    assert needle in trainer_problem(tmp_path, text)


def test_a_zoo_budget_is_reported_not_used(tmp_path: Path) -> None:
    (tmp_path / "zoo.yml").write_text(
        "Pendulum-v1:\n  n_timesteps: !!float 2e4\n  policy: 'MlpPolicy'\n  gamma: 0.9\n"
        "  normalize: true\n  noise_type: 'normal'\n  noise_std: 0.1\n"
    )
    text = PENDULUM + '[trainer]\nalgo = "TD3"\nhyperparams_file = "zoo.yml"\n'
    (tmp_path / "stages.toml").write_text(text + '[[stages]]\nname = "a"\n')
    notes = check_stage_envs(load_config(tmp_path / "stages.toml"), 0, False, tmp_path)
    assert notes == [
        "stage 1 a: zoo.yml:Pendulum-v1 has n_timesteps 20,000; the stage trains its own "
        "budget (1,000 timesteps)"
    ]


PIXELS = (
    '[env]\nkind = "gymnasium"\nid = "MiniGrid-Empty-5x5-v0"\nimports = ["minigrid"]\n'
    'wrappers = [{call = "minigrid.wrappers:RGBImgPartialObsWrapper"}, '
    '{call = "minigrid.wrappers:ImgObsWrapper"}]\n[defaults]\ntimesteps = 1000\n'
)


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["PPO", "DQN"])
def test_an_image_stage_passes_with_cnn_policy(tmp_path: Path, algo: str) -> None:
    # (56, 56, 3) pixels: CnnPolicy is chosen, and its NatureCNN exports as an env bot.
    pytest.importorskip("minigrid")
    passes(tmp_path, PIXELS + f'[trainer]\nalgo = "{algo}"\n[[stages]]\nname = "a"\n')


MINIGRID = (
    '[env]\nkind = "gymnasium"\nid = "MiniGrid-Empty-5x5-v0"\nimports = ["minigrid"]\n'
    'wrappers = [{wrappers}]\n[defaults]\ntimesteps = 1000\n[[stages]]\nname = "a"\n'
)
FILTER = (
    '{call = "gymnasium.wrappers:FilterObservation", kwargs = {filter_keys = '
    '["direction", "image"]}}'
)


def test_minigrids_own_observations_name_the_wrappers_that_fix_them(tmp_path: Path) -> None:
    # Each message's fix, applied, leads to the next, then to a stage that passes.
    pytest.importorskip("minigrid")
    mission = trainer_problem(tmp_path, MINIGRID.replace("{wrappers}", ""))
    assert "stage 1 a: env: the observation space's part 'mission' is MissionSpace" in mission
    assert f"drop it with {FILTER} in [env] wrappers" in mission
    small = trainer_problem(tmp_path, MINIGRID.replace("{wrappers}", FILTER))
    assert "stage 1 a: env: the observation part 'image' is a 7x7x3 image" in small
    assert '"gymnasium.wrappers:FlattenObservation"' in small
    flat = f'{FILTER}, "gymnasium.wrappers:FlattenObservation"'
    (tmp_path / "stages.toml").write_text(MINIGRID.replace("{wrappers}", flat))
    check_stage_envs(load_config(tmp_path / "stages.toml"), 0, False, tmp_path)
