"""`cosmic-curriculum run`: lock the workspace, check everything, then step the rules.

The loop asks the pure rules what comes next and lets one shell module do it; every step
saves the state before and after, so a run killed at any instant resumes where it stopped.
Signals (INT, TERM, HUP) stop the trainer, mark the attempt interrupted and exit
``128 + signum``.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

from cosmic_curriculum.core import transitions as t
from cosmic_curriculum.core.phases import next_step
from cosmic_curriculum.curriculum import notify
from cosmic_curriculum.curriculum.candidates import evaluate_candidates, train_candidates
from cosmic_curriculum.curriculum.context import Run, RunOptions
from cosmic_curriculum.curriculum.evaluation import evaluate
from cosmic_curriculum.curriculum.persist import final_error, persist, settle
from cosmic_curriculum.curriculum.preflight import check_before_detach, explain_lock, start
from cosmic_curriculum.curriculum.reporter import Reporter
from cosmic_curriculum.curriculum.resume import (
    initial_resume,
    reference_for,
    reference_label,
    set_aside_stale,
)
from cosmic_curriculum.curriculum.training import train
from cosmic_curriculum.errors import (
    BlockedError,
    ConfigError,
    CurriculumError,
    EvaluationError,
    LockError,
    StateError,
    TrainerError,
)
from cosmic_curriculum.system.clock import utc_now
from cosmic_curriculum.tracking import hooks as tracking
from cosmic_curriculum.workspace import pending_commit
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.layout import candidate_name, experiment_name
from cosmic_curriculum.workspace.locate import is_workspace, where_to_run
from cosmic_curriculum.workspace.lock import WorkspaceLock
from cosmic_curriculum.workspace.lost_files import check_config_not_lost
from cosmic_curriculum.workspace.state import CurriculumState
from cosmic_curriculum.workspace.state_file import save_state

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class InterruptedRun(CurriculumError):
    """The run was stopped by a signal; the state is saved and `run` resumes it."""

    exit_code = 130


class _Interrupt(BaseException):
    """Raised by our signal handler; a BaseException so no `except Exception` eats it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def run_curriculum(options: RunOptions, reporter: Reporter | None = None) -> CurriculumState:
    """Run or resume the curriculum; raises CurriculumError subclasses on every stop but done."""
    run = open_run(options, reporter)
    lock = _lock(run)
    try:
        with _signals_raise():
            run.lock = lock
            try:
                try:
                    start(run)
                except BlockedError:
                    tracking.sync(run)  # the blocking decision, if a kill kept it back
                    raise
                notify.deliver(run)  # what earlier runs could not send
                tracking.sync(run)  # the trackers' too
                return _loop(run)
            except _Interrupt as interrupt:
                raise _interrupted(run, interrupt.signum) from None
            except (TrainerError, EvaluationError):
                flight = run.state.in_flight
                if flight is not None and flight.error:
                    notify.notify(run, "attempt_error", flight.error)
                raise
            except OSError as exc:
                # Disk full, permissions, a vanished directory: every write is atomic
                # and every step resumable, so say which file and how to go on.
                raise StateError(
                    f"{exc.filename or run.ws}: {exc.strerror or exc}; the files "
                    f"written so far are intact; free space or fix permissions and "
                    f"re-run `{run.command()}` to continue where it stopped"
                ) from None
    finally:
        lock.release()


def open_run(options: RunOptions, reporter: Reporter | None = None) -> Run:
    """The run's context with its config loaded; the workspace must exist."""
    run = Run(options, reporter)
    if not run.ws.is_dir():
        raise ConfigError(
            f"--workspace {run.ws}: no such directory; create one with "
            f"`cosmic-curriculum init {run.ws}`"
        )
    if not run.config_path.exists() and not is_workspace(run.ws):
        raise ConfigError(
            f"--workspace {run.ws}: not a cosmic-curriculum workspace (no {run.config_path.name}"
            f", no {run.paths.state.name}); {where_to_run(run.ws, 'cosmic-curriculum run')}"
        )
    check_config_not_lost(run.ws, run.config_path)
    run.config = load_config(run.config_path)
    return run


def check_run(options: RunOptions) -> None:
    """Everything `run` would refuse before training, checked without running it."""
    check_before_detach(open_run(options))


