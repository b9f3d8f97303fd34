"""The SB3 algorithms `train-env` trains with: their classes (sb3-contrib's only with the
`contrib` extra), the policy chosen from the observation space, the checks preflight runs
on a stage's trainer without training, and hyperparams' JSON form (workspace/zoo_values.py)
turned into SB3's objects.

The policy, unless `[trainer] policy` names one: ``MultiInputPolicy`` for a Dict
observation space; ``CnnPolicy`` for an image (a 3-D uint8 Box of 0..255, SB3's own test)
whose height and width are both at least 36 pixels, the least SB3's NatureCNN (8/4, 4/2,
3/1 convolutions) takes; else ``MlpPolicy``. An algorithm without the chosen policy gets
``MlpPolicy``; Dict observations without ``MultiInputPolicy`` are refused.

stable-baselines3 (and torch) load when a function here is called, never on import.
"""

from __future__ import annotations

import importlib
import inspect
import json
from dataclasses import dataclass
from typing import Any

from cosmic_curriculum.errors import ConfigError, TrainerError
from cosmic_curriculum.workspace.env_config import EnvSpec
from cosmic_curriculum.workspace.stage_trainer import StageTrainer
from cosmic_curriculum.workspace.trainer_config import ALGORITHMS, CONTRIB
from cosmic_curriculum.workspace.zoo_values import BOARD_CNN, SCHEDULE_KEYS, schedule_start

# The smallest image side SB3's NatureCNN takes (its three convolutions leave 1 pixel).
NATURE_CNN_MIN_SIDE = 36
# The replay buffer of the model preflight builds (only to see that it builds).
_PROBE_BUFFER = 100
# Arguments train-env passes itself; the hyperparams never name them.
_OWN_ARGUMENTS = ("self", "policy", "env", "seed", "_init_setup_model")


def algo_class(name: str) -> Any:
    """The class of algorithm ``name`` (a key of ALGORITHMS)."""
    algorithm = ALGORITHMS[name]
    try:
        module = importlib.import_module(algorithm.package)
    except ImportError:
        if algorithm.package == CONTRIB:
            raise ConfigError(
                f"algo {name} needs sb3-contrib: pip install 'cosmic-curriculum[contrib]'"
            ) from None
        raise
    return getattr(module, name)


def choose_policy(name: str, observation_space: Any, configured: str | None) -> str:
    """The policy algorithm ``name`` trains on ``observation_space`` (rule: the module's
    doc); a configured one it does not have is a ConfigError listing those it has."""
    aliases = list(algo_class(name).policy_aliases)
    if configured is not None:
        if configured not in aliases:
            raise ConfigError(
                f"policy {configured!r}: {name} has {', '.join(aliases)}; choose one, or "
                "remove policy to have it chosen from the observation space"
            )
        return configured
    kind = type(observation_space).__name__
    wanted = "MlpPolicy"
    if kind == "Dict":
        wanted = "MultiInputPolicy"
    elif big_image(observation_space):
        wanted = "CnnPolicy"
    if wanted in aliases:
        return wanted
    if kind == "Dict":
        raise ConfigError(
            f"{name} has no MultiInputPolicy for the env's Dict observations; flatten them "
            '([env] wrappers = ["gymnasium.wrappers:FlattenObservation"]) or choose an algo '
            "that has one (PPO, A2C, DQN, SAC, TD3, ...)"
        )
    return "MlpPolicy"


def _no_small_image_part(space: Any) -> None:
    """SB3's MultiInputPolicy runs NatureCNN on every image part of a Dict, which fails
    (a torch traceback) on one smaller than NATURE_CNN_MIN_SIDE: refuse it first."""
    from stable_baselines3.common.preprocessing import is_image_space

    for key, part in space.spaces.items():
        if is_image_space(part, check_channels=False) and not big_image(part):
            raise ConfigError(
                f"env: the observation part {key!r} is a {'x'.join(map(str, part.shape))} image; "
                "MultiInputPolicy reads image parts with SB3's NatureCNN, which needs "
                f"{NATURE_CNN_MIN_SIDE}x{NATURE_CNN_MIN_SIDE} pixels or more: flatten the "
                'observations ([env] wrappers, last: "gymnasium.wrappers:FlattenObservation") '
                'or keep the image alone (MiniGrid: "minigrid.wrappers:ImgObsWrapper")'
            )


def big_image(space: Any) -> bool:
    """Whether ``space`` is an image (SB3's test) NatureCNN can take."""
    from stable_baselines3.common.preprocessing import is_image_space, is_image_space_channels_first

    if not is_image_space(space, check_channels=False):
        return False
    shape = tuple(space.shape)
    sides = shape[1:] if is_image_space_channels_first(space) else shape[:2]
    return min(sides) >= NATURE_CNN_MIN_SIDE


