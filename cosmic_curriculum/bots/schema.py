"""The bot file format (docs/BOT_FORMAT.md) as pydantic models, and their errors as one line.

A file is checked in two steps, so that a JSON file that is not a bot says so before it
drowns in missing keys: first :class:`BotHeader` (``format``, ``version``, ``kind``), then
the document model of that kind, which forbids unknown keys. pydantic reports every error;
:func:`fault` names one of them the way a person would look: unknown keys first, then
missing ones, then the first bad value in file order.

Messages of the validators continue the name of what they check: a field validator of
``decision_ticks`` raising ``"0 must be >= 1"`` reads ``decision_ticks 0 must be >= 1``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Self

import numpy as np
from numpy.typing import NDArray
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictInt,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots.mlp import ACTIVATIONS
from cosmic_curriculum.bots.scripted import ScriptedParams
from cosmic_curriculum.bots.veteran import VeteranParams
from cosmic_curriculum.errors import BotError, describe_validation, dotted

BOT_FORMAT = "cosmic-curriculum-bot"
BOT_VERSION = 1
KINDS = ("mlp", "scripted", "inert", "random")


def _array(ndim: int) -> PlainValidator:
    """numpy's reading of a JSON array: rectangular, ``ndim``-D, every number finite."""

    def check(value: Any) -> NDArray[np.float64]:
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError("is not a rectangular array of numbers") from None
        if arr.ndim != ndim:
            raise ValueError(f"must be a {ndim}-D array of numbers, got {arr.ndim}-D")
        if not np.all(np.isfinite(arr)):
            raise ValueError("contains NaN or infinite values")  # e.g. 1e999 overflows
        return arr

    return PlainValidator(check)


Matrix = Annotated[NDArray[np.float64], _array(2)]
Vector = Annotated[NDArray[np.float64], _array(1)]


def _one_of(allowed: tuple[str, ...], listed: str) -> BeforeValidator:
    """Refuse a raw value outside ``allowed`` (any JSON value, so the message shows it)."""

    def check(value: Any) -> Any:
        if value not in allowed:
            raise ValueError(f"{value!r} is not one of {listed}")
        return value

    return BeforeValidator(check)


def _nested(what: str, value: Any, handler: Callable[[Any], Any]) -> Any:
    """Validate a nested model; its faults become one value error (``game settings
    invalid: tick=-1.0: ...``) instead of errors at locations inside it."""
    try:
        return handler(value)
    except ValidationError as exc:
        raise ValueError(f"{what}: {describe_validation(exc)}") from None


class BotHeader(BaseModel):
    """What every bot file starts with; anything else is read by the kind's model."""

    model_config = ConfigDict(extra="ignore")

    format: str
    version: int
    kind: Annotated[str, _one_of(KINDS, ", ".join(KINDS))]

    # "before": the exact value is checked, so `true` is no version 1 and 1.0 still is
    @field_validator("format", mode="before")
    @classmethod
    def _known_format(cls, value: Any) -> Any:
        if value != BOT_FORMAT:
            raise ValueError(f"is {value!r}, expected {BOT_FORMAT!r} (not a bot file?)")
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _known_version(cls, value: Any) -> Any:
        if value != BOT_VERSION or isinstance(value, bool):
            raise ValueError(f"{value!r} is not supported (this program reads {BOT_VERSION})")
        return value


