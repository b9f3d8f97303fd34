"""Bots: the ``Bot`` protocol, numpy inference, scripted bots and the bot JSON format.

A bot maps a batch of observations ``float32 (n, OBS_SIZE)`` (see
``arena.observations``) to a batch of actions ``float32 (n, ACT_SIZE)`` in [-1, 1]. Bots
are played at their own decision rate (``decision_ticks`` physics ticks per decision).

Kinds: ``mlp`` (weights in JSON, deterministic mean action), ``scripted`` (the rookie),
``inert`` (all zeros) and ``random`` (uniform actions). Files follow docs/BOT_FORMAT.md;
:func:`load_bot` validates every field and raises :class:`BotError` with one line naming
the file and the fault. No pickle anywhere; this module never imports torch.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cosmic_curriculum import fsio
from cosmic_curriculum.arena.observations import (
    OBS_SIZE,
    ORB_POS,
    OWN_FWD,
    OWN_POS,
    OWN_UP,
    OWN_VEL,
)
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.errors import BotError, describe_validation

BOT_FORMAT = "cosmic-curriculum-bot"
BOT_VERSION = 1
KINDS = ("mlp", "scripted", "inert", "random")
ACTIVATIONS = ("tanh", "relu", "linear")
OBS_CLIP = 10.0

F32 = NDArray[np.float32]
Layer = tuple[NDArray[Any], NDArray[Any], str]


@runtime_checkable
class Bot(Protocol):
    """A batched policy. ``reset(mask)`` makes stateful bots forget the masked games."""

    kind: str
    decision_ticks: int

    def act(self, obs: F32, rng: np.random.Generator) -> F32: ...

    def reset(self, mask: NDArray[np.bool_]) -> None: ...


def _check_decision_ticks(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"decision_ticks must be an integer >= 1, got {value!r}")
    return value


# --------------------------------------------------------------------------------------
# simple bots
# --------------------------------------------------------------------------------------


class InertBot:
    """Does nothing: every action is zero (the ship drifts only when pushed)."""

    kind = "inert"

    def __init__(self, decision_ticks: int = 16, game: GameSettings | None = None) -> None:
        self.decision_ticks = _check_decision_ticks(decision_ticks)
        self.game = game

    def act(self, obs: F32, rng: np.random.Generator) -> F32:
        return np.zeros((obs.shape[0], ACT_SIZE), dtype=np.float32)

    def reset(self, mask: NDArray[np.bool_]) -> None:
        return None


class RandomBot:
    """Uniform random actions in [-1, 1], drawn fresh every decision from ``rng``."""

    kind = "random"

    def __init__(self, decision_ticks: int = 16, game: GameSettings | None = None) -> None:
        self.decision_ticks = _check_decision_ticks(decision_ticks)
        self.game = game

    def act(self, obs: F32, rng: np.random.Generator) -> F32:
        return rng.uniform(-1.0, 1.0, size=(obs.shape[0], ACT_SIZE)).astype(np.float32)

    def reset(self, mask: NDArray[np.bool_]) -> None:
        return None


# --------------------------------------------------------------------------------------
# MLP bots (numpy inference of an exported SB3 policy)
# --------------------------------------------------------------------------------------


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
        decision_ticks: int = 16,
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
        self.decision_ticks = _check_decision_ticks(decision_ticks)
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


# --------------------------------------------------------------------------------------
# the scripted rookie
# --------------------------------------------------------------------------------------


class ScriptedParams(BaseModel):
    """Knobs of the scripted bot. Distances are in arena units (a ship is 2 units wide)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reaction_delay: int = Field(1, ge=0, le=50, description="decisions of lag on the orb")
    aim_noise: float = Field(1.0, ge=0.0, le=100.0, description="std of the aim offset")
    aim_hold: int = Field(6, ge=1, le=1000, description="mean decisions between aim redraws")
    behind_distance: float = Field(3.5, ge=0.0, le=100.0, description="lines up this far back")
    push_lateral: float = Field(1.5, ge=0.0, le=100.0, description="max offset to push")
    push_through: float = Field(3.0, ge=0.0, le=100.0, description="aims this far past the orb")
    clearance: float = Field(4.0, ge=0.0, le=100.0, description="detour distance round the orb")
    wall_margin: float = Field(1.5, ge=0.0, le=100.0, description="keeps targets off walls")
    thrust_level: float = Field(0.7, ge=0.0, le=1.0, description="thrust when on course")
    approach_gain: float = Field(1.5, gt=0.0, le=100.0, description="wanted speed per unit")
    velocity_scale: float = Field(3.0, gt=0.0, le=100.0, description="speed error for full")
    yaw_gain: float = Field(2.0, ge=0.0, le=100.0)
    strafe_gain: float = Field(0.5, ge=0.0, le=100.0)
    lift_gain: float = Field(1.0, ge=0.0, le=100.0)
    level_gain: float = Field(2.0, ge=0.0, le=100.0)


