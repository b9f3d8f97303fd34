"""What `train-env` builds and saves: the vectorised env (in-process or subprocesses,
whichever is faster here), VecNormalize and its statistics, the SB3 model (new, or
loaded from a checkpoint with the stage's hyperparams), and checkpoints with their
statistics beside them (``step_<n>.zip`` + ``step_<n>.vecnormalize.pkl``, both written
atomically, the statistics first, pruned together).

torch and stable-baselines3 are imported inside the functions only.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosmic_curriculum.defaults import ENV_PPO_N_STEPS, ENV_SUBPROC_STEP_SECONDS
from cosmic_curriculum.envs.algos import (
    TRAIN_ENV_KEYS,
    algo_class,
    build_model,
    check_spaces,
    sb3_kwargs,
)
from cosmic_curriculum.envs.guard import guarded_env
from cosmic_curriculum.envs.gymnasium import make_env
from cosmic_curriculum.errors import ConfigError, TrainerError
from cosmic_curriculum.system.fsio import atomic_write_bytes
from cosmic_curriculum.train.stopping import STOP_SIGNALS
from cosmic_curriculum.workspace.env_config import EnvSpec
from cosmic_curriculum.workspace.layout import Layout, step_checkpoints

if TYPE_CHECKING:
    from cosmic_curriculum.train.env_run import EnvTrainSettings

# VecNormalize's settings a stage may change over statistics it loads.
_NORMALIZE_SETTINGS = ("norm_obs", "norm_reward", "clip_obs", "clip_reward", "gamma", "epsilon")
# One env's steps (at most) that time it when `vec_env = "auto"` chooses.
_PROBE_STEPS = 200
_PROBE_SECONDS = 0.5


def stats_path(checkpoint: Path) -> Path:
    """The VecNormalize statistics saved with ``checkpoint`` (``X.zip``: ``X.vecnormalize.pkl``)."""
    return checkpoint.with_name(f"{checkpoint.stem}.vecnormalize.pkl")


def _worker_env(spec: EnvSpec) -> Any:
    """An env built in a subprocess worker, which leaves the stop signals to the trainer
    (the curriculum signals the whole group; the trainer saves, then closes its workers)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    return guarded_env(make_env(spec), in_worker=True)


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def fastest_vec_env(env: Any, n_envs: int) -> str:
    """ "subproc" when stepping ``n_envs`` copies of ``env`` in subprocesses pays here (two
    or more usable cores, one step costing ENV_SUBPROC_STEP_SECONDS or more), else "dummy"."""
    if n_envs < 2 or usable_cores() < 2:
        return "dummy"
    env.reset(seed=0)
    start, steps = time.perf_counter(), 0
    while steps < _PROBE_STEPS and time.perf_counter() - start < _PROBE_SECONDS:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
        steps += 1
    per_step = (time.perf_counter() - start) / steps
    return "subproc" if per_step >= ENV_SUBPROC_STEP_SECONDS else "dummy"


