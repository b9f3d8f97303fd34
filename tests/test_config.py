from __future__ import annotations

from pathlib import Path

import pytest
from config_helpers import error_for, write

from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.workspace.config_file import load_config, preset_path

ONE_STAGE = '[[stages]]\nname = "a"\n'


def test_shipped_stages_toml_has_the_seed_defaults(repo_root: Path) -> None:
    config = load_config(repo_root / "stages.toml")
    assert (config.max_retries, config.eval_episodes, config.regression_margin) == (2, 100, 0.15)
    assert config.standing_args == ["--reset-std", "0.3", "--ent-coef", "0.001"]
    assert (config.defaults.timesteps, config.defaults.n_parallel, config.defaults.speedup) == (
        20_000_000,
        14,
        16,
    )
    assert [(s.name, s.flags) for s in config.stages] == [
        (
            "score",
            [
                "--opponent-mode",
                "inert",
                "--attack-goal-bias",
                "1.0",
                "--no-allow-vertical",
                "--no-allow-pitch-roll",
            ],
        ),
        (
            "defend",
            ["--opponent-mode", "self_play", "--no-allow-vertical", "--no-allow-pitch-roll"],
        ),
        ("no_draws", ["--draw-penalty", "5"]),
        ("mechanics", []),
    ]
    assert config.reference_bot == "bots/rookie.json"
    assert config.training_command == ["scripts/run_training.sh"]
    assert config.stage_gate(0).rule == "margin"


def test_repo_stages_toml_is_the_default_preset(repo_root: Path) -> None:
    assert (repo_root / "stages.toml").read_text() == preset_path("default").read_text()


def test_quick_preset_keeps_stages_and_flags(repo_root: Path) -> None:
    default = load_config(preset_path("default"))
    quick = load_config(preset_path("quick"))
    assert [(s.name, s.flags) for s in quick.stages] == [(s.name, s.flags) for s in default.stages]
    assert quick.standing_args == default.standing_args


def test_unknown_preset(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown"):
        preset_path("huge")


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("max_retries = -1\n" + ONE_STAGE, [":1:", "max_retries", "greater than or equal to 0"]),
        ("eval_episodes = 0\n" + ONE_STAGE, ["eval_episodes"]),
        ("colour = 1\n" + ONE_STAGE, [":1:", "unknown key 'colour'"]),
        (ONE_STAGE + "flagz = []\n", [":3:", "stages[0].flagz", "unknown key", "README.md"]),
        (
            '[env]\nkind = "gymnasium"\nidd = "X"\n' + ONE_STAGE,
            [":3:", "env.idd", "unknown key", "docs/ENVIRONMENTS.md"],
        ),
        (ONE_STAGE + "[launcher]\nnodes = 2\n", ["launcher.nodes", "docs/SCALING.md"]),
        ('[[stages]]\nname = "a/b"\n', [":2:", "stages[0].name", "a-z, 0-9"]),
        ('[[stages]]\nname = ".."\n', ["stages[0].name"]),
        (ONE_STAGE + ONE_STAGE, ["stages", "used twice"]),
        ("stages = []\n", ["no stages"]),
        ("max_retries = 2\n", ["stages", "required"]),
        ("regression_margin = 0\n" + ONE_STAGE, ["regression_margin", "greater than 0"]),
        ("regression_margin = 1.5\n" + ONE_STAGE, ["regression_margin", "less than 1"]),
        (ONE_STAGE + 'flags = "--opponent-mode inert"\n', [":3:", "stages[0].flags", "list"]),
        ('[defaults]\nspeedup = "fast"\n' + ONE_STAGE, [":2:", "defaults.speedup", "integer"]),
        (
            '[gate]\nrule = "coin"\n' + ONE_STAGE,
            [":2:", "gate.rule", "'margin', 'sprt' or 'threshold'"],
        ),
        ("[gate]\nregression_margin = 0.2\n" + ONE_STAGE, ["top level"]),
        (ONE_STAGE + "[stages.gate]\nalpha = 3\n", ["stages[0].gate", "alpha"]),
        ("x = [\n", ["not valid TOML"]),
        ("training_command = []\n" + ONE_STAGE, ["training_command"]),
        (
            ONE_STAGE + '[launcher]\nkind = "sge"\n',
            [":4:", "launcher.kind", "'local', 'ray' or 'slurm'"],
        ),
        (ONE_STAGE + "[launcher]\nnum_gpus = -1\n", [":4:", "launcher.num_gpus"]),
        (ONE_STAGE + "[launcher]\nmax_parallel = 0\n", [":4:", "launcher.max_parallel"]),
        (
            ONE_STAGE + "[launcher]\nevaluate_remote = true\n",
            [":4:", "launcher.evaluate_remote", 'needs kind = "ray"'],
        ),
        (
            ONE_STAGE + '[launcher]\nkind = "ray"\nevaluate_remote = true\n',
            [":3:", "needs an evaluation_command", "built-in evaluator"],
        ),
    ],
)
def test_bad_configs_get_one_line_errors(tmp_path: Path, text: str, fragments: list[str]) -> None:
    msg = error_for(tmp_path, text)
    for fragment in fragments:
        assert fragment in msg, msg


def test_missing_file_says_how_to_create_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="init"):
        load_config(tmp_path / "nope.toml")


def test_gate_merging_and_overrides(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            "eval_episodes = 40\nregression_margin = 0.2\n[gate]\nbatch_pairs = 3\n"
            + ONE_STAGE
            + '[[stages]]\nname = "b"\ntimesteps = 7\n[stages.gate]\nrule = "sprt"\n',
        )
    )
    g0, g1 = config.stage_gate(0), config.stage_gate(1)
    assert (g0.rule, g0.episodes, g0.regression_margin, g0.batch_pairs) == ("margin", 40, 0.2, 3)
    assert (g1.rule, g1.batch_pairs) == ("sprt", 3)
    assert config.stage_timesteps(0) == 20_000_000
    assert config.stage_timesteps(1) == 7
    assert config.stage_timesteps(1, override=5) == 5
    assert config.stage_reference(0) == "bots/rookie.json"
    assert config.stage_reference(1) is None


def test_hashes_change_only_for_the_changed_stage(tmp_path: Path) -> None:
    base = ONE_STAGE + '[[stages]]\nname = "b"\n'
    h1 = load_config(write(tmp_path, base)).stage_hashes()
    h2 = load_config(write(tmp_path, base + 'flags = ["--x"]\n')).stage_hashes()
    assert h1[0] == h2[0] and h1[1] != h2[1]


def test_notify_keys_default_and_validate_with_line_numbers(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, ONE_STAGE))
    assert config.notify_command is None
    assert config.notify_on == ["blocked", "done", "attempt_error", "interrupted"]
    assert config.notify_timeout == 30.0
    config = load_config(
        write(tmp_path, 'notify_command = ["./n.sh", "x"]\nnotify_timeout = 5\n' + ONE_STAGE)
    )
    assert (config.notify_command, config.notify_timeout) == (["./n.sh", "x"], 5.0)
    msg = error_for(tmp_path, 'max_retries = 1\nnotify_on = ["done", "lunch"]\n' + ONE_STAGE)
    assert msg.startswith(f"{tmp_path / 'stages.toml'}:2: notify_on[1]:") and "lunch" in msg
    msg = error_for(tmp_path, 'notify_command = "./notify.sh"\n' + ONE_STAGE)
    assert ":1: notify_command:" in msg
    msg = error_for(tmp_path, "notify_timeout = 0\n" + ONE_STAGE)
    assert ":1: notify_timeout:" in msg and "greater than 0" in msg
