"""Evaluate a trained attempt against its reference, exactly once.

The built-in evaluator plays seat-swapped pairs and writes a record carrying its gate
verdict; an ``evaluation_command`` appends a record that is adopted afterwards. A record
this attempt already wrote (before a crash) is adopted instead of evaluating again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cosmic_curriculum.core import transitions as t
from cosmic_curriculum.core.decisions import judge
from cosmic_curriculum.core.rules import (
    SELECTION_KEY,
    adopts_appended_record,
    evaluation_seed,
    own_record,
)
from cosmic_curriculum.curriculum.context import Run
from cosmic_curriculum.curriculum.eval_stream import EpisodeStream
from cosmic_curriculum.curriculum.launch import indent, logged_spec
from cosmic_curriculum.curriculum.resume import (
    BuiltinBot,
    Reference,
    recorded_reference,
    reference_label,
    stopped_by_interrupt,
    uses_env_evaluator,
    uses_game_evaluator,
)
from cosmic_curriculum.errors import BotError, EvaluationFailedError
from cosmic_curriculum.evaluation.gate import GateSettings
from cosmic_curriculum.launchers import Handle, LaunchError, TrainerRecord, watch
from cosmic_curriculum.launchers.local import LocalLauncher
from cosmic_curriculum.system import fsio
from cosmic_curriculum.system import processes as runner
from cosmic_curriculum.system.clock import utc_now
from cosmic_curriculum.workspace import history
from cosmic_curriculum.workspace.state import Attempt, Candidate

# Tells an evaluation_command the gate's `deterministic` (docs/ENVIRONMENTS.md).
DETERMINISTIC_ENV = "COSMIC_CURRICULUM_EVAL_DETERMINISTIC"


def evaluate(run: Run) -> None:
    """``trained`` → ``evaluated`` with the record's id saved."""
    flight = run.flight
    if flight.eval_id is not None and history.find(run.paths.history, flight.eval_id):
        run.record(t.Evaluated(flight.eval_id), pause="evaluated")
        return
    record = _own_record(run, flight.experiment, flight.started_at, flight.history_before)
    if record is None:
        record = _run_evaluation(run, flight)
    else:  # written before a crash: perhaps before its decision was added
        record = _with_gate(run, record, run.config.stage_gate(flight.stage_index))
    run.record(t.Evaluated(str(record["id"])), pause="evaluated")


