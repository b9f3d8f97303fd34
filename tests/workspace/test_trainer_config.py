"""`[trainer]` and a stage's `trainer`: the model, the merge and its precedence (the zoo
file < [trainer] < the stage's), the errors, the config hash, and train-env's argv."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cosmic_curriculum import defaults as d
from cosmic_curriculum.curriculum.context import Run, RunOptions
from cosmic_curriculum.curriculum.launch import training_argv
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.stage_trainer import stage_trainer
from cosmic_curriculum.workspace.state import Attempt
from cosmic_curriculum.workspace.trainer_config import TrainerConfig, merged_trainer

POLE = """
[env]
kind = "gymnasium"
id = "CartPole-v1"

[defaults]
timesteps = 512
"""

# An entry in rl-zoo3's format (its keys and its Python-ish strings).
ZOO = """
CartPole-v1:
  n_envs: 8
  n_timesteps: !!float 1e5
  policy: 'MlpPolicy'
  n_steps: 32
  gamma: 0.98
  learning_rate: lin_0.001
  clip_range: lin_0.2
  normalize: "dict(norm_obs=True, norm_reward=False)"
  policy_kwargs: "dict(ortho_init=False, activation_fn=nn.ReLU, net_arch=dict(pi=[64], vf=[64]))"

Pendulum-v1:
  env_wrapper:
    - sb3_contrib.common.wrappers.TimeFeatureWrapper
  n_envs: 4
