"""Train an attempt through the launcher, or adopt what an orphaned trainer finished.

The training command's contract (README): called in the workspace as
``CMD EXPERIMENT --timesteps N --n-parallel N --speedup N [standing args] [stage flags]
[--resume CHECKPOINT] [--seed K]``; it leaves ``checkpoints/EXPERIMENT/final.zip`` and
``bots/EXPERIMENT.json`` and exits 0. ``--seed K`` is given only to candidate k of an
attempt with ``candidates = K > 1`` (:mod:`~cosmic_curriculum.curriculum.candidates`).
"""

from __future__ import annotations

import shlex
from datetime import datetime
from pathlib import Path

from cosmic_curriculum import fsio, runner
from cosmic_curriculum.curriculum import transitions as t
from cosmic_curriculum.curriculum.context import Run
from cosmic_curriculum.curriculum.resume import validate_bot
from cosmic_curriculum.errors import CurriculumError, TrainerError
from cosmic_curriculum.launchers import Handle, LaunchError, LaunchSpec, RunOutcome, watch
from cosmic_curriculum.launchers.local import start_problem
from cosmic_curriculum.state import Attempt, utc_now


def parse_time(stamp: str) -> float:
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return float("inf")


def resolve_program(run: Run, argv: list[str]) -> list[str]:
    """A relative program path is the workspace's."""
    program = argv[0]
    if "/" in program and not Path(program).is_absolute():
        program = str(run.ws / program)
    return [program, *argv[1:]]


def training_argv(
    run: Run,
    flight: Attempt,
    resume: str | None,
    experiment: str | None = None,
    seed: int | None = None,
) -> list[str]:
    """The training command of ``flight`` (or of its candidate ``experiment``, which gets
    ``--seed``)."""
    cfg, opts = run.config, run.opts
    argv = [
        *resolve_program(run, cfg.training_command),
        experiment or flight.experiment,
        "--timesteps",
        str(flight.timesteps or cfg.stage_timesteps(flight.stage_index, opts.timesteps)),
        "--n-parallel",
        str(opts.n_parallel or cfg.defaults.n_parallel),
        "--speedup",
        str(opts.speedup or cfg.defaults.speedup),
        *cfg.standing_args,
        *cfg.stages[flight.stage_index].flags,
    ]
    if resume:
        argv += ["--resume", resume]
    return argv if seed is None else [*argv, "--seed", str(seed)]


def train(run: Run) -> None:
    """``training`` → ``trained``, or a TrainerError after recording the attempt's error."""
    flight = run.flight
    if flight.candidates:
        from cosmic_curriculum.curriculum.candidates import train_candidates

        train_candidates(run)
        return
    log_path = run.paths.log(flight.experiment)
    handle, run.attached = run.attached, None
    if handle is not None:
        run.reporter.info(f"{flight.experiment}: following its training, started by an earlier run")
    elif _adopt_orphans_result(run, flight):
        return
    else:
        handle = _launch(run, flight)
    outcome = watch(
        run.launcher,
        handle,
        on_progress=lambda p: run.reporter.training_progress(run.flight, p),
        timeout=run.opts.attempt_timeout,
        grace=run.opts.grace_seconds,
    )
    problem = outcome_problem(run, outcome, flight.experiment)
    if problem is not None:
        run.apply(t.TrainingFailed(f"training command {problem}", outcome.last_progress))
        attempt_error(run, log_path)
    run.record(t.Trained(outcome.last_progress), pause="trained")
    run.reporter.training_finished(run.flight)


def outcome_problem(run: Run, outcome: RunOutcome, experiment: str) -> str | None:
    """What went wrong with a watched training of ``experiment`` (None: it trained)."""
    if outcome.timed_out:
        return f"did not finish within --attempt-timeout {run.opts.attempt_timeout:g}s"
    if outcome.returncode != 0:
        code = outcome.returncode
        if code is not None and code < 0:
            return f"was killed by signal {-code}"
        return f"exited with status {code}"
    try:
        check_experiment_artefacts(run, experiment)
    except TrainerError as exc:
        return str(exc)
    return None


