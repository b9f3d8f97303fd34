"""Numpy inference of a multilayer perceptron (an exported SB3 policy); never torch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.policy import F32, check_decision_ticks
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.defaults import DECISION_TICKS

ACTIVATIONS = ("tanh", "relu", "linear")
OBS_CLIP = 10.0  # VecNormalize's default clip of normalised observations

Layer = tuple[NDArray[Any], NDArray[Any], str]


def _activate(x: F32, activation: str) -> F32:
    if activation == "tanh":
        return np.tanh(x)
    if activation == "relu":
        return np.maximum(x, 0.0)
    return x


class MlpBot:
    """A multilayer perceptron: ``clip((obs - mean) / std, -10, 10)`` (when given), then
    each layer ``act(x @ W.T + b)``; the output is clipped to [-1, 1]. With the weights of
    SB3's ``policy_net`` followed by ``action_net`` this is PPO's deterministic action."""

    kind = "mlp"

    def __init__(
        self,
        layers: Sequence[Layer],
        obs_mean: NDArray[Any] | None = None,
        obs_std: NDArray[Any] | None = None,
        decision_ticks: int = DECISION_TICKS,
        game: GameSettings | None = None,
    ) -> None:
        if not layers:
            raise ValueError("an MLP needs at least one layer")
        self.layers: list[tuple[F32, F32, str]] = []
        width = OBS_SIZE
        for i, (w, b, activation) in enumerate(layers):
            w32 = np.ascontiguousarray(w, dtype=np.float32)
            b32 = np.ascontiguousarray(b, dtype=np.float32)
            if w32.ndim != 2 or w32.shape[1] != width:
                raise ValueError(
                    f"layer {i}: weights shape {w32.shape} does not take {width} inputs"
                )
            if b32.shape != (w32.shape[0],):
                raise ValueError(f"layer {i}: bias shape {b32.shape} != ({w32.shape[0]},)")
            if activation not in ACTIVATIONS:
                raise ValueError(f"layer {i}: activation {activation!r} not in {ACTIVATIONS}")
            # store W transposed so inference is a plain x @ Wt
            self.layers.append((np.ascontiguousarray(w32.T), b32, activation))
            width = w32.shape[0]
        if width != ACT_SIZE:
            raise ValueError(f"the last layer gives {width} outputs, expected {ACT_SIZE}")
        self.obs_mean = None if obs_mean is None else np.asarray(obs_mean, dtype=np.float32)
        self.obs_std = None if obs_std is None else np.asarray(obs_std, dtype=np.float32)
        self.decision_ticks = check_decision_ticks(decision_ticks)
        self.game = game

    def act(self, obs: F32, rng: np.random.Generator) -> F32:
        x = np.asarray(obs, dtype=np.float32)
        if self.obs_mean is not None:
            x = x - self.obs_mean
        if self.obs_std is not None:
            x = x / self.obs_std
        if self.obs_mean is not None or self.obs_std is not None:
            x = np.clip(x, -OBS_CLIP, OBS_CLIP)
        for wt, b, activation in self.layers:
            x = _activate(x @ wt + b, activation)
        return np.clip(x, -1.0, 1.0).astype(np.float32, copy=False)

    def reset(self, mask: NDArray[np.bool_]) -> None:
        return None
