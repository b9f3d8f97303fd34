"""The run's state as tracker events, and their queueing in the outbox.

Events are derived from the saved state, never from what a step just did: every
decision is in ``state.log`` (saved at its Decide, before its commit), so queueing what
the outbox lacks after any step, or at the next run's start after a kill -9, loses none
and duplicates none (each event has an id).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosmic_curriculum.tracking import metrics as m
from cosmic_curriculum.tracking import outbox

if TYPE_CHECKING:
    from cosmic_curriculum.workspace.config import CurriculumConfig
    from cosmic_curriculum.workspace.state import CurriculumState, LogEntry


def start_event(
    config: CurriculumConfig,
    stage_index: int,
    attempt: int,
    experiment: str,
    *,
    timesteps: int | None,
    settings: Mapping[str, Any],
    candidate: int | None = None,
) -> dict[str, Any]:
    stage = config.stages[stage_index] if stage_index < len(config.stages) else None
    name = stage.name if stage is not None else f"stage{stage_index + 1}"
    flags = [*config.stage_standing_args(stage_index), *stage.flags] if stage else []
    gate = config.stage_gate(stage_index) if stage else None
    extra = dict(settings)
    if gate is not None:
        extra["gate_rule"] = gate.rule_label
    return {
        "id": f"start:{experiment}",
        "kind": "start",
        "key": experiment,
        "stage_index": stage_index,
        "stage": name,
        "attempt": attempt,
        "params": m.attempt_params(
            stage_index=stage_index,
            stage_name=name,
            attempt=attempt,
            experiment=experiment,
            flags=flags,
            timesteps=timesteps,
            settings=extra,
            candidate=candidate,
        ),
    }


def decision_events(
    entry: LogEntry, number: int, record: Mapping[str, Any] | None, status: str
) -> list[dict[str, Any]]:
    """The decision ``number`` (from 1) on its attempt's run and on the curriculum's run;
    the attempt's run ends with it. Artifacts: the decided bot and REPORT.md."""
    raw = entry.model_dump()
    values = m.decision_metrics(raw, record, number, status)
    values["forced_retry"] = 1.0 if entry.forced_retry else 0.0
    tags = m.decision_tags(raw, status)
    common = {"kind": "decision", "step": number, "metrics": values, "tags": tags}
    return [
        {
            **common,
            "id": f"decision:{number}:{entry.experiment}",
            "key": entry.experiment,
            "stage_index": entry.stage_index,
            "artifacts": [f"bots/{entry.experiment}.json", "REPORT.md"],
            "end": True,
        },
        {**common, "id": f"curriculum:{number}", "key": m.CURRICULUM_KEY},
    ]


def candidate_end(candidate: Mapping[str, Any], stage_index: int) -> dict[str, Any]:
    """A candidate that was not chosen: its selection score, and its run ends."""
    score = m.number(candidate.get("score"))
    return {
        "id": f"candidate:{candidate.get('experiment')}",
        "kind": "decision",
        "key": str(candidate.get("experiment")),
        "stage_index": stage_index,
        "step": 0,
        "metrics": {"selection_score": score} if score is not None else {},
        "tags": {"chosen": "true" if candidate.get("chosen") else "false"},
        "end": not candidate.get("chosen"),
    }


def events_of_state(
    state: CurriculumState,
    config: CurriculumConfig,
    records: Mapping[str, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Every event the state stands for, in order (ids make re-queueing harmless)."""
    out: list[dict[str, Any]] = []
    for n, entry in enumerate(state.log, start=1):
        i = entry.stage_index
        cands = entry.candidates or []
        for c in cands:
            out.append(
                start_event(
                    config,
                    i,
                    entry.attempt,
                    str(c.get("experiment")),
                    timesteps=None,
                    settings={},
                    candidate=c.get("k"),
                )
            )
        if not cands:
            out.append(
                start_event(config, i, entry.attempt, entry.experiment, timesteps=None, settings={})
            )
        out += [candidate_end(c, i) for c in cands if not c.get("chosen")]
        record = records.get(entry.eval_id or "")
        status = state.status if n == len(state.log) else "in_progress"
        out += decision_events(entry, n, record, status)
    flight = state.in_flight
    if flight is not None and flight.phase != "committed":
        settings = {"resume_from": flight.resume_from, "reference": flight.reference}
        settings = {k: v for k, v in settings.items() if v is not None}
        for cand in flight.candidates or []:
            out.append(
                start_event(
                    config,
                    flight.stage_index,
                    flight.attempt,
                    cand.experiment,
                    timesteps=flight.timesteps,
                    settings={**settings, "seed": cand.seed},
                    candidate=cand.k,
                )
            )
        if not flight.candidates:
            out.append(
                start_event(
                    config,
                    flight.stage_index,
                    flight.attempt,
                    flight.experiment,
                    timesteps=flight.timesteps,
                    settings=settings,
                )
            )
    return out


def queue(
    logs: Path,
    state: CurriculumState,
    config: CurriculumConfig,
    records: Mapping[str, Mapping[str, Any]],
) -> int:
    """Append (fsynced) the events the outbox lacks; how many."""
    path = outbox.events_file(logs)
    known = {e.get("id") for e in outbox.read_lines(path)}
    new: list[dict[str, Any]] = []
    for event in events_of_state(state, config, records):
        if event["id"] not in known:
            known.add(event["id"])
            new.append(event)
    outbox.append(path, new)
    return len(new)
