"""The `cosmic-curriculum` command line: a thin Typer layer.

Each command parses its options, imports the module that does the work *inside* the
function (so `status` never pays for torch or stable-baselines3), calls one function, and
turns a :class:`CurriculumError` into a one-line message and an exit code. The `train`
command's options are built from :class:`TrainSettings` (whose package imports no torch),
so each trainer default and help text is written once; tables live in :mod:`.report`.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_origin

import typer
from typer._click.exceptions import UsageError
from typer.core import TyperCommand

from cosmic_curriculum.errors import CurriculumError, describe_validation, option_name
from cosmic_curriculum.train.settings import TrainSettings

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
app.command("train", cls=_OneLineUsageCommand)(train_command)


# --- run / status / init (the curriculum: cosmic_curriculum/curriculum/) -------------------


@app.command("run", cls=_OneLineUsageCommand)
def run_command(
    timesteps: Annotated[
        int | None,
        typer.Option(
            min=1, help="Timesteps per attempt [default: stages.toml [defaults], 20,000,000]."
        ),
    ] = None,
    n_parallel: Annotated[
        int | None,
        typer.Option(min=1, help="Parallel games for the trainer [default: stages.toml, 14]."),
    ] = None,
    speedup: Annotated[
        int | None,
        typer.Option(min=1, help="Physics ticks per decision [default: stages.toml, 16]."),
    ] = None,
    seed_checkpoint: Annotated[
        Path | None, typer.Option(help="Checkpoint that stage 1's first attempt resumes from.")
    ] = None,
    force_retry: Annotated[
        bool, typer.Option("--force-retry", help="Blocked stage: run one more attempt.")
    ] = False,
    skip_to_next_stage: Annotated[
        bool,
        typer.Option(
            "--skip-to-next-stage", help="Blocked stage: accept its last attempt and move on."
        ),
    ] = False,
    reason: Annotated[str | None, typer.Option(help="Why (recorded with the override).")] = None,
    config: Annotated[
        Path | None, typer.Option(help="Curriculum file [default: WORKSPACE/stages.toml].")
    ] = None,
    workspace: Annotated[Path, typer.Option(help="Workspace directory.")] = Path("."),
    no_push: Annotated[bool, typer.Option("--no-push", help="Commit, but never push.")] = False,
    detach: Annotated[
        bool,
        typer.Option("--detach", help="Run in a detached tmux session named after the workspace."),
    ] = False,
    accept_config_change: Annotated[
        bool,
        typer.Option(
            "--accept-config-change",
            help="Keep the results of finished stages whose definition changed in stages.toml.",
        ),
    ] = False,
    attempt_timeout: Annotated[
        float | None,
        typer.Option(
            min=1, help="Stop a training attempt after this many seconds (an attempt error)."
        ),
    ] = None,
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
        from cosmic_curriculum.curriculum import RunOptions, run_curriculum
        from cosmic_curriculum.reporter import ConsoleReporter

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
    workspace: Annotated[Path, typer.Option(help="Workspace directory.")] = Path("."),
    config: Annotated[
        Path | None, typer.Option(help="Curriculum file [default: WORKSPACE/stages.toml].")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
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
    workspace: Annotated[Path, typer.Argument(help="Directory to create (empty or new).")],
    preset: Annotated[str, typer.Option(help="Curriculum preset: default or quick.")] = "default",
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
# ladder.py; their result tables: report.py) --------------------------------------------
gate_app = typer.Typer(
    help="The regression gate: simulate its error rates and episode counts.",
    no_args_is_help=True,
)
app.add_typer(gate_app, name="gate")

SprtModel = Literal["pentanomial", "trinomial"]


def _gate_rule_option(rule: str | None, option: str = "--gate") -> str | None:
    from cosmic_curriculum.errors import ConfigError

    if rule is not None and rule not in ("margin", "sprt"):
        raise ConfigError(f"{option} {rule!r}: choose margin or sprt (see docs/GATES.md)")
    return rule


@app.command("evaluate")
def evaluate_command(
    candidate: Annotated[Path, typer.Argument(help="Candidate bot JSON (counted as wins_a).")],
    reference: Annotated[Path, typer.Argument(help="Reference bot JSON (counted as wins_b).")],
    episodes: Annotated[
        int | None,
        typer.Option(
            "--episodes",
            "-n",
            help="Episodes (even: seat-swapped pairs). Default 100; with --gate sprt the cap "
            "(default 400).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed; the same seed gives the same record.")] = 0,
    history_path: Annotated[
        Path, typer.Option("--history", help="Evaluation history to append to.")
    ] = Path("eval_history.json"),
    gate: Annotated[
        str | None,
        typer.Option("--gate", help="Also judge the result: margin (fixed episodes) or sprt."),
    ] = None,
    batch_pairs: Annotated[
        int | None, typer.Option(help="Pairs per vectorised batch under --gate sprt (default 5).")
    ] = None,
) -> None:
    """Play CANDIDATE against REFERENCE in seat-swapped pairs and append one record."""

    def run() -> None:
        from rich.console import Console
        from rich.progress import Progress

        from cosmic_curriculum.errors import ConfigError
        from cosmic_curriculum.evaluate import run_evaluation
        from cosmic_curriculum.gate import GateSettings
        from cosmic_curriculum.tables import evaluation_table

        rule = _gate_rule_option(gate)
        settings = None
        if rule is not None:
            if batch_pairs is not None and batch_pairs < 1:
                raise ConfigError(f"--batch-pairs {batch_pairs}: must be >= 1")
            extra = {} if batch_pairs is None else {"batch_pairs": batch_pairs}
            settings = GateSettings(rule=rule, **extra)
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
        console.print(evaluation_table(record))
        console.print(record["summary"], highlight=False, soft_wrap=True)
        console.print(f"record [bold]{record['id']}[/] appended to {history_path}")

    guarded(run)


@app.command("replay")
def replay_command(
    candidate: Annotated[Path, typer.Argument(help="Bot JSON that plays blue.")],
    reference: Annotated[Path, typer.Argument(help="Bot JSON that plays orange.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Picture to write: .png or .gif.")],
    seed: Annotated[int, typer.Option(help="Seed of the kickoff and the bots' noise.")] = 0,
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
    rule: Annotated[
        list[str],
        typer.Option("--rule", metavar="<str>", help="Rules to simulate (repeat): margin, sprt."),
    ] = ["margin", "sprt"],  # noqa: B006 - Typer passes a new list; the default stays as is
    trials: Annotated[int, typer.Option(help="Monte Carlo trials per cell.")] = 20_000,
    draws: Annotated[str, typer.Option(help="Comma-separated draw rates.")] = "0,0.2,0.4",
    model: Annotated[
        str, typer.Option(help="SPRT model: pentanomial (pairs) or trinomial (games).")
    ] = "pentanomial",
    check_every: Annotated[
        int | None,
        typer.Option(
            help="SPRT looks every N pairs (pentanomial) or N episodes (trinomial); default: "
            "every pair, or every batch with --check batch."
        ),
    ] = None,
    check: Annotated[str, typer.Option(help="pair or batch (see docs/GATES.md).")] = "pair",
    batch_pairs: Annotated[int, typer.Option(help="Pairs per batch.")] = 5,
    gap: Annotated[float, typer.Option(help="SPRT: the regression (win-rate gap) of H0.")] = 0.25,
    alpha: Annotated[
        float, typer.Option(help="SPRT: rate of passing a regression of --gap.")
    ] = 0.05,
    beta: Annotated[float, typer.Option(help="SPRT: rate of failing an equal candidate.")] = 0.05,
    max_episodes: Annotated[int, typer.Option(help="SPRT: episode cap.")] = 400,
    episodes: Annotated[int, typer.Option(help="margin: episodes played.")] = 100,
    margin: Annotated[float, typer.Option(help="margin: regression_margin.")] = 0.15,
    worse: Annotated[float, typer.Option(help="True gap of the 'worse' candidate.")] = 0.25,
    better: Annotated[float, typer.Option(help="True advantage of the 'better' candidate.")] = 0.10,
    seed: Annotated[int, typer.Option(help="Simulation seed.")] = 0,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the rows as JSON.")
    ] = None,
) -> None:
    """Monte Carlo of the gate rules: error rates and episodes at given draw rates."""

    def run() -> None:
        from pydantic import ValidationError
        from rich.console import Console

        from cosmic_curriculum import fsio
        from cosmic_curriculum.errors import ConfigError
        from cosmic_curriculum.gate import GateSettings, SimSpec, simulate_table, spec_label
        from cosmic_curriculum.tables import gate_simulation_table

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
        sprt_model: SprtModel = "pentanomial" if model == "pentanomial" else "trinomial"
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
            m: SprtModel = sprt_model if r == "sprt" else "trinomial"
            specs.append(SimSpec(spec_label(settings, m, check_every), settings, m, check_every))
        for rate in rates:
            if max(worse, better) > 1.0 - rate:
                raise ConfigError(
                    f"--worse {worse} / --better {better} with draw rate {rate}: a win-rate gap "
                    f"cannot exceed 1 - draw rate"
                )
        rows = simulate_table(specs, rates, trials, worse=worse, better=better, seed=seed)
        console = Console()
        if not console.is_terminal:  # logs and pipes: keep each row on one line
            console = Console(width=max(console.width, 150))
        console.print(gate_simulation_table(rows, trials, worse, better))
        if json_out is not None:
            fsio.atomic_write_json(json_out, rows)

    guarded(run)


@app.command("ladder")
def ladder_command(
    bots_dir: Annotated[Path, typer.Option(help="Directory of bot JSON files.")] = Path("bots"),
    pairs: Annotated[int, typer.Option(help="Seat-swapped pairs per match.")] = 20,
    out_dir: Annotated[Path, typer.Option(help="Where ladder.json/.md/.png go.")] = Path("logs"),
    seed: Annotated[int, typer.Option(help="Seed; the same seed gives the same ladder.")] = 0,
    game_from: Annotated[
        Path | None,
        typer.Option(help="Play under this bot's recorded game settings (default: the defaults)."),
    ] = None,
) -> None:
    """Round robin among all bots: Elo ratings with 95% error bars, table and PNG."""

    def run() -> None:
        from rich.console import Console

        from cosmic_curriculum.ladder import run_ladder
        from cosmic_curriculum.tables import ladder_table

        doc = run_ladder(bots_dir, pairs=pairs, out_dir=out_dir, seed=seed, game_from=game_from)
        console = Console()
        console.print(ladder_table(doc, pairs))
        for skipped in doc["skipped"]:
            console.print(f"skipped: {skipped['reason']}", highlight=False)
        files = doc["files"]
        console.print(f"wrote {files['table']}, {files['png']}, {files['json']}")

    guarded(run)
