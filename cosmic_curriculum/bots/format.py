"""The bot file format (docs/BOT_FORMAT.md): build documents, validate, load, save, hash.

:func:`load_bot` validates every field and raises :class:`BotError` with one line naming
the file and the fault. No pickle anywhere.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import ValidationError

from cosmic_curriculum import fsio
from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.policy import Policy as Bot
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots.mlp import ACTIVATIONS, Layer, MlpBot
from cosmic_curriculum.bots.scripted import (
    ROOKIE_DECISION_TICKS,
    ROOKIE_PARAMS,
    ScriptedBot,
    ScriptedParams,
)
from cosmic_curriculum.bots.simple import InertBot, RandomBot
from cosmic_curriculum.errors import BotError, describe_validation

BOT_FORMAT = "cosmic-curriculum-bot"
BOT_VERSION = 1
KINDS = ("mlp", "scripted", "inert", "random")

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
