"""Errors the CLI turns into a one-line message and an exit code (never a traceback)."""

from __future__ import annotations


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


class BotError(CurriculumError):
    """A bot JSON file is missing or malformed."""


class TrainerError(CurriculumError):
    """The training command failed or broke its contract."""


class EvaluationError(CurriculumError):
    """The evaluation failed or broke its contract."""


class GitError(CurriculumError):
    """The git repository is in a state we must not touch."""


class LockError(CurriculumError):
    """Another run holds the workspace."""


class BlockedError(CurriculumError):
    """A stage failed too often and waits for a human decision."""