def check_action_space(name: str, action_space: Any, key: str) -> None:
    """Refuse algorithm ``name`` for an ``action_space`` it cannot act in (``key`` names
    the setting in the error)."""
    kind = type(action_space).__name__
    if kind not in ALGORITHMS[name].actions:
        able = [a for a, spec in ALGORITHMS.items() if kind in spec.actions]
        raise ConfigError(
            f"{key} {name} acts in {' or '.join(ALGORITHMS[name].actions)} action spaces, "
            f"but the env's is {action_space}; choose one of {', '.join(able)}"
        )


def check_spaces(observation_space: Any, action_space: Any) -> None:
    """Refuse spaces an env bot cannot hold (a Text part of MiniGrid's Dict, MultiDiscrete
    actions ...) or SB3's policies cannot read (a small image in a Dict): a ConfigError
    naming the space and the wrapper that fixes it, before SB3 builds vectorised envs of
    them or a model (which fails on these with a traceback)."""
    from cosmic_curriculum.envs.export import space_of

    try:
        space_of(observation_space, "observation", allow_dict=True)
        space_of(action_space, "action")
    except TrainerError as exc:
        raise ConfigError(f"env: {exc}") from None
    if type(observation_space).__name__ == "Dict":
        _no_small_image_part(observation_space)
    if type(action_space).__name__ == "Box":
        import numpy as np

        bounds = np.concatenate([np.ravel(action_space.low), np.ravel(action_space.high)])
        if not np.all(np.isfinite(bounds)):
            raise ConfigError(
                f"env: the action space {action_space} has unbounded sides, and SB3's "
                "algorithms need finite bounds: wrap the env with an action wrapper that "
                "declares them"
            )


def _algo(trainer: StageTrainer) -> str:
    # Only a game's stage leaves the choice to train-env; preflight checks Gymnasium's.
    assert trainer.algo is not None, "a Gymnasium stage's trainer always names its algo"
    return trainer.algo


def check_trainer(trainer: StageTrainer, observation_space: Any, action_space: Any) -> str:
    """What preflight refuses before any training (a ConfigError naming the key): an algo
    that cannot act in ``action_space``, a policy it lacks, hyperparams or normalize keys
    its constructor (or VecNormalize's) does not take. Returns the policy it would train."""
    name = _algo(trainer)
    check_spaces(observation_space, action_space)
    check_action_space(name, action_space, "trainer.algo")
    try:
        policy = choose_policy(name, observation_space, trainer.policy)
    except ConfigError as exc:
        raise ConfigError(f"trainer.{exc}" if trainer.policy else f"trainer.algo: {exc}") from None
    cls = algo_class(name)
    taken = _arguments(cls.__init__)
    for key in trainer.hyperparams:
        own = "action_noise" if key in ("noise_type", "noise_std") else key
        if own in _OWN_ARGUMENTS or (taken is not None and own not in taken):
            raise ConfigError(
                f"trainer.hyperparams.{key}: not an argument of {name} "
                f"({'; '.join(_shown(taken))}); remove it or fix its spelling"
            )
    if trainer.normalize is not None:
        from stable_baselines3.common.vec_env import VecNormalize

        norm = _arguments(VecNormalize.__init__) or set()
        for key in trainer.normalize:
            if key not in norm or key in ("venv", "training"):
                raise ConfigError(
                    f"trainer.normalize.{key}: not an argument of VecNormalize (it takes "
                    f"{', '.join(sorted(norm - {'self', 'venv', 'training'}))}); fix normalize"
                )
    return policy


def check_buildable(trainer: StageTrainer, spec: EnvSpec, policy: str) -> None:
    """Build the stage's model, untrained, on one env and export it as an env bot: what
    the constructor refuses (a value, not only a name) or a bot could not hold (a CNN, SDE,
    an activation other than Tanh/ReLU) is a ConfigError now, not after the training."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from cosmic_curriculum.envs.export import env_bot_from_model
    from cosmic_curriculum.envs.gymnasium import make_env

    name = _algo(trainer)
    venv = DummyVecEnv([lambda: make_env(spec)])
    try:
        params = sb3_kwargs(trainer.hyperparams, venv.action_space)
        if "buffer_size" in params:
            params["buffer_size"] = _PROBE_BUFFER  # the replay buffer is not the policy
        params["device"] = "cpu"
        model = build_model(name, policy, venv, params, PREFLIGHT_KEYS, trainer.hyperparams)
        try:
            env_bot_from_model(model, spec)
        except TrainerError as exc:
            raise ConfigError(
                f"trainer: the trained bot could not be saved: {exc}; change the trainer "
                '(e.g. policy = "MlpPolicy") or train with a training_command of your own'
            ) from None
    finally:
        venv.close()


def reason(exc: BaseException) -> str:
    """An SB3 or torch error on one line (SB3 asserts some with a tuple of strings: those
    joined, not shown as a tuple)."""
    parts = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], tuple) else exc.args
    if not parts or not all(isinstance(p, str) for p in parts):
        parts = (str(exc),)
    return " ".join("".join(parts).split())


@dataclass(frozen=True)
class SettingKeys:
    """How the settings of a model are named in its errors: stages.toml's keys in
    preflight, train-env's options in a training."""

    algo: str
    policy: str
    hyperparams: str
    wrappers: str


