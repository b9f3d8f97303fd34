"""The policy network of each SB3 / sb3-contrib family as an env bot's layers.

Each family's deterministic action is SB3's ``predict(deterministic=True)``:

- PPO, A2C, TRPO (``ActorCriticPolicy``): ``action_net(mlp_extractor.policy_net(x))``;
  Discrete → argmax of the logits, Box → the mean clipped (``log_std`` for sampling);
- DQN: argmax of ``q_net``; QR-DQN: argmax of the mean over quantiles, which is the
  quantile net with its last layer averaged over quantiles (a mean of linear maps);
- SAC, TQC: ``tanh(mu(latent_pi(x)))`` rescaled to the bounds; sampling adds noise of
  ``exp(clamp(log_std(latent_pi(x))))`` before the tanh (``log_std_layer``);
- TD3, DDPG: ``actor.mu`` ends in Tanh (kept as ``squash``), rescaled; no distribution;
- ARS (MLP or linear): ``action_net``; Discrete → argmax, Box → tanh-squashed and
  rescaled (``squash_output``) or clipped.

torch is imported inside the functions only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cosmic_curriculum.envs.layers import Layer
from cosmic_curriculum.envs.policy import Head, LogStdLayer
from cosmic_curriculum.errors import TrainerError


@dataclass(frozen=True)
class Network:
    extractor: Any  # the torch features extractor the layers read from
    layers: tuple[Layer, ...]
    head: Head = "actor"
    log_std: Any = None  # numpy vector
    squash: bool = False
    log_std_layer: LogStdLayer | None = None


def _array(tensor: Any) -> Any:
    return tensor.detach().cpu().double().numpy()


def layers_of(modules: list[Any], where: str) -> tuple[Layer, ...]:
    """Linear modules, each followed by at most one Tanh or ReLU, as layers."""
    from torch import nn

    activations: dict[type[Any], str] = {nn.Tanh: "tanh", nn.ReLU: "relu"}
    layers: list[Layer] = []
    for i, module in enumerate(modules):
        if isinstance(module, nn.Linear):
            weights = _array(module.weight)
            bias = np.zeros(weights.shape[0]) if module.bias is None else _array(module.bias)
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


def _unsquashed(layers: tuple[Layer, ...], where: str) -> tuple[Layer, ...]:
    # The final Tanh becomes ``squash`` (tanh, then the rescale SB3 applies after it).
    last = layers[-1]
    if last.activation != "tanh":
        raise TrainerError(f"cannot export {where}: its squashed output does not end in Tanh")
    return (*layers[:-1], Layer(last.weights, last.bias, "linear"))


def _no_sde(policy: Any, algo: str) -> None:
    if getattr(policy, "use_sde", False):
        raise TrainerError(
            f"cannot export a {algo} policy with use_sde (state-dependent exploration); "
            "train it with use_sde=False"
        )


def network_of(policy: Any, algo: str, box_actions: bool) -> Network:
    """The layers of ``policy`` by its family; an unknown one is a TrainerError."""
    where = f"the {algo} policy"
    if hasattr(policy, "q_net"):  # DQN
        net = policy.q_net
        return Network(net.features_extractor, layers_of(list(net.q_net), where), "q")
    if hasattr(policy, "quantile_net"):  # QR-DQN
        net = policy.quantile_net
        layers = layers_of(list(net.quantile_net), where)
        last, quantiles = layers[-1], int(net.n_quantiles)
        # quantiles.view(-1, n_quantiles, n_actions).mean(1): average the rows per action.
        weights = last.weights.reshape(quantiles, -1, last.weights.shape[1]).mean(axis=0)
        bias = last.bias.reshape(quantiles, -1).mean(axis=0)
        return Network(net.features_extractor, (*layers[:-1], Layer(weights, bias, "linear")), "q")
    actor = getattr(policy, "actor", None)
    if actor is not None and hasattr(actor, "latent_pi"):  # SAC, TQC
        _no_sde(actor, algo)
        layers = layers_of([*actor.latent_pi, actor.mu], where)
        low, high = _log_std_bounds(algo)
        std = LogStdLayer(_array(actor.log_std.weight), _array(actor.log_std.bias), low, high)
        return Network(actor.features_extractor, layers, squash=True, log_std_layer=std)
    if actor is not None and hasattr(actor, "mu"):  # TD3, DDPG
        layers = _unsquashed(layers_of(list(actor.mu), where), where)
        return Network(actor.features_extractor, layers, squash=True)
    if hasattr(policy, "mlp_extractor"):  # PPO, A2C, TRPO
        _no_sde(policy, algo)
        if policy.squash_output:
            raise TrainerError(f"cannot export a {algo} policy with squash_output")
        extractor = getattr(policy, "pi_features_extractor", policy.features_extractor)
        layers = layers_of([*policy.mlp_extractor.policy_net, policy.action_net], where)
        log_std = _array(policy.log_std).reshape(-1) if box_actions else None
        return Network(extractor, layers, log_std=log_std)
    if hasattr(policy, "action_net"):  # ARS
        layers = layers_of(list(policy.action_net), where)
        if not box_actions:
            return Network(policy.features_extractor, layers, "q")  # argmax, no sampling
        if policy.squash_output:
            return Network(policy.features_extractor, _unsquashed(layers, where), squash=True)
        return Network(policy.features_extractor, layers)
    raise TrainerError(
        f"cannot export a {algo} policy ({type(policy).__name__}): env bots replay PPO, A2C, "
        "DQN, SAC, TD3, DDPG and sb3-contrib's TRPO, QRDQN, TQC, ARS"
    )


def _log_std_bounds(algo: str) -> tuple[float, float]:
    # Each family clamps with its own module's constants.
    if algo == "TQC":
        from sb3_contrib.tqc.policies import LOG_STD_MAX, LOG_STD_MIN
    else:
        from stable_baselines3.sac.policies import LOG_STD_MAX, LOG_STD_MIN
    return float(LOG_STD_MIN), float(LOG_STD_MAX)
