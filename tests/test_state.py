from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cosmic_curriculum.errors import LockError, StateError
from cosmic_curriculum.workspace.lock import WorkspaceLock
from cosmic_curriculum.workspace.state import Attempt, CurriculumState
from cosmic_curriculum.workspace.state_file import check_stage_range, load_state, save_state

SEED = {
    "stage_index": 1,
    "attempt": 2,
    "status": "in_progress",
    "log": [
        {
            "stage_index": 0,
            "experiment": "curric-s1-score",
            "attempt": 0,
            "eval": {"wins_a": 50, "wins_b": 40, "draws": 10, "episodes": 100},
            "decision": "pass",
        },
        {
            "stage_index": 1,
            "experiment": "curric-s2-defend",
            "attempt": 0,
            "eval": {"wins_a": 20, "wins_b": 60, "draws": 20, "episodes": 100},
            "decision": "fail",
            "override": None,
        },
    ],
}


def test_shipped_state_is_a_seed_file(repo_root: Path) -> None:
    data = json.loads((repo_root / "curriculum_state.json").read_text())
    assert data == {"stage_index": 0, "attempt": 0, "status": "in_progress", "log": []}
    assert load_state(repo_root / "curriculum_state.json").status == "in_progress"


def test_seed_file_roundtrip_keeps_every_key(tmp_path: Path) -> None:
    path = tmp_path / "curriculum_state.json"
    seed = json.loads(json.dumps(SEED))
    seed["log"][0]["custom_key"] = "kept"
    seed["operator_note"] = {"x": 1}
    path.write_text(json.dumps(seed))
    state = load_state(path)
    assert state.stage_index == 1 and state.attempt == 2
    assert state.passing_entry(0) is not None and state.passing_entry(1) is None
    save_state(path, state)
    back = json.loads(path.read_text())
    for key, value in seed.items():
        if key != "log":
            assert back[key] == value
    for old, new in zip(seed["log"], back["log"], strict=True):
        for key, value in old.items():
            if value is not None:
                assert new[key] == value
    assert back["schema_version"] == 2


def test_missing_state_is_fresh(tmp_path: Path) -> None:
    state = load_state(tmp_path / "curriculum_state.json")
    assert (state.stage_index, state.attempt, state.status, state.log) == (0, 0, "in_progress", [])


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("", "is empty"),
        ('{"stage_index": 0, "att', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"stage_index": "two"}', "stage_index"),
        ('{"status": "paused"}', "status"),
        ('{"schema_version": 99}', "newer cosmic-curriculum"),
        ('{"log": [{"stage_index": 0}]}', "log.0"),
    ],
)
def test_bad_state_refused_and_untouched(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "curriculum_state.json"
    path.write_text(content)
    with pytest.raises(StateError) as info:
        load_state(path)
    msg = str(info.value)
    assert fragment in msg and "curriculum_state.json" in msg and "\n" not in msg
    if fragment != "newer cosmic-curriculum":
        assert "git show HEAD:curriculum_state.json" in msg
    assert path.read_text() == content


def test_stage_index_out_of_range(tmp_path: Path) -> None:
    state = CurriculumState(stage_index=4)
    with pytest.raises(StateError, match="out of range"):
        check_stage_range(state, 4, tmp_path / "curriculum_state.json")
    check_stage_range(CurriculumState(stage_index=4, status="done"), 4, tmp_path)


def test_in_flight_attempt_roundtrip(tmp_path: Path) -> None:
    path = tmp_path / "curriculum_state.json"
    state = CurriculumState()
    state.in_flight = Attempt(stage_index=0, attempt=1, experiment="curric-s1-score-retry1")
    state.in_flight.phase = "trained"
    save_state(path, state)
    again = load_state(path)
    assert again.in_flight is not None and again.in_flight.phase == "trained"
    with pytest.raises(ValueError):
        again.in_flight.phase = "bogus"  # type: ignore[assignment]


def test_lock_refuses_second_holder_and_names_it(tmp_path: Path) -> None:
    with WorkspaceLock(tmp_path):
        with pytest.raises(LockError) as info:
            WorkspaceLock(tmp_path).acquire()
        assert "pid" in str(info.value)
    WorkspaceLock(tmp_path).acquire().release()  # free again


def test_lock_survives_in_an_inheriting_child(tmp_path: Path) -> None:
    """A trainer that inherited the descriptor keeps the workspace locked."""
    lock = WorkspaceLock(tmp_path).acquire()
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"], pass_fds=(lock.fd,)
    )
    try:
        lock.release()
        with pytest.raises(LockError):
            WorkspaceLock(tmp_path).acquire()
    finally:
        child.kill()
        child.wait()
    WorkspaceLock(tmp_path).acquire().release()


