"""The trackers' libraries, each behind the same five calls (imported inside, so a run
that tracks nothing never loads them): ``open`` a run (create it, or find the one an
earlier run made: W&B resumes its fixed id, MLflow finds it by its key's tag), log
``metrics`` at a step, set ``tags``, keep ``artifacts``, ``end`` it; ``close`` at the end.

Decision metrics are named ``curriculum/<name>`` in every tracker; a trainer's SB3
scalars keep SB3's names (``train/loss``, ``rollout/ep_rew_mean``) at its timestep.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Protocol

from cosmic_curriculum.tracking import metrics as m

KEY_TAG = "cosmic_curriculum.run_key"
PREFIX = "curriculum/"


class Tracker(Protocol):
    def open(self, key: str, meta: dict[str, Any]) -> None: ...
    def metrics(self, key: str, values: dict[str, float], step: int, decision: bool) -> None: ...
    def tags(self, key: str, tags: dict[str, str]) -> None: ...
    def artifacts(self, key: str, paths: list[Path]) -> None: ...
    def end(self, key: str) -> None: ...
    def close(self) -> None: ...


def named(values: dict[str, float], decision: bool) -> dict[str, float]:
    return {f"{PREFIX}{k}": v for k, v in values.items()} if decision else dict(values)


class MlflowTracker:
    """Runs in ``experiment`` of ``tracking_uri``; the curriculum's run is every
    attempt's parent (MLflow shows them nested)."""

    def __init__(self, settings: dict[str, Any], runs: dict[str, str], cid: str, group: str):
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=settings["tracking_uri"])
        self.runs, self.cid, self.group = runs, cid, group
        name = settings["experiment"]
        found = self.client.get_experiment_by_name(name)
        self.experiment_id = (
            found.experiment_id if found is not None else self.client.create_experiment(name)
        )

    def open(self, key: str, meta: dict[str, Any]) -> None:
        if key in self.runs:
            return
        if key != m.CURRICULUM_KEY:
            self.open(m.CURRICULUM_KEY, {})
        tag = f"{self.cid}/{key}"
        found = self.client.search_runs(
            [self.experiment_id], filter_string=f"tags.`{KEY_TAG}` = '{tag}'", max_results=1
        )
        if found:  # made by a delivery killed before it recorded the id
            self.runs[key] = found[0].info.run_id
            return
        tags = {KEY_TAG: tag, "cosmic_curriculum.curriculum": self.group}
        if meta.get("stage"):
            tags["cosmic_curriculum.stage"] = str(meta["stage"])
        if key != m.CURRICULUM_KEY:
            tags["mlflow.parentRunId"] = self.runs[m.CURRICULUM_KEY]
        run = self.client.create_run(self.experiment_id, tags=tags, run_name=key)
        self.runs[key] = run.info.run_id
        from mlflow.entities import Param

        params = [Param(k, v) for k, v in (meta.get("params") or {}).items()]
        if params:
            self.client.log_batch(run.info.run_id, params=params)

    def metrics(self, key: str, values: dict[str, float], step: int, decision: bool) -> None:
        import time

        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [Metric(k, v, now, step) for k, v in named(values, decision).items()]
        for i in range(0, len(items), 900):  # log_batch takes at most 1000 metrics
            self.client.log_batch(self.runs[key], metrics=items[i : i + 900])

    def tags(self, key: str, tags: dict[str, str]) -> None:
        from mlflow.entities import RunTag

        items = [RunTag(f"{PREFIX}{k}", v[:5000]) for k, v in tags.items()]
        if items:
            self.client.log_batch(self.runs[key], tags=items)

    def artifacts(self, key: str, paths: list[Path]) -> None:
        for path in paths:
            self.client.log_artifact(self.runs[key], str(path))

    def end(self, key: str) -> None:
        self.client.set_terminated(self.runs[key], "FINISHED")

    def close(self) -> None:
        return None


class WandbTracker:
    """Runs of ``project`` with fixed ids (``resume="allow"``), grouped by curriculum
    (``group``), the stage as ``job_type``; several open at once."""

    def __init__(self, settings: dict[str, Any], runs: dict[str, str], cid: str, group: str):
        self.settings, self.runs, self.cid = settings, runs, cid
        self.group = settings.get("group") or group
        self.live: dict[str, Any] = {}

    def open(self, key: str, meta: dict[str, Any]) -> None:
        if key in self.live:
            return
        import wandb

        s = self.settings
        run_id = self.runs.setdefault(key, m.run_id(self.cid, key))
        self.live[key] = wandb.init(
            project=s["project"],
            entity=s.get("entity"),
            mode=s["mode"],
            dir=s.get("dir"),
            id=run_id,
            resume="allow",
            name=key,
            group=self.group,
            job_type=str(meta.get("stage") or key),
            tags=list(s.get("tags") or []),
            config=meta.get("params") or {},
            reinit="create_new",
            settings=wandb.Settings(silent=True, console="off"),
        )
        self.live[key].define_metric(f"{PREFIX}*", step_metric=f"{PREFIX}decision_number")

    def metrics(self, key: str, values: dict[str, float], step: int, decision: bool) -> None:
        row = named(values, decision)
        if not decision:
            row["global_step"] = float(step)
        self.live[key].log(row)

    def tags(self, key: str, tags: dict[str, str]) -> None:
        for k, v in tags.items():
            self.live[key].summary[f"{PREFIX}{k}"] = v

    def artifacts(self, key: str, paths: list[Path]) -> None:
        run = self.live[key]
        for path in paths:
            # A copy, as the file is now (REPORT.md changes with every decision).
            dest = Path(run.dir) / path.name
            shutil.copyfile(path, dest)
            run.save(str(dest), base_path=run.dir, policy="now")

    def end(self, key: str) -> None:
        run = self.live.pop(key, None)
        if run is not None:
            run.finish()

    def close(self) -> None:
        for key in list(self.live):
            self.end(key)


class TensorboardTracker:
    """The curriculum's decisions as scalars in ``logs/tensorboard/curriculum`` (step:
    the decision's number); the trainers' scalars are SB3's own TensorBoard output."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.writer: Any = None

    def open(self, key: str, meta: dict[str, Any]) -> None:
        return None

    def metrics(self, key: str, values: dict[str, float], step: int, decision: bool) -> None:
        if key != m.CURRICULUM_KEY or not decision:
            return
        import time

        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        if self.writer is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self.writer = EventFileWriter(str(self.directory))
        summary = Summary(
            value=[Summary.Value(tag=k, simple_value=v) for k, v in named(values, True).items()]
        )
        self.writer.add_event(Event(wall_time=time.time(), step=step, summary=summary))

    def tags(self, key: str, tags: dict[str, str]) -> None:
        return None

    def artifacts(self, key: str, paths: list[Path]) -> None:
        return None

    def end(self, key: str) -> None:
        return None

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
