"""`[tracking]` is checked like the rest of stages.toml; a tracker asked for whose
package is missing is one line at preflight; the outbox and the trainer's environment."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fakes.workspace import make_workspace, stages_toml

from cosmic_curriculum import defaults as d
from cosmic_curriculum.curriculum.context import Run, RunOptions
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.tracking import hooks, outbox
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.tracking_config import (
    MlflowTracking,
    TrackingConfig,
    WandbTracking,
    tracking_of,
)


def config_with(tmp_path: Path, table: str) -> Path:
    path = tmp_path / "stages.toml"
    path.write_text(stages_toml(["score"]) + "\n[tracking]\n" + table)
    return path


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ("colour = 1\n", "tracking.colour: unknown key 'colour'"),
        ('mlflow = { tracking_uri = "file:./m", exp = "a" }\n', "tracking.mlflow.exp: unknown"),
        ('wandb = { project = "a", mode = "sometimes" }\n', "tracking.wandb.mode:"),
        ('wandb = { project = "" }\n', "tracking.wandb.project:"),
        ("timeout = 0\n", "tracking.timeout:"),
        ('tensorboard = "yes"\n', "tracking.tensorboard:"),
        ('wandb = "arena"\n', "tracking.wandb:"),
    ],
)
def test_a_bad_tracking_table_is_one_line(tmp_path: Path, table: str, needle: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(config_with(tmp_path, table))
    message = str(exc.value)
    assert needle in message and "\n" not in message
    assert message.startswith(f"{tmp_path / 'stages.toml'}:")


@pytest.mark.parametrize(
    "uri", ["http://ann:hunter2@mlflow.example:5000", "https://:hunter2@h", "file://u:hunter2@x/"]
)
def test_a_password_in_the_tracking_uri_is_refused_and_not_repeated(
    tmp_path: Path, uri: str
) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(config_with(tmp_path, f'mlflow = {{ tracking_uri = "{uri}" }}\n'))
    assert "hunter2" not in str(exc.value) and "MLFLOW_TRACKING_PASSWORD" in str(exc.value)


def test_defaults_come_from_defaults_py(tmp_path: Path) -> None:
    config = load_config(config_with(tmp_path, "mlflow = {}\nwandb = {}\ntimeout = 5\n"))
    tracking = tracking_of(config)
    assert tracking.tensorboard is d.TRACKING_TENSORBOARD
    assert tracking.timeout == 5.0
    assert tracking.mlflow == MlflowTracking(
        tracking_uri=d.MLFLOW_TRACKING_URI, experiment=d.MLFLOW_EXPERIMENT
    )
    assert tracking.wandb == WandbTracking(project=d.WANDB_PROJECT, mode=d.WANDB_MODE)
    assert TrackingConfig().timeout == d.TRACKING_TIMEOUT_SECONDS
    assert tracking.remote() == ["mlflow", "wandb"]


@pytest.mark.parametrize("name", ["mlflow", "wandb", "tensorboard"])
def test_a_configured_tracker_whose_package_is_missing_is_one_line(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = {
        "mlflow": "mlflow = {}\n",
        "wandb": "wandb = {}\n",
        "tensorboard": "tensorboard = true\n",
    }
    config = load_config(config_with(tmp_path, table[name]))
    hooks.check(config)  # installed here
    monkeypatch.setitem(hooks.PACKAGES, name, ("no_such_package_here", name))
    with pytest.raises(ConfigError) as exc:
        hooks.check(config)
    assert f"pip install 'cosmic-curriculum[{name}]'" in str(exc.value)
    assert f"[tracking] {name}" in str(exc.value)


def test_tensorboard_unset_follows_the_package_and_false_turns_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert hooks.trackers(load_config(config_with(tmp_path, ""))) == ["tensorboard"]
    off = load_config(config_with(tmp_path, "tensorboard = false\n"))
    assert hooks.trackers(off) == []
    hooks.check(off)
    monkeypatch.setitem(hooks.PACKAGES, "tensorboard", ("no_such_package_here", "x"))
    monkeypatch.setattr(hooks, "installed", lambda module: module != "tensorboard")
    assert hooks.trackers(load_config(config_with(tmp_path, ""))) == []
    hooks.check(load_config(config_with(tmp_path, "")))  # unset: no error without it


def test_the_trainers_environment_holds_paths_and_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    (ws / "stages.toml").write_text(
        stages_toml(["score"]) + '\n[tracking]\nwandb = { mode = "offline" }\n'
    )
    monkeypatch.setenv("WANDB_API_KEY", "secret-key-123")
    run = Run(RunOptions(workspace=ws))
    run.config = load_config(ws / "stages.toml")
    env = hooks.trainer_env(run, "curric-s1-score")
    assert env == {
        hooks.TENSORBOARD_ENV: str(ws / "logs" / "tensorboard"),
        hooks.SCALARS_ENV: str(outbox.scalars_file(ws / "logs", "curric-s1-score")),
    }
    assert "secret-key-123" not in json.dumps(env)


def test_a_torn_last_line_is_not_read_and_the_next_append_starts_afresh(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    outbox.append(path, [{"id": "a"}])
    with open(path, "ab") as fh:
        fh.write(b'{"id": "b", "kind": "deci')  # a kill -9 mid-write
    assert outbox.read_lines(path) == [{"id": "a"}]
    outbox.append(path, [{"id": "c"}])
    assert outbox.read_lines(path) == [{"id": "a"}, {}, {"id": "c"}]
    assert outbox.read_lines(path, 2) == [{"id": "c"}]
    assert os.stat(path).st_size == len(path.read_bytes())
