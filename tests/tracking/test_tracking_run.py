"""A curriculum run with every tracker, read back with each tracker's own library."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.workspace import (
    fake_env,
    make_workspace,
    stages_toml,
    warnings_reporter,
)
from fakes.workspace import run_in_process as run
from gitutil import git
from readers import tensorboard_scalars, wandb_runs

from cosmic_curriculum.errors import BlockedError

TRACKING = """
[tracking]
tensorboard = true
mlflow = { tracking_uri = "file:./mlruns", experiment = "arena" }
wandb = { project = "arena", mode = "offline", tags = ["smoke"] }
"""

SECRETS = {
    "WANDB_API_KEY": "wandbsecret" + "0" * 29,
    "MLFLOW_TRACKING_PASSWORD": "mlflow-secret-pw",
    "MLFLOW_TRACKING_TOKEN": "mlflow-secret-token",
}


def secrets_found(ws: Path) -> list[str]:
    """Files of the workspace, and its git history, that hold one of the secrets."""
    found = []
    for path in ws.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"{path}: {k}" for k, v in SECRETS.items() if v.encode() in data]
    log = git(ws, "log", "-p", "--all")
    return found + [f"git: {k}" for k, v in SECRETS.items() if v in log]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = make_workspace(tmp_path / "league", max_retries=0, stages=["score"])
    (path / "stages.toml").write_text(stages_toml(["score"], max_retries=0) + TRACKING)
    for key, value in fake_env(path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # for the test's own reader
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    return path


def mlflow_runs(ws: Path) -> dict[str, object]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"file:{ws / 'mlruns'}")
    experiment = client.get_experiment_by_name("arena")
    assert experiment is not None
    return {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}


@pytest.mark.slow
def test_decisions_reach_every_tracker_and_a_resumed_run_continues_the_same_runs(
    ws: Path,
) -> None:
    from fakes.workspace import set_scripts
    from mlflow.tracking import MlflowClient

    set_scripts(ws, eval_script={"curric-s1-score": "fail"})
    reporter = warnings_reporter()
    with pytest.raises(BlockedError):
        run(ws, reporter=reporter)
    assert reporter.warnings == []

    runs = mlflow_runs(ws)
    assert set(runs) == {"curriculum", "curric-s1-score"}
    client = MlflowClient(tracking_uri=f"file:{ws / 'mlruns'}")
    first = runs["curric-s1-score"]
    assert first.data.params["flags"].endswith("--stage-flag score")
    assert first.data.params["stage_name"] == "score"
    assert first.data.params["settings/gate_rule"] == "margin"
    assert first.data.tags["curriculum/decision"] == "fail"
    assert first.data.tags["curriculum/status"] == "blocked"
    assert first.data.tags["mlflow.parentRunId"] == runs["curriculum"].info.run_id
    metrics = first.data.metrics
    assert (metrics["curriculum/wins"], metrics["curriculum/losses"]) == (2.0, 10.0)
    assert metrics["curriculum/draws"] == 8.0  # the fake's fail: 2-10-8 of 20
    assert metrics["curriculum/passed"] == 0.0
    assert metrics["curriculum/blocked"] == 1.0
    assert metrics["curriculum/gap_ci95_low"] < metrics["curriculum/gap"]
    assert metrics["curriculum/elo_ci95_low"] < metrics["curriculum/elo"]
    assert metrics["curriculum/gate/margin/score"] == pytest.approx(0.3)
    assert first.info.status == "FINISHED"
    artifacts = {a.path for a in client.list_artifacts(first.info.run_id)}
    assert artifacts == {"curric-s1-score.json", "REPORT.md"}

    wb = wandb_runs(ws)
    by_name = {r["name"]: r for r in wb.values()}
    assert set(by_name) == {"curriculum", "curric-s1-score"}
    assert {r["group"] for r in wb.values()} == {"league"}
    assert by_name["curric-s1-score"]["job"] == "score"
    assert json.loads(by_name["curric-s1-score"]["summary"]["curriculum/decision"]) == "fail"
    assert {"curric-s1-score.json", "REPORT.md"} <= set(by_name["curric-s1-score"]["files"])

    tb = tensorboard_scalars(ws / "logs" / "tensorboard" / "curriculum")
    assert tb["curriculum/blocked"] == [(1, 1.0)]

    # The human skips the stage: the next run logs that decision to the same runs.
    run(ws, reporter=reporter, skip_to_next_stage=True, reason="ok by hand")
    assert reporter.warnings == []
    again = mlflow_runs(ws)
    assert again["curriculum"].info.run_id == runs["curriculum"].info.run_id
    assert len(again) == 2  # the skip decided curric-s1-score again: no new run
    history = client.get_metric_history(again["curriculum"].info.run_id, "curriculum/override")
    assert [(m.step, m.value) for m in history] == [(1, 0.0), (2, 1.0)]
    assert again["curriculum"].data.tags["curriculum/override_reason"] == "ok by hand"
    assert again["curriculum"].data.metrics["curriculum/done"] == 1.0
    wb_again = wandb_runs(ws)
    assert set(wb_again) == set(wb)  # W&B resumed the same run ids
    rows = [h for h in wb_again[next(k for k in wb if wb[k]["name"] == "curriculum")]["history"]]
    assert [json.loads(h["curriculum/done"]) for h in rows] == [0.0, 1.0]
    tb = tensorboard_scalars(ws / "logs" / "tensorboard" / "curriculum")
    assert tb["curriculum/done"] == [(1, 0.0), (2, 1.0)]
    assert secrets_found(ws) == []  # not in the state, the logs, the trackers' files, git
