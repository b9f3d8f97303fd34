"""defaults.py is the one home of every user-facing default: the models, the command
line and its help read it, and no default is written a second time elsewhere."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.core import TyperGroup, TyperOption
from typer.main import get_command
from typer.testing import CliRunner

import cosmic_curriculum
from cosmic_curriculum import defaults as d
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.cli import app
from cosmic_curriculum.curriculum.context import Run, RunOptions
from cosmic_curriculum.curriculum.launch import training_argv
from cosmic_curriculum.train.settings import TrainSettings
from cosmic_curriculum.workspace.config import (
    CurriculumConfig,
    Defaults,
    ExecReference,
    GateSettings,
    LauncherConfig,
)
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.env_config import EnvSpec
from cosmic_curriculum.workspace.state import Attempt
from cosmic_curriculum.workspace.tracking_config import (
    MlflowTracking,
    TrackingConfig,
    WandbTracking,
)

PACKAGE = Path(cosmic_curriculum.__file__).parent
DEFAULTS_FILE = PACKAGE / "defaults.py"

# (model, field, the defaults.py constant its default must be)
FIELD_DEFAULTS: list[tuple[type[BaseModel], str, Any]] = [
    (GateSettings, "rule", d.GATE_RULE),
    (GateSettings, "episodes", d.EVAL_EPISODES),
    (GateSettings, "regression_margin", d.REGRESSION_MARGIN),
    (GateSettings, "gap", d.SPRT_GAP),
    (GateSettings, "alpha", d.SPRT_ALPHA),
    (GateSettings, "beta", d.SPRT_BETA),
    (GateSettings, "max_episodes", d.SPRT_MAX_EPISODES),
    (GateSettings, "batch_pairs", d.SPRT_BATCH_PAIRS),
    (GateSettings, "check", d.SPRT_CHECK),
    (GateSettings, "measure", d.THRESHOLD_MEASURE),
    (GateSettings, "delta", d.THRESHOLD_DELTA),
    (GateSettings, "min_episodes", d.THRESHOLD_MIN_EPISODES),
    (GateSettings, "target", None),
    (GateSettings, "success_return", None),
    (GateSettings, "deterministic", d.ENV_EVAL_DETERMINISTIC),
    (CurriculumConfig, "max_retries", d.MAX_RETRIES),
    (CurriculumConfig, "eval_episodes", d.EVAL_EPISODES),
    (CurriculumConfig, "regression_margin", d.REGRESSION_MARGIN),
    (CurriculumConfig, "standing_args", list(d.STANDING_ARGS)),
    (CurriculumConfig, "reference_bot", d.REFERENCE_BOT),
    (CurriculumConfig, "training_command", list(d.TRAINING_COMMAND)),
    (CurriculumConfig, "notify_on", list(d.NOTIFY_ON)),
    (CurriculumConfig, "notify_timeout", d.NOTIFY_TIMEOUT_SECONDS),
    (CurriculumConfig, "candidates", d.CANDIDATES),
    (Defaults, "timesteps", d.STAGE_TIMESTEPS),
    (Defaults, "n_parallel", d.N_PARALLEL),
    (Defaults, "speedup", d.DECISION_TICKS),
    (LauncherConfig, "kind", d.LAUNCHER_KIND),
    (EnvSpec, "kind", d.ENV_KIND),
    (LauncherConfig, "num_gpus", d.RAY_NUM_GPUS),
    (LauncherConfig, "num_cpus", d.RAY_NUM_CPUS),
    (LauncherConfig, "max_continuations", d.MAX_CONTINUATIONS),
    (TrackingConfig, "tensorboard", d.TRACKING_TENSORBOARD),
    (TrackingConfig, "timeout", d.TRACKING_TIMEOUT_SECONDS),
    (MlflowTracking, "tracking_uri", d.MLFLOW_TRACKING_URI),
    (MlflowTracking, "experiment", d.MLFLOW_EXPERIMENT),
    (WandbTracking, "project", d.WANDB_PROJECT),
    (WandbTracking, "mode", d.WANDB_MODE),
    (ExecReference, "timeout", d.BOT_TIMEOUT_SECONDS),
    (GameSettings, "decision_ticks", d.DECISION_TICKS),
    (GameSettings, "allow_vertical", d.ALLOW_VERTICAL),
    (GameSettings, "allow_pitch_roll", d.ALLOW_PITCH_ROLL),
    (GameSettings, "draw_penalty", d.DRAW_PENALTY),
    (GameSettings, "attack_goal_bias", d.GAME_ATTACK_GOAL_BIAS),
    (GameSettings, "orb_approach_bias", d.GAME_ORB_APPROACH_BIAS),
    (TrainSettings, "timesteps", d.TRAIN_TIMESTEPS),
    (TrainSettings, "n_parallel", d.N_PARALLEL),
    (TrainSettings, "speedup", d.DECISION_TICKS),
    (TrainSettings, "attack_goal_bias", d.TRAINER_ATTACK_GOAL_BIAS),
    (TrainSettings, "orb_approach_bias", d.TRAINER_ORB_APPROACH_BIAS),
    (TrainSettings, "allow_vertical", d.ALLOW_VERTICAL),
    (TrainSettings, "allow_pitch_roll", d.ALLOW_PITCH_ROLL),
    (TrainSettings, "ent_coef", d.ENT_COEF),
    (TrainSettings, "opponent_mode", d.TRAINER_OPPONENT_MODE),
    (TrainSettings, "device", d.TRAINER_DEVICE),
    (TrainSettings, "torch_threads", d.TORCH_THREADS),
    (TrainSettings, "learning_rate", d.LEARNING_RATE),
    (TrainSettings, "rollout_size", d.ROLLOUT_SIZE),
    (TrainSettings, "batch_size", d.BATCH_SIZE),
    (TrainSettings, "n_epochs", d.N_EPOCHS),
    (TrainSettings, "gamma", d.GAMMA),
    (TrainSettings, "init_std", d.INIT_STD),
    (TrainSettings, "checkpoint_every", d.CHECKPOINT_EVERY_TIMESTEPS),
    (TrainSettings, "keep_checkpoints", d.KEEP_CHECKPOINTS),
    (TrainSettings, "selfplay_snapshot_every", d.SELFPLAY_SNAPSHOT_EVERY_TIMESTEPS),
    (TrainSettings, "selfplay_window", d.SELFPLAY_WINDOW),
    (TrainSettings, "selfplay_swap_every", d.SELFPLAY_SWAP_EVERY_TIMESTEPS),
    (TrainSettings, "selfplay_play_latest", d.SELFPLAY_PLAY_LATEST),
    (TrainSettings, "selfplay_rookie_share", d.SELFPLAY_ROOKIE_SHARE),
]


@pytest.mark.parametrize(
    ("model", "name", "expected"),
    FIELD_DEFAULTS,
    ids=[f"{model.__name__}.{name}" for model, name, _ in FIELD_DEFAULTS],
)
def test_each_field_default_is_its_constant(
    model: type[BaseModel], name: str, expected: Any
) -> None:
    field = model.model_fields[name]
    value = field.get_default(call_default_factory=True)
    assert value == expected and type(value) is type(expected), (value, expected)


def test_a_default_built_model_has_the_constants() -> None:
    # The same values through construction, not only through the field declarations.
    config = CurriculumConfig.model_validate({"stages": [{"name": "a"}]})
    assert config.stage_gate(0) == GateSettings()
    assert (config.eval_episodes, config.regression_margin) == (
        d.EVAL_EPISODES,
        d.REGRESSION_MARGIN,
    )
    assert config.defaults == Defaults(
        timesteps=d.STAGE_TIMESTEPS, n_parallel=d.N_PARALLEL, speedup=d.DECISION_TICKS
    )


def test_the_game_and_the_trainer_keep_distinct_shaping_defaults() -> None:
    # A scripted or baseline bot's file records the game's neutral weights; training
    # writes the trainer's. Unifying them would change those files.
    assert GameSettings().attack_goal_bias == d.GAME_ATTACK_GOAL_BIAS == 0.0
    assert GameSettings().orb_approach_bias == d.GAME_ORB_APPROACH_BIAS == 0.0
    from cosmic_curriculum.train.settings import game_settings

    trained = game_settings(TrainSettings(experiment="x"))
    assert trained.attack_goal_bias == d.TRAINER_ATTACK_GOAL_BIAS
    assert trained.orb_approach_bias == d.TRAINER_ORB_APPROACH_BIAS
    assert trained.decision_ticks == GameSettings().decision_ticks == d.DECISION_TICKS


# -- the command line shows them ---------------------------------------------------------


def option_help(output: str, option: str) -> str:
    """The help of ``option`` in a command's --help, on one line (Typer wraps it)."""
    lines = output.splitlines()
    names = re.compile(r"^\s+(-\w, )?" + re.escape(option) + r"(?![\w-])")
    start = next(i for i, line in enumerate(lines) if names.match(line))
    end = start + 1
    while end < len(lines) and not lines[end].lstrip().startswith("-") and lines[end].strip():
        end += 1
    return " ".join(" ".join(lines[start:end]).split())