def _own_record(
    run: Run,
    experiment: str,
    since: str,
    history_before: int | None,
    tags: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The record an evaluation of ``experiment`` appended before a crash (never evaluate
    twice): tagged by the built-in evaluator, or appended by an evaluation command."""
    records = history.load(run.paths.history)
    selection = None if tags is None else str(tags[SELECTION_KEY])
    own = own_record(records, experiment, since, selection)
    if own is None and adopts_appended_record(
        bool(run.config.evaluation_command), history_before, len(records)
    ):
        assert history_before is not None
        own = _adopt(run, experiment, history_before, tags)
    return own


def _adopt(
    run: Run, experiment: str, before: int, tags: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The record the evaluation command appended, tagged as ``experiment``'s (and with
    ``tags``, an attempt with candidates' selection marks)."""
    record = history.adopt_new_records(run.paths.history, before)
    wanted = {"curriculum_experiment": experiment, **(tags or {})}
    if any(key not in record for key in wanted):
        records = history.load(run.paths.history)
        for key, value in wanted.items():
            records[-1].setdefault(key, value)
        fsio.atomic_write_json(run.paths.history, records)
        record = records[-1]
    return record


def _holder(run: Run, k: int | None) -> Attempt | Candidate:
    """Where the state keeps the evaluation's launch: the attempt, or its candidate ``k``."""
    if k is None:
        return run.flight
    return run.candidate(k)


def _evaluation_launch_id(run: Run, experiment: str, k: int | None) -> str:
    launched = _holder(run, k).eval_launched_at
    assert launched is not None  # EvaluationStarted saved it before the submission
    return run.paths.launch_id(f"{experiment}-evaluate", launched)


def _remote_evaluation(run: Run, experiment: str, k: int | None) -> Handle | None:
    """The evaluation job an earlier run submitted for ``experiment`` (its record not yet
    in the history), to follow instead of evaluating twice; None when there is none."""
    holder = _holder(run, k)
    if holder.history_before is None or holder.eval_launched_at is None:
        return None
    record = TrainerRecord(
        None,
        None,
        None,
        run.paths.attempt_tag(experiment, "evaluate"),
        _evaluation_launch_id(run, experiment, k),
        str(run.paths.log(experiment)),
    )
    found = run.launcher.attach(record, run.opts.grace_seconds)
    if isinstance(found, str) or stopped_by_interrupt(run, found):
        return None  # "gone": killed before submitting; or our Ctrl-C stopped it
    return found


def evaluate_bot(
    run: Run,
    experiment: str,
    *,
    since: str,
    seed: int,
    tags: dict[str, Any],
    k: int | None,
    history_before: int | None,
) -> dict[str, Any]:
    """One evaluation of ``experiment``'s bot against the attempt's reference, for an
    attempt with candidates: the record of it written after ``since`` (before a crash) if
    there is one, else a new one played with ``seed`` (an evaluation command gets
    ``--seed``), tagged with ``tags``. ``k``: the candidate whose evaluation it is (None:
    the attempt's own, fresh one)."""
    own = _own_record(run, experiment, since, history_before, tags)
    if own is not None:
        return _with_gate(run, own, run.config.stage_gate(run.flight.stage_index))
    return _run_evaluation(run, run.flight, experiment, seed, tags, k)


def _run_evaluation(
    run: Run,
    flight: Attempt,
    experiment: str | None = None,
    seed: int | None = None,
    tags: dict[str, Any] | None = None,
    k: int | None = None,
) -> dict[str, Any]:
    """Evaluate ``flight``'s bot, or with candidates ``experiment``'s with ``seed`` (also
    given to an evaluation command) and ``tags`` on its record; a fault that leaves no
    record is the attempt's error (:class:`EvaluationFailedError`)."""
    name = experiment or flight.experiment
    try:
        record = _play(run, flight, experiment, seed, tags, k)
        return _with_gate(run, record, run.config.stage_gate(flight.stage_index))
    except BotError as exc:  # e.g. an exec: reference that stopped answering
        run.record(t.EvaluationFailed(str(exc), k))
        fault = f"evaluation failed, no record was written: {exc}"
        raise EvaluationFailedError(name, fault, run.command()) from None
    except OSError as exc:
        fault = (
            f"evaluation of {name} could not be stored ({exc.strerror or exc}); the "
            "history is intact"
        )
        raise EvaluationFailedError(str(run.paths.history), fault, run.command()) from None


def _with_gate(run: Run, record: dict[str, Any], settings: GateSettings) -> dict[str, Any]:
    """The record with the gate's decision on it (each rule's figures and verdict) when it
    has none of its own (the env evaluator's, an evaluation command's); the decision then
    reads it as it would have judged it (a crash before this write changes nothing)."""
    if isinstance(record.get("gate"), dict):
        return record
    judged = judge(settings, record)
    if judged.gate is None:  # not judgeable (e.g. counts its rules need are missing)
        return record
    records = history.load(run.paths.history)
    for stored in reversed(records):
        if stored.get("id") == record.get("id"):
            stored["gate"] = judged.gate
            fsio.atomic_write_json(run.paths.history, records)
            return stored
    return record


def _play(
    run: Run,
    flight: Attempt,
    experiment: str | None,
    seed: int | None,
    tags: dict[str, Any] | None,
    k: int | None,
) -> dict[str, Any]:
    settings = run.config.stage_gate(flight.stage_index)
    name = experiment or flight.experiment
    candidate = run.paths.bot(name)
    reference = recorded_reference(run, flight)
    shown = flight if experiment is None else flight.model_copy(update={"experiment": name})
    run.reporter.evaluation_started(shown, flight.reference or "")
    if run.config.evaluation_command:
        seed_args = [] if seed is None else ["--seed", str(seed)]
        return _external_evaluation(
            run, candidate, reference, settings, name, k, seed_args, tags or {}
        )
    if seed is None:
        seed = evaluation_seed(flight.experiment)
    extra = {
        "curriculum_experiment": name,
        "stage_index": flight.stage_index,
        "attempt": flight.attempt,
        **(tags or {}),
    }

    def progress(played: int, planned: int) -> None:
        run.reporter.evaluation_progress(shown, {"episodes": played, "planned": planned})

    if uses_env_evaluator(run, flight.stage_index):
        return _env_evaluation(run, candidate, reference, settings, seed, progress, extra, k)
    if uses_game_evaluator(run, flight.stage_index):
        from cosmic_curriculum.curriculum.game_evaluation import game_evaluation

        return game_evaluation(run, candidate, reference, settings, seed, progress, extra, k)
    if isinstance(reference, BuiltinBot):  # preflight refuses it for the arena
        raise BotError(f"reference {reference} plays Gymnasium and PettingZoo stages only")
    from cosmic_curriculum.evaluation.evaluate import run_evaluation

    return run_evaluation(
        candidate,
        reference,
        history_path=run.paths.history,
        gate=settings,
        seed=seed,
        on_progress=progress,
        extra=extra,
    )


def _env_evaluation(
    run: Run,
    candidate: Path,
    reference: Reference,
    settings: GateSettings,
    seed: int,
    progress: Callable[[int, int], None],
    extra: dict[str, Any],
    k: int | None,
) -> dict[str, Any]:
    """The built-in evaluator of a Gymnasium stage; the gate judges its record after
    (margin alone plays its episodes; sprt, threshold and several rules stop once the
    gate has decided: any rule failed, or all passed)."""
    from cosmic_curriculum.envs.evaluate import RANDOM, evaluate_env
    from cosmic_curriculum.errors import EvaluationError
    from cosmic_curriculum.evaluation.gate import decide

    if isinstance(reference, BuiltinBot) and reference.name == RANDOM:
        played: Path | str = RANDOM
    elif isinstance(reference, Path):
        played = reference
    else:  # preflight refuses search:N for a Gymnasium stage
        raise BotError(f"reference {reference}: it cannot play a Gymnasium stage")
    episodes = settings.planned_episodes

    def decided(counts: dict[str, Any]) -> bool:
        wins = (counts["wins_a"], counts["wins_b"], counts["draws"])
        verdict = decide(
            settings,
            *wins,
            planned_episodes=episodes,
            successes=counts["successes"],
            returns=counts["returns"],
        ).verdict
        return verdict != "continue"

    labels = {"candidate": run.rel(candidate), "reference": reference_label(run, reference)}
    try:
        return evaluate_env(
            candidate,
            played,
            history_path=run.paths.history,
            episodes=episodes,
            seed=seed,
            success_return=settings.success_return,
            deterministic=settings.deterministic,
            stop=None if settings.rules == ("margin",) else decided,
            on_progress=progress,
            extra={**extra, **labels},
        )
    except EvaluationError as exc:
        run.record(t.EvaluationFailed(str(exc), k))
        fault = f"evaluation failed, no record was written: {exc}"
        raise EvaluationFailedError(run.rel(candidate), fault, run.command()) from None


def _external_evaluation(
    run: Run,
    candidate: Path,
    reference: Reference,
    settings: GateSettings,
    experiment: str,
    k: int | None = None,
    seed_args: list[str] | None = None,
    tags: dict[str, Any] | None = None,
) -> dict[str, Any]:
    assert run.config.evaluation_command is not None
    remote = run.config.launcher.evaluate_remote
    handle = _remote_evaluation(run, experiment, k) if remote else None
    stream: EpisodeStream | None = None
    if handle is not None:
        run.reporter.info(f"{experiment}: following its evaluation job, started by an earlier run")
        before = _holder(run, k).history_before or 0
        launcher = run.launcher
    else:
        before = len(history.load(run.paths.history))
        run.record(t.EvaluationStarted(before, k, utc_now() if remote else None))
        if not remote and settings.rules != ("margin",):  # a sequential rule may stop it
            stream = EpisodeStream(
                run.paths.eval_stream(experiment),
                run.paths.eval_stop(experiment),
                settings,
                settings.episodes,
                run.reporter.warning,
            )
        argv = [
            *run.resolve_program(run.config.evaluation_command),
            run.rel(candidate),
            reference_label(run, reference),
            "--episodes",
            str(settings.episodes),
            *(seed_args or []),
        ]
        # Here the evaluator inherits the workspace lock like the trainer: if this run
        # dies, a second run is refused until the orphaned evaluator has appended its
        # record (which is then adopted), instead of evaluating the same bot twice at once.
        # A remote one is a Ray Job, found again by its id, like a training.
        # [launcher.env] is for what the configured launcher runs: here too when local.
        local_env = run.config.launcher.env if run.config.launcher.kind == "local" else {}
        launcher = run.launcher if remote else LocalLauncher(local_env)
        spec = logged_spec(
            run,
            experiment,
            argv,
            tag=run.paths.attempt_tag(experiment, "evaluate"),
            launch_id=_evaluation_launch_id(run, experiment, k) if remote else "",
            env={
                DETERMINISTIC_ENV: "1" if settings.deterministic else "0",
                **(stream.env() if stream is not None else {}),
            },
        )
        try:
            handle = launcher.start(spec)
        except LaunchError as exc:
            if stream is not None:
                stream.close()
            run.record(t.EvaluationFailed(f"evaluation job could not be submitted: {exc}", k))
            fault = f"the evaluation job could not be submitted ({exc})"
            raise EvaluationFailedError(experiment, fault, run.command()) from None
    log_path = run.paths.log(experiment)
    try:
        outcome = watch(
            launcher,
            handle,
            on_poll=None if stream is None else stream.poll,
            timeout=run.opts.attempt_timeout,
            grace=run.opts.grace_seconds,
        )
    finally:
        if stream is not None:
            stream.close()
    if outcome.returncode != 0 or outcome.timed_out:
        tail = runner.tail_text(log_path, lines=8)
        run.record(
            t.EvaluationFailed(f"evaluation command exited with status {outcome.returncode}", k)
        )
        fault = f"evaluation_command failed for {experiment} (status {outcome.returncode})"
        tail_quote = f"last lines of {run.rel(log_path)}:\n{indent(tail)}"
        raise EvaluationFailedError(str(run.config_path), fault, run.command(), tail_quote)
    return _adopt(run, experiment, before, tags)
