"""report: `status` data, its table and JSON, the review markdown of a blocked stage, the
live progress of a log, and the reporters (the console one never raises)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.workspace import make_workspace
from typer.testing import CliRunner

from cosmic_curriculum.cli import app
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.reports.review import attempt_row, review_markdown
from cosmic_curriculum.status.facts import status_data
from cosmic_curriculum.status.text import render_status
from cosmic_curriculum.workspace.layout import STATE_FILE
from cosmic_curriculum.workspace.state import Attempt, CurriculumState, LogEntry
from cosmic_curriculum.workspace.state_file import save_state
from cosmic_curriculum.workspace.trainer_log import latest_progress

S1, S2 = "curric-s1-score", "curric-s2-defend"


def counts(wins_a: int, wins_b: int, draws: int) -> dict[str, int]:
    return {"wins_a": wins_a, "wins_b": wins_b, "draws": draws, "episodes": wins_a + wins_b + draws}


PASSED = LogEntry(stage_index=0, experiment=S1, attempt=0, eval=counts(10, 6, 4), decision="pass")
FAILED = LogEntry(
    stage_index=1,
    experiment=S2,
    attempt=0,
    eval=counts(2, 12, 6),
    decision="fail",
    summary="2-12-6 / 20, gap +0.50",
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """Three stages (score, defend, no_draws), margin 0.15, a fresh state; no git."""
    return make_workspace(tmp_path / "ws", git_repo=False)


def put_state(ws: Path, **fields: object) -> None:
    save_state(ws / STATE_FILE, CurriculumState(**fields))  # type: ignore[arg-type]


def text_of(data: dict) -> str:
    return render_status(data)


# --------------------------------------------------------------------------- status_data


def test_a_fresh_workspace_says_to_start_the_first_stage(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = status_data(ws)
    assert data["workspace"] == str(ws.resolve()) and data["status"] == "in_progress"
    assert [(s["name"], s["status"]) for s in data["stages"]] == [
        ("score", "current"),
        ("defend", "pending"),
        ("no_draws", "pending"),
    ]
    assert all(s["attempts"] == [] for s in data["stages"])
    assert data["in_flight"] is None and data["config_error"] is None
    assert data["evaluations"] == 0 and data["push_pending"] is False
    assert data["next"] == f"`cosmic-curriculum run --workspace {ws.resolve()}` to start {S1}"
    monkeypatch.chdir(ws)  # in the workspace the flag is not needed
    assert status_data(Path("."))["next"] == f"`cosmic-curriculum run` to start {S1}"


def test_decided_attempts_carry_counts_rates_gap_and_margin(ws: Path) -> None:
    put_state(ws, stage_index=1, attempt=1, log=[PASSED, FAILED])
    data = status_data(ws)
    assert [s["status"] for s in data["stages"]] == ["passed", "current", "pending"]
    passed, failed = data["stages"][0]["attempts"], data["stages"][1]["attempts"]
    assert len(passed) == 1 and len(failed) == 1
    row = failed[0]
    assert row["experiment"] == S2 and row["decision"] == "fail"
    assert (row["wins_a"], row["wins_b"], row["draws"], row["episodes"]) == (2, 12, 6, 20)
    assert row["candidate_win_rate"] == pytest.approx(0.1)
    assert row["reference_win_rate"] == pytest.approx(0.6)
    assert row["gap"] == pytest.approx(0.5) and row["margin"] == pytest.approx(0.15)
    assert passed[0]["gap"] == pytest.approx(-0.2)
    assert data["next"].endswith(f"to start {S2}-retry1")


def test_attempt_row_without_an_evaluation_has_no_counts() -> None:
    skipped = LogEntry(
        stage_index=0,
        experiment=S1,
        attempt=2,
        decision="pass",
        override="skip_to_next_stage",
        reason="good enough",
    )
    row = attempt_row(skipped, 0.15)
    assert row["override"] == "skip_to_next_stage" and row["reason"] == "good enough"
    assert "episodes" not in row and "gap" not in row and "margin" not in row
    empty = attempt_row(
        LogEntry(stage_index=0, experiment=S1, attempt=0, eval=counts(0, 0, 0), decision="fail"),
        None,
    )
    assert empty["candidate_win_rate"] is None and empty["gap"] is None


def test_blocked_says_where_the_review_is_and_both_ways_on(ws: Path) -> None:
    put_state(
        ws,
        stage_index=1,
        attempt=3,
        status="blocked",
        blocked_reason="stage 2 defend failed 3 times",
        log=[PASSED, FAILED],
    )
    data = status_data(ws)
    assert data["stages"][1]["status"] == "blocked"
    assert data["blocked_reason"] == "stage 2 defend failed 3 times"
    nxt = data["next"]
    assert nxt.startswith("review logs/review-defend.md")
    assert "--force-retry --reason" in nxt and "--skip-to-next-stage --reason" in nxt
    assert nxt.count(f"--workspace {ws.resolve()}") == 2


def test_done_means_nothing_left(ws: Path) -> None:
    put_state(ws, stage_index=3, status="done", log=[PASSED])
    data = status_data(ws)
    assert [s["status"] for s in data["stages"]] == ["passed"] * 3
    assert data["next"] == "nothing: every stage passed" and data["config_error"] is None


def test_a_broken_config_or_a_state_past_it_is_reported_not_raised(ws: Path) -> None:
    (ws / "stages.toml").write_text("max_retries = 'many'\n")
    data = status_data(ws)
    assert data["config_error"] and "stages.toml" in data["config_error"]
    assert data["next"] == f"fix the config: {data['config_error']}"
    assert [s["name"] for s in data["stages"]] == ["#1"]  # the state's stage, unnamed
    make_workspace(ws, git_repo=False)  # a good config again
    put_state(ws, stage_index=7)
    data = status_data(ws)
    assert "stage_index 7 is out of range for the 3 stage(s)" in data["config_error"]
    assert len(data["stages"]) == 8


def test_not_a_workspace_is_a_one_line_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a cosmic-curriculum workspace") as info:
        status_data(tmp_path)
    message = str(info.value)
    assert "\n" not in message and f"cosmic-curriculum init {tmp_path.resolve()}" in message
    assert info.value.exit_code == 2


def test_training_in_flight_shows_the_live_progress_of_its_log(ws: Path) -> None:
    flight = Attempt(stage_index=0, attempt=0, experiment=S1, timesteps=400)
    put_state(ws, in_flight=flight)
    (ws / "logs").mkdir()
    (ws / "logs" / f"{S1}.log").write_text(
        'fake trainer: start\n@progress {"timesteps": 100, "total": 400}\n'
        '@progress {"timesteps": 200, "total": 400, "fps": 50.0}\nsome other output\n'
    )
    data = status_data(ws)
    assert data["in_flight"]["experiment"] == S1 and data["in_flight"]["phase"] == "training"
    assert data["in_flight"]["last_progress"] == {"timesteps": 200, "total": 400, "fps": 50.0}
    assert data["next"].endswith(f"to resume {S1}")
    assert f"in flight: {S1} — phase training — 200/400 steps" in text_of(data)


def test_an_attempt_that_failed_says_to_fix_its_cause(ws: Path) -> None:
    flight = Attempt(stage_index=0, attempt=0, experiment=S1, error="trainer exit 3")
    put_state(ws, in_flight=flight, push_pending=True)
    data = status_data(ws)
    assert data["next"].startswith(f"fix the cause of the error of {S1} (trainer exit 3;")
    assert f"logs/{S1}.log" in data["next"]
    text = text_of(data)
    assert "error: trainer exit 3" in text and "push pending" in text


def test_a_committed_attempt_is_not_in_flight(ws: Path) -> None:
    flight = Attempt(stage_index=0, attempt=0, experiment=S1, phase="committed")
    put_state(ws, stage_index=1, in_flight=flight, log=[PASSED])
    data = status_data(ws)
    assert data["in_flight"] is None and data["next"].endswith(f"to start {S2}")


# --------------------------------------------------------------------------- table, JSON


def test_the_table_shows_stages_counts_rates_and_decisions(ws: Path) -> None:
    skipped = LogEntry(
        stage_index=1,
        experiment=f"{S2}-retry1",
        attempt=1,
        decision="pass",
        eval=counts(3, 11, 6),
        override="skip_to_next_stage",
        reason="close enough",
    )
    retried = FAILED.model_copy(update={"reason": "flaky"})
    put_state(ws, stage_index=2, log=[PASSED, retried, skipped])
    text = text_of(status_data(ws))
    lines = text.splitlines()
    assert lines[0].strip() == "curriculum: in_progress"
    row = next(line for line in lines if S1 in line).split()
    assert row[:3] == ["1", "score", S1] and "10-6-4/20" in row and "50%/30%" in row
    assert "pass" in row
    assert "fail (forced retry: flaky)" in text
    assert "pass (skipped: close enough)" in text
    assert "3-11-6/20" in text and "15%/55%" in text
    assert any(line.split()[:3] == ["3", "no_draws", "current"] for line in lines)
    assert f"next: `cosmic-curriculum run --workspace {ws.resolve()}`" in text


def test_cli_status_json_is_the_status_data_and_errors_are_one_line(
    ws: Path, tmp_path: Path
) -> None:
    put_state(ws, stage_index=1, attempt=1, log=[PASSED, FAILED])
    runner = CliRunner()
    result = runner.invoke(app, ["status", "--workspace", str(ws), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == status_data(ws)
    table = runner.invoke(app, ["status", "--workspace", str(ws)])
    assert table.exit_code == 0 and S2 in table.output and "next:" in table.output
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = runner.invoke(app, ["status", "--workspace", str(empty)])
    assert refused.exit_code == 2
    assert refused.output.startswith("error: ") and len(refused.output.splitlines()) == 1


# --------------------------------------------------------------------------- latest_progress


def test_latest_progress_is_the_last_valid_line_of_the_tail(tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    assert latest_progress(log) is None  # no log yet
    log.write_text(
        '@progress {"timesteps": 10, "total": 50}\n'
        '@progress {"timesteps": 20, "total": 50, "reward": 0.5}\n'
        "@progress {not json}\n"
        '@progress {"timesteps": "30", "total": 50}\n'
        "plain output\n"
    )
    assert latest_progress(log) == {"timesteps": 20, "total": 50, "reward": 0.5}
    log.write_text("no progress at all\n")
    assert latest_progress(log) is None
    # only the tail is read: a progress line buried under 200 other lines is not "now"
    log.write_text('@progress {"timesteps": 1, "total": 2}\n' + "noise\n" * 250)
    assert latest_progress(log) is None


# --------------------------------------------------------------------------- review


def test_review_markdown_lists_every_attempt_and_both_commands() -> None:
    second = FAILED.model_copy(
        update={"experiment": f"{S2}-retry1", "attempt": 1, "eval": counts(5, 8, 7)}
    )
    skipped = LogEntry(
        stage_index=1,
        experiment=f"{S2}-retry2",
        attempt=2,
        decision="fail",
        override="abandoned",
    )
    text = review_markdown(
        stage_number=2,
        stage_name="defend",
        entries=[FAILED, second, skipped],
        records={},
        margin=0.15,
        force_command="cosmic-curriculum run --force-retry --reason '...'",
        skip_command="cosmic-curriculum run --skip-to-next-stage --reason '...'",
        reason="stage 2 defend failed 3 times",
    )
    lines = text.splitlines()
    assert lines[0] == "# Review: stage 2 `defend` is blocked"
    assert "stage 2 defend failed 3 times" in lines
    assert "Gate: fail iff reference win rate − candidate win rate ≥ 0.15." in lines
    rows = [line for line in lines if line.startswith("| ") and "experiment" not in line]
    assert len(rows) == 3
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[:7] == ["0", S2, "2-12-6 / 20", "10%", "60%", "+0.50", "fails (+0.50 ≥ 0.15)"]
    assert cells[7] == f"[{S2}.log]({S2}.log)" and cells[8] == f"[{S2}.json](../bots/{S2}.json)"
    assert "5-8-7 / 20" in rows[1] and "+0.15" in rows[1]
    assert [c.strip() for c in rows[2].strip("|").split("|")][2:7] == ["–"] * 4 + ["abandoned"]
    assert f"- {S2}: 2-12-6 / 20, gap +0.50" in lines  # the gate summary of a failure
    assert "    cosmic-curriculum run --force-retry --reason '...'" in lines
    assert "    cosmic-curriculum run --skip-to-next-stage --reason '...'" in lines


def test_review_names_the_earlier_stage_a_forgetting_failure_regressed_against() -> None:
    from cosmic_curriculum.workspace.config import GateSettings

    # the reference passed (gap +0.00 < 0.15); stage 1's bot then beat it 0-9-1
    forgot = FAILED.model_copy(
        update={
            "stage_index": 2,
            "eval": counts(6, 6, 8),
            "summary": "... → pass; against earlier stages: ... ⇒ fail",
            "comparisons": [
                {"against_stage": 0, "verdict": "fail", "rule": "sign", **counts(0, 9, 1)}
            ],
        }
    )
    text = review_markdown(
        stage_number=3,
        stage_name="no_draws",
        entries=[forgot],
        records={},
        margin=0.15,
        force_command="f",
        skip_command="s",
        reason="r",
        gate=GateSettings(against="all"),
    )
    [row] = [line for line in text.splitlines() if line.startswith(f"| 0 | {S2}")]
    assert "fails (a clear regression against stage 1)" in row and "≥ 0.15" not in row
    assert 'Against = "all"' in text and "β 0.05" in text
    plain = review_markdown(
        stage_number=3, stage_name="no_draws", entries=[FAILED], records={}, margin=0.15,
        force_command="f", skip_command="s", reason="r", gate=GateSettings(),
    )  # fmt: skip
    assert "Against" not in plain and "fails (+0.50 ≥ 0.15)" in plain


# --------------------------------------------------------------------------- reporters


def test_a_decision_not_yet_committed_is_pending_not_done(ws: Path) -> None:
    """Killed between deciding and committing the last attempt: `done` is not the end."""
    flight = Attempt(
        stage_index=2, attempt=0, experiment="curric-s3-no_draws", phase="decided", decision="pass"
    )
    put_state(ws, stage_index=3, status="done", log=[PASSED], in_flight=flight)
    data = status_data(ws)
    assert "to finish curric-s3-no_draws" in data["next"] and "pending" in data["next"]
