"""Train an attempt through the launcher, or adopt what an orphaned trainer finished.

The training command's contract (docs/ENVIRONMENTS.md): called in the workspace as
``CMD EXPERIMENT --timesteps N --n-parallel N --speedup N [standing args] [stage flags]
[--resume CHECKPOINT] [--seed K]`` (a non-arena env: ``--env JSON`` in place of
``--n-parallel``/``--speedup``); it leaves ``checkpoints/EXPERIMENT/final.zip`` and
``bots/EXPERIMENT.json`` and exits 0. ``--seed K`` is given only to candidate k of an
attempt with ``candidates = K > 1`` (:mod:`~cosmic_curriculum.curriculum.candidates`).
On SIGTERM or SIGUSR1 it saves a step checkpoint and exits 128 + the signal: when that
came from outside (a time limit, a preemption) the same argv is launched again with
``--resume`` that checkpoint (a continuation, docs/SCALING.md).
"""

from __future__ import annotations

from typing import Any

from cosmic_curriculum.core import transitions as t
from cosmic_curriculum.core.rules import continuation_problem
from cosmic_curriculum.curriculum.context import Run
from cosmic_curriculum.curriculum.launch import (
    adopt_orphans_result,
    attempt_error,
    continuing_text,
    interrupted_continuation,
    outcome_problem,
    start_training,
    training_argv,
)
from cosmic_curriculum.launchers import Handle, RunOutcome, TrainerRecord, watch
from cosmic_curriculum.system.clock import utc_now
from cosmic_curriculum.tracking import hooks as tracking
from cosmic_curriculum.workspace.state import Attempt


def train(run: Run) -> None:
    """``training`` → ``trained``, or a TrainerError after recording the attempt's error
    (an attempt without candidates; :mod:`.candidates` trains those). A training that a
    time limit or preemption ended is continued (:func:`_continue`) until it ends on its own."""
    flight = run.flight
    log_path = run.paths.log(flight.experiment)
    handle, run.attached = run.attached, None
    if handle is not None:
        run.reporter.info(f"{flight.experiment}: following its training, started by an earlier run")
    elif adopt_orphans_result(
        run,
        flight.experiment,
        flight.started_at,
        launched=flight.error is None and (flight.interrupted or bool(flight.launched)),
    ):
        run.record(t.Trained(), pause="trained")
        return
    elif (reason := interrupted_continuation(flight)) is not None:
        handle = _continue(run, reason, None)
    else:
        handle = _launch(run, flight)
    while True:
        outcome = _watch(run, handle)
        if outcome.ended_by is None:
            break
        handle = _continue(run, outcome.ended_by, outcome.last_progress)
    problem = outcome_problem(run, outcome, flight.experiment)
    if problem is not None:
        run.apply(t.TrainingFailed(f"training command {problem}", outcome.last_progress))
        attempt_error(run, log_path)
    run.record(t.Trained(outcome.last_progress), pause="trained")
    run.reporter.training_finished(run.flight)


def _watch(run: Run, handle: Handle) -> RunOutcome:
    live = tracking.LiveDelivery(run)  # its scalars to MLflow/W&B while it trains
    outcome = watch(
        run.launcher,
        handle,
        on_progress=lambda p: run.reporter.training_progress(run.flight, p),
        on_poll=live.poll,
        timeout=run.opts.attempt_timeout,
        grace=run.opts.grace_seconds,
    )
    live.stop()  # not after an interrupt: its delivery ends by its own alarm
    return outcome


def _launch(run: Run, flight: Attempt) -> Handle:
    """Start the attempt's training; its launch is saved before it starts."""
    step = run.paths.latest_step(flight.experiment)
    resume = run.rel(step) if step is not None else flight.resume_from
    argv = training_argv(run, flight, resume)
    run.record(t.TrainingLaunched(resume=resume, now=utc_now()), pause="launch")
    return _start(run, argv)


def _continue(run: Run, reason: str, progress: dict[str, Any] | None) -> Handle:
    """Launch the training ``reason`` ended again from its latest step checkpoint (its
    timesteps count on), saved first with its own launch id; beyond ``[launcher]
    max_continuations`` the attempt's error instead."""
    flight = run.flight
    done = len(flight.continuations or [])
    problem = continuation_problem(done, run.config.launcher.max_continuations, reason)
    if problem is not None:
        run.apply(t.TrainingFailed(f"training {problem}", progress))
        attempt_error(run, run.paths.log(flight.experiment))
    step = run.paths.latest_step(flight.experiment)
    checkpoint = run.rel(step) if step is not None else None
    now = utc_now()
    launch_id = run.paths.launch_id(flight.experiment, now, continuation=done + 1)
    run.record(t.TrainingContinued(reason, now, checkpoint, launch_id), pause="launch")
    run.reporter.info(continuing_text(run, flight.experiment, reason, done + 1, checkpoint))
    return _start(run, training_argv(run, run.flight, run.flight.last_resume))


def _start(run: Run, argv: list[str]) -> Handle:
    """Start the launch the state just recorded (its launch id is the state's)."""
    flight = run.flight
    log_path = run.paths.log(flight.experiment)

    def failed(problem: str) -> None:
        run.apply(t.TrainingFailed(problem))
        attempt_error(run, log_path)

    def started(record: TrainerRecord) -> None:
        run.record(t.TrainerStarted(record.pgid, record.pid, record.start_time), "training")
        run.reporter.attempt_started(run.flight, argv, log_path)

    launch_id = run.trainer_record().launch_id
    handle = start_training(run, flight.experiment, argv, launch_id, failed=failed, started=started)
    assert handle is not None  # a failed start is the attempt's error: failed() raised
    return handle
