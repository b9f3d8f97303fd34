"""One training run, top to bottom: plan, build, learn, save, export, plot.

SIGINT and SIGTERM stop training at the next env step; the run still saves a checkpoint
and exports a partial bot, and exits with 128 + the signal number.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosmic_curriculum.errors import BotError, ConfigError, TrainerError
from cosmic_curriculum.train import ppo
from cosmic_curriculum.train.checkpoints import (
    ACTION_NAMES,
    checkpoint_game,
    plan_resume,
    reset_unused_actions,
    save_model_atomic,
    sha256_file,
)
from cosmic_curriculum.train.settings import TrainSettings, game_settings
from cosmic_curriculum.train.stopping import StopFlag, signals_handled
from cosmic_curriculum.workspace.layout import Layout, step_checkpoint_name

if TYPE_CHECKING:
    from cosmic_curriculum.arena.settings import GameSettings
    from cosmic_curriculum.bots import Bot
    from cosmic_curriculum.train.callbacks import RunStats


@dataclass
class TrainResult:
    experiment: str
    timesteps: int
    bot: Path
    checkpoint: Path
    partial: bool
    exit_code: int
    stats: RunStats
    continued_from: Path | None = None
    resumed_from: Path | None = None


def train(settings: TrainSettings, extra_callbacks: Sequence[Any] = ()) -> TrainResult:
    """Train (or continue) one experiment; always leaves a checkpoint and a bot behind.

    ``extra_callbacks`` (SB3 callbacks) run after ours; tests use them to watch the games.
    """
    import torch

    torch.set_num_threads(settings.torch_threads)
    device = ppo.resolve_device(settings.device)
    layout = settings.layout
    game = game_settings(settings)
    plan = plan_resume(settings)
    if plan.complete:
        return _reexport(settings, layout, game, device)

    from cosmic_curriculum.arena.vec_env import ArenaVecEnv
    from cosmic_curriculum.train.callbacks import Checkpoints, GhostOpponent, Progress, RunStats

    self_play = settings.opponent_mode == "self_play"
    # Under self-play the ghost callback sets the real opponent before the first step.
    mode = "inert" if self_play else settings.opponent_mode
    env = ArenaVecEnv(settings.n_parallel, game, _opponent(settings, mode), settings.seed)
    from cosmic_curriculum.tracking.sb3 import tensorboard_dir, tracked_logger

    # The curriculum's [tracking] when it launched us; on our own: when it is installed.
    tensorboard_log = tensorboard_dir(ppo.tensorboard_dir(layout))
    if plan.start is None:
        model = ppo.new_model(settings, env, device, tensorboard_log)
    else:
        model = ppo.load_model(plan.start, settings, env, device, tensorboard_log)
    if plan.resumed_from is not None:
        _adapt_to_this_game(model, settings, plan.resumed_from, game)
    # SB3's logger feeds TensorBoard and the trackers' spool (never a temp folder).
    model.set_logger(
        tracked_logger(settings.experiment, tensorboard_log, plan.continued_from is None)
    )

    total = settings.timesteps
    remaining = total
    if plan.continued_from is not None:
        remaining = max(0, total - int(model.num_timesteps))
        print(
            f"continuing {settings.experiment} from {plan.continued_from.name} at "
            f"{model.num_timesteps} of {total} timesteps",
            flush=True,
        )

    experiment_dir = layout.checkpoint_dir(settings.experiment)
    stats = RunStats()
    stop = StopFlag("a checkpoint and a partial bot")
    callbacks: list[Any] = [
        Progress(total, settings.progress_interval, stats, lambda: stop.signum is not None),
        Checkpoints(
            experiment_dir, settings.checkpoint_every, settings.keep_checkpoints, game, stats
        ),
    ]
    if self_play:
        callbacks.append(GhostOpponent(settings, game, _opponent(settings, "rookie"), stats))
    experiment_dir.mkdir(parents=True, exist_ok=True)
    with signals_handled(stop):
        try:
            if remaining > 0:
                model.learn(
                    total_timesteps=remaining,
                    callback=[*callbacks, *extra_callbacks],
                    reset_num_timesteps=plan.continued_from is None,
                    tb_log_name=settings.experiment,
                    progress_bar=False,
                )
        finally:
            env.close()
        partial = stop.signum is not None
        if partial:
            checkpoint = experiment_dir / step_checkpoint_name(model.num_timesteps)
        else:
            checkpoint = layout.final_checkpoint(settings.experiment)
        sha = save_model_atomic(model, checkpoint, game)
        bot = export_bot(model, settings, game, checkpoint, sha, partial, plan.resumed_from)
    plot_curve(layout, settings.experiment, stats)
    print(
        f"{'stopped' if partial else 'trained'} {settings.experiment}: "
        f"{model.num_timesteps} timesteps, checkpoint {checkpoint.relative_to(layout.root)}, "
        f"bot {bot.relative_to(layout.root)}{' (partial)' if partial else ''}",
        flush=True,
    )
    return TrainResult(
        experiment=settings.experiment,
        timesteps=int(model.num_timesteps),
        bot=bot,
        checkpoint=checkpoint,
        partial=partial,
        exit_code=128 + stop.signum if stop.signum is not None else 0,
        stats=stats,
        continued_from=plan.continued_from,
        resumed_from=plan.resumed_from,
    )


def _reexport(
    settings: TrainSettings, layout: Layout, game: GameSettings, device: str
) -> TrainResult:
    """A complete run (final.zip exists) is not retrained: its bot is exported again."""
    from stable_baselines3 import PPO

    from cosmic_curriculum.train.callbacks import RunStats

    final = layout.final_checkpoint(settings.experiment)
    experiment_dir = layout.checkpoint_dir(settings.experiment)
    try:
        model = PPO.load(final, device=device)
    except (ValueError, KeyError, OSError, RuntimeError) as exc:
        raise TrainerError(
            f"{final}: cannot load the finished checkpoint ({exc}); delete "
            f"{experiment_dir} to retrain"
        ) from None
    bot = export_bot(model, settings, game, final, sha256_file(final), False, None)
    print(
        f"{settings.experiment} is already trained ({model.num_timesteps} timesteps in "
        f"{final.relative_to(layout.root)}); re-exported {bot.relative_to(layout.root)}. "
        f"Delete {experiment_dir.name}/ "
        "under checkpoints/ to train it again.",
        flush=True,
    )
    return TrainResult(
        experiment=settings.experiment,
        timesteps=int(model.num_timesteps),
        bot=bot,
        checkpoint=final,
        partial=False,
        exit_code=0,
        stats=RunStats(),
    )


def _opponent(settings: TrainSettings, mode: str) -> Bot:
    """A fixed opponent: ``mode`` is an opponent mode other than self_play."""
    from cosmic_curriculum import bots

    if mode == "bot":
        assert settings.opponent_bot is not None  # settings_from_options checks this
        given = settings.opponent_bot
        path = given if given.is_absolute() else settings.layout.root / given
        try:
            return bots.load_bot(path)
        except BotError as exc:
            raise ConfigError(f"--opponent-bot {given}: {exc}") from None
    return bots.bot_from_spec(mode, decision_ticks=settings.speedup)


def _adapt_to_this_game(
    model: Any, settings: TrainSettings, resumed_from: Path, game: GameSettings
) -> None:
    """A policy from another experiment: reopen exploration, restart actions it never used."""
    if settings.reset_std is not None:
        ppo.set_log_std(model.policy, settings.reset_std)
    freed = reset_unused_actions(model.policy, checkpoint_game(resumed_from), game)
    if freed:
        names = "/".join(ACTION_NAMES[i] for i in freed)
        print(
            f"{names} had no effect in the game of {resumed_from.parent.name}/"
            f"{resumed_from.name}: their outputs restart at 0",
            flush=True,
        )


# --------------------------------------------------------------------------------------
# export and learning curve


def git_commit(workspace: Path) -> str | None:
    """HEAD of the workspace's git repository, or None (not a repo, no commits, no git)."""
    from cosmic_curriculum.vcs.gitcmd import GitRunError, run_git

    try:
        out = run_git(["rev-parse", "--verify", "-q", "HEAD"], workspace, check=False)
    except GitRunError:
        return None
    commit = out.stdout.strip()
    return commit if out.ok and commit else None


