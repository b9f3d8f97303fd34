from __future__ import annotations

import json
from pathlib import Path

import pytest

from cosmic_curriculum.errors import EvaluationError, StateError
from cosmic_curriculum.workspace import history

SEED = [{"wins_a": 50, "wins_b": 40, "draws": 10, "episodes": 100, "note": "seed"}]


def test_seed_history_loads_and_appends_keep_old_records(tmp_path: Path) -> None:
    path = tmp_path / "eval_history.json"
    path.write_text(json.dumps(SEED))
    assert history.load(path) == SEED
    stored = history.append_record(path, {"wins_a": 1, "wins_b": 0, "draws": 1, "episodes": 2})
    assert stored["id"].startswith("ev-") and "created_at" in stored
    records = json.loads(path.read_text())
    assert records[0] == SEED[0] and records[1] == stored
    assert history.find(path, stored["id"]) == stored
    assert history.find(path, "ev-missing") is None


def test_missing_history_is_empty(tmp_path: Path) -> None:
    assert history.load(tmp_path / "eval_history.json") == []


@pytest.mark.parametrize(
    "content",
    [
        "{}",
        "[1]",
        '[{"wins_a": 1}]',
        '[{"wins_a": 1, "wins_b": 1, "draws": 1, "episodes": 5}]',
        "[",
        "",
    ],
)
def test_corrupt_history_is_refused_untouched(tmp_path: Path, content: str) -> None:
    path = tmp_path / "eval_history.json"
    path.write_text(content)
    with pytest.raises(StateError) as info:
        history.append_record(path, {"wins_a": 1, "wins_b": 0, "draws": 0, "episodes": 1})
    assert "eval_history.json" in str(info.value)
    assert path.read_text() == content


def test_adopt_record_from_external_command(tmp_path: Path) -> None:
    path = tmp_path / "eval_history.json"
    path.write_text(json.dumps(SEED))
    with pytest.raises(EvaluationError, match="exactly one"):
        history.adopt_new_records(path, 1)
    path.write_text(json.dumps([*SEED, {"wins_a": 3, "wins_b": 1, "draws": 0, "episodes": 4}]))
    record = history.adopt_new_records(path, 1)
    assert record["id"] and history.find(path, record["id"])["wins_a"] == 3
