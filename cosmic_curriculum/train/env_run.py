"""`cosmic-curriculum train-env`: the built-in trainer of Gymnasium stages (SB3).

    train-env EXPERIMENT --timesteps N --env JSON [--resume CKPT] [--seed K]
              [--algo PPO|A2C|DQN] [--hyperparams JSON]

It follows docs/ENVIRONMENTS.md: ``--timesteps`` is the total; ``--resume`` of its own
``checkpoints/EXPERIMENT/step_<n>.zip`` trains what is left, a warm start from another
experiment's checkpoint trains all of it. It prints ``@progress`` lines, saves step
checkpoints, and on SIGINT/SIGTERM saves one and exits 128 + the signal. An env that
raises, returns a bad observation or reward (:mod:`cosmic_curriculum.envs.guard`) ends it
with one line ``error: env '<id>' <fault> at episode step <k>, after <n> training
timesteps; ...`` and exit 1, never a traceback; episodes are cut at the step cap. It leaves
``checkpoints/EXPERIMENT/final.zip`` and ``bots/EXPERIMENT.json``, an env bot
(:mod:`cosmic_curriculum.envs.policy`) that replays without the checkpoint or torch.
torch and stable-baselines3 are imported when a training starts, never with the package.
"""

from __future__ import annotations

import io
import json
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cosmic_curriculum.defaults import (
    ENV_ALGO,
    ENV_CHECKPOINT_EVERY_TIMESTEPS,
    ENV_KEEP_CHECKPOINTS,
    ENV_N_ENVS,
    ENV_PPO_N_STEPS,
    ENV_PROGRESS_SECONDS,
    TORCH_THREADS,
)
from cosmic_curriculum.envs.export import env_bot_from_model
from cosmic_curriculum.envs.guard import EnvFault, guarded_env
from cosmic_curriculum.envs.gymnasium import make_env
from cosmic_curriculum.envs.policy import save_env_bot
from cosmic_curriculum.errors import ConfigError, TrainerError
from cosmic_curriculum.progress import format_progress
from cosmic_curriculum.system.fsio import atomic_write_bytes
from cosmic_curriculum.train.stopping import StopFlag, signals_handled
from cosmic_curriculum.workspace.env_config import EnvSpec, check_env
from cosmic_curriculum.workspace.layout import Layout, check_experiment, step_checkpoints

Algo = Literal["PPO", "A2C", "DQN"]
ALGOS: tuple[Algo, ...] = ("PPO", "A2C", "DQN")


@dataclass(frozen=True)
class EnvTrainSettings:
    experiment: str
    timesteps: int
    env: EnvSpec
    workspace: Path = Path(".")
    resume: Path | None = None
    seed: int = 0
    algo: Algo = ENV_ALGO
    hyperparams: dict[str, Any] = field(default_factory=dict)
    n_envs: int = ENV_N_ENVS
    checkpoint_every: int = ENV_CHECKPOINT_EVERY_TIMESTEPS
    keep_checkpoints: int = ENV_KEEP_CHECKPOINTS
    progress_seconds: float = ENV_PROGRESS_SECONDS


def parse_settings(
    experiment: str,
    *,
    timesteps: int,
    env: str,
    resume: Path | None,
    seed: int,
    algo: str,
    hyperparams: str | None,
    workspace: Path,
) -> EnvTrainSettings:
    """The command line, checked: each fault one line naming the option and the fix."""
    try:
        check_experiment(experiment)
    except ValueError as exc:
        raise ConfigError(f"EXPERIMENT: {exc}") from None
    if timesteps < 1:
        raise ConfigError(f"--timesteps {timesteps}: must be >= 1")
    try:
        spec = check_env(EnvSpec.model_validate(json.loads(env)))
    except (ValueError, TypeError) as exc:
        first = " ".join(str(exc).split())[:300]
        raise ConfigError(
            f"--env: not an env spec as JSON ({first}); pass the stage's spec"
        ) from None
    if spec.kind != "gymnasium":
        raise ConfigError(
            f'--env: kind {spec.kind!r} is not trained by train-env; use kind "gymnasium"'
        )
    chosen = next((a for a in ALGOS if a == algo), None)
    if chosen is None:
        raise ConfigError(f"--algo {algo!r}: choose one of {', '.join(ALGOS)}")
    params: dict[str, Any] = {}
    if hyperparams is not None:
        try:
            params = json.loads(hyperparams)
        except ValueError as exc:
            raise ConfigError(
                f"--hyperparams: not JSON ({exc}); pass an object, e.g. '{{\"n_steps\": 256}}'"
            ) from None
        if not isinstance(params, dict):
            raise ConfigError("--hyperparams: must be a JSON object of the algorithm's arguments")
    return EnvTrainSettings(experiment, timesteps, spec, workspace, resume, seed, chosen, params)


def save_model(model: Any, path: Path) -> str:
    """Save an SB3 model with an atomic replace; its sha256."""
    import hashlib

    buffer = io.BytesIO()
    model.save(buffer)
    data = buffer.getvalue()
    atomic_write_bytes(path, data)
    return hashlib.sha256(data).hexdigest()


def _algo_class(name: Algo) -> Any:
    import stable_baselines3

    return getattr(stable_baselines3, name)


def _vec_env(settings: EnvTrainSettings) -> Any:
    from stable_baselines3.common.env_util import make_vec_env

    make_env(settings.env).close()  # a spec that does not build fails here, in one line
    # Each copy is guarded: an env's fault ends the training with one line (train_env).
    return make_vec_env(
        lambda: guarded_env(make_env(settings.env)), n_envs=settings.n_envs, seed=settings.seed
    )


