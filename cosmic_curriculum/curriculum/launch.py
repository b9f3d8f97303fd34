"""What training an attempt and training its candidates share: the training command's
argv, its log and launch spec, judging what a finished training left, and the attempt
error that stops the run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from cosmic_curriculum.core.rules import parse_time
from cosmic_curriculum.curriculum.context import Run
from cosmic_curriculum.curriculum.resume import validate_bot
from cosmic_curriculum.errors import CurriculumError, TrainerError
from cosmic_curriculum.launchers import Handle, LaunchError, LaunchSpec, RunOutcome, TrainerRecord
from cosmic_curriculum.system import fsio
from cosmic_curriculum.system import processes as runner
from cosmic_curriculum.system.clock import utc_now
from cosmic_curriculum.system.processes import start_problem
from cosmic_curriculum.system.python import python_argv
from cosmic_curriculum.tracking import hooks as tracking
from cosmic_curriculum.workspace.stage_trainer import stage_trainer
from cosmic_curriculum.workspace.state import Attempt, Candidate
from cosmic_curriculum.workspace.trainer_log import launch_header, trainer_error


def training_argv(
    run: Run,
    flight: Attempt,
    resume: str | None,
    experiment: str | None = None,
    seed: int | None = None,
) -> list[str]:
    """The training command of ``flight`` (or of its candidate ``experiment``, which gets
    ``--seed``). ``--n-parallel`` and ``--speedup`` are the arena's: another kind of env
    gets ``--env <its spec as JSON>`` instead, and `train-env` the options of the stage's
    trainer (docs/ENVIRONMENTS.md)."""
    cfg, opts, i = run.config, run.opts, flight.stage_index
    env = cfg.stage_env(i)
    # A Gymnasium stage without a training_command of its own trains with `train-env`,
    # this interpreter's: resolved now, never a path written into the workspace.
    program = (
        python_argv("-m", "cosmic_curriculum", "train-env")
        if cfg.builtin_env_trainer(i)
        else run.resolve_program(cfg.training_command)
    )
    argv = [
        *program,
        experiment or flight.experiment,
        "--timesteps",
        str(flight.timesteps or cfg.stage_timesteps(i, opts.timesteps)),
    ]
    if env.kind == "arena":
        argv += [
            *("--n-parallel", str(opts.n_parallel or cfg.defaults.n_parallel)),
            *("--speedup", str(opts.speedup or cfg.defaults.speedup)),
        ]
    else:
        argv += ["--env", env.to_argument()]
    if cfg.builtin_env_trainer(i):
        # [trainer] and the stage's own (its hyperparams_file read now); the stage's
        # flags come after, so a flag still overrides an option.
        argv += stage_trainer(cfg, i, run.ws).argv()
    argv += [*cfg.stage_standing_args(i), *cfg.stages[i].flags]
    if resume:
        argv += ["--resume", resume]
    return argv if seed is None else [*argv, "--seed", str(seed)]


def interrupted_continuation(flight: Attempt, candidate: Candidate | None = None) -> str | None:
    """The reason when the next launch of a training (``candidate``'s, else the attempt's)
    is a continuation because a SIGTERM interrupted the run that watched it (a machine's
    shutdown: the trainer got it too and saved its step checkpoint); None for a Ctrl-C's
    or a crash's resume, a failed training or one never launched."""
    if not (flight.interrupted and flight.interrupted_by == "SIGTERM"):
        return None
    holder = candidate or flight
    if not holder.launched or holder.error is not None:
        return None
    if candidate is not None and candidate.phase != "training":
        return None
    return "SIGTERM (the run was interrupted)"


def continuing_text(run: Run, experiment: str, reason: str, n: int, checkpoint: str | None) -> str:
    """The run's line about a continuation it starts."""
    limit = run.config.launcher.max_continuations
    head = f"{experiment}: ended by {reason}; continuation {n} of at most {limit}"
    if checkpoint is None:
        return f"{head}: no step checkpoint yet, so its training starts over (not a retry)"
    return f"{head} from {checkpoint} (its timesteps count on; not a retry)"


