"""`report`: the curriculum's report as one self-contained HTML page (the work: report_md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cosmic_curriculum.cli.app import (
    LOCK_WAIT_SECONDS,
    OneLineUsageCommand,
    app,
    guarded,
    workspace_lock,
)
from cosmic_curriculum.cli.seconds import seconds_callback
from cosmic_curriculum.workspace.locate import workspace_of

LOCK_WAIT_HELP = (
    "Seconds to wait for another process holding the workspace the page is written to "
    "(a `run`, an `evaluate`) before giving up with an error."
)


@app.command("report", cls=OneLineUsageCommand)
def report_command(
    workspace: Annotated[Path, typer.Option(help="Workspace directory.")] = Path("."),
    config: Annotated[
        Path | None, typer.Option(help="Curriculum file [default: WORKSPACE/stages.toml].")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="HTML file to write [default: WORKSPACE/REPORT.html].")
    ] = None,
    open_page: Annotated[
        bool, typer.Option("--open", help="Open the page in the default web browser.")
    ] = False,
    lock_wait: Annotated[
        float, typer.Option(help=LOCK_WAIT_HELP, callback=seconds_callback("lock_wait"))
    ] = LOCK_WAIT_SECONDS,
) -> None:
    """Write REPORT.md's content as one HTML page (pictures inline) for a browser.

    When the page lies in a workspace (by default it does: WORKSPACE/REPORT.html), the
    report holds that workspace's lock while it reads and writes, like every command that
    writes there.
    """

    def go() -> None:
        import contextlib

        from cosmic_curriculum.reports.markdown import html_report
        from cosmic_curriculum.system.fsio import without_surrogates
        from cosmic_curriculum.workspace.layout import Layout
        from cosmic_curriculum.workspace.outputs import check_output, write_output

        target = out or Layout(workspace.resolve()).report_html
        check_output(target, "--out")
        holder = workspace_of(target.parent)
        with workspace_lock(holder, lock_wait) if holder else contextlib.nullcontext():
            write_output(target, html_report(workspace, config), "--out")
        sys.stdout.write(f"report: {without_surrogates(str(target))}\n")
        if open_page:
            import webbrowser

            # webbrowser says False when no browser could be started (none installed, no
            # display, BROWSER naming a program that failed): say so rather than nothing.
            if not webbrowser.open(target.resolve().as_uri()):
                sys.stderr.write(
                    f"warning: --open: no web browser could be started; open {target} "
                    "yourself, or name one in the BROWSER environment variable\n"
                )

    guarded(go)
