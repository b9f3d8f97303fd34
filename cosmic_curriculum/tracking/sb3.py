"""The trainer's side: an SB3 logger whose outputs are TensorBoard (SB3's own writer)
and the trackers' spool (:class:`SpoolOutput`, an SB3 ``KVWriter``), as the curriculum's
environment asks (:data:`hooks.SCALARS_ENV`, :data:`hooks.TENSORBOARD_ENV`).

The spool is a file in the workspace the curriculum delivers to MLflow and W&B: the
trainer never waits on a tracker's network (nor needs its credentials, on a cluster
either), and a dump costs one buffered line. Trainers import it inside their functions
(it imports SB3).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from stable_baselines3.common.logger import KVWriter, Logger, TensorBoardOutputFormat
from stable_baselines3.common.utils import get_latest_run_id

from cosmic_curriculum.tracking.hooks import SCALARS_ENV, TENSORBOARD_ENV
from cosmic_curriculum.tracking.metrics import sb3_scalars


class SpoolOutput(KVWriter):
    """Appends each dump's numbers to ``path`` as one JSON line (the run's ``key``)."""

    def __init__(self, path: Path, key: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.key = key
        self.file = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed by close)

    def write(
        self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0
    ) -> None:
        values = sb3_scalars(key_values, key_excluded)
        if values:
            line = {"kind": "scalars", "key": self.key, "step": int(step), "metrics": values}
            self.file.write(json.dumps(line, sort_keys=True) + "\n")
            self.file.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.file.close()


def tensorboard_dir(default: str | None) -> str | None:
    """The curriculum's choice when it made one (``""``: off), else ``default``."""
    chosen = os.environ.get(TENSORBOARD_ENV)
    if chosen is None:
        return default
    return chosen or None


def tracked_logger(experiment: str, tensorboard: str | None, reset_num_timesteps: bool) -> Logger:
    """SB3's logger for ``experiment``: TensorBoard in ``tensorboard`` (SB3's run folder
    ``<experiment>_<n>``, continued when the count is), and the spool when asked. No
    output at all is a logger that writes nothing (SB3's own would make a temp folder)."""
    outputs: list[Any] = []
    if tensorboard:
        latest = get_latest_run_id(tensorboard, experiment)
        n = latest + 1 if reset_num_timesteps or latest == 0 else latest
        outputs.append(TensorBoardOutputFormat(os.path.join(tensorboard, f"{experiment}_{n}")))
    spool = os.environ.get(SCALARS_ENV)
    if spool:
        outputs.append(SpoolOutput(Path(spool), experiment))
    return Logger(folder=None, output_formats=outputs)