ROOKIE_DECISION_TICKS = 16
ROOKIE_PARAMS = ScriptedParams()


class ScriptedBot:
    """Drives to a point behind the orb on the line to the opponent's goal, then pushes.

    It works in its attack frame, in arena units (the arena size comes from ``game``, the
    settings in its bot file). Weaknesses on purpose: it sees the orb ``reaction_delay``
    decisions late and does not lead it, aims at a noisy point, never defends and never
    uses full thrust. Stateful (the delay buffer and the aim offsets): ``reset(mask)``
    forgets the masked games.
    """

    kind = "scripted"

    def __init__(
        self,
        params: ScriptedParams = ROOKIE_PARAMS,
        decision_ticks: int = ROOKIE_DECISION_TICKS,
        game: GameSettings | None = None,
    ) -> None:
        self.params = params
        self.decision_ticks = _check_decision_ticks(decision_ticks)
        self.game = game
        g = game if game is not None else GameSettings()
        self._half = np.array([g.arena_half_length, g.arena_half_width, g.arena_half_height])
        self._max_speed = g.ship_max_speed
        self._target_lim = np.maximum(self._half - params.wall_margin, 0.0)
        self._buf: NDArray[np.float64] | None = None  # (delay + 1, n, 3) past orb positions
        self._head = 0
        self._fresh = np.zeros(0, dtype=bool)
        self._aim = np.zeros((0, 3))

    def reset(self, mask: NDArray[np.bool_]) -> None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape == self._fresh.shape:
            self._fresh |= mask
        else:
            self._buf = None  # batch size changed: start over on the next act

    def act(self, obs: F32, rng: np.random.Generator) -> F32:
        p = self.params
        n = obs.shape[0]
        now = np.asarray(obs, dtype=np.float64)
        orb_now = now[:, ORB_POS] * self._half
        depth = p.reaction_delay + 1
        if self._buf is None or self._buf.shape[1] != n:
            self._buf = np.empty((depth, n, 3))
            self._head = 0
            self._fresh = np.ones(n, dtype=bool)
            self._aim = np.zeros((n, 3))
        fresh = self._fresh
        if fresh.any():
            # a new game: no history yet, so the past looks like the present
            self._buf[:, fresh] = orb_now[fresh]
            self._aim[fresh] = rng.normal(0.0, p.aim_noise, size=(int(fresh.sum()), 3))
            fresh[:] = False
        redraw = np.less(rng.random(n), 1.0 / p.aim_hold)
        if redraw.any():
            self._aim[redraw] = rng.normal(0.0, p.aim_noise, size=(int(redraw.sum()), 3))
        self._buf[self._head] = orb_now
        self._head = (self._head + 1) % depth
        orb = self._buf[self._head]  # where the orb was reaction_delay decisions ago
        return self._policy(now, orb).astype(np.float32)

    def _policy(self, now: NDArray[np.float64], orb: NDArray[np.float64]) -> NDArray[np.float64]:
        """Actions from the present pose and the (late) orb, in attack-frame units."""
        p = self.params
        half = self._half
        ship = now[:, OWN_POS] * half
        to_goal = -orb
        to_goal[:, 0] += half[0]
        to_goal /= np.maximum(_norm(to_goal), 1e-9)[:, None]
        rel = orb - ship
        along = _dot(rel, to_goal)  # > 0: the ship is on the far side from the goal
        offset = along[:, None] * to_goal - rel  # from the orb's line toward the ship
        lateral = _norm(offset)
        push = (along > 0.0) & (lateral < p.push_lateral)
        reach = np.where(push, p.push_through, -p.behind_distance)
        target = orb + to_goal * reach[:, None]
        target += self._aim  # sloppy aim when lining up and shooting
        # on the goal side of the orb: swing round it instead of knocking it backwards
        around = ~push & (along < 0.5 * p.behind_distance)
        if around.any():
            away = offset / np.maximum(lateral, 1e-6)[:, None]
            away[lateral <= 1e-6] = (0.0, 1.0, 0.0)
            detour = orb + away * p.clearance - to_goal * p.behind_distance
            target[around] = detour[around]
        # a target beyond a wall pins the ship there: keep it inside, and push straight at
        # the orb when that is as close as the ship can get
        lim = self._target_lim
        clamped = np.clip(target, -lim, lim)
        stuck = ~push & (np.abs(clamped - target).sum(axis=1) > 0.5)
        if stuck.any():
            stuck &= _norm(clamped - ship) < p.wall_margin + 1.0
            clamped[stuck] = (orb + to_goal * p.push_through)[stuck]
        target = clamped
        if self.game is not None and not self.game.allow_vertical:
            target[:, 2] = 0.0
        # steer toward the target; thrust, strafe and lift chase a desired velocity that
        # slows down near the target (it brakes instead of orbiting), capped by thrust_level
        to_target = target - ship
        dist = np.maximum(_norm(to_target), 1e-9)
        cruise = p.thrust_level * self._max_speed
        speed = np.where(push | stuck, cruise, np.minimum(cruise, p.approach_gain * dist))
        want = to_target * (speed / dist)[:, None]
        want -= now[:, OWN_VEL] * self._max_speed
        # rows of `axes` are the body axes in the attack frame: forward, left, up
        fwd, up = now[:, OWN_FWD], now[:, OWN_UP]
        left = _cross(up, fwd)
        axes = np.stack((fwd, left, up), axis=1)
        body = np.einsum("nij,nkj->nki", axes, np.stack((want, to_target), axis=1))
        error = body[:, 0] / p.velocity_scale
        bearing = np.arctan2(body[:, 1, 1], body[:, 1, 0])
        act = np.empty((now.shape[0], ACT_SIZE))
        act[:, 0] = np.clip(error[:, 0], -1.0, p.thrust_level)
        act[:, 1] = p.strafe_gain * error[:, 1]
        act[:, 2] = p.lift_gain * error[:, 2]
        act[:, 3] = p.yaw_gain * bearing
        # stay level: pitch the nose back to the horizon, roll the wings flat
        act[:, 4] = -p.level_gain * fwd[:, 2]
        act[:, 5] = -p.level_gain * left[:, 2]
        np.clip(act[:, 1:], -1.0, 1.0, out=act[:, 1:])
        return act


