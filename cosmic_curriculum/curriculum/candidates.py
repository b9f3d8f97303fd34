"""Train and evaluate the K candidates of an attempt with ``candidates = K > 1``.

Training: every candidate not yet trained is launched (at most ``max_parallel`` at once) as
its own experiment ``<exp>-c{k}`` with the normal training argv plus ``--seed k``; each
launch is saved before it starts (a Ray job's id is derived from it) and each start,
finish and failure is saved as it happens, so a kill at any instant resumes every
candidate exactly: a running one is followed again (Ray) or its finished artefacts are
adopted, none is trained twice, none is lost. A candidate whose training fails lets the
others finish; then the attempt errors as a single training's would, and the next `run`
trains only the failed ones again.

Evaluation: each trained candidate plays the stage's reference (records tagged
``selection: "candidate"``), the best score is chosen (ties: the lowest k), and that one
is evaluated again with a fresh seed (``selection: "fresh"``). The gate judges the fresh
record alone: the best of K selection scores is biased upwards (the winner's curse), a
fresh evaluation is not. Both records stay in the history.
"""

from __future__ import annotations

from typing import Any

from cosmic_curriculum.core import transitions as t
from cosmic_curriculum.core.decisions import record_score
from cosmic_curriculum.core.rules import (
    CANDIDATE_KEY,
    SELECTION_KEY,
    continuation_problem,
    evaluation_seed,
    fresh_seed,
)
from cosmic_curriculum.curriculum.context import Run
from cosmic_curriculum.curriculum.launch import (
    adopt_orphans_result,
    continuing_text,
    indent,
    interrupted_continuation,
    outcome_problem,
    start_training,
    training_argv,
)
from cosmic_curriculum.errors import TrainerError
from cosmic_curriculum.launchers import Handle, RunOutcome, TrainerRecord, watch_many
from cosmic_curriculum.system import processes as runner
from cosmic_curriculum.system.clock import utc_now
from cosmic_curriculum.tracking import hooks as tracking
from cosmic_curriculum.workspace import history
from cosmic_curriculum.workspace.state import Candidate

# --------------------------------------------------------------------------- training


def train_candidates(run: Run) -> None:
    """``training`` → ``trained`` once every candidate trained; else a TrainerError after
    the others finished (their results are kept)."""
    attached, run.attached_candidates = run.attached_candidates, {}
    for k in attached:
        run.reporter.info(
            f"{run.candidate(k).experiment}: following its training, started by an earlier run"
        )
    queue: list[int] = []
    # Before any launch clears it: the SIGTERM that interrupted the last run continues each.
    by_sigterm = {
        c.k: reason
        for c in run.flight.candidates or []
        if (reason := interrupted_continuation(run.flight, c)) is not None
    }
    for c in run.flight.candidates or []:
        if c.phase in ("trained", "evaluated") or c.k in attached:
            continue
        if c.phase == "training" and adopt_orphans_result(
            run, c.experiment, c.started_at, launched=bool(c.launched)
        ):
            run.record(t.CandidateTrained(c.k), pause="trained")
            continue
        queue.append(c.k)
    k_max = len(run.flight.candidates or [])
    live = tracking.LiveDelivery(run)  # their scalars to MLflow/W&B while they train
    watch_many(
        run.launcher,
        queue,
        lambda k: _continue(run, k, by_sigterm[k]) if k in by_sigterm else _launch(run, k),
        lambda k, outcome: _finished(run, k, outcome),
        running=attached,
        cap=run.config.max_parallel(k_max),
        on_progress=lambda k, p: run.reporter.candidate_progress(run.flight, run.candidate(k), p),
        on_poll=live.poll,
        timeout=run.opts.attempt_timeout,
        grace=run.opts.grace_seconds,
    )
    live.stop()  # not after an interrupt: its delivery ends by its own alarm
    failed = [c for c in run.flight.candidates or [] if c.phase == "failed"]
    if failed:
        _candidates_error(run, failed)
    run.record(t.Trained(), pause="trained")
    run.reporter.training_finished(run.flight)


def _launch(run: Run, k: int) -> Handle | None:
    """Start candidate ``k``'s training; its launch is saved before it starts."""
    c = run.candidate(k)
    step = run.paths.latest_step(c.experiment)
    resume = run.rel(step) if step is not None else run.flight.resume_from
    argv = training_argv(run, run.flight, resume, experiment=c.experiment, seed=c.seed)
    run.record(t.CandidateLaunched(k, resume=resume, now=utc_now()), pause="launch")
    c = run.candidate(k)
    launch_id = run.paths.launch_id(c.experiment, c.started_at or run.flight.started_at)
    return _start(run, k, argv, launch_id)


def _start(run: Run, k: int, argv: list[str], launch_id: str) -> Handle | None:
    """Start candidate ``k``'s launch the state just recorded under ``launch_id``."""
    c = run.candidate(k)
    log_path = run.paths.log(c.experiment)

    def started(record: TrainerRecord) -> None:
        run.record(t.CandidateStarted(k, record.pgid, record.pid, record.start_time), "training")
        run.reporter.candidate_started(run.flight, run.candidate(k), argv, log_path)

    return start_training(
        run, c.experiment, argv, launch_id, failed=lambda p: _failed(run, k, p), started=started
    )


