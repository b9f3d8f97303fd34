"""The rules that continue a training a time limit or preemption ended (``Launcher.ended_by``:
a job's TIMEOUT or PREEMPTED, a SIGTERM from outside): the same attempt is launched again
from its latest step checkpoint (the continuation contract: its timesteps count on), never
a retry and never an attempt error, up to ``[launcher] max_continuations``, each one on
record. Registered in :mod:`.transitions`."""

from __future__ import annotations

from typing import Any

from cosmic_curriculum.core.candidate_rules import candidate_in
from cosmic_curriculum.core.events import CandidateContinued, TrainingContinued
from cosmic_curriculum.core.phases import InvalidTransition, flight_of
from cosmic_curriculum.core.rules import continuation_problem
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.state import Continuation, CurriculumState


def continuations_json(done: list[Continuation]) -> list[dict[str, Any]]:
    """Continuations as a log entry keeps them."""
    return [c.model_dump(mode="json", exclude_none=True) for c in done]


def _appended(
    done: list[Continuation] | None, config: CurriculumConfig, e: TrainingContinued
) -> list[Continuation]:
    limit = config.launcher.max_continuations
    if continuation_problem(len(done or []), limit, e.reason) is not None:
        raise InvalidTransition(f"a continuation beyond max_continuations = {limit}")
    new = Continuation(reason=e.reason, at=e.now, checkpoint=e.checkpoint, launch_id=e.launch_id)
    return [*(done or []), new]


def training_continued(
    state: CurriculumState, config: CurriculumConfig, e: TrainingContinued
) -> None:
    flight = flight_of(state)
    if flight.candidates:
        raise InvalidTransition("TrainingContinued on an attempt with candidates")
    flight.continuations = _appended(flight.continuations, config, e)
    # It is this attempt's next launch: what TrainingLaunched records, and no group yet.
    flight.error = None
    flight.interrupted = False
    flight.interrupted_by = None
    flight.started_at = e.now
    flight.launched = True
    flight.last_resume = e.checkpoint or flight.resume_from
    flight.pgid = flight.pid = flight.pid_start_time = None


def candidate_continued(
    state: CurriculumState, config: CurriculumConfig, e: CandidateContinued
) -> None:
    c = candidate_in(state, e.k, ("training",))
    step = TrainingContinued(e.reason, e.now, e.checkpoint, e.launch_id)
    c.continuations = _appended(c.continuations, config, step)
    c.error = None
    c.started_at = e.now
    c.launched = True
    c.last_resume = e.checkpoint or flight_of(state).resume_from
    c.pgid = c.pid = c.pid_start_time = None
    flight_of(state).error = None
