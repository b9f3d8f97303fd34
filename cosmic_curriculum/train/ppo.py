"""The stable-baselines3 PPO model of a run: hyperparameters, device, new or loaded.

torch and SB3 are imported inside the functions: they are slow to import, and the CLI
imports this package to read :class:`~cosmic_curriculum.train.settings.TrainSettings`.
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosmic_curriculum.errors import ConfigError, TrainerError

if TYPE_CHECKING:
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecEnv

    from cosmic_curriculum.train.settings import TrainSettings
    from cosmic_curriculum.workspace.layout import Layout


def ppo_layout(settings: TrainSettings) -> tuple[int, int]:
    """(n_steps per game, batch_size) for a rollout of about ``rollout_size`` steps.

    The minibatch must divide the rollout (n_steps x n_games), or SB3 trains on a ragged
    last minibatch; we take the largest divisor not above ``batch_size``.
    """
    n_steps = max(8, math.ceil(settings.rollout_size / settings.n_parallel))
    buffer = n_steps * settings.n_parallel
    batch = min(settings.batch_size, buffer)
    while buffer % batch:
        batch -= 1
    return n_steps, batch


def resolve_device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda: CUDA is not available here; use --device cpu or auto")
    return requested


def ppo_kwargs(settings: TrainSettings) -> dict[str, Any]:
    """Hyperparameters that may change between runs (also applied when resuming)."""
    n_steps, batch = ppo_layout(settings)
    return {
        "learning_rate": settings.learning_rate,
        "n_steps": n_steps,
        "batch_size": batch,
        "n_epochs": settings.n_epochs,
        "gamma": settings.gamma,
        "gae_lambda": settings.gae_lambda,
        "clip_range": settings.clip_range,
        "ent_coef": settings.ent_coef,
    }


def policy_kwargs(settings: TrainSettings) -> dict[str, Any]:
    from torch import nn

    width = list(settings.net_arch)
    activation = nn.Tanh if settings.activation == "tanh" else nn.ReLU
    return {
        "net_arch": {"pi": width, "vf": list(width)},
        "activation_fn": activation,
        "log_std_init": math.log(settings.init_std),
    }


def set_log_std(policy: Any, std: float) -> None:
    """Reopen exploration: every action dimension's std becomes ``std``."""
    import torch

    with torch.no_grad():
        policy.log_std.fill_(math.log(std))


def tensorboard_dir(layout: Layout) -> str | None:
    """``logs/tensorboard`` when tensorboard is installed (SB3 then logs there), else None."""
    with contextlib.suppress(ImportError):
        import tensorboard  # noqa: F401

        return str(layout.logs / "tensorboard")
    return None


def new_model(
    settings: TrainSettings, env: VecEnv, device: str, tensorboard_log: str | None
) -> PPO:
    from stable_baselines3 import PPO

    return PPO(
        "MlpPolicy",
        env,
        policy_kwargs=policy_kwargs(settings),
        seed=settings.seed,
        device=device,
        verbose=0,
        tensorboard_log=tensorboard_log,
        **ppo_kwargs(settings),
    )


def load_model(
    start: Path, settings: TrainSettings, env: VecEnv, device: str, tensorboard_log: str | None
) -> PPO:
    """A checkpoint with this run's hyperparameters and seed (its weights, its count)."""
    from stable_baselines3 import PPO

    try:
        model = PPO.load(
            start, env=env, device=device, tensorboard_log=tensorboard_log, **ppo_kwargs(settings)
        )
    except (ValueError, KeyError, OSError, RuntimeError) as exc:
        raise TrainerError(f"--resume {start}: cannot load checkpoint: {exc}") from None
    model.set_random_seed(settings.seed)
    return model
