"""`status --json` trends: per stage, each attempt's score, training progress and wall
time, so a script can tell whether retries are improving."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pytest
from fakes.workspace import make_workspace
from typer.testing import CliRunner

from cosmic_curriculum.cli import app
from cosmic_curriculum.progress import format_progress
from cosmic_curriculum.workspace.layout import HISTORY_FILE, STATE_FILE
from cosmic_curriculum.workspace.state import Attempt, CurriculumState, LogEntry
from cosmic_curriculum.workspace.state_file import save_state
from cosmic_curriculum.workspace.trainer_log import launched_at

S1 = "curric-s1-score"


def entry(attempt: int, wins_a: int, wins_b: int, decision: Literal["pass", "fail"]) -> LogEntry:
    name = S1 if attempt == 0 else f"{S1}-retry{attempt}"
    return LogEntry(
        stage_index=0,
        experiment=name,
        attempt=attempt,
        eval={"wins_a": wins_a, "wins_b": wins_b, "draws": 0, "episodes": wins_a + wins_b},
        decision=decision,
        eval_id=f"ev-{attempt}",
        decided_at=f"2025-01-01T0{attempt}:30:00+00:00",
    )


def write_log(ws: Path, experiment: str, started: str | None, steps: int, win_rate: float) -> None:
    header = f"# {started} scripts/run_training.sh {experiment}\n" if started else "no header\n"
    progress = format_progress(timesteps=steps, total=4096, fps=900.0, win_rate=win_rate)
    (ws / "logs" / f"{experiment}.log").write_text(header + "training...\n" + progress + "\n")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    (ws / "logs").mkdir(exist_ok=True)
    log = [entry(0, 4, 16, "fail"), entry(1, 8, 12, "fail"), entry(2, 10, 10, "fail")]
    skip = LogEntry(
        stage_index=0, experiment=f"{S1}-retry2", attempt=2, decision="pass",
        override="skip_to_next_stage", reason="good enough",
    )  # fmt: skip
    flight = Attempt(stage_index=1, experiment="curric-s2-defend", attempt=0, phase="training")
    state = CurriculumState(stage_index=1, log=[*log, skip], in_flight=flight)
    save_state(ws / STATE_FILE, state)
    records = [
        {"id": "ev-0", "wins_a": 4, "wins_b": 16, "draws": 0, "episodes": 20, "seconds": 12.5},
        {"id": "ev-1", "wins_a": 8, "wins_b": 12, "draws": 0, "episodes": 20, "seconds": 11.0},
    ]
    (ws / HISTORY_FILE).write_text(json.dumps(records))
    write_log(ws, S1, "2025-01-01T00:00:00+00:00", 4096, 0.2)
    write_log(ws, f"{S1}-retry1", "2025-01-01T01:10:00+00:00", 4096, 0.4)
    write_log(ws, f"{S1}-retry2", None, 2048, 0.5)  # no launch header: no wall time
    write_log(ws, "curric-s2-defend", "2025-01-01T04:00:00+00:00", 1024, 0.1)
    return ws


def test_status_json_has_a_trend_per_stage(ws: Path) -> None:
    result = CliRunner().invoke(app, ["status", "--workspace", str(ws), "--json"])
    assert result.exit_code == 0, result.output
    stages = json.loads(result.stdout)["stages"]
    first = stages[0]["trend"]
    assert [r["experiment"] for r in first] == [S1, f"{S1}-retry1", f"{S1}-retry2"]
    assert [r["score"] for r in first] == [0.2, 0.4, 0.5]
    assert first[0]["score_change"] is None
    assert [r["score_change"] for r in first[1:]] == pytest.approx([0.2, 0.1])
    assert [r["timesteps"] for r in first] == [4096, 4096, 2048]
    assert [r["win_rate"] for r in first] == [0.2, 0.4, 0.5]
    assert first[0]["started_at"] == "2025-01-01T00:00:00+00:00"
    assert first[0]["wall_seconds"] == 1800 and first[1]["wall_seconds"] == 1200
    assert first[2]["wall_seconds"] is None and first[2]["started_at"] is None
    assert [r["eval_seconds"] for r in first] == [12.5, 11.0, None]
    assert [r["decision"] for r in first] == ["fail", "fail", "fail"]
    # the attempt in flight closes its stage's trend: progress so far, no score yet
    (flying,) = stages[1]["trend"]
    assert flying["phase"] == "training" and flying["decision"] is None
    assert flying["timesteps"] == 1024 and flying["score"] is None
    assert stages[2]["trend"] == []


def test_launch_header_is_read_from_the_first_line_only(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    assert launched_at(log) is None
    log.write_text("# not-a-time cmd\n")
    assert launched_at(log) is None
    log.write_text("# 2025-02-03T04:05:06+00:00 a b c\n# 2025-03-01T00:00:00+00:00 again\n")
    assert launched_at(log) == "2025-02-03T04:05:06+00:00"
    assert launched_at(tmp_path) is None  # a directory where the log should be
