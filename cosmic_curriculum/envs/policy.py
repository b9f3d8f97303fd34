"""Env bots: a trained Gymnasium policy as a self-contained JSON document.

A clone of the workspace replays ``bots/EXP.json`` without ``checkpoints/`` or torch: the
file holds the env spec, both spaces, the policy's layers as plain numbers, what sampling
needs (the Gaussian's log-std, or SAC's log-std layer; a Discrete head's logits are the
last layer), VecNormalize's statistics and where it came from (algo, timesteps, the
checkpoint's sha256). docs/BOT_FORMAT.md describes the fields; ``envs/export.py`` and
``envs/networks.py`` build them from SB3's models.

- observation: ``obs_norm`` (``envs/obs_norm.py``), then SB3's ``preprocess_obs``
  (``envs/spaces.py``: one-hot, /255 for images, Dict keys concatenated);
- ``conv`` (an image policy's NatureCNN, ``envs/conv.py``): convolutions of the
  channel-first image, flattened;
- ``layers``: each ``act(x @ W.T + b)``;
- action: Discrete → argmax of the logits (or Q-values), or a softmax sample; Box → the
  mean, or a Gaussian sample, then tanh and rescaled to the bounds (``squash``) or
  clipped to them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.envs.conv import (
    Branch,
    ConvLayer,
    conv_forward,
    conv_output,
    parse_branches,
    parse_conv,
)
from cosmic_curriculum.envs.layers import Layer, dense, layers_json, parse_layers, vector
from cosmic_curriculum.envs.obs_norm import ObsNorm, parse_obs_norm
from cosmic_curriculum.envs.spaces import FloatArray, Space, is_number, parse_space
from cosmic_curriculum.errors import BotError, StateError
from cosmic_curriculum.system.fsio import atomic_write_json, read_json
from cosmic_curriculum.workspace.env_config import EnvSpec

FORMAT = "cosmic-env-bot/1"
Head = Literal["actor", "q"]


@dataclass(frozen=True)
class LogStdLayer:
    """A linear map of the last layer's input to the log-std, clamped to [low, high]."""

    weights: FloatArray  # (actions, hidden)
    bias: FloatArray
    low: float
    high: float

    def of(self, hidden: FloatArray) -> FloatArray:
        return np.clip(hidden @ self.weights.T + self.bias, self.low, self.high)

    def to_json(self) -> dict[str, Any]:
        return {
            "weights": self.weights.tolist(),
            "bias": self.bias.tolist(),
            "min": self.low,
            "max": self.high,
        }


