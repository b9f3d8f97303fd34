"""The Typer app, its `gate` group, and the one-line error handling every command shares."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import typer

# Typer (0.26 on) vendors Click and raises its own copy's UsageError: public `click`'s
# would never match, so this is the one class to catch (pyproject's floor says so).
from typer._click.exceptions import UsageError
from typer.core import TyperCommand, TyperGroup

from cosmic_curriculum.defaults import LOCK_WAIT_SECONDS
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


@app.callback()
def _every_command() -> None:
    # A game or env module the user keeps in the workspace imports (after installed ones).
    from cosmic_curriculum.workspace.locate import import_own_modules

    with contextlib.suppress(OSError):  # a working directory deleted under the shell
        import_own_modules(Path.cwd())


T = TypeVar("T")


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print a one-line error on stderr and return the Exit to raise (control characters
    a program or a file put in the message shown escaped, never acted on)."""
    from cosmic_curriculum.system.terminal import printable

    sys.stderr.write(f"error: {printable(message)}\n")
    return typer.Exit(code)


def guarded(fn: Callable[[], T]) -> T:
    """Run ``fn``; a CurriculumError becomes a one-line message and its exit code, and so
    does an OSError no check foresaw (disk full, a file vanishing): never a traceback."""
    try:
        return fn()
    except CurriculumError as exc:
        raise fail(str(exc), exc.exit_code) from None
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise fail(f"{where}{exc.strerror or exc}; fix it and re-run", 1) from None


def _inherited_lock(directory: Path) -> bool:
    """Whether this process already holds ``directory``'s workspace lock through a
    descriptor it inherited: `run` passes its lock to an `evaluation_command`, which may be
    `cosmic-curriculum evaluate` itself and must not wait for its own parent."""
    from cosmic_curriculum.workspace.layout import LOCK_FILE

    try:
        lock = os.stat(Path(directory) / LOCK_FILE)
        fds = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) == (lock.st_dev, lock.st_ino):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ours already: succeeds
                return True
    return False


@contextlib.contextmanager
def workspace_lock(directory: Path, wait: float = LOCK_WAIT_SECONDS) -> Iterator[None]:
    """Hold ``directory``'s workspace lock (waiting up to ``wait`` s) around a command that
    writes there, so it never races `run` on the same files. Only the CLI takes it: `run`
    calls the evaluator in-process while it holds the lock itself."""
    from cosmic_curriculum.workspace.lock import WorkspaceLock

    if _inherited_lock(directory):
        yield
        return
    lock = WorkspaceLock(Path(directory)).acquire(wait=wait)
    try:
        yield
    finally:
        lock.release()


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