class BotDocument(BotHeader):
    """The keys of every kind (``inert`` and ``random`` have no others)."""

    model_config = ConfigDict(extra="forbid")

    observation_size: StrictInt
    action_size: StrictInt
    decision_ticks: StrictInt
    game: GameSettings
    provenance: dict[str, Any]
    partial: StrictBool

    @field_validator("observation_size")
    @classmethod
    def _this_observation(cls, value: int) -> int:
        if value != OBS_SIZE:
            raise ValueError(
                f"{value} does not match this game's {OBS_SIZE} "
                "(the bot was made for another version of the arena)"
            )
        return value

    @field_validator("action_size")
    @classmethod
    def _this_action(cls, value: int) -> int:
        if value != ACT_SIZE:
            raise ValueError(f"{value} does not match this game's {ACT_SIZE}")
        return value

    @field_validator("decision_ticks")
    @classmethod
    def _positive_ticks(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"{value} must be >= 1")
        return value

    @field_validator("game", mode="wrap")
    @classmethod
    def _game(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        return _nested("settings invalid", value, handler)


class ScriptedDocument(BotDocument):
    """A hand-written bot: the rookie's params, or the veteran's (they carry
    ``"strategy": "veteran"``; the rookie's have no such key, so its file never changed)."""

    params: ScriptedParams | VeteranParams

    @field_validator("params", mode="wrap")
    @classmethod
    def _params(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(value, ScriptedParams | VeteranParams):
            return value
        veteran = isinstance(value, dict) and "strategy" in value
        model = VeteranParams if veteran else ScriptedParams
        return _nested("invalid", value, model.model_validate)


class LayerSpec(BaseModel):
    """One layer: ``weights`` ``out x in`` (PyTorch's layout), ``bias`` ``out``."""

    model_config = ConfigDict(extra="forbid")

    weights: Matrix
    bias: Vector
    activation: Annotated[str, _one_of(ACTIVATIONS, str(ACTIVATIONS))]


class Network(BaseModel):
    model_config = ConfigDict(extra="forbid")

    layers: list[LayerSpec] = Field(min_length=1)
    obs_mean: Vector | None = None
    obs_std: Vector | None = None

    @field_validator("obs_mean", "obs_std")
    @classmethod
    def _one_per_observation(cls, value: NDArray[np.float64] | None) -> Any:
        if value is not None and value.shape != (OBS_SIZE,):
            raise ValueError(f"has {value.shape[0]} entries, expected observation_size {OBS_SIZE}")
        return value

    @field_validator("obs_std")
    @classmethod
    def _divisible(cls, value: NDArray[np.float64] | None) -> Any:
        if value is not None and not np.all(value > 0.0):
            raise ValueError("must be > 0 everywhere")
        return value


class MlpDocument(BotDocument):
    network: Network

    @model_validator(mode="after")
    def _layers_chain(self) -> Self:
        """Observation in, action out, each layer fed by the previous one (checked here,
        where both ends are known; the messages name the layer in full)."""
        layers = self.network.layers
        width = OBS_SIZE
        for i, layer in enumerate(layers):
            where = f"network.layers[{i}]"
            rows, cols = layer.weights.shape
            if cols != width:
                raise ValueError(
                    f"{where}.weights is {rows}x{cols} but its input has {width} "
                    f"values ({'observation_size' if i == 0 else 'previous layer'})"
                )
            if layer.bias.shape != (rows,):
                raise ValueError(f"{where}.bias has {layer.bias.shape[0]} values, expected {rows}")
            width = rows
        if width != ACT_SIZE:
            raise ValueError(
                f"the last layer gives {width} outputs, expected action_size {ACT_SIZE}"
            )
        if layers[-1].activation != "linear":
            raise ValueError(
                f"the last layer's activation must be 'linear', got {layers[-1].activation!r}"
            )
        return self


DOCUMENTS: dict[str, type[BotDocument]] = {
    "mlp": MlpDocument,
    "scripted": ScriptedDocument,
    "inert": BotDocument,
    "random": BotDocument,
}


def fault(exc: ValidationError, kind: str | None = None) -> str:
    """One line for a failed validation. With ``kind`` (a document, not the header):
    unknown top-level keys come first (all of them), then the alphabetically first
    missing key, then the first error in file order."""
    errors = exc.errors()

    def rank(err: Any) -> tuple[int, str]:
        top = kind is not None and len(err["loc"]) == 1
        if top and err["type"] == "extra_forbidden":
            return (0, "")
        if top and err["type"] == "missing":
            return (1, str(err["loc"][0]))
        return (2, "")

    first = min(errors, key=rank)  # min keeps the earliest of equals: file order
    loc = tuple(first["loc"])
    where, value, kind_of_error = dotted(loc), first.get("input"), first["type"]
    if kind_of_error == "extra_forbidden":
        parent = loc[:-1]
        keys = sorted(
            str(e["loc"][-1])
            for e in errors
            if e["type"] == "extra_forbidden" and tuple(e["loc"][:-1]) == parent
        )
        if not parent:
            return f"unknown key(s) {', '.join(keys)} for kind {kind!r}"
        return "unknown key(s) " + ", ".join(dotted((*parent, key)) for key in keys)
    if kind_of_error == "missing":
        return f"missing key {where!r}"
    if kind_of_error in ("model_type", "dict_type"):
        if not loc:
            return f"top level must be a JSON object, got {type(value).__name__}"
        return f"{where} must be a JSON object"
    if kind_of_error in ("list_type", "too_short"):
        return f"{where} must be a non-empty list"
    if kind_of_error == "int_type":
        return f"{where} must be an integer, got {value!r}"
    if kind_of_error == "bool_type":
        return f"{where} must be true or false, got {value!r}"
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where} {message}" if loc else message


def validate_document(doc: Any, source: str) -> BotDocument:
    """The validated document (header first, then its kind's model), or ``BotError``
    naming ``source`` and the fault."""
    try:
        header = BotHeader.model_validate(doc)
    except ValidationError as exc:
        raise BotError(f"{source}: {fault(exc)}") from None
    try:
        return DOCUMENTS[header.kind].model_validate(doc)
    except ValidationError as exc:
        raise BotError(f"{source}: {fault(exc, header.kind)}") from None