def shows_default(text: str, value: object) -> bool:
    """Whether Typer's ``[default: VALUE]`` (maybe followed by ``; x>=N``) is in ``text``."""
    return re.search(r"\[default: " + re.escape(str(value)) + r"[;\]]", text) is not None


def help_of(*argv: str) -> str:
    result = CliRunner().invoke(app, [*argv, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


def test_gate_simulate_help_shows_the_defaults() -> None:
    out = help_of("gate", "simulate")
    expected = {
        "--rule": ", ".join(d.SIMULATE_RULES),
        "--trials": str(d.SIMULATE_TRIALS),
        "--draws": d.SIMULATE_DRAW_RATES,
        "--model": d.SIMULATE_MODEL,
        "--check": d.SPRT_CHECK,
        "--batch-pairs": str(d.SPRT_BATCH_PAIRS),
        "--gap": str(d.SPRT_GAP),
        "--alpha": str(d.SPRT_ALPHA),
        "--beta": str(d.SPRT_BETA),
        "--max-episodes": str(d.SPRT_MAX_EPISODES),
        "--episodes": str(d.EVAL_EPISODES),
        "--margin": str(d.REGRESSION_MARGIN),
        "--worse": str(d.SIMULATE_WORSE_GAP),
        "--better": str(d.SIMULATE_BETTER_GAP),
    }
    for option, value in expected.items():
        assert shows_default(option_help(out, option), value), option


def test_gate_simulate_options_are_built_from_gate_settings() -> None:
    from cosmic_curriculum.cli.gate import GATE_OPTIONS

    group = get_command(app)
    assert isinstance(group, TyperGroup)
    gate = group.commands["gate"]
    assert isinstance(gate, TyperGroup)
    params = {param.name: param for param in gate.commands["simulate"].params}
    for option, name in GATE_OPTIONS.items():
        field, param = GateSettings.model_fields[name], params[option]
        assert isinstance(param, TyperOption), option
        assert param.default == field.default, option
        assert param.help == field.description, option
        assert f"--{option.replace('_', '-')}" in param.opts, option
    # Every setting a stage's gate has besides its rule can be simulated (deterministic
    # changes how the bots play, not the statistics of their results).
    assert set(GATE_OPTIONS.values()) == set(GateSettings.model_fields) - {"rule", "deterministic"}


def test_run_help_shows_the_defaults() -> None:
    out = help_of("run")
    assert f"[defaults], {d.STAGE_TIMESTEPS:,}]" in option_help(out, "--timesteps")
    assert f"stages.toml, {d.N_PARALLEL}]" in option_help(out, "--n-parallel")
    assert f"stages.toml, {d.DECISION_TICKS}]" in option_help(out, "--speedup")


def test_evaluate_help_shows_the_defaults() -> None:
    out = help_of("evaluate")
    episodes = option_help(out, "--episodes")
    assert f"Default {d.EVAL_EPISODES};" in episodes
    assert f"(default {d.SPRT_MAX_EPISODES})" in episodes
    assert f"(default {d.SPRT_BATCH_PAIRS})" in option_help(out, "--batch-pairs")
    assert shows_default(option_help(out, "--lock-wait"), d.LOCK_WAIT_SECONDS)
    assert shows_default(option_help(out, "--bot-timeout"), d.BOT_TIMEOUT_SECONDS)


def test_other_commands_show_the_defaults() -> None:
    assert shows_default(option_help(help_of("ladder"), "--pairs"), d.LADDER_PAIRS)
    assert shows_default(option_help(help_of("status"), "--interval"), d.WATCH_INTERVAL_SECONDS)
    assert shows_default(option_help(help_of("init"), "--preset"), d.PRESET)
    export = help_of("history", "export")
    assert shows_default(option_help(export, "--format"), d.HISTORY_EXPORT_FORMAT)
    train = help_of("train")
    assert shows_default(option_help(train, "--n-parallel"), d.N_PARALLEL)
    assert shows_default(option_help(train, "--speedup"), d.DECISION_TICKS)
    assert shows_default(option_help(train, "--timesteps"), d.TRAIN_TIMESTEPS)


# -- run and train agree ----------------------------------------------------------------


def test_run_and_train_agree_on_n_parallel(tmp_path: Path) -> None:
    assert Defaults().n_parallel == TrainSettings(experiment="x").n_parallel == d.N_PARALLEL
    # What `run` hands the trainer for a stages.toml without [defaults] is what `train`
    # would use on its own.
    (tmp_path / "stages.toml").write_text('[[stages]]\nname = "a"\n')
    run = Run(RunOptions(workspace=tmp_path))
    run.config = load_config(tmp_path / "stages.toml")
    argv = training_argv(run, Attempt(stage_index=0, attempt=0, experiment="e"), None)
    group = get_command(app)
    assert isinstance(group, TyperGroup)
    ctx = group.commands["train"].make_context("train", argv[1:])
    passed = TrainSettings(**ctx.params)
    alone = TrainSettings(experiment="e")
    assert (passed.n_parallel, passed.speedup) == (alone.n_parallel, alone.speedup)
    assert passed.n_parallel == d.N_PARALLEL


# -- no default is written twice --------------------------------------------------------

# Literals of defaults that used to be written in several places.
OLD_LITERALS = [
    "100",
    "0.15",
    "0.25",
    "0.05",
    "400",
    "16",
    "14",
    "256",
    "30.0",
    "60.0",
    "20_000_000",
    "1_000_000",
]
# Where one of them is a value of its own, not a default: (file, the line's start, why).
NOT_DEFAULTS = [
    ("arena/settings.py", "orb_drag: float = Field(", "the game's physics"),
    ("arena/settings.py", "orb_max_speed: float = Field(", "the game's physics"),
    ("curriculum/reporter.py", "PROGRESS_LINE_SECONDS = ", "an output rate, not a setting"),
    ("bots/onnx_meta.py", "METADATA_FIELD = ", "ONNX's protobuf field number"),
]


def default_positions(literal: str) -> list[re.Pattern[str]]:
    """Where ``literal`` would be a default: a Field's default, an annotated parameter or
    attribute's default, a Typer option's default, argparse's default, a module constant."""
    lit = re.escape(literal) + r"(?![\w.])"
    return [
        re.compile(r"\bField\(\s*" + lit),
        re.compile(r"\b\w+\s*:\s*[\w\[\]|., ]+?=\s*" + lit),
        re.compile(r"\]\s*=\s*" + lit + r"\s*,"),
        re.compile(r"\bdefault\s*=\s*" + lit),
        re.compile(r"^[A-Z][A-Z0-9_]*\s*(:\s*[\w\[\]]+\s*)?=\s*" + lit + r"\s*(#.*)?$", re.M),
    ]


def duplicates(text: str) -> list[str]:
    """``literal: line`` for each old literal in a default position (the line it starts on)."""
    hits = []
    for literal in OLD_LITERALS:
        for pattern in default_positions(literal):
            for match in pattern.finditer(text):
                start = text.rfind("\n", 0, match.start()) + 1
                end = text.find("\n", match.start())
                hits.append(f"{literal}: {text[start : end if end >= 0 else None].strip()}")
    return hits


def test_the_scan_finds_a_default_written_outside_defaults_py() -> None:
    # Guard against a scan that finds nothing: each shape of an old duplicate is caught.
    for sample in (
        "    episodes: int = Field(100, ge=2)\n",
        "    n_parallel: int = Field(\n        256,\n        ge=1,\n",
        "def f(x: int, margin: float = 0.15, y: int = 1) -> None: ...\n",
        "    decision_ticks: int = 16,\n",
        "def __init__(self, decision_ticks: int = 16) -> None:\n",
        '    max_episodes: Annotated[int, typer.Option(help="cap")] = 400,\n',
        '    parser.add_argument("--push-timeout", type=float, default=30.0)\n',
        "DEFAULT_TIMEOUT = 60.0\n",
        "ROOKIE_DECISION_TICKS = 16  # the rookie's rate\n",
    ):
        assert duplicates(sample), sample
    # ... and a literal that is not a default is not.
    assert duplicates("x = 0.25 * y\nle=256,\nstride = 1 << 16\nn = 1000\nk = 16.0\n") == []


def test_no_old_default_literal_is_left_outside_defaults_py() -> None:
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(PACKAGE))
        if path == DEFAULTS_FILE:
            continue
        allowed = [start for file, start, _ in NOT_DEFAULTS if file == name]
        hits = [
            hit
            for hit in duplicates(path.read_text(encoding="utf-8"))
            if not any(hit.split(": ", 1)[1].startswith(start) for start in allowed)
        ]
        if hits:
            found[name] = hits
    assert found == {}


def test_each_exception_still_exists() -> None:
    # An exception whose line is gone would silently allow a new duplicate there.
    for file, start, _ in NOT_DEFAULTS:
        hits = duplicates((PACKAGE / file).read_text(encoding="utf-8"))
        assert any(hit.split(": ", 1)[1].startswith(start) for hit in hits), (file, start)


# -- defaults.py stays at the bottom -----------------------------------------------------


def test_defaults_imports_nothing_from_the_package_and_nothing_heavy() -> None:
    tree = ast.parse(DEFAULTS_FILE.read_text(encoding="utf-8"))
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= {"__future__", "typing"}, imported
    probe = (
        "import sys; import cosmic_curriculum.defaults; "
        "print(sorted(m for m in sys.modules if m.startswith('cosmic_curriculum')), "
        "sorted({'pydantic', 'numpy', 'typer'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['cosmic_curriculum', 'cosmic_curriculum.defaults'] []"
