"""Checkpoints: where a run starts, which files may be loaded, what a saved file records.

Resume rules (the training-command contract):

* ``--resume`` pointing into ``checkpoints/<exp>/`` (this experiment's own periodic
  checkpoint, e.g. after a crash) is a *continuation*: the timestep count is kept, only the
  remaining timesteps are trained and ``--reset-std`` is not applied.
* Without ``--resume``, leftover ``step_*.zip`` of this experiment (and no ``final.zip``)
  are continued from the latest one; an existing ``final.zip`` means the run is complete
  and the bot is only re-exported.
* ``--resume`` from another experiment (previous stage or attempt) starts a new count and
  applies ``--reset-std``. Game settings may differ: only observation and action sizes must
  match, and they never depend on the settings. Every checkpoint records its game
  settings; actions that game ignored (lift when planar, pitch and roll when level) and
  this one uses restart at output 0 (:func:`reset_unused_actions`).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.system import fsio
from cosmic_curriculum.workspace.layout import Layout, latest_step_checkpoint

if TYPE_CHECKING:
    from cosmic_curriculum.arena.settings import GameSettings
    from cosmic_curriculum.train.settings import TrainSettings

# The zip member holding the game settings a checkpoint was trained under.
GAME_MEMBER = "cosmic_game.json"
ACTION_NAMES = ("thrust", "strafe", "lift", "yaw", "pitch", "roll")  # arena.rules order
# Action indices some games ignore: lift without vertical play, pitch and roll while ships
# stay level.
_LIFT, _PITCH, _ROLL = 2, 4, 5


@dataclass(frozen=True)
class ResumePlan:
    """Where a run starts, by the rules above (at most one of the two paths is set)."""

    continued_from: Path | None = None  # this experiment's own checkpoint: keep the count
    resumed_from: Path | None = None  # another experiment's: a new count, --reset-std
    complete: bool = False  # final.zip exists: nothing to train, only re-export

    @property
    def start(self) -> Path | None:
        """The checkpoint to load, or None for a fresh policy."""
        return self.continued_from or self.resumed_from


def plan_resume(settings: TrainSettings) -> ResumePlan:
    layout = settings.layout
    experiment_dir = layout.checkpoint_dir(settings.experiment)
    if settings.resume is not None:
        ckpt = checked_checkpoint(settings.resume, layout)
        if ckpt.parent == experiment_dir.resolve():
            return ResumePlan(continued_from=ckpt)
        return ResumePlan(resumed_from=ckpt)
    if layout.final_checkpoint(settings.experiment).is_file():
        return ResumePlan(complete=True)
    return ResumePlan(continued_from=latest_step_checkpoint(experiment_dir))


def checked_checkpoint(path: Path, layout: Layout) -> Path:
    """The resolved checkpoint, refused unless it is a .zip inside ``checkpoints/``.

    SB3 checkpoints contain pickled Python objects; loading one executes code, so we only
    load files this workspace's trainer wrote.
    """
    candidate = path if path.is_absolute() else layout.root / path
    resolved = candidate.resolve()
    if resolved.suffix != ".zip":
        raise ConfigError(f"--resume {path}: not a .zip checkpoint; pass checkpoints/<exp>/*.zip")
    if not resolved.is_relative_to(layout.checkpoints.resolve()):
        raise ConfigError(
            f"--resume {path}: refusing to load a checkpoint outside "
            f"{layout.checkpoints} (checkpoints contain pickled code); copy it into "
            "checkpoints/<experiment>/ if you trust it"
        )
    if not resolved.is_file():
        raise ConfigError(f"--resume {path}: checkpoint file not found")
    return resolved


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def save_model_atomic(model: Any, path: Path, game: GameSettings) -> str:
    """Save an SB3 model with an atomic replace; returns the file's sha256.

    The game settings it was trained under ride along as the zip member ``GAME_MEMBER``
    (SB3's loader ignores members it does not know), so a later stage can tell which
    action dimensions this policy ever used (see :func:`reset_unused_actions`).
    """
    from cosmic_curriculum.system.fsio import atomic_write_bytes

    buffer = io.BytesIO()
    model.save(buffer)
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.writestr(GAME_MEMBER, json.dumps(game.model_dump(), sort_keys=True))
    data = buffer.getvalue()
    atomic_write_bytes(path, data)
    return hashlib.sha256(data).hexdigest()


def checkpoint_game(path: Path) -> dict[str, Any] | None:
    """The game settings recorded in a checkpoint, or None (older or foreign files)."""
    try:
        with zipfile.ZipFile(path) as archive:
            data = fsio.loads(archive.read(GAME_MEMBER).decode("utf-8"))
    except (KeyError, OSError, ValueError, zipfile.BadZipFile):  # ValueError: bad JSON or UTF-8
        return None
    return data if isinstance(data, dict) else None


def unused_actions(game: dict[str, Any]) -> set[int]:
    """Action indices that had no effect in a game with these settings."""
    unused: set[int] = set()
    if not game.get("allow_vertical", True):
        unused.add(_LIFT)
    if not game.get("allow_pitch_roll", True):
        unused |= {_PITCH, _ROLL}
    return unused


def reset_unused_actions(
    policy: Any, previous: dict[str, Any] | None, game: GameSettings
) -> list[int]:
    """Zero the action head's rows for actions the previous game ignored but this one uses.

    A planar stage never rewards or punishes lift, pitch or roll, so the head's outputs
    for them drift to arbitrary values: the planar bot entering 3-D pitched its nose at
    half rate from the kickoff, tumbled, and won 1 of 200 games against an inert opponent
    (49 with those outputs at zero). Zero rows give a mean of 0 (hold attitude, no
    lift), where a fresh policy starts; the rows keep learning from there.
    """
    import torch

    if previous is None:
        return []
    dims = sorted(unused_actions(previous) - unused_actions(game.model_dump()))
    if dims:
        with torch.no_grad():
            policy.action_net.weight[dims] = 0.0
            policy.action_net.bias[dims] = 0.0
    return dims
