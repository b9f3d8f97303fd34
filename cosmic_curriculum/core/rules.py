"""The curriculum's rules that are not transitions: pure functions of the state, the config
and facts the shell gathered (files, records, times), each with a table-driven test.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from cosmic_curriculum.defaults import NOTIFY_REFUSED_EXIT
from cosmic_curriculum.workspace.config import CurriculumConfig, NotifyEvent
from cosmic_curriculum.workspace.layout import experiment_name
from cosmic_curriculum.workspace.state import Attempt, Candidate, CurriculumState

SELECTION_KEY = "selection"  # in a record: "candidate" (ranks) or "fresh" (decides)
CANDIDATE_KEY = "candidate_k"  # in a record: which candidate it evaluated


def parse_time(stamp: str) -> float:
    """An ISO-8601 time as a POSIX timestamp; a malformed one is infinitely late: a
    training "started" then finds no record after it, and a record "written" then counts
    as after any start (adopted rather than evaluated twice)."""
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return float("inf")


def own_record(
    records: list[dict[str, Any]], experiment: str, since: str, selection: str | None = None
) -> dict[str, Any] | None:
    """The last record of ``experiment`` written after ``since`` (its training's start:
    not a record of a curriculum started over) with this ``selection`` tag (None: an
    attempt without candidates, whose records carry none)."""
    started = parse_time(since)
    for record in reversed(records):
        if (
            record.get("curriculum_experiment") == experiment
            and record.get(SELECTION_KEY) == selection
            and "id" in record
            and parse_time(str(record.get("created_at", ""))) >= started - 1
        ):
            return record
    return None


def adopts_appended_record(
    has_evaluation_command: bool, history_before: int | None, n_records: int
) -> bool:
    """Is the history's last record one an evaluation command appended for the attempt
    before a crash (it cannot tag its records: the count saved before it ran tells)?"""
    return has_evaluation_command and history_before is not None and n_records > history_before


def skipped_experiment(state: CurriculumState, config: CurriculumConfig) -> str:
    """The attempt `--skip-to-next-stage` accepts: the blocked stage's last one (with
    candidates, the one that attempt chose)."""
    i = state.stage_index
    return attempt_experiment(state, config, i, max(0, state.attempt - 1))


def attempt_experiment(
    state: CurriculumState, config: CurriculumConfig, stage_index: int, attempt: int
) -> str:
    """The experiment a decided attempt stands for: the candidate it chose when it had
    candidates (its log entry says which), else its name by the naming scheme."""
    for entry in reversed(state.stage_log(stage_index)):
        if entry.attempt == attempt and entry.override is None and entry.candidates:
            return entry.experiment
    return experiment_name(stage_index, config.stages[stage_index].name, attempt)


def evaluation_seed(experiment: str) -> int:
    """The built-in evaluator's seed for ``experiment``: from its name, so a resumed
    evaluation plays the same episodes."""
    return int(hashlib.sha256(experiment.encode()).hexdigest()[:8], 16)


def fresh_seed(flight: Attempt) -> int:
    """A seed none of the candidates' evaluations used: the fresh evaluation plays other
    kickoffs than the one that chose it."""
    used = {evaluation_seed(c.experiment) for c in flight.candidates or []}
    seed = evaluation_seed(f"{flight.experiment}:fresh")
    while seed in used:
        seed += 1
    return seed


# --------------------------------------------------------------------------- overrides

OverrideFlag = Literal["--force-retry", "--skip-to-next-stage"]
OverrideRuling = Literal["apply", "none", "both", "reason_alone", "blocked", "not_blocked"]


def may_override(status: str) -> bool:
    """A human decision (`--force-retry`, `--skip-to-next-stage`) applies only to a
    blocked curriculum."""
    return status == "blocked"


def override_ruling(
    status: str, force_retry: bool, skip: bool, has_reason: bool
) -> tuple[OverrideRuling, OverrideFlag | None]:
    """What `run`'s override options mean for a curriculum in ``status``: ``apply`` the
    flag; ``none`` (nothing asked, the run goes on); or a refusal: ``both`` flags (they
    exclude each other), a ``reason_alone`` (it is recorded with an override), ``blocked``
    without an override (a human must decide), an override while ``not_blocked``."""
    if force_retry and skip:
        return "both", None
    flag: OverrideFlag | None = (
        "--force-retry" if force_retry else "--skip-to-next-stage" if skip else None
    )
    if flag is None:
        if has_reason:
            return "reason_alone", None
        return ("blocked", None) if may_override(status) else ("none", None)
    return ("apply", flag) if may_override(status) else ("not_blocked", flag)


# --------------------------------------------------------------------------- resume

ResumeSource = Literal["previous_attempt", "seed", "previous_pass", "scratch"]


def resume_choice(
    state: CurriculumState,
    config: CurriculumConfig,
    stage_index: int,
    attempt: int,
    *,
    has_final: Callable[[str], bool],
    seed_given: bool,
) -> tuple[ResumeSource, str | None]:
    """Where a new attempt's training starts, and the experiment whose final checkpoint
    it continues: a retry continues the previous attempt (with candidates: the one it
    chose); stage 1's first attempt starts from ``--seed-checkpoint`` when given; a later
    stage continues the previous stage's passing experiment; else from scratch.
    ``has_final(experiment)``: does that experiment's final checkpoint exist."""
    if attempt >= 1:
        previous = attempt_experiment(state, config, stage_index, attempt - 1)
        if has_final(previous):
            return "previous_attempt", previous
    if stage_index == 0:
        return ("seed", None) if attempt == 0 and seed_given else ("scratch", None)
    passed = state.passing_entry(stage_index - 1)
    if passed is None:
        return "previous_pass", None  # the shell refuses a state that lost its pass
    return (
        ("previous_pass", passed.experiment)
        if has_final(passed.experiment)
        else (
            "scratch",
            None,
        )
    )


