"""The state as tracker events: one run per attempt or candidate, each decision on its
run and the curriculum's, queued once whatever the number of calls."""

from __future__ import annotations

from pathlib import Path

from fakes.workspace import stages_toml

from cosmic_curriculum.tracking import outbox
from cosmic_curriculum.tracking.queue import events_of_state, queue
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.state import CurriculumState

CANDS = [
    {"k": 1, "experiment": "curric-s1-score-c1", "eval_id": "e1", "score": 0.4},
    {"k": 2, "experiment": "curric-s1-score-c2", "eval_id": "e2", "score": 0.6, "chosen": True},
]


def state() -> CurriculumState:
    return CurriculumState.model_validate(
        {
            "stage_index": 1,
            "attempt": 0,
            "status": "in_progress",
            "log": [
                {
                    "stage_index": 0,
                    "experiment": "curric-s1-score-c2",
                    "attempt": 0,
                    "decision": "pass",
                    "eval_id": "r1",
                    "candidates": CANDS,
                },
            ],
            "in_flight": {
                "stage_index": 1,
                "attempt": 0,
                "experiment": "curric-s2-defend",
                "timesteps": 400,
                "reference": "bots/rookie.json",
            },
        }
    )


def test_events_of_a_state_with_candidates_and_an_attempt_in_flight(tmp_path: Path) -> None:
    (tmp_path / "stages.toml").write_text(stages_toml(["score", "defend"]))
    config = load_config(tmp_path / "stages.toml")
    events = events_of_state(state(), config, {"r1": {"wins_a": 9, "wins_b": 1, "draws": 0}})
    assert [(e["id"], e["key"]) for e in events] == [
        ("start:curric-s1-score-c1", "curric-s1-score-c1"),
        ("start:curric-s1-score-c2", "curric-s1-score-c2"),
        ("candidate:curric-s1-score-c1", "curric-s1-score-c1"),
        ("decision:1:curric-s1-score-c2", "curric-s1-score-c2"),
        ("curriculum:1", "curriculum"),
        ("start:curric-s2-defend", "curric-s2-defend"),
    ]
    lost = events[2]
    assert lost["end"] and lost["metrics"] == {"selection_score": 0.4}
    assert events[3]["metrics"]["wins"] == 9.0 and events[3]["end"]
    assert events[1]["params"]["candidate"] == "2"
    flight = events[-1]["params"]
    assert flight["settings/reference"] == "bots/rookie.json" and flight["timesteps"] == "400"
    assert flight["flags"] == "--reset-std 0.3 --ent-coef 0.001 --stage-flag defend"

    logs = tmp_path / "logs"
    assert queue(logs, state(), config, {}) == 6
    assert queue(logs, state(), config, {}) == 0  # queued once, by id
    assert len(outbox.read_lines(outbox.events_file(logs))) == 6
