"""The `cosmic-curriculum` command line: a thin Typer layer.

Each command parses its options, imports the module that does the work *inside* the
function (so `status` never pays for torch or stable-baselines3), calls one function, and
turns a :class:`CurriculumError` into a one-line message and an exit code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

import typer

from cosmic_curriculum.errors import CurriculumError

app = typer.Typer(
    name="cosmic-curriculum",
    help="Train game bots through a staged curriculum with a head-to-head regression gate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

T = TypeVar("T")


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print a one-line error on stderr and return the Exit to raise."""
    sys.stderr.write(f"error: {message}\n")
    return typer.Exit(code)


def guarded(fn: Callable[[], T]) -> T:
    """Run ``fn``; a CurriculumError becomes a one-line message and its exit code."""
    try:
        return fn()
    except CurriculumError as exc:
        raise fail(str(exc), exc.exit_code) from None


# Commands are registered below, one section per module that owns the work.
# (run/status: orchestrator; train: trainer; evaluate/replay: evaluator; gate/ladder: gate)


# --- train (trainer: cosmic_curriculum/train.py) ----------------------------------------
# Section-local imports (light ones only; the trainer module is imported inside the command).
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from typer._click.exceptions import UsageError  # noqa: E402
from typer.core import TyperCommand  # noqa: E402


class _OneLineUsageCommand(TyperCommand):
    """A command whose usage errors (unknown or malformed flags) are one line, exit 2.

    The training command is called by scripts and the orchestrator, which log stderr; a
    multi-line help box would bury the one fact that matters.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except UsageError as exc:
            raise fail(f"{ctx.command_path}: {exc.format_message()}", 2) from None


@app.command("train", cls=_OneLineUsageCommand)
def train_command(
    experiment: str = typer.Argument(
        ..., help="Experiment name (checkpoints/<name>/, bots/<name>.json)."
    ),
    timesteps: int = typer.Option(
        1_000_000, help="Timesteps to train (a continuation trains only the rest)."
    ),
    n_parallel: int = typer.Option(
        256, help="Games simulated in parallel in the one vectorized env."
    ),
    speedup: int = typer.Option(8, help="Physics ticks per decision (action repeat)."),
    resume: Path | None = typer.Option(
        None,
        help="Checkpoint .zip under checkpoints/. Inside checkpoints/<experiment>/ it continues "
        "the count; from another experiment it starts a new count (and applies --reset-std).",
    ),
    reset_std: float | None = typer.Option(
        None,
        help="On resume from another experiment: action std := F (ignored on a fresh start).",
    ),
    ent_coef: float = typer.Option(0.0, help="PPO entropy bonus coefficient."),
    opponent_mode: str = typer.Option(
        "self_play",
        help="Opponent: inert, random, rookie, self_play or bot (needs --opponent-bot).",
    ),
    opponent_bot: Path | None = typer.Option(
        None, help="Bot JSON to train against (--opponent-mode bot)."
    ),
    attack_goal_bias: float | None = typer.Option(
        None, help="Shaping weight on orb progress toward the opponent goal (default: the game's)."
    ),
    allow_vertical: bool = typer.Option(True, help="Allow vertical motion (off: planar games)."),
    allow_pitch_roll: bool = typer.Option(
        True, help="Allow pitch and roll (off: ships stay level)."
    ),
    draw_penalty: float | None = typer.Option(
        None, help="Reward subtracted on a draw (timeout); default: the game's."
    ),
    seed: int = typer.Option(0, help="Random seed (games, network init, self-play sampling)."),
    device: str = typer.Option("auto", help="auto (CUDA when available), cpu or cuda."),
    torch_threads: int = typer.Option(
        1, help="torch CPU threads; 1 is robust when other processes share the cores."
    ),
    checkpoint_every: int = typer.Option(
        250_000, help="Timesteps between step_<n>.zip checkpoints."
    ),
    keep_checkpoints: int = typer.Option(3, help="Periodic checkpoints kept."),
    learning_rate: float = typer.Option(3e-4, help="PPO learning rate."),
    rollout_size: int = typer.Option(16384, help="Env steps per PPO update (over all games)."),
    batch_size: int = typer.Option(4096, help="PPO minibatch size (large is fast on CPU)."),
    n_epochs: int = typer.Option(4, help="PPO epochs per update."),
    gamma: float = typer.Option(0.99, help="Discount factor per decision."),
    selfplay_snapshot_every: int = typer.Option(
        50_000, help="Self-play: timesteps between snapshots."
    ),
    selfplay_window: int = typer.Option(10, help="Self-play: snapshots kept as opponents."),
    selfplay_swap_every: int = typer.Option(
        10_000, help="Self-play: timesteps between opponent swaps."
    ),
    selfplay_play_latest: float = typer.Option(
        0.5, help="Self-play: probability of facing the latest snapshot at a swap."
    ),
    workspace: Path = typer.Option(
        Path("."), help="Workspace directory (default: the current one)."
    ),
) -> None:
    """Train a bot with PPO on the embedded arena and export bots/EXPERIMENT.json."""

    def run() -> int:
        from cosmic_curriculum import train

        settings = train.settings_from_options(
            experiment=experiment,
            workspace=workspace,
            timesteps=timesteps,
            n_parallel=n_parallel,
            speedup=speedup,
            resume=resume,
            reset_std=reset_std,
            ent_coef=ent_coef,
            opponent_mode=opponent_mode,
            opponent_bot=opponent_bot,
            attack_goal_bias=attack_goal_bias,
            allow_vertical=allow_vertical,
            allow_pitch_roll=allow_pitch_roll,
            draw_penalty=draw_penalty,
            seed=seed,
            device=device,
            torch_threads=torch_threads,
            checkpoint_every=checkpoint_every,
            keep_checkpoints=keep_checkpoints,
            learning_rate=learning_rate,
            rollout_size=rollout_size,
            batch_size=batch_size,
            n_epochs=n_epochs,
            gamma=gamma,
            selfplay_snapshot_every=selfplay_snapshot_every,
            selfplay_window=selfplay_window,
            selfplay_swap_every=selfplay_swap_every,
            selfplay_play_latest=selfplay_play_latest,
        )
        return train.train(settings).exit_code

    code = guarded(run)
    if code:
        raise typer.Exit(code)