def _launch(run: Run, flight: Attempt) -> Handle:
    """Start the attempt's training; its launch is saved before it starts."""
    step = run.paths.latest_step(flight.experiment)
    resume = run.rel(step) if step is not None else flight.resume_from
    argv = training_argv(run, flight, resume)
    run.record(t.TrainingLaunched(resume=resume, now=utc_now()), pause="launch")
    spec = logged_spec(
        run,
        flight.experiment,
        argv,
        tag=run.paths.attempt_tag(flight.experiment),
        launch_id=run.paths.launch_id(flight.experiment, run.flight.started_at),
    )
    log_path = spec.log_path
    try:
        handle = run.launcher.start(spec)
    except LaunchError as exc:
        run.apply(t.TrainingFailed(f"training command could not be submitted: {exc}"))
        attempt_error(run, log_path)
    except OSError as exc:
        if exc.filename not in (argv[0], None):
            raise  # the log file, not the program: the run's disk/permission error
        why = start_problem(Path(argv[0])) or exc.strerror or str(exc)
        run.apply(t.TrainingFailed(f"training command {argv[0]} could not start: it {why}"))
        attempt_error(run, log_path)
    try:
        # Until watch() owns it, any exception (a signal included) must stop the work.
        fsio.fault_point("launched")
        record = handle.record()
        run.record(t.TrainerStarted(record.pgid, record.pid, record.start_time), "training")
        run.reporter.attempt_started(run.flight, argv, log_path)
    except BaseException:
        run.launcher.stop(handle, run.opts.grace_seconds)
        raise
    return handle


def logged_spec(
    run: Run, experiment: str, argv: list[str], *, tag: str, launch_id: str = ""
) -> LaunchSpec:
    """The launch of ``argv`` in the workspace, its output going to ``experiment``'s log,
    where its command line and the time head it."""
    log_path = run.paths.log(experiment)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(f"# {utc_now()} {shlex.join(argv)}\n".encode())
    return LaunchSpec(
        argv=argv,
        cwd=run.ws,
        log_path=log_path,
        pass_fds=run.lock_fds(),
        tag=tag,
        launch_id=launch_id,
    )


def _adopt_orphans_result(run: Run, flight: Attempt) -> bool:
    """An orphaned trainer of an earlier run may have finished this attempt already."""
    launched_before = flight.error is None and (flight.interrupted or bool(flight.launched))
    if not (launched_before and _artefacts_fresh(run, flight)):
        return False
    try:
        check_artefacts(run, flight)
    except TrainerError:
        return False
    run.reporter.info(
        f"{flight.experiment}: training finished while no run was watching; using its result"
    )
    run.record(t.Trained(), pause="trained")
    return True


def _artefacts_fresh(run: Run, flight: Attempt) -> bool:
    return artefacts_fresh(run, flight.experiment, flight.started_at)


def artefacts_fresh(run: Run, experiment: str, started_at: str) -> bool:
    """``experiment``'s final checkpoint and bot exist and were written after ``started_at``."""
    final = run.paths.final_checkpoint(experiment)
    bot = run.paths.bot(experiment)
    if not (final.is_file() and bot.is_file()):
        return False
    started = parse_time(started_at)
    return min(final.stat().st_mtime, bot.stat().st_mtime) >= started - 1


def check_artefacts(run: Run, flight: Attempt) -> None:
    check_experiment_artefacts(run, flight.experiment)


def check_experiment_artefacts(run: Run, experiment: str) -> None:
    final = run.paths.final_checkpoint(experiment)
    bot = run.paths.bot(experiment)
    missing = [run.rel(p) for p in (final, bot) if not p.is_file()]
    if missing:
        raise TrainerError(f"exited 0 without writing {' and '.join(missing)}")
    try:
        validate_bot(run, bot, "trained bot")
    except CurriculumError as exc:
        raise TrainerError(f"wrote an invalid bot: {exc}") from None


def attempt_error(run: Run, log_path: Path) -> None:
    """Save the attempt's error, commit its log, and stop the run with a one-line error."""
    from cosmic_curriculum.curriculum.persist import commit
    from cosmic_curriculum.report_md import refresh

    flight = run.flight
    problem = flight.error or "failed"
    run.save()
    refresh(run)
    if run.use_git:
        commit(run, flight.experiment, extra=[log_path], quiet=True)
    # The first line is the whole error (what, where, the fix); the log quote follows.
    raise TrainerError(
        f"{flight.experiment}: {problem} (attempt error, not a gate failure); fix the "
        f"cause and run `{run.command()}` to retry this attempt; last lines of "
        f"{run.rel(log_path)}:\n{indent(runner.tail_text(log_path, lines=8))}"
    )


def indent(text: str) -> str:
    return "\n".join(f"  | {line}" for line in text.splitlines())
