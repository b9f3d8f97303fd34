"""`[env]` of `stages.toml` and a stage's `env = {...}`: the environment a stage trains in.

``kind = "arena"`` (the default) is the embedded two-player game, trained by the built-in
trainer. ``"gymnasium"`` is a registered Gymnasium environment, built as
``gymnasium.make(id, **kwargs)`` after importing ``imports`` (modules that register
``id``), then wrapped by each of ``wrappers`` in order (``wrapper(env, **kwargs)``).
``"pettingzoo"`` is a two-player PettingZoo game: ``id`` names its module (which has
``env()`` or ``parallel_env()``), called with ``kwargs`` (envs/pettingzoo.py).

A stage's ``env`` replaces whole keys of ``[env]`` (``kwargs`` too: it is not merged key by
key), so a stage reads as the complete environment it trains in. docs/ENVIRONMENTS.md is
the contract a trainer for a non-arena kind follows.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from cosmic_curriculum.defaults import ENV_KIND, SEARCH_MAX_DEPTH

EnvKind = Literal["arena", "gymnasium", "pettingzoo"]

# A dotted module name, and a "module:callable" reference to something in one.
_MODULE_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_CALL_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def _module_name(value: str) -> str:
    if not _MODULE_RE.fullmatch(value):
        raise ValueError(f"{value!r} is not a module name; write it as in `import {value}`")
    return value


def _json_value(value: dict[str, Any]) -> dict[str, Any]:
    # The spec reaches a trainer as JSON (`--env`): a TOML date or time would not survive.
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        kinds = "strings, numbers, booleans, lists and tables"
        raise ValueError(f"must hold only {kinds} ({exc})") from None
    return value


ModuleName = Annotated[str, AfterValidator(_module_name)]
JsonTable = Annotated[dict[str, Any], AfterValidator(_json_value)]


class WrapperCall(BaseModel):
    """``{call = "module:callable", kwargs = {...}}``: ``callable(env, **kwargs)``."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    call: str
    kwargs: JsonTable = Field(default_factory=dict)

    @field_validator("call")
    @classmethod
    def _is_a_reference(cls, value: str) -> str:
        if not _CALL_RE.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a reference to a callable; write it as "
                '"module:callable", e.g. "gymnasium.wrappers:TimeLimit"'
            )
        return value


class EnvSpec(BaseModel):
    """The environment of a stage: `[env]` with the stage's own `env` keys over it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    kind: EnvKind = ENV_KIND
    id: str | None = Field(None, min_length=1)
    imports: list[ModuleName] = Field(default_factory=list)
    kwargs: JsonTable = Field(default_factory=dict)
    wrappers: list[WrapperCall] = Field(default_factory=list)

    @field_validator("wrappers", mode="before")
    @classmethod
    def _plain_references_are_calls(cls, value: Any) -> Any:
        # "module:callable" is {call = "module:callable"}: trainers see one form.
        if isinstance(value, list):
            return [{"call": w} if isinstance(w, str) else w for w in value]
        return value

    def to_argument(self) -> str:
        """The spec as the one JSON argument of `--env` (keys sorted: a stable argv)."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))


def merged_env(base: EnvSpec | None, override: dict[str, Any] | None) -> EnvSpec:
    """A stage's environment: ``base`` (`[env]`, or the default) with ``override``'s keys."""
    spec = base if base is not None else EnvSpec()
    if not override:
        return spec
    return EnvSpec.model_validate({**spec.model_dump(), **override})


def _valid_override(value: dict[str, Any]) -> dict[str, Any]:
    EnvSpec.model_validate(value)  # raises with the key named
    return value


# A stage's `env = {...}`: any keys of EnvSpec, checked as such.
EnvOverride = Annotated[dict[str, Any], AfterValidator(_valid_override)]


def check_envs(base: EnvSpec | None, stages: list[tuple[str, dict[str, Any] | None]]) -> None:
    """Each stage's merged environment is complete (``stages``: each name and ``env``)."""
    for i, (name, override) in enumerate(stages):
        try:
            check_env(merged_env(base, override))
        except ValueError as exc:
            raise ValueError(f"stage {i + 1} {name}: env: {exc}") from None


def check_env(spec: EnvSpec) -> EnvSpec:
    """Refuse a spec that cannot describe an environment (before any training)."""
    if spec.kind == "arena":
        extra = [k for k in ("id", "imports", "kwargs", "wrappers") if getattr(spec, k)]
        if extra:
            raise ValueError(
                f'{extra[0]} is set but kind is "arena" (the embedded game takes none); '
                'set kind = "gymnasium" or remove ' + extra[0]
            )
    elif spec.id is None:
        raise ValueError(
            f'kind = "{spec.kind}" needs the registered id of the environment; '
            'add id, e.g. id = "CartPole-v1"'
        )
    return spec


class BuiltinReference(BaseModel):
    """``reference_bot = {builtin = "random"}``: uniform over the actions (a game's legal
    ones); ``{builtin = "search", depth = N}``: depth-N alpha-beta over a pettingzoo game's
    states. The built-in players of the env kinds (the arena refuses both at preflight)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    builtin: Literal["random", "search"]
    depth: int | None = Field(None, ge=1, le=SEARCH_MAX_DEPTH)

    @model_validator(mode="after")
    def _depth_of_search(self) -> BuiltinReference:
        if (self.depth is None) == (self.builtin == "search"):
            raise ValueError('depth belongs to, and is needed by, {builtin = "search", depth = 2}')
        return self

    def definition(self) -> dict[str, Any]:
        return {"builtin": self.builtin} | ({} if self.depth is None else {"depth": self.depth})
