"""Observation normalization of an env bot: SB3's ``VecNormalize`` statistics, frozen.

A policy trained behind ``VecNormalize`` saw ``clip((obs - mean) / sqrt(var + epsilon),
-clip_obs, clip_obs)`` (cast to float32), not the env's raw observation; the bot applies
the same before its network. JSON (``obs_norm`` of the bot file), ``mean``/``var``
flattened in C order of the observation's (or the key's) shape::

    {"clip_obs": 10.0, "epsilon": 1e-08, "mean": [...], "var": [...]}          # Box
    {"clip_obs": 10.0, "epsilon": 1e-08, "keys": {"k": {"mean": [...], "var": [...]}}}  # Dict

A Dict observation normalizes the listed keys only (VecNormalize's ``norm_obs_keys``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Stats:
    mean: FloatArray  # flattened
    var: FloatArray

    def apply(self, obs: Any, clip_obs: float, epsilon: float) -> FloatArray:
        """A batch ``(batch, *shape)`` normalized as VecNormalize does, float32 values."""
        array = np.asarray(obs, dtype=np.float64)
        flat = array.reshape(-1, self.mean.size)
        scaled = np.clip((flat - self.mean) / np.sqrt(self.var + epsilon), -clip_obs, clip_obs)
        return scaled.astype(np.float32).astype(np.float64).reshape(array.shape)

    def to_json(self) -> dict[str, Any]:
        return {"mean": self.mean.tolist(), "var": self.var.tolist()}


@dataclass(frozen=True)
class ObsNorm:
    """``stats`` for a Box observation, or ``keys`` (name → stats) for a Dict one."""

    clip_obs: float
    epsilon: float
    stats: Stats | None = None
    keys: dict[str, Stats] | None = None

    def apply(self, obs: Any) -> Any:
        """``obs`` (an array, or a dict of arrays) as the policy saw it in training."""
        if self.stats is not None:
            return self.stats.apply(obs, self.clip_obs, self.epsilon)
        assert self.keys is not None
        if not isinstance(obs, dict):
            raise ValueError("obs_norm has keys but the observation is not a dict")
        out = dict(obs)
        for key, stats in self.keys.items():
            out[key] = stats.apply(obs[key], self.clip_obs, self.epsilon)
        return out

    def sizes(self) -> dict[str | None, int]:
        """Features each normalized part holds (``None``: the whole Box observation)."""
        if self.stats is not None:
            return {None: self.stats.mean.size}
        assert self.keys is not None
        return {key: stats.mean.size for key, stats in self.keys.items()}

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"clip_obs": self.clip_obs, "epsilon": self.epsilon}
        if self.stats is not None:
            document.update(self.stats.to_json())
        else:
            assert self.keys is not None
            document["keys"] = {key: stats.to_json() for key, stats in self.keys.items()}
        return document


def _positive(value: Any, field: str) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or not value > 0:
        raise ValueError(f"{field} must be a positive number, got {value!r}")
    return float(value)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _stats(value: Any, field: str, size: int) -> Stats:
    if not isinstance(value, dict):
        raise ValueError(f"{field} must be an object with mean and var")
    arrays = []
    for part in ("mean", "var"):
        raw = value.get(part)
        if not isinstance(raw, list) or len(raw) != size or not all(map(_finite, raw)):
            raise ValueError(f"{field}.{part} must list {size} finite numbers")
        arrays.append(np.array(raw, dtype=np.float64))
    if np.any(arrays[1] < 0):
        raise ValueError(f"{field}.var must not be negative")
    return Stats(arrays[0], arrays[1])


def parse_obs_norm(value: Any, sizes: dict[str | None, int]) -> ObsNorm | None:
    """The ``obs_norm`` field; ``sizes`` maps each part of the observation to its features
    (``{None: n}`` for a Box observation, key → n for a Dict one). Null: no normalization."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError("obs_norm must be an object (or null)")
    if not sizes:
        raise ValueError("obs_norm needs a Box or Dict observation_space (VecNormalize's)")
    clip_obs = _positive(value.get("clip_obs"), "obs_norm.clip_obs")
    epsilon = _positive(value.get("epsilon"), "obs_norm.epsilon")
    if None in sizes:
        return ObsNorm(clip_obs, epsilon, stats=_stats(value, "obs_norm", sizes[None]))
    raw = value.get("keys")
    if not isinstance(raw, dict) or not raw:
        raise ValueError("obs_norm.keys must map observation keys to mean and var")
    keys: dict[str, Stats] = {}
    for key, stats in raw.items():
        if key not in sizes:
            known = ", ".join(sorted(k for k in sizes if k is not None))
            raise ValueError(f"obs_norm.keys has {key!r}; the observation's keys are {known}")
        keys[key] = _stats(stats, f"obs_norm.keys.{key}", sizes[key])
    return ObsNorm(clip_obs, epsilon, keys=keys)


def obs_norm_of(normalizer: Any) -> ObsNorm | None:
    """The frozen statistics of an SB3 ``VecNormalize`` (``None`` when it does not
    normalize observations); duck-typed so this module never imports SB3."""
    if normalizer is None or not getattr(normalizer, "norm_obs", False):
        return None
    clip_obs, epsilon = float(normalizer.clip_obs), float(normalizer.epsilon)
    rms = normalizer.obs_rms

    def frozen(one: Any) -> Stats:
        mean = np.asarray(one.mean, dtype=np.float64).reshape(-1)
        var = np.asarray(one.var, dtype=np.float64).reshape(-1)
        return Stats(mean.copy(), var.copy())

    if isinstance(rms, dict):
        names = normalizer.norm_obs_keys or list(rms)
        return ObsNorm(clip_obs, epsilon, keys={k: frozen(rms[k]) for k in names})
    return ObsNorm(clip_obs, epsilon, stats=frozen(rms))