@dataclass(frozen=True)
class EnvBot:
    """A deterministic or sampling policy for one Gymnasium env, in numpy."""

    env: EnvSpec
    observation_space: Space
    action_space: Space
    layers: tuple[Layer, ...]
    head: Head = "actor"
    scale: float = 1.0  # 1/255 for an image observation SB3 normalised
    log_std: FloatArray | None = None  # Box actions of an actor only
    provenance: dict[str, Any] | None = None
    obs_norm: ObsNorm | None = None  # VecNormalize's frozen statistics, applied first
    squash: bool = False  # tanh then rescaled to the Box bounds (SAC, TD3, ARS)
    log_std_layer: LogStdLayer | None = None  # SAC's state-dependent log-std
    conv: tuple[ConvLayer, ...] = ()  # an image's convolutions, before ``layers``
    branches: tuple[Branch, ...] = ()  # a Dict's image keys, each through its own CNN
    action_mask: bool = False  # a pettingzoo game's legal moves: illegal logits are -inf
    channels_last: bool = False  # ``conv`` reads (rows, columns, planes): planes moved first

    def features(self, obs: Any) -> FloatArray:
        """A batch of observations (a dict of batches for a Dict space) as the network's
        input: ``obs_norm`` first (VecNormalize is outside the policy), then SB3's
        ``preprocess_obs``."""
        if self.obs_norm is not None:
            obs = self.obs_norm.apply(obs)
        if not self.branches:
            return self.observation_space.features(obs, self.scale)
        if not isinstance(obs, dict):
            raise ValueError("a Dict observation space needs a dict of observations")
        branches = {b.key: b for b in self.branches}
        pieces = []
        for key, part in self.observation_space.parts:
            branch = branches.get(key)
            if branch is None:
                pieces.append(part.features(obs[key]))
                continue
            image = part.features(obs[key], self.scale).reshape(-1, *part.shape)
            pieces.append(dense(branch.layers, conv_forward(branch.conv, image))[1])
        return np.concatenate(pieces, 1)

    def hidden_and_outputs(self, obs: Any) -> tuple[FloatArray, FloatArray]:
        """The last layer's input and its outputs (logits, Q-values or the mean)."""
        x = self.features(obs)
        if self.conv:
            x = x.reshape(-1, *self.observation_space.shape)
            if self.channels_last:
                x = x.transpose(0, 3, 1, 2)
            x = conv_forward(self.conv, x)
        return dense(self.layers, x)

    def outputs(self, obs: Any) -> FloatArray:
        """The last layer's outputs: logits, Q-values or the Gaussian's mean, (batch, out)."""
        return self.hidden_and_outputs(obs)[1]

    def act(
        self,
        obs: Any,
        deterministic: bool = True,
        rng: np.random.Generator | None = None,
        mask: NDArray[Any] | None = None,
    ) -> NDArray[Any]:
        """Actions for a batch of observations: Discrete (batch,) ints, Box (batch, *shape).

        ``mask`` (batch, n) of legal moves: a masked bot (``action_mask``) never picks an
        illegal one (its logits are -inf before argmax or sampling); others ignore it.

        ``deterministic=False`` samples as SB3 does (softmax of the logits, or the mean plus
        Gaussian noise of ``log_std`` or ``log_std_layer``); a Q head, or an actor without
        a distribution (TD3's), stays greedy. ``squash``: tanh, then rescaled from [-1, 1]
        to the bounds (SB3's ``unscale_action``); else clipped to them.
        """
        hidden, out = self.hidden_and_outputs(obs)
        space = self.action_space
        generator = rng if rng is not None else np.random.default_rng()
        if space.kind == "Discrete" and self.action_mask and mask is not None:
            greedy = deterministic or self.head == "q"
            return masked_choice(out, mask, greedy, generator) + space.start
        if space.kind == "Discrete":
            if deterministic or self.head == "q":
                return np.argmax(out, axis=1) + space.start
            shifted = np.exp(out - out.max(axis=1, keepdims=True))
            probs = shifted / shifted.sum(axis=1, keepdims=True)
            draws = generator.random((out.shape[0], 1))
            picked = (probs.cumsum(axis=1) < draws).sum(axis=1)
            return np.minimum(picked, space.n - 1) + space.start
        mean = out
        if not deterministic:
            log_std = self.log_std
            if self.log_std_layer is not None:
                log_std = self.log_std_layer.of(hidden)
            if log_std is not None:
                mean = mean + np.exp(log_std) * generator.standard_normal(mean.shape)
        assert space.low is not None and space.high is not None
        if self.squash:
            action = space.low + 0.5 * (np.tanh(mean) + 1.0) * (space.high - space.low)
        else:
            action = np.clip(mean, space.low, space.high)
        return action.reshape(-1, *space.shape)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "env": self.env.model_dump(mode="json"),
            "observation_space": self.observation_space.to_json(),
            "action_space": self.action_space.to_json(),
            "policy": {
                "head": self.head,
                "scale": self.scale,
                "conv": [layer.to_json() for layer in self.conv],
                **({"channels_last": True} if self.channels_last else {}),
                "branches": [branch.to_json() for branch in self.branches],
                "layers": layers_json(self.layers),
                "log_std": None if self.log_std is None else self.log_std.tolist(),
                "squash": self.squash,
                "log_std_layer": (
                    None if self.log_std_layer is None else self.log_std_layer.to_json()
                ),
            },
            "obs_norm": None if self.obs_norm is None else self.obs_norm.to_json(),
            "provenance": self.provenance or {},
            **({"action_mask": True} if self.action_mask else {}),
        }


