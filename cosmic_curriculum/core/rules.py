"""The curriculum's rules that are not transitions: pure functions of the state, the config
and facts the shell gathered (files, records, times), each with a table-driven test.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.layout import experiment_name
from cosmic_curriculum.workspace.state import CurriculumState

SELECTION_KEY = "selection"  # in a record: "candidate" (ranks) or "fresh" (decides)
CANDIDATE_KEY = "candidate_k"  # in a record: which candidate it evaluated


def parse_time(stamp: str) -> float:
    """An ISO-8601 time as a POSIX timestamp; a malformed one is infinitely late (never
    "written after" anything)."""
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return float("inf")


def own_candidate_record(
    records: list[dict[str, Any]], experiment: str, selection: str, since: str
) -> dict[str, Any] | None:
    """A record of ``experiment`` with this ``selection`` written after ``since``."""
    started = parse_time(since)
    for record in reversed(records):
        if (
            record.get("curriculum_experiment") == experiment
            and record.get(SELECTION_KEY) == selection
            and "id" in record
            and parse_time(str(record.get("created_at", ""))) >= started - 1
        ):
            return record
    return None


def skipped_experiment(state: CurriculumState, config: CurriculumConfig) -> str:
    """The attempt `--skip-to-next-stage` accepts: the blocked stage's last one (with
    candidates, the one that attempt chose)."""
    i = state.stage_index
    return attempt_experiment(state, config, i, max(0, state.attempt - 1))


def attempt_experiment(
    state: CurriculumState, config: CurriculumConfig, stage_index: int, attempt: int
) -> str:
    """The experiment a decided attempt stands for: the candidate it chose when it had
    candidates (its log entry says which), else its name by the naming scheme."""
    for entry in reversed(state.stage_log(stage_index)):
        if entry.attempt == attempt and entry.override is None and entry.candidates:
            return entry.experiment
    return experiment_name(stage_index, config.stages[stage_index].name, attempt)
