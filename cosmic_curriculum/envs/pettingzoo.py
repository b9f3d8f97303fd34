"""Build the two-player PettingZoo game an `[env]` spec of kind ``pettingzoo`` describes.

``id`` is the game's MODULE (``"pettingzoo.classic.connect_four_v3"``): ``make_game``
imports ``spec.imports``, then the module, and calls its ``env(**kwargs)``; a module with
only ``parallel_env`` is turned into a turn-based game with PettingZoo's
``parallel_to_aec`` (both agents then act each cycle, one after the other, and see the
cycle's result only when it ends: rock-paper-scissors fits a seat-swapped evaluation).
``spec.wrappers`` wrap the AEC env in order, as for Gymnasium.

``game_info`` is what a trainer or an evaluator needs without stepping: the two agents in
seat order, the space the POLICY sees (the ``"observation"`` entry of a Dict observation
that carries ``"action_mask"``, else the whole observation space), the Discrete action
space and whether moves are masked. Each failure is one :class:`EnvSpecError` naming the
key, its value and the fix. pettingzoo is imported here only, when a spec is built.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass
from typing import Any

from cosmic_curriculum.envs.gymnasium import EnvSpecError, _import, _one_line, _wrap
from cosmic_curriculum.envs.kinds import (
    gymnasium_id,
    is_module_name,
    module_found,
    pettingzoo_game,
)
from cosmic_curriculum.workspace.env_config import EnvSpec

MASK_KEY = "action_mask"
OBSERVATION_KEY = "observation"


@dataclass(frozen=True)
class GameInfo:
    """A two-player game's seats and spaces, as one policy playing either seat sees them."""

    agents: tuple[str, str]
    observation_space: Any  # gymnasium.spaces.Space: what the policy sees
    action_space: Any  # gymnasium.spaces.Discrete
    masked: bool  # observations are {"observation": ..., "action_mask": ...}


def _game_module(spec: EnvSpec) -> Any:
    _import("pettingzoo", "env.kind 'pettingzoo' needs the module")
    for module in spec.imports:
        _import(module, "env.imports")
    name = spec.id or ""
    if not module_found(name):
        if gymnasium_id(name):
            raise EnvSpecError(
                f"env.id {name!r} is a Gymnasium id, not a PettingZoo game module: set "
                'env.kind = "gymnasium"'
            )
        game = pettingzoo_game(name)
        if game is not None and game != name:  # a bare game name
            raise EnvSpecError(f"env.id {name!r}: no such module; did you mean {game!r}?")
        if not is_module_name(name):
            raise EnvSpecError(
                f"env.id {name!r} is not a module name: a game's id is the module that "
                'defines env() or parallel_env(), e.g. "pettingzoo.classic.connect_four_v3"'
            )
        siblings = _siblings(name)
        if siblings is not None:  # the package is there, the module is not: name neighbours
            close = difflib.get_close_matches(name, siblings, n=3, cutoff=0.6)
            hint = f"did you mean {', '.join(repr(c) for c in close)}? " if close else ""
            raise EnvSpecError(f"env.id {name!r}: no such module; {hint}fix env.id")
    return _import(name, "env.id")  # a missing or failing package: its own one line


def _siblings(module: str) -> list[str] | None:
    """The modules beside ``module`` in its package; None when that package fails."""
    parent = module.rpartition(".")[0]
    if not parent or not module_found(parent):
        return None
    try:
        path = getattr(importlib.import_module(parent), "__path__", [])
    except Exception:
        return None
    return [f"{parent}.{m.name}" for m in pkgutil.iter_modules(list(path))]


def make_game(spec: EnvSpec) -> Any:
    """The AEC env of ``spec``'s game module, built, converted if parallel, and wrapped."""
    from pettingzoo.utils.env import AECEnv, ParallelEnv

    module = _game_module(spec)
    name = spec.id
    factory = getattr(module, "env", None)
    parallel = False
    if not callable(factory):
        factory = getattr(module, "parallel_env", None)
        parallel = True
    if not callable(factory):
        raise EnvSpecError(
            f"env.id {name!r} is not a PettingZoo game module (it has no env() nor "
            "parallel_env()); name the module that defines them, e.g. "
            '"pettingzoo.classic.connect_four_v3"'
        )
    try:
        env = factory(**spec.kwargs)
    except ImportError as exc:  # a package the game needs only when built (Hanabi's)
        raise EnvSpecError(
            f"env.id {name!r}: the game needs a package that is not installed "
            f"({_one_line(exc)}); install it"
        ) from None
    except Exception as exc:
        call = "parallel_env" if parallel else "env"
        raise EnvSpecError(
            f"env.kwargs {spec.kwargs!r} are refused by {name}.{call}() ({_one_line(exc)}); "
            "fix env.kwargs"
        ) from None
    if isinstance(env, ParallelEnv) and not isinstance(env, AECEnv):
        env = _to_aec(env, name)
    if not isinstance(env, AECEnv):
        raise EnvSpecError(
            f"env.id {name!r}: its env() returned a {type(env).__name__!r}, not a PettingZoo "
            "AECEnv or ParallelEnv; name a PettingZoo game module"
        )
    try:
        for i, wrapper in enumerate(spec.wrappers):
            env = _wrap(env, wrapper, i)
    except BaseException:
        env.close()
        raise
    return env