def _new_model(settings: EnvTrainSettings, venv: Any) -> Any:
    dict_obs = type(venv.observation_space).__name__ == "Dict"
    policy = "MultiInputPolicy" if dict_obs else "MlpPolicy"
    params: dict[str, Any] = {}
    if settings.algo == "PPO":
        params["n_steps"] = ENV_PPO_N_STEPS
    params.update(settings.hyperparams)
    try:
        return _algo_class(settings.algo)(
            policy, venv, seed=settings.seed, device="cpu", verbose=0, **params
        )
    except (TypeError, ValueError, AssertionError) as exc:
        raise ConfigError(
            f"--hyperparams {json.dumps(settings.hyperparams)} are refused by "
            f"{settings.algo} ({' '.join(str(exc).split())}); fix --hyperparams"
        ) from None


def _loaded_model(settings: EnvTrainSettings, venv: Any, path: Path) -> Any:
    if not path.is_file():
        raise ConfigError(f"--resume {path}: checkpoint file not found")
    try:
        model = _algo_class(settings.algo).load(path, env=venv, device="cpu")
    except Exception as exc:
        raise TrainerError(
            f"--resume {path}: not a {settings.algo} checkpoint for this env "
            f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); pass --algo of "
            "the checkpoint or train from scratch"
        ) from None
    model.set_random_seed(settings.seed)
    return model


def _callback(settings: EnvTrainSettings, layout: Layout, stop: StopFlag, done: int) -> Any:
    from stable_baselines3.common.callbacks import BaseCallback

    class Periodic(BaseCallback):
        """Step checkpoints, @progress lines, and a clean stop on a signal."""

        def __init__(self) -> None:
            super().__init__()
            self.last_save = done
            self.last_print = 0.0
            self.started = time.monotonic()
            self.start_steps = done

        def _on_step(self) -> bool:
            if stop.signum is not None:
                return False
            steps = int(self.model.num_timesteps)
            if steps - self.last_save >= settings.checkpoint_every:
                self.last_save = steps
                save_step(self.model, layout, settings)
            now = time.monotonic()
            if now - self.last_print >= settings.progress_seconds:
                self.last_print = now
                print_progress(
                    self.model,
                    settings.timesteps,
                    (steps - self.start_steps) / max(now - self.started, 1e-9),
                )
            return True

    return Periodic()


def save_step(model: Any, layout: Layout, settings: EnvTrainSettings) -> Path:
    """``step_<n>.zip`` at the model's count; only the newest few are kept."""
    path = layout.step_checkpoint(settings.experiment, int(model.num_timesteps))
    save_model(model, path)
    for _, old in step_checkpoints(path.parent)[: -settings.keep_checkpoints]:
        old.unlink(missing_ok=True)
    return path


def print_progress(model: Any, total: int, fps: float | None = None) -> None:
    episodes = list(getattr(model, "ep_info_buffer", None) or [])
    reward = sum(float(e["r"]) for e in episodes) / len(episodes) if episodes else None
    line = format_progress(timesteps=int(model.num_timesteps), total=total, fps=fps, reward=reward)
    print(line, flush=True)


def train_env(settings: EnvTrainSettings) -> int:
    """One training to its total (or a signal); the exit code (0, or 128 + the signal)."""
    layout = Layout(settings.workspace.resolve())
    directory = layout.checkpoint_dir(settings.experiment)
    stop = StopFlag()
    with signals_handled(stop):
        import torch

        torch.set_num_threads(TORCH_THREADS)  # robust on shared cores
        venv = _vec_env(settings)
        resume = settings.resume
        if resume is not None and not resume.is_absolute():
            resume = layout.root / resume
        # Its own step checkpoint continues the count; any other checkpoint warm-starts.
        continued = resume is not None and resume.resolve().parent == directory.resolve()
        if resume is None:
            model = _new_model(settings, venv)
        else:
            model = _loaded_model(settings, venv, resume)
        done = int(model.num_timesteps) if continued else 0
        left = max(0, settings.timesteps - done)
        how = "continuing" if continued else ("warm start" if resume else "fresh")
        print(
            f"train-env {settings.experiment}: {settings.algo} on {settings.env.id}, {how}, "
            f"{left} of {settings.timesteps} timesteps",
            flush=True,
        )
        if left > 0 and stop.signum is None:
            try:
                model.learn(
                    total_timesteps=left,
                    callback=_callback(settings, layout, stop, done),
                    reset_num_timesteps=not continued,
                )
            except EnvFault as fault:
                # One line, the last of the log: the attempt error quotes it.
                raise TrainerError(fault.at(int(model.num_timesteps))) from None
        if stop.signum is not None:
            path = save_step(model, layout, settings)
            name = signal.Signals(stop.signum).name
            print(f"{name}: saved {layout.rel(path)}; --resume it to continue", flush=True)
            return 128 + stop.signum
    print_progress(model, settings.timesteps)
    sha = save_model(model, layout.final_checkpoint(settings.experiment))
    bot = env_bot_from_model(model, settings.env, checkpoint_sha256=sha)
    assert bot.provenance is not None
    bot.provenance["resumed_from"] = None if resume is None else layout.rel(resume)
    save_env_bot(bot, layout.bot(settings.experiment))
    print(
        f"trained {settings.experiment}: {int(model.num_timesteps)} timesteps, "
        f"{layout.rel(layout.bot(settings.experiment))}",
        flush=True,
    )
    return 0