def _loop(run: Run) -> CurriculumState:
    while True:
        step = next_step(run.state)
        if step == "begin":
            i, n = run.state.stage_index, run.state.attempt
            experiment = experiment_name(i, run.config.stages[i].name, n)
            set_aside_stale(run, experiment)
            k_max = run.config.stage_candidates(i)
            for k in range(1, k_max + 1) if k_max > 1 else ():
                set_aside_stale(run, candidate_name(experiment, k))
            begin = t.BeginAttempt(
                resume_from=initial_resume(run, i, n),
                reference=reference_label(run, reference_for(run, i)),
                timesteps=run.config.stage_timesteps(i, run.opts.timesteps),
                now=utc_now(),
            )
            run.record(begin, pause="training")
        # K = 1 and K > 1 part here, once: an attempt with candidates has its own steps
        elif step == "train":
            (train_candidates if run.flight.candidates else train)(run)
        elif step == "evaluate":
            (evaluate_candidates if run.flight.candidates else evaluate)(run)
        elif step == "decide":
            from cosmic_curriculum.workspace import history

            eval_id = run.flight.eval_id or ""
            record = history.find(run.paths.history, eval_id)
            if record is None:
                from cosmic_curriculum.workspace.lost_files import record_restore_hint

                hint = record_restore_hint(run.ws, run.paths.history.name, eval_id)
                raise StateError(
                    f"{run.paths.history}: evaluation {eval_id} of {run.flight.experiment} "
                    f"is missing; {hint}"
                )
            run.record(t.Decide(record, utc_now()), pause="decided")
            run.reporter.attempt_decided(run.state.log[-1])
        elif step == "commit":
            persist(run)
            tracking.sync(run)  # the decision, once committed (its training's curves first)
        else:
            break
    settle(run)
    run.reporter.finished(run.state)
    error = final_error(run)
    if error is not None:
        raise error
    return run.state


def _lock(run: Run) -> WorkspaceLock:
    try:
        return WorkspaceLock(run.ws).acquire()
    except LockError as exc:
        raise LockError(explain_lock(run, str(exc))) from None
    except OSError as exc:  # read-only file system, no permission, disk full
        raise LockError(
            f"{run.paths.lock}: cannot create the workspace lock "
            f"({exc.strerror or exc}); the workspace must be writable: fix its "
            "permissions or free space, then re-run"
        ) from None


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """Turn SIGINT/SIGTERM/SIGHUP into :class:`_Interrupt` for the duration."""

    def handler(signum: int, frame: FrameType | None) -> None:
        # Further signals while we clean up are ignored: cleanup is bounded (grace + KILL).
        for sig in HANDLED_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        raise _Interrupt(signum)

    previous = {sig: signal.signal(sig, handler) for sig in HANDLED_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _where(run: Run, phase: str, experiment: str) -> str:
    """Where a signal stopped the run, true to what git has."""
    if phase != "committed":
        return f"in phase '{phase}' of {experiment}"
    if run.use_git and pending_commit.pending(run.paths):
        return (
            f"before the decision of {experiment} reached git (it is saved; the next run "
            "commits it first)"
        )
    return f"after the decision of {experiment}" + (" was committed" if run.use_git else "")


def _interrupted(run: Run, signum: int) -> InterruptedRun:
    name = signal.Signals(signum).name
    where = "before any attempt started"
    state = getattr(run, "state", None)  # None when the signal came before the state loaded
    if state is not None:
        flight = state.in_flight
        if flight is not None:
            # watch() already stopped the trainer; make sure, then record it.
            if flight.pgid is not None:
                run.launcher.attach(run.trainer_record(), run.opts.grace_seconds)
            for c in flight.candidates or []:
                if c.pgid is not None:
                    run.launcher.attach(run.candidate_record(c), run.opts.grace_seconds)
            run.apply(t.Interrupted(signal=name))
            where = _where(run, flight.phase, flight.experiment)
        with contextlib.suppress(OSError):
            save_state(run.paths.state, run.state)
        queued = None
        with contextlib.suppress(OSError, CurriculumError):
            queued = notify.queue(run, "interrupted", f"{name} {where}")
        try:
            # A second signal cuts the notifier short: the note stays in the outbox
            # (saved before it ran) and the next run sends it.
            with _signals_raise(), contextlib.suppress(OSError, CurriculumError):
                if queued is not None:
                    notify.deliver(run, only={queued})
        except _Interrupt as again:
            run.reporter.warning(
                f"notify_command stopped by a second {signal.Signals(again.signum).name}; "
                "the notification is kept and the next run sends it"
            )
    err = InterruptedRun(
        f"interrupted by {name} {where}; state saved, run `{run.command()}` to resume"
    )
    err.exit_code = 128 + signum
    return err
