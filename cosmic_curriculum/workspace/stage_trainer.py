"""A stage's effective `train-env` settings: its `[trainer]` merged with the stage's own
keys, over the entry of its rl-zoo3 `hyperparams_file` (read here, with PyYAML), as the
options `train-env` is launched with.

Precedence, key by key: the file's entry < `[trainer]` < the stage's `trainer`; an entry
without `n_envs` means the zoo's 1 env. The zoo's
`n_timesteps` never sets the budget (the stage's `timesteps` does); it is kept to report.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cosmic_curriculum.defaults import ENV_ALGO, ENV_N_ENVS, ENV_VEC_ENV, ZOO_N_ENVS
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.zoo_values import ZooEntry, normalize_table, zoo_entry


@dataclass(frozen=True)
class StageTrainer:
    """What `train-env` trains stage ``index`` with."""

    # None: train-env's choice for a game (MaskablePPO where the game masks its moves)
    algo: str | None
    policy: str | None  # None: chosen from the observation space (envs/algos.py)
    hyperparams: dict[str, Any]
    normalize: dict[str, Any] | None  # VecNormalize's keyword arguments; None: off
    n_envs: int
    vec_env: str
    configured: bool  # a [trainer] applies: otherwise the argv has none of its options
    zoo_timesteps: int | None = None  # the zoo entry's n_timesteps (not used)
    source: str | None = None  # "FILE:KEY" of the zoo entry

    def argv(self) -> list[str]:
        """The options of `train-env` (none for a stage without a trainer table)."""
        if not self.configured:
            return []
        out = [] if self.algo is None else ["--algo", self.algo]
        out += ["--n-envs", str(self.n_envs)]
        if self.policy is not None:
            out += ["--policy", self.policy]
        if self.hyperparams:
            out += ["--hyperparams", _json(self.hyperparams)]
        if self.normalize is not None:
            out += ["--normalize", _json(self.normalize)]
        if self.vec_env != ENV_VEC_ENV:
            out += ["--vec-env", self.vec_env]
        return out


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def stage_trainer(config: CurriculumConfig, index: int, root: Path) -> StageTrainer:
    """Stage ``index``'s trainer, its hyperparams_file read from the workspace ``root``;
    a file that is missing, not YAML, without the entry or with a key train-env cannot
    honour is a one-line ConfigError naming the stage, the file and the fix."""
    stage = config.stages[index]
    trainer = config.stage_trainer(index)
    where = f"{config.path}: stage {index + 1} {stage.name}: trainer.hyperparams_file"
    entry, source = ZooEntry(None, None, None, False, {}, None), None
    if trainer.hyperparams_file is not None:
        env_id = (config.stage_env(index).id or "").rpartition(":")[2]
        key = trainer.hyperparams_key or env_id
        path = Path(trainer.hyperparams_file)
        where = f"{where} {trainer.hyperparams_file!r}"
        entry = read_zoo_entry(path if path.is_absolute() else root / path, key, where)
        source = f"{trainer.hyperparams_file}:{key}"
    normalize = entry.normalize
    # An entry without n_envs trains 1 env, as rl-zoo3 reads it; no file: train-env's 8.
    unset_envs = ENV_N_ENVS if trainer.hyperparams_file is None else ZOO_N_ENVS
    if trainer.normalize is not None:
        normalize = normalize_table(trainer.normalize)
    game = config.stage_env(index).kind == "pettingzoo"
    return StageTrainer(
        algo=trainer.algo or (None if game else ENV_ALGO),
        policy=trainer.policy or entry.policy,
        hyperparams={**entry.hyperparams, **(trainer.hyperparams or {})},
        normalize=normalize,
        n_envs=trainer.n_envs or entry.n_envs or unset_envs,
        vec_env=trainer.vec_env or ENV_VEC_ENV,
        configured=config.trainer is not None or stage.trainer is not None,
        zoo_timesteps=entry.n_timesteps,
        source=source,
    )


def read_zoo_entry(path: Path, key: str, where: str) -> ZooEntry:
    """Entry ``key`` of the rl-zoo3 YAML at ``path`` (``where`` starts each error)."""
    import yaml

    shown = where
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{shown}: file not found; give the path of an rl-zoo3 hyperparameter YAML "
            "relative to the workspace"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{shown}: cannot read it ({exc}); fix hyperparams_file") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        first = " ".join(str(exc).split())[:200]
        raise ConfigError(f"{shown}: not YAML ({first}); fix the file") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise ConfigError(
            f"{shown}: not an rl-zoo3 hyperparameter file (a table of env ids, each a "
            "table of hyperparameters); fix hyperparams_file"
        )
    if key not in data:
        close = difflib.get_close_matches(key, list(data), n=3)
        hint = f" (close: {', '.join(close)})" if close else ""
        raise ConfigError(
            f"{shown}: has no entry {key!r}{hint}; add one, or set trainer.hyperparams_key "
            "to the entry to use"
        )
    try:
        return zoo_entry(data[key])
    except ValueError as exc:
        raise ConfigError(f"{shown}: entry {key!r}: {exc}") from None
