"""Both trainers' SB3 loggers feed the trackers: TensorBoard directly, MLflow and W&B
through the spool the curriculum delivers (here to a real MLflow file store)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from readers import tensorboard_scalars

from cosmic_curriculum.tracking import outbox
from cosmic_curriculum.tracking.delivery import deliver
from cosmic_curriculum.tracking.hooks import SCALARS_ENV, TENSORBOARD_ENV
from cosmic_curriculum.workspace.env_config import EnvSpec


def spooled(path: Path) -> list[dict[str, object]]:
    return outbox.read_lines(path)


@pytest.mark.slow
def test_the_arena_trainers_scalars_reach_tensorboard_and_mlflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))
    from train_helpers import tiny

    from cosmic_curriculum import train

    spool = outbox.scalars_file(tmp_path / "logs", "exp")
    monkeypatch.setenv(SCALARS_ENV, str(spool))
    monkeypatch.setenv(TENSORBOARD_ENV, str(tmp_path / "logs" / "tensorboard"))
    assert train.train(tiny(tmp_path)).exit_code == 0

    lines = spooled(spool)
    assert [line["step"] for line in lines] == [256, 512, 768, 1024]  # one dump a rollout
    # SB3 dumps an update's losses with the next rollout's figures
    losses = [(line["step"], line["metrics"].get("train/value_loss")) for line in lines]  # type: ignore[attr-defined]
    assert [step for step, loss in losses if loss is not None] == [512, 768, 1024]
    tb = tensorboard_scalars(tmp_path / "logs" / "tensorboard" / "exp_1")
    assert [step for step, _ in tb["train/value_loss"]] == [512, 768, 1024]

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = f"file:{tmp_path / 'mlruns'}"
    settings = {"tracking_uri": uri, "experiment": "arena"}
    assert deliver("mlflow", tmp_path, tmp_path / "logs", settings, "g") == 4
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("arena")
    assert experiment is not None
    [run] = [r for r in client.search_runs([experiment.experiment_id]) if r.info.run_name == "exp"]
    history = client.get_metric_history(run.info.run_id, "train/value_loss")
    assert [(m.step, m.value) for m in history] == [x for x in losses if x[1] is not None]
    assert deliver("mlflow", tmp_path, tmp_path / "logs", settings, "g") == 0  # sent once


@pytest.mark.slow
def test_train_env_spools_its_scalars_and_writes_tensorboard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cosmic_curriculum.train.env_run import parse_settings, train_env

    lake = EnvSpec(kind="gymnasium", id="FrozenLake-v1", kwargs={"is_slippery": False})
    spool = outbox.scalars_file(tmp_path / "logs", "lake")
    monkeypatch.setenv(SCALARS_ENV, str(spool))
    monkeypatch.setenv(TENSORBOARD_ENV, str(tmp_path / "logs" / "tensorboard"))
    settings = parse_settings(
        "lake",
        timesteps=256,
        env=lake.to_argument(),
        resume=None,
        seed=0,
        algo="PPO",
        hyperparams=None,
        workspace=tmp_path,
    )
    assert train_env(settings) == 0
    lines = spooled(spool)
    assert lines and all(line["key"] == "lake" for line in lines)
    assert "time/fps" in lines[0]["metrics"]  # type: ignore[operator]
    tb = tensorboard_scalars(tmp_path / "logs" / "tensorboard" / "lake_1")
    assert [step for step, _ in tb["time/fps"]] == [line["step"] for line in lines]
