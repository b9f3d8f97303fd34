"""`compare`: the curriculum against its stages alone at the same budget (the work:
:mod:`cosmic_curriculum.compare.study`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cosmic_curriculum.cli.app import OneLineUsageCommand, app, fail, guarded
from cosmic_curriculum.defaults import (
    COMPARE_ARMS,
    COMPARE_CHECKPOINT_EPISODES,
    COMPARE_DIR,
    COMPARE_FINAL_EPISODES,
    COMPARE_POINTS,
    COMPARE_SEEDS,
)


def _seeds(text: str, extra: list[str]) -> tuple[int, ...]:
    """``--seeds 0 1 2`` (the values after the first come as extra arguments), ``0,1,2``
    or ``"0 1 2"``."""
    parts = [p for chunk in [text, *extra] for p in chunk.replace(",", " ").split()]
    try:
        return tuple(int(p) for p in parts)
    except ValueError:
        raise fail(
            f"--seeds {' '.join(parts)}: seeds are whole numbers, e.g. --seeds 0 1 2", 2
        ) from None


@app.command(
    "compare",
    cls=OneLineUsageCommand,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": False},
)
def compare_command(
    ctx: typer.Context,
    arms: Annotated[
        str,
        typer.Option(
            help="Arms, comma-separated: curriculum (the stages as configured, gates "
            "included), last-stage (the last stage alone from scratch), stage:NAME (stage "
            "NAME alone); each trains the curriculum's total timesteps."
        ),
    ] = ",".join(COMPARE_ARMS),
    seeds: Annotated[
        str,
        typer.Option(help="Trainer seeds of every arm: --seeds 0 1 2 (or 0,1,2)."),
    ] = " ".join(map(str, COMPARE_SEEDS)),
    json_out: Annotated[
        Path | None,
        typer.Option(
            "--json",
            metavar="FILE",
            help=f"Also write the study's JSON here [always: {COMPARE_DIR}/compare.json].",
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help=f"Also write the plot (PNG) here [always: {COMPARE_DIR}/compare.png].",
        ),
    ] = None,
    target: Annotated[
        float | None,
        typer.Option(
            metavar="X",
            help="The value whose first crossing is timed [default: the last stage's "
            "threshold target, when its gate has one].",
        ),
    ] = None,
    points: Annotated[
        int, typer.Option(min=1, max=1000, help="Checkpoints kept per arm for the curve.")
    ] = COMPARE_POINTS,
    checkpoint_episodes: Annotated[
        int, typer.Option(min=1, max=100_000, help="Last-stage episodes per checkpoint.")
    ] = COMPARE_CHECKPOINT_EPISODES,
    final_episodes: Annotated[
        int, typer.Option(min=1, max=100_000, help="Last-stage episodes per final bot.")
    ] = COMPARE_FINAL_EPISODES,
    workspace: Annotated[Path, typer.Option(help="Workspace directory.")] = Path("."),
) -> None:
    """Does the curriculum pay? Train each arm with each seed at the curriculum's total
    timesteps (each in its own sub-workspace under compare/, trained and resumed by
    `run`), measure every checkpoint on the last stage, and print a table and a verdict
    that says what the seeds can show. An interrupted compare resumes; a finished one
    only prints."""
    stray = [a for a in ctx.args if not a.lstrip("-").isdigit() or a.startswith("--")]
    if stray:
        raise fail(
            f"compare: unexpected argument {stray[0]!r} (--seeds takes whole numbers: "
            "--seeds 0 1 2); see --help",
            2,
        )
    chosen = _seeds(seeds, list(ctx.args))

    def go() -> None:
        from cosmic_curriculum.compare.study import CompareOptions, run_compare
        from cosmic_curriculum.system.output_files import check_output_file
        from cosmic_curriculum.workspace.locate import import_own_modules

        import_own_modules(workspace)

        for path, option in ((json_out, "--json"), (plot, "--plot")):
            if path is not None:
                check_output_file(path, option)
        opts = CompareOptions(
            workspace=workspace,
            arms=arms,
            seeds=chosen,
            target=target,
            points=points,
            checkpoint_episodes=checkpoint_episodes,
            final_episodes=final_episodes,
            json_out=json_out,
            plot=plot,
        )

        def say(line: str) -> None:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

        for line in run_compare(opts, say, _refresh_report):
            say(line)

    guarded(go)


def _refresh_report(ws: Path) -> str:
    """REPORT.md of the workspace, which now names the study; its relative path."""
    from cosmic_curriculum.reports.markdown import write_report
    from cosmic_curriculum.workspace.config_file import load_config
    from cosmic_curriculum.workspace.layout import Layout
    from cosmic_curriculum.workspace.state_file import load_state

    layout = Layout(ws.resolve())
    write_report(layout, load_state(layout.state), load_config(layout.config))
    return layout.rel(layout.report)