"""


def load(tmp_path: Path, text: str) -> CurriculumConfig:
    (tmp_path / "stages.toml").write_text(text)
    return load_config(tmp_path / "stages.toml")


def error_for(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    message = str(info.value)
    assert "\n" not in message and "stages.toml" in message
    return message


def argv_of(tmp_path: Path, text: str, stage: int = 0) -> list[str]:
    run = Run(RunOptions(workspace=tmp_path))
    run.config = load(tmp_path, text)
    return training_argv(run, Attempt(stage_index=stage, attempt=0, experiment="e"), None)


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


T = TrainerConfig


@pytest.mark.parametrize(
    ("base", "stage", "expected"),
    [
        (None, None, T()),
        (T(algo="A2C"), None, T(algo="A2C")),
        (None, T(algo="DQN"), T(algo="DQN")),
        (T(algo="A2C", n_envs=4), T(algo="PPO"), T(algo="PPO", n_envs=4)),
        (
            T(hyperparams={"gamma": 0.9, "n_steps": 64}),
            T(hyperparams={"n_steps": 128}),
            T(hyperparams={"gamma": 0.9, "n_steps": 128}),
        ),
        (
            T(hyperparams={"policy_kwargs": {"net_arch": [64], "ortho_init": False}}),
            T(hyperparams={"policy_kwargs": {"net_arch": [32]}}),
            T(hyperparams={"policy_kwargs": {"net_arch": [32]}}),  # a value is replaced whole
        ),
        (T(normalize={"norm_reward": False}), T(normalize=True), T(normalize=True)),
        (
            T(hyperparams_file="a.yml", hyperparams_key="k"),
            T(hyperparams_file="b.yml"),
            T(hyperparams_file="b.yml", hyperparams_key="k"),
        ),
    ],
)
def test_a_stage_replaces_keys_and_merges_hyperparams(
    base: T | None, stage: T | None, expected: T
) -> None:
    assert merged_trainer(base, stage) == expected


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        (
            '[trainer]\nalgo = "PPO2"\n',
            "trainer.algo: 'PPO2' is not an algorithm; choose one of PPO, A2C",
        ),
        ('[trainer]\nalgoo = "PPO"\n', "unknown key 'algoo'"),
        ("[trainer]\nn_envs = 0\n", "trainer.n_envs"),
        ('[trainer]\nnormalize = "yes"\n', "trainer.normalize"),
        ('[trainer]\nvec_env = "threads"\n', "trainer.vec_env"),
        ('[trainer]\npolicy = "my.Policy"\n', "not a policy name"),
        (
            '[trainer]\nhyperparams = {learning_rate = "fast"}\n',
            "trainer.hyperparams: learning_rate",
        ),
        ("[trainer]\nhyperparams = {n_envs = 4}\n", "set [trainer] n_envs instead"),
        ('[trainer]\nhyperparams = {policy_kwargs = {activation_fn = "nn.Os"}}\n', "nn.Os"),
    ],
)
def test_a_bad_trainer_is_one_line_naming_the_key(tmp_path: Path, table: str, needle: str) -> None:
    message = error_for(tmp_path, POLE + table + '[[stages]]\nname = "a"\n')
    assert needle in message, message


def test_a_trainer_error_names_its_line(tmp_path: Path) -> None:
    message = error_for(
        tmp_path, POLE + '[trainer]\nn_envs = 2\nalgo = "X"\n[[stages]]\nname = "a"\n'
    )
    assert "stages.toml:10: trainer.algo:" in message, message
    own = (
        'training_command = ["./t"]\n' + POLE + '[trainer]\nalgo = "A2C"\n[[stages]]\nname = "a"\n'
    )
    assert "stages.toml:9: trainer:" in error_for(tmp_path, own)


def test_a_stage_trainer_error_names_the_stage(tmp_path: Path) -> None:
    message = error_for(tmp_path, POLE + '[[stages]]\nname = "a"\ntrainer = {algo = "X"}\n')
    assert "stages[0].trainer.algo" in message and ":10:" in message, message


def test_algo_names_ignore_case(tmp_path: Path) -> None:
    cfg = load(tmp_path, POLE + '[trainer]\nalgo = "tqc"\n[[stages]]\nname = "a"\n')
    assert cfg.stage_trainer(0).algo == "TQC"


def test_a_trainer_for_another_trainer_is_refused(tmp_path: Path) -> None:
    own = 'training_command = ["./train"]\n' + POLE + '[trainer]\nalgo = "A2C"\n'
    message = error_for(tmp_path, own + '[[stages]]\nname = "a"\n')
    assert "trainer: configures the built-in train-env" in message
    assert "training_command" in message
    arena = '[[stages]]\nname = "a"\ntrainer = {algo = "A2C"}\n'
    message = error_for(tmp_path, arena)
    assert "stages[0].trainer:" in message and "arena stage" in message, message


def test_the_config_hash_changes_only_when_a_trainer_is_configured(tmp_path: Path) -> None:
    plain = load(tmp_path, POLE + '[[stages]]\nname = "a"\n')
    assert "trainer" not in plain.stage_definitions()[0]
    assert argv_of(tmp_path, POLE + '[[stages]]\nname = "a"\n')[-2:] != ["--algo", "PPO"]
    tuned = load(
        tmp_path,
        POLE + '[trainer]\nalgo = "A2C"\n[[stages]]\nname = "a"\n'
        '[[stages]]\nname = "b"\ntrainer = {hyperparams = {gamma = 0.9}}\n',
    )
    first, second = tuned.stage_definitions()
    assert first["trainer"] == {"algo": "A2C"}
    assert second["trainer"] == {"algo": "A2C", "hyperparams": {"gamma": 0.9}}
    assert tuned.stage_hashes()[0] != plain.stage_hashes()[0]


def test_without_a_trainer_table_the_argv_is_unchanged(tmp_path: Path) -> None:
    argv = argv_of(tmp_path, POLE + '[[stages]]\nname = "a"\nflags = ["--algo", "A2C"]\n')
    # -P: the workspace (its working directory) is not first on the trainer's sys.path
    assert argv[:5] == [sys.executable, "-P", "-m", "cosmic_curriculum", "train-env"]
    assert argv[5:] == [
        "e",
        "--timesteps",
        "512",
        "--env",
        '{"id":"CartPole-v1","imports":[],"kind":"gymnasium","kwargs":{},"wrappers":[]}',
        "--algo",
        "A2C",
    ]


def test_train_env_gets_the_merged_options_and_flags_come_last(tmp_path: Path) -> None:
    text = (
        POLE
        + '[trainer]\nalgo = "A2C"\nhyperparams = {gamma = 0.9, n_steps = 16}\nn_envs = 2\n'
        + 'normalize = {norm_reward = false}\nvec_env = "dummy"\n'
        + '[[stages]]\nname = "a"\ntrainer = {policy = "MlpPolicy", hyperparams = {n_steps = 8}}\n'
        + 'flags = ["--seed", "3"]\n'
    )
    argv = argv_of(tmp_path, text)
    assert argv[4] == "train-env"
    assert option(argv, "--algo") == "A2C" and option(argv, "--n-envs") == "2"
    assert option(argv, "--policy") == "MlpPolicy" and option(argv, "--vec-env") == "dummy"
    assert json.loads(option(argv, "--hyperparams") or "") == {"gamma": 0.9, "n_steps": 8}
    assert json.loads(option(argv, "--normalize") or "") == {"norm_reward": False}
    assert argv[-2:] == ["--seed", "3"] and argv.index("--algo") > argv.index("--env")


def test_the_zoo_entry_is_under_the_trainer_and_the_stage(tmp_path: Path) -> None:
    (tmp_path / "zoo").mkdir()
    (tmp_path / "zoo" / "ppo.yml").write_text(ZOO)
    text = (
        POLE
        + '[trainer]\nhyperparams_file = "zoo/ppo.yml"\nhyperparams = {gamma = 0.95}\n'
        + '[[stages]]\nname = "a"\ntrainer = {hyperparams = {n_steps = 64}, n_envs = 2}\n'
    )
    cfg = load(tmp_path, text)
    trainer = stage_trainer(cfg, 0, tmp_path)
    assert trainer.hyperparams == {
        "n_steps": 64,  # the stage's
        "gamma": 0.95,  # [trainer]'s
        "learning_rate": "lin_0.001",  # the file's
        "clip_range": "lin_0.2",
        "policy_kwargs": {
            "ortho_init": False,
            "activation_fn": "nn.ReLU",
            "net_arch": {"pi": [64], "vf": [64]},
        },
    }
    assert (trainer.n_envs, trainer.policy, trainer.algo) == (2, "MlpPolicy", d.ENV_ALGO)
    assert trainer.normalize == {"norm_obs": True, "norm_reward": False}
    assert trainer.zoo_timesteps == 100_000 and trainer.source == "zoo/ppo.yml:CartPole-v1"
    off = load(tmp_path, text.replace("[[stages]]", "normalize = false\n[[stages]]"))
    assert stage_trainer(off, 0, tmp_path).normalize is None  # [trainer] over the file
    argv = argv_of(tmp_path, text)
    assert json.loads(option(argv, "--hyperparams") or "")["learning_rate"] == "lin_0.001"


@pytest.mark.parametrize(
    ("keys", "files", "needle"),
    [
        ('hyperparams_file = "nope.yml"', {}, "'nope.yml': file not found"),
        ('hyperparams_file = "z.yml"', {"z.yml": "a: [1\n"}, "not YAML"),
        (
            'hyperparams_file = "z.yml"',
            {"z.yml": "- 1\n- 2\n"},
            "not an rl-zoo3 hyperparameter file",
        ),
        (
            'hyperparams_file = "z.yml"',
            {"z.yml": "CartPole-v0: {}\n"},
            "no entry 'CartPole-v1' (close: CartPole-v0)",
        ),
        (
            'hyperparams_file = "z.yml"\nhyperparams_key = "Pendulum-v1"',
            {"z.yml": ZOO},
            "entry 'Pendulum-v1': env_wrapper: train-env cannot honour it; put the wrapper "
            "in [env] wrappers",
        ),
    ],
)
def test_a_bad_hyperparams_file_is_one_line(
    tmp_path: Path, keys: str, files: dict[str, str], needle: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    cfg = load(tmp_path, POLE + f"[trainer]\n{keys}\n" + '[[stages]]\nname = "a"\n')
    with pytest.raises(ConfigError) as info:
        stage_trainer(cfg, 0, tmp_path)
    message = str(info.value)
    assert needle in message and "\n" not in message, message
    assert message.startswith(f"{tmp_path / 'stages.toml'}: stage 1 a: trainer.hyperparams_file")


def test_another_entry_can_be_named(tmp_path: Path) -> None:
    (tmp_path / "z.yml").write_text("tuned:\n  n_envs: 3\n  gamma: 0.5\n")
    text = POLE + '[trainer]\nhyperparams_file = "z.yml"\nhyperparams_key = "tuned"\n'
    trainer = stage_trainer(load(tmp_path, text + '[[stages]]\nname = "a"\n'), 0, tmp_path)
    assert (trainer.n_envs, trainer.hyperparams) == (3, {"gamma": 0.5})


@pytest.mark.parametrize(
    ("entry", "trainer", "expected"),
    [
        ("gamma: 0.5", "", d.ZOO_N_ENVS),  # the zoo steps 1 env when its entry is silent
        ("gamma: 0.5", "n_envs = 4\n", 4),  # [trainer] still wins
        ("n_envs: 3", "", 3),
        (None, "", d.ENV_N_ENVS),  # no file: train-env's own default
    ],
)
def test_an_entry_without_n_envs_trains_the_zoos_one_env(
    tmp_path: Path, entry: str | None, trainer: str, expected: int
) -> None:
    (tmp_path / "z.yml").write_text(f"CartPole-v1:\n  {entry or 'gamma: 0.5'}\n")
    file = "" if entry is None else 'hyperparams_file = "z.yml"\n'
    text = POLE + f'[trainer]\nalgo = "A2C"\n{file}{trainer}[[stages]]\nname = "a"\n'
    assert stage_trainer(load(tmp_path, text), 0, tmp_path).n_envs == expected


def test_reading_a_trainer_table_loads_nothing_heavy(tmp_path: Path) -> None:
    import subprocess
    import sys

    text = POLE + '[trainer]\nalgo = "SAC"\nhyperparams_file = "z.yml"\n[[stages]]\nname = "a"\n'
    (tmp_path / "stages.toml").write_text(text)
    probe = (
        "import sys; from cosmic_curriculum.workspace.config_file import load_config; "
        f"c = load_config({str(tmp_path / 'stages.toml')!r}); c.stage_definitions(); "
        "print(sorted({'yaml', 'numpy', 'torch', 'stable_baselines3', 'gymnasium'} "
        "& set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_game_stage_without_algo_trains_train_envs_choice_for_the_game(
    tmp_path: Path,
) -> None:
    """[trainer] without algo on a masked game: not PPO (whose illegal moves each end a
    game as a loss) but MaskablePPO, train-env's choice; a Gymnasium stage keeps PPO."""
    pytest.importorskip("pettingzoo")
    pytest.importorskip("sb3_contrib")
    import subprocess

    from cosmic_curriculum.envs.policy import load_env_bot

    game = (
        '[env]\nkind = "pettingzoo"\nid = "pettingzoo.classic.tictactoe_v3"\n'
        "[defaults]\ntimesteps = 64\n"
        "[trainer]\nn_envs = 2\nhyperparams = {n_steps = 32, batch_size = 64, n_epochs = 1}\n"
        '[[stages]]\nname = "a"\nflags = ["--opponent-mode", "random"]\n'
    )
    argv = argv_of(tmp_path, game)
    assert "--algo" not in argv and option(argv, "--n-envs") == "2"
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert load_env_bot(tmp_path / "bots" / "e.json").provenance["algo"] == "MaskablePPO"
    assert "Illegal move" not in done.stdout + done.stderr
    pole = argv_of(tmp_path, POLE + '[trainer]\nn_envs = 2\n[[stages]]\nname = "a"\n')
    assert option(pole, "--algo") == d.ENV_ALGO
