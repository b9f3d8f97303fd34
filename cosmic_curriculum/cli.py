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
