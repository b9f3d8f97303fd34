"""Turn a trained SB3 PPO policy into the JSON layers of an ``mlp`` bot (plain numbers, no pickle).

The deterministic action of SB3's ``ActorCriticPolicy`` on a flat Box observation is
``clip(action_net(policy_net(normalise(obs))), -1, 1)``: the features extractor only
flattens (or, for our normaliser, standardises) the observation, ``policy_net`` is a
stack of Linear + activation pairs and ``action_net`` is one Linear layer giving the
Gaussian mean. That chain is exactly the bot format's layer list with a final linear layer
clipped to [-1, 1], so the exported numpy bot reproduces the torch policy's deterministic
actions (tested to 1e-5).

The bot file it feeds needs neither pickle nor torch to load, but this module itself
imports torch and stable-baselines3: only the trainer and the tests import it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from stable_baselines3.common.torch_layers import FlattenExtractor
from torch import nn

from cosmic_curriculum.errors import TrainerError

_ACTIVATIONS: dict[type[nn.Module], str] = {nn.Tanh: "tanh", nn.ReLU: "relu"}


Layer = tuple[NDArray[np.float64], NDArray[np.float64], str]


def _linear_layer(module: nn.Linear, activation: str) -> Layer:
    weights = module.weight.detach().cpu().to(torch.float64).numpy()
    if module.bias is None:
        bias = np.zeros(weights.shape[0])
    else:
        bias = module.bias.detach().cpu().to(torch.float64).numpy()
    if not (np.all(np.isfinite(weights)) and np.all(np.isfinite(bias))):
        raise TrainerError(
            "the policy has non-finite weights (training diverged); resume from an earlier "
            "checkpoint with a lower learning rate"
        )
    return weights, bias, activation


def policy_layers(policy: Any) -> list[Layer]:
    """The actor of an SB3 ``ActorCriticPolicy`` as ``(W (out, in), b, activation)`` layers
    (the last one linear), as ``bots.mlp_bot_document`` and ``MlpBot`` take them."""
    modules = list(policy.mlp_extractor.policy_net)
    layers: list[Layer] = []
    i = 0
    while i < len(modules):
        module = modules[i]
        if not isinstance(module, nn.Linear):
            raise TrainerError(
                f"cannot export policy layer {i} of type {type(module).__name__}: the bot "
                "format holds Linear layers followed by tanh or relu"
            )
        activation = "linear"
        if i + 1 < len(modules) and not isinstance(modules[i + 1], nn.Linear):
            act_type = type(modules[i + 1])
            if act_type not in _ACTIVATIONS:
                raise TrainerError(
                    f"cannot export activation {act_type.__name__}: the bot format supports "
                    "tanh and relu (set the trainer's activation to one of them)"
                )
            activation = _ACTIVATIONS[act_type]
            i += 1
        layers.append(_linear_layer(module, activation))
        i += 1
    if not isinstance(policy.action_net, nn.Linear):
        raise TrainerError("cannot export a policy whose action head is not one Linear layer")
    layers.append(_linear_layer(policy.action_net, "linear"))
    return layers


def observation_normalisation(
    policy: Any,
) -> tuple[NDArray[np.float64] | None, NDArray[np.float64] | None]:
    """(mean, std) applied to observations before the first layer, or (None, None).

    SB3's default ``FlattenExtractor`` is the identity on our flat observations (already
    scaled into [-1, 1] by the arena), so the bot records no normalisation; a features
    extractor exposing ``obs_mean``/``obs_std`` tensors is exported with them.
    """
    if isinstance(policy.features_extractor, FlattenExtractor):
        return None, None
    mean = getattr(policy.features_extractor, "obs_mean", None)
    std = getattr(policy.features_extractor, "obs_std", None)
    if mean is None or std is None:
        raise TrainerError(
            f"cannot export features extractor {type(policy.features_extractor).__name__}: "
            "the bot format knows flatten and (mean, std) normalisation only"
        )
    return (
        mean.detach().cpu().to(torch.float64).numpy(),
        std.detach().cpu().to(torch.float64).numpy(),
    )


def log_std(policy: Any) -> list[float]:
    """The policy's action log-std (exploration noise), recorded for diagnostics."""
    return [float(x) for x in policy.log_std.detach().cpu().numpy().tolist()]
