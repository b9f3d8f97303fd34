"""`[env]` and a stage's `env`: the model, the merge, and what each kind's trainer gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cosmic_curriculum import defaults as d
from cosmic_curriculum.curriculum.context import Run, RunOptions
from cosmic_curriculum.curriculum.launch import training_argv
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.env_config import EnvSpec
from cosmic_curriculum.workspace.state import Attempt

GYM = """
training_command = ["./train"]
[env]
kind = "gymnasium"
id = "FrozenLake-v1"
imports = ["gymnasium.envs.toy_text"]
kwargs = {map_name = "4x4", is_slippery = false}
wrappers = [
    "gymnasium.wrappers:TimeLimit",
    {call = "gymnasium.wrappers:RecordEpisodeStatistics", kwargs = {buffer_length = 10}},
]

[defaults]
timesteps = 40000

[[stages]]
name = "dry"

[[stages]]
name = "slippery"
env = {kwargs = {map_name = "4x4", is_slippery = true}}
timesteps = 80000
flags = ["--lr", "0.001"]
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


def argv_of(tmp_path: Path, text: str, stage: int = 0, opts: RunOptions | None = None) -> list[str]:
    run = Run(opts or RunOptions(workspace=tmp_path))
    run.config = load(tmp_path, text)
    flight = Attempt(stage_index=stage, attempt=0, experiment="e")
    return training_argv(run, flight, None)


def test_the_default_env_is_the_arena() -> None:
    assert EnvSpec().kind == d.ENV_KIND == "arena"
    config = CurriculumConfig.model_validate({"stages": [{"name": "a"}]})
    assert config.env is None and config.stage_env(0) == EnvSpec()


def test_a_stage_replaces_whole_keys_of_env(tmp_path: Path) -> None:
    config = load(tmp_path, GYM)
    dry, slippery = config.stage_env(0), config.stage_env(1)
    assert dry.kwargs == {"map_name": "4x4", "is_slippery": False}
    assert slippery.kwargs == {"map_name": "4x4", "is_slippery": True}
    assert slippery.id == dry.id == "FrozenLake-v1"
    assert slippery.imports == ["gymnasium.envs.toy_text"]
    # A plain "module:callable" is the same as {call = ...} without kwargs.
    assert [(w.call, w.kwargs) for w in dry.wrappers] == [
        ("gymnasium.wrappers:TimeLimit", {}),
        ("gymnasium.wrappers:RecordEpisodeStatistics", {"buffer_length": 10}),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[env]\nkind = "gym"\n', "env.kind"),
        ('[env]\nkind = "gymnasium"\nid = "X-v0"\nseed = 3\n', "unknown key 'seed'"),
        ('[env]\nkind = "gymnasium"\nid = "X-v0"\nimports = ["not a module"]\n', "module name"),
        ('[env]\nkind = "gymnasium"\nid = "X-v0"\nwrappers = ["nocolon"]\n', "module:callable"),
        ('[env]\nkind = "gymnasium"\nid = "X-v0"\nkwargs = {t = 1979-05-27}\n', "env.kwargs"),
        ('[env]\nkind = "gymnasium"\n', 'kind = "gymnasium" needs the registered id'),
        ('[env]\nid = "CartPole-v1"\n', 'id is set but kind is "arena"'),
    ],
)
def test_a_bad_env_is_one_line_naming_the_key(tmp_path: Path, text: str, expected: str) -> None:
    message = error_for(tmp_path, text + '[[stages]]\nname = "a"\n')
    assert expected in message, message


def test_a_stage_env_is_checked_as_the_merged_spec(tmp_path: Path) -> None:
    message = error_for(tmp_path, '[[stages]]\nname = "a"\nenv = {kind = "gymnasium"}\n')
    assert "stage 1 a: env:" in message and "needs the registered id" in message
    message = error_for(tmp_path, '[[stages]]\nname = "a"\nenv = {idd = "x"}\n')
    assert "stages[0].env" in message and "idd" in message


def test_a_gymnasium_stage_gets_env_and_no_arena_flags(tmp_path: Path) -> None:
    argv = argv_of(tmp_path, GYM, stage=1)
    assert argv[:4] == [str(tmp_path / "train"), "e", "--timesteps", "80000"]
    for arena_flag in ("--n-parallel", "--speedup", "--reset-std", "--ent-coef"):
        assert arena_flag not in argv
    assert argv[4] == "--env" and argv[6:] == ["--lr", "0.001"]
    spec = json.loads(argv[5])
    assert spec == {
        "kind": "gymnasium",
        "id": "FrozenLake-v1",
        "imports": ["gymnasium.envs.toy_text"],
        "kwargs": {"map_name": "4x4", "is_slippery": True},
        "wrappers": [
            {"call": "gymnasium.wrappers:TimeLimit", "kwargs": {}},
            {"call": "gymnasium.wrappers:RecordEpisodeStatistics", "kwargs": {"buffer_length": 10}},
        ],
    }


def test_run_options_of_the_arena_do_not_reach_another_kind(tmp_path: Path) -> None:
    opts = RunOptions(workspace=tmp_path, n_parallel=3, speedup=4, timesteps=500)
    argv = argv_of(tmp_path, GYM, opts=opts)
    assert argv[2:4] == ["--timesteps", "500"]
    assert "--n-parallel" not in argv and "--speedup" not in argv


def test_explicit_standing_args_reach_every_kind(tmp_path: Path) -> None:
    text = 'standing_args = ["--verbose"]\n' + GYM
    assert argv_of(tmp_path, text)[6:7] == ["--verbose"]
    assert load(tmp_path, text).stage_standing_args(0) == ["--verbose"]


def test_the_arena_argv_is_unchanged(tmp_path: Path) -> None:
    # Byte for byte what every workspace without [env] has always had.
    argv = argv_of(tmp_path, '[[stages]]\nname = "a"\nflags = ["--x"]\n')
    assert argv[1:] == [
        "e",
        *("--timesteps", str(d.STAGE_TIMESTEPS)),
        *("--n-parallel", str(d.N_PARALLEL)),
        *("--speedup", str(d.DECISION_TICKS)),
        *d.STANDING_ARGS,
        "--x",
    ]
    # ... and so is an explicit [env] kind = "arena": no --env.
    assert (
        argv_of(tmp_path, '[env]\nkind = "arena"\n[[stages]]\nname = "a"\nflags = ["--x"]\n')[1:]
        == argv[1:]
    )


def test_the_config_hash_changes_only_when_an_env_is_configured(tmp_path: Path) -> None:
    plain = load(tmp_path, '[[stages]]\nname = "a"\n')
    assert "env" not in plain.stage_definitions()[0]
    # The hash of a workspace without [env] is the one it recorded before envs existed.
    assert plain.stage_hashes() == ["ba84ae059f1b898b"]
    gym = load(tmp_path, GYM)
    assert gym.stage_definitions()[1]["env"]["kwargs"]["is_slippery"] is True
    assert gym.stage_definitions()[0]["standing_args"] == []
