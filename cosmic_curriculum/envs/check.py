"""Every stage's environment, checked before any training: a budget of its own, a
Gymnasium env or a PettingZoo game that builds, and the same spaces from stage to stage (a stage
warm-starts from the previous stage's checkpoint, whose policy has the previous spaces);
and the trainer of each stage `train-env` trains (envs/algos.py), which must keep the
algorithm, the policy's layers and observation normalization from stage to stage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.env_config import EnvSpec
from cosmic_curriculum.workspace.stage_trainer import StageTrainer, stage_trainer


def check_stage_envs(
    config: CurriculumConfig, first: int, timesteps_given: bool, root: Path | None = None
) -> list[str]:
    """Check stages ``first``.. (and the one before, which they warm-start from); a
    problem is a one-line ConfigError naming the file and the stage. With the workspace
    ``root``, the trainers of train-env's stages too; the notes to tell the user."""
    previous: tuple[str, str, tuple[Any, Any] | None] | None = None  # (label, kind, spaces)
    trained: tuple[str, StageTrainer] | None = None  # the previous stage's train-env settings
    notes: list[str] = []
    checked: set[str] = set()  # the games whose first moves were played
    for i in range(max(0, first - 1), len(config.stages)):
        stage, spec = config.stages[i], config.stage_env(i)
        label = f"stage {i + 1} {stage.name}"
        where = f"{config.path}: {label}"
        budget_set = stage.timesteps is not None or "timesteps" in config.defaults.model_fields_set
        if spec.kind != "arena" and not (budget_set or timesteps_given):
            raise ConfigError(
                f"{where}: timesteps is not set and the default "
                f"({config.defaults.timesteps:,}) is the arena's budget; set timesteps in "
                "the stage or in [defaults], or pass run --timesteps"
            )
        found = None
        if spec.kind == "gymnasium":
            from cosmic_curriculum.envs.gymnasium import spaces

            try:
                found = spaces(spec)
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None
        elif spec.kind == "pettingzoo":
            from cosmic_curriculum.envs.game_check import check_first_moves
            from cosmic_curriculum.envs.pettingzoo import game_info

            try:
                info = game_info(spec)  # built once: a bad game is one line now
                played = spec.to_argument()
                if played not in checked:  # stages with the same game: played once
                    check_first_moves(spec, info)
                    checked.add(played)
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            found = (info.observation_space, info.action_space)
        if previous is not None:
            _same_as_previous(where, previous, spec.kind, found)
        previous = (label, spec.kind, found)
        gymnasium = spec.kind == "gymnasium"  # a game's trainer checks its own settings
        if root is not None and gymnasium and found is not None and config.builtin_env_trainer(i):
            trainer = stage_trainer(config, i, root)
            _check_trainer(where, trainer, spec, found, trained)
            trained = (label, trainer)
            if trainer.zoo_timesteps is not None and i >= first:
                notes.append(
                    f"{label}: {trainer.source} has n_timesteps {trainer.zoo_timesteps:,}; "
                    f"the stage trains its own budget ({config.stage_timesteps(i):,} timesteps)"
                )
    return notes


def _check_trainer(
    where: str,
    trainer: StageTrainer,
    spec: EnvSpec,
    found: tuple[Any, Any],
    previous: tuple[str, StageTrainer] | None,
) -> None:
    from cosmic_curriculum.envs.algos import check_buildable, check_trainer

    try:
        check_buildable(trainer, spec, check_trainer(trainer, *found))
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if previous is None:
        return
    label, before = previous

    def norm_obs(t: StageTrainer) -> bool:
        return t.normalize is not None and t.normalize.get("norm_obs", True) is not False

    for key, was, now in (
        ("algo", before.algo, trainer.algo),
        ("policy", before.policy, trainer.policy),
        (
            "hyperparams.policy_kwargs",
            before.hyperparams.get("policy_kwargs"),
            trainer.hyperparams.get("policy_kwargs"),
        ),
        ("normalize (norm_obs)", norm_obs(before), norm_obs(trainer)),
    ):
        if was != now:
            raise ConfigError(
                f"{where}: trainer.{key} {now!r} differs from {label}'s {was!r}, but a stage "
                "warm-starts from the previous stage's checkpoint; keep it the same, or "
                "start a separate curriculum"
            )


def _same_as_previous(
    where: str,
    previous: tuple[str, str, tuple[Any, Any] | None],
    kind: str,
    found: tuple[Any, Any] | None,
) -> None:
    label, old_kind, old = previous
    if old_kind != kind:
        raise ConfigError(
            f"{where}: env.kind {kind!r} follows {label}'s {old_kind!r}, but a stage "
            "warm-starts from the previous stage's checkpoint; give every stage the same kind"
        )
    if old is None or found is None:
        return
    for what, was, now in zip(("observation", "action"), old, found, strict=True):
        if was != now:
            raise ConfigError(
                f"{where}: env {what} space {now} differs from {label}'s {was}, but a stage "
                "warm-starts from the previous stage's checkpoint; make the spaces agree "
                "(env.kwargs or env.wrappers) or start a separate curriculum"
            )
