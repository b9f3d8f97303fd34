"""The Cosmic Clash arena: a 1-v-1 zero-gravity space-football game, batched in numpy.

Modules: ``settings`` (GameSettings), ``rules`` (state, physics step, kickoffs; its
per-tick loop is compiled with numba in ``physics``, held actions are in ``turning``),
``observations`` (ego-centric mirrored observations), ``policy`` (the ``Policy`` protocol
the game plays, and an inert default), ``match`` (batched paired games between two
policies), ``duel`` (a learner against an opponent: the engine of both envs), ``vec_env``
(the stable-baselines3 VecEnv) and ``gym_env`` (a single-game gymnasium.Env of the same
rules). ``vec_env`` imports SB3 (and thereby torch) when it is imported, so this package
does not import it; the other modules need only numpy, numba, pydantic and gymnasium.
"""

from cosmic_curriculum.arena.observations import OBS_SIZE, observe
from cosmic_curriculum.arena.rules import ACT_SIZE, ArenaState, Events, new_state, reset_games, step
from cosmic_curriculum.arena.settings import GameSettings

__all__ = [
    "ACT_SIZE",
    "OBS_SIZE",
    "ArenaState",
    "Events",
    "GameSettings",
    "new_state",
    "observe",
    "reset_games",
    "step",
]