PREFLIGHT_KEYS = SettingKeys(
    "trainer.algo", "trainer.policy", "trainer.hyperparams", "[env] wrappers"
)
TRAIN_ENV_KEYS = SettingKeys("--algo", "--policy", "--hyperparams", "the env's wrappers")


def build_model(
    name: str,
    policy: str,
    venv: Any,
    params: dict[str, Any],
    keys: SettingKeys,
    hyperparams: dict[str, Any],
) -> Any:
    """Algorithm ``name``'s model on ``venv``; what its constructor refuses is a ConfigError
    naming the settings at fault (the hyperparams, or with none given the algo, the
    policy and the env's wrappers)."""
    try:
        return algo_class(name)(policy, venv, **params)
    except (TypeError, ValueError, AssertionError) as exc:
        why = reason(exc)[:300]
        if not hyperparams:  # nothing of the user's but the algo, the policy and the env
            raise ConfigError(
                f"{keys.algo}: {name} {policy} refuses the env ({why}); change {keys.algo} "
                f"or {keys.policy}, or {keys.wrappers}"
            ) from None
        raise ConfigError(
            f"{keys.hyperparams} {json.dumps(hyperparams)} are refused by {name} with "
            f"{policy} ({why}); fix {keys.hyperparams} or {keys.policy}"
        ) from None
    except RuntimeError as exc:  # torch: a layer that does not fit the observations
        raise ConfigError(
            f"{keys.policy}: {name} {policy} cannot be built on the env's observations "
            f"({reason(exc)[:300]}); change {keys.policy} or {keys.hyperparams}' "
            f"policy_kwargs, or {keys.wrappers}"
        ) from None


def _arguments(function: Any) -> set[str] | None:
    """The keyword arguments ``function`` takes (None: any, it has **kwargs)."""
    params = inspect.signature(function).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


def _shown(taken: set[str] | None) -> list[str]:
    if taken is None:
        return ["it takes any keyword"]
    return ["it takes " + ", ".join(sorted(taken - set(_OWN_ARGUMENTS)))]


def sb3_kwargs(hyperparams: dict[str, Any], action_space: Any) -> dict[str, Any]:
    """``hyperparams`` (JSON form) as SB3's arguments: ``lin_<x>`` a linear schedule from
    x to 0, ``nn.<Activation>`` torch's class, noise_type/noise_std an action noise."""
    import numpy as np
    from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise
    from stable_baselines3.common.utils import LinearSchedule

    out: dict[str, Any] = {}
    for key, value in hyperparams.items():
        if key in ("noise_type", "noise_std"):
            continue
        start = schedule_start(value) if key in SCHEDULE_KEYS and isinstance(value, str) else None
        if start is not None:
            out[key] = LinearSchedule(start, 0.0, 1.0)
        elif key == "policy_kwargs":
            out[key] = _extractor(_activations(value))
        else:
            out[key] = value
    noise = hyperparams.get("noise_type")
    if noise is not None:
        size = int(np.prod(action_space.shape))
        sigma = np.broadcast_to(np.asarray(hyperparams["noise_std"], dtype=np.float64), (size,))
        kind = NormalActionNoise if noise == "normal" else OrnsteinUhlenbeckActionNoise
        out["action_noise"] = kind(mean=np.zeros(size), sigma=sigma.copy())
    return out


def _extractor(kwargs: dict[str, Any]) -> dict[str, Any]:
    # "BoardCNN" (checked by zoo_values.check_hyperparams on load) names our class.
    if kwargs.get("features_extractor_class") != BOARD_CNN:
        return kwargs
    from cosmic_curriculum.envs.board_cnn import BoardCNN

    return {**kwargs, "features_extractor_class": BoardCNN}


def _activations(value: Any) -> Any:
    from torch import nn

    if isinstance(value, dict):
        return {k: _activations(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_activations(v) for v in value]
    if isinstance(value, str) and value.startswith("nn."):
        return getattr(nn, value[3:])  # checked against zoo_values.ACTIVATIONS on load
    return value