def test_a_first_release_state_round_trips_byte_for_byte(tmp_path: Path) -> None:
    """Every key the first release wrote (some then undeclared) keeps its place and value."""
    from cosmic_curriculum.system.fsio import dumps_json

    entry = {"stage_index": 0, "experiment": "curric-s1-a", "attempt": 0, "decision": "fail"}
    forced = {**entry, "attempt": 1, "decision": "pass", "reason": "r", "forced_retry": True}
    flight = {
        "stage_index": 1,
        "attempt": 0,
        "experiment": "curric-s2-b",
        "phase": "trained",
        "resume_from": "checkpoints/curric-s1-a-retry1/final.zip",
        "reference": "bots/curric-s1-a-retry1.json",
        "timesteps": 400,
        "started_at": "2026-01-01T00:00:00+00:00",
        "interrupted": False,
        "launched": True,
        "last_resume": "checkpoints/curric-s2-b/step_200.zip",
        "last_progress": {"timesteps": 400, "total": 400},
        "history_before": 2,
    }
    state = {
        "stage_index": 1,
        "attempt": 0,
        "status": "in_progress",
        "log": [entry, forced],
        "schema_version": 2,
        "in_flight": flight,
        "config_hash": "c",
        "stage_hashes": ["h1", "h2"],
        "push_pending": False,
        "created_at": "2026-01-01T00:00:00+00:00",
        "updated_at": "2026-01-01T00:00:01+00:00",
        "stage_definitions": [{"name": "a"}, {"name": "b"}],
        "forced_retry": {"stage_index": 0, "attempt": 1, "reason": "r"},
        "a_key_of_the_user": [1, 2],
    }
    path = tmp_path / "curriculum_state.json"
    path.write_text(dumps_json(state))
    assert dumps_json(load_state(path).to_json()) == path.read_text()


def test_continuations_round_trip_and_a_state_without_them_keeps_its_shape(tmp_path: Path) -> None:
    path = tmp_path / "curriculum_state.json"
    flight = Attempt(stage_index=0, attempt=1, experiment="curric-s1-a-retry1")
    save_state(path, CurriculumState(attempt=1, in_flight=flight))
    written = json.loads(path.read_text())["in_flight"]
    assert "continuations" not in written and "interrupted_by" not in written  # old shape
    written["continuations"] = [
        {"reason": "TIMEOUT", "at": "2026-12-01T10:00:00+00:00", "launch_id": "j-cont1"},
        {"reason": "PREEMPTED", "at": "2026-12-01T11:00:00+00:00", "checkpoint": "c.zip"},
    ]
    written["interrupted_by"] = "SIGTERM"
    path.write_text(json.dumps({"attempt": 1, "in_flight": written}))
    loaded = load_state(path).in_flight
    assert loaded is not None and loaded.interrupted_by == "SIGTERM"
    assert [(c.reason, c.checkpoint, c.launch_id) for c in loaded.continuations or []] == [
        ("TIMEOUT", None, "j-cont1"),
        ("PREEMPTED", "c.zip", ""),
    ]
    save_state(path, load_state(path))
    again = json.loads(path.read_text())["in_flight"]
    assert again["continuations"][0] == written["continuations"][0]