def decision_news(state: CurriculumState) -> NotifyEvent:
    """What a decision just taken tells the notifier: ``blocked`` or ``done`` when the
    curriculum stops, else whether the attempt ``passed`` or ``failed`` (and is retried)."""
    if state.status == "blocked":
        return "blocked"
    if state.status == "done":
        return "done"
    return "passed" if state.log[-1].decision == "pass" else "failed"


def reference_change(flight: Attempt, accepted: bool) -> Literal["apply", "replay", "keep"]:
    """What becomes of the attempt in flight when its stage's reference changed since it
    started: ``apply`` (nothing of it was evaluated: it plays the reference configured
    now), ``replay`` (``--accept-config-change`` given, candidates already evaluated but
    none chosen and judged: they are evaluated again against the new one, their records
    stay in the history), or ``keep`` (it was evaluated, or an evaluation is under way
    whose record against the old one may still come and be adopted)."""
    if flight.phase not in ("training", "trained"):
        return "keep"
    holders: list[Attempt | Candidate] = [flight, *(flight.candidates or [])]
    if any(h.history_before is not None or h.eval_launched_at is not None for h in holders):
        return "keep"
    if all(h.eval_id is None for h in holders):
        return "apply"
    return "replay" if accepted and flight.eval_id is None else "keep"


NotifierOutcome = Literal["sent", "refused", "failed"]


def notifier_outcome(exit_code: int | None) -> NotifierOutcome:
    """What a notifier's exit says of one note: 0 ``sent``; ``NOTIFY_REFUSED_EXIT``
    ``refused`` (for good: dropped, the next notes go on); anything else, or no exit at all
    (``None``: could not start, timed out) ``failed`` (for now: retried, boundedly)."""
    if exit_code == 0:
        return "sent"
    if exit_code == NOTIFY_REFUSED_EXIT:
        return "refused"
    return "failed"


def continuation_problem(done: int, limit: int, reason: str) -> str | None:
    """A training ``reason`` (a time limit, a preemption) ended after ``done``
    continuations: None to continue it once more, else the attempt's error, which names
    the setting, its value and the fix (``limit``: ``[launcher] max_continuations``)."""
    if done < limit:
        return None
    return (
        f"was ended by {reason} after {done} continuation{'' if done == 1 else 's'}: "
        f"[launcher] max_continuations = {limit} allows no more; raise it in stages.toml "
        "(or give each job more time) and run again to continue from the latest step "
        "checkpoint"
    )