def export_bot(
    model: Any,
    settings: TrainSettings,
    game: GameSettings,
    checkpoint: Path,
    checkpoint_sha256: str,
    partial: bool,
    resumed_from: Path | None,
) -> Path:
    """Write ``bots/<exp>.json`` (numpy layers, normalisation, game, provenance) and its
    ONNX twin ``bots/<exp>.onnx``."""
    from cosmic_curriculum import bots
    from cosmic_curriculum.train import policy_to_bot as export

    layout = settings.layout
    mean, std = export.observation_normalisation(model.policy)
    provenance = {
        "experiment": settings.experiment,
        "timesteps": int(model.num_timesteps),
        "settings": settings.model_dump(mode="json", exclude={"workspace"}),
        "git_commit": git_commit(layout.root),
        "checkpoint": str(checkpoint.relative_to(layout.root)),
        "checkpoint_sha256": checkpoint_sha256,
        "resumed_from": (
            str(resumed_from.relative_to(layout.root)) if resumed_from is not None else None
        ),
        "action_log_std": export.log_std(model.policy),
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    document = bots.mlp_bot_document(
        export.policy_layers(model.policy),
        mean,
        std,
        game.model_dump(),
        settings.speedup,
        provenance,
        partial=partial,
    )
    bot = layout.bot(settings.experiment)
    bots.save_bot(bot, document)
    write_onnx_twin(bot, layout.onnx(settings.experiment))
    return bot


def write_onnx_twin(bot: Path, out: Path) -> None:
    """``bots/<exp>.onnx`` next to the JSON: the same bot for games (docs/BOT_FORMAT.md).

    The JSON is what the curriculum plays, so a failed conversion is a warning, and a
    stale twin of an earlier export is removed rather than left disagreeing with it."""
    from cosmic_curriculum.bots.onnx_model import write_onnx

    try:
        write_onnx(bot, out)
    except Exception as exc:
        out.unlink(missing_ok=True)
        sys.stderr.write(f"warning: could not write {out.name}: {exc}\n")


def plot_curve(layout: Layout, experiment: str, stats: RunStats) -> None:
    """``logs/<exp>.curve.png`` from the log's progress lines (or this run's, if no log)."""
    from cosmic_curriculum.reports import curves

    log = layout.log(experiment)
    try:
        series = curves.read_progress(log) if log.is_file() else []
        if len(series) < len(stats.progress):
            series = list(stats.progress)
        curves.plot_experiment(series, layout.curve(experiment), title=log.stem)
    except Exception as exc:  # a plot must never fail a finished training run
        sys.stderr.write(f"warning: could not plot the learning curve: {exc}\n")


# --------------------------------------------------------------------------------------
# signals
