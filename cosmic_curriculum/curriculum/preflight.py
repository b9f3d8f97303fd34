"""Everything that must hold before any training time is spent, in order.

Clean stale temp files → load the state (corrupt: refuse, never overwrite) → follow or stop
a trainer an earlier run recorded → git preflight → stage range, history and config change
→ finish an attempt left at ``decided`` → overrides → trainer, each stage's environment,
evaluator and reference bot → a catch-up commit of anything a crash left uncommitted.
"""

from __future__ import annotations

import getpass
import os
import shutil
from pathlib import Path
from typing import Any

from cosmic_curriculum.core import transitions as t
from cosmic_curriculum.core.phases import next_step
from cosmic_curriculum.core.rules import override_ruling, skipped_experiment
from cosmic_curriculum.curriculum.context import Run
from cosmic_curriculum.curriculum.forgetting import refuse_with_evaluation_command
from cosmic_curriculum.curriculum.persist import blocked_message, commit, persist
from cosmic_curriculum.curriculum.resume import (
    BuiltinBot,
    check_exec_reference,
    follow_reference_change,
    reference_for,
    seed_source,
    stopped_by_interrupt,
    uses_default_evaluator,
    uses_env_evaluator,
    validate_bot,
)
from cosmic_curriculum.errors import BlockedError, ConfigError, CurriculumError, LockError
from cosmic_curriculum.launchers import Handle, TrainerRecord
from cosmic_curriculum.reports import markdown as report_md
from cosmic_curriculum.system import fsio
from cosmic_curriculum.system import processes as runner
from cosmic_curriculum.system.clock import utc_now
from cosmic_curriculum.system.processes import start_problem
from cosmic_curriculum.tracking import hooks as tracking
from cosmic_curriculum.tracking import outbox
from cosmic_curriculum.vcs import repo as vcs
from cosmic_curriculum.workspace import history, pending_commit
from cosmic_curriculum.workspace.layout import experiment_name
from cosmic_curriculum.workspace.lock import WorkspaceLock
from cosmic_curriculum.workspace.lost_files import check_nothing_lost, restore_hint
from cosmic_curriculum.workspace.state_file import check_stage_range, load_state


def start(run: Run) -> None:
    # Every directory the run, its trackers and trainers write atomically: a kill -9 may
    # leave a temp in any (each experiment's checkpoints and league snapshots included).
    p = run.paths
    found = sorted(p.checkpoints.glob("*/**/")) if p.checkpoints.is_dir() else []
    for directory in [run.ws, p.bots, p.logs, p.report_dir, outbox.directory(p.logs), *found]:
        for removed in fsio.clean_stale_temps(directory):
            run.reporter.info(f"removed stale temp file {run.rel(removed)}")
    check_nothing_lost(run.ws)
    run.state = load_state(run.paths.state)
    loaded = run.state.to_json()
    flight = run.state.in_flight
    if flight is not None and flight.candidates:
        _find_candidates(run)
    # A trainer of an earlier run: recorded, or started but killed before it was recorded.
    elif flight is not None and (flight.pgid is not None or flight.phase == "training"):
        run.attached = _earlier_training(run, run.trainer_record(), flight.experiment, flight.pgid)
        run.apply(t.Resumed())
    _preflight_git(run)
    check_stage_range(run.state, len(run.config.stages), run.paths.state)
    history.load(run.paths.history)  # refuse a corrupt history before training
    _check_config_change(run)
    follow_reference_change(run)
    if next_step(run.state) == "commit":
        # A run killed between deciding and committing: finish that first (review of a
        # block, curves, commit). The overrides and the blocked check below would
        # otherwise skip it, leaving the review unwritten and the decision uncommitted.
        persist(run)
    elif run.use_git and pending_commit.pending(run.paths):
        # A decision whose commit an earlier run owes (killed or refused by git): first,
        # before a blocked curriculum stops this run or an override adds to it.
        commit(run, "catch-up")
    _check_notifier(run)
    _apply_overrides(run)
    _preflight_commands(run)
    if run.use_git:
        commit(run, "catch-up")  # a crash between save and commit left changes behind
    if run.state.to_json() != loaded:
        run.save()  # the next commit carries it
    flight = run.state.in_flight
    if flight is not None and flight.phase != "committed":
        how = " (it was interrupted)" if flight.interrupted else ""
        how = f" (after its error: {flight.error})" if flight.error else how
        run.reporter.info(f"resuming {flight.experiment} at phase '{flight.phase}'{how}")


