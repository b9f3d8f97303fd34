"""What the user (or the next `run`) does next: one pure answer from the state, which
`status`, REPORT.md, the notifier and the blocked message each render.

:func:`next_action` decides; :func:`describe` renders it as the one line `status` and the
notifier show, given how to spell a `run` command from where the user is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple

from cosmic_curriculum.workspace.layout import experiment_name

if TYPE_CHECKING:  # pydantic: `status` imports this module on its light path too
    from cosmic_curriculum.workspace.state import CurriculumState

NextKind = Literal["fix_config", "finish", "done", "review", "fix_error", "resume", "start"]
# How a command's --reason is shown to the user, to fill in.
REASON_HINT = '--reason "..."'


class NextAction(NamedTuple):
    """``kind``: ``fix_config`` (stages.toml is bad), ``finish`` (a decision is saved but
    not committed), ``done``, ``review`` (blocked: force a retry or skip), ``fix_error``
    (the attempt in flight failed: fix it, `run` retries), ``resume`` (an attempt in
    flight), ``start`` (the next attempt). A named tuple: dataclasses imports inspect,
    which `status` cannot afford."""

    kind: NextKind
    stage_index: int
    stage_name: str | None = None
    experiment: str | None = None  # the attempt to finish, retry, resume or start
    detail: str | None = None  # the config error, the decision, or the attempt's error


def next_action(
    state: CurriculumState,
    stage_names: Sequence[str],
    config_error: str | None = None,
    *,
    in_commit: bool = False,
) -> NextAction:
    """``in_commit``: the caller writes a file of the commit that finishes the decided
    attempt (REPORT.md), so that commit is not what comes next."""
    i = state.stage_index
    name = stage_names[i] if i < len(stage_names) else None
    flight = state.in_flight
    if config_error:
        return NextAction("fix_config", i, name, detail=config_error)
    finished = flight is None or flight.phase == "committed"
    if flight is not None and flight.phase == "decided":
        if not in_commit:
            # A run stopped between deciding and committing: not finished until committed.
            return NextAction("finish", i, name, flight.experiment, flight.decision)
        finished = True
    if state.status == "done":
        return NextAction("done", i, name)
    if state.status == "blocked":
        return NextAction("review", i, name)
    if flight is not None and not finished and flight.error:
        return NextAction("fix_error", i, name, flight.experiment, flight.error)
    upcoming = experiment_name(i, name, state.attempt) if name is not None else None
    return NextAction("start" if finished else "resume", i, name, upcoming)


def review_file(stage_name: str | None) -> str:
    """The review of a blocked stage, relative to the workspace."""
    return f"logs/review-{stage_name or ''}.md"


def describe(action: NextAction, command: Callable[..., str]) -> str:
    """``action`` as one line; ``command(*flags)`` spells `run` with ``flags``."""
    kind = action.kind
    if kind == "fix_config":
        return f"fix the config: {action.detail}"
    if kind == "finish":
        return (
            f"`{command()}` to finish {action.experiment}: its decision ({action.detail}) is "
            "saved but its review, curves and commit are pending"
        )
    if kind == "done":
        return "nothing: every stage passed"
    if kind == "review":
        return (
            f"review {review_file(action.stage_name)}, then "
            f"`{command('--force-retry', REASON_HINT)}` or "
            f"`{command('--skip-to-next-stage', REASON_HINT)}`"
        )
    if kind == "fix_error":
        return (
            f"fix the cause of the error of {action.experiment} ({action.detail}; see "
            f"logs/{action.experiment}.log), then `{command()}` retries it"
        )
    return f"`{command()}` to {kind} {action.experiment or '?'}"
