"""Errors the CLI turns into a one-line message and an exit code (never a traceback)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic is not imported for the error classes alone
    from pydantic import ValidationError


class CurriculumError(Exception):
    """A problem the user can fix. The message names the file/setting, its value and the fix."""

    exit_code: int = 1

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class ConfigError(CurriculumError):
    """`stages.toml` (or a command-line option) is invalid."""

    exit_code = 2


class StateError(CurriculumError):
    """`curriculum_state.json` or `eval_history.json` is unreadable or inconsistent."""


class DamagedFileError(StateError):
    """One of the workspace's own files is unreadable or inconsistent: ``fault`` says how,
    and the way back is its last committed copy."""

    def __init__(self, path: str | os.PathLike[str], fault: str) -> None:
        self.path, self.fault = Path(path), fault
        super().__init__(f"{path}: {fault}; restore the last good copy with `{restore(self.path)}`")


def restore(path: Path) -> str:
    """The git command that writes ``path``'s committed copy over it: its path from the
    root of the repository holding it (a file in a folder, e.g. bots/x.json, included),
    run in that repository unless it is the working directory."""
    try:
        full = path.resolve()
        root = next((d for d in full.parents if (d / ".git").exists()), None)
        here = root is not None and root == Path.cwd().resolve()
    except OSError:  # an unreadable folder on the way, a deleted working directory
        root, here = None, False
    if root is None:
        return f"git show HEAD:{path.name} > {path.name}"
    inside = shlex.quote(full.relative_to(root).as_posix())
    if here:
        return f"git show HEAD:{inside} > {inside}"
    return f"git -C {shlex.quote(str(root))} show HEAD:{inside} > {shlex.quote(str(path))}"


class BotError(CurriculumError):
    """A bot JSON file is missing or malformed."""


class TrainerError(CurriculumError):
    """The training command failed or broke its contract."""


class EvaluationError(CurriculumError):
    """The evaluation failed or broke its contract."""


class EvaluationFailedError(EvaluationError):
    """An attempt's evaluation that wrote no record: the training is kept, and `run`
    (``command``) evaluates again once ``fault`` is fixed. ``subject`` names what failed
    (the experiment, or the file or setting at fault); ``tail`` quotes its log."""

    def __init__(self, subject: str, fault: str, command: str, tail: str = "") -> None:
        self.subject, self.fault, self.command, self.tail = subject, fault, command, tail
        message = (
            f"{subject}: {fault}; fix it and run `{command}` to evaluate again (training is kept)"
        )
        super().__init__(message + (f"; {tail}" if tail else ""))


class GitError(CurriculumError):
    """The git repository is in a state we must not touch."""


class UncommittedError(GitError):
    """The run's results are on disk but git could not commit them (hook, gpg, ...)."""

    exit_code = 3


class LockError(CurriculumError):
    """Another run holds the workspace."""


class BlockedError(CurriculumError):
    """A stage failed too often and waits for a human decision."""


def dotted(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a key path: ``stages[1].gate.rule``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "settings"


def option_name(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as the command-line option it came from: ``--n-steps``."""
    return "--" + "-".join(str(p) for p in loc).replace("_", "-")


def describe_validation(
    exc: ValidationError,
    name: Callable[[tuple[Any, ...]], str] = dotted,
    first_only: bool = False,
) -> str:
    """pydantic's errors as one line: each bad setting (named by ``name``), its value, why."""
    parts: list[str] = []
    for err in exc.errors()[:1] if first_only else exc.errors():
        loc = tuple(err.get("loc", ()))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if err.get("type") == "extra_forbidden":
            parts.append(f"unknown setting {name(loc)!r}")
        elif not loc:
            parts.append(msg)
        else:
            parts.append(f"{name(loc)}={err.get('input')!r}: {msg}")
    return "; ".join(parts)


class CompareError(CurriculumError):
    """`compare` cannot go on: an arm that did not train, or a sub-workspace that is not
    what the workspace's stages.toml derives."""