def _find_candidates(run: Run) -> None:
    """The trainings an earlier run launched for the candidates still in training: follow
    a cluster job again (never submit a second one), stop a local group still ours."""
    flight = run.flight
    for c in flight.candidates or []:
        if c.phase != "training" or not (c.launched or c.pgid is not None):
            continue
        found = _earlier_training(run, run.candidate_record(c), c.experiment, c.pgid)
        if found is not None:
            run.attached_candidates[c.k] = found
    run.apply(t.Resumed())


def _earlier_training(
    run: Run, record: TrainerRecord, experiment: str, pgid: int | None
) -> Handle | None:
    """A training an earlier run started: a local group still ours is stopped (with a
    warning); a cluster job is returned, to follow instead of training again. None when
    there is nothing to follow (gone, or a job our own Ctrl-C stopped)."""
    found = run.launcher.attach(record, run.opts.grace_seconds)
    if found == "stopped":
        group = f" (process group {pgid})" if pgid is not None else ""
        run.reporter.warning(
            f"stopped the trainer of {experiment}{group} left running by an earlier run"
        )
    if isinstance(found, str) or run.flight.phase != "training":
        return None
    return None if stopped_by_interrupt(run, found) else found


def explain_lock(run: Run, message: str) -> str:
    """Name an orphaned trainer when it, not a live run, holds the lock."""
    try:
        holder = fsio.loads(run.paths.lock.read_text() or "{}").get("pid")
        flight = load_state(run.paths.state).in_flight
    except (OSError, ValueError, AttributeError, CurriculumError):
        return message
    if not isinstance(holder, int) or runner.process_start_time(holder) is not None:
        return message
    if flight is not None and flight.phase == "trained":
        # The run died while its evaluation command ran; that command holds the lock.
        return (
            f"{run.ws}: the evaluation of {flight.experiment} outlived its run (pid "
            f"{holder}) and still holds this workspace; wait for it to finish (its record "
            f"will be used by the next `{run.command()}`), then re-run"
        )
    if flight is None:
        return message
    # (experiment, group) of each recorded trainer: the attempt's, or its candidates'.
    groups = [
        (c.experiment, c.pgid)
        for c in flight.candidates or []
        if c.pgid is not None
        and c.pid is not None
        and runner.recorded_group_is_ours(c.pgid, c.pid, c.pid_start_time)
    ]
    if (
        flight.pgid is not None
        and flight.pid is not None
        and runner.recorded_group_is_ours(flight.pgid, flight.pid, flight.pid_start_time)
    ):
        groups.append((flight.experiment, flight.pgid))
    if not groups:
        return message
    names = ", ".join(f"{exp} (process group {pgid})" for exp, pgid in groups)
    kill = " ".join(f"-{pgid}" for _, pgid in groups)
    if len(groups) > 1:
        return (
            f"{run.ws}: the trainers of {names} outlived their run (pid {holder}) and "
            f"still hold this workspace; wait for them to finish (their results will be "
            f"used by the next `{run.command()}`) or stop them with `kill -TERM {kill}` "
            "and re-run to resume from their last checkpoints"
        )
    return (
        f"{run.ws}: the trainer of {names} outlived its run (pid {holder}) and still holds "
        f"this workspace; wait for it to finish (its result will be used by the next "
        f"`{run.command()}`) or stop it with `kill -TERM {kill}` and re-run to resume from "
        "its last checkpoint"
    )


def _preflight_git(run: Run) -> None:
    warning = vcs.preflight(run.ws)
    if warning is not None:
        run.reporter.warning(warning)
        run.use_git = False
        return
    run.use_git = True
    for lock in vcs.remove_stale_index_locks(run.ws):
        run.reporter.warning(f"removed stale git lock {lock} left by a killed git")