def vec_env(settings: EnvTrainSettings) -> tuple[Any, str]:
    """The stage's envs, vectorised (and the kind chosen: "dummy" or "subproc")."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    probe = make_env(settings.env)  # a spec that does not build fails here, in one line
    try:
        check_spaces(probe.observation_space, probe.action_space)
        kind = settings.vec_env
        if kind == "auto":
            kind = fastest_vec_env(probe, settings.n_envs)
    finally:
        probe.close()
    spec = settings.env
    if kind == "subproc":
        venv = make_vec_env(
            lambda: _worker_env(spec),
            n_envs=settings.n_envs,
            seed=settings.seed,
            vec_env_cls=SubprocVecEnv,
        )
    else:
        venv = make_vec_env(
            # Each copy is guarded: an env's fault ends the training in one line.
            lambda: guarded_env(make_env(spec)),
            n_envs=settings.n_envs,
            seed=settings.seed,
            vec_env_cls=DummyVecEnv,
        )
    return venv, kind


def normalized(venv: Any, settings: EnvTrainSettings, stats: Path | None) -> Any:
    """``venv`` in VecNormalize: the statistics at ``stats`` (a resumed checkpoint's), with
    the stage's settings over them, or fresh ones. VecNormalize's gamma is the
    algorithm's unless normalize sets its own."""
    from stable_baselines3.common.vec_env import VecNormalize

    assert settings.normalize is not None
    kwargs = dict(settings.normalize)
    if "gamma" in settings.hyperparams:
        kwargs.setdefault("gamma", settings.hyperparams["gamma"])
    if stats is None:
        return VecNormalize(venv, **kwargs)
    try:
        loaded = pickle.loads(stats.read_bytes())
        if not isinstance(loaded, VecNormalize):
            raise TypeError(f"it holds a {type(loaded).__name__}")
        loaded.set_venv(venv)
    except Exception as exc:
        raise TrainerError(
            f"{stats}: not VecNormalize statistics for this env ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:200]}); delete it to start fresh statistics"
        ) from None
    for key in _NORMALIZE_SETTINGS:
        if key in kwargs:
            setattr(loaded, key, kwargs[key])
    loaded.training = True
    return loaded


def _model_kwargs(settings: EnvTrainSettings, venv: Any) -> dict[str, Any]:
    params = sb3_kwargs(settings.hyperparams, venv.action_space)
    params.setdefault("device", "cpu")
    params.setdefault("verbose", 0)
    return params


def new_model(settings: EnvTrainSettings, venv: Any, policy: str) -> Any:
    params: dict[str, Any] = {}
    if settings.algo in ("PPO", "MaskablePPO"):
        params["n_steps"] = ENV_PPO_N_STEPS
    params.update(_model_kwargs(settings, venv))
    params["seed"] = settings.seed
    return build_model(settings.algo, policy, venv, params, TRAIN_ENV_KEYS, settings.hyperparams)


def loaded_model(settings: EnvTrainSettings, venv: Any, path: Path) -> Any:
    """The model of checkpoint ``path`` on ``venv``, the stage's hyperparams over its own."""
    if not path.is_file():
        raise ConfigError(f"--resume {path}: checkpoint file not found")
    params = _model_kwargs(settings, venv)
    # The network is the checkpoint's: policy_kwargs are compared, not passed (SB3 would
    # compare them whole, with the keys an algorithm adds itself, e.g. A2C's optimizer).
    wanted = params.pop("policy_kwargs", {})
    try:
        model = algo_class(settings.algo).load(path, env=venv, **params)
    except ConfigError:
        raise
    except Exception as exc:
        raise TrainerError(
            f"--resume {path}: not a {settings.algo} checkpoint for this env and these "
            f"hyperparams ({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); pass "
            "the checkpoint's --algo, or train from scratch"
        ) from None
    stored = model.policy_kwargs
    for key, value in wanted.items():
        if stored.get(key) != value:
            raise TrainerError(
                f"--resume {path}: its policy_kwargs {key} is {stored.get(key)!r}, not "
                f"{value!r}; a checkpoint keeps its network, so keep policy_kwargs or "
                "train from scratch"
            )
    model.set_random_seed(settings.seed)
    return model


def save_checkpoint(model: Any, path: Path) -> str:
    """``model`` at ``path`` (and its VecNormalize statistics beside it, written first, so
    a checkpoint never lacks them), each with an atomic replace; the zip's sha256."""
    norm = model.get_vec_normalize_env()
    if norm is not None:
        atomic_write_bytes(stats_path(path), pickle.dumps(norm))
    buffer = io.BytesIO()
    model.save(buffer)
    data = buffer.getvalue()
    atomic_write_bytes(path, data)
    return hashlib.sha256(data).hexdigest()


def save_step(model: Any, layout: Layout, experiment: str, keep: int) -> Path:
    """``step_<n>.zip`` at the model's count; only the newest ``keep`` are kept, each with
    its statistics (statistics without their checkpoint go too)."""
    path = layout.step_checkpoint(experiment, int(model.num_timesteps))
    save_checkpoint(model, path)
    steps = step_checkpoints(path.parent)
    for _, old in steps[:-keep]:
        old.unlink(missing_ok=True)
        stats_path(old).unlink(missing_ok=True)
    kept = {stats_path(p).name for _, p in steps[-keep:]}
    for stray in path.parent.glob("step_*.vecnormalize.pkl"):
        if stray.name not in kept:
            stray.unlink(missing_ok=True)
    return path
