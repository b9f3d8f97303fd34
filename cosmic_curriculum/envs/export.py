"""An SB3 model (PPO, A2C with ``MlpPolicy``; DQN) as an :class:`EnvBot`.

torch and stable-baselines3 are imported inside :func:`env_bot_from_model` only: the
evaluator and a clone replaying a bot never load them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cosmic_curriculum.envs.policy import EnvBot, Head, Layer, Space
from cosmic_curriculum.errors import TrainerError
from cosmic_curriculum.workspace.env_config import EnvSpec


def space_of(space: Any, what: str) -> Space:
    """A Gymnasium Discrete or Box space as a :class:`Space`; others are refused."""
    kind = type(space).__name__
    if kind == "Discrete":
        if int(space.start) != 0:
            # SB3 one-hot encodes and predicts from 0 whatever the start: refuse, not guess.
            raise TrainerError(
                f"the {what} space is Discrete with start {int(space.start)}; SB3 policies "
                "need start 0 (wrap the env to shift it)"
            )
        return Space("Discrete", n=int(space.n))
    if kind == "Box":
        return Space(
            "Box",
            shape=tuple(int(d) for d in space.shape),
            low=np.asarray(space.low, dtype=np.float64).reshape(-1),
            high=np.asarray(space.high, dtype=np.float64).reshape(-1),
            dtype=str(space.dtype),
        )
    raise TrainerError(
        f"the {what} space is {kind}; env bots hold Discrete or Box spaces "
        "(wrap the env, e.g. with gymnasium.wrappers:FlattenObservation)"
    )


def _layers(modules: list[Any], where: str) -> tuple[Layer, ...]:
    from torch import nn

    activations: dict[type[Any], str] = {nn.Tanh: "tanh", nn.ReLU: "relu"}
    layers: list[Layer] = []
    for i, module in enumerate(modules):
        if isinstance(module, nn.Linear):
            weights = module.weight.detach().cpu().double().numpy()
            bias = (
                np.zeros(weights.shape[0])
                if module.bias is None
                else module.bias.detach().cpu().double().numpy()
            )
            if not (np.isfinite(weights).all() and np.isfinite(bias).all()):
                raise TrainerError(
                    f"{where} has non-finite weights (training diverged); resume from an "
                    "earlier checkpoint with a lower learning rate"
                )
            layers.append(Layer(weights, bias, "linear"))
        elif type(module) in activations and layers and layers[-1].activation == "linear":
            last = layers[-1]
            layers[-1] = Layer(last.weights, last.bias, activations[type(module)])
        else:
            raise TrainerError(
                f"cannot export {where} module {i} ({type(module).__name__}): env bots hold "
                "Linear layers each followed by at most one Tanh or ReLU"
            )
    return tuple(layers)


def _transposed_space(model: Any) -> Any:
    """The env's own observation space when SB3 transposed its channels-last images for
    the policy (``VecTransposeImage``, e.g. MiniGrid's 7x7x3 view), else None."""
    from stable_baselines3.common.vec_env import VecTransposeImage

    env = model.get_env()
    if isinstance(env, VecTransposeImage):
        return env.venv.observation_space
    return None


def _channels_last_input(layers: tuple[Layer, ...], shape: tuple[int, ...]) -> tuple[Layer, ...]:
    """``layers`` fed the env's (H, W, C) image flattened, where the policy was fed the
    transposed (C, H, W) one: the first layer's columns permuted, the same function."""
    height, width, channels = shape
    order = np.arange(height * width * channels).reshape(channels, height, width)
    columns = order.transpose(1, 2, 0).reshape(-1)  # env position -> policy input index
    first = layers[0]
    return (Layer(first.weights[:, columns], first.bias, first.activation), *layers[1:])


def env_bot_from_model(
    model: Any, spec: EnvSpec, *, checkpoint_sha256: str | None = None
) -> EnvBot:
    """The deterministic action of ``model`` (exactly SB3's ``predict``) and what sampling
    needs, as numpy layers; anything the document cannot express is a TrainerError."""
    from stable_baselines3.common.preprocessing import is_image_space
    from stable_baselines3.common.torch_layers import FlattenExtractor

    policy = model.policy
    algo = type(model).__name__
    channels_last = _transposed_space(model)
    obs_space = space_of(
        policy.observation_space if channels_last is None else channels_last, "observation"
    )
    action_space = space_of(policy.action_space, "action")
    head: Head
    if hasattr(policy, "q_net"):  # DQN: argmax of q_net(features)
        extractor = policy.q_net.features_extractor
        modules = list(policy.q_net.q_net)
        head = "q"
    else:  # ActorCriticPolicy: action_net(mlp_extractor.policy_net(features))
        extractor = getattr(policy, "pi_features_extractor", policy.features_extractor)
        modules = [*policy.mlp_extractor.policy_net, policy.action_net]
        head = "actor"
        if getattr(policy, "use_sde", False) or getattr(policy, "squash_output", False):
            raise TrainerError(f"cannot export a {algo} policy with use_sde or squash_output")
    if not isinstance(extractor, FlattenExtractor):
        raise TrainerError(
            f"cannot export a {algo} policy with the {type(extractor).__name__} features "
            "extractor: env bots replay MlpPolicy (FlattenExtractor)"
        )
    scale = 1.0
    box = obs_space.kind == "Box"
    if box and policy.normalize_images and is_image_space(policy.observation_space):
        scale = 1.0 / 255.0  # SB3's preprocess_obs divides image observations
    log_std = None
    if head == "actor" and action_space.kind == "Box":
        log_std = policy.log_std.detach().cpu().double().numpy().reshape(-1)
    layers = _layers(modules, f"the {algo} policy")
    if channels_last is not None:
        layers = _channels_last_input(layers, tuple(int(d) for d in channels_last.shape))
    provenance: dict[str, Any] = {"algo": algo, "timesteps": int(model.num_timesteps)}
    if checkpoint_sha256 is not None:
        provenance["checkpoint_sha256"] = checkpoint_sha256
    return EnvBot(spec, obs_space, action_space, layers, head, scale, log_std, provenance)