def _check_config_change(run: Run) -> None:
    config, state = run.config, run.state
    new_hashes = config.stage_hashes()
    new_defs = config.stage_definitions()
    old_hashes = state.stage_hashes
    old_defs = state.stage_definitions or []
    if old_hashes is not None and old_hashes != new_hashes:
        finished = state.stage_index + (1 if state.status == "done" else 0)
        changes: list[str] = []
        finished_changed: list[str] = []
        for i in range(max(len(old_hashes), len(new_hashes))):
            old = old_hashes[i] if i < len(old_hashes) else None
            new = new_hashes[i] if i < len(new_hashes) else None
            if old == new:
                continue
            name = new_defs[i]["name"] if i < len(new_defs) else f"#{i + 1}"
            if i >= len(old_hashes):
                detail = "added"
            else:
                detail = describe_change(
                    old_defs[i] if i < len(old_defs) else None,
                    new_defs[i] if i < len(new_defs) else None,
                )
            changes.append(f"stage {i + 1} {name}: {detail}")
            if i < finished:
                finished_changed.append(f"stage {i + 1} {name} ({detail})")
        if finished_changed and not run.opts.accept_config_change:
            raise ConfigError(
                f"{run.config_path}: the definition of finished "
                f"{'; '.join(finished_changed)} changed since it ran; revert the change, "
                "or re-run with --accept-config-change to keep its result"
            )
        run.reporter.warning(
            f"{run.rel(run.config_path)} changed since the last run: " + "; ".join(changes)
        )
    run.apply(t.ConfigRecorded(new_hashes, config.config_hash(), new_defs))


def describe_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> str:
    if old is None and new is None:
        return "changed"
    if old is None:
        return "definition changed (the earlier one was not recorded)"
    if new is None:
        return "removed"
    keys = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    parts = [f"{k} {old.get(k)!r} → {new.get(k)!r}" for k in keys]
    return ", ".join(parts) if parts else "changed"


def check_before_detach(run: Run) -> None:
    """What `run --detach` checks before it says "started": the same checks as `run`,
    writing nothing, so a bad workspace, config, override or reference bot is reported
    here and not only in logs/curriculum.log."""
    try:
        WorkspaceLock(run.ws).acquire().release()  # free now; the detached run takes it
    except LockError as exc:
        raise LockError(explain_lock(run, str(exc))) from None
    check_nothing_lost(run.ws)
    run.state = load_state(run.paths.state)
    check_stage_range(run.state, len(run.config.stages), run.paths.state)
    history.load(run.paths.history)
    _check_config_change(run)
    _check_notifier(run)
    _override_flag(run)
    _preflight_commands(run)


def _override_flag(run: Run) -> str | None:
    """The override asked for, if it applies; a one-line error if it does not."""
    opts, state = run.opts, run.state
    ruling, flag = override_ruling(
        state.status, opts.force_retry, opts.skip_to_next_stage, opts.reason is not None
    )
    if ruling == "both":
        raise ConfigError("--force-retry and --skip-to-next-stage exclude each other; choose one")
    if ruling == "reason_alone":
        raise ConfigError(
            "--reason is recorded with an override; use it with --force-retry or "
            "--skip-to-next-stage on a blocked curriculum"
        )
    if ruling == "blocked":
        raise BlockedError(blocked_message(run))
    if ruling == "not_blocked":
        raise ConfigError(
            f"{flag} applies only to a blocked curriculum, but {run.rel(run.paths.state)} "
            f"says status '{state.status}' (stage {state.stage_index + 1}); "
            f"run `{run.command()}` without it"
        )
    return flag


def _apply_overrides(run: Run) -> None:
    flag = _override_flag(run)
    if flag is None:
        return
    state, reason, by = run.state, run.opts.reason, getpass.getuser()
    i = state.stage_index
    if flag == "--force-retry":
        run.apply(t.ForceRetry(reason, by))
        run.reporter.info(
            f"forced retry of stage {i + 1} {run.config.stages[i].name} as "
            f"{experiment_name(i, run.config.stages[i].name, state.attempt)}"
        )
        report_md.refresh(run)  # committed by the catch-up commit
        return
    exp = skipped_experiment(state, run.config)
    run.record(t.SkipStage(reason, utc_now(), by))
    run.reporter.attempt_decided(run.state.log[-1])
    report_md.refresh(run)
    commit(run, exp, extra=[run.paths.bot(exp), run.paths.log(exp)])