def masked_choice(
    out: FloatArray, mask: NDArray[Any], greedy: bool, rng: np.random.Generator
) -> NDArray[Any]:
    """The argmax, or a softmax sample, of ``out`` over the legal moves of ``mask`` only.

    A row with no legal move is a :class:`BotError` (the game asks for a move it forbids).
    """
    legal = np.asarray(mask).astype(bool).reshape(out.shape[0], -1)
    if legal.shape != out.shape:
        raise BotError(f"an action mask of {legal.shape[1]} moves for a bot of {out.shape[1]}")
    empty = np.flatnonzero(~legal.any(axis=1))
    if empty.size:
        raise BotError(
            f"the game's action mask allows no move (game {int(empty[0])} of the batch); "
            "a game must allow a move whenever it asks for one"
        )
    logits = np.where(legal, out, -np.inf)
    if greedy:
        return np.argmax(logits, axis=1)
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))  # illegal: exactly 0
    cumulative = shifted.cumsum(axis=1)
    draws = rng.random((out.shape[0], 1)) * cumulative[:, -1:]
    # The first move whose cumulative weight exceeds the draw has weight > 0: it is legal
    # (a draw rounded up to the total: the last legal move).
    last_legal = out.shape[1] - 1 - np.argmax(legal[:, ::-1], axis=1)
    return np.minimum((cumulative <= draws).sum(axis=1), last_legal)


def save_env_bot(bot: EnvBot, path: Path) -> None:
    """Write ``bot`` atomically (the curriculum may read it at any time)."""
    atomic_write_json(Path(path), bot.to_json())


def is_env_bot(document: Any) -> bool:
    return isinstance(document, dict) and document.get("format") == FORMAT


def is_env_bot_file(path: Path) -> bool:
    """Whether ``path`` is a JSON file of this format (anything else: the caller's loader
    reports on it)."""
    try:
        return Path(path).is_file() and is_env_bot(read_json(Path(path), "bot"))
    except StateError:
        return False


def load_env_bot(path: Path) -> EnvBot:
    """The env bot in ``path``; a bad file is a one-line :class:`BotError` naming it."""
    try:
        document = read_json(Path(path), "env bot")
    except StateError as exc:
        raise BotError(str(exc)) from None
    try:
        return parse_env_bot(document)
    except ValueError as exc:
        raise BotError(f"{path}: {exc}; rewrite it with `train-env` or fix the field") from None


