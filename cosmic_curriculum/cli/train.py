"""`cosmic-curriculum train`: its options are built from TrainSettings, so each trainer
default (in :mod:`cosmic_curriculum.defaults`) and help text (in
:mod:`cosmic_curriculum.train.settings`) is written once."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any, Literal, get_origin

import typer

from cosmic_curriculum.cli.app import OneLineUsageCommand, app, guarded
from cosmic_curriculum.defaults import (
    ENV_ALGO,
    ENV_CHECKPOINT_EVERY_TIMESTEPS,
    ENV_KEEP_CHECKPOINTS,
    ENV_N_ENVS,
    ENV_SUBPROC_STEP_SECONDS,
    ENV_VEC_ENV,
    GAME_CLONE_EPOCHS,
    GAME_CLONE_POSITIONS,
    GAME_LEAGUE_BOT_SHARE,
    GAME_MOVE_CAP,
    GAME_OPPONENT_MODE,
    GAME_PFSP_WEIGHTING,
    GAME_POOL_SIZE,
    GAME_SAMPLING,
    GAME_SNAPSHOT_EVERY_TIMESTEPS,
)
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.train.settings import TrainSettings

# The train command's options in --help order. Each one's type, default and help text come
# from the TrainSettings field of the same name, so every trainer default exists once.
# TrainSettings' other fields (net_arch, activation, gae_lambda, clip_range,
# progress_interval) are for tests and benchmarks.
TRAIN_OPTIONS: tuple[str, ...] = (
    "timesteps",
    "n_parallel",
    "speedup",
    "resume",
    "reset_std",
    "ent_coef",
    "opponent_mode",
    "opponent_bot",
    "attack_goal_bias",
    "orb_approach_bias",
    "allow_vertical",
    "allow_pitch_roll",
    "draw_penalty",
    "seed",
    "device",
    "torch_threads",
    "checkpoint_every",
    "keep_checkpoints",
    "learning_rate",
    "rollout_size",
    "batch_size",
    "n_epochs",
    "gamma",
    "init_std",
    "selfplay_snapshot_every",
    "selfplay_window",
    "selfplay_swap_every",
    "selfplay_play_latest",
    "selfplay_rookie_share",
    "workspace",
)


def _settings_parameter(name: str, argument: bool = False) -> inspect.Parameter:
    """The command parameter of one TrainSettings field: its type, default and help."""
    field = TrainSettings.model_fields[name]
    kind: Any = field.annotation
    if get_origin(kind) is Literal:
        # Choices stay plain strings: TrainSettings checks them, so a bad choice is the
        # same one-line error as any other bad value (and --help shows <str>).
        kind = str
    info = (
        typer.Argument(help=field.description) if argument else typer.Option(help=field.description)
    )
    default = inspect.Parameter.empty if field.is_required() else field.default
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[kind, info]
    )


def train_command(**options: Any) -> None:
    """Train a bot with PPO on the embedded arena and export bots/EXPERIMENT.json."""

    def run() -> int:
        from cosmic_curriculum.train import settings_from_options, train

        return train(settings_from_options(**options)).exit_code

    code = guarded(run)
    if code:
        raise typer.Exit(code)


# Typer reads a command's parameters from its signature, and inspect.signature() takes
# __signature__ when a function has one (set through __dict__: typeshed does not declare
# that attribute on functions).
train_command.__dict__["__signature__"] = inspect.Signature(
    [
        _settings_parameter("experiment", argument=True),
        *(_settings_parameter(name) for name in TRAIN_OPTIONS),
    ]
)
app.command("train", cls=OneLineUsageCommand)(train_command)


def train_env_command(
    experiment: Annotated[
        str, typer.Argument(help="Experiment name (checkpoints/<name>/, bots/<name>.json).")
    ],
    timesteps: Annotated[
        int, typer.Option(help="The total timesteps (a continuation trains what is left).")
    ],
    env: Annotated[str, typer.Option(help="The stage's env spec as JSON (docs/ENVIRONMENTS.md).")],
    resume: Annotated[
        Path | None,
        typer.Option(
            help="Its own checkpoints/<experiment>/step_<n>.zip continues the count; "
            "another checkpoint warm-starts."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the model and the envs.")] = 0,
    algo: Annotated[
        str | None,
        typer.Option(
            help="The algorithm: PPO, A2C, DQN, SAC, TD3, DDPG (stable-baselines3) or TQC, "
            "TRPO, ARS, QRDQN (sb3-contrib: the contrib extra); a pettingzoo game: "
            f"MaskablePPO or PPO. Default: {ENV_ALGO}, MaskablePPO on a game with action "
            "masks."
        ),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(
            help="The SB3 policy. Default: MultiInputPolicy for Dict observations, "
            "CnnPolicy for images of at least 36x36 pixels, else MlpPolicy."
        ),
    ] = None,
    hyperparams: Annotated[
        str | None,
        typer.Option(
            help='The algorithm\'s keyword arguments as a JSON object; "lin_<x>" is a linear '
            'schedule from x to 0, "nn.ReLU" in policy_kwargs a torch activation, '
            "noise_type/noise_std an action noise (rl-zoo3's forms)."
        ),
    ] = None,
    normalize: Annotated[
        str | None,
        typer.Option(
            help="Wrap the envs in VecNormalize: true, or a JSON object of its keyword "
            "arguments; its statistics are saved with each checkpoint."
        ),
    ] = None,
    n_envs: Annotated[int, typer.Option(help="Envs stepped side by side.")] = ENV_N_ENVS,
    checkpoint_every: Annotated[
        int,
        typer.Option(
            help="Timesteps between step checkpoints (checkpoints/<name>/step_<n>.zip; a "
            "pettingzoo game's each with its league)."
        ),
    ] = ENV_CHECKPOINT_EVERY_TIMESTEPS,
    keep_checkpoints: Annotated[
        int,
        typer.Option(
            help="Step checkpoints kept (the newest; `compare` keeps more for its curves)."
        ),
    ] = ENV_KEEP_CHECKPOINTS,
    vec_env: Annotated[
        str,
        typer.Option(
            help="auto, dummy (in this process) or subproc (one process per env; a "
            "pettingzoo game's seats: one worker per usable core, the league in this "
            "process); auto takes subproc only with 2+ usable cores and an env step of "
            f"{ENV_SUBPROC_STEP_SECONDS * 1000:g} ms or more (a game: dummy, docs/GAMES.md)."
        ),
    ] = ENV_VEC_ENV,
    workspace: Annotated[Path, typer.Option(help="The workspace directory.")] = Path("."),
    opponent_mode: Annotated[
        str | None,
        typer.Option(
            help="A pettingzoo game's opponent: random, self_play (the learner's latest "
            "snapshot), pool (a league of its snapshots, drawn by --sampling) or "
            f"bot:<spec> (random, search:N or an env bot file). Default: {GAME_OPPONENT_MODE}."
        ),
    ] = None,
    snapshot_every: Annotated[
        int | None,
        typer.Option(
            help="Timesteps between snapshots of the learner into the pool. Default: "
            f"{GAME_SNAPSHOT_EVERY_TIMESTEPS}."
        ),
    ] = None,
    pool_size: Annotated[
        int | None,
        typer.Option(
            help=f"Snapshots the pool keeps (the oldest leave). Default: {GAME_POOL_SIZE}."
        ),
    ] = None,
    sampling: Annotated[
        str | None,
        typer.Option(
            help="How the pool's opponents are drawn: uniform, latest, or pfsp (prioritized "
            f"fictitious self-play, by the learner's win rate). Default: {GAME_SAMPLING}."
        ),
    ] = None,
    pfsp_weighting: Annotated[
        str | None,
        typer.Option(
            help="PFSP's weight f(p) of the learner's win rate p against a snapshot: hard "
            "(1-p)^2, linear 1-p, variance p(1-p). Default: "
            f"{GAME_PFSP_WEIGHTING}."
        ),
    ] = None,
    league_bot: Annotated[
        list[str] | None,
        typer.Option(
            help="A fixed opponent mixed into self_play or pool (repeatable): random, "
            "search:N (depth-N alpha-beta) or an env bot file of the game, e.g. an earlier "
            "stage's bots/EXP.json."
        ),
    ] = None,
    league_bot_share: Annotated[
        float | None,
        typer.Option(
            help="The chance an episode's opponent is one of the --league-bots. Default: "
            f"{GAME_LEAGUE_BOT_SHARE}."
        ),
    ] = None,
    move_cap: Annotated[
        int | None,
        typer.Option(
            help=f"Moves after which a game is truncated (a draw). Default: {GAME_MOVE_CAP}."
        ),
    ] = None,
    clone_teacher: Annotated[
        str | None,
        typer.Option(
            help="A pettingzoo game's teacher whose moves a fresh policy learns before its "
            "first rollout (a --resume keeps its checkpoint's policy): search:N or an env "
            "bot file of the game. Positions from the teacher's own games, some moves at "
            "random; docs/GAMES.md."
        ),
    ] = None,
    clone_positions: Annotated[
        int | None,
        typer.Option(
            help=f"Positions the --clone-teacher labels. Default: {GAME_CLONE_POSITIONS}."
        ),
    ] = None,
    clone_epochs: Annotated[
        int | None,
        typer.Option(help=f"Passes over those positions. Default: {GAME_CLONE_EPOCHS}."),
    ] = None,
) -> None:
    """Train a Gymnasium stage's bot with stable-baselines3, or a pettingzoo game's with
    self-play against a league; export bots/EXPERIMENT.json."""

    def run() -> int:
        from cosmic_curriculum.train.env_run import parse_settings, train_env
        from cosmic_curriculum.train.league_settings import LeagueOptions

        options = LeagueOptions(
            opponent_mode,
            snapshot_every,
            pool_size,
            sampling,
            pfsp_weighting,
            tuple(league_bot or ()),
            league_bot_share,
            move_cap,
            clone_teacher,
            clone_positions,
            clone_epochs,
        )
        settings = parse_settings(
            experiment,
            timesteps=timesteps,
            env=env,
            resume=resume,
            seed=seed,
            algo=algo or _default_algo(env),
            hyperparams=hyperparams,
            workspace=workspace,
            policy=policy,
            normalize=normalize,
            n_envs=n_envs,
            vec_env=vec_env,
            checkpoint_every=checkpoint_every,
            keep_checkpoints=keep_checkpoints,
        )
        if settings.env.kind == "pettingzoo":
            from cosmic_curriculum.train.game_run import train_game
            from cosmic_curriculum.train.league_settings import league_settings

            return train_game(league_settings(settings, options))
        given = options.given()
        if given is not None:
            raise ConfigError(f"{given} is for pettingzoo games; this env is {settings.env.kind}")
        return train_env(settings)

    code = guarded(run)
    if code:
        raise typer.Exit(code)


def _default_algo(env: str) -> str:
    """MaskablePPO for a pettingzoo game with action masks, else ENV_ALGO (a spec that
    is not JSON is parse_settings' to refuse)."""
    import json

    try:
        document = json.loads(env)
    except ValueError:
        return ENV_ALGO
    if not isinstance(document, dict) or document.get("kind") != "pettingzoo":
        return ENV_ALGO
    from cosmic_curriculum.envs.pettingzoo import default_algo, game_info
    from cosmic_curriculum.workspace.env_config import EnvSpec, check_env

    try:
        spec = check_env(EnvSpec.model_validate(document))
    except (ValueError, TypeError):
        return ENV_ALGO
    return default_algo(game_info(spec))


app.command("train-env", cls=OneLineUsageCommand)(train_env_command)
