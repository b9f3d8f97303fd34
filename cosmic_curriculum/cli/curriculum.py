"""`run`, `status`, `attach`, `init` (the work: curriculum, report, entry, workspace)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cosmic_curriculum.cli.app import OneLineUsageCommand, app, guarded
from cosmic_curriculum.cli.seconds import seconds_callback
from cosmic_curriculum.defaults import (
    BARE_PRESET,
    DECISION_TICKS,
    N_PARALLEL,
    PRESET,
    STAGE_TIMESTEPS,
    WATCH_INTERVAL_SECONDS,
)
from cosmic_curriculum.status.show import show_status
from cosmic_curriculum.system.python import python_argv


@app.command("run", cls=OneLineUsageCommand)
def run_command(
    timesteps: Annotated[
        int | None,
        typer.Option(
            min=1,
            help=f"Timesteps per attempt [default: stages.toml [defaults], {STAGE_TIMESTEPS:,}].",
        ),
    ] = None,
    n_parallel: Annotated[
        int | None,
        typer.Option(
            min=1, help=f"Parallel games for the trainer [default: stages.toml, {N_PARALLEL}]."
        ),
    ] = None,
    speedup: Annotated[
        int | None,
        typer.Option(
            min=1, help=f"Physics ticks per decision [default: stages.toml, {DECISION_TICKS}]."
        ),
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
            help="Stop a training attempt after this many seconds (an attempt error).",
            callback=seconds_callback("attempt"),
        ),
    ] = None,
) -> None:
    """Run the curriculum, or resume it exactly where it stopped."""

    def go() -> None:
        from cosmic_curriculum.curriculum.context import RunOptions
        from cosmic_curriculum.curriculum.loop import check_run, run_curriculum
        from cosmic_curriculum.workspace.locate import import_own_modules

        import_own_modules(workspace)

        options = RunOptions(
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
        )
        if not detach:
            from cosmic_curriculum.curriculum.reporter import ConsoleReporter

            run_curriculum(options, ConsoleReporter())
            return
        from cosmic_curriculum.launchers.tmux import start_detached

        argv = python_argv("-m", "cosmic_curriculum", "run")
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
        # The detached run's errors would only reach logs/curriculum.log: check first.
        result = start_detached(workspace, argv, check=lambda: check_run(options))
        sys.stdout.write(result.message + "\n")

    guarded(go)


@app.command("status", cls=OneLineUsageCommand)
def status_command(
    workspace: Annotated[Path, typer.Option(help="Workspace directory.")] = Path("."),
    config: Annotated[
        Path | None, typer.Option(help="Curriculum file [default: WORKSPACE/stages.toml].")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
    watch: Annotated[
        bool, typer.Option("--watch", help="Redraw in place every --interval seconds; Ctrl-C.")
    ] = False,
    interval: Annotated[
        float,
        typer.Option(
            metavar="SECONDS",
            help="Seconds between redraws.",
            callback=seconds_callback("interval"),
        ),
    ] = WATCH_INTERVAL_SECONDS,
    count: Annotated[int | None, typer.Option(min=1, hidden=True)] = None,  # tests: N frames
) -> None:
    """Show stages, attempts, evaluations, decisions, the live run and what to run next.

    Exits 0, or 2 when stages.toml is missing or invalid (after showing what the state
    says and the config error in its "next" line); a state that cannot be read is a
    one-line error.
    """
    code = guarded(lambda: show_status(workspace, config, as_json, watch, interval, count))
    if code:
        raise typer.Exit(code)


@app.command("attach", cls=OneLineUsageCommand)
def attach_command(
    workspace: Annotated[Path, typer.Option(help="Workspace directory.")] = Path("."),
) -> None:
    """Attach this terminal to the run's tmux session (detach again with Ctrl-b d)."""
    import os

    from cosmic_curriculum.launchers.tmux import attach_argv

    argv = guarded(lambda: attach_argv(workspace))
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}  # also from inside tmux
    sys.stdout.flush()
    os.execvpe(argv[0], argv, env)


@app.command("init", cls=OneLineUsageCommand)
def init_command(
    workspace: Annotated[Path, typer.Argument(help="Directory to create (empty or new).")],
    preset: Annotated[
        str,
        typer.Option(
            help="Curriculum preset: default, quick (the arena), bare, doorkey (MiniGrid), "
            "connect4 (PettingZoo)."
        ),
    ] = PRESET,
    bare: Annotated[
        bool,
        typer.Option(
            "--bare",
            help="No arena defaults, bots or trainer: for your own environment, trainer "
            "and evaluator (docs/ENVIRONMENTS.md).",
        ),
    ] = False,
) -> None:
    """Create a fresh workspace: stages.toml, state, git; the arena's presets add the
    rookie and veteran bots and the training script."""

    def go() -> None:
        from cosmic_curriculum.errors import ConfigError
        from cosmic_curriculum.workspace.init import init_workspace

        if bare and preset != PRESET:
            raise ConfigError(f"--bare and --preset {preset} exclude each other; choose one")
        result = init_workspace(workspace, BARE_PRESET if bare else preset)
        verb = "updated" if result.already else "created"
        made = ", ".join(result.created) or "nothing new"
        sys.stdout.write(f"{verb} workspace {result.workspace}: {made}\n")
        for note in result.notes:
            sys.stdout.write(f"note: {note}\n")
        edit = f"edit {result.workspace / 'stages.toml'}, then " if bare else ""
        sys.stdout.write(f"next: {edit}cd {result.workspace} && cosmic-curriculum run --detach\n")

    guarded(go)
