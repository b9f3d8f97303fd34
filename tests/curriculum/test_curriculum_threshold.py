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


def test_an_evaluation_command_is_told_whether_the_gate_samples(ws: Path) -> None:
    set_scripts(ws, eval_script={"*": {"successes": 20}})
    with (ws / "stages.toml").open("a") as fh:
        fh.write("deterministic = false\n")
    run(ws)
    evals = [json.loads(line) for line in (ws / "fake_evals.jsonl").read_text().splitlines()]
    assert [e["deterministic"] for e in evals] == ["0"]


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
