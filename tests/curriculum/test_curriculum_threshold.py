"""A stage gated by `rule = "threshold"` blocks a bot that did not learn it, even when
its head-to-head counts pass the margin rule (the issue's 5%-success bot)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fakes.workspace import fake_env, make_workspace, read_state, set_scripts
from fakes.workspace import run_in_process as run

from cosmic_curriculum.errors import BlockedError, ConfigError
from cosmic_curriculum.status.facts import status_data
from cosmic_curriculum.status.text import render_status

REPO = Path(__file__).resolve().parents[2]
THRESHOLD = '[stages.gate]\nrule = "threshold"\ntarget = 0.9\n'


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = make_workspace(tmp_path / "ws", stages=["score"])
    with (path / "stages.toml").open("a") as fh:
        fh.write(THRESHOLD)
    for key, value in fake_env(path).items():
        monkeypatch.setenv(key, value)
    return path


def test_threshold_blocks_a_weak_bot_and_the_review_says_why(ws: Path) -> None:
    set_scripts(ws, eval_script={"*": {"successes": 1}})  # 1/20: 5%
    with pytest.raises(BlockedError):
        run(ws)
    data = read_state(ws)
    assert data["status"] == "blocked"
    assert [e["decision"] for e in data["log"]] == ["fail", "fail", "fail"]
    assert data["log"][0]["summary"].startswith("1/20 successes (5%, 95% 1%–24%) vs target 0.9")
    review = (ws / "logs" / "review-score.md").read_text()
    assert "Gate: threshold, pass only when the success rate reaches 0.9" in review
    assert "≥ 0.15" not in review and "< 0.15" not in review  # no margin verdict
    assert "fails (threshold: see its summary)" in review
    assert "- curric-s1-score: 1/20 successes" in review


def test_threshold_passes_a_bot_that_reached_the_target(ws: Path) -> None:
    set_scripts(ws, eval_script={"*": {"successes": 20}})  # 20/20: LLR +2.22, at the cap
    run(ws)
    data = read_state(ws)
    assert data["status"] == "done"
    assert [e["decision"] for e in data["log"]] == ["pass"]
    # its head-to-head counts (10-8-2 against the reference) are not the gate's figures
    table = render_status(status_data(ws))
    line = next(text for text in table.splitlines() if "curric-s1-score" in text)
    assert "20/20 successes" in line and "10-8-2/20" not in line


def test_return_measure_is_refused_for_the_built_in_evaluator(tmp_path: Path) -> None:
    path = make_workspace(tmp_path / "ws", stages=["score"], external_eval=False)
    # the built-in evaluator's preflight reads a real reference bot first
    shutil.copy(REPO / "bots" / "rookie.json", path / "bots" / "rookie.json")
    with (path / "stages.toml").open("a") as fh:
        fh.write(THRESHOLD + 'measure = "return"\n')
    with pytest.raises(ConfigError) as exc:
        run(path)
    text = str(exc.value)
    assert "\n" not in text
    assert 'stage 1 score: gate measure = "return": the built-in evaluator' in text


NO_WINS = {"successes": 20, "drop": ["wins_a", "wins_b", "draws"]}


def test_a_record_without_wins_passes_and_shows_threshold_figures(ws: Path) -> None:
    set_scripts(ws, eval_script={"*": NO_WINS})  # an evaluator with no opponent
    run(ws)
    data = status_data(ws)
    row = data["stages"][0]["attempts"][0]
    assert row["decision"] == "pass" and "wins_a" not in row
    figures = row["threshold"]
    assert (figures["successes"], figures["episodes"], figures["target"]) == (20, 20, 0.9)
    assert figures["measure"] == "success" and len(figures["success_rate_ci95"]) == 2
    table = render_status(data)
    line = next(text for text in table.splitlines() if "curric-s1-score" in text)
    assert "20/20 successes" in line and "100% (95% 84%–100%) vs target 0.9" in line
    report = (ws / "REPORT.md").read_text()
    head = next(text for text in report.splitlines() if text.startswith("| stage |"))
    assert head.startswith("| stage | experiment | attempt | threshold (95%) vs target | W-L-D")
    cells = next(text for text in report.splitlines() if "`curric-s1-score`" in text)
    assert "| 20/20 successes, 100% (95% 84%–100%) vs target 0.9 | – | – | – | – |" in cells


BOTH = '[stages.gate]\nrule = ["threshold", "sprt"]\ntarget = 0.9\n'


@pytest.fixture
def both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = make_workspace(tmp_path / "ws", stages=["score"], max_retries=0)
    with (path / "stages.toml").open("a") as fh:
        fh.write(BOTH)
    for key, value in fake_env(path).items():
        monkeypatch.setenv(key, value)
    return path


def test_every_rule_must_pass_and_each_verdict_is_shown(both: Path) -> None:
    losing = {"successes": 20, "wins_a": 2, "wins_b": 12, "draws": 6}
    set_scripts(both, eval_script={"*": losing})  # reaches the target, loses to its reference
    with pytest.raises(BlockedError):
        run(both)
    entry = read_state(both)["log"][0]
    assert entry["decision"] == "fail"
    assert entry["eval"]["rules"] == [
        {"rule": "threshold", "verdict": "pass"},
        {"rule": "sprt", "verdict": "fail"},
    ]
    # the record itself keeps the decision: each rule's summary, figures and verdict
    (record,) = json.loads((both / "eval_history.json").read_text())
    assert record["gate"]["rule"] == "threshold+sprt" and record["gate"]["verdict"] == "fail"
    rules = record["gate"]["stats"]["rules"]
    assert [(r["rule"], r["verdict"]) for r in rules] == [("threshold", "pass"), ("sprt", "fail")]
    assert rules[0]["stats"]["successes"] == 20 and rules[1]["stats"]["llr"] < 0
    assert (
        entry["summary"].startswith("threshold: 20/20 successes") and "; sprt: " in entry["summary"]
    )
    review = (both / "logs" / "review-score.md").read_text()
    assert "Gate: every one of 2 rules must pass, on the same episodes:" in review
    assert "- threshold, pass only when the success rate reaches 0.9" in review
    assert "- SPRT of no regression against a win-rate gap of 0.25" in review
    assert "| 20/20 successes | 100% (95% 84%–100%) vs target 0.9 | 2-12-6 / 20 |" in review
    assert "fails (threshold: pass, sprt: fail)" in review
    table = render_status(status_data(both))
    assert "fail (threshold: pass, sprt: fail)" in table
    assert "2-12-6/20" in table and "20/20 successes" in table
    report = (both / "REPORT.md").read_text()
    assert "fail (threshold: pass, sprt: fail)" in report and "2-12-6 / 20" in report


def test_a_streaming_evaluator_is_stopped_once_the_gate_has_decided(ws: Path) -> None:
    """It is also told the gate's `deterministic` (COSMIC_CURRICULUM_EVAL_DETERMINISTIC)."""
    # every episode fails: the threshold SPRT fails after 3 (LLR −3.30), of 20 planned
    streamed = {"stream": [{"result": 1, "success": False}], "stop_after": 3}
    set_scripts(ws, eval_script={"*": streamed})
    toml = (ws / "stages.toml").read_text().replace("max_retries = 2", "max_retries = 0")
    (ws / "stages.toml").write_text(toml + "max_episodes = 20\ndeterministic = false\n")
    with pytest.raises(BlockedError):
        run(ws)
    evals = [json.loads(line) for line in (ws / "fake_evals.jsonl").read_text().splitlines()]
    assert [e["deterministic"] for e in evals] == ["0"]  # told the gate samples
    records = json.loads((ws / "eval_history.json").read_text())
    assert [(r["episodes"], r["successes"], r["streamed"]) for r in records] == [(3, 0, True)]
    entry = read_state(ws)["log"][0]
    assert entry["summary"].startswith("0/3 successes") and entry["decision"] == "fail"
    assert not list((ws / "logs").glob("*.episodes.jsonl"))  # the stream is not kept
    assert not list((ws / "logs").glob("*.eval-stop"))
