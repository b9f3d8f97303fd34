"""The curriculum's three calls into the trackers: ``check`` at preflight, ``trainer_env``
for each training it launches, ``sync`` after each step (queue what the state holds that
the outbox lacks, then deliver it, bounded in time; every failure a warning)."""

from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from cosmic_curriculum import defaults
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.system import fsio
from cosmic_curriculum.tracking import outbox
from cosmic_curriculum.tracking.delivery import local_store, send_all
from cosmic_curriculum.tracking.queue import queue
from cosmic_curriculum.workspace import history
from cosmic_curriculum.workspace.tracking_config import tracking_of

if TYPE_CHECKING:
    from cosmic_curriculum.curriculum.context import Run
    from cosmic_curriculum.workspace.config import CurriculumConfig

# tracker → (the module it needs, the extra that installs it)
PACKAGES = {
    "tensorboard": ("tensorboard", "tensorboard"),
    "mlflow": ("mlflow", "mlflow"),
    "wandb": ("wandb", "wandb"),
}
# The trainer's environment: where its SB3 logger spools scalars for MLflow/W&B, and
# its TensorBoard directory ("" when TensorBoard is off). Paths only, nothing secret.
SCALARS_ENV = "COSMIC_TRACKING_SCALARS"
TENSORBOARD_ENV = "COSMIC_TRACKING_TENSORBOARD"


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def trackers(config: CurriculumConfig) -> list[str]:
    """The trackers this run logs to: TensorBoard unless off (unset: when installed),
    then each configured remote tracker."""
    tb = tracking_of(config).tensorboard
    on = installed("tensorboard") if tb is None else tb
    return (["tensorboard"] if on else []) + tracking_of(config).remote()


def check(config: CurriculumConfig) -> None:
    """A tracker configured whose package is missing: one line naming the extra."""
    wanted = [n for n in ("mlflow", "wandb") if getattr(tracking_of(config), n) is not None]
    if tracking_of(config).tensorboard:
        wanted.insert(0, "tensorboard")
    for name in wanted:
        module, extra = PACKAGES[name]
        if not installed(module):
            raise ConfigError(
                f"{config.path}: [tracking] {name}: the {module} package is not installed; "
                f"install it with `pip install 'cosmic-curriculum[{extra}]'`, or remove "
                f"{name} from [tracking]"
            )


def own_dirs(run: Run, names: list[str]) -> None:
    """The directories the trackers write in the workspace, each ignored by git on its
    own (fsio.git_ignored_dir): the outbox, TensorBoard's events, a local MLflow store
    and W&B's run files when they lie in the workspace."""
    logs = run.paths.logs
    places = [outbox.directory(logs)] + ([logs / "tensorboard"] if "tensorboard" in names else [])
    tracking = tracking_of(run.config)
    if tracking.mlflow is not None and local_store(tracking.mlflow.tracking_uri):
        places.append(run.ws / tracking.mlflow.tracking_uri.removeprefix("file:"))
    if tracking.wandb is not None:
        places.append(run.ws / (tracking.wandb.dir or ".") / "wandb")
    for place in places:
        if place.resolve().is_relative_to(run.ws.resolve()) and place.resolve() != run.ws.resolve():
            fsio.git_ignored_dir(place)


def trainer_env(run: Run, experiment: str) -> dict[str, str]:
    names = trackers(run.config)
    own_dirs(run, names)
    tb = run.paths.logs / "tensorboard"
    env = {TENSORBOARD_ENV: str(tb) if "tensorboard" in names else ""}
    if tracking_of(run.config).remote():
        spool = outbox.scalars_file(run.paths.logs, experiment)
        spool.parent.mkdir(parents=True, exist_ok=True)  # a trainer of the user's appends
        env[SCALARS_ENV] = str(spool)
    return env


def _pending(name: str, logs: Path) -> bool:
    offsets = outbox.load_progress(logs, name)["offsets"]
    if outbox.count_lines(outbox.events_file(logs)) > int(offsets.get(outbox.EVENTS, 0)):
        return True
    if name == "tensorboard":
        return False
    spool = outbox.directory(logs) / outbox.SCALARS
    for path in spool.glob("*.jsonl") if spool.is_dir() else []:
        if outbox.count_lines(path) > int(offsets.get(f"{outbox.SCALARS}/{path.name}", 0)):
            return True
    return False


def _settings(run: Run) -> tuple[dict[str, dict[str, object]], str, float]:
    tracking = tracking_of(run.config)
    settings = {n: getattr(tracking, n).model_dump() for n in tracking.remote()}
    wandb = tracking.wandb
    group = (wandb.group if wandb is not None and wandb.group else None) or run.ws.name
    return settings, group, tracking.timeout


def _warn(run: Run, name: str, problem: str) -> None:
    run.reporter.warning(
        f"tracker {name} {problem}; the run goes on and the next delivery sends what "
        f"it did not (log: {run.rel(outbox.directory(run.paths.logs) / f'{name}.log')})"
    )


class LiveDelivery:
    """While trainings run: MLflow and W&B get their scalars every
    ``TRACKING_LIVE_SECONDS``, delivered in a background thread, so the watch never waits
    on a tracker; ``stop`` waits for the last one (bounded by the timeout) and says what
    failed. The outbox gets the trainings' runs first (their parameters)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.names = [n for n in trackers(run.config) if n != "tensorboard"]
        self.thread: threading.Thread | None = None
        self.last = time.monotonic()
        self.problems: list[tuple[str, str]] = []
        if self.names:
            try:
                records = {str(r.get("id")): r for r in history.load(run.paths.history)}
                queue(run.paths.logs, run.state, run.config, records)
            except OSError:
                self.names = []  # sync says why, after the training

    def poll(self) -> None:
        if not self.names or (self.thread is not None and self.thread.is_alive()):
            return
        self._report()
        if time.monotonic() - self.last < defaults.TRACKING_LIVE_SECONDS:
            return
        self.last = time.monotonic()
        settings, group, timeout = _settings(self.run)
        run = self.run

        def send() -> None:
            try:
                self.problems += send_all(
                    self.names, run.ws, run.paths.logs, settings, group, timeout
                )
            except Exception as exc:  # a tracker never costs the run
                self.problems.append(("delivery", f"{type(exc).__name__}: {exc}"))

        self.thread = threading.Thread(target=send, name="tracker-delivery", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        if self.thread is not None:
            self.thread.join(_settings(self.run)[2] + 10.0)  # its deliveries are bounded
        self._report()

    def _report(self) -> None:
        problems, self.problems = self.problems, []
        for name, problem in problems:
            _warn(self.run, name, problem)


def sync(run: Run) -> None:
    """Queue the state's events the outbox lacks (fsynced), then deliver to each tracker
    with something pending; a tracker that fails is a warning, its items stay queued."""
    names = trackers(run.config)
    if not names:
        return
    logs = run.paths.logs
    try:
        own_dirs(run, names)
        records = {str(r.get("id")): r for r in history.load(run.paths.history)}
        queue(logs, run.state, run.config, records)
        todo = [n for n in names if _pending(n, logs)]
    except OSError as exc:
        run.reporter.warning(
            f"the trackers' outbox {run.rel(outbox.directory(logs))}: "
            f"{exc.strerror or exc}; the run goes on without tracking this step"
        )
        return
    if not todo:
        return
    settings, group, timeout = _settings(run)
    for name, problem in send_all(todo, run.ws, logs, settings, group, timeout):
        _warn(run, name, problem)