def _continue(
    run: Run, k: int, reason: str, progress: dict[str, Any] | None = None
) -> Handle | None:
    """Candidate ``k``'s training that ``reason`` ended, launched again from its latest
    step checkpoint (its own count of ``[launcher] max_continuations``; beyond it, it
    failed); the others go on."""
    c = run.candidate(k)
    done = len(c.continuations or [])
    problem = continuation_problem(done, run.config.launcher.max_continuations, reason)
    if problem is not None:
        _failed(run, k, f"training {problem}", progress)
        return None
    step = run.paths.latest_step(c.experiment)
    checkpoint = run.rel(step) if step is not None else None
    now = utc_now()
    launch_id = run.paths.launch_id(c.experiment, now, continuation=done + 1)
    run.record(t.CandidateContinued(k, reason, now, checkpoint, launch_id), pause="launch")
    run.reporter.info(continuing_text(run, c.experiment, reason, done + 1, checkpoint))
    c = run.candidate(k)
    argv = training_argv(run, run.flight, c.last_resume, experiment=c.experiment, seed=c.seed)
    return _start(run, k, argv, launch_id)


def _finished(run: Run, k: int, outcome: RunOutcome) -> Handle | None:
    if outcome.ended_by is not None:
        return _continue(run, k, outcome.ended_by, outcome.last_progress)
    problem = outcome_problem(run, outcome, run.candidate(k).experiment)
    if problem is not None:
        _failed(run, k, f"training command {problem}", outcome.last_progress)
        return None
    run.record(t.CandidateTrained(k, outcome.last_progress), pause="trained")
    run.reporter.candidate_finished(run.flight, run.candidate(k))
    return None


def _failed(run: Run, k: int, problem: str, progress: dict[str, Any] | None = None) -> None:
    run.record(t.CandidateFailed(k, problem, progress))
    run.reporter.candidate_finished(run.flight, run.candidate(k))


def _candidates_error(run: Run, failed: list[Candidate]) -> None:
    """The attempt's error names every failed candidate; their logs are committed; the
    run stops with a one-line error (the next `run` trains only those again)."""
    from cosmic_curriculum.curriculum.persist import commit
    from cosmic_curriculum.reports.markdown import refresh

    detail = "; ".join(f"candidate {c.k} ({c.experiment}): {c.error}" for c in failed)
    run.apply(
        t.TrainingFailed(
            f"{len(failed)} of {len(run.flight.candidates or [])} candidates failed: {detail}"
        )
    )
    run.save()
    refresh(run)
    logs = [run.paths.log(c.experiment) for c in failed]
    if run.use_git:
        commit(run, failed[0].experiment, extra=logs, quiet=True)
    first = failed[0]
    raise TrainerError(
        f"{run.flight.experiment}: {run.flight.error} (attempt error, not a gate failure); "
        f"fix the cause and run `{run.command()}` to train the failed candidates again "
        f"(the others are kept); last lines of {run.rel(logs[0])}:\n"
        f"{indent(runner.tail_text(run.paths.log(first.experiment), lines=8))}"
    )


# --------------------------------------------------------------------------- evaluation


def evaluate_candidates(run: Run) -> None:
    """``trained`` → ``evaluated``: every candidate evaluated, the best chosen, and its
    fresh re-evaluation saved as the attempt's record."""
    from cosmic_curriculum.curriculum.evaluation import evaluate_bot

    for c in list(run.flight.candidates or []):
        if c.phase != "trained":
            continue
        tags = {SELECTION_KEY: "candidate", CANDIDATE_KEY: c.k}
        record = evaluate_bot(
            run,
            c.experiment,
            since=c.started_at or run.flight.started_at,
            seed=evaluation_seed(c.experiment),
            tags=tags,
            k=c.k,
            history_before=c.history_before,
        )
        run.record(t.CandidateEvaluated(c.k, record), pause="evaluated")
        run.reporter.info(f"{c.experiment}: score {record_score(record):.3f} (selection)")
    if run.flight.chosen is None:
        run.record(t.CandidateChosen())
        best = run.candidate(run.flight.chosen or 0)
        run.reporter.info(
            f"{best.experiment}: the best of {len(run.flight.candidates or [])} candidates "
            f"(score {best.score:.3f}); re-evaluating it with a fresh seed, which alone is "
            "judged"
        )
    flight = run.flight
    if flight.eval_id is not None and history.find(run.paths.history, flight.eval_id):
        run.record(t.Evaluated(flight.eval_id), pause="evaluated")
        return
    chosen = run.candidate(flight.chosen or 0)
    record = evaluate_bot(
        run,
        chosen.experiment,
        since=chosen.started_at or flight.started_at,
        seed=fresh_seed(run.flight),
        tags={SELECTION_KEY: "fresh", CANDIDATE_KEY: chosen.k},
        k=None,
        history_before=flight.history_before,
    )
    run.record(t.Evaluated(str(record["id"])), pause="evaluated")
