"""The gate against forgetting in the shell (``[gate] against = "all"``, docs/GATES.md).

After the attempt's evaluation against its reference has passed, its bot plays every
earlier stage's passing bot that is not that reference, oldest stage first, through the
same call as the evaluation itself (``evaluation.compare_with_earlier`` passes it: another
reference and the corrected gate), one record each, tagged ``comparison = "forgetting"``
and ``against_stage``. A record already written (before a crash) is adopted by its tags,
so a kill between two comparisons plays only the missing ones on the next run. The
comparisons stop at the first clear regression: the gate has failed. The decision
(core/transitions.py) judges and lists the records this module returns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cosmic_curriculum.core.decisions import judge
from cosmic_curriculum.core.rules import (
    AGAINST_BOT_KEY,
    AGAINST_EXPERIMENT_KEY,
    AGAINST_KEY,
    CANDIDATE_KEY,
    COMPARISON_KEY,
    FAMILY_KEY,
    FORGETTING,
    SELECTION_KEY,
    evaluation_seed,
    forgetting_opponents,
    own_record,
)
from cosmic_curriculum.curriculum.context import Run
from cosmic_curriculum.errors import ConfigError, EvaluationFailedError
from cosmic_curriculum.system import fsio
from cosmic_curriculum.workspace import history


def refuse_with_evaluation_command(run: Run, stages: range) -> None:
    """``against = "all"`` plays built-in evaluations only: the records an evaluation
    command appends carry no tags, so a resumed run could not tell which earlier bot one
    played. Refused before any training, with one line."""
    for j in stages:
        if run.config.stage_gate(j).against == "all":
            raise ConfigError(
                f"{run.config_path}: stage {j + 1} {run.config.stages[j].name}: gate against "
                '= "all" needs the built-in evaluator, not evaluation_command; remove '
                'evaluation_command or set against = "previous"'
            )


def _since(run: Run, main: dict[str, Any]) -> str:
    """When the evaluated bot's training started: its records are written after it."""
    k = main.get(CANDIDATE_KEY)
    if isinstance(k, int) and run.flight.candidates:
        return run.candidate(k).started_at or run.flight.started_at
    return run.flight.started_at


# How one comparison is played: evaluation._run_evaluation(run, flight, experiment, seed,
# tags, k, (reference, gate)), passed in (that module calls this one).
Play = Callable[..., dict[str, Any]]


def comparison_records(run: Run, main: dict[str, Any], play: Play) -> list[dict[str, Any]]:
    """The forgetting comparisons of the attempt whose evaluation against its reference
    is ``main``, in order: adopted where recorded, played (``play``) where missing; none
    when the stage's gate is ``against = "previous"``, there is no earlier bot besides
    the reference, or ``main`` itself failed (nothing could undo that)."""
    from cosmic_curriculum.evaluation.forgetting import comparison_settings, judge_comparison

    flight = run.flight
    settings = run.config.stage_gate(flight.stage_index)
    if settings.against != "all" or judge(settings, main).verdict != "pass":
        return []
    opponents = forgetting_opponents(
        run.state, flight.stage_index, flight.reference or "", lambda e: run.rel(run.paths.bot(e))
    )
    m = len(opponents)
    if m == 0:
        return []
    name = str(main.get("curriculum_experiment") or flight.experiment)
    since, selection = _since(run, main), main.get(SELECTION_KEY)
    base = {key: main[key] for key in (SELECTION_KEY, CANDIDATE_KEY) if key in main}
    played = comparison_settings(settings, m)
    out: list[dict[str, Any]] = []
    for j, experiment in opponents:
        bot = run.paths.bot(experiment)
        record = own_record(history.load(run.paths.history), name, since, selection, j)
        if record is None:
            if not bot.is_file():
                raise EvaluationFailedError(
                    run.rel(bot),
                    f"stage {j + 1}'s passing bot is missing, so {name} cannot play it "
                    '(against = "all"); restore it (e.g. from git)',
                    run.command(),
                )
            run.reporter.info(
                f'{name}: against = "all": playing stage {j + 1}\'s bot {run.rel(bot)} '
                f"({len(out) + 1} of {m})"
            )
            tags = {
                **base,
                COMPARISON_KEY: FORGETTING,
                AGAINST_KEY: j,
                AGAINST_EXPERIMENT_KEY: experiment,
                AGAINST_BOT_KEY: run.rel(bot),
                FAMILY_KEY: m,
            }
            seed = evaluation_seed(f"{name}:against:{j}")
            record = play(run, flight, name, seed, tags, None, (bot, played))
        decision = judge_comparison(settings, m, record)
        record = _store_gate(run, record, decision.to_dict())
        fsio.fault_point(f"forgetting:compared:{name}")  # tests: a kill between two of them
        out.append(record)
        if decision.verdict != "pass":
            break  # a clear regression: the gate has failed
    return out


def _store_gate(run: Run, record: dict[str, Any], gate: dict[str, Any]) -> dict[str, Any]:
    """The record with the comparison's decision as its ``gate`` (a margin stage's sign
    test replaces the margin verdict the evaluator wrote, an SPRT undecided at the cap
    its fail); written once."""
    own = record.get("gate")
    same = isinstance(own, dict) and all(own.get(k) == gate[k] for k in ("rule", "verdict"))
    if same:
        return record
    records = history.load(run.paths.history)
    for stored in reversed(records):
        if stored.get("id") == record.get("id"):
            stored["gate"] = gate
            fsio.atomic_write_json(run.paths.history, records)
            return stored
    return record
