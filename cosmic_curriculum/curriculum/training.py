"""Train an attempt through the launcher, or adopt what an orphaned trainer finished.

The training command's contract (docs/ENVIRONMENTS.md): called in the workspace as
``CMD EXPERIMENT --timesteps N --n-parallel N --speedup N [standing args] [stage flags]
[--resume CHECKPOINT] [--seed K]`` (a non-arena env: ``--env JSON`` in place of
``--n-parallel``/``--speedup``); it leaves ``checkpoints/EXPERIMENT/final.zip`` and
``bots/EXPERIMENT.json`` and exits 0. ``--seed K`` is given only to candidate k of an
attempt with ``candidates = K > 1`` (:mod:`~cosmic_curriculum.curriculum.candidates`).
"""

from __future__ import annotations

from cosmic_curriculum.core import transitions as t
from cosmic_curriculum.curriculum.context import Run
from cosmic_curriculum.curriculum.launch import (
    adopt_orphans_result,
    attempt_error,
    outcome_problem,
    start_training,
    training_argv,
)
from cosmic_curriculum.launchers import Handle, TrainerRecord, watch
from cosmic_curriculum.system.clock import utc_now
from cosmic_curriculum.tracking import hooks as tracking
from cosmic_curriculum.workspace.state import Attempt


def train(run: Run) -> None:
    """``training`` → ``trained``, or a TrainerError after recording the attempt's error
    (an attempt without candidates; :mod:`.candidates` trains those)."""
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
    else:
        handle = _launch(run, flight)
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
    problem = outcome_problem(run, outcome, flight.experiment)
    if problem is not None:
        run.apply(t.TrainingFailed(f"training command {problem}", outcome.last_progress))
        attempt_error(run, log_path)
    run.record(t.Trained(outcome.last_progress), pause="trained")
    run.reporter.training_finished(run.flight)


def _launch(run: Run, flight: Attempt) -> Handle:
    """Start the attempt's training; its launch is saved before it starts."""
    step = run.paths.latest_step(flight.experiment)
    resume = run.rel(step) if step is not None else flight.resume_from
    argv = training_argv(run, flight, resume)
    run.record(t.TrainingLaunched(resume=resume, now=utc_now()), pause="launch")
    log_path = run.paths.log(flight.experiment)

    def failed(problem: str) -> None:
        run.apply(t.TrainingFailed(problem))
        attempt_error(run, log_path)

    def started(record: TrainerRecord) -> None:
        run.record(t.TrainerStarted(record.pgid, record.pid, record.start_time), "training")
        run.reporter.attempt_started(run.flight, argv, log_path)

    launch_id = run.paths.launch_id(flight.experiment, run.flight.started_at)
    handle = start_training(run, flight.experiment, argv, launch_id, failed=failed, started=started)
    assert handle is not None  # a failed start is the attempt's error: failed() raised
    return handle
