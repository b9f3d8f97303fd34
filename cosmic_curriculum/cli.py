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

from cosmic_curriculum.errors import CurriculumError, describe_validation, option_name

app = typer.Typer(
    name="cosmic-curriculum",
    help="Train game bots through a staged curriculum with a head-to-head regression gate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help text: option help mentions TOML tables like [defaults], which Rich
    # markup would swallow as tags.
    rich_markup_mode=None,
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


# --- train (trainer: cosmic_curriculum/train/) ------------------------------------------
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
    speedup: int = typer.Option(16, help="Physics ticks per decision (action repeat)."),
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
    attack_goal_bias: float = typer.Option(
        0.5, help="Shaping weight on orb progress toward the opponent goal (0 = goals only)."
    ),
    orb_approach_bias: float = typer.Option(
        0.5, help="Shaping weight on closing the distance to the orb (0 = none)."
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
    learning_rate: float = typer.Option(5e-4, help="PPO learning rate."),
    rollout_size: int = typer.Option(8192, help="Env steps per PPO update (over all games)."),
    batch_size: int = typer.Option(2048, help="PPO minibatch size (large is fast on CPU)."),
    n_epochs: int = typer.Option(8, help="PPO epochs per update."),
    gamma: float = typer.Option(0.99, help="Discount factor per decision."),
    init_std: float = typer.Option(0.5, help="Action std of a fresh policy (exploration)."),
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
    selfplay_rookie_share: float = typer.Option(
        0.5, help="Self-play: share of swaps that play the scripted rookie instead of a snapshot."
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
            orb_approach_bias=orb_approach_bias,
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
            init_std=init_std,
            selfplay_snapshot_every=selfplay_snapshot_every,
            selfplay_window=selfplay_window,
            selfplay_swap_every=selfplay_swap_every,
            selfplay_play_latest=selfplay_play_latest,
            selfplay_rookie_share=selfplay_rookie_share,
        )
        return train.train(settings).exit_code

    code = guarded(run)
    if code:
        raise typer.Exit(code)


# --- run / status / init (orchestrator: cosmic_curriculum/orchestrator.py) ---------------


@app.command("run", cls=_OneLineUsageCommand)
def run_command(
    timesteps: int | None = typer.Option(
        None, min=1, help="Timesteps per attempt [default: stages.toml [defaults], 20,000,000]."
    ),
    n_parallel: int | None = typer.Option(
        None, min=1, help="Parallel games for the trainer [default: stages.toml, 14]."
    ),
    speedup: int | None = typer.Option(
        None, min=1, help="Physics ticks per decision [default: stages.toml, 16]."
    ),
    seed_checkpoint: Path | None = typer.Option(
        None, help="Checkpoint that stage 1's first attempt resumes from."
    ),
    force_retry: bool = typer.Option(
        False, "--force-retry", help="Blocked stage: run one more attempt."
    ),
    skip_to_next_stage: bool = typer.Option(
        False, "--skip-to-next-stage", help="Blocked stage: accept its last attempt and move on."
    ),
    reason: str | None = typer.Option(None, help="Why (recorded with the override)."),
    config: Path | None = typer.Option(
        None, help="Curriculum file [default: WORKSPACE/stages.toml]."
    ),
    workspace: Path = typer.Option(Path("."), help="Workspace directory."),
    no_push: bool = typer.Option(False, "--no-push", help="Commit, but never push."),
    detach: bool = typer.Option(
        False, "--detach", help="Run in a detached tmux session named after the workspace."
    ),
    accept_config_change: bool = typer.Option(
        False,
        "--accept-config-change",
        help="Keep the results of finished stages whose definition changed in stages.toml.",
    ),
    attempt_timeout: float | None = typer.Option(
        None, min=1, help="Stop a training attempt after this many seconds (an attempt error)."
    ),
) -> None:
    """Run the curriculum, or resume it exactly where it stopped."""

    def go() -> None:
        if detach:
            from cosmic_curriculum.workspace import start_detached

            argv = [sys.executable, "-m", "cosmic_curriculum", "run"]
            argv += ["--workspace", str(workspace.resolve())]
            for flag, value in (
                ("--timesteps", timesteps),
                ("--n-parallel", n_parallel),
                ("--speedup", speedup),
                ("--seed-checkpoint", seed_checkpoint and seed_checkpoint.resolve()),
                ("--reason", reason),
                ("--config", config and config.resolve()),
                ("--attempt-timeout", attempt_timeout),
            ):
                if value is not None:
                    argv += [flag, str(value)]
            for flag, on in (
                ("--force-retry", force_retry),
                ("--skip-to-next-stage", skip_to_next_stage),
                ("--no-push", no_push),
                ("--accept-config-change", accept_config_change),
            ):
                if on:
                    argv.append(flag)
            result = start_detached(workspace, argv)
            sys.stdout.write(result.message + "\n")
            return
        from cosmic_curriculum.orchestrator import RunOptions, run_curriculum
        from cosmic_curriculum.report import ConsoleReporter

        run_curriculum(
            RunOptions(
                workspace=workspace,
                config_path=config,
                timesteps=timesteps,
                n_parallel=n_parallel,
                speedup=speedup,
                seed_checkpoint=seed_checkpoint,
                force_retry=force_retry,
                skip_to_next_stage=skip_to_next_stage,
                reason=reason,
                push=not no_push,
                accept_config_change=accept_config_change,
                attempt_timeout=attempt_timeout,
            ),
            ConsoleReporter(),
        )

    guarded(go)


@app.command("status", cls=_OneLineUsageCommand)
def status_command(
    workspace: Path = typer.Option(Path("."), help="Workspace directory."),
    config: Path | None = typer.Option(
        None, help="Curriculum file [default: WORKSPACE/stages.toml]."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Show stages, attempts, evaluations, decisions and what to run next."""

    def go() -> None:
        from cosmic_curriculum.report import render_status, status_data

        data = status_data(workspace, config)
        if as_json:
            import json

            sys.stdout.write(json.dumps(data, indent=2) + "\n")
            return
        from rich.console import Console

        Console(highlight=False).print(render_status(data))

    guarded(go)


@app.command("init", cls=_OneLineUsageCommand)
def init_command(
    workspace: Path = typer.Argument(..., help="Directory to create (empty or new)."),
    preset: str = typer.Option("default", help="Curriculum preset: default or quick."),
) -> None:
    """Create a fresh workspace: stages.toml, rookie bot, training script, state, git."""

    def go() -> None:
        from cosmic_curriculum.workspace import init_workspace

        result = init_workspace(workspace, preset)
        verb = "updated" if result.already else "created"
        made = ", ".join(result.created) or "nothing new"
        sys.stdout.write(f"{verb} workspace {result.workspace}: {made}\n")
        for note in result.notes:
            sys.stdout.write(f"note: {note}\n")
        sys.stdout.write(f"next: cd {result.workspace} && cosmic-curriculum run --detach\n")

    guarded(go)


# --- evaluate / replay / gate simulate / ladder (evaluator and gate: evaluate.py, gate.py,
# ladder.py) -------------------------------------------------------------------------------
gate_app = typer.Typer(
    help="The regression gate: simulate its error rates and episode counts.",
    no_args_is_help=True,
)
app.add_typer(gate_app, name="gate")


def _gate_rule_option(rule: str | None, option: str = "--gate") -> str | None:
    from cosmic_curriculum.errors import ConfigError

    if rule is not None and rule not in ("margin", "sprt"):
        raise ConfigError(f"{option} {rule!r}: choose margin or sprt (see docs/GATES.md)")
    return rule


def _fmt_interval(pair: Any, digits: int) -> str:
    lo, hi = pair
    show = [
        ("−∞" if v is None and k == 0 else "+∞" if v is None else f"{v:+.{digits}f}")
        for k, v in enumerate((lo, hi))
    ]
    return f"[{show[0]}, {show[1]}]".replace("-", "−")


@app.command("evaluate")
def evaluate_command(
    candidate: Path = typer.Argument(..., help="Candidate bot JSON (counted as wins_a)."),
    reference: Path = typer.Argument(..., help="Reference bot JSON (counted as wins_b)."),
    episodes: int | None = typer.Option(
        None,
        "--episodes",
        "-n",
        help="Episodes (even: seat-swapped pairs). Default 100; with --gate sprt the cap "
        "(default 400).",
    ),
    seed: int = typer.Option(0, help="Seed; the same seed gives the same record."),
    history_path: Path = typer.Option(
        Path("eval_history.json"), "--history", help="Evaluation history to append to."
    ),
    gate: str | None = typer.Option(
        None, "--gate", help="Also judge the result: margin (fixed episodes) or sprt."
    ),
    batch_pairs: int | None = typer.Option(
        None, help="Pairs per vectorised batch under --gate sprt (default 5)."
    ),
) -> None:
    """Play CANDIDATE against REFERENCE in seat-swapped pairs and append one record."""

    def run() -> None:
        from rich.console import Console
        from rich.table import Table

        from cosmic_curriculum import stats
        from cosmic_curriculum.errors import ConfigError
        from cosmic_curriculum.evaluate import run_evaluation
        from cosmic_curriculum.gate import GateSettings

        rule = _gate_rule_option(gate)
        settings = None
        if rule is not None:
            if batch_pairs is not None and batch_pairs < 1:
                raise ConfigError(f"--batch-pairs {batch_pairs}: must be >= 1")
            extra = {} if batch_pairs is None else {"batch_pairs": batch_pairs}
            settings = GateSettings(rule=rule, **extra)
        from rich.progress import Progress

        # A transient bar on stderr, only on a terminal (logs get the summary alone).
        err = Console(stderr=True)
        with Progress(console=err, transient=True, disable=not err.is_terminal) as bar:
            task = bar.add_task("evaluating", total=None)
            record = run_evaluation(
                candidate,
                reference,
                history_path=history_path,
                episodes=episodes,
                gate=settings,
                seed=seed,
                on_progress=lambda done, total: bar.update(task, completed=done, total=total),
            )
        console = Console()
        table = Table(show_header=False, box=None, padding=(0, 2))
        table.add_row("candidate", f"{record['candidate']} ({record['wins_a']} wins)")
        table.add_row("reference", f"{record['reference']} ({record['wins_b']} wins)")
        table.add_row("draws", str(record["draws"]))
        table.add_row("episodes", f"{record['episodes']} ({len(record['pairs'])} pairs)")
        table.add_row("score", f"{record['score']:.3f}")
        gap_ci = _fmt_interval(record["gap_ci95"], 3)
        table.add_row("gap (ref − cand)", f"{stats.signed(record['gap'], 3)} 95% {gap_ci}")
        elo = record["elo"]
        table.add_row(
            "Elo",
            ("−∞" if record["wins_a"] == 0 else "+∞")
            if elo is None
            else f"{elo:+.0f} 95% {_fmt_interval(record['elo_ci95'], 0)}",
        )
        if "gate" in record:
            verdict = record["gate"]["verdict"]
            colour = "green" if verdict == "pass" else "red"
            table.add_row("gate", f"{record['gate']['rule']}: [bold {colour}]{verdict}[/]")
        console.print(table)
        console.print(record["summary"], highlight=False, soft_wrap=True)
        console.print(f"record [bold]{record['id']}[/] appended to {history_path}")

    guarded(run)


@app.command("replay")
def replay_command(
    candidate: Path = typer.Argument(..., help="Bot JSON that plays blue."),
    reference: Path = typer.Argument(..., help="Bot JSON that plays orange."),
    out: Path = typer.Option(..., "--out", "-o", help="Picture to write: .png or .gif."),
    seed: int = typer.Option(0, help="Seed of the kickoff and the bots' noise."),
) -> None:
    """Play one match and draw it (top-down and side view of ships and orb)."""

    def run() -> None:
        from cosmic_curriculum.evaluate import render_replay

        info = render_replay(candidate, reference, out, seed=seed)
        outcome = {1: "candidate won", -1: "reference won", 0: "draw"}[info["outcome"]]
        sys.stdout.write(f"{outcome} after {info['seconds']:.1f} s; wrote {info['out']}\n")

    guarded(run)


@gate_app.command("simulate")
def gate_simulate_command(
    rule: list[str] = typer.Option(
        ["margin", "sprt"], "--rule", help="Rules to simulate (repeat): margin, sprt."
    ),
    trials: int = typer.Option(20_000, help="Monte Carlo trials per cell."),
    draws: str = typer.Option("0,0.2,0.4", help="Comma-separated draw rates."),
    model: str = typer.Option(
        "pentanomial", help="SPRT model: pentanomial (pairs) or trinomial (games)."
    ),
    check_every: int | None = typer.Option(
        None,
        help="SPRT looks every N pairs (pentanomial) or N episodes (trinomial); default: "
        "every pair, or every batch with --check batch.",
    ),
    check: str = typer.Option("pair", help="pair or batch (see docs/GATES.md)."),
    batch_pairs: int = typer.Option(5, help="Pairs per batch."),
    gap: float = typer.Option(0.25, help="SPRT: the regression (win-rate gap) of H0."),
    alpha: float = typer.Option(0.05, help="SPRT: rate of passing a regression of --gap."),
    beta: float = typer.Option(0.05, help="SPRT: rate of failing an equal candidate."),
    max_episodes: int = typer.Option(400, help="SPRT: episode cap."),
    episodes: int = typer.Option(100, help="margin: episodes played."),
    margin: float = typer.Option(0.15, help="margin: regression_margin."),
    worse: float = typer.Option(0.25, help="True gap of the 'worse' candidate."),
    better: float = typer.Option(0.10, help="True advantage of the 'better' candidate."),
    seed: int = typer.Option(0, help="Simulation seed."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the rows as JSON."),
) -> None:
    """Monte Carlo of the gate rules: error rates and episodes at given draw rates."""

    def run() -> None:
        from pydantic import ValidationError
        from rich.console import Console
        from rich.table import Table

        from cosmic_curriculum import fsio
        from cosmic_curriculum.errors import ConfigError
        from cosmic_curriculum.gate import GateSettings, SimSpec, simulate_table, spec_label

        try:
            rates = [float(x) for x in draws.split(",") if x.strip()]
        except ValueError:
            raise ConfigError(
                f"--draws {draws!r}: give comma-separated numbers like 0,0.2,0.4"
            ) from None
        if not rates or any(not 0.0 <= r < 1.0 for r in rates):
            raise ConfigError(f"--draws {draws!r}: each draw rate must be in [0, 1)")
        if trials < 1:
            raise ConfigError(f"--trials {trials}: must be >= 1")
        if model not in ("pentanomial", "trinomial"):
            raise ConfigError(f"--model {model!r}: choose pentanomial or trinomial")
        if check not in ("pair", "batch"):
            raise ConfigError(f"--check {check!r}: choose pair or batch")
        if check_every is not None and check_every < 1:
            raise ConfigError(f"--check-every {check_every}: must be >= 1")
        specs = []
        for r in rule:
            _gate_rule_option(r, "--rule")
            try:
                settings = GateSettings(
                    rule=r,
                    episodes=episodes,
                    regression_margin=margin,
                    gap=gap,
                    alpha=alpha,
                    beta=beta,
                    max_episodes=max_episodes,
                    batch_pairs=batch_pairs,
                    check=check,
                )
            except ValidationError as exc:
                raise ConfigError(describe_validation(exc, option_name, first_only=True)) from None
            m = model if r == "sprt" else "trinomial"
            specs.append(SimSpec(spec_label(settings, m, check_every), settings, m, check_every))  # type: ignore[arg-type]
        for rate in rates:
            if max(worse, better) > 1.0 - rate:
                raise ConfigError(
                    f"--worse {worse} / --better {better} with draw rate {rate}: a win-rate gap "
                    f"cannot exceed 1 - draw rate"
                )
        rows = simulate_table(specs, rates, trials, worse=worse, better=better, seed=seed)
        table = Table(title=f"Gate Monte Carlo, {trials:,} trials per cell")
        for head in (
            "rule",
            "draws",
            "false-fail (equal)",
            f"passes {worse:g} worse",
            f"fails {better:g} better",
            "episodes equal: mean / p95",
            "worse: mean / p95",
        ):
            table.add_column(
                head, justify="left" if head == "rule" else "right", no_wrap=head == "rule"
            )
        for row in rows:
            table.add_row(
                row["rule"],
                f"{row['draw_rate']:.0%}",
                f"{row['false_fail']:.1%}",
                f"{row['passes_worse']:.1%}",
                f"{row['fails_better']:.1%}",
                f"{row['mean_episodes_equal']:.0f} / {row['p95_episodes_equal']:.0f}",
                f"{row['mean_episodes_worse']:.0f} / {row['p95_episodes_worse']:.0f}",
            )
        console = Console()
        if not console.is_terminal:  # logs and pipes: keep each row on one line
            console = Console(width=max(console.width, 150))
        console.print(table)
        if json_out is not None:
            fsio.atomic_write_json(json_out, rows)

    guarded(run)


@app.command("ladder")
def ladder_command(
    bots_dir: Path = typer.Option(Path("bots"), help="Directory of bot JSON files."),
    pairs: int = typer.Option(20, help="Seat-swapped pairs per match."),
    out_dir: Path = typer.Option(Path("logs"), help="Where ladder.json/.md/.png go."),
    seed: int = typer.Option(0, help="Seed; the same seed gives the same ladder."),
    game_from: Path | None = typer.Option(
        None, help="Play under this bot's recorded game settings (default: the defaults)."
    ),
) -> None:
    """Round robin among all bots: Elo ratings with 95% error bars, table and PNG."""

    def run() -> None:
        from rich.console import Console
        from rich.table import Table

        from cosmic_curriculum.ladder import run_ladder

        doc = run_ladder(bots_dir, pairs=pairs, out_dir=out_dir, seed=seed, game_from=game_from)
        anchor = doc["anchor"] or "the mean"
        table = Table(title=f"Ladder: Elo relative to {anchor}, {pairs} pairs per match")
        for head in ("rank", "bot", "Elo", "± 95%", "games", "score", "W", "L", "D"):
            table.add_column(head, justify="left" if head == "bot" else "right")
        for r in doc["ratings"]:
            table.add_row(
                str(r["rank"]),
                r["bot"],
                f"{r['elo']:+.0f}".replace("-", "−"),
                f"{r['err95']:.0f}",
                str(r["games"]),
                f"{r['score']:.3f}",
                str(r["wins"]),
                str(r["losses"]),
                str(r["draws"]),
            )
        console = Console()
        console.print(table)
        for skipped in doc["skipped"]:
            console.print(f"skipped: {skipped['reason']}", highlight=False)
        files = doc["files"]
        console.print(f"wrote {files['table']}, {files['png']}, {files['json']}")

    guarded(run)
