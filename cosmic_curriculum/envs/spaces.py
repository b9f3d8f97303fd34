"""The observation and action spaces of an env bot, and SB3's preprocessing of each.

A space is Discrete (``n``, ``start``), Box (``shape``, ``low``, ``high``, ``dtype``) or,
for observations only, Dict: named Discrete/Box parts in the order SB3's
``CombinedExtractor`` concatenates them. ``features`` turns a batch of observations into
the network's input as SB3's ``preprocess_obs`` does: a Discrete part one-hot, a Box part
cast to float and flattened (times ``scale``: 1/255 for an image SB3 divided), Dict parts
concatenated. numpy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Space:
    kind: Literal["Discrete", "Box", "Dict"]
    n: int = 0
    start: int = 0
    shape: tuple[int, ...] = ()
    low: FloatArray | None = None
    high: FloatArray | None = None
    dtype: str = "float32"
    parts: tuple[tuple[str, Space], ...] = ()  # Dict: (key, space) in concatenation order

    @property
    def size(self) -> int:
        """Features of a one-hot or flattened observation; outputs of an action head."""
        if self.kind == "Dict":
            return sum(space.size for _, space in self.parts)
        return self.n if self.kind == "Discrete" else math.prod(self.shape)

    def box_sizes(self) -> dict[str | None, int]:
        """Values of each Box part (``None``: the whole observation), which obs_norm may
        normalize (VecNormalize refuses other spaces)."""
        if self.kind == "Dict":
            return {k: math.prod(s.shape) for k, s in self.parts if s.kind == "Box"}
        return {None: math.prod(self.shape)} if self.kind == "Box" else {}

    def features(self, obs: Any, scale: float = 1.0) -> FloatArray:
        """A batch of observations (a dict of batches for Dict) as ``(batch, size)``."""
        if self.kind == "Dict":
            if not isinstance(obs, dict):
                raise ValueError("a Dict observation space needs a dict of observations")
            return np.concatenate([space.features(obs[key]) for key, space in self.parts], 1)
        if self.kind == "Discrete":
            index = np.asarray(obs, dtype=np.int64).reshape(-1)  # SB3 one-hot from 0
            return np.eye(self.n, dtype=np.float64)[index]
        array = channels_first(np.asarray(obs, dtype=np.float64), self)
        array = array.reshape(-1, self.size)
        return array * scale if scale != 1.0 else array

    def transposed_image(self) -> tuple[int, ...] | None:
        """A channel-first image's channel-last shape (what the env gives when SB3's
        VecTransposeImage wrapped it); ``None`` for any other space."""
        if self.kind != "Box" or len(self.shape) != 3 or self.dtype != "uint8":
            return None
        return (self.shape[1], self.shape[2], self.shape[0])

    def to_json(self) -> dict[str, Any]:
        if self.kind == "Dict":
            return {"type": "Dict", "spaces": [{"key": k, **s.to_json()} for k, s in self.parts]}
        if self.kind == "Discrete":
            return {"type": "Discrete", "n": self.n, "start": self.start}
        assert self.low is not None and self.high is not None
        return {
            "type": "Box",
            "shape": list(self.shape),
            "dtype": self.dtype,
            "low": _finite_list(self.low),
            "high": _finite_list(self.high),
        }


def channels_first(batch: Any, space: Space) -> Any:
    """A batch of channel-last images as the channel-first ones the policy reads, as SB3's
    ``predict`` transposes them (``maybe_transpose``); anything else unchanged."""
    hwc = space.transposed_image()
    array = np.asarray(batch)
    if hwc is not None and hwc != space.shape and array.shape[1:] == hwc:
        return np.transpose(array, (0, 3, 1, 2))
    return batch


def same_space(env: Space, bot: Space) -> bool:
    """Whether an env's space is the one a bot plays: a Dict's keys in any order, a
    channel-last image for a channel-first one (SB3 transposed it in training)."""
    if env.kind == "Dict" and bot.kind == "Dict":
        mine, theirs = dict(env.parts), dict(bot.parts)
        return mine.keys() == theirs.keys() and all(same_space(mine[k], theirs[k]) for k in mine)
    if env.to_json() == bot.to_json():
        return True
    hwc = bot.transposed_image()
    if hwc is None or env.shape != hwc or env.dtype != bot.dtype:
        return False
    assert env.low is not None and env.high is not None
    assert bot.low is not None and bot.high is not None
    order = np.arange(bot.size).reshape(bot.shape).transpose(1, 2, 0).reshape(-1)
    return bool(
        np.array_equal(env.low, bot.low[order]) and np.array_equal(env.high, bot.high[order])
    )


def _finite_list(values: FloatArray) -> list[float | None]:
    # JSON has no infinity: an unbounded side is null.
    return [float(v) if math.isfinite(v) else None for v in values.reshape(-1)]


def batch_of(observations: list[Any]) -> Any:
    """Observations of several envs as one batch: stacked arrays, or a dict of them."""
    if observations and isinstance(observations[0], dict):
        return {k: np.stack([np.asarray(o[k]) for o in observations]) for k in observations[0]}
    return np.stack([np.asarray(o) for o in observations])


def batch_size(obs: Any) -> int:
    if isinstance(obs, dict):
        return len(next(iter(obs.values()))) if obs else 0
    return len(obs)


def all_finite(obs: Any) -> bool:
    """Whether every value of an observation (each part of a dict) is a finite number."""
    parts = obs.values() if isinstance(obs, dict) else [obs]
    try:
        return all(bool(np.all(np.isfinite(np.asarray(p, dtype=np.float64)))) for p in parts)
    except (TypeError, ValueError):
        return False


def count(value: Any, field: str, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{field} must be an integer >= {minimum}, got {value!r}")
    return value


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def parse_space(value: Any, field: str, *, allow_dict: bool = False) -> Space:
    """A :class:`Space` from its JSON; ``ValueError`` names the field at fault."""
    if not isinstance(value, dict):
        raise ValueError(f"{field} must be an object with a type")
    kind = value.get("type")
    if kind == "Dict" and allow_dict:
        return _dict_space(value.get("spaces"), field)
    if kind == "Discrete":
        n = count(value.get("n"), f"{field}.n", 1)
        return Space("Discrete", n=n, start=count(value.get("start", 0), f"{field}.start", 0))
    if kind != "Box":
        kinds = "'Discrete', 'Box' or 'Dict'" if allow_dict else "'Discrete' or 'Box'"
        raise ValueError(f"{field}.type is {kind!r}; env bots hold {kinds} spaces here")
    shape = value.get("shape")
    if not isinstance(shape, list) or not shape:
        raise ValueError(f"{field}.shape must be a non-empty list of sizes, got {shape!r}")
    dims = tuple(count(d, f"{field}.shape", 1) for d in shape)
    bounds = []
    for side, unbounded in (("low", -np.inf), ("high", np.inf)):
        raw = value.get(side)
        if not isinstance(raw, list) or len(raw) != math.prod(dims):
            raise ValueError(f"{field}.{side} must list {math.prod(dims)} bounds (null: none)")
        if any(not (v is None or is_number(v)) for v in raw):
            raise ValueError(f"{field}.{side} must hold numbers or null")
        bounds.append(np.array([unbounded if v is None else v for v in raw], dtype=np.float64))
    dtype = value.get("dtype", "float32")
    if not isinstance(dtype, str):
        raise ValueError(f"{field}.dtype must be a string, got {dtype!r}")
    return Space("Box", shape=dims, low=bounds[0], high=bounds[1], dtype=dtype)


def _dict_space(raw: Any, field: str) -> Space:
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{field}.spaces must be a non-empty list of keyed spaces")
    parts: list[tuple[str, Space]] = []
    for i, part in enumerate(raw):
        where = f"{field}.spaces[{i}]"
        key = part.get("key") if isinstance(part, dict) else None
        if not isinstance(key, str) or not key or key in dict(parts):
            raise ValueError(f"{where}.key must be a new non-empty string, got {key!r}")
        parts.append((key, parse_space(part, where)))
    return Space("Dict", parts=tuple(parts))
