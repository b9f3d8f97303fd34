"""`export-onnx` and `history export`: bots and results in formats other tools read
(the work: :mod:`cosmic_curriculum.bots.onnx_model` and
:mod:`cosmic_curriculum.reports.history_table`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cosmic_curriculum.cli.app import app, guarded
from cosmic_curriculum.defaults import HISTORY_EXPORT_FORMAT

history_app = typer.Typer(
    help="The evaluation history as data: export it for plots and notebooks.",
    no_args_is_help=True,
)
app.add_typer(history_app, name="history")


@app.command("export-onnx")
def export_onnx_command(
    bot: Annotated[Path, typer.Argument(help="MLP bot or env bot JSON to convert.")],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="ONNX file to write [default: BOT with .onnx]."),
    ] = None,
) -> None:
    """Convert a bot file to ONNX for games: an MLP bot (obs [batch, 43] -> action
    [batch, 6]) or an env bot (its greedy action; docs/BOT_FORMAT.md)."""

    def run() -> None:
        from cosmic_curriculum.bots.onnx_model import write_onnx
        from cosmic_curriculum.envs.policy import is_env_bot_file
        from cosmic_curriculum.system.fsio import without_surrogates
        from cosmic_curriculum.workspace.outputs import write_output

        def write(path: Path, data: bytes) -> None:
            write_output(path, data, "--out")

        if is_env_bot_file(bot):
            from cosmic_curriculum.envs.onnx_twin import write_env_twin

            written = write_env_twin(bot, out, write=write)
        else:
            written = write_onnx(bot, out, write=write)
        sys.stdout.write(f"wrote {without_surrogates(str(written))}\n")  # any file name

    guarded(run)


@history_app.command("export")
def history_export_command(
    fmt: Annotated[
        str, typer.Option("--format", help="csv, jsonl or parquet.")
    ] = HISTORY_EXPORT_FORMAT,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="File to write [default: stdout; parquet needs one]."),
    ] = None,
    history_path: Annotated[
        Path, typer.Option("--history", help="Evaluation history to read.")
    ] = Path("eval_history.json"),
) -> None:
    """One row per evaluation: time, stage, experiment, counts, score, gap, Elo, verdict."""

    def run() -> None:
        from cosmic_curriculum.reports.history_table import export_history

        count, text = export_history(history_path, fmt, out)
        if text is not None:
            sys.stdout.write(text)
        else:
            sys.stderr.write(f"wrote {count} rows to {out}\n")

    guarded(run)
