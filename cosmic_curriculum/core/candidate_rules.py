"""The rules that move an attempt's candidates (``candidates = K > 1``): each has its own
phase ``training → trained | failed``, then ``evaluated``; the best score is chosen (ties:
the lowest k). Registered in :mod:`.transitions`, which owns every other assignment."""

from __future__ import annotations

from cosmic_curriculum.core.decisions import record_score
from cosmic_curriculum.core.events import (
    CandidateChosen,
    CandidateEvaluated,
    CandidateFailed,
    CandidateLaunched,
    CandidateStarted,
    CandidateTrained,
)
from cosmic_curriculum.core.phases import InvalidTransition, flight_of
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.state import Candidate, CandidatePhase, CurriculumState


def require_candidates_in(state: CurriculumState, phases: tuple[str, ...], what: str) -> None:
    """An attempt with candidates moves on only once every candidate is in ``phases``."""
    waiting = [c.k for c in flight_of(state).candidates or [] if c.phase not in phases]
    if waiting:
        raise InvalidTransition(f"{what} while candidates {waiting} are not {'/'.join(phases)}")


def candidate_in(state: CurriculumState, k: int, phases: tuple[CandidatePhase, ...]) -> Candidate:
    for c in flight_of(state).candidates or []:
        if c.k == k:
            if c.phase not in phases:
                raise InvalidTransition(f"candidate {k} in phase {c.phase!r}, not {phases}")
            return c
    raise InvalidTransition(f"the attempt in flight has no candidate {k}")


def candidate_launched(
    state: CurriculumState, config: CurriculumConfig, e: CandidateLaunched
) -> None:
    c = candidate_in(state, e.k, ("training", "failed"))
    c.phase = "training"
    c.error = None
    c.started_at = e.now
    c.launched = True
    c.last_resume = e.resume
    flight = flight_of(state)
    flight.error = None
    flight.interrupted = False


def candidate_started(
    state: CurriculumState, config: CurriculumConfig, e: CandidateStarted
) -> None:
    c = candidate_in(state, e.k, ("training",))
    c.pgid, c.pid, c.pid_start_time = e.pgid, e.pid, e.start_time


def candidate_trained(
    state: CurriculumState, config: CurriculumConfig, e: CandidateTrained
) -> None:
    c = candidate_in(state, e.k, ("training",))
    c.phase = "trained"
    c.pgid = c.pid = c.pid_start_time = None
    if e.last_progress is not None:
        c.last_progress = e.last_progress


def candidate_failed(state: CurriculumState, config: CurriculumConfig, e: CandidateFailed) -> None:
    c = candidate_in(state, e.k, ("training",))
    c.phase = "failed"
    c.error = e.problem
    c.pgid = c.pid = c.pid_start_time = None
    if e.last_progress is not None:
        c.last_progress = e.last_progress


def candidate_evaluated(
    state: CurriculumState, config: CurriculumConfig, e: CandidateEvaluated
) -> None:
    c = candidate_in(state, e.k, ("trained",))
    c.phase = "evaluated"
    c.eval_id = str(e.record["id"])
    c.score = record_score(e.record)
    c.history_before = c.eval_launched_at = None
    flight_of(state).error = None


def candidate_chosen(state: CurriculumState, config: CurriculumConfig, e: CandidateChosen) -> None:
    flight = flight_of(state)
    if not flight.candidates or flight.chosen is not None:
        raise InvalidTransition("CandidateChosen needs candidates not yet chosen among")
    require_candidates_in(state, ("evaluated",), "CandidateChosen")
    best = max(flight.candidates, key=lambda c: (c.score or 0.0, -c.k))  # ties: lowest k
    flight.chosen = best.k
    flight.experiment = best.experiment
