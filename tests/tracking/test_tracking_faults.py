"""A tracker never hurts the run: a hanging server costs its timeout and no decision;
a run killed -9 before delivering loses nothing; the next run sends what was not."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.workspace import (
    cli_env,
    fake_env,
    make_workspace,
    read_state,
    run_argv,
    set_scripts,
    stages_toml,
    warnings_reporter,
)
from fakes.workspace import run_in_process as run
from readers import tensorboard_scalars
from tcp_servers import serving

from cosmic_curriculum.errors import BlockedError
from cosmic_curriculum.system.fsio import FAULT_LOG_ENV, PAUSE_ENV
from cosmic_curriculum.tracking import outbox


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A real server on 127.0.0.1 that accepts every connection and never answers."""
    with serving(None) as port:
        yield port


def workspace(tmp_path: Path, tracking: str, max_retries: int = 2) -> Path:
    path = make_workspace(tmp_path / "ws")
    text = stages_toml(["score"], max_retries=max_retries)
    (path / "stages.toml").write_text(text + "\n[tracking]\n" + tracking)
    return path


def mlflow_decisions(ws: Path) -> list[tuple[int, float]]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"file:{ws / 'mlruns'}")
    experiment = client.get_experiment_by_name("arena")
    assert experiment is not None
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    history = client.get_metric_history(runs["curriculum"].info.run_id, "curriculum/passed")
    return [(m.step, m.value) for m in history]


@pytest.mark.slow
def test_a_hanging_tracker_costs_its_timeout_and_the_next_run_sends_the_decision(
    tmp_path: Path, silent_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(
        tmp_path,
        f'timeout = 2\nmlflow = {{ tracking_uri = "http://127.0.0.1:{silent_server}", '
        'experiment = "arena" }\n',
        max_retries=0,
    )
    set_scripts(ws, eval_script={"*": "fail"})
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    reporter = warnings_reporter()
    with pytest.raises(BlockedError):  # the decision was taken and committed
        run(ws, reporter=reporter)
    assert read_state(ws)["log"][0]["decision"] == "fail"
    [warning] = reporter.warnings
    assert warning.startswith("tracker mlflow did not finish within [tracking] timeout = 2 s")
    logs = ws / "logs"
    queued = [e["id"] for e in outbox.read_lines(outbox.events_file(logs))]
    assert "decision:1:curric-s1-score" in queued
    progress = outbox.load_progress(logs, "mlflow")
    assert progress["offsets"].get(outbox.EVENTS, 0) == 0 and progress["runs"] == {}

    # The tracker is reachable again (here: a file store): the next run, refused as
    # blocked, still sends what the last one could not.
    text = (ws / "stages.toml").read_text()
    (ws / "stages.toml").write_text(
        text.replace(f"http://127.0.0.1:{silent_server}", "file:./mlruns").replace(
            "timeout = 2", "timeout = 60"
        )
    )
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    reporter = warnings_reporter()
    with pytest.raises(BlockedError):
        run(ws, reporter=reporter)
    assert reporter.warnings == [], (ws / "logs" / "tracking" / "mlflow.log").read_text()
    assert mlflow_decisions(ws) == [(1, 0.0)]


@pytest.mark.slow
def test_a_run_killed_before_delivering_loses_no_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(
        tmp_path,
        'tensorboard = true\nmlflow = { tracking_uri = "file:./mlruns", experiment = "arena" }\n',
    )
    env = cli_env(ws)
    faults = tmp_path / "faults.log"
    env.update({PAUSE_ENV: "committed:60", FAULT_LOG_ENV: str(faults)})
    proc = subprocess.Popen(
        run_argv(ws),
        env=env,
        cwd=ws,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (faults.exists() and "committed" in faults.read_text()):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    # Committed, never delivered: nothing reached a tracker yet.
    assert not (ws / "logs" / "tensorboard" / "curriculum").exists()

    done = subprocess.run(
        run_argv(ws), env=cli_env(ws), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    assert tensorboard_scalars(ws / "logs" / "tensorboard" / "curriculum")["curriculum/passed"] == [
        (1, 1.0)
    ]
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # for the test's own reader
    assert mlflow_decisions(ws) == [(1, 1.0)]


@pytest.mark.slow
def test_a_trainings_scalars_reach_mlflow_while_it_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cosmic_curriculum import defaults

    ws = workspace(tmp_path, 'mlflow = { tracking_uri = "file:./mlruns", experiment = "arena" }\n')
    set_scripts(ws, trainer_script={"*": {"steps": 4, "step_seconds": 0.5}})
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(defaults, "TRACKING_LIVE_SECONDS", 0.0)  # at every look
    reporter = warnings_reporter()
    assert run(ws, reporter=reporter).status == "done"
    assert reporter.warnings == []
    log = (ws / "logs" / "tracking" / "mlflow.log").read_text()
    # at least one delivery during the training, then the decision's
    assert log.count("delivered") >= 2
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient(tracking_uri=f"file:{ws / 'mlruns'}")
    experiment = client.get_experiment_by_name("arena")
    assert experiment is not None
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    attempt = runs["curric-s1-score"]
    history = client.get_metric_history(attempt.info.run_id, "train/fake_loss")
    assert [m.value for m in history] == [1.0, 0.5, 1 / 3, 0.25]  # each dump once
    assert attempt.data.params["stage_name"] == "score"  # opened with its parameters