def outcome_problem(run: Run, outcome: RunOutcome, experiment: str) -> str | None:
    """What went wrong with a watched training of ``experiment`` (None: it trained)."""
    if outcome.timed_out:
        return f"did not finish within --attempt-timeout {run.opts.attempt_timeout:g}s"
    if outcome.returncode != 0:
        code = outcome.returncode
        if code is not None and code < 0:
            return f"was killed by signal {-code}"
        # The trainer's own last word, when it said one line, is the attempt's error.
        said = trainer_error(runner.tail_text(run.paths.log(experiment), lines=4))
        return f"exited with status {code}" + (f": {said}" if said else "")
    try:
        check_experiment_artefacts(run, experiment)
    except TrainerError as exc:
        return str(exc)
    return None


def logged_spec(
    run: Run,
    experiment: str,
    argv: list[str],
    *,
    tag: str,
    launch_id: str = "",
    env: dict[str, str] | None = None,
) -> LaunchSpec:
    """The launch of ``argv`` in the workspace (``env`` added to its environment), its
    output going to ``experiment``'s log, where its command line and the time head it."""
    log_path = run.paths.log(experiment)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(launch_header(utc_now(), argv).encode())
    return LaunchSpec(
        argv=argv,
        cwd=run.ws,
        log_path=log_path,
        env=env or {},
        pass_fds=run.lock_fds(),
        tag=tag,
        launch_id=launch_id,
    )


def artefacts_fresh(run: Run, experiment: str, started_at: str) -> bool:
    """``experiment``'s final checkpoint and bot exist and were written after ``started_at``."""
    final = run.paths.final_checkpoint(experiment)
    bot = run.paths.bot(experiment)
    if not (final.is_file() and bot.is_file()):
        return False
    started = parse_time(started_at)
    return min(final.stat().st_mtime, bot.stat().st_mtime) >= started - 1


def start_training(
    run: Run,
    experiment: str,
    argv: list[str],
    launch_id: str,
    *,
    failed: Callable[[str], None],
    started: Callable[[TrainerRecord], None],
) -> Handle | None:
    """Start a training whose launch is saved already, its output appended to
    ``experiment``'s log: ``failed(problem)`` records a start that failed (then None),
    ``started(record)`` the group that runs it."""
    spec = logged_spec(
        run,
        experiment,
        argv,
        tag=run.paths.attempt_tag(experiment),
        launch_id=launch_id,
        env=tracking.trainer_env(run, experiment),
    )
    try:
        handle = run.launcher.start(spec)
    except LaunchError as exc:
        failed(f"training command could not be submitted: {exc}")
        return None
    except OSError as exc:
        if exc.filename not in (argv[0], None):
            raise  # the log file, not the program: the run's disk/permission error
        why = start_problem(Path(argv[0])) or exc.strerror or str(exc)
        failed(f"training command {argv[0]} could not start: it {why}")
        return None
    try:
        # Until the wait loop owns it, any exception (a signal included) must stop the work.
        fsio.fault_point("launched")
        started(handle.record())
    except BaseException:
        run.launcher.stop(handle, run.opts.grace_seconds)
        raise
    return handle


def adopt_orphans_result(
    run: Run, experiment: str, started_at: str | None, *, launched: bool
) -> bool:
    """Did an orphaned trainer of an earlier run finish ``experiment`` (launched before,
    at ``started_at``) while no run watched? Then its result is used (the caller records
    that it trained), never trained again."""
    if not (launched and started_at and artefacts_fresh(run, experiment, started_at)):
        return False
    try:
        check_experiment_artefacts(run, experiment)
    except TrainerError:
        return False
    run.reporter.info(
        f"{experiment}: training finished while no run was watching; using its result"
    )
    return True


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


def attempt_error(run: Run, log_path: Path) -> NoReturn:
    """Save the attempt's error, commit its log, and stop the run with a one-line error."""
    from cosmic_curriculum.curriculum.persist import commit
    from cosmic_curriculum.reports.markdown import refresh

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
