"""Build the Gymnasium environment an `[env]` spec describes, as a trainer would.

``make_env(spec)``: import ``spec.imports`` (modules that register ids), check ``spec.id``
is registered (else name the close matches), ``gymnasium.make(id, **kwargs)``, then apply
each wrapper in order. Every failure is a :class:`EnvSpecError` naming the key, its
value and the fix; the caller adds the file and the stage. gymnasium is imported here
only, when a spec is built: `status` and the config never load it.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any

from cosmic_curriculum.envs.kinds import pettingzoo_game
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.workspace.env_config import EnvSpec, WrapperCall

# Modules whose package has another name, or that users often lack: what to install (the
# optional extra of cosmic-curriculum that brings it, where there is one).
INSTALL_HINTS = {
    "minigrid": "'cosmic-curriculum[minigrid]'",
    "pettingzoo": "pettingzoo",
    "gymnasium": "gymnasium",
}

# Id prefixes of env families Gymnasium does not register itself: the module that does.
REGISTERED_BY = {"MiniGrid-": "minigrid", "BabyAI-": "minigrid", "ALE/": "ale_py"}


class EnvSpecError(ConfigError):
    """A spec that does not build; the message names the setting (``env.id`` ...)."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "no message"
    return f"{type(exc).__name__}: {text}"


def _import(module: str, key: str) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = (exc.name or module).split(".")[0]
        package = INSTALL_HINTS.get(missing, missing)
        # the named module's own top (not a package it needs) may be one of the user's
        yours = missing == module.split(".")[0] and missing not in INSTALL_HINTS
        own = ", keep a module of your own in the workspace" if yours else ""
        raise EnvSpecError(
            f"{key} {module!r}: no module named {missing!r}; install it "
            f"(pip install {package}){own} or fix {key}"
        ) from None
    except Exception as exc:  # the module itself raised while importing
        raise EnvSpecError(
            f"{key} {module!r} failed to import ({_one_line(exc)}); fix the module or {key}"
        ) from None


def _registered(gymnasium: Any, env_id: str) -> None:
    registry = gymnasium.envs.registration.registry
    if env_id in registry:
        return
    close = difflib.get_close_matches(env_id, list(registry), n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(repr(c) for c in close)}? " if close else ""
    game = pettingzoo_game(env_id)
    if game is not None:
        named = "" if game == env_id else f', id = "{game}"'
        raise EnvSpecError(
            f"env.id {env_id!r} is a PettingZoo game, not a Gymnasium id: set "
            f'env.kind = "pettingzoo"{named} (docs/GAMES.md)'
        )
    module = next((m for prefix, m in REGISTERED_BY.items() if env_id.startswith(prefix)), None)
    if module is not None and not close:
        hint = f'its ids are registered by {module!r}: env.imports = ["{module}"]? '
    raise EnvSpecError(
        f"env.id {env_id!r} is not a registered Gymnasium environment; {hint}fix env.id, "
        "or add the module that registers it to env.imports"
    )


def _wrap(env: Any, wrapper: WrapperCall, index: int) -> Any:
    key = f"env.wrappers[{index}]"
    module, _, attribute = wrapper.call.partition(":")
    target: Any = _import(module, key)
    try:
        for part in attribute.split("."):
            target = getattr(target, part)
    except AttributeError:
        raise EnvSpecError(
            f"{key} {wrapper.call!r}: module {module!r} has no {attribute!r}; fix {key}"
        ) from None
    if not callable(target):
        raise EnvSpecError(f"{key} {wrapper.call!r} is not callable; name a wrapper class")
    try:
        return target(env, **wrapper.kwargs)
    except Exception as exc:
        raise EnvSpecError(
            f"{key} {wrapper.call!r} with kwargs {wrapper.kwargs!r} failed "
            f"({_one_line(exc)}); fix the wrapper or its kwargs"
        ) from None


def make_env(spec: EnvSpec) -> Any:
    """The environment of ``spec`` (kind ``gymnasium``), built and wrapped."""
    gymnasium = _import("gymnasium", "env.kind 'gymnasium' needs the module")
    for module in spec.imports:
        _import(module, "env.imports")
    env_id = spec.id or ""
    if ":" in env_id:  # gymnasium's own "module:Id" form imports the module first
        module, _, env_id = env_id.partition(":")
        _import(module, "env.id")
    _registered(gymnasium, env_id)
    try:
        env = gymnasium.make(env_id, **spec.kwargs)
    except (ImportError, gymnasium.error.DependencyNotInstalled) as exc:
        raise EnvSpecError(
            f"env.id {env_id!r} needs a package that is not installed ({_one_line(exc)}); "
            "install it, or choose another env.id"
        ) from None
    except Exception as exc:
        raise EnvSpecError(
            f"env.kwargs {spec.kwargs!r} are refused by {env_id!r} ({_one_line(exc)}); "
            "fix env.kwargs"
        ) from None
    try:
        for i, wrapper in enumerate(spec.wrappers):
            env = _wrap(env, wrapper, i)
    except BaseException:
        env.close()
        raise
    return env


def spaces(spec: EnvSpec) -> tuple[Any, Any]:
    """(observation space, action space) of ``spec``'s environment, which is then closed."""
    env = make_env(spec)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()
