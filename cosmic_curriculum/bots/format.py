"""Bot files (docs/BOT_FORMAT.md): build documents, load, save and hash them.

:func:`load_bot` validates every field (the models in ``bots.schema``) and raises
:class:`BotError` with one line naming the file and the fault. No pickle anywhere.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.policy import Policy as Bot
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots.mlp import Layer, MlpBot
from cosmic_curriculum.bots.schema import (
    BOT_FORMAT,
    BOT_VERSION,
    MlpDocument,
    ScriptedDocument,
    validate_document,
)
from cosmic_curriculum.bots.scripted import ROOKIE_DECISION_TICKS, ROOKIE_PARAMS, ScriptedBot
from cosmic_curriculum.bots.simple import InertBot, RandomBot
from cosmic_curriculum.bots.veteran import (
    VETERAN_DECISION_TICKS,
    VETERAN_PARAMS,
    VeteranBot,
    VeteranParams,
)
from cosmic_curriculum.defaults import DECISION_TICKS
from cosmic_curriculum.errors import BotError
from cosmic_curriculum.system import fsio


def _floats(values: Any) -> list[Any]:
    out: list[Any] = np.asarray(values, dtype=np.float64).tolist()
    return out


def _document(
    kind: str,
    decision_ticks: int,
    game: GameSettings | dict[str, Any],
    body: dict[str, Any],
    provenance: dict[str, Any],
    partial: bool,
) -> dict[str, Any]:
    """A bot document with its keys in the order of the files on disk."""
    return {
        "format": BOT_FORMAT,
        "version": BOT_VERSION,
        "kind": kind,
        "observation_size": OBS_SIZE,
        "action_size": ACT_SIZE,
        "decision_ticks": int(decision_ticks),
        "game": game.model_dump() if isinstance(game, GameSettings) else dict(game),
        **body,
        "provenance": dict(provenance),
        "partial": bool(partial),
    }


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
    network = {
        "layers": [
            {"weights": _floats(w), "bias": _floats(b), "activation": str(act)}
            for w, b, act in layers
        ],
        "obs_mean": None if obs_mean is None else _floats(obs_mean),
        "obs_std": None if obs_std is None else _floats(obs_std),
    }
    return _document("mlp", decision_ticks, game, {"network": network}, provenance, partial)


def simple_bot_document(
    kind: Literal["inert", "random"],
    decision_ticks: int = DECISION_TICKS,
    game: GameSettings | dict[str, Any] | None = None,
    provenance: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON document of an ``inert`` or ``random`` bot."""
    return _document(
        kind,
        decision_ticks,
        game if game is not None else GameSettings(),
        {},
        provenance or {"experiment": kind, "note": "built-in baseline"},
        False,
    )


def rookie_document() -> dict[str, Any]:
    """The JSON document of the rookie (bots/rookie.json must equal it)."""
    provenance = {
        "experiment": "rookie",
        "timesteps": 0,
        "git_commit": None,
        "checkpoint_sha256": None,
        "note": "hand-written scripted bot: lines up behind the orb and pushes",
    }
    params = {"params": ROOKIE_PARAMS.model_dump()}
    return _document("scripted", ROOKIE_DECISION_TICKS, GameSettings(), params, provenance, False)


def veteran_document() -> dict[str, Any]:
    """The JSON document of the veteran (bots/veteran.json must equal it)."""
    provenance = {
        "experiment": "veteran",
        "timesteps": 0,
        "git_commit": None,
        "checkpoint_sha256": None,
        "note": "hand-written scripted bot: intercepts the predicted orb and defends its goal",
    }
    params = {"params": VETERAN_PARAMS.model_dump()}
    return _document("scripted", VETERAN_DECISION_TICKS, GameSettings(), params, provenance, False)


def bot_from_document(doc: Any, source: str = "<document>") -> Bot:
    """Validate an in-memory bot document and build its bot (``BotError`` if invalid)."""
    valid = validate_document(doc, source)
    if isinstance(valid, MlpDocument):
        net = valid.network
        layers = [(layer.weights, layer.bias, layer.activation) for layer in net.layers]
        return MlpBot(layers, net.obs_mean, net.obs_std, valid.decision_ticks, valid.game)
    if isinstance(valid, ScriptedDocument):
        if isinstance(valid.params, VeteranParams):
            return VeteranBot(valid.params, valid.decision_ticks, valid.game)
        return ScriptedBot(valid.params, valid.decision_ticks, valid.game)
    simple = InertBot if valid.kind == "inert" else RandomBot
    return simple(valid.decision_ticks, valid.game)


def read_document(path: Path) -> Any:
    """The parsed (not yet validated) JSON of a bot file; ``BotError`` when unreadable."""
    try:
        text = fsio.read_text_file(path)  # a FIFO or a device is refused, never read
    except FileNotFoundError:
        raise BotError(f"{path}: bot file not found") from None
    except IsADirectoryError:
        raise BotError(f"{path}: is a directory, expected a bot JSON file") from None
    except OSError as exc:
        raise BotError(f"{path}: cannot read bot file: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise BotError(f"{path}: not a bot file (not UTF-8 text)") from None
    try:
        doc = fsio.loads(text, keep_overflow=True)  # the schema names the overflowing field
    except fsio.JSONValueError as exc:
        raise BotError(f"{path}: not valid JSON ({exc})") from None
    return doc


def bot_files(directory: Path) -> list[Path]:
    """The bot files of a directory, sorted: every ``*.json``, and every ``*.onnx`` that is
    not the twin of a JSON there (the same bot twice would play itself). Anything so named
    is listed, so loading can say why a directory or a FIFO is no bot."""
    files = {*directory.glob("*.json"), *directory.glob("*.onnx")}
    return sorted(p for p in files if p.suffix == ".json" or p.with_suffix(".json") not in files)


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