def _dot(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    out: NDArray[np.float64] = np.einsum("ij,ij->i", a, b)
    return out


def _norm(a: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.sqrt(_dot(a, a))


def _cross(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.stack(
        (
            a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
            a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
            a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0],
        ),
        axis=1,
    )


# --------------------------------------------------------------------------------------
# documents: build, validate, load, save
# --------------------------------------------------------------------------------------

_TOP_KEYS = {
    "format",
    "version",
    "kind",
    "observation_size",
    "action_size",
    "decision_ticks",
    "game",
    "provenance",
    "partial",
}
_KIND_KEYS = {"mlp": {"network"}, "scripted": {"params"}, "inert": set(), "random": set()}


def _floats(values: Any) -> list[Any]:
    out: list[Any] = np.asarray(values, dtype=np.float64).tolist()
    return out


def _game_dict(game: GameSettings | dict[str, Any]) -> dict[str, Any]:
    if isinstance(game, GameSettings):
        return game.model_dump()
    return dict(game)


def mlp_bot_document(
    layers: Sequence[Layer],
    obs_mean: NDArray[Any] | Sequence[float] | None,
    obs_std: NDArray[Any] | Sequence[float] | None,
    game: GameSettings | dict[str, Any],
    decision_ticks: int,
    provenance: dict[str, Any],
    partial: bool = False,
) -> dict[str, Any]:
    """The JSON document of an MLP bot; ``layers`` are ``(W (out, in), b (out,), act)``."""
    return {
        "format": BOT_FORMAT,
        "version": BOT_VERSION,
        "kind": "mlp",
        "observation_size": OBS_SIZE,
        "action_size": ACT_SIZE,
        "decision_ticks": int(decision_ticks),
        "game": _game_dict(game),
        "network": {
            "layers": [
                {"weights": _floats(w), "bias": _floats(b), "activation": str(act)}
                for w, b, act in layers
            ],
            "obs_mean": None if obs_mean is None else _floats(obs_mean),
            "obs_std": None if obs_std is None else _floats(obs_std),
        },
        "provenance": dict(provenance),
        "partial": bool(partial),
    }


def simple_bot_document(
    kind: Literal["inert", "random"],
    decision_ticks: int = 16,
    game: GameSettings | dict[str, Any] | None = None,
    provenance: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON document of an ``inert`` or ``random`` bot."""
    return {
        "format": BOT_FORMAT,
        "version": BOT_VERSION,
        "kind": kind,
        "observation_size": OBS_SIZE,
        "action_size": ACT_SIZE,
        "decision_ticks": int(decision_ticks),
        "game": _game_dict(game if game is not None else GameSettings()),
        "provenance": dict(provenance or {"experiment": kind, "note": "built-in baseline"}),
        "partial": False,
    }


def rookie_document() -> dict[str, Any]:
    """The JSON document of the rookie (bots/rookie.json must equal it)."""
    return {
        "format": BOT_FORMAT,
        "version": BOT_VERSION,
        "kind": "scripted",
        "observation_size": OBS_SIZE,
        "action_size": ACT_SIZE,
        "decision_ticks": ROOKIE_DECISION_TICKS,
        "game": GameSettings().model_dump(),
        "params": ROOKIE_PARAMS.model_dump(),
        "provenance": {
            "experiment": "rookie",
            "timesteps": 0,
            "git_commit": None,
            "checkpoint_sha256": None,
            "note": "hand-written scripted bot: lines up behind the orb and pushes",
        },
        "partial": False,
    }


class _Fault(Exception):
    """A validation fault; the loader prefixes the file name."""


def _need(doc: dict[str, Any], key: str, where: str = "") -> Any:
    if key not in doc:
        raise _Fault(f"missing key {where}{key!r}")
    return doc[key]


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Fault(f"{what} must be an integer, got {value!r}")
    return value


def _matrix(value: Any, what: str, ndim: int) -> NDArray[np.float64]:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise _Fault(f"{what} is not a rectangular array of numbers") from None
    if arr.dtype == object or arr.ndim != ndim:
        raise _Fault(f"{what} must be a {ndim}-D array of numbers, got {arr.ndim}-D")
    if isinstance(value, list) and any(isinstance(v, bool) for v in np.ravel(value)):
        raise _Fault(f"{what} contains booleans")
    if not np.all(np.isfinite(arr)):
        raise _Fault(f"{what} contains NaN or infinite values")
    return arr


def _vector_or_none(value: Any, what: str) -> NDArray[np.float64] | None:
    if value is None:
        return None
    arr = _matrix(value, what, 1)
    if arr.shape != (OBS_SIZE,):
        raise _Fault(f"{what} has {arr.shape[0]} entries, expected observation_size {OBS_SIZE}")
    return arr


def _build(doc: Any) -> Bot:
    if not isinstance(doc, dict):
        raise _Fault(f"top level must be a JSON object, got {type(doc).__name__}")
    fmt = _need(doc, "format")
    if fmt != BOT_FORMAT:
        raise _Fault(f"format is {fmt!r}, expected {BOT_FORMAT!r} (not a bot file?)")
    version = _need(doc, "version")
    if version != BOT_VERSION or isinstance(version, bool):
        raise _Fault(f"version {version!r} is not supported (this program reads {BOT_VERSION})")
    kind = _need(doc, "kind")
    if kind not in KINDS:
        raise _Fault(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    unknown = set(doc) - _TOP_KEYS - _KIND_KEYS[kind]
    if unknown:
        raise _Fault(f"unknown key(s) {', '.join(sorted(unknown))} for kind {kind!r}")
    for key in sorted(_TOP_KEYS | _KIND_KEYS[kind]):
        _need(doc, key)
    obs_size = _int(doc["observation_size"], "observation_size")
    if obs_size != OBS_SIZE:
        raise _Fault(
            f"observation_size {obs_size} does not match this game's {OBS_SIZE} "
            "(the bot was made for another version of the arena)"
        )
    act_size = _int(doc["action_size"], "action_size")
    if act_size != ACT_SIZE:
        raise _Fault(f"action_size {act_size} does not match this game's {ACT_SIZE}")
    ticks = _int(doc["decision_ticks"], "decision_ticks")
    if ticks < 1:
        raise _Fault(f"decision_ticks {ticks} must be >= 1")
    try:
        game = GameSettings.model_validate(doc["game"])
    except ValidationError as exc:
        raise _Fault(f"game settings invalid: {describe_validation(exc)}") from None
    if not isinstance(doc["provenance"], dict):
        raise _Fault("provenance must be a JSON object")
    if not isinstance(doc["partial"], bool):
        raise _Fault(f"partial must be true or false, got {doc['partial']!r}")

    if kind == "inert":
        return InertBot(ticks, game)
    if kind == "random":
        return RandomBot(ticks, game)
    if kind == "scripted":
        try:
            params = ScriptedParams.model_validate(doc["params"])
        except ValidationError as exc:
            raise _Fault(f"params invalid: {describe_validation(exc)}") from None
        return ScriptedBot(params, ticks, game)

    net = doc["network"]
    if not isinstance(net, dict):
        raise _Fault("network must be a JSON object")
    extra = set(net) - {"layers", "obs_mean", "obs_std"}
    if extra:
        raise _Fault(f"unknown key(s) network.{', network.'.join(sorted(extra))}")
    raw_layers = _need(net, "layers", "network.")
    if not isinstance(raw_layers, list) or not raw_layers:
        raise _Fault("network.layers must be a non-empty list")
    layers: list[Layer] = []
    width = OBS_SIZE
    for i, layer in enumerate(raw_layers):
        where = f"network.layers[{i}]"
        if not isinstance(layer, dict):
            raise _Fault(f"{where} must be a JSON object")
        extra = set(layer) - {"weights", "bias", "activation"}
        if extra:
            raise _Fault(f"unknown key(s) {', '.join(sorted(extra))} in {where}")
        w = _matrix(_need(layer, "weights", f"{where}."), f"{where}.weights", 2)
        b = _matrix(_need(layer, "bias", f"{where}."), f"{where}.bias", 1)
        activation = _need(layer, "activation", f"{where}.")
        if activation not in ACTIVATIONS:
            raise _Fault(f"{where}.activation {activation!r} is not one of {ACTIVATIONS}")
        if w.shape[1] != width:
            raise _Fault(
                f"{where}.weights is {w.shape[0]}x{w.shape[1]} but its input has {width} "
                f"values ({'observation_size' if i == 0 else 'previous layer'})"
            )
        if b.shape != (w.shape[0],):
            raise _Fault(f"{where}.bias has {b.shape[0]} values, expected {w.shape[0]}")
        layers.append((w, b, activation))
        width = w.shape[0]
    if width != ACT_SIZE:
        raise _Fault(f"the last layer gives {width} outputs, expected action_size {ACT_SIZE}")
    if layers[-1][2] != "linear":
        raise _Fault(f"the last layer's activation must be 'linear', got {layers[-1][2]!r}")
    mean = _vector_or_none(net.get("obs_mean"), "network.obs_mean")
    std = _vector_or_none(net.get("obs_std"), "network.obs_std")
    if std is not None and not np.all(std > 0.0):
        raise _Fault("network.obs_std must be > 0 everywhere")
    return MlpBot(layers, mean, std, ticks, game)


def bot_from_document(doc: Any, source: str = "<document>") -> Bot:
    """Validate an in-memory bot document and build its bot (``BotError`` if invalid)."""
    try:
        return _build(doc)
    except _Fault as fault:
        raise BotError(f"{source}: {fault}") from None


def load_bot(path: str | Path) -> Bot:
    """Read and validate a bot file; any fault raises ``BotError`` naming file and fault."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BotError(f"{path}: bot file not found") from None
    except IsADirectoryError:
        raise BotError(f"{path}: is a directory, expected a bot JSON file") from None
    except OSError as exc:
        raise BotError(f"{path}: cannot read bot file: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise BotError(f"{path}: not a bot file (not UTF-8 text)") from None
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise BotError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except _Fault as fault:
        raise BotError(f"{path}: {fault}") from None
    return bot_from_document(doc, str(path))


def _reject_constant(name: str) -> float:
    raise _Fault(f"contains {name}, which is not a finite number")


def save_bot(path: str | Path, document: dict[str, Any]) -> None:
    """Validate ``document`` and write it atomically (temp + fsync + rename)."""
    bot_from_document(document, str(path))
    fsio.atomic_write_json(Path(path), document)


def bot_sha256(path: str | Path) -> str:
    """Hex sha256 of a bot file's bytes (identifies the exact bot in eval records)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise BotError(f"{path}: cannot read bot file: {exc.strerror}") from None


def bot_from_spec(spec: str, decision_ticks: int = 16) -> Bot:
    """An opponent from a command-line spec: ``inert``, ``random``, ``rookie`` or
    ``bot:<path>`` (``decision_ticks`` applies to inert and random)."""
    if spec == "inert":
        return InertBot(decision_ticks)
    if spec == "random":
        return RandomBot(decision_ticks)
    if spec == "rookie":
        return bot_from_document(rookie_document(), "rookie")
    if spec.startswith("bot:") and len(spec) > 4:
        return load_bot(spec[4:])
    raise BotError(
        f"opponent {spec!r} is not one of inert, random, rookie, bot:<path to a bot JSON>"
    )