def _to_aec(env: Any, name: str | None) -> Any:
    from pettingzoo.utils.conversions import parallel_to_aec

    try:
        return parallel_to_aec(env)
    except Exception as exc:
        env.close()
        raise EnvSpecError(
            f"env.id {name!r}: its parallel_env() does not convert to a turn-based game "
            f"({_one_line(exc)}); use a module with env()"
        ) from None


def game_info(spec: EnvSpec) -> GameInfo:
    """The seats and spaces of ``spec``'s game (built once, then closed); one line if the
    game is not a two-player game with Discrete actions one policy can play in either
    seat."""
    env = make_game(spec)
    try:
        return _info(env, spec.id)
    finally:
        env.close()


def _info(env: Any, name: str | None) -> GameInfo:
    from gymnasium import spaces

    try:
        agents = tuple(env.possible_agents)
        observations = [env.observation_space(a) for a in agents]
        actions = [env.action_space(a) for a in agents]
    except Exception as exc:
        raise EnvSpecError(
            f"env.id {name!r}: the game does not name its agents and their spaces "
            f"({_one_line(exc)}); name a PettingZoo game module"
        ) from None
    if len(agents) != 2:
        raise EnvSpecError(
            f"env.id {name!r} has {len(agents)} agents {list(agents)!r}; a pettingzoo stage "
            "takes two-player games only; choose a two-player game or set its kwargs to two"
        )
    if not all(isinstance(a, spaces.Discrete) for a in actions):
        raise EnvSpecError(
            f"env.id {name!r}: the action space is {actions[0]}, not Discrete; a "
            "pettingzoo stage takes games with Discrete moves"
        )
    if actions[0] != actions[1] or observations[0] != observations[1]:
        raise EnvSpecError(
            f"env.id {name!r}: the seats' spaces differ ({observations[0]} / {actions[0]} "
            f"vs {observations[1]} / {actions[1]}); one policy must play either seat"
        )
    observation = observations[0]
    masked = isinstance(observation, spaces.Dict) and MASK_KEY in observation.spaces
    if masked:
        if OBSERVATION_KEY not in observation.spaces:
            raise EnvSpecError(
                f"env.id {name!r}: the observation has {MASK_KEY!r} but no "
                f"{OBSERVATION_KEY!r} entry; a masked game puts what the player sees there"
            )
        observation = observation.spaces[OBSERVATION_KEY]
    _check_held(observation, actions[0], name)
    return GameInfo((agents[0], agents[1]), observation, actions[0], masked)


def _check_held(observation: Any, action: Any, name: str | None) -> None:
    """Refuse what a game's bot cannot hold (every bot, trained, a program's or an ONNX
    twin, reads the game through an env bot's spaces), before any training: SB3 would
    train on it and the bot could not be saved or played."""
    from cosmic_curriculum.envs.export import space_of
    from cosmic_curriculum.errors import TrainerError

    try:
        space_of(observation, "observation", allow_dict=True)
        space_of(action, "action")
    except TrainerError as exc:
        what = str(exc).partition(";")[0]  # which space or part, without Gymnasium's fix
        raise EnvSpecError(
            f"env.id {name!r}: {what}; a game's bot reads Box or Discrete observations (or "
            "a Dict of them) and moves from Discrete(n) starting at 0: have the game's "
            "observe() return those, or wrap the game in env.wrappers with a PettingZoo "
            "wrapper that does"
        ) from None


def default_algo(info: GameInfo) -> str:
    """train-env's algorithm for a game whose stage names none: MaskablePPO where the game
    masks its moves (PPO would play illegal ones), else PPO."""
    return "MaskablePPO" if info.masked else "PPO"


def bare_game(game: Any) -> Any:
    """The AEC env under PettingZoo's own wrappers (OrderEnforcing, AssertOutOfBounds,
    TerminateIllegal), which only police the order and illegal moves: a caller that checks
    its moves steps it directly, at about half the cost. A game converted from the parallel
    API keeps its converter (its ``unwrapped`` is the parallel env)."""
    from pettingzoo.utils.env import AECEnv

    bare = game.unwrapped
    return bare if isinstance(bare, AECEnv) else game


def game_over(game: Any) -> bool:
    """Whether an AEC game has ended: no agents left, or any agent's game terminated or
    truncated (a two-player game ends for both at once)."""
    agents = game.agents
    return not agents or any(
        game.terminations.get(a, False) or game.truncations.get(a, False) for a in agents
    )


def split_observation(raw: Any, info: GameInfo) -> tuple[Any, Any]:
    """(what the policy sees, the legal-move mask or None) of one raw observation."""
    if info.masked:
        return raw[OBSERVATION_KEY], raw[MASK_KEY]
    return raw, None
