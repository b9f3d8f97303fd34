"""Evaluate a trained attempt against its reference, exactly once.

The built-in evaluator plays seat-swapped pairs and writes a record carrying its gate
verdict; an ``evaluation_command`` appends a record that is adopted afterwards. A record
this attempt already wrote (before a crash) is adopted instead of evaluating again.
"""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosmic_curriculum import fsio, history, runner
from cosmic_curriculum.curriculum import transitions as t
from cosmic_curriculum.curriculum.context import Run
from cosmic_curriculum.curriculum.resume import recorded_reference, reference_label
from cosmic_curriculum.curriculum.training import indent, parse_time, resolve_program
from cosmic_curriculum.errors import BotError, EvaluationError
from cosmic_curriculum.gate import GateSettings
from cosmic_curriculum.launchers import LaunchSpec, watch
from cosmic_curriculum.launchers.local import LocalLauncher
from cosmic_curriculum.state import Attempt, utc_now

if TYPE_CHECKING:
    from cosmic_curriculum.bots.external import ExecSpec


def evaluate(run: Run) -> None:
    """``trained`` → ``evaluated`` with the record's id saved."""
    flight = run.flight
    if flight.eval_id is not None and history.find(run.paths.history, flight.eval_id):
        run.record(t.Evaluated(flight.eval_id), pause="evaluated")
        return
    record = _own_record(run, flight)
    if record is None:
        try:
            record = _run_evaluation(run, flight)
        except BotError as exc:  # e.g. an exec: reference that stopped answering
            run.record(t.EvaluationFailed(str(exc)))
            raise EvaluationError(
                f"{flight.experiment}: evaluation failed, no record was written: {exc}; "
                f"fix it and run `{run.command()}` to evaluate again (training is kept)"
            ) from None
        except OSError as exc:
            raise EvaluationError(
                f"{run.paths.history}: evaluation of {flight.experiment} could not be "
                f"stored ({exc.strerror or exc}); the history is intact; fix it and re-run "
                f"`{run.command()}` (training is kept)"
            ) from None
    run.record(t.Evaluated(str(record["id"])), pause="evaluated")


def _own_record(run: Run, flight: Attempt) -> dict[str, Any] | None:
    """A record this attempt's evaluation appended before a crash (never evaluate twice)."""
    records = history.load(run.paths.history)
    trained_at = parse_time(flight.started_at)
    for record in reversed(records):
        if record.get("curriculum_experiment") != flight.experiment or "id" not in record:
            continue
        # Only a record of this training counts (not one of a curriculum started over).
        if parse_time(str(record.get("created_at", ""))) >= trained_at - 1:
            return record
    before = flight.history_before
    if run.config.evaluation_command and before is not None and len(records) > before:
        return _adopt(run, flight, before)
    return None


def _adopt(run: Run, flight: Attempt, before: int) -> dict[str, Any]:
    record = history.adopt_new_records(run.paths.history, before)
    if "curriculum_experiment" not in record:
        records = history.load(run.paths.history)
        records[-1]["curriculum_experiment"] = flight.experiment
        fsio.atomic_write_json(run.paths.history, records)
        record = records[-1]
    return record


def _run_evaluation(run: Run, flight: Attempt) -> dict[str, Any]:
    settings = run.config.stage_gate(flight.stage_index)
    candidate = run.paths.bot(flight.experiment)
    reference = recorded_reference(run, flight)
    run.reporter.evaluation_started(flight, flight.reference or "")
    if run.config.evaluation_command:
        return _external_evaluation(run, candidate, reference, settings)
    from cosmic_curriculum.evaluate import run_evaluation

    seed = int(hashlib.sha256(flight.experiment.encode()).hexdigest()[:8], 16)
    return run_evaluation(
        candidate,
        reference,
        history_path=run.paths.history,
        gate=settings,
        seed=seed,
        on_progress=lambda played, planned: run.reporter.evaluation_progress(
            flight, {"episodes": played, "planned": planned}
        ),
        extra={
            "curriculum_experiment": flight.experiment,
            "stage_index": flight.stage_index,
            "attempt": flight.attempt,
        },
    )


def _external_evaluation(
    run: Run, candidate: Path, reference: Path | ExecSpec, settings: GateSettings
) -> dict[str, Any]:
    assert run.config.evaluation_command is not None
    before = len(history.load(run.paths.history))
    run.record(t.EvaluationStarted(before))
    experiment = run.flight.experiment
    argv = [
        *resolve_program(run, run.config.evaluation_command),
        run.rel(candidate),
        reference_label(run, reference),
        "--episodes",
        str(settings.episodes),
    ]
    log_path = run.paths.log(experiment)
    with open(log_path, "ab") as log:
        log.write(f"# {utc_now()} {shlex.join(argv)}\n".encode())
    # The evaluator inherits the workspace lock like the trainer: if this run dies, a
    # second run is refused until the orphaned evaluator has appended its record
    # (which is then adopted), instead of evaluating the same bot twice at once. It always
    # runs here: the built-in evaluation is local, and so is its replacement.
    local = LocalLauncher()
    spec = LaunchSpec(
        argv=argv,
        cwd=run.ws,
        log_path=log_path,
        pass_fds=run.lock_fds(),
        tag=run.paths.attempt_tag(experiment, "evaluate"),
    )
    outcome = watch(
        local,
        local.start(spec),
        timeout=run.opts.attempt_timeout,
        grace=run.opts.grace_seconds,
    )
    if outcome.returncode != 0 or outcome.timed_out:
        tail = runner.tail_text(log_path, lines=8)
        run.record(
            t.EvaluationFailed(f"evaluation command exited with status {outcome.returncode}")
        )
        raise EvaluationError(
            f"{run.config_path}: evaluation_command failed for {experiment} "
            f"(status {outcome.returncode}); fix it and run `{run.command()}` to evaluate "
            f"again (training is kept); last lines of {run.rel(log_path)}:\n{indent(tail)}"
        )
    return _adopt(run, run.flight, before)