def parse_env_bot(document: Any) -> EnvBot:
    """An :class:`EnvBot` from its JSON; ``ValueError`` names the field at fault."""
    if not isinstance(document, dict):
        raise ValueError(f"an env bot is a JSON object, got {type(document).__name__}")
    if document.get("format") != FORMAT:
        raise ValueError(f"format is {document.get('format')!r}, expected {FORMAT!r}")
    try:
        env = EnvSpec.model_validate(document.get("env"))
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"env is not an env spec ({first})") from None
    obs_space = parse_space(document.get("observation_space"), "observation_space", allow_dict=True)
    action_space = parse_space(document.get("action_space"), "action_space")
    policy = document.get("policy")
    if not isinstance(policy, dict):
        raise ValueError("policy must be an object with layers")
    head = policy.get("head", "actor")
    if head not in ("actor", "q"):
        raise ValueError(f"policy.head is {head!r}, expected 'actor' or 'q'")
    if head == "q" and action_space.kind != "Discrete":
        raise ValueError("policy.head 'q' needs a Discrete action_space")
    scale = policy.get("scale", 1.0)
    if not isinstance(scale, int | float) or isinstance(scale, bool) or not scale > 0:
        raise ValueError(f"policy.scale must be a positive number, got {scale!r}")
    channels_last = policy.get("channels_last", False)
    if not isinstance(channels_last, bool):
        raise ValueError(f"policy.channels_last must be true or false, got {channels_last!r}")
    image = obs_space.shape if obs_space.kind == "Box" else None
    if channels_last:
        if image is None or len(image) != 3 or not policy.get("conv"):
            raise ValueError("policy.channels_last needs conv layers and a 3-D Box observation")
        image = (image[2], image[0], image[1])
    conv = parse_conv(policy.get("conv"), image)
    inputs = math.prod(conv_output(conv, image or ())) if conv else obs_space.size
    branches = parse_branches(policy.get("branches"), obs_space)
    if branches:
        widths = {b.key: b.layers[-1].weights.shape[0] for b in branches}
        inputs = sum(widths.get(key, part.size) for key, part in obs_space.parts)
    layers = parse_layers(policy.get("layers"), inputs, action_space.size)
    log_std = None
    if policy.get("log_std") is not None:
        log_std = vector(policy["log_std"], "policy.log_std")
        if action_space.kind != "Box" or log_std.shape != (action_space.size,):
            raise ValueError(
                f"policy.log_std has {log_std.size} values; a Box action_space of "
                f"{action_space.size} needs that many (a Discrete one none)"
            )
    provenance = document.get("provenance", {})
    if not isinstance(provenance, dict):
        raise ValueError("provenance must be an object")
    obs_norm = parse_obs_norm(document.get("obs_norm"), obs_space.box_sizes())
    squash = policy.get("squash", False)
    if not isinstance(squash, bool):
        raise ValueError(f"policy.squash must be true or false, got {squash!r}")
    if squash:
        bounds = (action_space.low, action_space.high)
        if action_space.kind != "Box" or not all(
            np.isfinite(b).all() for b in bounds if b is not None
        ):
            raise ValueError("policy.squash needs a Box action_space with finite bounds")
    log_std_layer = _log_std_layer(policy.get("log_std_layer"), layers, action_space, log_std)
    action_mask = document.get("action_mask", False)
    if not isinstance(action_mask, bool):
        raise ValueError(f"action_mask must be true or false, got {action_mask!r}")
    if action_mask and (env.kind != "pettingzoo" or action_space.kind != "Discrete"):
        raise ValueError(
            "action_mask needs an env of kind 'pettingzoo' and a Discrete action_space"
        )
    return EnvBot(
        env,
        obs_space,
        action_space,
        layers,
        head,
        float(scale),
        log_std,
        provenance,
        obs_norm,
        squash,
        log_std_layer,
        conv,
        branches,
        action_mask,
        channels_last,
    )


def _log_std_layer(
    value: Any, layers: tuple[Layer, ...], action_space: Space, log_std: FloatArray | None
) -> LogStdLayer | None:
    if value is None:
        return None
    field = "policy.log_std_layer"
    if action_space.kind != "Box" or log_std is not None:
        raise ValueError(f"{field} needs a Box action_space and no policy.log_std")
    if not isinstance(value, dict):
        raise ValueError(f"{field} must be an object with weights, bias, min and max")
    width = layers[-1].weights.shape[1]
    rows = value.get("weights")
    if not isinstance(rows, list) or len(rows) != action_space.size:
        raise ValueError(f"{field}.weights must list {action_space.size} rows")
    weights = np.array([vector(r, f"{field}.weights") for r in rows])
    if weights.shape != (action_space.size, width):
        raise ValueError(f"{field}.weights rows must have {width} values (the last layer's input)")
    bias = vector(value.get("bias"), f"{field}.bias")
    if bias.shape != (action_space.size,):
        raise ValueError(f"{field}.bias must have {action_space.size} values")
    low: Any = value.get("min")
    high: Any = value.get("max")
    if not (is_number(low) and is_number(high) and low < high):
        raise ValueError(f"{field}.min and .max must be numbers, min < max; got {low!r}, {high!r}")
    return LogStdLayer(weights, bias, float(low), float(high))
