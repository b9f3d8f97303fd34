"""The Typer app, its `gate` group, and the one-line error handling every command shares."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from typer._click.exceptions import UsageError
from typer.core import TyperCommand, TyperGroup

from cosmic_curriculum.errors import CurriculumError


class HumanMetavarGroup(TyperGroup):
    """Every option's value is shown by its name (`--rule RULE`), never by a Python type
    name (`<list[str]>`, `<path>`, `<int range>`: what Typer prints otherwise)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _name_metavars(self)


def _name_metavars(group: Any) -> None:
    for command in group.commands.values():
        if hasattr(command, "commands"):
            _name_metavars(command)
        for param in command.params:
            if param.param_type_name == "option" and not param.is_flag and not param.metavar:
                param.metavar = param.name.upper()


app = typer.Typer(
    name="cosmic-curriculum",
    cls=HumanMetavarGroup,
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


gate_app = typer.Typer(
    help="The regression gate: simulate its error rates and episode counts.",
    no_args_is_help=True,
)
app.add_typer(gate_app, name="gate")


class OneLineUsageCommand(TyperCommand):
    """A command whose usage errors (unknown or malformed flags) are one line, exit 2.

    The training command is called by scripts and the curriculum, which log stderr; a
    multi-line help box would bury the one fact that matters.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except UsageError as exc:
            raise fail(f"{ctx.command_path}: {exc.format_message()}", 2) from None