def _preflight_commands(run: Run) -> None:
    tracking.check(run.config)  # a tracker asked for is installed
    if run.state.status != "in_progress":
        return
    run.launcher.check(run.ws)
    config = run.config
    remaining = range(run.state.stage_index, len(config.stages))
    if not all(config.builtin_env_trainer(j) for j in remaining):  # train-env is ours
        _check_executable(run, config.training_command[0], "training_command")
    from cosmic_curriculum.envs.check import check_stage_envs  # gymnasium, if a stage uses it

    for note in check_stage_envs(
        config, run.state.stage_index, run.opts.timesteps is not None, run.ws
    ):
        run.reporter.info(note)
    if config.evaluation_command:
        _check_executable(run, config.evaluation_command[0], "evaluation_command")
        refuse_with_evaluation_command(run, remaining)
    i = run.state.stage_index
    reference = reference_for(run, i)
    if isinstance(reference, BuiltinBot):
        kind = config.stage_env(i).kind
        if kind == "arena" or (kind == "gymnasium" and reference.name != "random"):
            plays = "PettingZoo" if kind == "gymnasium" else "Gymnasium and PettingZoo"
            raise ConfigError(
                f"{run.config_path}: reference_bot of stage {i + 1} is builtin "
                f"{reference.name!r}, which plays {plays} stages only; name a bot file "
                'instead (the arena: e.g. reference_bot = "bots/rookie.json")'
            )
    elif not isinstance(reference, Path):  # a program: no file, but its handshake
        check_exec_reference(run, reference, i)
    elif config.stage_reference(i) is None:  # the previous stage's passing bot
        what = f"stage {i}'s passing bot (stage {i + 1}'s reference)"
        validate_bot(run, reference, what, restore_hint(run.ws, run.rel(reference)), i)
    else:
        validate_bot(run, reference, "reference bot", stage_index=i)
    if uses_default_evaluator(run):
        from cosmic_curriculum.evaluation.evaluate import plan

        # The built-in evaluator plays seat-swapped pairs: refuse an odd episode count
        # now, not after a stage of training. The env evaluator plays any count.
        for i in range(run.state.stage_index, len(config.stages)):
            if uses_env_evaluator(run, i):
                continue
            try:
                plan(config.stage_gate(i))
            except CurriculumError as exc:
                raise ConfigError(
                    f"{run.config_path}: stage {i + 1} {config.stages[i].name}: {exc}"
                ) from None
    if run.opts.seed_checkpoint is not None:
        seed = seed_source(run)
        if not seed.is_file() or seed.suffix != ".zip":
            raise ConfigError(
                f"--seed-checkpoint {seed}: no such file; pass the path of a checkpoint .zip"
            )
        if not (run.state.stage_index == 0 and run.state.attempt == 0):
            run.reporter.warning("--seed-checkpoint only affects stage 1's first attempt; ignored")


def _check_notifier(run: Run) -> None:
    """`notify_command` can start, in every status (a finished run still sends what it
    owes): found at preflight, never only when a notification is due."""
    if run.config.notify_command is not None:
        _check_executable(run, run.config.notify_command[0], "notify_command")


def _check_executable(run: Run, program: str, key: str) -> None:
    if not program.strip():
        raise ConfigError(
            f"{run.config_path}: {key} names an empty program {program!r}; give the "
            "program's name or path as its first element"
        )
    if "/" in program:
        path = Path(program) if Path(program).is_absolute() else run.ws / program
        if path.is_dir():
            raise ConfigError(
                f"{run.config_path}: {key} {program!r} is a directory, not a program; fix {key}"
            )
        if not path.is_file():
            raise ConfigError(
                f"{run.config_path}: {key} {program!r} does not exist in {run.ws}; "
                f"fix {key} or create the script"
            )
        if not os.access(path, os.X_OK):
            raise ConfigError(
                f"{run.config_path}: {key} {program!r} is not executable; run `chmod +x {path}`"
            )
    else:
        found = shutil.which(program)
        if found is None:
            raise ConfigError(
                f"{run.config_path}: {key} {program!r} is not on PATH; install it or give its path"
            )
        path = Path(found)
    problem = start_problem(path)
    if problem is not None:
        raise ConfigError(f"{run.config_path}: {key} {program!r} {problem}; fix it, then re-run")
